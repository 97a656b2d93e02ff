/* test_ranks.c - ranks: for 1..8 ranks (loaders in one process), each epoch
 * the ranks' samples are disjoint and cover the dataset (pad: exactly the
 * wrapped positions repeat; drop: nothing repeats, only the tail is left
 * out), and every rank yields the same number of batches; the same for the
 * sampler's positions alone over many dataset sizes; rank and world size
 * from the config or the launcher's environment (torchrun, Slurm, Open MPI,
 * PMI, in that order, Slurm yielding to an MPI launcher inside its
 * allocation), invalid values refused with a message naming them. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "sample/ranks.h"
#include "sample/sampler.h"
#include "testutil.h"

static const char *env_vars[] = { "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
				  "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
				  "PMI_SIZE" };

static void clear_env(void)
{
	for (size_t i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

/* The sampler alone: positions of every rank over many sizes, both tails. */
Test(ranks, positions_partition_every_epoch)
{
	rf_index idx = { 0 };
	for (uint64_t n = 1; n <= 70; n++) {
		idx.count = n;
		for (uint32_t w = 1; w <= 8; w++) {
			for (int tail = 0; tail < 2; tail++) {
				uint32_t *seen = calloc(n, sizeof(*seen));
				uint64_t len0 = 0;
				int ok = 1;
				for (uint32_t r = 0; r < w; r++) {
					rf_order o;
					char err[256];
					int ret = rfi_order_init(&o, &idx, idx.count, RF_SAMPLER_SHUFFLE, 0, 5, r, w,
								(rf_rank_tail)tail, err, sizeof(err));
					if (tail == RF_RANK_TAIL_DROP && n < w) {
						cr_assert_eq(ret, RF_EEMPTY, "n %llu w %u",
							     (unsigned long long)n, w);
						ok = 0;
						break;
					}
					cr_assert_eq(ret, 0, "%s", err);
					if (r == 0)
						len0 = o.rank_len;
					cr_assert_eq(o.rank_len, len0, "equal length on every rank");
					for (uint64_t q = 0; q < o.rank_len; q++) {
						uint64_t g = rfi_order_global(&o, q);
						cr_assert_lt(g, n);
						seen[rfi_order_sample(&o, 1, g, 0)]++;
					}
					rfi_order_free(&o);
				}
				if (ok) {
					uint64_t total = 0, missing = 0, twice = 0;
					for (uint64_t i = 0; i < n; i++) {
						total += seen[i];
						missing += seen[i] == 0;
						twice += seen[i] > 1;
						cr_assert_leq(seen[i], 1 + (w + n - 1) / n);
					}
					uint64_t pad = (w - n % w) % w;
					if (tail == RF_RANK_TAIL_PAD) {
						cr_assert_eq(total, n + pad);
						cr_assert_eq(missing, 0, "pad covers everything");
					} else {
						cr_assert_eq(total, n / w * w);
						cr_assert_eq(twice, 0, "drop repeats nothing");
						cr_assert_eq(missing, n % w);
					}
				}
				free(seen);
			}
		}
	}
}

typedef struct rank_run {
	size_t nb;
	tu_batch *b;
} rank_run;

/* Real loaders, one per rank, in this process. */
static void check_world(const char *dir, size_t n, uint32_t w, rf_rank_tail tail, int epochs)
{
	rank_run *runs = calloc(w, sizeof(*runs));
	for (uint32_t r = 0; r < w; r++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.batch_size = 4;
		cfg.epochs = epochs;
		cfg.seed = 99;
		cfg.rank = (int)r;
		cfg.world_size = (int)w;
		cfg.rank_tail = tail;
		cfg.threads = 1;
		rf_loader *l;
		char err[512];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
		rf_order_info oi;
		rf_loader_order(l, &oi);
		cr_assert_eq(oi.rank, r);
		cr_assert_eq(oi.world_size, w);
		cr_assert_str_eq(oi.rank_source, "config");
		runs[r].nb = tu_take(l, SIZE_MAX, &runs[r].b);
		cr_assert_eq(runs[r].nb, oi.batches_per_epoch * (uint64_t)epochs);
		rf_loader_destroy(l);
	}
	size_t per_rank = tail == RF_RANK_TAIL_PAD ? (n + w - 1) / w : n / w;
	for (uint32_t r = 0; r < w; r++)
		cr_assert_eq(runs[r].nb, runs[0].nb, "w %u: rank %u yields %zu batches, rank 0 %zu",
			     w, r, runs[r].nb, runs[0].nb);
	uint32_t *seen = calloc(n, sizeof(*seen));
	for (int e = 0; e < epochs; e++) {
		memset(seen, 0, n * sizeof(*seen));
		for (uint32_t r = 0; r < w; r++) {
			size_t got = 0;
			for (size_t i = 0; i < runs[r].nb; i++) {
				const tu_batch *b = &runs[r].b[i];
				if (b->epoch != (uint32_t)e)
					continue;
				for (uint32_t k = 0; k < b->count; k++)
					seen[b->ids[k]]++;
				got += b->count;
			}
			cr_assert_eq(got, per_rank, "w %u rank %u epoch %d: %zu samples", w, r, e, got);
		}
		size_t missing = 0, total = 0, twice = 0;
		for (size_t i = 0; i < n; i++) {
			missing += seen[i] == 0;
			twice += seen[i] > 1;
			total += seen[i];
		}
		if (tail == RF_RANK_TAIL_PAD) {
			cr_assert_eq(missing, 0, "w %u epoch %d: %zu samples missing", w, e, missing);
			cr_assert_eq(total, per_rank * w);
			cr_assert_eq(twice, per_rank * w - n, "only the padding repeats");
		} else {
			cr_assert_eq(twice, 0, "w %u epoch %d: drop repeats nothing", w, e);
			cr_assert_eq(total, n / w * w);
		}
	}
	free(seen);
	for (uint32_t r = 0; r < w; r++)
		tu_batches_free(runs[r].b, runs[r].nb);
	free(runs);
}

