/* test_http.c - the read engine's http(s) reads (src/remote/http.c, issue 25's
 * first step) against a real nginx the test starts on 127.0.0.1: ranged
 * GETs at any offset and length give the object's bytes, hundreds in flight
 * at once on one thread; a missing object fails at the "open" (the
 * request), a range past the end gives what is there, a refused
 * connection is an error and not a hang; an engine destroyed with
 * transfers in flight returns. Skipped where the build has no libcurl or
 * nginx is missing (scripts/deps.sh installs libcurl4-openssl-dev and
 * nginx-light). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/engine.h"
#include "remote/fetch.h"
#include "remote/credentials.h"
#include "remote/http.h"
#include "remote/s3.h" /* rfi_s3_sign_init */
#include "testutil.h"
#include "util/util.h"

#define OBJECT_BYTES (3u << 20)
#define SLOTS 128
#define SLOT_BYTES (256u << 10)

static char *dir;
static uint8_t *content;
static uint8_t *mem;
static int wake = -1, port;

static void setup(void)
{
	if (!rfi_http_available())
		cr_skip_test("this ringfeed was built without libcurl (meson feature 'remote'; "
			     "scripts/deps.sh installs libcurl4-openssl-dev)");
	dir = tu_tmpdir("http");
	content = tu_noise(OBJECT_BYTES, 88172645463325252ull);
	tu_write(dir, "www/data.bin", content, OBJECT_BYTES);
	char www[4096];
	snprintf(www, sizeof(www), "%s/www", dir);
	port = tu_nginx_start(www);
	if (!port)
		cr_skip_test("nginx is not installed (scripts/deps.sh installs nginx-light)");
	cr_assert_eq(posix_memalign((void **)&mem, 4096, (size_t)SLOTS * SLOT_BYTES), 0);
	wake = eventfd(0, EFD_CLOEXEC);
}

static void teardown(void)
{
	tu_nginx_stop();
	if (wake >= 0)
		close(wake);
	free(mem);
	free(content);
	if (dir)
		tu_rmrf(dir);
	free(dir);
}

TestSuite(http, .init = setup, .fini = teardown, .timeout = 60);

/* An engine whose URL reads take budget_ms at most (0: the default), signed
 * with sign (NULL: unsigned). */
static rf_io *engine_with(uint32_t depth, uint32_t budget_ms, const rf_io_sign *sign)
{
	rf_io_params p = { .path = RF_IO_AUTO, .depth = depth, .max_read = SLOT_BYTES,
			   .max_files = 1, .direct = 0, .wake_fd = wake, .name = "http test",
			   .log_level = RF_LOG_ERROR, .url_budget_ms = budget_ms,
			   .url_reader = &rf_http_reader, .sign = sign };
	rf_io *io;
	char err[256];
	cr_assert_eq(rfi_io_create(&io, &p, err, sizeof(err)), 0, "%s", err);
	rf_io_info info;
	rfi_io_get_info(io, &info);
	if (info.path == RF_IO_PREAD) {
		rfi_io_destroy(io);
		cr_skip_test("io_uring is not available here: http(s) reads need it");
	}
	return io;
}

static rf_io *engine(uint32_t depth)
{
	return engine_with(depth, 0, NULL);
}

/* Runs reads to their end: n reads (url, offset, len each), at most depth in
 * flight; res[i] gets read i's result, data in slot i % SLOTS... checked
 * as it comes. */
typedef struct want {
	const char *url;
	uint64_t offset;
	uint32_t len;
	int32_t res;
	uint8_t step;
	char what[256]; /* a failed read's rfi_io_describe() */
	const char *etag; /* If-Match, or NULL */
	char etag_out[RF_IO_ETAG_MAX]; /* the response's ETag */
} want;

