/* parquet_page.h - the values of one data page of one column chunk: the
 * page decompressed, its definition levels read (nullable columns and the
 * fields of nullable structs such as the `datasets` Image feature's
 * struct<bytes, path>), and the values of rows [a, b) decoded from PLAIN,
 * PLAIN_DICTIONARY / RLE_DICTIONARY (indices checked against the
 * dictionary), RLE (booleans), DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY
 * or DELTA_BYTE_ARRAY. The Parquet kind's (parquet_*.c); private to the
 * library. Pure: bytes in, values out, no I/O; safe to call from any
 * thread on its own structures (a dictionary, once loaded, is read-only and
 * may be shared).
 *
 * Columns are read when they are not repeated (no lists: a row is one
 * value or a null) and of type BOOLEAN, INT32, INT64, BYTE_ARRAY or
 * FIXED_LEN_BYTE_ARRAY; rfi_pq_column_check says which and why not. */
#ifndef RF_PARQUET_PAGE_H
#define RF_PARQUET_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include "source/parquet_meta.h"

/* Whether leaf column `leaf` can be read from every row group of m: its
 * type, its nesting, each chunk's codec (built in?) and encodings.
 * @return : 0, or -1 with why ("FILE: column caption: DELTA_BYTE_ARRAY
 *           ... BYTE_STREAM_SPLIT, which ringfeed does not read"). */
int rfi_pq_column_check(const rf_pq_meta *m, uint32_t leaf, char *why, size_t len);

/* A column chunk's dictionary, decoded. Read-only once loaded. */
typedef struct rf_pq_dict {
	uint32_t count;
	uint8_t *data;         /* the decompressed page the values point into... */
	size_t data_len;       /* ...of this many bytes */
	const uint8_t **ptr;   /* BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY: value i's bytes */
	uint32_t *len;
	int64_t *num;          /* INT32 / INT64; FLOAT / DOUBLE: their bits */
} rf_pq_dict;

/* Loads the dictionary page page[n] (its header and body) of chunk
 * (m, group g, leaf). @return : 0, or -1 with why naming the file and
 * column. */
int rfi_pq_dict_load(const rf_pq_meta *m, uint32_t g, uint32_t leaf, const uint8_t *page,
		     size_t n, rf_pq_dict *d, char *why, size_t len);
void rfi_pq_dict_free(rf_pq_dict *d);

/* One data page, opened: decompressed where it was, its sections found. */
typedef struct rf_pq_page {
	const rf_pq_meta *m;
	uint32_t group, leaf;
	rf_pq_page_header h;
	size_t header_len;       /* the page's bytes are header_len + h.compressed_size */
	uint32_t rows;           /* rows (= values: no repetition) in the page */
	const uint8_t *def;      /* definition levels (RLE hybrid), def_len bytes */
	size_t def_len;
	const uint8_t *values;   /* the encoded values, values_len bytes */
	size_t values_len;
	uint8_t *owned;          /* the decompressed page, or NULL */
} rf_pq_page;

/* Opens the data page (v1 or v2) page[n] of chunk (m, g, leaf): n bytes at
 * least header + compressed body. The page's values may point into page[]
 * (an uncompressed page), so page[] must outlive *pg.
 * @return : 0; 1 for a page to step over (an INDEX_PAGE or a dictionary
 *           page met among the data pages is refused: -1), with
 *           pg->header_len and pg->h set so that the caller can skip it;
 *           or -1 with why naming the file, column and what is wrong. */
int rfi_pq_page_open(const rf_pq_meta *m, uint32_t g, uint32_t leaf, const uint8_t *page,
		     size_t n, rf_pq_page *pg, char *why, size_t len);
void rfi_pq_page_close(rf_pq_page *pg);

/* The values of rows [a, b) of an open page, each row i at index i - a. */
typedef struct rf_pq_values {
	uint32_t count;        /* b - a */
	uint8_t *present;      /* 1: a value; 0: a null */
	const uint8_t **ptr;   /* BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY: the row's bytes (NULL: null) */
	uint32_t *len;
	int64_t *num;          /* BOOLEAN (0/1), INT32, INT64; FLOAT, DOUBLE: their IEEE
	                        * bits (zero-extended) */
	uint8_t *arena;        /* DELTA_BYTE_ARRAY's values, rebuilt */
	size_t arena_len, arena_cap;
} rf_pq_values;

/* Fills *out (its old arrays freed) with rows [a, b) of pg, b <= pg->rows.
 * Pointers point into the page, its owned buffer, the dictionary or out's
 * arena: valid while all of them live. dict: the chunk's (NULL when it has
 * none; a dictionary-encoded page without one is refused).
 * @return : 0, or -1 with why naming the file, column, page row and what
 *           is wrong (an index past the dictionary, levels over the
 *           maximum, values that end early). */
int rfi_pq_page_rows(const rf_pq_page *pg, const rf_pq_dict *dict, uint32_t a, uint32_t b,
		     rf_pq_values *out, char *why, size_t len);
void rfi_pq_values_free(rf_pq_values *v);

#endif
