/* resample.c - taps, the two resampling passes and the output store (see
 * resample.h). */
#include "transform/resample.h"
#include "transform/window.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WBITS 14
#define WONE (1 << WBITS)

/* float -> IEEE half, round to nearest even (used to build tables only). */
static uint16_t to_half(float f)
{
	union { float f; uint32_t u; } v = { f };
	uint32_t sign = (v.u >> 16) & 0x8000u, exp = (v.u >> 23) & 0xff, man = v.u & 0x7fffffu;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) { /* subnormal half */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;
		int shift = 14 - e;
		uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++; /* may carry into the exponent, which is right */
	return (uint16_t)(sign | h);
}

void rfi_output_init(rf_output *o, int crop, rf_dtype dtype, rf_layout layout,
		    const float mean[3], const float stdev[3])
{
	o->crop = crop;
	o->dtype = dtype;
	o->layout = layout;
	for (int c = 0; c < 3; c++) {
		/* torchvision: ToTensor (v / 255) then Normalize ((x - mean) / std),
		 * folded into v * scale + shift, rounded once (fmaf): within a unit
		 * or two in the last place of torchvision's float32 */
		o->scale[c] = (float)(1.0 / (255.0 * stdev[c]));
		o->shift[c] = (float)(-(double)mean[c] / stdev[c]);
		for (int v = 0; v < 256; v++) {
			float x = fmaf((float)v, o->scale[c], o->shift[c]);
			o->lut32[c][v] = x;
			o->lut16[c][v] = to_half(x);
		}
	}
}

size_t rfi_output_sample_bytes(const rf_output *o)
{
	size_t n = (size_t)o->crop * o->crop * 3;
	return o->dtype == RF_DTYPE_FLOAT32 ? n * 4 : o->dtype == RF_DTYPE_FLOAT16 ? n * 2 : n;
}

int rfi_resampler_init(rf_resampler *r, int crop)
{
	memset(r, 0, sizeof(*r));
	r->row = malloc((size_t)crop * 3);
	r->planes = malloc((size_t)crop * 3);
	r->xoff = malloc((size_t)crop * sizeof(int32_t));
	r->xw_cap = (size_t)crop * 8; /* one pair of taps; grown for wider filters */
	r->xw = malloc(r->xw_cap * sizeof(int16_t));
	r->vpass = rfi_vpass_c;
	r->hpass = rfi_hpass_c;
	r->split = rfi_split_c;
	r->norm32 = rfi_norm32_c;
	r->norm16 = rfi_norm16_c;
	rfi_resample_kernels_x86(r, RF_SIMD_AVX2);
	return r->row && r->planes && r->xoff && r->xw ? 0 : -ENOMEM;
}

static void taps_free(rf_taps *t)
{
	free(t->start);
	free(t->weight);
}

void rfi_resampler_destroy(rf_resampler *r)
{
	taps_free(&r->tx);
	taps_free(&r->ty);
	free(r->mid);
	free(r->row);
	free(r->planes);
	free(r->xoff);
	free(r->xw);
	memset(r, 0, sizeof(*r));
}

