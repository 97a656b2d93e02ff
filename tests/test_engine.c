/* test_engine.c - the read engine alone (src/io/engine.h), with no loader:
 * ranged reads at any offset and length give the file's bytes at
 * buf + skip on every back end, with and without O_DIRECT, by path (open ->
 * read -> close) and through a kept file; a read past the end gives what is
 * there; a missing file fails at the open; tags come back once each; an
 * engine destroyed with reads in flight returns. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "io/engine.h"
#include "testutil.h"
#include "util/util.h"

#define FILE_BYTES (3u << 20) /* larger than RF_IO_CHUNK: several reads per span */
#define SLOTS 64
#define SLOT_BYTES ((2u << 20) + 8192)

static char *dir;
static int dirfd_;
static uint8_t *content;
static uint8_t *mem; /* SLOTS buffers of SLOT_BYTES, 4 KiB aligned */
static int wake;

static void setup(void)
{
	dir = tu_tmpdir("engine");
	content = tu_noise(FILE_BYTES, 88172645463325252ull);
	tu_write(dir, "data.bin", content, FILE_BYTES);
	tu_write(dir, "small.bin", content, 5000);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dirfd_, 0);
	cr_assert_eq(posix_memalign((void **)&mem, 4096, (size_t)SLOTS * SLOT_BYTES), 0);
	wake = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(wake, 0);
}

static void teardown(void)
{
	close(wake);
	close(dirfd_);
	free(mem);
	free(content);
	tu_rmrf(dir);
	free(dir);
}

static rf_io *engine(rf_io_path path, int direct, uint32_t depth)
{
	rf_io_params p = { .path = path, .depth = depth, .max_read = SLOT_BYTES, .max_files = 4,
			   .direct = direct, .probe_dirfd = dirfd_, .probe_path = "data.bin",
			   .pread_threads = 4, .wake_fd = wake, .name = dir,
			   .log_level = RF_LOG_ERROR };
	rf_io *io;
	char err[256] = "";
	int r = rfi_io_create(&io, &p, err, sizeof(err));
	if (r == RF_ENOIOURING)
		return NULL;
	cr_assert_eq(r, 0, "%s", err);
	rf_io_region reg = { mem, (size_t)SLOTS * SLOT_BYTES };
	rfi_io_register_regions(io, &reg, 1);
	return io;
}

/* Waits for the next finished read (a deadline, never a sleep). */
static rf_io_done next_done(rf_io *io)
{
	rf_io_done d;
	uint64_t deadline = rfi_now_ns() + 30ull * 1000000000ull;
	while (rfi_io_reap(io, &d, 1) == 0) {
		cr_assert_lt(rfi_now_ns(), deadline, "no read finished in 30 s");
		cr_assert_eq(rfi_io_wait(io), 0);
	}
	return d;
}

/* Results reaped while waiting for room, handed out by next_done first. */
static rf_io_done early[4 * SLOTS];
static uint32_t nearly, early_first;

static rf_io_done take_done(rf_io *io)
{
	if (early_first < nearly)
		return early[early_first++];
	return next_done(io);
}

/* Submits rd once the engine has room; a read number is free only once its
 * result was reaped, so results are reaped (and kept) while waiting. */
static void submit(rf_io *io, const rf_io_read *rd)
{
	uint64_t deadline = rfi_now_ns() + 30ull * 1000000000ull;
	size_t span = rfi_io_span(io, rd->offset, rd->len);
	cr_assert_leq(span, SLOT_BYTES);
	while (!rfi_io_ready(io, span)) {
		cr_assert_lt(rfi_now_ns(), deadline, "the engine never had room");
		cr_assert_eq(rfi_io_wait(io), 0);
		cr_assert_lt(nearly, 4 * SLOTS);
		nearly += rfi_io_reap(io, early + nearly, 4 * SLOTS - nearly);
	}
	rfi_io_submit(io, rd);
}

static const struct { uint64_t off; uint32_t len; } ranges[] = {
	{ 0, 1 }, { 0, 4096 }, { 1, 100 }, { 4095, 2 }, { 4097, 5000 }, { 511, 513 },
	{ 12345, 1u << 20 }, { 3, (1u << 20) + 3 }, { (1u << 20) - 7, (2u << 20) + 1 },
	{ FILE_BYTES - 10, 10 }, { 777777, 65536 },
};
#define NRANGES (sizeof(ranges) / sizeof(ranges[0]))

/* Every range, through path chains and through a kept file, all in flight
 * at once; each result checked against the file. */
static void check_ranges(rf_io_path path, int direct)
{
	rf_io *io = engine(path, direct, 16);
	if (!io)
		cr_skip_test("no io_uring here");
	int file = rfi_io_file_open(io, dirfd_, "data.bin");
	cr_assert_geq(file, 0, "%s", strerror(-file));
	int seen[2 * NRANGES] = { 0 };
	nearly = early_first = 0;
	for (uint32_t i = 0; i < 2 * NRANGES; i++) {
		uint32_t r = i % NRANGES;
		rf_io_read rd = { .dirfd = dirfd_, .path = i < NRANGES ? "data.bin" : NULL,
				  .file = file, .offset = ranges[r].off, .len = ranges[r].len,
				  .buf = mem + (size_t)i * SLOT_BYTES, .tag = 1000 + i };
		submit(io, &rd);
	}
	for (uint32_t k = 0; k < 2 * NRANGES; k++) {
		rf_io_done d = take_done(io);
		cr_assert(d.tag >= 1000 && d.tag < 1000 + 2 * NRANGES, "tag %llu",
			  (unsigned long long)d.tag);
		uint32_t i = (uint32_t)(d.tag - 1000), r = i % NRANGES;
		cr_assert_eq(seen[i]++, 0, "tag %u twice", i);
		cr_assert_eq(d.res, (int32_t)ranges[r].len, "path %d direct %d range %u: res %d",
			     path, direct, r, d.res);
		if (!direct)
			cr_assert_eq(d.skip, 0);
		cr_assert_eq(memcmp(mem + (size_t)i * SLOT_BYTES + d.skip, content + ranges[r].off,
				    ranges[r].len), 0, "path %d direct %d range %u: bytes differ",
			     path, direct, r);
	}
	rfi_io_file_close(io, file);
	rfi_io_destroy(io);
}

