/* fuzz_webp.c - libFuzzer target: WebP files (libwebp) through the compute path's steps
 * (fuzz_image.h); make_seeds.c writes its seeds. */
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_image(data, size);
}
