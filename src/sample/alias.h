/* alias.h - the weighted sampler's table: Walker's alias method, built with
 * Vose's algorithm, so that one draw with replacement costs O(1) (one hash,
 * one table entry) whatever the weights.
 *
 * Memory: 8 bytes per sample (a 32-bit threshold and a 32-bit alias, side by
 * side so a draw touches one cache line), built once in O(n) at create time
 * with 12 bytes per sample of scratch that is freed at once. Read-only after
 * build, shared by every thread without locks. At most 2^32 samples. */
#ifndef RF_ALIAS_H
#define RF_ALIAS_H

#include <stddef.h>
#include <stdint.h>

typedef struct rf_alias_entry {
	uint32_t thresh; /* keep the column when a 32-bit coin is below this */
	uint32_t alias;  /* else take this sample */
} rf_alias_entry;

typedef struct rf_alias {
	uint64_t n;
	rf_alias_entry *e;
} rf_alias;

#define RF_ALIAS_BYTES_PER_SAMPLE 8
_Static_assert(sizeof(rf_alias_entry) == RF_ALIAS_BYTES_PER_SAMPLE, "alias entry size");

/* Builds the table for weights w[n] (finite, >= 0, not all 0): sample i is
 * drawn with probability w[i] / sum(w), a weight of 0 never. Returns 0, or
 * RF_ECONFIG (bad weights, n > 2^32) / -ENOMEM with err[errlen] set. */
int rfi_alias_build(rf_alias *a, const double *w, uint64_t n, char *err, size_t errlen);

void rfi_alias_free(rf_alias *a);

/* The sample drawn by two independent uniform values: h picks the column,
 * coin decides between it and its alias. */
static inline uint64_t rfi_alias_draw(const rf_alias *a, uint64_t h, uint32_t coin)
{
	uint64_t col = (uint64_t)(((unsigned __int128)h * a->n) >> 64);
	const rf_alias_entry *x = &a->e[col];
	return coin < x->thresh ? col : x->alias;
}

#endif
