/* parquet_values.c - the values of rows [a, b) of an open data page
 * (parquet_page.h): the definition levels walked to b, then the page's
 * values walked as a stream in their encoding, skipping the non-null
 * values before a. A page is at most RF_PQ_PAGE_ROWS_MAX rows and a read
 * walks it once, so nothing here is quadratic in a page. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/parquet_encoding.h"
#include "source/parquet_page.h"
#include "util/util.h"

/* DELTA_BYTE_ARRAY's rebuilt values, at most this many times the page's
 * bytes (plus the slack): shared prefixes make them longer than the page,
 * but not without bound. */
#define REBUILT_MAX 64u
#define REBUILT_SLACK (1u << 20)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One value from the stream: bytes for the byte-array types, num for the
 * others. */
typedef struct value {
	const uint8_t *p;
	uint32_t n;
	int64_t num;
} value;

/* The stream of a page's non-null values in their encoding. */
typedef struct cursor {
	const rf_pq_page *pg;
	const rf_pq_leaf *leaf;
	const rf_pq_dict *dict;
	int enc;
	const uint8_t *p, *end;   /* PLAIN: the next value; the DELTA_*: the data */
	uint64_t k;               /* values read so far */
	rf_pq_rle rle;            /* dictionary indices; RLE booleans */
	rf_pq_delta ints;         /* DELTA_BINARY_PACKED; DELTA_*'s lengths */
	rf_pq_delta prefix;       /* DELTA_BYTE_ARRAY's prefix lengths */
	uint8_t *prev;            /* DELTA_BYTE_ARRAY: the previous value */
	size_t prev_len, prev_cap, rebuilt, rebuilt_max;
	const char *err;
} cursor;

static int plain_next(cursor *c, value *v)
{
	const rf_pq_leaf *l = c->leaf;
	size_t w = l->type == RF_PQ_INT32 || l->type == RF_PQ_FLOAT    ? 4
		   : l->type == RF_PQ_INT64 || l->type == RF_PQ_DOUBLE ? 8
		   : l->type == RF_PQ_FIXED_LEN_BYTE_ARRAY ? (size_t)l->type_length : 0;
	if (l->type == RF_PQ_BOOLEAN) {
		if (c->k / 8 >= (uint64_t)(c->end - c->p))
			return c->err = "PLAIN booleans end before the page's values", -1;
		v->num = (c->p[c->k / 8] >> (c->k % 8)) & 1;
		return 0;
	}
	if (l->type == RF_PQ_BYTE_ARRAY) {
		if (c->end - c->p < 4 || le32(c->p) > (size_t)(c->end - c->p) - 4)
			return c->err = "a PLAIN BYTE_ARRAY value runs past the page", -1;
		v->n = le32(c->p);
		v->p = c->p + 4;
		c->p += 4 + v->n;
		return 0;
	}
	if ((size_t)(c->end - c->p) < w)
		return c->err = "PLAIN values end before the page's rows", -1;
	v->p = c->p;
	v->n = (uint32_t)w;
	if (l->type != RF_PQ_FIXED_LEN_BYTE_ARRAY) {
		int64_t x = 0;
		memcpy(&x, c->p, w);
		v->num = l->type == RF_PQ_INT32 ? (int64_t)(int32_t)x : x; /* FLOAT, DOUBLE: bits */
	}
	c->p += w;
	return 0;
}

static int dict_next(cursor *c, value *v)
{
	uint32_t i;
	if (rfi_pq_rle_next(&c->rle, &i) < 0)
		return c->err = c->rle.err, -1;
	if (i >= c->dict->count)
		return c->err = "a dictionary index past the dictionary's end", -1;
	if (c->dict->num)
		v->num = c->dict->num[i];
	else
		v->p = c->dict->ptr[i], v->n = c->dict->len[i];
	return 0;
}

/* The next byte array of DELTA_LENGTH_BYTE_ARRAY (or DELTA_BYTE_ARRAY's
 * suffix): its length from the lengths' stream, its bytes from the data. */
