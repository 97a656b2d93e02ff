/* webp.c - WebP decode of the rectangle a window needs, through libwebp's
 * advanced decoding API; its status codes become a bad sample with a
 * reason here (see webp.h). */
#include "decode/webp.h"

#include <errno.h>
#include <stdlib.h>

#include <webp/decode.h>

#include "ringfeed.h"
#include "util/util.h"

struct rf_webp_decoder {
	const uint8_t *data; /* the image between open and decode */
	size_t len;
	int w, h;
	uint8_t *buf;        /* decoded pixels */
	size_t cap;
};

int rfi_webp_decoder_create(rf_webp_decoder **out)
{
	rf_webp_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	*out = d;
	return 0;
}

void rfi_webp_decoder_destroy(rf_webp_decoder *d)
{
	if (!d)
		return;
	free(d->buf);
	free(d);
}

static const char *status_text(VP8StatusCode s)
{
	switch (s) {
	case VP8_STATUS_OK: return "ok";
	case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
	case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
	case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
	case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
	case VP8_STATUS_SUSPENDED: return "suspended";
	case VP8_STATUS_USER_ABORT: return "aborted";
	case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated (not enough data)";
	}
	return "unknown libwebp status";
}

int rfi_webp_open(rf_webp_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels,
		 int *w, int *h, char *reason, size_t rlen)
{
	d->data = NULL;
	WebPBitstreamFeatures f;
	VP8StatusCode s = WebPGetFeatures(data, len, &f);
	if (s != VP8_STATUS_OK) {
		rfi_fmt(reason, rlen, "corrupt WebP: %s", status_text(s));
		return RF_EBADSAMPLE;
	}
	if (f.has_animation) {
		rfi_fmt(reason, rlen, "animated WebP: not decoded (a sample is one still image)");
		return RF_EBADSAMPLE;
	}
	if ((uint64_t)f.width * (uint64_t)f.height > max_pixels) {
		rfi_fmt(reason, rlen, "image of %d x %d pixels is over the limit of %llu pixels "
		       "(max_pixels)", f.width, f.height, (unsigned long long)max_pixels);
		return RF_EBADSAMPLE;
	}
	d->data = data;
	d->len = len;
	d->w = *w = f.width;
	d->h = *h = f.height;
	return 0;
}

int rfi_webp_decode(rf_webp_decoder *d, const rf_region *want, int verify, rf_image *out,
		   char *reason, size_t rlen)
{
	if (!d->data) {
		rfi_fmt(reason, rlen, "internal: decode without open");
		return -EINVAL;
	}
	int W = d->w, H = d->h;
	/* libwebp crops at even offsets (it snaps them down itself: chosen
	 * here, so that the offset is known) */
	int x0 = 0, x1 = W, y0 = 0, y1 = H;
	if (want && !verify) {
		x0 = RF_MAX(0, RF_MIN(want->x0, W - 1)) & ~1;
		x1 = RF_MAX(x0 + 1, RF_MIN(want->x1, W));
		y0 = RF_MAX(0, RF_MIN(want->y0, H - 1)) & ~1;
		y1 = RF_MAX(y0 + 1, RF_MIN(want->y1, H));
	}
	int ow = x1 - x0, oh = y1 - y0;
	size_t stride = (size_t)ow * 3;
	if (rfi_grow(&d->buf, &d->cap, stride * (size_t)oh)) {
		rfi_fmt(reason, rlen, "out of memory for a %d x %d region", ow, oh);
		d->data = NULL;
		return -ENOMEM;
	}
	WebPDecoderConfig c;
	if (!WebPInitDecoderConfig(&c)) {
		rfi_fmt(reason, rlen, "libwebp: decoder ABI mismatch");
		d->data = NULL;
		return -EINVAL;
	}
	if (ow < W || oh < H) {
		c.options.use_cropping = 1;
		c.options.crop_left = x0;
		c.options.crop_top = y0;
		c.options.crop_width = ow;
		c.options.crop_height = oh;
	}
	c.output.colorspace = MODE_RGB;
	c.output.is_external_memory = 1;
	c.output.u.RGBA.rgba = d->buf;
	c.output.u.RGBA.stride = (int)stride;
	c.output.u.RGBA.size = stride * (size_t)oh;
	VP8StatusCode s = WebPDecode(d->data, d->len, &c);
	d->data = NULL;
	WebPFreeDecBuffer(&c.output); /* external memory: frees nothing of ours */
	if (s != VP8_STATUS_OK) {
		rfi_fmt(reason, rlen, "corrupt WebP: %s", status_text(s));
		return s == VP8_STATUS_OUT_OF_MEMORY ? -ENOMEM : RF_EBADSAMPLE;
	}
	*out = (rf_image){ .rgb = d->buf, .stride = stride, .scaled_w = W, .scaled_h = H,
			   .x0 = x0, .y0 = y0, .w = ow, .h = oh };
	return 0;
}
