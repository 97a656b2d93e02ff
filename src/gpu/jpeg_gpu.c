/* jpeg_gpu.c - groups of JPEGs through the GPU's JPEG engines and the
 * resample kernel (see jpeg_gpu.h). Two sets (an nvJPEG state, staging,
 * decoded images) alternate, so that the host prepares and submits one group
 * while the engines still work on the previous one: with one state, nvJPEG's
 * submit waits for the state's previous group, and the host's work and the
 * engines' would add up instead of overlapping. */
#include "gpu/jpeg_gpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rf_config.h"
#include "util/util.h"

#if RF_HAVE_CUDA && RF_HAVE_NVJPEG
#include <cuda_runtime.h>

#include "gpu/nvjpeg_api.h"

#define SETS 2
#define ALIGN 256

/* One group's memory; reused once the group it last served is done. */
typedef struct stage_set {
	uint8_t *host;       /* pinned: descriptors | starts | weights */
	size_t host_cap;
	uint8_t *dev;        /* the same, on the device */
	size_t dev_cap;
	uint8_t *img;        /* decoded regions, device */
	size_t img_cap;
	cudaEvent_t start, done;
	nvjpegJpegState_t state;
	int init_n;          /* group size the state is initialized for */
	int busy;            /* a group is in flight (or finished and not yet timed) */
	uint32_t images;
} stage_set;

struct rf_gpu_jpeg {
	const rf_nvjpeg_api *nv;
	int device;
	cudaStream_t stream;
	nvjpegHandle_t h;
	nvjpegJpegStream_t js;        /* probe's parser */
	nvjpegDecodeParams_t probe;   /* whole image, RGBI */
	nvjpegDecodeParams_t *params; /* max_group: per image, its region */
	const unsigned char **data;
	size_t *lens;
	nvjpegImage_t *dst;
	int roi;                      /* 1 while the engines accept regions */
	int max_group, crop, dtype, layout;
	float *lut32;                 /* device tables */
	uint16_t *lut16;
	stage_set sets[SETS];
	int next;
	uint64_t images, ns;          /* finished groups: images and stream time */
};

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	rfi_fmt(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return -EIO;
}

static int nv_fail(nvjpegStatus_t s, const char *what, char *err, size_t errlen)
{
	rfi_fmt(err, errlen, "%s: %s", what, rfi_nvjpeg_status(s));
	return s == NVJPEG_STATUS_ARCH_MISMATCH || s == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED ||
			       s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED
		       ? -ENOTSUP
		       : -EIO;
}

int rfi_gpu_jpeg_create(rf_gpu_jpeg **out, const rf_gpu_jpeg_params *p, char *err, size_t errlen)
{
	*out = NULL;
	char why[256];
	const rf_nvjpeg_api *nv = rfi_nvjpeg_load(why, sizeof(why));
	if (!nv) {
		rfi_fmt(err, errlen, "%s", why);
		return -ENOTSUP;
	}
	rf_gpu_jpeg *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->nv = nv;
	g->device = p->device;
	g->stream = (cudaStream_t)p->stream;
	g->max_group = p->max_group;
	g->crop = p->crop;
	g->dtype = p->dtype;
	g->layout = p->layout;
	g->roi = 1;
	g->params = calloc((size_t)p->max_group, sizeof(*g->params));
	g->data = calloc((size_t)p->max_group, sizeof(*g->data));
	g->lens = calloc((size_t)p->max_group, sizeof(*g->lens));
	g->dst = calloc((size_t)p->max_group, sizeof(*g->dst));
	int ret = -ENOMEM;
	if (!g->params || !g->data || !g->lens || !g->dst)
		goto fail;
	cudaError_t e;
	nvjpegStatus_t s;
	if ((e = cudaSetDevice(p->device)) != cudaSuccess) {
		ret = cuda_fail(e, "cudaSetDevice", err, errlen);
		goto fail;
	}
	if ((s = nv->CreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &g->h)) != NVJPEG_STATUS_SUCCESS) {
		g->h = NULL;
		ret = nv_fail(s, "nvJPEG hardware backend", err, errlen);
		goto fail;
	}
	if ((s = nv->JpegStateCreate(g->h, &g->sets[0].state)) ||
	    (s = nv->JpegStateCreate(g->h, &g->sets[1].state)) || (s = nv->JpegStreamCreate(g->h, &g->js)) ||
	    (s = nv->DecodeParamsCreate(g->h, &g->probe)) ||
	    (s = nv->DecodeParamsSetOutputFormat(g->probe, NVJPEG_OUTPUT_RGBI))) {
		ret = nv_fail(s, "nvJPEG set-up", err, errlen);
		goto fail;
	}
	for (int i = 0; i < p->max_group; i++)
		if ((s = nv->DecodeParamsCreate(g->h, &g->params[i])) ||
		    (s = nv->DecodeParamsSetOutputFormat(g->params[i], NVJPEG_OUTPUT_RGBI))) {
			ret = nv_fail(s, "nvJPEG decode parameters", err, errlen);
			goto fail;
		}
	for (int i = 0; i < SETS; i++)
		if ((e = cudaEventCreate(&g->sets[i].start)) || (e = cudaEventCreate(&g->sets[i].done))) {
			ret = cuda_fail(e, "cudaEventCreate", err, errlen);
			goto fail;
		}
	if (p->dtype != 0) {
		if ((e = cudaMalloc((void **)&g->lut32, 3 * 256 * sizeof(float))) ||
		    (e = cudaMalloc((void **)&g->lut16, 3 * 256 * sizeof(uint16_t))) ||
		    (e = cudaMemcpy(g->lut32, p->lut32, 3 * 256 * sizeof(float), cudaMemcpyHostToDevice)) ||
		    (e = cudaMemcpy(g->lut16, p->lut16, 3 * 256 * sizeof(uint16_t), cudaMemcpyHostToDevice))) {
			ret = cuda_fail(e, "value tables", err, errlen);
			goto fail;
		}
	}
	*out = g;
	return 0;
