/* fuzz_tokens.c - libFuzzer target: a token shard (llm.c's .bin or
 * ringfeed's .bin.zst) given to rf_tokens_build() as a file, then windows
 * located and, for a .bin.zst, their frames decompressed as a compute
 * thread does (rfi_unzstd_frames). The first input byte picks the file's
 * name (bit 0: .bin.zst) and T (bits 1-7: 1 .. 128); the rest is the
 * shard. A shard that build accepts must give every window a read that
 * lies inside the file: after the header (and frame table), within the
 * shard's tokens or frames, no longer than rfi_tokens_max_read(); a refused
 * one must say why. Decompressing a window's frames may fail (a corrupt
 * frame is a bad sample) but must give exactly the frames' tokens when it
 * succeeds. */
#define _GNU_SOURCE /* mkdtemp (fuzz_file.h) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/unzstd.h"
#include "fuzz_file.h"
#include "index/index.h"
#include "source/token_shard.h"
#include "source/token_windows.h"
#include "source/source.h"

#define must(c)                                                                       \
	do {                                                                          \
		if (!(c)) {                                                           \
			fprintf(stderr, "fuzz_tokens: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                      \
		}                                                                     \
	} while (0)

static rf_unzstd z;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int zst = data[0] & 1;
	uint32_t T = 1 + (data[0] >> 1);
	const uint8_t *shard = data + 1;
	size_t len = size - 1;
	if (!z.dctx && rfi_unzstd_init(&z, NULL))
		abort();
	const char *path = fuzz_file(shard, len, zst ? "x.bin.zst" : "x.bin");
	rf_source src;
	char err[512] = "";
	rf_source_params sp = { .seq_len = T, .stride = T, .log_level = RF_LOG_ERROR };
	int ret = rfi_source_open(&src, path, &sp, err, sizeof(err));
	if (ret) {
		must(err[0]);
		return 0;
	}
	const rf_tokens *tk = rfi_source_tokens_of(&src);
	must(tk && tk->nshards == 1 && (tk->width == 2 || tk->width == 4));
	const rf_token_shard *sh = &tk->shards[0];
	must(tk->windows == rfi_token_windows(sh->tokens, T, T) && tk->windows > 0);
	uint64_t max = rfi_tokens_max_read(tk);
	/* every window when few, else a spread of them */
	uint64_t step = tk->windows > 512 ? tk->windows / 512 : 1;
	for (uint64_t w = 0; w < tk->windows; w += step) {
		rf_token_read r;
		rfi_tokens_read_of(tk, w, &r);
		must(r.shard == 0 && r.token == w * T && r.token + T + 1 <= sh->tokens);
		must(r.len <= max && r.offset + r.len <= len);
		if (!r.zstd) {
			must(r.offset == RF_TOKEN_HEADER_BYTES + r.token * tk->width);
			must(r.len == (T + 1) * tk->width);
			continue;
		}
		must(r.offset >= RF_TOKEN_HEADER_BYTES + 8 * ((uint64_t)sh->frames + 1));
		uint64_t first = (uint64_t)r.frame * sh->frame_tokens;
		uint64_t end = ((r.token + T) / sh->frame_tokens + 1) * sh->frame_tokens;
		if (end > sh->tokens)
			end = sh->tokens;
		must(first <= r.token && end >= r.token + T + 1);
		const uint8_t *out;
		size_t want = (size_t)((end - first) * tk->width);
		int e = rfi_unzstd_frames(&z, shard + r.offset, r.len, want, &out, err, sizeof(err));
		must(e == 0 || e == -5001 /* RF_EBADSAMPLE */);
		if (e == 0)
			must(out != NULL);
	}
	rfi_source_free(&src);
	return 0;
}
