/* jpeg.h - JPEG decode of the part of an image a transform needs: at a DCT
 * scale (1, 1/2, 1/4, 1/8) and for a region of rows and columns, through the
 * libjpeg API of libjpeg-turbo (jpeg_crop_scanline, jpeg_skip_scanlines),
 * always to packed RGB. Private.
 *
 * Thread rule: one decoder per compute thread; never shared. The decoder
 * keeps one libjpeg object and its output buffer across images; libjpeg
 * itself allocates its per-image working memory from its own pools. */
#ifndef RF_JPEG_H
#define RF_JPEG_H

#include <stddef.h>
#include <stdint.h>

#include "decode/image.h"

typedef struct rf_jpeg_decoder rf_jpeg_decoder;

/* @return : 0 with *out set, or -ENOMEM. */
int rfi_jpeg_decoder_create(rf_jpeg_decoder **out);
void rfi_jpeg_decoder_destroy(rf_jpeg_decoder *d);

/* Reads the headers of data[len]. On success the decoder holds the image
 * until rfi_jpeg_decode() or rfi_jpeg_abort(); *w and *h are its size.
 * @return : 0, or RF_EBADSAMPLE with reason[rlen] set: not a JPEG, more than
 *           max_pixels pixels, a colour space that cannot become RGB. */
int rfi_jpeg_open(rf_jpeg_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels,
		 int *w, int *h, char *reason, size_t rlen);

/* Decodes the opened image at scale 1/denom, only the rows of want and (when
 * crop_columns) about its columns; want = NULL decodes everything. Warnings
 * (a truncated or corrupt stream) count as errors: a damaged image is a bad
 * sample, not a grey one. CMYK and YCCK images are converted to RGB (Adobe's
 * inverted CMYK when the Adobe marker says so). Damage below the region is
 * only seen with verify = 1, which decodes the remaining rows (into a spare
 * row) and reads the stream to its end marker.
 * @return : 0 with *out set, or RF_EBADSAMPLE / -ENOMEM with reason set. */
int rfi_jpeg_decode(rf_jpeg_decoder *d, int denom, const rf_region *want, int crop_columns,
		   int verify, rf_image *out, char *reason, size_t rlen);

/* Drops the opened image (when the caller decides not to decode it). */
void rfi_jpeg_abort(rf_jpeg_decoder *d);

#endif
