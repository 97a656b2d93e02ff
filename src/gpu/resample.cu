/* resample.cu - the GPU's resample + store: for each output pixel of each
 * sample, the CPU resampler's sums (resample.c: vertical taps rounded to a
 * byte, then horizontal taps rounded to a byte, weights in 1/16384), then
 * the output's value table, written in the output's type and layout. Same
 * integers as the CPU, so the same bytes for the same decoded pixels. */
#include <stdint.h>
#include <cuda_runtime.h>

#include "gpu/jpeg_gpu.h"

template <typename T>
__global__ void resample(const rf_gpu_sample_desc *__restrict__ desc,
			 const int32_t *__restrict__ starts, const int16_t *__restrict__ weights,
			 int crop, int chw, const T *__restrict__ lut)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p >= crop * crop)
		return;
	const rf_gpu_sample_desc d = desc[blockIdx.y];
	int y = p / crop, x = p % crop;
	const uint8_t *src = (const uint8_t *)d.src;
	int sy = starts[d.ys + y] - d.y0, sx = starts[d.xs + x] - d.x0;
	const int16_t *wy = weights + d.yw + (size_t)y * d.ky;
	const int16_t *wx = weights + d.xw + (size_t)x * d.kx;
	int acc[3] = { 0, 0, 0 };
	for (int i = 0; i < d.kx; i++) {
		const uint8_t *col = src + (size_t)sy * d.pitch + (size_t)(sx + i) * 3;
		int m[3] = { 0, 0, 0 };
		for (int j = 0; j < d.ky; j++) {
			const uint8_t *px = col + (size_t)j * d.pitch;
			m[0] += px[0] * wy[j];
			m[1] += px[1] * wy[j];
			m[2] += px[2] * wy[j];
		}
		for (int c = 0; c < 3; c++)
			acc[c] += ((m[c] + 8192) >> 14) * wx[i];
	}
	T *out = (T *)d.dst;
	size_t plane = (size_t)crop * crop;
	for (int c = 0; c < 3; c++) {
		int v = (acc[c] + 8192) >> 14;
		T o = lut ? lut[c * 256 + v] : (T)v;
		if (chw)
			out[c * plane + p] = o;
		else
			out[(size_t)p * 3 + c] = o;
	}
}

extern "C" int rfi_gpu_resample_launch(const rf_gpu_sample_desc *desc, const int32_t *starts,
				       const int16_t *weights, int n, int crop, int dtype, int layout,
				       const float *lut32, const uint16_t *lut16, void *stream)
{
	if (n <= 0)
		return 0;
	dim3 threads(256), blocks((unsigned)((crop * crop + 255) / 256), (unsigned)n);
	cudaStream_t s = (cudaStream_t)stream;
	int chw = layout == 1; /* RF_LAYOUT_CHW */
	if (dtype == 0) /* RF_DTYPE_UINT8: the byte itself */
		resample<uint8_t><<<blocks, threads, 0, s>>>(desc, starts, weights, crop, chw, NULL);
	else if (dtype == 1) /* RF_DTYPE_FLOAT32 */
		resample<float><<<blocks, threads, 0, s>>>(desc, starts, weights, crop, chw, lut32);
	else if (dtype == 2) /* RF_DTYPE_FLOAT16, as half bits */
		resample<uint16_t><<<blocks, threads, 0, s>>>(desc, starts, weights, crop, chw, lut16);
	else
		return (int)cudaErrorInvalidValue;
	return (int)cudaGetLastError();
}
