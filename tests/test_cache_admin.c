/* test_cache_admin.c - what rfi_cache_stat() and rfi_cache_clear() (and
 * `ringfeed cache DIR`, run from $RINGFEED) make of a node-local cache
 * folder built here by hand, byte for byte as cache.h lays it out: FORMAT,
 * claims, segments/S.data and S.idx with records whose checks hold and
 * fail, a last record cut short, a record pointing past its data, a
 * segment a writer holds (flock LOCK_EX on a descriptor of this process:
 * flock locks belong to the open file, so the library's own open of it is
 * refused as another process's would be), a stray S.idx, and symbolic
 * links planted where a folder or a segment belongs, which are never
 * followed. Another program's folder (a FORMAT that is not ours) is left
 * alone. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/node_cache.h"
#include "testutil.h"
#include "util/hash.h"

#define SEGS RF_CACHE_DIR "/segments/"

/* A record of a range of object, its bytes at `at` in the data file. */
static rf_cache_rec rec(uint64_t object, uint64_t offset, uint32_t got, uint64_t at)
{
	rf_cache_rec r;
	memset(&r, 0, sizeof(r));
	r.object = object;
	r.offset = offset;
	r.len = got;
	r.got = got;
	r.at = at;
	r.data_hash = rfi_mix64(object ^ offset); /* not looked at by stat */
	r.check = rfi_hash_bytes(RF_CACHE_REC_SEED, &r, offsetof(rf_cache_rec, check));
	return r;
}

/* DIR/ringfeed-cache with our FORMAT, an empty claims file and segments/. */
static void make_cache(const char *dir)
{
	tu_write(dir, RF_CACHE_DIR "/FORMAT", RF_CACHE_FORMAT, strlen(RF_CACHE_FORMAT));
	tu_write(dir, RF_CACHE_DIR "/claims", "", 0);
	tu_mkdirs(dir, RF_CACHE_DIR "/segments");
}

/* segments/stem.data of `size` bytes. */
static void write_data(const char *dir, const char *stem, size_t size)
{
	char rel[256];
	uint8_t *b = malloc(size ? size : 1);
	for (size_t i = 0; i < size; i++)
		b[i] = (uint8_t)(i * 7);
	snprintf(rel, sizeof(rel), SEGS "%s.data", stem);
	tu_write(dir, rel, b, size);
	free(b);
}

/* segments/stem.idx: n records, then `tail` more bytes (a record cut short). */
static void write_idx(const char *dir, const char *stem, const rf_cache_rec *r, size_t n,
		      size_t tail)
{
	char rel[256];
	size_t len = n * sizeof(*r) + tail;
	uint8_t *b = calloc(1, len + 1);
	memcpy(b, r, n * sizeof(*r));
	memset(b + n * sizeof(*r), 0x5a, tail);
	snprintf(rel, sizeof(rel), SEGS "%s.idx", stem);
	tu_write(dir, rel, b, len);
	free(b);
}

