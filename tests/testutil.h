/* testutil.h - helpers for the tests: temporary folders, small ImageFolder
 * trees of synthetic JPEGs, files with chosen bytes, a loader that drains. */
#ifndef RF_TESTUTIL_H
#define RF_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h"

/* A fresh empty folder (under $TMPDIR or /tmp); the path is malloc'ed. */
char *tu_tmpdir(const char *tag);
/* rm -rf path; frees nothing. */
void tu_rmrf(const char *path);
/* mkdir -p of dir/rel. */
void tu_mkdirs(const char *dir, const char *rel);
/* Writes len bytes to dir/rel (creating folders). */
void tu_write(const char *dir, const char *rel, const void *data, size_t len);
/* Writes a synthetic JPEG of w x h to dir/rel; returns its size in bytes. */
size_t tu_jpeg(const char *dir, const char *rel, int w, int h, uint64_t seed);
/* Reads dir/rel whole (malloc'ed), *len set. */
uint8_t *tu_read(const char *dir, const char *rel, size_t *len);
/* A tree of classes x per_class small JPEGs (40..120 px per side) named
 * cK/img_N.jpg; returns the folder (malloc'ed). */
char *tu_tree(const char *tag, int classes, int per_class);

/* A config for the small test images: resize 48, crop 40, batch 8, 2 threads,
 * rank 0 of 1 (set, so that a launcher's environment cannot change a test). */
void tu_config(rf_config *cfg, const char *source);

/* One delivered batch, copied out of the loader. */
typedef struct tu_batch {
	uint64_t index;
	uint32_t epoch, count, replaced;
	uint64_t data_hash; /* of the pixels */
	uint64_t *ids;      /* count of them */
	int32_t *labels;
} tu_batch;

/* Takes up to max batches (SIZE_MAX: to the end) from l, copying each and
 * releasing it. Returns how many; *out is malloc'ed (tu_batches_free). The
 * stream must not fail; it may end (RF_EOF). */
size_t tu_take(rf_loader *l, size_t max, tu_batch **out);
void tu_batches_free(tu_batch *b, size_t n);
/* Asserts that two batches are the same (index, epoch, ids, labels, pixels). */
void tu_assert_same_batch(const tu_batch *a, const tu_batch *b, const char *what);

/* Runs a loader to the end; returns the sample ids it delivered in order
 * (malloc'ed, *n set). Asserts on any error. */
uint64_t *tu_drain_ids(const rf_config *cfg, size_t *n);

/* Runs a loader to the end; returns every batch's sample bytes one after
 * the other (malloc'ed, *len set) and, if st is not NULL, its final stats.
 * Asserts on any error. */
uint8_t *tu_drain_bytes(const rf_config *cfg, size_t *len, rf_stats *st);

/* Creates a loader over cfg, takes and releases `batches` batches, and
 * destroys it at once (with reads, decodes or copies still in flight). */
void tu_take_then_destroy(const rf_config *cfg, int batches);

/* Exact resume of cfg against ref (the same samples: another source of the
 * same shards, or ref itself): cfg stopped after k batches (k = 1, a
 * third, a half, all but one of ref's) gives ref's first k, and resumed
 * from its saved state (with other thread counts and depths) ref's rest. */
void tu_assert_resumes_exactly(const rf_config *ref, const rf_config *cfg, const char *what);

/* A bad-sample callback (cfg.on_sample_error = tu_on_bad, cfg.user = a
 * tu_bad_log) that counts reports and keeps the last reason. */
typedef struct tu_bad_log {
	int n;
	char reason[256];
} tu_bad_log;
void tu_on_bad(void *user, const char *path, int err, const char *reason);

/* The Parquet writers' python (RINGFEED_PARQUET_PYTHON, else the venv
 * scripts/parquet_venv.sh makes); skips the test, saying so, when it
 * cannot import pyarrow (checked once a process). */
const char *tu_parquet_python(void);

/* FNV-1a of p[n]: a sample's bytes or pixels, compared between runs. */
uint64_t tu_fnv1a(const uint8_t *p, size_t n);

