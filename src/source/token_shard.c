/* token_shard.c - the checks of token shard headers and frame tables
 * (layouts in token_shard.h). Pure: bytes in, verdict out. Every field is
 * checked against the others and the file's size before anyone sizes an
 * allocation or a read from it. */
#include <zstd.h>

#include "source/token_shard.h"
#include "util/util.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The width and version that go with an llm.c magic; 0 for another. */
static uint32_t width_of(uint32_t magic, uint32_t *version)
{
	switch (magic) {
	case RF_TOKENS_GPT2: *version = RF_TOKENS_GPT2_VERSION; return 2;
	case RF_TOKENS_LLAMA3: *version = RF_TOKENS_LLAMA3_VERSION; return 4;
	default: return 0;
	}
}

static int plain(const uint8_t *hdr, uint64_t file_size, rf_token_header *out, char *why,
		 size_t len)
{
	uint32_t version = 0, width = width_of(out->magic, &version);
	if (le32(hdr + 4) != version) {
		rfi_fmt(why, len, "version %u with magic %u (llm.c writes version %u)", le32(hdr + 4),
		       out->magic, version);
		return -1;
	}
	int32_t count = (int32_t)le32(hdr + 8);
	if (count < 0) {
		rfi_fmt(why, len, "the header's token count is negative (%d)", count);
		return -1;
	}
	uint64_t want = RF_TOKEN_HEADER_BYTES + (uint64_t)count * width;
	if (file_size != want) {
		rfi_fmt(why, len, "%s: the header says %d tokens (%llu bytes with the header), the "
		       "file has %llu bytes", file_size < want ? "truncated" : "size mismatch", count,
		       (unsigned long long)want, (unsigned long long)file_size);
		return -1;
	}
	out->width = width;
	out->tokens = (uint64_t)count;
	return 0;
}

static int zst(const uint8_t *hdr, uint64_t file_size, rf_token_header *out, char *why,
	       size_t len)
{
	if (le32(hdr + 4) != RF_TOKZ_VERSION) {
		rfi_fmt(why, len, "a .bin.zst token shard of version %u (this library reads version "
		       "%u)", le32(hdr + 4), RF_TOKZ_VERSION);
		return -1;
	}
	uint32_t width = le32(hdr + 8), magic = le32(hdr + 12), version = 0;
	if ((width != 2 && width != 4) || width_of(magic, &version) != width) {
		rfi_fmt(why, len, "a .bin.zst token shard with token width %u and source magic %u "
		       "(expected 2 with %u, or 4 with %u)", width, magic, RF_TOKENS_GPT2,
		       RF_TOKENS_LLAMA3);
		return -1;
	}
	uint32_t f = le32(hdr + 16), nf = le32(hdr + 20);
	uint64_t count = le64(hdr + 24);
	if (f == 0 || f > RF_TOKZ_FRAME_MAX) {
		rfi_fmt(why, len, "%u tokens per frame (1 .. %u)", f, RF_TOKZ_FRAME_MAX);
		return -1;
	}
	/* count < 2^50 keeps every product below in range */
	if (count >= (1ull << 50) || nf != (count + f - 1) / f) {
		rfi_fmt(why, len, "the header says %llu tokens in frames of %u but %u frames",
		       (unsigned long long)count, f, nf);
		return -1;
	}
	uint64_t table = 8 * ((uint64_t)nf + 1);
	/* every frame holds at least its frame header (a few bytes) */
	if (file_size < RF_TOKEN_HEADER_BYTES + table + (uint64_t)nf * 4) {
		rfi_fmt(why, len, "truncated: %llu bytes cannot hold a header, a table of %u frames "
		       "and the frames", (unsigned long long)file_size, nf);
		return -1;
	}
	out->magic = magic;
	out->width = width;
	out->tokens = count;
	out->frame_tokens = f;
	out->frames = nf;
	out->table_bytes = table;
	return 0;
}

int rfi_token_header_parse(const uint8_t *hdr, uint64_t file_size, rf_token_header *out, char *why,
			  size_t len)
{
	*out = (rf_token_header){ 0 };
	if (file_size < RF_TOKEN_HEADER_BYTES) {
		rfi_fmt(why, len, "truncated: %llu bytes, less than the %d-byte header",
		       (unsigned long long)file_size, RF_TOKEN_HEADER_BYTES);
		return -1;
	}
	uint32_t magic = le32(hdr), version;
	if (magic == RF_TOKZ_MAGIC)
		return zst(hdr, file_size, out, why, len);
	if (!width_of(magic, &version)) {
		rfi_fmt(why, len, "bad magic %u (an llm.c token shard starts with %u or %u)", magic,
		       RF_TOKENS_GPT2, RF_TOKENS_LLAMA3);
		return -1;
	}
	out->magic = magic;
	return plain(hdr, file_size, out, why, len);
}

int rfi_tokz_table_check(const rf_token_header *h, const uint8_t *table, uint64_t file_size,
			uint64_t *off, char *why, size_t len)
{
	uint64_t prev = RF_TOKEN_HEADER_BYTES + h->table_bytes;
	uint64_t bound = ZSTD_compressBound((size_t)h->frame_tokens * h->width);
	for (uint32_t k = 0; k <= h->frames; k++) {
		uint64_t o = le64(table + 8 * (uint64_t)k);
		if (k == 0 ? o != prev : o < prev + 4 || o - prev > bound) {
			rfi_fmt(why, len, "frame table: offset %u is %llu after %llu (a bad or "
			       "truncated table)", k, (unsigned long long)o, (unsigned long long)prev);
			return -1;
		}
		if (off)
			off[k] = o;
		prev = o;
	}
	if (prev != file_size) {
		rfi_fmt(why, len, "%s: the frame table ends at %llu, the file has %llu bytes",
		       prev > file_size ? "truncated" : "size mismatch", (unsigned long long)prev,
		       (unsigned long long)file_size);
		return -1;
	}
	return 0;
}
