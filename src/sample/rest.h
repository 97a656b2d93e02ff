/* rest.h - the rest of an epoch: what a loader resumed on another world
 * size or batch size still delivers of the epoch it resumed in.
 *
 * The ranks of a synchronous job all stand at the same batch, so a saved
 * position says which of the epoch's global positions were handed out on
 * every rank: with interleaved ranks (r, r + W, ...) a prefix of the
 * epoch, with blocked ranks (sequential shard access: rank r reads the run
 * r * L .. r * L + L) the first part of each rank's run. What is left is a
 * list of runs of consecutive global positions (one run when interleaved,
 * up to W when blocked). The new ranks split that list, read as one stream,
 * the way they split a whole epoch (interleaved or blocked, padded or
 * dropped per rank_tail), so that across both runs every position of the
 * epoch is delivered once. Later epochs are whole again.
 *
 * A rest is carried in saved states (src/pipeline/state.c), so that a
 * resumed loader can be saved and resumed again, on yet another world size.
 * Read-only after rf_loader_create(); shared by every thread without locks. */
#ifndef RF_REST_H
#define RF_REST_H

#include <stdint.h>

#include "ringfeed.h"
#include "sample/sampler.h" /* rfi_rank_len, rfi_rank_batches */

/* Runs a rest holds at most (a state carries 16 bytes per run). Blocked
 * ranks leave up to W runs per resume; more is refused with a message. */
#define RF_REST_MAX_RUNS 1024

typedef struct rf_rest {
	uint64_t epoch;       /* the epoch it is the rest of */
	uint32_t runs;        /* runs of global positions, ascending, disjoint, not empty */
	uint64_t start[RF_REST_MAX_RUNS], len[RF_REST_MAX_RUNS];
	uint64_t before[RF_REST_MAX_RUNS]; /* positions in runs 0 .. i-1 (rfi_rest_split) */
	uint64_t total;       /* positions in all runs */
	/* How this loader's ranks split it (rfi_rest_split): */
	uint64_t rank_len;    /* positions per rank */
	uint64_t batches;     /* batches per rank, <= a whole epoch's */
} rf_rest;

/* Fills r->before and r->total from the runs, and r->rank_len and
 * r->batches for world ranks taking batches of batch_size. */
void rfi_rest_split(rf_rest *r, uint32_t world, rf_rank_tail tail, uint32_t batch_size,
		   int drop_last);

/* The global position behind rank's position q of the rest (split by
 * rfi_rest_split for world ranks; blocked as rf_order.blocked). A padded
 * position wraps to the start of the rest, as a whole epoch's wraps to its
 * start. */
uint64_t rfi_rest_global(const rf_rest *r, uint32_t rank, uint32_t world, int blocked,
			uint64_t q);

/* What is left of the stream `from` (split, its runs a whole epoch's
 * [0, n) or an earlier rest) once each of world ranks, taking rank_len
 * positions of it of which it delivers `delivered` (fewer than rank_len
 * when drop_last leaves a short batch out), has handed out its first
 * `taken`: the positions nobody took, as runs into *out (out->epoch is
 * from->epoch; rfi_rest_split not applied). Positions no rank would have
 * delivered (rank_tail DROP, drop_last) stay out, as they would have.
 * @return : 0, or -E2BIG when that takes more than RF_REST_MAX_RUNS runs. */
int rfi_rest_left(const rf_rest *from, uint32_t world, int blocked, uint64_t rank_len,
		 uint64_t delivered, uint64_t taken, rf_rest *out);

#endif