static void run(rf_io *io, want *w, uint32_t n, uint32_t depth)
{
	uint32_t next = 0, done = 0, inflight = 0;
	uint32_t *slot_of = calloc(n, sizeof(uint32_t)), *free_slots = malloc(SLOTS * sizeof(uint32_t));
	uint32_t nfree = SLOTS;
	for (uint32_t i = 0; i < SLOTS; i++)
		free_slots[i] = i;
	rf_io_done d[SLOTS];
	while (done < n) {
		while (next < n && nfree && inflight < depth && rfi_io_ready(io, w[next].len)) {
			uint32_t s = free_slots[--nfree];
			slot_of[next] = s;
			rfi_io_submit(io, &(rf_io_read){ .file = -1, .url = w[next].url,
							.offset = w[next].offset, .len = w[next].len,
							.etag = w[next].etag,
							.etag_out = w[next].etag_out,
							.buf = mem + (size_t)s * SLOT_BYTES, .tag = next });
			next++;
			inflight++;
		}
		cr_assert_eq(rfi_io_wait(io), 0);
		uint32_t k = rfi_io_reap(io, d, SLOTS);
		for (uint32_t j = 0; j < k; j++) {
			uint32_t i = (uint32_t)d[j].tag;
			cr_assert(i < n);
			w[i].res = d[j].res;
			w[i].step = d[j].step;
			if (d[j].res < 0)
				rfi_io_describe(&d[j], w[i].what, sizeof(w[i].what));
			if (d[j].res > 0) {
				cr_assert_eq(d[j].skip, 0);
				cr_assert(!memcmp(mem + (size_t)slot_of[i] * SLOT_BYTES,
						  content + w[i].offset, (size_t)d[j].res),
					  "read %u (offset %llu, %d bytes): wrong bytes", i,
					  (unsigned long long)w[i].offset, d[j].res);
			}
			free_slots[nfree++] = slot_of[i];
			inflight--;
			done++;
		}
	}
	free(slot_of);
	free(free_slots);
}

Test(http, ranged_reads_of_a_url_land_their_bytes)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", port);
	enum { N = 600 };
	want *w = calloc(N, sizeof(*w));
	uint64_t x = 7;
	for (uint32_t i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t len = 1 + (uint32_t)((x >> 33) % SLOT_BYTES);
		uint64_t off = (x >> 11) % (OBJECT_BYTES - len + 1);
		w[i] = (want){ .url = url, .offset = off, .len = len, .res = INT32_MIN };
	}
	w[0].offset = 0, w[0].len = SLOT_BYTES;                        /* from the start */
	w[1].offset = OBJECT_BYTES - 100, w[1].len = 100;              /* to the end */
	rf_io *io = engine(SLOTS);
	run(io, w, N, SLOTS);
	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(w[i].res, (int32_t)w[i].len, "read %u: %d of %u bytes", i, w[i].res,
			     w[i].len);
	rfi_io_destroy(io);
	free(w);
}

Test(http, a_missing_object_fails_and_a_range_past_the_end_gives_what_is_there)
{
	char url[128], missing[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", port);
	snprintf(missing, sizeof(missing), "http://127.0.0.1:%d/nosuch.bin", port);
	want w[] = {
		{ .url = missing, .offset = 0, .len = 10 },
		{ .url = url, .offset = OBJECT_BYTES - 10, .len = 1000 },  /* crosses the end */
		{ .url = url, .offset = OBJECT_BYTES + 10, .len = 1000 },  /* starts past it */
	};
	rf_io *io = engine(8);
	run(io, w, 3, 8);
	cr_assert_eq(w[0].res, -ENOENT, "%d", w[0].res);
	cr_assert_eq(w[0].step, RF_IO_STEP_OPEN);
	cr_assert_eq(w[1].res, 10, "%d", w[1].res);
	cr_assert_eq(w[2].res, 0, "%d", w[2].res);
	rfi_io_destroy(io);
}

Test(http, a_refused_connection_is_an_error_not_a_hang)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", tu_free_port());
	want w[] = { { .url = url, .offset = 0, .len = 10 } };
	rf_io *io = engine(4);
	run(io, w, 1, 4);
	cr_assert_eq(w[0].res, -ECONNREFUSED, "%d", w[0].res);
	rfi_io_destroy(io);
}

Test(http, an_engine_destroyed_with_transfers_in_flight_returns)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", port);
	rf_io *io = engine(SLOTS);
	for (uint32_t i = 0; i < SLOTS && rfi_io_ready(io, SLOT_BYTES); i++)
		rfi_io_submit(io, &(rf_io_read){ .file = -1, .url = url, .offset = (uint64_t)i * 1000,
						.len = SLOT_BYTES, .buf = mem + (size_t)i * SLOT_BYTES,
						.tag = i });
	cr_assert_eq(rfi_io_wait(io), 0); /* some under way */
	rfi_io_destroy(io);
}

