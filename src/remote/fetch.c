/* fetch.c - one http(s) request made and waited for (fetch.h): a curl easy
 * handle per call, the body gathered in memory, transient failures tried
 * again after 100 ms, 200 ms, 400 ms (set-up may sleep: no run has
 * started), every try and backoff within the call's budget (a try's own
 * timeout is what the budget has left), and a create called off seen
 * between tries and during a transfer. */
#define _GNU_SOURCE
#include "remote/fetch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "remote/http.h"
#include "remote/presigned.h"
#include "remote/sign.h"
#include "rf_config.h"
#include "util/cancel.h"
#include "util/util.h"

#define FETCH_MAX_BODY (64u << 20)

void rfi_fetch_result_free(rf_fetch_result *r)
{
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
	free(r->kept);
	r->kept = NULL;
}

/* The first <tag>...</tag> of doc[0..len) at or after *pos: its text is
 * [*a, *b); *pos moves past it. @return : 1 found, 0 none. */
static int element(const char *doc, size_t len, size_t *pos, const char *tag, const char **a,
		   const char **b)
{
	char open[64], close[64];
	int no = snprintf(open, sizeof(open), "<%s>", tag), nc = snprintf(close, sizeof(close),
									  "</%s>", tag);
	if (no <= 0 || (size_t)no >= sizeof(open) || nc <= 0 || (size_t)nc >= sizeof(close) ||
	    *pos >= len)
		return 0;
	*a = memmem(doc + *pos, len - *pos, open, (size_t)no);
	if (!*a)
		return 0;
	*a += no;
	*b = memmem(*a, (size_t)(doc + len - *a), close, (size_t)nc);
	if (!*b)
		return 0;
	*pos = (size_t)(*b - doc) + (size_t)nc;
	return 1;
}

/* The entity at p (just past its '&'; the text ends at end) decoded into
 * u[4], *k bytes: a named one XML has, or a code point (&#N; &#xN;) as
 * UTF-8. @return : what follows it, or NULL: not an entity S3 writes. */
static const char *entity(const char *p, const char *end, char u[4], int *k)
{
	static const struct { const char *name; char c; } ents[] = {
		{ "amp;", '&' }, { "lt;", '<' }, { "gt;", '>' }, { "quot;", '"' }, { "apos;", '\'' },
	};
	for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
		size_t el = strlen(ents[i].name);
		if ((size_t)(end - p) >= el && !memcmp(p, ents[i].name, el)) {
			u[0] = ents[i].c;
			*k = 1;
			return p + el;
		}
	}
	char *after;
	unsigned long cp = *p == '#' ? (p[1] == 'x' ? strtoul(p + 2, &after, 16)
					  : strtoul(p + 1, &after, 10)) : 0;
	if (*p != '#' || after >= end || *after != ';' || cp == 0 || cp > 0x10ffff)
		return NULL;
	*k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	if (*k == 1) {
		u[0] = (char)cp;
	} else {
		for (int j = *k - 1; j > 0; j--, cp >>= 6)
			u[j] = (char)(0x80 | (cp & 0x3f));
		u[0] = (char)((0xf00u >> *k) | cp);
	}
	return after + 1;
}

int rfi_xml_text(const char *doc, size_t len, size_t *pos, const char *tag, char *out,
		size_t outlen)
{
	const char *a, *b;
	if (!outlen || !element(doc, len, pos, tag, &a, &b))
		return 0;
	size_t n = 0;
	for (const char *p = a; p < b;) {
		char u[4];
		int k = 1;
		if (n + 1 >= outlen)
			return 0;
		if (*p != '&')
			u[0] = *p++;
		else if (!(p = entity(p + 1, b, u, &k)))
			return 0; /* not an entity S3 writes */
		if (n + (size_t)k >= outlen)
			return 0;
		memcpy(out + n, u, (size_t)k);
		n += (size_t)k;
	}
	out[n] = '\0';
	return 1;
}

