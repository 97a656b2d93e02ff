/* transport.h - how a source's objects are reached, chosen once by the
 * scheme of its location: a row of one table (transport.c) per way, the
 * local file system (file), http(s):// URLs (http), s3:// buckets (s3: an
 * endpoint, and a signer whose keys stay fresh). The index holds the one a
 * remote source opened (rf_index.transport); set-up's requests (an index
 * object, a file beside the shards such as zstd.dict, a token shard's
 * header, a bucket's listing) go through it, and whoever makes a read
 * engine for the source takes from it the URL reader (rfi_transport_reader)
 * and the signer (rfi_transport_sign) of the reads of a run, and the words
 * a failed read's message adds (rfi_transport_hint). The engine knows
 * neither: it calls the reader it is given and carries the signer to it.
 * Nothing else tests a scheme: the record store and the pipeline ask here.
 *
 * Adding a transport: its files in src/remote/, a row (its ops) in
 * transport.c's table, its entry in tests/layout_check.py (docs/DESIGN.md,
 * "Adding a transport", says the places).
 *
 * Thread rule: opened at set-up on the thread that creates the loader; then
 * read-only and shared (an s3 row's keys change inside its credential
 * store, under that store's lock). Private to the library. */
#ifndef RF_REMOTE_TRANSPORT_H
#define RF_REMOTE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "io/engine.h"    /* rf_io_sign, rf_io_url_ops */
#include "remote/fetch.h" /* rf_fetch, rf_fetch_result */

/* One source's opened transport: its row and that row's own state (an s3
 * row's bucket; none for file and http). */
typedef struct rf_transport rf_transport;

typedef struct rf_transport_ops {
	const char *name; /* "file", "http", "s3" */
	/* 1 when location is this row's (its scheme); the file row takes what
	 * no other row does */
	int (*matches)(const char *location);
	/* the row's state for the source at location (its first object, or its
	 * folder): a bucket's endpoint and credentials; NULL state is fine */
	int (*open)(void **state, const char *location, char *err, size_t errlen);
	/* the URL location is read at (malloc'd): itself, or a bucket's https
	 * URL of the key; 1 with err set: not of this source (another bucket) */
	int (*read_url)(void *state, const char *location, char **out, char *err, size_t errlen);
	/* how each request of it is signed, or NULL (none); opaque to the
	 * engine, known to reader (the s3 row's: remote/sign.h) */
	const rf_io_sign *(*sign)(void *state);
	/* what the engine reads its URLs with (remote rows; http and s3 share
	 * http.c's ranged GETs), or NULL */
	const rf_io_url_ops *reader;
	/* the words a failed read's message adds for res, the reader's error
	 * (where a CA bundle is named), or NULL */
	const char *(*hint)(int res);
	/* lists folder's objects (location ending in '/'), calling fn with each
	 * one's name relative to the folder, in name order; NULL: the row lists
	 * no folder */
	int (*list)(void *state, const char *folder,
		    int (*fn)(void *user, const char *name, uint64_t size), void *user,
		    uint32_t budget_ms, char *err, size_t errlen);
	void (*free)(void *state);
	int remote;        /* its objects are fetched (URLs), not opened */
	int read_elsewhere; /* the URL read is not the location (s3:// -> https://):
	                     * messages show both */
} rf_transport_ops;

/* The row location's scheme chooses (never NULL: the file row at least). */
const rf_transport_ops *rfi_transport_of(const char *location);

/* 1 when location is fetched over the network (http(s)://, s3://). */
int rfi_transport_is_remote(const char *location);

/* Opens location's row for a source. @return : 0, or a negative errno (an
 * s3 row's, rfi_s3_open's) with err set. */
int rfi_transport_open(rf_transport **out, const char *location, char *err, size_t errlen);
void rfi_transport_free(rf_transport *t);

/* The row t opened; the file row when t is NULL (a local source opens none). */
const rf_transport_ops *rfi_transport_ops_of(const rf_transport *t);

/* What each request to t's objects is signed with (engine reads and
 * set-up fetches alike), or NULL. */
const rf_io_sign *rfi_transport_sign(const rf_transport *t);

/* The URL reader of t's objects (rf_io_params.url_reader), or NULL: t is
 * NULL (a local source) or reads no URLs. */
const rf_io_url_ops *rfi_transport_reader(const rf_transport *t);

/* What a failed read's message adds for res (a read's negative errno),
 * as t's row words it: " (TLS: ...)", or "". */
const char *rfi_transport_hint(const rf_transport *t, int res);

/* A set-up request (rfi_fetch_run) to one of t's objects, signed as t signs. */
int rfi_transport_fetch(const rf_transport *t, const rf_fetch *f, rf_fetch_result *out,
		       char *err, size_t errlen);

/* Lists folder (a location ending in '/') through t, as its row's list
 * says; -ENOTSUP with err set when the row lists no folder. */
int rfi_transport_list(const rf_transport *t, const char *folder,
		      int (*fn)(void *user, const char *name, uint64_t size), void *user,
		      uint32_t budget_ms, char *err, size_t errlen);

/* The URL of location read through t: *t opened at its first remote
 * location (a row with state, s3, in place of one without: the first s3://
 * location of a list that began with https:// ones), every later one of
 * the same source (one bucket). @return : 0, 1 with err set (not the
 * source's bucket), or a negative errno with err set. */
int rfi_transport_read_url(rf_transport **t, const char *location, char **out, char *err,
			  size_t errlen);

/* A whole object beside a source's objects (root/name: zstd.dict), as a
 * path to open: root/name where the file row has it; a remote one fetched
 * (max_body at most, within budget_ms) into an anonymous file, *fd its
 * descriptor to close after, path "/proc/self/fd/N". path[0] is '\0' when
 * there is none (no file; HTTP 404). @return : 0, or a negative errno with
 * err set ("URL: HTTP 403 ..."). */
int rfi_transport_beside(rf_transport **t, const char *root, const char *name,
			size_t max_body, uint32_t budget_ms, char *path, size_t plen, int *fd,
			char *err, size_t errlen);

/* A whole remote object (location) fetched into an anonymous file named
 * memname. @return : its descriptor, or a negative errno with err set
 * ("WHAT location: why"; -ENOENT: HTTP 404, -EACCES: 403, -EIO: another
 * status). */
int rfi_transport_fetch_file(rf_transport **t, const char *location, const char *what,
			    const char *memname, size_t max_body, uint32_t budget_ms, char *err,
			    size_t errlen);

#endif
