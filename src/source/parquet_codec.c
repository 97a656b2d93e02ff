/* parquet_codec.c - page decompression (parquet_codec.h). Every codec is
 * asked for exactly the page header's uncompressed size and checked to have
 * produced it, no more and no less. */
#include <string.h>
#include <zstd.h>

#include "rf_config.h"
#include "source/parquet_codec.h"
#include "source/parquet_meta.h"
#include "util/util.h"

#if RF_HAVE_SNAPPY
#include <snappy-c.h>
#endif
#if RF_HAVE_ZLIB
#include <zlib.h>
#endif
#if RF_HAVE_LZ4
#include <lz4.h>
#endif
#if RF_HAVE_BROTLI
#include <brotli/decode.h>
#endif

int rfi_pq_codec_built(int codec)
{
	switch (codec) {
	case RF_PQ_UNCOMPRESSED: return 1;
	case RF_PQ_ZSTD: return 1;
	case RF_PQ_SNAPPY: return RF_HAVE_SNAPPY;
	case RF_PQ_GZIP: return RF_HAVE_ZLIB;
	case RF_PQ_LZ4_RAW: return RF_HAVE_LZ4;
	case RF_PQ_BROTLI: return RF_HAVE_BROTLI;
	default: return 0; /* LZO, the deprecated LZ4 framing, unknown ones */
	}
}

static int short_output(const char *codec, size_t got, size_t want, char *why, size_t len)
{
	rfi_fmt(why, len, "%s: the page decompresses to %zu bytes, its header says %zu", codec, got,
		want);
	return -1;
}

#if RF_HAVE_ZLIB
/* gzip members (or a zlib stream: 15 + 32 detects either), one after the
 * other until the input ends. */
static int gunzip(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_len, char *why,
		  size_t len)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK) {
		rfi_fmt(why, len, "GZIP: zlib would not start");
		return -1;
	}
	zs.next_in = (Bytef *)src;
	zs.avail_in = (uInt)n;
	zs.next_out = dst;
	zs.avail_out = (uInt)dst_len;
	int rc;
	while ((rc = inflate(&zs, Z_FINISH)) == Z_STREAM_END && zs.avail_in > 0)
		if (inflateReset(&zs) != Z_OK)
			break;
	size_t got = dst_len - zs.avail_out;
	inflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		rfi_fmt(why, len, "GZIP: the page is corrupt or longer than its header says (%s)",
			zs.msg ? zs.msg : "zlib error");
		return -1;
	}
	return got == dst_len ? 0 : short_output("GZIP", got, dst_len, why, len);
}
#endif

static int not_built(int codec, char *why, size_t len)
{
	static const char *const option[] = {[RF_PQ_SNAPPY] = "snappy", [RF_PQ_GZIP] = "gzip",
					     [RF_PQ_BROTLI] = "brotli", [RF_PQ_LZ4_RAW] = "lz4"};
	if (codec >= 0 && codec <= RF_PQ_LZ4_RAW && codec < (int)(sizeof(option) / sizeof(*option)) &&
	    option[codec])
		rfi_fmt(why, len, "%s is not built into this ringfeed (meson -D%s=enabled, with its "
			"library installed)", rfi_pq_codec_name(codec), option[codec]);
	else
		rfi_fmt(why, len, "%s, which ringfeed does not read (codec %d)",
			rfi_pq_codec_name(codec), codec);
	return -1;
}

int rfi_pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_len,
		      char *why, size_t len)
{
	if (!rfi_pq_codec_built(codec))
		return not_built(codec, why, len);
	switch (codec) {
	case RF_PQ_UNCOMPRESSED:
		if (n != dst_len)
			return short_output("UNCOMPRESSED", n, dst_len, why, len);
		memcpy(dst, src, n);
		return 0;
	case RF_PQ_ZSTD: {
		size_t got = ZSTD_decompress(dst, dst_len, src, n);
		if (ZSTD_isError(got)) {
			rfi_fmt(why, len, "ZSTD: %s", ZSTD_getErrorName(got));
			return -1;
		}
		return got == dst_len ? 0 : short_output("ZSTD", got, dst_len, why, len);
	}
#if RF_HAVE_SNAPPY
	case RF_PQ_SNAPPY: {
		size_t got = 0;
		if (snappy_uncompressed_length((const char *)src, n, &got) != SNAPPY_OK)
			got = 0;
		if (got != dst_len)
			return short_output("SNAPPY", got, dst_len, why, len);
		if (snappy_uncompress((const char *)src, n, (char *)dst, &got) != SNAPPY_OK) {
			rfi_fmt(why, len, "SNAPPY: the page is corrupt");
			return -1;
		}
		return got == dst_len ? 0 : short_output("SNAPPY", got, dst_len, why, len);
	}
#endif
#if RF_HAVE_ZLIB
	case RF_PQ_GZIP:
		return gunzip(src, n, dst, dst_len, why, len);
#endif
#if RF_HAVE_LZ4
	case RF_PQ_LZ4_RAW: {
		if (n > INT32_MAX || dst_len > INT32_MAX)
			return short_output("LZ4_RAW", 0, dst_len, why, len);
		int got = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)dst_len);
		if (got < 0) {
			rfi_fmt(why, len, "LZ4_RAW: the page is corrupt");
			return -1;
		}
		return (size_t)got == dst_len ? 0 : short_output("LZ4_RAW", (size_t)got, dst_len,
								why, len);
	}
#endif
#if RF_HAVE_BROTLI
	case RF_PQ_BROTLI: {
		size_t got = dst_len;
		if (BrotliDecoderDecompress(n, src, &got, dst) != BROTLI_DECODER_RESULT_SUCCESS) {
			rfi_fmt(why, len, "BROTLI: the page is corrupt or longer than its header says");
			return -1;
		}
		return got == dst_len ? 0 : short_output("BROTLI", got, dst_len, why, len);
	}
#endif
	default:
		return not_built(codec, why, len);
	}
}
