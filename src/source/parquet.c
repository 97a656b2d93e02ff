/* parquet.c - the Parquet kind: a sample is a row of .parquet files, its
 * image the bytes of the image column (a binary column of JPEG, PNG or
 * WebP bytes, or the `datasets` Image struct's `bytes`), its label the
 * integer column `label` (a ClassLabel's names from the `huggingface`
 * metadata). The files are one .parquet file, a folder of them, a glob or
 * brace pattern, or a list file; or remote (http(s):// URLs, a list or
 * a brace pattern of them, an s3:// or hf:// folder or glob, listed through
 * the source's transport): set-up reads them through it, many at once
 * (parquet_table.c, parquet_file.c).
 *
 * Random access: a sample's read is its page of the image column (header
 * and body, parquet_table.h's table, the kind's private state); the page
 * is decompressed and the row's value cut out on a compute thread
 * (extract, the kind's stage), then decoded (or, raw, delivered) as any
 * image. The rows of a page in flight together (or while its read is still
 * held) share one read (shared_reads). The ring thread only reads. The sequential sampler (in index
 * order) reads the files front to back in chunks instead (in_order_tiles),
 * each sample's page served from its chunk; so does shard_access =
 * sequential (sequential_shards), with the files in a seeded order and the
 * block shuffle. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index_build.h"
#include "source/parquet_columns.h"
#include "source/parquet_opened.h"
#include "source/parquet_table.h"
#include "source/source.h"
#include "util/hash.h"
#include "util/util.h"

static const char *const pq_suffixes[] = { ".parquet", NULL };
/* a remote listing's files at any depth: a dataset's CONFIG/SPLIT/NNNN files */
static const rf_shard_names pq_names = { .suffixes = pq_suffixes, .shown = ".parquet",
					 .any_depth = 1 };

static const rf_pq_table *table_of(const rf_source *s)
{
	return s->priv;
}

static int ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n > k && !memcmp(s + n - k, suffix, k);
}

/* A source string naming .parquet files: a name, a pattern or a URL of
 * them (a URL's query aside). */
static int names_parquet(const char *source)
{
	return ends_with(source, strcspn(source, "?#"), ".parquet");
}

static int claims(const char *source, const struct stat *st, const rf_source_params *p)
{
	if (p->mode & rfi_source_kind_modes()) /* source_kind says another kind */
		return 0;
	if (!st) /* a pattern or a URL */
		return names_parquet(source);
	return S_ISREG(st->st_mode) &&
	       (names_parquet(source) || rfi_index_is_shard_list(source, &pq_names));
}

/* The files listed, then read (footers, pages, labels), the columns as
 * cfg.columns says. */
static int read_files(rf_source *s, const char *source, const rf_source_params *p, char *err,
		      size_t errlen)
{
	rf_pq_table *t;
	int ret = rfi_pq_table_build(&s->index, s->raw, p->columns, &t, err, errlen);
	if (ret)
		return ret;
	s->priv = t;
	if (!t->samples) {
		rfi_fmt(err, errlen, "source '%s': its Parquet files hold no rows", source);
		return RF_EEMPTY;
	}
	return 0;
}

/* (rf_source_ops.take_folder) A folder the walk found holding .parquet
 * files and nothing else: every one of them in the folder itself. */
static int take_folder(rf_source *s, const char *source, const rf_source_seen *seen,
		       const rf_source_params *p, char *err, size_t errlen)
{
	rf_index *idx = &s->index;
	int ret = rfi_index_shard_folder(idx, source, &pq_names, err, errlen);
	if (ret < 0)
		return ret;
	if (ret == 0 || idx->nshards != seen->n) {
		rfi_fmt(err, errlen, "source '%s': %llu of its %llu .parquet files are in its "
			"sub-folders, which are not read: name them with a pattern "
			"(DIR/*/*.parquet) or a list file", source,
			(unsigned long long)(seen->n - (ret ? idx->nshards : 0)),
			(unsigned long long)seen->n);
		return RF_EINDEX;
	}
	return read_files(s, source, p, err, errlen);
}

static int restore(rf_source *s, char *err, size_t errlen);

/* Remote files: the table from an index object rather than their footers,
 * the one named (index_cache), else the one beside them
 * (DIR/ringfeed.index), when it lists these files in this mode. Its ETags
 * are asked for by every read (If-Match): a file changed since fails its
 * reads, as a tar shard's do. @return : 0 adopted, 1 none (or of other
 * files: logged), negative with err set (the one named failed). */
