/* http.c - HTTP(S) ranged GETs (http.h) through libcurl's multi-socket
 * interface: one easy handle per read number (reused, so the multi handle's
 * connection cache keeps connections open between reads), curl's socket and
 * timer callbacks handed to the engine, and each finished transfer judged
 * (rfi_http_check: a 206 whose Content-Range is the range asked and whose
 * body is that long, a 200 only for the whole object, 416 an empty read
 * only past the object's end, no encoding, the ETag indexed; 4xx a
 * refusal). What may pass (500, 502, 503, 504, 429, a reset or cut
 * connection, a stall, a response that broke a rule: a proxy's mistake) is
 * tried again after a capped exponential backoff with full jitter, up to
 * HTTP_TRIES tries, before the read ends with the error. A signed client
 * follows one redirect, to its own host (rfi_http_redirect). Without
 * libcurl at build time every call but rfi_http_available() refuses. */
#define _GNU_SOURCE
#include "remote/http.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "io/engine.h" /* enum rf_io_step */
#include "remote/presigned.h"
#include "remote/sign.h"
#include "rf_config.h"
#include "util/util.h"

/* The process's: no request before this time (CLOCK_MONOTONIC ns), as the
 * last Retry-After said; 0: none. */
static _Atomic uint64_t throttle_until;

void rfi_http_throttle_note(uint32_t seconds)
{
	uint64_t until = rfi_now_ns() +
			 (uint64_t)RF_MIN(seconds, RF_HTTP_RETRY_AFTER_MAX_S) * 1000000000ull;
	uint64_t cur = atomic_load(&throttle_until);
	while (cur < until && !atomic_compare_exchange_weak(&throttle_until, &cur, until))
		;
}

uint64_t rfi_http_throttle_until(void)
{
	return atomic_load(&throttle_until);
}

#if RF_HAVE_REMOTE
#include <curl/curl.h>
#include <pthread.h>

/* Tries of one read before its transient error is its result, and the
 * backoff between them: 50 ms doubling to at most 2 s, each wait drawn
 * uniformly below that (full jitter, so that a server's burst of 503s is
 * not answered by a burst of retries): about 6 s of waiting at most. */
#define HTTP_TRIES 8
#define HTTP_BACKOFF_NS (50ull * 1000000)
#define HTTP_BACKOFF_MAX_NS (2000ull * 1000000)
/* A transfer that receives nothing for this long has stalled: given up
 * and tried again (within the read's budget). */
#define HTTP_STALL_S 15L
/* Presigned URLs one read may see refused (expired early, revoked) and
 * ask the store again: a URL just given can be refused too when the
 * reads sharing it spent it (a store that limits its uses), so not only
 * a kept one; bounded, for a store that refuses every URL it gives. */
#define HTTP_REFUSALS_MAX 4u
/* Where a CA bundle lies on the distributions a wheel may land on, asked
 * when the environment names none and libcurl's own default is missing
 * (a libcurl built on Debian looks where RHEL keeps nothing). */
static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Alpine */
	"/etc/pki/tls/certs/ca-bundle.crt",                  /* RHEL, Fedora, CentOS */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7+ */
	"/etc/ssl/ca-bundle.pem",                            /* openSUSE */
	"/etc/ssl/cert.pem",                                 /* Alpine, Arch */
};

/* One read in progress. */
typedef struct http_read {
	CURL *easy;          /* created at the number's first use, then kept */
	uint64_t cred_gen;   /* the keys' generation easy signs with (CURLOPT_USERPWD) */
	uint8_t *buf;
	uint32_t len, got;
	rf_http_ask ask;     /* what is asked (its etag the caller's, valid until reported) */
	uint64_t body;       /* body bytes the server sent this transfer (past len too:
	                      * the transfer is cut at the first byte over) */
	rf_http_seen seen;   /* what this transfer's header lines said */
	unsigned redirects;  /* followed for this read (a signed client's, one at most) */
	unsigned refusals;   /* presigned URLs refused for this read (HTTP_REFUSALS_MAX) */
	int leg;             /* where this transfer goes: enum leg */
	int active;          /* started and not reported (in curl, or waiting to retry) */
	const char *url;     /* the caller's, valid until the read is reported */
	uint32_t tries;      /* transfers made for this read */
	uint64_t retry_at;   /* waiting to be tried again at this time, or 0 */
	uint64_t started;    /* its first transfer (ns): the budget counts from here */
	long status;         /* the last response's HTTP status, 0: none */
	struct curl_slist *headers; /* If-Match and the signing headers, this read's */
	struct curl_slist *plain;   /* If-Match alone: for a presigned URL (no keys), or NULL */
	char *etag_out;      /* the caller's: where the ETag goes at the end, or NULL */
	char why[RF_IO_WHY_MAX]; /* what the server did, when the read fails */
} http_read;

