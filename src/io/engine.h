/* engine.h - the read engine: reads of (file, offset, length) into a
 * caller's buffer go in, (tag, result) completions come out. It knows no
 * sample, batch or loader: the pipeline's ring thread (feeder.c) turns samples
 * into reads and judges what comes back, the way liburing's user_data and
 * zstd's POOL_add(ctx, fn, opaque) know nothing of their callers.
 *
 * Inside: the io_uring (with direct descriptors: open -> read(s) -> close
 * chained per file; or plain descriptors; or, without io_uring, a pool of
 * pread threads), reads split into RF_IO_CHUNK pieces, O_DIRECT alignment
 * (a range that is not aligned is over-read and trimmed: the data starts
 * `skip` bytes into the buffer), retries of EAGAIN / EINTR, the fallback to
 * buffered reads where O_DIRECT is refused, and fewer reads in flight when
 * the system runs short of descriptors or memory; and reads of URLs through
 * the URL reader its caller gives it (rf_io_url_ops: the transport row of
 * the source says which, src/remote/transport.h), whose sockets the same
 * io_uring watches and whose timer the same wait keeps. It includes nothing
 * of src/remote/: the reader and its signer come from above.
 *
 * Thread rule: one thread (the feeder) creates, uses and destroys an engine.
 * Other threads wake it by writing to the eventfd it was given (wake_fd).
 * Private to the library. */
#ifndef RF_IO_ENGINE_H
#define RF_IO_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h" /* rf_io_path, rf_log_level */

#define RF_IO_CHUNK (1u << 20) /* one read SQE reads at most this much */
#define RF_IO_MAX_TRANSIENT 3  /* EAGAIN / EINTR retried this often before reported */

typedef struct rf_io rf_io;

/* How URL reads are signed: the transport row's own signer (an s3 row's:
 * SigV4 with keys kept fresh), opaque here: the engine carries it to its
 * URL reader, which knows what it is (src/remote/sign.h). Must outlive the
 * engine. */
typedef struct rf_io_sign rf_io_sign;

/* What URL reads go through (below, after the reads it takes). */
typedef struct rf_io_url_ops rf_io_url_ops;

#define RF_IO_URL_BUDGET_MS 120000 /* a URL read's time, all its tries, by default */
#define RF_IO_ETAG_MAX 80          /* an ETag, quotes and NUL included; a longer one
                                    * is not kept (its reads carry no If-Match) */
#define RF_IO_WHY_MAX 192          /* what the server did, for a failed URL read's message */

/* URL reads' counters (rfi_io_get_info), since the engine was made. */
typedef struct rf_io_http_counts {
	uint64_t requests;  /* transfers made (a read tried again counts each time) */
	uint64_t retries;   /* transfers that failed and were tried again, by kind: */
	uint64_t retry_throttled, retry_server, retry_connection, retry_stalled;
	                    /* 429 or 503; 500, 502, 504 or a response that broke
	                     * the reader's checks (another range, an encoding,
	                     * another ETag); a reset or a body cut short; no byte
	                     * for 15 s, or the transfer's time ran out */
	uint64_t errors;    /* reads that failed for good */
	uint64_t bytes;     /* bytes received into reads' buffers */
	uint64_t connections; /* connections opened (the rest of the transfers reused one) */
} rf_io_http_counts;

/* Memory reads may land in, registered with io_uring when it can be. */
typedef struct rf_io_region {
	void *base;
	size_t len;
} rf_io_region;

typedef struct rf_io_params {
	rf_io_path path;         /* RF_IO_AUTO: the best the system has */
	uint32_t depth;          /* reads in flight at most (>= 1) */
	size_t max_read;         /* the largest span a read may cover, bytes */
	uint32_t max_files;      /* files kept open at once (rfi_io_file_open) */
	int direct;              /* try O_DIRECT (falls back where refused) */
	int probe_dirfd;         /* a file of the kind to be read, for the */
	const char *probe_path;  /* O_DIRECT alignment (statx); NULL: 4096 */
	int pread_threads;       /* pread path: threads (0: 16) */
	int wake_fd;             /* the caller's eventfd: a write to it ends
	                          * rfi_io_wait() (others may write it before the
	                          * engine exists, so it is not the engine's) */
	const char *name;        /* what is read, for log lines ("under NAME") */
	rf_log_level log_level;
	const rf_io_url_ops *url_reader; /* URL reads: what reads them (the source's
	                          * transport row's, rfi_transport_reader), or NULL:
	                          * a URL read fails (-EPROTONOSUPPORT) */
	const rf_io_sign *sign;  /* URL reads: how to sign them, or NULL (unsigned);
	                          * given to url_reader as it is */
	uint32_t url_budget_ms;  /* URL reads: a read's time from its first try to its
	                          * last (0: RF_IO_URL_BUDGET_MS); past it, it fails */
} rf_io_params;

/* A read: up to len bytes at offset of a file. The file is path (relative to
 * dirfd; opened, read and closed for this read) when path is set, else the
 * file handle from rfi_io_file_open(). buf holds rfi_io_span(offset, len)
 * bytes and is aligned to rfi_io_align(). */