/* ---- responses that lie (issue 36), from tests/fault_server.py ---------- */

/* A fault server of the test's object, no fault but those args ask for. */
static int fault_server(tu_fault *s, const char *const *args)
{
	char www[4096];
	snprintf(www, sizeof(www), "%s/www", dir);
	const char *all[40] = { "--p503", "0", "--preset", "0", "--pshort", "0" };
	int n = 6;
	for (; args && *args && n < 39; args++)
		all[n++] = *args;
	all[n] = NULL;
	if (!tu_fault_start(s, www, all))
		cr_skip_test("python3 is missing: tests/fault_server.py cannot run");
	return s->port;
}

/* The engine tried some transfer again. */
static void assert_retried(rf_io *io)
{
	rf_io_info info;
	rfi_io_get_info(io, &info);
	cr_assert_gt(info.http.retries, 0, "no transfer was tried again");
}

/* The text of file path (malloc'ed), "" when there is none. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = calloc(1, 1 << 20);
	if (f) {
		size_t n = fread(s, 1, (1 << 20) - 1, f);
		s[n] = '\0';
		fclose(f);
	}
	return s;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A 206 whose Content-Range is another range than the one asked (the 512
 * bytes before it) is never taken for it: after its tries the read fails,
 * saying what was asked and what came. */
Test(http, a_206_of_another_range_is_refused_saying_both)
{
	tu_fault s;
	int p = fault_server(&s, (const char *[]){ "--lie-range", "1", NULL });
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", p);
	want w[] = { { .url = url, .offset = 4096, .len = 1000 },
		     { .url = url, .offset = 100, .len = 50 } };
	rf_io *io = engine_with(4, 20000, NULL);
	run(io, w, 2, 4);
	cr_assert_eq(w[0].res, -EPROTO, "%d", w[0].res);
	cr_assert(strstr(w[0].what, "asked bytes 4096-5095") &&
		  strstr(w[0].what, "Content-Range bytes 3584-4583/3145728"), "%s", w[0].what);
	cr_assert_eq(w[1].res, -EPROTO, "%d", w[1].res);
	cr_assert(strstr(w[1].what, "asked bytes 100-149") &&
		  strstr(w[1].what, "Content-Range bytes 612-661/3145728"), "%s", w[1].what);
	assert_retried(io);
	rfi_io_destroy(io);
	tu_fault_stop(&s);
}

/* A 206 gzip-encoded on the way (a proxy compressing) is not the bytes:
 * refused, naming the encoding; every request asks for identity. */
Test(http, a_gzip_encoded_206_is_refused_and_identity_is_asked)
{
	char log[4200];
	snprintf(log, sizeof(log), "%s/headers.log", dir);
	tu_fault s;
	int p = fault_server(&s, (const char *[]){ "--gzip", "1", "--log-headers", log, NULL });
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", p);
	want w[] = { { .url = url, .offset = 0, .len = 4096 },
		     { .url = url, .offset = 777, .len = 10 } };
	rf_io *io = engine_with(4, 20000, NULL);
	run(io, w, 2, 4);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(w[i].res, -EPROTO, "%d", w[i].res);
		cr_assert(strstr(w[i].what, "Content-Encoding: gzip"), "%s", w[i].what);
	}
	rfi_io_destroy(io);
	tu_fault_stop(&s);
	char *sent = slurp(log);
	size_t gets = count_of(sent, "GET /data.bin");
	cr_assert_gt(gets, 2, "each read tried again: %s", sent);
	cr_assert_eq(count_of(sent, "Accept-Encoding: identity"), gets, "%s", sent);
	free(sent);
}

/* One response header over libcurl's 100 KiB limit: libcurl says "out of
 * memory"; the read says what it is (and the engine does not take it for
 * a system short of memory). */
Test(http, a_header_over_libcurls_limit_is_said_so_not_out_of_memory)
{
	tu_fault s;
	int p = fault_server(&s, (const char *[]){ "--huge-header", "1", NULL });
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", p);
	want w[] = { { .url = url, .offset = 10, .len = 100 } };
	rf_io *io = engine_with(4, 20000, NULL);
	run(io, w, 1, 4);
	cr_assert_eq(w[0].res, -EPROTO, "%d: %s", w[0].res, w[0].what);
	cr_assert(strstr(w[0].what, "header line over libcurl's limit of 100 KiB"), "%s", w[0].what);
	rfi_io_destroy(io);
	tu_fault_stop(&s);
}

