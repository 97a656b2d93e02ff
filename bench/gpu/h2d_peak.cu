// h2d_peak.cu - the yardstick for the loader's copies: host-to-device
// bandwidth of cudaMemcpyAsync from pinned memory, for one batch size,
// repeated; the median of several timed loops (events on the stream).
//   build/bench/h2d_peak BYTES [--iters N] [--json]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: h2d_peak BYTES [--iters N] [--json]\n");
		return 2;
	}
	size_t bytes = strtoull(argv[1], NULL, 10);
	int iters = 50, json = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
	}
	void *host, *dev;
	cudaStream_t s;
	cudaEvent_t a, b;
	if (cudaMallocHost(&host, bytes) || cudaMalloc(&dev, bytes) || cudaStreamCreate(&s) ||
	    cudaEventCreate(&a) || cudaEventCreate(&b)) {
		fprintf(stderr, "h2d_peak: CUDA set-up failed (no device?)\n");
		return 1;
	}
	memset(host, 1, bytes);
	std::vector<double> gbs;
	for (int rep = 0; rep < 7; rep++) {
		cudaEventRecord(a, s);
		for (int i = 0; i < iters; i++)
			cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
		cudaEventRecord(b, s);
		cudaEventSynchronize(b);
		float ms;
		cudaEventElapsedTime(&ms, a, b);
		if (rep) /* the first warms up */
			gbs.push_back((double)bytes * iters / (ms * 1e-3) / 1e9);
	}
	std::sort(gbs.begin(), gbs.end());
	double med = gbs[gbs.size() / 2];
	if (json)
		printf("{\"bytes\":%zu,\"iters\":%d,\"h2d_gb_per_s\":%.3f}\n", bytes, iters, med);
	else
		printf("pinned cudaMemcpyAsync, %zu bytes: %.2f GB/s (median of %zu loops of %d)\n", bytes,
		       med, gbs.size(), iters);
	return 0;
}
