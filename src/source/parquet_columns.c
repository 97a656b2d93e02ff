/* parquet_columns.c - which Parquet column is which (parquet_columns.h):
 * cfg.columns parsed, a user's name for a column found, the columns listed,
 * a string label column's classes, a field value as text. */
#define _GNU_SOURCE
#include "source/parquet_columns.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ringfeed.h" /* RF_ECONFIG */
#include "util/hash.h"
#include "util/util.h"

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

/* One "key=NAME" of spec (p[n], blanks around each trimmed) into c. */
static int column_pair(const char *spec, const char *p, size_t n, rf_pq_columns *c, char *err,
		       size_t errlen)
{
	const char *eq = memchr(p, '=', n);
	size_t k = eq ? (size_t)(eq - p) : n;
	while (k && blank(p[k - 1]))
		k--;
	char **slot = k == 5 && !memcmp(p, "image", 5) ? &c->image
		      : k == 5 && !memcmp(p, "label", 5) ? &c->label : NULL;
	if (!eq || !slot) {
		rfi_fmt(err, errlen, "config: columns '%s': '%.*s' is not image=NAME or label=NAME",
			spec, (int)n, p);
		return RF_ECONFIG;
	}
	const char *v = eq + 1;
	size_t vn = n - (size_t)(v - p);
	while (vn && blank(*v))
		v++, vn--;
	if (*slot || (slot == &c->label && c->no_label)) {
		rfi_fmt(err, errlen, "config: columns '%s': %.*s given twice", spec, (int)k, p);
		return RF_ECONFIG;
	}
	if (!vn && slot == &c->image) {
		rfi_fmt(err, errlen, "config: columns '%s': image= names no column (every sample "
			"needs one)", spec);
		return RF_ECONFIG;
	}
	if (!vn) {
		c->no_label = 1;
		return 0;
	}
	*slot = strndup(v, vn);
	return *slot ? 0 : -ENOMEM;
}

int rfi_pq_columns_parse(const char *spec, rf_pq_columns *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	for (const char *p = spec; p && *p;) {
		size_t n = strcspn(p, ",");
		while (n && blank(*p))
			p++, n--;
		size_t m = n;
		while (m && blank(p[m - 1]))
			m--;
		int ret = column_pair(spec, p, m, c, err, errlen);
		if (ret) {
			rfi_pq_columns_free(c);
			return ret;
		}
		p += n;
		p += *p == ',';
	}
	return 0;
}

void rfi_pq_columns_free(rf_pq_columns *c)
{
	free(c->image);
	free(c->label);
	memset(c, 0, sizeof(*c));
}

int rfi_pq_column_named(const rf_pq_meta *m, const char *name)
{
	int leaf = rfi_pq_leaf_find(m, name);
	if (leaf >= 0)
		return leaf;
	char sub[4200];
	rfi_fmt(sub, sizeof(sub), "%s.bytes", name); /* the Image struct named by itself */
	leaf = rfi_pq_leaf_find(m, sub);
	if (leaf >= 0)
		return leaf;
	int found = -1;
	for (uint32_t l = 0; l < m->nleaves; l++) {
		if (strcasecmp(m->leaves[l].path, name))
			continue;
		if (found >= 0)
			return -1; /* two spellings: neither is picked */
		found = (int)l;
	}
	size_t n = strlen(name);
	for (uint32_t l = 0; l < m->nleaves && found < 0; l++) { /* the one leaf below name */
		const char *p = m->leaves[l].path;
		if (strncmp(p, name, n) || p[n] != '.')
			continue;
		for (uint32_t k = l + 1; k < m->nleaves; k++)
			if (!strncmp(m->leaves[k].path, name, n) && m->leaves[k].path[n] == '.')
				return -1; /* a struct of several: say which */
		found = (int)l; /* a list's element (refused as a list), a struct of one */
	}
	return found;
}

void rfi_pq_column_list(const rf_pq_meta *m, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = 0;
	for (uint32_t l = 0; l < m->nleaves && k + 1 < len; l++) {
		int w = snprintf(buf + k, len - k, "%s%s", k ? ", " : "", m->leaves[l].path);
		k += w > 0 ? (size_t)w : 0;
	}
	if (!m->nleaves)
		rfi_fmt(buf, len, "none");
}

static int strset_grow(rf_pq_strset *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : 64;
	char **names = realloc(s->names, cap * sizeof(*names));
	if (!names)
		return -ENOMEM;
	s->names = names;
	uint32_t *lens = realloc(s->lens, cap * sizeof(*lens));
	if (!lens)
		return -ENOMEM;
	s->lens = lens;
	s->cap = cap;
	/* the table at most half full: rebuilt at twice the names' room */
	uint32_t nslots = cap * 2;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 0; id < s->n; id++) {
		uint32_t h = (uint32_t)rfi_hash_bytes(0, s->names[id], s->lens[id]) & (nslots - 1);
		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = id + 1;
	}
	free(s->slots);
	s->slots = slots;
	s->nslots = nslots;
	return 0;
}

