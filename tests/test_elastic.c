/* test_elastic.c - elastic resume: a job checkpointed on W ranks resumes on
 * W' ranks, or with another batch size, and the epoch is still delivered
 * once across both runs.
 *
 * The arithmetic of sample/rest.c first, against first principles on many
 * small epochs (every split, cut point and new split: what the old ranks
 * took plus what the new ranks deliver is what one straight run delivers,
 * each position once, padding aside); then loaders: loose files, tar shards
 * read sequentially, token windows; 2 -> 3 and 4 -> 1 ranks, another batch
 * size, a resume of a resume, padding, the next epoch whole, a resumed
 * loader saved and resumed exactly, rf_state_seek() into the rest, and the
 * one refusal (a rest of more runs than a state holds). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pack/pack.h"
#include "pack/tokens.h"
#include "pipeline/state.h"
#include "sample/rest.h"
#include "util/util.h"
#include "testutil.h"

/* ---- the arithmetic ------------------------------------------------------ */

/* One split of a stream: world ranks, batches of bs, as a loader makes it. */
typedef struct split {
	uint32_t world, bs;
	rf_rank_tail tail;
	int drop_last, blocked;
} split;

/* Adds to count[] the global positions ranks of sp deliver of `from` in
 * their batches [k0, k1) of it (k1 = UINT64_MAX: to its end); wraps
 * (padding) go to *wraps. Returns the batches each rank has of it. */
static uint64_t deliver(const rf_rest *from, const split *sp, uint64_t k0, uint64_t k1,
			uint32_t *count, uint64_t *wraps)
{
	uint64_t L = from->rank_len, n = from->batches;
	for (uint32_t r = 0; r < sp->world; r++)
		for (uint64_t q = k0 * sp->bs; q < L && q < RF_MIN(k1, n) * sp->bs; q++) {
			uint64_t s = sp->blocked ? r * L + q : r + (uint64_t)sp->world * q;
			if (s >= from->total) {
				(*wraps)++;
				continue;
			}
			count[rfi_rest_global(from, r, sp->world, sp->blocked, q)]++;
		}
	return n;
}

static void whole(rf_rest *r, uint64_t n, const split *sp)
{
	r->epoch = 0;
	r->runs = 1;
	r->start[0] = 0;
	r->len[0] = n;
	rfi_rest_split(r, sp->world, sp->tail, sp->bs, sp->drop_last);
}

/* A straight run of sp over n positions, against: sp for k batches, then
 * sp2 over what is left (for k2 of its batches, then sp3 over what is left
 * of that, when sp3 is given). */