static int exists(const char *dir, const char *rel)
{
	char p[4096];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* What a file takes on disk, as stat counts it. */
static uint64_t disk(const char *dir, const char *rel)
{
	char p[4096];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	cr_assert_eq(lstat(p, &st), 0, "%s: %s", p, strerror(errno));
	return (uint64_t)st.st_blocks * 512;
}

/* Objects */
#define X 0x1111
#define Y 0x2222
#define Z 0x3333

/* The cache most tests look at:
 *   A (1000 bytes): X@0 100, Y@100 200, X@300 50 valid; one whose check
 *     fails (damaged); one whose check holds but whose bytes are past the
 *     data's end (lost in a crash: not a range, not damaged); then 20 bytes
 *     of a record cut short (ignored);
 *   B (500 bytes), held by a writer (*held, LOCK_EX): Y@0 100, Z@100 400;
 *   C (64 bytes): no S.idx yet;
 *   D.idx without D.data (stray: its records are no ranges);
 *   E.data a symbolic link to a file outside the folder (not a segment).
 * @return : the expected stat. */
static rf_cache_info layout(const char *dir, const char *outside, int *held)
{
	make_cache(dir);
	write_data(dir, "0000000a-00000000000000aa", 1000);
	rf_cache_rec a[5] = { rec(X, 0, 100, 0), rec(Y, 4096, 200, 100), rec(X, 8192, 50, 300),
			      rec(Z, 0, 10, 400), rec(Z, 65536, 100, 950) };
	a[3].check ^= 1;  /* damaged */
	write_idx(dir, "0000000a-00000000000000aa", a, 5, 20);

	write_data(dir, "0000000b-00000000000000bb", 500);
	rf_cache_rec b[2] = { rec(Y, 0, 100, 0), rec(Z, 0, 400, 100) };
	write_idx(dir, "0000000b-00000000000000bb", b, 2, 0);
	char p[4096];
	snprintf(p, sizeof(p), "%s/" SEGS "0000000b-00000000000000bb.data", dir);
	*held = open(p, O_RDWR | O_CLOEXEC);
	cr_assert(*held >= 0);
	cr_assert_eq(flock(*held, LOCK_EX | LOCK_NB), 0, "the writer's lock");

	write_data(dir, "0000000c-00000000000000cc", 64);

	rf_cache_rec d[1] = { rec(X, 0, 10, 0) };
	write_idx(dir, "0000000d-00000000000000dd", d, 1, 0);

	tu_write(outside, "victim.data", "precious", 8);
	snprintf(p, sizeof(p), "%s/" SEGS "0000000e-00000000000000ee.data", dir);
	char target[4096];
	snprintf(target, sizeof(target), "%s/victim.data", outside);
	cr_assert_eq(symlink(target, p), 0);

	rf_cache_info want = {
		.found = 1,
		.segments = 3, /* A, B, C */
		.writing = 1,  /* B */
		.ranges = 5,   /* A's three, B's two */
		.objects = 3,  /* X, Y, Z */
		.data_bytes = 100 + 200 + 50 + 100 + 400,
		.damaged = 1,
	};
	want.disk_bytes = disk(dir, SEGS "0000000a-00000000000000aa.data") +
			  disk(dir, SEGS "0000000a-00000000000000aa.idx") +
			  disk(dir, SEGS "0000000b-00000000000000bb.data") +
			  disk(dir, SEGS "0000000b-00000000000000bb.idx") +
			  disk(dir, SEGS "0000000c-00000000000000cc.data") +
			  disk(dir, SEGS "0000000d-00000000000000dd.idx");
	return want;
}

static void assert_info(const rf_cache_info *got, const rf_cache_info *want, const char *what)
{
	cr_assert_eq(got->found, want->found, "%s: found", what);
	cr_assert_eq(got->segments, want->segments, "%s: segments %llu", what,
		     (unsigned long long)got->segments);
	cr_assert_eq(got->writing, want->writing, "%s: writing %llu", what,
		     (unsigned long long)got->writing);
	cr_assert_eq(got->ranges, want->ranges, "%s: ranges %llu", what,
		     (unsigned long long)got->ranges);
	cr_assert_eq(got->objects, want->objects, "%s: objects %llu", what,
		     (unsigned long long)got->objects);
	cr_assert_eq(got->data_bytes, want->data_bytes, "%s: data_bytes %llu", what,
		     (unsigned long long)got->data_bytes);
	cr_assert_eq(got->disk_bytes, want->disk_bytes, "%s: disk_bytes %llu, not %llu", what,
		     (unsigned long long)got->disk_bytes, (unsigned long long)want->disk_bytes);
	cr_assert_eq(got->damaged, want->damaged, "%s: damaged %llu", what,
		     (unsigned long long)got->damaged);
}

Test(cache_admin, stat_counts_what_the_folder_holds)
{
	char *dir = tu_tmpdir("cadm"), *out = tu_tmpdir("cadm-out");
	int held;
	rf_cache_info want = layout(dir, out, &held), got;
	char err[512];
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	assert_info(&got, &want, "held");
	/* the writer done: nothing is being written, the rest the same */
	close(held);
	want.writing = 0;
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	assert_info(&got, &want, "let go");
	tu_rmrf(dir);
	tu_rmrf(out);
	free(dir);
	free(out);
}

Test(cache_admin, partial_and_damaged_records)
{
	char *dir = tu_tmpdir("cadm");
	make_cache(dir);
	/* only a record cut short (47 of its 48 bytes): ignored, not damaged */
	write_data(dir, "00000001-0000000000000001", 100);
	rf_cache_rec r = rec(X, 0, 100, 0);
	char rel[256];
	snprintf(rel, sizeof(rel), SEGS "00000001-0000000000000001.idx");
	tu_write(dir, rel, &r, sizeof(r) - 1);
	rf_cache_info got;
	char err[512];
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.segments, 1);
	cr_assert_eq(got.ranges, 0);
	cr_assert_eq(got.damaged, 0, "a record cut short is not damaged");
	/* every byte of a whole record counts toward its check */
	rf_cache_rec bad[4] = { rec(X, 0, 10, 0), rec(X, 10, 10, 10), rec(X, 20, 10, 20),
				rec(Y, 0, 100, 0) };
	bad[0].object ^= 1ull << 40;
	bad[1].got = 11;
	bad[2].data_hash ^= 1;
	write_idx(dir, "00000001-0000000000000001", bad, 4, 0);
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.damaged, 3);
	cr_assert_eq(got.ranges, 1);
	cr_assert_eq(got.objects, 1);
	cr_assert_eq(got.data_bytes, 100);
	/* a range ending exactly at the data's end is whole; one byte past is not */
	rf_cache_rec edge[2] = { rec(X, 0, 40, 60), rec(Y, 0, 41, 60) };
	write_idx(dir, "00000001-0000000000000001", edge, 2, 0);
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.ranges, 1);
	cr_assert_eq(got.data_bytes, 40);
	cr_assert_eq(got.damaged, 0);
	tu_rmrf(dir);
	free(dir);
}

