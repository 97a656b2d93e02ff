/* hash.h - 64-bit mixing and hashing for the order's keys, fingerprints and
 * the saved state's checksum. Not cryptographic: they guard against
 * accidents (another dataset, a flipped bit), not against an adversary.
 * Byte order is fixed (little-endian words), so a fingerprint is the same
 * on every machine. Private to the library. */
#ifndef RF_HASH_H
#define RF_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A 64-bit mixing function (splitmix64's finalizer): a bijection. */
static inline uint64_t rfi_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* Folds one value into a running hash. For a fixed h it is a bijection of
 * v, so two inputs that differ in one word always hash differently. */
static inline uint64_t rfi_hash_u64(uint64_t h, uint64_t v)
{
	return rfi_mix64(h ^ rfi_mix64(v + 0x9e3779b97f4a7c15ull));
}

/* Folds len bytes (as little-endian words, the last one zero-padded, then
 * the length) into a running hash. */
uint64_t rfi_hash_bytes(uint64_t h, const void *data, size_t len);

/* A hash of a byte string for checking bulk data (the node-local cache's
 * ranges): four independent multiply-rotate lanes over 32-byte blocks, then
 * the tail and the length folded through rfi_hash_u64; several GB/s where
 * rfi_hash_bytes() does about one. Not the same values as rfi_hash_bytes(). */
uint64_t rfi_hash_data(const void *data, size_t len);

#endif