/* Lies now and then (another range, gzip, a huge header: 15% of the
 * responses) are tried again: every read lands its own bytes. */
Test(http, responses_that_lie_now_and_then_are_tried_again_until_true)
{
	tu_fault s;
	int p = fault_server(&s, (const char *[]){ "--lie-range", "0.08", "--gzip", "0.05",
						   "--huge-header", "0.02", "--seed", "36", NULL });
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", p);
	enum { N = 200 };
	want *w = calloc(N, sizeof(*w));
	uint64_t x = 36;
	for (uint32_t i = 0; i < N; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t len = 1 + (uint32_t)((x >> 33) % (64u << 10));
		uint64_t off = (x >> 11) % (OBJECT_BYTES - len + 1);
		w[i] = (want){ .url = url, .offset = off, .len = len, .res = INT32_MIN };
	}
	rf_io *io = engine(32);
	run(io, w, N, 32); /* and each read's bytes are checked there */
	for (uint32_t i = 0; i < N; i++)
		cr_assert_eq(w[i].res, (int32_t)w[i].len, "read %u: %d (%s)", i, w[i].res, w[i].what);
	assert_retried(io);
	rfi_io_destroy(io);
	tu_fault_stop(&s);
	free(w);
}

/* The object replaced on a server that ignores If-Match: a 206 with
 * another ETag (and other bytes) is refused as a change. */
Test(http, another_etag_than_asked_is_a_change_even_when_if_match_is_ignored)
{
	tu_fault s;
	int p = fault_server(&s, (const char *[]){ "--new-etag-after", "1", NULL });
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", p);
	want first[] = { { .url = url, .offset = 0, .len = 100 } };
	rf_io *io = engine_with(4, 20000, NULL);
	run(io, first, 1, 4);
	cr_assert_eq(first[0].res, 100);
	cr_assert(first[0].etag_out[0], "the server's ETag");
	want w[] = { { .url = url, .offset = 1000, .len = 100, .etag = first[0].etag_out } };
	run(io, w, 1, 4);
	cr_assert_eq(w[0].res, -ESTALE, "%d", w[0].res);
	cr_assert_eq(w[0].step, RF_IO_STEP_OPEN);
	cr_assert(strstr(w[0].what, "changed on the server") && strstr(w[0].what, "If-Match") &&
		  strstr(w[0].what, first[0].etag_out), "%s", w[0].what);
	rfi_io_destroy(io);
	tu_fault_stop(&s);
}

/* A host name that does not resolve is said so, naming it ("No route to
 * host" it is not). */
Test(http, a_host_name_that_does_not_resolve_is_named)
{
	want w[] = { { .url = "http://no-such-host.invalid/data.bin", .offset = 0, .len = 10 } };
	rf_io *io = engine_with(4, 5000, NULL);
	run(io, w, 1, 4);
	cr_assert_eq(w[0].res, -ENXIO, "%d", w[0].res);
	cr_assert_eq(w[0].step, RF_IO_STEP_OPEN);
	cr_assert(strstr(w[0].what, "no-such-host.invalid") && strstr(w[0].what, "does not resolve"),
		  "%s", w[0].what);
	rfi_io_destroy(io);
}

/* Fixed keys with a session token, as a signer takes them (destroy them). */
static rf_creds *session_keys(void)
{
	rf_creds *creds;
	char err[256];
	cr_assert_eq(rfi_creds_create(&creds, &(rf_creds_source){ .kind = RF_CREDS_STATIC,
				     .from = "test", .key_id = "AKIDTEST", .secret = "not-a-secret",
				     .token = "TOKEN-OF-ISSUE-36" }, err, sizeof(err)), 0, "%s", err);
	return creds;
}

/* A signed request's session token (x-amz-security-token, a header curl
 * does not drop on another host) never reaches the host a redirect names:
 * the redirect is not followed, and said so. One to its own host is. The
 * same for a set-up request (fetch.c). */
