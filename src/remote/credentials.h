/* credentials.h - the keys S3 requests are signed with, from one source,
 * kept fresh for as long as the run lasts. A source is a kind (a tag) and
 * its settings: keys given once (the environment, the shared files), or
 * keys that expire and are fetched again before they do: EC2 instance
 * metadata (IMDSv2), a container's endpoint (ECS, EKS Pod Identity:
 * AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI), a web identity
 * token exchanged with STS (AssumeRoleWithWebIdentity: EKS IRSA), and a
 * profile's credential_process. s3.c picks the source in the order the AWS
 * SDKs do; credential_sources.c fetches each kind; this file keeps the
 * keys, refreshes them through the source's fetch and hands them over.
 *
 * Keys that expire are fetched again REFRESH_MARGIN before they do (at
 * half their life when that is shorter) on a thread of their own, so that
 * no read waits for a refresh; the new set is swapped in under a lock held
 * only to swap or copy pointers, and its generation number moves. Signers
 * (http.c) compare the generation before each request and copy the set
 * when it moved: new requests sign with the new keys, requests in flight
 * finish with the ones they were sent with. A refresh that fails keeps the
 * current keys (until they expire, and after: nothing better is to be had)
 * with one warning per run of failures, and is tried again with a backoff.
 *
 * Thread rule: made and destroyed by the thread that opens the bucket; the
 * refresh thread writes the set under `lock`; any thread may copy it
 * (rfi_creds_copy) or read its generation. Private to src/remote/. */
#ifndef RF_REMOTE_CREDENTIALS_H
#define RF_REMOTE_CREDENTIALS_H

#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h" /* rf_log_level */

typedef struct rf_creds rf_creds;
struct rf_creds_set;
struct rf_creds_source;
/* Fetches a source's keys (credential_sources.c's rfi_creds_fetch): the
 * store is handed it, and knows nothing of how (nor of HTTP, whose signer
 * takes its keys from here). @return : 0 (out filled), or a negative errno
 * with err naming the source and what it did (never a secret). */
typedef int (*rf_creds_fetch_fn)(const struct rf_creds_source *src, struct rf_creds_set *out,
				 char *err, size_t errlen);

/* Where keys come from. Values are stable within a build only. */
typedef enum rf_creds_kind {
	RF_CREDS_STATIC = 0,       /* given once: key_id, secret [, token] */
	RF_CREDS_IMDS = 1,         /* EC2 instance metadata, IMDSv2 at url */
	RF_CREDS_CONTAINER = 2,    /* GET url [Authorization: auth or auth_file's] */
	RF_CREDS_WEB_IDENTITY = 3, /* token_file's token for role_arn's keys, at STS's url */
	RF_CREDS_PROCESS = 4,      /* command's output (credential_process's JSON) */
} rf_creds_kind;

/* A source: its kind and the settings that kind reads (copied by
 * rfi_creds_create; the rest stay NULL). */
typedef struct rf_creds_source {
	rf_creds_kind kind;
	rf_creds_fetch_fn fetch; /* every kind but STATIC: how (rfi_creds_fetch) */
	const char *from;       /* for messages: "the environment", "profile P" */
	const char *url;        /* IMDS: its base; CONTAINER: the endpoint; WEB_IDENTITY: STS's */
	const char *auth;       /* CONTAINER: the Authorization header's value, or NULL */
	const char *auth_file;  /* CONTAINER: a file holding it (read at each fetch), or NULL */
	const char *token_file; /* WEB_IDENTITY: the token's file (read at each fetch) */
	const char *role_arn, *session_name; /* WEB_IDENTITY */
	const char *command;    /* PROCESS: run by /bin/sh -c */
	const char *key_id, *secret, *token; /* STATIC (token may be NULL) */
} rf_creds_source;

/* A set of keys: malloc'd copies (rfi_creds_set_free). */
typedef struct rf_creds_set {
	char *key_id, *secret, *token; /* token NULL: none */
	int64_t expires_ms;            /* Unix time in ms; 0: never */
} rf_creds_set;

/* Fills out from copies of the strings (token NULL or "": none).
 * @return : 0, or -ENOMEM with err saying so. */
int rfi_creds_set_make(rf_creds_set *out, const char *id, const char *secret, const char *token,
		      int64_t expires_ms, char *err, size_t errlen);

/* Fetches src's first set (now, on the calling thread, with src->fetch)
 * and, when it expires, starts the refresh thread that fetches it again. @return : 0, or a negative errno
 * with err[errlen] naming the source and what it did (never a secret);
 * for IMDS -ENOENT when no instance metadata answers (for the caller to
 * keep quiet: most machines are not EC2 instances). */
int rfi_creds_create(rf_creds **out, const rf_creds_source *src, char *err, size_t errlen);
/* Stops the refresh thread and frees (secrets wiped), never waiting for a
 * fetch under way: the thread is detached and frees c when that fetch
 * ends. Accepts NULL. No signer may use c afterwards (it must outlive
 * every engine and fetch). */
void rfi_creds_destroy(rf_creds *c);

/* "instance metadata at URL", "profile P's credential_process", ...: for
 * messages. Valid until rfi_creds_destroy(). */
const char *rfi_creds_from(const rf_creds *c);

/* Warnings of refreshes (failed, recovered) go to stderr at level, the most
 * verbose of the levels asked so far (each engine asks its loader's). */
void rfi_creds_log_at(rf_creds *c, rf_log_level level);

/* The generation of the current set: it moves when a refresh brings other
 * keys. Cheap (an atomic load): for the check before every request. */
uint64_t rfi_creds_generation(const rf_creds *c);

/* Copies the current set into *out and its generation into *gen.
 * @return : 0 or -ENOMEM (out zeroed). */
int rfi_creds_copy(rf_creds *c, rf_creds_set *out, uint64_t *gen);
/* Frees a set's strings (secrets wiped). */
void rfi_creds_set_free(rf_creds_set *s);

#endif
