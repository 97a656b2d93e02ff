/* pack_loop.c - `ringfeed pack`'s per-sample loop: read a source file,
 * compress it (or not), append its members to the shard, start a new shard
 * when this one is full. Nothing here allocates per sample. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/pack_impl.h"
#include "pack/tar_write.h"
#include "decode/image.h"
#include "util/util.h"

int rfi_buf_reserve(rf_buf *b, size_t n)
{
	if (n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64 * 1024;
	while (cap < n)
		cap = cap > SIZE_MAX / 2 ? n : cap * 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* One of a sample's other members (its extras: every one is kept, however
 * many it has): where its bytes are in p->in, and its tar header. */
struct pack_extra {
	size_t at, len;
	uint8_t hdr[RF_TAR_BLOCK];
};

/* The file of sample i as the user knows it: root/path, or path when absolute. */
static void sample_path(const rf_index *idx, uint64_t i, char *buf, size_t len)
{
	const char *path = rfi_index_path(idx, i);
	if (path[0] == '/')
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "%s/%s", idx->root, path);
}

static int read_fail(const rf_index *idx, uint64_t i, int e, const char *why, char *err, size_t errlen)
{
	char path[4096 + 256];
	sample_path(idx, i, path, sizeof(path));
	rfi_fmt(err, errlen, "sample %" PRIu64 " '%s': %s", i, path, why ? why : strerror(e));
	return -e;
}

/* Reads the file at rel (relative to idx's root) into b at `at`, at most
 * max bytes; errors name sample i and say which file when it is another of
 * its members (extra != NULL). */
static int read_file(const rf_index *idx, uint64_t i, const char *rel, const char *extra,
		     rf_buf *b, size_t at, uint64_t max, size_t *len, char *err, size_t errlen)
{
	char why[192];
	/* O_NONBLOCK: a FIFO named by a manifest must not hang the open (it is
	 * refused below); it changes nothing for a regular file */
	int fd = openat(idx->root_fd, rel, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		snprintf(why, sizeof(why), "%s%s%s", extra ? extra : "", extra ? ": " : "", strerror(e));
		return read_fail(idx, i, e, why, err, errlen);
	}
	struct stat st;
	int ret = 0;
	if (fstat(fd, &st) != 0) {
		ret = read_fail(idx, i, errno, extra, err, errlen);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, sizeof(why), "%s%s%s, not a regular file", extra ? extra : "",
			 extra ? ": " : "", rfi_file_kind(st.st_mode));
		ret = read_fail(idx, i, EINVAL, why, err, errlen);
		goto out;
	}
	size_t want = (size_t)RF_MIN((uint64_t)st.st_size, max);
	if (rfi_buf_reserve(b, at + want)) {
		ret = read_fail(idx, i, ENOMEM, NULL, err, errlen);
		goto out;
	}
	size_t got = 0;
	while (got < want) {
		ssize_t r = read(fd, b->p + at + got, want - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = read_fail(idx, i, errno, extra, err, errlen);
			goto out;
		}
		if (r == 0) {
			snprintf(why, sizeof(why), "%s%sread %zu of its %zu bytes (it shrank while being "
				 "packed)", extra ? extra : "", extra ? ": " : "", got, want);
			ret = read_fail(idx, i, EIO, why, err, errlen);
			goto out;
		}
		got += (size_t)r;
	}
	*len = got;
out:
	close(fd);
	return ret;
}

int rfi_pack_read(const rf_index *idx, uint64_t i, rf_buf *b, size_t at, uint64_t max,
		 size_t *len, char *err, size_t errlen)
{
	return read_file(idx, i, rfi_index_path(idx, i), NULL, b, at, max, len, err, errlen);
}

void rfi_pack_tell(rf_packer *p)
{
	if (p->o->progress)
		p->o->progress(p->o->user, &p->prog);
}

/* Ends the shard being written: the two zero blocks that end a tar, then
 * flushed and renamed to its name. */
