/* decode_limit.c - the decode limit: single-thread TurboJPEG full-scale
 * decode rate over a set of JPEGs held in memory, times a thread count.
 * A loader that decodes every image in full can at best reach this; one that
 * reaches more decodes less (scaled or region decode).
 *
 *   build/bench/decode_limit DIR [--threads N] [--max FILES] [--denom D] [--json]
 *
 * --denom 2, 4 or 8 decodes at that DCT scale instead: at 1/8 the IDCT and
 * colour conversion nearly vanish, so the rate approaches the entropy
 * decoding floor, the part no scaled or region decode can skip.
 *
 * DIR is searched recursively for *.jpg / *.jpeg. Files are read once into
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
		if (!dot || (strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg")))
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
		fprintf(stderr, "decode_limit: no JPEG under %s\n", dir);
		return 1;
	}
	tjhandle tj = tjInitDecompress();
	unsigned char *rgb = NULL;
	size_t cap = 0, bytes = 0;
	double best = 1e30;
	for (int pass = 0; pass < 4; pass++) {
		double t0 = now();
		for (size_t i = 0; i < nfiles; i++) {
			int w, h, ss, cs;
			if (tjDecompressHeader3(tj, files[i].data, files[i].len, &w, &h, &ss, &cs))
				continue;
			size_t need = (size_t)w * h * 3;
			if (need > cap)
				rgb = realloc(rgb, cap = need);
			/* TurboJPEG picks the scale that fits the size asked for */
			tjDecompress2(tj, files[i].data, files[i].len, rgb, (w + denom - 1) / denom, 0,
				      (h + denom - 1) / denom, TJPF_RGB, 0);
			if (!pass)
				bytes += files[i].len;
		}
		double t = now() - t0;
		if (pass && t < best) /* pass 0 warms caches */
			best = t;
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
