/* parquet_hf.c - a ClassLabel's names from the "huggingface" metadata
 * (parquet_hf.h): a small JSON reader that finds members by key, skips
 * other values with a depth counter, and decodes the names' strings. */
#include <stdlib.h>
#include <string.h>

#include "source/parquet_hf.h"
#include "util/util.h"

typedef struct json {
	const char *p, *end;
	const char *err;
} json;

static void ws(json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

/* Past a string (at its opening quote); its raw bytes in [*s, *e). */
static int skip_string(json *j, const char **s, const char **e)
{
	if (j->p >= j->end || *j->p != '"')
		return j->err = "a string expected", -1;
	*s = ++j->p;
	while (j->p < j->end && *j->p != '"') {
		if (*j->p == '\\' && ++j->p >= j->end)
			break;
		j->p++;
	}
	if (j->p >= j->end)
		return j->err = "a string without its end", -1;
	*e = j->p++;
	return 0;
}

/* Past one value of any kind, containers by counting their brackets (a
 * counter, not recursion); j->p left at the ',' or closing bracket after
 * it. */
static int skip_value(json *j)
{
	const char *s, *e;
	int depth = 0;
	ws(j);
	for (;;) {
		if (j->p >= j->end)
			return j->err = "the JSON ends inside a value", -1;
		char c = *j->p;
		if (c == '"') {
			if (skip_string(j, &s, &e) < 0)
				return -1;
			if (depth == 0)
				return 0;
			continue;
		}
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return 0; /* the container around a scalar ends */
			if (--depth == 0) {
				j->p++;
				return 0;
			}
		} else if (c == ',' && depth == 0) {
			return 0;
		}
		j->p++;
	}
}

static int raw_eq(const char *s, const char *e, const char *key)
{
	size_t n = strlen(key);
	return (size_t)(e - s) == n && memcmp(s, key, n) == 0; /* keys here have no escapes */
}

/* In the object at j->p, the value of member key: j->p left at it.
 * @return : 1 found, 0 not there, -1 malformed. */
static int member(json *j, const char *key)
{
	const char *s, *e;
	ws(j);
	if (j->p >= j->end || *j->p != '{')
		return j->err = "an object expected", -1;
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == '}')
		return 0;
	for (;;) {
		ws(j);
		if (skip_string(j, &s, &e) < 0)
			return -1;
		ws(j);
		if (j->p >= j->end || *j->p++ != ':')
			return j->err = "a ':' expected", -1;
		ws(j);
		if (raw_eq(s, e, key))
			return 1;
		if (skip_value(j) < 0)
			return -1;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}')
			return 0;
		return j->err = "a ',' or '}' expected", -1;
	}
}

static int hex4(const char *p, uint32_t *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (uint32_t)d;
	}
	return 0;
}

static size_t utf8(uint32_t cp, char *o)
{
	if (cp < 0x80)
		return o[0] = (char)cp, 1;
	if (cp < 0x800)
		return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3f)), 2;
	if (cp < 0x10000)
		return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)),
		       o[2] = (char)(0x80 | (cp & 0x3f)), 3;
	return o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3f)),
	       o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), o[3] = (char)(0x80 | (cp & 0x3f)), 4;
}

/* A \uXXXX escape at p (after the backslash's 'u'), a surrogate pair
 * joined; *used: the input bytes it took after the 'u'. */
static int unicode(const char *p, const char *e, uint32_t *cp, size_t *used)
{
	uint32_t lo;
	if (e - p < 4 || hex4(p, cp) < 0)
		return -1;
	*used = 4;
	if (*cp >= 0xd800 && *cp < 0xdc00 && e - p >= 10 && p[4] == '\\' && p[5] == 'u' &&
	    hex4(p + 6, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
		*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
		*used = 10;
	}
	return 0;
}

/* The raw string [s, e) decoded into a new NUL-terminated string (never
 * longer than its raw bytes). */
static char *decode(const char *s, const char *e)
{
	char *out = malloc((size_t)(e - s) + 1), *o = out;
	if (!out)
		return NULL;
	while (s < e) {
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		char c = *++s;
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *k = strchr(from, c);
		if (c && k) {
			*o++ = to[k - from];
			s++;
			continue;
		}
		uint32_t cp;
		size_t used;
		if (c != 'u' || unicode(s + 1, e, &cp, &used) < 0) {
			free(out);
			return NULL;
		}
		o += utf8(cp, o); /* at most 4 bytes for the 6 or 12 read */
		s += 1 + used;
	}
	*o = '\0';
	return out;
}

/* The array of strings at j->p into names. */
static int names_array(json *j, char ***names, uint32_t *count)
{
	const char *s, *e;
	uint32_t n = 0, cap = (uint32_t)((j->end - j->p) / 3) + 1; /* "x", at least */
	char **out;
	ws(j);
	if (j->p >= j->end || *j->p++ != '[')
		return j->err = "\"names\" is not an array", -1;
	out = calloc(cap, sizeof(*out));
	if (!out)
		return j->err = "out of memory", -1;
	for (ws(j); j->p < j->end && *j->p != ']';) {
		if (skip_string(j, &s, &e) < 0 || n == cap || !(out[n] = decode(s, e))) {
			rfi_pq_hf_names_free(out, n);
			return j->err = j->err ? j->err : "a class name that is not a string", -1;
		}
		n++;
		ws(j);
		if (j->p < j->end && *j->p == ',')
			j->p++, ws(j);
	}
	if (j->p >= j->end) {
		rfi_pq_hf_names_free(out, n);
		return j->err = "\"names\" without its end", -1;
	}
	*names = out;
	*count = n;
	return 1;
}

int rfi_pq_hf_class_names(const rf_pq_meta *m, const char *column, char ***names,
			  uint32_t *count, char *why, size_t len)
{
	const rf_pq_str *v = rfi_pq_kv_find(m, RF_PQ_HF_KEY);
	const char *s, *e;
	*names = NULL;
	*count = 0;
	if (!v)
		return 0;
	json j = {v->p, v->p + v->n, NULL};
	int rc = member(&j, "info");
	if (rc == 1)
		rc = member(&j, "features");
	if (rc == 1)
		rc = member(&j, column);
	const char *feature = j.p;
	if (rc == 1)
		rc = member(&j, "_type");
	if (rc == 1 && (skip_string(&j, &s, &e) < 0 || !raw_eq(s, e, "ClassLabel")))
		rc = j.err ? -1 : 0;
	if (rc == 1) {
		j.p = feature;
		rc = member(&j, "names");
	}
	if (rc == 1)
		rc = names_array(&j, names, count);
	if (rc < 0)
		rfi_fmt(why, len, "%s: the %s metadata: %s (at byte %zu)", m->file, RF_PQ_HF_KEY, j.err,
			(size_t)(j.p - v->p));
	return rc;
}

void rfi_pq_hf_names_free(char **names, uint32_t count)
{
	for (uint32_t i = 0; names && i < count; i++)
		free(names[i]);
	free(names);
}
