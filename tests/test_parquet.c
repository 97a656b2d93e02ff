/* test_parquet.c - the Parquet decoder (src/source/parquet_*.c) against
 * files written by the real pyarrow (tests/parquet_fixtures.py, run with
 * the venv scripts/parquet_venv.sh makes; RINGFEED_PARQUET_PYTHON names
 * another python; without one these tests skip saying so): every codec,
 * data pages v1 and v2, dictionaries on and off, each encoding, the page
 * index on and off, nullable columns, the Image struct, a ClassLabel's
 * names, several row groups. Every cell is compared with what pyarrow
 * wrote. Then hostile input: lying sizes, offsets past the file,
 * dictionary indices out of range, level runs longer than the page, a
 * truncated footer, an encrypted file, nesting bombs: each a refusal that
 * says what is wrong. */
#define _GNU_SOURCE /* getline, strdup, strndup */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rf_config.h"
#include "source/parquet_codec.h"
#include "source/parquet_encoding.h"
#include "source/parquet_hf.h"
#include "source/parquet_meta.h"
#include "source/parquet_page.h"
#include "source/parquet_thrift.h"

static char why[512];

/* ---- the fixtures ------------------------------------------------------ */

static const char *python(void)
{
	const char *py = getenv("RINGFEED_PARQUET_PYTHON");
	return py && *py ? py : "/root/.cache/ringfeed-parquet-venv/bin/python";
}

/* The fixtures' folder, written once (a lock: Criterion runs tests in
 * parallel) and again when the script is newer than them; skips the test
 * when there is no python with pyarrow. */
static const char *fixtures(void)
{
	static char dir[] = RF_PQ_FIXTURES;
	static int ready;
	if (ready)
		return dir;
	char stamp[sizeof(dir) + 16], cmd[4096];
	struct stat ss, st;
	snprintf(cmd, sizeof(cmd), "'%s' -c 'import pyarrow' 2>/dev/null", python());
	if (access(python(), X_OK) != 0 || system(cmd) != 0)
		cr_skip_test("no python with pyarrow at %s (scripts/parquet_venv.sh makes it; "
			     "RINGFEED_PARQUET_PYTHON names another)", python());
	mkdir(dir, 0755);
	snprintf(stamp, sizeof(stamp), "%s/stamp", dir);
	int lock = open(RF_PQ_FIXTURES ".lock", O_CREAT | O_RDWR, 0644);
	cr_assert(lock >= 0);
	flock(lock, LOCK_EX);
	cr_assert(stat(RF_PQ_SCRIPT, &ss) == 0);
	if (stat(stamp, &st) != 0 || st.st_mtime < ss.st_mtime) {
		snprintf(cmd, sizeof(cmd), "'%s' '%s' '%s' && touch '%s'", python(), RF_PQ_SCRIPT,
			 dir, stamp);
		cr_assert(system(cmd) == 0, "%s failed", cmd);
	}
	flock(lock, LOCK_UN);
	close(lock);
	ready = 1;
	return dir;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	*n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*n + 1);
	cr_assert(fread(b, 1, *n, f) == *n);
	fclose(f);
	return b;
}

/* A whole file in memory and its footer. */
typedef struct pfile {
	char path[512];
	uint8_t *b;
	size_t n;
	rf_pq_meta *m;
} pfile;

static int open_bytes(pfile *f, const char *name)
{
	uint32_t fl;
	if (rfi_pq_tail_check(name, f->b + f->n - RF_PQ_TAIL_BYTES, f->n, &fl, why,
			      sizeof(why)) < 0)
		return -1;
	return rfi_pq_meta_parse(name, f->b + f->n - RF_PQ_TAIL_BYTES - fl, fl, f->n, &f->m, why,
				 sizeof(why));
}

static void pfile_open(pfile *f, const char *name)
{
	snprintf(f->path, sizeof(f->path), "%s/%s.parquet", fixtures(), name);
	f->b = slurp(f->path, &f->n);
	cr_assert(open_bytes(f, name) == 0, "%s", why);
}

static void pfile_close(pfile *f)
{
	rfi_pq_meta_free(f->m);
	free(f->b);
}

