/* test_parquet_source.c - Parquet files as a source (src/source/parquet.c):
 * files the real pyarrow writes (tests/parquet_images.py, with the venv
 * scripts/parquet_venv.sh makes; RINGFEED_PARQUET_PYTHON names another
 * python; without one these tests skip saying so) from a tree of JPEGs
 * deliver, sample by sample, the same pixels and labels as the tree read as
 * a folder (and, raw, the same bytes); in every layout pyarrow and
 * `datasets` write (page index or page headers, dictionary or not, pages
 * v1 and v2, the Image struct, several files as a folder, a pattern, a
 * list); a null image and damaged bytes are bad samples named FILE:row N;
 * a codec ringfeed does not read is refused at create, naming the file,
 * the column and the codec; an OffsetIndex that lies about rows makes them
 * bad samples (image) or is refused (label). The suite parquet_writers does
 * the same with the files of the real writers (tests/parquet_writers.py:
 * pyarrow's grid, `datasets`, DuckDB, Polars), a test a writer. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <time.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pack/pack.h"
#include "ringfeed.h"
#include "rf_config.h"
#include "source/parquet_meta.h"
#include "testutil.h"
#if RF_TEST_HOOKS
#include "source/parquet_table.h"
#endif

#define CLASSES 3
#define PER_CLASS 9
#define N (CLASSES * PER_CLASS)

static char *tree, *out;
static char *rows[N + 3]; /* row N of the files: its image, relative to tree */

static void setup(void)
{
	tu_parquet_python(); /* or the test skips, saying why */
	tree = tu_tree("pqsrc", CLASSES, PER_CLASS);
	out = tu_tmpdir("pqout");
	tu_run("'%s' '%s' '%s' '%s'", tu_parquet_python(), RF_PQ_IMAGES, tree, out);
	size_t len;
	char *text = (char *)tu_read(out, "rows.txt", &len);
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	for (int i = 0; i < N && line; i++, line = strtok_r(NULL, "\n", &save))
		rows[i] = strdup(line);
	free(text);
	cr_assert(rows[N - 1], "rows.txt lists fewer than %d rows", N);
}

static void teardown(void)
{
	for (int i = 0; i < N; i++) {
		free(rows[i]);
		rows[i] = NULL;
	}
	if (tree)
		tu_rmrf(tree);
	if (out)
		tu_rmrf(out);
	free(tree);
	free(out);
	tree = out = NULL;
}

static char *at(const char *rel)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", out, rel) > 0);
	return p;
}

/* What a run delivered of each image (row N's, or the tree's file). */
typedef struct seen {
	int times;
	int at; /* its place in the run's order */
	int32_t label;
	uint64_t hash; /* its pixels, or raw its bytes */
} seen;

/* push_to_hub's shard K of n: "data/train-0000K-of-0000n.parquet:row R". */
static int hub_shard(const char *name, int *k, int *n)
{
	const char *t = strstr(name, "/train-");
	return t && sscanf(t, "/train-%5d-of-%5d.parquet:", k, n) == 2 && *n > 0;
}

/* Which of the N images sample `name` is: a tree's path, or FILE:row K. */
static int image_of(const char *name)
{
	const char *row = strstr(name, ":row "), *part = strstr(name, "part-");
	int shard, shards;
	if (row) { /* split/part-K.parquet holds rows K * a third on */
		int k = atoi(row + 5) + (part && part < row ? atoi(part + 5) * ((N + 2) / 3) : 0);
		if (hub_shard(name, &shard, &shards)) /* datasets' contiguous shards */
			k += shard * (N / shards) + (shard < N % shards ? shard : N % shards);
		return k < N ? k : -1;
	}
	size_t tl = strlen(tree);
	for (int i = 0; i < N; i++)
		if (!strncmp(name, tree, tl) && !strcmp(name + tl + 1, rows[i]))
			return i;
	return -1;
}

