/* test_parquet_access.c - how Parquet files are read (src/source/parquet.c,
 * src/sample/shard_order.c, src/pipeline/chunks.c): shard_access =
 * sequential reads the files in a seeded order, each front to back with
 * the block shuffle, through the chunk table, every row once an epoch and
 * every byte about once (bytes_fetched <= 1.05 x the files), resumed
 * exactly from a saved state, ranks disjoint and covering, and elastic
 * (saved on 2 ranks, finished on 3). Random access shares a page's read
 * among its rows in flight (reads_shared, bytes_fetched against
 * bytes_used). Rows are told by their label (the row's number) and their
 * bytes, read raw. Files written by the real pyarrow (tests/parquet_rows.py
 * with the venv scripts/parquet_venv.sh makes; RINGFEED_PARQUET_PYTHON
 * names another python; without one these tests skip saying so). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringfeed.h"
#include "testutil.h"

#define ROWS 700
#define FILES 4

static char *out;

static void setup(void)
{
	tu_parquet_python(); /* or the test skips, saying why */
	out = tu_tmpdir("pqaccess");
	tu_run("'%s' '%s' '%s'", tu_parquet_python(), RF_PQ_ROWS, out);
}

static void teardown(void)
{
	if (out)
		tu_rmrf(out);
	free(out);
	out = NULL;
}

static char *at(const char *rel)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", out, rel) > 0);
	return p;
}

static uint64_t file_bytes(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	return (uint64_t)st.st_size;
}

/* The files of seq/, their bytes together. */
static uint64_t seq_bytes(void)
{
	uint64_t n = 0;
	for (int k = 0; k < FILES; k++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "seq/part-%d.parquet", k);
		char *p = at(rel);
		n += file_bytes(p);
		free(p);
	}
	return n;
}

/* What a run delivered: each epoch's rows in order (by label), each row's
 * bytes' hash, the counters. */
typedef struct run_of {
	int32_t order[3][ROWS];
	uint32_t n[3];          /* rows delivered in each epoch */
	uint32_t times[3][ROWS];
	uint64_t hash[ROWS];
	rf_stats st;
} run_of;

