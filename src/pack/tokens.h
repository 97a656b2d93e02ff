/* tokens.h - the CLI's writers of token shards (layouts in
 * src/source/token_shard.h): `ringfeed gen --tokens` (synthetic shards in
 * llm.c's layout, token_gen.c) and `ringfeed pack --tokens` (.bin ->
 * .bin.zst, token_pack.c). Private: the CLI's, not the library's. One
 * thread does all of it; every output file appears whole or not at all
 * (out_file.h), and a failed or stopped run removes what it wrote. */
#ifndef RF_PACK_TOKENS_H
#define RF_PACK_TOKENS_H

#include <signal.h>
#include <stdint.h>

/* Told after every chunk of tokens written: done of total, over all files. */
typedef void (*rf_tokens_progress_fn)(void *user, uint64_t done, uint64_t total);

typedef struct rf_token_gen_opts {
	const char *out;        /* folder: created when absent (its parent must exist) */
	uint32_t shards;        /* files tokens_000000.bin ... */
	uint64_t shard_tokens;  /* tokens a file (at most 2^31 - 1: llm.c's int32 count) */
	uint32_t vocab;         /* token ids 0 .. vocab - 1 */
	int zipf;               /* 1: P(id k) ~ 1 / (k + 1)^zipf_s (id = rank); 0: uniform */
	double zipf_s;
	int llama3;             /* 1: magic 20240801, version 7, uint32; 0: GPT-2's, uint16 */
	uint64_t seed;          /* the same seed, the same bytes */
	rf_tokens_progress_fn progress; /* may be NULL */
	void *user;
	volatile sig_atomic_t *stop; /* set by a signal handler: stop, remove what was written */
} rf_token_gen_opts;

/* @return : 0; -EINTR (stopped); a negative errno or RF_ECONFIG with err set. */
int rfi_token_gen(const rf_token_gen_opts *o, char *err, size_t errlen);

typedef struct rf_token_pack_opts {
	const char *source;     /* plain .bin shards: a folder, list, glob, pattern or one file */
	const char *out;        /* folder for NAME.bin.zst (created when absent; not
	                         * one that holds a source shard), marked while
	                         * the pack runs (index/pack_marker.h) */
	uint32_t frame_tokens;  /* tokens a frame: 1 .. RF_TOKZ_FRAME_MAX */
	int level;              /* zstd level */
	rf_tokens_progress_fn progress; /* may be NULL */
	void *user;
	volatile sig_atomic_t *stop;
} rf_token_pack_opts;

typedef struct rf_token_pack_result {
	uint32_t shards;
	uint64_t tokens, bytes_in, bytes_out;
} rf_token_pack_result;

/* @return : 0 with *res filled; -EINTR (stopped); a negative errno or RF_E*
 *           code with err set (a source shard that is not a plain .bin, or
 *           fails its checks, names the file). */
int rfi_token_pack(const rf_token_pack_opts *o, rf_token_pack_result *res, char *err,
		  size_t errlen);

#endif
