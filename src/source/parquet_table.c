/* parquet_table.c - the Parquet kind's set-up (parquet_table.h): each
 * listed file's footer, its columns found (the image column by its bytes'
 * look or by the `datasets` Image struct; the label column by name), the
 * image column's data pages located (its OffsetIndex where it has one,
 * else its pages' headers), its dictionaries loaded, the labels read.
 * Files read through parquet_file.h (local: bounded pread()s, never
 * mapped, a file that shrinks while it is read refused naming it, not a
 * SIGBUS; remote: the source's transport, every answer checked), the
 * chunks without an OffsetIndex header by header, never whole; the first
 * file alone (its columns are every file's), then the rest many at once
 * on helper threads, put into the table in the files' order (a string
 * label column's values, gathered per file on its thread, merged there:
 * the classes are every file's). Fields (rfi_pq_table_add_field) read the
 * files again through the same reader, after the table is built or
 * restored from the index cache (parquet_cache.c).
 * Cold path: allocations here are sized by what the file's bytes justify
 * (rows bounded by the file's size, pages by their headers). */
#define _GNU_SOURCE
#include "source/parquet_table.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decode/image.h"
#include "source/parquet_columns.h"
#include "source/parquet_file.h"
#include "source/parquet_hf.h"
#include "source/parquet_opened.h"
#include "util/cancel.h"
#include "util/util.h"

#define LABEL_COLUMN "label"
/* Rows a file may claim: a row takes at least a bit of a definition level
 * or of a dictionary index run; beyond this many per byte a footer lies. */
#define ROWS_PER_BYTE 8
#define SNIFF_PAGES 4 /* pages of a binary column looked at for image bytes */

/* One column chunk's data pages and its dictionary page, located. */
typedef struct pq_chunk {
	rf_pq_page_loc *locs;
	uint32_t n;
	int64_t dict_off; /* -1: none */
} pq_chunk;

typedef rf_pq_file pq_file;

/* A page, a dictionary page or an OffsetIndex read whole: at most a page's
 * body and header (the parsers refuse more; a claim past it is not read). */
#define READ_MAX (RF_PQ_PAGE_BYTES_MAX + RF_PQ_PAGE_HEADER_MAX)

/* n bytes at off into buf, err naming the file. */
static int file_pread(pq_file *pf, uint64_t off, size_t n, uint8_t *buf, char *err,
		      size_t errlen)
{
	char why[384];
	int ret = rfi_pq_file_read(pf, off, n, buf, why, sizeof(why));
	if (ret)
		rfi_fmt(err, errlen, "%s: %s", pf->name, why);
	return ret;
}

/* n bytes at off, into a new buffer *out (the caller frees it). what names
 * them in a refusal of a claim over READ_MAX. */
static int file_bytes(pq_file *pf, uint64_t off, uint64_t n, const char *what,
		      uint8_t **out, char *err, size_t errlen)
{
	*out = NULL;
	if (n > READ_MAX) {
		rfi_fmt(err, errlen, "%s: %s of %llu bytes (ringfeed reads at most %zu)", pf->name,
			what, (unsigned long long)n, (size_t)READ_MAX);
		return RF_EINDEX;
	}
	uint8_t *b = malloc(n ? (size_t)n : 1);
	if (!b)
		return -ENOMEM;
	char why[384];
	int ret = rfi_pq_file_read(pf, off, (size_t)n, b, why, sizeof(why));
	if (ret) {
		rfi_fmt(err, errlen, "%s: %s: %s", pf->name, what, why);
		free(b);
		return ret;
	}
	*out = b;
	return 0;
}

static int read_footer(pq_file *pf, rf_pq_meta **m, char *err, size_t errlen)
{
	uint8_t tail[RF_PQ_TAIL_BYTES], *footer;
	uint32_t flen;
	int ret = file_pread(pf, pf->size - RF_PQ_TAIL_BYTES, sizeof(tail), tail, err, errlen);
	if (ret)
		return ret;
	if (rfi_pq_tail_check(pf->name, tail, pf->size, &flen, err, errlen))
		return RF_EINDEX;
	/* flen <= RF_PQ_FOOTER_MAX and within the file (the tail's checks) */
	footer = malloc(flen ? flen : 1);
	if (!footer)
		return -ENOMEM;
	ret = file_pread(pf, pf->size - RF_PQ_TAIL_BYTES - flen, flen, footer, err, errlen);
	if (!ret && rfi_pq_meta_parse(pf->name, footer, flen, pf->size, m, err, errlen))
		ret = RF_EINDEX;
	free(footer);
	return ret;
}

static void chunk_free(pq_chunk *c)
{
	free(c->locs);
	c->locs = NULL;
	c->n = 0;
}

/* Where chunk (m, g, leaf)'s pages are: its OffsetIndex, or its headers. */
static int chunk_locate(pq_file *pf, const rf_pq_meta *m, uint32_t g, uint32_t leaf,
			pq_chunk *out, char *err, size_t errlen)
{
	const rf_pq_chunk *c = &m->groups[g].chunks[leaf];
	int64_t rows = m->groups[g].num_rows;
	char why[384];
	int ret;
	memset(out, 0, sizeof(*out));
	out->dict_off = c->dictionary_page_offset;
	if (c->offset_index_offset >= 0) {
		uint8_t *oi;
		rfi_fmt(why, sizeof(why), "row group %u, column %s: an OffsetIndex", g,
			m->leaves[leaf].path);
		ret = file_bytes(pf, (uint64_t)c->offset_index_offset,
				 (uint64_t)c->offset_index_length, why, &oi, err, errlen);
		if (ret)
			return ret;
		ret = rfi_pq_offset_index_parse(oi, (size_t)c->offset_index_length, c, rows,
						&out->locs, &out->n, why, sizeof(why));
		free(oi);
	} else { /* its headers, one window each: the bodies are not read */
		rf_pq_reader r = { rfi_pq_file_scan_read, pf };
		pf->scan_end = (uint64_t)(c->start + c->compressed_size);
		pf->scan_prev = -1;
		pf->scan_small = 0;
		ret = rfi_pq_chunk_scan_read(&r, c, rows, &out->locs, &out->n, &out->dict_off, why,
					     sizeof(why));
	}
	/* a writer that left dictionary_page_offset unset: a page before the
	 * first data page is the dictionary (the scan finds it itself) */
	if (!ret && out->n && out->dict_off < 0 && c->start < out->locs[0].offset)
		out->dict_off = c->start;
	if (!ret && out->n && out->dict_off >= 0 && out->dict_off >= out->locs[0].offset) {
		rfi_fmt(why, sizeof(why), "its dictionary page (at %lld) is not before its data "
			"pages (at %lld)", (long long)out->dict_off, (long long)out->locs[0].offset);
		ret = -1;
	}
	if (ret) {
		rfi_fmt(err, errlen, "%s: row group %u, column %s: %s", pf->name, g,
			m->leaves[leaf].path, why);
		chunk_free(out);
		return RF_EINDEX;
	}
	return 0;
}