static void check_chain(uint64_t n, const split *sp, uint64_t k, const split *sp2, uint64_t k2,
			const split *sp3, rf_rest *a, rf_rest *b, rf_rest *c)
{
	uint32_t straight[64] = { 0 }, got[64] = { 0 };
	uint64_t wraps = 0, extra = 0;
	whole(a, n, sp);
	deliver(a, sp, 0, UINT64_MAX, straight, &wraps);
	deliver(a, sp, 0, k, got, &extra);
	uint64_t delivered = RF_MIN(a->rank_len, a->batches * sp->bs);
	cr_assert_eq(rfi_rest_left(a, sp->world, sp->blocked, a->rank_len, delivered, k * sp->bs, b),
		     0);
	rfi_rest_split(b, sp2->world, sp2->tail, sp2->bs, sp2->drop_last);
	const split *last = sp2;
	rf_rest *tail = b;
	if (sp3) {
		deliver(b, sp2, 0, k2, got, &extra);
		delivered = RF_MIN(b->rank_len, b->batches * sp2->bs);
		cr_assert_eq(rfi_rest_left(b, sp2->world, sp2->blocked, b->rank_len, delivered,
					  k2 * sp2->bs, c), 0);
		rfi_rest_split(c, sp3->world, sp3->tail, sp3->bs, sp3->drop_last);
		last = sp3;
		tail = c;
	}
	if (tail->runs)
		deliver(tail, last, 0, UINT64_MAX, got, &extra);
	/* Each position the straight run delivers, once (padding repeats
	 * positions as wraps, never a position twice otherwise). Dropping
	 * (rank_tail DROP, drop_last) drops on every split: at most once, and
	 * what a later split drops is less than a batch per rank plus a
	 * position per rank. */
	int exact = sp->tail == RF_RANK_TAIL_PAD && !sp->drop_last;
	uint64_t missing = 0, bound = (uint64_t)sp2->world * sp2->bs;
	if (sp3)
		bound += (uint64_t)sp3->world * sp3->bs;
	for (uint64_t g = 0; g < n; g++) {
		uint32_t want = straight[g] ? 1 : 0;
		if (!exact && got[g] < want) {
			missing++;
			continue;
		}
		cr_assert_eq(got[g], want, "n %llu, W %u bs %u tail %d drop_last %d blocked %d, "
			     "k %llu -> W %u bs %u (k2 %llu%s): position %llu delivered %u times, "
			     "want %u", (unsigned long long)n, sp->world, sp->bs, sp->tail,
			     sp->drop_last, sp->blocked, (unsigned long long)k, sp2->world, sp2->bs,
			     (unsigned long long)k2, sp3 ? ", then another split" : "",
			     (unsigned long long)g, got[g], want);
	}
	cr_assert_leq(missing, bound);
	/* a rest is split like an epoch: a rank's batches never outnumber an
	 * epoch's on that split */
	rf_rest w;
	whole(&w, n, last);
	cr_assert_leq(tail->batches, w.batches);
}

Test(elastic, rest_covers_what_a_straight_run_delivers)
{
	static rf_rest a, b, c;
	static const uint64_t sizes[] = { 1, 2, 3, 5, 7, 12, 17, 24, 31, 40 };
	static const uint32_t bss[] = { 1, 2, 3, 5 };
	size_t cases = 0;
	for (size_t ni = 0; ni < sizeof(sizes) / sizeof(*sizes); ni++)
	for (uint32_t W = 1; W <= 4; W++)
	for (int mode = 0; mode < 8; mode++) {
		uint64_t n = sizes[ni];
		split sp = { .world = W, .bs = bss[mode % 4 == 3 ? 2 : mode % 4], .tail = mode & 1,
			     .drop_last = (mode >> 1) & 1, .blocked = (mode >> 2) & 1 };
		whole(&a, n, &sp);
		for (uint64_t k = 0; k <= a.batches; k++)
		for (uint32_t W2 = 1; W2 <= 4; W2++)
		for (size_t bi = 0; bi < 4; bi++) {
			split sp2 = sp;
			sp2.world = W2;
			sp2.bs = bss[bi];
			if (rfi_rank_len(n, W, sp.tail) == 0)
				continue; /* the loader refuses such a split (RF_EEMPTY) */
			check_chain(n, &sp, k, &sp2, 0, NULL, &a, &b, &c);
			cases++;
			/* and again from there: 3 ranks, batches of 2 */
			split sp3 = sp2;
			sp3.world = 3;
			sp3.bs = 2;
			if (b.runs)
				for (uint64_t k2 = 0; k2 <= b.batches; k2++, cases++)
					check_chain(n, &sp, k, &sp2, k2, &sp3, &a, &b, &c);
		}
	}
	cr_log_info("%zu chains checked", cases);
}

Test(elastic, runs_beyond_the_limit_are_refused)
{
	static rf_rest a, b;
	/* blocked ranks of 2 positions, each having taken 1: every rank leaves
	 * a run of its own, 1100 of them */
	split sp = { .world = 1100, .bs = 1, .tail = RF_RANK_TAIL_PAD, .blocked = 1 };
	whole(&a, 2200, &sp);
	cr_assert_eq(rfi_rest_left(&a, 1100, 1, 2, 2, 1, &b), -E2BIG);
	/* interleaved, the same ranks leave one run */
	cr_assert_eq(rfi_rest_left(&a, 1100, 0, 2, 2, 1, &b), 0);
	cr_assert_eq(b.runs, 1);
	cr_assert_eq(b.start[0], 1100);
	cr_assert_eq(b.len[0], 1100);
}

