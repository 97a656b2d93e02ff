/* token_windows.c - the index of a token source, once its shards are listed
 * (src/source/token_shards.c): reads and checks each header (and a
 * .bin.zst's frame table), with pread from a file or ranged GETs from a
 * URL, and numbers the windows shard after shard. Any bad shard fails the
 * build naming it: a token source has no per-sample replacement to fall
 * back on (every window of a shard would be bad), and a lying header is a
 * broken dataset, not a bad sample. */
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
#include "source/token_shard.h"
#include "remote/transport.h" /* rfi_transport_fetch */
#include "source/token_windows.h"
#include "util/util.h"

/* Shard i as messages name it (rfi_index_shard_shown: no query); an s3://
 * one with the https URL it is read at (which holds no secret: requests
 * are signed in their headers). */
static const char *shard_name(const rf_index *idx, size_t i, char *buf, size_t len)
{
	char shown[PATH_MAX + 8];
	rfi_index_shard_shown(idx, i, shown, sizeof(shown));
	if (idx->urls && rfi_transport_ops_of(idx->transport)->read_elsewhere)
		rfi_fmt(buf, len, "%s (%s)", shown, idx->urls[i]);
	else
		rfi_fmt(buf, len, "%s", shown);
	return buf;
}

/* Where a shard's header and frame table are read from: its file, or its
 * URL (ranged GETs of those bytes only, never the whole shard). */
typedef struct shard_in {
	rf_index *idx;
	size_t i;
	int fd;        /* a local shard's descriptor; -1 for a remote one */
	uint64_t size; /* its bytes: fstat's, or the server's (Content-Range) */
} shard_in;

/* Opens local shard in->i: a regular file, its size in in->size.
 * @return : 0, or a code with why set. */
