/* parquet_meta.c - a Parquet file's tail and footer (FileMetaData) read into
 * rf_pq_meta (parquet_meta.h): the schema and its leaf columns, the row
 * groups' column chunks, the key/value metadata. Every count is checked
 * against the bytes that must hold it before it sizes an allocation, every
 * offset against the file's size. */
#define _GNU_SOURCE /* strdup */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/parquet_meta.h"
#include "source/parquet_thrift.h"
#include "util/util.h"

#define PATH_MAX_BYTES 4096 /* one leaf's dotted path */

const char *rfi_pq_type_name(int type)
{
	static const char *const names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE",
					    "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
	return type >= 0 && type < 8 ? names[type] : type == -1 ? "group" : "an unknown type";
}

const char *rfi_pq_encoding_name(int enc)
{
	static const char *const names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
					    "BIT_PACKED", "DELTA_BINARY_PACKED",
					    "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
					    "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
	return enc >= 0 && enc < 10 ? names[enc] : "an unknown encoding";
}

const char *rfi_pq_codec_name(int codec)
{
	static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI",
					    "LZ4 (the deprecated framing)", "ZSTD", "LZ4_RAW"};
	return codec >= 0 && codec < 8 ? names[codec] : "an unknown codec";
}

int rfi_pq_tail_check(const char *file, const uint8_t *tail, uint64_t file_size,
		      uint32_t *footer_len, char *why, size_t len)
{
	if (file_size < 4 + RF_PQ_TAIL_BYTES) {
		rfi_fmt(why, len, "%s: %llu bytes, too small for a Parquet file (12 at least)", file,
			(unsigned long long)file_size);
		return -1;
	}
	if (memcmp(tail + 4, "PARE", 4) == 0) {
		rfi_fmt(why, len, "%s: an encrypted Parquet file (its footer is encrypted; ringfeed "
			"reads no encrypted Parquet)", file);
		return -1;
	}
	if (memcmp(tail + 4, RF_PQ_MAGIC, 4) != 0) {
		rfi_fmt(why, len, "%s: not a Parquet file (no PAR1 magic at its end)", file);
		return -1;
	}
	uint32_t n = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
		     (uint32_t)tail[3] << 24;
	if (n == 0 || (uint64_t)n > file_size - 4 - RF_PQ_TAIL_BYTES) {
		rfi_fmt(why, len, "%s: the footer length (%u bytes) does not fit in the file (%llu "
			"bytes)", file, n, (unsigned long long)file_size);
		return -1;
	}
	if (n > RF_PQ_FOOTER_MAX) {
		rfi_fmt(why, len, "%s: a footer of %u bytes, more than ringfeed reads (%u)", file, n,
			RF_PQ_FOOTER_MAX);
		return -1;
	}
	*footer_len = n;
	return 0;
}

/* The parse of one footer: the reader, the result, and the first error. */
typedef struct parse {
	rf_thrift t;
	rf_pq_meta *m;
	char *why;
	size_t len;
	int failed;
} parse;

static void fail(parse *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parse *ps, const char *fmt, ...)
{
	if (ps->failed)
		return;
	ps->failed = 1;
	int k = snprintf(ps->why, ps->len, "%s: ", ps->m->file);
	if (k >= 0 && (size_t)k < ps->len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ps->why + k, ps->len - (size_t)k, fmt, ap);
		va_end(ap);
	}
	rfi_thrift_fail(&ps->t, "stopped");
}

static int failed(parse *ps, const char *where)
{
	if (ps->t.err && !ps->failed)
		fail(ps, "the footer is corrupt in %s: %s", where, ps->t.err);
	return ps->failed;
}

static rf_pq_str str(rf_thrift *t, int type)
{
	rf_pq_str s;
	s.p = (const char *)rfi_thrift_binary(t, type, &s.n);
	return s;
}

/* A count of elements each at least min_bytes long, checked against what is
 * left, then allocated (calloc: zero elements give a valid pointer too). */
static void *list_alloc(parse *ps, int64_t n, size_t min_bytes, size_t elem, const char *what)
{
	if (n < 0)
		return NULL;
	if ((uint64_t)n * min_bytes > (uint64_t)(ps->t.end - ps->t.p)) {
		fail(ps, "the footer's %s list claims %lld entries, more than its bytes hold", what,
		     (long long)n);
		return NULL;
	}
	void *p = calloc((size_t)n + 1, elem);
	if (!p)
		fail(ps, "out of memory for %lld %s", (long long)n, what);
	return p;
}