/* The expected cells of one column ("-", "i:N", "b:HEX"), by row. */
static char **expect(const char *name, const char *column, int64_t rows)
{
	char path[512], *line = NULL;
	size_t cap = 0;
	snprintf(path, sizeof(path), "%s/%s.expect", fixtures(), name);
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot open %s", path);
	char **cells = calloc((size_t)rows, sizeof(char *));
	while (getline(&line, &cap, f) > 0) {
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		cr_assert(t2);
		*t1 = '\0';
		if (strcmp(line, column) != 0)
			continue;
		long row = strtol(t1 + 1, NULL, 10);
		cr_assert(row >= 0 && row < rows);
		t2[strcspn(t2, "\n")] = '\0';
		cells[row] = strdup(t2 + 1);
	}
	free(line);
	fclose(f);
	return cells;
}

/* A decoded row as the .expect file writes it. */
static void cell(const rf_pq_values *v, uint32_t i, char *out, size_t len)
{
	if (!v->present[i]) {
		snprintf(out, len, "-");
		return;
	}
	if (v->num) {
		snprintf(out, len, "i:%lld", (long long)v->num[i]);
		return;
	}
	cr_assert(v->ptr[i]);
	size_t k = (size_t)snprintf(out, len, "b:");
	for (uint32_t j = 0; j < v->len[i] && k + 3 < len; j++)
		k += (size_t)snprintf(out + k, len - k, "%02x", v->ptr[i][j]);
}

/* The data pages of one chunk: from its OffsetIndex where it has one, else
 * from its page headers. *used_index says which. */
static rf_pq_page_loc *pages(const pfile *f, uint32_t g, uint32_t leaf, uint32_t *count,
			     int64_t *dict, int *used_index)
{
	const rf_pq_chunk *c = &f->m->groups[g].chunks[leaf];
	int64_t rows = f->m->groups[g].num_rows;
	rf_pq_page_loc *locs;
	*used_index = c->offset_index_offset >= 0;
	if (*used_index) {
		cr_assert(rfi_pq_offset_index_parse(f->b + c->offset_index_offset,
						    (size_t)c->offset_index_length, c, rows, &locs,
						    count, why, sizeof(why)) == 0, "%s", why);
		*dict = c->dictionary_page_offset;
	} else {
		cr_assert(rfi_pq_chunk_scan(f->b + c->start, (size_t)c->compressed_size, c, rows,
					    &locs, count, dict, why, sizeof(why)) == 0, "%s", why);
	}
	return locs;
}

/* Reads every row of column `column` of fixture `name`, compares each with
 * pyarrow's, and reads a middle slice of each page again on its own.
 * @return : whether the page index was used (any chunk). */
static int check_column(const char *name, const char *column)
{
	pfile f;
	pfile_open(&f, name);
	int leaf = rfi_pq_leaf_find(f.m, column), indexed = 0;
	cr_assert(leaf >= 0, "%s: no column %s", name, column);
	cr_assert(rfi_pq_column_check(f.m, (uint32_t)leaf, why, sizeof(why)) == 0, "%s", why);
	char **cells = expect(name, column, f.m->num_rows);
	char got[4096];
	for (uint32_t g = 0; g < f.m->ngroups; g++) {
		uint32_t np, used;
		int64_t dict_at;
		int ix;
		rf_pq_dict dict = {0};
		rf_pq_page_loc *locs = pages(&f, g, (uint32_t)leaf, &np, &dict_at, &ix);
		indexed |= ix;
		if (dict_at >= 0)
			cr_assert(rfi_pq_dict_load(f.m, g, (uint32_t)leaf, f.b + dict_at,
						   f.n - (size_t)dict_at, &dict, why, sizeof(why)) == 0,
				  "%s", why);
		used = 0;
		for (uint32_t p = 0; p < np; p++) {
			rf_pq_page pg;
			rf_pq_values v = {0}, part = {0};
			cr_assert(rfi_pq_page_open(f.m, g, (uint32_t)leaf, f.b + locs[p].offset,
						   (size_t)locs[p].size, &pg, why, sizeof(why)) == 0,
				  "%s page %u: %s", name, p, why);
			cr_assert(rfi_pq_page_rows(&pg, dict_at >= 0 ? &dict : NULL, 0, pg.rows, &v,
						   why, sizeof(why)) == 0, "%s", why);
			for (uint32_t i = 0; i < v.count; i++) {
				int64_t row = f.m->groups[g].first_row + locs[p].first_row + i;
				cell(&v, i, got, sizeof(got));
				cr_assert(cells[row], "%s: no expected cell for row %lld", column,
					  (long long)row);
				cr_assert_str_eq(got, cells[row], "%s %s row %lld", name, column,
						 (long long)row);
			}
			uint32_t a = pg.rows / 3, b = pg.rows - pg.rows / 4;
			cr_assert(rfi_pq_page_rows(&pg, dict_at >= 0 ? &dict : NULL, a, b, &part, why,
						   sizeof(why)) == 0, "%s", why);
			for (uint32_t i = a; i < b; i++) {
				char whole[4096];
				cell(&v, i, whole, sizeof(whole));
				cell(&part, i - a, got, sizeof(got));
				cr_assert_str_eq(got, whole);
			}
			used += pg.rows;
			rfi_pq_values_free(&v);
			rfi_pq_values_free(&part);
			rfi_pq_page_close(&pg);
		}
		cr_assert_eq(used, f.m->groups[g].num_rows);
		rfi_pq_dict_free(&dict);
		free(locs);
	}
	for (int64_t r = 0; r < f.m->num_rows; r++)
		free(cells[r]);
	free(cells);
	pfile_close(&f);
	return indexed;
}