fail:
	rfi_gpu_jpeg_destroy(g);
	return ret;
}

void rfi_gpu_jpeg_destroy(rf_gpu_jpeg *g)
{
	if (!g)
		return;
	cudaSetDevice(g->device);
	if (g->stream)
		cudaStreamSynchronize(g->stream);
	for (int i = 0; i < SETS; i++) {
		stage_set *t = &g->sets[i];
		cudaFreeHost(t->host);
		cudaFree(t->dev);
		cudaFree(t->img);
		if (t->start)
			cudaEventDestroy(t->start);
		if (t->done)
			cudaEventDestroy(t->done);
		if (t->state)
			g->nv->JpegStateDestroy(t->state);
	}
	cudaFree(g->lut32);
	cudaFree(g->lut16);
	if (g->params)
		for (int i = 0; i < g->max_group; i++)
			if (g->params[i])
				g->nv->DecodeParamsDestroy(g->params[i]);
	if (g->probe)
		g->nv->DecodeParamsDestroy(g->probe);
	if (g->js)
		g->nv->JpegStreamDestroy(g->js);
	if (g->h)
		g->nv->Destroy(g->h);
	free(g->params);
	free(g->data);
	free(g->lens);
	free(g->dst);
	free(g);
}

int rfi_gpu_jpeg_probe(rf_gpu_jpeg *g, const uint8_t *data, size_t len, int *w, int *h)
{
	/* A stream cut short still parses and the engines would decode grey
	 * for its missing part; libjpeg-turbo reports it. Streams that do not
	 * end in EOI go to the CPU. */
	if (len < 4 || data[len - 2] != 0xff || data[len - 1] != 0xd9)
		return 1;
	unsigned int W = 0, H = 0;
	int unsupported = 1;
	if (g->nv->JpegStreamParseHeader(g->h, data, len, g->js) != NVJPEG_STATUS_SUCCESS ||
	    g->nv->JpegStreamGetFrameDimensions(g->js, &W, &H) != NVJPEG_STATUS_SUCCESS ||
	    g->nv->DecodeBatchedSupportedEx(g->h, g->js, g->probe, &unsupported) != NVJPEG_STATUS_SUCCESS ||
	    unsupported != 0 || W == 0 || H == 0 || W > 65535 || H > 65535)
		return 1;
	*w = (int)W;
	*h = (int)H;
	return 0;
}

/* Grows a buffer that nothing on the GPU uses any more. */
static int grow(uint8_t **buf, size_t *cap, size_t need, int pinned)
{
	if (need <= *cap)
		return 0;
	size_t n = need + need / 4;
	if (pinned)
		cudaFreeHost(*buf);
	else
		cudaFree(*buf);
	*buf = NULL;
	*cap = 0;
	cudaError_t e = pinned ? cudaMallocHost((void **)buf, n) : cudaMalloc((void **)buf, n);
	if (e != cudaSuccess) {
		*buf = NULL;
		return -ENOMEM;
	}
	*cap = n;
	return 0;
}

/* Waits for the set's last group and adds its time to the totals. */
static void settle(rf_gpu_jpeg *g, stage_set *t)
{
	if (!t->busy)
		return;
	cudaEventSynchronize(t->done);
	float ms = 0;
	if (cudaEventElapsedTime(&ms, t->start, t->done) == cudaSuccess)
		g->ns += (uint64_t)((double)ms * 1e6);
	g->images += t->images;
	t->busy = 0;
}

/* What the engines write for item x: its region (while they accept
 * regions) or the whole image; its origin and size in the taps' coordinates.
 * @return : 1 when it is a region. */