static int end_shard(rf_packer *p, char *err, size_t errlen)
{
	static const uint8_t end[2 * RF_TAR_BLOCK];
	struct iovec iov = { (void *)end, sizeof(end) };
	int ret = rfi_out_writev(&p->shard, &iov, 1, err, errlen);
	if (ret) {
		rfi_out_abort(&p->shard);
		return ret;
	}
	uint64_t bytes = p->shard.bytes;
	ret = rfi_out_commit(&p->shard, err, errlen);
	if (ret)
		return ret;
	p->res->shards++;
	p->res->bytes_out += bytes;
	p->prog.shards = p->res->shards;
	p->prog.bytes_out = p->res->bytes_out;
	return 0;
}

static int start_shard(rf_packer *p, char *err, size_t errlen)
{
	char name[32];
	snprintf(name, sizeof(name), "shard-%06" PRIu32 ".tar", p->res->shards);
	p->shard_samples = 0;
	return rfi_out_open(&p->shard, p->dirfd, p->o->out, name, err, errlen);
}

/* One sample on its way into the shard: its data member (as read, or
 * compressed), its other members, and what they take of p->in. */
typedef struct sample_out {
	const uint8_t *data;  /* the data member's bytes: in p->in, or compressed in p->z */
	size_t n;             /* its bytes */
	size_t in_end;        /* bytes read into p->in: the data, then the other members */
	uint32_t nx;          /* other members */
	const rf_index_extra *x; /* their records */
	struct pack_extra *xs;   /* where their bytes are in p->in, their headers */
	uint64_t extra_bytes; /* what they take of the shard: headers and blocks */
} sample_out;

/* The data member as one zstd frame in p->z: one frame per sample, with
 * its content size (set by compress2) and checksum; the dictionary, if
 * any, stays referenced. */
static int compress_data(rf_packer *p, uint64_t i, sample_out *so, char *err, size_t errlen)
{
	if (rfi_buf_reserve(&p->z, ZSTD_compressBound(so->n)))
		return -ENOMEM;
	size_t z = ZSTD_compress2(p->cctx, p->z.p, p->z.cap, so->data, so->n);
	if (ZSTD_isError(z)) {
		rfi_fmt(err, errlen, "sample %" PRIu64 ": zstd: %s", i, ZSTD_getErrorName(z));
		return -EIO;
	}
	so->data = p->z.p;
	so->n = z;
	return 0;
}

/* Its other members (a loose image's KEY.txt, KEY.json), kept as they are
 * under the sample's new key, after its image: read after the image's
 * bytes (and its compressed copy, in p->z) in p->in. */
static int read_extras(rf_packer *p, uint64_t i, sample_out *so, char *err, size_t errlen)
{
	so->x = rfi_index_extras_of(&p->idx, i, &so->nx);
	uint32_t nx = so->nx;
	const rf_index_extra *x = so->x;
	/* grown to the most members a sample has, then reused */
	if (nx > (INT_MAX - 5) / 3)
		return read_fail(&p->idx, i, E2BIG, "more other members than one write can take",
				 err, errlen);
	if (rfi_buf_reserve(&p->xs, (size_t)nx * sizeof(struct pack_extra) + 1) ||
	    rfi_buf_reserve(&p->iov, (5 + 3 * (size_t)nx) * sizeof(struct iovec)))
		return -ENOMEM;
	struct pack_extra *xs = so->xs = (struct pack_extra *)(void *)p->xs.p;
	for (uint32_t k = 0; k < nx; k++) {
		const char *rel = p->idx.paths + x[k].at;
		char what[300];
		if (x[k].how == RF_EXTRA_INLINE) { /* a manifest column: copied as it is */
			if (rfi_buf_reserve(&p->in, so->in_end + x[k].size))
				return -ENOMEM;
			memcpy(p->in.p + so->in_end, rel, x[k].size);
			xs[k].at = so->in_end;
			xs[k].len = x[k].size;
			so->in_end += xs[k].len;
			so->extra_bytes += RF_TAR_BLOCK + rfi_tar_blocks(xs[k].len);
			continue;
		}
		snprintf(what, sizeof(what), "its member '%s'", rel);
		xs[k].at = so->in_end;
		int ret = read_file(&p->idx, i, rel, what, &p->in, so->in_end, UINT64_MAX, &xs[k].len,
				    err, errlen);
		if (ret)
			return ret;
		so->in_end += xs[k].len;
		so->extra_bytes += RF_TAR_BLOCK + rfi_tar_blocks(xs[k].len);
	}
	return 0;
}

