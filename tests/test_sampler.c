/* test_sampler.c - samplers: the weighted sampler (alias table) draws each
 * sample with probability weight / sum (chi-square over many draws; a weight
 * of 0 is never drawn), from the manifest's weight column or class-balanced
 * (each class equally often: chi-square on class frequencies through a real
 * loader), samples_per_epoch draws per epoch, the same draws whatever the
 * thread count, other draws each epoch; sequential order; the config
 * contradictions refused with a message. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "sample/alias.h"
#include "sample/sampler.h"
#include "testutil.h"

/* See test_order.c: exceeded with probability about 1e-6 when uniform. */
static double chi2_crit(double df)
{
	const double z = 4.753;
	double a = 2.0 / (9.0 * df);
	return df * pow(1.0 - a + z * sqrt(a), 3.0);
}

/* Pearson's statistic of observed counts against probabilities p (sum 1);
 * cells with p = 0 must be empty. Returns the statistic, *df its freedom. */
static double chi2(const uint64_t *obs, const double *p, size_t k, uint64_t total, int *df)
{
	double c = 0;
	*df = -1;
	for (size_t i = 0; i < k; i++) {
		if (p[i] == 0) {
			cr_assert_eq(obs[i], 0, "cell %zu has weight 0 but was drawn %llu times", i,
				     (unsigned long long)obs[i]);
			continue;
		}
		double e = p[i] * (double)total;
		c += ((double)obs[i] - e) * ((double)obs[i] - e) / e;
		(*df)++;
	}
	return c;
}

