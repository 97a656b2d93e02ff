/* synth.c - synthetic photograph-like JPEGs and ImageFolder trees (see synth.h). */
#define _GNU_SOURCE
#include "cli/synth.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#define RF_SYNTH_MIN(a, b) ((a) < (b) ? (a) : (b))

static uint64_t next_u64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(uint64_t *s) /* [0, 1) */
{
	return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static int irange(uint64_t *s, int lo, int hi) /* [lo, hi] */
{
	return lo + (int)(uniform(s) * (hi - lo + 1));
}

void rfi_synth_size(uint64_t seed, uint64_t i, int *w, int *h)
{
	uint64_t s = seed * 0x2545f4914f6cdd1dull + i * 0x9e3779b97f4a7c15ull + 1;
	next_u64(&s);
	double scale = 0.8 + 0.4 * uniform(&s); /* +-20% around 500 x 375 */
	if (uniform(&s) < 0.1)
		scale *= 1.5 + 1.5 * uniform(&s); /* one in ten is larger, up to 3x */
	int a = (int)(500 * scale), b = (int)(375 * scale * (0.9 + 0.2 * uniform(&s)));
	if (uniform(&s) < 0.3) { /* portrait */
		*w = b;
		*h = a;
	} else {
		*w = a;
		*h = b;
	}
}

static uint8_t clamp8(double v)
{
	return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)(v + 0.5);
}