Test(http, a_signed_request_follows_no_redirect_to_another_host)
{
	char log_a[4200], log_b[4200], log_c[4200], port_b[16];
	snprintf(log_a, sizeof(log_a), "%s/a.log", dir);
	snprintf(log_b, sizeof(log_b), "%s/b.log", dir);
	snprintf(log_c, sizeof(log_c), "%s/c.log", dir);
	tu_fault b, a, c;
	snprintf(port_b, sizeof(port_b), "%d",
		 fault_server(&b, (const char *[]){ "--log-headers", log_b, NULL }));
	int pa = fault_server(&a, (const char *[]){ "--redirect-to", port_b, "--log-headers", log_a,
						    NULL });
	int pc = fault_server(&c, (const char *[]){ "--redirect-to", "0", "--log-headers", log_c,
						    NULL });
	rf_creds *creds = session_keys();
	rf_io_sign sign; /* S3's: SigV4 with those keys */
	cr_assert_eq(rfi_s3_sign_init(&sign, creds, "us-east-1"), 0);
	char url_a[128], url_c[128];
	snprintf(url_a, sizeof(url_a), "http://127.0.0.1:%d/data.bin", pa);
	snprintf(url_c, sizeof(url_c), "http://127.0.0.1:%d/data.bin", pc);
	want w[] = { { .url = url_a, .offset = 0, .len = 1000 },
		     { .url = url_c, .offset = 5000, .len = 1000 } };
	rf_io *io = engine_with(4, 20000, &sign);
	run(io, w, 2, 4);
	rfi_io_destroy(io);
	cr_assert_eq(w[0].res, -EPROTO, "%d", w[0].res);
	cr_assert_eq(w[0].step, RF_IO_STEP_OPEN);
	cr_assert(strstr(w[0].what, "307") && strstr(w[0].what, port_b) &&
		  strstr(w[0].what, "not followed"), "%s", w[0].what);
	cr_assert_eq(w[1].res, 1000, "its own host's redirect is followed: %d %s", w[1].res,
		     w[1].what);

	/* a set-up request, the same */
	rf_fetch_result r;
	char err[512];
	cr_assert_eq(rfi_fetch_run(&(rf_fetch){ .url = url_a, .sign = &sign, .len = 10, .tries = 1 },
				  &r, err, sizeof(err)), -EPROTO, "%s", err);
	cr_assert(strstr(err, "not followed") && strstr(err, port_b), "%s", err);
	cr_assert_eq(rfi_fetch_run(&(rf_fetch){ .url = url_c, .sign = &sign, .offset = 7, .len = 10,
					       .tries = 1 }, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(r.status, 206);
	cr_assert(r.body_len == 10 && !memcmp(r.body, content + 7, 10));
	rfi_fetch_result_free(&r);
	rfi_s3_sign_free(&sign);
	rfi_creds_destroy(creds);
	tu_fault_stop(&a);
	tu_fault_stop(&b);
	tu_fault_stop(&c);

	char *sent_a = slurp(log_a), *sent_b = slurp(log_b), *sent_c = slurp(log_c);
	cr_assert_gt(count_of(sent_a, "x-amz-security-token: TOKEN-OF-ISSUE-36"), 0,
		     "the token went to its host: %s", sent_a);
	cr_assert_eq(count_of(sent_b, "TOKEN-OF-ISSUE-36"), 0, "the token went to another host: %s",
		     sent_b);
	cr_assert_eq(count_of(sent_c, "GET /moved/data.bin"), 2, "%s", sent_c);
	cr_assert_eq(count_of(sent_c, "x-amz-security-token: TOKEN-OF-ISSUE-36"), 4, "%s", sent_c);
	free(sent_a);
	free(sent_b);
	free(sent_c);
}

/* A signed request redirected to another host once (a proxy's lie, or
 * S3's 307 while a bucket's name spreads): not followed, tried again as a
 * fault, and the next answer lands; the other host never sees a request. */
Test(http, a_signed_request_redirected_once_elsewhere_is_tried_again)
{
	char log_a[4200], log_b[4200], port_b[16];
	snprintf(log_a, sizeof(log_a), "%s/a.log", dir);
	snprintf(log_b, sizeof(log_b), "%s/b.log", dir);
	tu_fault b, a;
	snprintf(port_b, sizeof(port_b), "%d",
		 fault_server(&b, (const char *[]){ "--log-headers", log_b, NULL }));
	int pa = fault_server(&a, (const char *[]){ "--redirect-to", port_b, "--lie-once",
						    "redirect@1", "--log-headers", log_a, NULL });
	rf_creds *creds = session_keys();
	rf_io_sign sign;
	cr_assert_eq(rfi_s3_sign_init(&sign, creds, "us-east-1"), 0);
	char url_a[128];
	snprintf(url_a, sizeof(url_a), "http://127.0.0.1:%d/data.bin", pa);
	want w[] = { { .url = url_a, .offset = 4096, .len = 1000 } };
	rf_io *io = engine_with(4, 20000, &sign);
	run(io, w, 1, 4);
	rfi_io_destroy(io);
	rfi_s3_sign_free(&sign);
	rfi_creds_destroy(creds);
	tu_fault_stop(&a);
	tu_fault_stop(&b);
	cr_assert_eq(w[0].res, 1000, "%d %s", w[0].res, w[0].what);
	char *sent_a = slurp(log_a), *sent_b = slurp(log_b);
	cr_assert_eq(count_of(sent_a, "GET /data.bin"), 2, "asked twice: %s", sent_a);
	cr_assert_eq(count_of(sent_b, "GET"), 0, "the other host was asked: %s", sent_b);
	free(sent_a);
	free(sent_b);
}

/* ---- the checker alone (src/io/http_check.c): what is believed ---------- */

typedef struct check_case {
	rf_http_ask ask;
	const char *headers; /* lines, '\n' after each */
	uint64_t body;
	int32_t res;         /* what it gives */
	int fault;
	const char *why;     /* in its reason, or NULL */
} check_case;

static int32_t check(const check_case *c, int *fault, char *why, size_t whylen)
{
	rf_http_seen s = { 0 };
	for (const char *p = c->headers; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
		rfi_http_seen_line(&s, p, n);
		p += n;
	}
	int step;
	return rfi_http_check(&c->ask, &s, c->body, &step, fault, why, whylen);
}

Test(http_check, each_response_is_judged_against_what_was_asked)
{
	const char *et = "\"5f3a-1000\"";
	const check_case cases[] = {
		/* honest */
		{ { 512, 512, 4096, NULL }, "HTTP/1.1 206 Partial Content\r\n"
		  "Content-Range: bytes 512-1023/4096\r\nContent-Length: 512\r\n\r\n", 512, 512, 0, NULL },
		{ { 4000, 512, 0, NULL }, "HTTP/1.1 206 Partial Content\r\n"
		  "Content-Range: bytes 4000-4095/4096\r\n\r\n", 96, 96, 0, NULL },
		{ { 0, 8192, 4096, NULL }, "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n", 4096,
		  4096, 0, NULL },
		{ { 5000, 10, 0, NULL }, "HTTP/1.1 416 Range Not Satisfiable\r\n"
		  "Content-Range: bytes */4096\r\n\r\n", 0, 0, 0, NULL },
		{ { 0, 10, 0, et }, "HTTP/1.1 206 Partial Content\r\nETag: \"5f3a-1000\"\r\n"
		  "Content-Range: bytes 0-9/*\r\nContent-Encoding: identity\r\n\r\n", 10, 10, 0, NULL },
		/* after a redirect, only the last response counts */
		{ { 0, 10, 0, NULL }, "HTTP/1.1 302 Found\r\nContent-Encoding: gzip\r\n\r\n"
		  "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/10\r\n\r\n", 10, 10, 0,
		  NULL },
		/* lies */
		{ { 5000, 10, 0, et }, "HTTP/1.1 416 Range Not Satisfiable\r\nETag: \"other\"\r\n"
		  "Content-Range: bytes */4096\r\n\r\n", 0, -ESTALE, 1, "ETag \"other\"" },
		{ { 0, 10, 0, et }, "HTTP/1.1 206 Partial Content\r\nETag: \"5f3a\r-1000\"\r\n"
		  "Content-Range: bytes 0-9/*\r\n\r\n", 10, -ESTALE, 1, "not printable" },
		{ { 512, 512, 0, NULL }, "HTTP/1.1 206 Partial Content\r\n"
		  "Content-Range: bytes 0-511/4096\r\n\r\n", 512, -EPROTO, 1,
		  "asked bytes 512-1023, the server sent Content-Range bytes 0-511/4096" },
		{ { 0, 1000, 0, NULL }, "HTTP/1.1 206 Partial Content\r\n"
		  "Content-Range: bytes 0-499/4096\r\n\r\n", 500, -EPROTO, 1, "bytes 0-499/4096" },
		{ { 0, 100, 0, NULL }, "HTTP/1.1 206 Partial Content\r\n\r\n", 100, -EPROTO, 1,
		  "no Content-Range" },
		{ { 0, 100, 0, NULL }, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/4096"
		  "\r\nContent-Encoding: gzip\r\n\r\n", 100, -EPROTO, 1, "Content-Encoding: gzip" },
		{ { 0, 100, 0, NULL }, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/4096"
		  "\r\n\r\n", 60, -EPROTO, 1, "60 bytes of body" },
		{ { 0, 100, 0, NULL }, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/4096"
		  "\r\nContent-Range: bytes 100-199/4096\r\n\r\n", 100, -EPROTO, 1, NULL },
		{ { 0, 100, 4096, NULL }, "HTTP/1.1 206 Partial Content\r\n"
		  "Content-Range: bytes 0-99/5000\r\n\r\n", 100, -ESTALE, 1, "5000 bytes" },
		{ { 0, 100, 0, et }, "HTTP/1.1 206 Partial Content\r\nETag: \"new\"\r\n"
		  "Content-Range: bytes 0-99/4096\r\n\r\n", 100, -ESTALE, 1, "If-Match" },
		{ { 100, 100, 0, NULL }, "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n", 101,
		  -EPROTO, 1, "ignored Range" },
		{ { 0, 100, 0, NULL }, "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n", 101,
		  -EPROTO, 1, "whole object (HTTP 200, 4096 bytes)" },
		{ { 100, 10, 0, NULL }, "HTTP/1.1 416 Range Not Satisfiable\r\n"
		  "Content-Range: bytes */4096\r\n\r\n", 0, -EPROTO, 1, "object of 4096 bytes" },
		/* refusals and what may pass */
		{ { 0, 10, 0, NULL }, "HTTP/1.1 404 Not Found\r\n\r\n", 0, -ENOENT, 0, "HTTP 404" },
		{ { 0, 10, 0, NULL }, "HTTP/1.1 503 Slow Down\r\n\r\n", 0, -EAGAIN, 0, "HTTP 503" },
		{ { 0, 10, 0, et }, "HTTP/1.1 412 Precondition Failed\r\n\r\n", 0, -ESTALE, 0,
		  "changed on the server" },
		{ { 0, 10, 0, NULL }, "HTTP/1.1 307 Temporary Redirect\r\n\r\n", 0, -EPROTO, 0,
		  "HTTP 307" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[RF_IO_WHY_MAX];
		int fault;
		int32_t res = check(&cases[i], &fault, why, sizeof(why));
		cr_assert_eq(res, cases[i].res, "case %zu: %d (%s)", i, res, why);
		cr_assert_eq(fault, cases[i].fault, "case %zu: fault %d", i, fault);
		if (cases[i].why)
			cr_assert(strstr(why, cases[i].why), "case %zu: %s", i, why);
	}
}

/* A set-up request (fetch.c: a token shard's header, an index object) is
 * checked as a read is: another range, or an encoded body, fails it
 * after its tries, saying what the server did. */
Test(http, a_set_up_request_is_checked_as_a_read_is)
{
	static const char *const lies[][2] = { { "--lie-range", "Content-Range bytes 1512-1611/" },
					       { "--gzip", "Content-Encoding: gzip" } };
	for (int i = 0; i < 2; i++) {
		tu_fault s;
		int p = fault_server(&s, (const char *[]){ lies[i][0], "1", NULL });
		char url[128], err[512];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", p);
		rf_fetch_result r;
		int rc = rfi_fetch_run(&(rf_fetch){ .url = url, .offset = 2024, .len = 100 }, &r, err,
				      sizeof(err));
		cr_assert_eq(rc, -EPROTO, "%s: %d %s", lies[i][0], rc, err);
		cr_assert(strstr(err, url) && strstr(err, "asked bytes 2024-2123") &&
			  strstr(err, lies[i][1]), "%s", err);
		tu_fault_stop(&s);
	}
}
