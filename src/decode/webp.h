/* webp.h - WebP decode through libwebp's advanced API: only the window's
 * rectangle (use_cropping), to packed RGB with alpha dropped as PIL's
 * convert("RGB") drops it. Lossy, lossless and extended (alpha) files; an
 * animation is refused. Never at a reduced scale: libwebp's use_scaling
 * rescales after a full-size decode, which made it slower (and its pixels
 * further from PIL's) than the full-size window and ringfeed's resample
 * (bench/RESULTS.md, issue 27). Private; only image.c calls it.
 *
 * Thread rule: one decoder per compute thread; never shared. */
#ifndef RF_WEBP_H
#define RF_WEBP_H

#include <stddef.h>
#include <stdint.h>

#include "decode/image.h"

typedef struct rf_webp_decoder rf_webp_decoder;

/* @return : 0 with *out set, or -ENOMEM. */
int rfi_webp_decoder_create(rf_webp_decoder **out);
void rfi_webp_decoder_destroy(rf_webp_decoder *d);

/* Reads the headers of data[len], which must stay valid until the decode.
 * @return : 0 with *w, *h set, or RF_EBADSAMPLE with reason set (not a
 *           WebP libwebp reads, an animation, more than max_pixels pixels). */
int rfi_webp_open(rf_webp_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels,
		 int *w, int *h, char *reason, size_t rlen);

/* Decodes the rectangle want needs (NULL or verify: all of it), from even
 * offsets. libwebp decodes lossy macroblock rows only down to the
 * rectangle's bottom: damage below it is found with verify only.
 * @return : 0 with *out set, or RF_EBADSAMPLE / -ENOMEM with reason set. */
int rfi_webp_decode(rf_webp_decoder *d, const rf_region *want, int verify, rf_image *out,
		   char *reason, size_t rlen);

#endif
