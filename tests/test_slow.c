/* test_slow.c - the slow suite: a larger tree at high io_depth over several
 * epochs (every sample exactly once, bytes identical across thread counts),
 * and many create/destroy cycles at random points. */
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
