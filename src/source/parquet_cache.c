/* parquet_cache.c - the Parquet table in the index cache (parquet_table.h:
 * rfi_pq_table_save, rfi_pq_table_restore): what set-up found, so that a
 * later create reads no footer and scans no page header. The kind's part
 * of the cache (rf_index.kind_blob, index_file.c around it, its checksum
 * over it):
 *
 *   "RFPQTAB" + u8 version, u32 nfiles, u32 ndicts, u64 npages, u64 samples,
 *   u32 has_labels, u32 largest_page, u32 raw, strings (u32 length + bytes)
 *   image_path, label_path ("" none) and (version 2) columns (cfg.columns it
 *   was built for, "" none); per file its stamp (u64 size,
 *   i64 mtime_sec, i64 mtime_nsec, u64 ino), u32 leaf, u32 footer_len and
 *   the footer's bytes; npages rf_pq_tpage, ndicts rf_pq_dloc; samples i32
 *   labels when has_labels. Native byte order, as the cache is.
 *
 * At restore each file's stamp is checked (a local file's size, mtime and
 * inode: a file rewritten in place changes its mtime, though its folder's
 * does not) and the footers parsed again from their bytes (the parser's
 * checks hold for a crafted cache as for a file); every page, dictionary
 * place and label is checked against them before the table is used; the
 * dictionaries' pages (decoded values are not kept) are read again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "source/parquet_file.h"
#include "source/parquet_opened.h"
#include "source/parquet_table.h"
#include "util/util.h"

#define BLOB_MAGIC "RFPQTAB\002"

typedef struct out {
	uint8_t *p;
	size_t n, cap;
	int ok;
} out;

static void put(out *o, const void *p, size_t n)
{
	if (!o->ok)
		return;
	if (o->n + n > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		while (cap < o->n + n)
			cap *= 2;
		uint8_t *q = realloc(o->p, cap);
		if (!q) {
			o->ok = 0;
			return;
		}
		o->p = q;
		o->cap = cap;
	}
	if (n)
		memcpy(o->p + o->n, p, n);
	o->n += n;
}

static void put_u32(out *o, uint32_t v)
{
	put(o, &v, 4);
}

static void put_u64(out *o, uint64_t v)
{
	put(o, &v, 8);
}

static void put_str(out *o, const char *s)
{
	put_u32(o, s ? (uint32_t)strlen(s) : 0);
	put(o, s, s ? strlen(s) : 0);
}

int rfi_pq_table_save(const rf_pq_table *t, rf_index *idx)
{
	out o = { .ok = 1 };
	put(&o, BLOB_MAGIC, 8);
	put_u32(&o, t->nfiles);
	put_u32(&o, t->ndicts);
	put_u64(&o, t->npages);
	put_u64(&o, t->samples);
	put_u32(&o, t->labels != NULL);
	put_u32(&o, t->largest_page);
	put_u32(&o, (idx->any_name & RF_INDEX_RAW) != 0);
	put_str(&o, t->image_path);
	put_str(&o, t->label_path);
	put_str(&o, t->columns);
	for (uint32_t f = 0; f < t->nfiles; f++) {
		const rf_pq_stamp *s = &t->stamps[f];
		put_u64(&o, s->size);
		put(&o, &s->mtime_sec, 8);
		put(&o, &s->mtime_nsec, 8);
		put_u64(&o, s->ino);
		put_u32(&o, t->leaf[f]);
		put_u32(&o, (uint32_t)t->metas[f]->footer_len);
		put(&o, t->metas[f]->footer, t->metas[f]->footer_len);
	}
	put(&o, t->pages, t->npages * sizeof(*t->pages));
	put(&o, t->dlocs, t->ndicts * sizeof(*t->dlocs));
	if (t->labels)
		put(&o, t->labels, t->samples * sizeof(*t->labels));
	/* each file's size beside its ETag: a remote source adopting the
	 * object checks them (rfi_index_cache_adopt) */
	if (!idx->shard_sizes && t->nfiles &&
	    (idx->shard_sizes = calloc(t->nfiles, sizeof(uint64_t))))
		for (uint32_t f = 0; f < t->nfiles; f++)
			idx->shard_sizes[f] = t->stamps[f].size;
	if (!o.ok || (t->nfiles && !idx->shard_sizes)) {
		free(o.p);
		return -ENOMEM;
	}
	free(idx->kind_blob);
	idx->kind_blob = o.p;
	idx->kind_blob_len = o.n;
	return 0;
}

typedef struct in {
	const uint8_t *p, *end;
	int ok;
} in;

