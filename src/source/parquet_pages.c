/* parquet_pages.c - where a column chunk's pages are: page headers
 * (PageHeader with its DataPageHeader, DataPageHeaderV2 or
 * DictionaryPageHeader) and the page index's OffsetIndex (parquet_meta.h).
 * Each size is checked against the bytes that must hold it. */
#include <stdlib.h>

#include "source/parquet_meta.h"
#include "source/parquet_thrift.h"
#include "util/util.h"

static void data_page_v1(rf_thrift *t, rf_pq_page_header *h)
{
	rf_thrift_struct s;
	int16_t id;
	int type;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		switch (id) {
		case 1: h->num_values = (int32_t)rfi_thrift_int(t, type); break;
		case 2: h->encoding = (int32_t)rfi_thrift_int(t, type); break;
		case 3: h->def_encoding = (int32_t)rfi_thrift_int(t, type); break;
		case 4: h->rep_encoding = (int32_t)rfi_thrift_int(t, type); break;
		default: rfi_thrift_skip(t, type); break;
		}
	}
	rfi_thrift_struct_end(t);
}

static void data_page_v2(rf_thrift *t, rf_pq_page_header *h)
{
	rf_thrift_struct s;
	int16_t id;
	int type;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		switch (id) {
		case 1: h->num_values = (int32_t)rfi_thrift_int(t, type); break;
		case 2: h->num_nulls = (int32_t)rfi_thrift_int(t, type); break;
		case 3: h->num_rows = (int32_t)rfi_thrift_int(t, type); break;
		case 4: h->encoding = (int32_t)rfi_thrift_int(t, type); break;
		case 5: h->def_bytes = (int32_t)rfi_thrift_int(t, type); break;
		case 6: h->rep_bytes = (int32_t)rfi_thrift_int(t, type); break;
		case 7: h->is_compressed = rfi_thrift_bool(t, type); break;
		default: rfi_thrift_skip(t, type); break;
		}
	}
	rfi_thrift_struct_end(t);
}

static void dictionary_page(rf_thrift *t, rf_pq_page_header *h)
{
	rf_thrift_struct s;
	int16_t id;
	int type;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		if (id == 1)
			h->num_values = (int32_t)rfi_thrift_int(t, type);
		else if (id == 2)
			h->encoding = (int32_t)rfi_thrift_int(t, type);
		else
			rfi_thrift_skip(t, type);
	}
	rfi_thrift_struct_end(t);
}

/* The header's numbers against each other and the bytes after it. */
static int check_header(const rf_pq_page_header *h, size_t body_room, int have_sub, char *why,
			size_t len)
{
	if (h->type < RF_PQ_DATA_PAGE || h->type > RF_PQ_DATA_PAGE_V2) {
		rfi_fmt(why, len, "a page of unknown type %d", h->type);
		return -1;
	}
	if (h->compressed_size < 0 || h->uncompressed_size < 0 ||
	    (uint32_t)h->compressed_size > RF_PQ_PAGE_BYTES_MAX ||
	    (uint32_t)h->uncompressed_size > RF_PQ_PAGE_BYTES_MAX) {
		rfi_fmt(why, len, "a page of %d bytes (%d uncompressed): negative or more than "
			"ringfeed reads in one page (%u)", h->compressed_size, h->uncompressed_size,
			RF_PQ_PAGE_BYTES_MAX);
		return -1;
	}
	if ((size_t)h->compressed_size > body_room) {
		rfi_fmt(why, len, "a page of %d bytes where its column chunk has %zu bytes left",
			h->compressed_size, body_room);
		return -1;
	}
	if (h->type == RF_PQ_INDEX_PAGE)
		return 0;
	if (!have_sub || h->num_values < 0 || (uint32_t)h->num_values > RF_PQ_PAGE_ROWS_MAX) {
		rfi_fmt(why, len, have_sub ? "a page of %d values (ringfeed reads at most %u a page)"
			: "a page header without its type's header", h->num_values,
			RF_PQ_PAGE_ROWS_MAX);
		return -1;
	}
	if (h->type == RF_PQ_DATA_PAGE_V2 &&
	    (h->def_bytes < 0 || h->rep_bytes < 0 || h->num_nulls < 0 ||
	     h->num_nulls > h->num_values || h->num_rows < 0 || h->num_rows > h->num_values ||
	     (int64_t)h->def_bytes + h->rep_bytes > h->compressed_size ||
	     (int64_t)h->def_bytes + h->rep_bytes > h->uncompressed_size)) {
		rfi_fmt(why, len, "a v2 data page whose counts or level sizes do not fit (values %d, "
			"nulls %d, rows %d, level bytes %d + %d, page %d bytes)", h->num_values,
			h->num_nulls, h->num_rows, h->def_bytes, h->rep_bytes, h->compressed_size);
		return -1;
	}
	return 0;
}

