/* parquet_thrift.c - the Thrift compact protocol reader (parquet_thrift.h):
 * varints, zigzag integers, field headers, lists, and skipping what a
 * parser does not know. Bounded by the buffer and RF_THRIFT_DEPTH_MAX. */
#include "source/parquet_thrift.h"

void rfi_thrift_init(rf_thrift *t, const uint8_t *p, size_t n)
{
	t->p = p;
	t->end = p + n;
	t->depth = 0;
	t->err = NULL;
}

void rfi_thrift_fail(rf_thrift *t, const char *why)
{
	if (!t->err)
		t->err = why;
	t->p = t->end; /* every later read fails at once */
}

static int byte(rf_thrift *t)
{
	if (t->err)
		return 0;
	if (t->p >= t->end) {
		rfi_thrift_fail(t, "truncated Thrift data (a read past its end)");
		return 0;
	}
	return *t->p++;
}

/* An unsigned LEB128 varint of at most max_bytes (10 for 64 bits). */
static uint64_t varint(rf_thrift *t, int max_bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < max_bytes; i++) {
		int b = byte(t);
		if (t->err)
			return 0;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	rfi_thrift_fail(t, "a Thrift varint longer than its type");
	return 0;
}

static int64_t zigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int rfi_thrift_struct_begin(rf_thrift *t, rf_thrift_struct *s)
{
	s->last = 0;
	if (t->err)
		return -1;
	if (++t->depth > RF_THRIFT_DEPTH_MAX) {
		rfi_thrift_fail(t, "Thrift structures nested deeper than the reader follows");
		return -1;
	}
	return 0;
}

void rfi_thrift_struct_end(rf_thrift *t)
{
	if (t->depth > 0)
		t->depth--;
}

int rfi_thrift_field(rf_thrift *t, rf_thrift_struct *s, int16_t *id, int *type)
{
	int h = byte(t);
	if (t->err || h == 0)
		return 0;
	*type = h & 0x0f;
	if (*type > RF_THRIFT_STRUCT) {
		rfi_thrift_fail(t, "an unknown Thrift field type");
		return 0;
	}
	int delta = h >> 4;
	if (delta) {
		*id = (int16_t)(s->last + delta);
	} else {
		int64_t v = zigzag(varint(t, 3));
		if (v < INT16_MIN || v > INT16_MAX)
			rfi_thrift_fail(t, "a Thrift field id out of range");
		*id = (int16_t)v;
	}
	if (t->err)
		return 0;
	s->last = *id;
	return 1;
}

int64_t rfi_thrift_list_begin(rf_thrift *t, int *elem_type)
{
	int h = byte(t);
	if (t->err)
		return -1;
	*elem_type = h & 0x0f;
	uint64_t n = (uint64_t)(h >> 4);
	if (n == 15)
		n = varint(t, 5);
	if (t->err)
		return -1;
	if (*elem_type > RF_THRIFT_STRUCT || (n > 0 && *elem_type == RF_THRIFT_STOP)) {
		rfi_thrift_fail(t, "a Thrift list of an unknown element type");
		return -1;
	}
	/* every element takes one byte at least (an empty struct: its stop) */
	if (n > (uint64_t)(t->end - t->p)) {
		rfi_thrift_fail(t, "a Thrift list longer than the bytes left");
		return -1;
	}
	if (++t->depth > RF_THRIFT_DEPTH_MAX) {
		rfi_thrift_fail(t, "Thrift structures nested deeper than the reader follows");
		return -1;
	}
	return (int64_t)n;
}

void rfi_thrift_list_end(rf_thrift *t)
{
	if (t->depth > 0)
		t->depth--;
}

int64_t rfi_thrift_int(rf_thrift *t, int type)
{
	switch (type) {
	case RF_THRIFT_I8: return (int8_t)byte(t);
	case RF_THRIFT_I16: return zigzag(varint(t, 3));
	case RF_THRIFT_I32: {
		int64_t v = zigzag(varint(t, 5));
		if (v < INT32_MIN || v > INT32_MAX)
			rfi_thrift_fail(t, "a Thrift i32 out of range");
		return t->err ? 0 : v;
	}
	case RF_THRIFT_I64: return zigzag(varint(t, 10));
	default:
		rfi_thrift_fail(t, "a Thrift field of the wrong type (an integer expected)");
		return 0;
	}
}

