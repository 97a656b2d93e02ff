/* test_io.c - the I/O engine: every read path (io_uring with direct or plain
 * descriptors, the pread pool; O_DIRECT or buffered) gives byte-identical
 * batches; files of sizes around the O_DIRECT alignment read right; injected
 * short reads and EAGAIN are retried, EIO and ECANCELED reported (never hung
 * on); destroy with 4,000 reads in flight is prompt and leaks nothing. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "index/index.h"
#include "pipeline/feeder.h"
#include "testutil.h"

/* The read hook exists in test builds only (meson -Dtest_hooks=true). */
#if RF_TEST_HOOKS
#define set_hook(fn, ctx) rfi_feeder_set_test_hook(fn, ctx)
#else
#define set_hook(fn, ctx) ((void)(fn), (void)(ctx))
#endif

static char *dir;
static void setup(void) { dir = tu_tree("io", 3, 12); }
static void teardown(void)
{
	set_hook(NULL, NULL);
	tu_rmrf(dir);
	free(dir);
}

Test(io, every_path_identical, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 2;
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	rf_stats st;
	size_t n0;
	uint8_t *ref = tu_drain_bytes(&cfg, &n0, &st);
	cr_assert_eq(st.io_path, RF_IO_URING_FIXED, "auto picks direct descriptors here");
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++)
		for (int buffered = 0; buffered < 2; buffered++) {
			cfg.io_path = paths[p];
			cfg.no_direct_io = buffered;
			cfg.io_depth = p == 2 ? 5 : 32;
			cfg.pread_threads = 3;
			size_t n;
			uint8_t *got = tu_drain_bytes(&cfg, &n, &st);
			cr_assert_eq(st.io_path, (uint32_t)paths[p]);
			cr_assert_eq(st.direct_io, (uint32_t)!buffered);
			cr_assert_eq(st.bad_samples, 0);
			cr_assert_eq(n, n0);
			cr_assert_eq(memcmp(got, ref, n), 0, "path %d buffered %d differs", p, buffered);
			free(got);
		}
	free(ref);
	tu_assert_no_leaks();
}

Test(io, sizes_around_the_alignment, .fini = teardown)
{
	/* A tiny JPEG padded with zeros after its end marker to exact sizes:
	 * the decoder ignores the padding, so every size must give the pixels of
	 * the unpadded file. 0 and 1 byte are bad samples (empty, not a JPEG);
	 * past read_pool_bytes / 4 is a bad sample (too large). */
	dir = tu_tmpdir("sizes");
	uint8_t *j;
	size_t jl;
	tu_jpeg_kind(dir, "base.jpg", 8, 8, 3, TU_GRAY); /* one component: small tables */
	j = tu_read(dir, "base.jpg", &jl);
	cr_assert_lt(jl, 511);
	/* up to several reads per file (RF_READ_CHUNK = 1 MiB) */
	size_t sizes[] = { 511, 512, 4095, 4096, 4097, 65536, 65537, 262144, (1u << 20) + 1,
			   (3u << 20) + 5 };
	char *man, rel[64];
	cr_assert(asprintf(&man, "%s/m.tsv", dir) > 0);
	FILE *m = fopen(man, "w");
	fprintf(m, "base.jpg\t0\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p = calloc(1, sizes[i]);
		memcpy(p, j, jl);
		snprintf(rel, sizeof(rel), "s%zu.jpg", sizes[i]);
		tu_write(dir, rel, p, sizes[i]);
		fprintf(m, "%s\t0\n", rel);
		free(p);
	}
	tu_write(dir, "empty.jpg", "", 0);
	tu_write(dir, "one.jpg", "\xff", 1);
	uint8_t *big = calloc(1, (16 << 20) / 4 + 1); /* past read_pool_bytes / 4 */
	memcpy(big, j, jl);
	tu_write(dir, "big.jpg", big, (16 << 20) / 4 + 1);
	free(big);
	fprintf(m, "empty.jpg\t0\none.jpg\t0\nbig.jpg\t0\n");
	fclose(m);
	for (int buffered = 0; buffered < 2; buffered++) {
		rf_config cfg;
		tu_config(&cfg, man);
		cfg.shuffle = 0;
		cfg.batch_size = 14;
		cfg.read_pool_bytes = 16 << 20;
		cfg.no_direct_io = buffered;
		cfg.on_error = RF_ON_ERROR_SKIP;
		rf_loader *l;
		char err[256];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
		rf_batch *b;
		cr_assert_eq(rf_loader_next(l, &b), 0, "%s", rf_loader_error(l));
		cr_assert_eq(b->count, 14);
		for (uint32_t i = 1; i < b->count; i++)
			cr_assert_eq(memcmp(b->data + i * b->sample_bytes, b->data, b->sample_bytes), 0,
				     "place %u (sample %llu) differs from the unpadded file", i,
				     (unsigned long long)b->ids[i]);
		rf_stats st;
		rf_loader_stats(l, &st);
		cr_assert_geq(st.bad_samples, 3, "empty, one byte and too large are bad");
		rf_batch_release(l, b);
		rf_loader_destroy(l);
	}
	free(j);
	free(man);
}

