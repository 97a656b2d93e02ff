/* test_cache.c - the index cache: it loads the same index a walk builds and
 * gives the same batches; it notices a file added, removed or renamed (a
 * directory's mtime) and a changed manifest, and then walks and rewrites;
 * a truncated or corrupted cache, or one from another source or mode, is
 * never used. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "index/index.h"
#include "source/source.h"
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
		if (strcmp(rfi_index_path(a, i), rfi_index_path(b, i)) ||
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

/* After a change to root/rel (a folder or the manifest): gives it an mtime
 * no earlier stamp can hold, so that the change shows even where the clock
 * is coarser than the test (no sleeping for the clock to move). */
static void bump(const char *root, const char *rel)
{
	static long k;
	char p[1024];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	struct timespec t[2] = { { .tv_sec = 1000000000 + ++k }, { .tv_sec = 1000000000 + k } };
	cr_assert_eq(utimensat(AT_FDCWD, p, t, 0), 0, "utimensat %s", p);
}

Test(cache, same_index_and_batches, .init = setup, .fini = teardown)
{
	uint64_t files;
	char err[256];
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(files, 15);
	rf_index walked, fromcache;
	cr_assert_eq(rfi_index_build(&walked, dir, 0, err, sizeof(err)), 0);
	cr_assert_eq(rfi_index_cache_load(&fromcache, dir, 0, cache, err, sizeof(err)), 0, "%s", err);
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
	rfi_index_free(&walked);
	rfi_index_free(&fromcache);
	/* another mode or another source: not used */
	cr_assert_eq(rfi_index_cache_load(&fromcache, dir, 1, cache, err, sizeof(err)), 1);
	cr_assert_eq(rfi_index_cache_load(&fromcache, "/elsewhere", 0, cache, err, sizeof(err)), 1);
	cr_assert(strstr(err, "another source"), "%s", err);
}

/* The kind is the cache's word, never guessed from the records: it comes
 * back as written, and a cache that names no kind is walked again (and
 * rewritten with the kind that walk found). */
Test(cache, keeps_the_kind, .init = setup, .fini = teardown)
{
	char err[256];
	rf_index idx, got;
	cr_assert_eq(rfi_index_build(&idx, dir, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.kind, RF_KIND_FILES);
	cr_assert_eq(rfi_index_cache_write(&idx, dir, cache, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rfi_index_cache_load(&got, dir, 0, cache, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.kind, RF_KIND_FILES);
	rfi_index_free(&got);

	idx.kind = RF_KIND_NONE;
	cr_assert_eq(rfi_index_cache_write(&idx, dir, cache, err, sizeof(err)), 0, "%s", err);
	size_t n1, n2;
	uint32_t c1, c2;
	uint64_t *a = run(dir, cache, &n1, &c1);
	cr_assert_eq(c1, 0, "a cache of no kind was used");
	uint64_t *b = run(dir, cache, &n2, &c2);
	cr_assert_eq(c2, 1, "the walk rewrote the cache");
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(a, b, n1 * sizeof(*a)), 0);
	cr_assert_eq(rfi_index_cache_load(&got, dir, 0, cache, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.kind, RF_KIND_FILES);
	free(a);
	free(b);
	rfi_index_free(&got);
	rfi_index_free(&idx);
}

Test(cache, notices_changes_and_rewrites, .init = setup, .fini = teardown)
{
	char err[256];
	uint64_t files;
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	rf_index idx;
	/* added */
	tu_jpeg(dir, "c1/new.jpg", 50, 40, 99);
	bump(dir, "c1");
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 1);
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
	cr_assert_eq(rename(a, b), 0);
	bump(dir, "c1");
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 1);
	free(run(dir, cache, &n, &cached));
	cr_assert_eq(unlink(b), 0);
	bump(dir, "c1");
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 1);
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
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX);
	cr_assert(strstr(err, "corrupt"), "%s", err);
	size_t n;
	uint32_t cached;
	free(run(dir, cache, &n, &cached));
	cr_assert_eq(cached, 0);
	cr_assert_eq(n, 15);
	cr_assert_eq(truncate(cache, len / 3), 0);
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX);
	tu_write(dir, "../not-a-cache", "hello", 5);
	char *other;
	cr_assert(asprintf(&other, "%s/../not-a-cache", dir) > 0);
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, other, err, sizeof(err)), RF_EINDEX);
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
	cr_assert_eq(rfi_index_cache_load(&idx, man, 0, cache, err, sizeof(err)), 0, "%s", err);
	rfi_index_free(&idx);
	tu_write(dir, "m.tsv", "a.jpg\t0\nb.jpg\t1\n", 16);
	bump(dir, "m.tsv");
	cr_assert_eq(rfi_index_cache_load(&idx, man, 0, cache, err, sizeof(err)), 1);
	free(man);
}

