/* token_row.h - a token window into its row of the batch: the stored
 * little-endian tokens (2 or 4 bytes) as the row's type (2, 4 or 8 bytes).
 * Private. */
#ifndef RF_TOKEN_ROW_H
#define RF_TOKEN_ROW_H

#include <stddef.h>
#include <stdint.h>

/* Stores n tokens of src_width bytes each (little-endian, as the shards
 * hold them) into dst as dst_width-byte integers (2: uint16; 4: uint32 or
 * int32, which hold every token id alike; 8: int64). Never narrower than
 * the stored tokens (asserted): the loader refuses uint16 rows for uint32
 * shards. */
void rfi_token_row_store(uint8_t *dst, uint32_t dst_width, const uint8_t *src,
			uint32_t src_width, size_t n);

#endif
