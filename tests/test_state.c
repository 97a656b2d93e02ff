/* test_state.c - what a resume refuses, and how it says so: a state from
 * another dataset (other files, sizes, labels, weights) or another config
 * (seed, sampler, batch_size, drop_last, on_error, samples per epoch, world
 * size, rank tail, resize, crop, the decode and augment settings, a read
 * pool that makes other files too large), a truncated state at every
 * length, a corrupted one at every byte, trailing bytes, a newer format
 * version, something that is not a state; and what it accepts (other
 * threads, io_depth, prefetch, read pool, read path, in_order, epochs, rank,
 * and the same dataset moved to another folder); an index cache is written
 * 0600. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/state.h"
#include "testutil.h"

static char *dir;
static uint8_t state[RF_STATE_MAX_BYTES];
static size_t state_len;
static rf_config base;

/* A state saved after 2 batches of the base config. */
static void save_base(void)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(rf_loader_next(l, &b), 0);
		rf_batch_release(l, b);
	}
	int n = rf_loader_state_save(l, state, sizeof(state));
	cr_assert_gt(n, 0);
	state_len = (size_t)n;
	rf_loader_destroy(l);
}

static void setup(void)
{
	dir = tu_tree("state", 2, 10);
	tu_config(&base, dir);
	base.epochs = 2;
	base.seed = 11;
	save_base();
}

static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

/* Creating cfg from buf[len] fails with want, and the message has needle. */
static void refused(const rf_config *cfg, const void *buf, size_t len, int want,
		    const char *needle, const char *what)
{
	rf_config c = *cfg;
	c.resume_state = buf;
	c.resume_state_len = len;
	rf_loader *l = (rf_loader *)0x1;
	char err[512] = "";
	int r = rf_loader_create(&l, &c, err, sizeof(err));
	cr_assert_eq(r, want, "%s: want %s, got %d %s (%s)", what, rf_strerror(want), r,
		     rf_strerror(r), err);
	cr_assert_null(l);
	cr_assert(strstr(err, needle), "%s: message '%s' should mention '%s'", what, err, needle);
}

static void accepted(const rf_config *cfg, const char *what)
{
	rf_config c = *cfg;
	c.resume_state = state;
	c.resume_state_len = state_len;
	rf_loader *l;
	char err[512] = "";
	cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s: %s", what, err);
	rf_order_info oi;
	rf_loader_order(l, &oi);
	cr_assert_eq(oi.next_batch, 2, "%s", what);
	rf_loader_destroy(l);
}

