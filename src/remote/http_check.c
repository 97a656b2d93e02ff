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
#include <time.h>

#include "io/engine.h" /* enum rf_io_step */
#include "remote/http_date.h"
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

/* The "/T" after a range of kind ending in b, at p (past the '/'): T into
 * *t (a 206's may be '*': unknown), and nothing after it. @return : kind,
 * or RF_HTTP_RANGE_BAD. */
static int range_total(const char *p, const char *end, int kind, uint64_t b, uint64_t *t)
{
	if (p < end && *p == '*' && kind == RF_HTTP_RANGE_BYTES)
		p++; /* the total unknown: allowed for a 206 */
	else if (!number(&p, end, t) || (kind == RF_HTTP_RANGE_BYTES && b >= *t))
		return RF_HTTP_RANGE_BAD;
	return p == end ? kind : RF_HTTP_RANGE_BAD;
}

/* A Content-Range value v[n]: "bytes A-B/T" or "bytes STAR/T" (a 416's),
 * its numbers into *a, *b, *t as far as they were read. @return : its
 * kind (RF_HTTP_RANGE_BAD for anything else). */
static int range_kind(const char *v, size_t n, uint64_t *a, uint64_t *b, uint64_t *t)
{
	const char *p = v, *end = v + n;
	int kind = RF_HTTP_RANGE_BAD;
	if (n <= 6 || strncasecmp(p, "bytes", 5) || (p[5] != ' ' && p[5] != '\t'))
		return RF_HTTP_RANGE_BAD;
	p += 6;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p < end && *p == '*')
		kind = RF_HTTP_RANGE_UNSAT, p++;
	else if (number(&p, end, a) && p < end && *p == '-' && (p++, number(&p, end, b)) && *a <= *b)
		kind = RF_HTTP_RANGE_BYTES;
	if (kind == RF_HTTP_RANGE_BAD || !(p < end && *p == '/'))
		return RF_HTTP_RANGE_BAD;
	return range_total(p + 1, end, kind, *b, t);
}