int rfi_pq_page_header_parse(const uint8_t *p, size_t n, size_t room, rf_pq_page_header *h,
			     size_t *header_len, char *why, size_t len)
{
	rf_thrift t;
	rf_thrift_struct s;
	int16_t id;
	int type, have_sub = 0;
	if (n > room)
		n = room;
	*h = (rf_pq_page_header){.type = -1, .compressed_size = -1, .uncompressed_size = -1,
				 .num_values = -1, .encoding = -1, .is_compressed = 1};
	rfi_thrift_init(&t, p, n);
	if (rfi_thrift_struct_begin(&t, &s) == 0) {
		while (rfi_thrift_field(&t, &s, &id, &type)) {
			switch (id) {
			case 1: h->type = (int32_t)rfi_thrift_int(&t, type); break;
			case 2: h->uncompressed_size = (int32_t)rfi_thrift_int(&t, type); break;
			case 3: h->compressed_size = (int32_t)rfi_thrift_int(&t, type); break;
			case 5: data_page_v1(&t, h), have_sub = h->type == RF_PQ_DATA_PAGE; break;
			case 7: dictionary_page(&t, h), have_sub = h->type == RF_PQ_DICTIONARY_PAGE; break;
			case 8: data_page_v2(&t, h), have_sub = h->type == RF_PQ_DATA_PAGE_V2; break;
			default: rfi_thrift_skip(&t, type); break;
			}
		}
		rfi_thrift_struct_end(&t);
	}
	if (t.err) {
		rfi_fmt(why, len, "a corrupt page header: %s", t.err);
		/* the header may go on past the bytes present: more may parse it */
		return n < room ? -2 : -1;
	}
	*header_len = (size_t)(t.p - p);
	return check_header(h, room - *header_len, have_sub, why, len);
}

static int page_location(rf_thrift *t, rf_pq_page_loc *l)
{
	rf_thrift_struct s;
	int16_t id;
	int type, seen = 0;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return -1;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		if (id == 1)
			l->offset = rfi_thrift_int(t, type), seen |= 1;
		else if (id == 2)
			l->size = (int32_t)rfi_thrift_int(t, type), seen |= 2;
		else if (id == 3)
			l->first_row = rfi_thrift_int(t, type), seen |= 4;
		else
			rfi_thrift_skip(t, type);
	}
	rfi_thrift_struct_end(t);
	return seen == 7 ? 0 : -1;
}

/* Page k against the chunk and page k - 1. */
static int check_location(const rf_pq_page_loc *l, uint32_t k, const rf_pq_chunk *c,
			  int64_t rows, char *why, size_t len)
{
	int64_t chunk_end = c->start + c->compressed_size;
	int64_t prev_end = k ? l[-1].offset + l[-1].size : c->start;
	int64_t prev_row = k ? l[-1].first_row : -1;
	if (l->size <= 0 || l->offset < prev_end || l->offset > chunk_end ||
	    l->size > chunk_end - l->offset) {
		rfi_fmt(why, len, "the OffsetIndex's page %u (offset %lld, %d bytes) lies outside "
			"its column chunk (bytes %lld to %lld) or overlaps the page before", k,
			(long long)l->offset, l->size, (long long)c->start, (long long)chunk_end);
		return -1;
	}
	if (l->first_row <= prev_row || l->first_row >= rows || (k == 0 && l->first_row != 0)) {
		rfi_fmt(why, len, "the OffsetIndex's page %u starts at row %lld (the page before at "
			"%lld, the row group has %lld rows)", k, (long long)l->first_row,
			(long long)prev_row, (long long)rows);
		return -1;
	}
	return 0;
}

