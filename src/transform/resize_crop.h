/* resize_crop.h - Resize(shorter side = S, bilinear) then CenterCrop(C), fused:
 * only the C x C output pixels are computed, straight into the batch slot.
 * Geometry follows torchvision: the shorter side becomes S, the longer
 * int(S * long / short); the crop starts at round((size - C) / 2). Sampling
 * uses pixel centres (align_corners = false), edge pixels clamped. No
 * antialiasing yet: shrinking by more than 2x aliases. Private. */
#ifndef RF_RESIZE_CROP_H
#define RF_RESIZE_CROP_H

#include <stdint.h>

/* Per-thread tables, sized for the crop at init: no allocation per sample. */
typedef struct rf_resize_scratch {
	int crop;
	uint32_t *x0, *x1; /* byte offsets of the two source columns */
	uint32_t *wx;      /* weight of x1, in 1/2048 */
} rf_resize_scratch;

int rf_resize_scratch_init(rf_resize_scratch *s, int crop);
void rf_resize_scratch_destroy(rf_resize_scratch *s);

/* Size of the resized image and where the crop starts in it. */
void rf_resize_crop_geometry(int w, int h, int S, int C, int *rw, int *rh, int *left, int *top);

/* Writes the C x C x 3 crop of src (w x h RGB) resized to shorter side S
 * into out. S >= C. */
void rf_resize_crop_u8(const uint8_t *src, int w, int h, int S, int C, uint8_t *out,
		       rf_resize_scratch *s);

#endif
