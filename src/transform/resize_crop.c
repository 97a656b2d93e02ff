/* resize_crop.c - fused bilinear Resize + CenterCrop to uint8 HWC RGB, in
 * 11-bit fixed point (error against exact arithmetic below one level). */
#include "transform/resize_crop.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#define WBITS 11
#define WONE (1u << WBITS)

int rf_resize_scratch_init(rf_resize_scratch *s, int crop)
{
	s->crop = crop;
	s->x0 = malloc((size_t)crop * sizeof(uint32_t));
	s->x1 = malloc((size_t)crop * sizeof(uint32_t));
	s->wx = malloc((size_t)crop * sizeof(uint32_t));
	if (!s->x0 || !s->x1 || !s->wx) {
		rf_resize_scratch_destroy(s);
		return -ENOMEM;
	}
	return 0;
}

void rf_resize_scratch_destroy(rf_resize_scratch *s)
{
	free(s->x0);
	free(s->x1);
	free(s->wx);
	s->x0 = s->x1 = s->wx = NULL;
}

void rf_resize_crop_geometry(int w, int h, int S, int C, int *rw, int *rh, int *left, int *top)
{
	if (w <= h) {
		*rw = S;
		*rh = (int)((int64_t)S * h / w);
	} else {
		*rh = S;
		*rw = (int)((int64_t)S * w / h);
	}
	/* round half to even, as Python's round() in torchvision's center_crop */
	*left = (int)nearbyint((*rw - C) / 2.0);
	*top = (int)nearbyint((*rh - C) / 2.0);
}

/* Source coordinate of output index i: centre-aligned, clamped. */
static void tap(int i, int off, double scale, int n, int *i0, int *i1, uint32_t *w1)
{
	double x = (i + off + 0.5) * scale - 0.5;
	if (x < 0)
		x = 0;
	int a = (int)x;
	if (a > n - 1)
		a = n - 1;
	*i0 = a;
	*i1 = a + 1 < n ? a + 1 : n - 1;
	*w1 = (uint32_t)lrint((x - a) * WONE);
	if (*w1 > WONE)
		*w1 = WONE;
}

void rf_resize_crop_u8(const uint8_t *src, int w, int h, int S, int C, uint8_t *out,
		       rf_resize_scratch *s)
{
	int rw, rh, left, top;
	rf_resize_crop_geometry(w, h, S, C, &rw, &rh, &left, &top);
	double sx = (double)w / rw, sy = (double)h / rh;
	for (int x = 0; x < C; x++) {
		int a, b;
		tap(x, left, sx, w, &a, &b, &s->wx[x]);
		s->x0[x] = (uint32_t)a * 3;
		s->x1[x] = (uint32_t)b * 3;
	}
	size_t stride = (size_t)w * 3;
	for (int y = 0; y < C; y++) {
		int y0, y1;
		uint32_t wy;
		tap(y, top, sy, h, &y0, &y1, &wy);
		const uint8_t *r0 = src + (size_t)y0 * stride, *r1 = src + (size_t)y1 * stride;
		uint8_t *o = out + (size_t)y * C * 3;
		for (int x = 0; x < C; x++) {
			uint32_t a = s->x0[x], b = s->x1[x], wx = s->wx[x];
			for (int c = 0; c < 3; c++) {
				uint32_t t = r0[a + c] * (WONE - wx) + r0[b + c] * wx;
				uint32_t u = r1[a + c] * (WONE - wx) + r1[b + c] * wx;
				o[x * 3 + c] = (uint8_t)((t * (WONE - wy) + u * wy +
							  (1u << (2 * WBITS - 1))) >> (2 * WBITS));
			}
		}
	}
}