/* The chunk's dictionary into *d: 1 loaded, 0 it has none, negative: refused. */
static int chunk_dict(pq_file *pf, const rf_pq_meta *m, uint32_t g, uint32_t leaf,
		      const pq_chunk *c, rf_pq_dict *d, char *err, size_t errlen)
{
	if (c->dict_off < 0 || !c->n)
		return 0;
	uint64_t n = (uint64_t)(c->locs[0].offset - c->dict_off);
	uint8_t *page;
	char what[320];
	rfi_fmt(what, sizeof(what), "row group %u, column %s: a dictionary page", g,
		m->leaves[leaf].path);
	int ret = file_bytes(pf, (uint64_t)c->dict_off, n, what, &page, err, errlen);
	if (ret)
		return ret;
	ret = rfi_pq_dict_load(m, g, leaf, page, (size_t)n, d, err, errlen) ? RF_EINDEX : 1;
	free(page); /* the dictionary owns its values (decoded or copied) */
	return ret;
}

/* Rows [0, rows of the page) of page k of chunk c, read into *bytes,
 * opened and read into *v; *pg left open and *bytes kept (v's values may
 * point into either): the caller closes the one and frees the other. */
static int page_values(pq_file *pf, const rf_pq_meta *m, uint32_t g, uint32_t leaf,
		       const pq_chunk *c, uint32_t k, const rf_pq_dict *d, uint32_t max_rows,
		       rf_pq_page *pg, rf_pq_values *v, uint8_t **bytes, char *err, size_t errlen)
{
	const rf_pq_page_loc *loc = &c->locs[k];
	char what[320];
	rfi_fmt(what, sizeof(what), "row group %u, column %s: page %u", g, m->leaves[leaf].path,
		k);
	int ret = file_bytes(pf, (uint64_t)loc->offset, (uint64_t)loc->size, what, bytes, err,
			     errlen);
	if (ret)
		return ret;
	ret = rfi_pq_page_open(m, g, leaf, *bytes, (size_t)loc->size, pg, err, errlen);
	if (ret == 1)
		rfi_fmt(err, errlen, "%s: %s is not a data page", pf->name, what);
	if (!ret) {
		uint32_t rows = pg->rows < max_rows ? pg->rows : max_rows;
		if (rfi_pq_page_rows(pg, d, 0, rows, v, err, errlen)) {
			rfi_pq_page_close(pg);
			ret = -1;
		}
	}
	if (ret) {
		free(*bytes);
		*bytes = NULL;
		return RF_EINDEX;
	}
	return 0;
}

/* Did a read of pf fail (the file shrank, an I/O error)? Then why, which
 * says so, is the refusal: the column is not judged on bytes not read. */
static int read_failed(const pq_file *pf, const char *why, char *refused, size_t refused_len)
{
	if (pf->read_failed)
		rfi_fmt(refused, refused_len, "%s", why);
	return pf->read_failed;
}

/* Does binary column leaf hold images (its first value that is not null
 * starts like a JPEG, PNG or WebP)? 1 yes, 0 no (or unreadable), -1 not
 * readable at all (a codec or an encoding not read: refused[refused_len]
 * says why). */
static int holds_images(pq_file *pf, const rf_pq_meta *m, uint32_t leaf, char *refused,
			size_t refused_len)
{
	char why[384];
	if (rfi_pq_column_check(m, leaf, refused, refused_len))
		return -1;
	int found = -1;
	for (uint32_t g = 0; g < m->ngroups && found < 0; g++) {
		pq_chunk c;
		if (chunk_locate(pf, m, g, leaf, &c, why, sizeof(why)))
			return read_failed(pf, why, refused, refused_len) ? -1 : 0;
		rf_pq_dict d = { 0 };
		int dict = chunk_dict(pf, m, g, leaf, &c, &d, why, sizeof(why));
		for (uint32_t k = 0; dict >= 0 && k < c.n && k < SNIFF_PAGES && found < 0; k++) {
			rf_pq_page pg;
			rf_pq_values v = { 0 };
			uint8_t *bytes;
			if (page_values(pf, m, g, leaf, &c, k, dict ? &d : NULL, 256, &pg, &v, &bytes,
					why, sizeof(why))) {
				found = 0;
				break;
			}
			for (uint32_t i = 0; i < v.count && found < 0; i++)
				if (v.present[i] && v.ptr[i])
					found = rfi_image_sniff(v.ptr[i], v.len[i]) != RF_FORMAT_UNKNOWN;
			rfi_pq_values_free(&v);
			rfi_pq_page_close(&pg);
			free(bytes);
		}
		if (dict > 0)
			rfi_pq_dict_free(&d);
		chunk_free(&c);
		if (dict < 0)
			break;
	}
	return read_failed(pf, why, refused, refused_len) ? -1 : found > 0;
}

static int binary_leaf(const rf_pq_leaf *l)
{
	return l->type == RF_PQ_BYTE_ARRAY && l->max_rep == 0;
}

/* The `datasets` Image feature: struct<bytes: binary, path: string>, its
 * leaf COLUMN.bytes beside COLUMN.path. */
static int image_struct(const rf_pq_meta *m, uint32_t leaf)
{
	const char *p = m->leaves[leaf].path;
	size_t n = strlen(p);
	if (!binary_leaf(&m->leaves[leaf]) || n <= 6 || strcmp(p + n - 6, ".bytes"))
		return 0;
	char sib[4096];
	rfi_fmt(sib, sizeof(sib), "%.*s.path", (int)(n - 6), p);
	return rfi_pq_leaf_find(m, sib) >= 0;
}

/* The binary columns of m, for a refusal: "a, b, c" (or "none"). */
static void binary_columns(const rf_pq_meta *m, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = 0;
	for (uint32_t l = 0; l < m->nleaves && k + 1 < len; l++) {
		if (!binary_leaf(&m->leaves[l]))
			continue;
		int w = snprintf(buf + k, len - k, "%s%s", k ? ", " : "", m->leaves[l].path);
		k += w > 0 ? (size_t)w : 0;
	}
	if (!buf[0])
		rfi_fmt(buf, len, "none");
}

/* The image column of the first file: the Image struct's bytes, else a
 * binary column of image bytes, else (raw) the one binary column. */
static int find_image(pq_file *pf, const rf_pq_meta *m, int raw, char **path, char *err,
		      size_t errlen)
{
	int64_t pick = -1, binaries = 0, only = -1;
	char refused[512] = "";
	for (uint32_t l = 0; l < m->nleaves && pick < 0; l++)
		if (image_struct(m, l))
			pick = l;
	for (uint32_t l = 0; l < m->nleaves && pick < 0; l++) {
		if (!binary_leaf(&m->leaves[l]))
			continue;
		binaries++;
		only = l;
		char why[512];
		int images = holds_images(pf, m, l, why, sizeof(why));
		if (images > 0)
			pick = l;
		else if (images < 0 && !refused[0])
			rfi_fmt(refused, sizeof(refused), "%s", why);
	}
	if (pick < 0 && raw && binaries == 1)
		pick = only;
	if (pick < 0 && refused[0]) { /* a column that may hold them, and cannot be read */
		rfi_fmt(err, errlen, "%s", refused);
		return RF_EINDEX;
	}
	if (pick < 0) {
		char cols[1024];
		binary_columns(m, cols, sizeof(cols));
		rfi_fmt(err, errlen, "%s: no image column: no binary column whose values are JPEG, PNG "
			"or WebP bytes and no `datasets` Image struct (COLUMN.bytes beside COLUMN.path)"
			"%s (binary columns: %s)", pf->name,
			raw ? ", and not exactly one binary column for raw mode" : "", cols);
		return RF_EINDEX;
	}
	*path = strdup(m->leaves[pick].path);
	return *path ? 0 : -ENOMEM;
}

