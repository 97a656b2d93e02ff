/* order.c - the per-epoch permutation (keyed Feistel + keyed rotation,
 * cycle-walked into [0, n)) and the replacement sequence. */
#include "sample/order.h"

void rfi_perm_init(rf_perm *p, uint64_t n, uint64_t seed, uint64_t epoch, int shuffle)
{
	p->n = n;
	p->identity = !shuffle || n < 2;
	unsigned bits = 2;
	while (bits < 64 && (1ull << bits) < n)
		bits++;
	bits += bits & 1; /* even, so both halves are equal */
	p->half_bits = bits / 2;
	p->half_mask = (1ull << p->half_bits) - 1;
	p->mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	uint64_t k = rfi_mix64(seed ^ 0x72696e6766656564ull) ^ rfi_mix64(epoch + 0x9e3779b97f4a7c15ull);
	for (int i = 0; i < RF_PERM_ROUNDS; i++) {
		k = rfi_mix64(k + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
		p->keys[i] = k;
	}
	p->rot = rfi_mix64(k ^ 0x726f746174652121ull);
}

static uint64_t step(const rf_perm *p, uint64_t x)
{
	uint64_t l = x >> p->half_bits, r = x & p->half_mask;
	for (int i = 0; i < RF_PERM_ROUNDS; i++) {
		uint64_t f = rfi_mix64(r ^ p->keys[i]) & p->half_mask;
		uint64_t nl = r;
		r = l ^ f;
		l = nl;
	}
	/* A Feistel network is an even permutation; the rotation by an odd
	 * amount is odd, so every permutation of the domain can occur. */
	return (((l << p->half_bits) | r) + p->rot) & p->mask;
}

uint64_t rfi_perm_at(const rf_perm *p, uint64_t pos)
{
	if (p->identity)
		return pos;
	/* The domain is at most 4n, so the walk takes few steps on average,
	 * and it ends because step() is a bijection on it. */
	uint64_t x = step(p, pos);
	while (x >= p->n)
		x = step(p, x);
	return x;
}

uint64_t rfi_replacement(uint64_t n, uint64_t seed, uint64_t epoch, uint64_t pos, uint32_t attempt)
{
	uint64_t h = rfi_mix64(seed ^ 0x7265706c61636521ull);
	h = rfi_mix64(h ^ epoch);
	h = rfi_mix64(h ^ pos);
	h = rfi_mix64(h ^ attempt);
	/* Multiply-shift: unbiased enough for n far below 2^64. */
	return (uint64_t)(((unsigned __int128)h * n) >> 64);
}
