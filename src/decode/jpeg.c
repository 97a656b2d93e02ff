/* jpeg.c - TurboJPEG decode of one whole image to RGB; translates TurboJPEG's
 * errors into ringfeed codes plus a reason string at this boundary. */
#include "decode/jpeg.h"

#include <errno.h>
#include <stdlib.h>
#include <turbojpeg.h>

#include "ringfeed.h"
#include "util/util.h"

int rf_jpeg_decoder_init(rf_jpeg_decoder *d)
{
	d->rgb = NULL;
	d->rgb_cap = 0;
	d->tj = tjInitDecompress();
	return d->tj ? 0 : -ENOMEM;
}

void rf_jpeg_decoder_destroy(rf_jpeg_decoder *d)
{
	if (d->tj)
		tjDestroy(d->tj);
	free(d->rgb);
	d->tj = NULL;
	d->rgb = NULL;
}

int rf_jpeg_decode(rf_jpeg_decoder *d, const uint8_t *data, size_t len, const uint8_t **rgb,
		   int *w, int *h, char *reason, size_t rlen)
{
	int subsamp, colorspace;
	if (len > (unsigned long)-1 ||
	    tjDecompressHeader3(d->tj, data, (unsigned long)len, w, h, &subsamp, &colorspace)) {
		rf_fmt(reason, rlen, "not a JPEG: %s", tjGetErrorStr2(d->tj));
		return RF_EBADSAMPLE;
	}
	if (*w <= 0 || *h <= 0 || (uint64_t)*w * (uint64_t)*h > RF_MAX_PIXELS) {
		rf_fmt(reason, rlen, "image of %d x %d pixels is over the %llu-pixel limit",
		       *w, *h, RF_MAX_PIXELS);
		return RF_EBADSAMPLE;
	}
	size_t need = (size_t)*w * (size_t)*h * 3;
	if (need > d->rgb_cap) {
		uint8_t *p = realloc(d->rgb, need);
		if (!p) {
			rf_fmt(reason, rlen, "out of memory for a %d x %d image", *w, *h);
			return -ENOMEM;
		}
		d->rgb = p;
		d->rgb_cap = need;
	}
	if (tjDecompress2(d->tj, data, (unsigned long)len, d->rgb, *w, 0, *h, TJPF_RGB,
			  TJFLAG_STOPONWARNING)) {
		rf_fmt(reason, rlen, "corrupt JPEG: %s", tjGetErrorStr2(d->tj));
		return RF_EBADSAMPLE;
	}
	*rgb = d->rgb;
	return 0;
}
