/* fetch.h - one http(s) request made and waited for, at set-up: listing a
 * bucket, asking instance metadata for credentials, a token shard's header,
 * an index object. The read engine (http.c) makes the many requests of a
 * run without blocking; these are the few a source needs before the run
 * starts, on the thread that creates the loader. Transient failures (429,
 * 5xx, a reset, a timeout) are tried again after a short backoff, all of it
 * within the call's budget; a create called off (util/cancel.h) ends the
 * call at once.
 *
 * Thread rule: any thread; each call is its own. Private to the library. */
#ifndef RF_REMOTE_FETCH_H
#define RF_REMOTE_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "io/engine.h" /* rf_io_sign, RF_IO_ETAG_MAX */

typedef struct rf_fetch {
	const char *url;
	const char *method;          /* NULL: GET (POST when body is set) */
	const char *body;            /* a request body (POST), NUL-terminated, or NULL */
	const char *const *headers;  /* extra header lines, NULL-terminated, or NULL */
	const rf_io_sign *sign;      /* how to sign it, or NULL */
	uint64_t offset, len;        /* len > 0: only bytes [offset, offset + len) */
	int tail;                    /* with len > 0: the object's last len bytes (a
	                              * suffix range, offset unused): its size unknown
	                              * yet, one request gives it and its tail; the
	                              * answer's Content-Range is checked to be that
	                              * (out->offset says where the bytes start) */
	size_t max_body;             /* a longer body fails the call (0: 64 MiB) */
	long timeout_ms;             /* each try (0: 30 s) */
	int tries;                   /* 0: 4 */
	const char *keep_header;     /* a header of the answer to keep (out->kept: "Link"
	                              * for a paginated listing), or NULL */
	uint32_t budget_ms;          /* all tries and their backoffs together (0:
	                              * RF_IO_URL_BUDGET_MS): a server that trickles its
	                              * answer, or is busy, holds set-up no longer than
	                              * a run's read (the loader's remote_timeout_ms) */
} rf_fetch;

typedef struct rf_fetch_result {
	long status;                 /* the HTTP status of the last response */
	uint8_t *body;               /* its body, NUL-terminated (malloc'd: free it) */
	size_t body_len;
	uint64_t size;               /* the object's bytes: Content-Range's total, or a
	                              * 200's Content-Length; 0 when unsaid */
	uint64_t offset;             /* a tail request's: where its body starts */
	char etag[RF_IO_ETAG_MAX];   /* its ETag, "" when it gave none (or a weak one) */
	char *kept;                  /* f->keep_header's value in the last response
	                              * (malloc'd), or NULL: none came */
} rf_fetch_result;

/* Makes the request. @return : 0 when a response came (whatever its status:
 * the caller judges it; rfi_fetch_why() says a failed one), else a negative
 * errno (-ECONNREFUSED, -ETIMEDOUT: no whole answer within the budget,
 * -ENXIO: a host name that does not resolve, -EPERM: a certificate,
 * -EFBIG: the body was over max_body, -EPROTO: a response that broke
 * rfi_http_check's rules or a redirect a signed request does not follow,
 * -ESTALE: another ETag than its If-Match, -ECANCELED: the create was
 * called off, -EPROTONOSUPPORT: a build without libcurl) with err[errlen]
 * saying why. out->body is NULL on errors. */
int rfi_fetch_run(const rf_fetch *f, rf_fetch_result *out, char *err, size_t errlen);

/* "HTTP 403 (AccessDenied: Access Denied)": the status and, from an S3
 * error body, its Code and Message. */
void rfi_fetch_why(const rf_fetch_result *r, char *buf, size_t len);

void rfi_fetch_result_free(rf_fetch_result *r);

/* The text of the first <tag>...</tag> of doc[0..len) at or after *pos,
 * entities (&amp; &lt; &gt; &quot; &apos; &#N; &#xN;) decoded, into
 * out[outlen]; *pos moves past it. Enough for S3's answers (flat elements,
 * no CDATA). @return : 1 found, 0 none (or it did not fit in out). */
int rfi_xml_text(const char *doc, size_t len, size_t *pos, const char *tag, char *out,
		size_t outlen);

#endif