int rfi_pq_offset_index_parse(const uint8_t *p, size_t n, const rf_pq_chunk *c, int64_t rows,
			      rf_pq_page_loc **locs, uint32_t *count, char *why, size_t len)
{
	rf_thrift t;
	rf_thrift_struct s;
	int16_t id;
	int type, et;
	rf_pq_page_loc *l = NULL;
	int64_t nl = -1;
	*locs = NULL;
	*count = 0;
	rfi_thrift_init(&t, p, n);
	if (rfi_thrift_struct_begin(&t, &s) == 0) {
		while (rfi_thrift_field(&t, &s, &id, &type)) {
			if (id != 1 || type != RF_THRIFT_LIST || l) {
				rfi_thrift_skip(&t, type);
				continue;
			}
			nl = rfi_thrift_list_begin(&t, &et);
			/* a PageLocation is 3 fields and a stop: 7 bytes at least */
			if (nl < 0 || et != RF_THRIFT_STRUCT || (uint64_t)nl * 7 > n) {
				rfi_thrift_fail(&t, "a page_locations list longer than its bytes hold");
				break;
			}
			l = calloc((size_t)nl + 1, sizeof(*l));
			if (!l) {
				rfi_thrift_fail(&t, "out of memory");
				break;
			}
			for (int64_t k = 0; k < nl && !t.err; k++)
				if (page_location(&t, &l[k]) < 0)
					rfi_thrift_fail(&t, "a PageLocation without its three fields");
			rfi_thrift_list_end(&t);
		}
		rfi_thrift_struct_end(&t);
	}
	if (t.err || !l || nl == 0) {
		rfi_fmt(why, len, "a corrupt OffsetIndex: %s", t.err ? t.err : "no page locations");
		free(l);
		return -1;
	}
	for (uint32_t k = 0; k < (uint32_t)nl; k++)
		if (check_location(&l[k], k, c, rows, why, len) < 0) {
			free(l);
			return -1;
		}
	*locs = l;
	*count = (uint32_t)nl;
	return 0;
}

/* Appends a page to the scan's list, doubling it as pages are found (so
 * that its size follows the pages really there, not a claim). */
static int add_page(rf_pq_page_loc **locs, uint32_t *count, uint32_t *cap, rf_pq_page_loc l)
{
	if (*count == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 16;
		rf_pq_page_loc *n = realloc(*locs, nc * sizeof(*n));
		if (!n)
			return -1;
		*locs = n;
		*cap = nc;
	}
	(*locs)[(*count)++] = l;
	return 0;
}

/* The header of the page at file offset at, room bytes left in the chunk:
 * read in a window of SCAN_WINDOW bytes, doubled while the header goes on
 * past it, up to RF_PQ_PAGE_HEADER_MAX (a header's statistics may be large;
 * a corrupt one is not read further). */
static int scan_header(const rf_pq_reader *r, int64_t at, size_t room, rf_pq_page_header *h,
		       size_t *hl, char *why, size_t len)
{
	size_t want = room < RF_PQ_SCAN_WINDOW ? room : RF_PQ_SCAN_WINDOW;
	for (;;) {
		const uint8_t *p;
		if (r->read(r->ctx, at, want, &p, why, len) < 0)
			return -1;
		int rc = rfi_pq_page_header_parse(p, want, room, h, hl, why, len);
		if (rc != -2)
			return rc;
		if (want >= RF_PQ_PAGE_HEADER_MAX) {
			rfi_fmt(why, len, "a corrupt page header (not parsed within its first %zu bytes)",
				want);
			return -1;
		}
		want = want * 2 < room ? want * 2 : room;
		want = want < RF_PQ_PAGE_HEADER_MAX ? want : RF_PQ_PAGE_HEADER_MAX;
	}
}

