/* image.c - tells an image's format by its first bytes and hands it to that
 * format's decoder (jpeg.c, png.c, webp.c). A format whose library was
 * missing at build time is a bad sample that says so. */
#include "decode/image.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rf_config.h"
#include "ringfeed.h"
#include "decode/jpeg.h"
#include "util/util.h"
#if RF_HAVE_PNG
#include "decode/png.h"
#endif
#if RF_HAVE_WEBP
#include "decode/webp.h"
#endif

struct rf_decoder {
	rf_image_format open;  /* the format opened last */
	rf_jpeg_decoder *jpeg; /* each made on its format's first image */
#if RF_HAVE_PNG
	rf_png_decoder *png;
#endif
#if RF_HAVE_WEBP
	rf_webp_decoder *webp;
#endif
};

rf_image_format rfi_image_sniff(const uint8_t *p, size_t len)
{
	static const uint8_t png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };
	if (len >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF)
		return RF_FORMAT_JPEG;
	if (len >= 8 && memcmp(p, png_sig, 8) == 0)
		return RF_FORMAT_PNG;
	if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0)
		return RF_FORMAT_WEBP;
	return RF_FORMAT_UNKNOWN;
}

unsigned rfi_image_formats(void)
{
	return RF_FORMAT_JPEG_BIT | (RF_HAVE_PNG ? RF_FORMAT_PNG_BIT : 0) |
	       (RF_HAVE_WEBP ? RF_FORMAT_WEBP_BIT : 0);
}

int rfi_decoder_create(rf_decoder **out)
{
	rf_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	*out = d;
	return 0;
}

void rfi_decoder_destroy(rf_decoder *d)
{
	if (!d)
		return;
	rfi_jpeg_decoder_destroy(d->jpeg);
#if RF_HAVE_PNG
	rfi_png_decoder_destroy(d->png);
#endif
#if RF_HAVE_WEBP
	rfi_webp_decoder_destroy(d->webp);
#endif
	free(d);
}

rf_image_format rfi_decoder_format(const rf_decoder *d)
{
	return d->open;
}

static int no_memory(const char *format, char *reason, size_t rlen)
{
	rfi_fmt(reason, rlen, "out of memory for a %s decoder", format);
	return -ENOMEM;
}

#if !RF_HAVE_PNG || !RF_HAVE_WEBP
/* A bad sample for a format this build cannot decode. */
static int not_built(const char *format, const char *library, char *reason, size_t rlen)
{
	rfi_fmt(reason, rlen, "a %s image: this ringfeed was built without %s", format, library);
	return RF_EBADSAMPLE;
}
#endif

int rfi_decoder_open(rf_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels, int *w,
		    int *h, int *max_denom, char *reason, size_t rlen)
{
	rfi_decoder_abort(d);
	rf_image_format f = rfi_image_sniff(data, len);
	int err;
	switch (f) {
	case RF_FORMAT_PNG:
#if RF_HAVE_PNG
		if (!d->png && rfi_png_decoder_create(&d->png))
			return no_memory("PNG", reason, rlen);
		err = rfi_png_open(d->png, data, len, max_pixels, w, h, reason, rlen);
		*max_denom = 1;
		break;
#else
		return not_built("PNG", "libspng", reason, rlen);
#endif
	case RF_FORMAT_WEBP:
#if RF_HAVE_WEBP
		if (!d->webp && rfi_webp_decoder_create(&d->webp))
			return no_memory("WebP", reason, rlen);
		err = rfi_webp_open(d->webp, data, len, max_pixels, w, h, reason, rlen);
		*max_denom = 1; /* see webp.h */
		break;
#else
		return not_built("WebP", "libwebp", reason, rlen);
#endif
	case RF_FORMAT_UNKNOWN:
		if (len < 2 || data[0] != 0xFF || data[1] != 0xD8) {
			uint8_t b[4] = { 0 };
			for (size_t i = 0; i < len && i < 4; i++)
				b[i] = data[i];
			rfi_fmt(reason, rlen, "not an image (JPEG, PNG or WebP): %zu bytes starting "
			       "0x%02x 0x%02x 0x%02x 0x%02x", len, b[0], b[1], b[2], b[3]);
			return RF_EBADSAMPLE;
		}
		/* a JPEG's start marker without the next one: a damaged JPEG,
		 * which libjpeg names */
		__attribute__((fallthrough));
	case RF_FORMAT_JPEG:
	default:
		if (!d->jpeg && rfi_jpeg_decoder_create(&d->jpeg))
			return no_memory("JPEG", reason, rlen);
		err = rfi_jpeg_open(d->jpeg, data, len, max_pixels, w, h, reason, rlen);
		*max_denom = 8;
		f = RF_FORMAT_JPEG;
		break;
	}
	if (!err)
		d->open = f;
	return err;
}

int rfi_decoder_decode(rf_decoder *d, int denom, const rf_region *want, int verify, rf_image *out,
		      char *reason, size_t rlen)
{
	rf_image_format f = d->open;
	d->open = RF_FORMAT_UNKNOWN;
	switch (f) {
	case RF_FORMAT_JPEG:
		return rfi_jpeg_decode(d->jpeg, denom, want, 1, verify, out, reason, rlen);
#if RF_HAVE_PNG
	case RF_FORMAT_PNG:
		return rfi_png_decode(d->png, want, verify, out, reason, rlen);
#endif
#if RF_HAVE_WEBP
	case RF_FORMAT_WEBP:
		return rfi_webp_decode(d->webp, want, verify, out, reason, rlen);
#endif
	default:
		rfi_fmt(reason, rlen, "internal: decode without open");
		return -EINVAL;
	}
}

void rfi_decoder_abort(rf_decoder *d)
{
	switch (d->open) {
	case RF_FORMAT_JPEG:
		rfi_jpeg_abort(d->jpeg);
		break;
#if RF_HAVE_PNG
	case RF_FORMAT_PNG:
		rfi_png_abort(d->png);
		break;
#endif
	default: /* WebP holds nothing between open and decode */
		break;
	}
	d->open = RF_FORMAT_UNKNOWN;
}