Test(engine, ranges_fixed, .init = setup, .fini = teardown, .timeout = 60)
{
	check_ranges(RF_IO_URING_FIXED, 1);
	check_ranges(RF_IO_URING_FIXED, 0);
}

Test(engine, ranges_plain, .init = setup, .fini = teardown, .timeout = 60)
{
	check_ranges(RF_IO_URING_PLAIN, 1);
	check_ranges(RF_IO_URING_PLAIN, 0);
}

Test(engine, ranges_pread, .init = setup, .fini = teardown, .timeout = 60)
{
	check_ranges(RF_IO_PREAD, 1);
	check_ranges(RF_IO_PREAD, 0);
}

/* A read that runs past the end gives what is there (fewer bytes); a
 * missing file fails at the open. */
Test(engine, end_of_file_and_missing, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++) {
		rf_io *io = engine(paths[p], 1, 4);
		if (!io)
			continue;
		submit(io, &(rf_io_read){ .dirfd = dirfd_, .path = "small.bin", .offset = 4000,
					  .len = 4000, .buf = mem, .tag = 1 });
		submit(io, &(rf_io_read){ .dirfd = dirfd_, .path = "small.bin", .offset = 0,
					  .len = 5001, .buf = mem + SLOT_BYTES, .tag = 2 });
		submit(io, &(rf_io_read){ .dirfd = dirfd_, .path = "nope.bin", .offset = 0,
					  .len = 10, .buf = mem + 2 * SLOT_BYTES, .tag = 3 });
		nearly = early_first = 0;
		for (int k = 0; k < 3; k++) {
			rf_io_done d = take_done(io);
			if (d.tag == 1) {
				cr_assert_eq(d.res, 1000, "path %d: %d", p, d.res);
				cr_assert_eq(memcmp(mem + d.skip, content + 4000, 1000), 0);
			} else if (d.tag == 2) {
				cr_assert_eq(d.res, 5000, "path %d: %d", p, d.res);
			} else {
				cr_assert_eq(d.res, -ENOENT, "path %d: %d", p, d.res);
				cr_assert_eq(d.step, RF_IO_STEP_OPEN);
			}
		}
		rfi_io_destroy(io);
	}
}

/* Many more reads than the depth: each tag comes back exactly once. */
Test(engine, many_reads_each_once, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_io *io = engine(RF_IO_AUTO, 1, 8);
	enum { N = 2000 };
	static uint8_t seen[N];
	memset(seen, 0, sizeof(seen));
	uint32_t sent = 0, got = 0;
	uint32_t inflight_buf[SLOTS]; /* tag of the read using each buffer */
	uint32_t free_bufs[SLOTS], nfree = 0;
	for (uint32_t b = 0; b < 8; b++)
		free_bufs[nfree++] = b;
	while (got < N) {
		while (sent < N && nfree && rfi_io_ready(io, rfi_io_span(io, sent * 7u, 4096))) {
			uint32_t b = free_bufs[--nfree];
			inflight_buf[b] = sent;
			rfi_io_submit(io, &(rf_io_read){ .dirfd = dirfd_, .path = "data.bin",
							.offset = sent * 7u, .len = 4096,
							.buf = mem + (size_t)b * SLOT_BYTES,
							.tag = (uint64_t)b << 32 | sent });
			sent++;
		}
		rf_io_done d = next_done(io);
		uint32_t b = (uint32_t)(d.tag >> 32), i = (uint32_t)d.tag;
		cr_assert_eq(inflight_buf[b], i);
		cr_assert_eq(seen[i]++, 0, "read %u finished twice", i);
		cr_assert_eq(d.res, 4096);
		cr_assert_eq(memcmp(mem + (size_t)b * SLOT_BYTES + d.skip, content + i * 7u, 4096), 0);
		free_bufs[nfree++] = b;
		got++;
	}
	rfi_io_destroy(io);
}

/* Destroy with every read in flight: returns (cancels, waits, frees). */
Test(engine, destroy_with_reads_in_flight, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++) {
		rf_io *io = engine(paths[p], 1, SLOTS);
		if (!io)
			continue;
		for (uint32_t i = 0; i < SLOTS && rfi_io_ready(io, SLOT_BYTES); i++)
			rfi_io_submit(io, &(rf_io_read){ .dirfd = dirfd_, .path = "data.bin",
							.offset = i, .len = (2u << 20),
							.buf = mem + (size_t)i * SLOT_BYTES, .tag = i });
		rf_io_info info;
		rfi_io_get_info(io, &info);
		cr_assert_gt(info.inflight, 0);
		rfi_io_destroy(io);
	}
	rfi_io_destroy(NULL);
}
