/* order.h - which sample sits at each position: the seeded per-epoch
 * permutation and the deterministic replacement sequence for bad samples.
 * Pure functions of their arguments; no state beyond a few integers, so any
 * position of any epoch can be computed directly, from any thread. */
#ifndef RF_ORDER_H
#define RF_ORDER_H

#include <stdint.h>

#include "util/hash.h" /* rfi_mix64 */

/* Rounds of the Feistel network. 4 rounds left the permutation measurably
 * biased on small domains (which sample lands first or last for n = 3 to 17;
 * chi-square tests in tests/test_order.c); 12 pass those tests. A position
 * costs about 200 ns (set-up included, 1.1 million samples, where cycle-
 * walking takes the most steps) on the 2-core machine it was built on:
 * the ring thread's share of a sample, next to milliseconds of decode. */
#define RF_PERM_ROUNDS 12

/* A bijection on [0, n): a keyed Feistel network on the smallest even number
 * of bits covering n, then a keyed rotation (x + k mod 2^bits), with
 * cycle-walking back into [0, n). A few integers, whatever n. */
typedef struct rf_perm {
	uint64_t n;
	uint64_t keys[RF_PERM_ROUNDS];
	uint64_t rot;
	unsigned half_bits;
	uint64_t half_mask, mask;
	int identity; /* shuffle off: position p holds sample p */
} rf_perm;

void rfi_perm_init(rf_perm *p, uint64_t n, uint64_t seed, uint64_t epoch, int shuffle);
uint64_t rfi_perm_at(const rf_perm *p, uint64_t pos);

/* The sample that replaces attempt number `attempt` (>= 1) at position pos of
 * epoch: uniform on [0, n), the same on every run. */
uint64_t rfi_replacement(uint64_t n, uint64_t seed, uint64_t epoch, uint64_t pos,
			uint32_t attempt);

#endif