/* LogicalType is a union: which member is set (its contents skipped). */
static int32_t logical_type(rf_thrift *t)
{
	rf_thrift_struct s;
	int16_t id;
	int type;
	int32_t which = 0;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return 0;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		which = id;
		rfi_thrift_skip(t, type);
	}
	rfi_thrift_struct_end(t);
	return which;
}

static void schema_element(rf_thrift *t, rf_pq_schema *e)
{
	rf_thrift_struct s;
	int16_t id;
	int type;
	e->type = e->repetition = e->converted = -1;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		switch (id) {
		case 1: e->type = (int32_t)rfi_thrift_int(t, type); break;
		case 2: e->type_length = (int32_t)rfi_thrift_int(t, type); break;
		case 3: e->repetition = (int32_t)rfi_thrift_int(t, type); break;
		case 4: e->name = str(t, type); break;
		case 5: e->num_children = (int32_t)rfi_thrift_int(t, type); break;
		case 6: e->converted = (int32_t)rfi_thrift_int(t, type); break;
		case 10:
			if (type == RF_THRIFT_STRUCT)
				e->logical = logical_type(t);
			else
				rfi_thrift_skip(t, type);
			break;
		default: rfi_thrift_skip(t, type); break;
		}
	}
	rfi_thrift_struct_end(t);
}

static void schema_list(parse *ps, int type)
{
	int et;
	if (type != RF_THRIFT_LIST) {
		fail(ps, "the footer's schema is not a list");
		return;
	}
	int64_t n = rfi_thrift_list_begin(&ps->t, &et);
	if (failed(ps, "the schema"))
		return;
	if (et != RF_THRIFT_STRUCT || n < 1 || n > UINT32_MAX / 2) {
		fail(ps, "the footer's schema is empty or not a list of SchemaElements");
		return;
	}
	/* an element holds its name at least: header, length, stop */
	ps->m->schema = list_alloc(ps, n, 3, sizeof(rf_pq_schema), "schema");
	if (!ps->m->schema)
		return;
	for (int64_t i = 0; i < n && !ps->t.err; i++)
		schema_element(&ps->t, &ps->m->schema[i]);
	rfi_thrift_list_end(&ps->t);
	ps->m->nschema = (uint32_t)n;
}

/* ---- the schema's leaves ------------------------------------------------ */

/* One open group while the depth-first list is walked. */
typedef struct frame {
	int32_t left;      /* children still to come */
	int def, rep;      /* levels of the group itself */
	size_t path_len;   /* its path's bytes in the walk's buffer */
} frame;

static int check_element(parse *ps, uint32_t i, const rf_pq_schema *e)
{
	if (!e->name.p) {
		fail(ps, "schema element %u has no name", i);
		return -1;
	}
	if (e->num_children < 0 || (uint32_t)e->num_children > ps->m->nschema - 1 - i) {
		fail(ps, "schema element '%.*s' claims %d children, more than the schema's "
		     "elements after it", (int)e->name.n, e->name.p, e->num_children);
		return -1;
	}
	if (e->num_children == 0 && (e->type < 0 || e->type > RF_PQ_FIXED_LEN_BYTE_ARRAY)) {
		fail(ps, "schema element '%.*s' is a leaf without a known physical type (%d)",
		     (int)e->name.n, e->name.p, e->type);
		return -1;
	}
	if (i > 0 && (e->repetition < RF_PQ_REQUIRED || e->repetition > RF_PQ_REPEATED)) {
		fail(ps, "schema element '%.*s' has no repetition type (REQUIRED, OPTIONAL or "
		     "REPEATED)", (int)e->name.n, e->name.p);
		return -1;
	}
	return 0;
}

static int add_leaf(parse *ps, uint32_t i, const frame *f, const char *path)
{
	rf_pq_meta *m = ps->m;
	rf_pq_leaf *l = &m->leaves[m->nleaves];
	l->path = strdup(path);
	if (!l->path) {
		fail(ps, "out of memory");
		return -1;
	}
	l->schema = i;
	l->type = m->schema[i].type;
	l->type_length = m->schema[i].type_length;
	l->max_def = f->def;
	l->max_rep = f->rep;
	m->nleaves++;
	return 0;
}

