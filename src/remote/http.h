/* http.h - HTTP(S) ranged GETs for the read engine (issue 25): libcurl's
 * multi-socket interface driven from the engine's thread, as the engine's
 * URL reader (rf_http_reader, an rf_io_url_ops: the http and s3 rows of the
 * transport table give it to the engine). The engine watches curl's
 * sockets with poll requests on its own io_uring and folds curl's timer
 * into its wait (engine.c), so one thread drives local reads and network
 * reads alike; no thread per request (curl's resolver thread aside). A read
 * is the engine's usual (object, offset, length, buffer, read number):
 * here a GET of the object's URL with a Range header, its body landing in
 * the buffer. Requests are signed as the row's signer says (sign.h).
 *
 * Thread rule: the reader runs on the engine's thread alone; the client
 * (rf_http_client) is its caller's. Private to src/remote/. */
#ifndef RF_REMOTE_HTTP_H
#define RF_REMOTE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "io/engine.h" /* rf_io_url_ops, rf_io_sign */
#include "remote/http_check.h" /* rf_http_seen */

/* The engine's URL reader (engine.h's rf_io_url_ops): create takes from
 * its params depth (read numbers 0..depth-1), sign and url_budget_ms, and
 * fails with -EPROTONOSUPPORT in a build without libcurl. Each read's
 * response is checked by rfi_http_check() before its bytes count. */
extern const rf_io_url_ops rf_http_reader;

/* What a failed read's message adds for res, the reader's error (-EPERM:
 * a certificate not verified, and where the CA bundle is named), or "". */
const char *rfi_http_hint(int res);

/* What every request of ours sets (http.c's reads and fetch.c's set-up
 * requests): where certificates are verified against, and how requests
 * are signed. The keys are a copy of the signer's of generation gen, taken
 * again by rfi_http_client_update() when a refresh brought new ones. */
typedef struct rf_http_client {
	char *ca_file, *ca_path; /* CURL_CA_BUNDLE or SSL_CERT_FILE, SSL_CERT_DIR; else
	                          * NULL (curl's default), or the first usual bundle
	                          * that exists where curl's default does not */
	const char *sigv4;       /* the signer's ("aws:amz:REGION:SERVICE"), or NULL:
	                          * unsigned */
	char *userpwd;           /* "KEY_ID:SECRET" (a secret: never printed) */
	char *token_header;      /* the keys' header line (a session token), or NULL */
	const rf_io_sign *sign;  /* where the keys come from (sign.h), or NULL: unsigned
	                          * (a signed client follows redirects by hand) */
	uint64_t gen;            /* the generation userpwd and token_header are of */
	int taken;               /* keys were taken (gen is theirs) */
} rf_http_client;
struct curl_slist;
/* sign: its current keys copied (sign must outlive c), or NULL: unsigned.
 * @return : 0 or -ENOMEM. */
int rfi_http_client_init(rf_http_client *c, const rf_io_sign *sign);
/* Takes the signer's keys again when their generation moved since c took
 * them (a load when it did not: for the ring thread before each request;
 * it never waits for a refresh). Requests already made keep what they
 * were given. @return : 1 taken, 0 unchanged, -ENOMEM (c keeps the keys it
 * had). */
int rfi_http_client_update(rf_http_client *c);
void rfi_http_client_free(rf_http_client *c);
/* Sets c on easy (a CURL *): certificates, protocols, redirects, connect
 * timeout, signing. A signed client follows no redirect itself: curl drops
 * Authorization on another host but sends custom headers (the session
 * token) wherever a Location points, so the caller follows one only where
 * rfi_http_redirect() says it may. */
void rfi_http_client_apply(const rf_http_client *c, void *easy);
/* Appends the headers every request of ours sends (Accept-Encoding:
 * identity: the bytes as stored, never a proxy's recoding of them) and
 * those the signer asks for to *headers (the caller sets CURLOPT_HTTPHEADER,
 * then frees them). @return : 0 or -ENOMEM. */
int rfi_http_client_headers(const rf_http_client *c, struct curl_slist **headers);

/* A response to a request made with easy (a CURL *, set by
 * rfi_http_client_apply) was a redirect (3xx) that curl did not follow:
 * @return : 1 when it may be followed (a signed client's first redirect,
 *           to the same scheme, host and port): the caller sets
 *           CURLOPT_URL to url_out[urllen] and sends the request again;
 *           else 0 with why[whylen] saying where it pointed and why it is
 *           not followed (the Location shown without its query). */
int rfi_http_redirect(void *easy, unsigned redirects, char *url_out, size_t urllen, char *why,
		     size_t whylen);

/* why[whylen] for a transfer that ended with CURLcode code (not CURLE_OK)
 * while asking url: the host a name that does not resolve, a header over
 * libcurl's limit, curl's own words otherwise. seen: the response's header
 * lines so far. @return : the errno it stands for (-ENXIO: a name without
 * an address, -ECONNREFUSED, -ETIMEDOUT, -ECONNRESET, -EPERM, -ENOMEM, -EPROTO: a
 * header over the limit, -EIO), and *step RF_IO_STEP_OPEN where no
 * response could begin (a name, a certificate). */
int rfi_http_transport_error(int code, const char *url, const rf_http_seen *seen, int *step,
			    char *why, size_t whylen);

/* 1 when this build reads URLs (libcurl found at build time). */
int rfi_http_available(void);

#endif
