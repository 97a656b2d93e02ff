/* decode_limit.c - the decode limit: single-thread full-scale decode rate
 * over a set of images held in memory, times a thread count; JPEG through
 * TurboJPEG, PNG through libspng (to RGB8), WebP through libwebp
 * (WebPDecodeRGBInto), each file by its bytes, as the libraries' own
 * simplest full decode. A loader that decodes every image in full can at
 * best reach this; one that reaches more decodes less (scaled or region
 * decode).
 *
 *   build/bench/decode_limit DIR [--threads N] [--max FILES] [--denom D] [--json]
 *
 * --denom 2, 4 or 8 decodes at that DCT scale instead: at 1/8 the IDCT and
 * colour conversion nearly vanish, so the rate approaches the entropy
 * decoding floor, the part no scaled or region decode can skip.
 *
 * --denom applies to JPEGs only.
 *
 * DIR is searched recursively for *.jpg / *.jpeg / *.png / *.webp. Files are read once into
 * memory (not timed), decoded once untimed (warm caches), then decoded again
 * timed, three passes, best pass reported. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <turbojpeg.h>

#include "rf_config.h"
#if RF_HAVE_PNG
#include <spng.h>
#endif
#if RF_HAVE_WEBP
#include <webp/decode.h>
#endif

typedef struct blob {
	unsigned char *data;
	unsigned long len;
} blob;

static blob *files;
static size_t nfiles, capfiles, maxfiles = (size_t)-1;

static void add_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	char path[4096];
	while ((de = readdir(d)) && nfiles < maxfiles) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct stat st;
		if (stat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			add_tree(path);
			continue;
		}
		const char *dot = strrchr(de->d_name, '.');
		if (!dot || (strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg") &&
			     strcasecmp(dot, ".png") && strcasecmp(dot, ".webp")))
			continue;
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		if (nfiles == capfiles) {
			capfiles = capfiles ? capfiles * 2 : 1024;
			files = realloc(files, capfiles * sizeof(*files));
		}
		blob *b = &files[nfiles];
		b->len = (unsigned long)st.st_size;
		b->data = malloc(b->len);
		if (fread(b->data, 1, b->len, f) == b->len)
			nfiles++;
		else
			free(b->data);
		fclose(f);
	}
	closedir(d);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static unsigned char *rgb;
static size_t cap;

static unsigned char *room(size_t need)
{
	if (need > cap)
		rgb = realloc(rgb, cap = need);
	return rgb;
}

/* One full decode of b (JPEG at 1/denom) into rgb. 0, or -1 when it failed. */
static int decode(tjhandle tj, const blob *b, int denom)
{
	const unsigned char *p = b->data;
#if RF_HAVE_PNG
	if (b->len >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8)) {
		spng_ctx *c = spng_ctx_new(0);
		size_t need;
		int err = spng_set_png_buffer(c, p, b->len) ||
			  spng_decoded_image_size(c, SPNG_FMT_RGB8, &need) ||
			  spng_decode_image(c, room(need), need, SPNG_FMT_RGB8, 0);
		spng_ctx_free(c);
		return err ? -1 : 0;
	}
#endif
#if RF_HAVE_WEBP
	if (b->len >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) {
		int w, h;
		if (!WebPGetInfo(p, b->len, &w, &h))
			return -1;
		size_t need = (size_t)w * h * 3;
		return WebPDecodeRGBInto(p, b->len, room(need), need, w * 3) ? 0 : -1;
	}
#endif
	int w, h, ss, cs;
	if (tjDecompressHeader3(tj, p, b->len, &w, &h, &ss, &cs))
		return -1;
	/* TurboJPEG picks the scale that fits the size asked for */
	return tjDecompress2(tj, p, b->len, room((size_t)w * h * 3), (w + denom - 1) / denom, 0,
			     (h + denom - 1) / denom, TJPF_RGB, 0) ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int threads = 1, json = 0, denom = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			maxfiles = (size_t)atol(argv[++i]);
		else if (!strcmp(argv[i], "--denom") && i + 1 < argc)
			denom = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help")) {
			printf("usage: decode_limit DIR [--threads N] [--max FILES] [--json]\n");
			return 0;
		} else
			dir = argv[i];
	}
	if (!dir || threads < 1 || (denom != 1 && denom != 2 && denom != 4 && denom != 8)) {
		fprintf(stderr, "usage: decode_limit DIR [--threads N] [--max FILES] [--json]\n");
		return 2;
	}
	add_tree(dir);
	if (!nfiles) {
		fprintf(stderr, "decode_limit: no image under %s\n", dir);
		return 1;
	}
	tjhandle tj = tjInitDecompress();
	size_t bytes = 0, failed = 0;
	double best = 1e30;
	for (int pass = 0; pass < 4; pass++) {
		double t0 = now();
		for (size_t i = 0; i < nfiles; i++) {
			int err = decode(tj, &files[i], denom);
			if (!pass) {
				bytes += files[i].len;
				failed += err != 0;
			}
		}
		double t = now() - t0;
		if (pass && t < best) /* pass 0 warms caches */
			best = t;
	}
	if (failed) { /* a rate over files that were not decoded would be no limit */
		fprintf(stderr, "decode_limit: %zu of %zu files failed to decode (or this build "
			"lacks their library)\n", failed, nfiles);
		return 1;
	}
	double rate = (double)nfiles / best;
	if (json)
		printf("{\"files\":%zu,\"bytes\":%zu,\"denom\":%d,\"single_thread_per_s\":%.2f,"
		       "\"ms_per_image\":%.4f,\"threads\":%d,\"decode_limit_per_s\":%.2f}\n", nfiles,
		       bytes, denom, rate, 1e3 / rate, threads, rate * threads);
	else
		printf("%zu files (%.1f MB): single-thread decode at 1/%d scale %.1f images/s "
		       "(%.3f ms each); times %d threads: %.1f images/s\n", nfiles, bytes / 1e6, denom,
		       rate, 1e3 / rate, threads, rate * threads);
	return 0;
}