typedef struct rf_http {
	rf_io_url_hooks hooks;
	CURLM *multi;
	http_read *reads;    /* depth of them, by read number */
	uint32_t depth, active;
	uint64_t deadline;   /* CLOCK_MONOTONIC ns of curl's timer, or UINT64_MAX */
	uint64_t next_retry; /* the earliest retry_at of the reads waiting, or UINT64_MAX */
	uint32_t waiting;    /* reads waiting to be tried again */
	uint64_t rng;        /* the jitter's state */
	rf_http_client client; /* certificates and signing, as every request sets them */
	uint64_t budget_ns;  /* a read's time from its first transfer to its last */
	rf_io_http_counts counts;
	char range[48];
} rf_http;

/* Where a read's transfer goes: the URL asked (signed as the client
 * signs), or a presigned URL another host's redirect gave (sign.h:
 * without the keys), kept from an earlier read or just given. */
enum leg { LEG_ASKED = 0, LEG_KEPT = 1, LEG_GIVEN = 2 };

/* Counts a transient failure by its kind. */
static void count_retry(rf_http *h, const http_read *r, int32_t res)
{
	h->counts.retries++;
	if (res == -ETIMEDOUT)
		h->counts.retry_stalled++;
	else if (res == -ECONNRESET)
		h->counts.retry_connection++;
	else if (r->status == 429 || r->status == 503)
		h->counts.retry_throttled++;
	else
		h->counts.retry_server++;
}

