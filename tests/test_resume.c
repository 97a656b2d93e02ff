/* test_resume.c - exact resume: a loader created from a state saved after K
 * batches yields exactly the batches the saving loader would have yielded
 * next (index, epoch, ids, labels, pixels, replacements of bad samples), at
 * many random cut points, with other thread counts, io_depth, prefetch and
 * read paths before and after, for every sampler and with ranks, with
 * random crops and flips, float output, raw mode; with batches held or read
 * ahead at save time; out-of-order delivery; chained resumes; the save API;
 * the refusals
 * (another dataset or config, truncated, corrupted, newer format, another
 * world size, a position past the end). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/state.h"
#include "testutil.h"

static tu_batch *reference(const rf_config *cfg, size_t *n)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *b;
	*n = tu_take(l, SIZE_MAX, &b);
	rf_loader_destroy(l);
	return b;
}

/* Runs cfg for k batches (holding the last one when hold is set), saves,
 * destroys the loader with whatever it had read ahead. */
static size_t save_after(const rf_config *cfg, size_t k, int hold, uint8_t *state)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *b;
	size_t got = tu_take(l, hold && k ? k - 1 : k, &b);
	tu_batches_free(b, got);
	rf_batch *held = NULL;
	if (hold && k)
		cr_assert_eq(rf_loader_next(l, &held), 0, "%s", rf_loader_error(l));
	rf_order_info oi;
	cr_assert_eq(rf_loader_order(l, &oi), 0);
	int len = rf_loader_state_save(l, state, RF_STATE_MAX_BYTES);
	cr_assert_gt(len, 0, "save: %s", rf_strerror(len));
	rf_loader_destroy(l); /* with reads in flight and batches read ahead */
	return (size_t)len;
}

static tu_batch *resume(const rf_config *cfg, const uint8_t *state, size_t len, size_t *n)
{
	rf_config c = *cfg;
	c.resume_state = state;
	c.resume_state_len = len;
	return reference(&c, n);
}

