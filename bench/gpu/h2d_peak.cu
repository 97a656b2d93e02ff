// h2d_peak.cu - the yardstick for the loader's copies: host-to-device
// bandwidth of cudaMemcpyAsync for one batch size, the median of several
// timed loops (events on the stream), from three kinds of host memory:
//   pinned      cudaMallocHost (the usual peak)
//   registered  mmap'ed 4 KiB pages pinned with cudaHostRegister
//   huge        the same with transparent huge pages (madvise), as the loader's slots
// and timed two ways: a loop of back-to-back copies, or each copy alone
// between two events (as the loader times its copies: --single).
//   build/bench/h2d_peak BYTES [--iters N] [--memory pinned|registered|huge] [--single] [--json]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <algorithm>
#include <vector>

static void *host_memory(const char *kind, size_t bytes)
{
	if (!strcmp(kind, "pinned")) {
		void *p;
		return cudaMallocHost(&p, bytes) == cudaSuccess ? p : NULL;
	}
	size_t huge = 2u << 20, len = (bytes + huge - 1) / huge * huge;
	void *p = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	char *a = (char *)(((uintptr_t)p + huge - 1) / huge * huge);
	if (!strcmp(kind, "huge"))
		madvise(a, len, MADV_HUGEPAGE);
	memset(a, 1, len); /* fault it in (as huge pages where granted) */
	return cudaHostRegister(a, len, cudaHostRegisterDefault) == cudaSuccess ? a : NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: h2d_peak BYTES [--iters N] [--memory pinned|registered|huge] "
				"[--single] [--json]\n");
		return 2;
	}
	size_t bytes = strtoull(argv[1], NULL, 10);
	int iters = 50, json = 0, single = 0;
	const char *kind = "pinned";
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--memory") && i + 1 < argc)
			kind = argv[++i];
		else if (!strcmp(argv[i], "--single"))
			single = 1;
		else if (!strcmp(argv[i], "--json"))
			json = 1;
	}
	void *host = host_memory(kind, bytes), *dev;
	cudaStream_t s;
	cudaEvent_t a, b;
	if (!host || cudaMalloc(&dev, bytes) || cudaStreamCreate(&s) || cudaEventCreate(&a) ||
	    cudaEventCreate(&b)) {
		fprintf(stderr, "h2d_peak: CUDA set-up failed (no device, or %s memory refused)\n", kind);
		return 1;
	}
	memset(host, 1, bytes);
	std::vector<double> gbs;
	for (int rep = 0; rep < 7; rep++) {
		double ms_total = 0;
		if (single) {
			for (int i = 0; i < iters; i++) {
				cudaEventRecord(a, s);
				cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
				cudaEventRecord(b, s);
				cudaEventSynchronize(b);
				float ms;
				cudaEventElapsedTime(&ms, a, b);
				ms_total += ms;
			}
		} else {
			cudaEventRecord(a, s);
			for (int i = 0; i < iters; i++)
				cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
			cudaEventRecord(b, s);
			cudaEventSynchronize(b);
			float ms;
			cudaEventElapsedTime(&ms, a, b);
			ms_total = ms;
		}
		if (rep) /* the first warms up */
			gbs.push_back((double)bytes * iters / (ms_total * 1e-3) / 1e9);
	}
	std::sort(gbs.begin(), gbs.end());
	double med = gbs[gbs.size() / 2];
	if (json)
		printf("{\"bytes\":%zu,\"iters\":%d,\"memory\":\"%s\",\"single\":%d,\"h2d_gb_per_s\":%.3f}\n",
		       bytes, iters, kind, single, med);
	else
		printf("%s memory, cudaMemcpyAsync of %zu bytes%s: %.2f GB/s (median of %zu loops of %d)\n",
		       kind, bytes, single ? ", each timed alone" : "", med, gbs.size(), iters);
	return 0;
}