/* Each other member's name: the new key and its extension, which a ustar
 * header holds if it is at most 100 bytes; a longer one is refused, never
 * cut (a cut name is another member). */
static int name_extras(rf_packer *p, uint64_t i, sample_out *so, char *err, size_t errlen)
{
	for (uint32_t k = 0; k < so->nx; k++) {
		char xname[RF_TAR_NAME_MAX + 2];
		const char *ext = p->idx.extra_names[so->x[k].name];
		int w = snprintf(xname, sizeof(xname), "%0*" PRIu64 ".%s", p->key_width, i, ext);
		if (w < 0 || (size_t)w > RF_TAR_NAME_MAX ||
		    rfi_tar_header(so->xs[k].hdr, xname, so->xs[k].len, '0')) {
			char path[4096 + 256];
			sample_path(&p->idx, i, path, sizeof(path));
			rfi_fmt(err, errlen, "sample %" PRIu64 " '%s': its member with extension '%s' "
			       "cannot be packed: its name in the shard (key, '.', extension) would "
			       "be %d bytes, more than a tar header's %u", i, path, ext, w,
			       RF_TAR_NAME_MAX);
			return -ENAMETOOLONG;
		}
	}
	return 0;
}

/* A shard ends before the sample that would take it past shard_size (its
 * end blocks counted); its first sample goes in whatever its size. bytes:
 * what the sample takes after its padding. Starts the next shard. */
