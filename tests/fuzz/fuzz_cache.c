/* fuzz_cache.c - libFuzzer target: an index cache file
 * (rfi_index_cache_load), which a later run trusts only after checking it.
 * The source is the fuzzer's own folder, so a cache that names it (the
 * seeds do) reaches the record checks. */
#define _GNU_SOURCE /* mkdtemp (fuzz_file.h) */
#include "fuzz_file.h"
#include "index/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size, "index.cache");
	rf_index idx;
	char err[512];
	for (int any = 0; any <= 1; any++)
		if (rfi_index_cache_load(&idx, fuzz_dir, any, path, err, sizeof(err)) == 0)
			rfi_index_free(&idx);
	return 0;
}