Test(state, other_config_refused_naming_the_field, .init = setup, .fini = teardown)
{
	rf_config c;
#define REFUSED(field, value, needle)                                                 \
	do {                                                                          \
		c = base;                                                             \
		c.field = value;                                                      \
		refused(&c, state, state_len, RF_ESTATEMISMATCH, needle, #field);     \
	} while (0)
	REFUSED(seed, 12, "seed 11");
	REFUSED(drop_last, 1, "drop_last");
	REFUSED(shuffle, 0, "sampler shuffle");
	REFUSED(sampler, RF_SAMPLER_BALANCED, "sampler");
	REFUSED(on_error, RF_ON_ERROR_FAIL, "on_error skip");
	REFUSED(rank_tail, RF_RANK_TAIL_DROP, "rank_tail");
	REFUSED(resize, 64, "resize 48");
	REFUSED(crop, 32, "crop 40");
	/* the decode and augment settings: in the output fingerprint */
	REFUSED(random_resized_crop, 1, "random_resized_crop");
	REFUSED(flip_p, 0.5f, "flip_p");
	REFUSED(rrc_scale[0], 0.5f, "rrc_scale");
	REFUSED(dtype, RF_DTYPE_FLOAT32, "dtype");
	REFUSED(layout, RF_LAYOUT_CHW, "layout");
	REFUSED(max_pixels, 1000, "max_pixels");
	REFUSED(no_scaled_decode, 1, "no_scaled_decode");
	REFUSED(raw, 1, "raw");
#undef REFUSED
	/* mean and std go with float output only (uint8 refuses them): a
	 * state saved with float32 output, resumed with another mean */
	base.dtype = RF_DTYPE_FLOAT32;
	save_base();
	c = base;
	c.mean[1] = 0.5f;
	refused(&c, state, state_len, RF_ESTATEMISMATCH, "mean", "mean[1]");
	base.dtype = RF_DTYPE_UINT8;
	save_base();
	/* world_size and batch_size may differ: tests/test_elastic.c */
	/* with a read pool of 1 MiB no file is too large (max 256 KiB); make
	 * one file larger than that: then the pool size decides the stream */
	tu_rmrf(dir);
	free(dir);
	dir = tu_tree("state", 2, 10);
	tu_config(&base, dir);
	base.epochs = 2;
	base.seed = 11;
	uint8_t *big = calloc(1, 300 << 10);
	tu_write(dir, "c1/img_009.jpg", big, 300 << 10); /* a bad sample, too large */
	free(big);
	base.read_pool_bytes = 2 << 20;
	save_base();
	c = base;
	c.read_pool_bytes = 1 << 20;
	refused(&c, state, state_len, RF_ESTATEMISMATCH, "too large", "read pool");
	tu_assert_no_leaks();
}

Test(state, accepted_changes, .init = setup, .fini = teardown)
{
	rf_config c = base;
	c.threads = 1;
	c.io_depth = 2;
	c.prefetch = 7;
	c.read_pool_bytes = 4 << 20; /* every file fits in both */
	c.epochs = 9;
	c.no_direct_io = 1;
	c.in_order = 0;
	c.io_path = RF_IO_PREAD;
	c.pread_threads = 3;
	accepted(&c, "resources, read path, delivery order and epochs");
	/* the same files under another root */
	char *moved = tu_tmpdir("moved");
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "cp -r '%s'/. '%s'/", dir, moved);
	cr_assert_eq(system(cmd), 0);
	c = base;
	c.source = moved;
	accepted(&c, "dataset moved");
	tu_rmrf(moved);
	free(moved);
}

Test(state, other_dataset_refused, .init = setup, .fini = teardown)
{
	rf_config c = base;
	/* one more file */
	tu_jpeg(dir, "c0/img_999.jpg", 50, 50, 4242);
	refused(&c, state, state_len, RF_ESTATEMISMATCH, "another dataset (20 samples then, 21",
		"one more file");
	/* the same count, one file's content (size) changed */
	char p[4096];
	snprintf(p, sizeof(p), "%s/c0/img_999.jpg", dir);
	cr_assert_eq(unlink(p), 0);
	tu_jpeg(dir, "c0/img_003.jpg", 90, 70, 4243);
	refused(&c, state, state_len, RF_ESTATEMISMATCH, "other paths, sizes, labels",
		"a file changed");
	/* the same files, other labels (a manifest) */
	char *man;
	cr_assert(asprintf(&man, "%s/m.tsv", dir) > 0);
	for (int round = 0; round < 2; round++) {
		FILE *f = fopen(man, "w");
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < 10; i++)
				fprintf(f, "c%d/img_%03d.jpg\t%d\t1\n", k, i,
					round && i == 5 ? 7 : k);
		fclose(f);
		c = base;
		c.source = man;
		if (!round) {
			/* save from the manifest */
			rf_config tmp = base;
			base.source = man;
			save_base();
			base = tmp;
		} else {
			refused(&c, state, state_len, RF_ESTATEMISMATCH, "labels", "a label changed");
		}
	}
	/* weights count only for the weighted sampler */
	rf_config w = base;
	w.source = man;
	w.sampler = RF_SAMPLER_WEIGHTED;
	{
		FILE *f = fopen(man, "w");
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < 10; i++)
				fprintf(f, "c%d/img_%03d.jpg\t%d\t1\n", k, i, k);
		fclose(f);
		rf_config tmp = base;
		base = w;
		save_base();
		base = tmp;
		f = fopen(man, "w");
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < 10; i++)
				fprintf(f, "c%d/img_%03d.jpg\t%d\t%d\n", k, i, k, i == 3 ? 5 : 1);
		fclose(f);
	}
	refused(&w, state, state_len, RF_ESTATEMISMATCH, "or weights", "a weight changed");
	free(man);
}

