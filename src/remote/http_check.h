/* http_check.h - what an HTTP response to a ranged GET must say before a
 * byte of it is believed (issue 36): its status, its Content-Range (the
 * range asked, and the object's size where it is known), its body's length,
 * no Content-Encoding but identity, and the ETag indexed. Pure: the header
 * lines as they came and the body's length in, a verdict and the reason
 * out, so that tests/fuzz/fuzz_http.c drives it with any bytes. curl checks
 * none of this (a 206 is a 206 to it); http.c's reads and fetch.c's
 * set-up requests both ask here.
 *
 * Thread rule: none (no state outside the caller's structs). Private to
 * src/remote/. */
#ifndef RF_REMOTE_HTTP_CHECK_H
#define RF_REMOTE_HTTP_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "io/engine.h" /* RF_IO_ETAG_MAX */

/* What was asked. */
typedef struct rf_http_ask {
	uint64_t offset;   /* the range asked: [offset, offset + len) */
	uint64_t len;      /* 0: no range (the whole object) */
	uint64_t size;     /* the object's bytes as indexed, or 0: unknown */
	const char *etag;  /* the ETag indexed (the request's If-Match), or NULL / "" */
} rf_http_ask;

enum rf_http_range_kind {
	RF_HTTP_RANGE_NONE = 0,  /* no Content-Range */
	RF_HTTP_RANGE_BYTES = 1, /* bytes START-END/TOTAL (TOTAL may be '*') */
	RF_HTTP_RANGE_UNSAT = 2, /* bytes STAR/TOTAL (a 416's) */
	RF_HTTP_RANGE_BAD = 3,   /* present, but none of those */
};

#define RF_HTTP_NO_TOTAL UINT64_MAX /* Content-Range's TOTAL was '*' */

/* What the response's header lines said (rfi_http_seen_line). Zero it
 * before the first line. */
typedef struct rf_http_seen {
	long status;          /* the last status line's, 0: none came */
	int in_headers;       /* a status line came and not yet the blank line after
	                       * its headers */
	int range;            /* enum rf_http_range_kind */
	uint64_t start, end, total; /* Content-Range's; total RF_HTTP_NO_TOTAL for '*' */
	int has_length;       /* a Content-Length came: */
	uint64_t length;
	char encoding[48];    /* the first Content-Encoding (or Transfer-Encoding)
	                       * other than identity (or chunked), as the line says
	                       * it ("Content-Encoding: gzip", cut to fit), or "" */
	int etag_state;       /* 0: no ETag, 1: in etag, 2: one too long to keep, or
	                       * with a byte that is not printable ASCII */
	char etag[RF_IO_ETAG_MAX]; /* the ETag as sent (W/ included), when etag_state 1 */
	char range_text[48];  /* Content-Range's value (printable bytes, cut), for messages */
	int has_retry_after;  /* a Retry-After came (a 429's, a 503's): */
	uint32_t retry_after_s; /* its seconds (at most a day); for its date form,
	                       * the date less the response's Date, or less this
	                       * machine's clock where no Date came (once the
	                       * headers end), 0 for a date past */
	int64_t retry_at;     /* Retry-After's date form not yet measured (epoch
	                       * seconds), 0: none */
	int64_t date;         /* the response's Date (epoch seconds), 0: none */
} rf_http_seen;

/* Takes one header line (line[len], CRLF or not, no NUL needed). A status
 * line ("HTTP/...") starts a new response (after a redirect or a 1xx):
 * what the one before said is forgotten. A repeated Content-Range or
 * Content-Length that disagrees with the first is kept as RF_HTTP_RANGE_BAD
 * or a length of UINT64_MAX (a response of two minds is believed in
 * neither). */
void rfi_http_seen_line(rf_http_seen *s, const char *line, size_t len);

/* The object's size as the response says it: Content-Range's total, or a
 * 200's Content-Length when the request had no range or one from 0; 0 when
 * it does not say. */
uint64_t rfi_http_seen_size(const rf_http_seen *s, const rf_http_ask *a);

/* The ETag to keep for If-Match (a strong one that fits) into
 * out[RF_IO_ETAG_MAX], or "" when none. */
void rfi_http_seen_etag(const rf_http_seen *s, char *out);

/* Judges a finished response: s from its header lines, body the bytes its
 * body had (more than a->len: the server sent more than the range).
 * *step is RF_IO_STEP_OPEN when the server refused the request (4xx, an
 * object changed), else RF_IO_STEP_READ. *fault is 1 when the response
 * broke a rule above (a proxy's mistake may pass: the caller tries again),
 * else 0. why[whylen] says what the server did, for a result < 0 ("asked
 * bytes 512-1023, the server sent Content-Range bytes 0-511/4096").
 * @return : bytes of the range the body holds (fewer than asked only where
 *           the object ends first; 0: the range starts at or past its
 *           end), or -EAGAIN (429, 500, 502, 503, 504: pass), -ENOENT (404,
 *           410), -EACCES (401, 403), -ESTALE (412, or another ETag or size
 *           than indexed), -EPROTO (any other status, or a rule broken). */
int32_t rfi_http_check(const rf_http_ask *a, const rf_http_seen *s, uint64_t body, int *step,
		      int *fault, char *why, size_t whylen);

#endif