/* A version-2 header whose byte count is not a whole version-2 state is
 * refused before any field is read (the fuzzer found a 24-byte one read
 * as 152): each is exactly as long as it claims, in a buffer of that size,
 * with a correct checksum, so the count is the only thing wrong. */
Test(elastic, a_version_2_header_of_the_wrong_size_is_refused)
{
	const uint32_t sizes[] = { 24, 32, 152, 160, 167, 168, 176, 184 + 1,
				   (uint32_t)RF_STATE_V2_BYTES(RF_REST_MAX_RUNS + 1) };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t n = sizes[k];
		uint8_t *s = calloc(1, n);
		cr_assert(s);
		memcpy(s, "rfstate", 8);
		s[8] = 2;
		for (int i = 0; i < 4; i++)
			s[12 + i] = (uint8_t)(n >> (8 * i));
		if (n >= 156) /* a run count that matches none of these sizes */
			s[152] = 1;
		uint64_t sum = rfi_state_checksum(s, n - 8);
		for (int i = 0; i < 8; i++)
			s[n - 8 + i] = (uint8_t)(sum >> (8 * i));
		rf_state_info x;
		char err[256] = "";
		cr_assert_eq(rf_state_parse(s, n, &x, err, sizeof(err)), RF_ESTATE, "%u bytes", n);
		cr_assert(strstr(err, "corrupted header"), "%u bytes: %s", n, err);
		free(s);
	}
}

/* ---- loaders --------------------------------------------------------------- */

static char *dir;
static void setup(void) { dir = tu_tree("elastic", 4, 15); } /* 60 samples */
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

/* The state rank 0 of cfg's world saves after k batches, every rank having
 * taken k batches; their ids counted into count[]. Returns the state's size. */
static size_t run_ranks(const rf_config *cfg, size_t k, uint32_t *count, uint8_t *state)
{
	size_t len = 0;
	for (int r = 0; r < cfg->world_size; r++) {
		rf_config c = *cfg;
		c.rank = r;
		rf_loader *l;
		char err[512];
		cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
		tu_batch *b;
		size_t got = tu_take(l, k, &b);
		cr_assert_eq(got, k, "rank %d of %d took %zu of %zu batches", r, cfg->world_size, got, k);
		for (size_t i = 0; i < got; i++)
			for (uint32_t j = 0; j < b[i].count; j++)
				count[b[i].ids[j]]++;
		tu_batches_free(b, got);
		if (r == 0) {
			int n = rf_loader_state_save(l, state, RF_STATE_MAX_BYTES);
			cr_assert_gt(n, 0, "%s", rf_strerror(n));
			len = (size_t)n;
		}
		rf_loader_destroy(l);
	}
	return len;
}

/* Every rank of cfg's world resumes from state[len] and runs to the end
 * (cfg.epochs); ids of epoch `epoch` counted into count[], of later epochs
 * into later[] (when not NULL). */
static void finish_ranks(const rf_config *cfg, const uint8_t *state, size_t len, uint64_t epoch,
			 uint32_t *count, uint32_t *later)
{
	for (int r = 0; r < cfg->world_size; r++) {
		rf_config c = *cfg;
		c.rank = r;
		c.resume_state = state;
		c.resume_state_len = len;
		rf_loader *l;
		char err[512];
		cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
		rf_order_info oi;
		cr_assert_eq(rf_loader_order(l, &oi), 0);
		tu_batch *b;
		size_t got = tu_take(l, SIZE_MAX, &b);
		/* the rest's batches end its epoch, from epoch_first_batch on */
		if (got && b[0].epoch == epoch)
			cr_assert_eq(b[0].index, oi.epoch_first_batch);
		for (size_t i = 0; i < got; i++) {
			cr_assert(b[i].epoch == epoch || later, "a batch of epoch %u", b[i].epoch);
			for (uint32_t j = 0; j < b[i].count; j++)
				(b[i].epoch == epoch ? count : later)[b[i].ids[j]]++;
		}
		tu_batches_free(b, got);
		rf_loader_destroy(l);
	}
}

