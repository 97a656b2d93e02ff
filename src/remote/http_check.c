/* http_check.c - a ranged GET's response judged against what was asked
 * (http_check.h): header lines gathered into what they say, then one
 * verdict from the status, Content-Range, Content-Length, the encodings,
 * the ETag and the body's length. Every value from the server is a
 * stranger's: parsed strictly (digits only, no overflow), printed only as
 * printable bytes. */
#define _GNU_SOURCE
#include "remote/http_check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "io/engine.h" /* enum rf_io_step */
#include "util/util.h"

/* The value of header line[len] when its name is name (case aside):
 * leading blanks and trailing blanks and CR LF trimmed; NULL otherwise. */
static const char *value_of(const char *line, size_t len, const char *name, size_t *vlen)
{
	size_t n = strlen(name);
	if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
		return NULL;
	const char *v = line + n + 1, *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*vlen = (size_t)(end - v);
	return v;
}

/* Decimal digits at *p (before end) into *out. @return : 1, or 0 when
 * there are none or they overflow 64 bits. */
static int number(const char **p, const char *end, uint64_t *out)
{
	uint64_t x = 0;
	const char *q = *p;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (x > (UINT64_MAX - 9) / 10)
			return 0;
		x = x * 10 + (uint64_t)(*q - '0');
	}
	if (q == *p)
		return 0;
	*p = q;
	*out = x;
	return 1;
}

/* Copies the printable bytes of v[n] into out[outlen] (others as '?'). */
static void printable(const char *v, size_t n, char *out, size_t outlen)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < outlen; i++)
		out[k++] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	if (outlen)
		out[k] = '\0';
}

/* Content-Range's value v[n] into s. */
static void content_range(rf_http_seen *s, const char *v, size_t n)
{
	const char *p = v, *end = v + n;
	uint64_t a = 0, b = 0, t = RF_HTTP_NO_TOTAL;
	int kind = RF_HTTP_RANGE_BAD;
	if (n > 6 && !strncasecmp(p, "bytes", 5) && (p[5] == ' ' || p[5] == '\t')) {
		p += 6;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p == '*')
			kind = RF_HTTP_RANGE_UNSAT, p++;
		else if (number(&p, end, &a) && p < end && *p == '-' && (p++, number(&p, end, &b)) &&
			 a <= b)
			kind = RF_HTTP_RANGE_BYTES;
		if (kind != RF_HTTP_RANGE_BAD && !(p < end && *p == '/'))
			kind = RF_HTTP_RANGE_BAD;
		else if (kind != RF_HTTP_RANGE_BAD) {
			p++;
			if (p < end && *p == '*' && kind == RF_HTTP_RANGE_BYTES)
				p++; /* the total unknown: allowed for a 206 */
			else if (!number(&p, end, &t) || (kind == RF_HTTP_RANGE_BYTES && b >= t))
				kind = RF_HTTP_RANGE_BAD;
			if (p != end)
				kind = RF_HTTP_RANGE_BAD;
		}
	}
	if (s->range != RF_HTTP_RANGE_NONE &&
	    (s->range != kind || s->start != a || s->end != b || s->total != t))
		kind = RF_HTTP_RANGE_BAD; /* two that disagree */
	if (s->range == RF_HTTP_RANGE_NONE)
		printable(v, n, s->range_text, sizeof(s->range_text));
	s->range = kind;
	s->start = a, s->end = b, s->total = t;
}

/* An encoding header's value v[n]: remembered (as the line says it) unless
 * it is only `ok` (identity, or chunked for Transfer-Encoding) and blanks
 * and commas. */
static void encoding(rf_http_seen *s, const char *name, const char *v, size_t n, const char *ok)
{
	if (s->encoding[0])
		return;
	size_t okn = strlen(ok);
	for (const char *p = v, *end = v + n; p < end;) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		const char *q = p;
		while (q < end && *q != ',' && *q != ' ' && *q != '\t')
			q++;
		if (q > p && !((size_t)(q - p) == 8 && !strncasecmp(p, "identity", 8)) &&
		    !((size_t)(q - p) == okn && !strncasecmp(p, ok, okn))) {
			char val[40];
			printable(v, n, val, sizeof(val));
			snprintf(s->encoding, sizeof(s->encoding), "%s: %s", name, val);
			return;
		}
		p = q;
	}
}

