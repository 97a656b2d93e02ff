/* test_raw.c - raw mode: every regular file whatever its name (root files
 * with label -1); a batch holds each file's exact bytes at offsets[i]
 * (aligned, in place order), sizes and labels beside them; every I/O path
 * gives the same batches; a file over raw_max_bytes is a bad sample; a
 * replacement that finds no room in the batch names the failed read that
 * took it. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "pipeline/feeder.h"
#include "source/source.h"
#include "testutil.h"

Test(raw, bytes_offsets_labels_every_path)
{
	char *d = tu_tmpdir("raw");
	/* the last but one takes three reads (RF_READ_CHUNK = 1 MiB) */
	size_t sizes[] = { 1, 511, 512, 513, 4095, 4096, 4097, 10000, (5u << 19) + 3, 65536 };
	int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
	char rel[64];
	for (int i = 0; i < n; i++) {
		uint8_t *p = malloc(sizes[i]);
		for (size_t k = 0; k < sizes[i]; k++)
			p[k] = (uint8_t)(k * 7 + (size_t)i * 13);
		snprintf(rel, sizeof(rel), i < n - 1 ? "k%d/f%d.any" : "rootfile%d", i % 2, i);
		tu_write(d, rel, p, sizes[i]);
		free(p);
	}
	tu_write(d, "k0/empty", "", 0);
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, d, 1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, (size_t)n + 1, "every regular file, whatever its name");
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++)
		for (int buffered = 0; buffered < 2; buffered++) {
			rf_config cfg;
			tu_config(&cfg, d);
			cfg.raw = 1;
			cfg.raw_max_bytes = 3u << 20;
			cfg.batch_size = n; /* one batch: every good file once, the empty one replaced */
			cfg.shuffle = 0;
			cfg.io_path = paths[p];
			cfg.no_direct_io = buffered;
			rf_loader *l;
			cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
			rf_batch *b;
			cr_assert_eq(rf_loader_next(l, &b), 0, "%s", rf_loader_error(l));
			cr_assert_eq(b->sample_bytes, 0);
			uint64_t prev_end = 0;
			for (uint32_t i = 0; i < b->count; i++) {
				const rf_index_entry *e = &idx.entries[b->ids[i]];
				cr_assert_eq((int64_t)b->sizes[i], e->size);
				cr_assert_eq(b->labels[i], e->label);
				cr_assert_eq(b->offsets[i] % 512, 0, "offsets are aligned");
				if (!b->replaced)
					cr_assert_geq(b->offsets[i], prev_end, "in place order");
				prev_end = b->offsets[i] + b->sizes[i];
				cr_assert_leq(prev_end, b->bytes);
				size_t len;
				uint8_t *want = tu_read(d, rfi_index_path(&idx, b->ids[i]), &len);
				cr_assert_eq(len, b->sizes[i]);
				cr_assert_eq(memcmp(b->data + b->offsets[i], want, len), 0,
					     "path %d: bytes of %s", p, rfi_index_path(&idx, b->ids[i]));
				if (!strncmp(rfi_index_path(&idx, b->ids[i]), "rootfile", 8))
					cr_assert_eq(b->labels[i], -1);
				free(want);
			}
			rf_batch_release(l, b);
			rf_loader_destroy(l);
		}
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
	tu_assert_no_leaks();
}

Test(raw, too_large_is_a_bad_sample)
{
	char *d = tu_tmpdir("rawbig");
	tu_write(d, "k/small", "abc", 3);
	char *big = calloc(1, 5000);
	tu_write(d, "k/big", big, 5000);
	free(big);
	tu_bad_log s = { 0 };
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.raw = 1;
	cfg.raw_max_bytes = 4096;
	cfg.batch_size = 2;
	cfg.on_sample_error = tu_on_bad;
	cfg.user = &s;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), 0);
	for (uint32_t i = 0; i < b->count; i++)
		cr_assert_eq(b->sizes[i], 3);
	rf_batch_release(l, b);
	rf_loader_destroy(l);
	cr_assert_geq(s.n, 1);
	cr_assert(strstr(s.reason, "5000 bytes"), "%s", s.reason);
	tu_rmrf(d);
	free(d);
}

#if RF_TEST_HOOKS
/* The small files' reads fail (EIO), as a disk's or a server's would. */
static int small_fail(void *ctx, uint64_t sample, int res, int64_t size)
{
	(void)ctx;
	(void)sample;
	return size < 6000 ? -EIO : res;
}

typedef struct no_room_log {
	int n, no_room, named;
	char first[512];
} no_room_log;

static void on_no_room(void *user, const char *path, int err, const char *reason)
{
	(void)path;
	(void)err;
	no_room_log *g = user;
	g->n++;
	if (!strstr(reason, "no room"))
		return;
	if (!g->no_room++)
		snprintf(g->first, sizeof(g->first), "%s", reason);
	g->named += strstr(reason, "/s") && strstr(reason, strerror(EIO));
}

/* Raw mode reads a sample straight into the batch, and a failed read's room
 * is not given back: a place whose small file failed, replaced by a file of
 * raw_max_bytes, needs more than its share, and replacements can run out of
 * room. Such a replacement's report names the failed read that took the
 * room (its file and what the read met), not only "no room". */
Test(raw, a_replacement_without_room_names_the_failed_read)
{
	char *d = tu_tmpdir("rawroom");
	uint8_t *p = calloc(1, 8000);
	char rel[64];
	for (int i = 0; i < 12; i++) {
		snprintf(rel, sizeof(rel), "k/%s%02d", i < 4 ? "s" : "t", i); /* s: small, first */
		tu_write(d, rel, p, i < 4 ? 5000 : 8000);
	}
	free(p);
	no_room_log g = { 0 };
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.raw = 1;
	cfg.raw_max_bytes = 8192;
	cfg.batch_size = 4;
	cfg.shuffle = 0;
	cfg.on_sample_error = on_no_room;
	cfg.user = &g;
	rfi_feeder_set_test_hook(small_fail, NULL);
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r = rf_loader_next(l, &b);
	if (!r)
		rf_batch_release(l, b);
	rf_loader_destroy(l);
	rfi_feeder_set_test_hook(NULL, NULL);
	cr_assert_gt(g.no_room, 0, "the small files' rooms and the replacements' fill the batch "
		     "(%d reports)", g.n);
	cr_assert_eq(g.named, g.no_room, "%d of %d name the failed read; the first: %s", g.named,
		     g.no_room, g.first);
	tu_rmrf(d);
	free(d);
}
#endif
