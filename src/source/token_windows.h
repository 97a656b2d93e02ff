/* token_windows.h - the index of a token source (cfg.seq_len): its shards, what
 * their headers say, and the windows they hold. A window is not stored: its
 * id maps to (shard, first token) by a binary search over the shards' first
 * window ids, so the index costs a few words per shard (and 8 bytes per
 * frame of a .bin.zst), whatever the token count.
 *
 * Built once by rf_loader_create() (rfi_tokens_scan, through the token
 * kind: src/source/token_shards.c), then read-only and shared by every
 * thread without locks. The shard paths, the root folder and its
 * descriptor live in the source's rf_index (shards, root_fd; for remote
 * shards their URLs and ETags: urls, etags); its count stays 0. */
#ifndef RF_TOKENS_H
#define RF_TOKENS_H

#include <stdint.h>

#include "index/index.h"

typedef struct rf_token_shard {
	uint64_t tokens;       /* tokens in the shard */
	uint64_t first_window; /* id of its first window */
	uint64_t windows;      /* windows it holds (0 when shorter than seq_len + 1) */
	uint64_t size;         /* the file's bytes at set-up (a remote one's: what the
	                        * server said) */
	/* .bin.zst: tokens per frame and where each frame starts (frames + 1
	 * offsets); 0 and NULL for a plain shard */
	uint32_t frame_tokens, frames;
	uint64_t *frame_off;
} rf_token_shard;

typedef struct rf_tokens {
	uint32_t seq_len;    /* T: a window is T + 1 tokens */
	uint32_t stride;     /* tokens between window starts */
	uint32_t width;      /* bytes per stored token: 2 or 4 (every shard alike) */
	uint32_t magic;      /* RF_TOKENS_GPT2 or RF_TOKENS_LLAMA3 */
	int any_zstd;        /* some shard is a .bin.zst */
	uint64_t windows;    /* over all shards */
	uint64_t tokens;     /* over all shards */
	uint32_t max_frame_bytes; /* the largest compressed frame (read sizes) */
	rf_token_shard *shards; /* one per idx->shards entry */
	size_t nshards;
} rf_tokens;

/* Reads and checks the header (and frame table) of every shard listed in
 * idx (root and shards set: src/source/token_shards.c finds them) and
 * numbers the windows into *out (set even on failure, for
 * rfi_tokens_free); records each shard's stamp in idx, or, for remote
 * shards (idx->urls), each one's ETag in idx->etags (read with blocking
 * ranged GETs of the header and frame table, on this thread). source
 * names the source in messages.
 * @return : 0; RF_EINDEX (a bad shard: err names it and says why);
 *           RF_EEMPTY (no shard, or no shard holds a window); -errno
 *           (a remote shard: -ENOENT for a 404, -EACCES for a 401 or 403,
 *           -ECONNREFUSED, ...: err names its URL and what the server
 *           said); -ENOMEM. */
int rfi_tokens_scan(rf_index *idx, rf_tokens **out, const char *source, uint32_t seq_len,
		   uint32_t stride, char *err, size_t errlen);

void rfi_tokens_free(rf_tokens *tk);

/* The shard of window w (< tk->windows) and its first token. */
void rfi_tokens_locate(const rf_tokens *tk, uint64_t w, uint32_t *shard, uint64_t *token);

/* Where window w's bytes are: a plain shard's token range, or the frames of
 * a .bin.zst that hold it. *frame is the first of them (plain: 0). */
typedef struct rf_token_read {
	uint32_t shard;
	uint64_t token;  /* the window's first token */
	uint64_t offset; /* bytes to read: offset, len */
	uint32_t len;
	uint32_t frame;  /* .bin.zst: the first frame read; its first token is
	                  * frame * frame_tokens */
	int zstd;
} rf_token_read;
void rfi_tokens_read_of(const rf_tokens *tk, uint64_t w, rf_token_read *out);

/* Bytes of the largest read rfi_tokens_read_of gives. */
uint64_t rfi_tokens_max_read(const rf_tokens *tk);

/* Memory the token index holds, in bytes. */
size_t rfi_tokens_memory(const rf_tokens *tk);

/* The token kind's private state of s (what `ringfeed pack --tokens` and
 * tests read), or NULL when s is of another kind. */
struct rf_source;
const rf_tokens *rfi_source_tokens_of(const struct rf_source *s);

#endif