void rfi_synth_pixels(uint8_t *rgb, int w, int h, uint64_t seed)
{
	uint64_t s = seed ^ 0x5eed5eed5eed5eedull;
	/* 1. smooth background: bilinear blend of four corner colours */
	double c[4][3];
	for (int k = 0; k < 4; k++)
		for (int ch = 0; ch < 3; ch++)
			c[k][ch] = 30 + 200 * uniform(&s);
	for (int y = 0; y < h; y++) {
		double fy = (double)y / (h > 1 ? h - 1 : 1);
		for (int x = 0; x < w; x++) {
			double fx = (double)x / (w > 1 ? w - 1 : 1);
			uint8_t *p = rgb + ((size_t)y * w + x) * 3;
			for (int ch = 0; ch < 3; ch++) {
				double top = c[0][ch] * (1 - fx) + c[1][ch] * fx;
				double bot = c[2][ch] * (1 - fx) + c[3][ch] * fx;
				p[ch] = clamp8(top * (1 - fy) + bot * fy);
			}
		}
	}
	/* 2. objects with hard edges: shaded ellipses and rectangles; some
	 *    carry a striped texture */
	int nobj = irange(&s, 4, 10);
	for (int o = 0; o < nobj; o++) {
		int ellipse = uniform(&s) < 0.5, textured = uniform(&s) < 0.4;
		double cx = uniform(&s) * w, cy = uniform(&s) * h;
		double rx = (0.05 + 0.25 * uniform(&s)) * w, ry = (0.05 + 0.25 * uniform(&s)) * h;
		double col[3], freq = 0.05 + 0.3 * uniform(&s), ang = uniform(&s) * 3.14159;
		for (int ch = 0; ch < 3; ch++)
			col[ch] = 255 * uniform(&s);
		double ca = cos(ang), sa = sin(ang);
		int x0 = (int)fmax(0, cx - rx), x1 = (int)fmin(w - 1, cx + rx);
		int y0 = (int)fmax(0, cy - ry), y1 = (int)fmin(h - 1, cy + ry);
		for (int y = y0; y <= y1; y++) {
			for (int x = x0; x <= x1; x++) {
				double dx = (x - cx) / rx, dy = (y - cy) / ry;
				double d2 = dx * dx + dy * dy;
				if (ellipse && d2 > 1)
					continue;
				double shade = 1.0 - 0.35 * (ellipse ? d2 : fabs(dx * dy));
				double tex = textured ? 28 * sin((x * ca + y * sa) * freq) : 0;
				uint8_t *p = rgb + ((size_t)y * w + x) * 3;
				for (int ch = 0; ch < 3; ch++)
					p[ch] = clamp8(col[ch] * shade + tex);
			}
		}
	}
	/* 3. sensor-like noise everywhere (sum of uniforms ~ gaussian, sigma ~ 5) */
	for (size_t i = 0; i < (size_t)w * h * 3; i++) {
		uint64_t r = next_u64(&s);
		int n = (int)(r & 31) + (int)((r >> 5) & 31) + (int)((r >> 10) & 31) - 46;
		int v = rgb[i] + n / 3;
		rgb[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
	}
}

int rfi_synth_jpeg(int w, int h, uint64_t seed, int quality, uint8_t **out, size_t *len,
		  char *err, size_t errlen)
{
	uint8_t *rgb = malloc((size_t)w * h * 3);
	tjhandle tj = tjInitCompress();
	unsigned char *jpeg = NULL;
	unsigned long jlen = 0;
	int ret = -1;
	if (!rgb || !tj) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rfi_synth_pixels(rgb, w, h, seed);
	if (tjCompress2(tj, rgb, w, 0, h, TJPF_RGB, &jpeg, &jlen, TJSAMP_420, quality, 0)) {
		snprintf(err, errlen, "tjCompress2: %s", tjGetErrorStr2(tj));
		goto out;
	}
	*out = malloc(jlen);
	if (!*out) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy(*out, jpeg, jlen);
	*len = jlen;
	ret = 0;
out:
	tjFree(jpeg);
	if (tj)
		tjDestroy(tj);
	free(rgb);
	return ret;
}

int rfi_synth_write_jpeg(const char *path, int w, int h, uint64_t seed, int quality,
			char *err, size_t errlen)
{
	uint8_t *jpeg;
	size_t len;
	if (rfi_synth_jpeg(w, h, seed, quality, &jpeg, &len, err, errlen))
		return -1;
	FILE *f = fopen(path, "wbe");
	int ok = f && fwrite(jpeg, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	free(jpeg);
	return ok ? 0 : -1;
}

typedef struct tree_job {
	const rf_synth_tree *t;
	atomic_uint_fast64_t next, done;
	atomic_int failed;
	char err[512];
	pthread_mutex_t err_mu;
} tree_job;

/* A file of random bytes, its size uniform in [min_size, max_size]. */
static int write_raw(const char *path, const rf_synth_tree *t, uint64_t seed, char *err,
		     size_t errlen)
{
	uint64_t s = seed;
	uint64_t size = t->min_size + next_u64(&s) % (t->max_size - t->min_size + 1);
	uint64_t buf[8192];
	FILE *f = fopen(path, "wbe");
	int ok = f != NULL;
	for (uint64_t done = 0; ok && done < size;) {
		size_t n = (size_t)RF_SYNTH_MIN(size - done, sizeof(buf));
		for (size_t k = 0; k < (n + 7) / 8; k++)
			buf[k] = next_u64(&s);
		ok = fwrite(buf, 1, n, f) == n;
		done += n;
	}
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	return ok ? 0 : -1;
}

static void *tree_worker(void *arg)
{
	tree_job *j = arg;
	const rf_synth_tree *t = j->t;
	char path[4096], err[512];
	for (;;) {
		uint64_t i = atomic_fetch_add(&j->next, 1);
		if (i >= t->count || atomic_load(&j->failed))
			break;
		int w, h;
		rfi_synth_size(t->seed, i, &w, &h);
		snprintf(path, sizeof(path), t->raw ? "%s/class_%03d/file_%08llu.bin"
						     : "%s/class_%03d/img_%08llu.jpg", t->out,
			 (int)(i % (uint64_t)t->classes), (unsigned long long)i);
		uint64_t img_seed = t->seed * 0x100000001b3ull ^ (i + 1) * 0x9e3779b97f4a7c15ull;
		int failed = t->raw ? write_raw(path, t, img_seed, err, sizeof(err))
				    : rfi_synth_write_jpeg(path, w, h, img_seed, t->quality, err, sizeof(err));
		if (failed) {
			pthread_mutex_lock(&j->err_mu);
			if (!atomic_exchange(&j->failed, 1))
				snprintf(j->err, sizeof(j->err), "%s", err);
			pthread_mutex_unlock(&j->err_mu);
			break;
		}
		uint64_t d = atomic_fetch_add(&j->done, 1) + 1;
		if (t->progress)
			t->progress(d, t->count, t->user);
	}
	return NULL;
}

int rfi_synth_imagefolder(const rf_synth_tree *t, char *err, size_t errlen)
{
	char path[4096];
	if (mkdir(t->out, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", t->out, strerror(errno));
		return -1;
	}
	for (int c = 0; c < t->classes; c++) {
		snprintf(path, sizeof(path), "%s/class_%03d", t->out, c);
		if (mkdir(path, 0755) && errno != EEXIST) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
	}
	tree_job j = { .t = t };
	atomic_init(&j.next, 0);
	atomic_init(&j.done, 0);
	atomic_init(&j.failed, 0);
	pthread_mutex_init(&j.err_mu, NULL);
	int n = t->threads > 0 ? t->threads : 1;
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	int started = 0;
	for (int i = 0; th && i < n; i++)
		if (pthread_create(&th[i], NULL, tree_worker, &j) == 0)
			started++;
	if (!started)
		tree_worker(&j);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	pthread_mutex_destroy(&j.err_mu);
	if (atomic_load(&j.failed)) {
		snprintf(err, errlen, "%s", j.err);
		return -1;
	}
	return 0;
}
