/* sign.h - what a signer is (rf_io_sign, which the read engine carries
 * opaque to its URL reader): a transport row's own way of signing each
 * request to its objects, handed to the http side (http.c's reads, fetch.c's
 * set-up requests), which sets it on each request through libcurl's
 * signing. The s3 row's signs with AWS Signature Version 4 and keys kept
 * fresh (s3.c: rfi_s3_sign_init); another store that speaks SigV4, or
 * signs with a header line (a bearer token), fills one the same way. A
 * signed request follows redirects only to its own host (http.c). The http
 * side names no store, and a store no option of libcurl's: they meet here.
 *
 * Thread rule: made by its row at set-up, read-only after; generation()
 * and take() are called on the engine's thread before each request (and on
 * set-up's), and never wait for a refresh. Private to src/remote/. */
#ifndef RF_REMOTE_SIGN_H
#define RF_REMOTE_SIGN_H

#include <stdint.h>

#include "io/engine.h" /* rf_io_sign */

/* A set of keys as requests carry them: malloc'd secrets (rfi_free_secret). */
typedef struct rf_sign_keys {
	char *userpwd; /* "KEY_ID:SECRET": what the SigV4 signature is made with, or NULL */
	char *header;  /* a header line the keys come with (a session token; a bearer
	                * token's Authorization), or NULL */
} rf_sign_keys;

struct rf_io_sign {
	char *sigv4;                /* libcurl's AWS_SIGV4 provider string
	                             * ("aws:amz:REGION:SERVICE"), the row's; NULL:
	                             * none (the keys' header line is the signature) */
	const char *const *headers; /* lines each signed request sends besides (the
	                             * body's hash), NULL-terminated, or NULL */
	void *keys;                 /* the row's store of keys, given to the calls below */
	/* The keys' generation now: another one once a refresh brought new keys
	 * (a load, for the ring thread before each request). */
	uint64_t (*generation)(void *keys);
	/* The current keys copied into *out, *gen their generation. @return : 0,
	 * or -ENOMEM (nothing taken). */
	int (*take)(void *keys, rf_sign_keys *out, uint64_t *gen);
	/* The level the store logs a failed refresh at from now on (the
	 * loader's), or NULL. */
	void (*log_at)(void *keys, rf_log_level level);
};

#endif
