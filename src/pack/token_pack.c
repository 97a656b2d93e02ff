/* token_pack.c - `ringfeed pack --tokens`: each plain token shard (llm.c's
 * .bin) rewritten as NAME.bin.zst (layout in src/source/token_shard.h):
 * the header, the frame table (reserved first, written once the frames
 * are), then the frames, each F tokens compressed as one zstd frame with
 * its content size and checksum. A shard is streamed a group of frames at a
 * time, never loaded whole. The source shards are found and checked by the
 * library's own token index (rf_tokens_build), so pack refuses what the
 * loader would refuse, with the same words. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "index/pack_marker.h"
#include "source/token_shard.h"
#include "source/token_windows.h"
#include "source/source.h"
#include "pack/out_file.h"
#include "pack/tokens.h"
#include "ringfeed.h"
#include "util/util.h"

#define GROUP_BYTES (4u << 20) /* source bytes read at a time (whole frames) */

static const char *const pack_names[] = { "*.bin.zst", ".*.bin.zst.tmp", NULL };

/* What one shard's packing holds; reused from shard to shard. */
typedef struct packer {
	const rf_token_pack_opts *o;
	ZSTD_CCtx *cctx;
	uint8_t *in, *z;     /* a group of frames as read, and one frame compressed */
	size_t in_cap, z_cap;
	uint64_t *off;       /* the frame table being built */
	uint64_t done, total; /* tokens, for progress */
} packer;

