/* pread_pool.h - the I/O path for systems without io_uring: a pool of
 * threads that open, pread and close each file the ring thread hands them,
 * fill in the request's results as the three CQEs of a chain would, and hand
 * it back. Started and stopped by the ring thread, which stays the only one
 * that issues and judges reads. Private. */
#ifndef RF_PREAD_POOL_H
#define RF_PREAD_POOL_H

#include <pthread.h>

#include "pipeline/loader_impl.h"

typedef struct rf_pread_pool {
	rf_loader *l;
	rf_idq jobs;  /* ring thread -> pool: request ids to read */
	rf_idq done;  /* pool -> ring thread: request ids read (or failed) */
	pthread_t *threads;
	int nthreads;
} rf_pread_pool;

/* Starts n threads. @return : 0, or a negative errno (nothing left running). */
int rf_pread_pool_start(rf_pread_pool *p, rf_loader *l, int n);
/* Stops and joins every thread (a read in progress finishes first). */
void rf_pread_pool_stop(rf_pread_pool *p);

#endif