/* Writes idx, altered by alter(), as a cache with a valid checksum (what a
 * hostile or buggy writer could produce), and expects it refused. */
static void expect_refused(void (*alter)(rf_index *), const char *what)
{
	char err[256];
	rf_index idx, got;
	cr_assert_eq(rfi_index_build(&idx, dir, 0, err, sizeof(err)), 0, "%s", err);
	alter(&idx);
	cr_assert_eq(rfi_index_cache_write(&idx, dir, cache, err, sizeof(err)), 0, "%s", err);
	int r = rfi_index_cache_load(&got, dir, 0, cache, err, sizeof(err));
	cr_assert_eq(r, RF_EINDEX, "%s: loaded (%d)", what, r);
	cr_assert(strstr(err, "corrupt"), "%s: %s", what, err);
	size_t n;
	uint32_t cached;
	free(run(dir, cache, &n, &cached)); /* the loader walks instead */
	cr_assert_eq(cached, 0, "%s", what);
	cr_assert_eq(n, 15);
	rfi_index_free(&idx);
}

static void path_off_wraps(rf_index *x) { x->entries[3].path_off = UINT64_MAX - 2; }
static void path_past_arena(rf_index *x) { x->entries[3].path_off = x->paths_len; }
static void arena_without_nul(rf_index *x)
{
	x->entries[x->count - 1].path_len++; /* its NUL counted as a path byte */
	x->paths_len--;                       /* and cut from the arena */
}
static void size_not_errno(rf_index *x) { x->entries[2].size = -(INT64_C(1) << 62); }
static void label_past_classes(rf_index *x) { x->entries[1].label = (int32_t)x->nclasses; }
static void label_negative(rf_index *x) { x->entries[1].label = -7; }

Test(cache, crafted_records_are_refused, .init = setup, .fini = teardown, .timeout = 60)
{
	expect_refused(path_off_wraps, "path offset near 2^64");
	expect_refused(path_past_arena, "path offset past the arena");
	expect_refused(arena_without_nul, "arena without its last NUL");
	expect_refused(size_not_errno, "size -(2^62)");
	expect_refused(label_past_classes, "label past the classes");
	expect_refused(label_negative, "label -7");
	tu_assert_no_leaks();
}

/* A flipped bit in a count of the header is caught before anything is
 * allocated for it (the file holds no 2^27 stamps). */
Test(cache, flipped_counts_are_refused, .init = setup, .fini = teardown)
{
	char err[256];
	uint64_t files;
	/* offsets: magic 8, version 4, any 4, kind 4, count 8, paths_len 8, classes 4, stamps 4 */
	long fields[] = { 36, 40 };
	for (int f = 0; f < 2; f++)
		for (int bit = 0; bit < 32; bit += 3) {
			cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0);
			FILE *fp = fopen(cache, "r+b");
			uint32_t v;
			fseek(fp, fields[f], SEEK_SET);
			cr_assert_eq(fread(&v, 4, 1, fp), 1);
			v ^= 1u << bit;
			fseek(fp, fields[f], SEEK_SET);
			fwrite(&v, 4, 1, fp);
			fclose(fp);
			rf_index idx;
			cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX,
				     "field at %ld bit %d", fields[f], bit);
		}
	tu_assert_no_leaks();
}

/* A file that is not a cache of this version costs nothing (it leaked the
 * canonical source path once). */
Test(cache, other_version_leaks_nothing, .init = setup, .fini = teardown)
{
	char err[256];
	uint64_t files;
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0);
	FILE *fp = fopen(cache, "r+b");
	uint32_t v = 1;
	fseek(fp, 8, SEEK_SET);
	fwrite(&v, 4, 1, fp);
	fclose(fp);
	rf_index idx;
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX);
	cr_assert(strstr(err, "version"), "%s", err);
	tu_assert_no_leaks();
}

/* PNG and WebP files are samples of a tree, in the walk and in its cache;
 * a cache of the version before them (which left them out) is not used. */
Test(cache, png_and_webp_files_are_indexed_and_an_older_cache_is_walked_again, .init = setup,
     .fini = teardown)
{
	char err[256];
	uint64_t files;
	tu_write(dir, "c0/extra.png", "\x89PNG\r\n\x1a\n", 8);
	tu_write(dir, "c1/extra.WEBP", "RIFF\0\0\0\0WEBP", 12);
	cr_assert_eq(rf_index_write(dir, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(files, 17);
	rf_index idx;
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 17);
	rfi_index_free(&idx);
	FILE *fp = fopen(cache, "r+b");
	uint32_t v = 5;
	fseek(fp, 8, SEEK_SET);
	fwrite(&v, 4, 1, fp);
	fclose(fp);
	cr_assert_eq(rfi_index_cache_load(&idx, dir, 0, cache, err, sizeof(err)), RF_EINDEX);
	cr_assert(strstr(err, "version"), "%s", err);
}