Test(sampler, alias_draws_follow_the_weights)
{
	/* skewed weights, zeros, one huge, many small */
	enum { N = 300 };
	double w[N], p[N], sum = 0;
	for (int i = 0; i < N; i++) {
		w[i] = i % 7 == 3 ? 0 : i == 5 ? 40 : 0.5 + (i % 11);
		sum += w[i];
	}
	for (int i = 0; i < N; i++)
		p[i] = w[i] / sum;
	rf_index idx = { .count = N, .weights = w };
	rf_order o;
	char err[256];
	const uint64_t draws = 600000;
	cr_assert_eq(rfi_order_init(&o, &idx, idx.count, RF_SAMPLER_WEIGHTED, draws, 42, 0, 1,
				   RF_RANK_TAIL_PAD, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rfi_order_memory(&o), (size_t)N * RF_ALIAS_BYTES_PER_SAMPLE);
	cr_assert_eq(RF_ALIAS_BYTES_PER_SAMPLE, 8);
	uint64_t *obs = calloc(N, sizeof(*obs));
	for (uint64_t g = 0; g < draws; g++)
		obs[rfi_order_sample(&o, 3, g, 0)]++;
	int df;
	double c = chi2(obs, p, N, draws, &df);
	cr_assert_lt(c, chi2_crit(df), "chi2(%d) = %g", df, c);
	/* replacements of a bad sample are weighted draws too */
	memset(obs, 0, N * sizeof(*obs));
	for (uint64_t g = 0; g < draws; g++)
		obs[rfi_order_sample(&o, 3, g % 1000, 1 + (uint32_t)(g / 1000))]++;
	c = chi2(obs, p, N, draws, &df);
	cr_assert_lt(c, chi2_crit(df), "replacements: chi2(%d) = %g", df, c);
	/* pure function of (seed, epoch, position, attempt) */
	cr_assert_eq(rfi_order_sample(&o, 3, 12345, 0), rfi_order_sample(&o, 3, 12345, 0));
	int same = 0;
	for (uint64_t g = 0; g < 1000; g++)
		same += rfi_order_sample(&o, 3, g, 0) == rfi_order_sample(&o, 4, g, 0);
	cr_assert_lt(same, 100, "epochs draw differently (%d of 1000 equal)", same);
	free(obs);
	rfi_order_free(&o);

	/* bad weights */
	double bad[3] = { 1, -1, 2 };
	rf_index b = { .count = 3, .weights = bad };
	cr_assert_eq(rfi_order_init(&o, &b, b.count, RF_SAMPLER_WEIGHTED, 0, 1, 0, 1, RF_RANK_TAIL_PAD,
				   err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "sample 1"), "%s", err);
	double zero[3] = { 0, 0, 0 };
	b.weights = zero;
	cr_assert_eq(rfi_order_init(&o, &b, b.count, RF_SAMPLER_WEIGHTED, 0, 1, 0, 1, RF_RANK_TAIL_PAD,
				   err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "sum to 0"), "%s", err);
	double one[1] = { 3 };
	b = (rf_index){ .count = 1, .weights = one };
	cr_assert_eq(rfi_order_init(&o, &b, b.count, RF_SAMPLER_WEIGHTED, 10, 1, 0, 1, RF_RANK_TAIL_PAD,
				   err, sizeof(err)), 0, "%s", err);
	for (uint64_t g = 0; g < 10; g++)
		cr_assert_eq(rfi_order_sample(&o, 0, g, 0), 0);
	rfi_order_free(&o);
}

/* A manifest over 20 images of one folder with classes of 2, 5 and 13
 * samples, and weights (sample i: i % 4, so some are 0). */
static char *uneven_manifest(char **dirp, int with_weights)
{
	char *d = tu_tree("uneven", 1, 20);
	char *man;
	cr_assert(asprintf(&man, "%s/m.tsv", d) > 0);
	FILE *f = fopen(man, "w");
	for (int i = 0; i < 20; i++) {
		int label = i < 2 ? 0 : i < 7 ? 1 : 2;
		if (with_weights)
			fprintf(f, "c0/img_%03d.jpg\t%d\t%d\n", i, label, i % 4);
		else
			fprintf(f, "c0/img_%03d.jpg\t%d\n", i, label);
	}
	fclose(f);
	*dirp = d;
	return man;
}

Test(sampler, balanced_classes_equally_often, .timeout = 120)
{
	char *d, *man = uneven_manifest(&d, 0);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.sampler = RF_SAMPLER_BALANCED;
	cfg.samples_per_epoch = 1500;
	cfg.batch_size = 50;
	cfg.epochs = 2;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_order_info oi;
	rf_loader_order(l, &oi);
	cr_assert_eq(oi.sampler, RF_SAMPLER_BALANCED);
	cr_assert_eq(oi.epoch_samples, 1500);
	cr_assert_eq(oi.batches_per_epoch, 30);
	cr_assert_eq(oi.sampler_bytes, 20 * 8);
	tu_batch *b;
	size_t nb = tu_take(l, SIZE_MAX, &b);
	rf_loader_destroy(l);
	cr_assert_eq(nb, 60);
	uint64_t cls[2][3] = { { 0 } }, per[20] = { 0 };
	for (size_t i = 0; i < nb; i++)
		for (uint32_t k = 0; k < b[i].count; k++) {
			cls[b[i].epoch][b[i].labels[k]]++;
			per[b[i].ids[k]]++;
		}
	double third[3] = { 1.0 / 3, 1.0 / 3, 1.0 / 3 };
	for (int e = 0; e < 2; e++) {
		int df;
		double c = chi2(cls[e], third, 3, 1500, &df);
		cr_assert_lt(c, chi2_crit(df), "epoch %d: classes %llu %llu %llu, chi2(2) = %g", e,
			     (unsigned long long)cls[e][0], (unsigned long long)cls[e][1],
			     (unsigned long long)cls[e][2], c);
	}
	/* within a class, samples equally often: sample i has 1/3 of 1/size */
	double p[20];
	for (int i = 0; i < 20; i++)
		p[i] = 1.0 / 3 / (i < 2 ? 2 : i < 7 ? 5 : 13);
	int df;
	double c = chi2(per, p, 20, 3000, &df);
	cr_assert_lt(c, chi2_crit(df), "per sample chi2(%d) = %g", df, c);
	/* the same draws whatever the threads; other draws with another seed */
	cfg.epochs = 1;
	size_t n1, n2, n3;
	uint64_t *a = tu_drain_ids(&cfg, &n1);
	cfg.threads = 1;
	cfg.io_depth = 2;
	uint64_t *a2 = tu_drain_ids(&cfg, &n2);
	cr_assert_eq(n1, 1500);
	cr_assert_eq(n2, 1500);
	cr_assert_eq(memcmp(a, a2, n1 * sizeof(*a)), 0);
	for (size_t i = 0; i < n1; i++)
		cr_assert_eq(a[i], b[i / 50].ids[i % 50], "the first epoch again");
	cfg.seed = 1;
	uint64_t *a3 = tu_drain_ids(&cfg, &n3);
	cr_assert_neq(memcmp(a, a3, n1 * sizeof(*a)), 0);
	free(a);
	free(a2);
	free(a3);
	tu_batches_free(b, nb);
	tu_rmrf(d);
	free(d);
	free(man);
	tu_assert_no_leaks();
}

Test(sampler, manifest_weights_through_the_loader, .timeout = 120)
{
	char *d, *man = uneven_manifest(&d, 1);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.sampler = RF_SAMPLER_WEIGHTED;
	cfg.samples_per_epoch = 2000;
	cfg.batch_size = 64;
	size_t n;
	uint64_t *ids = tu_drain_ids(&cfg, &n);
	cr_assert_eq(n, 2000);
	uint64_t per[20] = { 0 };
	for (size_t i = 0; i < n; i++)
		per[ids[i]]++;
	double p[20], sum = 0;
	for (int i = 0; i < 20; i++)
		sum += i % 4;
	for (int i = 0; i < 20; i++)
		p[i] = (i % 4) / sum;
	int df;
	double c = chi2(per, p, 20, n, &df); /* also: weight 0, never drawn */
	cr_assert_lt(c, chi2_crit(df), "chi2(%d) = %g", df, c);
	/* the index cache keeps the weights: the same draws from a cached index */
	char *cache;
	cr_assert(asprintf(&cache, "%s/index.cache", d) > 0);
	cfg.index_cache = cache;
	uint64_t *walked = tu_drain_ids(&cfg, &n); /* walks, writes the cache */
	rf_loader *lc;
	char cerr[512];
	cr_assert_eq(rf_loader_create(&lc, &cfg, cerr, sizeof(cerr)), 0, "%s", cerr);
	rf_stats cst;
	rf_loader_stats(lc, &cst);
	cr_assert_eq(cst.index_cached, 1, "the second loader loads the cache");
	rf_loader_destroy(lc);
	size_t nc;
	uint64_t *cached = tu_drain_ids(&cfg, &nc);
	cr_assert_eq(nc, n);
	cr_assert_eq(memcmp(walked, ids, n * sizeof(*ids)), 0);
	cr_assert_eq(memcmp(cached, ids, n * sizeof(*ids)), 0);
	free(walked);
	free(cached);
	free(cache);
	cfg.index_cache = NULL;
	free(ids);
	/* the default samples_per_epoch is the dataset's size */
	cfg.samples_per_epoch = 0;
	ids = tu_drain_ids(&cfg, &n);
	cr_assert_eq(n, 20);
	free(ids);
	/* a manifest without weights cannot feed the weighted sampler */
	char *plain;
	cr_assert(asprintf(&plain, "%s/plain.tsv", d) > 0);
	tu_write(d, "plain.tsv", "c0/img_000.jpg\t0\n", 17);
	cfg.source = plain;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "third column"), "%s", err);
	free(plain);
	tu_rmrf(d);
	free(d);
	free(man);
}