static int read_full(int fd, uint8_t *buf, size_t n, uint64_t off)
{
	while (n) {
		ssize_t r = pread(fd, buf, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO; /* shorter than its checked size: it shrank */
		buf += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* Packs shard i of idx (the file at fd, its checked header h) into out/name. */
static int pack_shard(packer *p, const rf_index *idx, size_t i, int fd, const rf_token_header *h,
		      int dirfd, const char *name, uint64_t *bytes_out, char *err, size_t errlen)
{
	const rf_token_pack_opts *o = p->o;
	uint32_t F = o->frame_tokens, w = h->width;
	uint64_t nf = (h->tokens + F - 1) / F;
	uint64_t table = 8 * (nf + 1);
	uint64_t *off = realloc(p->off, table);
	if (!off)
		return -ENOMEM;
	p->off = off;
	uint32_t words[RF_TOKEN_HEADER_BYTES / 4] = { RF_TOKZ_MAGIC, RF_TOKZ_VERSION, w, h->magic, F,
						      (uint32_t)nf, (uint32_t)h->tokens,
						      (uint32_t)(h->tokens >> 32) };
	rf_out_file f = RF_OUT_FILE_NONE;
	int ret = rfi_out_open(&f, dirfd, o->out, name, err, errlen);
	if (ret)
		return ret;
	/* the header, then room for the table */
	memset(p->z, 0, RF_MIN(p->z_cap, (size_t)table));
	struct iovec iov[2] = { { words, sizeof(words) }, { NULL, 0 } };
	ret = rfi_out_writev(&f, iov, 1, err, errlen);
	for (uint64_t left = table; !ret && left;) {
		iov[1] = (struct iovec){ p->z, (size_t)RF_MIN((uint64_t)p->z_cap, left) };
		left -= iov[1].iov_len;
		ret = rfi_out_writev(&f, &iov[1], 1, err, errlen);
	}
	uint64_t at = RF_TOKEN_HEADER_BYTES + table;
	uint32_t per_group = (uint32_t)RF_MAX(1u, GROUP_BYTES / ((size_t)F * w));
	for (uint64_t k = 0; !ret && k < nf; k += per_group) {
		if (o->stop && *o->stop) {
			ret = -EINTR;
			break;
		}
		uint64_t first = k * F, n = RF_MIN((uint64_t)per_group * F, h->tokens - first);
		ret = read_full(fd, p->in, (size_t)(n * w), RF_TOKEN_HEADER_BYTES + first * w);
		if (ret) {
			rfi_fmt(err, errlen, "shard %s/%s: reading tokens %llu..: %s", idx->root,
			       idx->shards[i], (unsigned long long)first, strerror(-ret));
			break;
		}
		for (uint64_t t = 0; !ret && t < n; t += F) {
			size_t len = (size_t)(RF_MIN((uint64_t)F, n - t) * w);
			size_t r = ZSTD_compress2(p->cctx, p->z, p->z_cap, p->in + t * w, len);
			if (ZSTD_isError(r)) {
				rfi_fmt(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
				ret = -EIO;
				break;
			}
			p->off[(first + t) / F] = at;
			at += r;
			iov[0] = (struct iovec){ p->z, r };
			ret = rfi_out_writev(&f, iov, 1, err, errlen);
		}
		p->done += n;
		if (!ret && o->progress)
			o->progress(o->user, p->done, p->total);
	}
	if (!ret) {
		p->off[nf] = at;
		/* the table as it is in memory: hosts are little-endian (token_row.c) */
		ret = rfi_out_pwrite(&f, p->off, (size_t)table, RF_TOKEN_HEADER_BYTES, err, errlen);
	}
	if (!ret) {
		*bytes_out += at;
		return rfi_out_commit(&f, err, errlen);
	}
	rfi_out_abort(&f);
	return ret;
}

static int check_opts(const rf_token_pack_opts *o, char *err, size_t errlen)
{
	if (!o->source || !o->out)
		rfi_fmt(err, errlen, "source and output folder must be set");
	else if (o->frame_tokens < 1 || o->frame_tokens > RF_TOKZ_FRAME_MAX)
		rfi_fmt(err, errlen, "--frame-tokens %u: not in [1, %u]", o->frame_tokens,
		       RF_TOKZ_FRAME_MAX);
	else if (o->level < ZSTD_minCLevel() || o->level > ZSTD_maxCLevel())
		rfi_fmt(err, errlen, "zstd level %d: not in [%d, %d]", o->level, ZSTD_minCLevel(),
		       ZSTD_maxCLevel());
	else
		return 0;
	return RF_ECONFIG;
}

/* The output name of shard path: its base name + ".zst". */
static void out_name(const char *path, char *name, size_t len)
{
	const char *base = strrchr(path, '/');
	rfi_fmt(name, len, "%s.zst", base ? base + 1 : path);
}

/* Refuses what cannot be packed: .bin.zst sources, an output folder that
 * holds source shards (it would then hold each twice, NAME.bin and
 * NAME.bin.zst, and a read of it would count them twice), two shards of one
 * name (from a list of several folders). An output folder below a source
 * folder is harmless: a folder of token shards is read without its
 * subfolders. */
static int check_source(const rf_source *src, const char *out, char *err, size_t errlen)
{
	const rf_index *idx = &src->index;
	const char *last = NULL; /* the folder checked last (shards come folder by folder) */
	size_t last_len = 0;
	for (size_t i = 0; i < idx->nshards; i++) {
		const char *sh = idx->shards[i], *slash = strrchr(sh, '/');
		size_t len = slash ? (size_t)(slash - sh) : 0;
		if (!last || len != last_len || memcmp(sh, last, len)) {
			char dir[PATH_MAX];
			rfi_fmt(dir, sizeof(dir), "%s%s%.*s", idx->root, len ? "/" : "", (int)len, sh);
			if (rfi_out_dir_place(out, dir) == RF_OUT_SAME) {
				rfi_fmt(err, errlen, "output folder '%s' is the source's (it holds shard "
				       "%s/%s): choose another (it would then hold each shard twice)",
				       out, idx->root, sh);
				return RF_ECONFIG;
			}
			last = sh;
			last_len = len;
		}
		/* by its header, or by its name (an empty .bin.zst has no frames,
		 * and a .bin.zst.zst would be no one's format) */
		size_t n = strlen(sh);
		if (rfi_source_tokens_of(src)->shards[i].frames || (n >= 4 && !strcmp(sh + n - 4, ".zst"))) {
			rfi_fmt(err, errlen, "shard %s/%s is already a .bin.zst: pack takes plain .bin "
			       "shards", idx->root, sh);
			return RF_EINDEX;
		}
		char ni[PATH_MAX], nj[PATH_MAX];
		out_name(sh, ni, sizeof(ni));
		for (size_t j = 0; j < i; j++) {
			out_name(idx->shards[j], nj, sizeof(nj));
			if (!strcmp(ni, nj)) {
				rfi_fmt(err, errlen, "shards %s and %s would both be written as %s/%s",
				       idx->shards[j], sh, out, ni);
				return RF_EINDEX;
			}
		}
	}
	return 0;
}

/* p's buffers (a group of frames of width-byte tokens read, a frame
 * compressed) and its zstd context: o's level, each frame with its content
 * size and checksum. @return : 0, -ENOMEM, or RF_ECONFIG (err set). */
static int packer_start(packer *p, uint32_t width, char *err, size_t errlen)
{
	const rf_token_pack_opts *o = p->o;
	p->in_cap = RF_MAX((size_t)GROUP_BYTES, (size_t)o->frame_tokens * width);
	p->z_cap = RF_MAX(ZSTD_compressBound((size_t)o->frame_tokens * width), (size_t)65536);
	p->in = malloc(p->in_cap);
	p->z = malloc(p->z_cap);
	p->cctx = ZSTD_createCCtx();
	if (!p->in || !p->z || !p->cctx)
		return -ENOMEM;
	size_t r = ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_compressionLevel, o->level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_contentSizeFlag, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_checksumFlag, 1);
	if (ZSTD_isError(r)) {
		rfi_fmt(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
		return RF_ECONFIG;
	}
	return 0;
}

/* Packs src's shards one after the other into dirfd, adding each into res.
 * *written: the shards begun (a failed one included, once its pack_shard
 * ran), which a failure removes. @return : 0, or the first error. */
static int pack_all(packer *p, const rf_source *src, int dirfd, rf_token_pack_result *res,
		    size_t *written, char *err, size_t errlen)
{
	const rf_tokens *tk = rfi_source_tokens_of(src);
	int ret = 0;
	for (; !ret && *written < src->index.nshards; (*written)++) {
		const rf_token_shard *sh = &tk->shards[*written];
		int fd = rfi_open_regular(src->index.root_fd, src->index.shards[*written], "shard", err,
					  errlen);
		if (fd < 0)
			return fd;
		rf_token_header h = { .magic = tk->magic, .width = tk->width,
				      .tokens = sh->tokens };
		char name[PATH_MAX];
		out_name(src->index.shards[*written], name, sizeof(name));
		ret = pack_shard(p, &src->index, *written, fd, &h, dirfd, name, &res->bytes_out, err,
				 errlen);
		close(fd);
		if (!ret) {
			res->shards++;
			res->tokens += sh->tokens;
			res->bytes_in += sh->size;
		}
	}
	return ret;
}

/* After a failure: nothing half done stays (the first written shards, the
 * marker last, the output folder when this pack made it). */
static void undo(const rf_source *src, const char *out, int dirfd, size_t written, int marked,
		 int made)
{
	for (size_t i = 0; i < written && dirfd >= 0; i++) {
		char name[PATH_MAX];
		out_name(src->index.shards[i], name, sizeof(name));
		unlinkat(dirfd, name, 0);
	}
	if (marked)
		unlinkat(dirfd, RF_PACK_MARKER, 0);
	if (made)
		rmdir(out);
}

int rfi_token_pack(const rf_token_pack_opts *o, rf_token_pack_result *res, char *err,
		  size_t errlen)
{
	memset(res, 0, sizeof(*res));
	if (errlen)
		err[0] = '\0';
	int ret = check_opts(o, err, errlen);
	if (ret)
		return ret;
	rf_source src;
	/* T = 1: every shard with 2 tokens has a window; what matters here is
	 * that every header was checked */
	rf_source_params sp = { .seq_len = 1, .stride = 1, .log_level = RF_LOG_WARN };
	ret = rfi_source_open(&src, o->source, &sp, err, errlen);
	if (ret)
		return ret;
	const rf_tokens *tk = rfi_source_tokens_of(&src); /* the token kind's headers */
	packer p = { .o = o, .total = tk->tokens };
	int dirfd = -1, made = 0;
	size_t written = 0;
	ret = check_source(&src, o->out, err, errlen);
	if (!ret)
		ret = rfi_out_dir_open(o->out, pack_names, "token shards", &dirfd, &made, err, errlen);
	if (!ret)
		ret = packer_start(&p, tk->width, err, errlen);
	int marked = 0; /* index/pack_marker.h: the folder is no pack until it goes */
	if (!ret)
		marked = (ret = rfi_out_mark_begin(dirfd, o->out, err, errlen)) == 0;
	if (!ret)
		ret = pack_all(&p, &src, dirfd, res, &written, err, errlen);
	if (!ret) /* every shard is on disk: the pack is whole */
		ret = rfi_out_mark_end(dirfd, o->out, err, errlen);
	if (ret) {
		undo(&src, o->out, dirfd, written, marked, made);
		if (ret == -ENOMEM && !err[0])
			rfi_fmt(err, errlen, "out of memory");
	}
	if (dirfd >= 0)
		close(dirfd);
	ZSTD_freeCCtx(p.cctx);
	free(p.in);
	free(p.z);
	free(p.off);
	rfi_source_free(&src);
	return ret;
}
