/* fuzz_listing.c - libFuzzer target: S3 listing pages (ListObjectsV2's
 * XML) taken one after the other by rfi_s3_list_page(), as rfi_s3_list()
 * takes a bucket's. The input is the pages, separated by NUL bytes (at
 * most 64). Every key handed on must come after every key before it (the
 * listing is refused otherwise: a store that repeats keys, or lists them
 * out of order, is never followed), each page that says more follow must
 * name a token no earlier page gave (a listing that repeats a token never
 * ends), a refusal says why, and a key callback's own return value (keys
 * starting with '!' return 7 here) stops the listing with that value. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/s3.h"

#define must(c)                                                                        \
	do {                                                                           \
		if (!(c)) {                                                            \
			fprintf(stderr, "fuzz_listing: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                       \
		}                                                                      \
	} while (0)

typedef struct seen {
	char last[1100];
	int any;
} seen;

static int on_key(void *user, const char *key, uint64_t size)
{
	seen *s = user;
	(void)size;
	must(strlen(key) < sizeof(s->last));
	must(!s->any || strcmp(key, s->last) > 0);
	snprintf(s->last, sizeof(s->last), "%s", key);
	s->any = 1;
	return key[0] == '!' ? 7 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rf_s3_listing ls = { 0 };
	seen s = { .any = 0 };
	char why[1400], tokens[64][1024];
	int ntokens = 0;
	size_t pos = 0;
	for (int page = 0; page < 64 && pos <= size; page++) {
		const uint8_t *end = memchr(data + pos, 0, size - pos);
		size_t len = end ? (size_t)(end - (data + pos)) : size - pos;
		why[0] = '\0';
		/* a page of its own allocation: a read past it shows under ASan */
		char *doc = malloc(len ? len : 1);
		must(doc);
		memcpy(doc, data + pos, len);
		int ret = rfi_s3_list_page(&ls, doc, len, on_key, &s, why, sizeof(why));
		free(doc);
		if (ret) {
			must(ret == 7 || ret == -EPROTO || ret == -ENOMEM);
			must(ret == 7 || why[0]);
			break;
		}
		if (!ls.truncated)
			break;
		must(ls.next[0]);
		for (int i = 0; i < ntokens; i++)
			must(strcmp(tokens[i], ls.next));
		snprintf(tokens[ntokens++], sizeof(tokens[0]), "%s", ls.next);
		if (!end)
			break;
		pos += len + 1;
	}
	rfi_s3_listing_free(&ls);
	return 0;
}