/* The leaves, their dotted paths and level maxima, from the flattened
 * depth-first schema; an explicit stack, RF_PQ_SCHEMA_DEPTH_MAX deep. */
static void build_leaves(parse *ps)
{
	rf_pq_meta *m = ps->m;
	frame st[RF_PQ_SCHEMA_DEPTH_MAX + 1];
	char path[PATH_MAX_BYTES];
	uint64_t path_total = 0, path_budget = 16 * (uint64_t)(ps->t.end - ps->m->footer) + 4096;
	int sp = 0;
	if (check_element(ps, 0, &m->schema[0]) < 0)
		return;
	m->leaves = calloc(m->nschema, sizeof(rf_pq_leaf));
	if (!m->leaves) {
		fail(ps, "out of memory");
		return;
	}
	st[0] = (frame){m->schema[0].num_children, 0, 0, 0};
	for (uint32_t i = 1; i < m->nschema; i++) {
		const rf_pq_schema *e = &m->schema[i];
		while (sp > 0 && st[sp].left == 0)
			sp--;
		if (st[sp].left == 0) {
			fail(ps, "schema element %u lies outside the root's %d children", i,
			     m->schema[0].num_children);
			return;
		}
		if (check_element(ps, i, e) < 0)
			return;
		st[sp].left--;
		frame f = st[sp];
		f.def += e->repetition != RF_PQ_REQUIRED;
		f.rep += e->repetition == RF_PQ_REPEATED;
		size_t at = f.path_len + (sp > 0);
		if (at + e->name.n >= sizeof(path) || (path_total += at + e->name.n) > path_budget) {
			fail(ps, "the column paths under '%.*s' are longer than ringfeed reads",
			     (int)e->name.n, e->name.p);
			return;
		}
		if (sp > 0)
			path[f.path_len] = '.';
		memcpy(path + at, e->name.p, e->name.n);
		path[at + e->name.n] = '\0';
		f.path_len = at + e->name.n;
		if (e->num_children == 0) {
			if (add_leaf(ps, i, &f, path) < 0)
				return;
			continue;
		}
		if (sp == RF_PQ_SCHEMA_DEPTH_MAX) {
			fail(ps, "the schema nests groups deeper than ringfeed reads (%d)",
			     RF_PQ_SCHEMA_DEPTH_MAX);
			return;
		}
		f.left = e->num_children;
		st[++sp] = f;
	}
	for (int k = 0; k <= sp; k++)
		if (st[k].left) {
			fail(ps, "the schema ends before all its groups' children");
			return;
		}
}

/* ---- row groups ---------------------------------------------------------- */

/* path_in_schema against the leaf's dotted path, element by element. */
static void path_in_schema(parse *ps, int type, const char *want, int *match)
{
	int et;
	size_t at = 0;
	*match = 1;
	if (type != RF_THRIFT_LIST) {
		rfi_thrift_skip(&ps->t, type);
		*match = 0;
		return;
	}
	int64_t n = rfi_thrift_list_begin(&ps->t, &et);
	for (int64_t i = 0; i < n && !ps->t.err; i++) {
		rf_pq_str s = str(&ps->t, et);
		if (ps->t.err || !*match)
			continue; /* the rest of the list is read, not compared */
		if (i > 0 && want[at] != '.') {
			*match = 0;
			continue;
		}
		at += i > 0;
		if (strlen(want + at) < s.n || memcmp(want + at, s.p, s.n) != 0)
			*match = 0;
		else
			at += s.n;
	}
	rfi_thrift_list_end(&ps->t);
	if (*match && want[at] != '\0')
		*match = 0;
}

static uint32_t encodings(rf_thrift *t, int type)
{
	int et;
	uint32_t mask = 0;
	if (type != RF_THRIFT_LIST) {
		rfi_thrift_skip(t, type);
		return 0;
	}
	int64_t n = rfi_thrift_list_begin(t, &et);
	for (int64_t i = 0; i < n && !t->err; i++) {
		int64_t e = rfi_thrift_int(t, et);
		if (e >= 0 && e < 32)
			mask |= 1u << e;
	}
	rfi_thrift_list_end(t);
	return mask;
}

