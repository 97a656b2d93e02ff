/* token_shards.c - the token shards kind (llm.c's .bin, ringfeed's
 * .bin.zst): a sample is a window of seq_len + 1 tokens, found by its id
 * (token_windows.h: the kind's private state, s->priv), never stored. The
 * shards are a folder of them, a
 * list file (of paths or of URLs), a glob or brace pattern (of paths, or a
 * brace pattern of http(s):// or s3:// URLs), an s3:// folder, or one
 * shard file or URL. The source is one by the config's saying so
 * (seq_len), not by its look: a folder of .bin files may as well be raw
 * samples. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index_build.h"
#include "source/token_windows.h"
#include "source/source.h"
#include "util/hash.h"
#include "util/util.h"

/* The kind's private state: the shards' headers and the windows. */
static const rf_tokens *tokens_of(const rf_source *s)
{
	return s->priv;
}

const rf_tokens *rfi_source_tokens_of(const rf_source *s)
{
	return s->ops == &rf_source_tokens ? tokens_of(s) : NULL;
}

/* Its shards' names: llm.c's NAME.bin, ringfeed's NAME.bin.zst; never in
 * class folders (a token source has no labels). */
static const char *const token_suffixes[] = { ".bin", ".bin.zst", NULL };
static const rf_shard_names token_names = { .suffixes = token_suffixes,
					    .shown = ".bin or .bin.zst" };

static int claims(const char *source, const struct stat *st, const rf_source_params *p)
{
	(void)source, (void)st;
	return p->seq_len > 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && !strcmp(s + n - k, suffix);
}

/* Is url (query and fragment aside) a token shard's name, and not a glob? */
static int url_names_shard(const char *url)
{
	size_t n = strcspn(url, "?#");
	char *path = strndup(url, n);
	int yes = path && !strchr(path, '*') &&
		  (ends_with(path, ".bin") || ends_with(path, ".bin.zst"));
	free(path);
	return yes;
}

/* A source that is no path: a pattern (of paths or URLs), an s3:// folder
 * (its listing), or one remote shard. An http(s) folder has no listing to
 * read, and a URL is not globbed (its '?' starts a query): either is
 * refused, saying what is taken instead. */
static int find_pattern_or_url(rf_index *idx, const char *source, char *err, size_t errlen)
{
	int ret = rfi_index_shard_pattern(idx, source, &token_names, err, errlen);
	if (ret == 0)
		ret = rfi_index_shard_bucket(idx, source, &token_names, err, errlen);
	if (ret == 0 && rfi_index_is_url(source)) {
		if (!url_names_shard(source)) {
			rfi_fmt(err, errlen, "source '%s': a URL names one token shard (.bin, .bin.zst), "
			       "a brace pattern of them (shard_{000..009}.bin), or an s3:// folder "
			       "(s3://BUCKET/PREFIX/, listed); an http(s) folder has no listing to read "
			       "and a URL is not a glob: name its shards in a list file, one URL a "
			       "line", source);
			return RF_EINDEX;
		}
		ret = rfi_index_shard_file(idx, source, err, errlen); /* one remote shard */
	}
	if (ret == 0) {
		rfi_fmt(err, errlen, "source '%s': %s", source, strerror(ENOENT));
		return -ENOENT;
	}
	return ret < 0 ? ret : 0;
}

/* The shards of source (stat'ed as st, NULL: no such path), listed in idx
 * (not read yet): for remote ones, idx->urls too. */
static int find_shards(rf_index *idx, const char *source, const struct stat *st, char *err,
		       size_t errlen)
{
	if (!st)
		return find_pattern_or_url(idx, source, err, errlen);
	if (S_ISDIR(st->st_mode)) {
		int ret = rfi_index_shard_folder(idx, source, &token_names, err, errlen);
		if (ret == 0) {
			rfi_fmt(err, errlen, "source '%s': no token shards (*.bin, *.bin.zst) in it", source);
			return RF_EEMPTY;
		}
		return ret < 0 ? ret : 0;
	}
	if (!S_ISREG(st->st_mode)) {
		rfi_fmt(err, errlen, "source '%s': not a folder, a list or a shard (%s)", source,
		       rfi_file_kind(st->st_mode));
		return RF_EINDEX;
	}
	if (ends_with(source, ".bin") || ends_with(source, ".bin.zst"))
	{
		int ret = rfi_index_shard_file(idx, source, err, errlen); /* one shard: its folder the root */
		return ret < 0 ? ret : 0;
	}
	if (!rfi_index_is_shard_list(source, &token_names)) {
		rfi_fmt(err, errlen, "source '%s': neither a token shard (.bin, .bin.zst) nor a list "
		       "of them (one path a line)", source);
		return RF_EINDEX;
	}
	return rfi_index_shard_list(idx, source, &token_names, err, errlen);
}