Test(ranks, loaders_for_1_to_8_ranks_split_each_epoch, .timeout = 120)
{
	char *d = tu_tree("ranks", 3, 13); /* 39: prime to 2, 4, 5, 7, 8 */
	for (uint32_t w = 1; w <= 8; w++) {
		check_world(d, 39, w, RF_RANK_TAIL_PAD, 2);
		check_world(d, 39, w, RF_RANK_TAIL_DROP, 2);
	}
	tu_rmrf(d);
	free(d);
	tu_assert_no_leaks();
}

Test(ranks, weighted_draws_split_between_ranks)
{
	/* with replacement, ranks take disjoint positions of one global
	 * sequence of draws: their union is exactly the one-rank sequence */
	char *d = tu_tree("wranks", 2, 6);
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.sampler = RF_SAMPLER_BALANCED;
	cfg.samples_per_epoch = 40;
	cfg.batch_size = 5;
	size_t n1;
	uint64_t *all = tu_drain_ids(&cfg, &n1);
	cr_assert_eq(n1, 40);
	for (int w = 2; w <= 5; w++) {
		cfg.world_size = w;
		for (int r = 0; r < w; r++) {
			cfg.rank = r;
			size_t n;
			uint64_t *mine = tu_drain_ids(&cfg, &n);
			cr_assert_eq(n, (40 + (size_t)w - 1) / (size_t)w);
			for (size_t q = 0; q < n; q++)
				cr_assert_eq(mine[q], all[((size_t)r + (size_t)w * q) % 40],
					     "w %d rank %d position %zu", w, r, q);
			free(mine);
		}
	}
	free(all);
	tu_rmrf(d);
	free(d);
}

/* rank, world and source from a loader created with rank/world unset. */
static int env_layout(const char *dir, uint32_t *rank, uint32_t *world, char *source,
		      char *err, size_t errlen)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.rank = -1;
	cfg.world_size = -1;
	rf_loader *l;
	int r = rf_loader_create(&l, &cfg, err, errlen);
	if (r)
		return r;
	rf_order_info oi;
	rf_loader_order(l, &oi);
	*rank = oi.rank;
	*world = oi.world_size;
	snprintf(source, 64, "%s", oi.rank_source);
	rf_loader_destroy(l);
	return 0;
}

