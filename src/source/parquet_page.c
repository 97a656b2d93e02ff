/* parquet_page.c - which columns can be read, dictionary pages, and data
 * pages opened: decompressed and cut into their levels and values
 * (parquet_page.h). The values themselves: parquet_values.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/parquet_codec.h"
#include "source/parquet_page.h"
#include "util/util.h"

/* "FILE: column PATH: " then the message. */
static int col_fail(const rf_pq_meta *m, uint32_t leaf, char *why, size_t len, const char *fmt,
		    ...) __attribute__((format(printf, 5, 6)));
static int col_fail(const rf_pq_meta *m, uint32_t leaf, char *why, size_t len, const char *fmt,
		    ...)
{
	int k = snprintf(why, len, "%s: column %s: ", m->file, m->leaves[leaf].path);
	if (k >= 0 && (size_t)k < len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why + k, len - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -1;
}

#define ENCODINGS_READ                                                                         \
	(1u << RF_PQ_ENC_PLAIN | 1u << RF_PQ_ENC_PLAIN_DICTIONARY | 1u << RF_PQ_ENC_RLE |        \
	 1u << RF_PQ_ENC_BIT_PACKED | 1u << RF_PQ_ENC_DELTA_BINARY_PACKED |                     \
	 1u << RF_PQ_ENC_DELTA_LENGTH_BYTE_ARRAY | 1u << RF_PQ_ENC_DELTA_BYTE_ARRAY |           \
	 1u << RF_PQ_ENC_RLE_DICTIONARY)

int rfi_pq_column_check(const rf_pq_meta *m, uint32_t leaf, char *why, size_t len)
{
	const rf_pq_leaf *l = &m->leaves[leaf];
	if (l->max_rep > 0)
		return col_fail(m, leaf, why, len, "a repeated column (a list), which ringfeed "
				"does not read");
	if (l->type < RF_PQ_BOOLEAN || l->type > RF_PQ_FIXED_LEN_BYTE_ARRAY || l->type == RF_PQ_INT96)
		return col_fail(m, leaf, why, len, "of type %s, which ringfeed does not read",
				rfi_pq_type_name(l->type));
	if (l->type == RF_PQ_FIXED_LEN_BYTE_ARRAY &&
	    (l->type_length <= 0 || (uint32_t)l->type_length > RF_PQ_PAGE_BYTES_MAX))
		return col_fail(m, leaf, why, len, "FIXED_LEN_BYTE_ARRAY of length %d",
				l->type_length);
	for (uint32_t g = 0; g < m->ngroups; g++) {
		const rf_pq_chunk *c = &m->groups[g].chunks[leaf];
		if (!rfi_pq_codec_built(c->codec)) {
			int k = snprintf(why, len, "%s: column %s, row group %u: ", m->file, l->path, g);
			char tail[200];
			(void)rfi_pq_decompress(c->codec, NULL, 0, NULL, 0, tail, sizeof(tail));
			if (k >= 0 && (size_t)k < len)
				snprintf(why + k, len - (size_t)k, "%s", tail);
			return -1;
		}
		uint32_t bad = c->encodings & ~ENCODINGS_READ;
		if (bad) {
			int e = 0;
			while (!(bad & (1u << e)))
				e++;
			return col_fail(m, leaf, why, len, "row group %u uses the encoding %s (%d), "
					"which ringfeed does not read", g, rfi_pq_encoding_name(e), e);
		}
	}
	return 0;
}

/* Decompresses a page's body (or the part of it from `skip` on, a v2
 * page's values) into a new buffer of want bytes, the expansion checked.
 * @return : the buffer, or NULL with why. */
static uint8_t *inflate_body(const rf_pq_meta *m, uint32_t g, uint32_t leaf, const uint8_t *src,
			     size_t n, size_t want, char *why, size_t len)
{
	int codec = m->groups[g].chunks[leaf].codec;
	if (want > (uint64_t)n * RF_PQ_EXPAND_MAX + RF_PQ_EXPAND_SLACK) {
		col_fail(m, leaf, why, len, "a page of %zu bytes claims %zu uncompressed, more than "
			 "ringfeed believes a page expands (%ux + %u bytes)", n, want,
			 RF_PQ_EXPAND_MAX, RF_PQ_EXPAND_SLACK);
		return NULL;
	}
	uint8_t *out = malloc(want ? want : 1);
	char tail[200];
	if (!out) {
		col_fail(m, leaf, why, len, "out of memory for a page of %zu bytes", want);
		return NULL;
	}
	if (rfi_pq_decompress(codec, src, n, out, want, tail, sizeof(tail)) < 0) {
		free(out);
		col_fail(m, leaf, why, len, "row group %u: %s", g, tail);
		return NULL;
	}
	return out;
}

/* ---- dictionaries -------------------------------------------------------- */

/* The dictionary's values, PLAIN, from d->data[n]. */
static int dict_values(const rf_pq_leaf *l, size_t n, rf_pq_dict *d)
{
	const uint8_t *p = d->data, *end = d->data + n;
	int number = l->type == RF_PQ_INT32 || l->type == RF_PQ_INT64 || l->type == RF_PQ_FLOAT ||
		     l->type == RF_PQ_DOUBLE;
	size_t min = l->type == RF_PQ_BYTE_ARRAY || l->type == RF_PQ_INT32 || l->type == RF_PQ_FLOAT
			     ? 4
		     : l->type == RF_PQ_INT64 || l->type == RF_PQ_DOUBLE ? 8
		     : l->type == RF_PQ_FIXED_LEN_BYTE_ARRAY ? (size_t)l->type_length : 0;
	if (min == 0 || (uint64_t)d->count * min > n)
		return -1;
	if (number) { /* FLOAT, DOUBLE: their bits */
		d->num = calloc(d->count + 1, sizeof(*d->num));
		if (!d->num)
			return -1;
		for (uint32_t i = 0; i < d->count; i++, p += min) {
			int64_t v = 0;
			memcpy(&v, p, min); /* little-endian hosts only (the library's) */
			d->num[i] = l->type == RF_PQ_INT32 ? (int64_t)(int32_t)v : v;
		}
		return 0;
	}
	d->ptr = calloc(d->count + 1, sizeof(*d->ptr));
	d->len = calloc(d->count + 1, sizeof(*d->len));
	if (!d->ptr || !d->len)
		return -1;
	for (uint32_t i = 0; i < d->count; i++) {
		uint32_t k = (uint32_t)min;
		if (l->type == RF_PQ_BYTE_ARRAY) {
			if (end - p < 4)
				return -1;
			k = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			    (uint32_t)p[3] << 24;
			p += 4;
		}
		if (k > (size_t)(end - p))
			return -1;
		d->ptr[i] = p;
		d->len[i] = k;
		p += k;
	}
	return 0;
}

int rfi_pq_dict_load(const rf_pq_meta *m, uint32_t g, uint32_t leaf, const uint8_t *page,
		     size_t n, rf_pq_dict *d, char *why, size_t len)
{
	rf_pq_page_header h;
	size_t hl;
	char tail[200];
	memset(d, 0, sizeof(*d));
	if (rfi_pq_page_header_parse(page, n, n, &h, &hl, tail, sizeof(tail)) < 0)
		return col_fail(m, leaf, why, len, "row group %u, the dictionary page: %s", g, tail);
	if (h.type != RF_PQ_DICTIONARY_PAGE)
		return col_fail(m, leaf, why, len, "row group %u: the chunk's dictionary_page_offset "
				"points at a page of type %d, not a dictionary page", g, h.type);
	if (h.encoding != RF_PQ_ENC_PLAIN && h.encoding != RF_PQ_ENC_PLAIN_DICTIONARY)
		return col_fail(m, leaf, why, len, "row group %u: a dictionary page in %s", g,
				rfi_pq_encoding_name(h.encoding));
	d->data = inflate_body(m, g, leaf, page + hl, (size_t)h.compressed_size,
			       (size_t)h.uncompressed_size, why, len);
	if (!d->data)
		return -1;
	d->count = (uint32_t)h.num_values;
	d->data_len = (size_t)h.uncompressed_size;
	if (dict_values(&m->leaves[leaf], (size_t)h.uncompressed_size, d) < 0) {
		rfi_pq_dict_free(d);
		return col_fail(m, leaf, why, len, "row group %u: the dictionary page's %d values "
				"do not fit in its %d bytes", g, h.num_values, h.uncompressed_size);
	}
	return 0;
}

void rfi_pq_dict_free(rf_pq_dict *d)
{
	free(d->data);
	free(d->ptr);
	free(d->len);
	free(d->num);
	memset(d, 0, sizeof(*d));
}

/* ---- data pages ---------------------------------------------------------- */

/* A v1 page: the whole body compressed; levels are length-prefixed. */
static int open_v1(rf_pq_page *pg, const uint8_t *body, char *why, size_t len)
{
	const rf_pq_meta *m = pg->m;
	const rf_pq_leaf *l = &m->leaves[pg->leaf];
	size_t n = (size_t)pg->h.uncompressed_size;
	const uint8_t *p = body;
	if (m->groups[pg->group].chunks[pg->leaf].codec != RF_PQ_UNCOMPRESSED) {
		pg->owned = inflate_body(m, pg->group, pg->leaf, body, (size_t)pg->h.compressed_size,
					 n, why, len);
		if (!pg->owned)
			return -1;
		p = pg->owned;
	} else if (pg->h.compressed_size != pg->h.uncompressed_size) {
		return col_fail(m, pg->leaf, why, len, "an uncompressed page of %d bytes says %d "
				"uncompressed", pg->h.compressed_size, pg->h.uncompressed_size);
	}
	if (l->max_def > 0) {
		if (pg->h.def_encoding != RF_PQ_ENC_RLE)
			return col_fail(m, pg->leaf, why, len, "definition levels in %s, which "
					"ringfeed does not read (RLE only)",
					rfi_pq_encoding_name(pg->h.def_encoding));
		uint32_t k = n < 4 ? UINT32_MAX : (uint32_t)p[0] | (uint32_t)p[1] << 8 |
						   (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		if (n < 4 || k > n - 4)
			return col_fail(m, pg->leaf, why, len, "the definition levels (%u bytes) run "
					"past the page (%zu bytes)", k, n);
		pg->def = p + 4;
		pg->def_len = k;
		p += 4 + k;
		n -= 4 + k;
	}
	pg->values = p;
	pg->values_len = n;
	return 0;
}

/* A v2 page: levels first, never compressed; then the values, compressed
 * when is_compressed. */
static int open_v2(rf_pq_page *pg, const uint8_t *body, char *why, size_t len)
{
	const rf_pq_meta *m = pg->m;
	const rf_pq_page_header *h = &pg->h;
	size_t lv = (size_t)h->rep_bytes + (size_t)h->def_bytes;
	size_t cn = (size_t)h->compressed_size - lv, un = (size_t)h->uncompressed_size - lv;
	if (h->num_rows != h->num_values)
		return col_fail(m, pg->leaf, why, len, "a v2 page of %d values in %d rows in a column "
				"that is not repeated", h->num_values, h->num_rows);
	pg->def = body + h->rep_bytes;
	pg->def_len = (size_t)h->def_bytes;
	if (h->is_compressed && m->groups[pg->group].chunks[pg->leaf].codec != RF_PQ_UNCOMPRESSED) {
		pg->owned = inflate_body(m, pg->group, pg->leaf, body + lv, cn, un, why, len);
		if (!pg->owned)
			return -1;
		pg->values = pg->owned;
		pg->values_len = un;
		return 0;
	}
	if (cn != un)
		return col_fail(m, pg->leaf, why, len, "an uncompressed v2 page of %zu value bytes "
				"says %zu", cn, un);
	pg->values = body + lv;
	pg->values_len = cn;
	return 0;
}

int rfi_pq_page_open(const rf_pq_meta *m, uint32_t g, uint32_t leaf, const uint8_t *page,
		     size_t n, rf_pq_page *pg, char *why, size_t len)
{
	char tail[200];
	memset(pg, 0, sizeof(*pg));
	pg->m = m;
	pg->group = g;
	pg->leaf = leaf;
	if (rfi_pq_page_header_parse(page, n, n, &pg->h, &pg->header_len, tail, sizeof(tail)) < 0)
		return col_fail(m, leaf, why, len, "row group %u: %s", g, tail);
	if (pg->h.type == RF_PQ_INDEX_PAGE)
		return 1;
	if (pg->h.type == RF_PQ_DICTIONARY_PAGE)
		return col_fail(m, leaf, why, len, "row group %u: a second dictionary page among the "
				"data pages", g);
	if ((int64_t)pg->h.num_values > m->groups[g].num_rows)
		return col_fail(m, leaf, why, len, "row group %u: a page of %d rows in a row group "
				"of %lld", g, pg->h.num_values, (long long)m->groups[g].num_rows);
	pg->rows = (uint32_t)pg->h.num_values;
	const uint8_t *body = page + pg->header_len;
	int rc = pg->h.type == RF_PQ_DATA_PAGE ? open_v1(pg, body, why, len)
					       : open_v2(pg, body, why, len);
	if (rc < 0)
		rfi_pq_page_close(pg);
	return rc;
}

void rfi_pq_page_close(rf_pq_page *pg)
{
	free(pg->owned);
	pg->owned = NULL;
}