Test(state, truncated_corrupted_foreign_refused, .init = setup, .fini = teardown)
{
	/* every truncation */
	for (size_t n = 0; n < state_len; n++) {
		char what[64];
		snprintf(what, sizeof(what), "truncated to %zu bytes", n);
		refused(&base, state, n, RF_ESTATE, "truncated", what);
	}
	/* trailing bytes */
	uint8_t longer[RF_STATE_MAX_BYTES + 1];
	memcpy(longer, state, state_len);
	longer[state_len] = 0;
	refused(&base, longer, state_len + 1, RF_ESTATE, "follows", "one byte more");
	/* every single-bit flip, low and high bit of each byte, is refused */
	for (size_t i = 0; i < state_len; i++) {
		for (int bit = 0; bit < 8; bit += 7) {
			uint8_t bad[RF_STATE_MAX_BYTES];
			memcpy(bad, state, state_len);
			bad[i] ^= (uint8_t)(1u << bit);
			char what[64];
			snprintf(what, sizeof(what), "byte %zu bit %d flipped", i, bit);
			/* a flipped version bit reads as a newer version (the message
			 * says "or corrupted"), except version 0 */
			int want = i >= 8 && i < 12 && !(i == 8 && bit == 0) ? RF_ESTATEVERSION
									   : RF_ESTATE;
			refused(&base, bad, state_len, want,
				i < 8 ? "not a ringfeed state" : "corrupted", what);
		}
	}
	/* not a state at all */
	const char text[] = "{\"epoch\": 3, \"batch\": 17}";
	refused(&base, text, sizeof(text), RF_ESTATE, "not a ringfeed state", "json");
	/* NULL bytes with a length is a config error */
	rf_config c = base;
	c.resume_state = NULL;
	c.resume_state_len = 10;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "resume_state"), "%s", err);
	tu_assert_no_leaks();
}