static int length_next(cursor *c, value *v)
{
	int64_t n;
	if (rfi_pq_delta_next(&c->ints, &n) < 0)
		return c->err = c->ints.err, -1;
	if (n < 0 || n > c->end - c->p)
		return c->err = "a byte array's length runs past the page's data", -1;
	v->p = c->p;
	v->n = (uint32_t)n;
	c->p += n;
	return 0;
}

static int prefix_next(cursor *c, value *v)
{
	int64_t pre;
	value suf;
	if (rfi_pq_delta_next(&c->prefix, &pre) < 0)
		return c->err = c->prefix.err, -1;
	if (length_next(c, &suf) < 0)
		return -1;
	if (pre < 0 || (size_t)pre > c->prev_len)
		return c->err = "a DELTA_BYTE_ARRAY prefix longer than the value before", -1;
	size_t n = (size_t)pre + suf.n;
	if (n > UINT32_MAX || (c->rebuilt += n) > c->rebuilt_max)
		return c->err = "DELTA_BYTE_ARRAY values longer than ringfeed rebuilds from a page", -1;
	if (n == 0) { /* an empty value: present, so not a NULL pointer */
		static const uint8_t empty[1];
		c->prev_len = 0;
		v->p = empty;
		v->n = 0;
		return 0;
	}
	if (n > c->prev_cap) {
		uint8_t *np = realloc(c->prev, n);
		if (!np)
			return c->err = "out of memory", -1;
		c->prev = np;
		c->prev_cap = n;
	}
	memcpy(c->prev + pre, suf.p, suf.n); /* the prefix is in place already */
	c->prev_len = n;
	v->p = c->prev;
	v->n = (uint32_t)n;
	return 0;
}

static int next(cursor *c, value *v)
{
	int rc;
	memset(v, 0, sizeof(*v));
	switch (c->enc) {
	case RF_PQ_ENC_PLAIN: rc = plain_next(c, v); break;
	case RF_PQ_ENC_PLAIN_DICTIONARY:
	case RF_PQ_ENC_RLE_DICTIONARY: rc = dict_next(c, v); break;
	case RF_PQ_ENC_RLE: {
		uint32_t b;
		rc = rfi_pq_rle_next(&c->rle, &b);
		if (rc < 0)
			c->err = c->rle.err;
		v->num = b;
		break;
	}
	case RF_PQ_ENC_DELTA_BINARY_PACKED:
		rc = rfi_pq_delta_next(&c->ints, &v->num);
		if (rc < 0)
			c->err = c->ints.err;
		else if (c->leaf->type == RF_PQ_INT32 && (v->num < INT32_MIN || v->num > INT32_MAX))
			v->num = (int32_t)(uint32_t)v->num; /* the spec's int32 wraparound */
		break;
	case RF_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: rc = length_next(c, v); break;
	case RF_PQ_ENC_DELTA_BYTE_ARRAY: rc = prefix_next(c, v); break;
	default: c->err = "an encoding ringfeed does not read"; return -1;
	}
	c->k++;
	return rc;
}

/* The lengths' stream at p and where the data after it starts. */
static int lengths_start(cursor *c, rf_pq_delta *d, const uint8_t *p, uint64_t max)
{
	rf_pq_delta scan;
	if (rfi_pq_delta_init(d, p, (size_t)(c->end - p), max) < 0)
		return c->err = d->err, -1;
	scan = *d;
	const uint8_t *data = rfi_pq_delta_end(&scan);
	if (!data)
		return c->err = scan.err, -1;
	c->p = data;
	return 0;
}