Test(sampler, sequential_and_contradictions)
{
	char *d = tu_tree("seq", 2, 5);
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.sampler = RF_SAMPLER_SEQUENTIAL;
	cfg.epochs = 2;
	size_t n;
	uint64_t *ids = tu_drain_ids(&cfg, &n);
	cr_assert_eq(n, 20);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(ids[i], i % 10);
	free(ids);
	rf_loader *l;
	char err[512];
	struct {
		rf_sampler sampler;
		int shuffle;
		uint64_t spe;
		const char *needle;
	} bad[] = {
		{ RF_SAMPLER_WEIGHTED, 0, 0, "contradicts sampler = weighted" },
		{ RF_SAMPLER_BALANCED, 0, 0, "contradicts sampler = balanced" },
		{ RF_SAMPLER_SHUFFLE, 1, 5, "samples_per_epoch = 5 applies to the weighted" },
		{ RF_SAMPLER_SEQUENTIAL, 1, 5, "samples_per_epoch" },
		{ RF_SAMPLER_BALANCED, 1, (1ull << 48) + 1, "samples_per_epoch" },
		{ (rf_sampler)4, 1, 0, "sampler = 4" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tu_config(&cfg, d);
		cfg.sampler = bad[i].sampler;
		cfg.shuffle = bad[i].shuffle;
		cfg.samples_per_epoch = bad[i].spe;
		err[0] = '\0';
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG, "case %zu", i);
		cr_assert(strstr(err, bad[i].needle), "case %zu: '%s' should say '%s'", i, err,
			  bad[i].needle);
	}
	/* 2^48 draws in batches of 1 for 2^30 epochs: more batches than 64 bits */
	tu_config(&cfg, d);
	cfg.sampler = RF_SAMPLER_BALANCED;
	cfg.samples_per_epoch = 1ull << 48;
	cfg.batch_size = 1;
	cfg.epochs = 1 << 30;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "64 bits"), "%s", err);
	tu_config(&cfg, d);
	cfg.rank_tail = (rf_rank_tail)2;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "rank_tail"), "%s", err);
	tu_rmrf(d);
	free(d);
}