/* Runs a shell command line (printf-style); asserts it succeeded. */
void tu_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Polls cond(ctx) every millisecond until it holds (returns 1) or `seconds`
 * pass (returns 0): tests wait for a condition, never for a time. */
int tu_wait_until(int (*cond)(void *ctx), void *ctx, double seconds);

/* How long destroy may take in a test before it counts as hung: far above
 * the teardown's own 1 s cancel deadline, so a loaded machine cannot make
 * a prompt destroy fail. */
#define TU_DESTROY_HUNG_S 10.0

/* Under AddressSanitizer: fails the test if memory is leaked at this point
 * (Criterion ignores a leak report at worker exit, so tests ask for one).
 * Elsewhere: nothing. */
void tu_assert_no_leaks(void);

/* n bytes of xorshift64 noise from seed (malloc'ed): file contents whose
 * every range differs, for the read engine's tests. */
uint8_t *tu_noise(size_t n, uint64_t seed);

/* An nginx serving the folder root on 127.0.0.1 (remote reads, issue 25):
 * started in its own work folder, waited for until it accepts connections.
 * @return : the port, or 0 when nginx is not installed (the caller skips,
 * naming scripts/deps.sh). tu_nginx_stop() ends it (accepts "none"). */
int tu_nginx_start(const char *root);
/* The same over TLS, with a certificate for 127.0.0.1 signed by a CA made
 * here (openssl's command line; 0 without it); *ca gets that CA's file
 * (malloc'ed), for CURL_CA_BUNDLE. */
int tu_nginx_start_tls(const char *root, char **ca);
void tu_nginx_stop(void);
/* tu_nginx_start() with more directives in its server block (extra: such
 * as "location = /get { try_files /$arg_f =404; }"). */
int tu_nginx_start_with(const char *root, const char *extra);
/* Ranged GETs the test's nginx answered so far, and their body bytes (*bytes,
 * or NULL), leaving out whole-object GETs and one-byte probes (bytes=0-0:
 * the size and ETag checks at create): the reads of samples and chunks. */
uint64_t tu_nginx_ranges(uint64_t *bytes);
/* A port nothing listens on now. */
int tu_free_port(void);

/* tests/fault_server.py serving root on 127.0.0.1 with the flags args
 * (NULL-terminated, e.g. "--p503", "0", "--gzip", "1"), waited for until it
 * listens; it ends with the test at the latest (and after 300 s).
 * @return : its port, or 0 when python3 is missing (the caller skips).
 * tu_fault_stop() ends it. */
typedef struct tu_fault {
	int pid;  /* -1: none */
	int out;  /* its stdout (kept open: it prints there while it runs) */
	int port;
} tu_fault;
int tu_fault_start(tu_fault *s, const char *root, const char *const *args);
void tu_fault_stop(tu_fault *s);

/* Variants of the picture for seed, for the input-kind tests. */
typedef enum tu_kind {
	TU_BASELINE_420, TU_BASELINE_422, TU_BASELINE_444, TU_PROGRESSIVE_420,
	TU_GRAY,  /* its luminance, one component */
	TU_YCCK,  /* its RGB as inverted (Adobe) CMYK with K = 255, stored as YCCK */
	TU_CMYK,  /* the same, stored as plain CMYK (no colour transform) */
} tu_kind;
size_t tu_jpeg_kind(const char *dir, const char *rel, int w, int h, uint64_t seed, tu_kind kind);

/* tu_fault_start() with the script's random faults off and flags (its
 * command line's options, such as "--short-window 1", split at spaces):
 * its port, or 0 when python3 is missing. */
int tu_fault_server_start(tu_fault *s, const char *root, const char *flags);

/* The environment of an S3 store on 127.0.0.1:port as the loader finds it
 * (AWS_ENDPOINT_URL, path-style; test keys, and token as the session
 * token when not NULL; region us-east-1; no IMDS, no profile, no other
 * endpoint). */
void tu_s3_env(int port, const char *token);

#endif
