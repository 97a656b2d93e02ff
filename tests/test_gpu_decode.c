/* test_gpu_decode.c - JPEG decode on the GPU's engines (cfg.decode). Without
 * a device (this machine, CI): decode = gpu is refused naming the setting,
 * auto decodes on the CPU and says so in the stats. With one (and the
 * engines, and libnvjpeg.so.13): GPU samples stay within a mean absolute
 * difference of 1.5 per channel of the CPU's at the same decode scale (the
 * GPU path decodes at full scale, and so does the pool beside it), for center
 * crops and for RandomResizedCrop + flip (the same windows: a wrong window
 * differs by far more); float outputs are the value tables of the GPU's bytes exactly;
 * images the engines refuse go to the compute pool and come out as the
 * CPU's bytes exactly; bad JPEGs are reported as the CPU path reports them;
 * auto splits the samples between both; destroy with decodes in flight. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rf_config.h"
#include "testutil.h"
#include "transform/resample.h"
#if RF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static char *dir;
static void config(rf_config *cfg);

#if RF_HAVE_CUDA
/* 1 when the engines can be used (a device, libnvjpeg.so.13, JPEG engines
 * on the GPU); else why not in why[]. */
static int have_engines(char *why, size_t len)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		snprintf(why, len, "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 0;
	}
	rf_config cfg;
	config(&cfg);
	cfg.device = 0;
	cfg.decode = RF_DECODE_GPU;
	rf_loader *l;
	char err[200];
	int r = rf_loader_create(&l, &cfg, err, sizeof(err));
	if (r == -ENOTSUP) {
		snprintf(why, len, "no GPU JPEG decode here: %s", err);
		return 0;
	}
	cr_assert_eq(r, 0, "%s", err);
	rf_loader_destroy(l);
	return 1;
}
#endif

/* Photos big enough for the engines: 3 classes x 8, 160..520 pixels a side. */
static void setup(void)
{
	dir = tu_tmpdir("gpudec");
	char rel[64];
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 8; i++) {
			uint64_t seed = (uint64_t)c * 100 + (uint64_t)i + 1;
			int w = 160 + (int)(seed * 37 % 360), h = 160 + (int)(seed * 53 % 300);
			snprintf(rel, sizeof(rel), "c%d/p%02d.jpg", c, i);
			tu_jpeg(dir, rel, w, h, seed);
		}
}

static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

static void config(rf_config *cfg)
{
	tu_config(cfg, dir);
	cfg->resize = 144;
	cfg->crop = 128;
	cfg->batch_size = 6;
	cfg->io_depth = 64;
	cfg->read_pool_bytes = 8 << 20;
}

Test(gpu_decode, refused_or_cpu_without_engines, .init = setup, .fini = teardown)
{
	rf_config cfg;
	config(&cfg);
	rf_loader *l = NULL;
	char err[512];
	cfg.decode = RF_DECODE_GPU; /* no device set */
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "decode = gpu"), "the message names the setting: %s", err);
	cfg.raw = 1;
	cfg.device = 0;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG, "raw: %s", err);
	cfg.raw = 0;
	cfg.decode = 7;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "decode"), "%s", err);

	/* auto without a device is the CPU path, byte for byte */
	config(&cfg);
	size_t n1, n2;
	rf_stats st;
	uint8_t *cpu = tu_drain_bytes(&cfg, &n1, NULL);
	cfg.decode = RF_DECODE_AUTO;
	uint8_t *aut = tu_drain_bytes(&cfg, &n2, &st);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(cpu, aut, n1), 0);
	cr_assert_eq(st.decode_path, RF_DECODE_CPU);
	cr_assert_eq(st.gpu_decodes, 0);
	cr_assert_eq(st.cpu_decodes, st.samples_total);
	free(cpu);
	free(aut);
	tu_assert_no_leaks();
}

#if RF_HAVE_CUDA
#define NEED_ENGINES()                                 \
	char why_[256];                                \
	if (!have_engines(why_, sizeof(why_)))         \
		cr_skip_test("%s", why_)

typedef struct run {
	uint8_t *px;      /* every sample, in delivery order */
	uint64_t *ids;
	int32_t *labels;
	size_t n, sample_bytes;
	rf_stats st;
} run;