static void assert_each_once(const uint32_t *count, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(count[i], 1, "%s: sample %zu delivered %u times", what, i, count[i]);
}

/* cfg on W ranks for k batches, then on W2 ranks with batches of bs2 to the
 * end of the epoch: each of n samples once. */
static void elastic_once(const rf_config *cfg, size_t n, int W, size_t k, int W2, int bs2,
			 const char *what)
{
	uint32_t *count = calloc(n, sizeof(*count));
	static uint8_t state[RF_STATE_MAX_BYTES];
	rf_config a = *cfg;
	a.world_size = W;
	a.epochs = 1;
	size_t len = run_ranks(&a, k, count, state);
	rf_config b = a;
	b.world_size = W2;
	b.batch_size = bs2;
	finish_ranks(&b, state, len, 0, count, NULL);
	char label[256];
	snprintf(label, sizeof(label), "%s: %d ranks, %zu batches of %d, then %d ranks, batches "
		 "of %d", what, W, k, cfg->batch_size, W2, bs2);
	assert_each_once(count, n, label);
	free(count);
}

Test(elastic, files_2_to_3_and_4_to_1_ranks, .init = setup, .fini = teardown, .timeout = 120)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.batch_size = 4;
	cfg.raw = 1;
	/* 30 per rank, 12 taken each; 36 left: 12 a rank */
	elastic_once(&cfg, 60, 2, 3, 3, 4, "files");
	/* 15 per rank, 4 taken each: 44 left for one rank */
	elastic_once(&cfg, 60, 4, 1, 1, 4, "files");
	/* and interpreted pixels rather than raw bytes */
	cfg.raw = 0;
	elastic_once(&cfg, 60, 2, 3, 3, 4, "files, decoded");
	tu_assert_no_leaks();
}

Test(elastic, another_batch_size, .init = setup, .fini = teardown, .timeout = 120)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.raw = 1;
	cfg.batch_size = 4;
	elastic_once(&cfg, 60, 2, 3, 2, 7, "batch 4 -> 7");
	elastic_once(&cfg, 60, 3, 2, 3, 1, "batch 4 -> 1");
	cfg.batch_size = 5;
	elastic_once(&cfg, 60, 1, 4, 4, 2, "1 rank of 5 -> 4 ranks of 2");
	/* drop_last: the short batch the straight run leaves out stays out */
	cfg.batch_size = 7; /* 30 per rank: 4 batches, 2 positions left out per rank */
	cfg.drop_last = 1;
	uint32_t count[60] = { 0 };
	static uint8_t state[RF_STATE_MAX_BYTES];
	cfg.world_size = 2;
	cfg.epochs = 1;
	size_t len = run_ranks(&cfg, 1, count, state);
	rf_config b = cfg;
	b.batch_size = 3; /* 46 left, of which the straight run leaves 4 out: 42, 21 a rank */
	finish_ranks(&b, state, len, 0, count, NULL);
	size_t once = 0;
	for (int i = 0; i < 60; i++) {
		cr_assert_leq(count[i], 1);
		once += count[i];
	}
	cr_assert_eq(once, 56, "drop_last: %zu samples delivered, a straight run delivers 56", once);
}

Test(elastic, padding_and_the_next_epoch_whole, .init = setup, .fini = teardown, .timeout = 120)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.raw = 1;
	cfg.batch_size = 4;
	cfg.world_size = 2;
	cfg.epochs = 2;
	uint32_t count[60] = { 0 }, later[60] = { 0 };
	static uint8_t state[RF_STATE_MAX_BYTES];
	size_t len = run_ranks(&cfg, 1, count, state); /* 8 taken, 52 left */
	rf_config b = cfg;
	b.world_size = 3; /* 52 over 3 ranks: 18, 18, 18 with two positions padded */
	finish_ranks(&b, state, len, 0, count, later);
	size_t total = 0;
	for (int i = 0; i < 60; i++) {
		cr_assert_geq(count[i], 1, "sample %d not delivered", i);
		total += count[i];
	}
	cr_assert_eq(total, 62, "60 samples and 2 padded places: %zu", total);
	/* the next epoch is whole on the new ranks: 60 over 3, each once */
	assert_each_once(later, 60, "the next epoch");
}