/* One row group of a file, as read: its image chunk's pages, its
 * dictionary. */
typedef struct pq_group {
	pq_chunk c;
	rf_pq_dict d;
	int has_dict;
} pq_group;

/* One file, read (on a helper thread, every file at once up to
 * PARALLEL_*): what goes into the table, in the files' order, after. */
typedef struct pq_ready {
	rf_pq_meta *meta;
	uint32_t leaf;
	int32_t label_leaf; /* -1: no label column */
	pq_group *groups;   /* ngroups (meta->ngroups: kept when the table takes meta) */
	uint32_t ngroups;
	int32_t *labels;    /* meta->num_rows, or NULL (no label column); string
	                     * labels: ids in strings */
	rf_pq_strset strings; /* a string label column's values in this file */
	rf_pq_stamp stamp;
	uint32_t requests;  /* remote: requests made */
	int ret;
	char *err;          /* ret's message (malloc'd), or NULL */
} pq_ready;

/* The builder: the table and its arrays' room. */
typedef struct builder {
	rf_index *idx;
	rf_pq_table *t;
	int raw;
	rf_pq_columns cols;   /* cfg.columns */
	rf_pq_strset strings; /* a string label column's values (every file's),
	                       * ids as first merged (add_ready) */
	uint64_t pages_cap, labels_cap;
} builder;

static int grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	uint64_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* Keeps a chunk's dictionary d of column path (the table owns it now), its
 * page at loc: its number in *id. file names the file in a refusal. */
static int keep_dict(rf_pq_table *t, const char *file, const char *path, rf_pq_dict *d,
		     const rf_pq_dloc *loc, uint32_t *id, char *err, size_t errlen)
{
	uint64_t cap = t->dicts_cap, lcap = t->dicts_cap;
	if (grow((void **)&t->dicts, &cap, (uint64_t)t->ndicts + 1, sizeof(*t->dicts)) ||
	    grow((void **)&t->dlocs, &lcap, (uint64_t)t->ndicts + 1, sizeof(*t->dlocs))) {
		rfi_pq_dict_free(d);
		return -ENOMEM;
	}
	t->dicts_cap = (uint32_t)cap;
	t->dlocs[t->ndicts] = *loc;
	t->dict_bytes += d->data_len + (size_t)d->count * (sizeof(*d->ptr) + sizeof(*d->len));
	*id = t->ndicts;
	t->dicts[t->ndicts++] = *d;
	if (t->dict_bytes > RF_PQ_DICT_TOTAL_MAX) {
		rfi_fmt(err, errlen, "%s: column %s: its dictionaries take more than %zu MiB kept for "
			"the run; write the column without one (pyarrow: use_dictionary=False, "
			"or a list of the other columns)", file, path, RF_PQ_DICT_TOTAL_MAX >> 20);
		return RF_EINDEX;
	}
	return 0;
}

/* Chunk c's dictionary d (group g of file f, column leaf) kept: its number
 * in *dict. */
static int chunk_keep_dict(rf_pq_table *t, const char *file, uint32_t f, uint32_t g,
			   uint32_t leaf, const pq_chunk *c, rf_pq_dict *d, uint32_t *dict,
			   char *err, size_t errlen)
{
	rf_pq_dloc loc = { .offset = (uint64_t)c->dict_off, .file = f, .group = g,
			   .bytes = (uint64_t)(c->locs[0].offset - c->dict_off) };
	return keep_dict(t, file, t->metas[f]->leaves[leaf].path, d, &loc, dict, err, errlen);
}

/* A list of a column's data pages being built (the image's, a field's). */
typedef struct page_list {
	rf_pq_tpage **pages;
	uint64_t *n, *cap;
} page_list;

/* Chunk c's pages (group g of file f, its dictionary dict) onto list, its
 * samples from first. */
static int list_pages(const rf_pq_meta *m, uint32_t f, uint32_t g, const pq_chunk *c,
		      uint32_t dict, uint64_t first, page_list list)
{
	int ret = grow((void **)list.pages, list.cap, *list.n + c->n, sizeof(**list.pages));
	const rf_pq_row_group *rg = &m->groups[g];
	for (uint32_t k = 0; !ret && k < c->n; k++) {
		int64_t end = k + 1 < c->n ? c->locs[k + 1].first_row : rg->num_rows;
		if (end <= c->locs[k].first_row)
			continue;
		(*list.pages)[(*list.n)++] = (rf_pq_tpage){
			.offset = (uint64_t)c->locs[k].offset, .size = (uint32_t)c->locs[k].size,
			.first = first + (uint64_t)c->locs[k].first_row,
			.row = (uint64_t)(rg->first_row + c->locs[k].first_row),
			.rows = (uint32_t)(end - c->locs[k].first_row), .file = f, .group = g,
			.dict = dict,
		};
	}
	return ret;
}

/* Group g of file f's image pages into the table (its samples start at
 * t->samples); its dictionary moves into the table. */
static int add_image_pages(builder *b, uint32_t f, uint32_t g, pq_group *pg, char *err,
			   size_t errlen)
{
	rf_pq_table *t = b->t;
	uint32_t dict = RF_PQ_NO_DICT;
	int ret = 0;
	if (pg->has_dict) {
		pg->has_dict = 0;
		char name[PATH_MAX];
		rfi_index_shard_shown(b->idx, f, name, sizeof(name));
		ret = chunk_keep_dict(t, name, f, g, t->leaf[f], &pg->c, &pg->d, &dict, err, errlen);
	}
	uint64_t from = t->npages;
	if (!ret)
		ret = list_pages(t->metas[f], f, g, &pg->c, dict, t->samples,
				 (page_list){ &t->pages, &t->npages, &b->pages_cap });
	for (uint64_t k = from; !ret && k < t->npages; k++)
		if (t->pages[k].size > t->largest_page)
			t->largest_page = t->pages[k].size;
	return ret;
}

/* Group g's pages of field column leaf (file f, open as pf) into fc's
 * list (its samples start at first); its dictionary kept. */
static int add_field_pages(rf_pq_table *t, pq_file *pf, uint32_t f, uint32_t g, uint32_t leaf,
			   uint64_t first, rf_pq_tfield *fc, char *err, size_t errlen)
{
	const rf_pq_meta *m = t->metas[f];
	pq_chunk c;
	int ret = chunk_locate(pf, m, g, leaf, &c, err, errlen);
	if (ret)
		return ret;
	uint32_t dict = RF_PQ_NO_DICT;
	rf_pq_dict d;
	ret = chunk_dict(pf, m, g, leaf, &c, &d, err, errlen);
	if (ret > 0)
		ret = chunk_keep_dict(t, pf->name, f, g, leaf, &c, &d, &dict, err, errlen);
	if (!ret)
		ret = list_pages(m, f, g, &c, dict, first,
				 (page_list){ &fc->pages, &fc->npages, &fc->pages_cap });
	chunk_free(&c);
	return ret;
}

