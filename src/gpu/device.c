/* device.c - what the build and the machine offer for the GPU: whether CUDA
 * support is built in and how many devices are visible. Feeds
 * rf_version_string(); pinned slots and transfers come with the GPU stage. */
#include <stdio.h>

#include "rf_config.h"
#include "ringfeed.h"

#if RF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

RF_API int rf_version_number(void)
{
	return RF_VERSION_NUMBER;
}

RF_API const char *rf_version_string(void)
{
	static char s[128];
#if RF_HAVE_CUDA
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		snprintf(s, sizeof(s), "%s (cuda: built in, no device: %s)", RF_VERSION,
			 cudaGetErrorString(e));
	else
		snprintf(s, sizeof(s), "%s (cuda: built in, %d device%s)", RF_VERSION, n,
			 n == 1 ? "" : "s");
#else
	snprintf(s, sizeof(s), "%s (cuda: not built in)", RF_VERSION);
#endif
	return s;
}
