/* gpu.h - batches onto a CUDA device: pinned host slots, the host-to-device
 * copy of a finished batch on the loader's transfer stream, device-side
 * conversion of uint8 HWC to the output type and layout, and the events
 * that order all of it without host synchronization. Private.
 *
 * Thread rules: rfi_gpu_copy() is called by whichever thread lands a batch's
 * last sample (compute threads, or the ring thread in raw mode), for
 * different slots at once: each slot's events and buffers are touched only
 * by the thread copying that slot (a slot is copied once per fill), and the
 * CUDA runtime is thread-safe. rfi_gpu_host_wait() is the ring thread's,
 * rfi_gpu_mark_release() the consumer's. Without CUDA support built in, or
 * with no device, rfi_gpu_create() fails and nothing else is called. */
#ifndef RF_GPU_H
#define RF_GPU_H

#include <stddef.h>
#include <stdint.h>

typedef struct rf_gpu rf_gpu;

typedef struct rf_gpu_params {
	int device;            /* CUDA device index */
	int slots;             /* batch slots (prefetch) */
	void *host;            /* the slots' memory, page-aligned: it is pinned */
	size_t host_len;
	size_t dev_bytes;      /* device bytes per slot (the batch as the caller sees it) */
	int convert;           /* 1: the host slot holds uint8 HWC; convert on the device */
	int crop;              /* sample is crop x crop x 3 */
	int dtype, layout;     /* the device output (rf_dtype, rf_layout) when converting */
	const float *lut32;    /* [3][256] value tables of the output (rf_output) */
	const uint16_t *lut16; /* [3][256] the same as half */
} rf_gpu_params;

/* @return : 0, or -ENODEV / -ENOTSUP / -ENOMEM / -EIO with err set. */
int rfi_gpu_create(rf_gpu **out, const rf_gpu_params *p, char *err, size_t errlen);
void rfi_gpu_destroy(rf_gpu *g); /* waits for copies in flight; accepts NULL */

/* Copies slot's first `bytes` host bytes (`count` samples) to its device
 * buffer after the slot's last release point, converting if asked, and
 * records its ready event. With on_host (GPU decode: samples already written
 * on the device), only the samples i < count with on_host[i] set are copied,
 * sample_bytes each, runs of neighbours in one copy; the mask is cleared.
 * @return : 0 with *dev and *event set, or -EIO. */
int rfi_gpu_copy(rf_gpu *g, int slot, const void *host, size_t bytes, uint32_t count,
		uint8_t *on_host, size_t sample_bytes, void **dev, void **event, char *err,
		size_t errlen);

/* The transfer stream (a cudaStream_t), on which device-side decoding of
 * samples is enqueued too, so that a batch's ready event follows it. */
void *rfi_gpu_stream(rf_gpu *g);

/* The device buffer of slot. */
uint8_t *rfi_gpu_slot_device(rf_gpu *g, int slot);

/* Makes the transfer stream wait for slot's last release point: call it
 * before enqueuing any write into the slot's device buffer. The GPU decode
 * thread's. @return : 0 or -EIO. */
int rfi_gpu_slot_begin(rf_gpu *g, int slot);

/* Blocks until event (a batch's ready event) has happened. @return : 0 or -EIO. */
int rfi_gpu_event_sync(void *event);

/* Blocks until the slot's last copy has read the host memory (before the
 * ring thread fills the slot again). */
void rfi_gpu_host_wait(rf_gpu *g, int slot);

/* Records the slot's release point on stream (a cudaStream_t; NULL = the
 * legacy default stream): its next copy waits for it. */
void rfi_gpu_mark_release(rf_gpu *g, int slot, void *stream);

/* Bytes copied so far and the copies' summed time (ns) on the stream, over
 * the copies known to have finished. Consumer thread (rf_loader_stats). */
void rfi_gpu_copy_stats(rf_gpu *g, uint64_t *bytes, uint64_t *ns);

/* Makes stream wait for event. @return : 0 or -EIO. */
int rfi_gpu_stream_wait(void *event, void *stream);

/* convert.cu: launches the conversion of n samples (crop x crop x 3 uint8
 * HWC at in) into out as dtype/layout, looking values up in the device
 * tables lut32 / lut16 ([3][256]). Returns 0 or a cudaError_t. */
int rfi_gpu_convert_launch(const uint8_t *in, void *out, uint32_t n, int crop, int dtype, int layout,
			  const float *lut32, const uint16_t *lut16, void *stream);

/* rf_version_string() (src/gpu/device.c), for src/lib.c. */
const char *rfi_version_string(void);

#endif
