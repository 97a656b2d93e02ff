/* parquet_columns.h - which Parquet column is which: cfg.columns parsed
 * ("image=NAME,label=NAME"), a column found by the name a user gives it,
 * the columns listed for a refusal, a string label column's classes (its
 * distinct values, sorted), and a field's value as text. Set-up and
 * compute-thread helpers of the Parquet kind (parquet_table.c, parquet.c);
 * pure, no I/O. Private to the Parquet kind. */
#ifndef RF_PARQUET_COLUMNS_H
#define RF_PARQUET_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "source/parquet_meta.h"

/* cfg.columns, parsed. */
typedef struct rf_pq_columns {
	char *image;  /* image=NAME, or NULL: found by its bytes */
	char *label;  /* label=NAME, or NULL: "label" when the files have it */
	int no_label; /* label= (nothing): no label column */
} rf_pq_columns;

/* spec: "image=NAME,label=NAME", either or both, in any order (NULL or
 * "": none). @return : 0, or RF_ECONFIG with err saying what is wrong (a
 * key other than image and label, one given twice, image= with no name);
 * -ENOMEM. */
int rfi_pq_columns_parse(const char *spec, rf_pq_columns *c, char *err, size_t errlen);
void rfi_pq_columns_free(rf_pq_columns *c);

/* The leaf a user's name for a column is: its path ("img.bytes"), a struct
 * whose `bytes` leaf it is ("img": the `datasets` Image struct), or, when
 * nothing is spelt so, the one path equal to it but for case, else the one
 * leaf below it (a list's "tags.list.element", which the checks refuse as
 * a list, naming it). -1: none. */
int rfi_pq_column_named(const rf_pq_meta *m, const char *name);

/* m's columns (leaf paths) for a refusal: "a, b, img.bytes" into buf. */
void rfi_pq_column_list(const rf_pq_meta *m, char *buf, size_t len);

/* A string label column's distinct values: each value gets an id in the
 * order first seen (rfi_pq_strset_add), then rfi_pq_strset_classes sorts
 * them and says which class each id is. Bounded: RF_PQ_CLASSES_MAX values,
 * RF_PQ_CLASS_BYTES_MAX bytes in all. */
#define RF_PQ_CLASSES_MAX (1u << 20)
#define RF_PQ_CLASS_BYTES_MAX ((size_t)64 << 20)
typedef struct rf_pq_strset {
	char **names;     /* by id, each NUL-terminated */
	uint32_t *lens;
	uint32_t n, cap;
	uint32_t *slots;  /* open addressing: id + 1, 0 empty; nslots a power of two */
	uint32_t nslots;
	size_t bytes;
} rf_pq_strset;

/* The id of value p[n] (added when new) in *id. @return : 0; 1 when the
 * set would pass its bounds (the caller refuses the column); -ENOMEM. */
int rfi_pq_strset_add(rf_pq_strset *s, const uint8_t *p, size_t n, uint32_t *id);
/* The values sorted (bytewise) into *names (s's strings move there: the
 * caller owns them, as rf_index.classes), and *remap[id] = the class of
 * id (the caller frees it). @return : 0 or -ENOMEM (s then untouched). */
int rfi_pq_strset_classes(rf_pq_strset *s, char ***names, uint32_t **remap);
void rfi_pq_strset_free(rf_pq_strset *s);

/* How a column's values are delivered as a field's bytes. */
typedef enum rf_pq_text {
	RF_PQ_TEXT_BYTES = 0, /* BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY: as they are */
	RF_PQ_TEXT_INT,       /* INT32, INT64: decimal */
	RF_PQ_TEXT_UINT32,    /* INT32 said UINT_8/16/32: decimal, unsigned */
	RF_PQ_TEXT_UINT64,    /* INT64 said UINT_64 */
	RF_PQ_TEXT_BOOL,      /* "true" / "false" */
	RF_PQ_TEXT_FLOAT,     /* the shortest decimal that reads back the same */
	RF_PQ_TEXT_DOUBLE,
} rf_pq_text;
rf_pq_text rfi_pq_text_of(const rf_pq_meta *m, uint32_t leaf);

/* A value (rf_pq_values: num for the numbers and booleans, ptr/len for the
 * binary types) as a field delivers it, text written into buf[32]. */
void rfi_pq_value_bytes(rf_pq_text how, const uint8_t *ptr, uint32_t len, int64_t num,
			char buf[32], const uint8_t **out, size_t *out_len);

#endif
