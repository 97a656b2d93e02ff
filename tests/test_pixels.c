/* test_pixels.c - decoded pixels equal an independent reference: the file
 * decoded with the libjpeg API (not TurboJPEG's), resized with bilinear
 * sampling at pixel centres in double precision, center-cropped by
 * torchvision's rules, all written here. Bound: 1 level per channel (the
 * library works in 11-bit fixed point). Also: buffered and O_DIRECT reads
 * give identical batches. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <jpeglib.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
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

/* torchvision: Resize(S) scales the shorter side to S, the longer to
 * int(S * long / short); CenterCrop(C) starts at int(round((size - C) / 2)). */
static void ref_resize_crop(const uint8_t *src, int w, int h, int S, int C, uint8_t *out)
{
	int rw = w <= h ? S : (int)((long)S * w / h);
	int rh = w <= h ? (int)((long)S * h / w) : S;
	int left = (int)nearbyint((rw - C) / 2.0), top = (int)nearbyint((rh - C) / 2.0);
	for (int y = 0; y < C; y++) {
		double sy = fmax(0, (y + top + 0.5) * h / (double)rh - 0.5);
		int y0 = (int)fmin(floor(sy), h - 1), y1 = y0 + 1 < h ? y0 + 1 : h - 1;
		double fy = sy - y0;
		for (int x = 0; x < C; x++) {
			double sx = fmax(0, (x + left + 0.5) * w / (double)rw - 0.5);
			int x0 = (int)fmin(floor(sx), w - 1), x1 = x0 + 1 < w ? x0 + 1 : w - 1;
			double fx = sx - x0;
			for (int c = 0; c < 3; c++) {
				double p00 = src[((size_t)y0 * w + x0) * 3 + c], p01 = src[((size_t)y0 * w + x1) * 3 + c];
				double p10 = src[((size_t)y1 * w + x0) * 3 + c], p11 = src[((size_t)y1 * w + x1) * 3 + c];
				double v = (p00 * (1 - fx) + p01 * fx) * (1 - fy) + (p10 * (1 - fx) + p11 * fx) * fy;
				out[((size_t)y * C + x) * 3 + c] = (uint8_t)floor(v + 0.5);
			}
		}
	}
}

static void check_pixels(int S, int C, int no_direct)
{
	char *d = tu_tmpdir("px");
	/* landscape, portrait, square, odd sizes, a big shrink and an upscale */
	int sizes[][2] = { { 500, 375 }, { 375, 500 }, { 97, 97 }, { 301, 203 }, { 1024, 640 }, { 30, 41 } };
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
	cfg.no_direct_io = no_direct;
	cfg.read_pool_bytes = 8 << 20;
	rf_index idx;
	char err[256];
	cr_assert_eq(rf_index_build(&idx, d, err, sizeof(err)), 0);
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
			uint8_t *jpg = tu_read(d, rf_index_path(&idx, b->ids[i]), &len);
			int w, h;
			uint8_t *rgb = ref_decode(jpg, len, &w, &h);
			ref_resize_crop(rgb, w, h, S, C, ref);
			const uint8_t *got = b->data + i * b->sample_bytes;
			int maxd = 0;
			for (size_t k = 0; k < (size_t)C * C * 3; k++) {
				int dd = abs((int)got[k] - (int)ref[k]);
				maxd = dd > maxd ? dd : maxd;
			}
			cr_assert_leq(maxd, 1, "%s (%dx%d) S=%d C=%d: max difference %d",
				      rf_index_path(&idx, b->ids[i]), w, h, S, C, maxd);
			free(rgb);
			free(jpg);
			seen++;
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF);
	cr_assert_eq(seen, n);
	rf_stats st;
	rf_loader_stats(l, &st);
	cr_assert_eq(st.direct_io, no_direct ? 0u : st.direct_io);
	rf_loader_destroy(l);
	free(ref);
	rf_index_free(&idx);
	tu_rmrf(d);
	free(d);
}

Test(pixels, resize256_crop224) { check_pixels(256, 224, 0); }
Test(pixels, resize64_crop56) { check_pixels(64, 56, 0); }
Test(pixels, resize_equals_crop) { check_pixels(100, 100, 0); }
Test(pixels, buffered_reads) { check_pixels(64, 56, 1); }

static uint8_t *all_bytes(rf_config *cfg, size_t *len)
{
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	size_t cap = 1 << 20, n = 0;
	uint8_t *all = malloc(cap);
	rf_batch *b;
	while (rf_loader_next(l, &b) == 0) {
		size_t k = b->count * b->sample_bytes;
		while (n + k > cap)
			all = realloc(all, cap *= 2);
		memcpy(all + n, b->data, k);
		n += k;
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
	*len = n;
	return all;
}

Test(pixels, direct_and_buffered_identical)
{
	char *d = tu_tree("same", 3, 9);
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.epochs = 2;
	size_t n1, n2, n3;
	uint8_t *a = all_bytes(&cfg, &n1);
	cfg.no_direct_io = 1;
	uint8_t *b = all_bytes(&cfg, &n2);
	cfg.no_direct_io = 0;
	cfg.threads = 1;
	cfg.io_depth = 1;
	cfg.prefetch = 1;
	uint8_t *c = all_bytes(&cfg, &n3);
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
