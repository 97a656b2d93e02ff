/* transfer.c - the host side of batches on the GPU (see gpu.h): pinning the
 * slots, one transfer stream, per-slot device buffers and events, the copy
 * of a finished batch and the release points that guard its reuse. Without
 * CUDA support built in, every entry refuses with -ENOTSUP. */
#include "gpu/gpu.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rf_config.h"
#include "util/util.h"

#if RF_HAVE_CUDA
#include <cuda_runtime.h>

struct rf_gpu {
	int device;
	int slots;
	int convert, crop, dtype, layout;
	void *host;            /* registered (pinned) */
	cudaStream_t stream;   /* the transfer stream */
	uint8_t **dev_out;     /* per slot: the batch the caller sees */
	uint8_t **dev_u8;      /* per slot: uint8 HWC staging when converting */
	cudaEvent_t *done;     /* per slot: copy (and conversion) finished */
	cudaEvent_t *started;  /* per slot: copy started (timing) */
	size_t *pending_bytes; /* per slot: the last copy, not yet timed */
	pthread_mutex_t stats_mu; /* copied_bytes, copy_ns: timed by whoever waits */
	uint64_t copied_bytes, copy_ns;
	cudaEvent_t *released; /* per slot: the consumer's release point */
	int *copied, *has_release;
	float *lut32;          /* device tables */
	uint16_t *lut16;
};

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	rfi_fmt(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return -EIO;
}

/* Is there a CUDA device p->device? @return : 0, or -ENODEV (err set). */
static int check_device(const rf_gpu_params *p, char *err, size_t errlen)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ||
	    (e == cudaSuccess && n == 0)) {
		/* the runtime's own words ("CUDA driver version is insufficient")
		 * read as a version problem on a machine with no GPU at all */
		rfi_fmt(err, errlen, "config: device = %d: this machine has no CUDA GPU (or no "
		       "NVIDIA driver): %s", p->device,
		       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return -ENODEV;
	}
	if (e != cudaSuccess) {
		rfi_fmt(err, errlen, "config: device = %d: %s", p->device, cudaGetErrorString(e));
		return -ENODEV;
	}
	if (p->device >= n) {
		rfi_fmt(err, errlen, "config: device = %d: no such CUDA device (this machine has %d: "
		       "0..%d)", p->device, n, n - 1);
		return -ENODEV;
	}
	return 0;
}

/* g's per-slot arrays on the host, zeroed. @return : 0, or -ENOMEM (what
 * was made is freed by rfi_gpu_destroy). */
static int alloc_slot_arrays(rf_gpu *g, int slots)
{
	g->dev_out = calloc((size_t)slots, sizeof(void *));
	g->dev_u8 = calloc((size_t)slots, sizeof(void *));
	g->done = calloc((size_t)slots, sizeof(cudaEvent_t));
	g->started = calloc((size_t)slots, sizeof(cudaEvent_t));
	g->pending_bytes = calloc((size_t)slots, sizeof(size_t));
	g->released = calloc((size_t)slots, sizeof(cudaEvent_t));
	g->copied = calloc((size_t)slots, sizeof(int));
	g->has_release = calloc((size_t)slots, sizeof(int));
	if (!g->dev_out || !g->dev_u8 || !g->done || !g->started || !g->pending_bytes ||
	    !g->released || !g->copied || !g->has_release)
		return -ENOMEM;
	return 0;
}

/* Each slot's device buffers (and uint8 staging when converting) and
 * events. @return : 0, or -EIO (err set). */
