/* engine_impl.h - the read engine's state. Only the thread that created the
 * engine touches it (SINGLE_ISSUER ties the ring to that thread), except the
 * pread pool's threads, which own a read between taking its number from
 * `pread.jobs` and handing it back through `pread.done`. Private to src/io/. */
#ifndef RF_ENGINE_IMPL_H
#define RF_ENGINE_IMPL_H

#include <liburing.h>

#include "io/engine.h"
#include "io/pread_pool.h"
#include "util/fifo.h"

/* user_data of a chain's SQEs: read number << 2 | op. */
enum { OP_OPEN = 0, OP_READ = 1, OP_CLOSE = 2 };
#define UD_WAKE UINT64_MAX       /* the read of wake_fd */
#define UD_CANCEL (UINT64_MAX - 1) /* teardown's cancel-all */
#define UD_POLL_REMOVE (UINT64_MAX - 2) /* a poll of a URL reader's socket taken back */
/* A poll of a URL reader's socket: UD_POLL | generation << 32 | fd (below UD_POLL_REMOVE). */
#define UD_POLL (1ull << 62)
#define UD_IS_POLL(ud) (((ud) & UD_POLL) && (ud) < UD_POLL_REMOVE)
/* A write (rfi_io_write): UD_WRITE | its number (< RF_IO_MAX_WRITES). */
#define UD_WRITE (1ull << 61)
#define UD_IS_WRITE(ud) (((ud) & (UD_WRITE | UD_POLL)) == UD_WRITE)

enum rf_backend {
	BACKEND_FIXED, /* io_uring: open -> read -> close chained on a direct descriptor */
	BACKEND_PLAIN, /* io_uring: open; at its completion read -> close on the fd */
	BACKEND_PREAD, /* no io_uring: the pread pool */
};

/* One read on its way; its number is its index in io->reads. */
typedef struct rf_io_req {
	rf_io_read rd;         /* as submitted */
	uint64_t start;        /* the span read: [start, start + span) of the file */
	uint32_t span;
	uint32_t skip;         /* rd.offset - start */
	int fd;                /* what the reads use: a direct descriptor index (fixed), an
	                        * fd, or -1 until a plain open completes */
	uint8_t fixed_file;    /* fd is a direct descriptor index */
	uint8_t chain;         /* open -> reads -> close (rd.path set) */
	uint8_t direct;        /* opened (or the handle was) with O_DIRECT */
	uint8_t transient;     /* EAGAIN / EINTR retries so far */
	int32_t open_res, read_res, close_res; /* read_res: bytes, summed over the reads */
	int32_t read_err;      /* the first failed read, or 0 */
	uint16_t cqes;         /* CQEs seen of the ncqes the chain posts */
	uint16_t ncqes;
	int32_t result;        /* once finished: what rfi_io_reap() gives back */
	uint8_t step;          /* enum rf_io_step */
	uint64_t object_size;  /* a URL read: the object's bytes (the reader's), or 0 */
	uint16_t http_status;  /* a URL read: as the reader ended it (rf_io_done's) */
	uint16_t tries;
	uint32_t ms;
	char why[RF_IO_WHY_MAX]; /* a URL read: rf_io_done's */
} rf_io_req;

/* A socket the URL reader asked to have watched (its watch hook). */
typedef struct rf_io_sock {
	short events;          /* POLLIN | POLLOUT wanted, 0: none */
	uint8_t armed;         /* a poll request is in the ring */
	uint32_t gen;          /* bumped when that poll is taken back: its late CQE is stale */
} rf_io_sock;

/* A file kept open (rfi_io_file_open). */
typedef struct rf_io_file {
	int fd;                /* -1: the handle is free */
	int slot;              /* its direct descriptor, or -1 */
	uint8_t direct;
} rf_io_file;

struct rf_io {
	rf_io_params p;
	int backend;           /* enum rf_backend */
	struct io_uring ring;
	int ring_ok;
	unsigned setup_flags;  /* IORING_SETUP_* that the kernel accepted */
	rf_pread_pool pread;   /* BACKEND_PREAD only */
	rf_io_region regions[2];
	int fixed_regions;     /* regions registered: READ_FIXED into them */
	int direct;            /* O_DIRECT in use for new opens */
	size_t align;          /* O_DIRECT alignment (statx), at least 512 */

	rf_io_req *reqs;       /* depth of them */
	uint32_t *free_ids;    /* read numbers not in use */
	uint32_t nfree;
	uint32_t inflight;     /* submitted and not finished (in the kernel or the pool) */
	uint32_t cap;          /* at most this many in flight: depth, lowered when the
	                        * system runs short of descriptors or memory */
	uint32_t starved;      /* such shortages in a row with nothing else in flight */
	uint32_t opened_since_cap; /* opens that succeeded while cap < depth */
	uint32_t *again;       /* reads to start again (retries): depth cells, FIFO of numbers */
	rf_fifo again_q;
	uint32_t *done;        /* finished, not reaped yet: depth cells, FIFO of read numbers */
	rf_fifo done_q;
	/* Every read number is in exactly one place: free (nfree), in flight
	 * (inflight), waiting to start again (again_q) or finished and not
	 * reaped (done_q); they add up to depth (engine.c asserts it). */

	uint32_t *drain;       /* scratch for the pread pool's finished numbers */
	/* URL reads: p.url_reader's state, made at the first URL read */
	void *reader;
	int reader_failed;     /* it could not be made: URL reads fail */
	rf_io_sock *socks;     /* by fd */
	int nsocks;

	/* writes (rfi_io_write): each number free, in flight or finished and
	 * not reaped (wdone_q) */
	struct {
		uint64_t tag;
		int32_t res;
		uint8_t busy;
	} writes[RF_IO_MAX_WRITES];
	uint32_t writes_inflight;
	uint32_t wdone[RF_IO_MAX_WRITES];
	rf_fifo wdone_q;

	rf_io_file *files;     /* max_files of them */
	uint64_t wake_buf;     /* target of the wake_fd read */
	int wake_armed;
};

/* open(2) flags of every file the engine opens (engine.c). */
int rfi_io_open_flags(int direct);

/* engine_setup.c: the ring's flags, registration, and the teardown's
 * cancel-and-wait. */
int rfi_io_setup(rf_io *io, char *err, size_t errlen);
void rfi_io_teardown(rf_io *io);

#endif