Test(state, newer_version_refused, .init = setup, .fini = teardown)
{
	/* a well-formed state of format 3 (checksum recomputed): only the
	 * version can be the reason */
	uint8_t v2[RF_STATE_MAX_BYTES];
	memcpy(v2, state, state_len);
	v2[8] = 3;
	uint64_t sum = rfi_state_checksum(v2, 144);
	for (int i = 0; i < 8; i++)
		v2[144 + i] = (uint8_t)(sum >> (8 * i));
	refused(&base, v2, state_len, RF_ESTATEVERSION, "newer", "format 3");
	rf_state_info x;
	char err[256];
	cr_assert_eq(rf_state_parse(v2, state_len, &x, err, sizeof(err)), RF_ESTATEVERSION);
	cr_assert(strstr(err, "version 3"), "%s", err);
	/* and a version 1 state parses, with its checksum */
	cr_assert_eq(rf_state_parse(state, state_len, &x, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(x.version, 1);
	cr_assert_str_eq(rf_strerror(RF_ESTATEVERSION),
			 "the saved state has a newer format than this library reads");
	cr_assert(strstr(rf_strerror(RF_ESTATE), "corrupted"));
	cr_assert(strstr(rf_strerror(RF_ESTATEMISMATCH), "another dataset"));
}

/* The batches a loader over cfg resumed from buf[len] delivers to the end. */
static size_t resumed(const rf_config *cfg, const void *buf, size_t len, tu_batch **out)
{
	rf_config c = *cfg;
	c.resume_state = buf;
	c.resume_state_len = len;
	rf_loader *l;
	char err[512] = "";
	cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
	size_t n = tu_take(l, SIZE_MAX, out);
	rf_loader_destroy(l);
	return n;
}

Test(state, seek_moves_a_state_to_any_batch, .init = setup, .fini = teardown)
{
	/* the whole stream from the start: 20 samples, batches of 8, 2 epochs */
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
	tu_batch *all;
	size_t total = tu_take(l, SIZE_MAX, &all);
	rf_loader_destroy(l);
	cr_assert_eq(total, 6);
	/* the state saved at batch 2, moved to each batch (and to the end):
	 * resuming from it gives the rest of the same stream */
	for (uint64_t to = 0; to <= total; to++) {
		uint8_t s[RF_STATE_MAX_BYTES];
		memcpy(s, state, state_len);
		cr_assert_eq(rf_state_seek(s, state_len, to, err, sizeof(err)), 0, "%s", err);
		rf_state_info x;
		cr_assert_eq(rf_state_parse(s, state_len, &x, err, sizeof(err)), 0, "%s", err);
		cr_assert(x.next_batch == to && x.epoch == to / 3 && x.batch_in_epoch == to % 3);
		cr_assert_eq(x.seed, 11); /* the rest as saved */
		tu_batch *rest;
		size_t n = resumed(&base, s, state_len, &rest);
		cr_assert_eq(n, total - to, "moved to %llu", (unsigned long long)to);
		for (size_t i = 0; i < n; i++)
			tu_assert_same_batch(&all[to + i], &rest[i], "after rf_state_seek");
		tu_batches_free(rest, n);
	}
	tu_batches_free(all, total);
	/* past this config's last epoch: the state is written, a resume refuses it */
	uint8_t s[RF_STATE_MAX_BYTES];
	memcpy(s, state, state_len);
	cr_assert_eq(rf_state_seek(s, state_len, 7, err, sizeof(err)), 0, "%s", err);
	refused(&base, s, state_len, RF_ESTATEMISMATCH, "past the end", "moved past the end");
	tu_assert_no_leaks();
}

Test(state, seek_refuses_what_parse_refuses, .init = setup, .fini = teardown)
{
	char err[256];
	uint8_t s[RF_STATE_MAX_BYTES], before[RF_STATE_MAX_BYTES];
	memcpy(s, state, state_len);
	s[100] ^= 1; /* checksum mismatch */
	memcpy(before, s, state_len);
	cr_assert_eq(rf_state_seek(s, state_len, 0, err, sizeof(err)), RF_ESTATE);
	cr_assert(strstr(err, "corrupted"), "%s", err);
	cr_assert(!memcmp(s, before, state_len), "a refused state is left as it was");
	memcpy(s, state, state_len);
	cr_assert_eq(rf_state_seek(s, state_len - 1, 0, err, sizeof(err)), RF_ESTATE);
	cr_assert(strstr(err, "truncated"), "%s", err);
	cr_assert(!memcmp(s, state, state_len), "a refused state is left as it was");
	s[8] = 3; /* a newer format */
	cr_assert_eq(rf_state_seek(s, state_len, 0, err, sizeof(err)), RF_ESTATEVERSION);
	cr_assert_eq(rf_state_seek(NULL, state_len, 0, err, sizeof(err)), -EINVAL);
	cr_assert_eq(rf_state_seek(NULL, 0, 0, NULL, 0), -EINVAL);
}

/* The mode of path, as chmod writes it. */
static unsigned mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	return (unsigned)(st.st_mode & 07777);
}

/* An index cache names the source and lists the user's files: it is the
 * user's alone (0600) whatever the umask, whether rf_index_write() or a
 * loader's index_cache writes it, and when it replaces a file of another
 * mode. */
Test(state, an_index_cache_is_the_users_alone, .init = setup, .fini = teardown)
{
	mode_t old = umask(0); /* the mode is the code's, not the umask's */
	char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/idx.cache", dir);
	uint64_t files;
	cr_assert_eq(rf_index_write(dir, 0, path, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(mode_of(path), 0600, "rf_index_write: %o", mode_of(path));
	/* over a file of mode 0644 */
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(rf_index_write(dir, 0, path, &files, NULL, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(mode_of(path), 0600, "rewritten: %o", mode_of(path));
	/* a loader's */
	char loader_path[4200];
	snprintf(loader_path, sizeof(loader_path), "%s/loader.cache", dir);
	rf_config c = base;
	c.index_cache = loader_path;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
	cr_assert_eq(mode_of(loader_path), 0600, "a loader's: %o", mode_of(loader_path));
	umask(old);
}
