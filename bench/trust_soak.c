/* trust_soak.c - issue 36's soak, one process: epochs over a remote source
 * (through tests/fault_proxy.py, which lies as servers, proxies and stores
 * do) in raw mode, each delivered sample's bytes compared with the same
 * sample's bytes read from a local copy, until SECONDS have passed. A
 * sample is either byte-identical to the local one or reported (the
 * loader's on_sample_error); a create that fails says why, and counts as
 * reported (a source it refused is not a source it misread). Prints one
 * line of counts at the end:
 *   trust_soak: epochs E creates_failed F delivered D identical I wrong W
 *   reported R replaced P
 * and exits 1 when any sample was wrong (W > 0) or an id was unknown.
 *
 * Usage: trust_soak LOCAL REMOTE SECONDS [CACHE_DIR] [SEED]
 * (bench/trust_soak.sh). LOCAL and REMOTE must index the same samples in
 * the same order (the same shards, by name). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ringfeed.h"

typedef struct soak {
	uint64_t reported, wrong, identical, delivered, replaced, epochs, creates_failed;
	unsigned printed; /* messages printed (the first few of each kind) */
} soak;

/* FNV-1a 64: enough to tell two samples' bytes apart here. */
static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h ^ n;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	soak *s = user;
	s->reported++;
	if (s->printed < 20) {
		s->printed++;
		fprintf(stderr, "trust_soak: reported %s: %s (%d)\n", path, reason, err);
	}
}

static void config(rf_config *c, const char *source, soak *s, uint64_t seed)
{
	rf_config_default(c);
	c->source = source;
	c->raw = 1;
	c->raw_max_bytes = 1 << 20;
	c->batch_size = 16;
	c->threads = 1;
	c->io_depth = 32;
	c->seed = seed;
	c->epochs = 1;
	c->on_sample_error = on_bad;
	c->user = s;
	c->rank = 0;
	c->world_size = 1;
	c->remote_timeout_ms = 30000;
}

/* The local copy's hash of each sample, by id: *n of them. NULL: failed. */
static uint64_t *reference(const char *local, size_t *n)
{
	soak s = { 0 };
	rf_config c;
	config(&c, local, &s, 0);
	c.shuffle = 0;
	char err[1024];
	rf_loader *l;
	if (rf_loader_create(&l, &c, err, sizeof(err))) {
		fprintf(stderr, "trust_soak: %s: %s\n", local, err);
		return NULL;
	}
	size_t cap = 1024, have = 0;
	uint64_t *h = calloc(cap, sizeof(*h));
	rf_batch *b;
	int rc;
	while (h && (rc = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			while (b->ids[i] >= cap) {
				uint64_t *g = realloc(h, 2 * cap * sizeof(*h));
				if (!g) {
					free(h);
					h = NULL;
					break;
				}
				memset(g + cap, 0, cap * sizeof(*g));
				h = g, cap *= 2;
			}
			if (!h)
				break;
			h[b->ids[i]] = hash_bytes(b->data + b->offsets[i], b->sizes[i]);
			have = b->ids[i] + 1 > have ? b->ids[i] + 1 : have;
		}
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
	if (s.reported) {
		fprintf(stderr, "trust_soak: the local copy %s has %llu bad samples\n", local,
			(unsigned long long)s.reported);
		free(h);
		return NULL;
	}
	*n = have;
	return h;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: trust_soak LOCAL REMOTE SECONDS [CACHE_DIR] [SEED]\n");
		return 2;
	}
	double seconds = atof(argv[3]);
	const char *cache = argc > 4 && argv[4][0] ? argv[4] : NULL;
	uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
	size_t n = 0;
	uint64_t *want = reference(argv[1], &n);
	if (!want)
		return 1;
	soak s = { 0 };
	int unknown = 0;
	double end = now_s() + seconds;
	while (now_s() < end && !unknown) {
		rf_config c;
		config(&c, argv[2], &s, seed++);
		c.cache_dir = cache;
		char err[1024];
		rf_loader *l;
		if (rf_loader_create(&l, &c, err, sizeof(err))) {
			s.creates_failed++;
			if (s.printed < 40) {
				s.printed++;
				fprintf(stderr, "trust_soak: create refused: %s\n", err);
			}
			continue;
		}
		rf_batch *b;
		int rc;
		while ((rc = rf_loader_next(l, &b)) == 0) {
			for (uint32_t i = 0; i < b->count; i++) {
				uint64_t id = b->ids[i];
				s.delivered++;
				if (id >= n) {
					fprintf(stderr, "trust_soak: id %llu is not a sample of the local copy "
						"(%zu)\n", (unsigned long long)id, n);
					unknown = 1;
					continue;
				}
				if (hash_bytes(b->data + b->offsets[i], b->sizes[i]) == want[id]) {
					s.identical++;
				} else {
					if (s.wrong++ < 20)
						fprintf(stderr, "trust_soak: sample %llu (%u bytes) differs from the "
							"local copy's\n", (unsigned long long)id, b->sizes[i]);
				}
			}
			s.replaced += b->replaced;
			rf_batch_release(l, b);
		}
		if (rc != RF_EOF && s.printed < 40) {
			s.printed++;
			fprintf(stderr, "trust_soak: epoch ended: %s\n", rf_loader_error(l));
		}
		rf_loader_destroy(l);
		s.epochs++;
	}
	free(want);
	printf("trust_soak: epochs %llu creates_failed %llu delivered %llu identical %llu wrong "
	       "%llu reported %llu replaced %llu\n", (unsigned long long)s.epochs,
	       (unsigned long long)s.creates_failed, (unsigned long long)s.delivered,
	       (unsigned long long)s.identical, (unsigned long long)s.wrong,
	       (unsigned long long)s.reported, (unsigned long long)s.replaced);
	return s.wrong || unknown ? 1 : 0;
}