void rfi_fetch_why(const rf_fetch_result *r, char *buf, size_t len)
{
	char code[64] = "", msg[160] = "";
	size_t pos = 0;
	if (r->body && rfi_xml_text((const char *)r->body, r->body_len, &pos, "Code", code,
				   sizeof(code))) {
		pos = 0;
		rfi_xml_text((const char *)r->body, r->body_len, &pos, "Message", msg, sizeof(msg));
		rfi_fmt(buf, len, "HTTP %ld (%s%s%s)", r->status, code, msg[0] ? ": " : "", msg);
	} else {
		rfi_fmt(buf, len, "HTTP %ld", r->status);
	}
}

#if RF_HAVE_REMOTE
#include <curl/curl.h>

typedef struct gather {
	rf_fetch_result *out;
	size_t cap, max;
	int over;
	rf_http_seen seen; /* what the response's header lines said */
	const char *keep;  /* the header whose value goes to out->kept, or NULL */
} gather;

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
	gather *g = user;
	size_t bytes = size * n;
	if (g->out->body_len + bytes > g->max) {
		g->over = 1;
		return 0;
	}
	if (g->out->body_len + bytes + 1 > g->cap) {
		size_t cap = RF_MAX(g->cap * 2, g->out->body_len + bytes + 1);
		uint8_t *p = realloc(g->out->body, cap);
		if (!p)
			return 0;
		g->out->body = p;
		g->cap = cap;
	}
	memcpy(g->out->body + g->out->body_len, data, bytes);
	g->out->body_len += bytes;
	g->out->body[g->out->body_len] = '\0';
	return bytes;
}

/* What the response says (judged as http.c's reads are, rfi_http_check). */
static size_t on_header(char *line, size_t size, size_t n, void *user)
{
	gather *g = user;
	size_t len = size * n, kl = g->keep ? strlen(g->keep) : 0;
	rfi_http_seen_line(&g->seen, line, len);
	if (len >= 5 && !strncmp(line, "HTTP/", 5)) { /* a new response: the last one's go */
		free(g->out->kept);
		g->out->kept = NULL;
	} else if (kl && len > kl && !strncasecmp(line, g->keep, kl) && line[kl] == ':' &&
		   !g->out->kept) {
		const char *v = line + kl + 1, *end = line + len;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
			end--;
		g->out->kept = strndup(v, (size_t)(end - v)); /* NULL: as if none came */
	}
	return len;
}

/* CURLOPT_XFERINFOFUNCTION: a create called off ends the transfer. */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	(void)user, (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return rfi_cancelled();
}

/* The ETag f asks for (an "If-Match: " line of its headers), or NULL. */
static const char *if_match_of(const rf_fetch *f)
{
	for (const char *const *h = f->headers; h && *h; h++)
		if (!strncasecmp(*h, "If-Match:", 9))
			return *h + 9 + strspn(*h + 9, " \t");
	return NULL;
}

/* The request's header lines into *hl: f's, then those every request of
 * ours sends and signing asks for. @return : 0 or -ENOMEM (the caller
 * frees *hl either way). */
static int request_headers(const rf_fetch *f, const rf_http_client *client,
			   struct curl_slist **hl)
{
	for (const char *const *h = f->headers; h && *h; h++) {
		struct curl_slist *n = curl_slist_append(*hl, *h);
		if (!n)
			return -ENOMEM;
		*hl = n;
	}
	return rfi_http_client_headers(client, hl) ? -ENOMEM : 0;
}

/* Sets f's request on e: its URL, range (into range[48]), body, method,
 * headers hl, where its answer goes (g), and its timeout. */
static void set_request(CURL *e, const rf_fetch *f, struct curl_slist *hl, gather *g,
			long timeout, char *range)
{
	curl_easy_setopt(e, CURLOPT_URL, f->url);
	if (f->len && f->tail) {
		snprintf(range, 48, "-%llu", (unsigned long long)f->len);
		curl_easy_setopt(e, CURLOPT_RANGE, range);
	} else if (f->len) {
		snprintf(range, 48, "%llu-%llu", (unsigned long long)f->offset,
			 (unsigned long long)(f->offset + f->len - 1));
		curl_easy_setopt(e, CURLOPT_RANGE, range);
	}
	if (f->body) /* curl sends it as the body of a POST (not copied: f outlives the call) */
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, f->body);
	if (f->method && strcmp(f->method, "GET"))
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, f->method);
	if (hl)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, g);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, g);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, RF_MIN(timeout, 10000L));
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
}

