/* shard_order.h - the order of a shard source read sequentially
 * (RF_SHARD_SEQUENTIAL): each epoch takes the shards in a seeded order
 * (another each epoch), their samples in shard order, and shuffles that
 * stream in consecutive blocks of `block` positions (the part of a
 * WebDataset shuffle buffer that matters for reading: each sample leaves
 * within one block of where the stream has it, so reads stay sequential).
 * Unlike a shuffle buffer it is a pure function of (seed, epoch, position):
 * any position is computed directly, so resume is exact and a rank can
 * start anywhere. With shuffling off: shards and samples in index order.
 *
 * Thread rule: one thread (the ring thread) calls rfi_shard_order_sample();
 * it keeps the last epochs' shard offsets (nshards integers each). */
#ifndef RF_SHARD_ORDER_H
#define RF_SHARD_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "index/index.h"

#define RF_SHARD_ORDER_EPOCHS 4 /* epochs whose offsets are kept */

typedef struct rf_shard_order {
	uint64_t n, seed;
	uint32_t nshards;
	uint32_t block;       /* positions shuffled together (1: none) */
	int shuffle;
	uint64_t *first;      /* each shard's first sample id (samples are in shard order) */
	uint64_t *len;        /* each shard's samples */
	struct rf_shard_epoch {
		uint64_t epoch;
		int valid;
		uint32_t *order;  /* the epoch's shards, in reading order */
		uint64_t *start;  /* stream position where each of them starts (+ total) */
	} cache[RF_SHARD_ORDER_EPOCHS];
	uint32_t next_evict;
} rf_shard_order;

struct rf_source;

/* Over src, a source whose kind has sequential_shards (its shard_of tells
 * each sample's shard). @return : 0, or -ENOMEM. */
int rfi_shard_order_init(rf_shard_order *o, const struct rf_source *src, uint64_t seed,
			int shuffle, uint32_t block);
void rfi_shard_order_free(rf_shard_order *o);

/* The sample at global position g (< n) of epoch. */
uint64_t rfi_shard_order_sample(rf_shard_order *o, uint64_t epoch, uint64_t g);

#endif
