/* hf_tree.c - the Hub's tree listing page and Link header (hf_tree.h): a
 * small JSON reader, enough for an array of flat objects whose other
 * members (lfs, lastCommit, securityFileStatus) are skipped whatever they
 * hold, with nesting bounded. */
#define _GNU_SOURCE
#include "remote/hf_tree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

#define DEPTH_MAX 32

typedef struct reader {
	const char *p, *end;
	const char *why; /* the first thing found wrong, or NULL */
} reader;

static int fail(reader *r, const char *why)
{
	if (!r->why)
		r->why = why;
	return -1;
}

static void blanks(reader *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int eat(reader *r, char c)
{
	blanks(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return 1;
	}
	return 0;
}

static int hex4(const char *p, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return 0;
		*out = *out << 4 | (unsigned)d;
	}
	return 1;
}

/* Appends code point cp as UTF-8 to out (n bytes so far, cap bytes). */
static int put_utf8(char *out, size_t *n, size_t cap, unsigned cp)
{
	int k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	if (!out)
		return 0;
	if (*n + (size_t)k >= cap)
		return -1;
	if (k == 1) {
		out[(*n)++] = (char)cp;
		return 0;
	}
	for (int j = k - 1; j > 0; j--, cp >>= 6)
		out[*n + (size_t)j] = (char)(0x80 | (cp & 0x3f));
	out[*n] = (char)((0xf00u >> k) | cp);
	*n += (size_t)k;
	return 0;
}

/* A \u escape at r->p (past the 'u'), a surrogate pair's second half
 * included, as a code point. */
static int unicode(reader *r, unsigned *cp)
{
	if (r->end - r->p < 4 || !hex4(r->p, cp))
		return fail(r, "a \\u escape that is not 4 hex digits");
	r->p += 4;
	if (*cp >= 0xd800 && *cp < 0xdc00) {
		unsigned lo;
		if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || !hex4(r->p + 2, &lo) ||
		    lo < 0xdc00 || lo >= 0xe000)
			return fail(r, "a lone surrogate in a \\u escape");
		r->p += 6;
		*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	} else if (*cp >= 0xdc00 && *cp < 0xe000) {
		return fail(r, "a lone surrogate in a \\u escape");
	}
	return 0;
}

/* Appends byte c to out[cap] (n bytes so far); *cut when it does not fit. */
static void put_byte(char *out, size_t *n, size_t cap, char c, int *cut)
{
	if (*n + 1 < cap)
		out[(*n)++] = c;
	else
		*cut = 1;
}

/* A string at r->p (its '"' next), decoded into out[cap] (NULL: skipped);
 * *cut when it did not fit (the rest is read, not kept). @return : 0, or
 * -1 (r->why set). */
static int string(reader *r, char *out, size_t cap, int *cut)
{
	size_t n = 0;
	*cut = 0;
	if (!eat(r, '"'))
		return fail(r, "a string expected");
	while (r->p < r->end && *r->p != '"') {
		unsigned char b = (unsigned char)*r->p++;
		if (b < 0x20)
			return fail(r, "a control byte in a string");
		if (b != '\\') { /* UTF-8 as it came */
			if (out)
				put_byte(out, &n, cap, (char)b, cut);
			continue;
		}
		if (r->p >= r->end)
			break;
		char c = *r->p++;
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *at = c ? strchr(from, c) : NULL;
		unsigned cp;
		if (c == 'u') {
			if (unicode(r, &cp))
				return -1;
		} else if (at) {
			cp = (unsigned char)to[at - from];
		} else {
			return fail(r, "an unknown escape in a string");
		}
		if (cp == 0)
			return fail(r, "a NUL in a string");
		if (out && put_utf8(out, &n, cap, cp))
			*cut = 1;
	}
	if (!eat(r, '"'))
		return fail(r, "a string without its end");
	if (out)
		out[n] = '\0';
	return 0;
}

static int value(reader *r, int depth);

/* The members of an object or the items of an array (its opening bracket
 * eaten), skipped. */
static int skip_items(reader *r, char close, int depth)
{
	if (eat(r, close))
		return 0;
	do {
		int cut;
		if (close == '}' && (string(r, NULL, 0, &cut) || !eat(r, ':')))
			return fail(r, "an object's member is not \"name\": value");
		if (value(r, depth + 1))
			return -1;
	} while (eat(r, ','));
	return eat(r, close) ? 0 : fail(r, "an object or array without its end");
}

