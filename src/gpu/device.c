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

/* Asks the CUDA runtime once; the answer does not change while we run.
 * The image formats are rf_image_formats()'s (src/decode/image.c). */
static void make_version(void)
{
	unsigned f = rf_image_formats();
	char images[40];
	snprintf(images, sizeof(images), "images: jpeg%s%s", f & RF_FORMAT_PNG_BIT ? ", png" : "",
		 f & RF_FORMAT_WEBP_BIT ? ", webp" : "");
	char *s = version;
#if RF_HAVE_CUDA
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess)
		snprintf(s, sizeof(version), "%s (cuda: built in, no device: %s; %s)", RF_VERSION,
			 cudaGetErrorString(e), images);
	else
		snprintf(s, sizeof(version), "%s (cuda: built in, %d device%s; %s)", RF_VERSION, n,
			 n == 1 ? "" : "s", images);
#else
	snprintf(s, sizeof(version), "%s (cuda: not built in; %s)", RF_VERSION, images);
#endif
}

RF_API const char *rf_version_string(void)
{
	pthread_once(&version_once, make_version);
	return version;
}
