/* test_http.c - the read engine's http(s) reads (src/io/http.c, issue 25's
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
#include "io/http.h"
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
	if (!rf_http_available())
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

static rf_io *engine(uint32_t depth)
{
	rf_io_params p = { .path = RF_IO_AUTO, .depth = depth, .max_read = SLOT_BYTES,
			   .max_files = 1, .direct = 0, .wake_fd = wake, .name = "http test",
			   .log_level = RF_LOG_ERROR };
	rf_io *io;
	char err[256];
	cr_assert_eq(rf_io_create(&io, &p, err, sizeof(err)), 0, "%s", err);
	rf_io_info info;
	rf_io_get_info(io, &info);
	if (info.path == RF_IO_PREAD) {
		rf_io_destroy(io);
		cr_skip_test("io_uring is not available here: http(s) reads need it");
	}
	return io;
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
		while (next < n && nfree && inflight < depth && rf_io_ready(io, w[next].len)) {
			uint32_t s = free_slots[--nfree];
			slot_of[next] = s;
			rf_io_submit(io, &(rf_io_read){ .file = -1, .url = w[next].url,
							.offset = w[next].offset, .len = w[next].len,
							.buf = mem + (size_t)s * SLOT_BYTES, .tag = next });
			next++;
			inflight++;
		}
		cr_assert_eq(rf_io_wait(io), 0);
		uint32_t k = rf_io_reap(io, d, SLOTS);
		for (uint32_t j = 0; j < k; j++) {
			uint32_t i = (uint32_t)d[j].tag;
			cr_assert(i < n);
			w[i].res = d[j].res;
			w[i].step = d[j].step;
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
	rf_io_destroy(io);
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
	rf_io_destroy(io);
}

Test(http, a_refused_connection_is_an_error_not_a_hang)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", tu_free_port());
	want w[] = { { .url = url, .offset = 0, .len = 10 } };
	rf_io *io = engine(4);
	run(io, w, 1, 4);
	cr_assert_eq(w[0].res, -ECONNREFUSED, "%d", w[0].res);
	rf_io_destroy(io);
}

Test(http, an_engine_destroyed_with_transfers_in_flight_returns)
{
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/data.bin", port);
	rf_io *io = engine(SLOTS);
	for (uint32_t i = 0; i < SLOTS && rf_io_ready(io, SLOT_BYTES); i++)
		rf_io_submit(io, &(rf_io_read){ .file = -1, .url = url, .offset = (uint64_t)i * 1000,
						.len = SLOT_BYTES, .buf = mem + (size_t)i * SLOT_BYTES,
						.tag = i });
	cr_assert_eq(rf_io_wait(io), 0); /* some under way */
	rf_io_destroy(io);
}
