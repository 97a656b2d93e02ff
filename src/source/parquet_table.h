/* parquet_table.h - the Parquet kind's sample table (parquet_table.c builds
 * it at create; parquet.c, the row, reads it): one sample a row of the
 * files, found through the image column's data pages. A sample's read is
 * its page (header and body); its value is cut out of it on a compute
 * thread (parquet.c's extract), with the chunk's dictionary, loaded here.
 * The kind's private state (rf_source.priv); read-only once built and
 * shared by every thread without locks (but `opened`, which locks itself). Private to the Parquet kind. */
#ifndef RF_PARQUET_TABLE_H
#define RF_PARQUET_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "rf_config.h" /* RF_TEST_HOOKS */
#include "index/index.h"
#include "source/parquet_meta.h"
#include "source/parquet_page.h"

#define RF_PQ_NO_DICT UINT32_MAX
/* All the image column's dictionaries together, decoded, at most this many
 * bytes (they are kept for the whole run): beyond, the files are refused,
 * saying how to write them without one. */
#define RF_PQ_DICT_TOTAL_MAX ((size_t)1 << 30)

/* One data page of the image column. */
typedef struct rf_pq_tpage {
	uint64_t offset;  /* in its file: the header's first byte */
	uint64_t first;   /* its first sample: the rows of the pages before it */
	uint64_t row;     /* its first row in its file */
	uint32_t size;    /* header + compressed body: the sample's read */
	uint32_t rows;
	uint32_t file;    /* index.shards[file] */
	uint32_t group;
	uint32_t dict;    /* its chunk's dictionary (dicts[]), or RF_PQ_NO_DICT */
} rf_pq_tpage;

/* A file as set-up found it: what tells whether it changed since (the
 * index cache keeps it, parquet_cache.c). */
typedef struct rf_pq_stamp {
	uint64_t size;
	int64_t mtime_sec, mtime_nsec; /* local files; 0 for remote ones (their ETag:
	                                * the index's etags) */
	uint64_t ino;
} rf_pq_stamp;

/* Where dicts[i]'s page is (the cache keeps this, not the decoded values). */
typedef struct rf_pq_dloc {
	uint64_t offset, bytes;
	uint32_t file, group;
} rf_pq_dloc;

/* A column delivered as a field (cfg.fields): its data pages, as the
 * image column's (first: the sample of the page's first row), each
 * sample's page read beside its image's; or, when all the field columns'
 * values fit in RF_PQ_FIELD_KEEP_MAX bytes (their pages' uncompressed
 * sizes said so), their values, read once at create and kept: a caption
 * column of a few million rows is tens of MiB, and a page read per sample
 * would read a whole page (up to 1 MiB with pyarrow's defaults) for one
 * caption. */
#define RF_PQ_FIELDS_MAX 8 /* RF_MAX_FIELDS */
#define RF_PQ_FIELD_KEEP_MAX ((uint64_t)256 << 20)
typedef struct rf_pq_tfield {
	char *path;           /* as found in the first file */
	int32_t type;         /* its physical type (rf_pq_type) */
	int32_t text;         /* how its values are delivered (rf_pq_text) */
	int32_t *leaf;        /* each file's leaf, -1: the file lacks it (optional) */
	rf_pq_tpage *pages;
	uint64_t npages, pages_cap;
	uint32_t largest;     /* its largest page */
	/* kept (NULL: read per sample): sample i's value is kept[off[i],
	 * off[i + 1]), present[i] 0 for a null (or a file without it) */
	uint8_t *kept;
	uint64_t *off;
	uint8_t *present;
	uint64_t kept_len, kept_cap;
} rf_pq_tfield;

typedef struct rf_pq_table {
	rf_pq_meta **metas;   /* each file's footer, index.shards' order */
	uint32_t *leaf;       /* each file's image column (a leaf of its schema) */
	uint32_t nfiles;
	char *image_path;     /* the image column, as found in the first file: "image.bytes" */
	char *label_path;     /* the label column ("label"), or NULL: none */
	char *columns;        /* cfg.columns it was built for ("": none): the index
	                       * cache keeps a table for these columns only */
	int label_strings;    /* its values are strings: the classes are their
	                       * distinct values, sorted (index.classes) */
	rf_pq_tfield fields[RF_PQ_FIELDS_MAX];
	uint32_t nfields;
	rf_pq_tpage *pages;
	uint64_t npages;
	rf_pq_dict *dicts;
	rf_pq_dloc *dlocs;    /* each dictionary's page */
	uint32_t ndicts, dicts_cap; /* dicts_cap: their room (dicts' and dlocs') */
	rf_pq_stamp *stamps;  /* each file's */
	uint64_t kept_bytes;  /* the kept fields' values, all together */
	size_t dict_bytes;
	int32_t *labels;      /* each sample's, or NULL (no label column) */
	uint64_t samples;
	uint32_t largest_page;
	uint64_t setup_requests; /* remote: the requests set-up made (all files) */
	/* The image column's pages opened once for the rows the compute
	 * threads cut out (parquet_opened.h), or NULL: each row opens its own.
	 * The one part of the table threads change; it locks itself. */
	struct rf_pq_opened *opened;
} rf_pq_table;