/* A uniform draw below n (xorshift64*; the jitter needs no more). */
static uint64_t draw(rf_http *h, uint64_t n)
{
	h->rng ^= h->rng >> 12, h->rng ^= h->rng << 25, h->rng ^= h->rng >> 27;
	return n ? (h->rng * 2685821657736338717ull) % n : 0;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_ret;

static void global_init(void)
{
	global_ret = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rfi_http_available(void)
{
	return 1;
}

/* CURLMOPT_SOCKETFUNCTION: what curl wants watched on s. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *user, void *socketp)
{
	(void)easy, (void)socketp;
	rf_http *h = user;
	short ev = what == CURL_POLL_IN ? POLLIN : what == CURL_POLL_OUT ? POLLOUT
		 : what == CURL_POLL_INOUT ? (POLLIN | POLLOUT) : 0;
	h->hooks.watch(h->hooks.engine, (int)s, ev);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: run the timer in timeout_ms (-1: never). */
static int on_timer(CURLM *multi, long timeout_ms, void *user)
{
	(void)multi;
	rf_http *h = user;
	h->deadline = timeout_ms < 0 ? UINT64_MAX : rfi_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	return 0;
}

/* CURLOPT_HEADERFUNCTION: what the response says (judged when it ends). */
static size_t on_header(char *line, size_t size, size_t n, void *user)
{
	http_read *r = user;
	rfi_http_seen_line(&r->seen, line, size * n);
	return size * n;
}

/* CURLOPT_WRITEFUNCTION: the body into the read's buffer, never past it. */
static size_t on_body(char *data, size_t size, size_t n, void *user)
{
	http_read *r = user;
	size_t bytes = size * n, room = r->len - r->got;
	r->body += bytes;
	if (bytes > room) {
		memcpy(r->buf + r->got, data, room);
		r->got = r->len;
		return 0; /* ends the transfer (CURLE_WRITE_ERROR), judged below */
	}
	memcpy(r->buf + r->got, data, bytes);
	r->got += (uint32_t)bytes;
	return bytes;
}

/* The CA bundle to verify against when the environment names none:
 * libcurl's default where it exists, else the first of ca_bundles[] that
 * does, else NULL (curl's default, and its error if that is missing). */
static char *default_ca(void)
{
	CURL *e = curl_easy_init();
	char *def = NULL;
	if (e)
		curl_easy_getinfo(e, CURLINFO_CAINFO, &def);
	int usable = def && access(def, R_OK) == 0;
	if (e)
		curl_easy_cleanup(e);
	if (usable)
		return NULL;
	for (size_t i = 0; i < sizeof(ca_bundles) / sizeof(ca_bundles[0]); i++)
		if (access(ca_bundles[i], R_OK) == 0)
			return strdup(ca_bundles[i]);
	return NULL;
}

int rfi_http_client_init(rf_http_client *c, const rf_io_sign *sign)
{
	*c = (rf_http_client){ 0 };
	/* the CA bundle as curl's tool and OpenSSL take it from the environment */
	const char *ca = getenv("CURL_CA_BUNDLE");
	if (!ca || !ca[0])
		ca = getenv("SSL_CERT_FILE");
	const char *dir = getenv("SSL_CERT_DIR");
	c->ca_file = ca && ca[0] ? strdup(ca) : dir && dir[0] ? NULL : default_ca();
	c->ca_path = dir && dir[0] ? strdup(dir) : NULL;
	if ((ca && ca[0] && !c->ca_file) || (dir && dir[0] && !c->ca_path))
		goto oom;
	if (sign) {
		c->sign = sign;
		c->sigv4 = sign->sigv4;
		if (rfi_http_client_update(c) < 0)
			goto oom;
	}
	return 0;
oom:
	rfi_http_client_free(c);
	return -ENOMEM;
}

int rfi_http_client_update(rf_http_client *c)
{
	if (!c->sign || (c->taken && c->sign->generation(c->sign->keys) == c->gen))
		return 0;
	/* the new keys are taken aside and swapped in whole: on -ENOMEM c
	 * signs with the keys it had */
	rf_sign_keys k;
	uint64_t gen;
	if (c->sign->take(c->sign->keys, &k, &gen))
		return -ENOMEM;
	rfi_free_secret(c->userpwd);
	rfi_free_secret(c->token_header);
	c->userpwd = k.userpwd;
	c->token_header = k.header;
	c->gen = gen;
	c->taken = 1;
	return 1;
}

void rfi_http_client_free(rf_http_client *c)
{
	free(c->ca_file);
	free(c->ca_path);
	rfi_free_secret(c->userpwd);
	rfi_free_secret(c->token_header);
	*c = (rf_http_client){ 0 };
}

void rfi_http_client_apply(const rf_http_client *c, void *easy)
{
	CURL *e = easy;
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* curl drops Authorization when a redirect changes host, port or
	 * scheme, not custom headers: a signed request's session token would
	 * go wherever a Location points (https to http included). Signed
	 * requests follow redirects by hand (rfi_http_redirect). */
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, c->sign ? 0L : 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	if (c->ca_file) /* certificates are verified (curl's default), against this */
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	if (c->ca_path)
		curl_easy_setopt(e, CURLOPT_CAPATH, c->ca_path);
	if (c->sigv4)
		curl_easy_setopt(e, CURLOPT_AWS_SIGV4, c->sigv4);
	if (c->userpwd)
		curl_easy_setopt(e, CURLOPT_USERPWD, c->userpwd);
}

int rfi_http_plain_headers(struct curl_slist **headers)
{
	/* the bytes as stored: a body recoded on the way (a proxy's gzip) is
	 * not the object's, and a range of it is nobody's */
	struct curl_slist *hl = curl_slist_append(*headers, "Accept-Encoding: identity");
	if (!hl)
		return -ENOMEM;
	*headers = hl;
	return 0;
}

int rfi_http_client_headers(const rf_http_client *c, struct curl_slist **headers)
{
	if (rfi_http_plain_headers(headers))
		return -ENOMEM;
	struct curl_slist *hl = *headers;
	if (!c->sign)
		return 0;
	for (const char *const *line = c->sign->headers; line && *line; line++) {
		if (!(hl = curl_slist_append(hl, *line)))
			return -ENOMEM;
		*headers = hl;
	}
	if (c->token_header && !(hl = curl_slist_append(hl, c->token_header)))
		return -ENOMEM;
	*headers = hl;
	return 0;
}

static void reader_destroy(void *reader);

static int reader_create(void **out, const rf_io_url_hooks *hooks, const rf_io_params *p,
			 char *err, size_t errlen)
{
	pthread_once(&global_once, global_init);
	if (global_ret != CURLE_OK) {
		rfi_fmt(err, errlen, "libcurl: %s", curl_easy_strerror(global_ret));
		return -EIO;
	}
	rf_http *h = calloc(1, sizeof(*h));
	if (!h || !(h->reads = calloc(p->depth, sizeof(*h->reads))) || !(h->multi = curl_multi_init()))
		goto oom;
	h->hooks = *hooks;
	h->depth = p->depth;
	h->deadline = h->next_retry = UINT64_MAX;
	h->rng = rfi_now_ns() | 1;
	h->budget_ns = (uint64_t)(p->url_budget_ms ? p->url_budget_ms : RF_IO_URL_BUDGET_MS) * 1000000ull;
	if (rfi_http_client_init(&h->client, p->sign))
		goto oom;
	if (p->sign && p->sign->log_at) /* a failed refresh warns where the loader wants it */
		p->sign->log_at(p->sign->keys, p->log_level);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	/* HTTP/2 streams share a connection where the server offers it */
	curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	/* a connection for each read in flight stays open between reads: curl's
	 * cache is otherwise 4 x the handles added at the moment, and with
	 * handles added and removed per read it closes and opens connections
	 * by the thousand */
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)p->depth);
	*out = h;
	return 0;
oom:
	reader_destroy(h);
	rfi_fmt(err, errlen, "out of memory");
	return -ENOMEM;
}