/* Every sample of cfg's run, from the device when cfg->device >= 0. */
static run drain(rf_config *cfg)
{
	run r = { 0 };
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "create: %s", err);
	size_t cap = 64;
	r.px = NULL;
	r.ids = malloc(cap * sizeof(*r.ids));
	r.labels = malloc(cap * sizeof(*r.labels));
	rf_batch *b;
	int ret;
	while ((ret = rf_loader_next(l, &b)) == 0) {
		size_t sb = cfg->device >= 0 ? b->device_sample_bytes : b->sample_bytes;
		r.sample_bytes = sb;
		while (r.n + b->count > cap) {
			cap *= 2;
			r.ids = realloc(r.ids, cap * sizeof(*r.ids));
			r.labels = realloc(r.labels, cap * sizeof(*r.labels));
		}
		r.px = realloc(r.px, (r.n + b->count) * sb);
		if (cfg->device >= 0) {
			cr_assert_eq(rf_batch_sync(b), 0);
			cr_assert_eq(cudaMemcpy(r.px + r.n * sb, b->device_data, b->count * sb,
						cudaMemcpyDeviceToHost), cudaSuccess);
		} else {
			memcpy(r.px + r.n * sb, b->data, b->count * sb);
		}
		memcpy(r.ids + r.n, b->ids, b->count * sizeof(*r.ids));
		memcpy(r.labels + r.n, b->labels, b->count * sizeof(*r.labels));
		r.n += b->count;
		rf_batch_release(l, b);
	}
	cr_assert_eq(ret, RF_EOF, "next: %s: %s", rf_strerror(ret), rf_loader_error(l));
	rf_loader_stats(l, &r.st);
	rf_loader_destroy(l);
	return r;
}

static void run_free(run *r)
{
	free(r->px);
	free(r->ids);
	free(r->labels);
}

/* The mean absolute difference of two runs' pixels (uint8 HWC) in each
 * channel, over all samples; the largest of the three. *worst_sample gets
 * the largest of one sample's. */
static double channel_mad(const run *a, const run *b, int crop, double *worst_sample)
{
	double sum[3] = { 0, 0, 0 }, worst = 0;
	size_t px = (size_t)crop * crop;
	for (size_t i = 0; i < a->n; i++)
		for (int c = 0; c < 3; c++) {
			double s = 0;
			const uint8_t *x = a->px + i * a->sample_bytes, *y = b->px + i * b->sample_bytes;
			for (size_t p = 0; p < px; p++)
				s += fabs((double)x[p * 3 + c] - (double)y[p * 3 + c]);
			sum[c] += s;
			worst = fmax(worst, s / (double)px);
		}
	if (worst_sample)
		*worst_sample = worst;
	double n = (double)a->n * (double)px;
	return fmax(sum[0], fmax(sum[1], sum[2])) / n;
}

static void assert_same_samples(const run *a, const run *b)
{
	cr_assert_eq(a->n, b->n);
	cr_assert_eq(memcmp(a->ids, b->ids, a->n * sizeof(*a->ids)), 0, "the same samples in the same order");
	cr_assert_eq(memcmp(a->labels, b->labels, a->n * sizeof(*a->labels)), 0);
}
#endif

Test(gpu_decode, gpu_pixels_close_to_cpu_pixels, .init = setup, .fini = teardown)
{
#if RF_HAVE_CUDA
	NEED_ENGINES();
	for (int rrc = 0; rrc < 2; rrc++) {
		rf_config cfg;
		config(&cfg);
		cfg.epochs = 2;
		cfg.random_resized_crop = rrc;
		cfg.flip_p = rrc ? 0.5f : 0.0f;
		run scaled = drain(&cfg);
		cfg.no_scaled_decode = 1;
		run cpu = drain(&cfg);
		cfg.no_scaled_decode = 0;
		cfg.device = 0;
		cfg.decode = RF_DECODE_GPU;
		run gpu = drain(&cfg);
		assert_same_samples(&cpu, &gpu);
		cr_assert_eq(gpu.st.decode_path, RF_DECODE_GPU);
		cr_assert_eq(gpu.st.gpu_decodes, gpu.n, "every baseline photo on the engines (%llu of %zu)",
			     (unsigned long long)gpu.st.gpu_decodes, gpu.n);
		double worst, worst_scaled;
		double mad = channel_mad(&cpu, &gpu, cfg.crop, &worst);
		double mad_scaled = channel_mad(&cpu, &scaled, cfg.crop, &worst_scaled);
		cr_log_info("%s: mean absolute difference per channel GPU vs CPU %.3f (worst sample "
			    "%.3f); the CPU's own scaled decode vs full scale %.3f (worst %.3f)",
			    rrc ? "rrc" : "center", mad, worst, mad_scaled, worst_scaled);
		run_free(&scaled);
		cr_assert(mad <= 1.5, "%s: mean absolute difference %.3f > 1.5", rrc ? "rrc" : "center", mad);
		run_free(&cpu);
		run_free(&gpu);
	}
#else
	cr_skip_test("CUDA support is not built in");
#endif
}

