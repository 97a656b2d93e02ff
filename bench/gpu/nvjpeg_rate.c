/* nvjpeg_rate.c - the GPU's JPEG engines alone: nvJPEG's batched decode on
 * the hardware backend (NVJPEG_BACKEND_HARDWARE), from host memory to RGB
 * interleaved device buffers, nothing else (no reads, no resize, no copies
 * out). The yardstick for `ringfeed bench --decode gpu`.
 *
 *   build/bench/nvjpeg_rate DIR [--batch N] [--passes P] [--json]
 *
 * Every *.jpg / *.jpeg below DIR is read into pinned memory (cudaMallocHost)
 * first; images the engines refuse (nvjpegDecodeBatchedSupported) are left
 * out and counted, and so is the tail after the last whole batch. Then P
 * timed passes over the rest in batches of N (after one warm-up pass),
 * submitted from one thread with one handle, state and stream; each phase's
 * time goes to stderr (on an H200 the warm-up pass hung in about half the
 * runs, 2026-11-26; the library's own decode never did). The rate is images
 * over the wall time of the passes, the GPU synchronized at the end.
 * libnvjpeg.so.13 is loaded with dlopen, as the library does. */
#define _GNU_SOURCE
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <ftw.h>
#include <nvjpeg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NV(fn) static nvjpegStatus_t (*p_##fn)
NV(nvjpegCreateEx)(nvjpegBackend_t, nvjpegDevAllocator_t *, nvjpegPinnedAllocator_t *, unsigned, nvjpegHandle_t *);
NV(nvjpegJpegStateCreate)(nvjpegHandle_t, nvjpegJpegState_t *);
NV(nvjpegDecodeBatchedInitialize)(nvjpegHandle_t, nvjpegJpegState_t, int, int, nvjpegOutputFormat_t);
NV(nvjpegDecodeBatched)(nvjpegHandle_t, nvjpegJpegState_t, const unsigned char *const *, const size_t *,
			nvjpegImage_t *, cudaStream_t);
NV(nvjpegJpegStreamCreate)(nvjpegHandle_t, nvjpegJpegStream_t *);
NV(nvjpegJpegStreamParseHeader)(nvjpegHandle_t, const unsigned char *, size_t, nvjpegJpegStream_t);
NV(nvjpegJpegStreamGetFrameDimensions)(nvjpegJpegStream_t, unsigned *, unsigned *);
NV(nvjpegDecodeBatchedSupported)(nvjpegHandle_t, nvjpegJpegStream_t, int *);

static void die(const char *what, int code)
{
	fprintf(stderr, "nvjpeg_rate: %s failed (%d)\n", what, code);
	exit(1);
}
#define CK(call) do { int e_ = (int)(call); if (e_) die(#call, e_); } while (0)

static char **paths;
static size_t npaths, cap;

