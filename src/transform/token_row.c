/* token_row.c - see token_row.h. The shards are little-endian and so is
 * every host ringfeed builds for (x86-64, aarch64): the same width is a
 * copy, uint16 -> 32-bit a widening loop the compiler vectorizes. */
#include <assert.h>
#include <string.h>

#include "transform/token_row.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token rows assume a little-endian host");

void rfi_token_row_store(uint8_t *dst, uint32_t dst_width, const uint8_t *src,
			uint32_t src_width, size_t n)
{
	assert(dst_width >= src_width && (src_width == 2 || src_width == 4));
	if (dst_width == src_width) {
		memcpy(dst, src, n * src_width);
		return;
	}
	if (dst_width == 4) { /* 2 -> 4 */
		for (size_t i = 0; i < n; i++) {
			uint16_t t;
			memcpy(&t, src + 2 * i, 2);
			uint32_t v = t;
			memcpy(dst + 4 * i, &v, 4);
		}
		return;
	}
	/* 2 or 4 -> 8 (int64: token ids are below 2^32, so zero-extended) */
	for (size_t i = 0; i < n; i++) {
		uint32_t t = 0;
		memcpy(&t, src + src_width * i, src_width);
		uint64_t v = t;
		memcpy(dst + 8 * i, &v, 8);
	}
}
