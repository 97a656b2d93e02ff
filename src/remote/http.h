/* http.h - HTTP(S) ranged GETs for the read engine (issue 25): libcurl's
 * multi-socket interface driven from the engine's thread. The engine
 * watches curl's sockets with poll requests on its own io_uring and folds
 * curl's timer into its wait (engine.c), so one thread drives local reads
 * and network reads alike; no thread per request (curl's resolver thread
 * aside). A read is the engine's usual (object, offset, length, buffer,
 * read number): here a GET of the object's URL with a Range header, its
 * body landing in the buffer.
 *
 * Thread rule: the engine's thread alone. Private to src/remote/ and the
 * engine (src/io/engine.c drives it). */
#ifndef RF_REMOTE_HTTP_H
#define RF_REMOTE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "io/engine.h" /* rf_io_params, rf_io_http_counts */
#include "remote/http_check.h" /* rf_http_ask */

typedef struct rf_http rf_http;

/* How a read ended. */
typedef struct rf_http_result {
	int32_t res;       /* bytes of the range received (fewer: the object ended
	                    * first), or a negative errno */
	int step;          /* RF_IO_STEP_OPEN when the server refused the request
	                    * (4xx), else RF_IO_STEP_READ */
	uint64_t size;     /* the object's bytes as the response says them
	                    * (Content-Range's total), or 0 when it does not */
	long status;       /* the last response's HTTP status, 0: none came */
	uint32_t tries;    /* transfers made */
	uint64_t ns;       /* from the first transfer's start to the end */
	const char *why;   /* res < 0: what the server did (RF_IO_WHY_MAX bytes at
	                    * most), or NULL; valid during the done hook */
} rf_http_result;

/* What the engine lends the HTTP side. */
typedef struct rf_http_hooks {
	void *engine;
	/* Watch fd for events (POLLIN | POLLOUT), or stop watching it (0). */
	void (*watch)(void *engine, int fd, short events);
	/* Read id is over. */
	void (*done)(void *engine, uint32_t id, const rf_http_result *r);
} rf_http_hooks;

/* What every request of ours sets (http.c's reads and fetch.c's set-up
 * requests): where certificates are verified against, and how requests
 * are signed. The keys are a copy of creds' set of generation gen, taken
 * again by rfi_http_client_update() when a refresh brought new ones. */
typedef struct rf_http_client {
	char *ca_file, *ca_path; /* CURL_CA_BUNDLE or SSL_CERT_FILE, SSL_CERT_DIR; else
	                          * NULL (curl's default), or the first usual bundle
	                          * that exists where curl's default does not */
	char *sigv4;             /* "aws:amz:REGION:s3", or NULL: unsigned */
	char *userpwd;           /* "KEY_ID:SECRET" (a secret: never printed) */
	char *token_header;      /* "x-amz-security-token: TOKEN", or NULL */
	struct rf_creds *creds;  /* where the keys come from (sign's), or NULL */
	uint64_t gen;            /* the generation userpwd and token_header are of */
} rf_http_client;
struct curl_slist;
/* sign: its region copied, its creds' current keys copied (creds must
 * outlive c), or NULL: unsigned. @return : 0 or -ENOMEM. */
int rfi_http_client_init(rf_http_client *c, const rf_io_sign *sign);
/* Takes creds' keys again when their generation moved since c took them
 * (an atomic load when it did not: for the ring thread before each
 * request; it never waits for a refresh). Requests already made keep
 * what they were given. @return : 1 taken, 0 unchanged, -ENOMEM (c keeps
 * the keys it had). */
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
 * those signing asks for to *headers (the caller sets CURLOPT_HTTPHEADER,
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

/* Takes from p: depth (read numbers 0..depth-1), sign (copied) and
 * url_budget_ms. @return : 0, -ENOMEM, or -EPROTONOSUPPORT (a build
 * without libcurl); err says why. */
int rfi_http_create(rf_http **out, const rf_http_hooks *hooks, const rf_io_params *p, char *err,
		   size_t errlen);
/* Aborts every transfer (their reads are not reported) and frees. Accepts NULL. */
void rfi_http_destroy(rf_http *h);

/* Starts read id: bytes [ask->offset, + ask->len) of url into buf (which
 * holds ask->len bytes), only while the object's ETag is ask->etag (NULL:
 * whatever it is; sent as If-Match and compared with the response's) and
 * its size ask->size (0: unknown); every response checked by
 * rfi_http_check() before its bytes count. The response's ETag is copied
 * to etag_out (RF_IO_ETAG_MAX bytes) when it is not NULL. url and
 * ask->etag must stay valid until the read is reported, through
 * hooks->done (possibly from within this call). */
void rfi_http_start(rf_http *h, uint32_t id, const rf_http_ask *ask, const char *url,
		   uint8_t *buf, char *etag_out);

/* A watched socket is ready (revents as poll gives them). */
void rfi_http_socket_ready(rf_http *h, int fd, short revents);

/* Nanoseconds (CLOCK_MONOTONIC) at which curl wants its timer run, or
 * UINT64_MAX: none. */
uint64_t rfi_http_deadline(const rf_http *h);
/* Runs curl's timer when its deadline has passed (a no-op before). */
void rfi_http_run_timer(rf_http *h);

/* Transfers in progress. */
uint32_t rfi_http_active(const rf_http *h);

/* Counters since the start (engine.h says what each counts). */
void rfi_http_get_counts(const rf_http *h, rf_io_http_counts *out);

#endif