static const char *const columns[] = {"label", "small", "flag", "image", "caption", "fixed",
				      "img.bytes", "img.path", "req", "req_int"};

static int check_file(const char *name)
{
	int indexed = 0;
	for (size_t i = 0; i < sizeof(columns) / sizeof(*columns); i++)
		indexed |= check_column(name, columns[i]);
	return indexed;
}

static void need_codec(int codec)
{
	if (!rfi_pq_codec_built(codec))
		cr_skip_test("%s is not built into this ringfeed (its meson feature)",
			     rfi_pq_codec_name(codec));
}

Test(parquet, codec_uncompressed) { check_file("codec_none"); }
Test(parquet, codec_snappy) { need_codec(RF_PQ_SNAPPY); check_file("codec_snappy"); }
Test(parquet, codec_zstd) { check_file("codec_zstd"); }
Test(parquet, codec_gzip) { need_codec(RF_PQ_GZIP); check_file("codec_gzip"); }
Test(parquet, codec_lz4_raw) { need_codec(RF_PQ_LZ4_RAW); check_file("codec_lz4"); }
Test(parquet, codec_brotli) { need_codec(RF_PQ_BROTLI); check_file("codec_brotli"); }

Test(parquet, pages_v1_v2_dictionary_page_index)
{
	need_codec(RF_PQ_SNAPPY);
	const char *names[] = {"page1_dict0_index0", "page1_dict0_index1", "page1_dict1_index0",
			       "page1_dict1_index1", "page2_dict0_index0", "page2_dict0_index1",
			       "page2_dict1_index0", "page2_dict1_index1"};
	for (size_t i = 0; i < 8; i++)
		cr_assert_eq(check_file(names[i]), strstr(names[i], "index1") != NULL,
			     "%s: the page index used or not as written", names[i]);
}

Test(parquet, delta_encodings)
{
	check_file("delta_page1");
	check_file("delta_page2");
	/* pyarrow wrote what was asked for */
	pfile f;
	pfile_open(&f, "delta_page2");
	int caption = rfi_pq_leaf_find(f.m, "caption"), label = rfi_pq_leaf_find(f.m, "label");
	cr_assert(f.m->groups[0].chunks[caption].encodings & 1u << RF_PQ_ENC_DELTA_BYTE_ARRAY);
	cr_assert(f.m->groups[0].chunks[label].encodings & 1u << RF_PQ_ENC_DELTA_BINARY_PACKED);
	pfile_close(&f);
}

Test(parquet, plain_and_one_row_group)
{
	check_file("plain_uncompressed");
	need_codec(RF_PQ_SNAPPY);
	check_file("one_group");
}

Test(parquet, schema_levels_and_row_groups)
{
	pfile f;
	pfile_open(&f, "codec_zstd");
	cr_assert_eq(f.m->num_rows, 300);
	cr_assert_eq(f.m->ngroups, 3);
	cr_assert_eq(f.m->groups[2].first_row, 200);
	int img = rfi_pq_leaf_find(f.m, "img.bytes"), label = rfi_pq_leaf_find(f.m, "label");
	cr_assert(img >= 0 && label >= 0);
	cr_assert_eq(f.m->leaves[img].max_def, 2); /* the struct and its field, both nullable */
	cr_assert_eq(f.m->leaves[img].type, RF_PQ_BYTE_ARRAY);
	cr_assert_eq(f.m->leaves[label].max_def, 1); /* pyarrow writes every column OPTIONAL */
	cr_assert_eq(f.m->groups[1].chunks[img].codec, RF_PQ_ZSTD);
	cr_assert_eq(f.m->leaves[rfi_pq_leaf_find(f.m, "req")].max_def, 0); /* nullable=False */
	pfile_close(&f);
}

