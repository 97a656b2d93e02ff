/* ranks.c - rank and world size from the config or the launcher's
 * environment (see ranks.h). */
#include "sample/ranks.h"

#include <errno.h>
#include <stdlib.h>

#include "ringfeed.h"
#include "util/util.h"

/* The launchers, in the order they are asked. torchrun first: under
 * `srun torchrun ...` or `mpirun torchrun ...` the outer launcher's
 * variables describe the launchers, torchrun's the training processes.
 *
 * Slurm's variables are the exception to the order (`outer`): they are
 * exported to every process of an allocation, also to those that another
 * launcher started. `mpirun` in an sbatch script leaves the batch step's
 * SLURM_PROCID=0 and SLURM_NTASKS in every rank's environment, so Slurm's
 * pair is skipped when Open MPI's or PMI's is complete (that launcher
 * started this process), and half of it (an salloc shell has SLURM_NTASKS
 * without SLURM_PROCID) is no pair at all. Lightning and Legate learned the
 * same (Lightning-AI/pytorch-lightning#11406, nv-legate/legate#732). */
static const struct launcher {
	const char *rank, *world, *source;
	int outer;
} launchers[] = {
	{ "RANK", "WORLD_SIZE", "RANK/WORLD_SIZE", 0 },
	{ "SLURM_PROCID", "SLURM_NTASKS", "SLURM_PROCID/SLURM_NTASKS", 1 },
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
	  "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE", 0 },
	{ "PMI_RANK", "PMI_SIZE", "PMI_RANK/PMI_SIZE", 0 },
};
#define NLAUNCHERS (sizeof(launchers) / sizeof(launchers[0]))

/* Is a later, inner launcher's pair complete? */
static int inner_pair_after(size_t i)
{
	for (size_t k = i + 1; k < NLAUNCHERS; k++)
		if (!launchers[k].outer && getenv(launchers[k].rank) && getenv(launchers[k].world))
			return 1;
	return 0;
}

/* A decimal integer and nothing else. */
static int parse_int(const char *s, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static int check(long long rank, long long world, const char *rname, const char *wname,
		 const char *where, char *err, size_t errlen)
{
	if (world < 1 || world > RF_MAX_WORLD) {
		rfi_fmt(err, errlen, "%s%s = %lld: world size must be in [1, %d]", where, wname,
		       world, RF_MAX_WORLD);
		return RF_ECONFIG;
	}
	if (rank < 0 || rank >= world) {
		rfi_fmt(err, errlen, "%s%s = %lld is not a rank of %s = %lld (0 .. %lld)", where,
		       rname, rank, wname, world, world - 1);
		return RF_ECONFIG;
	}
	return 0;
}

int rfi_ranks_resolve(int cfg_rank, int cfg_world, uint32_t *rank, uint32_t *world,
		     const char **source, char *err, size_t errlen)
{
	if (cfg_rank != -1 || cfg_world != -1) {
		if (cfg_rank == -1 || cfg_world == -1) {
			rfi_fmt(err, errlen, "config: rank = %d and world_size = %d: set both, or "
			       "leave both -1 to read the launcher's environment", cfg_rank, cfg_world);
			return RF_ECONFIG;
		}
		int ret = check(cfg_rank, cfg_world, "rank", "world_size", "config: ", err, errlen);
		if (ret)
			return ret;
		*rank = (uint32_t)cfg_rank;
		*world = (uint32_t)cfg_world;
		*source = "config";
		return 0;
	}
	for (size_t i = 0; i < NLAUNCHERS; i++) {
		const struct launcher *x = &launchers[i];
		const char *r = getenv(x->rank), *w = getenv(x->world);
		if (!r && !w)
			continue;
		if (x->outer && (!r || !w || inner_pair_after(i)))
			continue;
		/* Half a pair is refused rather than guessed: taking rank 0 of 1
		 * on every process would silently train on the data N times. */
		if (!r || !w) {
			rfi_fmt(err, errlen, "environment: %s is set but %s is not (set both, or "
			       "rank and world_size in the config)", r ? x->rank : x->world,
			       r ? x->world : x->rank);
			return RF_ECONFIG;
		}
		long long rv, wv;
		if (parse_int(r, &rv)) {
			rfi_fmt(err, errlen, "environment: %s = '%s' is not an integer", x->rank, r);
			return RF_ECONFIG;
		}
		if (parse_int(w, &wv)) {
			rfi_fmt(err, errlen, "environment: %s = '%s' is not an integer", x->world, w);
			return RF_ECONFIG;
		}
		int ret = check(rv, wv, x->rank, x->world, "environment: ", err, errlen);
		if (ret)
			return ret;
		*rank = (uint32_t)rv;
		*world = (uint32_t)wv;
		*source = x->source;
		return 0;
	}
	*rank = 0;
	*world = 1;
	*source = "default";
	return 0;
}