/* Fault injection: which results the hook rewrites, and how often. */
typedef struct faults {
	int mode;            /* 0 short, 1 EAGAIN, 2 EIO, 3 ECANCELED */
	uint64_t victim;     /* the sample it targets */
	atomic_int hits;
} faults;

static int hook(void *ctx, uint64_t sample, int res, int64_t size)
{
	faults *f = ctx;
	if (sample != f->victim || res < 0)
		return res;
	int n = atomic_fetch_add(&f->hits, 1);
	switch (f->mode) {
	case 0: return n < 2 ? (int)(size / 2) : res;  /* short twice, then whole */
	case 1: return n < 2 ? -EAGAIN : res;          /* busy twice, then fine */
	case 2: return -EIO;                           /* always broken */
	default: return -ECANCELED;                    /* always cancelled */
	}
}

Test(io, injected_faults, .init = setup, .fini = teardown, .timeout = 60)
{
#if !RF_TEST_HOOKS
	cr_skip_test("the read hook is compiled into test builds only (meson -Dtest_hooks=true)");
#endif
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.shuffle = 0;
	rf_stats st;
	size_t n0;
	uint8_t *ref = tu_drain_bytes(&cfg, &n0, &st);
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++) {
		for (int mode = 0; mode < 4; mode++) {
			faults f = { .mode = mode, .victim = 5 };
			tu_bad_log rs = { 0 };
			set_hook(hook, &f);
			cfg.io_path = paths[p];
			cfg.on_sample_error = tu_on_bad;
			cfg.user = &rs;
			size_t n;
			uint8_t *got = tu_drain_bytes(&cfg, &n, &st);
			set_hook(NULL, NULL);
			cr_assert_eq(n, n0);
			if (mode < 2) { /* retried: nothing lost, nothing reported */
				cr_assert_eq(rs.n, 0, "path %d mode %d: %s", p, mode, rs.reason);
				cr_assert_eq(memcmp(got, ref, n), 0);
				cr_assert_eq(atomic_load(&f.hits), 3);
			} else {        /* reported once, replaced */
				cr_assert_eq(rs.n, 1, "path %d mode %d: %d reports", p, mode, rs.n);
				cr_assert(strstr(rs.reason, mode == 2 ? "Input/output error"
								    : "Operation canceled"), "%s", rs.reason);
				cr_assert_eq(st.bad_samples, 1);
			}
			free(got);
		}
	}
	/* a short read that never ends is a file that shrank: reported */
	faults f = { .mode = 0, .victim = 7 };
	atomic_store(&f.hits, -1000);
	tu_bad_log rs = { 0 };
	set_hook(hook, &f);
	cfg.io_path = RF_IO_AUTO;
	cfg.user = &rs;
	size_t n;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert_eq(rs.n, 1);
	cr_assert(strstr(rs.reason, "shrank"), "%s", rs.reason);
	free(ref);
	tu_assert_no_leaks();
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int submitted_4000(void *l)
{
	rf_stats st;
	rf_loader_stats(l, &st);
	return st.reads_submitted >= 4000;
}

Test(io, destroy_with_4000_reads_in_flight, .fini = teardown, .timeout = 120)
{
	dir = tu_tmpdir("deep");
	char rel[64];
	for (int i = 0; i < 4200; i++) {
		snprintf(rel, sizeof(rel), "c%d/i%05d.jpg", i % 4, i);
		tu_jpeg(dir, rel, 16, 16, (uint64_t)i + 1);
	}
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.resize = 16;
		cfg.crop = 16;
		cfg.io_depth = 4096;
		cfg.batch_size = 64;
		cfg.prefetch = 66;
		cfg.threads = 1;
		cfg.read_pool_bytes = 64 << 20;
		cfg.io_path = paths[p];
		rf_loader *l;
		char err[256];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
		/* wait for the ring to submit 4,000 reads (however loaded the machine) */
		rf_stats st;
		cr_assert(tu_wait_until(submitted_4000, l, 60), "path %d: never 4,000 reads submitted", p);
		rf_loader_stats(l, &st);
		double t0 = now();
		rf_loader_destroy(l);
		cr_assert_lt(now() - t0, TU_DESTROY_HUNG_S, "path %d: destroy took %.3f s", p, now() - t0);
	}
	tu_assert_no_leaks();
}

