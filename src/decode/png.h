/* png.h - PNG decode through libspng, to the 8-bit RGB that PIL's
 * convert("RGB") gives: palette expanded, grey replicated, alpha and tRNS
 * dropped (never composited), 16-bit samples to their high byte, low bit
 * depths scaled to 0..255, no gamma applied. Non-interlaced images are
 * decoded row by row and only down to the last row a window needs;
 * interlaced ones whole (their passes cover every row). PNG has no
 * reduced-scale decode. Private; only image.c calls it.
 *
 * Thread rule: one decoder per compute thread; never shared. */
#ifndef RF_PNG_H
#define RF_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "decode/image.h"

typedef struct rf_png_decoder rf_png_decoder;

/* @return : 0 with *out set, or -ENOMEM. */
int rfi_png_decoder_create(rf_png_decoder **out);
void rfi_png_decoder_destroy(rf_png_decoder *d);

/* Reads the header of data[len], which must stay valid until the decode or
 * the abort. @return : 0 with *w, *h set, or RF_EBADSAMPLE with reason set
 * (a damaged header, more than max_pixels pixels). */
int rfi_png_open(rf_png_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels, int *w,
		int *h, char *reason, size_t rlen);

/* Decodes the rows want needs (NULL or verify: every row; verify also
 * reads the stream to its end chunk), whole rows.
 * @return : 0 with *out set, or RF_EBADSAMPLE / -ENOMEM with reason set
 *           (libspng's reason: a bad CRC, a truncated stream, a bad chunk). */
int rfi_png_decode(rf_png_decoder *d, const rf_region *want, int verify, rf_image *out,
		  char *reason, size_t rlen);

void rfi_png_abort(rf_png_decoder *d);

#endif
