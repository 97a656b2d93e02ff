/* token_windows.c - the index of a token source, once its shards are listed
 * (src/source/token_shards.c): reads and checks each header (and a
 * .bin.zst's frame table) with one pread, and numbers the windows shard
 * after shard. Any bad shard fails the build naming it: a token source has
 * no per-sample replacement to fall back on (every window of a shard would
 * be bad), and a lying header is a broken dataset, not a bad sample. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "index/pack_marker.h"
#include "index/token_shard.h"
#include "source/token_windows.h"
#include "util/util.h"

/* Reads and checks shard i's header (and frame table) into sh. */
static int read_shard(const rf_index *idx, size_t i, rf_token_shard *sh, rf_token_header *h,
		      char *err, size_t errlen)
{
	const char *path = idx->shards[i];
	char why[256];
	int fd = openat(idx->root_fd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		rf_fmt(err, errlen, "shard %s/%s: %s", idx->root, path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	int ret = 0;
	uint8_t hdr[RF_TOKEN_HEADER_BYTES] = { 0 };
	ssize_t got = 0;
	if (!S_ISREG(st.st_mode)) {
		rf_fmt(why, sizeof(why), "not a regular file (%s)", rf_file_kind(st.st_mode));
		ret = RF_EINDEX;
	} else if (st.st_size >= RF_TOKEN_HEADER_BYTES &&
		   (got = pread(fd, hdr, sizeof(hdr), 0)) != (ssize_t)sizeof(hdr)) {
		rf_fmt(why, sizeof(why), "reading its header: %s", got < 0 ? strerror(errno)
								   : "short read");
		ret = got < 0 ? -errno : RF_EINDEX;
	} else if (rf_token_header_parse(hdr, (uint64_t)st.st_size, h, why, sizeof(why))) {
		ret = RF_EINDEX;
	}
	sh->tokens = h->tokens;
	sh->size = (uint64_t)st.st_size;
	if (!ret && h->frames) { /* a .bin.zst: its frame table */
		uint8_t *table = malloc(h->table_bytes);
		sh->frame_off = malloc(h->table_bytes);
		if (!table || !sh->frame_off) {
			ret = -ENOMEM;
			rf_fmt(why, sizeof(why), "out of memory for its frame table");
		} else if ((got = pread(fd, table, h->table_bytes, RF_TOKEN_HEADER_BYTES)) !=
			   (ssize_t)h->table_bytes) {
			rf_fmt(why, sizeof(why), "reading its frame table: %s",
			       got < 0 ? strerror(errno) : "short read");
			ret = got < 0 ? -errno : RF_EINDEX;
		} else if (rf_tokz_table_check(h, table, sh->size, sh->frame_off, why, sizeof(why))) {
			ret = RF_EINDEX;
		}
		free(table);
		sh->frame_tokens = h->frame_tokens;
		sh->frames = h->frames;
	}
	close(fd);
	if (ret)
		rf_fmt(err, errlen, "shard %s/%s: %s", idx->root, path, why);
	return ret;
}

/* The largest compressed frame of sh. */
static uint64_t largest_frame(const rf_token_shard *sh)
{
	uint64_t m = 0;
	for (uint32_t k = 0; k < sh->frames; k++)
		m = RF_MAX(m, sh->frame_off[k + 1] - sh->frame_off[k]);
	return m;
}

int rf_tokens_scan(rf_index *idx, rf_tokens **out, const char *source, uint32_t seq_len,
		   uint32_t stride, char *err, size_t errlen)
{
	rf_tokens *tk = calloc(1, sizeof(*tk));
	*out = tk;
	if (!tk)
		return -ENOMEM;
	tk->seq_len = seq_len;
	tk->stride = stride ? stride : seq_len;
	int ret = 0;
	if (!idx->nshards) {
		rf_fmt(err, errlen, "source '%s': no token shards", source);
		ret = RF_EEMPTY;
	}
	if (!ret) /* an interrupted pack --tokens: refused */
		ret = rf_index_check_shards_complete(idx, err, errlen);
	if (!ret && !(tk->shards = calloc(idx->nshards, sizeof(*tk->shards))))
		ret = -ENOMEM;
	if (!ret)
		tk->nshards = idx->nshards;
	uint32_t first_width = 0;
	size_t first_shard = 0;
	for (size_t i = 0; i < idx->nshards && !ret; i++) {
		rf_token_shard *sh = &tk->shards[i];
		rf_token_header h;
		ret = read_shard(idx, i, sh, &h, err, errlen);
		if (ret)
			break;
		if (!first_width) {
			first_width = h.width;
			first_shard = i;
			tk->width = h.width;
			tk->magic = h.magic;
		} else if (h.width != first_width) {
			rf_fmt(err, errlen, "shard %s/%s holds %s tokens, shard %s uint%u ones: one "
			       "source has one token width", idx->root, idx->shards[i],
			       h.width == 2 ? "uint16" : "uint32", idx->shards[first_shard],
			       first_width * 8);
			ret = RF_EINDEX;
			break;
		}
		sh->first_window = tk->windows;
		sh->windows = rf_token_windows(sh->tokens, seq_len, tk->stride);
		tk->windows += sh->windows;
		tk->tokens += sh->tokens;
		if (sh->frames) {
			tk->any_zstd = 1;
			tk->max_frame_bytes = (uint32_t)RF_MAX(tk->max_frame_bytes, largest_frame(sh));
		}
		ret = rf_index_stamp_add(idx, idx->root_fd, idx->shards[i], idx->shards[i]);
	}
	if (!ret && !tk->windows) {
		rf_fmt(err, errlen, "source '%s': %llu tokens in %zu shard%s, and none holds a window "
		       "of %u + 1 tokens", source, (unsigned long long)tk->tokens, idx->nshards,
		       idx->nshards == 1 ? "" : "s", seq_len);
		ret = RF_EEMPTY;
	}
	return ret;
}

void rf_tokens_free(rf_tokens *tk)
{
	if (!tk)
		return;
	for (size_t i = 0; tk->shards && i < tk->nshards; i++)
		free(tk->shards[i].frame_off);
	free(tk->shards);
	free(tk);
}

void rf_tokens_locate(const rf_tokens *tk, uint64_t w, uint32_t *shard, uint64_t *token)
{
	/* the first shard whose windows end past w (shards without windows
	 * end where the one before them ends, and are passed over) */
	const rf_token_shard *s = tk->shards;
	size_t lo = 0, hi = tk->nshards - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].first_window + s[mid].windows <= w)
			lo = mid + 1;
		else
			hi = mid;
	}
	*shard = (uint32_t)lo;
	*token = (w - s[lo].first_window) * tk->stride;
}