/* A label value: an integer that fits, or (strings not NULL) a string's id
 * in strings (the file's, in the order first seen: the classes are sorted
 * once every file is read); a null is -1 (no label). 0, 1 not a label,
 * -ENOMEM. */
static int label_of(rf_pq_strset *strings, const rf_pq_values *v, uint32_t i, int32_t *out)
{
	if (!v->present[i]) {
		*out = -1;
		return 0;
	}
	if (strings) {
		uint32_t id;
		int ret = rfi_pq_strset_add(strings, v->ptr[i], v->len[i], &id);
		*out = (int32_t)id;
		return ret;
	}
	if (v->num[i] < -1 || v->num[i] > INT32_MAX)
		return 1;
	*out = (int32_t)v->num[i];
	return 0;
}

/* A value of the label column that is not a label, row `row` of file. */
static int not_a_label(const rf_pq_table *t, const char *file, long long row, char *err,
		       size_t errlen)
{
	if (t->label_strings)
		rfi_fmt(err, errlen, "%s: column %s, row %lld: more than %u distinct strings or %zu "
			"MiB of them: not a column of class names", file, t->label_path, row,
			RF_PQ_CLASSES_MAX, RF_PQ_CLASS_BYTES_MAX >> 20);
	else
		rfi_fmt(err, errlen, "%s: column %s, row %lld: not a label (an integer from 0 to %d, "
			"or null)", file, t->label_path, row, INT32_MAX);
	return RF_EINDEX;
}

/* Page k's labels (group g of r's file, open as pf) into r->labels[their
 * rows in the file]. */
static int page_labels(const rf_pq_table *t, pq_file *pf, pq_ready *r, uint32_t g,
		       const pq_chunk *c, uint32_t k, const rf_pq_dict *d, char *err,
		       size_t errlen)
{
	const rf_pq_meta *m = r->meta;
	rf_pq_page pg;
	rf_pq_values v = { 0 };
	uint8_t *bytes;
	int ret = page_values(pf, m, g, (uint32_t)r->label_leaf, c, k, d, UINT32_MAX, &pg, &v,
			      &bytes, err, errlen);
	if (ret)
		return ret;
	uint64_t at = (uint64_t)(m->groups[g].first_row + c->locs[k].first_row);
	int64_t end = k + 1 < c->n ? c->locs[k + 1].first_row : m->groups[g].num_rows;
	if ((int64_t)v.count != end - c->locs[k].first_row) { /* labels would shift */
		rfi_fmt(err, errlen, "%s: column %s, row group %u: a page of %u rows where the "
			"page index says %lld", pf->name, t->label_path, g, (unsigned)v.count,
			(long long)(end - c->locs[k].first_row));
		ret = RF_EINDEX;
	}
	rf_pq_strset *strings = t->label_strings ? &r->strings : NULL;
	for (uint32_t i = 0; !ret && i < v.count; i++) {
		int bad = at + i >= (uint64_t)m->num_rows
				  ? 1
				  : label_of(strings, &v, i, &r->labels[at + i]);
		ret = bad > 0 ? not_a_label(t, pf->name, (long long)(at + i), err, errlen) : bad;
	}
	rfi_pq_values_free(&v);
	rfi_pq_page_close(&pg);
	free(bytes);
	return ret;
}

/* Group g's labels into r->labels[its rows in the file]. */
static int read_labels(const rf_pq_table *t, pq_file *pf, pq_ready *r, uint32_t g, char *err,
		       size_t errlen)
{
	const rf_pq_meta *m = r->meta;
	uint32_t leaf = (uint32_t)r->label_leaf;
	pq_chunk c;
	const rf_pq_chunk *lc = &m->groups[g].chunks[leaf];
	char why[384];
	int ret = rfi_pq_file_hold(pf, (uint64_t)lc->start, (uint64_t)lc->compressed_size, why,
				   sizeof(why)); /* remote: the chunk in one request */
	if (ret) {
		rfi_fmt(err, errlen, "%s: row group %u, column %s: %s", pf->name, g, t->label_path,
			why);
		return ret;
	}
	ret = chunk_locate(pf, m, g, leaf, &c, err, errlen);
	if (ret)
		return ret;
	rf_pq_dict d;
	int dict = chunk_dict(pf, m, g, leaf, &c, &d, err, errlen);
	ret = dict < 0 ? dict : 0;
	for (uint32_t k = 0; !ret && k < c.n; k++)
		ret = page_labels(t, pf, r, g, &c, k, dict > 0 ? &d : NULL, err, errlen);
	if (dict > 0)
		rfi_pq_dict_free(&d);
	chunk_free(&c);
	return ret;
}

/* The string labels' classes, once every file is read: their distinct
 * values sorted, each label its value's place among them. */
static int string_classes(builder *b)
{
	rf_pq_table *t = b->t;
	char **names;
	uint32_t *remap, n = b->strings.n;
	if (rfi_pq_strset_classes(&b->strings, &names, &remap))
		return -ENOMEM;
	for (uint64_t i = 0; i < t->samples; i++)
		if (t->labels[i] >= 0)
			t->labels[i] = (int32_t)remap[t->labels[i]];
	free(remap);
	b->idx->classes = names;
	b->idx->nclasses = (int)n;
	return 0;
}

/* The refusal of a column named in cfg.columns that file pf lacks. */
static int no_such_column(const pq_file *pf, const rf_pq_meta *m, const char *what,
			  const char *name, char *err, size_t errlen)
{
	char cols[1024];
	rfi_pq_column_list(m, cols, sizeof(cols));
	rfi_fmt(err, errlen, "%s: no column '%s' (columns: %s=%s); its columns: %s", pf->name,
		name, what, name, cols);
	return RF_ECONFIG;
}

/* The image column: the one cfg.columns names, else found by its look. */
static int pick_image(builder *b, pq_file *pf, const rf_pq_meta *m, char *err, size_t errlen)
{
	if (!b->cols.image)
		return find_image(pf, m, b->raw, &b->t->image_path, err, errlen);
	int leaf = rfi_pq_column_named(m, b->cols.image);
	if (leaf < 0)
		return no_such_column(pf, m, "image", b->cols.image, err, errlen);
	if (!binary_leaf(&m->leaves[leaf])) {
		rfi_fmt(err, errlen, "%s: column %s (columns: image=%s) is %s, not binary "
			"(BYTE_ARRAY): an image column holds encoded bytes", pf->name,
			m->leaves[leaf].path, b->cols.image, rfi_pq_type_name(m->leaves[leaf].type));
		return RF_ECONFIG;
	}
	b->t->image_path = strdup(m->leaves[leaf].path);
	return b->t->image_path ? 0 : -ENOMEM;
}

/* An integer label column's ClassLabel names, from the `huggingface`
 * metadata, into the index's classes. */
static int class_label_names(builder *b, const rf_pq_meta *m, char *err, size_t errlen)
{
	char **names;
	uint32_t n;
	int got = rfi_pq_hf_class_names(m, b->t->label_path, &names, &n, err, errlen);
	if (got < 0)
		return RF_EINDEX;
	if (got > 0 && n > 0 && n <= INT32_MAX) {
		b->idx->classes = names;
		b->idx->nclasses = (int)n;
	} else if (got > 0) {
		rfi_pq_hf_names_free(names, n);
	}
	return 0;
}

