/* order.h - which sample sits at each position: the seeded per-epoch
 * permutation and the deterministic replacement sequence for bad samples.
 * Pure functions of their arguments; no state beyond a few integers, so any
 * position of any epoch can be computed directly, from any thread. */
#ifndef RF_ORDER_H
#define RF_ORDER_H

#include <stdint.h>

/* A bijection on [0, n): a 4-round keyed Feistel network on the smallest
 * even number of bits covering n, with cycle-walking back into [0, n). */
typedef struct rf_perm {
	uint64_t n;
	uint64_t keys[4];
	unsigned half_bits;
	uint64_t half_mask;
	int identity; /* shuffle off: position p holds sample p */
} rf_perm;

void rf_perm_init(rf_perm *p, uint64_t n, uint64_t seed, uint64_t epoch, int shuffle);
uint64_t rf_perm_at(const rf_perm *p, uint64_t pos);

/* The sample that replaces attempt number `attempt` (>= 1) at position pos of
 * epoch: uniform on [0, n), the same on every run. */
uint64_t rf_replacement(uint64_t n, uint64_t seed, uint64_t epoch, uint64_t pos,
			uint32_t attempt);

/* A 64-bit mixing function (splitmix64's finalizer). */
static inline uint64_t rf_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

#endif