/* Builds *out from the files idx lists (root and shards: local files, or
 * idx->urls: remote ones), reading each one's footer, the image column's
 * page locations (its OffsetIndex, or its pages' headers), its
 * dictionaries, and the label column; the columns as columns (cfg.columns,
 * or NULL) names them. raw: the image column may be any binary column when
 * none holds images. idx->classes gets a ClassLabel's names when the first
 * file's `huggingface` metadata gives them, or a string label column's
 * distinct values (every file's), sorted. Refusals name the file, the column
 * and the feature. @return : 0, or a negative code with err set (*out then
 * NULL). */
int rfi_pq_table_build(rf_index *idx, int raw, const char *columns, rf_pq_table **out,
		       char *err, size_t errlen);

/* The table into idx->kind_blob (the index cache's kind part: footers,
 * page locations, dictionaries' places, labels, the files' stamps, the
 * columns it was built for). Before any field is added (create saves it
 * first). @return : 0 or -ENOMEM. */
int rfi_pq_table_save(const rf_pq_table *t, rf_index *idx);
/* The table back from idx->kind_blob, each file's stamp checked (local:
 * size, mtime, inode; remote: size, the ETag idx holds), footers parsed
 * from their bytes (none read), dictionary pages read again. A table
 * built for other columns (cfg.columns, "" none) or another raw is not
 * restored. @return : 0, 1 with why set (a file changed, other columns, or
 * a blob not of this build: build it again), or a negative code with why
 * set. */
int rfi_pq_table_restore(rf_index *idx, int raw, const char *columns, rf_pq_table **out,
			 char *why, size_t len);
/* A dictionary page read and loaded: dicts[id] from dlocs[id], file pf. */
struct rf_pq_file;
int rfi_pq_table_dict_read(rf_pq_table *t, struct rf_pq_file *pf, uint32_t id, char *err,
			   size_t errlen);
/* Field `name` (cfg.fields) as a column of the files: found (as
 * rfi_pq_column_named finds it) in the first file, then each file's data
 * pages of it located and its dictionaries loaded (the files opened
 * again: local or remote, through parquet_file.h), its number in t->fields
 * in *id. A column the first file lacks: *id -1 when optional, else
 * RF_ECONFIG naming the file and its columns; a later file that lacks a
 * column that is not optional is refused too. Before any thread reads t
 * (create; after a restore too). */
int rfi_pq_table_add_field(rf_pq_table *t, rf_index *idx, const char *name,
			   int optional, int *id, char *err, size_t errlen);
void rfi_pq_table_free(rf_pq_table *t);
size_t rfi_pq_table_memory(const rf_pq_table *t);

/* The page holding sample i (< t->samples). */
const rf_pq_tpage *rfi_pq_table_page(const rf_pq_table *t, uint64_t i);
/* A kept field's value for sample i: 1 (*p, *n), 0 a null. */
int rfi_pq_table_kept(const rf_pq_tfield *fc, uint64_t i, const uint8_t **p, uint32_t *n);
/* The page of field column fc holding sample i, or NULL (its file lacks it). */
const rf_pq_tpage *rfi_pq_table_field_page(const rf_pq_table *t, const rf_pq_tfield *fc,
					   uint64_t i);

#if RF_TEST_HOOKS
/* Test-only: fn is called with each file's path (the index's root and
 * shard) once its footer is read, before its pages are: a test truncates
 * it there (a writer still writing). NULL: none. */
void rfi_pq_table_set_test_hook(void (*fn)(const char *path));
/* Test-only: the bound on kept field values (RF_PQ_FIELD_KEEP_MAX by
 * default; 0: every field read per sample, as a large column is). */
void rfi_pq_table_set_keep_max(uint64_t max);
#endif

#endif
