/* test_parquet_columns.c - which Parquet column is which (cfg.columns,
 * --column), labels of every kind and columns as fields (cfg.fields), on
 * files the real pyarrow writes (tests/parquet_columns.py, with the venv
 * scripts/parquet_venv.sh makes; RINGFEED_PARQUET_PYTHON names another
 * python; without one these tests skip saying so): the image column named
 * delivers its pixels, integer label columns of every width (and
 * dictionary-encoded) and string label columns (classes = the sorted
 * distinct strings) deliver the tree's labels, a null label is -1, fields
 * equal what pyarrow reads for those rows (nullable ones absent, a null in
 * a field that is not optional a bad sample), in index order and shuffled,
 * pages v1 and v2, page index or headers, the fields' values kept in
 * memory (small columns) or read per sample with the image's page (the
 * test hook sets the bound to 0; builds without hooks test the first
 * alone); a column the files lack is
 * refused naming the file and its columns, and columns for a source
 * without columns is refused. The same over http (tests/fault_server.py);
 * string labels of two files merged; the index cache keeps a table for
 * its columns only (other columns build it again). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rf_config.h"
#include "ringfeed.h"
#include "testutil.h"
#if RF_TEST_HOOKS
#include "source/parquet_table.h"
#endif

#define CLASSES 3
#define PER_CLASS 9
#define N (CLASSES * PER_CLASS)
#define NFIELDS 12 /* parquet_columns.py's FIELDS, in its order */

static const char *const field_names[NFIELDS] = {
	"caption", "note", "n", "small", "flag", "blob", "score", "f32", "u32", "u64",
	"meta.source", "meta.w",
};
static char *tree, *out;
static char *rows[N];
/* what pyarrow read: want[row][field], NULL for a null; want_len its bytes */
static uint8_t *want[N][NFIELDS];
static size_t want_len[N][NFIELDS];

static uint8_t *unhex(const char *s, size_t *n)
{
	*n = strlen(s) / 2;
	uint8_t *b = malloc(*n + 1);
	for (size_t i = 0; i < *n; i++) {
		unsigned v;
		cr_assert_eq(sscanf(s + 2 * i, "%2x", &v), 1);
		b[i] = (uint8_t)v;
	}
	return b;
}

static void read_lines(const char *name, char **line, int n)
{
	size_t len;
	char *text = (char *)tu_read(out, name, &len), *p = text;
	for (int i = 0; i < n; i++) {
		char *nl = strchr(p, '\n');
		cr_assert(nl, "%s holds fewer than %d lines", name, n);
		*nl = 0;
		line[i] = strdup(p);
		p = nl + 1;
	}
	free(text);
}

static void setup(void)
{
	tu_parquet_python(); /* or the test skips, saying why */
	tree = tu_tree("pqcol", CLASSES, PER_CLASS);
	out = tu_tmpdir("pqcolout");
	tu_run("'%s' '%s' '%s' '%s'", tu_parquet_python(), RF_PQ_COLUMNS, tree, out);
	read_lines("rows.txt", rows, N);
	char *line[N * NFIELDS];
	read_lines("fields.txt", line, N * NFIELDS);
	for (int i = 0; i < N; i++)
		for (int k = 0; k < NFIELDS; k++) {
			char *s = line[i * NFIELDS + k];
			want[i][k] = strcmp(s, "-") ? unhex(s, &want_len[i][k]) : NULL;
			free(s);
		}
}

static void teardown(void)
{
	for (int i = 0; i < N; i++) {
		free(rows[i]);
		rows[i] = NULL;
		for (int k = 0; k < NFIELDS; k++) {
			free(want[i][k]);
			want[i][k] = NULL;
		}
	}
	if (tree)
		tu_rmrf(tree);
	if (out)
		tu_rmrf(out);
	free(tree);
	free(out);
	tree = out = NULL;
}

/* The files' place: the fixture's folder, or (remote tests) its URL. */
static char *base;

static char *at(const char *rel)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", base ? base : out, rel) > 0);
	return p;
}

/* What one epoch delivered of each row (or tree image). */
typedef struct seen {
	int times;
	int32_t label;
	uint64_t hash;
} seen;