/* f's header lines and those every request sends, none of a signer's:
 * for a presigned URL (sign.h). NULL: out of memory. */
static struct curl_slist *plain_headers(const rf_fetch *f)
{
	struct curl_slist *hl = NULL;
	for (const char *const *h = f->headers; h && *h; h++) {
		struct curl_slist *n = curl_slist_append(hl, *h);
		if (!n)
			break;
		hl = n;
	}
	if (rfi_http_plain_headers(&hl)) {
		curl_slist_free_all(hl);
		return NULL;
	}
	return hl;
}

/* A signed request's redirect (curl follows none for it): one, to its own
 * host, or, for a signer that keeps presigned URLs, to another host
 * without the keys (its URL kept: *plain the headers sent there, for the
 * caller to free), made with e into a fresh *out and *g (the body of the
 * 3xx is not the answer); *code is the new transfer's. @return : 0, or
 * -EPROTO with err set and *fault (tried again, as a read's is: http.c). */
static int follow_redirect(CURL *e, const rf_fetch *f, const rf_http_client *client,
			   struct curl_slist **plain, rf_fetch_result *out, gather *g,
			   CURLcode *code, int *fault, char *err, size_t errlen)
{
	char why[RF_IO_WHY_MAX], to[4096];
	rf_presigned *kept = client->sign->presigned;
	int how = rfi_http_redirect(e, 0, kept != NULL, to, sizeof(to), why, sizeof(why));
	if (how == 2 && !(*plain = plain_headers(f))) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (how) {
		rfi_fetch_result_free(out);
		*out = (rf_fetch_result){ 0 };
		*g = (gather){ .out = out, .max = g->max, .keep = g->keep };
		curl_easy_setopt(e, CURLOPT_URL, to);
		if (how == 2) {
			rfi_presigned_put(kept, f->url, to);
			curl_easy_setopt(e, CURLOPT_HTTPHEADER, *plain);
		}
		*code = curl_easy_perform(e);
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
		if (*code != CURLE_OK || out->status < 300 || out->status >= 400)
			return 0;
		rfi_http_redirect(e, 1, 0, to, sizeof(to), why, sizeof(why));
	}
	rfi_fmt(err, errlen, "%s: %s", f->url, why);
	*fault = 1;
	return -EPROTO;
}

/* The try's result from how its transfer ended (code) and what came (g):
 * 0, or a negative errno with err set; *fault when the response broke one
 * of rfi_http_check's rules or a header was over libcurl's limit. */
/* A tail request's answer (f->tail): a 206 whose Content-Range is the
 * object's last min(len, size) bytes, its body exactly those; or a 200 of
 * the whole object (a server that ignores Range), no longer than its
 * Content-Length says. out->size and out->offset set from it. @return : 0,
 * or -EPROTO with *fault set and err saying what came. */
static int tail_check(const rf_fetch *f, const gather *g, rf_fetch_result *out, int *fault,
		      char *err, size_t errlen)
{
	const rf_http_seen *s = &g->seen;
	uint64_t n = out->body_len;
	if ((s->status == 200 || s->status == 206) && s->encoding[0]) {
		*fault = 1;
		rfi_fmt(err, errlen, "%s: the server sent its bytes encoded (%s)", f->url, s->encoding);
		return -EPROTO;
	}
	if (s->status == 200) {
		if (s->has_length && s->length != n)
			goto bad;
		out->offset = 0;
		out->size = n;
		return 0;
	}
	if (s->status != 206)
		return 0; /* the caller judges other statuses */
	if (s->range != RF_HTTP_RANGE_BYTES || s->total == RF_HTTP_NO_TOTAL || !s->total ||
	    s->end != s->total - 1 || s->start > s->end ||
	    s->start != s->total - RF_MIN(f->len, s->total) || n != s->end - s->start + 1)
		goto bad;
	out->offset = s->start;
	out->size = s->total;
	return 0;
bad:
	*fault = 1;
	rfi_fmt(err, errlen, "%s: asked its last %llu bytes, the server sent %zu bytes with %s%s "
		"(HTTP %ld)", f->url, (unsigned long long)f->len, out->body_len,
		s->range == RF_HTTP_RANGE_NONE ? "no Content-Range" : "Content-Range ",
		s->range == RF_HTTP_RANGE_NONE ? "" : s->range_text, s->status);
	return -EPROTO;
}