static void column_meta(parse *ps, rf_pq_chunk *c, const rf_pq_leaf *leaf, int *type_ok,
			int *path_ok)
{
	rf_thrift *t = &ps->t;
	rf_thrift_struct s;
	int16_t id;
	int type;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		switch (id) {
		case 1: *type_ok = rfi_thrift_int(t, type) == leaf->type; break;
		case 2: c->encodings = encodings(t, type); break;
		case 3: path_in_schema(ps, type, leaf->path, path_ok); break;
		case 4: c->codec = (int32_t)rfi_thrift_int(t, type); break;
		case 5: c->num_values = rfi_thrift_int(t, type); break;
		case 6: c->uncompressed_size = rfi_thrift_int(t, type); break;
		case 7: c->compressed_size = rfi_thrift_int(t, type); break;
		case 9: c->data_page_offset = rfi_thrift_int(t, type); break;
		case 11: c->dictionary_page_offset = rfi_thrift_int(t, type); break;
		default: rfi_thrift_skip(t, type); break;
		}
	}
	rfi_thrift_struct_end(t);
}

/* A chunk's numbers against each other and the file: its pages lie between
 * the leading magic and the footer. */
static void check_chunk(parse *ps, uint32_t g, const rf_pq_leaf *leaf, rf_pq_chunk *c,
			uint64_t data_end)
{
	if (c->dictionary_page_offset > 0 && c->dictionary_page_offset < c->data_page_offset)
		c->start = c->dictionary_page_offset;
	else
		c->start = c->data_page_offset, c->dictionary_page_offset = -1;
	if (c->num_values < 0 || c->compressed_size <= 0 || c->uncompressed_size < 0) {
		fail(ps, "row group %u, column %s: negative or zero sizes (num_values %lld, "
		     "total_compressed_size %lld)", g, leaf->path, (long long)c->num_values,
		     (long long)c->compressed_size);
	} else if (c->start < 4 || (uint64_t)c->start > data_end ||
		   (uint64_t)c->compressed_size > data_end - (uint64_t)c->start) {
		fail(ps, "row group %u, column %s: the chunk's pages (offset %lld, %lld bytes) lie "
		     "outside the file's data (bytes 4 to %llu)", g, leaf->path, (long long)c->start,
		     (long long)c->compressed_size, (unsigned long long)data_end);
	} else if (c->offset_index_offset >= 0 &&
		   (c->offset_index_length <= 0 || (uint64_t)c->offset_index_offset > data_end ||
		    (uint64_t)c->offset_index_length > data_end - (uint64_t)c->offset_index_offset)) {
		fail(ps, "row group %u, column %s: the OffsetIndex (offset %lld, %d bytes) lies "
		     "outside the file's data", g, leaf->path, (long long)c->offset_index_offset,
		     c->offset_index_length);
	}
}

static void column_chunk(parse *ps, uint32_t g, const rf_pq_leaf *leaf, rf_pq_chunk *c,
			 uint64_t data_end)
{
	rf_thrift *t = &ps->t;
	rf_thrift_struct s;
	int16_t id;
	int type, have_meta = 0, type_ok = 0, path_ok = 0;
	c->dictionary_page_offset = c->offset_index_offset = -1;
	c->data_page_offset = -1;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		if (id == 3 && type == RF_THRIFT_STRUCT) {
			have_meta = 1;
			column_meta(ps, c, leaf, &type_ok, &path_ok);
		} else if (id == 4) {
			c->offset_index_offset = rfi_thrift_int(t, type);
		} else if (id == 5) {
			c->offset_index_length = (int32_t)rfi_thrift_int(t, type);
		} else if (id == 1 || id == 8 || id == 9) {
			fail(ps, "row group %u, column %s: %s", g, leaf->path, id == 1 ?
			     "the column's data is in another file (file_path), which ringfeed does "
			     "not read" : "an encrypted column, which ringfeed does not read");
		} else {
			rfi_thrift_skip(t, type);
		}
	}
	rfi_thrift_struct_end(t);
	if (failed(ps, "a column chunk"))
		return;
	if (!have_meta || !type_ok || !path_ok)
		fail(ps, "row group %u, column %s: %s", g, leaf->path, !have_meta ?
		     "the chunk has no ColumnMetaData" : !type_ok ?
		     "the chunk's type is not the schema's" :
		     "the chunk's path_in_schema is not the schema's leaf in this place");
	else
		check_chunk(ps, g, leaf, c, data_end);
}