static int local_open(shard_in *in, char *why, size_t wl)
{
	struct stat st;
	in->fd = openat(in->idx->root_fd, in->idx->shards[in->i], O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (in->fd < 0 || fstat(in->fd, &st) != 0) {
		int e = errno;
		rfi_fmt(why, wl, "%s", strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		rfi_fmt(why, wl, "not a regular file (%s)", rfi_file_kind(st.st_mode));
		return RF_EINDEX;
	}
	in->size = (uint64_t)st.st_size;
	return 0;
}

/* The code of a refusal, as the read engine gives it for a read (http.c). */
static int status_code(long status)
{
	return status == 404 || status == 410 ? -ENOENT
	     : status == 401 || status == 403 ? -EACCES
	     : status == 412 ? -ESTALE /* If-Match: not the object the header came from */
	     : -EIO;
}

/* Bytes [off, off + len) of remote shard in->i into buf (*got of them:
 * fewer only past its end), one ranged GET, tried again on a transient
 * failure. The first (first = 1) sets the shard's size, from the response,
 * and its ETag (idx->etags[i]); every later request, here and in the run
 * (src/pipeline/feeder.c), asks for that object (If-Match), so that a
 * shard replaced after its header was read is refused, never read as a
 * mix of two. @return : 0, or a code with why set. */
static int remote_read(shard_in *in, uint8_t *buf, size_t len, uint64_t off, int first,
		       size_t *got, char *why, size_t wl)
{
	rf_index *idx = in->idx;
	const char *url = idx->urls[in->i];
	char *etag = idx->etags[in->i];
	char if_match[16 + RF_IO_ETAG_MAX];
	const char *headers[2] = { NULL, NULL };
	if (etag[0]) {
		rfi_fmt(if_match, sizeof(if_match), "If-Match: %s", etag);
		headers[0] = if_match;
	}
	rf_fetch_result res;
	char ferr[512];
	/* room for an error body past the range (S3 says why in its XML) */
	int ret = rfi_transport_fetch(idx->transport,
				     &(rf_fetch){ .url = url, .headers = headers, .offset = off,
						  .len = len, .max_body = len + 65536,
						  .budget_ms = idx->remote_timeout_ms },
				     &res, ferr, sizeof(ferr));
	if (ret == -EFBIG) {
		rfi_fmt(why, wl, "the server answered a range of %zu bytes with more than that: it "
		       "must serve byte ranges (a 206 to a Range request)", len);
		return ret;
	}
	if (ret) { /* fetch's message starts with the URL: the caller's names it */
		size_t n = strlen(url);
		const char *say = !strncmp(ferr, url, n) && !strncmp(ferr + n, ": ", 2) ? ferr + n + 2
										       : ferr;
		rfi_fmt(why, wl, "%s", say);
		return ret;
	}
	*got = 0;
	if (res.status == 206 || (res.status == 200 && off == 0)) {
		*got = RF_MIN(res.body_len, len);
		if (*got) /* an empty object's body is NULL */
			memcpy(buf, res.body, *got);
	} else if (res.status != 416) { /* 416: the range starts at or past the end */
		rfi_fetch_why(&res, why, wl);
		if (res.status == 200) /* to a range past 0: the server ignored Range */
			rfi_fmt(why, wl, "HTTP 200 to a range from byte %llu: the server must serve "
			       "byte ranges (a 206 to a Range request)", (unsigned long long)off);
		ret = res.status == 200 ? -EPROTO : status_code(res.status);
	}
	if (!ret && first) {
		if (!res.size && *got) {
			rfi_fmt(why, wl, "the server gave no size (no Content-Range)");
			ret = RF_EINDEX;
		}
		in->size = res.size;
		memcpy(etag, res.etag, RF_IO_ETAG_MAX); /* "" when none (or a weak one) */
	} else if (!ret && res.size && res.size != in->size) {
		/* a server without ETags: the size at least */
		rfi_fmt(why, wl, "it changed while its header was read (%llu bytes, then %llu)",
		       (unsigned long long)in->size, (unsigned long long)res.size);
		ret = -ESTALE;
	}
	rfi_fetch_result_free(&res);
	return ret;
}

/* Bytes [off, off + len) of the shard into buf, all of them; what names
 * them in the message ("its header"). @return : 0, or a code with why set
 * (RF_EINDEX: a short read). */
static int read_at(shard_in *in, uint8_t *buf, size_t len, uint64_t off, const char *what,
		   char *why, size_t wl)
{
	size_t got = 0;
	if (in->idx->urls) {
		int ret = remote_read(in, buf, len, off, 0, &got, why, wl);
		if (ret)
			return ret;
	} else {
		ssize_t n = pread(in->fd, buf, len, (off_t)off);
		if (n < 0) {
			int e = errno;
			rfi_fmt(why, wl, "reading %s: %s", what, strerror(e));
			return -e;
		}
		got = (size_t)n;
	}
	if (got != len) {
		rfi_fmt(why, wl, "reading %s: short read (%zu of %zu bytes)", what, got, len);
		return RF_EINDEX;
	}
	return 0;
}

/* Reads and checks shard i's header (and frame table) into sh: from its
 * file, or, remote, from the header's bytes alone (which also say the
 * shard's size and ETag) and then the table's. One shard at a time: a
 * source of thousands of remote shards would want these requests in
 * parallel (the read engine's http path, as rfi_tar_scan_shards has for
 * tar shards), a round trip or two each as it is. */
static int read_shard(rf_index *idx, size_t i, rf_token_shard *sh, rf_token_header *h,
		      char *err, size_t errlen)
{
	char why[512], name[PATH_MAX + 64];
	shard_in in = { .idx = idx, .i = i, .fd = -1 };
	uint8_t hdr[RF_TOKEN_HEADER_BYTES] = { 0 };
	*h = (rf_token_header){ 0 };
	int ret;
	if (idx->urls) {
		size_t got = 0; /* fewer than a header only when the shard is shorter */
		ret = remote_read(&in, hdr, sizeof(hdr), 0, 1, &got, why, sizeof(why));
		if (!ret && got < RF_MIN(in.size, (uint64_t)sizeof(hdr))) {
			rfi_fmt(why, sizeof(why), "reading its header: short read (%zu of %zu bytes)",
			       got, sizeof(hdr));
			ret = RF_EINDEX;
		}
	} else {
		ret = local_open(&in, why, sizeof(why));
		/* a shorter file is said to be one by the parse */
		if (!ret && in.size >= RF_TOKEN_HEADER_BYTES)
			ret = read_at(&in, hdr, sizeof(hdr), 0, "its header", why, sizeof(why));
	}
	if (!ret && rfi_token_header_parse(hdr, in.size, h, why, sizeof(why)))
		ret = RF_EINDEX;
	sh->tokens = h->tokens;
	sh->size = in.size;
	if (!ret && h->frames) { /* a .bin.zst: its frame table */
		uint8_t *table = malloc(h->table_bytes);
		sh->frame_off = malloc((h->frames + 1) * sizeof(uint64_t));
		if (!table || !sh->frame_off) {
			ret = -ENOMEM;
			rfi_fmt(why, sizeof(why), "out of memory for its frame table");
		} else {
			ret = read_at(&in, table, h->table_bytes, RF_TOKEN_HEADER_BYTES,
				      "its frame table", why, sizeof(why));
		}
		if (!ret && rfi_tokz_table_check(h, table, sh->size, sh->frame_off, why, sizeof(why)))
			ret = RF_EINDEX;
		free(table);
		sh->frame_tokens = h->frame_tokens;
		sh->frames = h->frames;
	}
	if (in.fd >= 0)
		close(in.fd);
	if (ret)
		rfi_fmt(err, errlen, "shard %s: %s", shard_name(idx, i, name, sizeof(name)), why);
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

int rfi_tokens_scan(rf_index *idx, rf_tokens **out, const char *source, uint32_t seq_len,
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
		rfi_fmt(err, errlen, "source '%s': no token shards", source);
		ret = RF_EEMPTY;
	}
	if (!ret && !idx->urls) /* an interrupted pack --tokens: refused (a remote folder
				 * holds no marker we can see) */
		ret = rfi_index_check_shards_complete(idx, err, errlen);
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
			char name[PATH_MAX + 64];
			rfi_fmt(err, errlen, "shard %s holds %s tokens, shard %s uint%u ones: one "
			       "source has one token width", shard_name(idx, i, name, sizeof(name)),
			       h.width == 2 ? "uint16" : "uint32", idx->shards[first_shard],
			       first_width * 8);
			ret = RF_EINDEX;
			break;
		}
		sh->first_window = tk->windows;
		sh->windows = rfi_token_windows(sh->tokens, seq_len, tk->stride);
		tk->windows += sh->windows;
		tk->tokens += sh->tokens;
		if (sh->frames) {
			tk->any_zstd = 1;
			tk->max_frame_bytes = (uint32_t)RF_MAX(tk->max_frame_bytes, largest_frame(sh));
		}
		/* a remote shard's stamp is its ETag, kept in idx->etags */
		if (!idx->urls)
			ret = rfi_index_stamp_add(idx, idx->root_fd, idx->shards[i], idx->shards[i]);
	}
	if (!ret && !tk->windows) {
		rfi_fmt(err, errlen, "source '%s': %llu tokens in %zu shard%s, and none holds a window "
		       "of %u + 1 tokens", source, (unsigned long long)tk->tokens, idx->nshards,
		       idx->nshards == 1 ? "" : "s", seq_len);
		ret = RF_EEMPTY;
	}
	return ret;
}

void rfi_tokens_free(rf_tokens *tk)
{
	if (!tk)
		return;
	for (size_t i = 0; tk->shards && i < tk->nshards; i++)
		free(tk->shards[i].frame_off);
	free(tk->shards);
	free(tk);
}

void rfi_tokens_locate(const rf_tokens *tk, uint64_t w, uint32_t *shard, uint64_t *token)
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

void rfi_tokens_read_of(const rf_tokens *tk, uint64_t w, rf_token_read *out)
{
	uint32_t shard;
	uint64_t token;
	rfi_tokens_locate(tk, w, &shard, &token);
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

uint64_t rfi_tokens_max_read(const rf_tokens *tk)
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

size_t rfi_tokens_memory(const rf_tokens *tk)
{
	size_t n = sizeof(*tk) + tk->nshards * sizeof(rf_token_shard);
	for (size_t i = 0; i < tk->nshards; i++)
		n += tk->shards[i].frames ? (tk->shards[i].frames + 1) * sizeof(uint64_t) : 0;
	return n;
}