static int adopt_object(rf_source *s, const rf_source_params *p, char *err, size_t errlen)
{
	rf_index *idx = &s->index;
	char beside[PATH_MAX], why[512];
	const char *object = p->cache;
	if (!object && rfi_index_is_url(idx->root)) {
		rfi_fmt(beside, sizeof(beside), "%s/%s", idx->root, RF_INDEX_OBJECT_NAME);
		object = beside;
	}
	if (!object)
		return 1;
	int ret = rfi_index_cache_adopt(idx, p->mode, object, why, sizeof(why));
	if (ret < 0 && object == p->cache) {
		rfi_fmt(err, errlen, "config: index_cache: %s", why);
		return ret;
	}
	if (!ret)
		ret = restore(s, why, sizeof(why));
	if (ret)
		rfi_log(p->log_level, RF_LOG_INFO, "%s: reading the files' footers", why);
	s->cached = ret == 0;
	return ret < 0 && object == p->cache ? ret : ret != 0;
}

static int build(rf_source *s, const char *source, const struct stat *st,
		 const rf_source_params *p, char *err, size_t errlen)
{
	rf_index *idx = &s->index;
	int ret;
	if (!st) {
		ret = rfi_index_shard_pattern(idx, source, &pq_names, err, errlen);
		if (ret == 0) /* a bucket's folder or glob, a dataset's files */
			ret = rfi_index_shard_bucket(idx, source, &pq_names, err, errlen);
		if (ret == 0 && rfi_index_is_url(source))
			ret = rfi_index_shard_file(idx, source, err, errlen);
		if (ret == 0) {
			rfi_fmt(err, errlen, "source '%s': %s", source, strerror(ENOENT));
			ret = -ENOENT;
		}
	} else if (names_parquet(source)) {
		ret = rfi_index_shard_file(idx, source, err, errlen);
	} else {
		ret = rfi_index_shard_list(idx, source, &pq_names, err, errlen);
	}
	if (ret < 0)
		return ret;
	if (idx->urls && (ret = adopt_object(s, p, err, errlen)) <= 0)
		return ret;
	return read_files(s, source, p, err, errlen);
}

static const char *name(const rf_source *s, uint64_t i, char *buf, size_t len)
{
	const rf_pq_tpage *pg = rfi_pq_table_page(table_of(s), i);
	rfi_fmt(buf, len, "%s:row %llu", s->index.shards[pg->file],
		(unsigned long long)(pg->row + (i - pg->first)));
	return buf;
}

static int32_t label(const rf_source *s, uint64_t i)
{
	const rf_pq_table *t = table_of(s);
	return t->labels ? t->labels[i] : -1;
}

static int check(const rf_source *s, uint64_t i, char *reason, size_t len)
{
	(void)s, (void)i, (void)reason, (void)len;
	return 0; /* every file was read when the source was built; a row's value is
		   * judged when its page is (extract) */
}

static void read_of(const rf_source *s, uint64_t i, rf_source_read *r)
{
	const rf_pq_tpage *pg = rfi_pq_table_page(table_of(s), i);
	*r = (rf_source_read){ .shard = pg->file, .offset = pg->offset, .len = pg->size,
			       .expect = pg->size };
}

/* (rf_source_ops.shard_of) Its row's file: a file's rows are one run of
 * samples (shard_access = sequential reads the files front to back). */
static uint32_t shard_of(const rf_source *s, uint64_t i)
{
	return rfi_pq_table_page(table_of(s), i)->file;
}

/* (rf_source_ops.tile) The pages of file `shard` that start in [from,
 * to): from the first one's header to the last one's end (a file's pages
 * lie in offset order: row groups and pages as written; chunks.c checks
 * each page lies in its chunk's read, and reads one that does not alone). */
static void tile(const rf_source *s, uint32_t shard, uint64_t from, uint64_t to,
		 uint64_t *start, uint64_t *end)
{
	const rf_pq_table *t = table_of(s);
	uint64_t lo = 0, hi = t->npages; /* the first page at (shard, >= from) */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		const rf_pq_tpage *p = &t->pages[mid];
		if (p->file < shard || (p->file == shard && p->offset < from))
			lo = mid + 1;
		else
			hi = mid;
	}
	*start = *end = from;
	for (uint64_t k = lo; k < t->npages && t->pages[k].file == shard &&
			      t->pages[k].offset < to; k++) {
		const rf_pq_tpage *p = &t->pages[k];
		if (k == lo)
			*start = p->offset;
		*end = RF_MAX(*end, p->offset + p->size);
	}
}

