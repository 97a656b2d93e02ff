/* presigned.h - where a store's redirects point, remembered until they
 * expire (issue 39). A store such as the Hugging Face Hub answers a read
 * of an object's URL with a redirect (302) to another host: a CDN URL that
 * carries its own signature in its query and expires. Asking the store
 * again for every ranged read costs a round trip and counts against its
 * rate limit, so the URL a redirect gave is kept, per object, and reads
 * go there directly until shortly before it expires; a refusal there
 * (403: expired early, revoked) drops it and the store is asked again.
 * The signer of such a store carries one (sign.h: rf_io_sign.presigned);
 * http.c's reads and fetch.c's set-up requests use it. The redirected URL
 * is a credential while it lives: never printed (http.c shows it without
 * its query).
 *
 * Thread rule: any thread; one lock inside (reads of several engines and
 * set-up share it). Private to src/remote/. */
#ifndef RF_REMOTE_PRESIGNED_H
#define RF_REMOTE_PRESIGNED_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct rf_presigned rf_presigned;

/* A URL is used until this long before it expires (a read started then
 * ends before the signature does). */
#define RF_PRESIGNED_MARGIN_S 30
/* How long a redirect's URL is kept when its query says no expiry. */
#define RF_PRESIGNED_DEFAULT_S 300

/* NULL: out of memory. */
rf_presigned *rfi_presigned_new(void);
void rfi_presigned_free(rf_presigned *p);

/* The URL from's redirect pointed to, still good (not within the margin of
 * its expiry), into out[len]. @return : 1 found, 0 none (or it expired:
 * forgotten). */
int rfi_presigned_get(rf_presigned *p, const char *from, char *out, size_t len);

/* Keeps to as from's redirect, until the expiry its query says
 * (rfi_presigned_lifetime). Nothing kept when it is out of memory or
 * already expired: the next read asks the store again. */
void rfi_presigned_put(rf_presigned *p, const char *from, const char *to);

/* Forgets from's redirect (its URL was refused). */
void rfi_presigned_forget(rf_presigned *p, const char *from);

/* Seconds from now (a wall-clock time) until url's signature expires, from
 * its query: Expires=UNIX-TIME (CloudFront, S3's older presigned URLs), or
 * X-Amz-Date=YYYYMMDDTHHMMSSZ with X-Amz-Expires=SECONDS (SigV4's);
 * deflt when it says neither. May be negative (expired). Pure. */
int64_t rfi_presigned_lifetime(const char *url, time_t now, int64_t deflt);

#endif