/* The first file: its image and label columns, the ClassLabel's names. */
static int first_file(builder *b, pq_file *pf, const rf_pq_meta *m, char *err,
		      size_t errlen)
{
	rf_pq_table *t = b->t;
	int ret = pick_image(b, pf, m, err, errlen);
	if (ret || b->cols.no_label)
		return ret;
	const char *want = b->cols.label ? b->cols.label : LABEL_COLUMN;
	int leaf = rfi_pq_column_named(m, want);
	if (leaf < 0 && b->cols.label)
		return no_such_column(pf, m, "label", want, err, errlen);
	if (leaf < 0)
		return 0; /* no label column: no labels */
	t->label_path = strdup(m->leaves[leaf].path);
	if (!t->label_path)
		return -ENOMEM;
	t->label_strings = m->leaves[leaf].type == RF_PQ_BYTE_ARRAY;
	return t->label_strings ? 0 : class_label_names(b, m, err, errlen);
}

enum { COLUMN_IMAGE, COLUMN_LABEL, COLUMN_FIELD };

/* Can column l be what `role` is (the label: as the first file's)? */
static int column_fits(const rf_pq_table *t, const rf_pq_leaf *l, int role)
{
	if (role == COLUMN_IMAGE)
		return binary_leaf(l);
	if (role == COLUMN_LABEL)
		return t->label_strings ? binary_leaf(l)
					: l->type == RF_PQ_INT32 || l->type == RF_PQ_INT64;
	return 1; /* a field: rfi_pq_column_check says */
}

/* A file's column, as the first file's: found, readable, of its type. */
static int file_column(const rf_pq_table *t, pq_file *pf, const rf_pq_meta *m,
		       const char *path, int role, int32_t *leaf, char *err, size_t errlen)
{
	static const char *const roles[] = { "image", "label", "field" };
	*leaf = rfi_pq_leaf_find(m, path);
	if (*leaf < 0) {
		char cols[1024];
		rfi_pq_column_list(m, cols, sizeof(cols));
		rfi_fmt(err, errlen, "%s: no column %s (the first file's %s column); its columns: %s",
			pf->name, path, roles[role], cols);
		return RF_EINDEX;
	}
	const rf_pq_leaf *l = &m->leaves[*leaf];
	if (!column_fits(t, l, role)) {
		rfi_fmt(err, errlen, "%s: column %s is %s%s, not %s", pf->name, path,
			l->max_rep ? "a list of " : "", rfi_pq_type_name(l->type),
			role == COLUMN_IMAGE ? "binary (BYTE_ARRAY)"
			: t->label_strings ? "a string (BYTE_ARRAY), as the first file's"
					   : "an integer (INT32, INT64) or a string: labels are class "
					     "numbers or names");
		return RF_EINDEX;
	}
	return rfi_pq_column_check(m, (uint32_t)*leaf, err, errlen) ? RF_EINDEX : 0;
}

#if RF_TEST_HOOKS
static uint64_t keep_max = RF_PQ_FIELD_KEEP_MAX;
void rfi_pq_table_set_keep_max(uint64_t max)
{
	keep_max = max;
}
#define KEEP_MAX keep_max
#else
#define KEEP_MAX RF_PQ_FIELD_KEEP_MAX
#endif

#if RF_TEST_HOOKS
static void (*after_footer)(const char *path);
void rfi_pq_table_set_test_hook(void (*fn)(const char *path))
{
	after_footer = fn;
}
#define AFTER_FOOTER(pf) (after_footer ? after_footer((pf)->name) : (void)0)
#else
#define AFTER_FOOTER(pf) ((void)0)
#endif

/* File f's columns (the first file's found), its rows' claim checked, its
 * labels' room. */
static int file_columns(builder *b, pq_file *pf, pq_ready *r, char *err, size_t errlen)
{
	rf_pq_table *t = b->t;
	const rf_pq_meta *m = r->meta;
	int ret = pf->f == 0 ? first_file(b, pf, m, err, errlen) : 0;
	int32_t leaf = -1;
	r->label_leaf = -1;
	if (!ret)
		ret = file_column(t, pf, m, t->image_path, COLUMN_IMAGE, &leaf, err, errlen);
	if (!ret && t->label_path)
		ret = file_column(t, pf, m, t->label_path, COLUMN_LABEL, &r->label_leaf, err, errlen);
	if (!ret && (uint64_t)m->num_rows > pf->size * ROWS_PER_BYTE) {
		rfi_fmt(err, errlen, "%s: its footer claims %lld rows in %llu bytes", pf->name,
			(long long)m->num_rows, (unsigned long long)pf->size);
		ret = RF_EINDEX;
	}
	r->leaf = (uint32_t)leaf;
	r->groups = ret ? NULL : calloc(RF_MAX(m->ngroups, 1u), sizeof(*r->groups));
	r->ngroups = r->groups ? m->ngroups : 0;
	if (!ret && t->label_path)
		r->labels = malloc(RF_MAX((size_t)m->num_rows, 1) * sizeof(*r->labels));
	if (!ret && (!r->groups || (t->label_path && !r->labels)))
		ret = -ENOMEM;
	for (uint64_t i = 0; !ret && r->labels && i < (uint64_t)m->num_rows; i++)
		r->labels[i] = -1; /* rows no label page covers: none */
	return ret;
}

/* File f read: footer, columns, pages, dictionaries, labels (on any
 * thread: nothing shared is written but the first file's columns, read
 * before any other file is). */
static int read_file(builder *b, uint32_t f, pq_ready *r, char *err, size_t errlen)
{
	pq_file pf;
	int ret = rfi_pq_file_open(b->idx, f, &pf, err, errlen);
	if (!ret)
		ret = read_footer(&pf, &r->meta, err, errlen);
	if (!ret)
		AFTER_FOOTER(&pf);
	if (!ret)
		ret = file_columns(b, &pf, r, err, errlen);
	const rf_pq_meta *m = r->meta;
	for (uint32_t g = 0; !ret && g < m->ngroups; g++) {
		pq_group *pg = &r->groups[g];
		ret = chunk_locate(&pf, m, g, r->leaf, &pg->c, err, errlen);
		int dict = ret ? 0 : chunk_dict(&pf, m, g, r->leaf, &pg->c, &pg->d, err, errlen);
		pg->has_dict = dict > 0;
		ret = ret ? ret : dict < 0 ? dict : 0;
		if (!ret && r->label_leaf >= 0)
			ret = read_labels(b->t, &pf, r, g, err, errlen);
	}
	r->requests = pf.requests;
	r->stamp = (rf_pq_stamp){ .size = pf.size, .mtime_sec = pf.mtime_sec,
				  .mtime_nsec = pf.mtime_nsec, .ino = pf.ino };
	rfi_pq_file_close(&pf);
	return ret;
}

static void ready_free(pq_ready *r)
{
	for (uint32_t g = 0; r->groups && g < r->ngroups; g++) {
		chunk_free(&r->groups[g].c);
		if (r->groups[g].has_dict)
			rfi_pq_dict_free(&r->groups[g].d);
	}
	free(r->groups);
	free(r->labels);
	rfi_pq_strset_free(&r->strings);
	free(r->err);
	rfi_pq_meta_free(r->meta); /* NULL once the table took it */
	memset(r, 0, sizeof(*r));
}