Test(parquet, class_label_names_in_metadata)
{
	need_codec(RF_PQ_SNAPPY);
	check_column("hf_image", "img.bytes");
	check_column("hf_image", "label");
	pfile f;
	pfile_open(&f, "hf_image");
	const rf_pq_str *hf = rfi_pq_kv_find(f.m, "huggingface");
	cr_assert(hf, "no huggingface key in the metadata");
	char *json = strndup(hf->p, hf->n);
	cr_assert(strstr(json, "\"ClassLabel\""));
	cr_assert(strstr(json, "[\"cat\", \"dog\", \"bird\""), "%s", json);
	free(json);
	cr_assert(rfi_pq_kv_find(f.m, "ARROW:schema"), "pyarrow's own key is listed too");
	char **names;
	uint32_t n;
	cr_assert_eq(rfi_pq_hf_class_names(f.m, "label", &names, &n, why, sizeof(why)), 1, "%s",
		     why);
	cr_assert_eq(n, 10);
	cr_assert_str_eq(names[0], "cat");
	cr_assert_str_eq(names[9], "car");
	rfi_pq_hf_names_free(names, n);
	/* the Image feature is no ClassLabel; an absent column has no names */
	cr_assert_eq(rfi_pq_hf_class_names(f.m, "img", &names, &n, why, sizeof(why)), 0);
	cr_assert_eq(rfi_pq_hf_class_names(f.m, "nope", &names, &n, why, sizeof(why)), 0);
	cr_assert_null(rfi_pq_kv_find(f.m, "absent"));
	pfile_close(&f);
}

/* ---- hostile input ------------------------------------------------------ */

Test(parquet_hostile, tail_and_truncated_footer)
{
	pfile f;
	pfile_open(&f, "codec_zstd");
	uint32_t fl;
	uint8_t tail[8];
	memcpy(tail, f.b + f.n - 8, 8);
	/* a footer length past the file */
	cr_assert(rfi_pq_tail_check("x.parquet", tail, 100, &fl, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "x.parquet: the footer length"), "%s", why);
	/* an encrypted file */
	memcpy(tail + 4, "PARE", 4);
	cr_assert(rfi_pq_tail_check("x.parquet", tail, f.n, &fl, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "encrypted"), "%s", why);
	memcpy(tail + 4, "JUNK", 4);
	cr_assert(rfi_pq_tail_check("x.parquet", tail, f.n, &fl, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "not a Parquet file"), "%s", why);
	/* the footer cut anywhere: refused, never a crash */
	memcpy(tail, f.b + f.n - 8, 8);
	cr_assert(rfi_pq_tail_check("x.parquet", tail, f.n, &fl, why, sizeof(why)) == 0);
	const uint8_t *footer = f.b + f.n - 8 - fl;
	for (uint32_t cut = 0; cut < fl; cut += 1 + cut / 8) {
		rf_pq_meta *m;
		cr_assert(rfi_pq_meta_parse("x.parquet", footer, cut, f.n, &m, why, sizeof(why)) < 0,
			  "a footer cut at %u of %u parsed", cut, fl);
		cr_assert_null(m);
		cr_assert(strncmp(why, "x.parquet: ", 11) == 0, "%s", why);
	}
	pfile_close(&f);
}

Test(parquet_hostile, offsets_past_the_file)
{
	pfile f;
	pfile_open(&f, "codec_zstd");
	uint32_t fl;
	cr_assert(rfi_pq_tail_check("x", f.b + f.n - 8, f.n, &fl, why, sizeof(why)) == 0);
	/* the same footer, in a file that claims to be shorter: its chunks
	 * lie past where the footer would start */
	rf_pq_meta *m;
	cr_assert(rfi_pq_meta_parse("short.parquet", f.b + f.n - 8 - fl, fl, fl + 12 + 100, &m, why,
				    sizeof(why)) < 0);
	cr_assert(strstr(why, "short.parquet: row group 0, column label: the chunk's pages"),
		  "%s", why);
	pfile_close(&f);
}

