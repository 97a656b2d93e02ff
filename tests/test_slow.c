/* test_slow.c - the slow suite: a larger tree at high io_depth over several
 * epochs (every sample exactly once, bytes identical across thread counts),
 * many create/destroy cycles at random points, and resumes from states saved
 * while hundreds of reads were in flight, as one rank of three. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *dir;
static void setup(void) { dir = tu_tree("slow", 8, 250); } /* 2000 files */
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

Test(slow, deep_queue_many_epochs, .init = setup, .fini = teardown, .timeout = 600)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.io_depth = 4096;
	cfg.batch_size = 37;
	cfg.epochs = 3;
	cfg.prefetch = 6;
	size_t n1, n2;
	uint64_t *a = tu_drain_ids(&cfg, &n1);
	cr_assert_eq(n1, 6000);
	for (int e = 0; e < 3; e++) {
		uint8_t *seen = calloc(2000, 1);
		for (size_t i = 0; i < 2000; i++) {
			uint64_t id = a[(size_t)e * 2000 + i];
			cr_assert(!seen[id]);
			seen[id] = 1;
		}
		free(seen);
	}
	cfg.threads = 1;
	cfg.io_depth = 7;
	uint64_t *b = tu_drain_ids(&cfg, &n2);
	cr_assert_eq(memcmp(a, b, n1 * sizeof(*a)), 0);
	free(a);
	free(b);
}

Test(slow, create_destroy_cycles, .init = setup, .fini = teardown, .timeout = 600)
{
	srand(7);
	for (int round = 0; round < 60; round++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.io_depth = 1 + rand() % 1024;
		cfg.threads = 1 + rand() % 4;
		cfg.prefetch = 1 + rand() % 4;
		cfg.epochs = 0;
		rf_loader *l;
		char err[256];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
		int k = rand() % 20;
		rf_batch *b;
		for (int i = 0; i < k; i++) {
			cr_assert_eq(rf_loader_next(l, &b), 0);
			rf_batch_release(l, b);
		}
		rf_loader_destroy(l);
	}
}

Test(slow, resume_with_deep_queues, .init = setup, .fini = teardown, .timeout = 600)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.batch_size = 37;
	cfg.epochs = 2;
	cfg.seed = 8;
	cfg.world_size = 3;
	cfg.rank = 2;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *ref;
	size_t nref = tu_take(l, SIZE_MAX, &ref);
	rf_loader_destroy(l);
	cr_assert_eq(nref, 2 * 19, "667 of 2000 samples per rank and epoch: 19 batches");
	srand(11);
	for (int round = 0; round < 12; round++) {
		size_t k = (size_t)rand() % nref;
		rf_config before = cfg, after = cfg;
		before.io_depth = 4096;  /* most of the epoch read ahead at save time */
		before.prefetch = 8;
		before.threads = 1 + rand() % 3;
		after.io_depth = 1 + rand() % 64;
		after.prefetch = 1 + rand() % 3;
		after.threads = 1 + rand() % 3;
		cr_assert_eq(rf_loader_create(&l, &before, err, sizeof(err)), 0, "%s", err);
		tu_batch *b;
		size_t n = tu_take(l, k, &b);
		tu_batches_free(b, n);
		uint8_t state[RF_STATE_MAX_BYTES];
		int len = rf_loader_state_save(l, state, sizeof(state));
		cr_assert_gt(len, 0);
		rf_loader_destroy(l);
		after.resume_state = state;
		after.resume_state_len = (size_t)len;
		cr_assert_eq(rf_loader_create(&l, &after, err, sizeof(err)), 0, "%s", err);
		n = tu_take(l, SIZE_MAX, &b);
		rf_loader_destroy(l);
		cr_assert_eq(n, nref - k, "cut at %zu", k);
		for (size_t i = 0; i < n; i++)
			tu_assert_same_batch(&ref[k + i], &b[i], "deep queues");
		tu_batches_free(b, n);
	}
	tu_batches_free(ref, nref);
}
