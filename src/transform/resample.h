/* resample.h - the fused transform pass: resample a decoded region to the
 * C x C output (separable, 8-bit between passes as PIL does, but vertical
 * first, so that the gathering horizontal pass runs on C rows only) and store
 * each output row straight into the sample's place in the batch slot,
 * converted to the output type and layout. The two passes are kernels chosen
 * per CPU (plain C here, SIMD in resample_x86.c), all giving the same bytes.
 * Private.
 *
 * Filter: PIL's bilinear (triangle of support 1) at pixel centres; on every
 * shrink the triangle is widened to the shrink factor, which antialiases as
 * PIL's resize does (and so torchvision's Resize on PIL images).
 *
 * Thread rule: an rf_resampler is per compute thread; it grows its tables to
 * the largest image seen and never shrinks, so steady state allocates nothing. */
#ifndef RF_RESAMPLE_H
#define RF_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h"

/* Taps of one axis: output o reads `taps` input pixels from start[o] (the
 * same number for every output, zero weights filling in), with
 * weight[o * stride + k] in 1/16384 (summing to 16384). */
typedef struct rf_taps {
	int n, stride, taps;
	int32_t *start;
	int16_t *weight;
	int lo, hi; /* inputs read: [lo, hi) */
	size_t cap_n, cap_w;
} rf_taps;

/* How the output is stored. Built once per loader (read-only after). */
typedef struct rf_output {
	int crop;
	rf_dtype dtype;
	rf_layout layout;
	/* Byte v of channel c normalized is fmaf(v, scale[c], shift[c]):
	 * torchvision's (v / 255 - mean) / std as one multiply-add, so that
	 * SIMD kernels compute exactly the tables' values (resample_x86.c). */
	float scale[3], shift[3];
	float lut32[3][256];     /* value of byte v in channel c, normalized */
	uint16_t lut16[3][256];  /* the same as IEEE half, rounded to nearest even */
} rf_output;

/* The two kernels, each rounding its sums as (sum + 2^13) >> 14:
 *   vpass: mid[i] = sum over k < taps of in[k * stride + i] * w[k], for i < n
 *          (taps whole input rows blended into one);
 *   hpass: row[3x + c] = sum over k < 2 * pairs of m[off[x] + 3k + c] * w_xk,
 *          for x < C, c < 3, where wv holds the taps of output x two by two,
 *          each pair four times: wv[(x * pairs + j) * 8 + 2i + h] = w_x(2j+h)
 *          (a zero weight pads an odd tap count; its pixel is read, not used).
 * hpass may read RF_MID_SLACK bytes past the last tap it uses. Two taps
 * (enlarging) and 3 or 4 (shrinking by up to 2x: scaled decode keeps most
 * shrinks in that range) are the common cases. */
/*   split: r[i] = rgb[3i], g[i] = rgb[3i + 1], b[i] = rgb[3i + 2] for i < n: an
 *          output row of interleaved pixels into three planes (CHW output). */
typedef void rf_split_fn(const uint8_t *rgb, uint8_t *r, uint8_t *g, uint8_t *b, int n);
/*   norm32: out[i] = o->lut32[c][v[i]], norm16: out[i] = o->lut16[c][v[i]], for
 *          i < n (a plane's row of channel c normalized; float CHW output). */
typedef void rf_norm32_fn(const uint8_t *v, int n, const struct rf_output *o, int c, float *out);
typedef void rf_norm16_fn(const uint8_t *v, int n, const struct rf_output *o, int c,
			  uint16_t *out);
typedef void rf_vpass_fn(const uint8_t *in, size_t stride, const int16_t *w, int taps,
			 uint8_t *mid, int n);
typedef void rf_hpass_fn(const uint8_t *m, const int32_t *off, const int16_t *wv, int pairs,
			 uint8_t *row, int C);
#define RF_MID_SLACK 16