/* One epoch of cfg, in order, each sample filed under its image. */
static void run(rf_config *cfg, seen *s, rf_stats *st)
{
	memset(s, 0, N * sizeof(*s));
	rf_loader *l;
	char err[512], name[4096];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "create %s: %s", cfg->source,
		     err);
	rf_batch *b;
	int r, delivered = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			cr_assert(rf_loader_sample_name(l, b->ids[i], name, sizeof(name)) > 0);
			int k = image_of(name);
			cr_assert(k >= 0, "%s: a sample of no image", name);
			s[k].times++;
			s[k].at = delivered++;
			s[k].label = b->labels[i];
			s[k].hash = cfg->raw ? tu_fnv1a(b->data + b->offsets[i], b->sizes[i])
					     : tu_fnv1a(b->data + i * b->sample_bytes, b->sample_bytes);
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "next: %s: %s", rf_strerror(r), rf_loader_error(l));
	if (st)
		rf_loader_stats(l, st);
	rf_loader_destroy(l);
}

/* The index cache the source's runs use (cfg.cache), or NULL. */
static const char *use_cache;

/* source delivers what the tree does, image by image: in index order (the
 * files read front to back in chunks: in the tree's order), shuffled (a
 * page read a sample) and with shard_access = sequential (the files in a
 * seeded order, each read front to back in chunks, the block shuffle): the
 * same images, pixels and labels each epoch. */
static void assert_as_tree_in(const char *source, int raw, int shuffle, rf_shard_access access)
{
	rf_config cfg;
	seen want[N], got[N];
	tu_config(&cfg, tree);
	cfg.shuffle = shuffle;
	cfg.epochs = 1;
	cfg.raw = raw;
	run(&cfg, want, NULL);
	cfg.source = source;
	cfg.index_cache = use_cache;
	cfg.shard_access = access;
	rf_stats st;
	run(&cfg, got, &st);
	cr_assert_eq(st.bad_samples, 0, "%s: %llu bad samples", source,
		     (unsigned long long)st.bad_samples);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(want[i].times, 1, "tree: %s delivered %d times", rows[i], want[i].times);
		cr_assert_eq(got[i].times, 1, "%s: row %d (%s) delivered %d times", source, i, rows[i],
			     got[i].times);
		cr_assert_eq(got[i].label, want[i].label, "%s: row %d: label %d, the tree's %d", source,
			     i, got[i].label, want[i].label);
		cr_assert_eq(got[i].hash, want[i].hash, "%s: row %d (%s): other %s", source, i,
			     rows[i], raw ? "bytes" : "pixels");
		cr_assert(shuffle || access != RF_SHARD_RANDOM || got[i].at == want[i].at,
			  "%s: row %d delivered %dth, the tree's %dth", source, i, got[i].at,
			  want[i].at);
	}
}

static void assert_as_tree(const char *source, int raw)
{
	assert_as_tree_in(source, raw, 0, RF_SHARD_RANDOM);
	assert_as_tree_in(source, raw, 1, RF_SHARD_RANDOM);
	assert_as_tree_in(source, raw, 1, RF_SHARD_SEQUENTIAL);
}

/* The same for the fixture rel names (its path freed after). */
static void assert_as_tree_at(const char *rel, int raw)
{
	char *p = at(rel);
	assert_as_tree(p, raw);
	free(p);
}

TestSuite(parquet_source, .init = setup, .fini = teardown, .timeout = 120);

Test(parquet_source, page_index_no_dictionary) { assert_as_tree_at("plain.parquet", 0); }
Test(parquet_source, dictionary_pages_v2_headers_scanned) { assert_as_tree_at("dict.parquet", 0); }
Test(parquet_source, datasets_image_struct) { assert_as_tree_at("hf.parquet", 0); }
Test(parquet_source, raw_bytes) { assert_as_tree_at("dict.parquet", 1); }
Test(parquet_source, a_folder_of_files) { assert_as_tree_at("split", 0); }
Test(parquet_source, a_list_file) { assert_as_tree_at("split.list", 0); }

Test(parquet_source, glob_and_brace_patterns)
{
	assert_as_tree_at("split/part-*.parquet", 0);
	assert_as_tree_at("split/part-{0..2}.parquet", 0);
}

Test(parquet_source, every_codec_built)
{
	static const char *const codecs[] = { "none", "snappy", "gzip", "brotli", "lz4", "zstd" };
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "codec_%s.parquet", codecs[i]);
		char *p = at(rel), err[512];
		rf_config cfg;
		tu_config(&cfg, p);
		rf_loader *l;
		int r = rf_loader_create(&l, &cfg, err, sizeof(err));
		if (r) { /* only a codec this build lacks may refuse, saying so */
			cr_assert(strstr(err, "not built into this ringfeed"), "%s: %s", rel, err);
			cr_assert(strstr(err, "column image"), "%s: %s", rel, err);
		} else {
			rf_loader_destroy(l);
			assert_as_tree(p, 0);
		}
		free(p);
	}
}

