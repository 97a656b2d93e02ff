/* parquet_meta.h - a Parquet file's metadata as the Parquet kind reads it:
 * the footer (FileMetaData), page headers and the page index's OffsetIndex
 * (parquet-format's parquet.thrift, in the Thrift compact protocol). The
 * Parquet kind's (parquet_*.c); private to the library. Pure: bytes in,
 * checked structures out, no I/O.
 *
 * A file is  "PAR1" pages... FileMetaData len(4, little-endian) "PAR1".
 * An encrypted file ends in "PARE" and is refused. Every offset and size a
 * footer or a header gives is checked against the file's size, the column
 * chunk it belongs to and the page it describes before anyone reads or
 * allocates with it; every error names the file, the column where there is
 * one, and the field or feature. */
#ifndef RF_PARQUET_META_H
#define RF_PARQUET_META_H

#include <stddef.h>
#include <stdint.h>

#define RF_PQ_MAGIC "PAR1"
#define RF_PQ_TAIL_BYTES 8          /* footer length + magic, at the file's end */
#define RF_PQ_FOOTER_MAX (64u << 20) /* a FileMetaData larger is refused (HF's are KiBs) */
#define RF_PQ_PAGE_BYTES_MAX (256u << 20) /* one page, compressed or not */
#define RF_PQ_PAGE_ROWS_MAX (1u << 24)  /* rows (values) one page may claim */
#define RF_PQ_SCHEMA_DEPTH_MAX 16      /* nesting of groups in a schema */

/* parquet.thrift's enums, as far as the kind knows them. */
enum { RF_PQ_BOOLEAN = 0, RF_PQ_INT32 = 1, RF_PQ_INT64 = 2, RF_PQ_INT96 = 3, RF_PQ_FLOAT = 4,
       RF_PQ_DOUBLE = 5, RF_PQ_BYTE_ARRAY = 6, RF_PQ_FIXED_LEN_BYTE_ARRAY = 7 };
enum { RF_PQ_REQUIRED = 0, RF_PQ_OPTIONAL = 1, RF_PQ_REPEATED = 2 };
enum { RF_PQ_ENC_PLAIN = 0, RF_PQ_ENC_PLAIN_DICTIONARY = 2, RF_PQ_ENC_RLE = 3,
       RF_PQ_ENC_BIT_PACKED = 4, RF_PQ_ENC_DELTA_BINARY_PACKED = 5,
       RF_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6, RF_PQ_ENC_DELTA_BYTE_ARRAY = 7,
       RF_PQ_ENC_RLE_DICTIONARY = 8, RF_PQ_ENC_BYTE_STREAM_SPLIT = 9 };
enum { RF_PQ_UNCOMPRESSED = 0, RF_PQ_SNAPPY = 1, RF_PQ_GZIP = 2, RF_PQ_LZO = 3, RF_PQ_BROTLI = 4,
       RF_PQ_LZ4 = 5, RF_PQ_ZSTD = 6, RF_PQ_LZ4_RAW = 7 };
enum { RF_PQ_DATA_PAGE = 0, RF_PQ_INDEX_PAGE = 1, RF_PQ_DICTIONARY_PAGE = 2,
       RF_PQ_DATA_PAGE_V2 = 3 };

/* Names for messages ("SNAPPY", "RLE_DICTIONARY"; "codec 9" past the list:
 * a static buffer for unknown values is not thread-safe, so those say
 * "unknown"). */
const char *rfi_pq_type_name(int type);
const char *rfi_pq_encoding_name(int enc);
const char *rfi_pq_codec_name(int codec);

/* A string in the footer: points into rf_pq_meta's copy of it. */
typedef struct rf_pq_str {
	const char *p;
	uint32_t n;
} rf_pq_str;

/* One SchemaElement. */
typedef struct rf_pq_schema {
	rf_pq_str name;
	int32_t type;         /* RF_PQ_*; -1 for a group */
	int32_t type_length;  /* FIXED_LEN_BYTE_ARRAY's width; 0 unset */
	int32_t repetition;   /* RF_PQ_REQUIRED...; -1 unset (the root) */
	int32_t num_children; /* 0 for a leaf */
	int32_t converted;    /* ConvertedType; -1 unset */
	int32_t logical;      /* LogicalType's union member (1 STRING, 10 INTEGER...); 0 unset */
} rf_pq_schema;

