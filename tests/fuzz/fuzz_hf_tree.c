/* fuzz_hf_tree.c - libFuzzer target: the Hugging Face Hub's tree listing
 * page (rfi_hf_tree_parse) and Link header (rfi_hf_link_next), as the hf
 * transport takes them from the Hub (issue 39). The input is a page, then
 * after a NUL byte a Link header's value. Every file handed on has a
 * non-empty path without a NUL, shorter than RF_HF_PATH_MAX; a refusal says
 * why; a file callback's own return value (paths starting with '!' return
 * 7 here) stops the walk with that value; a next URL fits its buffer. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/hf_tree.h"

#define must(c)                                                                        \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "fuzz_hf_tree: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                       \
		}                                                                      \
	} while (0)

static int on_file(void *user, const char *path, uint64_t size)
{
	(void)user, (void)size;
	size_t n = strlen(path);
	must(n > 0 && n < RF_HF_PATH_MAX);
	return path[0] == '!' ? 7 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t page = nul ? (size_t)(nul - data) : size;
	char *doc = malloc(page + 1);
	if (!doc)
		return 0;
	memcpy(doc, data, page);
	doc[page] = '\0';
	char err[256] = "";
	int ret = rfi_hf_tree_parse(doc, page, on_file, NULL, err, sizeof(err));
	must(ret == 0 || ret == 7 || ret == -ENOMEM || (ret == -EPROTO && err[0]));
	free(doc);
	if (nul) {
		size_t ln = size - page - 1;
		char *link = malloc(ln + 1), out[64];
		if (!link)
			return 0;
		memcpy(link, nul + 1, ln);
		link[ln] = '\0';
		if (rfi_hf_link_next(link, out, sizeof(out)))
			must(strlen(out) < sizeof(out) && out[0]);
		free(link);
	}
	return 0;
}
