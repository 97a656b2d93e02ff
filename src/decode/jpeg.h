/* jpeg.h - JPEG decode with TurboJPEG into a per-thread RGB buffer. Private.
 * Thread rule: one decoder per compute thread; never shared. */
#ifndef RF_JPEG_H
#define RF_JPEG_H

#include <stddef.h>
#include <stdint.h>

#define RF_MAX_PIXELS 100000000ull /* larger headers are refused: untrusted data */

typedef struct rf_jpeg_decoder {
	void *tj;       /* tjhandle */
	uint8_t *rgb;   /* last decoded image; grows, never shrinks */
	size_t rgb_cap;
} rf_jpeg_decoder;

int rf_jpeg_decoder_init(rf_jpeg_decoder *d);
void rf_jpeg_decoder_destroy(rf_jpeg_decoder *d);

/* Decodes data[len] at full scale to packed RGB. Returns 0 with *rgb (owned
 * by d, valid until the next call), *w and *h; or RF_EBADSAMPLE / -ENOMEM
 * with reason[rlen] saying what TurboJPEG reported. Warnings (a truncated or
 * corrupt stream) count as errors: a damaged image is a bad sample. */
int rf_jpeg_decode(rf_jpeg_decoder *d, const uint8_t *data, size_t len, const uint8_t **rgb,
		   int *w, int *h, char *reason, size_t rlen);

#endif