/* Which row sample `name` is: FILE:row K (two/b.parquet's rows follow
 * a's), or the tree's file. */
static int row_of(const char *name)
{
	const char *row = strstr(name, ":row ");
	if (row)
		return atoi(row + 5) + (strstr(name, "b.parquet") ? N / 2 : 0);
	size_t tl = strlen(tree);
	for (int i = 0; i < N; i++)
		if (!strncmp(name, tree, tl) && !strcmp(name + tl + 1, rows[i]))
			return i;
	return -1;
}

/* Rows from here on come from a file without the `note` column (two/b). */
static int note_rows = N;

/* Field k of sample i of b as the fixture wrote row `row`'s. */
static void assert_field(const rf_batch *b, uint32_t i, const char *name, int k, int row)
{
	rf_field f;
	cr_assert_eq(rf_batch_field(b, name, &f), 0, "no field %s", name);
	size_t n = f.offsets[i + 1] - f.offsets[i];
	if (!want[row][k] || (k == 1 && row >= note_rows)) {
		cr_assert(!f.present[i], "row %d: %s is null, delivered present", row, name);
		cr_assert_eq(n, 0);
		return;
	}
	cr_assert(f.present[i], "row %d: %s delivered absent", row, name);
	cr_assert(n == want_len[row][k] && !memcmp(f.bytes + f.offsets[i], want[row][k], n),
		  "row %d: %s: %zu bytes '%.*s', pyarrow read %zu", row, name, n, (int)n,
		  (const char *)f.bytes + f.offsets[i], want_len[row][k]);
}

/* Does the list (cfg.fields) name field `name` ('?' aside, any case)? */
static int asks(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, ",?");
		if (k == n && !strncasecmp(p, name, n))
			return 1;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

/* One epoch of cfg, each sample filed under its row; with fields (cfg's
 * names, '?' aside, among field_names) each value checked. */
static void run(rf_config *cfg, seen *s, rf_stats *st)
{
	memset(s, 0, N * sizeof(*s));
	rf_loader *l;
	char err[1024], name[4096];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "create %s: %s", cfg->source,
		     err);
	rf_batch *b;
	int r;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			cr_assert(rf_loader_sample_name(l, b->ids[i], name, sizeof(name)) > 0);
			int k = row_of(name);
			cr_assert(k >= 0 && k < N, "%s: a sample of no row", name);
			s[k].times++;
			s[k].label = b->labels[i];
			s[k].hash = cfg->raw ? tu_fnv1a(b->data + b->offsets[i], b->sizes[i])
					     : tu_fnv1a(b->data + i * b->sample_bytes, b->sample_bytes);
			for (int f = 0; f < NFIELDS; f++)
				if (asks(cfg->fields, field_names[f]))
					assert_field(b, i, field_names[f], f, k);
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "next: %s: %s", rf_strerror(r), rf_loader_error(l));
	if (st)
		rf_loader_stats(l, st);
	rf_loader_destroy(l);
}

/* The tree read as a folder: each image's pixels and label. */
static void tree_run(seen *t, int shuffle)
{
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.shuffle = shuffle;
	cfg.epochs = 1;
	run(&cfg, t, NULL);
}

/* The index cache assert_rows' runs use (cfg.index_cache), or NULL. */
static const char *cache;

/* source with columns and fields delivers row i's pixels as the tree's
 * image image_of(i) and label label_of(i), no bad sample; both orders. */
