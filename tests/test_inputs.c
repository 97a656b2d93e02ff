/* test_inputs.c - every kind of input the decoder promises: baseline and
 * progressive; 4:2:0, 4:2:2, 4:4:4; grayscale (to RGB); YCCK and plain CMYK
 * (to RGB); images smaller than the crop (upscaled); the max_pixels limit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "source/source.h"
#include "testutil.h"

static const char *names[] = { "420", "422", "444", "progressive", "gray", "ycck", "cmyk" };
#define NKINDS 7

/* Decodes every kind of the same picture (in index order) and returns the
 * batch bytes of each, C x C x 3 apiece. */
static uint8_t *decode_kinds(int w, int h, int rrc, int C, int S)
{
	char *d = tu_tmpdir("kinds");
	char rel[64];
	for (int k = 0; k < NKINDS; k++) {
		snprintf(rel, sizeof(rel), "c/%d_%s.jpg", k, names[k]);
		tu_jpeg_kind(d, rel, w, h, 4242, (tu_kind)k);
	}
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.shuffle = 0;
	cfg.batch_size = NKINDS;
	cfg.crop = C;
	cfg.resize = S;
	cfg.random_resized_crop = rrc;
	if (rrc) {
		/* one box for every file (each has its own sample id, hence its own
		 * random box): the whole image, whose ratio is w / h */
		cfg.rrc_scale[0] = cfg.rrc_scale[1] = 1.0f;
		cfg.rrc_ratio[0] = cfg.rrc_ratio[1] = (float)w / (float)h;
	}
	cfg.read_pool_bytes = 16 << 20;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), 0, "%s", rf_loader_error(l));
	cr_assert_eq(b->count, NKINDS);
	rf_stats st;
	rf_loader_stats(l, &st);
	cr_assert_eq(st.bad_samples, 0, "every kind decodes");
	uint8_t *out = malloc(NKINDS * b->sample_bytes);
	memcpy(out, b->data, NKINDS * b->sample_bytes);
	rf_batch_release(l, b);
	rf_loader_destroy(l);
	tu_rmrf(d);
	free(d);
	return out;
}

static double mean_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += abs((int)a[i] - (int)b[i]);
	return s / (double)n;
}

/* bound: the mean difference allowed between colour kinds; chroma
 * subsampling costs more on a tiny image that is then upscaled. */
static void check_kinds(int w, int h, int rrc, int C, int S, double bound)
{
	uint8_t *o = decode_kinds(w, h, rrc, C, S);
	size_t n = (size_t)C * C * 3;
	const uint8_t *ref = o + 2 * n; /* 4:4:4 */
	/* Colour kinds show the same picture: they differ only by chroma
	 * subsampling and compression (mean difference a few levels). */
	int colour[] = { 0, 1, 3, 5, 6 };
	for (size_t i = 0; i < sizeof(colour) / sizeof(colour[0]); i++) {
		double md = mean_diff(o + colour[i] * n, ref, n);
		if (getenv("RF_TEST_VERBOSE"))
			fprintf(stderr, "%dx%d rrc=%d %s vs 4:4:4: %.2f\n", w, h, rrc, names[colour[i]], md);
		cr_assert_leq(md, bound, "%s vs 4:4:4: mean difference %.2f", names[colour[i]], md);
	}
	/* progressive and baseline 4:2:0 hold the same coefficients */
	cr_assert_leq(mean_diff(o + 3 * n, o, n), 0.5, "progressive = baseline");
	/* grayscale becomes RGB with R = G = B, near the picture's luminance */
	const uint8_t *g = o + 4 * n;
	double lum = 0;
	for (size_t i = 0; i < n; i += 3) {
		cr_assert(g[i] == g[i + 1] && g[i] == g[i + 2], "gray gives R = G = B");
		int y = (ref[i] * 77 + ref[i + 1] * 150 + ref[i + 2] * 29) >> 8;
		lum += abs(g[i] - y);
	}
	cr_assert_leq(lum / (double)(n / 3), 6.0, "gray is the luminance");
	free(o);
}

Test(inputs, kinds_center_crop) { check_kinds(160, 120, 0, 56, 64, 6.0); }
Test(inputs, kinds_random_resized_crop) { check_kinds(160, 120, 1, 56, 64, 6.0); }
Test(inputs, kinds_scaled_decode) { check_kinds(640, 480, 0, 56, 64, 6.0); }
Test(inputs, kinds_smaller_than_crop) { check_kinds(30, 20, 0, 56, 64, 12.0); }
Test(inputs, kinds_smaller_than_crop_rrc) { check_kinds(30, 20, 1, 56, 64, 12.0); }

Test(inputs, max_pixels)
{
	char *d = tu_tmpdir("maxpx");
	tu_jpeg(d, "c/small.jpg", 40, 40, 1);  /* 1600 pixels */
	tu_jpeg(d, "c/large.jpg", 80, 60, 2);  /* 4800 pixels */
	tu_bad_log s = { 0 };
	rf_config cfg;
	tu_config(&cfg, d);
	cfg.batch_size = 2;
	cfg.max_pixels = 2000;
	cfg.on_sample_error = tu_on_bad;
	cfg.user = &s;
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, d, 0, err, sizeof(err)), 0);
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), 0);
	for (uint32_t i = 0; i < b->count; i++)
		cr_assert_str_eq(rfi_index_path(&idx, b->ids[i]), "c/small.jpg");
	rf_batch_release(l, b);
	rf_loader_destroy(l);
	cr_assert_geq(s.n, 1);
	cr_assert(strstr(s.reason, "max_pixels") && strstr(s.reason, "80 x 60"), "%s", s.reason);
	cfg.max_pixels = 0;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
}