static int decoded_area(const rf_gpu_jpeg *g, const rf_gpu_jpeg_item *x, int *x0, int *y0, int *w,
			int *h)
{
	if (g->roi) {
		*x0 = x->roi_x, *y0 = x->roi_y, *w = x->roi_w, *h = x->roi_h;
		return 1;
	}
	*x0 = *y0 = 0;
	*w = x->width;
	*h = x->height;
	return 0;
}

/* Lays out the group's decoded regions in t->img and points the engines'
 * destinations at them (regions, or whole images once regions are refused). */
static int layout_images(rf_gpu_jpeg *g, stage_set *t, const rf_gpu_jpeg_item *it, int n,
			 char *err, size_t errlen)
{
	size_t need = 0;
	for (int i = 0; i < n; i++) {
		int w, h, x0, y0;
		decoded_area(g, &it[i], &x0, &y0, &w, &h);
		need += RF_ALIGN_UP((size_t)w * h * 3, ALIGN);
	}
	if (grow(&t->img, &t->img_cap, need, 0)) {
		rfi_fmt(err, errlen, "out of device memory for %zu bytes of decoded images", need);
		return -ENOMEM;
	}
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		const rf_gpu_jpeg_item *x = &it[i];
		int w, h, x0, y0;
		int roi = decoded_area(g, x, &x0, &y0, &w, &h);
		memset(&g->dst[i], 0, sizeof(g->dst[i]));
		g->dst[i].channel[0] = t->img + off;
		g->dst[i].pitch[0] = (size_t)w * 3;
		off += RF_ALIGN_UP((size_t)w * h * 3, ALIGN);
		g->data[i] = x->data;
		g->lens[i] = x->len;
		if (roi)
			g->nv->DecodeParamsSetROI(g->params[i], x->roi_x, x->roi_y, x->roi_w, x->roi_h);
		else
			g->nv->DecodeParamsSetROI(g->params[i], 0, 0, -1, -1);
	}
	return 0;
}

/* Writes the kernel's tables for the group into t->host; returns their size. */
static size_t stage_tables(rf_gpu_jpeg *g, stage_set *t, const rf_gpu_jpeg_item *it, int n)
{
	size_t C = (size_t)g->crop;
	size_t descs = RF_ALIGN_UP((size_t)n * sizeof(rf_gpu_sample_desc), ALIGN);
	size_t starts = RF_ALIGN_UP((size_t)n * 2 * C * sizeof(int32_t), ALIGN);
	rf_gpu_sample_desc *d = (rf_gpu_sample_desc *)t->host;
	int32_t *s = (int32_t *)(t->host + descs);
	int16_t *w = (int16_t *)(t->host + descs + starts);
	uint32_t ns = 0, nw = 0;
	for (int i = 0; i < n; i++) {
		const rf_gpu_jpeg_item *x = &it[i];
		int x0, y0, dw, dh;
		decoded_area(g, x, &x0, &y0, &dw, &dh);
		d[i] = (rf_gpu_sample_desc){
			.src = (uint64_t)(uintptr_t)g->dst[i].channel[0],
			.dst = (uint64_t)(uintptr_t)x->dst,
			.pitch = (int32_t)g->dst[i].pitch[0],
			.x0 = x0, .y0 = y0,
			.kx = x->kx, .ky = x->ky,
			.xs = ns, .ys = ns + (uint32_t)C,
			.xw = nw, .yw = nw + (uint32_t)(C * (size_t)x->kx),
		};
		memcpy(s + ns, x->xstart, C * sizeof(int32_t));
		memcpy(s + ns + C, x->ystart, C * sizeof(int32_t));
		ns += (uint32_t)(2 * C);
		memcpy(w + nw, x->xweight, C * (size_t)x->kx * sizeof(int16_t));
		nw += (uint32_t)(C * (size_t)x->kx);
		memcpy(w + nw, x->yweight, C * (size_t)x->ky * sizeof(int16_t));
		nw += (uint32_t)(C * (size_t)x->ky);
	}
	return descs + starts + (size_t)nw * sizeof(int16_t);
}