/* Files read at once, each on a helper thread: remote ones wait on the
 * network (a round trip a request), local ones on the disk. */
#define PARALLEL_REMOTE 16
#define PARALLEL_LOCAL 4

/* The files after the first, read by helper threads: each takes the next
 * file not taken; none is taken once one failed (those before it were all
 * taken, so the first failure in the files' order is always found). */
typedef struct pool {
	builder *b;
	pq_ready *ready;
	uint32_t next, n;
	int failed;
	const volatile int *cancel; /* the creating thread's flag (util/cancel.h) */
} pool;

static void read_one(builder *b, uint32_t f, pq_ready *r)
{
	char err[1024] = "";
	r->ret = read_file(b, f, r, err, sizeof(err));
	if (r->ret == -ENOMEM && !err[0])
		rfi_fmt(err, sizeof(err), "Parquet set-up: out of memory");
	if (r->ret)
		r->err = strdup(err);
}

static void *pool_worker(void *arg)
{
	pool *p = arg;
	rfi_cancel_begin(p->cancel);
	for (;;) {
		if (__atomic_load_n(&p->failed, __ATOMIC_ACQUIRE))
			break;
		uint32_t f = __atomic_fetch_add(&p->next, 1, __ATOMIC_ACQ_REL);
		if (f >= p->n)
			break;
		read_one(p->b, f, &p->ready[f]);
		if (p->ready[f].ret)
			__atomic_store_n(&p->failed, 1, __ATOMIC_RELEASE);
	}
	rfi_cancel_end();
	return NULL;
}

