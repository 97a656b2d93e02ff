/* test_augment.c - RandomResizedCrop follows torchvision's sampling (area and
 * ratio ranges, the central fallback) and depends only on (seed, epoch,
 * sample): identical across thread counts, depths and runs; flips mirror
 * exactly and happen with the asked probability; float32 / float16 output
 * is the normalized uint8 output; CHW is HWC transposed; batches handed out
 * as they complete are the same batches. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "transform/window.h"

static rf_window_params rrc_params(uint64_t seed)
{
	return (rf_window_params){ .resize = 256, .crop = 224, .random_resized_crop = 1,
				   .scale_lo = 0.08, .scale_hi = 1.0, .log_ratio_lo = log(3.0 / 4.0),
				   .log_ratio_hi = log(4.0 / 3.0), .seed = seed };
}

Test(augment, rrc_boxes_follow_torchvision)
{
	rf_window_params p = rrc_params(5);
	double area_sum = 0;
	int n = 20000;
	for (int id = 0; id < n; id++) {
		int i, j, h, w;
		rfi_rrc_box(&p, 0, (uint64_t)id, 500, 375, &i, &j, &h, &w);
		cr_assert(i >= 0 && j >= 0 && h > 0 && w > 0 && i + h <= 375 && j + w <= 500);
		double area = (double)w * h / (500.0 * 375.0), ratio = (double)w / h;
		/* rounding w and h to integers moves both a little */
		cr_assert(area >= 0.08 * 0.97 && area <= 1.0, "area %.4f", area);
		cr_assert(ratio >= 0.75 * 0.97 && ratio <= 4.0 / 3.0 * 1.03, "ratio %.4f", ratio);
		area_sum += area;
	}
	/* the mean area of torchvision's sampling on a 4:3 image is about 0.5 */
	cr_assert(area_sum / n > 0.42 && area_sum / n < 0.58, "mean area %.3f", area_sum / n);
	/* a very wide image: every attempt fails, the central fallback keeps ratio 4/3 */
	int i, j, h, w;
	rfi_rrc_box(&p, 0, 1, 1000, 10, &i, &j, &h, &w);
	cr_assert_eq(h, 10);
	cr_assert_eq(w, 13);
	cr_assert_eq(j, (1000 - 13) / 2);
	/* same key, same box; another epoch, another box */
	int i2, j2, h2, w2;
	rfi_rrc_box(&p, 0, 7, 500, 375, &i, &j, &h, &w);
	rfi_rrc_box(&p, 0, 7, 500, 375, &i2, &j2, &h2, &w2);
	cr_assert(i == i2 && j == j2 && h == h2 && w == w2);
	int diff = 0;
	for (int id = 0; id < 50; id++) {
		rfi_rrc_box(&p, 0, (uint64_t)id, 500, 375, &i, &j, &h, &w);
		rfi_rrc_box(&p, 1, (uint64_t)id, 500, 375, &i2, &j2, &h2, &w2);
		diff += i != i2 || j != j2 || h != h2 || w != w2;
	}
	cr_assert_geq(diff, 45);
}

Test(augment, flip_probability)
{
	rf_window_params p = rrc_params(3);
	p.flip_p = 0.3;
	int flips = 0, n = 20000;
	for (int id = 0; id < n; id++) {
		rf_window win;
		rfi_window_for(&p, 2, (uint64_t)id, 400, 300, &win);
		flips += win.flip;
	}
	/* binomial: sd = sqrt(n p (1 - p)) = 65; allow 5 sd */
	cr_assert(abs(flips - 6000) < 325, "%d flips of %d", flips, n);
}

static char *dir;
static void setup(void) { dir = tu_tree("aug", 3, 10); }
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

Test(augment, rrc_same_across_threads_and_runs, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	cfg.epochs = 2;
	cfg.seed = 11;
	size_t n1, n2, n3;
	uint8_t *a = tu_drain_bytes(&cfg, &n1, NULL);
	cfg.threads = 1;
	cfg.io_depth = 1;
	uint8_t *b = tu_drain_bytes(&cfg, &n2, NULL);
	cfg.threads = 4;
	cfg.io_depth = 64;
	uint8_t *c = tu_drain_bytes(&cfg, &n3, NULL);
	cr_assert(n1 == n2 && n1 == n3);
	cr_assert_eq(memcmp(a, b, n1), 0);
	cr_assert_eq(memcmp(a, c, n1), 0);
	/* epoch 1 crops differently from epoch 0 (same samples, another order
	 * and other boxes): the two halves differ */
	cr_assert_neq(memcmp(a, a + n1 / 2, n1 / 2), 0);
	free(a);
	free(b);
	free(c);
}