void rfi_http_seen_line(rf_http_seen *s, const char *line, size_t len)
{
	const char *v;
	size_t n;
	if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* a new response: what an earlier one said does not count */
		*s = (rf_http_seen){ .in_headers = 1 };
		const char *p = memchr(line, ' ', len), *end = line + len;
		uint64_t st;
		if (p && (p++, number(&p, end, &st)) && st >= 100 && st <= 999)
			s->status = (long)st;
		else
			s->status = 999; /* a status line we cannot read: no status we accept */
		return;
	}
	if ((len == 2 && line[0] == '\r' && line[1] == '\n') || (len == 1 && line[0] == '\n')) {
		s->in_headers = 0;
		return;
	}
	if ((v = value_of(line, len, "content-range", &n))) {
		content_range(s, v, n);
	} else if ((v = value_of(line, len, "content-length", &n))) {
		const char *p = v;
		uint64_t x;
		if (!number(&p, v + n, &x) || p != v + n || (s->has_length && s->length != x))
			x = UINT64_MAX; /* unreadable, or two that disagree */
		s->has_length = 1;
		s->length = x;
	} else if ((v = value_of(line, len, "content-encoding", &n))) {
		encoding(s, "Content-Encoding", v, n, "identity");
	} else if ((v = value_of(line, len, "transfer-encoding", &n))) {
		encoding(s, "Transfer-Encoding", v, n, "chunked");
	} else if ((v = value_of(line, len, "etag", &n))) {
		/* kept only printable: it goes back in an If-Match line and into
		 * messages (a control byte there would be the server's to write) */
		size_t ok = 0;
		while (ok < n && v[ok] >= 0x20 && v[ok] < 0x7f)
			ok++;
		if (n < RF_IO_ETAG_MAX && ok == n) {
			memcpy(s->etag, v, n);
			s->etag[n] = '\0';
			s->etag_state = 1;
		} else {
			s->etag[0] = '\0';
			s->etag_state = 2;
		}
	}
}

uint64_t rfi_http_seen_size(const rf_http_seen *s, const rf_http_ask *a)
{
	if ((s->range == RF_HTTP_RANGE_BYTES || s->range == RF_HTTP_RANGE_UNSAT) &&
	    s->total != RF_HTTP_NO_TOTAL)
		return s->total;
	if (s->status == 200 && s->has_length && s->length != UINT64_MAX && a->offset == 0)
		return s->length; /* the whole object; a 206's says the range */
	return 0;
}

void rfi_http_seen_etag(const rf_http_seen *s, char *out)
{
	/* a weak one (W/"...") is not kept: If-Match compares strongly, so it
	 * would never pass */
	if (s->etag_state == 1 && strncmp(s->etag, "W/", 2))
		memcpy(out, s->etag, strlen(s->etag) + 1);
	else
		out[0] = '\0';
}

/* "bytes 0-511/4096" of what s's Content-Range says, into buf. */
static const char *said_range(const rf_http_seen *s, char *buf, size_t len)
{
	if (s->range == RF_HTTP_RANGE_NONE)
		rfi_fmt(buf, len, "no Content-Range");
	else
		rfi_fmt(buf, len, "Content-Range %s", s->range_text);
	return buf;
}

/* A size other than the one indexed: the object was replaced (its reads
 * fail as stale, and the open is what failed). said: how the response
 * told the size ("HTTP 200", or "Content-Range " and its text). */
static int changed_size(uint64_t got, uint64_t indexed, const char *said, const char *range,
			int *step, char *why, size_t whylen)
{
	*step = RF_IO_STEP_OPEN;
	rfi_fmt(why, whylen, "changed on the server: %llu bytes (%s%s) where %llu were indexed",
	       (unsigned long long)got, said, range, (unsigned long long)indexed);
	return -ESTALE;
}

