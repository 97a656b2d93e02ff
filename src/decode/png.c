/* png.c - PNG decode of the rows a window needs, through libspng; its
 * errors become a bad sample with libspng's reason here (see png.h). */
#include "decode/png.h"

#include <errno.h>
#include <stdlib.h>

#include <spng.h>

#include "ringfeed.h"
#include "util/util.h"

/* Ancillary chunks (text, ICC profiles) are kept out of reach of a
 * decompression bomb: none is needed for the pixels. libspng's defaults
 * are unbounded. */
#define CHUNK_LIMIT ((size_t)16 << 20)
#define CHUNK_CACHE_LIMIT ((size_t)64 << 20)

struct rf_png_decoder {
	spng_ctx *ctx;     /* the image between open and decode, else NULL */
	struct spng_ihdr ihdr;
	uint8_t *buf;      /* decoded rows */
	size_t cap;
	uint8_t *row;      /* rows above the region, decoded and dropped */
	size_t row_cap;
};

int rfi_png_decoder_create(rf_png_decoder **out)
{
	rf_png_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	*out = d;
	return 0;
}

void rfi_png_abort(rf_png_decoder *d)
{
	spng_ctx_free(d->ctx); /* a context reads one image */
	d->ctx = NULL;
}

void rfi_png_decoder_destroy(rf_png_decoder *d)
{
	if (!d)
		return;
	rfi_png_abort(d);
	free(d->buf);
	free(d->row);
	free(d);
}

/* A bad sample named by libspng's reason, the image dropped. */
static int bad(rf_png_decoder *d, int ret, const char *what, char *reason, size_t rlen)
{
	rfi_fmt(reason, rlen, "%s: %s", what, spng_strerror(ret));
	rfi_png_abort(d);
	return RF_EBADSAMPLE;
}

int rfi_png_open(rf_png_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels, int *w,
		int *h, char *reason, size_t rlen)
{
	rfi_png_abort(d);
	d->ctx = spng_ctx_new(0);
	if (!d->ctx) {
		rfi_fmt(reason, rlen, "out of memory for a PNG decoder");
		return -ENOMEM;
	}
	int ret = spng_set_png_buffer(d->ctx, data, len);
	if (!ret)
		ret = spng_set_chunk_limits(d->ctx, CHUNK_LIMIT, CHUNK_CACHE_LIMIT);
	if (!ret)
		ret = spng_get_ihdr(d->ctx, &d->ihdr);
	if (ret)
		return bad(d, ret, "corrupt PNG", reason, rlen);
	*w = (int)d->ihdr.width;
	*h = (int)d->ihdr.height;
	/* libspng caps a side at 2^31 - 1: the product is what bounds memory */
	if ((uint64_t)d->ihdr.width * d->ihdr.height > max_pixels) {
		rfi_fmt(reason, rlen, "image of %u x %u pixels is over the limit of %llu pixels "
		       "(max_pixels)", d->ihdr.width, d->ihdr.height, (unsigned long long)max_pixels);
		rfi_png_abort(d);
		return RF_EBADSAMPLE;
	}
	return 0;
}

int rfi_png_decode(rf_png_decoder *d, const rf_region *want, int verify, rf_image *out,
		  char *reason, size_t rlen)
{
	if (!d->ctx) {
		rfi_fmt(reason, rlen, "internal: decode without open");
		return -EINVAL;
	}
	int W = (int)d->ihdr.width, H = (int)d->ihdr.height;
	size_t stride = (size_t)W * 3;
	int interlaced = d->ihdr.interlace_method != 0;
	/* rows [y0, y1) are kept; an interlaced image is decoded whole (its
	 * first passes already reach the last row) */
	int y0 = 0, y1 = H;
	if (want && !verify && !interlaced) {
		y0 = RF_MAX(0, RF_MIN(want->y0, H - 1));
		y1 = RF_MAX(y0 + 1, RF_MIN(want->y1, H));
	}
	if (rfi_grow(&d->buf, &d->cap, stride * (size_t)(y1 - y0)) ||
	    rfi_grow(&d->row, &d->row_cap, stride)) {
		rfi_fmt(reason, rlen, "out of memory for a %d x %d PNG", W, y1 - y0);
		rfi_png_abort(d);
		return -ENOMEM;
	}
	int ret;
	if (interlaced) {
		ret = spng_decode_image(d->ctx, d->buf, stride * (size_t)H, SPNG_FMT_RGB8, 0);
		if (ret)
			return bad(d, ret, "corrupt PNG", reason, rlen);
	} else {
		ret = spng_decode_image(d->ctx, NULL, 0, SPNG_FMT_RGB8, SPNG_DECODE_PROGRESSIVE);
		if (ret)
			return bad(d, ret, "corrupt PNG", reason, rlen);
		for (int y = 0; y < y1; y++) {
			uint8_t *dst = y >= y0 ? d->buf + (size_t)(y - y0) * stride : d->row;
			ret = spng_decode_row(d->ctx, dst, stride);
			/* SPNG_EOI comes with the last row: the image is whole */
			if (ret && !(ret == SPNG_EOI && y == H - 1))
				return bad(d, ret, "corrupt PNG", reason, rlen);
		}
	}
	/* With verify, the chunks after the image data too (their CRCs, IEND):
	 * a stream that stops after the last row is damaged. */
	if (verify && (ret = spng_decode_chunks(d->ctx)) != 0)
		return bad(d, ret, "corrupt PNG", reason, rlen);
	rfi_png_abort(d);
	*out = (rf_image){ .rgb = d->buf, .stride = stride, .scaled_w = W, .scaled_h = H,
			   .x0 = 0, .y0 = y0, .w = W, .h = y1 - y0 };
	return 0;
}
