/* two_caches.c - two loaders of one process, each with the node-local cache
 * (a train and a validation loader), under ThreadSanitizer: each loader's
 * ring thread fills and evicts its cache at once with the other's, so any
 * state the cache keeps outside its struct (the eviction sort's) is a race
 * TSan reports. Each loader is drained by a thread of its own (one thread
 * taking from both would order the ring threads through itself and hide
 * the race). Exits 0 when both runs ended and evicted; TSan fails it on a
 * report. Usage: tsan_two_caches SOURCE CACHE_DIR (SOURCE: raw remote
 * shards larger than the cache's 4 MiB). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringfeed.h"

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "tsan_two_caches: " __VA_ARGS__);          \
			fputc('\n', stderr);                                       \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

typedef struct run {
	rf_loader *l;
	uint64_t samples;
	rf_stats st;
} run;

static void *drain(void *arg)
{
	run *r = arg;
	rf_batch *b;
	int rc;
	while ((rc = rf_loader_next(r->l, &b)) == 0) {
		r->samples += b->count;
		rf_batch_release(r->l, b);
	}
	CHECK(rc == RF_EOF, "next: %s: %s", rf_strerror(rc), rf_loader_error(r->l));
	rf_loader_stats(r->l, &r->st);
	return NULL;
}

int main(int argc, char **argv)
{
	CHECK(argc == 3, "usage: tsan_two_caches SOURCE CACHE_DIR");
	run runs[2];
	pthread_t t[2];
	memset(runs, 0, sizeof(runs));
	for (int i = 0; i < 2; i++) {
		rf_config c;
		rf_config_default(&c);
		c.source = argv[1];
		c.raw = 1;
		c.batch_size = 8;
		c.threads = 1;
		c.io_depth = 8;
		c.epochs = 2;
		c.seed = (uint64_t)i + 1; /* two orders: the two evict other segments */
		c.cache_dir = argv[2];
		c.cache_bytes = 4u << 20; /* the least: both evict, again and again */
		char err[512];
		int r = rf_loader_create(&runs[i].l, &c, err, sizeof(err));
		CHECK(r == 0, "create: %s (%s)", err, rf_strerror(r));
	}
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, drain, &runs[i]) == 0, "pthread_create");
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 2; i++) {
		CHECK(runs[i].samples > 0, "loader %d delivered nothing", i);
		CHECK(runs[i].st.cache_evictions > 0, "loader %d evicted nothing (hits %llu, misses "
		      "%llu): the source must be larger than 4 MiB", i,
		      (unsigned long long)runs[i].st.cache_hits,
		      (unsigned long long)runs[i].st.cache_misses);
		rf_loader_destroy(runs[i].l);
	}
	printf("tsan_two_caches: %llu and %llu samples\n", (unsigned long long)runs[0].samples,
	       (unsigned long long)runs[1].samples);
	return 0;
}