/* A hand-written PageHeader: DATA_PAGE, sizes u and c, 5 values, PLAIN. */
static size_t page_header(uint8_t *b, int32_t u, int32_t c)
{
	size_t k = 0;
	b[k++] = 0x15; b[k++] = 0x00;                     /* 1: type i32 = 0 */
	b[k++] = 0x15; k += (size_t)(u >= 0 ? 0 : 0);
	uint32_t z = (uint32_t)u << 1 ^ (uint32_t)(u >> 31); /* 2: uncompressed (zigzag) */
	do { b[k++] = (uint8_t)(z & 0x7f) | (z > 0x7f ? 0x80 : 0); z >>= 7; } while (z);
	b[k++] = 0x15;
	z = (uint32_t)c << 1 ^ (uint32_t)(c >> 31);           /* 3: compressed */
	do { b[k++] = (uint8_t)(z & 0x7f) | (z > 0x7f ? 0x80 : 0); z >>= 7; } while (z);
	b[k++] = 0x2c;                                    /* 5: data_page_header struct */
	b[k++] = 0x15; b[k++] = 10;                       /* num_values 5 */
	b[k++] = 0x15; b[k++] = 0;                        /* PLAIN */
	b[k++] = 0x15; b[k++] = 6;                        /* RLE */
	b[k++] = 0x15; b[k++] = 6;
	b[k++] = 0x00;                                    /* end of DataPageHeader */
	b[k++] = 0x00;                                    /* end of PageHeader */
	return k;
}

Test(parquet_hostile, lying_page_sizes)
{
	uint8_t b[64];
	rf_pq_page_header h;
	size_t hl, k = page_header(b, 20, 20);
	cr_assert(rfi_pq_page_header_parse(b, k + 20, k + 20, &h, &hl, why, sizeof(why)) == 0, "%s", why);
	cr_assert_eq(hl, k);
	cr_assert_eq(h.num_values, 5);
	/* a body longer than what is left of the chunk */
	k = page_header(b, 20, 1000000);
	cr_assert(rfi_pq_page_header_parse(b, k + 20, k + 20, &h, &hl, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "has 20 bytes left"), "%s", why);
	/* negative sizes, sizes past the limit */
	k = page_header(b, -5, 10);
	cr_assert(rfi_pq_page_header_parse(b, k + 20, k + 20, &h, &hl, why, sizeof(why)) < 0);
	k = page_header(b, 1 << 30, 10);
	cr_assert(rfi_pq_page_header_parse(b, k + 20, k + 20, &h, &hl, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "more than ringfeed reads"), "%s", why);
	/* cut anywhere: refused */
	k = page_header(b, 20, 20);
	for (size_t cut = 0; cut < k; cut++)
		cr_assert(rfi_pq_page_header_parse(b, cut, cut, &h, &hl, why, sizeof(why)) < 0);
}

/* The bytes present at p and the bytes left in the chunk are apart (a
 * scan reads a window of the chunk): the body is checked against the
 * chunk; a header cut by the window asks for more (-2), one cut by the
 * chunk is refused. */
Test(parquet_hostile, header_window_and_chunk_room)
{
	uint8_t b[64];
	rf_pq_page_header h;
	size_t hl, k = page_header(b, 20, 1000);
	cr_assert(rfi_pq_page_header_parse(b, k, k + 1000, &h, &hl, why, sizeof(why)) == 0, "%s",
		  why);
	cr_assert_eq(hl, k);
	cr_assert_eq(rfi_pq_page_header_parse(b, k, k + 999, &h, &hl, why, sizeof(why)), -1);
	cr_assert(strstr(why, "has 999 bytes left"), "%s", why);
	for (size_t cut = 0; cut < k; cut++) {
		cr_assert_eq(rfi_pq_page_header_parse(b, cut, k + 1000, &h, &hl, why, sizeof(why)),
			     -2, "cut at %zu", cut);
		cr_assert_eq(rfi_pq_page_header_parse(b, cut, cut, &h, &hl, why, sizeof(why)), -1,
			     "cut at %zu", cut);
	}
}

/* A scan's reader over a chunk in memory that counts what it is asked and
 * fails past cut (a file that shrank). */
typedef struct counting {
	const uint8_t *p;
	int64_t cut;
	size_t asked;
} counting;

static int count_read(void *ctx, int64_t off, size_t n, const uint8_t **p, char *w, size_t len)
{
	counting *c = ctx;
	if (off + (int64_t)n > c->cut) {
		snprintf(w, len, "the file ends at %lld", (long long)c->cut);
		return -1;
	}
	c->asked += n;
	*p = c->p + off;
	return 0;
}