/* One leaf column, as the schema's depth-first order gives them; column
 * chunks come in this order. */
typedef struct rf_pq_leaf {
	char *path;         /* "image.bytes": the names below the root, joined with '.' */
	uint32_t schema;    /* its index in rf_pq_meta.schema */
	int32_t type, type_length;
	int max_def, max_rep; /* definition and repetition levels' maxima */
} rf_pq_leaf;

/* One column chunk of one row group (ColumnChunk + ColumnMetaData). */
typedef struct rf_pq_chunk {
	int32_t codec;
	uint32_t encodings;       /* bit e set: encoding e appears (e < 32) */
	int64_t num_values;
	int64_t compressed_size;  /* total_compressed_size: the pages' bytes, headers included */
	int64_t uncompressed_size;
	int64_t start;            /* the first page's offset: the dictionary's, or the data's */
	int64_t data_page_offset;
	int64_t dictionary_page_offset; /* -1: none */
	int64_t offset_index_offset;    /* -1: none */
	int32_t offset_index_length;
} rf_pq_chunk;

typedef struct rf_pq_row_group {
	int64_t num_rows;
	int64_t first_row;   /* rows of the groups before it */
	rf_pq_chunk *chunks; /* rf_pq_meta.nleaves of them */
} rf_pq_row_group;

typedef struct rf_pq_kv {
	rf_pq_str key, value; /* value.p NULL: no value */
} rf_pq_kv;

/* A parsed footer. Owns everything it points to (rfi_pq_meta_free). */
typedef struct rf_pq_meta {
	char *file;            /* the name errors give */
	uint64_t file_size;
	int32_t version;
	int64_t num_rows;
	rf_pq_schema *schema;
	uint32_t nschema;
	rf_pq_leaf *leaves;
	uint32_t nleaves;
	rf_pq_row_group *groups;
	uint32_t ngroups;
	rf_pq_kv *kv;
	uint32_t nkv;
	rf_pq_str created_by;
	uint8_t *footer;       /* the FileMetaData bytes the strings point into... */
	size_t footer_len;     /* ...of this many */
} rf_pq_meta;

/* Checks a file's last RF_PQ_TAIL_BYTES and its size: the magic (an
 * encrypted file's "PARE" refused as such), a footer length that fits
 * between the leading magic and the tail and is at most RF_PQ_FOOTER_MAX.
 * *footer_len gets it; the footer is the footer_len bytes before the tail.
 * @return : 0, or -1 with why = "FILE: ..." */
int rfi_pq_tail_check(const char *file, const uint8_t *tail, uint64_t file_size,
		      uint32_t *footer_len, char *why, size_t len);

/* Parses a footer (the FileMetaData bytes, copied) of a file of file_size
 * bytes into *out: the schema and its leaves (repeated columns, the schema
 * nesting past RF_PQ_SCHEMA_DEPTH_MAX, and a type the kind cannot read are
 * parsed, and refused only when a caller asks for that column), every row
 * group's chunks checked against the file's size and against each other (a
 * path_in_schema that is not its leaf's, a chunk type not its leaf's, rows
 * that do not add up to num_rows), the key/value metadata.
 * @return : 0, or -1 with why ("FILE: row group 3, column image.bytes: the
 *           chunk's pages (offset O, N bytes) end past the file (S bytes)");
 *           *out is NULL then. */
int rfi_pq_meta_parse(const char *file, const uint8_t *footer, size_t n, uint64_t file_size,
		      rf_pq_meta **out, char *why, size_t len);
void rfi_pq_meta_free(rf_pq_meta *m);

/* The leaf whose path is path ("label", "image.bytes"); -1 if none. */
int rfi_pq_leaf_find(const rf_pq_meta *m, const char *path);
/* The value of key key in the key/value metadata (NULL when absent). */
const rf_pq_str *rfi_pq_kv_find(const rf_pq_meta *m, const char *key);