Test(gpu_decode, float_outputs_are_the_tables_of_the_bytes, .init = setup, .fini = teardown)
{
#if RF_HAVE_CUDA
	NEED_ENGINES();
	rf_config cfg;
	config(&cfg);
	cfg.device = 0;
	cfg.decode = RF_DECODE_GPU;
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	run u8 = drain(&cfg);
	/* normalisation goes with float output only (uint8 refuses it) */
	float mean[3] = { 0.485f, 0.456f, 0.406f }, sd[3] = { 0.229f, 0.224f, 0.225f };
	memcpy(cfg.mean, mean, sizeof(mean));
	memcpy(cfg.std, sd, sizeof(sd));
	rf_output o;
	for (int t = 1; t <= 2; t++)
		for (int layout = 0; layout < 2; layout++) {
			cfg.dtype = (rf_dtype)t;
			cfg.layout = (rf_layout)layout;
			run f = drain(&cfg);
			assert_same_samples(&u8, &f);
			rfi_output_init(&o, cfg.crop, cfg.dtype, cfg.layout, cfg.mean, cfg.std);
			size_t plane = (size_t)cfg.crop * cfg.crop;
			for (size_t i = 0; i < f.n; i++)
				for (size_t p = 0; p < plane; p++)
					for (int c = 0; c < 3; c++) {
						uint8_t v = u8.px[i * u8.sample_bytes + p * 3 + c];
						size_t at = layout ? c * plane + p : p * 3 + c;
						const uint8_t *s = f.px + i * f.sample_bytes;
						if (t == RF_DTYPE_FLOAT32)
							cr_assert_eq(memcmp(s + at * 4, &o.lut32[c][v], 4), 0,
								     "f32 layout %d sample %zu", layout, i);
						else
							cr_assert_eq(memcmp(s + at * 2, &o.lut16[c][v], 2), 0,
								     "f16 layout %d sample %zu", layout, i);
					}
			run_free(&f);
		}
	run_free(&u8);
#else
	cr_skip_test("CUDA support is not built in");
#endif
}

Test(gpu_decode, refused_images_go_to_the_compute_pool, .init = setup, .fini = teardown)
{
#if RF_HAVE_CUDA
	NEED_ENGINES();
	/* beside the baseline photos: progressive, CMYK, YCCK (the engines
	 * refuse those) and 4:4:4 / gray (they may take those) */
	tu_kind kinds[] = { TU_PROGRESSIVE_420, TU_CMYK, TU_YCCK, TU_BASELINE_444, TU_GRAY };
	char rel[64];
	for (int k = 0; k < 5; k++) {
		snprintf(rel, sizeof(rel), "c1/odd%d.jpg", k);
		tu_jpeg_kind(dir, rel, 300 + 20 * k, 220, 900 + (uint64_t)k, kinds[k]);
	}
	rf_config cfg;
	config(&cfg);
	cfg.no_scaled_decode = 1; /* the CPU at full scale, as the engines decode */
	run cpu = drain(&cfg);
	cfg.device = 0;
	cfg.decode = RF_DECODE_GPU;
	cfg.threads = 1;
	run gpu = drain(&cfg);
	assert_same_samples(&cpu, &gpu);
	cr_assert_geq(gpu.st.cpu_decodes, 3, "progressive, CMYK and YCCK decoded by the pool (%llu)",
		      (unsigned long long)gpu.st.cpu_decodes);
	cr_assert_eq(gpu.st.cpu_decodes + gpu.st.gpu_decodes, gpu.n);
	size_t same = 0;
	for (size_t i = 0; i < gpu.n; i++)
		same += !memcmp(cpu.px + i * cpu.sample_bytes, gpu.px + i * gpu.sample_bytes, cpu.sample_bytes);
	cr_assert_geq(same, gpu.st.cpu_decodes, "the pool's samples are the CPU's bytes (%zu identical)", same);
	cr_assert(channel_mad(&cpu, &gpu, cfg.crop, NULL) <= 1.5);
	run_free(&cpu);
	run_free(&gpu);
#else
	cr_skip_test("CUDA support is not built in");
#endif
}

