/* test_nothing_lost.c - the loader never destroys a file of the user's,
 * never lets one kind of source shadow another, never hangs on a FIFO
 * where a file belongs, and says precisely why a sample was refused. Each
 * case writes its own crafted inputs. (Damaged and cut tar shards: the
 * tests of tar and shards, and the mutation harness tests/fuzz/mutate.c.) */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/tar_write.h"
#include "testutil.h"

static char *dir, *scratch; /* the inputs; the JPEGs the shards are made of */
static void setup(void)
{
	dir = tu_tmpdir("lost");
	scratch = tu_tmpdir("lost-jpegs");
}
static void teardown(void)
{
	tu_rmrf(dir);
	tu_rmrf(scratch);
	free(dir);
	free(scratch);
}

/* ---- a tar shard written here ---- */

typedef struct shard {
	uint8_t *p;
	size_t len;
} shard;

static void put(shard *s, const void *data, size_t n)
{
	size_t padded = rfi_tar_blocks(n);
	s->p = realloc(s->p, s->len + padded);
	cr_assert(s->p);
	memset(s->p + s->len, 0, padded);
	if (data)
		memcpy(s->p + s->len, data, n);
	s->len += padded;
}

static void member(shard *s, const char *name, const void *data, size_t n)
{
	uint8_t h[RF_TAR_BLOCK];
	cr_assert_eq(rfi_tar_header(h, name, n, '0'), 0);
	put(s, h, sizeof(h));
	put(s, data, n);
}

/* A sample KEY.jpg (the JPEG at scratch/rel) and KEY.cls. */
static void sample(shard *s, const char *key, const char *jpeg_rel, int label)
{
	size_t n;
	uint8_t *jpg = tu_read(scratch, jpeg_rel, &n);
	char name[64], cls[16];
	snprintf(name, sizeof(name), "%s.jpg", key);
	member(s, name, jpg, n);
	free(jpg);
	snprintf(name, sizeof(name), "%s.cls", key);
	snprintf(cls, sizeof(cls), "%d", label);
	member(s, name, cls, strlen(cls));
}

static void finish(shard *s, const char *rel)
{
	put(s, NULL, 2 * RF_TAR_BLOCK);
	tu_write(dir, rel, s->p, s->len);
	free(s->p);
	*s = (shard){ 0 };
}

/* A shard of n samples (their JPEGs written beside it first). */
static void write_shard(const char *rel, int n)
{
	shard s = { 0 };
	for (int i = 0; i < n; i++) {
		char key[32], jpg[64];
		snprintf(key, sizeof(key), "%06d", i);
		snprintf(jpg, sizeof(jpg), "%d.jpg", i);
		tu_jpeg(scratch, jpg, 48, 40, (uint64_t)i);
		sample(&s, key, jpg, i % 3);
	}
	finish(&s, rel);
}

static char *at(const char *rel)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", dir, rel) > 0);
	return p;
}

static int create(rf_config *cfg, char *err, size_t errlen)
{
	rf_loader *l;
	int r = rf_loader_create(&l, cfg, err, errlen);
	if (r == 0)
		rf_loader_destroy(l);
	return r;
}

static uint64_t samples_of(const rf_config *cfg)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	rf_order_info oi;
	cr_assert_eq(rf_loader_order(l, &oi), 0);
	rf_loader_destroy(l);
	return oi.dataset_samples;
}

/* ---- 1. the index cache is written over nothing but an index cache ---- */

static void assert_unchanged(const char *rel, const uint8_t *before, size_t n)
{
	size_t m;
	uint8_t *now = tu_read(dir, rel, &m);
	cr_assert(m == n && !memcmp(now, before, n), "%s was changed", rel);
	free(now);
}