static int verdict(const rf_fetch *f, const rf_http_ask *ask, const gather *g, CURLcode code,
		   int *fault, char *err, size_t errlen)
{
	char why[RF_IO_WHY_MAX];
	int step, ret = 0;
	if (g->over) {
		rfi_fmt(err, errlen, "%s: the answer is over %zu bytes", f->url, g->max);
		return -EFBIG;
	}
	if (code == CURLE_ABORTED_BY_CALLBACK) {
		rfi_fmt(err, errlen, "%s: cancelled", f->url);
		return -ECANCELED;
	}
	if (code != CURLE_OK) {
		ret = code == CURLE_WRITE_ERROR ? -ENOMEM
		    : rfi_http_transport_error(code, f->url, &g->seen, &step, why, sizeof(why));
		*fault = ret == -EPROTO; /* a header over libcurl's limit */
		if (ret == -EIO)
			ret = -ECONNRESET; /* what else may pass: tried again */
		rfi_fmt(err, errlen, "%s: %s%s", f->url, ret == -ENOMEM ? "out of memory" : why,
		       ret == -EPERM ? " (CURL_CA_BUNDLE or SSL_CERT_FILE names the CA bundle to "
		       "verify against)" : "");
		return ret;
	}
	if (f->tail && f->len)
		return tail_check(f, g, g->out, fault, err, errlen);
	if ((!f->method || !strcmp(f->method, "GET")) &&
	    (g->seen.status == 200 || g->seen.status == 206 || g->seen.status == 416)) {
		/* the bytes asked, as they are: checked as a read's are (other
		 * statuses are the caller's to judge) */
		int32_t r = rfi_http_check(ask, &g->seen, g->out->body_len, &step, fault, why,
					  sizeof(why));
		if (*fault) {
			rfi_fmt(err, errlen, "%s: %s", f->url, why);
			ret = r < 0 ? r : -EPROTO;
		}
	}
	return ret;
}

/* One try, of at most timeout ms. @return : 0 (a response), or a negative
 * errno; *fault when the response broke one of rfi_http_check's rules (a
 * proxy's mistake may pass: tried again). */
static int try_once(const rf_fetch *f, const rf_http_client *client, long timeout,
		    rf_fetch_result *out, int *fault, char *err, size_t errlen)
{
	*fault = 0;
	CURL *e = curl_easy_init();
	if (!e) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	gather g = { .out = out, .max = f->max_body ? f->max_body : FETCH_MAX_BODY,
		     .keep = f->keep_header };
	rf_http_ask ask = { .offset = f->len ? f->offset : 0, .len = f->len,
			    .etag = if_match_of(f) };
	struct curl_slist *hl = NULL, *plain = NULL;
	int ret = request_headers(f, client, &hl);
	rfi_http_client_apply(client, e);
	if (ret) {
		rfi_fmt(err, errlen, "out of memory");
		goto out;
	}
	char range[48], at[4096];
	set_request(e, f, hl, &g, timeout, range);
	/* a presigned URL an earlier request's redirect gave: there, bare */
	rf_presigned *kept = client->sign ? client->sign->presigned : NULL;
	int leg_kept = kept && rfi_presigned_get(kept, f->url, at, sizeof(at));
	if (leg_kept && !(plain = plain_headers(f))) {
		ret = -ENOMEM;
		rfi_fmt(err, errlen, "out of memory");
		goto out;
	}
	if (leg_kept) {
		curl_easy_setopt(e, CURLOPT_URL, at);
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, plain);
	}
	CURLcode code = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &out->status);
	if (code == CURLE_OK && leg_kept && (out->status == 401 || out->status == 403 ||
					     out->status == 404 || out->status == 410)) {
		/* refused there (expired early, revoked): asked again, signed */
		rfi_presigned_forget(kept, f->url);
		rfi_fmt(err, errlen, "%s: its presigned URL was refused (HTTP %ld)", f->url,
		       out->status);
		*fault = 1;
		ret = -EPROTO;
		goto out;
	}
	if (code == CURLE_OK && out->status >= 300 && out->status < 400 && client->sign)
		ret = follow_redirect(e, f, client, &plain, out, &g, &code, fault, err, errlen);
	if (g.seen.has_retry_after && (out->status == 429 || out->status == 503))
		rfi_http_throttle_note(g.seen.retry_after_s); /* every request waits */
	if (ret)
		goto out;
	if (!f->tail)
		out->size = rfi_http_seen_size(&g.seen, &ask);
	ret = verdict(f, &ask, &g, code, fault, err, errlen);
	rfi_http_seen_etag(&g.seen, out->etag);