Test(cache_admin, no_cache_here)
{
	char *dir = tu_tmpdir("cadm");
	rf_cache_info got;
	uint64_t deleted = 7, busy = 7;
	char err[512], missing[4096];
	snprintf(missing, sizeof(missing), "%s/not-there", dir);
	/* no DIR: no cache (stat), nothing to clear (an error naming it) */
	memset(&got, 0xff, sizeof(got));
	cr_assert_eq(rfi_cache_stat(missing, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.found, 0);
	cr_assert_eq(got.segments, 0, "the rest zeroed");
	cr_assert_eq(rfi_cache_clear(missing, &deleted, &busy, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, missing), "the message names the folder: %s", err);
	cr_assert_eq(deleted + busy, 0);
	/* DIR without ringfeed-cache/ */
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.found, 0);
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, dir), "%s", err);
	/* ringfeed-cache/ without FORMAT, or with another text: not ours */
	tu_mkdirs(dir, RF_CACHE_DIR "/segments");
	write_data(dir, "00000001-0000000000000001", 10);
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.found, 0, "no FORMAT");
	const char *other[] = { "ringfeed-cache 3\n", "ringfeed-cache 1\n", "ringfeed-cache 2",
				"ringfeed-cache 2\n\n", "something else\n" };
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		tu_write(dir, RF_CACHE_DIR "/FORMAT", other[i], strlen(other[i]));
		cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(got.found, 0, "FORMAT '%s'", other[i]);
		cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), -ENOENT);
		cr_assert(strstr(err, "left alone"), "%s", err);
		cr_assert(exists(dir, SEGS "00000001-0000000000000001.data"), "another's: left alone");
	}
	/* ours, before any segment is made: found, empty */
	tu_rmrf(dir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	tu_write(dir, RF_CACHE_DIR "/FORMAT", RF_CACHE_FORMAT, strlen(RF_CACHE_FORMAT));
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	rf_cache_info empty = { .found = 1 };
	assert_info(&got, &empty, "no segments/");
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(deleted + busy, 0);
	/* DIR a regular file: an error naming it */
	tu_write(dir, "file", "x", 1);
	char file[4096];
	snprintf(file, sizeof(file), "%s/file", dir);
	cr_assert_eq(rfi_cache_stat(file, &got, err, sizeof(err)), -ENOTDIR);
	cr_assert(strstr(err, file), "%s", err);
	tu_rmrf(dir);
	free(dir);
}

