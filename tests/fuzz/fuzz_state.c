/* fuzz_state.c - libFuzzer target: a saved loader state (rf_state_parse),
 * the bytes a caller hands to cfg.resume_state. */
#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rf_state_info info;
	char err[256];
	rf_state_parse(data, size, &info, err, sizeof(err));
	return 0;
}