static void reader_destroy(void *reader)
{
	rf_http *h = reader;
	if (!h)
		return;
	for (uint32_t i = 0; h->reads && i < h->depth; i++) {
		if (h->reads[i].active)
			curl_multi_remove_handle(h->multi, h->reads[i].easy);
		if (h->reads[i].easy)
			curl_easy_cleanup(h->reads[i].easy);
		curl_slist_free_all(h->reads[i].headers);
		curl_slist_free_all(h->reads[i].plain);
	}
	if (h->multi)
		curl_multi_cleanup(h->multi);
	free(h->reads);
	rfi_http_client_free(&h->client);
	free(h);
}

/* The scheme, host and port of url into out[len] ("http://h:80"), for
 * comparing origins; "" when it does not parse. */
static void origin_of(const char *url, char *out, size_t len)
{
	out[0] = '\0';
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
	    !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		rfi_fmt(out, len, "%s://%s:%s", scheme, host, port);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
}

/* url as a message shows it: scheme, host, port and path; no user, no
 * query (a presigned URL's signature is a credential). */
static void url_shown(const char *url, char *out, size_t len)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
	    !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
	    !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
	    !curl_url_get(u, CURLUPART_PATH, &path, 0)) {
		curl_url_get(u, CURLUPART_PORT, &port, 0);
		rfi_fmt(out, len, "%s://%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
		       path);
	} else {
		rfi_fmt(out, len, "(a Location that is no URL)");
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
}

int rfi_http_redirect(void *easy, unsigned redirects, int elsewhere, char *url_out,
		     size_t urllen, char *why, size_t whylen)
{
	CURL *e = easy;
	char *to = NULL, *from = NULL;
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &to);
	curl_easy_getinfo(e, CURLINFO_EFFECTIVE_URL, &from);
	if (!to || !from) {
		rfi_fmt(why, whylen, "HTTP %ld without a Location", status);
		return 0;
	}
	char a[512], b[512], shown[256];
	origin_of(from, a, sizeof(a));
	origin_of(to, b, sizeof(b));
	url_shown(to, shown, sizeof(shown));
	int other = !a[0] || strcmp(a, b);
	/* another host: followed without the keys where the signer keeps
	 * presigned URLs (sign.h), never from https to http */
	if (other && (!elsewhere || !b[0] ||
		      (!strncmp(a, "https:", 6) && strncmp(b, "https:", 6)))) {
		rfi_fmt(why, whylen, "HTTP %ld to %s: not followed (a signed request's "
		       "credentials go to their own host only)", status, shown);
		return 0;
	}
	if (redirects >= 1 || strlen(to) >= urllen) {
		rfi_fmt(why, whylen, "HTTP %ld to %s: not followed (a signed request follows one "
		       "redirect)", status, shown);
		return 0;
	}
	memcpy(url_out, to, strlen(to) + 1);
	return other ? 2 : 1;
}