static const uint8_t *get(in *r, uint64_t n)
{
	if (!r->ok || (uint64_t)(r->end - r->p) < n) {
		r->ok = 0;
		return NULL;
	}
	const uint8_t *b = r->p;
	r->p += n;
	return b;
}

static uint64_t get_u(in *r, size_t n)
{
	uint64_t v = 0;
	const uint8_t *p = get(r, n);
	if (p)
		memcpy(&v, p, n);
	return v;
}

/* A string: NULL for "" (none) and for a bad one (r->ok then 0). */
static char *get_str(in *r)
{
	uint32_t n = (uint32_t)get_u(r, 4);
	const uint8_t *s = get(r, n);
	return s && n ? strndup((const char *)s, n) : NULL;
}

/* Has local file f changed since the stamp? */
static int file_changed(const rf_index *idx, uint32_t f, const rf_pq_stamp *s)
{
	if (idx->urls) /* its ETag, asked for by every read (If-Match) */
		return 0;
	struct stat st;
	return fstatat(idx->root_fd, idx->shards[f], &st, 0) || (uint64_t)st.st_size != s->size ||
	       st.st_mtim.tv_sec != s->mtime_sec || st.st_mtim.tv_nsec != s->mtime_nsec ||
	       (uint64_t)st.st_ino != s->ino;
}

/* Per file: stamp checked, footer parsed. @return : 0, 1 (changed or bad). */
static int read_files(in *r, const rf_index *idx, rf_pq_table *t, char *why, size_t len)
{
	for (uint32_t f = 0; f < t->nfiles; f++) {
		rf_pq_stamp *s = &t->stamps[f];
		s->size = get_u(r, 8);
		s->mtime_sec = (int64_t)get_u(r, 8);
		s->mtime_nsec = (int64_t)get_u(r, 8);
		s->ino = get_u(r, 8);
		t->leaf[f] = (uint32_t)get_u(r, 4);
		uint32_t flen = (uint32_t)get_u(r, 4);
		const uint8_t *footer = get(r, flen);
		char name[PATH_MAX];
		rfi_index_shard_shown(idx, f, name, sizeof(name));
		if (!footer) {
			rfi_fmt(why, len, "its Parquet table is of another build or damaged");
			return 1;
		}
		if (file_changed(idx, f, s)) {
			rfi_fmt(why, len, "'%s' changed since it was written", name);
			return 1;
		}
		if (rfi_pq_meta_parse(name, footer, flen, s->size, &t->metas[f], why, len) ||
		    t->leaf[f] >= t->metas[f]->nleaves)
			return 1;
	}
	return 0;
}

/* Every page within its file and group, the pages tiling the samples;
 * every dictionary place within its file; labels -1 or more. */
static int table_valid(const rf_pq_table *t)
{
	uint64_t next = 0;
	uint32_t largest = 0;
	for (uint64_t k = 0; k < t->npages; k++) {
		const rf_pq_tpage *p = &t->pages[k];
		if (p->file >= t->nfiles || p->first != next || !p->rows)
			return 0;
		const rf_pq_meta *m = t->metas[p->file];
		if (p->group >= m->ngroups || p->offset > m->file_size ||
		    p->size > m->file_size - p->offset || p->row >= (uint64_t)m->num_rows ||
		    p->rows > (uint64_t)m->num_rows - p->row ||
		    (p->dict != RF_PQ_NO_DICT && p->dict >= t->ndicts))
			return 0;
		next += p->rows;
		largest = RF_MAX(largest, p->size);
	}
	if (next != t->samples || largest != t->largest_page)
		return 0;
	for (uint32_t i = 0; i < t->ndicts; i++) {
		const rf_pq_dloc *d = &t->dlocs[i];
		if (d->file >= t->nfiles || d->group >= t->metas[d->file]->ngroups ||
		    d->offset > t->metas[d->file]->file_size ||
		    d->bytes > t->metas[d->file]->file_size - d->offset ||
		    (i && d->file < t->dlocs[i - 1].file))
			return 0;
	}
	for (uint64_t i = 0; t->labels && i < t->samples; i++)
		if (t->labels[i] < -1)
			return 0;
	return 1;
}

/* The arrays, copied out of the blob (sized by what it holds); t->ndicts
 * set once its arrays are (the table frees that many). */
