/* parquet_encoding.h - the decoders of Parquet's value and level encodings
 * (parquet-format's Encodings.md) as streams: the RLE/bit-packed hybrid
 * (definition levels, dictionary indices, booleans) and DELTA_BINARY_PACKED
 * (integers; the lengths of DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY).
 * The Parquet kind's (parquet_*.c); private to the library.
 *
 * A stream reads only the bytes it was given and yields at most the count
 * of values it was told to expect: a run that claims more (a level run
 * longer than the page) or bytes that end early stop it with err set (a
 * static string). Nothing is allocated. */
#ifndef RF_PARQUET_ENCODING_H
#define RF_PARQUET_ENCODING_H

#include <stddef.h>
#include <stdint.h>

/* The RLE/bit-packed hybrid of values width bits wide (0..32). */
typedef struct rf_pq_rle {
	const uint8_t *p, *end;
	int width;
	uint64_t left;        /* values the caller still expects */
	uint32_t run;         /* values left in the current run */
	int packed;           /* the current run is bit-packed */
	uint32_t value;       /* an RLE run's value */
	const uint8_t *bits;  /* a bit-packed run's next value's byte... */
	uint32_t bit;         /* ...and bit */
	const char *err;
} rf_pq_rle;

/* Starts a stream over p[n] (no length prefix) that must yield expect
 * values. */
void rfi_pq_rle_init(rf_pq_rle *r, const uint8_t *p, size_t n, int width, uint64_t expect);
/* The next value. @return : 0, or -1 (r->err set: past expect, or corrupt). */
int rfi_pq_rle_next(rf_pq_rle *r, uint32_t *v);

/* The bit width of values 0..max (0 for max 0). */
int rfi_pq_bit_width(uint32_t max);

/* DELTA_BINARY_PACKED. */
typedef struct rf_pq_delta {
	const uint8_t *p, *end;
	uint64_t total;          /* values the header says */
	uint64_t done;           /* values yielded */
	uint32_t block, minis;   /* values a block, miniblocks a block */
	uint32_t per_mini;       /* values a miniblock */
	int64_t last;            /* the previous value */
	int64_t min_delta;       /* this block's */
	const uint8_t *widths;   /* this block's miniblock widths (NULL before the first) */
	uint32_t mini, in_mini;  /* the current miniblock and the values read of it */
	const uint8_t *mini_data;
	const char *err;
} rf_pq_delta;

/* Reads the header at p[n]; total values at most max_values.
 * @return : 0, or -1 (d->err set). */
int rfi_pq_delta_init(rf_pq_delta *d, const uint8_t *p, size_t n, uint64_t max_values);
/* The next value (arithmetic wraps as the spec's two's complement does).
 * @return : 0, or -1 (err set: no value left, or corrupt). */
int rfi_pq_delta_next(rf_pq_delta *d, int64_t *v);
/* Where the stream's bytes end (all its values read or skipped: the bytes
 * of a DELTA_LENGTH_BYTE_ARRAY's data follow). Reads what is left.
 * @return : the end, or NULL (err set). */
const uint8_t *rfi_pq_delta_end(rf_pq_delta *d);

#endif
