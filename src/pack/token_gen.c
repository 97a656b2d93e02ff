/* token_gen.c - `ringfeed gen --tokens`: synthetic token shards in llm.c's
 * layout (src/source/token_shard.h), for benchmarks and tests. Token j of
 * the whole set (counted over the shards) is a pure function of (seed, j):
 * the same seed gives the same bytes, whatever else changes. Zipf ids are
 * drawn through an alias table (src/sample/alias.h: one hash, one table
 * entry a token), so 100 million tokens take about a second. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "source/token_shard.h"
#include "pack/out_file.h"
#include "pack/tokens.h"
#include "ringfeed.h"
#include "sample/alias.h"
#include "util/hash.h"
#include "util/util.h"

#define CHUNK_TOKENS (1u << 20) /* tokens drawn and written at a time */

static const char *const gen_names[] = { "tokens_*.bin", ".tokens_*.bin.tmp", NULL };

static int check_opts(const rf_token_gen_opts *o, char *err, size_t errlen)
{
	uint64_t max_vocab = o->llama3 ? UINT32_MAX : 65536;
	if (!o->out)
		rfi_fmt(err, errlen, "the output folder must be set");
	else if (o->shards < 1 || o->shards > 1000000)
		rfi_fmt(err, errlen, "--shards %u: not in [1, 1000000]", o->shards);
	else if (o->shard_tokens < 1 || o->shard_tokens > INT32_MAX)
		rfi_fmt(err, errlen, "--shard-tokens %llu: not in [1, 2^31 - 1] (llm.c's header "
		       "holds the count in an int32)", (unsigned long long)o->shard_tokens);
	else if (o->vocab < 1 || o->vocab > max_vocab)
		rfi_fmt(err, errlen, "--vocab %u: not in [1, %llu] for %s tokens", o->vocab,
		       (unsigned long long)max_vocab, o->llama3 ? "uint32" : "uint16");
	else if (o->zipf && !(o->zipf_s > 0 && o->zipf_s < 100))
		rfi_fmt(err, errlen, "--zipf-s %g: not in (0, 100)", o->zipf_s);
	else
		return 0;
	return RF_ECONFIG;
}

/* Zipf over the ids: weight 1 / (k + 1)^s for id k (the most frequent is 0). */
static int zipf_table(rf_alias *a, uint32_t vocab, double s, char *err, size_t errlen)
{
	double *w = malloc((size_t)vocab * sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (uint32_t k = 0; k < vocab; k++)
		w[k] = pow((double)k + 1.0, -s);
	int ret = rfi_alias_build(a, w, vocab, err, errlen);
	free(w);
	return ret;
}

/* Tokens first .. first + n - 1 of the set into buf, width bytes each. */
static void draw(const rf_token_gen_opts *o, const rf_alias *a, uint64_t first, uint32_t n,
		 uint32_t width, uint8_t *buf)
{
	uint64_t key = rfi_mix64(o->seed ^ 0x746f6b656e73ull);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t h = rfi_mix64(key + (first + i) * 0x9e3779b97f4a7c15ull);
		uint32_t id = a ? (uint32_t)rfi_alias_draw(a, h, (uint32_t)h)
				: (uint32_t)(((unsigned __int128)h * o->vocab) >> 64);
		memcpy(buf + (size_t)i * width, &id, width); /* little-endian host */
	}
}

/* One shard: the header, then its tokens chunk by chunk. */
static int write_shard(const rf_token_gen_opts *o, const rf_alias *a, uint32_t i, int dirfd,
		       uint8_t *buf, uint64_t *done, char *err, size_t errlen)
{
	uint32_t width = o->llama3 ? 4 : 2;
	int32_t header[RF_TOKEN_HEADER_BYTES / 4] = { 0 };
	header[0] = o->llama3 ? RF_TOKENS_LLAMA3 : RF_TOKENS_GPT2;
	header[1] = o->llama3 ? RF_TOKENS_LLAMA3_VERSION : RF_TOKENS_GPT2_VERSION;
	header[2] = (int32_t)o->shard_tokens;
	char name[64];
	snprintf(name, sizeof(name), "tokens_%06u.bin", i);
	rf_out_file f = RF_OUT_FILE_NONE;
	int ret = rfi_out_open(&f, dirfd, o->out, name, err, errlen);
	struct iovec iov = { header, sizeof(header) };
	if (!ret)
		ret = rfi_out_writev(&f, &iov, 1, err, errlen);
	uint64_t first = (uint64_t)i * o->shard_tokens;
	for (uint64_t at = 0; !ret && at < o->shard_tokens; at += CHUNK_TOKENS) {
		if (o->stop && *o->stop) {
			ret = -EINTR;
			break;
		}
		uint32_t n = (uint32_t)RF_MIN((uint64_t)CHUNK_TOKENS, o->shard_tokens - at);
		draw(o, a, first + at, n, width, buf);
		iov = (struct iovec){ buf, (size_t)n * width };
		ret = rfi_out_writev(&f, &iov, 1, err, errlen);
		*done += n;
		if (!ret && o->progress)
			o->progress(o->user, *done, (uint64_t)o->shards * o->shard_tokens);
	}
	if (!ret)
		return rfi_out_commit(&f, err, errlen);
	rfi_out_abort(&f);
	return ret;
}

int rfi_token_gen(const rf_token_gen_opts *o, char *err, size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	int ret = check_opts(o, err, errlen);
	if (ret)
		return ret;
	rf_alias a = { 0 };
	if (o->zipf && (ret = zipf_table(&a, o->vocab, o->zipf_s, err, errlen)))
		return ret;
	int dirfd = -1, made = 0;
	uint8_t *buf = malloc((size_t)CHUNK_TOKENS * 4);
	ret = buf ? rfi_out_dir_open(o->out, gen_names, "token shards", &dirfd, &made, err, errlen)
		  : -ENOMEM;
	uint64_t done = 0;
	uint32_t written = 0;
	for (; !ret && written < o->shards; written++)
		ret = write_shard(o, o->zipf ? &a : NULL, written, dirfd, buf, &done, err, errlen);
	if (ret) { /* nothing half done stays: the shards written so far go too */
		for (uint32_t i = 0; i < written; i++) {
			char name[64];
			snprintf(name, sizeof(name), "tokens_%06u.bin", i);
			unlinkat(dirfd, name, 0);
		}
		if (made)
			rmdir(o->out);
	}
	if (ret == -ENOMEM && !err[0])
		rfi_fmt(err, errlen, "out of memory");
	if (dirfd >= 0)
		close(dirfd);
	free(buf);
	rfi_alias_free(&a);
	return ret;
}