Test(parquet_source, class_label_names)
{
	rf_config cfg;
	char *p = at("hf.parquet"), err[512];
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	const char *c1 = rf_loader_class_name(l, 1);
	cr_assert(c1 && !strcmp(c1, "c1"), "class 1: %s", c1 ? c1 : "(none)");
	rf_loader_destroy(l);
	free(p);
}

/* Bad-sample reports, in order of arrival (the callback's threads). */
typedef struct reports {
	pthread_mutex_t mu;
	int n;
	char path[8][512], reason[8][256];
} reports;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	(void)err;
	reports *r = user;
	pthread_mutex_lock(&r->mu);
	if (r->n < 8) {
		snprintf(r->path[r->n], sizeof(r->path[0]), "%s", path);
		snprintf(r->reason[r->n], sizeof(r->reason[0]), "%s", reason);
	}
	r->n++;
	pthread_mutex_unlock(&r->mu);
}

static int reported(const reports *r, const char *suffix, const char *why)
{
	for (int i = 0; i < r->n && i < 8; i++) {
		size_t a = strlen(r->path[i]), b = strlen(suffix);
		if (a >= b && !strcmp(r->path[i] + a - b, suffix) && strstr(r->reason[i], why))
			return 1;
	}
	return 0;
}

Test(parquet_source, null_and_damaged_rows_are_bad_samples)
{
	size_t len;
	char *text = (char *)tu_read(out, "bad.txt", &len);
	int n = atoi(text);
	free(text);
	reports r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	rf_config cfg;
	char *p = at("bad.parquet"), want[64];
	tu_config(&cfg, p);
	cfg.shuffle = 0;
	cfg.epochs = 1;
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	rf_stats st;
	size_t bytes;
	free(tu_drain_bytes(&cfg, &bytes, &st));
	cr_assert_eq(st.bad_samples, 2, "%llu bad samples", (unsigned long long)st.bad_samples);
	cr_assert_eq(r.n, 2, "%d reports", r.n);
	snprintf(want, sizeof(want), "bad.parquet:row %d", n);
	cr_assert(reported(&r, want, "null"), "no report of %s as null: %s (%s)", want, r.path[0],
		  r.reason[0]);
	snprintf(want, sizeof(want), "bad.parquet:row %d", n + 1);
	cr_assert(reported(&r, want, ""), "no report of %s: %s, %s", want, r.path[0], r.path[1]);
	free(p);
}

Test(parquet_source, a_codec_not_read_is_refused_at_create)
{
	rf_config cfg;
	char *p = at("lzo.parquet"), err[512];
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "lzo.parquet") && strstr(err, "column image") && strstr(err, "LZO"),
		  "%s", err);
	free(p);
}

Test(parquet_source, no_image_column_is_refused_naming_the_columns)
{
	char *p = at("names.parquet"), err[512];
	tu_run("'%s' -c 'import pyarrow as pa, pyarrow.parquet as pq; "
	       "pq.write_table(pa.table({\"caption\": [b\"a\", b\"b\"], \"url\": [b\"x\", b\"y\"]}), "
	       "\"%s\")'", tu_parquet_python(), p);
	rf_config cfg;
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "no image column") && strstr(err, "caption, url"), "%s", err);
	free(p);
}

/* In index order the files are read in chunks, not a page per sample; a
 * shuffled epoch reads each sample's page, shared by the samples in flight
 * on it or while its read is held (this file is one page: read once). */
Test(parquet_source, in_order_reads_the_file_in_chunks)
{
	rf_config cfg;
	char *p = at("codec_none.parquet");
	seen got[N];
	rf_stats in_order, shuffled;
	tu_config(&cfg, p);
	cfg.epochs = 1;
	cfg.shuffle = 0;
	run(&cfg, got, &in_order);
	cfg.shuffle = 1;
	run(&cfg, got, &shuffled);
	cr_assert_lt(in_order.reads_submitted, N / 4, "in order: %llu reads for %d samples",
		     (unsigned long long)in_order.reads_submitted, N);
	cr_assert_lt(shuffled.reads_submitted, N / 4, "shuffled: %llu reads for %d samples",
		     (unsigned long long)shuffled.reads_submitted, N);
	cr_assert_geq(shuffled.reads_shared + shuffled.reads_submitted, N,
		      "shuffled: %llu reads shared, %llu made, for %d samples",
		      (unsigned long long)shuffled.reads_shared,
		      (unsigned long long)shuffled.reads_submitted, N);
	free(p);
}

