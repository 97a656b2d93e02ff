/* idq.h - a bounded FIFO of ids (request or read numbers) between threads:
 * one mutex, one condition variable and a shutdown flag, the shape of zstd's
 * pool.c queue. Its capacity is the number of ids in existence, so a push
 * never finds it full. Private. */
#ifndef RF_IDQ_H
#define RF_IDQ_H

#include <pthread.h>
#include <stdint.h>

#include "util/fifo.h"

typedef struct rf_idq {
	pthread_mutex_t mu;
	pthread_cond_t nonempty;
	uint32_t *ids;         /* fifo.cap of them; guarded by mu, as is the rest */
	rf_fifo fifo;
	int shutdown;
} rf_idq;

/* @return : 0, or -ENOMEM. */
int rfi_idq_init(rf_idq *q, uint32_t cap);
/* Frees the queue; accepts one never initialized (zeroed) or destroyed. */
void rfi_idq_destroy(rf_idq *q);
/* Pushes id. @return : 1 when the queue was empty before (the consumer may be
 * asleep), else 0. */
int rfi_idq_push(rf_idq *q, uint32_t id);
/* Blocks until an id is there or shutdown. @return : 0 with *id set, or -1
 * after shutdown. *waited_ns gets the time spent blocked. */
int rfi_idq_pop_wait(rf_idq *q, uint32_t *id, uint64_t *waited_ns);
/* Takes up to max ids without blocking. @return : how many. */
uint32_t rfi_idq_drain(rf_idq *q, uint32_t *ids, uint32_t max);
/* @return : ids queued now (a snapshot: others may push or pop next). */
uint32_t rfi_idq_count(rf_idq *q);
/* Wakes every waiter; pops return -1 from now on. */
void rfi_idq_shutdown(rf_idq *q);

#endif