static int make_slots(rf_gpu *g, const rf_gpu_params *p, char *err, size_t errlen)
{
	cudaError_t e;
	size_t u8 = p->convert ? p->dev_bytes / (p->dtype == 1 ? 4 : 2) : 0;
	for (int s = 0; s < p->slots; s++) {
		if ((e = cudaMalloc((void **)&g->dev_out[s], p->dev_bytes)) != cudaSuccess ||
		    (u8 && (e = cudaMalloc((void **)&g->dev_u8[s], u8)) != cudaSuccess) ||
		    (e = cudaEventCreate(&g->done[s])) != cudaSuccess || /* timed: copy time */
		    (e = cudaEventCreate(&g->started[s])) != cudaSuccess ||
		    (e = cudaEventCreateWithFlags(&g->released[s], cudaEventDisableTiming)) != cudaSuccess)
			return cuda_fail(e, "device slot", err, errlen);
	}
	return 0;
}

/* The conversion's tables, copied to the device. @return : 0, or -EIO (err
 * set). */
static int make_tables(rf_gpu *g, const rf_gpu_params *p, char *err, size_t errlen)
{
	cudaError_t e;
	if ((e = cudaMalloc((void **)&g->lut32, 3 * 256 * sizeof(float))) != cudaSuccess ||
	    (e = cudaMalloc((void **)&g->lut16, 3 * 256 * sizeof(uint16_t))) != cudaSuccess ||
	    (e = cudaMemcpy(g->lut32, p->lut32, 3 * 256 * sizeof(float), cudaMemcpyHostToDevice)) ||
	    (e = cudaMemcpy(g->lut16, p->lut16, 3 * 256 * sizeof(uint16_t), cudaMemcpyHostToDevice)))
		return cuda_fail(e, "conversion tables", err, errlen);
	return 0;
}

