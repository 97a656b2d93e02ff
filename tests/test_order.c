/* test_order.c - order: the Feistel permutation is a bijection; it shuffles
 * well (no correlation between position and sample id, or between
 * neighbours, across seeds; each position's sample uniform, pairs and whole
 * permutations of small sets uniform: chi-square tests); every sample is
 * delivered exactly once per epoch (drop_last off and on, batch sizes that
 * do not divide N); a seed reproduces its order, epochs and seeds differ;
 * labels travel with their samples; endless mode keeps going. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "source/source.h"
#include "sample/order.h"
#include "testutil.h"

Test(order, perm_is_bijection)
{
	uint64_t ns[] = { 1, 2, 3, 7, 64, 100, 1000, 4097 };
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint64_t n = ns[k];
		uint8_t *seen = calloc(n, 1);
		rf_perm p;
		rfi_perm_init(&p, n, 42, 3, 1);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t x = rfi_perm_at(&p, i);
			cr_assert(x < n);
			cr_assert(!seen[x], "n=%llu: %llu twice", (unsigned long long)n, (unsigned long long)x);
			seen[x] = 1;
		}
		free(seen);
	}
}

Test(order, perm_depends_on_seed_and_epoch)
{
	rf_perm a, b, c;
	rfi_perm_init(&a, 1000, 1, 0, 1);
	rfi_perm_init(&b, 1000, 1, 1, 1);
	rfi_perm_init(&c, 1000, 2, 0, 1);
	int same_ab = 0, same_ac = 0, fixed = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		same_ab += rfi_perm_at(&a, i) == rfi_perm_at(&b, i);
		same_ac += rfi_perm_at(&a, i) == rfi_perm_at(&c, i);
		fixed += rfi_perm_at(&a, i) == i;
	}
	/* a random permutation agrees with another in about 1 place of n */
	cr_assert_lt(same_ab, 10);
	cr_assert_lt(same_ac, 10);
	cr_assert_lt(fixed, 10);
}

/* The chi-square value that a statistic with df degrees of freedom exceeds
 * with probability about 1e-6 (Wilson-Hilferty). The seeds are fixed, so a
 * test is deterministic; the threshold only has to be far from where a
 * uniform shuffle lands (many statistics are taken here: at 1e-4, one fixed
 * run of seeds was unlucky once while building this) and far below where a
 * biased one does (the 4-round network this replaced scored 10 to 100 times
 * the threshold on these tests). */
static double chi2_crit(double df)
{
	const double z = 4.753; /* the normal's 1 - 1e-6 quantile */
	double a = 2.0 / (9.0 * df);
	return df * pow(1.0 - a + z * sqrt(a), 3.0);
}

Test(order, no_correlation_between_position_and_id)
{
	uint64_t ns[] = { 1000, 1061 }; /* 1061: cycle-walking from 4096 */
	const int S = 200;
	for (size_t k = 0; k < 2; k++) {
		uint64_t n = ns[k];
		double mean = 0, worst = 0, serial = 0;
		double cells[10][10] = { { 0 } };
		for (int s = 0; s < S; s++) {
			rf_perm p;
			rfi_perm_init(&p, n, 1 + (uint64_t)s, (uint64_t)s % 3, 1);
			double m = (double)(n - 1) / 2, sxy = 0, sxx = 0, sp = 0, prev = 0;
			for (uint64_t i = 0; i < n; i++) {
				double x = (double)i - m, y = (double)rfi_perm_at(&p, i) - m;
				sxy += x * y;
				sxx += x * x;
				if (i)
					sp += prev * y;
				prev = y;
				cells[i * 10 / n][rfi_perm_at(&p, i) * 10 / n]++;
			}
			double r = sxy / sxx;
			mean += r / S;
			serial += sp / sxx / S;
			worst = fmax(worst, fabs(r));
		}
		/* r of a random permutation: mean 0, standard deviation 1/sqrt(n) */
		double sd = 1.0 / sqrt((double)n);
		cr_assert_lt(fabs(mean), 4.5 * sd / sqrt(S), "n %llu: mean r %g",
			     (unsigned long long)n, mean);
		cr_assert_lt(worst, 5.5 * sd, "n %llu: |r| up to %g", (unsigned long long)n, worst);
		cr_assert_lt(fabs(serial), 4.5 * sd / sqrt(S), "n %llu: neighbours correlate: %g",
			     (unsigned long long)n, serial);
		/* position decile x id decile: independent */
		double chi = 0, e = (double)n * S / 100;
		for (int a = 0; a < 10; a++)
			for (int b = 0; b < 10; b++)
				chi += (cells[a][b] - e) * (cells[a][b] - e) / e;
		cr_assert_lt(chi, chi2_crit(81), "n %llu: chi2(81) = %g", (unsigned long long)n, chi);
	}
}