/* A field the files have no column for is refused at create, naming it
 * (fields of columns: test_parquet_columns.c); Parquet's index of records
 * is written now (index_cache_keeps_the_table). */
Test(parquet_source, missing_field_refused)
{
	rf_config cfg;
	char *p = at("plain.parquet"), err[512];
	tu_config(&cfg, p);
	cfg.fields = "caption";
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "fields") && strstr(err, "no column 'caption'") &&
		  strstr(err, "its columns: label, image"), "%s", err);
	free(p);
}

#if RF_TEST_HOOKS
static int footers; /* footers read (the hook: set-up's helper threads call it) */
static void count_footer(const char *path)
{
	(void)path;
	__atomic_add_fetch(&footers, 1, __ATOMIC_RELAXED);
}

/* source (of nfiles files) through the index cache ix: the first create
 * reads every footer and writes the cache; the second reads none and
 * delivers the same; a file touched (its mtime) is read again. */
static void assert_cached(const char *name, int nfiles, const char *touch)
{
	/* not in the files' folder: a file written there changes its mtime,
	 * which the cache's stamp of a single file's folder is */
	char *caches = tu_tmpdir("pqcache"), *ix, *p = at(name), *t = at(touch);
	cr_assert(asprintf(&ix, "%s/%s.idx", caches, name) > 0);
	unlink(ix);
	use_cache = ix;
	rfi_pq_table_set_test_hook(count_footer);
	footers = 0;
	assert_as_tree_in(p, 0, 1, RF_SHARD_RANDOM);
	cr_assert_eq(footers, nfiles, "%s: %d footers read, not %d", name, footers, nfiles);
	cr_assert(access(ix, F_OK) == 0, "%s: no cache written", name);
	footers = 0;
	assert_as_tree_in(p, 0, 1, RF_SHARD_RANDOM);
	assert_as_tree_in(p, 0, 0, RF_SHARD_RANDOM);
	cr_assert_eq(footers, 0, "%s: %d footers read with the cache", name, footers);
	struct timespec later[2] = { { 0, UTIME_OMIT }, { time(NULL) + 100, 0 } };
	cr_assert(utimensat(AT_FDCWD, t, later, 0) == 0);
	assert_as_tree_in(p, 0, 1, RF_SHARD_RANDOM);
	cr_assert_eq(footers, nfiles, "%s: %d footers read after %s changed", name, footers, touch);
	rfi_pq_table_set_test_hook(NULL);
	use_cache = NULL;
	tu_rmrf(caches);
	free(caches);
	free(p);
	free(ix);
	free(t);
}
#endif

/* The table in the index cache (cfg.cache) and in `ringfeed index`'s
 * object: a second create reads no footer (nor scans a page header, nor
 * reads a label page: the footer hook fires before those) and delivers
 * the same; a changed file is read again. */
