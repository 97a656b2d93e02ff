/* util.h - small helpers shared by every stage: clocks, CPU count, message
 * formatting, logging. Private to the library. */
#ifndef RF_UTIL_H
#define RF_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "ringfeed.h"

#define RF_ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((uint64_t)(a) - 1))
#define RF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RF_MAX(a, b) ((a) > (b) ? (a) : (b))

static inline uint64_t rfi_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t rfi_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Starts a thread of the library's: it takes no signals (the caller's
 * handlers stay on the caller's threads) and carries name (15 characters
 * at most: "rf-ring", "rf-compute-3"), which top -H, perf and debuggers
 * show. @return : 0 or a negative errno. */
int rfi_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

/* Cores this process may use, at least 1: its affinity mask, capped by its
 * cgroup's CPU quota (a container given 2 CPUs of 64 counts 2). */
int rfi_cpu_count(void);

/* snprintf into buf[len] that tolerates buf == NULL or len == 0. */
void rfi_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Frees s (NULL accepted) after wiping it: a secret (a key, a token). */
void rfi_free_secret(char *s);

/* A new string printed as fmt says (free() it), or NULL: out of memory. */
char *rfi_strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A buffer of at least need bytes at *p (its size in *cap), grown with
 * realloc, never shrunk: the decoders' per-thread output buffers.
 * @return : 0, or -ENOMEM with *p and *cap as they were. */
int rfi_grow(uint8_t **p, size_t *cap, size_t need);

/* What kind of file st_mode says: "a FIFO", "a directory", ... ("a regular
 * file" included), for messages. Static strings. */
const char *rfi_file_kind(unsigned mode);

/* Opens path (relative to dirfd, or AT_FDCWD) for reading, only if it is a
 * regular file: the open itself is O_NONBLOCK, so that a FIFO (or a
 * device) named where a file belongs is refused instead of hanging the
 * caller; the descriptor is blocking again when returned. what names the
 * file in the message ("zstd dictionary", "manifest").
 * @return : the descriptor (O_CLOEXEC), or a negative errno (-EINVAL: not
 *           a regular file) with err[errlen] saying "what 'path': why". */
int rfi_open_regular(int dirfd, const char *path, const char *what, char *err, size_t errlen);

/* The one redaction of URLs that leave the process (messages, logs, JSON,
 * files): every "scheme://user:PASSWORD@" in text is written as
 * "scheme://user:***@" into out[len] (cut to fit, always NUL-terminated);
 * the rest is copied as it is. A URL keeps its password only where a
 * request is made with it. in and out may be the same buffer: the text
 * is then redacted in place (cut to len). @return : out. */
char *rfi_redact(const char *in, char *out, size_t len);

/* rfi_redact() into a new string (free() it), or NULL: out of memory. */
char *rfi_redact_dup(const char *in);

/* Writes "ringfeed: <level>: message" to stderr when level <= threshold,
 * redacted (rfi_redact). */
void rfi_log(rf_log_level threshold, rf_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* rf_strerror() (errors.c) and the enum names (names.c) for src/lib.c,
 * which refused a kind past RF_ENUM_KINDS and NULL name or value; the
 * library's own messages call these. */
const char *rfi_strerror(int err);
const char *rfi_enum_kind_name(rf_enum_kind kind);
const char *rfi_enum_name(rf_enum_kind kind, int value);
int rfi_enum_value(rf_enum_kind kind, const char *name, int *value);
const char *rfi_enum_entry(rf_enum_kind kind, size_t i, int *value, int *listed);

#endif
