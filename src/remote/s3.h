/* s3.h - an S3 bucket (AWS, or a store that speaks its API: MinIO, Ceph
 * RGW, R2, GCS's interoperability endpoint) as the AWS tools find it:
 * where it is (AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL / the profile's
 * endpoint_url, else AWS's regional endpoint), its region (AWS_REGION,
 * AWS_DEFAULT_REGION, the profile's), and the credentials to sign with,
 * in the AWS SDKs' order: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY
 * [+ AWS_SESSION_TOKEN]; a web identity (AWS_WEB_IDENTITY_TOKEN_FILE +
 * AWS_ROLE_ARN [+ AWS_ROLE_SESSION_NAME], or the profile's
 * web_identity_token_file + role_arn) exchanged with STS; the profile's
 * keys in ~/.aws/credentials; its credential_process; its keys in
 * ~/.aws/config; a container's endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI
 * / _RELATIVE_URI [+ AWS_CONTAINER_AUTHORIZATION_TOKEN / _FILE]); EC2
 * instance metadata (IMDSv2; AWS_EC2_METADATA_SERVICE_ENDPOINT,
 * AWS_EC2_METADATA_DISABLED); else none: unsigned requests, a public
 * bucket. Keys that expire are refreshed for as long as the bucket is open
 * (credentials.h). An AWS_PROFILE that names no profile is refused, as the
 * AWS CLI refuses it. Objects become https URLs the read engine GETs,
 * signed with SigV4 by libcurl as the bucket's signer says (sign.h: made
 * here, opaque to the engine). A secret is never put in a message.
 *
 * Thread rule: made at set-up; then read-only, shared (the keys change
 * inside creds, under its own lock). Private. */
#ifndef RF_REMOTE_S3_H
#define RF_REMOTE_S3_H

#include <stddef.h>
#include <stdint.h>

#include "remote/sign.h" /* struct rf_io_sign */

typedef struct rf_s3 {
	char *bucket;
	char *endpoint;     /* "https://s3.eu-west-1.amazonaws.com", no trailing '/' */
	int path_style;     /* ENDPOINT/BUCKET/KEY; else SCHEME://BUCKET.HOST/KEY */
	char *region;
	struct rf_creds *creds; /* the keys, kept fresh (credentials.h); NULL: anonymous */
	rf_io_sign sign;    /* SigV4 with creds (rfi_s3_sign) */
} rf_s3;

/* The bucket of url (s3://BUCKET/...), resolved as the header says.
 * @return : 0, -EINVAL (not s3://BUCKET; an AWS_PROFILE that names no
 * profile: "The config profile (P) could not be found"), -ENOMEM, or what
 * a credential source that is set up failed with; err says why. */
int rfi_s3_open(rf_s3 **out, const char *url, char *err, size_t errlen);
void rfi_s3_free(rf_s3 *s3);

/* What the bucket's requests are signed with (the engine's reads, its
 * listing, set-up's requests), or NULL: anonymous, unsigned. */
const rf_io_sign *rfi_s3_sign(const rf_s3 *s3);

/* A signer of S3 requests in region (NULL: us-east-1) with creds' keys
 * (SigV4 through libcurl; creds must outlive it): the bucket's, and a
 * test's. @return : 0 or -ENOMEM. */
int rfi_s3_sign_init(rf_io_sign *out, struct rf_creds *creds, const char *region);
void rfi_s3_sign_free(rf_io_sign *s);

/* The https URL of key (percent-encoded), malloc'd; NULL: out of memory. */
char *rfi_s3_object_url(const rf_s3 *s3, const char *key);

/* The key of an s3:// URL of this bucket (what follows "s3://BUCKET/"). */
const char *rfi_s3_key_of(const char *url);

/* Lists the objects whose keys start with prefix (ListObjectsV2, every
 * page), in key order, calling fn for each (a non-zero return stops the
 * listing and is returned); each page's request takes budget_ms at most,
 * all its tries (0: RF_IO_URL_BUDGET_MS). @return : 0, fn's value, or a
 * negative errno with err saying why (an S3 error: its status, Code and
 * Message; -EPROTO: a listing that is broken, rfi_s3_list_page()). */
int rfi_s3_list(const rf_s3 *s3, const char *prefix,
	       int (*fn)(void *user, const char *key, uint64_t size), void *user,
	       uint32_t budget_ms, char *err, size_t errlen);

/* A listing's pages as they come, each checked against the ones before:
 * S3 lists each key once, in ascending UTF-8 byte order across pages, and
 * each page's NextContinuationToken is new. A store that breaks that (some
 * S3-compatible stores repeat a token forever, or a page's keys) would be
 * listed forever, or make an object a source twice. Zeroed to start. */
typedef struct rf_s3_listing {
	char last[1100];    /* the last key listed */
	uint64_t keys;      /* keys listed so far */
	uint32_t pages;     /* pages taken */
	uint64_t *tokens;   /* the tokens given so far, hashed */
	size_t ntokens, cap;
	int truncated;      /* the last page said more follow, */
	char next[1024];    /* ... from this token */
} rf_s3_listing;

/* Takes one page, doc[0..len) (the XML of a ListObjectsV2 answer; not
 * NUL-terminated): fn for each of its keys (<Contents>), in order.
 * @return : 0; fn's non-zero value; -EPROTO with why[whylen] saying what
 *           the store did (a key repeated or out of order, a token given
 *           before, a truncated page without its token); -ENOMEM. */
int rfi_s3_list_page(rf_s3_listing *ls, const char *doc, size_t len,
		    int (*fn)(void *user, const char *key, uint64_t size), void *user, char *why,
		    size_t whylen);
void rfi_s3_listing_free(rf_s3_listing *ls);

#endif