static int which_types(const cursor *c)
{
	int t = c->leaf->type, bytes = t == RF_PQ_BYTE_ARRAY || t == RF_PQ_FIXED_LEN_BYTE_ARRAY;
	switch (c->enc) {
	case RF_PQ_ENC_PLAIN: return 1;
	case RF_PQ_ENC_PLAIN_DICTIONARY:
	case RF_PQ_ENC_RLE_DICTIONARY: return t != RF_PQ_BOOLEAN;
	case RF_PQ_ENC_RLE: return t == RF_PQ_BOOLEAN;
	case RF_PQ_ENC_DELTA_BINARY_PACKED: return t == RF_PQ_INT32 || t == RF_PQ_INT64;
	case RF_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return t == RF_PQ_BYTE_ARRAY;
	case RF_PQ_ENC_DELTA_BYTE_ARRAY: return bytes;
	default: return 0;
	}
}

static int cursor_init(cursor *c, const rf_pq_page *pg, const rf_pq_dict *dict)
{
	memset(c, 0, sizeof(*c));
	c->pg = pg;
	c->leaf = &pg->m->leaves[pg->leaf];
	c->dict = dict;
	c->enc = pg->h.encoding;
	c->p = pg->values;
	c->end = pg->values + pg->values_len;
	c->rebuilt_max = (size_t)pg->values_len * REBUILT_MAX + REBUILT_SLACK;
	uint64_t max = pg->rows;
	if (!which_types(c))
		return c->err = "an encoding this column's type cannot have, or that ringfeed does "
				"not read", -1;
	switch (c->enc) {
	case RF_PQ_ENC_PLAIN_DICTIONARY:
	case RF_PQ_ENC_RLE_DICTIONARY:
		if (!dict)
			return c->err = "a dictionary-encoded page in a chunk without a dictionary", -1;
		if (c->p >= c->end)
			return c->err = "a dictionary-encoded page without its indices' bit width", -1;
		rfi_pq_rle_init(&c->rle, c->p + 1, (size_t)(c->end - c->p - 1), c->p[0], max);
		return c->rle.err ? (c->err = c->rle.err, -1) : 0;
	case RF_PQ_ENC_RLE:
		if (c->end - c->p < 4 || le32(c->p) > (size_t)(c->end - c->p) - 4)
			return c->err = "RLE booleans' length runs past the page", -1;
		rfi_pq_rle_init(&c->rle, c->p + 4, le32(c->p), 1, max);
		return 0;
	case RF_PQ_ENC_DELTA_BINARY_PACKED:
		if (rfi_pq_delta_init(&c->ints, c->p, pg->values_len, max) < 0)
			return c->err = c->ints.err, -1;
		return 0;
	case RF_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return lengths_start(c, &c->ints, c->p, max);
	case RF_PQ_ENC_DELTA_BYTE_ARRAY: {
		rf_pq_delta scan;
		if (rfi_pq_delta_init(&c->prefix, c->p, pg->values_len, max) < 0)
			return c->err = c->prefix.err, -1;
		scan = c->prefix;
		const uint8_t *suffixes = rfi_pq_delta_end(&scan);
		if (!suffixes)
			return c->err = scan.err, -1;
		return lengths_start(c, &c->ints, suffixes, max);
	}
	default: return 0;
	}
}

static int rows_fail(const rf_pq_page *pg, uint32_t row, char *why, size_t len, const char *what)
{
	const rf_pq_meta *m = pg->m;
	rfi_fmt(why, len, "%s: column %s, row group %u, page row %u (%s): %s", m->file,
		m->leaves[pg->leaf].path, pg->group, row, rfi_pq_encoding_name(pg->h.encoding),
		what);
	return -1;
}

static int alloc_out(rf_pq_values *out, uint32_t n, int bytes)
{
	out->count = n;
	out->present = calloc(n + 1, 1);
	if (bytes) {
		out->ptr = calloc(n + 1, sizeof(*out->ptr));
		out->len = calloc(n + 1, sizeof(*out->len));
	} else {
		out->num = calloc(n + 1, sizeof(*out->num));
	}
	return out->present && (bytes ? out->ptr && out->len : out->num != NULL) ? 0 : -1;
}

/* Copies a value that lives in the cursor's scratch (DELTA_BYTE_ARRAY)
 * into out's arena; the pointers are set once the arena stops moving. */