static int read_arrays(in *r, rf_pq_table *t, uint32_t ndicts, int has_labels)
{
	uint64_t pb = t->npages * sizeof(*t->pages), db = (uint64_t)ndicts * sizeof(*t->dlocs);
	uint64_t lb = has_labels ? t->samples * sizeof(*t->labels) : 0;
	if (t->npages > (uint64_t)(r->end - r->p) / sizeof(*t->pages) ||
	    t->samples > (uint64_t)(r->end - r->p) || pb + db + lb != (uint64_t)(r->end - r->p))
		return 1;
	t->pages = malloc(pb ? pb : 1);
	t->dlocs = malloc(db ? db : 1);
	t->dicts = calloc(ndicts ? ndicts : 1, sizeof(*t->dicts));
	t->labels = has_labels ? malloc(lb ? lb : 1) : NULL;
	if (!t->pages || !t->dlocs || !t->dicts || (has_labels && !t->labels))
		return -ENOMEM;
	t->ndicts = ndicts;
	memcpy(t->pages, get(r, pb), pb);
	memcpy(t->dlocs, get(r, db), db);
	if (has_labels)
		memcpy(t->labels, get(r, lb), lb);
	return 0;
}

/* The dictionaries' pages read again, each file opened once. */
static int read_dicts(rf_index *idx, rf_pq_table *t, char *why, size_t len)
{
	uint32_t ndicts = t->ndicts;
	t->ndicts = 0; /* those loaded, as the table frees them */
	int ret = 0;
	for (uint32_t i = 0; !ret && i < ndicts;) {
		rf_pq_file pf;
		uint32_t f = t->dlocs[i].file;
		ret = rfi_pq_file_open(idx, f, &pf, why, len);
		if (!ret && pf.size != t->stamps[f].size) {
			rfi_fmt(why, len, "'%s' changed since it was written", pf.name);
			ret = 1;
		}
		for (; !ret && i < ndicts && t->dlocs[i].file == f; i++) {
			ret = rfi_pq_table_dict_read(t, &pf, i, why, len);
			t->ndicts += !ret;
		}
		rfi_pq_file_close(&pf);
	}
	return ret;
}

/* Was t built for other columns than cfg.columns (NULL, "": none)? Then
 * why says so: a table of other image or label columns is built again. */
static int other_columns(const rf_pq_table *t, const char *columns, char *why, size_t len)
{
	const char *was = t->columns ? t->columns : "", *now = columns ? columns : "";
	if (!strcmp(was, now))
		return 0;
	rfi_fmt(why, len, "its Parquet table is of other columns ('%s', now '%s')", was, now);
	return 1;
}

int rfi_pq_table_restore(rf_index *idx, int raw, const char *columns, rf_pq_table **outp,
			 char *why, size_t len)
{
	*outp = NULL;
	in r = { idx->kind_blob, idx->kind_blob + idx->kind_blob_len, 1 };
	const uint8_t *magic = get(&r, 8);
	rf_pq_table *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nfiles = (uint32_t)get_u(&r, 4);
	uint32_t ndicts = (uint32_t)get_u(&r, 4);
	t->npages = get_u(&r, 8);
	t->samples = get_u(&r, 8);
	uint32_t has_labels = (uint32_t)get_u(&r, 4);
	t->largest_page = (uint32_t)get_u(&r, 4);
	uint32_t was_raw = (uint32_t)get_u(&r, 4);
	t->image_path = get_str(&r);
	t->label_path = get_str(&r);
	t->columns = get_str(&r);
	int ret = 1;
	rfi_fmt(why, len, "its Parquet table is of another build or damaged");
	if (!magic || memcmp(magic, BLOB_MAGIC, 8) || !r.ok || t->nfiles != idx->nshards ||
	    was_raw != (raw != 0) || !t->image_path || has_labels > 1 ||
	    (has_labels != 0) != (t->label_path != NULL) ||
	    ndicts > (uint64_t)(r.end - r.p) / sizeof(rf_pq_dloc))
		goto fail;
	if (other_columns(t, columns, why, len))
		goto fail;
	t->metas = calloc(RF_MAX(t->nfiles, 1u), sizeof(*t->metas));
	t->leaf = calloc(RF_MAX(t->nfiles, 1u), sizeof(*t->leaf));
	t->stamps = calloc(RF_MAX(t->nfiles, 1u), sizeof(*t->stamps));
	ret = -ENOMEM;
	if (!t->metas || !t->leaf || !t->stamps)
		goto fail;
	ret = read_files(&r, idx, t, why, len);
	if (!ret) {
		ret = read_arrays(&r, t, ndicts, (int)has_labels);
		if (!ret && !table_valid(t))
			ret = 1;
		if (ret == 1)
			rfi_fmt(why, len, "its Parquet table is of another build or damaged");
	}
	if (!ret)
		ret = read_dicts(idx, t, why, len);
	if (ret)
		goto fail;
	t->opened = rfi_pq_opened_new(); /* NULL: rows open their own pages */
	*outp = t;
	return 0;
fail:
	rfi_pq_table_free(t);
	return ret < 0 && ret != -ENOMEM ? 1 : ret; /* a file that cannot be read: read anew */
}