/* Three pages of 1 MiB bodies, the second's header 100 KiB long (large
 * statistics: here an unknown field): the scan reads the headers (its
 * window doubled past 64 KiB for the long one), not the bodies; a read
 * that fails is the scan's refusal. */
Test(parquet_hostile, chunk_scan_reads_headers_not_bodies)
{
	const int32_t body = 1 << 20;
	const size_t big = 100 << 10;
	uint8_t *chunk = calloc(3 * (size_t)body + big + 256, 1);
	size_t at = 0, start[3];
	for (int i = 0; i < 3; i++) {
		start[i] = at;
		at += page_header(chunk + at, body, body);
		if (i == 1) { /* the header's end replaced by field 9: binary of big bytes */
			at--;
			chunk[at++] = 0x48;
			for (size_t z = big; ; z >>= 7) {
				chunk[at++] = (uint8_t)(z & 0x7f) | (z > 0x7f ? 0x80 : 0);
				if (z <= 0x7f)
					break;
			}
			at += big;
			chunk[at++] = 0x00;
		}
		at += (size_t)body;
	}
	rf_pq_chunk c = { .start = 0, .compressed_size = (int64_t)at, .dictionary_page_offset = -1,
			  .offset_index_offset = -1 };
	counting cc = { chunk, (int64_t)at, 0 };
	rf_pq_reader r = { count_read, &cc };
	rf_pq_page_loc *locs;
	uint32_t n;
	int64_t dict;
	cr_assert(rfi_pq_chunk_scan_read(&r, &c, 15, &locs, &n, &dict, why, sizeof(why)) == 0, "%s",
		  why);
	cr_assert_eq(n, 3);
	cr_assert_eq(dict, -1);
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert_eq(locs[i].offset, (int64_t)start[i]);
		cr_assert_eq(locs[i].first_row, 5 * i);
		cr_assert_eq(locs[i].offset + locs[i].size, i < 2 ? (int64_t)start[i + 1] : (int64_t)at);
	}
	cr_assert_lt(cc.asked, at / 4, "asked %zu bytes of a %zu-byte chunk", cc.asked, at);
	free(locs);
	/* the same over the chunk in memory */
	cr_assert(rfi_pq_chunk_scan(chunk, at, &c, 15, &locs, &n, &dict, why, sizeof(why)) == 0,
		  "%s", why);
	cr_assert_eq(n, 3);
	free(locs);
	/* the file shrank inside the long header: the reader's refusal */
	cc.cut = (int64_t)(start[1] + 1000);
	cr_assert(rfi_pq_chunk_scan_read(&r, &c, 15, &locs, &n, &dict, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "the file ends at") && locs == NULL && n == 0, "%s", why);
	free(chunk);
}

Test(parquet_hostile, expansion_claims)
{
	/* a real snappy page that claims to expand far past its bytes: refused
	 * before anything is allocated for it */
	need_codec(RF_PQ_SNAPPY);
	pfile f;
	pfile_open(&f, "codec_snappy");
	int leaf = rfi_pq_leaf_find(f.m, "image");
	rf_pq_page_loc *locs;
	uint32_t np;
	int64_t dict;
	int ix;
	locs = pages(&f, 0, (uint32_t)leaf, &np, &dict, &ix);
	rf_pq_page pg;
	cr_assert(rfi_pq_page_open(f.m, 0, (uint32_t)leaf, f.b + locs[0].offset,
				   (size_t)locs[0].size, &pg, why, sizeof(why)) == 0, "%s", why);
	rfi_pq_page_close(&pg);
	free(locs);
	pfile_close(&f);
	char w[200];
	uint8_t junk[16] = {0};
	cr_assert(rfi_pq_decompress(RF_PQ_SNAPPY, junk, sizeof(junk), junk, 8, w, sizeof(w)) < 0);
	cr_assert(strstr(w, "SNAPPY"), "%s", w);
	cr_assert(rfi_pq_decompress(RF_PQ_LZO, junk, 1, junk, 1, w, sizeof(w)) < 0);
	cr_assert(strstr(w, "LZO, which ringfeed does not read"), "%s", w);
}

