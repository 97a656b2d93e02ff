/* sample_hook.c - an augmentation of your own on ringfeed's compute threads:
 * per-pixel noise and cutout (torchvision's RandomErasing with value 0),
 * applied to each sample in its place in the batch, after ringfeed's own
 * RandomResizedCrop and flip, with the sample's own random stream so that
 * the same seed gives the same batches whatever the thread count.
 *
 * Build (after installing ringfeed):
 *   cc -O2 sample_hook.c -o sample_hook $(pkg-config --cflags --libs ringfeed)
 * Run:
 *   ./sample_hook /path/to/imagefolder
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ringfeed.h>

/* What the hook reads: shared by every compute thread, so never written
 * while the loader runs. */
typedef struct augment {
	double cutout_p; /* probability of a cutout */
	uint32_t side;   /* the cut square's side, pixels */
	int noise;       /* uint8 output: each value moves by up to +-noise */
} augment;

/* Called by several compute threads at once, each with a sample of its own:
 * it writes nothing but that sample and reads only *user, so it needs no
 * lock. Every random number comes from rf_sample_rand / rf_sample_uniform,
 * never from rand() or a shared state: that is what makes the batches
 * depend on the seed alone. */
static int cutout_noise(void *user, rf_sample_view *s)
{
	const augment *a = user;
	if (a->side > s->width || a->side > s->height) {
		/* a non-zero return makes this a bad sample (cfg.on_error) */
		snprintf(s->reason, s->reason_len, "cutout side %u exceeds the %ux%u sample",
			 a->side, s->width, s->height);
		return -EINVAL;
	}
	if (s->dtype == RF_DTYPE_UINT8 && a->noise > 0) {
		for (uint32_t y = 0; y < s->height; y++)
			for (uint32_t x = 0; x < s->width; x++)
				for (uint32_t c = 0; c < s->channels; c++) {
					uint8_t *v = s->data + y * s->stride_y + x * s->stride_x +
						     c * s->stride_c;
					int d = (int)(rf_sample_rand(s) % (2u * a->noise + 1)) - a->noise;
					int n = *v + d;
					*v = (uint8_t)(n < 0 ? 0 : n > 255 ? 255 : n);
				}
	}
	if (rf_sample_uniform(s) < a->cutout_p) {
		uint32_t x0 = (uint32_t)(rf_sample_uniform(s) * (s->width - a->side + 1));
		uint32_t y0 = (uint32_t)(rf_sample_uniform(s) * (s->height - a->side + 1));
		/* all-zero bytes are 0 in every dtype: black for uint8, the mean
		 * for normalised float output (what RandomErasing after Normalize
		 * gives) */
		for (uint32_t y = y0; y < y0 + a->side; y++)
			for (uint32_t x = x0; x < x0 + a->side; x++)
				for (uint32_t c = 0; c < s->channels; c++)
					memset(s->data + y * s->stride_y + x * s->stride_x + c * s->stride_c,
					       0, s->elem_bytes);
	}
	return 0;
}

/* Bad samples, the hook's refusals among them, as they happen. */
static void on_bad(void *user, const char *path, int err, const char *reason)
{
	(void)user;
	fprintf(stderr, "bad sample %s: %s (%s)\n", path, reason, rf_strerror(err));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	augment aug = { .cutout_p = 0.5, .side = 56, .noise = 8 };
	rf_config cfg;
	rf_config_default(&cfg); /* always first: every field gets its default */
	cfg.source = argv[1];
	cfg.batch_size = 32;
	cfg.random_resized_crop = 1; /* ringfeed's own steps come first */
	cfg.flip_p = 0.5f;
	cfg.seed = 1;
	cfg.sample_fn = cutout_noise; /* then this one, on the same thread */
	cfg.sample_user = &aug;
	cfg.on_sample_error = on_bad;

	char err[512];
	rf_loader *loader;
	int ret = rf_loader_create(&loader, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rf_loader_create: %s (%s)\n", err, rf_strerror(ret));
		return 1;
	}
	rf_batch *b;
	while ((ret = rf_loader_next(loader, &b)) == 0) {
		/* b->data holds the samples as the hook left them */
		uint64_t zero = 0, sum = 0, n = (uint64_t)b->count * b->sample_bytes;
		for (uint64_t i = 0; i < n; i++) {
			zero += b->data[i] == 0;
			sum += b->data[i];
		}
		printf("batch %llu: %u samples, %.1f%% zero bytes, mean %.1f\n",
		       (unsigned long long)b->index, b->count, 100.0 * (double)zero / (double)n,
		       (double)sum / (double)n);
		rf_batch_release(loader, b);
	}
	if (ret != RF_EOF)
		fprintf(stderr, "rf_loader_next: %s: %s\n", rf_strerror(ret), rf_loader_error(loader));
	rf_loader_destroy(loader);
	return ret == RF_EOF ? 0 : 1;
}
