/* nvjpeg_api.h - nvJPEG, loaded at run time: dlopen("libnvjpeg.so.13") and a
 * table of the functions the GPU JPEG path calls. Nothing links against
 * libnvjpeg, so libringfeed loads and runs where it is absent; only the GPU
 * decode path then refuses. Private; built only with nvjpeg.h (RF_HAVE_NVJPEG).
 *
 * Thread rule: rfi_nvjpeg_load() may be called from any thread, any number of
 * times; it loads once (pthread_once) and the table is read-only afterwards. */
#ifndef RF_NVJPEG_API_H
#define RF_NVJPEG_API_H

#include <stddef.h>
#include <cuda_runtime.h>
#include <nvjpeg.h>

typedef struct rf_nvjpeg_api {
	nvjpegStatus_t (*CreateEx)(nvjpegBackend_t, nvjpegDevAllocator_t *, nvjpegPinnedAllocator_t *,
				   unsigned int, nvjpegHandle_t *);
	nvjpegStatus_t (*Destroy)(nvjpegHandle_t);
	nvjpegStatus_t (*JpegStateCreate)(nvjpegHandle_t, nvjpegJpegState_t *);
	nvjpegStatus_t (*JpegStateDestroy)(nvjpegJpegState_t);
	nvjpegStatus_t (*DecodeBatchedInitialize)(nvjpegHandle_t, nvjpegJpegState_t, int, int,
						  nvjpegOutputFormat_t);
	nvjpegStatus_t (*DecodeBatchedEx)(nvjpegHandle_t, nvjpegJpegState_t, const unsigned char *const *,
					  const size_t *, nvjpegImage_t *, nvjpegDecodeParams_t *,
					  cudaStream_t);
	nvjpegStatus_t (*JpegStreamCreate)(nvjpegHandle_t, nvjpegJpegStream_t *);
	nvjpegStatus_t (*JpegStreamDestroy)(nvjpegJpegStream_t);
	nvjpegStatus_t (*JpegStreamParseHeader)(nvjpegHandle_t, const unsigned char *, size_t,
						nvjpegJpegStream_t);
	nvjpegStatus_t (*JpegStreamGetFrameDimensions)(nvjpegJpegStream_t, unsigned int *,
						       unsigned int *);
	nvjpegStatus_t (*DecodeBatchedSupportedEx)(nvjpegHandle_t, nvjpegJpegStream_t,
						   nvjpegDecodeParams_t, int *);
	nvjpegStatus_t (*DecodeParamsCreate)(nvjpegHandle_t, nvjpegDecodeParams_t *);
	nvjpegStatus_t (*DecodeParamsDestroy)(nvjpegDecodeParams_t);
	nvjpegStatus_t (*DecodeParamsSetOutputFormat)(nvjpegDecodeParams_t, nvjpegOutputFormat_t);
	nvjpegStatus_t (*DecodeParamsSetROI)(nvjpegDecodeParams_t, int, int, int, int);
} rf_nvjpeg_api;

/* @return : the loaded table, or NULL with why[whylen] saying what is
 * missing (the library, or a function in it). */
const rf_nvjpeg_api *rfi_nvjpeg_load(char *why, size_t whylen);

/* A name for an nvjpegStatus_t. */
const char *rfi_nvjpeg_status(nvjpegStatus_t s);

#endif
