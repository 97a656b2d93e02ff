/* test_sample_fn.c - the caller's per-sample step (cfg.sample_fn): it meets
 * every sample once per epoch with the sample's id, label, place and shape;
 * what it writes through the view's strides is what the batch holds (HWC
 * and CHW, uint8 and float32); its random draws (rf_sample_rand) give the
 * same batches for the same seed whatever the thread count, and others for
 * another seed; a non-zero return makes the sample a bad sample with the
 * hook's reason and code (replaced, or rf_loader_next() fails); and the
 * modes without pixels on the host refuse a hook at create. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define CLASSES 3
#define PER_CLASS 7
#define SAMPLES (CLASSES * PER_CLASS)
#define EPOCHS 2

static char *dir;
static void setup(void) { dir = tu_tree("sample_fn", CLASSES, PER_CLASS); }
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

/* ---- every sample, once per epoch, with what it is --------------------- */

typedef struct seen_log {
	atomic_int calls[EPOCHS][SAMPLES];
	atomic_int label[SAMPLES];      /* the label the hook was told, + 1 */
	atomic_int bad_view;            /* views whose shape or strides were wrong */
} seen_log;

static int note_sample(void *user, rf_sample_view *s)
{
	seen_log *log = user;
	int ok = s->height == 40 && s->width == 40 && s->channels == 3 && s->elem_bytes == 1 &&
		 s->dtype == RF_DTYPE_UINT8 && s->layout == RF_LAYOUT_HWC && s->bytes == 40 * 40 * 3 &&
		 s->stride_c == 1 && s->stride_x == 3 && s->stride_y == 120 && s->data &&
		 s->reason && s->reason_len > 0 && s->reason[0] == '\0' && s->index < 8 &&
		 s->epoch < EPOCHS && s->id < SAMPLES && s->batch / 3 == s->epoch;
	if (!ok) {
		atomic_fetch_add(&log->bad_view, 1);
		return 0;
	}
	atomic_fetch_add(&log->calls[s->epoch][s->id], 1);
	atomic_store(&log->label[s->id], s->label + 1);
	return 0;
}

Test(sample_fn, meets_every_sample_once_per_epoch, .init = setup, .fini = teardown)
{
	static seen_log log; /* zero */
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = EPOCHS;
	cfg.sample_fn = note_sample;
	cfg.sample_user = &log;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r, batches = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		/* the hook ran on every place before the batch was handed out */
		for (uint32_t i = 0; i < b->count; i++) {
			cr_assert_eq(atomic_load(&log.calls[b->epoch][b->ids[i]]), 1,
				     "sample %llu of epoch %u", (unsigned long long)b->ids[i], b->epoch);
			cr_assert_eq(atomic_load(&log.label[b->ids[i]]) - 1, b->labels[i],
				     "the hook was told the sample's label");
		}
		rf_batch_release(l, b);
		batches++;
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(batches, EPOCHS * 3);
	cr_assert_eq(atomic_load(&log.bad_view), 0, "every view had the batch's shape and strides");
	for (int e = 0; e < EPOCHS; e++)
		for (int id = 0; id < SAMPLES; id++)
			cr_assert_eq(atomic_load(&log.calls[e][id]), 1, "epoch %d sample %d", e, id);
	rf_loader_destroy(l);
}

/* ---- what the hook writes is what the batch holds ---------------------- */

/* Element (y, x, c) of sample id: a value that names all four. */
static float pattern(uint64_t id, uint32_t y, uint32_t x, uint32_t c)
{
	return (float)((id * 7 + y * 3 + x * 5 + c * 11) % 251);
}

static int write_pattern(void *user, rf_sample_view *s)
{
	(void)user;
	for (uint32_t y = 0; y < s->height; y++)
		for (uint32_t x = 0; x < s->width; x++)
			for (uint32_t c = 0; c < s->channels; c++) {
				uint8_t *e = s->data + y * s->stride_y + x * s->stride_x + c * s->stride_c;
				float v = pattern(s->id, y, x, c);
				if (s->dtype == RF_DTYPE_FLOAT32)
					memcpy(e, &v, sizeof(v));
				else
					*e = (uint8_t)v;
			}
	return 0;
}

static void check_pattern(rf_dtype dtype, rf_layout layout)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.dtype = dtype;
	cfg.layout = layout;
	cfg.flip_p = 0.5f; /* the hook comes after the flip: its pixels stay as written */
	cfg.sample_fn = write_pattern;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			const uint8_t *smp = b->data + i * b->sample_bytes;
			for (uint32_t y = 0; y < 40; y++)
				for (uint32_t x = 0; x < 40; x++)
					for (uint32_t c = 0; c < 3; c++) {
						size_t at = layout == RF_LAYOUT_CHW ? (c * 40 + y) * 40 + x
										    : (y * 40 + x) * 3 + c;
						float want = pattern(b->ids[i], y, x, c), got;
						if (dtype == RF_DTYPE_FLOAT32)
							memcpy(&got, smp + at * 4, 4);
						else
							got = smp[at];
						cr_assert_eq(got, want, "sample %llu (%u, %u, %u)",
							     (unsigned long long)b->ids[i], y, x, c);
					}
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	rf_loader_destroy(l);
}

