// spin.cu - a simulated training step for bench/gpu/step_wait.c: a kernel
// that spins for about `ns` nanoseconds (globaltimer), one block.
#include <stdint.h>

__global__ static void spin_kernel(uint64_t ns)
{
	uint64_t t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

extern "C" int spin_step(uint64_t ns, void *stream)
{
	spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns);
	return (int)cudaGetLastError();
}