Test(parquet_source, index_cache_keeps_the_table)
{
#if RF_TEST_HOOKS
	assert_cached("split", 3, "split/part-1.parquet");
	assert_cached("dict.parquet", 1, "dict.parquet"); /* dictionary, headers scanned */
	assert_cached("hf.parquet", 1, "hf.parquet");     /* ClassLabel names kept */
	char *caches = tu_tmpdir("pqcache"), *p = at("plain.parquet"), *ix, err[512];
	cr_assert(asprintf(&ix, "%s/plain.index", caches) > 0);
	cr_assert_eq(rf_index_write(p, 0, ix, NULL, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	use_cache = ix;
	rfi_pq_table_set_test_hook(count_footer);
	footers = 0;
	assert_as_tree_in(p, 0, 1, RF_SHARD_RANDOM);
	cr_assert_eq(footers, 0, "%d footers read with `ringfeed index`'s object", footers);
	rfi_pq_table_set_test_hook(NULL);
	use_cache = NULL;
	tu_rmrf(caches);
	free(caches);
	free(p);
	free(ix);
#else
	cr_skip_test("the set-up's hook is compiled into test builds only (meson -Dtest_hooks=true)");
#endif
}

/* A file whose footer claims chunks past a cut (the file's middle cut
 * out, the footer kept): refused at create naming the file. */
Test(parquet_source, chunks_past_a_cut_are_refused)
{
	char *p = at("cut_middle.parquet"), *src = at("dict.parquet"), err[1024];
	tu_run("'%s' -c 'import sys; b = open(sys.argv[1], \"rb\").read(); "
	       "n = int.from_bytes(b[-8:-4], \"little\"); "
	       "open(sys.argv[2], \"wb\").write(b[:len(b) // 3] + b[-8 - n:])' '%s' '%s'",
	       tu_parquet_python(), src, p);
	rf_config cfg;
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "cut_middle.parquet") && strstr(err, "outside the file"), "%s", err);
	free(p);
	free(src);
}

/* codec_none.parquet's rows in pages of 2 rows each with a page index, in
 * which column's OffsetIndex says page 1 starts at row 3, not 2: page 0
 * claims a row it does not hold, page 1 one row fewer than it holds. */