Test(sample_fn, writes_land_in_the_batch_hwc_uint8, .init = setup, .fini = teardown)
{
	check_pattern(RF_DTYPE_UINT8, RF_LAYOUT_HWC);
}

Test(sample_fn, writes_land_in_the_batch_chw_float32, .init = setup, .fini = teardown)
{
	check_pattern(RF_DTYPE_FLOAT32, RF_LAYOUT_CHW);
}

/* ---- the sample's own random draws ------------------------------------- */

/* Cutout and noise: a random 12 x 12 box set to zero, and a random offset
 * added to one random channel of every pixel. */
static int cutout_noise(void *user, rf_sample_view *s)
{
	(void)user;
	uint32_t x0 = (uint32_t)(rf_sample_uniform(s) * (s->width - 12));
	uint32_t y0 = (uint32_t)(rf_sample_uniform(s) * (s->height - 12));
	for (uint32_t y = y0; y < y0 + 12; y++)
		for (uint32_t x = x0; x < x0 + 12; x++)
			for (uint32_t c = 0; c < 3; c++)
				s->data[y * s->stride_y + x * s->stride_x + c * s->stride_c] = 0;
	for (uint32_t y = 0; y < s->height; y++)
		for (uint32_t x = 0; x < s->width; x++) {
			uint64_t r = rf_sample_rand(s);
			s->data[y * s->stride_y + x * s->stride_x + (r % 3) * s->stride_c] += (uint8_t)(r >> 8);
		}
	return 0;
}

Test(sample_fn, draws_depend_on_the_seed_not_the_threads, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = EPOCHS;
	cfg.random_resized_crop = 1;
	cfg.flip_p = 0.5f;
	cfg.seed = 11;
	cfg.sample_fn = cutout_noise;
	size_t n1, n2, n4, plain_n, other_n;
	cfg.threads = 1;
	cfg.io_depth = 4;
	uint8_t *one = tu_drain_bytes(&cfg, &n1, NULL);
	cfg.threads = 2;
	cfg.io_depth = 32;
	uint8_t *two = tu_drain_bytes(&cfg, &n2, NULL);
	cfg.threads = 4;
	cfg.in_order = 1;
	cfg.prefetch = 2;
	uint8_t *four = tu_drain_bytes(&cfg, &n4, NULL);
	cr_assert_eq(n1, n2);
	cr_assert_eq(n1, n4);
	cr_assert_eq(memcmp(one, two, n1), 0, "1 and 2 threads give the same batches");
	cr_assert_eq(memcmp(one, four, n1), 0, "1 and 4 threads give the same batches");

	/* the hook did something, and its draws follow the seed */
	cfg.sample_fn = NULL;
	uint8_t *plain = tu_drain_bytes(&cfg, &plain_n, NULL);
	cr_assert_eq(plain_n, n1);
	cr_assert_neq(memcmp(one, plain, n1), 0);
	cfg.sample_fn = cutout_noise;
	cfg.seed = 12;
	uint8_t *other = tu_drain_bytes(&cfg, &other_n, NULL);
	cr_assert_eq(other_n, n1);
	cr_assert_neq(memcmp(one, other, n1), 0, "another seed, other draws");
	free(one);
	free(two);
	free(four);
	free(plain);
	free(other);
}

/* The draws are a pure function of (seed, epoch, id): the same sample in
 * the same epoch gets the same numbers, another epoch others. */
typedef struct draw_log {
	atomic_uint_fast64_t first[EPOCHS][SAMPLES];
} draw_log;

static int note_draw(void *user, rf_sample_view *s)
{
	draw_log *log = user;
	uint64_t a = rf_sample_rand(s), b = rf_sample_rand(s);
	atomic_store(&log->first[s->epoch][s->id], a ^ (b << 1) ^ 1); /* never 0 in practice */
	return 0;
}

