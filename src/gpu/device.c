/* device.c - what the build and the machine offer for the GPU: whether CUDA
 * support is built in and how many devices are visible. Feeds
 * rf_version_string() (with the image formats the build decodes); pinned
 * slots and transfers come with the GPU stage. */
#include <pthread.h>
#include <stdio.h>

#include "rf_config.h"
#include "ringfeed.h"
#include "decode/image.h"
#include "gpu/gpu.h"

#if RF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static char version[320];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

#if RF_HAVE_CUDA
/* Why no device answers (e, cudaGetDeviceCount's error), in words a user
 * can act on: the runtime's own string for a machine without a driver is
 * "CUDA driver version is insufficient for CUDA runtime version", which
 * reads as an old driver; the CUDA name stays in brackets for searches. */
static void no_device(char *buf, size_t len, cudaError_t e)
{
	int driver = 0, runtime = 0;
	cudaDriverGetVersion(&driver);  /* 0: no driver installed (no libcuda.so.1) */
	cudaRuntimeGetVersion(&runtime);
	if (driver == 0)
		snprintf(buf, len, "no NVIDIA driver on this machine (%s)", cudaGetErrorName(e));
	else if (e == cudaErrorInsufficientDriver)
		snprintf(buf, len, "the NVIDIA driver (CUDA %d.%d) is older than the CUDA runtime "
			 "built in (%d.%d) (%s)", driver / 1000, driver % 1000 / 10, runtime / 1000,
			 runtime % 1000 / 10, cudaGetErrorName(e));
	else if (e == cudaErrorNoDevice)
		snprintf(buf, len, "the NVIDIA driver sees no GPU (%s; CUDA_VISIBLE_DEVICES?)",
			 cudaGetErrorName(e));
	else
		snprintf(buf, len, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}
#endif

/* Asks the CUDA runtime once; the answer does not change while we run.
 * The image formats are rf_image_formats()'s (src/decode/image.c). */
static void make_version(void)
{
	unsigned f = rfi_image_formats();
	char images[40];
	snprintf(images, sizeof(images), "images: jpeg%s%s", f & RF_FORMAT_PNG_BIT ? ", png" : "",
		 f & RF_FORMAT_WEBP_BIT ? ", webp" : "");
	char *s = version;
#if RF_HAVE_CUDA
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		char why[160];
		no_device(why, sizeof(why), e);
		snprintf(s, sizeof(version), "%s (cuda: built in; %s: device batches unavailable, "
			 "host batches only; %s)", RF_VERSION, why, images);
	} else
		snprintf(s, sizeof(version), "%s (cuda: built in, %d device%s; %s)", RF_VERSION, n,
			 n == 1 ? "" : "s", images);
#else
	snprintf(s, sizeof(version), "%s (cuda: not built in; %s)", RF_VERSION, images);
#endif
}

const char *rfi_version_string(void)
{
	pthread_once(&version_once, make_version);
	return version;
}
