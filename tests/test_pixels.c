/* test_pixels.c - decoded pixels agree with an independent reference: the
 * whole file decoded (libjpeg, no scaling, no cropping), then the transform
 * computed here in double precision from its definition (bilinear at pixel
 * centres, antialiased on every shrink as PIL's resize, torchvision's
 * geometry). Bounds are stated at check_pixels(). Also: the taps are PIL's,
 * buffered and O_DIRECT reads give identical batches, the SIMD kernels give
 * the plain C kernels' bytes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <jpeglib.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "source/source.h"
#include "transform/resample.h"
#include "transform/window.h"
#include "testutil.h"

static uint8_t *ref_decode(const uint8_t *data, size_t len, int *w, int *h)
{
	struct jpeg_decompress_struct cinfo;
	struct jpeg_error_mgr jerr;
	cinfo.err = jpeg_std_error(&jerr);
	jpeg_create_decompress(&cinfo);
	jpeg_mem_src(&cinfo, data, (unsigned long)len);
	jpeg_read_header(&cinfo, TRUE);
	cinfo.out_color_space = JCS_RGB;
	jpeg_start_decompress(&cinfo);
	*w = (int)cinfo.output_width;
	*h = (int)cinfo.output_height;
	uint8_t *rgb = malloc((size_t)*w * *h * 3);
	while (cinfo.output_scanline < cinfo.output_height) {
		JSAMPROW row = rgb + (size_t)cinfo.output_scanline * *w * 3;
		jpeg_read_scanlines(&cinfo, &row, 1);
	}
	jpeg_finish_decompress(&cinfo);
	jpeg_destroy_decompress(&cinfo);
	return rgb;
}

/* The filter, written out: output o of an axis of n outputs covering input
 * [start, start + len) reads inputs whose centres lie within `support` of its
 * centre, weighted by a triangle of half-width fs (1, or the shrink factor
 * when shrinking), renormalized to sum to 1 over the inputs inside [lo, hi). */
static double tap_sum(const uint8_t *src, int w, int c, int y_or_x, int horiz, int o, int n,
		      double start, double len, int lo, int hi)
{
	double scale = len / n, fs = scale > 1.0 ? scale : 1.0;
	double center = start + (o + 0.5) * scale, sum = 0, acc = 0;
	for (int i = lo; i < hi; i++) {
		double d = fabs((i + 0.5 - center) / fs);
		if (d >= 1.0)
			continue;
		double k = 1.0 - d;
		double v = horiz ? src[((size_t)y_or_x * w + i) * 3 + c] : src[((size_t)i * w + y_or_x) * 3 + c];
		acc += k * v;
		sum += k;
	}
	if (sum == 0) { /* nearest inside the bounds */
		int i = (int)fmin(fmax(floor(center), lo), hi - 1);
		return horiz ? src[((size_t)y_or_x * w + i) * 3 + c] : src[((size_t)i * w + y_or_x) * 3 + c];
	}
	return acc / sum;
}

/* Reference transform of a full-decoded w x h image: the window (x, y, ww, wh)
 * resized to C x C, reading only pixels inside the bounds; separable, in
 * double precision, rounded once at the end. */
static void ref_window(const uint8_t *src, int w, double x, double y, double ww, double wh,
		       int bx0, int by0, int bx1, int by1, int C, int flip, uint8_t *out)
{
	double *col = malloc((size_t)w * 3 * sizeof(double)); /* one output row, before horizontal */
	for (int oy = 0; oy < C; oy++) {
		for (int i = 0; i < w; i++)
			for (int c = 0; c < 3; c++)
				col[i * 3 + c] = tap_sum(src, w, c, i, 0, oy, C, y, wh, by0, by1);
		for (int ox = 0; ox < C; ox++) {
			int sx = flip ? C - 1 - ox : ox;
			double scale = ww / C, fs = scale > 1.0 ? scale : 1.0;
			double center = x + (sx + 0.5) * scale;
			for (int c = 0; c < 3; c++) {
				double sum = 0, acc = 0;
				for (int i = bx0; i < bx1; i++) {
					double d = fabs((i + 0.5 - center) / fs);
					if (d >= 1.0)
						continue;
					acc += (1.0 - d) * col[i * 3 + c];
					sum += 1.0 - d;
				}
				double v = sum > 0 ? acc / sum : col[(int)fmin(fmax(floor(center), bx0), bx1 - 1) * 3 + c];
				out[((size_t)oy * C + ox) * 3 + c] = (uint8_t)fmin(255, floor(v + 0.5));
			}
		}
	}
	free(col);
}