void rf_tokens_read_of(const rf_tokens *tk, uint64_t w, rf_token_read *out)
{
	uint32_t shard;
	uint64_t token;
	rf_tokens_locate(tk, w, &shard, &token);
	const rf_token_shard *sh = &tk->shards[shard];
	*out = (rf_token_read){ .shard = shard, .token = token };
	uint64_t n = (uint64_t)tk->seq_len + 1;
	if (!sh->frames) {
		out->offset = RF_TOKEN_HEADER_BYTES + token * tk->width;
		out->len = (uint32_t)(n * tk->width);
		return;
	}
	uint32_t f0 = (uint32_t)(token / sh->frame_tokens);
	uint32_t f1 = (uint32_t)((token + n - 1) / sh->frame_tokens);
	out->zstd = 1;
	out->frame = f0;
	out->offset = sh->frame_off[f0];
	out->len = (uint32_t)(sh->frame_off[f1 + 1] - sh->frame_off[f0]);
}

uint64_t rf_tokens_max_read(const rf_tokens *tk)
{
	uint64_t m = ((uint64_t)tk->seq_len + 1) * tk->width;
	for (size_t i = 0; i < tk->nshards; i++) {
		const rf_token_shard *sh = &tk->shards[i];
		if (!sh->frames)
			continue;
		/* a window touches at most this many frames of a shard */
		uint64_t k = RF_MIN((uint64_t)sh->frames, (uint64_t)tk->seq_len / sh->frame_tokens + 2);
		m = RF_MAX(m, k * tk->max_frame_bytes);
	}
	return m;
}

size_t rf_tokens_memory(const rf_tokens *tk)
{
	size_t n = sizeof(*tk) + tk->nshards * sizeof(rf_token_shard);
	for (size_t i = 0; i < tk->nshards; i++)
		n += tk->shards[i].frames ? (tk->shards[i].frames + 1) * sizeof(uint64_t) : 0;
	return n;
}
