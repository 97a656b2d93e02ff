/* sampler.h - the sampler: which sample fills each place of this rank's
 * epochs. An epoch is one global sequence of epoch_len positions (the
 * dataset's permutation, its index order, or weighted draws); rank r of W
 * takes the global positions r, r + W, r + 2W, ... Everything is a pure
 * function of (seed, epoch, position, attempt): the loader's position is a
 * few integers, any place can be computed directly, from any thread.
 * Read-only after rfi_order_init(); shared by every thread without locks. */
#ifndef RF_SAMPLER_H
#define RF_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "index/index.h"
#include "ringfeed.h"
#include "sample/alias.h"

typedef struct rf_order {
	rf_sampler kind;     /* resolved: never SHUFFLE with shuffling off */
	uint64_t n;          /* samples in the index */
	uint64_t epoch_len;  /* global positions per epoch (n, or samples_per_epoch) */
	uint64_t seed;
	uint32_t rank, world;
	rf_rank_tail tail;
	uint64_t rank_len;   /* this rank's positions per epoch, equal on every rank */
	int blocked;         /* ranks take consecutive runs, not every world-th position
	                      * (sequential shard access: each rank reads its own shards) */
	rf_alias alias;      /* WEIGHTED and BALANCED: the draw table */
} rf_order;

/* Positions each of world ranks takes of a stream of total positions:
 * total / world, rounded up (rank_tail PAD: the short ranks repeat the
 * stream's first positions) or down (DROP). */
static inline uint64_t rfi_rank_len(uint64_t total, uint32_t world, rf_rank_tail tail)
{
	return tail == RF_RANK_TAIL_DROP ? total / world : total / world + (total % world != 0);
}

/* Batches of batch_size in rank_len positions (drop_last: full ones only). */
static inline uint64_t rfi_rank_batches(uint64_t rank_len, uint32_t batch_size, int drop_last)
{
	return drop_last ? rank_len / batch_size : (rank_len + batch_size - 1) / batch_size;
}

/* Builds the sampler over the n samples of a source (idx: their labels
 * and weights, for BALANCED and WEIGHTED). samples_per_epoch is 0 (= n) or, for
 * WEIGHTED and BALANCED, the draws per epoch. WEIGHTED needs idx->weights.
 * Returns 0; RF_ECONFIG (no weights for WEIGHTED, bad weights), RF_EEMPTY
 * (rank_tail DROP leaves no position per rank) or -ENOMEM, with err set. */
int rfi_order_init(rf_order *o, const rf_index *idx, uint64_t n, rf_sampler kind,
		  uint64_t samples_per_epoch, uint64_t seed, uint32_t rank, uint32_t world,
		  rf_rank_tail tail, char *err, size_t errlen);

/* rfi_order_init() in its two steps: the arithmetic (pure: kind, n, epoch
 * and rank lengths; RF_EEMPTY when rank_tail DROP leaves no position per
 * rank), then the tables WEIGHTED and BALANCED draw from (allocated). */
int rfi_order_plan(rf_order *o, uint64_t n, rf_sampler kind, uint64_t samples_per_epoch,
		  uint64_t seed, uint32_t rank, uint32_t world, rf_rank_tail tail, char *err,
		  size_t errlen);
int rfi_order_tables(rf_order *o, const rf_index *idx, char *err, size_t errlen);

void rfi_order_free(rf_order *o);

/* The global position behind this rank's position q (< rank_len) of an
 * epoch. A padded position wraps to the start of the epoch: it repeats that
 * position, its replacements included. */
static inline uint64_t rfi_order_global(const rf_order *o, uint64_t q)
{
	uint64_t g = o->blocked ? (uint64_t)o->rank * o->rank_len + q
				: (uint64_t)o->rank + (uint64_t)o->world * q;
	return g < o->epoch_len ? g : g % o->epoch_len;
}

/* The sample at global position g (< epoch_len) of epoch: attempt 0 is the
 * sampler's choice, attempt k >= 1 the k-th replacement of a bad sample
 * (uniform over the dataset for SHUFFLE and SEQUENTIAL, another weighted
 * draw for WEIGHTED and BALANCED). */
uint64_t rfi_order_sample(const rf_order *o, uint64_t epoch, uint64_t g, uint32_t attempt);

/* Bytes the sampler holds (the alias table), 0 for SHUFFLE and SEQUENTIAL. */
size_t rfi_order_memory(const rf_order *o);

#endif
