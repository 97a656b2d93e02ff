/* device.c - what the build and the machine offer for the GPU: whether CUDA
 * support is built in and how many devices are visible. Feeds
 * rf_version_string() (with the image formats the build decodes); pinned
 * slots and transfers come with the GPU stage. */
#include <pthread.h>
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

static char version[160];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

/* The image formats besides JPEG, as the build found their libraries. */
#define RF_IMAGES "images: jpeg" RF_IMAGES_PNG RF_IMAGES_WEBP
#if RF_HAVE_PNG
#define RF_IMAGES_PNG ", png"
#else
#define RF_IMAGES_PNG ""
#endif
#if RF_HAVE_WEBP
#define RF_IMAGES_WEBP ", webp"
#else
#define RF_IMAGES_WEBP ""
#endif

/* Asks the CUDA runtime once; the answer does not change while we run. */
static void make_version(void)
{
	char *s = version;
#if RF_HAVE_CUDA
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		snprintf(s, sizeof(version), "%s (cuda: built in, no device: %s; %s)", RF_VERSION,
			 cudaGetErrorString(e), RF_IMAGES);
	else
		snprintf(s, sizeof(version), "%s (cuda: built in, %d device%s; %s)", RF_VERSION, n,
			 n == 1 ? "" : "s", RF_IMAGES);
#else
	snprintf(s, sizeof(version), "%s (cuda: not built in; %s)", RF_VERSION, RF_IMAGES);
#endif
}

RF_API const char *rf_version_string(void)
{
	pthread_once(&version_once, make_version);
	return version;
}