int rfi_pq_chunk_scan_read(const rf_pq_reader *r, const rf_pq_chunk *c, int64_t rows,
			   rf_pq_page_loc **locs, uint32_t *count, int64_t *dict_offset,
			   char *why, size_t len)
{
	uint32_t cap = 0;
	int64_t row = 0;
	size_t at = 0, n = (size_t)c->compressed_size;
	*locs = NULL;
	*count = 0;
	*dict_offset = -1;
	while (at < n) {
		rf_pq_page_header h;
		size_t hl;
		char tail[200];
		if (scan_header(r, c->start + (int64_t)at, n - at, &h, &hl, tail, sizeof(tail)) < 0) {
			rfi_fmt(why, len, "the page at offset %lld: %s", (long long)(c->start + (int64_t)at),
				tail);
			goto fail;
		}
		if (hl + (size_t)h.compressed_size > INT32_MAX) {
			rfi_fmt(why, len, "the page at offset %lld: a header of %zu bytes",
				(long long)(c->start + (int64_t)at), hl);
			goto fail;
		}
		rf_pq_page_loc l = {c->start + (int64_t)at, (int32_t)(hl + (size_t)h.compressed_size),
				    row};
		if (h.type == RF_PQ_DICTIONARY_PAGE) {
			if (*count > 0 || *dict_offset >= 0) {
				rfi_fmt(why, len, "a dictionary page at offset %lld after other pages",
					(long long)l.offset);
				goto fail;
			}
			*dict_offset = l.offset;
		} else if (h.type != RF_PQ_INDEX_PAGE) {
			if (h.num_values > rows - row) {
				rfi_fmt(why, len, "its pages hold more rows than the row group's %lld",
					(long long)rows);
				goto fail;
			}
			if (add_page(locs, count, &cap, l) < 0) {
				rfi_fmt(why, len, "out of memory");
				goto fail;
			}
			row += h.num_values;
		}
		at += (size_t)l.size;
	}
	if (row != rows) {
		rfi_fmt(why, len, "its pages hold %lld rows, the row group %lld", (long long)row,
			(long long)rows);
		goto fail;
	}
	return 0;
fail:
	free(*locs);
	*locs = NULL;
	*count = 0;
	return -1;
}

/* The scan's reader over a chunk in memory: the chunk's bytes from c->start. */
typedef struct mem_chunk {
	const uint8_t *p;
	size_t n;
	int64_t start;
} mem_chunk;

static int mem_read(void *ctx, int64_t offset, size_t n, const uint8_t **p, char *why,
		    size_t len)
{
	const mem_chunk *m = ctx;
	if (offset < m->start || (uint64_t)(offset - m->start) > m->n ||
	    n > m->n - (size_t)(offset - m->start)) {
		rfi_fmt(why, len, "a read past the chunk's bytes");
		return -1;
	}
	*p = m->p + (offset - m->start);
	return 0;
}

int rfi_pq_chunk_scan(const uint8_t *p, size_t n, const rf_pq_chunk *c, int64_t rows,
		      rf_pq_page_loc **locs, uint32_t *count, int64_t *dict_offset, char *why,
		      size_t len)
{
	if (c->compressed_size < 0 || (uint64_t)c->compressed_size > n) {
		*locs = NULL;
		*count = 0;
		*dict_offset = -1;
		rfi_fmt(why, len, "a chunk of %lld bytes where %zu are given",
			(long long)c->compressed_size, n);
		return -1;
	}
	mem_chunk m = { p, n, c->start };
	rf_pq_reader r = { mem_read, &m };
	return rfi_pq_chunk_scan_read(&r, c, rows, locs, count, dict_offset, why, len);
}
