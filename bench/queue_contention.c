/* queue_contention.c - the cost of the work queues under contention: one
 * producer (the ring thread's role) pushes request ids into `work`, T
 * consumers (compute threads) pop them and push them back into `done`, which
 * the producer drains, exactly as the pipeline does but with no work per
 * item. Reports the round trips per second and the ns each costs, for
 * T = 1, 2, 4, 8, 16: the queues' share of a sample is that cost over the
 * sample's compute time (about 700 us per image here).
 *
 *   build/bench/queue_contention [--items N] [--depth D]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/loader_state.h"
#include "util/util.h"

typedef struct shared {
	rf_idq work, done;
} shared;

static void *consumer(void *arg)
{
	shared *s = arg;
	uint32_t id;
	uint64_t idle;
	while (rfi_idq_pop_wait(&s->work, &id, &idle) == 0)
		rfi_idq_push(&s->done, id);
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t items = 2000000;
	uint32_t depth = 256;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--items") && i + 1 < argc)
			items = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			depth = (uint32_t)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: queue_contention [--items N] [--depth D]\n");
			return 2;
		}
	}
	printf("%-8s %14s %12s\n", "threads", "round trips/s", "ns each");
	int ts[] = { 1, 2, 4, 8, 16 };
	uint32_t *drain = malloc(depth * sizeof(uint32_t));
	for (size_t k = 0; k < sizeof(ts) / sizeof(ts[0]); k++) {
		shared s;
		rfi_idq_init(&s.work, depth);
		rfi_idq_init(&s.done, depth);
		pthread_t th[16];
		for (int t = 0; t < ts[k]; t++)
			pthread_create(&th[t], NULL, consumer, &s);
		uint64_t t0 = rfi_now_ns(), sent = 0, back = 0;
		uint32_t inflight = 0;
		while (back < items) {
			while (inflight < depth && sent < items) {
				rfi_idq_push(&s.work, (uint32_t)(sent++ % depth));
				inflight++;
			}
			uint32_t n = rfi_idq_drain(&s.done, drain, depth);
			back += n;
			inflight -= n;
		}
		double secs = (double)(rfi_now_ns() - t0) * 1e-9;
		rfi_idq_shutdown(&s.work);
		for (int t = 0; t < ts[k]; t++)
			pthread_join(th[t], NULL);
		rfi_idq_destroy(&s.work);
		rfi_idq_destroy(&s.done);
		printf("%-8d %14.0f %12.1f\n", ts[k], (double)items / secs, secs * 1e9 / (double)items);
	}
	free(drain);
	return 0;
}