Test(augment, flip_mirrors_exactly, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.shuffle = 0;
	size_t n1, n2;
	uint8_t *a = tu_drain_bytes(&cfg, &n1, NULL);
	cfg.flip_p = 1.0f;
	uint8_t *b = tu_drain_bytes(&cfg, &n2, NULL);
	cr_assert_eq(n1, n2);
	int C = cfg.crop;
	for (size_t s = 0; s < n1 / ((size_t)C * C * 3); s++)
		for (int y = 0; y < C; y++)
			for (int x = 0; x < C; x++)
				for (int c = 0; c < 3; c++) {
					size_t base = s * C * C * 3;
					cr_assert_eq(a[base + ((size_t)y * C + x) * 3 + c],
						     b[base + ((size_t)y * C + (C - 1 - x)) * 3 + c]);
				}
	free(a);
	free(b);
}

/* IEEE half to float, for checking. */
static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? INFINITY : ldexpf((float)(m | 1024), e - 25);
	return (h & 0x8000) ? -v : v;
}

Test(augment, float_output_is_normalized_uint8, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	size_t nu, nf, nh, nc;
	uint8_t *u = tu_drain_bytes(&cfg, &nu, NULL);
	float mean[3] = { 0.485f, 0.456f, 0.406f }, sd[3] = { 0.229f, 0.224f, 0.225f };
	memcpy(cfg.mean, mean, sizeof(mean));
	memcpy(cfg.std, sd, sizeof(sd));
	cfg.dtype = RF_DTYPE_FLOAT32;
	float *f = (float *)tu_drain_bytes(&cfg, &nf, NULL);
	cfg.dtype = RF_DTYPE_FLOAT16;
	uint16_t *h = (uint16_t *)tu_drain_bytes(&cfg, &nh, NULL);
	cfg.layout = RF_LAYOUT_CHW;
	uint16_t *hc = (uint16_t *)tu_drain_bytes(&cfg, &nc, NULL);
	cr_assert_eq(nf, nu * 4);
	cr_assert_eq(nh, nu * 2);
	cr_assert_eq(nc, nu * 2);
	int C = cfg.crop;
	size_t per = (size_t)C * C * 3;
	for (size_t i = 0; i < nu; i++) {
		int c = (int)(i % 3);
		float want = ((float)u[i] / 255.0f - mean[c]) / sd[c];
		cr_assert_float_eq(f[i], want, 1e-6, "float32 at %zu: %f vs %f", i, f[i], want);
		cr_assert_float_eq(half_to_float(h[i]), want, fabsf(want) * 1e-3f + 1e-3f,
				   "float16 at %zu", i);
		/* CHW: plane c, row y, column x of sample s */
		size_t s = i / per, px = (i % per) / 3;
		cr_assert_eq(hc[s * per + (size_t)c * C * C + px], h[i], "CHW is HWC transposed");
	}
	free(u);
	free(f);
	free(h);
	free(hc);
}

Test(augment, out_of_order_delivers_the_same_batches, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.batch_size = 4;
	cfg.epochs = 3;
	cfg.prefetch = 3;
	size_t n;
	uint8_t *ordered = tu_drain_bytes(&cfg, &n, NULL);
	size_t per_batch = 4 * (size_t)cfg.crop * cfg.crop * 3;
	cfg.in_order = 0;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	uint64_t nb = 24; /* 30 samples -> 8 batches (the last of 2) x 3 epochs */
	uint8_t *seen = calloc(nb, 1);
	rf_batch *b;
	int r;
	while ((r = rf_loader_next(l, &b)) == 0) {
		cr_assert_lt(b->index, nb);
		cr_assert(!seen[b->index], "batch %llu twice", (unsigned long long)b->index);
		seen[b->index] = 1;
		/* the same bytes as the in-order run's batch of that index */
		size_t off = 0;
		for (uint64_t k = 0; k < b->index; k++)
			off += (k % 8 == 7 ? 2 : 4) * (per_batch / 4);
		cr_assert_eq(memcmp(ordered + off, b->data, b->count * b->sample_bytes), 0);
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF);
	for (uint64_t k = 0; k < nb; k++)
		cr_assert(seen[k], "batch %llu missing", (unsigned long long)k);
	rf_loader_destroy(l);
	free(seen);
	free(ordered);
}