/* Small sets show what a few Feistel rounds get wrong: over many seeds, the
 * first and last positions' samples, the pair at positions (0, 1), and the
 * whole permutation of 6 must each be uniform. */
Test(order, small_sets_uniform_over_seeds)
{
	uint64_t ns[] = { 2, 3, 5, 10, 17, 100 };
	const int S = 50000;
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint64_t n = ns[k];
		int bins = n < 20 ? (int)n : 20;
		double first[20] = { 0 }, last[20] = { 0 };
		for (int s = 0; s < S; s++) {
			rf_perm p;
			rfi_perm_init(&p, n, 5000 + (uint64_t)s, 0, 1);
			first[rfi_perm_at(&p, 0) * (uint64_t)bins / n]++;
			last[rfi_perm_at(&p, n - 1) * (uint64_t)bins / n]++;
		}
		double c0 = 0, c1 = 0;
		for (int b = 0; b < bins; b++) {
			/* ids in bin b: those with id * bins / n == b */
			uint64_t lo = ((uint64_t)b * n + (uint64_t)bins - 1) / (uint64_t)bins;
			uint64_t hi = ((uint64_t)(b + 1) * n + (uint64_t)bins - 1) / (uint64_t)bins;
			double e = (double)S * (double)(hi - lo) / (double)n;
			c0 += (first[b] - e) * (first[b] - e) / e;
			c1 += (last[b] - e) * (last[b] - e) / e;
		}
		cr_assert_lt(c0, chi2_crit(bins - 1), "n %llu: first position chi2(%d) = %g",
			     (unsigned long long)n, bins - 1, c0);
		cr_assert_lt(c1, chi2_crit(bins - 1), "n %llu: last position chi2(%d) = %g",
			     (unsigned long long)n, bins - 1, c1);
	}
	/* ordered pairs at positions 0 and 1 of 5: 20 of them */
	double pairs[5][5] = { { 0 } };
	for (int s = 0; s < 50000; s++) {
		rf_perm p;
		rfi_perm_init(&p, 5, 7 + (uint64_t)s, 1, 1);
		pairs[rfi_perm_at(&p, 0)][rfi_perm_at(&p, 1)]++;
	}
	double chi = 0;
	for (int a = 0; a < 5; a++)
		for (int b = 0; b < 5; b++)
			if (a != b)
				chi += (pairs[a][b] - 2500) * (pairs[a][b] - 2500) / 2500;
	cr_assert_eq(pairs[0][0] + pairs[1][1] + pairs[2][2] + pairs[3][3] + pairs[4][4], 0);
	cr_assert_lt(chi, chi2_crit(19), "pairs of 5: chi2(19) = %g", chi);
	/* the 720 permutations of 6, each about 200 times in 144000 seeds */
	double *count = calloc(720, sizeof(*count));
	for (int s = 0; s < 144000; s++) {
		rf_perm p;
		rfi_perm_init(&p, 6, 11 + (uint64_t)s, 0, 1);
		unsigned used = 0, code = 0;
		for (unsigned i = 0; i < 6; i++) {
			unsigned v = (unsigned)rfi_perm_at(&p, i), below = 0;
			for (unsigned j = 0; j < v; j++)
				below += !(used >> j & 1);
			used |= 1u << v;
			code = code * (6 - i) + below; /* Lehmer code */
		}
		count[code]++;
	}
	chi = 0;
	for (int i = 0; i < 720; i++)
		chi += (count[i] - 200) * (count[i] - 200) / 200;
	cr_assert_lt(chi, chi2_crit(719), "permutations of 6: chi2(719) = %g", chi);
	free(count);
}