Test(cache_admin, clear_deletes_all_but_what_a_writer_holds)
{
	char *dir = tu_tmpdir("cadm"), *out = tu_tmpdir("cadm-out");
	int held;
	layout(dir, out, &held);
	uint64_t deleted, busy;
	char err[512];
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(deleted, 2, "A and C: %llu", (unsigned long long)deleted);
	cr_assert_eq(busy, 1, "B");
	cr_assert_not(exists(dir, SEGS "0000000a-00000000000000aa.data"));
	cr_assert_not(exists(dir, SEGS "0000000a-00000000000000aa.idx"));
	cr_assert_not(exists(dir, SEGS "0000000c-00000000000000cc.data"));
	cr_assert_not(exists(dir, SEGS "0000000d-00000000000000dd.idx"), "a stray .idx goes");
	cr_assert(exists(dir, SEGS "0000000b-00000000000000bb.data"), "the writer's stays");
	cr_assert(exists(dir, SEGS "0000000b-00000000000000bb.idx"));
	cr_assert(exists(dir, RF_CACHE_DIR "/FORMAT"));
	cr_assert(exists(dir, RF_CACHE_DIR "/claims"));
	/* the link was not followed: its target is as it was */
	size_t len;
	uint8_t *v = tu_read(out, "victim.data", &len);
	cr_assert(len == 8 && !memcmp(v, "precious", 8));
	free(v);
	rf_cache_info got;
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	rf_cache_info want = { .found = 1, .segments = 1, .writing = 1, .ranges = 2, .objects = 2,
			       .data_bytes = 500,
			       .disk_bytes = disk(dir, SEGS "0000000b-00000000000000bb.data") +
					     disk(dir, SEGS "0000000b-00000000000000bb.idx") };
	assert_info(&got, &want, "after clear");
	/* the writer done: the next clear takes its segment too, and the one
	 * after that finds an empty cache, not an error */
	close(held);
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(deleted, 1);
	cr_assert_eq(busy, 0);
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(deleted + busy, 0);
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	rf_cache_info empty = { .found = 1 };
	assert_info(&got, &empty, "cleared");
	tu_rmrf(dir);
	tu_rmrf(out);
	free(dir);
	free(out);
}

/* ringfeed-cache/ or segments/ a symbolic link to a folder outside: an
 * error naming it, and nothing outside read or deleted. */