int rfi_http_transport_error(int code, const char *url, const rf_http_seen *seen, int *step,
			    char *why, size_t whylen)
{
	*step = RF_IO_STEP_READ;
	rfi_fmt(why, whylen, "%s", curl_easy_strerror((CURLcode)code));
	switch (code) {
	case CURLE_OPERATION_TIMEDOUT:
		rfi_fmt(why, whylen, "timed out");
		return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY: {
		char host[256] = "";
		CURLU *u = curl_url();
		char *h = NULL;
		if (code == CURLE_COULDNT_RESOLVE_HOST && u &&
		    !curl_url_set(u, CURLUPART_URL, url, 0) && !curl_url_get(u, CURLUPART_HOST, &h, 0))
			rfi_fmt(host, sizeof(host), "%s", h);
		curl_free(h);
		curl_url_cleanup(u);
		*step = RF_IO_STEP_OPEN;
		if (host[0])
			rfi_fmt(why, whylen, "the host name %s does not resolve", host);
		else
			rfi_fmt(why, whylen, "the proxy's host name does not resolve");
		return -ENXIO; /* the name has no address; "No route to host" is not what happened */
	}
	case CURLE_COULDNT_CONNECT:
		rfi_fmt(why, whylen, "connection refused");
		return -ECONNREFUSED;
	case CURLE_OUT_OF_MEMORY:
		/* libcurl (7.x, 8.x) says "out of memory" of a header line over
		 * its limit, CURL_MAX_HTTP_HEADER (100 KiB): in the middle of a
		 * response's headers, that is what it is, not a system short of
		 * memory (which would make the engine read less at once) */
		if (seen->in_headers) {
			rfi_fmt(why, whylen, "HTTP %ld with a header line over libcurl's limit of "
			       "100 KiB (libcurl reports it as out of memory)", seen->status);
			return -EPROTO;
		}
		return -ENOMEM;
	case CURLE_SEND_ERROR: case CURLE_RECV_ERROR: case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
		rfi_fmt(why, whylen, "connection reset or cut short");
		return -ECONNRESET;
	case CURLE_PEER_FAILED_VERIFICATION: case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CACERT_BADFILE:
		*step = RF_IO_STEP_OPEN;
		return -EPERM;
	default:
		return -EIO;
	}
}

/* The result of a finished transfer of r: bytes, or a negative errno with
 * r->why saying what the server did; *fault when the response broke one of
 * rfi_http_check's rules (tried again, as a proxy's mistake may pass). */
static int32_t judge(http_read *r, CURLcode code, int *step, int *fault)
{
	*fault = 0;
	r->why[0] = '\0';
	/* more body than the range ended the transfer (on_body): judged by
	 * what the response said, below; a 416 is curl's RANGE_ERROR */
	if ((code == CURLE_WRITE_ERROR && r->body > r->len) || code == CURLE_RANGE_ERROR)
		code = CURLE_OK;
	if (code != CURLE_OK) {
		int32_t res = rfi_http_transport_error(code, r->url, &r->seen, step, r->why,
						       sizeof(r->why));
		*fault = res == -EPROTO; /* a header over the limit: a proxy's may pass */
		return res;
	}
	return rfi_http_check(&r->ask, &r->seen, r->body, step, fault, r->why, sizeof(r->why));
}

static void transfer(rf_http *h, uint32_t id);

/* A status from a kept presigned URL that says it is no longer good
 * there (S3 and CloudFront say 403 of an expired signature). */
static int refused_there(long status)
{
	return status == 401 || status == 403 || status == 404 || status == 410;
}

/* r's transfers go to the presigned URL to, without the keys (leg: kept
 * or just given, when it is kept too). */
static void go_presigned(rf_http *h, http_read *r, const char *to, int leg)
{
	if (leg == LEG_GIVEN)
		rfi_presigned_put(h->client.sign->presigned, r->url, to);
	curl_easy_setopt(r->easy, CURLOPT_URL, to); /* copied by curl */
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->plain);
	r->leg = leg;
}

