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
 * the column and the codec. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <time.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/pack.h"
#include "ringfeed.h"
#include "rf_config.h"
#include "testutil.h"
#if RF_TEST_HOOKS
#include "source/parquet_table.h"
#endif

#define CLASSES 3
#define PER_CLASS 9
#define N (CLASSES * PER_CLASS)

static char *tree, *out;
static char *rows[N + 3]; /* row N of the files: its image, relative to tree */

static const char *python(void)
{
	const char *py = getenv("RINGFEED_PARQUET_PYTHON");
	return py && *py ? py : "/root/.cache/ringfeed-parquet-venv/bin/python";
}

static void setup(void)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s' -c 'import pyarrow' 2>/dev/null", python());
	if (access(python(), X_OK) != 0 || system(cmd) != 0)
		cr_skip_test("no python with pyarrow at %s (scripts/parquet_venv.sh makes it; "
			     "RINGFEED_PARQUET_PYTHON names another)", python());
	tree = tu_tree("pqsrc", CLASSES, PER_CLASS);
	out = tu_tmpdir("pqout");
	tu_run("'%s' '%s' '%s' '%s'", python(), RF_PQ_IMAGES, tree, out);
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

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* What a run delivered of each image (row N's, or the tree's file). */
typedef struct seen {
	int times;
	int32_t label;
	uint64_t hash; /* its pixels, or raw its bytes */
} seen;

/* Which of the N images sample `name` is: a tree's path, or FILE:row K. */
static int image_of(const char *name)
{
	const char *row = strstr(name, ":row "), *part = strstr(name, "part-");
	if (row) { /* split/part-K.parquet holds rows K * a third on */
		int k = atoi(row + 5) + (part && part < row ? atoi(part + 5) * ((N + 2) / 3) : 0);
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
	int r;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			cr_assert(rf_loader_sample_name(l, b->ids[i], name, sizeof(name)) > 0);
			int k = image_of(name);
			cr_assert(k >= 0, "%s: a sample of no image", name);
			s[k].times++;
			s[k].label = b->labels[i];
			s[k].hash = cfg->raw ? fnv(b->data + b->offsets[i], b->sizes[i])
					     : fnv(b->data + i * b->sample_bytes, b->sample_bytes);
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
 * files read front to back in chunks) and shuffled (a page read a sample). */
static void assert_as_tree_in(const char *source, int raw, int shuffle)
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
	}
}

static void assert_as_tree(const char *source, int raw)
{
	assert_as_tree_in(source, raw, 0);
	assert_as_tree_in(source, raw, 1);
}

TestSuite(parquet_source, .init = setup, .fini = teardown, .timeout = 120);

Test(parquet_source, page_index_no_dictionary) { assert_as_tree(at("plain.parquet"), 0); }
Test(parquet_source, dictionary_pages_v2_headers_scanned) { assert_as_tree(at("dict.parquet"), 0); }
Test(parquet_source, datasets_image_struct) { assert_as_tree(at("hf.parquet"), 0); }
Test(parquet_source, raw_bytes) { assert_as_tree(at("dict.parquet"), 1); }
Test(parquet_source, a_folder_of_files) { assert_as_tree(at("split"), 0); }
Test(parquet_source, a_list_file) { assert_as_tree(at("split.list"), 0); }

Test(parquet_source, glob_and_brace_patterns)
{
	assert_as_tree(at("split/part-*.parquet"), 0);
	assert_as_tree(at("split/part-{0..2}.parquet"), 0);
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
	       "\"%s\")'", python(), p);
	rf_config cfg;
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "no image column") && strstr(err, "caption, url"), "%s", err);
	free(p);
}

/* In index order the files are read in chunks, not a page per sample; a
 * shuffled epoch reads each sample's page. */
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
	cr_assert_geq(shuffled.reads_submitted, N, "shuffled: %llu reads for %d samples",
		      (unsigned long long)shuffled.reads_submitted, N);
	free(p);
}

/* What Parquet does not give yet is refused at create, saying so: fields
 * (no index records to find them in). */
Test(parquet_source, fields_refused)
{
	rf_config cfg;
	char *p = at("plain.parquet"), err[512];
	tu_config(&cfg, p);
	cfg.fields = "caption?";
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "fields") && strstr(err, "Parquet"), "%s", err);
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
	assert_as_tree_in(p, 0, 1);
	cr_assert_eq(footers, nfiles, "%s: %d footers read, not %d", name, footers, nfiles);
	cr_assert(access(ix, F_OK) == 0, "%s: no cache written", name);
	footers = 0;
	assert_as_tree_in(p, 0, 1);
	assert_as_tree_in(p, 0, 0);
	cr_assert_eq(footers, 0, "%s: %d footers read with the cache", name, footers);
	struct timespec later[2] = { { 0, UTIME_OMIT }, { time(NULL) + 100, 0 } };
	cr_assert(utimensat(AT_FDCWD, t, later, 0) == 0);
	assert_as_tree_in(p, 0, 1);
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
	assert_as_tree_in(p, 0, 1);
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
	       python(), src, p);
	rf_config cfg;
	tu_config(&cfg, p);
	rf_loader *l;
	cr_assert_neq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "cut_middle.parquet") && strstr(err, "outside the file"), "%s", err);
	free(p);
	free(src);
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