#if RF_HAVE_CUDA
typedef struct reports {
	int n;
	char line[16][384];
} reports;

static void record(void *user, const char *path, int err, const char *reason)
{
	reports *r = user;
	if (r->n < 16)
		snprintf(r->line[r->n++], sizeof(r->line[0]), "%s %d %s", path, err, reason);
}

static int by_text(const void *a, const void *b)
{
	return strcmp(a, b);
}
#endif

Test(gpu_decode, bad_jpegs_reported_as_on_the_cpu, .init = setup, .fini = teardown)
{
#if RF_HAVE_CUDA
	NEED_ENGINES();
	size_t len;
	uint8_t *good = tu_read(dir, "c0/p00.jpg", &len);
	tu_write(dir, "c0/truncated.jpg", good, len / 2);
	uint8_t junk[600];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	tu_write(dir, "c1/junk.jpg", junk, sizeof(junk));
	memcpy(junk, good, 200); /* a real header, then garbage */
	tu_write(dir, "c2/garbage.jpg", junk, sizeof(junk));
	free(good);
	reports a = { 0 }, b = { 0 };
	rf_config cfg;
	config(&cfg);
	cfg.on_sample_error = record;
	cfg.user = &a;
	run cpu = drain(&cfg);
	cfg.user = &b;
	cfg.device = 0;
	cfg.decode = RF_DECODE_GPU;
	run gpu = drain(&cfg);
	assert_same_samples(&cpu, &gpu);
	cr_assert_eq(a.n, 3, "%d reports", a.n);
	cr_assert_eq(b.n, a.n);
	qsort(a.line, (size_t)a.n, sizeof(a.line[0]), by_text);
	qsort(b.line, (size_t)b.n, sizeof(b.line[0]), by_text);
	for (int i = 0; i < a.n; i++)
		cr_assert_str_eq(b.line[i], a.line[i]);
	run_free(&cpu);
	run_free(&gpu);
#else
	cr_skip_test("CUDA support is not built in");
#endif
}

Test(gpu_decode, auto_splits_between_engines_and_pool, .init = setup, .fini = teardown)
{
#if RF_HAVE_CUDA
	NEED_ENGINES();
	rf_config cfg;
	config(&cfg);
	cfg.epochs = 6;
	cfg.io_depth = 16; /* groups of 4, a backlog of 4: the pool gets the rest */
	cfg.no_scaled_decode = 1;
	run cpu = drain(&cfg);
	cfg.no_scaled_decode = 0;
	cfg.device = 0;
	cfg.decode = RF_DECODE_AUTO;
	run aut = drain(&cfg);
	assert_same_samples(&cpu, &aut);
	cr_assert_eq(aut.st.decode_path, RF_DECODE_AUTO);
	cr_assert_eq(aut.st.cpu_decodes + aut.st.gpu_decodes, aut.n);
	cr_assert_gt(aut.st.gpu_decodes, 0);
	cr_log_info("auto: %llu samples on the engines, %llu in the pool",
		    (unsigned long long)aut.st.gpu_decodes, (unsigned long long)aut.st.cpu_decodes);
	cr_assert(channel_mad(&cpu, &aut, cfg.crop, NULL) <= 1.5);
	run_free(&cpu);
	run_free(&aut);
#else
	cr_skip_test("CUDA support is not built in");
#endif
}

Test(gpu_decode, destroy_with_decodes_in_flight, .init = setup, .fini = teardown)
{
#if RF_HAVE_CUDA
	NEED_ENGINES();
	for (int round = 0; round < 8; round++) {
		rf_config cfg;
		config(&cfg);
		cfg.device = 0;
		cfg.decode = round % 2 ? RF_DECODE_AUTO : RF_DECODE_GPU;
		cfg.epochs = 0;
		cfg.prefetch = 6;
		tu_take_then_destroy(&cfg, round % 3);
	}
#else
	cr_skip_test("CUDA support is not built in");
#endif
}