static int build(rf_source *s, const char *source, const struct stat *st,
		 const rf_source_params *p, char *err, size_t errlen)
{
	int ret = find_shards(&s->index, source, st, err, errlen);
	rf_tokens *tk = NULL;
	if (!ret)
		ret = rfi_tokens_scan(&s->index, &tk, source, p->seq_len, p->stride, err, errlen);
	s->priv = tk; /* freed by free_tokens(), after a failure too */
	if (!ret)
		s->any_zstd = tk->any_zstd;
	return ret;
}

static const char *name(const rf_source *s, uint64_t i, char *buf, size_t len)
{
	uint32_t shard;
	uint64_t token;
	rfi_tokens_locate(tokens_of(s), i, &shard, &token);
	rfi_fmt(buf, len, "%s:tokens %llu..%llu (window %llu)", s->index.shards[shard],
	       (unsigned long long)token, (unsigned long long)(token + tokens_of(s)->seq_len),
	       (unsigned long long)i);
	return buf;
}

static int32_t label(const rf_source *s, uint64_t i)
{
	(void)s, (void)i;
	return -1;
}

static int check(const rf_source *s, uint64_t i, char *reason, size_t len)
{
	(void)s, (void)i, (void)reason, (void)len;
	return 0; /* every shard was checked when the source was built */
}

/* Its tokens, or the zstd frames that hold them. */
static void read_of(const rf_source *s, uint64_t i, rf_source_read *r)
{
	rf_token_read tr;
	rfi_tokens_read_of(tokens_of(s), i, &tr);
	*r = (rf_source_read){ .shard = tr.shard, .offset = tr.offset, .len = tr.len,
			       .expect = tr.len };
}

static rf_stage stage(const rf_source *s, uint64_t i)
{
	if (!s->any_zstd)
		return RF_STAGE_TOKENS;
	uint32_t shard;
	uint64_t token;
	rfi_tokens_locate(tokens_of(s), i, &shard, &token);
	return tokens_of(s)->shards[shard].frames ? RF_STAGE_ZSTD_TOKENS : RF_STAGE_TOKENS;
}

static void cut_short(const rf_source *s, const rf_source_read *r, int got, char *reason,
		      size_t len)
{
	(void)s;
	rfi_fmt(reason, len, "window cut short: the shard shrank since set-up (%lld bytes, read %d)",
	       (long long)r->expect, got);
}

/* Its shards (paths, token counts, widths) and the windows cut from them. */
static uint64_t fingerprint(const rf_source *s, int with_weights)
{
	(void)with_weights;
	const rf_tokens *tk = tokens_of(s);
	const rf_index *idx = &s->index;
	uint64_t h = rfi_hash_u64(0x746f6b656e732121ull, tk->windows);
	h = rfi_hash_u64(h, tk->seq_len);
	h = rfi_hash_u64(h, tk->stride);
	h = rfi_hash_u64(h, tk->width);
	for (size_t i = 0; i < idx->nshards; i++) {
		h = rfi_hash_bytes(h, idx->shards[i], strlen(idx->shards[i]));
		h = rfi_hash_u64(h, tk->shards[i].tokens);
	}
	return h;
}

static uint64_t samples(const rf_source *s)
{
	return tokens_of(s)->windows;
}

static uint64_t largest_read(const rf_source *s)
{
	return rfi_tokens_max_read(tokens_of(s));
}

static uint64_t shard_bytes(const rf_source *s, uint32_t shard)
{
	return tokens_of(s)->shards[shard].size;
}

static size_t memory(const rf_source *s)
{
	return rfi_index_memory(&s->index) + rfi_tokens_memory(tokens_of(s));
}

static void free_tokens(rf_source *s)
{
	rfi_tokens_free(s->priv);
	s->priv = NULL;
}

static uint32_t token_width(const rf_source *s)
{
	return tokens_of(s)->width;
}

/* The frames of a .bin.zst that hold window i: from the first read to the
 * one holding its last token. */
static void frames_of(const rf_source *s, uint64_t i, rf_source_frames *f)
{
	const rf_tokens *tk = tokens_of(s);
	rf_token_read tr;
	rfi_tokens_read_of(tk, i, &tr);
	const rf_token_shard *sh = &tk->shards[tr.shard];
	uint64_t n = (uint64_t)tk->seq_len + 1;
	*f = (rf_source_frames){
		.shard = tr.shard, .first = tr.frame,
		.last = (uint32_t)((tr.token + n - 1) / sh->frame_tokens),
		.frame_tokens = sh->frame_tokens, .shard_tokens = sh->tokens,
		.token = tr.token, .tokens = n,
	};
}

const rf_source_ops rf_source_tokens = {
	.kind = RF_KIND_TOKENS,
	.name = "token shards",
	.claims = claims,
	.build = build,
	.name_of = name,
	.label = label,
	.check = check,
	.read_of = read_of,
	.stage = stage,
	.cut_short = cut_short,
	.fingerprint = fingerprint,
	.samples = samples,
	.largest_read = largest_read,
	.shard_bytes = shard_bytes,
	.memory = memory,
	.free = free_tokens,
	.token_width = token_width,
	.frames_of = frames_of,
	.shard_names = &token_names,
	.in_order_tiles = 1,
};