/* Replaces dir/rel by a FIFO, keeping its folder's times, so that an index
 * cache still matches the folder. */
static void fifo_in_place_of(const char *root, const char *rel)
{
	char *path, *folder;
	cr_assert(asprintf(&path, "%s/%s", root, rel) > 0);
	folder = strdup(path);
	*strrchr(folder, '/') = '\0';
	struct stat before;
	cr_assert_eq(stat(folder, &before), 0);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkfifo(path, 0644), 0, "mkfifo %s", path);
	struct timespec times[2] = { before.st_atim, before.st_mtim };
	cr_assert_eq(utimensat(AT_FDCWD, folder, times, 0), 0);
	free(path);
	free(folder);
}

/* A FIFO where an indexed file was is a bad sample on every read path, at
 * once (never a wait for a writer), and does not switch the run to buffered
 * reads. The deadline is the test's .timeout. */
Test(io, fifo_in_place_of_a_file_is_a_bad_sample, .init = setup, .fini = teardown,
     .timeout = 60)
{
	char *cache;
	cr_assert(asprintf(&cache, "%s.idx", dir) > 0);
	char err[256];
	cr_assert_eq(rf_index_write(dir, 0, cache, NULL, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	fifo_in_place_of(dir, "c1/img_003.jpg");
	rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 3; p++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.index_cache = cache;
		cfg.io_path = paths[p];
		tu_bad_log rs = { 0 };
		cfg.on_sample_error = tu_on_bad;
		cfg.user = &rs;
		rf_stats st;
		size_t n;
		free(tu_drain_bytes(&cfg, &n, &st));
		cr_assert_eq(st.index_cached, 1, "the cache still matches");
		cr_assert_eq(st.bad_samples, 1, "path %d", p);
		cr_assert_eq(rs.n, 1);
		cr_assert(strstr(rs.reason, "not a regular file (a FIFO)"), "path %d: %s", p, rs.reason);
		cr_assert_eq(st.direct_io, 1, "path %d: one FIFO does not turn O_DIRECT off", p);
	}
	unlink(cache);
	free(cache);
	tu_assert_no_leaks();
}

/* The descriptor tests run their loaders in a child process: with the
 * descriptors exhausted, Criterion's own reporting (its IPC) could fail in
 * the test's process. The child says what went wrong on stderr and exits
 * non-zero; it asserts nothing. */
static int in_child(int (*fn)(void), const char *what)
{
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a test killed on timeout */
		_exit(fn());
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child status %d", what, status);
	return 0;
}

#define CHILD_CHECK(cond, ...)                                                     \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                      \
			return 1;                                                  \
		}                                                                  \
	} while (0)

/* Drains l into buf (cap bytes); returns the last rf_loader_next() result. */
static int drain_into(rf_loader *l, uint8_t *buf, size_t cap, size_t *n)
{
	rf_batch *b;
	int r;
	*n = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		size_t len = (size_t)b->count * b->sample_bytes;
		if (*n + len <= cap)
			memcpy(buf + *n, b->data, len);
		*n += len;
		rf_batch_release(l, b);
	}
	return r;
}

/* Out of descriptors is the system's condition, not the samples': with a
 * descriptor limit far below io_depth every read path delivers exactly the
 * batches of an unlimited run, with no bad sample, or fails naming the
 * limit; it never replaces good samples. */
static int limit_child(void)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.prefetch = 16;
	cfg.io_depth = 4096;
	cfg.read_pool_bytes = 16 << 20;
	cfg.epochs = 2;
	cfg.pread_threads = 64;
	size_t cap = 64 << 20, n0, n;
	uint8_t *ref = malloc(cap), *got = malloc(cap);
	rf_loader *l;
	char err[256];
	CHILD_CHECK(rf_loader_create(&l, &cfg, err, sizeof(err)) == 0, "create: %s", err);
	CHILD_CHECK(drain_into(l, ref, cap, &n0) == RF_EOF && n0 <= cap, "reference run");
	rf_loader_destroy(l);

	/* the hard limit too: liburing raises the soft one to register files */
	struct rlimit low = { 32, 32 };
	CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit");
	rf_io_path paths[] = { RF_IO_AUTO, RF_IO_URING_PLAIN, RF_IO_PREAD };
	int delivered = 0;
	for (int p = 0; p < 3; p++) {
		cfg.io_path = paths[p];
		int r = rf_loader_create(&l, &cfg, err, sizeof(err));
		if (r) { /* too few descriptors to start: a clear error, not a run */
			CHILD_CHECK(r == -EMFILE || r == RF_ENOIOURING, "path %d: %s", p, err);
			continue;
		}
		r = drain_into(l, got, cap, &n);
		if (r == RF_EOF) {
			rf_stats st;
			rf_loader_stats(l, &st);
			CHILD_CHECK(st.bad_samples == 0, "path %d: %llu good samples counted bad", p,
				    (unsigned long long)st.bad_samples);
			CHILD_CHECK(n == n0 && !memcmp(got, ref, n0), "path %d: other samples delivered", p);
			delivered++;
		} else {
			CHILD_CHECK(strstr(rf_loader_error(l), "ulimit -n"), "path %d: %s: %s", p,
				    rf_strerror(r), rf_loader_error(l));
		}
		rf_loader_destroy(l);
	}
	CHILD_CHECK(delivered > 0, "no path delivered under the limit");
	free(ref);
	free(got);
	return 0;
}

