/* pread_pool.h - the read engine's back end for systems without io_uring: a
 * pool of threads that open, pread and close each file (or pread a kept
 * file) for the reads the engine hands them, fill in the results as the
 * CQEs of a chain would, and hand them back. Started and stopped by the
 * engine, whose thread stays the only one that judges results. Private to
 * src/io/. */
#ifndef RF_PREAD_POOL_H
#define RF_PREAD_POOL_H

#include <pthread.h>

#include "util/idq.h"

struct rf_io;

typedef struct rf_pread_pool {
	struct rf_io *io;
	rf_idq jobs;  /* engine -> pool: read numbers */
	rf_idq done;  /* pool -> engine: read numbers read (or failed) */
	pthread_t *threads;
	int nthreads;
} rf_pread_pool;

/* Starts n threads. @return : 0, or -ENOMEM (nothing left running). */
int rfi_pread_pool_start(rf_pread_pool *p, struct rf_io *io, int n);
/* Stops and joins every thread (a read in progress finishes first). */
void rfi_pread_pool_stop(rf_pread_pool *p);

#endif