/* r's transfers go to the URL asked, signed. */
static void go_asked(http_read *r)
{
	curl_easy_setopt(r->easy, CURLOPT_URL, r->url);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	r->leg = LEG_ASKED;
	r->redirects = 0;
}

/* May the error pass if the read is tried again? */
static int transient(int32_t res)
{
	return res == -EAGAIN || res == -ECONNRESET || res == -ETIMEDOUT;
}

/* Judges the transfers curl finished: each is tried again after a backoff,
 * sent on to where a redirect points, or its read is reported. */
static void reap(rf_http *h)
{
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(h->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		char *priv = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
		uint32_t id = (uint32_t)(uintptr_t)priv;
		http_read *r = &h->reads[id];
		long status = 0;
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
		r->status = status;
		long connects = 0; /* connections this transfer opened (0: it reused one) */
		curl_easy_getinfo(m->easy_handle, CURLINFO_NUM_CONNECTS, &connects);
		h->counts.connections += (uint64_t)RF_MAX(connects, 0L);
		int step, fault;
		int32_t res;
		if (m->data.result == CURLE_OK && status >= 300 && status < 400) {
			/* a redirect curl did not follow (a signed client's) */
			char to[4096];
			int how = rfi_http_redirect(r->easy, r->redirects, r->plain != NULL, to,
						    sizeof(to), r->why, sizeof(r->why));
			if (how) {
				curl_multi_remove_handle(h->multi, r->easy);
				r->redirects++;
				if (how == 2) /* presigned: kept for the next reads, sent bare */
					go_presigned(h, r, to, LEG_GIVEN);
				else
					curl_easy_setopt(r->easy, CURLOPT_URL, to); /* copied by curl */
				transfer(h, id);
				continue;
			}
			/* tried again, as a fault: a proxy's, or S3's own 307 while a
			 * bucket's name spreads, passes; a lasting one fails the read
			 * saying where it pointed */
			res = -EPROTO, step = RF_IO_STEP_OPEN, fault = 1;
		} else if (r->leg != LEG_ASKED && m->data.result == CURLE_OK && refused_there(status) &&
			   r->refusals < HTTP_REFUSALS_MAX) {
			/* a presigned URL refused (expired early, revoked, spent by
			 * the reads that shared it): the store is asked again, signed */
			r->refusals++;
			curl_multi_remove_handle(h->multi, r->easy);
			rfi_presigned_forget(h->client.sign->presigned, r->url);
			go_asked(r);
			transfer(h, id);
			continue;
		} else {
			res = judge(r, m->data.result, &step, &fault);
		}
		curl_multi_remove_handle(h->multi, r->easy);
		if (res > 0)
			h->counts.bytes += (uint64_t)res;
		uint64_t now = rfi_now_ns(), spent = now - r->started;
		/* tried again while the budget leaves room for more than the
		 * shortest backoff (a transfer cut at the budget's end is over) */
		if ((transient(res) || fault) && r->tries < HTTP_TRIES &&
		    spent + HTTP_BACKOFF_NS < h->budget_ns) {
			/* tried again later: 50 ms << (tries - 1), at most 2 s, jittered,
			 * never past the budget (the transfer's own timeout ends there) */
			uint64_t cap = RF_MIN(HTTP_BACKOFF_MAX_NS, HTTP_BACKOFF_NS << (r->tries - 1));
			r->retry_at = now + 1 + draw(h, RF_MIN(cap, h->budget_ns - spent));
			if (r->seen.has_retry_after && (status == 429 || status == 503)) {
				/* the server said how long: every request of the process waits */
				rfi_http_throttle_note(r->seen.retry_after_s);
				r->retry_at = RF_MAX(r->retry_at, rfi_http_throttle_until());
			}
			h->next_retry = RF_MIN(h->next_retry, r->retry_at);
			h->waiting++;
			count_retry(h, r, res);
			continue;
		}
		if (res < 0) {
			h->counts.errors++;
			if (res == -EAGAIN) /* tried enough: not for the caller to try again */
				res = -EIO;
		}
		if (r->etag_out)
			rfi_http_seen_etag(&r->seen, r->etag_out);
		r->active = 0;
		h->active--;
		h->hooks.done(h->hooks.engine, id, &(rf_io_url_result){ .res = res, .step = step,
			      .size = rfi_http_seen_size(&r->seen, &r->ask), .status = status,
			      .tries = r->tries, .ns = spent, .why = res < 0 ? r->why : NULL });
	}
}