int rfi_thrift_bool(rf_thrift *t, int type)
{
	switch (type) {
	case RF_THRIFT_TRUE: return 1;
	case RF_THRIFT_FALSE: return 0;
	default:
		rfi_thrift_fail(t, "a Thrift field of the wrong type (a bool expected)");
		return 0;
	}
}

/* A bool list element is a byte whatever its declared type (1 or 2). */
static void skip_list_bool(rf_thrift *t)
{
	(void)byte(t);
}

const uint8_t *rfi_thrift_binary(rf_thrift *t, int type, uint32_t *n)
{
	*n = 0;
	if (type != RF_THRIFT_BINARY) {
		rfi_thrift_fail(t, "a Thrift field of the wrong type (binary expected)");
		return NULL;
	}
	uint64_t len = varint(t, 5);
	if (t->err)
		return NULL;
	if (len > (uint64_t)(t->end - t->p)) {
		rfi_thrift_fail(t, "a Thrift binary longer than the bytes left");
		return NULL;
	}
	const uint8_t *p = t->p;
	t->p += len;
	*n = (uint32_t)len;
	return p;
}

/* One element of a list or a map: a bool there is a byte of its own. */
static void skip_element(rf_thrift *t, int type)
{
	if (type == RF_THRIFT_TRUE || type == RF_THRIFT_FALSE)
		skip_list_bool(t);
	else
		rfi_thrift_skip(t, type);
}

static void skip_struct(rf_thrift *t)
{
	rf_thrift_struct s;
	int16_t id;
	int ft;
	if (rfi_thrift_struct_begin(t, &s) < 0)
		return;
	while (rfi_thrift_field(t, &s, &id, &ft))
		rfi_thrift_skip(t, ft);
	rfi_thrift_struct_end(t);
}

static void skip_list(rf_thrift *t)
{
	int et;
	int64_t n = rfi_thrift_list_begin(t, &et);
	for (int64_t i = 0; i < n && !t->err; i++)
		skip_element(t, et);
	rfi_thrift_list_end(t);
}

static void skip_map(rf_thrift *t)
{
	uint64_t n = varint(t, 5);
	if (n == 0 || t->err)
		return;
	int kv = byte(t);
	int kt = kv >> 4, vt = kv & 0x0f;
	if (kt == RF_THRIFT_STOP || kt > RF_THRIFT_STRUCT || vt == RF_THRIFT_STOP ||
	    vt > RF_THRIFT_STRUCT || n > (uint64_t)(t->end - t->p)) {
		rfi_thrift_fail(t, "a bad Thrift map header");
		return;
	}
	if (++t->depth > RF_THRIFT_DEPTH_MAX) {
		rfi_thrift_fail(t, "Thrift structures nested deeper than the reader follows");
		return;
	}
	for (uint64_t i = 0; i < n && !t->err; i++) {
		skip_element(t, kt);
		skip_element(t, vt);
	}
	t->depth--;
}

void rfi_thrift_skip(rf_thrift *t, int type)
{
	if (t->err)
		return;
	switch (type) {
	case RF_THRIFT_TRUE:
	case RF_THRIFT_FALSE: return; /* a field's value is in its header */
	case RF_THRIFT_I8: (void)byte(t); return;
	case RF_THRIFT_I16:
	case RF_THRIFT_I32:
	case RF_THRIFT_I64: (void)varint(t, 10); return;
	case RF_THRIFT_DOUBLE:
		if (t->end - t->p < 8)
			rfi_thrift_fail(t, "truncated Thrift data (a read past its end)");
		else
			t->p += 8;
		return;
	case RF_THRIFT_BINARY: {
		uint32_t n;
		(void)rfi_thrift_binary(t, type, &n);
		return;
	}
	case RF_THRIFT_STRUCT: skip_struct(t); return;
	case RF_THRIFT_LIST:
	case RF_THRIFT_SET: skip_list(t); return;
	case RF_THRIFT_MAP: skip_map(t); return;
	default: rfi_thrift_fail(t, "an unknown Thrift type"); return;
	}
}
