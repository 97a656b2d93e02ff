/* lifecycle.c - a loader's whole life under ThreadSanitizer: Criterion's
 * test programs cannot start under TSan (its arena), so this plain program
 * runs one configuration of the matrix that scripts/test.sh drives: threads,
 * read path, raw or decoded, in or out of order with batches kept, a resume
 * from a saved state (ids compared with an uncut run), and destroy with
 * reads in flight. Exits 0 when the run behaved; TSan fails it on a report.
 * Usage: tsan_lifecycle DATA THREADS PATH(auto|fixed|plain|pread) RAW(0|1) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringfeed.h"

static const char *data;
static int threads, raw, path;

static void config(rf_config *c)
{
	rf_config_default(c);
	c->source = data;
	c->batch_size = 4;
	c->resize = 32;
	c->crop = 24;
	c->threads = threads;
	c->io_depth = 16;
	c->prefetch = 3;
	c->read_pool_bytes = 4 << 20;
	c->raw = raw;
	c->io_path = (rf_io_path)path;
	c->pread_threads = 3;
	c->rank = 0;
	c->world_size = 1;
	c->epochs = 2;
}

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "tsan_lifecycle: " __VA_ARGS__);           \
			fputc('\n', stderr);                                       \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

static rf_loader *create(const rf_config *c)
{
	rf_loader *l;
	char err[256];
	int r = rf_loader_create(&l, c, err, sizeof(err));
	CHECK(r == 0, "create: %s (%s)", err, rf_strerror(r));
	return l;
}

/* Ids of up to max batches (all: SIZE_MAX) into ids[]; returns how many ids. */
static size_t take(rf_loader *l, size_t max, uint64_t *ids, size_t cap)
{
	size_t n = 0;
	rf_batch *b;
	int r;
	for (size_t k = 0; k < max && (r = rf_loader_next(l, &b)) == 0; k++) {
		for (uint32_t i = 0; i < b->count && n < cap; i++)
			ids[n++] = b->ids[i];
		rf_batch_release(l, b);
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: tsan_lifecycle DATA THREADS auto|fixed|plain|pread RAW\n");
		return 2;
	}
	data = argv[1];
	threads = atoi(argv[2]);
	const char *paths[] = { "auto", "fixed", "plain", "pread" };
	path = -1;
	for (int i = 0; i < 4; i++)
		if (!strcmp(argv[3], paths[i]))
			path = i;
	CHECK(path >= 0, "unknown path %s", argv[3]);
	raw = atoi(argv[4]);
	enum { CAP = 1 << 16 };
	static uint64_t whole[CAP], cut[CAP];

	/* an uncut run */
	rf_config c;
	config(&c);
	rf_loader *l = create(&c);
	size_t n = take(l, SIZE_MAX, whole, CAP);
	rf_stats st;
	rf_loader_stats(l, &st);
	CHECK(st.bad_samples == 0, "%llu bad samples", (unsigned long long)st.bad_samples);
	rf_loader_destroy(l);

	/* cut after 3 batches, saved, resumed by a new loader: the same ids */
	l = create(&c);
	size_t k = take(l, 3, cut, CAP);
	uint8_t state[4096];
	int len = rf_loader_state_save(l, state, sizeof(state));
	CHECK(len > 0, "state_save: %s", rf_strerror(len));
	rf_loader_destroy(l);
	rf_config r = c;
	r.resume_state = state;
	r.resume_state_len = (size_t)len;
	l = create(&r);
	k += take(l, SIZE_MAX, cut + k, CAP - k);
	rf_loader_destroy(l);
	CHECK(k == n && !memcmp(whole, cut, n * sizeof(*whole)), "cut + resume != the whole run");

	/* out of order, one batch kept the whole time, the rest released */
	c.in_order = 0;
	c.epochs = 0;
	l = create(&c);
	rf_batch *kept, *b;
	CHECK(rf_loader_next(l, &kept) == 0, "first batch");
	for (int i = 0; i < 20; i++) {
		CHECK(rf_loader_next(l, &b) == 0, "batch %d with one kept", i);
		rf_batch_release(l, b);
	}
	rf_batch_release(l, kept);
	rf_loader_destroy(l);

	/* destroy with reads in flight, at several points */
	for (int stop = 0; stop < 4; stop++) {
		l = create(&c);
		take(l, (size_t)stop, cut, CAP);
		rf_loader_destroy(l);
	}
	printf("tsan_lifecycle: threads %d, %s, raw %d: ok (%zu samples)\n", threads, argv[3], raw, n);
	return 0;
}