static void chunk_list(parse *ps, int type, uint32_t g, rf_pq_row_group *rg, uint64_t data_end)
{
	int et;
	if (type != RF_THRIFT_LIST) {
		fail(ps, "row group %u: its columns are not a list", g);
		return;
	}
	int64_t n = rfi_thrift_list_begin(&ps->t, &et);
	if (failed(ps, "a row group"))
		return;
	if (n != ps->m->nleaves || et != RF_THRIFT_STRUCT) {
		fail(ps, "row group %u has %lld column chunks, the schema %u leaf columns", g,
		     (long long)n, ps->m->nleaves);
		return;
	}
	rg->chunks = list_alloc(ps, n, 2, sizeof(rf_pq_chunk), "column chunk");
	for (int64_t i = 0; rg->chunks && i < n && !ps->failed; i++)
		column_chunk(ps, g, &ps->m->leaves[i], &rg->chunks[i], data_end);
	rfi_thrift_list_end(&ps->t);
}

static void row_group(parse *ps, uint32_t g, rf_pq_row_group *rg, uint64_t data_end)
{
	rf_thrift *t = &ps->t;
	rf_thrift_struct s;
	int16_t id;
	int type;
	rg->num_rows = -1;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &type)) {
		if (id == 1 && rg->chunks)
			fail(ps, "row group %u lists its columns twice", g);
		else if (id == 1)
			chunk_list(ps, type, g, rg, data_end);
		else if (id == 3)
			rg->num_rows = rfi_thrift_int(t, type);
		else
			rfi_thrift_skip(t, type);
	}
	rfi_thrift_struct_end(t);
	if (failed(ps, "a row group"))
		return;
	if (!rg->chunks || rg->num_rows < 0)
		fail(ps, "row group %u: %s", g, !rg->chunks ? "no column chunks" :
		     "no (or a negative) num_rows");
}

static void row_group_list(parse *ps, int type)
{
	rf_pq_meta *m = ps->m;
	int et;
	if (!m->leaves) {
		fail(ps, "the footer lists its row groups before its schema");
		return;
	}
	if (type != RF_THRIFT_LIST) {
		fail(ps, "the footer's row groups are not a list");
		return;
	}
	int64_t n = rfi_thrift_list_begin(&ps->t, &et);
	if (failed(ps, "the row groups"))
		return;
	if (et != RF_THRIFT_STRUCT && n > 0) {
		fail(ps, "the footer's row groups are not a list of RowGroups");
		return;
	}
	m->groups = list_alloc(ps, n, 4, sizeof(rf_pq_row_group), "row group");
	uint64_t data_end = m->file_size - RF_PQ_TAIL_BYTES - (uint64_t)(ps->t.end - m->footer);
	int64_t rows = 0;
	for (int64_t i = 0; m->groups && i < n && !ps->failed; i++) {
		m->ngroups = (uint32_t)i + 1; /* freed with the rest from here on */
		row_group(ps, (uint32_t)i, &m->groups[i], data_end);
		m->groups[i].first_row = rows;
		if (!ps->failed && m->groups[i].num_rows > INT64_MAX - rows)
			fail(ps, "the row groups' rows overflow");
		else
			rows += m->groups[i].num_rows;
	}
	rfi_thrift_list_end(&ps->t);
}

static void key_values(parse *ps, int type)
{
	int et;
	if (type != RF_THRIFT_LIST) {
		rfi_thrift_skip(&ps->t, type);
		return;
	}
	int64_t n = rfi_thrift_list_begin(&ps->t, &et);
	if (failed(ps, "the key/value metadata") || (n > 0 && et != RF_THRIFT_STRUCT)) {
		fail(ps, "the key/value metadata is not a list of KeyValues");
		return;
	}
	ps->m->kv = list_alloc(ps, n, 3, sizeof(rf_pq_kv), "key/value");
	for (int64_t i = 0; ps->m->kv && i < n && !ps->t.err; i++) {
		rf_thrift_struct s;
		int16_t id;
		int ft;
		rf_pq_kv *kv = &ps->m->kv[i];
		if (rfi_thrift_struct_begin(&ps->t, &s) < 0)
			break;
		while (rfi_thrift_field(&ps->t, &s, &id, &ft)) {
			if (id == 1)
				kv->key = str(&ps->t, ft);
			else if (id == 2)
				kv->value = str(&ps->t, ft);
			else
				rfi_thrift_skip(&ps->t, ft);
		}
		rfi_thrift_struct_end(&ps->t);
		ps->m->nkv = (uint32_t)i + 1;
	}
	rfi_thrift_list_end(&ps->t);
}

