/* fuzz_credentials.c - libFuzzer target: a credential source's answer
 * (rfi_creds_parse): the first byte picks the kind (IMDS's and a container
 * endpoint's JSON, STS's XML, a credential_process's JSON), the rest is
 * the answer. */
#include <stdlib.h>
#include <string.h>

#include "remote/credential_sources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const rf_creds_kind kinds[] = { RF_CREDS_IMDS, RF_CREDS_CONTAINER,
					       RF_CREDS_WEB_IDENTITY, RF_CREDS_PROCESS };
	rf_creds_kind kind = kinds[data[0] % 4];
	char *doc = malloc(size); /* the answer, NUL-terminated as fetch.c leaves it */
	if (!doc)
		return 0;
	memcpy(doc, data + 1, size - 1);
	doc[size - 1] = '\0';
	rf_creds_set s;
	char err[512];
	if (rfi_creds_parse(kind, doc, size - 1, "fuzz", &s, err, sizeof(err)) == 0)
		rfi_creds_set_free(&s);
	free(doc);
	return 0;
}
