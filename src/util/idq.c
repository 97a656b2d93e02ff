/* idq.c - the bounded id queue (see idq.h): ring -> compute (work),
 * compute -> ring (done), and the read engine's pread pool. */
#include <errno.h>
#include <stdlib.h>

#include "util/idq.h"
#include "util/util.h"

int rfi_idq_init(rf_idq *q, uint32_t cap)
{
	q->ids = calloc(cap, sizeof(*q->ids));
	if (!q->ids)
		return -ENOMEM;
	rfi_fifo_init(&q->fifo, cap);
	q->shutdown = 0;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->nonempty, NULL);
	return 0;
}

void rfi_idq_destroy(rf_idq *q)
{
	if (!q->ids)
		return;
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->nonempty);
	free(q->ids);
	q->ids = NULL;
}

int rfi_idq_push(rf_idq *q, uint32_t id)
{
	pthread_mutex_lock(&q->mu);
	/* Cannot overflow: cap is the number of ids in existence (rfi_fifo_push
	 * asserts it). */
	int was_empty = q->fifo.count == 0;
	q->ids[rfi_fifo_push(&q->fifo)] = id;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->mu);
	return was_empty;
}

int rfi_idq_pop_wait(rf_idq *q, uint32_t *id, uint64_t *waited_ns)
{
	uint64_t t0 = 0;
	*waited_ns = 0;
	pthread_mutex_lock(&q->mu);
	if (!q->fifo.count && !q->shutdown)
		t0 = rfi_now_ns();
	while (!q->fifo.count && !q->shutdown)
		pthread_cond_wait(&q->nonempty, &q->mu);
	if (t0)
		*waited_ns = rfi_now_ns() - t0;
	if (q->shutdown) {
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	*id = q->ids[rfi_fifo_pop(&q->fifo)];
	pthread_mutex_unlock(&q->mu);
	return 0;
}

uint32_t rfi_idq_drain(rf_idq *q, uint32_t *ids, uint32_t max)
{
	pthread_mutex_lock(&q->mu);
	uint32_t n = 0;
	while (q->fifo.count && n < max)
		ids[n++] = q->ids[rfi_fifo_pop(&q->fifo)];
	pthread_mutex_unlock(&q->mu);
	return n;
}

uint32_t rfi_idq_count(rf_idq *q)
{
	pthread_mutex_lock(&q->mu);
	uint32_t n = q->fifo.count;
	pthread_mutex_unlock(&q->mu);
	return n;
}

void rfi_idq_shutdown(rf_idq *q)
{
	pthread_mutex_lock(&q->mu);
	q->shutdown = 1;
	pthread_cond_broadcast(&q->nonempty);
	pthread_mutex_unlock(&q->mu);
}