static rf_stage stage(const rf_source *s, uint64_t i)
{
	(void)i;
	return s->raw ? RF_STAGE_KIND_RAW : RF_STAGE_KIND_IMAGE;
}

static void cut_short(const rf_source *s, const rf_source_read *r, int got, char *reason,
		      size_t len)
{
	(void)s;
	rfi_fmt(reason, len, "page cut short: the file shrank since set-up (%lld bytes, read %d)",
		(long long)r->expect, got);
}

/* A compute thread's page: open until its next sample (the value's bytes
 * point into it, or into the read it was opened from). */
typedef struct pq_open {
	rf_pq_page pg;                 /* opened here, or zeroed (kept by the set) */
	const rf_pq_page *shared;      /* the set's page held instead, or NULL */
	rf_pq_opened *set;             /* where shared is given back */
	rf_pq_values vals;
	int open;
	char text[32]; /* a number's decimal text (a field) */
} pq_open;

/* The image's page [0] and each field's [1 + k]: all open until the
 * thread's next sample (extract closes them). */
typedef struct pq_scratch {
	pq_open at[1 + RF_PQ_FIELDS_MAX];
} pq_scratch;

static void open_close(pq_open *o)
{
	if (!o->open)
		return;
	rfi_pq_values_free(&o->vals);
	if (o->shared)
		rfi_pq_opened_release(o->set, o->shared);
	o->shared = NULL;
	rfi_pq_page_close(&o->pg);
	o->open = 0;
}

static void scratch_close(pq_scratch *x)
{
	for (size_t k = 0; k < sizeof(x->at) / sizeof(x->at[0]); k++)
		open_close(&x->at[k]);
}

static void scratch_free(void *scratch)
{
	if (!scratch)
		return;
	scratch_close(scratch);
	free(scratch);
}

/* Page p of column `path` (leaf of p's file) opened into o from its read
 * (data[len]); with share (the image column), the page the table's set
 * holds, or this one kept there: the rows of a page then decompress it
 * once between them. 0, or RF_EBADSAMPLE with reason set. */
static int page_open(const rf_pq_table *t, const rf_pq_tpage *p, uint32_t leaf, const char *path,
		     const uint8_t *data, size_t len, int share, pq_open *o, char *reason,
		     size_t rlen)
{
	share = share && t->opened;
	uint64_t key = share ? (uint64_t)(p - t->pages) : 0; /* p is one of t->pages */
	if (share && (o->shared = rfi_pq_opened_get(t->opened, key))) {
		o->set = t->opened;
		o->open = 1;
		return 0;
	}
	int ret = rfi_pq_page_open(t->metas[p->file], p->group, leaf, data, len, &o->pg, reason,
				   rlen);
	if (ret == 1) {
		rfi_pq_page_close(&o->pg);
		rfi_fmt(reason, rlen, "column %s: not a data page where set-up found one", path);
	}
	if (ret)
		return RF_EBADSAMPLE;
	o->open = 1;
	if (o->pg.rows != p->rows) { /* an index that lies: a row would be another's value */
		rfi_fmt(reason, rlen, "column %s: the page holds %u rows, not the %u set-up found",
			path, o->pg.rows, p->rows);
		return RF_EBADSAMPLE;
	}
	/* only a page that owns its bytes: an uncompressed one points into
	 * its read, which goes with the sample */
	if (share && o->pg.owned && (o->shared = rfi_pq_opened_put(t->opened, key, &o->pg)))
		o->set = t->opened;
	return 0;
}

/* Row `row` of page p of column `path` (leaf of p's file) out of its read
 * (data[len]) into o, opened (share: as page_open). 0, or RF_EBADSAMPLE
 * with reason set. */
static int page_row(const rf_pq_table *t, const rf_pq_tpage *p, uint32_t leaf, const char *path,
		    uint32_t row, const uint8_t *data, size_t len, int share, pq_open *o,
		    char *reason, size_t rlen)
{
	int ret = page_open(t, p, leaf, path, data, len, share, o, reason, rlen);
	if (ret)
		return ret;
	const rf_pq_page *pg = o->shared ? o->shared : &o->pg;
	if (row >= pg->rows) {
		rfi_fmt(reason, rlen, "column %s: row %u of a page of %u rows", path, row, pg->rows);
		return RF_EBADSAMPLE;
	}
	const rf_pq_dict *d = p->dict == RF_PQ_NO_DICT ? NULL : &t->dicts[p->dict];
	if (rfi_pq_page_rows(pg, d, row, row + 1, &o->vals, reason, rlen))
		return RF_EBADSAMPLE;
	return 0;
}