static char *lying_index_file(const char *column)
{
	char rel[64], why[512];
	snprintf(rel, sizeof(rel), "lying_%s.parquet", column);
	char *p = at(rel), *src = at("codec_none.parquet");
	tu_run("'%s' -c 'import sys, pyarrow.parquet as pq; "
	       "t = pq.read_table(sys.argv[1]); "
	       "pq.write_table(t, sys.argv[2], compression=\"none\", use_dictionary=False, "
	       "data_page_size=1, write_batch_size=2, write_page_index=True)' '%s' '%s'",
	       tu_parquet_python(), src, p);
	size_t n;
	uint8_t *b = tu_read(out, rel, &n);
	uint32_t flen;
	rf_pq_meta *m;
	cr_assert_eq(rfi_pq_tail_check(p, b + n - 8, n, &flen, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(rfi_pq_meta_parse(p, b + n - 8 - flen, flen, n, &m, why, sizeof(why)), 0, "%s",
		     why);
	const rf_pq_chunk *c = &m->groups[0].chunks[rfi_pq_leaf_find(m, column)];
	cr_assert(c->offset_index_offset > 0);
	/* PageLocation's first_row_index (field 3, i64: 0x16) = 2 (zigzag 0x04), stop */
	uint8_t *oi = b + c->offset_index_offset, *hit = NULL;
	for (int32_t i = 0; i + 3 <= c->offset_index_length && !hit; i++)
		if (!memcmp(oi + i, "\x16\x04\x00", 3))
			hit = oi + i;
	cr_assert(hit, "%s: page 1's first_row_index not found in the OffsetIndex", column);
	hit[1] = 0x06; /* 3 */
	rfi_pq_meta_free(m);
	tu_write(out, rel, b, n);
	free(b);
	free(src);
	return p;
}

/* The image column's index lies: the pages disagree with it, their rows
 * are bad samples; none is delivered with another row's image under its
 * name (before the fix page 1's first value went out as row 3: row 2's
 * image). */
Test(parquet_source, an_offset_index_that_lies_about_rows)
{
	char *p = lying_index_file("image"), err[512];
	seen want[N], got[N];
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.shuffle = 0;
	cfg.epochs = 1;
	cfg.raw = 1;
	run(&cfg, want, NULL);
	reports r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	cfg.source = p;
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
	run(&cfg, got, NULL);
	for (int i = 0; i < N; i++)
		cr_assert(!got[i].times || got[i].hash == want[i].hash,
			  "row %d (%s) delivered with another row's bytes", i, rows[i]);
	for (int i = 0; i < 4; i++) {
		char name[64];
		snprintf(name, sizeof(name), "lying_image.parquet:row %d", i);
		cr_assert(reported(&r, name, "rows"), "%s not reported (%d reports: %s, %s)", name, r.n,
			  r.path[0], r.reason[0]);
	}
	free(p);
}

/* The label column's index lies: refused at create naming the file and
 * the column (before the fix rows 2 and 3 got shifted labels, in silence). */
Test(parquet_source, a_label_offset_index_that_lies_is_refused)
{
	char *p = lying_index_file("label"), err[512];
	rf_config cfg;
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "created");
	cr_assert(strstr(err, "lying_label.parquet") && strstr(err, "column label") &&
		  strstr(err, "page index says"), "%s", err);
	free(p);
}

#if RF_TEST_HOOKS
static void cut_in_half(const char *path)
{
	struct stat st;
	cr_assert(stat(path, &st) == 0 && truncate(path, st.st_size / 2) == 0, "%s", path);
}

/* name, copied, cut in half once its footer is read: create refuses it
 * naming the file and saying it shrank (it was mapped: a SIGBUS). */
static void assert_cut_after_footer(const char *name)
{
	char rel[64], err[2048];
	snprintf(rel, sizeof(rel), "cut_%s", name);
	char *src = at(name), *p = at(rel);
	tu_run("cp '%s' '%s'", src, p);
	rf_config cfg;
	tu_config(&cfg, p);
	rf_loader *l;
	rfi_pq_table_set_test_hook(cut_in_half);
	int rc = rf_loader_create(&l, &cfg, err, sizeof(err));
	rfi_pq_table_set_test_hook(NULL);
	cr_assert_neq(rc, 0, "%s: created", name);
	cr_assert(strstr(err, rel) && strstr(err, "truncated or rewritten"), "%s: %s", name, err);
	free(src);
	free(p);
}
#endif

/* A file truncated after its footer was read (a writer still writing):
 * its pages' headers scanned (dict), its OffsetIndex and the image column
 * sniffed (plain), the datasets struct (hf). */
Test(parquet_source, truncated_after_the_footer_is_refused)
{
#if RF_TEST_HOOKS
	assert_cut_after_footer("dict.parquet");
	assert_cut_after_footer("plain.parquet");
	assert_cut_after_footer("hf.parquet");
#else
	cr_skip_test("the set-up's hook is compiled into test builds only (meson -Dtest_hooks=true)");
#endif
}

/* A folder holding both .parquet and .tar files: refused at create naming
 * both and how to pick one (taking either dropped the other's files: the
 * .tar files went unread); a pattern or source_kind picks. */
Test(parquet_source, a_folder_of_parquet_and_tar_is_refused)
{
	char *mix = at("mix"), *plain = at("plain.parquet"), err[2048], pattern[4200];
	rf_pack_opts opts = { .source = tree, .out = mix, .shard_size = 64 << 10 };
	rf_pack_result res;
	cr_assert_eq(rfi_pack_run(&opts, &res, err, sizeof(err)), 0, "%s", err);
	tu_run("cp '%s' '%s/'", plain, mix);
	rf_config cfg;
	rf_loader *l;
	tu_config(&cfg, mix);
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "holds both .parquet files (1, such as 'plain.parquet')") &&
		  strstr(err, ".tar files") && strstr(err, "/*.parquet") &&
		  strstr(err, "source_kind = tar"), "%s", err);
	cfg.source_kind = RF_SOURCE_TAR;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
	snprintf(pattern, sizeof(pattern), "%s/*.parquet", mix);
	tu_config(&cfg, pattern);
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
	free(mix);
	free(plain);
}

/* ---- files the real writers write (tests/parquet_writers.py) ----
 * Each writer's files are written once, by one python, for its test (a
 * python start with `datasets` costs seconds); the tree is read once per
 * mode, then every file in index order (the file read front to back in
 * chunks) and shuffled (a page read a sample): each sample's pixels and
 * label as the tree's, and, raw, the first file's bytes as the tree's. */

/* out's file rel as a string (tu_read's bytes end with no NUL). */
static char *read_text(const char *rel)
{
	size_t len;
	uint8_t *b = tu_read(out, rel, &len);
	char *text = malloc(len + 1);
	cr_assert(text);
	memcpy(text, b, len);
	text[len] = '\0';
	free(b);
	return text;
}

static void read_rows(void)
{
	char *text = read_text("rows.txt");
	char *save = NULL, *line = strtok_r(text, "\n", &save);
	for (int i = 0; i < N && line; i++, line = strtok_r(NULL, "\n", &save))
		rows[i] = strdup(line);
	free(text);
	cr_assert(rows[N - 1], "rows.txt lists fewer than %d rows", N);
}