Test(sample_fn, draws_are_per_sample_and_epoch, .init = setup, .fini = teardown)
{
	static draw_log a, b;
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = EPOCHS;
	cfg.sample_fn = note_draw;
	cfg.sample_user = &a;
	size_t n;
	free(tu_drain_bytes(&cfg, &n, NULL));
	cfg.sample_user = &b;
	cfg.threads = 3;
	cfg.shuffle = 0; /* another order: each sample's draws stay its own */
	free(tu_drain_bytes(&cfg, &n, NULL));
	int same_across_epochs = 0;
	for (int id = 0; id < SAMPLES; id++) {
		for (int e = 0; e < EPOCHS; e++) {
			cr_assert_neq(atomic_load(&a.first[e][id]), 0);
			cr_assert_eq(atomic_load(&a.first[e][id]), atomic_load(&b.first[e][id]),
				     "sample %d epoch %d: the draws follow the sample, not the order", id, e);
		}
		same_across_epochs += atomic_load(&a.first[0][id]) == atomic_load(&a.first[1][id]);
	}
	cr_assert_eq(same_across_epochs, 0, "another epoch, other draws");
}

/* ---- a refusal is a bad sample ----------------------------------------- */

typedef struct bad_log {
	atomic_int n, wrong_err, wrong_reason;
} bad_log;

static int refuse_fifths(void *user, rf_sample_view *s)
{
	(void)user;
	if (s->id % 5)
		return 0;
	snprintf(s->reason, s->reason_len, "cutout refused sample %llu", (unsigned long long)s->id);
	return -EIO;
}

static void note_bad(void *user, const char *path, int err, const char *reason)
{
	bad_log *log = user;
	atomic_fetch_add(&log->n, 1);
	if (err != -EIO)
		atomic_fetch_add(&log->wrong_err, 1);
	if (!strstr(reason, "sample_fn: cutout refused sample ") || !strstr(path, ".jpg"))
		atomic_fetch_add(&log->wrong_reason, 1);
}

Test(sample_fn, a_refusal_is_a_bad_sample_replaced, .init = setup, .fini = teardown)
{
	static bad_log log;
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = EPOCHS;
	cfg.sample_fn = refuse_fifths;
	cfg.on_sample_error = note_bad;
	cfg.user = &log;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r, samples = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++)
			cr_assert_neq(b->ids[i] % 5, 0, "refused sample %llu delivered",
				      (unsigned long long)b->ids[i]);
		samples += (int)b->count;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(samples, EPOCHS * SAMPLES, "every place filled by a replacement");
	int refused = (SAMPLES + 4) / 5; /* ids 0, 5, 10, 15, 20 */
	rf_stats st;
	rf_loader_stats(l, &st);
	cr_assert_eq(st.bad_samples, (uint64_t)(EPOCHS * refused));
	cr_assert_eq(atomic_load(&log.n), EPOCHS * refused);
	cr_assert_eq(atomic_load(&log.wrong_err), 0, "err is the hook's return");
	cr_assert_eq(atomic_load(&log.wrong_reason), 0, "the reason is the hook's, named");
	rf_loader_destroy(l);
}

static int refuse_all_positive(void *user, rf_sample_view *s)
{
	(void)user;
	(void)s;
	return 3;
}

Test(sample_fn, a_refusal_fails_next_under_on_error_fail, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.sample_fn = refuse_all_positive;
	cfg.on_error = RF_ON_ERROR_FAIL;
	tu_bad_log log = { 0 };
	cfg.on_sample_error = tu_on_bad;
	cfg.user = &log;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), RF_EBADSAMPLE);
	cr_assert(strstr(rf_loader_error(l), "sample_fn returned 3"), "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	cr_assert_geq(log.n, 1);
	cr_assert_str_eq(log.reason, "sample_fn returned 3");
}

/* ---- modes without pixels on the host refuse a hook -------------------- */

static int nothing(void *user, rf_sample_view *s)
{
	(void)user;
	(void)s;
	return 0;
}

static void refused(rf_config *cfg, const char *what)
{
	cfg->sample_fn = nothing;
	rf_loader *l = (rf_loader *)&l;
	char err[512] = "";
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), RF_ECONFIG, "%s: %s", what, err);
	cr_assert_null(l);
	cr_assert(strstr(err, "sample_fn") && strstr(err, what), "%s: the message says why: %s",
		  what, err);
}

Test(sample_fn, modes_without_host_pixels_refuse_it, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.decode = RF_DECODE_GPU;
	cfg.device = 0; /* checked before any device is looked for: no GPU needed */
	refused(&cfg, "decode = gpu");
	tu_config(&cfg, dir);
	cfg.decode = RF_DECODE_AUTO; /* the engines would take some samples */
	refused(&cfg, "decode = auto");
	tu_config(&cfg, dir);
	cfg.raw = 1;
	refused(&cfg, "raw");
	tu_config(&cfg, dir);
	cfg.seq_len = 64;
	refused(&cfg, "token sources");
	tu_config(&cfg, dir);
	cfg.fetch_only = 1;
	refused(&cfg, "fetch_only");
	/* and without the hook, fetch_only is as before */
	tu_config(&cfg, dir);
	cfg.fetch_only = 1;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
}
