/* shard_order.c - shards in a seeded order per epoch, then a block shuffle
 * of the stream (see shard_order.h). */
#include "sample/shard_order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sample/order.h"
#include "source/source.h"

int rfi_shard_order_init(rf_shard_order *o, const rf_source *src, uint64_t seed, int shuffle,
			uint32_t block)
{
	memset(o, 0, sizeof(*o));
	o->n = rfi_source_samples(src);
	o->seed = seed;
	o->shuffle = shuffle;
	o->block = shuffle && block > 1 ? block : 1;
	o->nshards = (uint32_t)src->index.nshards;
	o->first = calloc(o->nshards, sizeof(uint64_t));
	o->len = calloc(o->nshards, sizeof(uint64_t));
	if (!o->first || !o->len)
		goto nomem;
	/* samples are numbered in shard order: each shard is one run of ids,
	 * which the kind tells (tar: its members' shards; Parquet: its rows'
	 * files) */
	for (uint64_t i = o->n; i-- > 0;) {
		uint32_t s = src->ops->shard_of(src, i);
		o->first[s] = i;
		o->len[s]++;
	}
	for (int k = 0; k < RF_SHARD_ORDER_EPOCHS; k++) {
		o->cache[k].order = malloc((o->nshards ? o->nshards : 1) * sizeof(uint32_t));
		o->cache[k].start = malloc(((size_t)o->nshards + 1) * sizeof(uint64_t));
		if (!o->cache[k].order || !o->cache[k].start)
			goto nomem;
	}
	return 0;
nomem:
	rfi_shard_order_free(o);
	return -ENOMEM;
}

void rfi_shard_order_free(rf_shard_order *o)
{
	free(o->first);
	free(o->len);
	for (int k = 0; k < RF_SHARD_ORDER_EPOCHS; k++) {
		free(o->cache[k].order);
		free(o->cache[k].start);
	}
	memset(o, 0, sizeof(*o));
}

/* The epoch's shard order and where each shard starts in its stream. */
static const struct rf_shard_epoch *epoch_of(rf_shard_order *o, uint64_t epoch)
{
	for (int k = 0; k < RF_SHARD_ORDER_EPOCHS; k++)
		if (o->cache[k].valid && o->cache[k].epoch == epoch)
			return &o->cache[k];
	struct rf_shard_epoch *c = &o->cache[o->next_evict];
	o->next_evict = (o->next_evict + 1) % RF_SHARD_ORDER_EPOCHS;
	rf_perm perm;
	/* the shards' own permutation: another key than the samples' */
	rfi_perm_init(&perm, o->nshards, o->seed ^ 0x7368617264732121ull, epoch, o->shuffle);
	uint64_t at = 0;
	for (uint32_t i = 0; i < o->nshards; i++) {
		c->order[i] = (uint32_t)rfi_perm_at(&perm, i);
		c->start[i] = at;
		at += o->len[c->order[i]];
	}
	c->start[o->nshards] = at;
	c->epoch = epoch;
	c->valid = 1;
	return c;
}

uint64_t rfi_shard_order_sample(rf_shard_order *o, uint64_t epoch, uint64_t g)
{
	/* the block shuffle: g's block, permuted within itself (the last block
	 * may be shorter) */
	if (o->block > 1) {
		uint64_t b = g / o->block, base = b * o->block;
		uint64_t size = o->n - base < o->block ? o->n - base : o->block;
		rf_perm perm;
		rfi_perm_init(&perm, size, o->seed ^ b, epoch, 1);
		g = base + rfi_perm_at(&perm, g - base);
	}
	const struct rf_shard_epoch *c = epoch_of(o, epoch);
	/* the shard whose run holds stream position g: the last start <= g */
	uint32_t lo = 0, hi = o->nshards;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->start[mid] <= g)
			lo = mid;
		else
			hi = mid;
	}
	uint32_t s = c->order[lo];
	return o->first[s] + (g - c->start[lo]);
}