int rfi_pq_strset_add(rf_pq_strset *s, const uint8_t *p, size_t n, uint32_t *id)
{
	uint32_t h = s->nslots ? (uint32_t)rfi_hash_bytes(0, p, n) & (s->nslots - 1) : 0;
	for (; s->nslots && s->slots[h]; h = (h + 1) & (s->nslots - 1)) {
		uint32_t k = s->slots[h] - 1;
		if (s->lens[k] == n && !memcmp(s->names[k], p, n)) {
			*id = k;
			return 0;
		}
	}
	if (s->n >= RF_PQ_CLASSES_MAX || s->bytes + n + 1 > RF_PQ_CLASS_BYTES_MAX)
		return 1;
	if (s->n == s->cap) {
		if (strset_grow(s))
			return -ENOMEM;
		h = (uint32_t)rfi_hash_bytes(0, p, n) & (s->nslots - 1);
		while (s->slots[h])
			h = (h + 1) & (s->nslots - 1);
	}
	char *name = malloc(n + 1);
	if (!name)
		return -ENOMEM;
	memcpy(name, p, n);
	name[n] = 0;
	s->names[s->n] = name;
	s->lens[s->n] = (uint32_t)n;
	s->slots[h] = s->n + 1;
	s->bytes += n + 1;
	*id = s->n++;
	return 0;
}

/* Sorting ids by their strings (bytewise, the shorter first on a tie). */
static int by_name(const void *a, const void *b, void *set)
{
	const rf_pq_strset *s = set;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t n = s->lens[x] < s->lens[y] ? s->lens[x] : s->lens[y];
	int c = memcmp(s->names[x], s->names[y], n);
	return c ? c : (s->lens[x] > s->lens[y]) - (s->lens[x] < s->lens[y]);
}

int rfi_pq_strset_classes(rf_pq_strset *s, char ***names, uint32_t **remap)
{
	uint32_t n = s->n;
	uint32_t *order = malloc((n ? n : 1) * sizeof(*order));
	uint32_t *map = malloc((n ? n : 1) * sizeof(*map));
	char **out = malloc((n ? n : 1) * sizeof(*out));
	if (!order || !map || !out) {
		free(order), free(map), free(out);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_name, s);
	for (uint32_t c = 0; c < n; c++) {
		map[order[c]] = c;
		out[c] = s->names[order[c]];
	}
	free(order);
	s->n = 0; /* the strings moved to out */
	*names = out;
	*remap = map;
	return 0;
}

void rfi_pq_strset_free(rf_pq_strset *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		free(s->names[i]);
	free(s->names);
	free(s->lens);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* ConvertedType's unsigned integers (UINT_8 .. UINT_64). */
#define CONVERTED_UINT_8 11
#define CONVERTED_UINT_64 14

rf_pq_text rfi_pq_text_of(const rf_pq_meta *m, uint32_t leaf)
{
	const rf_pq_leaf *l = &m->leaves[leaf];
	int32_t conv = m->schema[l->schema].converted;
	int unsign = conv >= CONVERTED_UINT_8 && conv <= CONVERTED_UINT_64;
	switch (l->type) {
	case RF_PQ_BOOLEAN: return RF_PQ_TEXT_BOOL;
	case RF_PQ_INT32: return unsign ? RF_PQ_TEXT_UINT32 : RF_PQ_TEXT_INT;
	case RF_PQ_INT64: return unsign ? RF_PQ_TEXT_UINT64 : RF_PQ_TEXT_INT;
	case RF_PQ_FLOAT: return RF_PQ_TEXT_FLOAT;
	case RF_PQ_DOUBLE: return RF_PQ_TEXT_DOUBLE;
	default: return RF_PQ_TEXT_BYTES;
	}
}

/* The shortest %g text of x that reads back as x (as float when single). */
static int shortest(char buf[32], double x, int single)
{
	int w = 0;
	for (int prec = 1; prec <= 17; prec++) {
		w = snprintf(buf, 32, "%.*g", prec, x);
		double back = strtod(buf, NULL);
		if (single ? (float)back == (float)x : back == x)
			break;
	}
	return w; /* a NaN never reads back equal: "nan" at 17 digits is "nan" too */
}

void rfi_pq_value_bytes(rf_pq_text how, const uint8_t *ptr, uint32_t len, int64_t num,
			char buf[32], const uint8_t **out, size_t *out_len)
{
	int w = 0;
	float f;
	double d;
	uint32_t bits = (uint32_t)num;
	switch (how) {
	case RF_PQ_TEXT_BYTES:
		*out = ptr ? ptr : (const uint8_t *)"";
		*out_len = ptr ? len : 0;
		return;
	case RF_PQ_TEXT_BOOL: w = snprintf(buf, 32, "%s", num ? "true" : "false"); break;
	case RF_PQ_TEXT_INT: w = snprintf(buf, 32, "%" PRId64, num); break;
	case RF_PQ_TEXT_UINT32: w = snprintf(buf, 32, "%" PRIu32, (uint32_t)num); break;
	case RF_PQ_TEXT_UINT64: w = snprintf(buf, 32, "%" PRIu64, (uint64_t)num); break;
	case RF_PQ_TEXT_FLOAT:
		memcpy(&f, &bits, sizeof(f));
		w = shortest(buf, f, 1);
		break;
	case RF_PQ_TEXT_DOUBLE:
		memcpy(&d, &num, sizeof(d));
		w = shortest(buf, d, 0);
		break;
	}
	*out = (const uint8_t *)buf;
	*out_len = w > 0 ? (size_t)w : 0;
}
