/* token_row.c - see token_row.h. The shards are little-endian and so is
 * every host ringfeed builds for (x86-64, aarch64): the same width is a
 * copy, uint16 -> 32-bit a widening loop the compiler vectorizes. */
#include <string.h>

#include "transform/token_row.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token rows assume a little-endian host");

void rf_token_row_store(uint8_t *dst, uint32_t dst_width, const uint8_t *src,
			uint32_t src_width, size_t n)
{
	if (dst_width == src_width) {
		memcpy(dst, src, n * src_width);
		return;
	}
	/* 2 -> 4 (the only other pair) */
	for (size_t i = 0; i < n; i++) {
		uint16_t t;
		memcpy(&t, src + 2 * i, 2);
		uint32_t v = t;
		memcpy(dst + 4 * i, &v, 4);
	}
}
