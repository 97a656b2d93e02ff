/* parquet_codec.h - Parquet's compression codecs: UNCOMPRESSED, SNAPPY
 * (libsnappy's C API), GZIP (zlib), BROTLI (libbrotlidec), ZSTD (libzstd)
 * and LZ4_RAW (liblz4). Each but ZSTD is optional at build time (meson's
 * snappy, gzip, brotli and lz4 features); a codec not built in is refused
 * with its name. The Parquet kind's (parquet_*.c); private to the library. */
#ifndef RF_PARQUET_CODEC_H
#define RF_PARQUET_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Whether this build reads codec (RF_PQ_SNAPPY...): 1 or 0. */
int rfi_pq_codec_built(int codec);

/* The most a page may expand when decompressed: a page claiming more than
 * RF_PQ_EXPAND_MAX times its compressed bytes plus RF_PQ_EXPAND_SLACK is
 * refused before its buffer is allocated (the claim is the file's; real
 * pages of 1 MiB, pyarrow's default, always fit in the slack). */
#define RF_PQ_EXPAND_MAX 1024u
#define RF_PQ_EXPAND_SLACK (4u << 20)

/* Decompresses src[n] into dst, which must come out exactly dst_len bytes
 * (the page header's uncompressed size).
 * @return : 0, or -1 with why ("SNAPPY: the page is corrupt", "BROTLI is
 *           not built into this ringfeed (meson -Dbrotli=enabled)"). */
int rfi_pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_len,
		      char *why, size_t len);

#endif