/* (rf_source_ops.extract) Sample i's value out of its page (data[len], as
 * read_of read it): the page opened (decompressed), the row's value cut
 * out. A null, a page that is not what set-up found, or a damaged one: a
 * bad sample. */
static int extract(const rf_source *s, uint64_t i, const uint8_t *data, size_t len,
		   void **scratch, const uint8_t **out, size_t *out_len, char *reason,
		   size_t rlen)
{
	const rf_pq_table *t = table_of(s);
	pq_scratch *x = *scratch;
	if (!x && !(x = *scratch = calloc(1, sizeof(*x)))) {
		rfi_fmt(reason, rlen, "out of memory for decoder scratch");
		return -ENOMEM;
	}
	scratch_close(x);
	const rf_pq_tpage *p = rfi_pq_table_page(t, i);
	pq_open *o = &x->at[0];
	int ret = page_row(t, p, t->leaf[p->file], t->image_path, (uint32_t)(i - p->first), data,
			   len, 1, o, reason, rlen);
	if (ret)
		return ret;
	if (!o->vals.present[0] || !o->vals.ptr[0] || !o->vals.len[0]) {
		rfi_fmt(reason, rlen, "column %s: %s", t->image_path,
			o->vals.present[0] ? "an empty value" : "null");
		return RF_EBADSAMPLE;
	}
	*out = o->vals.ptr[0];
	*out_len = o->vals.len[0];
	return 0;
}

/* (rf_source_ops.field_column) A field (cfg.fields) is a column. */
static int field_column(const rf_source *s, const char *name, int optional, int *id, char *err,
			size_t errlen)
{
	rf_pq_table *t = s->priv; /* create: no thread reads it yet */
	/* a remote file opened again writes its ETag into the index: the one
	 * it holds (If-Match asked for it), before any thread reads it */
	return rfi_pq_table_add_field(t, (rf_index *)&s->index, name, optional, id, err, errlen);
}

/* (rf_source_ops.field_read) Sample i's value of field column id, kept,
 * or else its page of that column. */
static int field_read(const rf_source *s, uint64_t i, int id, rf_source_read *r,
		      const uint8_t **value, uint32_t *len)
{
	const rf_pq_table *t = table_of(s);
	const rf_pq_tfield *fc = &t->fields[id];
	if (fc->kept || fc->off)
		return rfi_pq_table_kept(fc, i, value, len) ? RF_FIELD_KEPT : RF_FIELD_NULL;
	const rf_pq_tpage *p = rfi_pq_table_field_page(t, fc, i);
	*r = p ? (rf_source_read){ .shard = p->file, .offset = p->offset, .len = p->size,
				   .expect = p->size }
	       : (rf_source_read){ .shard = RF_NO_SHARD };
	return RF_FIELD_READ;
}

/* (rf_source_ops.field_extract) Field k's value (column id) of sample i out
 * of its page: bytes as they are, numbers as decimal text; a null is not
 * present. After extract (which closed the thread's pages). */
static int field_extract(const rf_source *s, uint64_t i, uint32_t k, int id,
			 const uint8_t *data, size_t len, void **scratch, const uint8_t **out,
			 size_t *out_len, int *present, char *reason, size_t rlen)
{
	const rf_pq_table *t = table_of(s);
	const rf_pq_tfield *fc = &t->fields[id];
	const rf_pq_tpage *p = rfi_pq_table_field_page(t, fc, i);
	pq_scratch *x = *scratch;
	if (!p || !x || k >= RF_PQ_FIELDS_MAX) { /* field_read gave no read; extract ran first */
		rfi_fmt(reason, rlen, "column %s: no page for this row", fc->path);
		return RF_EBADSAMPLE;
	}
	pq_open *o = &x->at[1 + k];
	int ret = page_row(t, p, (uint32_t)fc->leaf[p->file], fc->path, (uint32_t)(i - p->first),
			   data, len, 0, o, reason, rlen);
	if (ret)
		return ret;
	*present = o->vals.present[0];
	rfi_pq_value_bytes((rf_pq_text)fc->text, o->vals.ptr ? o->vals.ptr[0] : NULL,
			   o->vals.len ? o->vals.len[0] : 0, o->vals.num ? o->vals.num[0] : 0,
			   o->text, out, out_len);
	return 0;
}