/* writer's files from a tree, and files.txt ("REL<TAB>what" a line); the
 * test skips, saying why, without the python or the writer. */
static char *write_with(const char *writer)
{
	char cmd[8192];
	tu_parquet_python(); /* or the test skips, saying why */
	tree = tu_tree("pqw", CLASSES, PER_CLASS);
	out = tu_tmpdir("pqw");
	snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' '%s' '%s' > '%s/said' 2>&1", tu_parquet_python(),
		 RF_PQ_WRITERS, tree, out, writer, out);
	int rc = system(cmd);
	char *said = read_text("said");
	if (WIFEXITED(rc) && WEXITSTATUS(rc) == 3) {
		said[strcspn(said, "\n")] = '\0'; /* its line says why */
		cr_skip_test("%s", said);
	}
	cr_assert_eq(rc, 0, "parquet_writers.py %s: %s", writer, said);
	free(said);
	read_rows();
	return read_text("files.txt");
}

static void tree_seen(int raw, int shuffle, seen *want)
{
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.shuffle = shuffle;
	cfg.epochs = 1;
	cfg.raw = raw;
	run(&cfg, want, NULL);
	for (int i = 0; i < N; i++)
		cr_assert_eq(want[i].times, 1, "tree: %s delivered %d times", rows[i], want[i].times);
}

static void assert_like(const char *rel, const char *what, int raw, int shuffle,
			const seen *want)
{
	rf_config cfg;
	seen got[N];
	rf_stats st;
	char *source = at(rel);
	tu_config(&cfg, source);
	cfg.shuffle = shuffle;
	cfg.epochs = 1;
	cfg.raw = raw;
	run(&cfg, got, &st);
	cr_assert_eq(st.bad_samples, 0, "%s (%s): %llu bad samples", rel, what,
		     (unsigned long long)st.bad_samples);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(got[i].times, 1, "%s (%s), %s: row %d (%s) delivered %d times", rel, what,
			     shuffle ? "shuffled" : "in order", i, rows[i], got[i].times);
		cr_assert_eq(got[i].label, want[i].label, "%s (%s): row %d: label %d, the tree's %d",
			     rel, what, i, got[i].label, want[i].label);
		cr_assert_eq(got[i].hash, want[i].hash, "%s (%s), %s: row %d (%s): other %s", rel, what,
			     shuffle ? "shuffled" : "in order", i, rows[i], raw ? "bytes" : "pixels");
	}
	free(source);
}

/* A ClassLabel's names, as `datasets` wrote them: the tree's classes. */
static void assert_class_names(const char *rel)
{
	rf_config cfg;
	char *p = at(rel), err[512], want[16];
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	for (int c = 0; c < CLASSES; c++) {
		const char *name = rf_loader_class_name(l, c);
		snprintf(want, sizeof(want), "c%d", c);
		cr_assert(name && !strcmp(name, want), "%s: class %d: %s", rel, c, name ? name : "(none)");
	}
	rf_loader_destroy(l);
	free(p);
}

static void assert_writer(const char *writer)
{
	char *list = write_with(writer), *save = NULL;
	seen want[2][N], want_raw[N];
	tree_seen(0, 0, want[0]);
	tree_seen(0, 1, want[1]);
	tree_seen(1, 0, want_raw);
	int files = 0;
	for (char *line = strtok_r(list, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		cr_assert(tab, "files.txt: %s", line);
		*tab = '\0';
		assert_like(line, tab + 1, 0, 0, want[0]);
		assert_like(line, tab + 1, 0, 1, want[1]);
		if (!files++)
			assert_like(line, tab + 1, 1, 0, want_raw);
		if (!strcmp(writer, "datasets"))
			assert_class_names(line);
	}
	cr_assert_gt(files, 0, "%s wrote no files", writer);
	free(list);
}

TestSuite(parquet_writers, .fini = teardown, .timeout = 240);

Test(parquet_writers, pyarrow_pages_dictionary_page_index_row_groups) { assert_writer("pyarrow"); }
Test(parquet_writers, datasets_to_parquet_and_push_to_hub_layout) { assert_writer("datasets"); }
Test(parquet_writers, duckdb_copy_every_codec) { assert_writer("duckdb"); }
Test(parquet_writers, polars_every_codec_and_statistics) { assert_writer("polars"); }