/* One page header. */
typedef struct rf_pq_page_header {
	int32_t type;              /* RF_PQ_DATA_PAGE... */
	int32_t uncompressed_size; /* the body's, after the header */
	int32_t compressed_size;
	int32_t num_values;        /* data and dictionary pages */
	int32_t encoding;          /* the values' */
	/* DATA_PAGE (v1) */
	int32_t def_encoding, rep_encoding;
	/* DATA_PAGE_V2 */
	int32_t num_nulls, num_rows;
	int32_t def_bytes, rep_bytes; /* the levels, uncompressed, before the values */
	int is_compressed;
} rf_pq_page_header;

/* Parses the page header at p, of which n bytes are present (all the
 * parser reads), room bytes left in the chunk from p (room >= n: what the
 * body must fit in; a scan reads a window of the chunk, not all of it),
 * checks its sizes (non-negative, the body within room and within
 * RF_PQ_PAGE_BYTES_MAX, v2's level bytes within the body, counts within
 * RF_PQ_PAGE_ROWS_MAX) and sets *header_len to the header's bytes.
 * @return : 0; -1 with why (no file or column: the caller prefixes them);
 *           -2 (n < room only) the header is corrupt or goes on past the n
 *           bytes: more bytes may parse it. */
int rfi_pq_page_header_parse(const uint8_t *p, size_t n, size_t room, rf_pq_page_header *h,
			     size_t *header_len, char *why, size_t len);

/* One data page of a column chunk: where it is, and the rows it holds. */
typedef struct rf_pq_page_loc {
	int64_t offset;     /* in the file: its header's first byte */
	int32_t size;       /* header + compressed body */
	int64_t first_row;  /* within the row group */
} rf_pq_page_loc;

/* Parses an OffsetIndex (the bytes at chunk->offset_index_offset) of the
 * chunk c of a row group of rows rows into a new array *locs of *count:
 * each page within the chunk's pages, in order, not overlapping, its
 * first_row increasing from 0 and below rows.
 * @return : 0, or -1 with why. */
int rfi_pq_offset_index_parse(const uint8_t *p, size_t n, const rf_pq_chunk *c, int64_t rows,
			      rf_pq_page_loc **locs, uint32_t *count, char *why, size_t len);

/* A page header's bytes, at most: a scan reads more than its window
 * (RF_PQ_SCAN_WINDOW, doubled) only up to this. */
#define RF_PQ_PAGE_HEADER_MAX ((size_t)16 << 20)
#define RF_PQ_SCAN_WINDOW ((size_t)64 << 10)

/* Where a scan gets a chunk's bytes: *p set to the n bytes at file offset
 * offset (within the chunk), valid until the next call; 0, or -1 with why
 * (a read that failed or came back short: the file changed). */
typedef struct rf_pq_reader {
	int (*read)(void *ctx, int64_t offset, size_t n, const uint8_t **p, char *why,
		    size_t len);
	void *ctx;
} rf_pq_reader;

/* Scans the page headers of a column chunk (c->compressed_size bytes from
 * c->start) through r, header by header: a window at each page's offset
 * (RF_PQ_SCAN_WINDOW, doubled while the header goes on past it), then a
 * jump by its compressed size; the pages' bodies are not read. For a chunk
 * without an
 * OffsetIndex: the data pages into a new array *locs of *count (first_row
 * from the pages' value counts: the column is not repeated), the
 * dictionary page's offset into *dict_offset (-1: none). INDEX_PAGEs are
 * stepped over. The pages must tile the chunk exactly and hold the row
 * group's rows, no more, no fewer.
 * @return : 0, or -1 with why (no file or column: the caller prefixes them). */
int rfi_pq_chunk_scan_read(const rf_pq_reader *r, const rf_pq_chunk *c, int64_t rows,
			   rf_pq_page_loc **locs, uint32_t *count, int64_t *dict_offset,
			   char *why, size_t len);
/* The same over the chunk in memory: p[n] (n >= c->compressed_size), the
 * chunk's bytes from c->start. */
int rfi_pq_chunk_scan(const uint8_t *p, size_t n, const rf_pq_chunk *c, int64_t rows,
		      rf_pq_page_loc **locs, uint32_t *count, int64_t *dict_offset, char *why,
		      size_t len);

#endif
