/* fuzz_manifest.c - libFuzzer target: a manifest (path<TAB>label[<TAB>weight]
 * lines) read by rfi_index_build; its paths are looked up beside it. */
#define _GNU_SOURCE /* mkdtemp (fuzz_file.h) */
#include "fuzz_file.h"
#include "index/index.h"
#include "source/source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size, "manifest.tsv");
	rf_index idx;
	char err[512];
	if (rfi_index_build(&idx, path, 0, err, sizeof(err)) == 0)
		rfi_index_free(&idx);
	return 0;
}
