/* test_cache.c - the index cache: it loads the same index a walk builds and
 * gives the same batches; it notices a file added, removed or renamed (a
 * directory's mtime) and a changed manifest, and then walks and rewrites;
 * a truncated or corrupted cache, or one from another source or mode, is
 * never used. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "index/index.h"
#include "testutil.h"

static char *dir, *cache;
static void setup(void)
{
	dir = tu_tree("cache", 3, 5);
	cr_assert(asprintf(&cache, "%s.idx", dir) > 0);
}
static void teardown(void)
{
	unlink(cache);
	tu_rmrf(dir);
	free(dir);
	free(cache);
}

static int loaded(const rf_index *a, const rf_index *b)
{
	if (a->count != b->count || a->nclasses != b->nclasses)
		return 0;
	for (size_t i = 0; i < a->count; i++)
		if (strcmp(rf_index_path(a, i), rf_index_path(b, i)) ||
		    a->entries[i].size != b->entries[i].size || a->entries[i].label != b->entries[i].label)
			return 0;
	return 1;
}

/* Drains a loader; returns its ids and whether the index came from the cache. */
static uint64_t *run(const char *src, const char *c, size_t *n, uint32_t *cached)
{
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.index_cache = c;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_stats st;
	rf_loader_stats(l, &st);
	*cached = st.index_cached;
	rf_loader_destroy(l);
	return tu_drain_ids(&cfg, n);
}

/* Directory mtimes have nanosecond resolution on ext4, but not everywhere:
 * give the clock a tick before changing a directory. */
static void tick(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

Test(cache, same_index_and_batches, .init = setup, .fini = teardown)
{
	uint64_t files;
	char err[256];
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(files, 15);
	rf_index walked, fromcache;
	cr_assert_eq(rf_index_build(&walked, dir, 0, err, sizeof(err)), 0);
	cr_assert_eq(rf_index_cache_load(&fromcache, dir, 0, cache, err, sizeof(err)), 0, "%s", err);
	cr_assert(loaded(&walked, &fromcache));
	cr_assert_str_eq(fromcache.classes[2], walked.classes[2]);
	size_t n1, n2;
	uint32_t c1, c2;
	uint64_t *a = run(dir, NULL, &n1, &c1);
	uint64_t *b = run(dir, cache, &n2, &c2);
	cr_assert_eq(c1, 0);
	cr_assert_eq(c2, 1, "the loader used the cache");
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(a, b, n1 * sizeof(*a)), 0);
	free(a);
	free(b);
	rf_index_free(&walked);
	rf_index_free(&fromcache);
	/* another mode or another source: not used */
	cr_assert_eq(rf_index_cache_load(&fromcache, dir, 1, cache, err, sizeof(err)), 1);
	cr_assert_eq(rf_index_cache_load(&fromcache, "/elsewhere", 0, cache, err, sizeof(err)), 1);
	cr_assert(strstr(err, "another source"), "%s", err);
}

Test(cache, notices_changes_and_rewrites, .init = setup, .fini = teardown)
{
	char err[256];
	uint64_t files;
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	rf_index idx;
	/* added */
	tick();
	tu_jpeg(dir, "c1/new.jpg", 50, 40, 99);
	cr_assert_eq(rf_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 1);
	cr_assert(strstr(err, "c1") && strstr(err, "changed"), "%s", err);
	size_t n;
	uint32_t cached;
	free(run(dir, cache, &n, &cached));
	cr_assert_eq(cached, 0, "stale: walked");
	cr_assert_eq(n, 16, "the new file is in");
	free(run(dir, cache, &n, &cached));
	cr_assert_eq(cached, 1, "and the cache was rewritten");
	/* renamed, then removed */
	char a[512], b[512];
	snprintf(a, sizeof(a), "%s/c1/new.jpg", dir);
	snprintf(b, sizeof(b), "%s/c1/renamed.jpg", dir);
	tick();
	cr_assert_eq(rename(a, b), 0);
	cr_assert_eq(rf_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 1);
	free(run(dir, cache, &n, &cached));
	tick();
	cr_assert_eq(unlink(b), 0);
	cr_assert_eq(rf_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 1);
	free(run(dir, cache, &n, &cached));
	cr_assert_eq(cached, 0);
	cr_assert_eq(n, 15);
}

Test(cache, corrupt_or_truncated_is_not_used, .init = setup, .fini = teardown)
{
	char err[256];
	uint64_t files;
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	FILE *f = fopen(cache, "r+b");
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, len / 2, SEEK_SET);
	int c = fgetc(f);
	fseek(f, len / 2, SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);
	rf_index idx;
	cr_assert_eq(rf_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX);
	cr_assert(strstr(err, "corrupt"), "%s", err);
	size_t n;
	uint32_t cached;
	free(run(dir, cache, &n, &cached));
	cr_assert_eq(cached, 0);
	cr_assert_eq(n, 15);
	cr_assert_eq(truncate(cache, len / 3), 0);
	cr_assert_eq(rf_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX);
	tu_write(dir, "../not-a-cache", "hello", 5);
	char *other;
	cr_assert(asprintf(&other, "%s/../not-a-cache", dir) > 0);
	cr_assert_eq(rf_index_cache_load(&idx, dir, 0, other, err, sizeof(err)), RF_EINDEX);
	cr_assert(strstr(err, "not an index cache"), "%s", err);
	unlink(other);
	free(other);
	tu_assert_no_leaks();
}

Test(cache, manifest_change_is_noticed, .fini = teardown)
{
	dir = tu_tmpdir("cachem");
	cr_assert(asprintf(&cache, "%s.idx", dir) > 0);
	tu_jpeg(dir, "a.jpg", 40, 40, 1);
	tu_jpeg(dir, "b.jpg", 40, 40, 2);
	tu_write(dir, "m.tsv", "a.jpg\t0\n", 8);
	char *man;
	cr_assert(asprintf(&man, "%s/m.tsv", dir) > 0);
	char err[256];
	uint64_t files;
	cr_assert_eq(rf_index_write(man, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	rf_index idx;
	cr_assert_eq(rf_index_cache_load(&idx, man, 0, cache, err, sizeof(err)), 0, "%s", err);
	rf_index_free(&idx);
	tick();
	tu_write(dir, "m.tsv", "a.jpg\t0\nb.jpg\t1\n", 16);
	cr_assert_eq(rf_index_cache_load(&idx, man, 0, cache, err, sizeof(err)), 1);
	free(man);
}