/* Files [1, n) read, width at once (the calling thread one of them). */
static void read_rest(builder *b, pq_ready *ready, uint32_t n)
{
	pool p = { .b = b, .ready = ready, .next = 1, .n = n, .cancel = rfi_cancel_flag() };
	uint32_t width = b->idx->urls ? PARALLEL_REMOTE : PARALLEL_LOCAL;
	width = RF_MIN(width, n > 1 ? n - 1 : 0);
	pthread_t th[PARALLEL_REMOTE];
	uint32_t started = 0;
	while (started + 1 < width && !pthread_create(&th[started], NULL, pool_worker, &p))
		started++;
	pool_worker(&p); /* this thread too; its cancel flag then ends: set again */
	rfi_cancel_begin(p.cancel);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

/* File f's string labels: its ids (its values in the order it holds them)
 * made the builder's, whose values are every file's. */
static int merge_strings(builder *b, uint32_t f, pq_ready *r, char *err, size_t errlen)
{
	uint32_t *map = malloc(RF_MAX(r->strings.n, 1u) * sizeof(*map));
	if (!map)
		return -ENOMEM;
	int ret = 0;
	for (uint32_t i = 0; !ret && i < r->strings.n; i++)
		ret = rfi_pq_strset_add(&b->strings, (const uint8_t *)r->strings.names[i],
					r->strings.lens[i], &map[i]);
	for (uint64_t i = 0; !ret && i < (uint64_t)r->meta->num_rows; i++)
		if (r->labels[i] >= 0)
			r->labels[i] = (int32_t)map[r->labels[i]];
	free(map);
	if (ret > 0) { /* the files together pass the bound */
		char name[PATH_MAX];
		rfi_index_shard_shown(b->idx, f, name, sizeof(name));
		ret = not_a_label(b->t, name, 0, err, errlen);
	}
	return ret;
}

/* File f's reading into the table, in the files' order. */
static int add_ready(builder *b, uint32_t f, pq_ready *r, char *err, size_t errlen)
{
	rf_pq_table *t = b->t;
	int ret = r->labels && t->label_strings ? merge_strings(b, f, r, err, errlen) : 0;
	if (ret)
		return ret;
	t->metas[f] = r->meta;
	t->leaf[f] = r->leaf;
	t->stamps[f] = r->stamp;
	const rf_pq_meta *m = r->meta;
	r->meta = NULL;
	if (r->labels)
		ret = grow((void **)&t->labels, &b->labels_cap, t->samples + (uint64_t)m->num_rows,
			   sizeof(*t->labels));
	if (!ret && r->labels)
		memcpy(t->labels + t->samples, r->labels, (size_t)m->num_rows * sizeof(*r->labels));
	for (uint32_t g = 0; !ret && g < m->ngroups; g++) {
		ret = add_image_pages(b, f, g, &r->groups[g], err, errlen);
		t->samples += (uint64_t)m->groups[g].num_rows;
	}
	t->setup_requests += r->requests;
	return ret;
}

static int build_files(builder *b, char *err, size_t errlen)
{
	rf_pq_table *t = b->t;
	uint32_t n = t->nfiles;
	pq_ready *ready = calloc(RF_MAX(n, 1u), sizeof(*ready));
	if (!ready)
		return -ENOMEM;
	int ret = 0;
	if (n) { /* the first file alone: its columns are every file's */
		read_one(b, 0, &ready[0]);
		if (!ready[0].ret)
			read_rest(b, ready, n);
	}
	for (uint32_t f = 0; !ret && f < n; f++) {
		ret = ready[f].ret;
		if (ret)
			rfi_fmt(err, errlen, "%s", ready[f].err ? ready[f].err : "out of memory");
		else
			ret = add_ready(b, f, &ready[f], err, errlen);
	}
	for (uint32_t f = 0; f < n; f++)
		ready_free(&ready[f]);
	free(ready);
	return ret;
}

int rfi_pq_table_build(rf_index *idx, int raw, const char *columns, rf_pq_table **out,
		       char *err, size_t errlen)
{
	*out = NULL;
	rf_pq_table *t = calloc(1, sizeof(*t));
	builder b = { .idx = idx, .t = t, .raw = raw };
	int ret = t ? rfi_pq_columns_parse(columns, &b.cols, err, errlen) : -ENOMEM;
	if (!ret && idx->nshards > UINT32_MAX / 2)
		ret = -E2BIG;
	if (!ret) {
		t->columns = strdup(columns ? columns : ""); /* the index cache compares it */
		t->nfiles = (uint32_t)idx->nshards;
		t->metas = calloc(t->nfiles ? t->nfiles : 1, sizeof(*t->metas));
		t->leaf = calloc(t->nfiles ? t->nfiles : 1, sizeof(*t->leaf));
		t->stamps = calloc(t->nfiles ? t->nfiles : 1, sizeof(*t->stamps));
		ret = t->columns && t->metas && t->leaf && t->stamps ? 0 : -ENOMEM;
	}
	if (!ret)
		ret = build_files(&b, err, errlen);
	if (!ret && t->label_strings)
		ret = string_classes(&b);
	rfi_pq_columns_free(&b.cols);
	rfi_pq_strset_free(&b.strings);
	if (ret) {
		if (ret == -ENOMEM)
			rfi_fmt(err, errlen, "Parquet set-up: out of memory");
		rfi_pq_table_free(t);
		return ret;
	}
	t->opened = rfi_pq_opened_new(); /* NULL: rows open their own pages */
	*out = t;
	return 0;
}


/* Appends n bytes to fc's kept values (within the bound, else 1). */
static int kept_add(rf_pq_table *t, rf_pq_tfield *fc, const uint8_t *p, size_t n)
{
	if (t->kept_bytes + n > KEEP_MAX)
		return 1;
	if (fc->kept_len + n > fc->kept_cap) {
		uint64_t cap = fc->kept_cap ? fc->kept_cap : 4096;
		while (cap < fc->kept_len + n)
			cap *= 2;
		uint8_t *k = realloc(fc->kept, cap);
		if (!k)
			return -ENOMEM;
		fc->kept = k;
		fc->kept_cap = cap;
	}
	if (n) /* an empty value, maybe before anything is kept (kept NULL) */
		memcpy(fc->kept + fc->kept_len, p, n);
	fc->kept_len += n;
	t->kept_bytes += n;
	return 0;
}

/* Page k of fc (file f, open as pf) read, its rows' values kept. */
static int keep_page(rf_pq_table *t, pq_file *pf, rf_pq_tfield *fc, uint64_t k, char *err,
		     size_t errlen)
{
	const rf_pq_tpage *p = &fc->pages[k];
	const rf_pq_meta *m = t->metas[p->file];
	uint32_t leaf = (uint32_t)fc->leaf[p->file];
	char what[320];
	rfi_fmt(what, sizeof(what), "row group %u, column %s: a page", p->group, fc->path);
	uint8_t *bytes;
	int ret = file_bytes(pf, p->offset, p->size, what, &bytes, err, errlen);
	if (ret)
		return ret;
	rf_pq_page pg;
	rf_pq_values v = { 0 };
	int opened = rfi_pq_page_open(m, p->group, leaf, bytes, p->size, &pg, err, errlen);
	if (opened == 1) {
		rfi_pq_page_close(&pg);
		rfi_fmt(err, errlen, "%s: %s is not a data page", pf->name, what);
	} else if (!opened && pg.rows < p->rows) {
		rfi_fmt(err, errlen, "%s: %s holds %u rows, not %u", pf->name, what, pg.rows, p->rows);
	}
	ret = opened || pg.rows < p->rows ? RF_EINDEX : 0;
	if (!ret && rfi_pq_page_rows(&pg, p->dict == RF_PQ_NO_DICT ? NULL : &t->dicts[p->dict], 0,
				     p->rows, &v, err, errlen))
		ret = RF_EINDEX;
	for (uint32_t i = 0; !ret && i < v.count; i++) {
		char text[32];
		const uint8_t *val;
		size_t n;
		rfi_pq_value_bytes((rf_pq_text)fc->text, v.ptr ? v.ptr[i] : NULL, v.len ? v.len[i] : 0,
				   v.num ? v.num[i] : 0, text, &val, &n);
		fc->present[p->first + i] = v.present[i];
		ret = v.present[i] ? kept_add(t, fc, val, n) : 0;
		fc->off[p->first + i + 1] = fc->kept_len;
	}
	if (!opened)
		rfi_pq_page_close(&pg);
	rfi_pq_values_free(&v);
	free(bytes);
	return ret;
}

static void kept_free(rf_pq_table *t, rf_pq_tfield *fc)
{
	t->kept_bytes -= fc->kept_len;
	free(fc->kept);
	free(fc->off);
	free(fc->present);
	fc->kept = NULL;
	fc->off = NULL;
	fc->present = NULL;
	fc->kept_len = fc->kept_cap = 0;
}

/* Shall fc's values be kept (read now)? When they fit what is left of
 * the bound: their pages' uncompressed bytes (numbers as text: up to 3x). */
static int kept_start(rf_pq_table *t, rf_pq_tfield *fc)
{
	uint64_t need = 0;
	for (uint32_t f = 0; f < t->nfiles; f++) {
		const rf_pq_meta *m = t->metas[f];
		int32_t leaf = rfi_pq_leaf_find(m, fc->path);
		for (uint32_t g = 0; leaf >= 0 && g < m->ngroups; g++)
			need += (uint64_t)m->groups[g].chunks[leaf].uncompressed_size;
	}
	if (fc->text != RF_PQ_TEXT_BYTES)
		need *= 3;
	if (t->kept_bytes > KEEP_MAX || need > KEEP_MAX - t->kept_bytes)
		return 0;
	fc->off = malloc((t->samples + 1) * sizeof(*fc->off));
	fc->present = calloc(t->samples ? t->samples : 1, 1);
	if (!fc->off || !fc->present) {
		kept_free(t, fc);
		return 0; /* read per sample instead */
	}
	for (uint64_t i = 0; i <= t->samples; i++)
		fc->off[i] = UINT64_MAX; /* rows no page gave: none (kept_end) */
	fc->off[0] = 0;
	return 1;
}

/* The rows no page gave (a file without the column): empty, null; the
 * values' room trimmed to them (kept for the run). */
static void kept_end(rf_pq_tfield *fc, uint64_t samples)
{
	for (uint64_t i = 0; fc->off && i < samples; i++)
		if (fc->off[i + 1] == UINT64_MAX)
			fc->off[i + 1] = fc->off[i];
	uint8_t *k = fc->kept_len ? realloc(fc->kept, fc->kept_len) : NULL;
	if (k) {
		fc->kept = k;
		fc->kept_cap = fc->kept_len;
	}
}

/* A kept field's pages and their dictionaries, no longer needed (its
 * values are kept): freed. */
static void kept_drop_pages(rf_pq_table *t, rf_pq_tfield *fc)
{
	for (uint64_t k = 0; k < fc->npages; k++) {
		if (fc->pages[k].dict == RF_PQ_NO_DICT)
			continue;
		rf_pq_dict *d = &t->dicts[fc->pages[k].dict];
		if (!d->data && !d->ptr && !d->num)
			continue; /* freed with an earlier page of its chunk */
		t->dict_bytes -= d->data_len + (size_t)d->count * (sizeof(*d->ptr) + sizeof(*d->len));
		rfi_pq_dict_free(d);
	}
	free(fc->pages);
	fc->pages = NULL;
	fc->npages = fc->pages_cap = 0;
	fc->largest = 0;
}

int rfi_pq_table_kept(const rf_pq_tfield *fc, uint64_t i, const uint8_t **p, uint32_t *n)
{
	*p = fc->kept ? fc->kept + fc->off[i] : (const uint8_t *)"";
	*n = (uint32_t)(fc->off[i + 1] - fc->off[i]);
	return fc->present[i];
}

/* File f's pages of field column fc (its samples start at first): its leaf
 * found (or, optional, -1), of the first file's type, readable. */
static int field_file(rf_pq_table *t, rf_index *idx, rf_pq_tfield *fc, uint32_t f,
		      uint64_t first, int optional, char *err, size_t errlen)
{
	const rf_pq_meta *m = t->metas[f];
	int32_t leaf = rfi_pq_leaf_find(m, fc->path);
	fc->leaf[f] = leaf;
	if (leaf < 0 && optional)
		return 0;
	pq_file pf;
	int ret = rfi_pq_file_open(idx, f, &pf, err, errlen); /* local or remote */
	if (ret)
		return ret;
	if (leaf < 0 || m->leaves[leaf].type != fc->type) {
		char cols[1024];
		rfi_pq_column_list(m, cols, sizeof(cols));
		rfi_fmt(err, errlen, "%s: %s column %s (a field: the first file's is %s); its columns: "
			"%s", pf.name, leaf < 0 ? "no" : "another type of", fc->path,
			rfi_pq_type_name(fc->type), cols);
		ret = RF_ECONFIG;
	} else if (rfi_pq_column_check(m, (uint32_t)leaf, err, errlen)) {
		ret = RF_EINDEX;
	}
	uint64_t from = fc->npages;
	for (uint32_t g = 0; !ret && g < m->ngroups; g++)
		ret = add_field_pages(t, &pf, f, g, (uint32_t)leaf,
				      first + (uint64_t)m->groups[g].first_row, fc, err, errlen);
	for (uint64_t k = from; !ret && fc->off && k < fc->npages; k++) {
		ret = keep_page(t, &pf, fc, k, err, errlen);
		if (ret == 1) { /* past the bound after all: read per sample */
			kept_free(t, fc);
			ret = 0;
		}
	}
	rfi_pq_file_close(&pf);
	return ret;
}

int rfi_pq_table_add_field(rf_pq_table *t, rf_index *idx, const char *name,
			   int optional, int *id, char *err, size_t errlen)
{
	*id = -1;
	const rf_pq_meta *m = t->metas[0];
	int leaf = rfi_pq_column_named(m, name);
	if (leaf < 0 && optional)
		return 0;
	if (leaf < 0 || t->nfields == RF_PQ_FIELDS_MAX) {
		char file[PATH_MAX], cols[1024];
		rfi_index_shard_shown(idx, 0, file, sizeof(file));
		rfi_pq_column_list(m, cols, sizeof(cols));
		rfi_fmt(err, errlen, "config: fields: %s has no column '%s' (its columns: %s); name it "
			"'%s?' if it is optional", file, name, cols, name);
		return RF_ECONFIG;
	}
	rf_pq_tfield *fc = &t->fields[t->nfields];
	memset(fc, 0, sizeof(*fc));
	fc->path = strdup(m->leaves[leaf].path);
	fc->type = m->leaves[leaf].type;
	fc->text = (int32_t)rfi_pq_text_of(m, (uint32_t)leaf);
	fc->leaf = calloc(t->nfiles, sizeof(*fc->leaf));
	int ret = fc->path && fc->leaf ? 0 : -ENOMEM;
	if (!ret)
		kept_start(t, fc);
	uint64_t first = 0;
	for (uint32_t f = 0; !ret && f < t->nfiles; f++) {
		ret = field_file(t, idx, fc, f, first, optional, err, errlen);
		first += (uint64_t)t->metas[f]->num_rows;
	}
	if (ret) {
		if (ret == -ENOMEM)
			rfi_fmt(err, errlen, "Parquet set-up: out of memory");
		free(fc->path);
		free(fc->leaf);
		free(fc->pages);
		kept_free(t, fc);
		memset(fc, 0, sizeof(*fc));
		return ret;
	}
	kept_end(fc, t->samples);
	if (fc->off)
		kept_drop_pages(t, fc);
	for (uint64_t k = 0; k < fc->npages; k++)
		fc->largest = fc->pages[k].size > fc->largest ? fc->pages[k].size : fc->largest;
	*id = (int)t->nfields++;
	return 0;
}

void rfi_pq_table_free(rf_pq_table *t)
{
	if (!t)
		return;
	for (uint32_t f = 0; t->metas && f < t->nfiles; f++)
		rfi_pq_meta_free(t->metas[f]);
	for (uint32_t i = 0; i < t->ndicts; i++)
		rfi_pq_dict_free(&t->dicts[i]);
	free(t->metas);
	free(t->leaf);
	free(t->stamps);
	free(t->dlocs);
	free(t->columns);
	free(t->image_path);
	free(t->label_path);
	free(t->pages);
	free(t->dicts);
	free(t->labels);
	rfi_pq_opened_free(t->opened);
	for (uint32_t k = 0; k < t->nfields; k++) {
		free(t->fields[k].path);
		free(t->fields[k].leaf);
		free(t->fields[k].pages);
		kept_free(t, &t->fields[k]);
	}
	free(t);
}

size_t rfi_pq_table_memory(const rf_pq_table *t)
{
	size_t n = sizeof(*t) + t->dict_bytes + t->npages * sizeof(*t->pages) +
		   t->nfiles * (sizeof(*t->metas) + sizeof(*t->leaf) + sizeof(*t->stamps)) +
		   t->ndicts * sizeof(*t->dlocs);
	for (uint32_t f = 0; f < t->nfiles; f++)
		n += t->metas[f] ? sizeof(rf_pq_meta) + t->metas[f]->footer_len : 0;
	for (uint32_t k = 0; k < t->nfields; k++)
		n += t->fields[k].npages * sizeof(rf_pq_tpage) + t->nfiles * sizeof(int32_t) +
		     (t->fields[k].off ? t->samples * (sizeof(uint64_t) + 1) : 0) +
		     t->fields[k].kept_cap;
	n += t->opened ? rfi_pq_opened_bytes(t->opened) : 0;
	return n + (t->labels ? t->samples * sizeof(*t->labels) : 0);
}

int rfi_pq_table_dict_read(rf_pq_table *t, rf_pq_file *pf, uint32_t id, char *err,
			   size_t errlen)
{
	const rf_pq_dloc *l = &t->dlocs[id];
	const rf_pq_meta *m = t->metas[l->file];
	uint8_t *page;
	char what[320];
	rfi_fmt(what, sizeof(what), "row group %u, column %s: a dictionary page", l->group,
		m->leaves[t->leaf[l->file]].path);
	int ret = file_bytes(pf, l->offset, l->bytes, what, &page, err, errlen);
	if (ret)
		return ret;
	ret = rfi_pq_dict_load(m, l->group, t->leaf[l->file], page, (size_t)l->bytes, &t->dicts[id],
			       err, errlen) ? RF_EINDEX : 0;
	free(page);
	if (!ret)
		t->dict_bytes += t->dicts[id].data_len +
				 (size_t)t->dicts[id].count * (sizeof(*t->dicts[id].ptr) +
								sizeof(*t->dicts[id].len));
	return ret;
}


/* The last of pages[n] whose first <= i. */
static uint64_t page_at(const rf_pq_tpage *pages, uint64_t n, uint64_t i)
{
	uint64_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (pages[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

const rf_pq_tpage *rfi_pq_table_field_page(const rf_pq_table *t, const rf_pq_tfield *fc,
					   uint64_t i)
{
	if (!fc->npages)
		return NULL;
	const rf_pq_tpage *p = &fc->pages[page_at(fc->pages, fc->npages, i)];
	/* a file without the column has no pages: the one found is another's */
	return p->first <= i && i - p->first < p->rows &&
			       p->file == rfi_pq_table_page(t, i)->file
		       ? p
		       : NULL;
}

const rf_pq_tpage *rfi_pq_table_page(const rf_pq_table *t, uint64_t i)
{
	uint64_t lo = 0, hi = t->npages; /* the last page whose first <= i */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (t->pages[mid].first <= i)
			lo = mid;
		else
			hi = mid;
	}
	return &t->pages[lo];
}