/* A read number's easy handle, made at its first use with what every
 * request of it sets (kept across reads: curl_easy_reset() and twenty
 * setopts a request cost the ring thread more than the request's own
 * bookkeeping). NULL: out of memory. */
static CURL *easy_of(rf_http *h, uint32_t id)
{
	http_read *r = &h->reads[id];
	if (r->easy)
		return r->easy;
	CURL *e = curl_easy_init();
	if (!e)
		return NULL;
	rfi_http_client_apply(&h->client, e);
	r->cred_gen = h->client.gen;
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)(uintptr_t)id);
	/* a stalled transfer is given up, then tried again */
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, HTTP_STALL_S);
	return r->easy = e;
}

/* Starts read id (rf_io_url_ops.start): bytes [rd->offset, + rd->len) of
 * rd->url into rd->buf, only while the object's ETag is rd->etag (sent as
 * If-Match and compared with the response's) and its size rd->size (0:
 * unknown); the response's ETag copied to rd->etag_out. */
static void reader_start(void *reader, uint32_t id, const rf_io_read *rd)
{
	rf_http *h = reader;
	rf_http_ask ask = { .offset = rd->offset, .len = rd->len, .size = rd->size,
			    .etag = rd->etag };
	http_read *r = &h->reads[id];
	/* keys a refresh brought since the last request: this read and the
	 * ones after it sign with them (curl copies CURLOPT_USERPWD; the token
	 * header goes into this read's own list), reads in flight keep theirs */
	rfi_http_client_update(&h->client);
	CURL *e = easy_of(h, id);
	if (e && r->cred_gen != h->client.gen) {
		curl_easy_setopt(e, CURLOPT_USERPWD, h->client.userpwd);
		r->cred_gen = h->client.gen;
	}
	curl_slist_free_all(r->headers);
	curl_slist_free_all(r->plain);
	assert(ask.len > 0 && ask.len <= UINT32_MAX);
	*r = (http_read){ .easy = e, .cred_gen = r->cred_gen, .buf = rd->buf, .len = rd->len,
			  .ask = ask,
			  .active = 1, .started = rfi_now_ns(), .etag_out = rd->etag_out };
	/* the request's headers: the object it was indexed as, and the signature's */
	char line[16 + RF_IO_ETAG_MAX];
	struct curl_slist *hl = NULL;
	int ok = e != NULL;
	if (ok && ask.etag && ask.etag[0]) {
		snprintf(line, sizeof(line), "If-Match: %s", ask.etag);
		ok = !!(hl = curl_slist_append(hl, line));
	}
	/* the same without the keys, for a presigned URL (sign.h) */
	struct curl_slist *plain = NULL;
	const rf_io_sign *sign = h->client.sign;
	if (ok && sign && sign->presigned) {
		ok = !ask.etag || !ask.etag[0] || (plain = curl_slist_append(NULL, line));
		ok = ok && rfi_http_plain_headers(&plain) == 0;
	}
	r->plain = plain;
	ok = ok && rfi_http_client_headers(&h->client, &hl) == 0;
	r->headers = hl;
	if (!ok) {
		r->active = 0;
		h->hooks.done(h->hooks.engine, id, &(rf_io_url_result){ .res = -ENOMEM,
			      .step = RF_IO_STEP_OPEN });
		return;
	}
	snprintf(h->range, sizeof(h->range), "%llu-%llu", (unsigned long long)ask.offset,
		 (unsigned long long)(ask.offset + ask.len - 1));
	curl_easy_setopt(e, CURLOPT_RANGE, h->range); /* copied by curl */
	r->url = rd->url;
	go_asked(r);
	char kept[4096];
	if (r->plain && rfi_presigned_get(sign->presigned, rd->url, kept, sizeof(kept)))
		go_presigned(h, r, kept, LEG_KEPT);
	h->active++;
	transfer(h, id);
}

