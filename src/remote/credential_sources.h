/* credential_sources.h - how each kind of credential source is fetched
 * (credential_sources.c): the fetch s3.c hands the store of keys
 * (credentials.h), and the one parser of the sources' answers.
 *
 * Thread rule: none (each call stands alone; the refresh thread calls the
 * fetch). Private to src/remote/. */
#ifndef RF_REMOTE_CREDENTIAL_SOURCES_H
#define RF_REMOTE_CREDENTIAL_SOURCES_H

#include <stddef.h>

#include "remote/credentials.h"

/* Fetches src's keys by its kind (IMDS, CONTAINER, WEB_IDENTITY, PROCESS:
 * not STATIC): an rf_creds_fetch_fn. @return : 0 (out filled:
 * rfi_creds_set_free), or a negative errno with err naming the source and
 * what it did (never a secret); for IMDS -ENOENT when no instance metadata
 * answers. */
int rfi_creds_fetch(const rf_creds_source *src, rf_creds_set *out, char *err, size_t errlen);

/* Reads a source's answer doc[len] (NUL-terminated; a NUL inside is
 * refused): JSON for IMDS and a container endpoint (AccessKeyId,
 * SecretAccessKey, Token, Expiration) and a credential_process ("Version":
 * 1, its token as SessionToken), STS's XML for a web identity. from names
 * the source in messages. For the fetches, and the fuzz target.
 * @return : 0 (out filled: rfi_creds_set_free), -EPROTO with err saying
 * what is missing or wrong (never a secret), -ENOMEM. */
int rfi_creds_parse(rf_creds_kind kind, const char *doc, size_t len, const char *from,
		   rf_creds_set *out, char *err, size_t errlen);

#endif