/* The files (names, sizes, rows), the columns read. */
static uint64_t fingerprint(const rf_source *s, int with_weights)
{
	(void)with_weights;
	const rf_pq_table *t = table_of(s);
	uint64_t h = rfi_hash_u64(0x7061727175657421ull, t->samples);
	h = rfi_hash_bytes(h, t->image_path, strlen(t->image_path));
	if (t->label_path)
		h = rfi_hash_bytes(h, t->label_path, strlen(t->label_path));
	for (uint32_t f = 0; f < t->nfiles; f++) {
		h = rfi_hash_bytes(h, s->index.shards[f], strlen(s->index.shards[f]));
		h = rfi_hash_u64(h, t->metas[f]->file_size);
		h = rfi_hash_u64(h, (uint64_t)t->metas[f]->num_rows);
	}
	return h;
}

static uint64_t samples(const rf_source *s)
{
	return table_of(s)->samples;
}

/* The largest image page, and with fields the largest page of each field's
 * column, read beside it (each with its alignment, as the feeder lays
 * them out). */
static uint64_t largest_read(const rf_source *s)
{
	const rf_pq_table *t = table_of(s);
	uint64_t n = t->largest_page;
	for (uint32_t k = 0; k < t->nfields; k++)
		n += t->fields[k].off ? 0 : (uint64_t)t->fields[k].largest + 8192; /* kept: none */
	return n;
}

/* A file's bytes: read ahead stops there (samples in index order read the
 * files front to back in chunks, in_order_tiles). */
static uint64_t shard_bytes(const rf_source *s, uint32_t shard)
{
	return table_of(s)->metas[shard]->file_size;
}

static size_t memory(const rf_source *s)
{
	return rfi_index_memory(&s->index) + rfi_pq_table_memory(table_of(s));
}

/* (rf_source_ops.save) The table into the index cache's kind part. */
static int save(rf_source *s, char *err, size_t errlen)
{
	int ret = rfi_pq_table_save(table_of(s), &s->index);
	if (ret)
		rfi_fmt(err, errlen, "Parquet table for the index cache: out of memory");
	return ret;
}

/* (rf_source_ops.restore) The table from the index cache: no footer read,
 * no page header scanned (the dictionaries' pages read again). */
static int restore(rf_source *s, char *err, size_t errlen)
{
	rf_pq_table *t;
	int ret = rfi_pq_table_restore(&s->index, s->raw, s->columns, &t, err, errlen);
	free(s->index.kind_blob); /* the table holds it now */
	s->index.kind_blob = NULL;
	s->index.kind_blob_len = 0;
	if (!ret)
		s->priv = t;
	return ret;
}

static void free_table(rf_source *s)
{
	rfi_pq_table_free(s->priv);
	s->priv = NULL;
}

const rf_source_ops rf_source_parquet = {
	.kind = RF_KIND_PARQUET,
	.name = "Parquet files",
	.claims = claims,
	.build = build,
	.name_of = name,
	.label = label,
	.check = check,
	.read_of = read_of,
	.stage = stage,
	.cut_short = cut_short,
	.fingerprint = fingerprint,
	.samples = samples,
	.largest_read = largest_read,
	.shard_bytes = shard_bytes,
	.memory = memory,
	.free = free_table,
	.extract = extract,
	.scratch_free = scratch_free,
	.field_column = field_column,
	.field_read = field_read,
	.field_extract = field_extract,
	.columns = 1,
	.shard_names = &pq_names,
	.take_folder = take_folder,
	/* the table (footers, page locations, labels) kept in the index cache
	 * and in `ringfeed index`'s object (parquet_cache.c) */
	.cached = 1,
	.save = save,
	.restore = restore,
	/* in index order its samples walk its files' pages front to back: the
	 * sequential sampler reads the files in chunks (each chunk the pages
	 * that start in it, whole: tile), not a page per sample */
	.in_order_tiles = 1,
	/* shard_access = sequential: the files in a seeded order, each front
	 * to back with the block shuffle, read in chunks as tar shards are */
	.sequential_shards = 1,
	.shard_of = shard_of,
	/* random access: a row's read is its page, shared by the page's rows
	 * in flight (or still held) together */
	.shared_reads = 1,
	.tile = tile,
};
