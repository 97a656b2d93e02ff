/* fuzz_state.c - libFuzzer target: a saved loader state (rf_state_parse,
 * and rf_state_seek on a copy), the bytes a caller hands to
 * cfg.resume_state. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ringfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rf_state_info info;
	char err[256];
	if (rf_state_parse(data, size, &info, err, sizeof(err)) == 0 &&
	    size <= RF_STATE_MAX_BYTES) {
		uint8_t copy[RF_STATE_MAX_BYTES];
		memcpy(copy, data, size);
		rf_state_seek(copy, size, info.next_batch ^ (info.next_batch >> 1), err,
			      sizeof(err));
	}
	return 0;
}