/* Makes read id's transfer (again): its body from the start. */
static void transfer(rf_http *h, uint32_t id)
{
	http_read *r = &h->reads[id];
	/* a server said to wait (Retry-After): sent when that is over, if the
	 * read's budget lasts that long (else sent now, to fail as it will) */
	uint64_t now = rfi_now_ns(), until = rfi_http_throttle_until();
	if (until > now && until < r->started + h->budget_ns) {
		r->retry_at = until;
		h->next_retry = RF_MIN(h->next_retry, until);
		h->waiting++;
		return;
	}
	r->got = 0;
	r->body = 0;
	r->seen = (rf_http_seen){ 0 };
	r->retry_at = 0;
	r->status = 0;
	r->tries++;
	h->counts.requests++;
	/* the transfer ends where the read's budget does */
	uint64_t spent = now - r->started;
	long left_ms = spent < h->budget_ns ? (long)((h->budget_ns - spent) / 1000000) : 0;
	curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, RF_MAX(left_ms, 1L));
	if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK) {
		r->active = 0;
		h->active--;
		h->hooks.done(h->hooks.engine, id, &(rf_io_url_result){ .res = -ENOMEM,
			      .step = RF_IO_STEP_OPEN });
	}
}

static void reader_socket_ready(void *reader, int fd, short revents)
{
	rf_http *h = reader;
	int mask = (revents & POLLIN ? CURL_CSELECT_IN : 0) | (revents & POLLOUT ? CURL_CSELECT_OUT : 0) |
		   (revents & (POLLERR | POLLHUP) ? CURL_CSELECT_ERR : 0);
	int running;
	curl_multi_socket_action(h->multi, fd, mask, &running);
	reap(h);
}

static uint64_t reader_deadline(const void *reader)
{
	const rf_http *h = reader;
	return RF_MIN(h->deadline, h->next_retry);
}

/* Sends the reads whose backoff is over. */
static void retry_due(rf_http *h, uint64_t now)
{
	h->next_retry = UINT64_MAX;
	for (uint32_t i = 0; i < h->depth && h->waiting; i++) {
		http_read *r = &h->reads[i];
		if (!r->retry_at)
			continue;
		if (r->retry_at <= now) {
			h->waiting--;
			transfer(h, i);
		} else {
			h->next_retry = RF_MIN(h->next_retry, r->retry_at);
		}
	}
	if (!h->waiting)
		h->next_retry = UINT64_MAX;
}

static void reader_run_timer(void *reader)
{
	rf_http *h = reader;
	uint64_t now = rfi_now_ns();
	if (h->waiting && now >= h->next_retry)
		retry_due(h, now);
	if (h->deadline == UINT64_MAX || now < h->deadline)
		return;
	h->deadline = UINT64_MAX; /* curl sets the next one, if any */
	int running;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	reap(h);
}

static uint32_t reader_active(const void *reader)
{
	return ((const rf_http *)reader)->active;
}

static void reader_get_counts(const void *reader, rf_io_http_counts *out)
{
	*out = ((const rf_http *)reader)->counts;
}

const rf_io_url_ops rf_http_reader = {
	.create = reader_create, .destroy = reader_destroy, .start = reader_start,
	.socket_ready = reader_socket_ready, .deadline = reader_deadline,
	.run_timer = reader_run_timer, .active = reader_active, .get_counts = reader_get_counts,
};

#else /* !RF_HAVE_REMOTE */

int rfi_http_available(void)
{
	return 0;
}

static int reader_create(void **out, const rf_io_url_hooks *hooks, const rf_io_params *p,
			 char *err, size_t errlen)
{
	(void)hooks, (void)p;
	*out = NULL;
	rfi_fmt(err, errlen, "this ringfeed was built without libcurl: no http(s) reads "
	       "(scripts/deps.sh installs libcurl4-openssl-dev; meson feature 'remote')");
	return -EPROTONOSUPPORT;
}

/* No reader is ever made: the engine calls nothing else. */
const rf_io_url_ops rf_http_reader = { .create = reader_create };

#endif

/* A certificate the server's could not be verified against: where to name
 * the CA bundle (as curl's tool and OpenSSL take it, rfi_http_client_init). */
const char *rfi_http_hint(int res)
{
	return res == -EPERM ? " (TLS: the server's certificate could not be verified; "
			       "CURL_CA_BUNDLE or SSL_CERT_FILE names the CA bundle to verify it "
			       "against)" : "";
}
