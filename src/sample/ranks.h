/* ranks.h - which rank this process is and how many ranks share the
 * dataset: from the config when set, else from the launcher's environment.
 * Private. */
#ifndef RF_RANKS_H
#define RF_RANKS_H

#include <stddef.h>
#include <stdint.h>

#define RF_MAX_WORLD (1 << 20)

/* cfg_rank and cfg_world are both >= 0 (used as they are, after checks) or
 * both -1 (taken from the first pair of variables set among RANK/WORLD_SIZE,
 * SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE,
 * PMI_RANK/PMI_SIZE; else 0 of 1; Slurm's pair yields to a complete Open MPI
 * or PMI pair, and half of it is ignored: see ranks.c). *source names where
 * they came from (a static string). Returns 0, or RF_ECONFIG with
 * err[errlen] naming the field or variable and its value: one of a pair set
 * without the other (Slurm's excepted), a value that is not an integer,
 * world_size outside [1, RF_MAX_WORLD], rank outside [0, world_size). */
int rfi_ranks_resolve(int cfg_rank, int cfg_world, uint32_t *rank, uint32_t *world,
		     const char **source, char *err, size_t errlen);

#endif