int32_t rfi_http_check(const rf_http_ask *a, const rf_http_seen *s, uint64_t body, int *step,
		      int *fault, char *why, size_t whylen)
{
	*step = RF_IO_STEP_READ;
	*fault = 0;
	if (whylen)
		why[0] = '\0';
	long st = s->status;
	int ranged = a->len > 0;
	uint64_t last = ranged ? a->offset + a->len - 1 : 0; /* the last byte asked */
	char asked[64], said[80];
	if (ranged)
		rfi_fmt(asked, sizeof(asked), "asked bytes %llu-%llu", (unsigned long long)a->offset,
		       (unsigned long long)last);
	else
		rfi_fmt(asked, sizeof(asked), "asked the whole object");
	if (st == 429 || st == 500 || st == 502 || st == 503 || st == 504) {
		rfi_fmt(why, whylen, "HTTP %ld", st);
		return -EAGAIN;
	}
	if (st != 200 && st != 206 && st != 416) {
		*step = RF_IO_STEP_OPEN;
		rfi_fmt(why, whylen, "HTTP %ld", st);
		if (st == 404 || st == 410)
			return -ENOENT;
		if (st == 401 || st == 403)
			return -EACCES;
		if (st == 412) {
			rfi_fmt(why, whylen, "changed on the server (HTTP 412: not the ETag indexed)");
			return -ESTALE;
		}
		if (st == 0)
			rfi_fmt(why, whylen, "no response");
		return -EPROTO;
	}
	*fault = 1; /* until every rule below holds */
	/* another object than the one indexed, whatever else it says (a 416
	 * of it too) */
	if (a->etag && a->etag[0] && s->etag_state &&
	    (s->etag_state == 2 || strcmp(s->etag, a->etag))) {
		*step = RF_IO_STEP_OPEN;
		rfi_fmt(why, whylen, "changed on the server: ETag %s where %s was indexed (HTTP "
		       "%ld: the server did not honour If-Match)",
		       s->etag_state == 2 ? "(too long or not printable)" : s->etag, a->etag, st);
		return -ESTALE;
	}
	if (st == 416) {
		if (!ranged) {
			rfi_fmt(why, whylen, "%s, the server answered HTTP 416 (range not "
			       "satisfiable)", asked);
			return -EPROTO;
		}
		uint64_t total = s->range == RF_HTTP_RANGE_UNSAT ? s->total : 0;
		if (a->size && total && total != a->size)
			return changed_size(total, a->size, "HTTP 416, Content-Range ", s->range_text,
					    step, why, whylen);
		uint64_t size = total ? total : a->size;
		if (size > a->offset) {
			rfi_fmt(why, whylen, "%s, the server answered HTTP 416 (range not satisfiable) "
			       "for an object of %llu bytes", asked, (unsigned long long)size);
			return -EPROTO;
		}
		*fault = 0;
		return 0; /* the range starts at or past the object's end */
	}
	if (s->encoding[0]) {
		rfi_fmt(why, whylen, "%s, the server sent them encoded (%s), not as they are "
		       "(Accept-Encoding: identity was asked)", asked, s->encoding);
		return -EPROTO;
	}
	if (st == 200) {
		/* a 200 is the whole object: the range asked only when that
		 * started at 0 and held it all */
		int whole = !ranged || (a->offset == 0 && body <= a->len);
		if (!whole) {
			if (s->has_length && s->length != UINT64_MAX)
				rfi_fmt(why, whylen, "%s, the server sent the whole object (HTTP 200, "
				       "%llu bytes): it ignored Range", asked,
				       (unsigned long long)s->length);
			else
				rfi_fmt(why, whylen, "%s, the server sent the whole object (HTTP 200): "
				       "it ignored Range", asked);
			return -EPROTO;
		}
		if (s->has_length && s->length != body) {
			rfi_fmt(why, whylen, "%s, the server's Content-Length is not its body's "
			       "%llu bytes", asked, (unsigned long long)body);
			return -EPROTO;
		}
		if (a->size && body != a->size)
			return changed_size(body, a->size, "HTTP 200", "", step, why, whylen);
		if (body > INT32_MAX) {
			rfi_fmt(why, whylen, "%s: more than a read holds", asked);
			return -EFBIG;
		}
		*fault = 0;
		return (int32_t)body;
	}
	/* a 206: the range asked, cut only where the object ends */
	if (!ranged) {
		rfi_fmt(why, whylen, "%s, the server sent part of it (HTTP 206, %s)", asked,
		       said_range(s, said, sizeof(said)));
		return -EPROTO;
	}
	if (s->range != RF_HTTP_RANGE_BYTES) {
		rfi_fmt(why, whylen, "%s, the server sent HTTP 206 with %s", asked,
		       said_range(s, said, sizeof(said)));
		return -EPROTO;
	}
	uint64_t total = s->total != RF_HTTP_NO_TOTAL ? s->total : 0;
	if (a->size && total && total != a->size)
		return changed_size(total, a->size, "Content-Range ", s->range_text, step, why,
				    whylen);
	uint64_t size = total ? total : a->size;
	/* the last byte the server owes: the last asked, or the object's last */
	uint64_t owed = size ? RF_MIN(last, size - 1) : last;
	int ok = s->start == a->offset && (size ? s->end == owed : s->end <= owed);
	if (!ok || (size && a->offset >= size)) {
		rfi_fmt(why, whylen, "%s, the server sent %s", asked, said_range(s, said, sizeof(said)));
		return -EPROTO;
	}
	uint64_t n = s->end - s->start + 1;
	if (s->has_length && s->length != n) {
		rfi_fmt(why, whylen, "%s, the server sent %s with Content-Length %llu", asked,
		       said_range(s, said, sizeof(said)), (unsigned long long)s->length);
		return -EPROTO;
	}
	if (body != n) {
		rfi_fmt(why, whylen, "%s, the server sent %s and %s%llu bytes of body", asked,
		       said_range(s, said, sizeof(said)), body > n ? "more than " : "",
		       (unsigned long long)(body > n ? n : body));
		return -EPROTO;
	}
	if (n > INT32_MAX) {
		rfi_fmt(why, whylen, "%s: more than a read holds", asked);
		return -EFBIG;
	}
	*fault = 0;
	return (int32_t)n;
}