out:
	curl_slist_free_all(hl);
	curl_slist_free_all(plain);
	curl_easy_cleanup(e);
	return ret;
}

/* Sleeps ms, or less when the create is called off (looked at every 50 ms). */
static void backoff(long ms)
{
	while (ms > 0 && !rfi_cancelled()) {
		long step = RF_MIN(ms, 50L);
		struct timespec ts = { step / 1000, (step % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		ms -= step;
	}
}

int rfi_fetch_run(const rf_fetch *f, rf_fetch_result *out, char *err, size_t errlen)
{
	*out = (rf_fetch_result){ 0 };
	rf_http_client client;
	if (rfi_http_client_init(&client, f->sign)) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	uint32_t budget = f->budget_ms ? f->budget_ms : RF_IO_URL_BUDGET_MS;
	uint64_t start = rfi_now_ns(), end = start + (uint64_t)budget * 1000000ull;
	long per_try = f->timeout_ms ? f->timeout_ms : 30000;
	int tries = f->tries ? f->tries : 4, ret = 0, made = 0;
	for (int t = 0; t < tries; t++) {
		if (t) /* 100 ms, 200 ms, 400 ms, ...: never past the budget */
			backoff(RF_MIN(100L << (t - 1), (long)((end - RF_MIN(end, rfi_now_ns())) /
								   1000000ull)));
		/* a server said to wait (Retry-After, this request's or another's) */
		uint64_t until = rfi_http_throttle_until(), now = rfi_now_ns();
		if (until > now && until < end)
			backoff((long)((until - now) / 1000000ull) + 1);
		now = rfi_now_ns();
		if (rfi_cancelled()) {
			rfi_fmt(err, errlen, "%s: cancelled", f->url);
			ret = -ECANCELED;
			break;
		}
		if (t && now + 1000000ull >= end)
			break; /* the budget is spent: the last answer stands */
		rfi_fetch_result_free(out);
		*out = (rf_fetch_result){ 0 };
		int fault;
		long left = (long)RF_MAX((end - RF_MIN(end, now)) / 1000000ull, 1ull);
		made++;
		ret = try_once(f, &client, RF_MIN(per_try, left), out, &fault, err, errlen);
		int transient = fault || ret == -ETIMEDOUT || ret == -ECONNRESET ||
				(!ret && (out->status == 429 || out->status == 500 ||
					  out->status == 502 || out->status == 503 ||
					  out->status == 504));
		if (!transient)
			break;
	}
	if (ret == -ETIMEDOUT)
		rfi_fmt(err, errlen, "%s: no whole answer in time (%d %s in %.1f s; the set-up "
		       "request's time is remote_timeout_ms = %u, every try included)", f->url,
		       made, made == 1 ? "try" : "tries",
		       (double)(rfi_now_ns() - start) / 1e9, budget);
	rfi_http_client_free(&client);
	if (ret)
		rfi_fetch_result_free(out);
	return ret;
}

#else /* !RF_HAVE_REMOTE */

int rfi_fetch_run(const rf_fetch *f, rf_fetch_result *out, char *err, size_t errlen)
{
	*out = (rf_fetch_result){ 0 };
	rfi_fmt(err, errlen, "%s: this ringfeed was built without libcurl: no http(s) reads "
	       "(scripts/deps.sh installs libcurl4-openssl-dev; meson feature 'remote')", f->url);
	return -EPROTONOSUPPORT;
}

#endif