int rfi_gpu_jpeg_decode(rf_gpu_jpeg *g, const rf_gpu_jpeg_item *it, int n, int *ticket,
		       char *err, size_t errlen)
{
	if (n <= 0 || n > g->max_group) {
		rfi_fmt(err, errlen, "group of %d images (1..%d)", n, g->max_group);
		return -EINVAL;
	}
	cudaSetDevice(g->device);
	int k = g->next;
	stage_set *t = &g->sets[k];
	settle(g, t); /* its tables and images are ours again */
	size_t C = (size_t)g->crop, taps = 0;
	for (int i = 0; i < n; i++)
		taps += C * (size_t)(it[i].kx + it[i].ky);
	size_t need = RF_ALIGN_UP((size_t)n * sizeof(rf_gpu_sample_desc), ALIGN) +
		      RF_ALIGN_UP((size_t)n * 2 * C * sizeof(int32_t), ALIGN) + taps * sizeof(int16_t);
	if (grow(&t->host, &t->host_cap, need, 1) || grow(&t->dev, &t->dev_cap, need, 0)) {
		rfi_fmt(err, errlen, "out of memory for %zu bytes of resampling tables", need);
		return -ENOMEM;
	}
	cudaError_t e;
	nvjpegStatus_t s;
	if ((e = cudaEventRecord(t->start, g->stream)) != cudaSuccess)
		return cuda_fail(e, "cudaEventRecord", err, errlen);
	for (;;) {
		int r = layout_images(g, t, it, n, err, errlen);
		if (r)
			return r;
		if (t->init_n != n) {
			s = g->nv->DecodeBatchedInitialize(g->h, t->state, n, 1, NVJPEG_OUTPUT_RGBI);
			if (s != NVJPEG_STATUS_SUCCESS)
				return nv_fail(s, "nvjpegDecodeBatchedInitialize", err, errlen);
			t->init_n = n;
		}
		s = g->nv->DecodeBatchedEx(g->h, t->state, g->data, g->lens, g->dst, g->params,
					   g->stream);
		if (s == NVJPEG_STATUS_SUCCESS)
			break;
		t->init_n = 0; /* a failed batch must be initialized again */
		if (!g->roi)
			return nv_fail(s, "nvjpegDecodeBatchedEx", err, errlen);
		g->roi = 0; /* these engines refuse regions: decode whole images from now on */
	}
	size_t bytes = stage_tables(g, t, it, n);
	size_t descs = RF_ALIGN_UP((size_t)n * sizeof(rf_gpu_sample_desc), ALIGN);
	size_t starts = RF_ALIGN_UP((size_t)n * 2 * C * sizeof(int32_t), ALIGN);
	if ((e = cudaMemcpyAsync(t->dev, t->host, bytes, cudaMemcpyHostToDevice, g->stream)))
		return cuda_fail(e, "cudaMemcpyAsync of the resampling tables", err, errlen);
	int kr = rfi_gpu_resample_launch((const rf_gpu_sample_desc *)t->dev,
					(const int32_t *)(t->dev + descs),
					(const int16_t *)(t->dev + descs + starts), n, g->crop,
					g->dtype, g->layout, g->lut32, g->lut16, g->stream);
	if (kr)
		return cuda_fail((cudaError_t)kr, "resample kernel", err, errlen);
	if ((e = cudaEventRecord(t->done, g->stream)) != cudaSuccess)
		return cuda_fail(e, "cudaEventRecord", err, errlen);
	t->busy = 1;
	t->images = (uint32_t)n;
	g->next = (k + 1) % SETS;
	*ticket = k;
	return 0;
}

void rfi_gpu_jpeg_wait(rf_gpu_jpeg *g, int ticket)
{
	if (ticket < 0 || ticket >= SETS)
		return;
	cudaSetDevice(g->device);
	settle(g, &g->sets[ticket]);
}

void rfi_gpu_jpeg_stats(rf_gpu_jpeg *g, uint64_t *images, uint64_t *ns)
{
	*images = g->images;
	*ns = g->ns;
}

#else /* built without CUDA or without nvjpeg.h */

int rfi_gpu_jpeg_create(rf_gpu_jpeg **out, const rf_gpu_jpeg_params *p, char *err, size_t errlen)
{
	(void)p;
	*out = NULL;
	rfi_fmt(err, errlen, RF_HAVE_CUDA ? "built without nvjpeg.h (scripts/nvjpeg-header.sh)"
					 : "CUDA support is not built in");
	return -ENOTSUP;
}

void rfi_gpu_jpeg_destroy(rf_gpu_jpeg *g)
{
	(void)g;
}

int rfi_gpu_jpeg_probe(rf_gpu_jpeg *g, const uint8_t *data, size_t len, int *w, int *h)
{
	(void)g, (void)data, (void)len, (void)w, (void)h;
	return 1;
}

int rfi_gpu_jpeg_decode(rf_gpu_jpeg *g, const rf_gpu_jpeg_item *items, int n, int *ticket,
		       char *err, size_t errlen)
{
	(void)g, (void)items, (void)n, (void)ticket;
	rfi_fmt(err, errlen, "no GPU JPEG decode in this build");
	return -ENOTSUP;
}

void rfi_gpu_jpeg_wait(rf_gpu_jpeg *g, int ticket)
{
	(void)g, (void)ticket;
}

void rfi_gpu_jpeg_stats(rf_gpu_jpeg *g, uint64_t *images, uint64_t *ns)
{
	(void)g;
	*images = *ns = 0;
}

#endif