Test(parquet_hostile, dictionary_index_out_of_range)
{
	need_codec(RF_PQ_SNAPPY);
	pfile f;
	pfile_open(&f, "page1_dict1_index0");
	int leaf = rfi_pq_leaf_find(f.m, "label");
	uint32_t np;
	int64_t dict_at;
	int ix;
	rf_pq_page_loc *locs = pages(&f, 0, (uint32_t)leaf, &np, &dict_at, &ix);
	cr_assert(dict_at >= 0);
	rf_pq_dict dict;
	cr_assert(rfi_pq_dict_load(f.m, 0, (uint32_t)leaf, f.b + dict_at, f.n - (size_t)dict_at,
				   &dict, why, sizeof(why)) == 0, "%s", why);
	cr_assert_eq(dict.count, 10);
	dict.count = 3; /* a dictionary shorter than the indices the page uses */
	rf_pq_page pg;
	rf_pq_values v = {0};
	cr_assert(rfi_pq_page_open(f.m, 0, (uint32_t)leaf, f.b + locs[0].offset,
				   (size_t)locs[0].size, &pg, why, sizeof(why)) == 0, "%s", why);
	cr_assert(rfi_pq_page_rows(&pg, &dict, 0, pg.rows, &v, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "column label, row group 0, page row 3"), "%s", why);
	cr_assert(strstr(why, "a dictionary index past the dictionary's end"), "%s", why);
	/* no dictionary at all */
	cr_assert(rfi_pq_page_rows(&pg, NULL, 0, pg.rows, &v, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "without a dictionary"), "%s", why);
	/* rows past the page */
	cr_assert(rfi_pq_page_rows(&pg, &dict, 0, pg.rows + 1, &v, why, sizeof(why)) < 0);
	dict.count = 10;
	rfi_pq_page_close(&pg);
	rfi_pq_dict_free(&dict);
	free(locs);
	pfile_close(&f);
}

Test(parquet_hostile, level_runs_longer_than_the_page)
{
	pfile f;
	pfile_open(&f, "plain_uncompressed");
	int leaf = rfi_pq_leaf_find(f.m, "small");
	uint32_t np;
	int64_t dict_at;
	int ix;
	rf_pq_page_loc *locs = pages(&f, 0, (uint32_t)leaf, &np, &dict_at, &ix);
	rf_pq_page pg;
	rf_pq_values v = {0};
	cr_assert(rfi_pq_page_open(f.m, 0, (uint32_t)leaf, f.b + locs[0].offset,
				   (size_t)locs[0].size, &pg, why, sizeof(why)) == 0, "%s", why);
	/* an RLE run of 100000 ones where the page has far fewer rows */
	uint8_t run[] = {0xc0, 0x9a, 0x0c, 0x01};
	pg.def = run;
	pg.def_len = sizeof(run);
	cr_assert(rfi_pq_page_rows(&pg, NULL, 0, pg.rows, &v, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "a run longer than the values left in the page"), "%s", why);
	/* a bit-packed run of 8 * 1000 values */
	uint8_t packed[] = {0xd1, 0x0f, 0xff};
	pg.def = packed;
	pg.def_len = sizeof(packed);
	cr_assert(rfi_pq_page_rows(&pg, NULL, 0, pg.rows, &v, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "bit-packed run longer"), "%s", why);
	/* levels that end before the page's rows */
	pg.def = run;
	pg.def_len = 2;
	cr_assert(rfi_pq_page_rows(&pg, NULL, 0, pg.rows, &v, why, sizeof(why)) < 0);
	/* a level over the column's maximum (1): a run of 2s */
	uint8_t over[] = {0x02, 0x02};
	pg.def = over;
	pg.def_len = sizeof(over);
	cr_assert(rfi_pq_page_rows(&pg, NULL, 0, 1, &v, why, sizeof(why)) < 0);
	cr_assert(strstr(why, "wider than its bit width") || strstr(why, "over the column's"),
		  "%s", why);
	rfi_pq_page_close(&pg);
	free(locs);
	pfile_close(&f);
}

Test(parquet_hostile, thrift_bombs)
{
	/* structs nested without end */
	uint8_t deep[4096];
	memset(deep, 0x1c, sizeof(deep));
	deep[0] = 0xfc; /* FileMetaData field 15, unknown: skipped, struct in struct... */
	rf_pq_meta *m;
	cr_assert(rfi_pq_meta_parse("deep.parquet", deep, sizeof(deep), 1 << 20, &m, why,
				    sizeof(why)) < 0);
	cr_assert(strstr(why, "deep.parquet: ") && strstr(why, "nested deeper"), "%s", why);
	/* a schema list that claims 2^31 elements in 8 bytes */
	uint8_t big[] = {0x29, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00};
	cr_assert(rfi_pq_meta_parse("big.parquet", big, sizeof(big), 1 << 20, &m, why,
				    sizeof(why)) < 0);
	cr_assert(strstr(why, "longer than the bytes left"), "%s", why);
	/* a list header with an unknown element type */
	rf_thrift t;
	uint8_t bad[] = {0x1d};
	int et;
	rfi_thrift_init(&t, bad, 1);
	cr_assert(rfi_thrift_list_begin(&t, &et) < 0 && t.err);
}