typedef struct rf_io_read {
	int dirfd;
	const char *path;  /* must stay valid until the read completes */
	int file;          /* when path and url are NULL */
	const char *url;   /* else a URL, read by the URL reader (an http(s) ranged GET;
	                    * io_uring paths only); must stay valid until the read
	                    * completes */
	const char *etag;  /* a URL read: only of the object with this ETag (If-Match;
	                    * another fails with -ESTALE), or NULL; same lifetime */
	char *etag_out;    /* a URL read: the response's ETag is copied here
	                    * (RF_IO_ETAG_MAX bytes; "" when it gave none, or a weak
	                    * one, which If-Match never passes), or NULL */
	uint64_t size;     /* a URL read: the object's bytes as indexed (a response
	                    * that says another size is refused), or 0: unknown */
	uint64_t offset;
	uint32_t len;
	uint8_t *buf;
	uint64_t tag;      /* the caller's, given back with the result */
} rf_io_read;

enum rf_io_step { RF_IO_STEP_OPEN = 0, RF_IO_STEP_READ = 1 };

typedef struct rf_io_done {
	uint64_t tag;
	int32_t res;   /* bytes of [offset, offset + len) read (fewer: the file ended
	                * first), or a negative errno */
	uint32_t skip; /* the data starts at buf + skip (over-read for alignment) */
	uint8_t step;  /* enum rf_io_step: what res < 0 failed at */
	uint8_t direct; /* read with O_DIRECT */
	uint64_t size; /* a URL read: the object's bytes as the server said them, or 0 */
	/* a URL read: the last response's HTTP status (0: none came), the
	 * transfers made and the time they took, for rfi_io_describe() */
	uint16_t http_status;
	uint16_t tries;
	uint32_t ms;
	/* a failed URL read: what the server did ("asked bytes 512-1023, the
	 * server sent Content-Range bytes 0-511/4096"), or "" */
	char why[RF_IO_WHY_MAX];
} rf_io_done;

/* ---- URL reads: a reader given from above ----
 * The engine hands a URL read (rf_io_read.url) to its URL reader
 * (rf_io_params.url_reader), made at the first such read, and lends it
 * hooks: the reader says which sockets to watch (polled on the engine's
 * own ring) and when a read is over; its deadline is folded into the
 * engine's wait. One indirect call per event. The reader runs on the
 * engine's thread alone. */

/* How a URL read ended. */
typedef struct rf_io_url_result {
	int32_t res;       /* bytes of the range received (fewer: the object ended
	                    * first), or a negative errno */
	int step;          /* RF_IO_STEP_OPEN when the server refused the request
	                    * (4xx), else RF_IO_STEP_READ */
	uint64_t size;     /* the object's bytes as the response says them, or 0 */
	long status;       /* the last response's status (HTTP), 0: none came */
	uint32_t tries;    /* transfers made */
	uint64_t ns;       /* from the first transfer's start to the end */
	const char *why;   /* res < 0: what the server did (RF_IO_WHY_MAX bytes at
	                    * most), or NULL; valid during the done hook */
} rf_io_url_result;

/* What the engine lends its URL reader. */
typedef struct rf_io_url_hooks {
	void *engine;
	/* Watch fd for events (POLLIN | POLLOUT), or stop watching it (0). */
	void (*watch)(void *engine, int fd, short events);
	/* Read id is over. */
	void (*done)(void *engine, uint32_t id, const rf_io_url_result *r);
} rf_io_url_hooks;

struct rf_io_url_ops {
	/* A reader for p's reads: read numbers 0..p->depth-1, signed with p->sign,
	 * each within p->url_budget_ms, its warnings at p->log_level. @return :
	 * 0, or a negative errno (-EPROTONOSUPPORT: this build reads no URLs)
	 * with err set. */
	int (*create)(void **reader, const rf_io_url_hooks *hooks, const rf_io_params *p,
		      char *err, size_t errlen);
	/* Aborts every transfer (their reads are not reported) and frees. */
	void (*destroy)(void *reader);
	/* Starts read id: bytes [rd->offset, + rd->len) of rd->url into rd->buf,
	 * only of the object rd->etag and rd->size say (when set); the response's
	 * ETag into rd->etag_out when set. Reported through hooks->done, possibly
	 * from within this call. */
	void (*start)(void *reader, uint32_t id, const rf_io_read *rd);
	/* A watched socket is ready (revents as poll gives them). */
	void (*socket_ready)(void *reader, int fd, short revents);
	/* Nanoseconds (rfi_now_ns()) at which its timer wants running, or
	 * UINT64_MAX: none. */
	uint64_t (*deadline)(const void *reader);
	/* Runs its timer when its deadline has passed (a no-op before). */
	void (*run_timer)(void *reader);
	/* Reads started and not reported. */
	uint32_t (*active)(const void *reader);
	/* Counters since it was made. */
	void (*get_counts)(const void *reader, rf_io_http_counts *out);
};