/* Content-Range's value v[n] into s. */
static void content_range(rf_http_seen *s, const char *v, size_t n)
{
	uint64_t a = 0, b = 0, t = RF_HTTP_NO_TOTAL;
	int kind = range_kind(v, n, &a, &b, &t);
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

/* A status line ("HTTP/1.1 206 Partial Content") starts a new response:
 * what an earlier one said does not count. */
static void status_line(rf_http_seen *s, const char *line, size_t len)
{
	*s = (rf_http_seen){ .in_headers = 1 };
	const char *p = memchr(line, ' ', len), *end = line + len;
	uint64_t st;
	if (p && (p++, number(&p, end, &st)) && st >= 100 && st <= 999)
		s->status = (long)st;
	else
		s->status = 999; /* a status line we cannot read: no status we accept */
}

/* Content-Length's value v[n] into s. */
static void content_length(rf_http_seen *s, const char *v, size_t n)
{
	const char *p = v;
	uint64_t x;
	if (!number(&p, v + n, &x) || p != v + n || (s->has_length && s->length != x))
		x = UINT64_MAX; /* unreadable, or two that disagree */
	s->has_length = 1;
	s->length = x;
}

/* ETag's value v[n] into s: kept only printable (it goes back in an
 * If-Match line and into messages: a control byte there would be the
 * server's to write) and short enough. */
static void etag(rf_http_seen *s, const char *v, size_t n)
{
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

/* Retry-After's date form measured, once its date and what it is measured
 * against are known: the response's Date (the server's own clock: no skew
 * between the two machines counts), or, when the headers ended without one
 * (at_end), this machine's clock. A date past is a wait of 0. */
static void retry_settle(rf_http_seen *s, int at_end)
{
	if (!s->retry_at || (!s->date && !at_end))
		return;
	int64_t from = s->date ? s->date : (int64_t)time(NULL);
	int64_t wait = s->retry_at > from ? s->retry_at - from : 0;
	s->retry_after_s = (uint32_t)RF_MIN(wait, (int64_t)86400);
	s->has_retry_after = 1;
	s->retry_at = 0;
}

/* Retry-After (a 429's or 503's wait): a count of seconds, kept up to a
 * day, or an HTTP-date (RFC 9110 section 10.2.3), measured by
 * retry_settle. Anything else is not read (the caller's backoff stands). */
static void retry_after(rf_http_seen *s, const char *v, size_t n)
{
	uint64_t secs = 0;
	size_t i = 0;
	int64_t at;
	for (; i < n && v[i] >= '0' && v[i] <= '9' && secs <= 86400; i++)
		secs = secs * 10 + (uint64_t)(v[i] - '0');
	if (i == 0 && !rfi_http_date_parse(v, n, &at)) {
		s->retry_at = RF_MAX(at, (int64_t)1);
		retry_settle(s, 0);
		return;
	}
	if (i == 0 || i < n)
		return;
	s->retry_after_s = (uint32_t)RF_MIN(secs, 86400ull);
	s->has_retry_after = 1;
}

/* Date's value v[n]: what a Retry-After date is measured against. */
static void date(rf_http_seen *s, const char *v, size_t n)
{
	int64_t t;
	if (!rfi_http_date_parse(v, n, &t)) {
		s->date = RF_MAX(t, (int64_t)1);
		retry_settle(s, 0);
	}
}

void rfi_http_seen_line(rf_http_seen *s, const char *line, size_t len)
{
	const char *v;
	size_t n;
	if (len >= 5 && !strncmp(line, "HTTP/", 5))
		status_line(s, line, len);
	else if ((len == 2 && line[0] == '\r' && line[1] == '\n') || (len == 1 && line[0] == '\n')) {
		s->in_headers = 0;
		retry_settle(s, 1);
	}
	else if ((v = value_of(line, len, "content-range", &n)))
		content_range(s, v, n);
	else if ((v = value_of(line, len, "content-length", &n)))
		content_length(s, v, n);
	else if ((v = value_of(line, len, "content-encoding", &n)))
		encoding(s, "Content-Encoding", v, n, "identity");
	else if ((v = value_of(line, len, "transfer-encoding", &n)))
		encoding(s, "Transfer-Encoding", v, n, "chunked");
	else if ((v = value_of(line, len, "etag", &n)))
		etag(s, v, n);
	else if ((v = value_of(line, len, "retry-after", &n)))
		retry_after(s, v, n);
	else if ((v = value_of(line, len, "date", &n)))
		date(s, v, n);
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

/* A response judged: what was asked and what came, *step and why[whylen]
 * to set. */
typedef struct verdict {
	const rf_http_ask *a;
	const rf_http_seen *s;
	uint64_t body;       /* the body's bytes */
	uint64_t last;       /* the last byte asked (a range) */
	int *step;
	char *why;
	size_t whylen;
	char asked[64];      /* "asked bytes 0-511", for messages */
} verdict;

/* A status other than 200, 206 and 416: passing (429, 5xx: tried again)
 * or a refusal. */
static int32_t refused(long st, int *step, char *why, size_t whylen)
{
	rfi_fmt(why, whylen, "HTTP %ld", st);
	if (st == 429 || st == 500 || st == 502 || st == 503 || st == 504)
		return -EAGAIN;
	*step = RF_IO_STEP_OPEN;
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

/* Another object than the one indexed, whatever else the response says (a
 * 416 of it too): -ESTALE, else 0. */
static int32_t other_etag(const verdict *v)
{
	const rf_http_ask *a = v->a;
	const rf_http_seen *s = v->s;
	if (!a->etag || !a->etag[0] || !s->etag_state ||
	    (s->etag_state != 2 && !strcmp(s->etag, a->etag)))
		return 0;
	*v->step = RF_IO_STEP_OPEN;
	rfi_fmt(v->why, v->whylen, "changed on the server: ETag %s where %s was indexed (HTTP "
	       "%ld: the server did not honour If-Match)",
	       s->etag_state == 2 ? "(too long or not printable)" : s->etag, a->etag, s->status);
	return -ESTALE;
}

/* A 416: an empty read where the range starts at or past the object's end. */
static int32_t not_satisfiable(const verdict *v)
{
	const rf_http_ask *a = v->a;
	const rf_http_seen *s = v->s;
	if (!a->len) {
		rfi_fmt(v->why, v->whylen, "%s, the server answered HTTP 416 (range not "
		       "satisfiable)", v->asked);
		return -EPROTO;
	}
	uint64_t total = s->range == RF_HTTP_RANGE_UNSAT ? s->total : 0;
	if (a->size && total && total != a->size)
		return changed_size(total, a->size, "HTTP 416, Content-Range ", s->range_text,
				    v->step, v->why, v->whylen);
	uint64_t size = total ? total : a->size;
	if (size > a->offset) {
		rfi_fmt(v->why, v->whylen, "%s, the server answered HTTP 416 (range not "
		       "satisfiable) for an object of %llu bytes", v->asked,
		       (unsigned long long)size);
		return -EPROTO;
	}
	return 0; /* the range starts at or past the object's end */
}

/* A 200 is the whole object: the range asked only when that started at 0
 * and held it all. */
static int32_t whole_object(const verdict *v)
{
	const rf_http_ask *a = v->a;
	const rf_http_seen *s = v->s;
	uint64_t body = v->body;
	if (a->len && !(a->offset == 0 && body <= a->len)) {
		if (s->has_length && s->length != UINT64_MAX)
			rfi_fmt(v->why, v->whylen, "%s, the server sent the whole object (HTTP 200, "
			       "%llu bytes): it ignored Range", v->asked, (unsigned long long)s->length);
		else
			rfi_fmt(v->why, v->whylen, "%s, the server sent the whole object (HTTP 200): "
			       "it ignored Range", v->asked);
		return -EPROTO;
	}
	if (s->has_length && s->length != body) {
		rfi_fmt(v->why, v->whylen, "%s, the server's Content-Length is not its body's "
		       "%llu bytes", v->asked, (unsigned long long)body);
		return -EPROTO;
	}
	if (a->size && body != a->size)
		return changed_size(body, a->size, "HTTP 200", "", v->step, v->why, v->whylen);
	if (body > INT32_MAX) {
		rfi_fmt(v->why, v->whylen, "%s: more than a read holds", v->asked);
		return -EFBIG;
	}
	return (int32_t)body;
}

/* A 206: the range asked, cut only where the object ends. */
static int32_t part(const verdict *v)
{
	const rf_http_ask *a = v->a;
	const rf_http_seen *s = v->s;
	char said[80];
	if (!a->len || s->range != RF_HTTP_RANGE_BYTES) {
		rfi_fmt(v->why, v->whylen, a->len ? "%s, the server sent HTTP 206 with %s"
			: "%s, the server sent part of it (HTTP 206, %s)", v->asked,
		       said_range(s, said, sizeof(said)));
		return -EPROTO;
	}
	uint64_t total = s->total != RF_HTTP_NO_TOTAL ? s->total : 0;
	if (a->size && total && total != a->size)
		return changed_size(total, a->size, "Content-Range ", s->range_text, v->step,
				    v->why, v->whylen);
	uint64_t size = total ? total : a->size;
	/* the last byte the server owes: the last asked, or the object's last */
	uint64_t owed = size ? RF_MIN(v->last, size - 1) : v->last;
	int ok = s->start == a->offset && (size ? s->end == owed : s->end <= owed);
	if (!ok || (size && a->offset >= size)) {
		rfi_fmt(v->why, v->whylen, "%s, the server sent %s", v->asked,
		       said_range(s, said, sizeof(said)));
		return -EPROTO;
	}
	uint64_t n = s->end - s->start + 1;
	if (s->has_length && s->length != n) {
		rfi_fmt(v->why, v->whylen, "%s, the server sent %s with Content-Length %llu",
		       v->asked, said_range(s, said, sizeof(said)), (unsigned long long)s->length);
		return -EPROTO;
	}
	if (v->body != n) {
		rfi_fmt(v->why, v->whylen, "%s, the server sent %s and %s%llu bytes of body",
		       v->asked, said_range(s, said, sizeof(said)), v->body > n ? "more than " : "",
		       (unsigned long long)(v->body > n ? n : v->body));
		return -EPROTO;
	}
	if (n > INT32_MAX) {
		rfi_fmt(v->why, v->whylen, "%s: more than a read holds", v->asked);
		return -EFBIG;
	}
	return (int32_t)n;
}

int32_t rfi_http_check(const rf_http_ask *a, const rf_http_seen *s, uint64_t body, int *step,
		      int *fault, char *why, size_t whylen)
{
	*step = RF_IO_STEP_READ;
	*fault = 0;
	if (whylen)
		why[0] = '\0';
	long st = s->status;
	if (st != 200 && st != 206 && st != 416)
		return refused(st, step, why, whylen);
	verdict v = { .a = a, .s = s, .body = body, .last = a->len ? a->offset + a->len - 1 : 0,
		      .step = step, .why = why, .whylen = whylen };
	if (a->len)
		rfi_fmt(v.asked, sizeof(v.asked), "asked bytes %llu-%llu",
		       (unsigned long long)a->offset, (unsigned long long)v.last);
	else
		rfi_fmt(v.asked, sizeof(v.asked), "asked the whole object");
	int32_t res = other_etag(&v);
	if (!res && st == 416) {
		res = not_satisfiable(&v);
	} else if (!res && s->encoding[0]) {
		rfi_fmt(why, whylen, "%s, the server sent them encoded (%s), not as they are "
		       "(Accept-Encoding: identity was asked)", v.asked, s->encoding);
		res = -EPROTO;
	} else if (!res) {
		res = st == 200 ? whole_object(&v) : part(&v);
	}
	/* a response that broke a rule above (a proxy's mistake may pass) */
	*fault = res < 0;
	return res;
}