/* torchvision: Resize(S) scales the shorter side to S, the longer to
 * int(S * long / short); CenterCrop(C) starts at int(round((size - C) / 2)).
 * The resize sees the whole image (bounds = the image). */
static void ref_resize_crop(const uint8_t *src, int w, int h, int S, int C, uint8_t *out)
{
	int rw = w <= h ? S : (int)((long)S * w / h);
	int rh = w <= h ? (int)((long)S * h / w) : S;
	double left = nearbyint((rw - C) / 2.0), top = nearbyint((rh - C) / 2.0);
	double fx = (double)w / rw, fy = (double)h / rh;
	ref_window(src, w, left * fx, top * fy, C * fx, C * fy, 0, 0, w, h, C, 0, out);
}

typedef struct diff_stats {
	int max;
	double mean;
	double far; /* fraction of values off by more than 16 levels */
} diff_stats;

static diff_stats compare(const uint8_t *a, const uint8_t *b, size_t n)
{
	diff_stats d = { 0, 0, 0 };
	for (size_t k = 0; k < n; k++) {
		int x = abs((int)a[k] - (int)b[k]);
		d.max = x > d.max ? x : d.max;
		d.mean += x;
		d.far += x > 16;
	}
	d.mean /= (double)n;
	d.far /= (double)n;
	return d;
}

/* Every sample of the loader against the reference of its file. Bounds:
 * - full decode of every row and column: at most 1 level per channel (the
 *   library rounds to 8 bits between its two passes);
 * - region decode: at the left and right edges of a cropped region the
 *   decoder's chroma upsampling sees fewer neighbours: mean difference at most
 *   0.25 levels, no value off by more than 16;
 * - scaled decode: DCT scaling is a downscaling filter of its own, which
 *   differs from the triangle on fine detail (the synthetic images carry
 *   per-pixel noise): mean difference at most 1 level (0.67 seen), at most
 *   0.5% of values off by more than 16 (0.05% seen). 777 x 521 (one pixel
 *   past a multiple of 8 on both sides, decoded at 1/8) holds the scaled
 *   image's geometry: a window placed with sw / W instead of 1 / 8 is 3.5
 *   pixels off and differs by 1.9 levels, 3% of values by more than 16. */
