/* fuzz_jpeg.c - libFuzzer target: JPEGs (libjpeg-turbo) through the compute path's steps
 * (fuzz_image.h); make_seeds.c writes its seeds. */
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_image(data, size);
}
