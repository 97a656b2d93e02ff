/* hash.c - rfi_hash_bytes() and rfi_hash_data(): byte strings into hashes. */
#include <string.h>

#include "util/hash.h"

uint64_t rfi_hash_bytes(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = 0;
		for (int k = 7; k >= 0; k--)
			w = (w << 8) | p[i + (size_t)k];
		h = rfi_hash_u64(h, w);
	}
	if (i < len) {
		uint64_t w = 0;
		for (size_t k = len; k > i; k--)
			w = (w << 8) | p[k - 1];
		h = rfi_hash_u64(h, w);
	}
	return rfi_hash_u64(h, (uint64_t)len);
}

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

uint64_t rfi_hash_data(const void *data, size_t len)
{
	const uint64_t m1 = 0x9e3779b185ebca87ull, m2 = 0xc2b2ae3d27d4eb4full;
	const uint8_t *p = data;
	uint64_t v[4] = { m1 + m2, m2, 0, -m1 };
	size_t i = 0;
	for (; i + 32 <= len; i += 32)
		for (int k = 0; k < 4; k++)
			v[k] = rotl64(v[k] + le64(p + i + 8 * (size_t)k) * m2, 31) * m1;
	uint64_t h = rfi_hash_u64(rfi_hash_u64(v[0], v[1]), rfi_hash_u64(v[2], v[3]));
	return rfi_hash_bytes(h, p + i, len - i) ^ rfi_mix64(len);
}