static int make_room(rf_packer *p, uint64_t bytes, char *err, size_t errlen)
{
	const rf_pack_opts *o = p->o;
	uint64_t off = p->shard.fd >= 0 ? p->shard.bytes : 0;
	uint64_t need = rfi_tar_pad_bytes(off, o->align) + bytes;
	int ret;
	if (p->shard.fd >= 0 && p->shard_samples > 0 && off + need + 2 * RF_TAR_BLOCK > o->shard_size) {
		ret = end_shard(p, err, errlen);
		if (ret)
			return ret;
	}
	if (p->shard.fd < 0) {
		ret = start_shard(p, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

/* The sample's members into the shard in one write: padding (--align), the
 * data member named name, the other members, then KEY.cls when it has a
 * label. */
static int write_sample(rf_packer *p, uint64_t i, const sample_out *so, const char *name,
			int32_t label, char *err, size_t errlen)
{
	const rf_pack_opts *o = p->o;
	uint64_t off = p->shard.bytes;
	uint64_t pad = rfi_tar_pad_bytes(off, o->align);
	uint64_t cls_bytes = label >= 0 ? 2 * RF_TAR_BLOCK : 0;
	uint8_t hdr[RF_TAR_BLOCK], cls[2 * RF_TAR_BLOCK];
	if ((pad && rfi_tar_pad_member(p->pad, pad, name)) || rfi_tar_header(hdr, name, so->n, '0'))
		return -ENAMETOOLONG; /* keys are at most 20 digits: cannot happen */
	if (label >= 0) {
		char text[16], cls_name[64];
		int t = snprintf(text, sizeof(text), "%" PRId32, label);
		snprintf(cls_name, sizeof(cls_name), "%0*" PRIu64 ".cls", p->key_width, i);
		rfi_tar_header(cls, cls_name, (uint64_t)t, '0');
		memset(cls + RF_TAR_BLOCK, 0, RF_TAR_BLOCK);
		memcpy(cls + RF_TAR_BLOCK, text, (size_t)t);
	}
	/* what --align promises: the data right after its header, on the boundary */
	assert((off + pad + RF_TAR_BLOCK) % (o->align ? o->align : RF_TAR_BLOCK) == 0);
	static const uint8_t zeros[RF_TAR_BLOCK];
	struct iovec *iov = (struct iovec *)(void *)p->iov.p;
	int niov = 0;
	iov[niov++] = (struct iovec){ p->pad, pad };
	iov[niov++] = (struct iovec){ hdr, RF_TAR_BLOCK };
	iov[niov++] = (struct iovec){ (void *)so->data, so->n };
	iov[niov++] = (struct iovec){ (void *)zeros, rfi_tar_blocks(so->n) - so->n };
	for (uint32_t k = 0; k < so->nx; k++) {
		const struct pack_extra *x = &so->xs[k];
		iov[niov++] = (struct iovec){ (void *)x->hdr, RF_TAR_BLOCK };
		iov[niov++] = (struct iovec){ p->in.p + x->at, x->len };
		iov[niov++] = (struct iovec){ (void *)zeros, rfi_tar_blocks(x->len) - x->len };
	}
	iov[niov++] = (struct iovec){ cls, cls_bytes };
	return rfi_out_writev(&p->shard, iov, niov, err, errlen);
}

static int put_sample(rf_packer *p, uint64_t i, char *err, size_t errlen)
{
	const rf_pack_opts *o = p->o;
	size_t len;
	int ret = rfi_pack_read(&p->idx, i, &p->in, 0, UINT64_MAX, &len, err, errlen);
	if (ret)
		return ret;
	sample_out so = { .data = p->in.p, .n = len, .in_end = len };
	/* the member is named by what its bytes are, as readers tell it */
	static const char *const image_ext[] = { [RF_FORMAT_UNKNOWN] = "jpg", [RF_FORMAT_JPEG] = "jpg",
						 [RF_FORMAT_PNG] = "png", [RF_FORMAT_WEBP] = "webp" };
	const char *ext = o->index_flags & RF_INDEX_RAW ? "bin" : image_ext[rfi_image_sniff(so.data, len)];
	if (p->cctx && (ret = compress_data(p, i, &so, err, errlen)))
		return ret;
	char name[64];
	snprintf(name, sizeof(name), "%0*" PRIu64 ".%s%s", p->key_width, i, ext, p->cctx ? ".zst" : "");
	int32_t label = p->idx.entries[i].label;
	uint64_t cls_bytes = label >= 0 ? 2 * RF_TAR_BLOCK : 0;
	if ((ret = read_extras(p, i, &so, err, errlen)) || (ret = name_extras(p, i, &so, err, errlen)))
		return ret;
	if (!p->cctx)
		so.data = p->in.p; /* the reads above may have moved it */
	ret = make_room(p, RF_TAR_BLOCK + rfi_tar_blocks(so.n) + so.extra_bytes + cls_bytes, err,
			errlen);
	if (!ret)
		ret = write_sample(p, i, &so, name, label, err, errlen);
	if (ret)
		return ret;
	p->shard_samples++;
	p->res->samples++;
	p->res->bytes_in += so.in_end;
	p->res->bytes_data += so.n;
	return 0;
}

int rfi_pack_write_all(rf_packer *p, char *err, size_t errlen)
{
	const rf_pack_opts *o = p->o;
	int ret = 0;
	for (uint64_t i = 0; i < p->idx.count && !ret; i++) {
		if (o->stop && *o->stop)
			ret = -EINTR;
		else
			ret = put_sample(p, i, err, errlen);
		p->prog.done = p->res->samples;
		p->prog.bytes_in = p->res->bytes_in;
		p->prog.bytes_out = p->res->bytes_out + (p->shard.fd >= 0 ? p->shard.bytes : 0);
		rfi_pack_tell(p);
	}
	if (!ret && p->shard.fd >= 0 && !(ret = end_shard(p, err, errlen)))
		rfi_pack_tell(p); /* the last shard counted */
	if (ret)
		rfi_out_abort(&p->shard);
	return ret;
}
