/* mpi_ranks.c - the multi-process rank test. Started by mpi_ranks.sh as
 * `mpirun --oversubscribe -np 4 mpi_ranks DATASET_DIR`: every process
 * creates its own loader with rank and world size unset, so that they come
 * from Open MPI's environment, and drains two epochs, with the tail padded
 * and then dropped. The ranks' sample ids are gathered with MPI_Allgather;
 * each epoch they must be disjoint (padding: only the wrapped positions
 * repeat) and cover the dataset (dropping: all but the tail), and every rank
 * must have yielded the same number of batches. Uses the public API only.
 * Exits 0 when every check passed on every rank, 1 otherwise. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringfeed.h"

#define EPOCHS 2

static int fails;

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "rank %d: check failed: ", me);       \
			fprintf(stderr, __VA_ARGS__);                         \
			fprintf(stderr, "\n");                                \
			fails++;                                              \
		}                                                             \
	} while (0)

static int me, world;

static void run(const char *source, rf_rank_tail tail)
{
	rf_config cfg;
	rf_config_default(&cfg);
	cfg.source = source;
	cfg.batch_size = 4;
	cfg.resize = 64;
	cfg.crop = 56;
	cfg.threads = 1;
	cfg.io_depth = 16;
	cfg.epochs = EPOCHS;
	cfg.seed = 2024;
	cfg.rank_tail = tail;
	/* rank and world_size stay -1: the launcher's environment decides */
	rf_loader *l;
	char err[512];
	int r = rf_loader_create(&l, &cfg, err, sizeof(err));
	if (r) {
		fprintf(stderr, "rank %d: rf_loader_create: %s (%s)\n", me, err, rf_strerror(r));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	rf_order_info oi;
	rf_loader_order(l, &oi);
	CHECK(oi.rank == (uint32_t)me && oi.world_size == (uint32_t)world,
	      "loader says rank %u of %u (from %s), MPI says %d of %d", oi.rank, oi.world_size,
	      oi.rank_source, me, world);
	uint64_t n = oi.dataset_samples, m = oi.rank_samples;
	uint64_t *ids = malloc(EPOCHS * m * sizeof(*ids));
	uint64_t got[EPOCHS] = { 0 }, batches = 0;
	rf_batch *b;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			CHECK(b->epoch < EPOCHS && got[b->epoch] < m, "more than %llu samples in epoch %u",
			      (unsigned long long)m, b->epoch);
			if (b->epoch < EPOCHS && got[b->epoch] < m)
				ids[b->epoch * m + got[b->epoch]++] = b->ids[i];
		}
		batches++;
		rf_batch_release(l, b);
	}
	CHECK(r == RF_EOF, "next: %s: %s", rf_strerror(r), rf_loader_error(l));
	rf_loader_destroy(l);
	for (int e = 0; e < EPOCHS; e++)
		CHECK(got[e] == m, "epoch %d: %llu samples, want %llu", e,
		      (unsigned long long)got[e], (unsigned long long)m);

	/* equal batch counts: a rank with fewer would hang DDP's all-reduce */
	uint64_t *all_batches = malloc((size_t)world * sizeof(uint64_t));
	MPI_Allgather(&batches, 1, MPI_UINT64_T, all_batches, 1, MPI_UINT64_T, MPI_COMM_WORLD);
	for (int k = 0; k < world; k++)
		CHECK(all_batches[k] == batches, "rank %d yielded %llu batches, this rank %llu", k,
		      (unsigned long long)all_batches[k], (unsigned long long)batches);

	uint64_t *all = malloc((size_t)world * EPOCHS * m * sizeof(uint64_t));
	MPI_Allgather(ids, (int)(EPOCHS * m), MPI_UINT64_T, all, (int)(EPOCHS * m), MPI_UINT64_T,
		      MPI_COMM_WORLD);
	uint32_t *seen = malloc(n * sizeof(*seen));
	for (int e = 0; e < EPOCHS; e++) {
		memset(seen, 0, n * sizeof(*seen));
		for (int k = 0; k < world; k++)
			for (uint64_t q = 0; q < m; q++) {
				uint64_t id = all[((size_t)k * EPOCHS + (size_t)e) * m + q];
				CHECK(id < n, "id %llu out of range", (unsigned long long)id);
				if (id < n)
					seen[id]++;
			}
		uint64_t missing = 0, repeats = 0;
		for (uint64_t i = 0; i < n; i++) {
			missing += seen[i] == 0;
			repeats += seen[i] > 1 ? seen[i] - 1 : 0;
		}
		if (tail == RF_RANK_TAIL_PAD) {
			CHECK(missing == 0, "pad, epoch %d: %llu samples on no rank", e,
			      (unsigned long long)missing);
			CHECK(repeats == m * (uint64_t)world - n, "pad, epoch %d: %llu repeats, want %llu",
			      e, (unsigned long long)repeats,
			      (unsigned long long)(m * (uint64_t)world - n));
		} else {
			CHECK(repeats == 0, "drop, epoch %d: %llu samples on two ranks", e,
			      (unsigned long long)repeats);
			CHECK(missing == n % (uint64_t)world, "drop, epoch %d: %llu samples left out, "
			      "want %llu", e, (unsigned long long)missing,
			      (unsigned long long)(n % (uint64_t)world));
		}
	}
	if (me == 0)
		printf("mpi_ranks: %s: %d ranks, %llu samples, %llu per rank and epoch, %llu batches "
		       "per rank (ranks from %s)\n", tail == RF_RANK_TAIL_PAD ? "pad" : "drop", world,
		       (unsigned long long)n, (unsigned long long)m, (unsigned long long)batches,
		       oi.rank_source);
	free(seen);
	free(all);
	free(all_batches);
	free(ids);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &world);
	if (argc != 2) {
		if (me == 0)
			fprintf(stderr, "usage: mpirun -np N mpi_ranks DATASET_DIR\n");
		MPI_Finalize();
		return 2;
	}
	run(argv[1], RF_RANK_TAIL_PAD);
	run(argv[1], RF_RANK_TAIL_DROP);
	int total = 0;
	MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (me == 0)
		printf("mpi_ranks: %s (%d failed checks over %d ranks)\n", total ? "FAILED" : "ok",
		       total, world);
	MPI_Finalize();
	return total ? 1 : 0;
}