typedef struct rf_resampler {
	rf_taps tx, ty;
	uint8_t *mid;     /* one row after the vertical pass (columns read x 3, + slack) */
	size_t mid_cap;
	uint8_t *row;     /* one output row (crop x 3) before conversion */
	uint8_t *planes;  /* that row split into planes (3 x crop), for float CHW */
	int32_t *xoff;    /* horizontal pass: byte offset of each output's first tap */
	int16_t *xw;      /* and its weights, laid out for hpass (see above) */
	size_t xw_cap;
	rf_vpass_fn *vpass; /* the fastest kernels this CPU runs (chosen by init) */
	rf_hpass_fn *hpass;
	rf_split_fn *split;
	rf_norm32_fn *norm32;
	rf_norm16_fn *norm16;
} rf_resampler;

/* The plain C kernels (the reference the SIMD ones must match byte for byte). */
rf_vpass_fn rfi_vpass_c;
rf_hpass_fn rfi_hpass_c;
rf_split_fn rfi_split_c;
rf_norm32_fn rfi_norm32_c;
rf_norm16_fn rfi_norm16_c;
/* Replaces r's kernels with the x86 SIMD ones this CPU supports, none beyond
 * `upto` (resample_x86.c; does nothing elsewhere). rfi_resampler_init asks
 * for the best; tests ask for each level in turn. */
typedef enum rf_simd { RF_SIMD_NONE, RF_SIMD_SSE2, RF_SIMD_SSSE3, RF_SIMD_AVX2 } rf_simd;
void rfi_resample_kernels_x86(rf_resampler *r, rf_simd upto);

void rfi_output_init(rf_output *o, int crop, rf_dtype dtype, rf_layout layout,
		    const float mean[3], const float stdev[3]);
/* Bytes one sample takes in the batch. */
size_t rfi_output_sample_bytes(const rf_output *o);

int rfi_resampler_init(rf_resampler *r, int crop);
void rfi_resampler_destroy(rf_resampler *r);

/* Computes the taps of one axis: n outputs covering the input interval
 * [start, start + len), reading only inputs in [bound_lo, bound_hi).
 * flip mirrors the outputs. @return : 0 or -ENOMEM. */
int rfi_taps_build(rf_taps *t, int n, double start, double len, int bound_lo, int bound_hi,
		  int flip);

struct rf_window;
/* The largest DCT scale-down (8, 4, 2 or 1) that keeps window win at least
 * RF_SCALED_SHRINK_LEFT * crop pixels on its shorter side: 1/8..1/2 are the
 * scales libjpeg-turbo has SIMD code for (others are slower than a full
 * decode), and the scales the GPU's engines offer.
 *
 * Why a shrink must be left: the DCT scale-down keeps every frequency the
 * scaled image can hold, where PIL's triangle (torchvision's Resize) blurs
 * those near its Nyquist, and a triangle left with a shrink of 1.0x blurs
 * nothing (its taps fall on pixel centres). Decoded at 1/d with 1.0x-1.1x
 * left, photos with fine detail were up to 2.41 levels from torchvision's
 * (mean |d|, 0-255), with 1.1x-1.2x up to 1.36; with 1.25x or more left at
 * most 0.98, where full scale gives 0.17-0.20 (bench/pixels.py's mid and
 * large sets, issue 38). The price: 7-8% fewer images/s on sets of photos
 * it moves to the next scale, none on ImageNet-sized ones (never scaled).
 * @return : the scale-down, 8, 4, 2 or 1. */
#define RF_SCALED_SHRINK_LEFT 1.25
int rfi_denom_for_window(const struct rf_window *win, int crop);
/* Both axes' taps for window win of a W x H image decoded at scale 1/denom
 * (rfi_scaled_size sizes), reading only the window's bounds: the CPU path and
 * the GPU path (denom 1) choose the same inputs and weights this way.
 * @return : 0 or -ENOMEM. */
int rfi_taps_for_window(rf_taps *tx, rf_taps *ty, const struct rf_window *win, int W, int H,
		       int denom, int crop);

/* Resamples src (rows from src_y0 of the image, columns from src_x0, stride
 * bytes per row, RGB; it must hold rows ty.lo..ty.hi and columns
 * tx.lo..tx.hi) with the taps in r->tx / r->ty (in image coordinates) and
 * stores the sample at out. @return : 0 or -ENOMEM. */
int rfi_resample_store(rf_resampler *r, const rf_output *o, const uint8_t *src, size_t stride,
		      int src_x0, int src_y0, uint8_t *out);

#endif