static int add(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st, (void)f;
	const char *dot = strrchr(p, '.');
	if (type == FTW_F && dot && (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"))) {
		if (npaths == cap)
			paths = realloc(paths, (cap = cap ? 2 * cap : 1024) * sizeof(*paths));
		paths[npaths++] = strdup(p);
	}
	return 0;
}

static const unsigned char **data; /* accepted images */
static size_t *lens, n;
static unsigned maxw, maxh;
static int batch = 64, passes = 5;

typedef struct worker {
	nvjpegHandle_t h;
	nvjpegJpegState_t st;
	cudaStream_t s;
	nvjpegImage_t *dst;
	int init_n;
} worker;

/* One pass over the accepted images. */
static void pass(worker *w)
{
	for (size_t b = 0; b < n; b += (size_t)batch) {
		int k = (int)(n - b < (size_t)batch ? n - b : (size_t)batch);
		if (k != w->init_n) {
			CK(p_nvjpegDecodeBatchedInitialize(w->h, w->st, k, 1, NVJPEG_OUTPUT_RGBI));
			w->init_n = k;
		}
		CK(p_nvjpegDecodeBatched(w->h, w->st, data + b, lens + b, w->dst, w->s));
	}
	CK(cudaStreamSynchronize(w->s));
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nvjpeg_rate DIR [--batch N] [--passes P] [--json]\n");
		return 2;
	}
	int json = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--passes") && i + 1 < argc)
			passes = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else {
			fprintf(stderr, "nvjpeg_rate: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (batch < 1 || passes < 1) {
		fprintf(stderr, "nvjpeg_rate: --batch and --passes must be >= 1\n");
		return 2;
	}
	void *lib = dlopen("libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "nvjpeg_rate: %s\n", dlerror());
		return 1;
	}
#define SYM(fn) if (!(*(void **)&p_##fn = dlsym(lib, #fn))) { fprintf(stderr, "nvjpeg_rate: no %s\n", #fn); return 1; }
	SYM(nvjpegCreateEx) SYM(nvjpegJpegStateCreate) SYM(nvjpegDecodeBatchedInitialize)
	SYM(nvjpegDecodeBatched) SYM(nvjpegJpegStreamCreate) SYM(nvjpegJpegStreamParseHeader)
	SYM(nvjpegJpegStreamGetFrameDimensions) SYM(nvjpegDecodeBatchedSupported)
	if (nftw(argv[1], add, 32, FTW_PHYS) || !npaths) {
		fprintf(stderr, "nvjpeg_rate: no JPEG under %s\n", argv[1]);
		return 1;
	}
	/* read everything into one pinned buffer */
	size_t total = 0;
	size_t *size = calloc(npaths, sizeof(*size));
	for (size_t i = 0; i < npaths; i++) {
		FILE *f = fopen(paths[i], "rb");
		if (!f || fseek(f, 0, SEEK_END)) {
			fprintf(stderr, "nvjpeg_rate: cannot read %s\n", paths[i]);
			return 1;
		}
		size[i] = (size_t)ftell(f);
		total += size[i];
		fclose(f);
	}
	/* Each phase's time on stderr: where a slow or stuck run spends it. */
	double t_start = now();
	unsigned char *all;
	CK(cudaMallocHost((void **)&all, total));
	nvjpegHandle_t probe_h;
	nvjpegJpegStream_t js;
	CK(p_nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &probe_h));
	CK(p_nvjpegJpegStreamCreate(probe_h, &js));
	data = calloc(npaths, sizeof(*data));
	lens = calloc(npaths, sizeof(*lens));
	size_t off = 0, bytes = 0;
	for (size_t i = 0; i < npaths; i++) {
		FILE *f = fopen(paths[i], "rb");
		if (!f || fread(all + off, 1, size[i], f) != size[i]) {
			fprintf(stderr, "nvjpeg_rate: cannot read %s\n", paths[i]);
			return 1;
		}
		fclose(f);
		unsigned w, h;
		int unsupported = 1;
		if (p_nvjpegJpegStreamParseHeader(probe_h, all + off, size[i], js) == NVJPEG_STATUS_SUCCESS &&
		    p_nvjpegJpegStreamGetFrameDimensions(js, &w, &h) == NVJPEG_STATUS_SUCCESS &&
		    p_nvjpegDecodeBatchedSupported(probe_h, js, &unsupported) == NVJPEG_STATUS_SUCCESS &&
		    unsupported == 0) {
			data[n] = all + off;
			lens[n++] = size[i];
			bytes += size[i];
			maxw = w > maxw ? w : maxw;
			maxh = h > maxh ? h : maxh;
		}
		off += size[i];
	}
	if (!n) {
		fprintf(stderr, "nvjpeg_rate: the engines accept none of the %zu images\n", npaths);
		return 1;
	}
	/* Whole batches only: every batch is N images, so the rate is the rate at batch N. */
	size_t accepted = n;
	if (n > (size_t)batch)
		n -= n % (size_t)batch;
	bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += lens[i];
	fprintf(stderr, "nvjpeg_rate: %zu images read and probed in %.2f s, %zu accepted, %zu timed\n",
		npaths, now() - t_start, accepted, n);
	worker w = { 0 };
	size_t img = (size_t)maxw * maxh * 3;
	w.h = probe_h; /* one handle a process, as nvJPEG's guide advises */
	CK(p_nvjpegJpegStateCreate(w.h, &w.st));
	CK(cudaStreamCreateWithFlags(&w.s, cudaStreamNonBlocking));
	w.dst = calloc((size_t)batch, sizeof(*w.dst));
	for (int i = 0; i < batch; i++) {
		CK(cudaMalloc((void **)&w.dst[i].channel[0], img));
		w.dst[i].pitch[0] = (size_t)maxw * 3;
	}
	double t_warm = now();
	pass(&w); /* warm-up: allocations, first launches */
	fprintf(stderr, "nvjpeg_rate: warm-up pass, batch %d: %.2f s\n", batch, now() - t_warm);
	double t0 = now();
	for (int p = 0; p < passes; p++)
		pass(&w);
	CK(cudaDeviceSynchronize());
	double secs = now() - t0;
	double rate = (double)n * passes / secs;
	if (json)
		printf("{\"tool\":\"nvjpeg_rate\",\"backend\":\"hardware\",\"batch\":%d,"
		       "\"images\":%zu,\"accepted\":%zu,\"timed\":%zu,\"passes\":%d,\"seconds\":%.4f,"
		       "\"images_per_s\":%.1f,\"mean_kib\":%.1f}\n", batch, npaths, accepted, n,
		       passes, secs, rate, bytes / 1024.0 / n);
	else
		printf("nvJPEG hardware batched decode, batch %d: %.0f images/s (%zu of %zu "
		       "images accepted, %zu timed, %.1f KiB mean, %d passes)\n", batch, rate, accepted, npaths, n,
		       bytes / 1024.0 / n, passes);
	return 0;
}