Test(elastic, a_resume_of_a_resume, .init = setup, .fini = teardown, .timeout = 120)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.raw = 1;
	cfg.batch_size = 3;
	cfg.world_size = 2;
	cfg.epochs = 1;
	uint32_t count[60] = { 0 };
	static uint8_t s1[RF_STATE_MAX_BYTES], s2[RF_STATE_MAX_BYTES];
	size_t len = run_ranks(&cfg, 2, count, s1); /* 12 taken, 48 left */
	/* 3 ranks of 16, batches of 4: one batch each, then saved */
	rf_config b = cfg;
	b.world_size = 3;
	b.batch_size = 4;
	b.resume_state = s1;
	b.resume_state_len = len;
	size_t len2 = run_ranks(&b, 1, count, s2);
	rf_state_info x;
	char err[256];
	cr_assert_eq(rf_state_parse(s2, len2, &x, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(x.version, 2);
	cr_assert_eq(x.rest_runs, 1);
	cr_assert_eq(x.rest_samples, 48);
	cr_assert_eq(len2, 168 + 16);
	/* 36 left: 4 ranks of 9 */
	rf_config c = cfg;
	c.world_size = 4;
	finish_ranks(&c, s2, len2, 0, count, NULL);
	assert_each_once(count, 60, "2 ranks -> 3 -> 4");
}

/* A resumed loader saved inside its rest resumes exactly on the same
 * split; a state moved to its epoch's start stands at the rest's first
 * batch. */
Test(elastic, a_rest_resumes_exactly, .init = setup, .fini = teardown, .timeout = 120)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.batch_size = 4;
	cfg.world_size = 2;
	cfg.epochs = 2;
	uint32_t count[60] = { 0 };
	static uint8_t s1[RF_STATE_MAX_BYTES], s2[RF_STATE_MAX_BYTES];
	size_t len = run_ranks(&cfg, 2, count, s1);
	rf_config b = cfg;
	b.world_size = 3;
	b.rank = 1;
	b.resume_state = s1;
	b.resume_state_len = len;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &b, err, sizeof(err)), 0, "%s", err);
	tu_batch *ref;
	size_t nref = tu_take(l, SIZE_MAX, &ref);
	rf_loader_destroy(l);
	/* 44 left: 15 a rank, 4 batches; epoch 1 whole: 20 a rank, 5 batches */
	cr_assert_eq(nref, 4 + 5);
	cr_assert_eq(ref[0].index, 1, "the rest's 4 batches are the epoch's last of 5");
	for (size_t k = 0; k <= nref; k++) {
		cr_assert_eq(rf_loader_create(&l, &b, err, sizeof(err)), 0, "%s", err);
		tu_batch *got;
		size_t n = tu_take(l, k, &got);
		tu_batches_free(got, n);
		int len2 = rf_loader_state_save(l, s2, sizeof(s2));
		cr_assert_gt(len2, 0);
		rf_loader_destroy(l);
		rf_config c = b;
		c.resume_state = s2;
		c.resume_state_len = (size_t)len2;
		cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
		n = tu_take(l, SIZE_MAX, &got);
		rf_loader_destroy(l);
		cr_assert_eq(n, nref - k);
		for (size_t i = 0; i < n; i++)
			tu_assert_same_batch(&ref[k + i], &got[i], "a rest resumed on its own split");
		tu_batches_free(got, n);
		/* moved to the start of epoch 0 (rf_state_seek, Python's set_epoch):
		 * the rest's first batch */
		cr_assert_eq(rf_state_seek(s2, (size_t)len2, 0, err, sizeof(err)), 0, "%s", err);
		rf_state_info x;
		cr_assert_eq(rf_state_parse(s2, (size_t)len2, &x, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(x.next_batch, 1);
		cr_assert_eq(x.epoch_first_batch, 1);
	}
	tu_batches_free(ref, nref);
	tu_assert_no_leaks();
}

/* The tree packed into tar shards of about 12 samples. */
static char *pack_tree(void)
{
	char *out;
	cr_assert(asprintf(&out, "%s-shards", dir) > 0);
	rf_pack_opts o = { .source = dir, .out = out, .shard_size = 12 * 2048 };
	rf_pack_result res;
	char err[512];
	cr_assert_eq(rfi_pack_run(&o, &res, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(res.samples, 60);
	cr_assert_gt(res.shards, 2);
	return out;
}

Test(elastic, sequential_shards, .init = setup, .fini = teardown, .timeout = 120)
{
	char *shards = pack_tree();
	rf_config cfg;
	tu_config(&cfg, shards);
	cfg.raw = 1;
	cfg.batch_size = 4;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	/* each rank reads its own run: what is left is a run per rank */
	elastic_once(&cfg, 60, 2, 3, 3, 4, "sequential shards");
	elastic_once(&cfg, 60, 4, 1, 1, 4, "sequential shards");
	elastic_once(&cfg, 60, 3, 2, 2, 3, "sequential shards");
	tu_rmrf(shards);
	free(shards);
}

Test(elastic, token_windows, .timeout = 120)
{
	char *toks = tu_tmpdir("elastic-tokens");
	/* 2 shards of 161 tokens: 20 windows of 8 + 1 each */
	rf_token_gen_opts g = { .out = toks, .shards = 2, .shard_tokens = 161, .vocab = 50257,
				.seed = 3 };
	char err[512];
	cr_assert_eq(rfi_token_gen(&g, err, sizeof(err)), 0, "%s", err);
	rf_config cfg;
	tu_config(&cfg, toks);
	cfg.seq_len = 8;
	cfg.batch_size = 2;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_order_info oi;
	rf_loader_order(l, &oi);
	rf_loader_destroy(l);
	cr_assert_eq(oi.dataset_samples, 40);
	elastic_once(&cfg, 40, 2, 1, 3, 2, "token windows"); /* 4 taken, 36 left: 12 a rank */
	elastic_once(&cfg, 40, 4, 1, 1, 3, "token windows");
	tu_rmrf(toks);
	free(toks);
}

/* Sequential shards on 1100 ranks of 2 samples, each having taken one:
 * 1100 runs left, more than a state holds. */
Test(elastic, too_many_runs_refused, .timeout = 120)
{
	char *src = tu_tmpdir("elastic-raw");
	for (int i = 0; i < 2200; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "f%05d.bin", i);
		tu_write(src, rel, rel, strlen(rel));
	}
	char *out;
	cr_assert(asprintf(&out, "%s-shards", src) > 0);
	rf_pack_opts o = { .source = src, .out = out, .index_flags = RF_INDEX_RAW,
			   .shard_size = 64 << 10 };
	rf_pack_result res;
	char err[512];
	cr_assert_eq(rfi_pack_run(&o, &res, err, sizeof(err)), 0, "%s", err);
	rf_config cfg;
	tu_config(&cfg, out);
	cfg.raw = 1;
	cfg.batch_size = 1;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	cfg.world_size = 1100;
	cfg.rank = 0;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *b;
	size_t n = tu_take(l, 1, &b);
	tu_batches_free(b, n);
	static uint8_t state[RF_STATE_MAX_BYTES];
	int len = rf_loader_state_save(l, state, sizeof(state));
	cr_assert_gt(len, 0);
	rf_loader_destroy(l);
	cfg.world_size = 1;
	cfg.resume_state = state;
	cfg.resume_state_len = (size_t)len;
	l = (rf_loader *)0x1;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ESTATEMISMATCH, "%s", err);
	cr_assert_null(l);
	cr_assert(strstr(err, "more than 1024 runs") && strstr(err, "resume on 1100 ranks"), "%s",
		  err);
	/* on the saving split it resumes */
	cfg.world_size = 1100;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
	tu_rmrf(out);
	tu_rmrf(src);
	free(out);
	free(src);
}
