/* image.h - an encoded image to the RGB pixels a transform needs: the
 * format is told by its first bytes (never by a name), and each format's
 * decoder (jpeg.c, png.c, webp.c) decodes only what the window needs, at a
 * reduced scale where the library can do it with less work (JPEG's DCT
 * scaling). The types every format's
 * decoder shares are here. Private.
 *
 * Thread rule: one rf_decoder per compute thread, never shared; it owns one
 * decoder of each format and the output buffer of the last decode. */
#ifndef RF_IMAGE_H
#define RF_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* The region a caller wants, in pixels of the scaled image: [x0, x1) x [y0, y1). */
typedef struct rf_region {
	int x0, x1, y0, y1;
} rf_region;

/* What was decoded: rows y0 .. y0+h-1 and columns x0 .. x0+w-1 of the
 * scaled image (scaled_w x scaled_h), packed 8-bit RGB; the region may be
 * larger than the one asked for (libjpeg crops at iMCU edges, a PNG is
 * decoded in whole rows). Valid until the next call on the decoder. */
typedef struct rf_image {
	const uint8_t *rgb;
	size_t stride; /* bytes per row */
	int scaled_w, scaled_h;
	int x0, y0, w, h;
} rf_image;

typedef enum rf_image_format {
	RF_FORMAT_UNKNOWN = 0,
	RF_FORMAT_JPEG,
	RF_FORMAT_PNG,
	RF_FORMAT_WEBP,
} rf_image_format;

/* The format data[len] starts like: JPEG's SOI marker, PNG's 8-byte
 * signature, or a RIFF header of type WEBP. */
rf_image_format rfi_image_sniff(const uint8_t *data, size_t len);

/* Size of an image side scaled by 1/denom, as every format's decoder
 * computes it (libjpeg's rounding up). */
static inline int rfi_scaled_size(int n, int denom)
{
	return (n + denom - 1) / denom;
}

typedef struct rf_decoder rf_decoder;

/* @return : 0 with *out set, or -ENOMEM. */
int rfi_decoder_create(rf_decoder **out);
void rfi_decoder_destroy(rf_decoder *d);

/* Tells the format of data[len] and reads its headers. On success the
 * decoder holds the image until rfi_decoder_decode() or rfi_decoder_abort();
 * *w and *h are its size and *max_denom the largest reduction its decoder
 * can apply while decoding (8 for JPEG; 1 for PNG and WebP, whose libraries
 * have no reduced-size decode).
 * @return : 0, or RF_EBADSAMPLE with reason[rlen] set: no format this build
 *           decodes, more than max_pixels pixels (refused before any pixel
 *           memory is allocated), a damaged header. */
int rfi_decoder_open(rf_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels, int *w,
		    int *h, int *max_denom, char *reason, size_t rlen);

/* Decodes the opened image at scale 1/denom (1, 2, 4 or 8; at most the
 * max_denom open gave), only what want needs (NULL: all of it). With
 * verify, damage anywhere in the image is found (the rows past the region
 * are decoded too); without it, damage the region does not reach goes
 * unseen. A damaged or truncated image is a bad sample, never a grey one.
 * @return : 0 with *out set, or RF_EBADSAMPLE / -ENOMEM with reason set. */
int rfi_decoder_decode(rf_decoder *d, int denom, const rf_region *want, int verify, rf_image *out,
		      char *reason, size_t rlen);

/* Drops the opened image (when the caller decides not to decode it). */
void rfi_decoder_abort(rf_decoder *d);

/* The format of the image opened last. */
rf_image_format rfi_decoder_format(const rf_decoder *d);

/* rf_image_formats(), for src/lib.c. */
unsigned rfi_image_formats(void);

#endif