static void check_epochs(const char *dir, int batch, int drop_last, int epochs)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.batch_size = batch;
	cfg.drop_last = drop_last;
	cfg.epochs = epochs;
	cfg.seed = 9;
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, dir, 0, err, sizeof(err)), 0);
	size_t N = idx.count;

	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	size_t per_epoch = drop_last ? N / (size_t)batch * (size_t)batch : N;
	uint32_t *count = calloc(N, sizeof(*count));
	rf_batch *b;
	int r;
	uint64_t got = 0, batches = 0;
	uint32_t epoch = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq(b->index, batches);
		if (b->epoch != epoch) {
			/* an epoch ended: every sample once (drop_last: at most once) */
			for (size_t i = 0; i < N; i++) {
				if (drop_last)
					cr_assert_leq(count[i], 1);
				else
					cr_assert_eq(count[i], 1, "epoch %u sample %zu seen %u times", epoch, i, count[i]);
			}
			memset(count, 0, N * sizeof(*count));
			epoch = b->epoch;
		}
		cr_assert(b->count == (uint32_t)batch || (!drop_last && b->count < (uint32_t)batch));
		for (uint32_t i = 0; i < b->count; i++) {
			cr_assert_lt(b->ids[i], N);
			count[b->ids[i]]++;
			cr_assert_eq(b->labels[i], idx.entries[b->ids[i]].label);
		}
		got += b->count;
		batches++;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(rf_loader_next(l, &b), RF_EOF, "EOF is sticky");
	cr_assert_eq(got, per_epoch * (uint64_t)epochs);
	cr_assert_eq(epoch, (uint32_t)epochs - 1);
	rf_stats st;
	rf_loader_stats(l, &st);
	cr_assert_eq(st.samples, got);
	cr_assert_eq(st.bad_samples, 0);
	rf_loader_destroy(l);
	free(count);
	rfi_index_free(&idx);
}

Test(order, every_sample_once_per_epoch)
{
	char *d = tu_tree("once", 3, 11); /* 33 samples */
	check_epochs(d, 8, 0, 3);
	check_epochs(d, 8, 1, 2);
	check_epochs(d, 33, 0, 2);
	check_epochs(d, 5, 0, 2);
	check_epochs(d, 1, 0, 1);
	tu_rmrf(d);
	free(d);
}

Test(order, seed_reproduces_epochs_differ)
{
	char *d = tu_tree("seed", 2, 20); /* 40 samples */
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.epochs = 2;
	cfg.seed = 1234;
	size_t n1, n2, n3;
	uint64_t *a = tu_drain_ids(&cfg, &n1);
	cfg.threads = 1; /* the order does not depend on the thread count */
	cfg.io_depth = 3;
	uint64_t *b = tu_drain_ids(&cfg, &n2);
	cfg.seed = 1235;
	uint64_t *c = tu_drain_ids(&cfg, &n3);
	cr_assert_eq(n1, 80);
	cr_assert_eq(n2, 80);
	cr_assert_eq(memcmp(a, b, n1 * sizeof(*a)), 0, "same seed, same order");
	cr_assert_neq(memcmp(a, a + 40, 40 * sizeof(*a)), 0, "epoch 1 differs from epoch 0");
	cr_assert_neq(memcmp(a, c, 40 * sizeof(*a)), 0, "another seed, another order");
	cfg.shuffle = 0;
	cfg.epochs = 1;
	uint64_t *s = tu_drain_ids(&cfg, &n3);
	for (size_t i = 0; i < n3; i++)
		cr_assert_eq(s[i], i, "shuffle off: index order");
	free(a);
	free(b);
	free(c);
	free(s);
	tu_rmrf(d);
	free(d);
}

Test(order, endless_runs_past_epochs)
{
	char *d = tu_tree("endless", 1, 10);
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.epochs = 0;
	cfg.batch_size = 4; /* 3 batches an epoch */
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(rf_loader_next(l, &b), 0);
		cr_assert_eq(b->epoch, (uint32_t)(i / 3));
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
	tu_rmrf(d);
	free(d);
}