int rfi_gpu_create(rf_gpu **out, const rf_gpu_params *p, char *err, size_t errlen)
{
	*out = NULL;
	int ret = check_device(p, err, errlen);
	if (ret)
		return ret;
	rf_gpu *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->device = p->device;
	g->slots = p->slots;
	g->convert = p->convert;
	g->crop = p->crop;
	g->dtype = p->dtype;
	g->layout = p->layout;
	pthread_mutex_init(&g->stats_mu, NULL);
	cudaError_t e;
	if ((ret = alloc_slot_arrays(g, p->slots)))
		goto fail;
	if ((e = cudaSetDevice(p->device)) != cudaSuccess) {
		ret = cuda_fail(e, "cudaSetDevice", err, errlen);
		goto fail;
	}
	/* Pin the slots in place: the copy reads them with DMA, no staging. */
	if ((e = cudaHostRegister(p->host, p->host_len, cudaHostRegisterDefault)) != cudaSuccess) {
		ret = cuda_fail(e, "cudaHostRegister of the batch slots", err, errlen);
		goto fail;
	}
	g->host = p->host;
	if ((e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess) {
		ret = cuda_fail(e, "cudaStreamCreate", err, errlen);
		goto fail;
	}
	if ((ret = make_slots(g, p, err, errlen)))
		goto fail;
	if (p->convert && (ret = make_tables(g, p, err, errlen)))
		goto fail;
	*out = g;
	return 0;
fail:
	rfi_gpu_destroy(g);
	return ret;
}

void rfi_gpu_destroy(rf_gpu *g)
{
	if (!g)
		return;
	cudaSetDevice(g->device);
	if (g->stream) {
		cudaStreamSynchronize(g->stream); /* copies in flight read the slots */
		cudaStreamDestroy(g->stream);
	}
	for (int s = 0; s < g->slots; s++) {
		if (g->dev_out && g->dev_out[s])
			cudaFree(g->dev_out[s]);
		if (g->dev_u8 && g->dev_u8[s])
			cudaFree(g->dev_u8[s]);
		if (g->done && g->done[s])
			cudaEventDestroy(g->done[s]);
		if (g->started && g->started[s])
			cudaEventDestroy(g->started[s]);
		if (g->released && g->released[s])
			cudaEventDestroy(g->released[s]);
	}
	if (g->lut32)
		cudaFree(g->lut32);
	if (g->lut16)
		cudaFree(g->lut16);
	if (g->host)
		cudaHostUnregister(g->host);
	free(g->dev_out);
	free(g->dev_u8);
	free(g->done);
	free(g->started);
	free(g->pending_bytes);
	pthread_mutex_destroy(&g->stats_mu);
	free(g->released);
	free(g->copied);
	free(g->has_release);
	free(g);
}

/* The on_host samples of a slot, runs of neighbours in one copy each. */
static cudaError_t copy_samples(rf_gpu *g, int slot, const uint8_t *host, uint32_t count,
				uint8_t *on_host, size_t sample_bytes, size_t *bytes)
{
	*bytes = 0;
	for (uint32_t i = 0; i < count;) {
		if (!on_host[i]) {
			i++;
			continue;
		}
		uint32_t j = i;
		while (j < count && on_host[j])
			on_host[j++] = 0;
		size_t off = (size_t)i * sample_bytes, len = (size_t)(j - i) * sample_bytes;
		cudaError_t e = cudaMemcpyAsync(g->dev_out[slot] + off, host + off, len,
						cudaMemcpyHostToDevice, g->stream);
		if (e != cudaSuccess)
			return e;
		*bytes += len;
		i = j;
	}
	return cudaSuccess;
}

int rfi_gpu_copy(rf_gpu *g, int slot, const void *host, size_t bytes, uint32_t count,
		uint8_t *on_host, size_t sample_bytes, void **dev, void **event, char *err,
		size_t errlen)
{
	cudaError_t e;
	if ((e = cudaSetDevice(g->device)) != cudaSuccess)
		return cuda_fail(e, "cudaSetDevice", err, errlen);
	/* The device slot may still be read by the consumer's last step on it. */
	if (g->has_release[slot] &&
	    (e = cudaStreamWaitEvent(g->stream, g->released[slot], 0)) != cudaSuccess)
		return cuda_fail(e, "cudaStreamWaitEvent (release point)", err, errlen);
	rfi_gpu_host_wait(g, slot); /* times the slot's previous copy (done by now) */
	if ((e = cudaEventRecord(g->started[slot], g->stream)) != cudaSuccess)
		return cuda_fail(e, "cudaEventRecord", err, errlen);
	if (on_host) {
		if ((e = copy_samples(g, slot, host, count, on_host, sample_bytes, &bytes)))
			return cuda_fail(e, "cudaMemcpyAsync", err, errlen);
	} else if (g->convert) {
		size_t u8 = (size_t)count * (size_t)g->crop * (size_t)g->crop * 3;
		if ((e = cudaMemcpyAsync(g->dev_u8[slot], host, u8, cudaMemcpyHostToDevice, g->stream)))
			return cuda_fail(e, "cudaMemcpyAsync", err, errlen);
		int k = rfi_gpu_convert_launch(g->dev_u8[slot], g->dev_out[slot], count, g->crop,
					      g->dtype, g->layout, g->lut32, g->lut16, g->stream);
		if (k)
			return cuda_fail((cudaError_t)k, "conversion kernel", err, errlen);
	} else if ((e = cudaMemcpyAsync(g->dev_out[slot], host, bytes, cudaMemcpyHostToDevice,
					g->stream))) {
		return cuda_fail(e, "cudaMemcpyAsync", err, errlen);
	}
	if ((e = cudaEventRecord(g->done[slot], g->stream)) != cudaSuccess)
		return cuda_fail(e, "cudaEventRecord", err, errlen);
	g->copied[slot] = 1;
	g->pending_bytes[slot] = g->convert && !on_host ? (size_t)count * (size_t)g->crop * (size_t)g->crop * 3
						       : bytes;
	*dev = g->dev_out[slot];
	*event = (void *)g->done[slot];
	return 0;
}

void rfi_gpu_host_wait(rf_gpu *g, int slot)
{
	if (!g->copied[slot])
		return;
	cudaSetDevice(g->device);
	cudaEventSynchronize(g->done[slot]);
	pthread_mutex_lock(&g->stats_mu);
	if (g->pending_bytes[slot]) { /* time it once */
		float ms = 0;
		if (cudaEventElapsedTime(&ms, g->started[slot], g->done[slot]) == cudaSuccess) {
			g->copy_ns += (uint64_t)(ms * 1e6);
			g->copied_bytes += g->pending_bytes[slot];
		}
		g->pending_bytes[slot] = 0;
	}
	pthread_mutex_unlock(&g->stats_mu);
}

void rfi_gpu_copy_stats(rf_gpu *g, uint64_t *bytes, uint64_t *ns)
{
	pthread_mutex_lock(&g->stats_mu);
	*bytes = g->copied_bytes;
	*ns = g->copy_ns;
	pthread_mutex_unlock(&g->stats_mu);
}

void rfi_gpu_mark_release(rf_gpu *g, int slot, void *stream)
{
	cudaSetDevice(g->device);
	if (cudaEventRecord(g->released[slot], (cudaStream_t)stream) == cudaSuccess)
		g->has_release[slot] = 1;
}

int rfi_gpu_stream_wait(void *event, void *stream)
{
	return cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0) == cudaSuccess ? 0 : -EIO;
}

