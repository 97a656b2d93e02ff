/* jpeg_gpu.h - JPEG decode on the GPU's JPEG engines (nvJPEG's batched
 * decode, hardware backend) followed by the resample + store kernel
 * (resample.cu), both on one CUDA stream: a group of compressed images in
 * host memory becomes output samples in device memory, and no pixel crosses
 * the bus. Knows nothing of loaders: its caller says which bytes, which
 * region, which taps and which destination. Private.
 *
 * Pixels: the kernel applies the same integer taps as the CPU resampler
 * (rf_taps, 1/16384 weights, vertical pass rounded to 8 bits, then
 * horizontal), so it gives the CPU's bytes for the same decoded pixels; the
 * engines' IDCT and chroma upsampling differ slightly from libjpeg-turbo's,
 * which is the only source of difference between GPU and CPU samples.
 *
 * Thread rule: one rf_gpu_jpeg is driven by one thread. */
#ifndef RF_JPEG_GPU_H
#define RF_JPEG_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rf_gpu_jpeg rf_gpu_jpeg;

typedef struct rf_gpu_jpeg_params {
	int device;            /* CUDA device index */
	void *stream;          /* cudaStream_t every call enqueues on */
	int max_group;         /* images per rfi_gpu_jpeg_decode() at most */
	int crop;              /* outputs are crop x crop x 3 */
	int dtype, layout;     /* rf_dtype, rf_layout of the outputs */
	const float *lut32;    /* [3][256] host value tables (rf_output), copied */
	const uint16_t *lut16;
} rf_gpu_jpeg_params;

/* One image of a group. The taps are in image coordinates (rf_taps: crop
 * outputs, kx / ky taps each, start[o] the first input of output o). */
typedef struct rf_gpu_jpeg_item {
	const uint8_t *data;   /* compressed bytes, host */
	size_t len;
	int width, height;     /* the image's size (rfi_gpu_jpeg_probe) */
	int roi_x, roi_y, roi_w, roi_h; /* the pixels the taps read */
	const int32_t *xstart, *ystart;
	const int16_t *xweight, *yweight;
	int kx, ky;
	void *dst;             /* device: where the output sample goes */
} rf_gpu_jpeg_item;

/* Loads nvJPEG, opens the engines. @return : 0, or -ENOTSUP (no nvJPEG
 * library, no JPEG engines on this GPU, or built without nvjpeg.h), -ENOMEM,
 * -EIO, with err[errlen] saying which. */
int rfi_gpu_jpeg_create(rf_gpu_jpeg **out, const rf_gpu_jpeg_params *p, char *err, size_t errlen);
/* Waits for its work on the stream, frees everything. Accepts NULL. */
void rfi_gpu_jpeg_destroy(rf_gpu_jpeg *g);

/* Reads the headers of data[len]. @return : 0 with *w, *h when the engines
 * decode it; 1 when they do not (progressive, CMYK, 4:1:1, not a JPEG, ...:
 * the CPU decoder takes it and reports what is wrong, if anything). */
int rfi_gpu_jpeg_probe(rf_gpu_jpeg *g, const uint8_t *data, size_t len, int *w, int *h);

/* Enqueues the decode of n (<= max_group) probed images and their
 * resampling into their destinations. *ticket names the group for
 * rfi_gpu_jpeg_wait(). The items' data must stay untouched until then; the
 * destinations are written in stream order.
 * @return : 0; -EIO with err set when the engines refused the group (none
 *           of its destinations is valid then; the caller decodes them
 *           elsewhere). */
int rfi_gpu_jpeg_decode(rf_gpu_jpeg *g, const rf_gpu_jpeg_item *items, int n, int *ticket,
		       char *err, size_t errlen);

/* Blocks until the group `ticket` no longer reads its items' host bytes. */
void rfi_gpu_jpeg_wait(rf_gpu_jpeg *g, int ticket);

/* The engines' busy time so far: summed stream time of finished groups (ns)
 * and the images in them. */
void rfi_gpu_jpeg_stats(rf_gpu_jpeg *g, uint64_t *images, uint64_t *ns);

/* The per-sample record the kernel reads (resample.cu); device pointers as
 * integers so that C and CUDA agree on the layout. */
typedef struct rf_gpu_sample_desc {
	uint64_t src;          /* decoded region, RGB interleaved */
	uint64_t dst;          /* the output sample */
	int32_t pitch;         /* bytes per row of src */
	int32_t x0, y0;        /* image coordinates of src's first pixel */
	int32_t kx, ky;
	uint32_t xs, ys;       /* this sample's starts in the start array */
	uint32_t xw, yw;       /* and its weights in the weight array */
	int32_t pad;
} rf_gpu_sample_desc;

/* resample.cu: n samples, crop x crop each. @return : 0 or a cudaError_t. */
int rfi_gpu_resample_launch(const rf_gpu_sample_desc *desc, const int32_t *starts,
			   const int16_t *weights, int n, int crop, int dtype, int layout,
			   const float *lut32, const uint16_t *lut16, void *stream);

#ifdef __cplusplus
}
#endif

#endif
