/* nvjpeg_api.c - loads libnvjpeg.so.13 at run time (see nvjpeg_api.h). */
#define _GNU_SOURCE
#include "gpu/nvjpeg_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static rf_nvjpeg_api api;
static const rf_nvjpeg_api *loaded;
static char load_error[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	/* The ABI's soname: the CUDA 13 series. RTLD_LOCAL keeps its symbols to us. */
	void *h = dlopen("libnvjpeg.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(load_error, sizeof(load_error), "cannot load libnvjpeg.so.13: %s",
			 e ? e : "not found");
		return;
	}
	struct { void **fn; const char *name; } table[] = {
		{ (void **)&api.CreateEx, "nvjpegCreateEx" },
		{ (void **)&api.Destroy, "nvjpegDestroy" },
		{ (void **)&api.JpegStateCreate, "nvjpegJpegStateCreate" },
		{ (void **)&api.JpegStateDestroy, "nvjpegJpegStateDestroy" },
		{ (void **)&api.DecodeBatchedInitialize, "nvjpegDecodeBatchedInitialize" },
		{ (void **)&api.DecodeBatchedEx, "nvjpegDecodeBatchedEx" },
		{ (void **)&api.JpegStreamCreate, "nvjpegJpegStreamCreate" },
		{ (void **)&api.JpegStreamDestroy, "nvjpegJpegStreamDestroy" },
		{ (void **)&api.JpegStreamParseHeader, "nvjpegJpegStreamParseHeader" },
		{ (void **)&api.JpegStreamGetFrameDimensions, "nvjpegJpegStreamGetFrameDimensions" },
		{ (void **)&api.DecodeBatchedSupportedEx, "nvjpegDecodeBatchedSupportedEx" },
		{ (void **)&api.DecodeParamsCreate, "nvjpegDecodeParamsCreate" },
		{ (void **)&api.DecodeParamsDestroy, "nvjpegDecodeParamsDestroy" },
		{ (void **)&api.DecodeParamsSetOutputFormat, "nvjpegDecodeParamsSetOutputFormat" },
		{ (void **)&api.DecodeParamsSetROI, "nvjpegDecodeParamsSetROI" },
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		*table[i].fn = dlsym(h, table[i].name);
		if (!*table[i].fn) {
			snprintf(load_error, sizeof(load_error), "libnvjpeg.so.13 lacks %s",
				 table[i].name);
			dlclose(h);
			return;
		}
	}
	loaded = &api; /* the handle stays open for the life of the process */
}

const rf_nvjpeg_api *rfi_nvjpeg_load(char *why, size_t whylen)
{
	pthread_once(&once, load);
	if (!loaded && why && whylen)
		snprintf(why, whylen, "%s", load_error);
	return loaded;
}

const char *rfi_nvjpeg_status(nvjpegStatus_t s)
{
	switch (s) {
	case NVJPEG_STATUS_SUCCESS: return "success";
	case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
	case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
	case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
	case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
	case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure";
	case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
	case NVJPEG_STATUS_ARCH_MISMATCH: return "no JPEG engines on this GPU (arch mismatch)";
	case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
	case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
	case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
	default: return "unknown nvJPEG status";
	}
}
