/* token_shard.h - the byte layout of token shards, and the pure checks of
 * their headers (no I/O: the loader's index, `ringfeed pack --tokens` and
 * the fuzz target share them). Private to the library and the CLI. The
 * token kind's format (token_shards.c, token_windows.c).
 *
 * Plain shards (.bin) are llm.c's, byte for byte (dev/data/data_common.py
 * write_datafile, llmc/dataloader.h): a header of 256 little-endian int32
 * words, then the tokens, little-endian.
 *   header[0] magic: 20240520 (GPT-2: uint16 tokens) or 20240801 (Llama-3:
 *             uint32 tokens)
 *   header[1] version: 1 with the GPT-2 magic, 7 with the Llama-3 one
 *   header[2] token count (int32, so at most 2^31 - 1 tokens a shard)
 *   header[3..255] zero (not checked: llm.c does not either)
 * The file is exactly 1024 + count * width bytes.
 *
 * Compressed shards (.bin.zst, written by `ringfeed pack --tokens`): the
 * tokens cut into frames of a fixed token count, each an independent zstd
 * frame (with its content size), and a table of where each frame starts,
 * so that a window of T + 1 tokens costs the read and the decompression of
 * the one or two frames it touches. The header is 256 little-endian int32
 * words too, with its own magic so that llm.c's loader refuses it:
 *   header[0] RF_TOKZ_MAGIC
 *   header[1] RF_TOKZ_VERSION
 *   header[2] token width in bytes: 2 or 4
 *   header[3] the plain shard's magic (RF_TOKENS_GPT2 or RF_TOKENS_LLAMA3),
 *             so that unpacking gives the plain shard back
 *   header[4] tokens per frame F (1 .. RF_TOKZ_FRAME_MAX)
 *   header[5] frames NF = ceil(count / F)
 *   header[6], header[7] token count, low and high 32 bits
 *   header[8..255] zero
 * then NF + 1 little-endian uint64 file offsets (frame k is the bytes
 * off[k] .. off[k+1]; off[0] is right after this table, off[NF] is the
 * file's size), then the frames: frame k holds tokens k*F .. k*F + F - 1
 * (the last one fewer), in the plain shard's byte layout. */
#ifndef RF_TOKEN_SHARD_H
#define RF_TOKEN_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define RF_TOKEN_HEADER_BYTES 1024 /* 256 int32 words */
#define RF_TOKENS_GPT2 20240520    /* uint16 tokens, version 1 */
#define RF_TOKENS_LLAMA3 20240801  /* uint32 tokens, version 7 */
#define RF_TOKENS_GPT2_VERSION 1
#define RF_TOKENS_LLAMA3_VERSION 7

#define RF_TOKZ_MAGIC 20261124     /* a ringfeed .bin.zst token shard */
#define RF_TOKZ_VERSION 1
#define RF_TOKZ_FRAME_MAX (1u << 22) /* tokens per frame at most (16 MiB of uint32) */
#define RF_TOKZ_FRAME_DEFAULT 4096u  /* pack's default: 8 KiB of uint16 a frame */

/* What a shard's header says. */
typedef struct rf_token_header {
	uint32_t magic;        /* RF_TOKENS_GPT2 or RF_TOKENS_LLAMA3 (a .bin.zst: the
	                        * plain shard's) */
	uint32_t width;        /* bytes per token: 2 or 4 */
	uint64_t tokens;       /* token count */
	/* .bin.zst only (0 for a plain shard): */
	uint32_t frame_tokens; /* F */
	uint32_t frames;       /* NF */
	uint64_t table_bytes;  /* 8 * (NF + 1): the frame table after the header */
} rf_token_header;

/* Checks the first RF_TOKEN_HEADER_BYTES bytes of a shard whose file has
 * file_size bytes, and fills *out. A plain shard must be exactly the size its
 * header says; a .bin.zst must hold its frame table (checked by
 * rfi_tokz_table_check once read).
 * @return : 0; or -1 with why[len] saying what is wrong ("bad magic
 *           12345 (not an llm.c token shard)", "truncated: the header says
 *           N tokens (B bytes), the file has F", ...). */
int rfi_token_header_parse(const uint8_t *hdr, uint64_t file_size, rf_token_header *out, char *why,
			  size_t len);

/* Checks a .bin.zst frame table (h->frames + 1 little-endian uint64 at
 * table, as read from the file) against the header and the file's size:
 * the offsets start right after the table, never decrease, end at the file's
 * size, and no frame is larger than zstd's bound for F tokens. Fills
 * off[h->frames + 1] (host order) when off is not NULL.
 * @return : 0, or -1 with why set. */
int rfi_tokz_table_check(const rf_token_header *h, const uint8_t *table, uint64_t file_size,
			uint64_t *off, char *why, size_t len);

/* Windows of T + 1 tokens every stride tokens that fit in a shard of n
 * tokens (never crossing its end): 0 when n < T + 1. */
static inline uint64_t rfi_token_windows(uint64_t n, uint32_t seq, uint32_t stride)
{
	return n < (uint64_t)seq + 1 ? 0 : (n - seq - 1) / stride + 1;
}

#endif