static void assert_rows(const char *rel, const char *columns, const char *fields, int alt,
			int32_t (*label_of)(int row))
{
	for (int shuffle = 0; shuffle < 2; shuffle++) {
		seen t[N], got[N];
		tree_run(t, shuffle);
		rf_config cfg;
		char *p = at(rel);
		tu_config(&cfg, p);
		cfg.shuffle = shuffle;
		cfg.epochs = 1;
		cfg.columns = columns;
		cfg.fields = fields;
		cfg.index_cache = cache;
		rf_stats st;
		run(&cfg, got, &st);
		cr_assert_eq(st.bad_samples, 0, "%s (columns %s, fields %s): %llu bad samples", rel,
			     columns, fields, (unsigned long long)st.bad_samples);
		for (int i = 0; i < N; i++) {
			int img = alt ? N - 1 - i : i;
			cr_assert_eq(got[i].times, 1, "%s: row %d delivered %d times", rel, i,
				     got[i].times);
			cr_assert_eq(got[i].hash, t[img].hash, "%s (columns %s): row %d: not image %d's "
				     "pixels", rel, columns, i, img);
			int32_t want_label = label_of ? label_of(i) : t[i].label;
			cr_assert_eq(got[i].label, want_label, "%s (columns %s): row %d: label %d, not %d",
				     rel, columns, i, got[i].label, want_label);
		}
		free(p);
	}
}

static int32_t no_label(int row)
{
	(void)row;
	return -1;
}

static int32_t name_null_label(int row)
{
	return row % 4 == 3 ? -1 : row / PER_CLASS;
}

static int32_t neg_label(int row)
{
	return row >= 5 ? -2 : row / PER_CLASS;
}

TestSuite(parquet_columns, .init = setup, .fini = teardown, .timeout = 180);

Test(parquet_columns, the_image_column_named)
{
	assert_rows("cols.parquet", NULL, NULL, 0, NULL);          /* found: the first of images */
	assert_rows("cols.parquet", "image=alt", NULL, 1, NULL);
	assert_rows("cols_v2.parquet", " label = label , image=alt", NULL, 1, NULL);
}

Test(parquet_columns, integer_labels_of_every_width)
{
	static const char *const cols[] = { "label=c8", "label=u8", "label=c16", "label=cdict",
					     "label=label", "label=LABEL" };
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		assert_rows("cols.parquet", cols[i], NULL, 0, NULL);
		assert_rows("cols_v2.parquet", cols[i], NULL, 0, NULL);
	}
}

Test(parquet_columns, string_labels_are_the_sorted_names)
{
	assert_rows("cols.parquet", "label=name", NULL, 0, NULL);
	assert_rows("cols_v2.parquet", "label=name", NULL, 0, NULL);
	rf_config cfg;
	char *p = at("cols.parquet"), err[1024];
	tu_config(&cfg, p);
	cfg.columns = "label=name";
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_loader *t;
	tu_config(&cfg, tree);
	cr_assert_eq(rf_loader_create(&t, &cfg, err, sizeof(err)), 0, "%s", err);
	for (int c = 0; c < CLASSES; c++) {
		const char *a = rf_loader_class_name(l, c), *b = rf_loader_class_name(t, c);
		cr_assert(a && b && !strcmp(a, b), "class %d: %s, the folder's %s", c, a ? a : "-",
			  b ? b : "-");
	}
	cr_assert_null(rf_loader_class_name(l, CLASSES));
	rf_loader_destroy(l);
	rf_loader_destroy(t);
	free(p);
}

/* A null label is -1 (unlabelled), as a -1 or any negative one is. */
Test(parquet_columns, null_labels_and_none)
{
	assert_rows("cols.parquet", "label=name_null", NULL, 0, name_null_label);
	assert_rows("cols_v2.parquet", "label=name_null", NULL, 0, name_null_label);
	assert_rows("cols.parquet", "label=", NULL, 0, no_label);
	assert_rows("cols.parquet", "image=image,label=", NULL, 0, no_label);
	(void)neg_label;
}

static void assert_refused(const char *source, const char *columns, const char *fields,
			   int code, const char *const *says)
{
	rf_config cfg;
	tu_config(&cfg, source);
	cfg.columns = columns;
	cfg.fields = fields;
	rf_loader *l;
	char err[2048];
	int r = rf_loader_create(&l, &cfg, err, sizeof(err));
	cr_assert_eq(r, code, "%s (columns %s, fields %s): %d (%s), not %d", source, columns,
		     fields, r, r ? err : "created", code);
	for (; *says; says++)
		cr_assert(strstr(err, *says), "'%s' not in: %s", *says, err);
}