Test(nothing_lost, index_cache_never_overwrites_a_file_of_the_users, .init = setup,
     .fini = teardown)
{
	write_shard("cw/train-000000.tar", 6);
	write_shard("cw/train-000001.tar", 6);
	const char *list = "train-000000.tar\ntrain-000001.tar\n";
	tu_write(dir, "cw/l.txt", list, strlen(list));
	size_t shard_len;
	uint8_t *shard_bytes = tu_read(dir, "cw/train-000001.tar", &shard_len);
	char *src = at("cw"), *tar = at("cw/train-000001.tar"), *lst = at("cw/l.txt");
	rf_config cfg;
	tu_config(&cfg, src);
	char err[512];
	/* a shard of the source itself */
	cfg.index_cache = tar;
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_ECONFIG, "%s", err);
	cr_assert(strstr(err, "train-000001.tar") && strstr(err, "not a ringfeed index cache"),
		  "%s", err);
	assert_unchanged("cw/train-000001.tar", shard_bytes, shard_len);
	uint64_t files;
	cr_assert_eq(rf_index_write(src, 0, tar, &files, NULL, NULL, err, sizeof(err)), RF_ECONFIG);
	assert_unchanged("cw/train-000001.tar", shard_bytes, shard_len);
	/* the list that is the source */
	cfg.source = lst;
	cfg.index_cache = lst;
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_ECONFIG, "%s", err);
	assert_unchanged("cw/l.txt", (const uint8_t *)list, strlen(list));
	/* an empty file, a folder and a FIFO (refused without hanging) */
	tu_write(dir, "empty", "", 0);
	tu_mkdirs(dir, "folder");
	char *empty = at("empty"), *folder = at("folder"), *fifo = at("fifo");
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	const char *bad[] = { empty, folder, fifo };
	for (int i = 0; i < 3; i++) {
		cfg.index_cache = bad[i];
		cr_assert_eq(create(&cfg, err, sizeof(err)), RF_ECONFIG, "%s: %s", bad[i], err);
		cr_assert(strstr(err, bad[i]), "%s", err);
	}
	/* nothing there: written; an index cache there: rewritten */
	char *idx = at("cw.idx");
	cfg.index_cache = idx;
	cr_assert_eq(create(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(access(idx, F_OK), 0);
	cr_assert_eq(rf_index_write(src, 0, idx, &files, NULL, NULL, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(files, 12);
	free(shard_bytes);
	free(src);
	free(tar);
	free(lst);
	free(empty);
	free(folder);
	free(fifo);
	free(idx);
}

/* ---- 2. a stray .tar never turns a tree into a shard source ---- */

Test(nothing_lost, stray_tar_in_an_imagefolder_is_refused_naming_both, .init = setup,
     .fini = teardown)
{
	tu_rmrf(dir);
	free(dir);
	dir = tu_tree("lost-tree", 3, 4); /* c0..c2, 12 JPEGs */
	write_shard("c2/old.tar", 2);
	rf_config cfg;
	tu_config(&cfg, dir);
	char err[512];
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_EINDEX, "%s", err);
	cr_assert(strstr(err, "both .tar files (1, such as 'c2/old.tar')"), "%s", err);
	cr_assert(strstr(err, "loose images (12"), "%s", err);
	cr_assert(strstr(err, "source_kind"), "%s", err);
	/* said: the tree, or the shard */
	cfg.source_kind = RF_SOURCE_FILES;
	cr_assert_eq(samples_of(&cfg), 12);
	cfg.source_kind = RF_SOURCE_TAR;
	cr_assert_eq(samples_of(&cfg), 2);
	/* a raw tree with one logs.tar beside its files */
	tu_write(dir, "logs.tar", "not a shard", 11);
	tu_config(&cfg, dir);
	cfg.raw = 1;
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_EINDEX, "%s", err);
	cr_assert(strstr(err, "loose files ("), "%s", err);
	cfg.source_kind = RF_SOURCE_FILES;
	cr_assert_eq(samples_of(&cfg), 12 + 2); /* the JPEGs, old.tar and logs.tar as bytes */
}

Test(nothing_lost, shards_where_shards_do_not_go_are_refused, .init = setup, .fini = teardown)
{
	write_shard("s/a/deep/x.tar", 2);
	char *src = at("s");
	rf_config cfg;
	tu_config(&cfg, src);
	char err[512];
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_EINDEX, "%s", err);
	cr_assert(strstr(err, "not where shards go"), "%s", err);
	/* a folder of shards with their dictionary beside them stays a shard
	 * source, raw mode included */
	write_shard("t/x-0.tar", 2);
	write_shard("t/x-1.tar", 3);
	tu_write(dir, "t/zstd.dict", "not read: no member is .zst", 27);
	free(src);
	src = at("t");
	tu_config(&cfg, src);
	cr_assert_eq(samples_of(&cfg), 5);
	cfg.raw = 1;
	cr_assert_eq(samples_of(&cfg), 5);
	free(src);
}

