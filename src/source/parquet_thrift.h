/* parquet_thrift.h - a reader of the Thrift compact protocol, as Parquet's
 * footer, page headers and page index are written in it. The Parquet kind's
 * (parquet_*.c); private to the library.
 *
 * Every read is bounded by the buffer it was given: a read past the end, a
 * varint longer than its type, a length larger than what is left, or
 * structures nested deeper than RF_THRIFT_DEPTH_MAX set a sticky error and
 * return zeros, so that a parser can read a whole struct and look at
 * t->err once. Unknown fields are skipped as the protocol says (skip is the
 * only recursion, and it stops at the depth limit). Nothing is allocated. */
#ifndef RF_PARQUET_THRIFT_H
#define RF_PARQUET_THRIFT_H

#include <stddef.h>
#include <stdint.h>

/* Nesting of structs, lists and maps a reader follows; Parquet's deepest
 * (FileMetaData > RowGroup > ColumnChunk > ColumnMetaData > Statistics)
 * is 6 with the lists between them. */
#define RF_THRIFT_DEPTH_MAX 24

/* Compact protocol type ids (the low nibble of a field header). */
enum {
	RF_THRIFT_STOP = 0,
	RF_THRIFT_TRUE = 1,   /* a bool field whose value is true */
	RF_THRIFT_FALSE = 2,  /* a bool field whose value is false; in a list: 1 byte */
	RF_THRIFT_I8 = 3,
	RF_THRIFT_I16 = 4,
	RF_THRIFT_I32 = 5,
	RF_THRIFT_I64 = 6,
	RF_THRIFT_DOUBLE = 7,
	RF_THRIFT_BINARY = 8,
	RF_THRIFT_LIST = 9,
	RF_THRIFT_SET = 10,
	RF_THRIFT_MAP = 11,
	RF_THRIFT_STRUCT = 12,
};

typedef struct rf_thrift {
	const uint8_t *p, *end; /* what is left to read */
	int depth;              /* structs/lists entered and not left */
	const char *err;        /* the first error (a static string), NULL while none */
} rf_thrift;

/* One struct being read: the previous field id (compact field headers are
 * deltas from it). */
typedef struct rf_thrift_struct {
	int16_t last;
} rf_thrift_struct;

void rfi_thrift_init(rf_thrift *t, const uint8_t *p, size_t n);

/* Enters a struct (depth checked); fills *s. @return : 0, or -1 (t->err set). */
int rfi_thrift_struct_begin(rf_thrift *t, rf_thrift_struct *s);
/* Leaves it (after rfi_thrift_field returned 0). */
void rfi_thrift_struct_end(rf_thrift *t);

/* The next field of struct s: its id and type (RF_THRIFT_TRUE/FALSE for a
 * bool, whose value is the type itself).
 * @return : 1 for a field; 0 at the struct's end or on an error (t->err). */
int rfi_thrift_field(rf_thrift *t, rf_thrift_struct *s, int16_t *id, int *type);

/* A list's or set's header: element type and count. The count is checked
 * against the bytes left (every element but a bool or an empty struct
 * takes at least one byte; those take one too in a list), so that a caller
 * may allocate count elements. Enters the list (depth); leave with
 * rfi_thrift_list_end. @return : the count, or -1 (t->err set). */
int64_t rfi_thrift_list_begin(rf_thrift *t, int *elem_type);
void rfi_thrift_list_end(rf_thrift *t);

/* Values. type is the field's or the list element's type (a bool field's
 * value is its type: rfi_thrift_bool reads fields, not list elements, which
 * only rfi_thrift_skip meets in Parquet's structs). Each checks
 * that type is what it reads and sets t->err otherwise ("a field of the
 * wrong type"). */
int64_t rfi_thrift_int(rf_thrift *t, int type);       /* i8, i16, i32, i64 */
int rfi_thrift_bool(rf_thrift *t, int type);
/* A binary/string: points into the buffer, *n bytes (0 and NULL on error). */
const uint8_t *rfi_thrift_binary(rf_thrift *t, int type, uint32_t *n);

/* Skips one value of the given type (structs, lists and maps whole), to
 * the depth limit. */
void rfi_thrift_skip(rf_thrift *t, int type);

/* Sets t->err to why unless an error is set already (the first one wins). */
void rfi_thrift_fail(rf_thrift *t, const char *why);

#endif