Test(parquet_columns, a_column_the_files_lack_is_refused_naming_them)
{
	char *p = at("cols.parquet"), *two = at("two");
	assert_refused(p, "image=jpg", NULL, RF_ECONFIG,
		       (const char *const[]){ "cols.parquet", "'jpg'", "its columns: image, alt",
					      "caption", NULL });
	assert_refused(p, "label=cls", NULL, RF_ECONFIG,
		       (const char *const[]){ "cols.parquet", "'cls'", "name_null", NULL });
	assert_refused(p, "image=label", NULL, RF_ECONFIG,
		       (const char *const[]){ "column label", "not binary", NULL });
	assert_refused(p, "label=flag,image=image", NULL, RF_EINDEX,
		       (const char *const[]){ "column flag is BOOLEAN", "a string", NULL });
	assert_refused(p, NULL, "caption,title", RF_ECONFIG,
		       (const char *const[]){ "cols.parquet", "'title'", "its columns", "'title?'",
					      NULL });
	assert_refused(p, NULL, "tags", RF_EINDEX,
		       (const char *const[]){ "tags", "a list", NULL });
	assert_refused(p, "label=score", NULL, RF_EINDEX,
		       (const char *const[]){ "column score is DOUBLE", NULL });
	assert_refused(two, NULL, "note", RF_ECONFIG,
		       (const char *const[]){ "b.parquet", "no column note", NULL });
	free(p);
	free(two);
}

Test(parquet_columns, columns_said_wrong_or_for_a_source_without_columns)
{
	char *p = at("cols.parquet");
	assert_refused(p, "img=x", NULL, RF_ECONFIG,
		       (const char *const[]){ "'img=x' is not image=NAME or label=NAME", NULL });
	assert_refused(p, "image=", NULL, RF_ECONFIG, (const char *const[]){ "image=", NULL });
	assert_refused(p, "label=a,label=b", NULL, RF_ECONFIG,
		       (const char *const[]){ "given twice", NULL });
	assert_refused(tree, "label=cls", NULL, RF_ECONFIG,
		       (const char *const[]){ "loose files", "no columns", NULL });
	free(p);
}

/* fn with the fields' values kept, then (test builds) read per sample. */
static void both_ways(void (*fn)(void))
{
	fn();
#if RF_TEST_HOOKS
	rfi_pq_table_set_keep_max(0);
	fn();
	rfi_pq_table_set_keep_max(RF_PQ_FIELD_KEEP_MAX);
#endif
}

static void fields_as_pyarrow_reads(void)
{
	const char *some = "caption,note?,n,small?,flag,blob", *numbers = "score?,f32,u32,u64,n",
		   *nested = "meta.source?,meta.w?";
	assert_rows("cols.parquet", NULL, some, 0, NULL);
	assert_rows("cols_v2.parquet", NULL, some, 0, NULL);
	assert_rows("cols.parquet", NULL, numbers, 0, NULL);
	assert_rows("cols_v2.parquet", NULL, numbers, 0, NULL);
	assert_rows("cols.parquet", NULL, nested, 0, NULL);
	assert_rows("cols_v2.parquet", NULL, nested, 0, NULL);
	assert_rows("cols.parquet", "image=alt,label=name", "Caption,blob", 1, NULL);
}

Test(parquet_columns, fields_are_what_pyarrow_reads) { both_ways(fields_as_pyarrow_reads); }