Test(ranks, environment_of_each_launcher_in_order)
{
	char *d = tu_tree("env", 1, 9);
	uint32_t rank, world;
	char src[64], err[512];
	clear_env();
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 0 && world == 1);
	cr_assert_str_eq(src, "default");

	/* each launcher, then stacked: the earlier one wins, except that
	 * Slurm's pair yields to a complete MPI pair (mpirun inside an
	 * allocation: every rank inherits the batch step's SLURM_PROCID) */
	setenv("PMI_RANK", "1", 1);
	setenv("PMI_SIZE", "2", 1);
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 1 && world == 2, "%u/%u", rank, world);
	cr_assert_str_eq(src, "PMI_RANK/PMI_SIZE");
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 2 && world == 3, "%u/%u", rank, world);
	cr_assert_str_eq(src, "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE");
	setenv("SLURM_PROCID", "0", 1); /* an sbatch script's, inherited through mpirun */
	setenv("SLURM_NTASKS", "4", 1);
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 2 && world == 3, "%u/%u: Slurm's pair must yield to Open MPI's", rank,
		  world);
	unsetenv("OMPI_COMM_WORLD_SIZE"); /* half an Open MPI pair: refused */
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"), "%s",
		  err);
	unsetenv("OMPI_COMM_WORLD_RANK");
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 1 && world == 2, "%u/%u: PMI's pair beats Slurm's", rank, world);
	unsetenv("PMI_RANK");
	unsetenv("PMI_SIZE");
	setenv("SLURM_PROCID", "3", 1); /* srun started this process */
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 3 && world == 4, "%u/%u", rank, world);
	cr_assert_str_eq(src, "SLURM_PROCID/SLURM_NTASKS");
	unsetenv("SLURM_PROCID"); /* an salloc shell: SLURM_NTASKS alone is no launch */
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 0 && world == 1, "%u/%u", rank, world);
	cr_assert_str_eq(src, "default");
	setenv("SLURM_PROCID", "3", 1);
	setenv("OMPI_COMM_WORLD_RANK", "2", 1);
	setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
	setenv("RANK", "4", 1);
	setenv("WORLD_SIZE", "5", 1);
	cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), 0, "%s", err);
	cr_assert(rank == 4 && world == 5, "%u/%u", rank, world);
	cr_assert_str_eq(src, "RANK/WORLD_SIZE");

	/* the config, when set, wins over the environment */
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.rank = 1;
	cfg.world_size = 3;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_order_info oi;
	rf_loader_order(l, &oi);
	cr_assert(oi.rank == 1 && oi.world_size == 3);
	cr_assert_str_eq(oi.rank_source, "config");
	cr_assert_eq(oi.rank_samples, 3);
	cr_assert_eq(oi.epoch_samples, 9);
	cr_assert_eq(oi.sampler_bytes, 0);
	rf_loader_destroy(l);
	tu_rmrf(d);
	free(d);
}

Test(ranks, invalid_values_refused_with_their_name)
{
	char *d = tu_tree("envbad", 1, 3);
	uint32_t rank, world;
	char src[64], err[512];
	struct {
		const char *var[4]; /* name, value, name, value */
		const char *needle;
	} cases[] = {
		{ { "RANK", "1", NULL, NULL }, "RANK is set but WORLD_SIZE is not" },
		{ { "WORLD_SIZE", "4", NULL, NULL }, "WORLD_SIZE is set but RANK is not" },
		{ { "RANK", "one", "WORLD_SIZE", "4" }, "RANK = 'one' is not an integer" },
		{ { "RANK", "1", "WORLD_SIZE", "4x" }, "WORLD_SIZE = '4x' is not an integer" },
		{ { "RANK", "", "WORLD_SIZE", "4" }, "RANK = '' is not an integer" },
		{ { "RANK", "4", "WORLD_SIZE", "4" }, "RANK = 4 is not a rank of WORLD_SIZE = 4" },
		{ { "RANK", "-1", "WORLD_SIZE", "4" }, "RANK = -1" },
		{ { "RANK", "0", "WORLD_SIZE", "0" }, "WORLD_SIZE = 0" },
		{ { "SLURM_PROCID", "7", "SLURM_NTASKS", "2" }, "SLURM_PROCID = 7" },
		{ { "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "99999999" },
		  "OMPI_COMM_WORLD_SIZE = 99999999" },
		{ { "PMI_SIZE", "2", NULL, NULL }, "PMI_SIZE is set but PMI_RANK is not" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		clear_env();
		for (int k = 0; k < 4 && cases[i].var[k]; k += 2)
			setenv(cases[i].var[k], cases[i].var[k + 1], 1);
		err[0] = '\0';
		cr_assert_eq(env_layout(d, &rank, &world, src, err, sizeof(err)), RF_ECONFIG,
			     "case %zu", i);
		cr_assert(strstr(err, cases[i].needle), "case %zu: '%s' should say '%s'", i, err,
			  cases[i].needle);
		cr_assert(strstr(err, "environment"), "%s", err);
	}
	clear_env();
	/* the config's own values */
	struct {
		int rank, world;
		const char *needle;
	} bad[] = {
		{ 0, -1, "set both" }, { -1, 2, "set both" }, { 2, 2, "rank = 2 is not a rank" },
		{ -2, 2, "rank = -2" }, { 0, 0, "world_size = 0" }, { 0, (1 << 20) + 1, "world_size" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rf_config cfg;
		tu_config(&cfg, d);
		cfg.rank = bad[i].rank;
		cfg.world_size = bad[i].world;
		rf_loader *l;
		err[0] = '\0';
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG, "case %zu", i);
		cr_assert(strstr(err, bad[i].needle), "case %zu: '%s' should say '%s'", i, err,
			  bad[i].needle);
	}
	/* drop with more ranks than samples leaves a rank nothing */
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.rank = 0;
	cfg.world_size = 4;
	cfg.rank_tail = RF_RANK_TAIL_DROP;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_EEMPTY);
	cr_assert(strstr(err, "4 ranks"), "%s", err);
	tu_rmrf(d);
	free(d);
	tu_assert_no_leaks();
}