/* What the engine settled on (changes: direct after a fallback, inflight). */
typedef struct rf_io_info {
	rf_io_path path;     /* RF_IO_URING_FIXED, RF_IO_URING_PLAIN or RF_IO_PREAD */
	int direct;          /* O_DIRECT in use now */
	size_t align;        /* alignment of buffers, offsets and lengths */
	int fixed_buffers;   /* regions registered (READ_FIXED) */
	uint32_t inflight;   /* reads submitted and not reaped */
	rf_io_http_counts http; /* URL reads */
} rf_io_info;

/* What a failed read failed of, for a message: strerror(-d->res), or for a
 * URL read what the server did (d->why: "HTTP 503 (8 tries in 6.1 s)",
 * "changed on the server (HTTP 412: ...)", "asked bytes 0-99, the server
 * sent Content-Range bytes 100-199/4096 (8 tries in 6.1 s)", "timed out (3
 * tries in 120.0 s)"). */
void rfi_io_describe(const rf_io_done *d, char *buf, size_t len);

/* Creates an engine on the calling thread (which alone may use it).
 * @return : 0 with *out set; RF_ENOIOURING when p->path forces an io_uring
 *           path the system lacks; -ENOMEM; err[errlen] says why. */
int rfi_io_create(rf_io **out, const rf_io_params *p, char *err, size_t errlen);

/* Cancels the reads in flight, waits for them (a second at most: a read
 * stuck in a device is left to the kernel), closes the files and frees the
 * engine. The buffers are the caller's: free them after this. Accepts NULL. */
void rfi_io_destroy(rf_io *io);

/* Registers the memory reads will land in (up to 2 regions, each at most
 * 1 GiB; a read into a region is a READ_FIXED: no page pinning per read).
 * Call once, before the first read. The regions must outlive the engine.
 * Not registering (or failing to, which is logged) costs speed, not
 * correctness. @return : 1 registered, 0 not. */
int rfi_io_register_regions(rf_io *io, const rf_io_region *regions, int n);

void rfi_io_get_info(const rf_io *io, rf_io_info *info);

/* Bytes a read of len bytes at offset needs in its buffer (the aligned span
 * that contains it while O_DIRECT may be used, else len). */
size_t rfi_io_span(const rf_io *io, uint64_t offset, uint32_t len);

/* The alignment buffers must have. */
size_t rfi_io_align(const rf_io *io);

/* Opens path (relative to dirfd) to be read many times (a shard), registered
 * with the ring when it can be. @return : a file handle >= 0, or a negative
 * errno (-EMFILE when max_files are open). */
int rfi_io_file_open(rf_io *io, int dirfd, const char *path);
/* Closes a handle once no read of it is in flight. */
void rfi_io_file_close(rf_io *io, int file);

/* 1 when a read of span bytes can be submitted now (a free read number:
 * depth of them, each in use from submit to reap; below the current cap on
 * reads in flight; room in the submission queue), else 0. */
int rfi_io_ready(rf_io *io, size_t span);
/* The same for n reads at once, none of more than span bytes (the reads
 * of one sample: its own and its fields' files). */
int rfi_io_ready_n(rf_io *io, size_t span, uint32_t n);

/* Starts a read; call only after rfi_io_ready() said yes for its span. */
void rfi_io_submit(rf_io *io, const rf_io_read *rd);

/* Takes up to max finished reads, in the order they finished, without
 * blocking. @return : how many. */
uint32_t rfi_io_reap(rf_io *io, rf_io_done *done, uint32_t max);

/* Sends what was submitted and sleeps until a read or write finishes or
 * wake_fd is written (returns at once when finished reads wait to be
 * reaped). @return : 0, or a negative errno that stops the engine (the
 * caller's stream fails with it). */
int rfi_io_wait(rf_io *io);
/* The same, sleeping until deadline (rfi_now_ns()) at the latest. */
int rfi_io_wait_until(rf_io *io, uint64_t deadline);

/* Writes: len bytes of buf to a plain descriptor (the caller's, opened
 * without O_DIRECT) at offset, through the ring: the node-local cache's
 * appends, which the thread that needed the bytes never waits for. Up to
 * RF_IO_MAX_WRITES in flight; buf must stay valid until the write is
 * reaped (rfi_io_destroy() waits for the writes in flight).
 * @return : 0 submitted; -EBUSY (that many in flight: reap first);
 *           -ENOTSUP without io_uring (the pread path). */
#define RF_IO_MAX_WRITES 64
int rfi_io_write(rf_io *io, int fd, const void *buf, uint32_t len, uint64_t offset, uint64_t tag);
typedef struct rf_io_wrote {
	uint64_t tag;
	int32_t res;   /* bytes written (fewer than len: the disk filled), or a negative errno */
} rf_io_wrote;
/* Takes up to max finished writes, without blocking. @return : how many. */
uint32_t rfi_io_reap_writes(rf_io *io, rf_io_wrote *out, uint32_t max);

#endif