/* Any value at r->p, skipped. */
static int value(reader *r, int depth)
{
	if (depth > DEPTH_MAX)
		return fail(r, "nested over 32 deep");
	blanks(r);
	if (r->p >= r->end)
		return fail(r, "cut short");
	int cut;
	if (*r->p == '"')
		return string(r, NULL, 0, &cut);
	if (eat(r, '{'))
		return skip_items(r, '}', depth);
	if (eat(r, '['))
		return skip_items(r, ']', depth);
	const char *start = r->p;
	while (r->p < r->end && strchr("+-.0123456789eEtruefalsn", *r->p) && *r->p)
		r->p++;
	return r->p > start ? 0 : fail(r, "a value that is not JSON");
}

/* A size: a non-negative integer of at most 19 digits. */
static int size_of(reader *r, uint64_t *out)
{
	blanks(r);
	const char *start = r->p;
	uint64_t x = 0;
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9' && r->p - start < 19)
		x = x * 10 + (uint64_t)(*r->p++ - '0');
	if (r->p == start || (r->p < r->end && strchr(".eE0123456789", *r->p) && *r->p))
		return fail(r, "a size that is not a whole number of bytes");
	*out = x;
	return 0;
}

/* One member of an entry: its value read into the entry's type, path or
 * size, or skipped. */
static int member(reader *r, char *type, char *path, uint64_t *size, int *has)
{
	char key[16];
	int cut;
	if (string(r, key, sizeof(key), &cut))
		return -1;
	if (!eat(r, ':'))
		return fail(r, "an object's member is not \"name\": value");
	blanks(r);
	int is_string = r->p < r->end && *r->p == '"';
	if (cut)
		return value(r, 2);
	if (!strcmp(key, "type") && is_string)
		return string(r, type, 16, &cut); /* a longer one is no "file" */
	if (!strcmp(key, "path")) {
		*has |= 1;
		if (!is_string)
			return fail(r, "a path that is not a string");
		if (string(r, path, RF_HF_PATH_MAX, &cut))
			return -1;
		return cut ? fail(r, "a path over 4096 bytes") : 0;
	}
	if (!strcmp(key, "size")) {
		*has |= 2;
		return size_of(r, size);
	}
	return value(r, 2);
}

/* One entry (an object at r->p): a file's path and size to fn. */
static int entry(reader *r, char *path, int (*fn)(void *, const char *, uint64_t), void *user,
		 int *stop)
{
	char type[16] = "";
	int has = 0;
	uint64_t size = 0;
	path[0] = '\0';
	if (!eat(r, '{'))
		return fail(r, "an entry that is not an object");
	if (!eat(r, '}')) {
		do
			if (member(r, type, path, &size, &has))
				return -1;
		while (eat(r, ','));
		if (!eat(r, '}'))
			return fail(r, "an object without its end");
	}
	if (strcmp(type, "file"))
		return 0; /* a directory (or what the Hub may list one day) */
	if (has != 3 || !path[0])
		return fail(r, "a file without a path or a size");
	*stop = fn(user, path, size);
	return 0;
}

int rfi_hf_tree_parse(const char *doc, size_t len,
		      int (*fn)(void *user, const char *path, uint64_t size), void *user,
		      char *err, size_t errlen)
{
	reader r = { .p = doc, .end = doc + len };
	char *path = malloc(RF_HF_PATH_MAX);
	if (!path) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int stop = 0, bad = 0;
	if (!eat(&r, '['))
		bad = fail(&r, "not a JSON array");
	else if (!eat(&r, ']')) {
		do
			bad = entry(&r, path, fn, user, &stop);
		while (!bad && !stop && eat(&r, ','));
		if (!bad && !stop && !eat(&r, ']'))
			bad = fail(&r, "an array without its end");
	}
	free(path);
	if (stop)
		return stop;
	if (bad) {
		rfi_fmt(err, errlen, "the tree listing is not as the Hub writes it: %s (byte %zu)",
		       r.why ? r.why : "?", (size_t)(r.p - doc));
		return -EPROTO;
	}
	return 0;
}

int rfi_hf_link_next(const char *link, char *out, size_t outlen)
{
	for (const char *p = link; p && *p;) {
		const char *lt = strchr(p, '<'), *gt = lt ? strchr(lt, '>') : NULL;
		if (!gt)
			return 0;
		const char *next = strchr(gt, ','); /* the next link, or NULL */
		size_t params = next ? (size_t)(next - gt) : strlen(gt);
		char *rel = memmem(gt, params, "rel=", 4);
		if (rel && (!strncasecmp(rel + 4, "\"next\"", 6) || !strncasecmp(rel + 4, "next", 4))) {
			size_t n = (size_t)(gt - lt - 1);
			if (n + 1 > outlen || !n)
				return 0;
			memcpy(out, lt + 1, n);
			out[n] = '\0';
			return 1;
		}
		p = next ? next + 1 : NULL;
	}
	return 0;
}
