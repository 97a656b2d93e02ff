/* test_walk_hidden.c - datasets as people have them: the ImageFolder and raw
 * walks skip hidden names (.DS_Store, AppleDouble ._x.jpg, .nfs* files,
 * hidden folders) unless include_hidden is set, and an index cache built
 * one way is not loaded the other way; a symlink that leads back to one of
 * its own folders is reported as a loop, one that leads elsewhere is walked. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char *dir;

static void setup(void)
{
	dir = tu_tree("hidden", 2, 3); /* c0/img_000.jpg ... c1/img_002.jpg: 6 samples */
	tu_write(dir, "c0/.DS_Store", "\0\0\0\1Bud1", 8);
	tu_write(dir, "c0/._img_000.jpg", "\0\5\26\7AppleDouble", 16); /* a JPEG name, not a JPEG */
	tu_write(dir, "c1/.nfs0000000001", "x", 1);
	tu_mkdirs(dir, ".Trash/c9");
	tu_jpeg(dir, ".Trash/c9/img.jpg", 48, 48, 7); /* a hidden class folder */
	tu_mkdirs(dir, "c1/.thumbs");
	tu_jpeg(dir, "c1/.thumbs/img.jpg", 48, 48, 8);
}

static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

static uint64_t samples(rf_config *cfg, uint64_t *bad, int *classes)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r, maxlabel = -1;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++)
			maxlabel = b->labels[i] > maxlabel ? b->labels[i] : maxlabel;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	rf_stats st;
	rf_loader_stats(l, &st);
	rf_loader_destroy(l);
	*bad = st.bad_samples;
	*classes = maxlabel + 1;
	return st.samples_total;
}

Test(walk_hidden, skipped_by_default, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	uint64_t bad;
	int classes;
	cr_assert_eq(samples(&cfg, &bad, &classes), 6);
	cr_assert_eq(bad, 0, "the AppleDouble file was indexed");
	cr_assert_eq(classes, 2);
}

Test(walk_hidden, included_when_asked, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.include_hidden = 1;
	uint64_t bad;
	int classes;
	/* + ._img_000.jpg, .thumbs/img.jpg and the .Trash class */
	cr_assert_eq(samples(&cfg, &bad, &classes), 9);
	cr_assert_eq(classes, 3);
	cr_assert_geq(bad, 1, "the AppleDouble file is no JPEG");
}

Test(walk_hidden, raw_mode_too, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.raw = 1;
	uint64_t bad;
	int classes;
	cr_assert_eq(samples(&cfg, &bad, &classes), 6);
	cfg.include_hidden = 1;
	/* + .DS_Store, ._img_000.jpg, .nfs..., .thumbs/img.jpg, .Trash/c9/img.jpg */
	cr_assert_eq(samples(&cfg, &bad, &classes), 11);
}

Test(walk_hidden, cache_remembers_the_mode, .init = setup, .fini = teardown)
{
	char *cache = tu_tmpdir("hidden-cache");
	char path[4096];
	snprintf(path, sizeof(path), "%s/idx", cache);
	char err[512];
	uint64_t files;
	cr_assert_eq(rf_index_write(dir, RF_INDEX_HIDDEN, path, &files, NULL, NULL, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(files, 9);
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.index_cache = path; /* built with hidden names: not this loader's index */
	uint64_t bad;
	int classes;
	cr_assert_eq(samples(&cfg, &bad, &classes), 6);
	cr_assert_eq(rf_index_write(dir, 16, path, &files, NULL, NULL, err, sizeof(err)), -EINVAL);
	cr_assert_eq(rf_index_write(dir, RF_INDEX_FILES | RF_INDEX_TAR, path, &files, NULL, NULL,
				    err, sizeof(err)), -EINVAL);
	tu_rmrf(cache);
	free(cache);
}

static int create_error(rf_config *cfg, char *err, size_t errlen)
{
	rf_loader *l;
	int r = rf_loader_create(&l, cfg, err, errlen);
	if (r == 0)
		rf_loader_destroy(l);
	return r;
}

Test(walk_hidden, symlink_loop_named_as_one, .init = setup, .fini = teardown)
{
	char link[4096];
	snprintf(link, sizeof(link), "%s/c0/again", dir);
	cr_assert_eq(symlink("..", link), 0); /* c0/again -> the root */
	rf_config cfg;
	tu_config(&cfg, dir);
	char err[512] = "";
	cr_assert_eq(create_error(&cfg, err, sizeof(err)), -ELOOP, "%s", err);
	cr_assert(strstr(err, "'c0/again': symlink loop (it leads back to the root)"), "%s", err);
	unlink(link);
	snprintf(link, sizeof(link), "%s/c1/.thumbs/up", dir);
	cr_assert_eq(symlink("..", link), 0); /* c1/.thumbs/up -> c1 */
	cfg.include_hidden = 1;
	cr_assert_eq(create_error(&cfg, err, sizeof(err)), -ELOOP, "%s", err);
	cr_assert(strstr(err, "'c1/.thumbs/up': symlink loop (it leads back to 'c1')"), "%s", err);
	cr_assert_lt(strlen(err), 200, "%s", err);
}

Test(walk_hidden, symlink_elsewhere_is_walked, .init = setup, .fini = teardown)
{
	char link[4096];
	snprintf(link, sizeof(link), "%s/c1/more", dir);
	cr_assert_eq(symlink("../c0", link), 0); /* a sibling, not an ancestor */
	rf_config cfg;
	tu_config(&cfg, dir);
	uint64_t bad;
	int classes;
	cr_assert_eq(samples(&cfg, &bad, &classes), 9); /* c0's 3 images twice */
	cr_assert_eq(classes, 2);
}