static int taps_reserve(rf_taps *t, int n, int stride)
{
	if ((size_t)n > t->cap_n) {
		int32_t *s = realloc(t->start, (size_t)n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->start = s;
		t->cap_n = (size_t)n;
	}
	if ((size_t)n * (size_t)stride > t->cap_w) {
		int16_t *w = realloc(t->weight, (size_t)n * (size_t)stride * sizeof(*w));
		if (!w)
			return -ENOMEM;
		t->weight = w;
		t->cap_w = (size_t)n * (size_t)stride;
	}
	return 0;
}

/* The inputs output o reads before clamping to K: [*x0, *x1). */
static void footprint(double center, double support, int bound_lo, int bound_hi, int *x0, int *x1)
{
	int a = (int)floor(center - support + 0.5), b = (int)floor(center + support + 0.5);
	if (a < bound_lo)
		a = bound_lo;
	if (b > bound_hi)
		b = bound_hi;
	if (b <= a) { /* a window at the very edge: the nearest pixel */
		a = center < bound_lo ? bound_lo : (int)fmin(floor(center), bound_hi - 1);
		b = a + 1;
	}
	*x0 = a;
	*x1 = b;
}

int rfi_taps_build(rf_taps *t, int n, double start, double len, int bound_lo, int bound_hi,
		  int flip)
{
	double scale = len / n;
	/* PIL's ImagingResample (precompute_coeffs), which torchvision's Resize
	 * runs on PIL images: on every downscale the triangle is widened to the
	 * shrink factor (antialiasing); enlarging, it stays bilinear's, of
	 * half-width 1. Output o's inputs are those from round(center - support)
	 * to round(center + support) (the +0.5 and floor below), weighted by
	 * 1 - |x + 0.5 - center| / fscale and renormalized over the bounds. */
	double fscale = scale > 1.0 ? scale : 1.0;
	double support = fscale; /* the triangle's half-width, widened */
	double inv_fscale = 1.0 / fscale;
	/* Every output gets the same number of taps K, the widest footprint
	 * (zero weights fill the narrower ones), so the passes run fixed-length
	 * loops; K = 2 enlarging, 3 or 4 for shrinks of 1x to 2x. */
	int K = 1;
	for (int o = 0; o < n; o++) {
		int x0, x1;
		footprint(start + (o + 0.5) * scale, support, bound_lo, bound_hi, &x0, &x1);
		K = x1 - x0 > K ? x1 - x0 : K;
	}
	if (taps_reserve(t, n, K))
		return -ENOMEM;
	double kbuf[64];
	double *kw = K <= 64 ? kbuf : malloc((size_t)K * sizeof(double));
	if (!kw)
		return -ENOMEM;
	t->n = n;
	t->stride = t->taps = K;
	t->lo = bound_hi;
	t->hi = bound_lo;
	for (int o = 0; o < n; o++) {
		double center = start + ((flip ? n - 1 - o : o) + 0.5) * scale;
		int x0, x1;
		footprint(center, support, bound_lo, bound_hi, &x0, &x1);
		double sum = 0;
		for (int x = x0; x < x1; x++) {
			double d = fabs(x + 0.5 - center) * inv_fscale;
			kw[x - x0] = d < 1.0 ? 1.0 - d : 0.0;
			sum += kw[x - x0];
		}
		double norm = sum > 0 ? WONE / sum : 0;
		/* K taps from s0, inside the bounds, covering [x0, x1) */
		int s0 = x0 + K > bound_hi ? bound_hi - K : x0;
		int16_t *w = t->weight + (size_t)o * K;
		memset(w, 0, (size_t)K * sizeof(*w));
		int total = 0, best = x0 - s0;
		for (int x = x0; x < x1; x++) {
			/* weights are >= 0: adding 0.5 and truncating rounds them */
			int v = sum > 0 ? (int)(kw[x - x0] * norm + 0.5) : (x == x0 ? WONE : 0);
			w[x - s0] = (int16_t)v;
			total += v;
			if (v > w[best])
				best = x - s0;
		}
		w[best] = (int16_t)(w[best] + WONE - total); /* an exact sum */
		t->start[o] = s0;
		if (s0 < t->lo)
			t->lo = s0;
		if (s0 + K > t->hi)
			t->hi = s0 + K;
	}
	if (kw != kbuf)
		free(kw);
	return 0;
}

int rfi_denom_for_window(const struct rf_window *win, int crop)
{
	double m = fmin(win->w, win->h);
	for (int d = 8; d > 1; d /= 2)
		if (m / d >= RF_SCALED_SHRINK_LEFT * crop)
			return d;
	return 1;
}

int rfi_taps_for_window(rf_taps *tx, rf_taps *ty, const struct rf_window *win, int W, int H,
		       int denom, int crop)
{
	int sw = (W + denom - 1) / denom, sh = (H + denom - 1) / denom; /* libjpeg's scaled size */
	/* Scaled pixel i is the IDCT's reduction of pixels [i * denom, (i + 1) *
	 * denom): coordinates scale by exactly 1/denom (a last pixel that is
	 * partly past the edge does not stretch the others; sw / W would shift
	 * the window by up to (denom - 1) / 2 pixels of the image at its centre). */
	double fx = 1.0 / denom, fy = 1.0 / denom;
	int bx0 = (int)floor(win->bound_x0 * fx), bx1 = (int)ceil(win->bound_x1 * fx);
	int by0 = (int)floor(win->bound_y0 * fy), by1 = (int)ceil(win->bound_y1 * fy);
	bx1 = bx1 < sw ? bx1 : sw;
	by1 = by1 < sh ? by1 : sh;
	if (rfi_taps_build(tx, crop, win->x * fx, win->w * fx, bx0, bx1 > bx0 ? bx1 : bx0 + 1,
			  win->flip) ||
	    rfi_taps_build(ty, crop, win->y * fy, win->h * fy, by0, by1 > by0 ? by1 : by0 + 1, 0))
		return -ENOMEM;
	return 0;
}

/* Weights are non-negative and sum to WONE, so a weighted sum of bytes is a
 * byte again: rounding is all it needs. */
static inline uint8_t round_w(int32_t acc)
{
	return (uint8_t)((acc + (1 << (WBITS - 1))) >> WBITS);
}

void rfi_vpass_c(const uint8_t *in, size_t stride, const int16_t *w, int taps, uint8_t *mid, int n)
{
	for (int i = 0; i < n; i++) {
		int32_t acc = 0;
		for (int k = 0; k < taps; k++)
			acc += in[(size_t)k * stride + i] * w[k];
		mid[i] = round_w(acc);
	}
}

void rfi_hpass_c(const uint8_t *m, const int32_t *off, const int16_t *wv, int pairs, uint8_t *row,
		int C)
{
	for (int x = 0; x < C; x++) {
		const uint8_t *p = m + off[x];
		const int16_t *w = wv + (size_t)x * pairs * 8;
		int32_t acc[3] = { 0, 0, 0 };
		for (int j = 0; j < pairs; j++, p += 6, w += 8)
			for (int c = 0; c < 3; c++)
				acc[c] += p[c] * w[0] + p[3 + c] * w[1];
		for (int c = 0; c < 3; c++)
			row[3 * x + c] = round_w(acc[c]);
	}
}

void rfi_split_c(const uint8_t *rgb, uint8_t *r, uint8_t *g, uint8_t *b, int n)
{
	for (int i = 0; i < n; i++) {
		r[i] = rgb[3 * i];
		g[i] = rgb[3 * i + 1];
		b[i] = rgb[3 * i + 2];
	}
}

void rfi_norm32_c(const uint8_t *v, int n, const rf_output *o, int c, float *out)
{
	for (int i = 0; i < n; i++)
		out[i] = o->lut32[c][v[i]];
}

void rfi_norm16_c(const uint8_t *v, int n, const rf_output *o, int c, uint16_t *out)
{
	for (int i = 0; i < n; i++)
		out[i] = o->lut16[c][v[i]];
}

/* Stores output row y (crop x 3 bytes, RGB) in the sample's layout and type.
 * CHW splits the row into planes first (r->split, SIMD where the CPU has
 * it): the strided byte gathers it replaces were 8.6% of the compute
 * threads' time for uint8 CHW (perf); float CHW then normalizes each
 * plane's row (r->norm32 / norm16: table lookups, 10% of the time for
 * float16, or their values computed 8 at a time where the CPU can). */
static void store_row(const rf_resampler *r, const rf_output *o, const uint8_t *row, int y,
		      uint8_t *out)
{
	int C = o->crop;
	size_t plane = (size_t)C * C;
	if (o->layout == RF_LAYOUT_CHW) {
		uint8_t *s = o->dtype == RF_DTYPE_UINT8 ? out + (size_t)y * C : r->planes;
		size_t step = o->dtype == RF_DTYPE_UINT8 ? plane : (size_t)C;
		r->split(row, s, s + step, s + 2 * step, C);
		for (int c = 0; c < 3 && o->dtype == RF_DTYPE_FLOAT32; c++)
			r->norm32(s + c * C, C, o, c, (float *)out + c * plane + (size_t)y * C);
		for (int c = 0; c < 3 && o->dtype == RF_DTYPE_FLOAT16; c++)
			r->norm16(s + c * C, C, o, c, (uint16_t *)out + c * plane + (size_t)y * C);
		return;
	}
	if (o->dtype == RF_DTYPE_UINT8) {
		memcpy(out + (size_t)y * C * 3, row, (size_t)C * 3);
	} else if (o->dtype == RF_DTYPE_FLOAT32) {
		float *p = (float *)out + (size_t)y * C * 3;
		for (int x = 0; x < C * 3; x += 3) {
			p[x] = o->lut32[0][row[x]];
			p[x + 1] = o->lut32[1][row[x + 1]];
			p[x + 2] = o->lut32[2][row[x + 2]];
		}
	} else {
		uint16_t *p = (uint16_t *)out + (size_t)y * C * 3;
		for (int x = 0; x < C * 3; x += 3) {
			p[x] = o->lut16[0][row[x]];
			p[x + 1] = o->lut16[1][row[x + 1]];
			p[x + 2] = o->lut16[2][row[x + 2]];
		}
	}
}

/* Lays out the horizontal taps for hpass: byte offsets, weights in pairs. */
static int horizontal_layout(rf_resampler *r, int C)
{
	const rf_taps *tx = &r->tx;
	int K = tx->taps, pairs = (K + 1) / 2;
	size_t need = (size_t)C * pairs * 8;
	if (need > r->xw_cap) {
		int16_t *w = realloc(r->xw, need * sizeof(*w));
		if (!w)
			return -ENOMEM;
		r->xw = w;
		r->xw_cap = need;
	}
	for (int x = 0; x < C; x++) {
		const int16_t *w = tx->weight + (size_t)x * K;
		int16_t *v = r->xw + (size_t)x * pairs * 8;
		r->xoff[x] = tx->start[x] * 3;
		for (int j = 0; j < pairs; j++, v += 8)
			for (int i = 0; i < 8; i += 2) {
				v[i] = w[2 * j];
				v[i + 1] = 2 * j + 1 < K ? w[2 * j + 1] : 0;
			}
	}
	return pairs;
}

int rfi_resample_store(rf_resampler *r, const rf_output *o, const uint8_t *src, size_t stride,
		      int src_x0, int src_y0, uint8_t *out)
{
	const rf_taps *tx = &r->tx, *ty = &r->ty;
	int C = o->crop;
	/* Vertical first: each output row blends KY whole input rows over the
	 * columns the horizontal taps read (contiguous, so it vectorizes), then
	 * the horizontal taps gather from that one row. This way the gather,
	 * the slow part, runs on C rows rather than on every input row. */
	int cols = tx->hi - tx->lo, n = cols * 3;
	if ((size_t)n > r->mid_cap) {
		uint8_t *m = realloc(r->mid, (size_t)n + RF_MID_SLACK);
		if (!m)
			return -ENOMEM;
		r->mid = m;
		r->mid_cap = (size_t)n;
	}
	int pairs = horizontal_layout(r, C);
	if (pairs < 0)
		return pairs;
	const uint8_t *base = src + (ptrdiff_t)(tx->lo - src_x0) * 3;
	int direct = o->dtype == RF_DTYPE_UINT8 && o->layout == RF_LAYOUT_HWC;
	const uint8_t *m = r->mid - (ptrdiff_t)tx->lo * 3; /* m[x * 3] is image column x */
	for (int y = 0; y < C; y++) {
		const uint8_t *in = base + (size_t)(ty->start[y] - src_y0) * stride;
		r->vpass(in, stride, ty->weight + (size_t)y * ty->taps, ty->taps, r->mid, n);
		/* horizontal, into the slot row (uint8 HWC) or the row buffer */
		uint8_t *row = direct ? out + (size_t)y * C * 3 : r->row;
		r->hpass(m, r->xoff, r->xw, pairs, row, C);
		if (!direct)
			store_row(r, o, row, y, out);
	}
	return 0;
}