static void check_pixels(int S, int C, int scaled, int region)
{
	char *d = tu_tmpdir("px");
	/* landscape, portrait, square, odd sizes, a big shrink and an upscale */
	int sizes[][2] = { { 500, 375 }, { 375, 500 }, { 97, 97 }, { 301, 203 }, { 1024, 640 },
			   { 30, 41 }, { 2000, 1500 }, { 777, 521 } };
	int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
	char rel[64];
	for (int i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "c/img_%d.jpg", i);
		tu_jpeg(d, rel, sizes[i][0], sizes[i][1], 77 + (uint64_t)i);
	}
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.resize = S;
	cfg.crop = C;
	cfg.batch_size = 4;
	cfg.shuffle = 0;
	cfg.no_scaled_decode = !scaled;
	cfg.no_region_decode = !region;
	cfg.read_pool_bytes = 16 << 20;
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, d, 0, err, sizeof(err)), 0);
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	uint8_t *ref = malloc((size_t)C * C * 3);
	rf_batch *b;
	int r, seen = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq(b->height, (uint32_t)C);
		cr_assert_eq(b->width, (uint32_t)C);
		cr_assert_eq(b->channels, 3);
		for (uint32_t i = 0; i < b->count; i++) {
			size_t len;
			uint8_t *jpg = tu_read(d, rfi_index_path(&idx, b->ids[i]), &len);
			int w, h;
			uint8_t *rgb = ref_decode(jpg, len, &w, &h);
			ref_resize_crop(rgb, w, h, S, C, ref);
			diff_stats ds = compare(b->data + i * b->sample_bytes, ref, (size_t)C * C * 3);
			if (!scaled && !region)
				cr_assert_leq(ds.max, 1, "%s (%dx%d) S=%d C=%d: max difference %d",
					      rfi_index_path(&idx, b->ids[i]), w, h, S, C, ds.max);
			else if (!scaled)
				cr_assert(ds.mean <= 0.25 && ds.max <= 16, "%s (%dx%d) S=%d C=%d region: "
					  "mean difference %.2f, max %d", rfi_index_path(&idx, b->ids[i]),
					  w, h, S, C, ds.mean, ds.max);
			else
				cr_assert(ds.mean <= 1.0 && ds.far <= 0.005, "%s (%dx%d) S=%d C=%d scaled=%d "
					  "region=%d: mean difference %.2f, %.2f%% off by more than 16, max %d",
					  rfi_index_path(&idx, b->ids[i]), w, h, S, C, scaled, region, ds.mean,
					  100 * ds.far, ds.max);
			if (getenv("RF_TEST_VERBOSE"))
				fprintf(stderr, "%s %dx%d scaled=%d region=%d: mean %.3f far %.4f%% max %d\n",
					rfi_index_path(&idx, b->ids[i]), w, h, scaled, region, ds.mean,
					100 * ds.far, ds.max);
			free(rgb);
			free(jpg);
			seen++;
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF);
	cr_assert_eq(seen, n);
	rf_loader_destroy(l);
	free(ref);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
}

Test(pixels, exact_resize256_crop224) { check_pixels(256, 224, 0, 0); }
Test(pixels, exact_resize64_crop56) { check_pixels(64, 56, 0, 0); }
Test(pixels, exact_resize_equals_crop) { check_pixels(100, 100, 0, 0); }
Test(pixels, region_decode) { check_pixels(256, 224, 0, 1); }
Test(pixels, scaled_decode) { check_pixels(64, 56, 1, 0); }
Test(pixels, scaled_and_region_decode) { check_pixels(64, 56, 1, 1); }

/* Issue 38: the DCT scale-down keeps every frequency the scaled image can
 * hold, where PIL's triangle (torchvision's Resize) blurs those near its
 * Nyquist; a triangle left with a shrink of 1.0x blurs nothing (its taps fall
 * on pixel centres). So a photo whose window was exactly d times the crop
 * (682 x 512 at Resize 256 + CenterCrop 224: a 448-pixel window, decoded at
 * 1/2) was 2.41 levels from torchvision's, where full scale gives 0.17. A
 * scale is now taken only where it leaves the filter a shrink of
 * RF_SCALED_SHRINK_LEFT; the windows here sit on each side of that line. */