static void run(const rf_config *cfg, run_of *r)
{
	memset(r, 0, sizeof(*r));
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "create %s: %s", cfg->source,
		     err);
	rf_batch *b;
	int ret;
	while ((ret = rf_loader_next(l, &b)) == 0) {
		cr_assert_lt(b->epoch, 3);
		for (uint32_t i = 0; i < b->count; i++) {
			int32_t k = b->labels[i];
			cr_assert(k >= 0 && k < ROWS, "label %d", k);
			uint64_t h = tu_fnv1a(b->data + b->offsets[i], b->sizes[i]);
			cr_assert(!r->hash[k] || r->hash[k] == h, "row %d: other bytes", k);
			r->hash[k] = h;
			r->times[b->epoch][k]++;
			r->order[b->epoch][r->n[b->epoch]++] = k;
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(ret, RF_EOF, "next: %s: %s", rf_strerror(ret), rf_loader_error(l));
	rf_loader_stats(l, &r->st);
	rf_loader_destroy(l);
	cr_assert_eq(r->st.bad_samples, 0);
}

static void config(rf_config *cfg, const char *source)
{
	tu_config(cfg, source);
	cfg->raw = 1;
	cfg->batch_size = 16;
	cfg->shuffle_block = 64;
}

TestSuite(parquet_access, .init = setup, .fini = teardown, .timeout = 120);

/* Two epochs of shard_access = sequential: every row once an epoch, with
 * the bytes random access gives it; the files read about once an epoch;
 * the rows shuffled (not index order), the epochs in other orders. */
Test(parquet_access, sequential_reads_every_row_and_byte_once)
{
	char *src = at("seq");
	rf_config cfg;
	config(&cfg, src);
	cfg.epochs = 1;
	static run_of rnd, seq;
	run(&cfg, &rnd);
	cfg.epochs = 2;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	run(&cfg, &seq);
	for (int e = 0; e < 2; e++) {
		cr_assert_eq(seq.n[e], ROWS, "epoch %d: %u rows", e, seq.n[e]);
		for (int k = 0; k < ROWS; k++)
			cr_assert_eq(seq.times[e][k], 1, "epoch %d: row %d delivered %u times", e, k,
				     seq.times[e][k]);
	}
	for (int k = 0; k < ROWS; k++)
		cr_assert_eq(seq.hash[k], rnd.hash[k], "row %d: other bytes than random access", k);
	int sorted = 1, same = 1;
	for (int i = 1; i < ROWS; i++)
		sorted &= seq.order[0][i] == seq.order[0][i - 1] + 1;
	for (int i = 0; i < ROWS; i++)
		same &= seq.order[0][i] == seq.order[1][i];
	cr_assert(!sorted && !same, "not shuffled (sorted %d, epochs alike %d)", sorted, same);
	uint64_t files = seq_bytes();
	cr_log_info("files %llu bytes; sequential, 2 epochs: fetched %llu, used %llu, shared %llu; "
		    "random, 1 epoch: fetched %llu, used %llu, shared %llu", (unsigned long long)files,
		    (unsigned long long)seq.st.bytes_fetched, (unsigned long long)seq.st.bytes_used,
		    (unsigned long long)seq.st.reads_shared, (unsigned long long)rnd.st.bytes_fetched,
		    (unsigned long long)rnd.st.bytes_used, (unsigned long long)rnd.st.reads_shared);
	cr_assert_leq(seq.st.bytes_fetched, 2 * files + 2 * files / 20,
		      "2 epochs fetched %llu bytes of files of %llu",
		      (unsigned long long)seq.st.bytes_fetched, (unsigned long long)files);
	cr_assert_gt(seq.st.reads_shared, 2 * ROWS / 2, "%llu rows served by a shared read",
		     (unsigned long long)seq.st.reads_shared);
	/* without the block shuffle (samples in stream order) and a pool of 2
	 * MiB, the files are read in chunks of 512 KiB, every epoch again */
	cfg.shuffle_block = 1;
	cfg.read_pool_bytes = 2 << 20;
	static run_of small;
	run(&cfg, &small);
	cr_assert_eq(small.n[1], ROWS);
	cr_log_info("block 1, 2 MiB pool: fetched %llu", (unsigned long long)small.st.bytes_fetched);
	cr_assert_leq(small.st.bytes_fetched, 2 * files + 2 * files / 20,
		      "2 epochs fetched %llu bytes of files of %llu",
		      (unsigned long long)small.st.bytes_fetched, (unsigned long long)files);
	/* random access reads a page a row: more than the files */
	cr_assert_gt(rnd.st.bytes_fetched, files, "random: %llu bytes fetched",
		     (unsigned long long)rnd.st.bytes_fetched);
	cr_assert_gt(rnd.st.bytes_used, 0);
	free(src);
}

/* Stopped after k batches and resumed from the saved state: the same
 * batches (ids, labels, bytes), whatever the cut. */
Test(parquet_access, sequential_resumes_exactly)
{
	char *src = at("seq");
	rf_config cfg;
	config(&cfg, src);
	cfg.epochs = 2;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	tu_assert_resumes_exactly(&cfg, &cfg, "Parquet, shard_access = sequential");
	free(src);
}

/* 4 ranks: each reads its own run, together every row once. */
Test(parquet_access, sequential_ranks_disjoint_and_covering)
{
	char *src = at("seq");
	rf_config cfg;
	config(&cfg, src);
	cfg.epochs = 1;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	cfg.world_size = 4; /* 175 rows a rank: no padding */
	uint32_t times[ROWS] = { 0 };
	static run_of r;
	for (int k = 0; k < cfg.world_size; k++) {
		cfg.rank = k;
		run(&cfg, &r);
		cr_assert_eq(r.n[0], ROWS / 4, "rank %d: %u rows", k, r.n[0]);
		for (int i = 0; i < ROWS; i++)
			times[i] += r.times[0][i];
	}
	for (int i = 0; i < ROWS; i++)
		cr_assert_eq(times[i], 1, "row %d delivered %u times over the ranks", i, times[i]);
	free(src);
}

/* Saved on 2 ranks after 2 batches each, finished on 3 ranks (the 636
 * rows left: 212 a rank, no padding): every row once in the epoch. */
Test(parquet_access, sequential_elastic_2_to_3_ranks)
{
	char *src = at("seq"), err[512];
	rf_config cfg;
	config(&cfg, src);
	cfg.epochs = 1;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	cfg.world_size = 2;
	uint32_t times[ROWS] = { 0 };
	static uint8_t state[RF_STATE_MAX_BYTES];
	int len = 0;
	for (int k = 0; k < 2; k++) {
		rf_config c = cfg;
		c.rank = k;
		rf_loader *l;
		cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
		tu_batch *b;
		size_t n = tu_take(l, 2, &b);
		cr_assert_eq(n, 2);
		for (size_t i = 0; i < n; i++)
			for (uint32_t j = 0; j < b[i].count; j++)
				times[b[i].labels[j]]++;
		tu_batches_free(b, n);
		if (k == 0)
			len = rf_loader_state_save(l, state, sizeof(state));
		cr_assert_gt(len, 0);
		rf_loader_destroy(l);
	}
	cfg.world_size = 3;
	cfg.resume_state = state;
	cfg.resume_state_len = (size_t)len;
	static run_of r;
	for (int k = 0; k < 3; k++) {
		cfg.rank = k;
		run(&cfg, &r);
		for (int i = 0; i < ROWS; i++)
			times[i] += r.times[0][i];
	}
	for (int i = 0; i < ROWS; i++)
		cr_assert_eq(times[i], 1, "row %d delivered %u times (2 ranks, then 3)", i, times[i]);
	free(src);
}

/* Random access to a file of pages of about 20 rows: every row once, the
 * bytes sequential access gives it; the rows of a page in flight together
 * or while its read is still held share that read, so fewer bytes are
 * fetched than a page a row (bytes_read counts each row's read whole): with
 * a pool of 1 MiB (about 13 of the file's 32 pages) some; with 8 MiB (the
 * whole file) each page is read once. */
static void random_pages(size_t pool, run_of *got, uint64_t *file)
{
	char *src = at("pages.parquet"), *seq = at("seq");
	rf_config cfg;
	config(&cfg, seq);
	cfg.epochs = 1;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	static run_of want;
	run(&cfg, &want);
	config(&cfg, src);
	cfg.epochs = 2;
	cfg.read_pool_bytes = pool;
	run(&cfg, got);
	for (int e = 0; e < 2; e++)
		for (int k = 0; k < ROWS; k++)
			cr_assert_eq(got->times[e][k], 1, "epoch %d: row %d delivered %u times", e, k,
				     got->times[e][k]);
	for (int k = 0; k < ROWS; k++)
		cr_assert_eq(got->hash[k], want.hash[k], "row %d: other bytes than sequential access",
			     k);
	*file = file_bytes(src);
	cr_log_info("random, 2 epochs, pool %zu, file %llu bytes: read %llu (a page a row), "
		    "fetched %llu, used %llu, shared %llu", pool, (unsigned long long)*file,
		    (unsigned long long)got->st.bytes_read, (unsigned long long)got->st.bytes_fetched,
		    (unsigned long long)got->st.bytes_used, (unsigned long long)got->st.reads_shared);
	cr_assert_eq(got->st.bytes_used, 2 * want.st.bytes_used, "the rows' own bytes, 2 epochs");
	free(src);
	free(seq);
}

Test(parquet_access, random_access_shares_page_reads)
{
	static run_of got;
	uint64_t file;
	random_pages(1 << 20, &got, &file);
	cr_assert_gt(got.st.reads_shared, 2 * ROWS / 5);
	cr_assert_lt(got.st.bytes_fetched, got.st.bytes_read / 10 * 8,
		     "fetched %llu bytes, a page a row %llu", (unsigned long long)got.st.bytes_fetched,
		     (unsigned long long)got.st.bytes_read);
	random_pages(8 << 20, &got, &file);
	cr_assert_leq(got.st.bytes_fetched, file, "the whole file held: fetched %llu bytes of %llu",
		      (unsigned long long)got.st.bytes_fetched, (unsigned long long)file);
}

/* Pages of about 400 KiB, chunks of 1 MiB (a 4 MiB pool): each chunk reads
 * the pages that start in it, whole, so an epoch in index order or with
 * shard_access = sequential (no block shuffle) fetches the file's pages
 * once, not a page's worth more at each chunk's end. */
Test(parquet_access, pages_near_a_chunk_are_read_once)
{
	char *src = at("bigpages.parquet");
	uint64_t file = file_bytes(src);
	rf_config cfg;
	config(&cfg, src);
	cfg.epochs = 1;
	cfg.read_pool_bytes = 4 << 20;
	cfg.raw_max_bytes = 1 << 20; /* raw mode: a read (a page) at most this */
	static run_of r;
	for (int mode = 0; mode < 2; mode++) {
		cfg.shuffle = mode; /* 0: the sequential sampler, index order */
		cfg.shuffle_block = 1;
		cfg.shard_access = mode ? RF_SHARD_SEQUENTIAL : RF_SHARD_RANDOM;
		run(&cfg, &r);
		for (int k = 0; k < ROWS; k++)
			cr_assert_eq(r.times[0][k], 1, "mode %d: row %d delivered %u times", mode, k,
				     r.times[0][k]);
		cr_log_info("mode %d: file %llu bytes, fetched %llu", mode, (unsigned long long)file,
			    (unsigned long long)r.st.bytes_fetched);
		cr_assert_leq(r.st.bytes_fetched, file + file / 20, "mode %d: fetched %llu of %llu",
			      mode, (unsigned long long)r.st.bytes_fetched, (unsigned long long)file);
	}
	free(src);
}
