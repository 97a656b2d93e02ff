/* errors.c - rf_strerror(): names for errno values and ringfeed's own codes. */
#include <string.h>

#include "ringfeed.h"
#include "util/util.h"

RF_API const char *rf_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case RF_EOF: return "end of data: every epoch was delivered";
	case RF_EBADSAMPLE: return "a sample could not be read or decoded";
	case RF_ETOOMANYBAD: return "too many bad samples in a row: no replacement could be found";
	case RF_ENOIOURING: return "io_uring is unavailable on this system";
	case RF_ECONFIG: return "invalid configuration value";
	case RF_EEMPTY: return "the source holds no usable sample";
	case RF_EINDEX: return "the source is malformed";
	case RF_ESTATE: return "the saved state is truncated, corrupted or not a state";
	case RF_ESTATEVERSION: return "the saved state has a newer format than this library reads";
	case RF_ESTATEMISMATCH: return "the saved state belongs to another dataset or configuration";
	case RF_EFORKED: return "the loader belongs to another process (created before a fork)";
	case RF_ELOST: return "part of a shard is damaged or cut: the samples in it are lost";
	case RF_EABI: return "the caller's structs do not match this library's (built against another ringfeed.h)";
	}
	if (err < 0 && err > -4096)
		return strerror(-err); /* glibc: static strings for known codes */
	return "unknown error";
}
