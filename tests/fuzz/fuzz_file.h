/* fuzz_file.h - for targets whose parser reads a file: writes the input to
 * one file in a private folder made at start-up. */
#ifndef RF_FUZZ_FILE_H
#define RF_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The folder (created once, removed at exit) and the file in it. */
static char fuzz_dir[64], fuzz_path[96];

static void fuzz_cleanup(void)
{
	unlink(fuzz_path);
	rmdir(fuzz_dir);
}

/* Writes data[size] to fuzz_path; returns fuzz_path. */
static const char *fuzz_file(const uint8_t *data, size_t size, const char *name)
{
	if (!fuzz_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/rf-fuzz-XXXXXX", t ? t : "/tmp");
		if (!mkdtemp(fuzz_dir))
			abort();
		snprintf(fuzz_path, sizeof(fuzz_path), "%s/%s", fuzz_dir, name);
		atexit(fuzz_cleanup);
	}
	FILE *f = fopen(fuzz_path, "wb");
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
		abort();
	return fuzz_path;
}

#endif