static void file_metadata(parse *ps)
{
	rf_thrift *t = &ps->t;
	rf_thrift_struct s;
	int16_t id;
	int type, have_rows = 0;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	uint32_t seen = 0;
	while (!ps->failed && rfi_thrift_field(t, &s, &id, &type)) {
		if (id >= 2 && id <= 5 && (seen & 1u << id)) {
			fail(ps, "the footer has FileMetaData field %d twice", id);
			break;
		}
		if (id >= 2 && id <= 5)
			seen |= 1u << id;
		switch (id) {
		case 1: ps->m->version = (int32_t)rfi_thrift_int(t, type); break;
		case 2:
			schema_list(ps, type);
			if (!failed(ps, "the schema"))
				build_leaves(ps);
			break;
		case 3: ps->m->num_rows = rfi_thrift_int(t, type), have_rows = 1; break;
		case 4: row_group_list(ps, type); break;
		case 5: key_values(ps, type); break;
		case 6: ps->m->created_by = str(t, type); break;
		case 8:
			fail(ps, "an encrypted Parquet file (encryption_algorithm in a plaintext "
			     "footer); ringfeed reads no encrypted Parquet");
			break;
		default: rfi_thrift_skip(t, type); break;
		}
	}
	rfi_thrift_struct_end(t);
	if (failed(ps, "FileMetaData"))
		return;
	if (!ps->m->leaves || !have_rows)
		fail(ps, "the footer has no %s", !ps->m->leaves ? "schema" : "num_rows");
}

static void check_rows(parse *ps)
{
	rf_pq_meta *m = ps->m;
	int64_t sum = m->ngroups ? m->groups[m->ngroups - 1].first_row +
				   m->groups[m->ngroups - 1].num_rows : 0;
	if (m->num_rows != sum)
		fail(ps, "the footer says %lld rows, its row groups hold %lld",
		     (long long)m->num_rows, (long long)sum);
}

int rfi_pq_meta_parse(const char *file, const uint8_t *footer, size_t n, uint64_t file_size,
		      rf_pq_meta **out, char *why, size_t len)
{
	*out = NULL;
	parse ps = {.why = why, .len = len};
	ps.m = calloc(1, sizeof(*ps.m));
	if (!ps.m || !(ps.m->file = strdup(file)) || !(ps.m->footer = malloc(n ? n : 1))) {
		rfi_fmt(why, len, "%s: out of memory for its footer (%zu bytes)", file, n);
		rfi_pq_meta_free(ps.m);
		return -1;
	}
	if (n + RF_PQ_TAIL_BYTES + 4 > file_size) {
		rfi_fmt(why, len, "%s: a footer of %zu bytes in a file of %llu", file, n,
			(unsigned long long)file_size);
		rfi_pq_meta_free(ps.m);
		return -1;
	}
	memcpy(ps.m->footer, footer, n);
	ps.m->footer_len = n;
	ps.m->file_size = file_size;
	rfi_thrift_init(&ps.t, ps.m->footer, n);
	file_metadata(&ps);
	if (!ps.failed)
		check_rows(&ps);
	if (ps.failed) {
		rfi_pq_meta_free(ps.m);
		return -1;
	}
	*out = ps.m;
	return 0;
}

void rfi_pq_meta_free(rf_pq_meta *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; m->leaves && i < m->nleaves; i++)
		free(m->leaves[i].path);
	for (uint32_t g = 0; m->groups && g < m->ngroups; g++)
		free(m->groups[g].chunks);
	free(m->leaves);
	free(m->groups);
	free(m->schema);
	free(m->kv);
	free(m->footer);
	free(m->file);
	free(m);
}

int rfi_pq_leaf_find(const rf_pq_meta *m, const char *path)
{
	for (uint32_t i = 0; i < m->nleaves; i++)
		if (strcmp(m->leaves[i].path, path) == 0)
			return (int)i;
	return -1;
}

const rf_pq_str *rfi_pq_kv_find(const rf_pq_meta *m, const char *key)
{
	size_t n = strlen(key);
	for (uint32_t i = 0; i < m->nkv; i++)
		if (m->kv[i].key.p && m->kv[i].key.n == n && memcmp(m->kv[i].key.p, key, n) == 0)
			return m->kv[i].value.p ? &m->kv[i].value : NULL;
	return NULL;
}