static void fields_raw(void)
{
	rf_config cfg;
	char *p = at("cols_v2.parquet");
	seen got[N];
	tu_config(&cfg, p);
	cfg.raw = 1;
	cfg.epochs = 1;
	cfg.fields = "caption,note?,n,small?,flag,blob";
	rf_stats st;
	run(&cfg, got, &st);
	cr_assert_eq(st.bad_samples, 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(got[i].times, 1);
	free(p);
}

Test(parquet_columns, fields_raw) { both_ways(fields_raw); }

/* Kept values cost no read; read per sample, each field one more read. */
Test(parquet_columns, kept_fields_are_not_read)
{
#if RF_TEST_HOOKS
	for (int keep = 1; keep >= 0; keep--) {
		rfi_pq_table_set_keep_max(keep ? RF_PQ_FIELD_KEEP_MAX : 0);
		rf_config cfg;
		char *p = at("cols.parquet");
		seen got[N];
		tu_config(&cfg, p);
		cfg.epochs = 1;
		cfg.fields = "caption,n";
		rf_stats st;
		run(&cfg, got, &st);
		/* a read per sample's image page (or a share of one: rows of a
		 * page in flight together share its read), and read per sample
		 * two more, its fields' pages */
		cr_assert_eq(st.reads_submitted + st.reads_shared, keep ? N : 3 * N,
			     "keep %d: %llu reads, %llu shared", keep,
			     (unsigned long long)st.reads_submitted,
			     (unsigned long long)st.reads_shared);
		free(p);
	}
	rfi_pq_table_set_keep_max(RF_PQ_FIELD_KEEP_MAX);
#else
	cr_skip_test("needs the test hooks (meson -Dtest_hooks=true)");
#endif
}

/* A null in a field that is not optional is a bad sample, saying so; the
 * rows of a file without an optional field's column have it absent. */
static void null_fields(void)
{
	rf_config cfg;
	char *p = at("cols.parquet"), *two = at("two");
	seen got[N];
	tu_config(&cfg, p);
	cfg.epochs = 1;
	cfg.fields = "note";
	rf_stats st;
	run(&cfg, got, &st);
	int nulls = 0; /* each replaced by another row: some come twice */
	for (int i = 0; i < N; i++) {
		nulls += i % 3 == 1;
		cr_assert(i % 3 == 1 ? !got[i].times : got[i].times > 0, "row %d: %d times", i,
			  got[i].times);
	}
	cr_assert_geq(st.bad_samples, (uint64_t)nulls);
	tu_config(&cfg, two);
	cfg.epochs = 1;
	cfg.fields = "note?,caption";
	note_rows = N / 2; /* b.parquet's rows: absent */
	run(&cfg, got, &st);
	note_rows = N;
	cr_assert_eq(st.bad_samples, 0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(got[i].times, 1, "two: row %d: %d times", i, got[i].times);
	free(p);
	free(two);
}

Test(parquet_columns, null_fields_and_a_file_without_the_column) { both_ways(null_fields); }

/* String labels of files read on helper threads at once: each file's
 * strings merged (two/a and two/b hold some classes each) into the sorted
 * names of all of them. */
Test(parquet_columns, string_labels_of_several_files)
{
	assert_rows("two", "label=name", NULL, 0, NULL);
	assert_rows("two", "image=alt,label=name", "caption", 1, NULL);
}

/* The index cache keeps the table of the columns it was built for: other
 * columns build it again (not another column's images or labels), fields
 * are added to a table restored from it. */
Test(parquet_columns, the_index_cache_is_of_its_columns)
{
	char *ix = at("cols.idx");
	cache = ix;
	for (int i = 0; i < 2; i++) {
		assert_rows("two", NULL, NULL, 0, NULL);
		assert_rows("two", "image=alt,label=name", NULL, 1, NULL);
		assert_rows("two", "image=alt,label=name", "caption", 1, NULL);
		assert_rows("cols.parquet", "label=name_null", "caption,note?", 0, name_null_label);
	}
	cr_assert(access(ix, F_OK) == 0, "no cache written");
	cache = NULL;
	free(ix);
}

static void remote_rows(void)
{
	assert_rows("cols.parquet", "image=alt,label=name", "caption,note?,n,small?,flag,blob", 1,
		    NULL);
	assert_rows("cols_v2.parquet", "label=name_null", "caption,score?,meta.source?", 0,
		    name_null_label);
}

/* The same over http (tests/fault_server.py serving the files): the image
 * column named, string labels, fields kept and (test builds) read per
 * sample, their pages and dictionaries read through the transport. */
Test(parquet_columns, remote_columns_and_fields)
{
	tu_fault srv;
	int port = tu_fault_server_start(&srv, out, "");
	if (!port)
		cr_skip_test("no python3 for tests/fault_server.py");
	cr_assert(asprintf(&base, "http://127.0.0.1:%d", port) > 0);
	both_ways(remote_rows);
	free(base);
	base = NULL;
	tu_fault_stop(&srv);
}
