// train_model.cu - the "model" of examples/train_cuda.c: one small CUDA
// kernel that reads a batch on the device (float16 CHW) and accumulates a
// number from it, standing in for a training step. C callable.
#include <cuda_fp16.h>
#include <stdint.h>

__global__ static void step_kernel(const __half *x, size_t n, float *acc)
{
	float s = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		s += __half2float(x[i]);
	atomicAdd(acc, s);
}

/* Launches one step on stream over n half values at x; *acc (device) sums. */
extern "C" int model_step(const void *x, size_t n, float *acc, void *stream)
{
	step_kernel<<<120, 256, 0, (cudaStream_t)stream>>>((const __half *)x, n, acc);
	return (int)cudaGetLastError();
}
