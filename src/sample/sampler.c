/* sampler.c - the sampler (see sampler.h): permutation or weighted draws,
 * and the split of each epoch between ranks. */
#include "sample/sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sample/order.h"
#include "util/util.h"

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Samples of label v in the sorted labels s[n]. */
static uint64_t label_count(const int32_t *s, uint64_t n, int32_t v)
{
	uint64_t lo = 0, hi = n;
	while (lo < hi) { /* first >= v */
		uint64_t mid = lo + (hi - lo) / 2;
		if (s[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint64_t first = lo;
	hi = n;
	while (lo < hi) { /* first > v */
		uint64_t mid = lo + (hi - lo) / 2;
		if (s[mid] <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - first;
}

/* weight = 1 / (samples of its class), so each class is drawn equally often.
 * Labels may be sparse (manifests), hence sorting instead of a class array. */
static double *balanced_weights(const rf_index *idx)
{
	uint64_t n = idx->count;
	double *w = malloc(n * sizeof(*w));
	int32_t *sorted = malloc(n * sizeof(*sorted));
	if (!w || !sorted) {
		free(w);
		free(sorted);
		return NULL;
	}
	for (uint64_t i = 0; i < n; i++)
		sorted[i] = idx->entries[i].label;
	qsort(sorted, n, sizeof(*sorted), cmp_i32);
	for (uint64_t i = 0; i < n; i++)
		w[i] = 1.0 / (double)label_count(sorted, n, idx->entries[i].label);
	free(sorted);
	return w;
}

int rfi_order_plan(rf_order *o, uint64_t n, rf_sampler kind, uint64_t samples_per_epoch,
		  uint64_t seed, uint32_t rank, uint32_t world, rf_rank_tail tail, char *err,
		  size_t errlen)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->n = n;
	o->epoch_len = samples_per_epoch ? samples_per_epoch : o->n;
	o->seed = seed;
	o->rank = rank;
	o->world = world;
	o->tail = tail;
	o->rank_len = rfi_rank_len(o->epoch_len, world, tail);
	if (o->rank_len == 0) {
		rfi_fmt(err, errlen, "%llu positions per epoch cannot give each of %u ranks one "
		       "(rank_tail = drop)", (unsigned long long)o->epoch_len, world);
		return RF_EEMPTY;
	}
	return 0;
}

int rfi_order_tables(rf_order *o, const rf_index *idx, char *err, size_t errlen)
{
	if (o->kind == RF_SAMPLER_WEIGHTED) {
		if (!idx->weights) {
			rfi_fmt(err, errlen, "config: sampler = weighted needs per-sample weights: a "
			       "manifest with a third column (path<TAB>label<TAB>weight)");
			return RF_ECONFIG;
		}
		return rfi_alias_build(&o->alias, idx->weights, o->n, err, errlen);
	}
	if (o->kind == RF_SAMPLER_BALANCED) {
		double *w = balanced_weights(idx);
		if (!w) {
			rfi_fmt(err, errlen, "balanced sampler: out of memory");
			return -ENOMEM;
		}
		int ret = rfi_alias_build(&o->alias, w, o->n, err, errlen);
		free(w);
		return ret;
	}
	return 0;
}

int rfi_order_init(rf_order *o, const rf_index *idx, uint64_t n, rf_sampler kind,
		  uint64_t samples_per_epoch, uint64_t seed, uint32_t rank, uint32_t world,
		  rf_rank_tail tail, char *err, size_t errlen)
{
	int ret = rfi_order_plan(o, n, kind, samples_per_epoch, seed, rank, world, tail, err, errlen);
	return ret ? ret : rfi_order_tables(o, idx, err, errlen);
}

void rfi_order_free(rf_order *o)
{
	if (o)
		rfi_alias_free(&o->alias);
}

uint64_t rfi_order_sample(const rf_order *o, uint64_t epoch, uint64_t g, uint32_t attempt)
{
	if (o->kind == RF_SAMPLER_WEIGHTED || o->kind == RF_SAMPLER_BALANCED) {
		/* A counter-based draw: the hash of (seed, epoch, position,
		 * attempt), never a generator's running state. */
		uint64_t h = rfi_mix64(o->seed ^ 0x7765696768746564ull);
		h = rfi_mix64(h ^ epoch);
		h = rfi_mix64(h ^ g);
		h = rfi_mix64(h ^ attempt);
		uint32_t coin = (uint32_t)rfi_mix64(h ^ 0xc0ffee1234567891ull);
		return rfi_alias_draw(&o->alias, h, coin);
	}
	if (attempt)
		return rfi_replacement(o->n, o->seed, epoch, g, attempt);
	rf_perm perm;
	rfi_perm_init(&perm, o->n, o->seed, epoch, o->kind == RF_SAMPLER_SHUFFLE);
	return rfi_perm_at(&perm, g);
}

size_t rfi_order_memory(const rf_order *o)
{
	return o->alias.e ? (size_t)o->alias.n * RF_ALIAS_BYTES_PER_SAMPLE : 0;
}