Test(pixels, a_scaled_decode_leaves_the_filter_a_shrink)
{
	rf_window_params p = { .resize = 256, .crop = 224 };
	/* w, h, the scale taken, the one taken before (the window / crop) */
	static const int cases[][4] = {
		{ 682, 512, 1, 2 },    /* 448 / 224: 1/2 would leave 1.0x */
		{ 639, 852, 1, 2 },    /* 559 / 224: 1/2 would leave 1.248x */
		{ 853, 640, 2, 2 },    /* 560: 1/2 leaves 1.25x */
		{ 1365, 1024, 2, 4 },  /* 896: 1/4 would leave 1.0x */
		{ 1279, 1706, 2, 4 },
		{ 1706, 1280, 4, 4 },
		{ 2730, 2048, 4, 8 },  /* 1792: 1/8 would leave 1.0x */
		{ 2560, 3413, 8, 8 },  /* 2240: 1/8 leaves 1.25x */
		{ 500, 375, 1, 1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rf_window win;
		rfi_window_for(&p, 0, 0, cases[i][0], cases[i][1], &win);
		int d = rfi_denom_for_window(&win, 224);
		cr_assert_eq(d, cases[i][2], "%d x %d (window %.1f x %.1f): 1/%d, want 1/%d",
			     cases[i][0], cases[i][1], win.w, win.h, d, cases[i][2]);
	}

	/* and the pixels of the first: within region decode's bounds
	 * (check_pixels); decoded at 1/2 they were 0.82 from the reference on
	 * average, 21 at most */
	char *dir = tu_tmpdir("shrink");
	tu_jpeg(dir, "c/img.jpg", 682, 512, 38);
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.resize = 256;
	cfg.crop = 224;
	cfg.batch_size = 1;
	cfg.read_pool_bytes = 16 << 20; /* scaled and region decode: the defaults */
	size_t n, len;
	uint8_t *got = tu_drain_bytes(&cfg, &n, NULL);
	cr_assert_eq(n, (size_t)224 * 224 * 3);
	uint8_t *jpg = tu_read(dir, "c/img.jpg", &len);
	int w, h;
	uint8_t *rgb = ref_decode(jpg, len, &w, &h);
	uint8_t *ref = malloc(n);
	ref_resize_crop(rgb, w, h, 256, 224, ref);
	diff_stats ds = compare(got, ref, n);
	if (getenv("RF_TEST_VERBOSE"))
		fprintf(stderr, "682x512 defaults: mean %.3f max %d\n", ds.mean, ds.max);
	cr_assert(ds.mean <= 0.25 && ds.max <= 16, "682 x 512: mean difference %.3f, max %d",
		  ds.mean, ds.max);
	free(ref);
	free(rgb);
	free(jpg);
	free(got);
	tu_rmrf(dir);
	free(dir);
}

Test(pixels, direct_and_buffered_identical)
{
	char *d = tu_tree("same", 3, 9);
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.epochs = 2;
	size_t n1, n2, n3;
	uint8_t *a = tu_drain_bytes(&cfg, &n1, NULL);
	cfg.no_direct_io = 1;
	uint8_t *b = tu_drain_bytes(&cfg, &n2, NULL);
	cfg.no_direct_io = 0;
	cfg.threads = 1;
	cfg.io_depth = 1;
	cfg.prefetch = 1;
	uint8_t *c = tu_drain_bytes(&cfg, &n3, NULL);
	cr_assert_eq(n1, n2);
	cr_assert_eq(n1, n3);
	cr_assert_eq(memcmp(a, b, n1), 0);
	cr_assert_eq(memcmp(a, c, n1), 0, "thread count and depth do not change the bytes");
	free(a);
	free(b);
	free(c);
	tu_rmrf(d);
	free(d);
}

/* PIL's weights for output xx of an axis of in_size inputs resized to
 * out_size (ImagingResample's precompute_coeffs with the bilinear filter,
 * which torchvision's Resize runs on PIL images), in double precision:
 * inputs *xmin .. *xmin + count - 1 weighted k[0 .. count - 1], summing to 1.
 * @return : count. */
static int pil_bilinear(int in_size, int out_size, int xx, int *xmin, double *k)
{
	double scale = (double)in_size / out_size;
	double filterscale = scale < 1.0 ? 1.0 : scale; /* every downscale widens */
	double support = 1.0 * filterscale;             /* bilinear's support is 1 */
	double center = (xx + 0.5) * scale, ww = 0;
	int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
	lo = lo < 0 ? 0 : lo;
	hi = hi > in_size ? in_size : hi;
	for (int x = lo; x < hi; x++) {
		double d = fabs((x - center + 0.5) / filterscale);
		k[x - lo] = d < 1.0 ? 1.0 - d : 0.0;
		ww += k[x - lo];
	}
	for (int x = lo; x < hi; x++)
		k[x - lo] /= ww;
	*xmin = lo;
	return hi - lo;
}

/* rfi_taps_build's weights for a 1.5x shrink are PIL's, rounded to Q14 as
 * ringfeed rounds (each weight to nearest, the largest taking up the rest so
 * that they sum to exactly 16384): a 300-pixel axis to 200 (edges
 * renormalized), and Resize(256) + CenterCrop(224) of a 384-pixel side (the
 * window is outputs 16 .. 239 of the resize, as torchvision crops). */
static void check_taps_against_pil(int in_size, int out_size, int first, int n)
{
	double scale = (double)in_size / out_size;
	rf_taps t = { 0 };
	cr_assert_eq(rfi_taps_build(&t, n, first * scale, n * scale, 0, in_size, 0), 0);
	cr_assert_eq(t.n, n);
	cr_assert(t.taps >= 3, "a 1.5x shrink reads 3 inputs per output, not %d", t.taps);
	for (int o = 0; o < n; o++) {
		double k[16];
		int xmin, count = pil_bilinear(in_size, out_size, first + o, &xmin, k);
		cr_assert(count <= t.taps && xmin >= t.start[o] && xmin + count <= t.start[o] + t.taps,
			  "output %d: PIL's inputs %d..%d, ringfeed's %d..%d", o, xmin, xmin + count - 1,
			  t.start[o], t.start[o] + t.taps - 1);
		int q[16] = { 0 }, total = 0, best = 0;
		for (int x = 0; x < count; x++) {
			q[x] = (int)(k[x] * 16384 + 0.5);
			total += q[x];
			best = q[x] > q[best] ? x : best;
		}
		q[best] += 16384 - total;
		const int16_t *w = t.weight + (size_t)o * t.stride;
		for (int j = 0; j < t.taps; j++) {
			int x = t.start[o] + j - xmin;
			int want = x >= 0 && x < count ? q[x] : 0;
			cr_assert_eq(w[j], want, "output %d, input %d: weight %d, PIL's %.6f -> %d", o,
				     t.start[o] + j, w[j], x >= 0 && x < count ? k[x] * 16384 : 0.0, want);
		}
	}
	free(t.start);
	free(t.weight);
}

Test(pixels, taps_are_pils_at_1_5x)
{
	check_taps_against_pil(300, 200, 0, 200);
	check_taps_against_pil(384, 256, 16, 224);
}

/* The SIMD kernels (resample_x86.c) against the plain C ones, byte for byte:
 * 1 to 9 taps (odd counts pad a pair), lengths with and without a tail, any
 * weights summing to 16384 (the largest sums included), offsets in any order. */
static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* A resampler with the kernels of one SIMD level (at most: the CPU decides). */
static void init_level(rf_resampler *r, int crop, rf_simd level)
{
	cr_assert_eq(rfi_resampler_init(r, crop), 0);
	r->vpass = rfi_vpass_c;
	r->hpass = rfi_hpass_c;
	r->split = rfi_split_c;
	r->norm32 = rfi_norm32_c;
	r->norm16 = rfi_norm16_c;
	rfi_resample_kernels_x86(r, level);
}

/* Skips unless level brings a kernel of its own (the CPU may lack it). */
static void require_level(const rf_resampler *r, rf_simd level, int vertical)
{
	rf_resampler below;
	init_level(&below, 8, level - 1);
	int same = vertical ? r->vpass == below.vpass : r->hpass == below.hpass;
	rfi_resampler_destroy(&below);
	if (same)
		cr_skip_test("this CPU has no %s kernel at SIMD level %d", vertical ? "vertical" : "horizontal",
			     (int)level);
}

/* taps weights >= 0 summing to 16384 */
static void random_weights(uint32_t *s, int16_t *w, int taps)
{
	int left = 16384;
	for (int k = 0; k < taps - 1; k++) {
		w[k] = (int16_t)(lcg(s) % (uint32_t)(left + 1));
		left -= w[k];
	}
	w[taps - 1] = (int16_t)left;
}

static void check_vertical(rf_simd level)
{
	enum { N = 300, TAPS = 9 };
	rf_resampler r;
	init_level(&r, 8, level);
	require_level(&r, level, 1);
	uint32_t s = 7;
	static uint8_t in[TAPS * N], want[N], got[N + 1];
	for (int trial = 0; trial < 3000; trial++) {
		int n = (int)(lcg(&s) % N), taps = 1 + trial % TAPS;
		int16_t w[TAPS];
		random_weights(&s, w, taps);
		for (int i = 0; i < taps * N; i++)
			in[i] = trial % 5 ? (uint8_t)lcg(&s) : 255;
		got[n] = 0xA5;
		rfi_vpass_c(in, N, w, taps, want, n);
		r.vpass(in, N, w, taps, got, n);
		cr_assert_eq(memcmp(want, got, (size_t)n), 0, "n %d taps %d", n, taps);
		cr_assert_eq(got[n], 0xA5, "wrote past n = %d", n);
	}
	rfi_resampler_destroy(&r);
}

static void check_horizontal(rf_simd level)
{
	enum { C = 231, COLS = 600, PAIRS = 5 };
	rf_resampler r;
	init_level(&r, C, level);
	require_level(&r, level, 0);
	uint32_t s = 11;
	static uint8_t m[COLS * 3 + RF_MID_SLACK], want[C * 3], got[C * 3 + 1];
	static int32_t off[C];
	static int16_t wv[C * PAIRS * 8];
	for (int trial = 0; trial < 1000; trial++) {
		int c = 1 + (int)(lcg(&s) % C), taps = 1 + trial % (2 * PAIRS), pairs = (taps + 1) / 2;
		for (size_t i = 0; i < sizeof(m); i++)
			m[i] = trial % 5 ? (uint8_t)lcg(&s) : 255;
		for (int x = 0; x < c; x++) {
			off[x] = (int)(lcg(&s) % (uint32_t)(COLS - 2 * pairs + 1)) * 3; /* taps inside */
			int16_t w[2 * PAIRS] = { 0 };
			random_weights(&s, w, taps);
			for (int j = 0; j < pairs; j++)
				for (int i = 0; i < 8; i += 2) {
					wv[(x * pairs + j) * 8 + i] = w[2 * j];
					wv[(x * pairs + j) * 8 + i + 1] = w[2 * j + 1];
				}
		}
		got[3 * c] = 0xA5;
		rfi_hpass_c(m, off, wv, pairs, want, c);
		r.hpass(m, off, wv, pairs, got, c);
		cr_assert_eq(memcmp(want, got, (size_t)c * 3), 0, "C %d taps %d", c, taps);
		cr_assert_eq(got[3 * c], 0xA5, "wrote past C = %d", c);
	}
	rfi_resampler_destroy(&r);
}

Test(pixels, simd_vertical_kernel_sse2) { check_vertical(RF_SIMD_SSE2); }
Test(pixels, simd_vertical_kernel_avx2) { check_vertical(RF_SIMD_AVX2); }
Test(pixels, simd_horizontal_kernel_ssse3) { check_horizontal(RF_SIMD_SSSE3); }

/* The split of a row into planes (CHW): the SIMD kernel gives the C one's
 * bytes for every width 0..100 (steps of 16 and tails), writing nothing
 * past the width. */
Test(pixels, simd_split_kernel_ssse3)
{
	rf_resampler r, below;
	init_level(&r, 8, RF_SIMD_SSSE3);
	init_level(&below, 8, RF_SIMD_SSE2);
	int same = r.split == below.split;
	rfi_resampler_destroy(&below);
	if (same) {
		rfi_resampler_destroy(&r);
		cr_skip_test("this CPU has no SSSE3 split kernel");
	}
	enum { N = 100 };
	uint8_t rgb[3 * N], want[3][N + 1], got[3][N + 1];
	uint32_t s = 7;
	for (int i = 0; i < 3 * N; i++)
		rgb[i] = (uint8_t)lcg(&s);
	for (int n = 0; n <= N; n++) {
		memset(got, 0xA5, sizeof(got));
		rfi_split_c(rgb, want[0], want[1], want[2], n);
		r.split(rgb, got[0], got[1], got[2], n);
		for (int c = 0; c < 3; c++) {
			cr_assert_eq(memcmp(want[c], got[c], (size_t)n), 0, "width %d, channel %d", n, c);
			cr_assert_eq(got[c][n], 0xA5, "width %d: wrote past it", n);
		}
	}
	rfi_resampler_destroy(&r);
}

/* Normalization for float CHW: the SIMD kernels (FMA, F16C) give exactly
 * the tables' values, float32 and half, for every byte, for mean and std
 * from ImageNet's to extremes (values past half's range: infinities; tiny
 * ones: half subnormals), at every width 0..40. */
Test(pixels, simd_norm_kernels_avx2)
{
	rf_resampler r, below;
	init_level(&r, 8, RF_SIMD_AVX2);
	init_level(&below, 8, RF_SIMD_SSSE3);
	int same = r.norm16 == below.norm16;
	rfi_resampler_destroy(&below);
	if (same) {
		rfi_resampler_destroy(&r);
		cr_skip_test("this CPU has no AVX2 + FMA + F16C");
	}
	static const float ms[][6] = {
		{ 0.485f, 0.456f, 0.406f, 0.229f, 0.224f, 0.225f },
		{ 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f },
		{ 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f },
		{ 0.5f, 0.25f, 1.0f, 1e-6f, 3e-5f, 1e-3f },   /* past 65504: inf */
		{ 0.0f, 0.5f, -2.0f, 1e5f, 3e4f, 7.0f },      /* tiny: subnormal halves */
	};
	uint8_t v[256];
	for (int i = 0; i < 256; i++)
		v[i] = (uint8_t)(i * 37 + 11); /* every byte once, out of order */
	for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++) {
		rf_output o;
		rfi_output_init(&o, 8, RF_DTYPE_FLOAT16, RF_LAYOUT_CHW, ms[k], ms[k] + 3);
		for (int c = 0; c < 3; c++) {
			float want32[256], got32[257];
			uint16_t want16[256], got16[257];
			rfi_norm32_c(v, 256, &o, c, want32);
			rfi_norm16_c(v, 256, &o, c, want16);
			got32[256] = -1.0f;
			got16[256] = 0xA5A5;
			r.norm32(v, 256, &o, c, got32);
			r.norm16(v, 256, &o, c, got16);
			cr_assert_eq(memcmp(want32, got32, sizeof(want32)), 0, "set %zu channel %d", k, c);
			cr_assert_eq(memcmp(want16, got16, sizeof(want16)), 0, "set %zu channel %d", k, c);
			cr_assert(got32[256] == -1.0f && got16[256] == 0xA5A5, "wrote past 256");
			for (int n = 0; n <= 40; n++) {
				memset(got16, 0xA5, sizeof(got16));
				r.norm16(v + 3, n, &o, c, got16);
				cr_assert_eq(memcmp(want16 + 3, got16, (size_t)n * 2), 0, "width %d", n);
				cr_assert_eq(got16[n], 0xA5A5, "width %d: wrote past it", n);
			}
		}
	}
	rfi_resampler_destroy(&r);
}