Test(io, descriptor_limit_never_replaces_good_samples, .fini = teardown, .timeout = 120)
{
	dir = tu_tree("fds", 4, 60); /* 240 files */
	in_child(limit_child, "limit 32");
}

/* Every descriptor taken (by the application, say) once the loader runs:
 * the stream fails naming the limit; no sample is counted bad. */
static int exhausted_child(void)
{
	struct rlimit lim = { 1024, 1024 };
	setrlimit(RLIMIT_NOFILE, &lim); /* fewer dups */
	rf_io_path paths[] = { RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int p = 0; p < 2; p++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.io_path = paths[p];
		cfg.prefetch = 2;
		cfg.epochs = 0;
		rf_loader *l;
		char err[256];
		CHILD_CHECK(rf_loader_create(&l, &cfg, err, sizeof(err)) == 0, "create: %s", err);
		rf_batch *b;
		CHILD_CHECK(rf_loader_next(l, &b) == 0, "first batch");
		/* Every descriptor taken, and taken again as the loader closes
		 * the files it had open: it rightly reads on with any it gets
		 * back (fewer reads in flight), and in an endless run that was
		 * a test that never ended (a child spinning at full CPU after
		 * its timeout). Bounded, so that it fails rather than hangs. */
		static int fds[4096];
		int n = 0, r;
		long batches = 0;
		do {
			while (n < 4096 && (fds[n] = dup(0)) >= 0)
				n++;
			rf_batch_release(l, b); /* batches read before the fds ran out */
		} while ((r = rf_loader_next(l, &b)) == 0 && ++batches < 100000);
		for (int i = 0; i < n; i++)
			close(fds[i]);
		CHILD_CHECK(n < 4096, "the descriptor limit is too high for this test");
		CHILD_CHECK(r != 0, "path %d: still reading after %ld batches", p, batches);
		CHILD_CHECK(r == -EMFILE, "path %d: %s", p, rf_strerror(r));
		CHILD_CHECK(strstr(rf_loader_error(l), "ulimit -n"), "%s", rf_loader_error(l));
		rf_stats st;
		rf_loader_stats(l, &st);
		CHILD_CHECK(st.bad_samples == 0, "path %d: %llu bad", p, (unsigned long long)st.bad_samples);
		rf_loader_destroy(l);
	}
	return 0;
}

Test(io, no_descriptor_left_fails_naming_the_limit, .init = setup, .fini = teardown,
     .timeout = 60)
{
	in_child(exhausted_child, "descriptors exhausted");
}

/* A manifest line naming a FIFO: the reason says what it is (it said
 * "cannot stat: Invalid argument"). */
Test(io, fifo_in_a_manifest_is_named, .init = setup, .fini = teardown, .timeout = 60)
{
	char *fifo, *man;
	cr_assert(asprintf(&fifo, "%s/pipe.jpg", dir) > 0);
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	const char *text = "c0/img_000.jpg\t0\nc0/img_001.jpg\t0\npipe.jpg\t1\nc1/img_000.jpg\t1\n";
	tu_write(dir, "m.tsv", text, strlen(text));
	cr_assert(asprintf(&man, "%s/m.tsv", dir) > 0);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.batch_size = 2;
	tu_bad_log rs = { 0 };
	cfg.on_sample_error = tu_on_bad;
	cfg.user = &rs;
	rf_stats st;
	size_t n;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert_eq(rs.n, 1);
	cr_assert(strstr(rs.reason, "not a regular file (a FIFO)"), "%s", rs.reason);
	unlink(fifo);
	free(fifo);
	free(man);
}