static void assert_tail_equal(const tu_batch *ref, size_t nref, size_t k, const tu_batch *got,
			      size_t ngot, const char *what)
{
	cr_assert_eq(ngot, nref - k, "%s: cut at %zu: %zu batches after resume, want %zu", what, k,
		     ngot, nref - k);
	for (size_t i = 0; i < ngot; i++)
		tu_assert_same_batch(&ref[k + i], &got[i], what);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Cut points: 0, the end, and `random` others drawn with a fixed seed;
 * threads, io_depth and prefetch drawn independently before and after. */
static void check_cuts(const rf_config *cfg, int random, uint64_t seed, const char *what)
{
	static const int threads[] = { 1, 2, 3 }, depths[] = { 1, 3, 8, 64 },
			 prefetch[] = { 1, 2, 3, 8 };
	size_t nref;
	tu_batch *ref = reference(cfg, &nref);
	cr_assert_gt(nref, 2);
	uint64_t s = seed;
	for (int i = 0; i < random + 2; i++) {
		size_t k = i == 0 ? 0 : i == 1 ? nref : rng_next(&s) % nref;
		rf_config before = *cfg, after = *cfg;
		before.threads = threads[rng_next(&s) % 3];
		before.io_depth = depths[rng_next(&s) % 4];
		before.prefetch = prefetch[rng_next(&s) % 4];
		after.threads = threads[rng_next(&s) % 3];
		after.io_depth = depths[rng_next(&s) % 4];
		after.prefetch = prefetch[rng_next(&s) % 4];
		/* every read path gives the same batches, a resumed one too */
		static const rf_io_path paths[] = { RF_IO_AUTO, RF_IO_URING_PLAIN, RF_IO_PREAD };
		before.io_path = paths[rng_next(&s) % 3];
		after.io_path = paths[rng_next(&s) % 3];
		int hold = (int)(rng_next(&s) % 2);
		uint8_t state[RF_STATE_MAX_BYTES];
		size_t len = save_after(&before, k, hold, state);
		rf_state_info info;
		char err[256];
		cr_assert_eq(rf_state_parse(state, len, &info, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(info.next_batch, k, "%s: the state says batch %llu, cut at %zu", what,
			     (unsigned long long)info.next_batch, k);
		size_t ngot;
		tu_batch *got = resume(&after, state, len, &ngot);
		char label[192];
		snprintf(label, sizeof(label), "%s (cut %zu of %zu, threads %d->%d, io_depth %d->%d, "
			 "prefetch %d->%d, io_path %d->%d%s)", what, k, nref, before.threads,
			 after.threads, before.io_depth, after.io_depth, before.prefetch,
			 after.prefetch, (int)before.io_path, (int)after.io_path,
			 hold ? ", last batch held" : "");
		assert_tail_equal(ref, nref, k, got, ngot, label);
		tu_batches_free(got, ngot);
	}
	tu_batches_free(ref, nref);
}

static char *dir;
static void setup(void) { dir = tu_tree("resume", 3, 13); } /* 39 samples */
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

Test(resume, random_cuts_shuffle, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 3; /* 5 batches an epoch, the last one partial */
	cfg.seed = 77;
	check_cuts(&cfg, 16, 1, "shuffle");
	cfg.drop_last = 1;
	cfg.batch_size = 5;
	check_cuts(&cfg, 6, 2, "shuffle, drop_last");
	tu_assert_no_leaks();
}

Test(resume, random_cuts_sequential_and_endless, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.shuffle = 0;
	cfg.epochs = 2;
	check_cuts(&cfg, 6, 3, "sequential");
	/* endless: the saver stops anywhere, the resumed loader is read as far */
	tu_config(&cfg, dir);
	cfg.epochs = 0;
	cfg.seed = 5;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *ref;
	size_t nref = tu_take(l, 23, &ref);
	rf_loader_destroy(l);
	uint8_t state[RF_STATE_MAX_BYTES];
	size_t len = save_after(&cfg, 9, 0, state);
	rf_config c = cfg;
	c.resume_state = state;
	c.resume_state_len = len;
	cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
	tu_batch *got;
	size_t ngot = tu_take(l, nref - 9, &got);
	rf_loader_destroy(l);
	assert_tail_equal(ref, nref, 9, got, ngot, "endless");
	tu_batches_free(ref, nref);
	tu_batches_free(got, ngot);
}

Test(resume, random_cuts_ranks, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 3;
	cfg.batch_size = 3;
	cfg.world_size = 4; /* 10 positions per rank and epoch, padded */
	cfg.rank = 3;
	check_cuts(&cfg, 8, 4, "rank 3 of 4, pad");
	cfg.rank = 1;
	cfg.rank_tail = RF_RANK_TAIL_DROP;
	check_cuts(&cfg, 4, 5, "rank 1 of 4, drop");
}

/* A manifest over the tree's files: weights make class 0 rare. */
static char *weighted_manifest(const char *d)
{
	char *man;
	cr_assert(asprintf(&man, "%s/weights.tsv", d) > 0);
	FILE *f = fopen(man, "w");
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 13; i++)
			fprintf(f, "c%d/img_%03d.jpg\t%d\t%g\n", c, i, c, c == 0 ? 0.1 : 1.0 + i);
	fclose(f);
	return man;
}

Test(resume, random_cuts_weighted_and_balanced, .init = setup, .fini = teardown, .timeout = 60)
{
	char *man = weighted_manifest(dir);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.sampler = RF_SAMPLER_WEIGHTED;
	cfg.samples_per_epoch = 30;
	cfg.epochs = 2;
	cfg.world_size = 2;
	cfg.rank = 1;
	check_cuts(&cfg, 6, 6, "weighted");
	cfg.sampler = RF_SAMPLER_BALANCED;
	cfg.samples_per_epoch = 0;
	cfg.world_size = 1;
	cfg.rank = 0;
	check_cuts(&cfg, 6, 7, "balanced");
	free(man);
}

/* Good images and bad files of several kinds: replacements happen often. */
static char *bad_manifest(char **dirp)
{
	char *d = tu_tmpdir("resbad");
	char rel[64], *man;
	cr_assert(asprintf(&man, "%s/list.tsv", d) > 0);
	FILE *m = fopen(man, "w");
	for (int i = 0; i < 14; i++) {
		snprintf(rel, sizeof(rel), "good/g%02d.jpg", i);
		tu_jpeg(d, rel, 48 + i, 44, 900 + (uint64_t)i);
		fprintf(m, "%s\t%d\n", rel, i % 2);
	}
	size_t len;
	uint8_t *j = tu_read(d, "good/g00.jpg", &len);
	tu_write(d, "bad/truncated.jpg", j, len / 2);
	free(j);
	tu_write(d, "bad/text.jpg", "not a jpeg", 10);
	fprintf(m, "bad/truncated.jpg\t0\nbad/text.jpg\t1\nbad/missing.jpg\t0\n"
		   "bad/missing2.jpg\t1\n");
	fclose(m);
	*dirp = d;
	return man;
}

Test(resume, bad_sample_replacements_survive_a_resume, .timeout = 60)
{
	char *d, *man = bad_manifest(&d);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.batch_size = 4;
	cfg.epochs = 3;
	cfg.seed = 3;
	size_t nref;
	tu_batch *ref = reference(&cfg, &nref);
	uint32_t replaced = 0;
	for (size_t i = 0; i < nref; i++)
		replaced += ref[i].replaced;
	cr_assert_geq(replaced, 12, "four bad files a epoch, each replaced (%u)", replaced);
	tu_batches_free(ref, nref);
	check_cuts(&cfg, 10, 8, "bad samples");
	cfg.world_size = 3;
	cfg.rank = 2;
	check_cuts(&cfg, 4, 9, "bad samples, rank 2 of 3");
	/* fail mode: the state of a failed loader points at the batch that failed */
	cfg.world_size = 1;
	cfg.rank = 0;
	cfg.on_error = RF_ON_ERROR_FAIL;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r;
	uint64_t good = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		good++;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EBADSAMPLE);
	uint8_t state[RF_STATE_MAX_BYTES];
	int len = rf_loader_state_save(l, state, sizeof(state));
	rf_loader_destroy(l);
	rf_state_info info;
	cr_assert_eq(rf_state_parse(state, (size_t)len, &info, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(info.next_batch, good, "the failed batch %llu, not after it",
		     (unsigned long long)good);
	cr_assert_eq(info.on_error, RF_ON_ERROR_FAIL);
	tu_rmrf(d);
	free(d);
	free(man);
}

Test(resume, chained_and_from_another_rank, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 4;
	cfg.batch_size = 4;
	size_t nref;
	tu_batch *ref = reference(&cfg, &nref);
	/* save at 3, resume, save again 7 batches later, resume again */
	uint8_t s1[RF_STATE_MAX_BYTES], s2[RF_STATE_MAX_BYTES];
	size_t l1 = save_after(&cfg, 3, 0, s1);
	rf_config c = cfg;
	c.resume_state = s1;
	c.resume_state_len = l1;
	c.threads = 1;
	size_t l2 = save_after(&c, 7, 1, s2);
	rf_state_info info;
	cr_assert_eq(rf_state_parse(s2, l2, &info, NULL, 0), 0);
	cr_assert_eq(info.next_batch, 10);
	c = cfg;
	c.threads = 3;
	size_t ngot;
	tu_batch *got = resume(&c, s2, l2, &ngot);
	assert_tail_equal(ref, nref, 10, got, ngot, "chained");
	tu_batches_free(got, ngot);
	tu_batches_free(ref, nref);

	/* Every rank of a synchronous job stands at the same batch: rank 2
	 * resumes from rank 0's state and continues as rank 2. */
	cfg.world_size = 3;
	cfg.rank = 2;
	ref = reference(&cfg, &nref);
	c = cfg;
	c.rank = 0;
	l1 = save_after(&c, 5, 0, s1);
	got = resume(&cfg, s1, l1, &ngot);
	assert_tail_equal(ref, nref, 5, got, ngot, "rank 2 from rank 0's state");
	tu_batches_free(got, ngot);
	tu_batches_free(ref, nref);
}

Test(resume, save_api, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.seed = 1234;
	cfg.epochs = 2;
	cfg.world_size = 2;
	cfg.rank = 1;
	cfg.rank_tail = RF_RANK_TAIL_DROP;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	int need = rf_loader_state_save(l, NULL, 0);
	cr_assert_eq(need, RF_STATE_V1_BYTES);
	cr_assert_leq(need, RF_STATE_MAX_BYTES);
	uint8_t buf[RF_STATE_MAX_BYTES];
	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(rf_loader_state_save(l, buf, (size_t)need - 1), -ENOSPC);
	cr_assert_eq(buf[0], 0xee, "a short buffer is left alone");
	cr_assert_eq(rf_loader_state_save(NULL, buf, sizeof(buf)), -EINVAL);
	tu_batch *b;
	size_t n = tu_take(l, 4, &b);
	tu_batches_free(b, n);
	cr_assert_eq(rf_loader_state_save(l, buf, sizeof(buf)), need);
	rf_state_info x;
	cr_assert_eq(rf_state_parse(buf, (size_t)need, &x, err, sizeof(err)), 0, "%s", err);
	/* 39 positions, 2 ranks, drop: 19 per rank, 3 batches of 8 per epoch */
	cr_assert_eq(x.version, 1);
	cr_assert_eq(x.bytes, (uint32_t)need);
	cr_assert_eq(x.next_batch, 4);
	cr_assert_eq(x.epoch, 1);
	cr_assert_eq(x.batch_in_epoch, 1);
	cr_assert_eq(x.seed, 1234);
	cr_assert_eq(x.sampler, RF_SAMPLER_SHUFFLE);
	cr_assert_eq(x.rank, 1);
	cr_assert_eq(x.world_size, 2);
	cr_assert_eq(x.rank_tail, RF_RANK_TAIL_DROP);
	cr_assert_eq(x.batch_size, 8);
	cr_assert_eq(x.resize, 48);
	cr_assert_eq(x.crop, 40);
	cr_assert_eq(x.epoch_samples, 39);
	cr_assert_eq(x.rank_samples, 19);
	cr_assert_eq(x.batches_per_epoch, 3);
	cr_assert_eq(x.epochs, 2);
	cr_assert_eq(x.dataset_samples, 39);
	cr_assert_eq(rf_state_parse(NULL, 10, &x, NULL, 0), -EINVAL);
	/* a state is the same bytes however often it is saved */
	uint8_t again[RF_STATE_MAX_BYTES];
	cr_assert_eq(rf_loader_state_save(l, again, sizeof(again)), need);
	cr_assert_eq(memcmp(buf, again, (size_t)need), 0);
	rf_loader_destroy(l);
	/* cfg.epochs may differ, unless the position lies past the new end
	 * (check_cuts resumes at the very end too: that ends at once) */
	cfg.resume_state = buf;
	cfg.resume_state_len = (size_t)need;
	cfg.epochs = 1;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ESTATEMISMATCH,
		     "batch 4 is past the end of 1 epoch (3 batches)");
	cr_assert(strstr(err, "past the end"), "%s", err);
	cfg.epochs = 5;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_order_info oi;
	cr_assert_eq(rf_loader_order(l, &oi), 0);
	cr_assert_eq(oi.next_batch, 4);
	cr_assert_eq(oi.total_batches, 15);
	rf_loader_destroy(l);
	tu_assert_no_leaks();
}

Test(resume, augmented_float_and_raw, .init = setup, .fini = teardown, .timeout = 60)
{
	/* random crops and flips are functions of (seed, epoch, sample): the
	 * pixels after a resume are the ones the saving loader would have made */
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 2;
	cfg.seed = 21;
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	cfg.dtype = RF_DTYPE_FLOAT16;
	cfg.layout = RF_LAYOUT_CHW;
	check_cuts(&cfg, 6, 10, "random resized crop, flip, float16 CHW");
	/* raw mode: the files' bytes */
	tu_config(&cfg, dir);
	cfg.raw = 1;
	cfg.epochs = 2;
	check_cuts(&cfg, 6, 11, "raw");
}

Test(resume, out_of_order_delivery, .init = setup, .fini = teardown, .timeout = 60)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 3;
	cfg.batch_size = 4; /* 10 batches an epoch */
	size_t nref;
	tu_batch *ref = reference(&cfg, &nref);
	uint64_t s = 12;
	for (int round = 0; round < 8; round++) {
		rf_config ooo = cfg;
		ooo.in_order = 0;
		ooo.prefetch = 2 + (int)(rng_next(&s) % 6);
		ooo.threads = 1 + (int)(rng_next(&s) % 3);
		rf_loader *l;
		char err[512];
		cr_assert_eq(rf_loader_create(&l, &ooo, err, sizeof(err)), 0, "%s", err);
		size_t want = rng_next(&s) % nref, got = 0;
		uint8_t *seen = calloc(nref, 1);
		uint8_t state[RF_STATE_MAX_BYTES];
		int len = -EAGAIN;
		rf_batch *b;
		/* take batches until past the cut, then until a state can be saved */
		while (got < nref) {
			if (got >= want && (len = rf_loader_state_save(l, state, sizeof(state))) != -EAGAIN)
				break;
			cr_assert_eq(rf_loader_next(l, &b), 0, "%s", rf_loader_error(l));
			seen[b->index] = 1;
			got++;
			rf_batch_release(l, b);
		}
		if (got == nref)
			len = rf_loader_state_save(l, state, sizeof(state));
		cr_assert_gt(len, 0, "%s", rf_strerror(len));
		rf_loader_destroy(l);
		/* saved: exactly the batches before the position were handed out */
		rf_state_info info;
		cr_assert_eq(rf_state_parse(state, (size_t)len, &info, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(info.next_batch, got);
		for (size_t i = 0; i < nref; i++)
			cr_assert_eq(seen[i], i < got, "batch %zu %s", i, seen[i] ? "seen" : "not seen");
		free(seen);
		/* resumed in order: the rest, exactly */
		size_t n;
		tu_batch *rest = resume(&cfg, state, (size_t)len, &n);
		assert_tail_equal(ref, nref, got, rest, n, "out of order, resumed in order");
		tu_batches_free(rest, n);
		/* resumed out of order: the same batches, in any order */
		ooo.resume_state = state;
		ooo.resume_state_len = (size_t)len;
		cr_assert_eq(rf_loader_create(&l, &ooo, err, sizeof(err)), 0, "%s", err);
		n = tu_take(l, SIZE_MAX, &rest);
		rf_loader_destroy(l);
		cr_assert_eq(n, nref - got);
		for (size_t i = 0; i < n; i++) {
			cr_assert_geq(rest[i].index, got);
			tu_assert_same_batch(&ref[rest[i].index], &rest[i], "out of order, resumed out of order");
		}
		tu_batches_free(rest, n);
	}
	tu_batches_free(ref, nref);
}
