/* hash.c - rf_hash_bytes(): byte strings into the running hash of hash.h. */
#include "util/hash.h"

uint64_t rf_hash_bytes(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w = 0;
		for (int k = 7; k >= 0; k--)
			w = (w << 8) | p[i + (size_t)k];
		h = rf_hash_u64(h, w);
	}
	if (i < len) {
		uint64_t w = 0;
		for (size_t k = len; k > i; k--)
			w = (w << 8) | p[k - 1];
		h = rf_hash_u64(h, w);
	}
	return rf_hash_u64(h, (uint64_t)len);
}