Test(cache_admin, links_are_not_followed)
{
	char *dir = tu_tmpdir("cadm"), *out = tu_tmpdir("cadm-out");
	/* outside: a whole cache of its own */
	make_cache(out);
	write_data(out, "00000001-0000000000000001", 10);
	char p[4096], target[4096];
	rf_cache_info got;
	uint64_t deleted, busy;
	char err[512];
	snprintf(target, sizeof(target), "%s/" RF_CACHE_DIR, out);
	snprintf(p, sizeof(p), "%s/" RF_CACHE_DIR, dir);
	cr_assert_eq(symlink(target, p), 0);
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), -ENOTDIR);
	cr_assert(strstr(err, p) && strstr(err, "symbolic link"), "%s", err);
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), -ENOTDIR);
	cr_assert(exists(out, SEGS "00000001-0000000000000001.data"));
	/* our folder, its segments/ a link */
	cr_assert_eq(unlink(p), 0);
	tu_write(dir, RF_CACHE_DIR "/FORMAT", RF_CACHE_FORMAT, strlen(RF_CACHE_FORMAT));
	snprintf(target, sizeof(target), "%s/" RF_CACHE_DIR "/segments", out);
	snprintf(p, sizeof(p), "%s/" RF_CACHE_DIR "/segments", dir);
	cr_assert_eq(symlink(target, p), 0);
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), -ENOTDIR);
	cr_assert(strstr(err, p), "%s", err);
	cr_assert_eq(rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err)), -ENOTDIR);
	cr_assert(exists(out, SEGS "00000001-0000000000000001.data"));
	/* DIR itself may be a link: the caller named it */
	cr_assert_eq(rfi_cache_stat(out, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.segments, 1);
	snprintf(p, sizeof(p), "%s/via-link", dir);
	cr_assert_eq(symlink(out, p), 0);
	cr_assert_eq(rfi_cache_stat(p, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.segments, 1);
	tu_rmrf(dir);
	tu_rmrf(out);
	free(dir);
	free(out);
}

/* ---- the command ---- */

/* Runs `$RINGFEED cache ARGS` (2>&1) into buf[len]: @return : its exit status. */
static int cli(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cli(char *buf, size_t len, const char *fmt, ...)
{
	const char *exe = getenv("RINGFEED");
	char args[4096], cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s' cache %s 2>&1", exe, args);
	FILE *f = popen(cmd, "r");
	cr_assert(f, "popen: %s", strerror(errno));
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	int st = pclose(f);
	cr_assert(WIFEXITED(st), "%s: did not exit", cmd);
	return WEXITSTATUS(st);
}

#define NEED_CLI()                                                                       \
	do {                                                                             \
		if (!getenv("RINGFEED"))                                                 \
			cr_skip_test("RINGFEED (the ringfeed command) is not set: meson "  \
				     "test sets it");                                    \
	} while (0)

Test(cache_admin, command)
{
	NEED_CLI();
	char *dir = tu_tmpdir("cadm"), *out = tu_tmpdir("cadm-out");
	int held;
	rf_cache_info want = layout(dir, out, &held);
	char buf[8192], s[256];

	cr_assert_eq(cli(buf, sizeof(buf), "'%s'", dir), 0, "%s", buf);
	cr_assert(strstr(buf, "3 segments (1 being written by a running loader)"), "%s", buf);
	cr_assert(strstr(buf, "5 ranges of 3 remote objects"), "%s", buf);
	cr_assert(strstr(buf, "(850 bytes) of data"), "%s", buf);
	snprintf(s, sizeof(s), "(%llu bytes) on disk", (unsigned long long)want.disk_bytes);
	cr_assert(strstr(buf, s), "%s", buf);
	cr_assert(strstr(buf, "1 damaged record:"), "%s", buf);

	cr_assert_eq(cli(buf, sizeof(buf), "--json '%s'", dir), 0, "%s", buf);
	snprintf(s, sizeof(s), "\"found\":true,\"segments\":3,\"writing\":1,\"ranges\":5,\"objects\":3,"
		 "\"data_bytes\":850,\"disk_bytes\":%llu,\"damaged\":1}\n",
		 (unsigned long long)want.disk_bytes);
	cr_assert(strstr(buf, s), "%s", buf);

	cr_assert_eq(cli(buf, sizeof(buf), "'%s' --clear", dir), 0, "%s", buf);
	cr_assert(strstr(buf, "deleted 2 segments; left 1 segment that running loaders are "
			      "writing"), "%s", buf);
	close(held);
	cr_assert_eq(cli(buf, sizeof(buf), "--clear --json '%s'", dir), 0, "%s", buf);
	cr_assert(strstr(buf, "\"deleted\":1,\"busy\":0}"), "%s", buf);
	cr_assert_eq(cli(buf, sizeof(buf), "'%s'", dir), 0, "%s", buf);
	cr_assert(strstr(buf, "0 segments (0 being written") && strstr(buf, "0 ranges of 0 remote "
									  "objects"), "%s", buf);
	cr_assert_null(strstr(buf, "damaged"), "%s", buf);

	/* a folder with no cache: said, not an error; --clear of it is one */
	cr_assert_eq(cli(buf, sizeof(buf), "'%s'", out), 0, "%s", buf);
	cr_assert(strstr(buf, "no ringfeed cache"), "%s", buf);
	cr_assert_eq(cli(buf, sizeof(buf), "--json '%s'", out), 0, "%s", buf);
	cr_assert(strstr(buf, "\"found\":false"), "%s", buf);
	cr_assert_eq(cli(buf, sizeof(buf), "--clear '%s'", out), 1, "%s", buf);
	cr_assert(strstr(buf, "ringfeed cache: ") && strstr(buf, out), "%s", buf);

	/* no DIR: exit 1, the message naming it */
	cr_assert_eq(cli(buf, sizeof(buf), "'%s/gone'", dir), 1, "%s", buf);
	cr_assert(strstr(buf, "ringfeed cache: ") && strstr(buf, "/gone") &&
		  strstr(buf, "No such file or directory"), "%s", buf);
	cr_assert_eq(cli(buf, sizeof(buf), "--clear '%s/gone'", dir), 1, "%s", buf);
	cr_assert(strstr(buf, "/gone"), "%s", buf);

	/* usage: exit 2, pointing at --help; --help itself */
	cr_assert_eq(cli(buf, sizeof(buf), "%s", ""), 2, "%s", buf);
	cr_assert(strstr(buf, "ringfeed cache: expected one DIR") &&
		  strstr(buf, "Try 'ringfeed cache --help'"), "%s", buf);
	cr_assert_eq(cli(buf, sizeof(buf), "--bogus '%s'", dir), 2, "%s", buf);
	cr_assert_eq(cli(buf, sizeof(buf), "--help"), 0, "%s", buf);
	cr_assert(!strncmp(buf, "usage: ringfeed cache DIR [--clear] [--json]\n", 45), "%s", buf);
	cr_assert(strstr(buf, "--clear") && strstr(buf, "--json"), "%s", buf);
	tu_rmrf(dir);
	tu_rmrf(out);
	free(dir);
	free(out);
}

/* ---- what is planted in the folder (issue 36) ---- */

/* Runs `$RINGFEED cache ARGS...` (its output dropped), bounded: its exit
 * status, or -1 when it ran past 30 s (killed then); *maxrss_kib its peak
 * resident memory. */
static int cli_bounded(long *maxrss_kib, const char *a1, const char *a2)
{
	const char *exe = getenv("RINGFEED");
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execl(exe, exe, "cache", a1, a2, (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	for (int i = 0; i < 300; i++) {
		if (wait4(pid, &st, WNOHANG, &ru) == pid) {
			*maxrss_kib = ru.ru_maxrss;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		struct timespec t = { 0, 100000000 };
		nanosleep(&t, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

Test(cache_admin, a_fifo_in_the_folder_hangs_nothing)
{
	NEED_CLI();
	char *dir = tu_tmpdir("cadm");
	make_cache(dir);
	rf_cache_rec r[2] = { rec(1, 0, 100, 0), rec(1, 100, 100, 100) };
	write_data(dir, "00000001-0000000000000001", 200);
	write_idx(dir, "00000001-0000000000000001", r, 2, 0);
	/* a segment being made (S.idx beside S.new), but S.new a FIFO; another
	 * whose S.idx is one */
	char path[4200];
	write_idx(dir, "00000002-0000000000000002", r, 1, 0);
	snprintf(path, sizeof(path), "%s/" SEGS "00000002-0000000000000002.new", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	write_data(dir, "00000003-0000000000000003", 200);
	snprintf(path, sizeof(path), "%s/" SEGS "00000003-0000000000000003.idx", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	long rss;
	cr_assert_eq(cli_bounded(&rss, dir, NULL), 0, "`ringfeed cache DIR` beside FIFOs");
	cr_assert_eq(cli_bounded(&rss, "--clear", dir), 0, "`ringfeed cache --clear DIR` beside FIFOs");
	cr_assert(!exists(dir, SEGS "00000001-0000000000000001.data"), "cleared");
	/* FORMAT a FIFO: no cache of ours, said at once */
	snprintf(path, sizeof(path), "%s/" RF_CACHE_DIR "/FORMAT", dir);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(cli_bounded(&rss, dir, NULL), 0, "`ringfeed cache DIR`, FORMAT a FIFO");
	cr_assert_neq(cli_bounded(&rss, "--clear", dir), -1, "`ringfeed cache --clear DIR`, FORMAT "
		      "a FIFO");
	tu_rmrf(dir);
	free(dir);
}

Test(cache_admin, a_huge_sparse_record_file_is_not_read_whole)
{
	NEED_CLI();
	char *dir = tu_tmpdir("cadm");
	make_cache(dir);
	rf_cache_rec r[1] = { rec(1, 0, 100, 0) };
	write_data(dir, "00000001-0000000000000001", 100);
	write_idx(dir, "00000001-0000000000000001", r, 1, 0);
	char path[4200];
	snprintf(path, sizeof(path), "%s/" SEGS "00000001-0000000000000001.idx", dir);
	cr_assert_eq(truncate(path, 3ll << 30), 0, "a sparse 3 GiB S.idx");
	long rss = 0;
	cr_assert_eq(cli_bounded(&rss, dir, NULL), 0);
	cr_assert_lt(rss, 256 << 10, "`ringfeed cache DIR` peaked at %ld KiB", rss);
	rf_cache_info got;
	char err[512];
	cr_assert_eq(rfi_cache_stat(dir, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.ranges, 1, "its one record");
	tu_rmrf(dir);
	free(dir);
}

/* ---- the key (issue 36) ---- */

Test(cache_admin, the_key_keeps_the_query_but_a_signature)
{
	const char *e = "\"5f0c-1d\"";
	uint64_t a = rfi_cache_object("http://h/get?f=a.tar", e, 100);
	uint64_t b = rfi_cache_object("http://h/get?f=b.tar", e, 100);
	cr_assert_neq(a, b, "two objects one path serves by their query");
	cr_assert_neq(rfi_cache_object("http://h/get", e, 100), a);
	cr_assert_neq(rfi_cache_object("http://h/get?f=a.tar&g=1", e, 100), a);
	cr_assert_neq(rfi_cache_object("http://h/get?f=a.tar&", e, 100),
		      rfi_cache_object("http://h/get?f=a.tar&&", e, 100));
	cr_assert_eq(rfi_cache_object("http://h/get?f=a.tar#x", e, 100), a, "the fragment is not sent");
	/* S3 presigned: each signing another signature, date and token */
	uint64_t s3 = rfi_cache_object("https://b.s3.amazonaws.com/k.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256"
				      "&X-Amz-Credential=A%2F1&X-Amz-Date=20260101T000000Z"
				      "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
				      "&X-Amz-Signature=abc", e, 100);
	cr_assert_eq(s3, rfi_cache_object("https://b.s3.amazonaws.com/k.tar?x-amz-algorithm=AWS4-HMAC-"
					 "SHA256&x-amz-credential=A%2F2&x-amz-date=20260102T000000Z"
					 "&x-amz-expires=60&x-amz-signedheaders=host"
					 "&x-amz-security-token=t&x-amz-signature=def", e, 100));
	cr_assert_eq(s3, rfi_cache_object("https://b.s3.amazonaws.com/k.tar", e, 100));
	cr_assert_neq(s3, rfi_cache_object("https://b.s3.amazonaws.com/k.tar?versionId=3", e, 100));
	/* CloudFront signed: Expires, Signature, Key-Pair-Id, Policy */
	uint64_t cf = rfi_cache_object("https://d.cloudfront.net/k.tar?f=1&Expires=1&Signature=s"
				      "&Key-Pair-Id=K", e, 100);
	cr_assert_eq(cf, rfi_cache_object("https://d.cloudfront.net/k.tar?Policy=p&f=1&Signature=t"
					 "&Key-Pair-Id=K", e, 100));
	cr_assert_neq(cf, rfi_cache_object("https://d.cloudfront.net/k.tar?f=2&Expires=1", e, 100));
	/* the ETag and the size still count */
	cr_assert_neq(a, rfi_cache_object("http://h/get?f=a.tar", "\"x\"", 100));
	cr_assert_neq(a, rfi_cache_object("http://h/get?f=a.tar", e, 101));
	cr_assert_eq(rfi_cache_object("http://h/get?f=a.tar", "", 100), 0, "no ETag: not cached");
}
