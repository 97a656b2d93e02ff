/* errors.c - rf_strerror(): names for errno values and ringfeed's own codes
 * (their sentences come from RF_ERROR_CODES, src/lists/rf_lists.h). */
#include <string.h>

#include "ringfeed.h"
#include "lists/rf_lists.h"
#include "util/util.h"

const char *rfi_strerror(int err)
{
	if (err == 0)
		return "success";
	/* ringfeed's own codes: their sentences are in the one list of them */
	static const rf_error_entry codes[] = { RF_ERROR_CODES(RF_ERROR_ENTRY) };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i].code == err)
			return codes[i].text;
	if (err < 0 && err > -4096)
		return strerror(-err); /* glibc: static strings for known codes */
	return "unknown error";
}