/* ---- 8. a FIFO where a file belongs is refused, never waited on ---- */

Test(nothing_lost, fifo_dictionary_is_refused, .init = setup, .fini = teardown, .timeout = 30)
{
	/* a member that is a zstd frame (only its name matters here): the
	 * dictionary beside the shards is then looked for */
	shard s = { 0 };
	member(&s, "k.jpg.zst", "\x28\xb5\x2f\xfd", 4);
	finish(&s, "z/x-0.tar");
	char *src = at("z"), *fifo = at("fifo.dict");
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.zstd_dict = fifo;
	char err[512];
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_ECONFIG, "%s", err);
	cr_assert(strstr(err, "not a regular file (a FIFO)"), "%s", err);
	/* a FIFO named zstd.dict beside the shards */
	char *beside = at("z/zstd.dict");
	cr_assert_eq(mkfifo(beside, 0644), 0);
	cfg.zstd_dict = NULL;
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_ECONFIG, "%s", err);
	cr_assert(strstr(err, "zstd.dict") && strstr(err, "FIFO"), "%s", err);
	free(src);
	free(fifo);
	free(beside);
}

/* ---- 9. messages that say what is wrong ---- */

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	char *all = user;
	(void)err;
	size_t n = strlen(all);
	snprintf(all + n, 4096 - n, "%s: %s\n", path, reason);
}

Test(nothing_lost, precise_reasons, .init = setup, .fini = teardown, .timeout = 60)
{
	tu_jpeg(scratch, "a.jpg", 48, 40, 1);
	shard s = { 0 };
	sample(&s, "good", "a.jpg", 1);
	/* two JPEGs of one key, and two labels of one key */
	size_t n;
	uint8_t *jpg = tu_read(scratch, "a.jpg", &n);
	member(&s, "twoimg.jpg", jpg, n);
	member(&s, "twoimg.jpg", jpg, n);
	member(&s, "twoimg.cls", "1", 1);
	member(&s, "twocls.jpg", jpg, n);
	member(&s, "twocls.cls", "1", 1);
	member(&s, "twocls.cls", "2", 1);
	free(jpg);
	finish(&s, "m/x-0.tar");
	char *src = at("m");
	char all[4096] = "";
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.on_sample_error = on_bad;
	cfg.user = all;
	size_t len;
	rf_stats st;
	free(tu_drain_bytes(&cfg, &len, &st));
	cr_assert(strstr(all, "x-0.tar:twoimg: two members of its image's extension"), "%s", all);
	cr_assert(strstr(all, "x-0.tar:twocls: two cls members"), "%s", all);
	cr_assert_eq(st.bad_samples, 2, "%s", all);
	/* a FIFO among the shards: named as one */
	char *fifo = at("m/x-1.tar");
	cr_assert_eq(mkfifo(fifo, 0644), 0);
	char err[512];
	cr_assert_eq(create(&cfg, err, sizeof(err)), RF_EINDEX, "%s", err);
	cr_assert(strstr(err, "x-1.tar: not a regular file (a FIFO)"), "%s", err);
	free(fifo);
	free(src);
}