/* A footer-less meta whose only content is a "huggingface" value. */
static int hf_names(const char *value, char ***names, uint32_t *n)
{
	rf_pq_kv kv = {{"huggingface", 11}, {value, (uint32_t)strlen(value)}};
	rf_pq_meta m = {.file = "hf.parquet", .kv = &kv, .nkv = 1};
	return rfi_pq_hf_class_names(&m, "label", names, n, why, sizeof(why));
}

Test(parquet_hostile, huggingface_json)
{
	char **names;
	uint32_t n;
	/* escapes decoded, other members and nesting skipped */
	cr_assert_eq(hf_names("{\"x\": [1, {\"a\": \"]}\"}], \"info\": {\"features\": "
			      "{\"img\": {\"_type\": \"Image\"}, \"label\": {\"names\": "
			      "[\"a\\\"b\", \"\\u00e9t\\u00e9\", \"\\ud83d\\ude00\"], "
			      "\"_type\": \"ClassLabel\"}}}}", &names, &n), 1, "%s", why);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(names[0], "a\"b");
	cr_assert_str_eq(names[1], "\xc3\xa9t\xc3\xa9");
	cr_assert_str_eq(names[2], "\xf0\x9f\x98\x80");
	rfi_pq_hf_names_free(names, n);
	/* not a ClassLabel */
	cr_assert_eq(hf_names("{\"info\": {\"features\": {\"label\": {\"dtype\": \"int64\", "
			      "\"_type\": \"Value\"}}}}", &names, &n), 0);
	/* malformed: each refused naming the file, never read past the value */
	const char *bad[] = {"{\"info\": {\"features\": {\"label\": {\"_type\": \"ClassLabel\", "
			     "\"names\": [\"a\", \"b", "{\"info\": [", "{\"info\"", "[[[[[[[[",
			     "{\"info\": {\"features\": {\"label\": {\"_type\": \"ClassLabel\", "
			     "\"names\": [\"\\uZZZZ\"]}}}}",
			     "{\"a\": {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cr_assert_eq(hf_names(bad[i], &names, &n), -1, "%s parsed", bad[i]);
		cr_assert(strstr(why, "hf.parquet: the huggingface metadata: "), "%s", why);
	}
}

Test(parquet_hostile, delta_streams)
{
	rf_pq_delta d;
	int64_t v;
	/* block 128, 4 miniblocks, 3 values, first 7, then min delta 1, widths 0 */
	uint8_t ok[] = {0x80, 0x01, 0x04, 0x03, 0x0e, 0x02, 0, 0, 0, 0};
	cr_assert(rfi_pq_delta_init(&d, ok, sizeof(ok), 10) == 0);
	for (int i = 0; i < 3; i++) {
		cr_assert(rfi_pq_delta_next(&d, &v) == 0, "%s", d.err);
		cr_assert_eq(v, 7 + i);
	}
	cr_assert(rfi_pq_delta_next(&d, &v) < 0);
	/* more values than the page holds */
	cr_assert(rfi_pq_delta_init(&d, ok, sizeof(ok), 2) < 0);
	/* a block size that is not a multiple of 128 */
	uint8_t bad[] = {0x81, 0x01, 0x04, 0x03, 0x0e};
	cr_assert(rfi_pq_delta_init(&d, bad, sizeof(bad), 10) < 0);
	/* a miniblock wider than 64 bits */
	uint8_t wide[] = {0x80, 0x01, 0x04, 0x03, 0x0e, 0x02, 65, 0, 0, 0};
	cr_assert(rfi_pq_delta_init(&d, wide, sizeof(wide), 10) == 0);
	cr_assert(rfi_pq_delta_next(&d, &v) == 0);
	cr_assert(rfi_pq_delta_next(&d, &v) < 0);
	cr_assert(strstr(d.err, "wider than 64"), "%s", d.err);
}