static int keep(rf_pq_values *out, const value *v, size_t *at)
{
	size_t need = out->arena_len + v->n + 1;
	if (need > out->arena_cap &&
	    rfi_grow(&out->arena, &out->arena_cap, need > 2 * out->arena_cap ? need
								     : 2 * out->arena_cap) < 0)
		return -1;
	*at = out->arena_len;
	memcpy(out->arena + out->arena_len, v->p, v->n);
	out->arena_len += v->n;
	return 0;
}

/* Rows [a, b): levels say which are present, the cursor gives their values. */
static int fill(const rf_pq_page *pg, cursor *c, uint32_t a, uint32_t b, rf_pq_values *out,
		char *why, size_t len)
{
	const rf_pq_leaf *l = c->leaf;
	int bytes = l->type == RF_PQ_BYTE_ARRAY || l->type == RF_PQ_FIXED_LEN_BYTE_ARRAY;
	int rebuilt = c->enc == RF_PQ_ENC_DELTA_BYTE_ARRAY;
	rf_pq_rle lv;
	size_t *at = NULL;
	if (l->max_def > 0)
		rfi_pq_rle_init(&lv, pg->def, pg->def_len, rfi_pq_bit_width((uint32_t)l->max_def),
				pg->rows);
	if (rebuilt && !(at = calloc(b - a + 1, sizeof(*at))))
		return rows_fail(pg, a, why, len, "out of memory");
	for (uint32_t i = 0; i < b; i++) {
		uint32_t d = 0;
		value v;
		if (l->max_def > 0 && rfi_pq_rle_next(&lv, &d) < 0)
			return free(at), rows_fail(pg, i, why, len, lv.err);
		if (d > (uint32_t)l->max_def)
			return free(at), rows_fail(pg, i, why, len, "a definition level over the "
						   "column's maximum");
		if (d < (uint32_t)l->max_def)
			continue; /* a null: no value in the stream */
		if (next(c, &v) < 0)
			return free(at), rows_fail(pg, i, why, len, c->err);
		if (l->type == RF_PQ_FIXED_LEN_BYTE_ARRAY && v.n != (uint32_t)l->type_length)
			return free(at), rows_fail(pg, i, why, len, "a FIXED_LEN_BYTE_ARRAY value "
						   "whose length is not the column's");
		if (i < a)
			continue;
		out->present[i - a] = 1;
		if (!bytes)
			out->num[i - a] = v.num;
		else if (rebuilt && keep(out, &v, &at[i - a]) < 0)
			return free(at), rows_fail(pg, i, why, len, "out of memory");
		else
			out->ptr[i - a] = v.p, out->len[i - a] = v.n;
	}
	for (uint32_t i = 0; rebuilt && i < b - a; i++)
		if (out->present[i])
			out->ptr[i] = out->arena + at[i];
	free(at);
	return 0;
}

int rfi_pq_page_rows(const rf_pq_page *pg, const rf_pq_dict *dict, uint32_t a, uint32_t b,
		     rf_pq_values *out, char *why, size_t len)
{
	cursor c;
	const rf_pq_leaf *l = &pg->m->leaves[pg->leaf];
	rfi_pq_values_free(out);
	if (a > b || b > pg->rows)
		return rows_fail(pg, b, why, len, "rows asked for past the page's end");
	if (cursor_init(&c, pg, dict) < 0)
		return rows_fail(pg, 0, why, len, c.err);
	int bytes = l->type == RF_PQ_BYTE_ARRAY || l->type == RF_PQ_FIXED_LEN_BYTE_ARRAY;
	int rc = alloc_out(out, b - a, bytes) < 0 ? rows_fail(pg, a, why, len, "out of memory")
						  : fill(pg, &c, a, b, out, why, len);
	free(c.prev);
	if (rc < 0)
		rfi_pq_values_free(out);
	return rc;
}

void rfi_pq_values_free(rf_pq_values *v)
{
	free(v->present);
	free(v->ptr);
	free(v->len);
	free(v->num);
	free(v->arena);
	memset(v, 0, sizeof(*v));
}
