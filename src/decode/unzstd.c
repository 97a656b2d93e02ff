/* unzstd.c - one zstd frame per member, into a buffer kept per thread (see
 * unzstd.h). */
#define _GNU_SOURCE
#include "decode/unzstd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "ringfeed.h"
#include "util/util.h"

#define DICT_MAX (64u << 20) /* a dictionary larger than this is not one */

int rfi_zstd_dict_load(const char *path, ZSTD_DDict **out, char *err, size_t errlen)
{
	*out = NULL;
	int fd = rfi_open_regular(AT_FDCWD, path, "zstd dictionary", err, errlen);
	struct stat st;
	if (fd < 0)
		return fd == -EINVAL ? RF_EINDEX : fd;
	if (fstat(fd, &st) != 0 || st.st_size <= 8 || (uint64_t)st.st_size > DICT_MAX) {
		rfi_fmt(err, errlen, "zstd dictionary '%s': not a zstd dictionary (size)", path);
		close(fd);
		return RF_EINDEX;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *b = malloc(n);
	size_t got = 0;
	while (b && got < n) {
		ssize_t r = pread(fd, b + got, n - got, (off_t)got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (!b || got < n) {
		free(b);
		rfi_fmt(err, errlen, "zstd dictionary '%s': %s", path, b ? "short read" : "out of memory");
		return b ? -EIO : -ENOMEM;
	}
	/* a trained dictionary has an ID; raw content would be accepted by
	 * zstd, but is not what pack writes: say so rather than decode garbage */
	if (ZSTD_getDictID_fromDict(b, n) == 0) {
		free(b);
		rfi_fmt(err, errlen, "zstd dictionary '%s': not a zstd dictionary (no dictionary ID)",
		       path);
		return RF_EINDEX;
	}
	*out = ZSTD_createDDict(b, n); /* copies the bytes */
	free(b);
	if (!*out) {
		rfi_fmt(err, errlen, "zstd dictionary '%s': cannot load it", path);
		return RF_EINDEX;
	}
	return 0;
}

void rfi_zstd_dict_free(ZSTD_DDict *d)
{
	ZSTD_freeDDict(d);
}

int rfi_unzstd_init(rf_unzstd *z, const ZSTD_DDict *dict)
{
	memset(z, 0, sizeof(*z));
	z->dctx = ZSTD_createDCtx();
	if (!z->dctx)
		return -ENOMEM;
	if (dict && ZSTD_isError(ZSTD_DCtx_refDDict(z->dctx, dict))) {
		ZSTD_freeDCtx(z->dctx);
		z->dctx = NULL;
		return -ENOMEM;
	}
	return 0;
}

void rfi_unzstd_destroy(rf_unzstd *z)
{
	ZSTD_freeDCtx(z->dctx);
	free(z->buf);
	memset(z, 0, sizeof(*z));
}

static int grow(rf_unzstd *z, size_t need)
{
	if (need <= z->cap)
		return 0;
	size_t cap = RF_MAX(need, z->cap * 2);
	uint8_t *b = realloc(z->buf, cap);
	if (!b)
		return -ENOMEM;
	z->buf = b;
	z->cap = cap;
	return 0;
}

int rfi_unzstd_frame(rf_unzstd *z, const uint8_t *src, size_t n, size_t max, const uint8_t **out,
		    size_t *len, char *reason, size_t rlen)
{
	size_t frame = ZSTD_findFrameCompressedSize(src, n);
	if (ZSTD_isError(frame)) {
		rfi_fmt(reason, rlen, "zstd: %s", ZSTD_getErrorName(frame));
		return RF_EBADSAMPLE;
	}
	if (frame != n) {
		rfi_fmt(reason, rlen, "zstd: %zu bytes after the frame (one frame per member)",
		       n - frame);
		return RF_EBADSAMPLE;
	}
	unsigned long long size = ZSTD_getFrameContentSize(src, n);
	if (size == ZSTD_CONTENTSIZE_ERROR) {
		rfi_fmt(reason, rlen, "zstd: not a zstd frame");
		return RF_EBADSAMPLE;
	}
	if (size != ZSTD_CONTENTSIZE_UNKNOWN) {
		if (size > max) {
			rfi_fmt(reason, rlen, "zstd: %llu bytes decompressed is more than the %zu "
			       "allowed", size, max);
			return RF_EBADSAMPLE;
		}
		if (grow(z, size ? (size_t)size : 1))
			return -ENOMEM;
		size_t r = ZSTD_decompressDCtx(z->dctx, z->buf, (size_t)size, src, n);
		if (ZSTD_isError(r)) {
			rfi_fmt(reason, rlen, "zstd: %s", ZSTD_getErrorName(r));
			return RF_EBADSAMPLE;
		}
		*out = z->buf;
		*len = r;
		return 0;
	}
	/* streamed frame (no size in its header): grow as it comes, up to max */
	ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
	ZSTD_inBuffer in = { src, n, 0 };
	ZSTD_outBuffer o = { z->buf, z->cap, 0 };
	for (;;) {
		if (o.pos == o.size) {
			if (o.size >= max) {
				rfi_fmt(reason, rlen, "zstd: more than the %zu bytes allowed", max);
				return RF_EBADSAMPLE;
			}
			if (grow(z, RF_MIN(RF_MAX((size_t)64 << 10, z->cap * 2), max)))
				return -ENOMEM;
			o.dst = z->buf;
			o.size = RF_MIN(z->cap, max);
		}
		size_t r = ZSTD_decompressStream(z->dctx, &o, &in);
		if (ZSTD_isError(r)) {
			rfi_fmt(reason, rlen, "zstd: %s", ZSTD_getErrorName(r));
			return RF_EBADSAMPLE;
		}
		if (r == 0)
			break; /* the frame is complete */
		if (in.pos == in.size && o.pos < o.size) {
			rfi_fmt(reason, rlen, "zstd: the frame is cut short");
			return RF_EBADSAMPLE;
		}
	}
	*out = z->buf;
	*len = o.pos;
	return 0;
}

int rfi_unzstd_frames(rf_unzstd *z, const uint8_t *src, size_t n, size_t want, const uint8_t **out,
		     char *reason, size_t rlen)
{
	/* one more byte than wanted: frames that hold more show as such */
	if (grow(z, want + 1))
		return -ENOMEM;
	size_t r = ZSTD_decompressDCtx(z->dctx, z->buf, want + 1, src, n);
	if (ZSTD_isError(r)) {
		rfi_fmt(reason, rlen, "zstd: %s", ZSTD_getErrorName(r));
		return RF_EBADSAMPLE;
	}
	if (r != want) {
		rfi_fmt(reason, rlen, "zstd: the frames hold %s bytes than their tokens (%zu, not %zu)",
		       r < want ? "fewer" : "more", r, want);
		return RF_EBADSAMPLE;
	}
	*out = z->buf;
	return 0;
}