void *rfi_gpu_stream(rf_gpu *g)
{
	return (void *)g->stream;
}

uint8_t *rfi_gpu_slot_device(rf_gpu *g, int slot)
{
	return g->dev_out[slot];
}

int rfi_gpu_slot_begin(rf_gpu *g, int slot)
{
	cudaSetDevice(g->device);
	if (!g->has_release[slot])
		return 0;
	return cudaStreamWaitEvent(g->stream, g->released[slot], 0) == cudaSuccess ? 0 : -EIO;
}

int rfi_gpu_event_sync(void *event)
{
	return cudaEventSynchronize((cudaEvent_t)event) == cudaSuccess ? 0 : -EIO;
}

#else /* no CUDA support built in */

int rfi_gpu_create(rf_gpu **out, const rf_gpu_params *p, char *err, size_t errlen)
{
	*out = NULL;
	rfi_fmt(err, errlen, "config: device = %d: CUDA support is not built in (meson -Dcuda)",
	       p->device);
	return -ENOTSUP;
}

void rfi_gpu_destroy(rf_gpu *g)
{
	(void)g;
}

int rfi_gpu_copy(rf_gpu *g, int slot, const void *host, size_t bytes, uint32_t count,
		uint8_t *on_host, size_t sample_bytes, void **dev, void **event, char *err,
		size_t errlen)
{
	(void)g, (void)slot, (void)host, (void)bytes, (void)count, (void)dev, (void)event;
	(void)on_host, (void)sample_bytes;
	rfi_fmt(err, errlen, "CUDA support is not built in");
	return -ENOTSUP;
}

void rfi_gpu_host_wait(rf_gpu *g, int slot)
{
	(void)g, (void)slot;
}

void rfi_gpu_mark_release(rf_gpu *g, int slot, void *stream)
{
	(void)g, (void)slot, (void)stream;
}

int rfi_gpu_stream_wait(void *event, void *stream)
{
	(void)event, (void)stream;
	return -ENOTSUP;
}

void rfi_gpu_copy_stats(rf_gpu *g, uint64_t *bytes, uint64_t *ns)
{
	(void)g;
	*bytes = *ns = 0;
}

void *rfi_gpu_stream(rf_gpu *g)
{
	(void)g;
	return NULL;
}

uint8_t *rfi_gpu_slot_device(rf_gpu *g, int slot)
{
	(void)g, (void)slot;
	return NULL;
}

int rfi_gpu_slot_begin(rf_gpu *g, int slot)
{
	(void)g, (void)slot;
	return -ENOTSUP;
}

int rfi_gpu_event_sync(void *event)
{
	(void)event;
	return -ENOTSUP;
}

#endif
