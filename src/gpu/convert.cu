/* convert.cu - device-side conversion of a batch from uint8 HWC (one byte a
 * channel over the bus) to the output type and layout, by the same value
 * tables the host path uses (rf_output: (v / 255 - mean) / std, and its IEEE
 * half), so device output equals host output bit for bit. */
#include <stdint.h>
#include <cuda_runtime.h>

extern "C" int rfi_gpu_convert_launch(const uint8_t *in, void *out, uint32_t n, int crop, int dtype,
				      int layout, const float *lut32, const uint16_t *lut16,
				      void *stream);

/* One thread per pixel: its three channels. */
template <typename T>
__global__ void convert(const uint8_t *__restrict__ in, T *__restrict__ out, size_t pixels,
			int plane, int chw, const T *__restrict__ lut)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= pixels)
		return;
	size_t sample = i / (size_t)plane, p = i % (size_t)plane;
	const uint8_t *px = in + i * 3;
	for (int c = 0; c < 3; c++) {
		T v = lut[c * 256 + px[c]];
		if (chw)
			out[sample * 3 * (size_t)plane + (size_t)c * plane + p] = v;
		else
			out[i * 3 + c] = v;
	}
}

extern "C" int rfi_gpu_convert_launch(const uint8_t *in, void *out, uint32_t n, int crop, int dtype,
				      int layout, const float *lut32, const uint16_t *lut16,
				      void *stream)
{
	int plane = crop * crop;
	size_t pixels = (size_t)n * (size_t)plane;
	if (!pixels)
		return 0;
	unsigned threads = 256, blocks = (unsigned)((pixels + threads - 1) / threads);
	cudaStream_t s = (cudaStream_t)stream;
	int chw = layout == 1;
	if (dtype == 1) /* RF_DTYPE_FLOAT32 */
		convert<float><<<blocks, threads, 0, s>>>(in, (float *)out, pixels, plane, chw, lut32);
	else if (dtype == 2) /* RF_DTYPE_FLOAT16: half bits */
		convert<uint16_t><<<blocks, threads, 0, s>>>(in, (uint16_t *)out, pixels, plane, chw, lut16);
	else
		return (int)cudaErrorInvalidValue;
	return (int)cudaGetLastError();
}
