/* ring_impl.h - the ring thread's own state. Only the ring thread touches
 * anything here (set-up included: SINGLE_ISSUER ties the ring to the thread
 * that creates it). Private to src/io/. */
#ifndef RF_RING_IMPL_H
#define RF_RING_IMPL_H

#include <liburing.h>

#include "io/bufpool.h"
#include "io/pread_pool.h"
#include "pipeline/loader_impl.h"
#include "rf_config.h"

/* user_data of a chain's SQEs: request id << 2 | op. */
enum { OP_OPEN = 0, OP_READ = 1, OP_CLOSE = 2 };
#define UD_WAKE UINT64_MAX /* the eventfd read that wakes the ring thread */
#define NO_TICKET UINT32_MAX /* a raw read: its buffer is the batch slot, not the pool */

/* How this loader reads (rf_stats.io_path reports the rf_io_path). */
enum rf_backend {
	BACKEND_FIXED, /* io_uring: open -> read -> close chained on a direct descriptor */
	BACKEND_PLAIN, /* io_uring: open; at its completion read -> close on the fd */
	BACKEND_PREAD, /* no io_uring: the pread pool */
};

struct rf_ring {
	int backend;           /* enum rf_backend */
	struct io_uring ring;
	int ring_ok;
	rf_pread_pool pread;   /* BACKEND_PREAD only */
	unsigned setup_flags;  /* IORING_SETUP_* that the kernel accepted */
	rf_bufpool pool;       /* read buffers */
	int fixed_buffers;     /* pool registered (buffer 0): READ_FIXED */
	int fixed_slots;       /* raw mode: batch slots registered too (buffer 1) */
	int direct;            /* O_DIRECT in use */
	size_t align;          /* O_DIRECT alignment of buffers and lengths (statx) */
	int direct_refused;    /* the file system said it has no O_DIRECT */
	size_t max_file;       /* larger files are bad samples */

	uint32_t *free_reqs;   /* request ids not in use */
	uint32_t nfree;
	uint32_t inflight;     /* chains submitted whose CQEs have not all come */
	uint32_t inflight_cap; /* at most this many: io_depth, lowered when the system
	                        * runs short of descriptors or memory (EMFILE...) */
	uint32_t starved;      /* such shortages in a row with nothing else in flight */
	int failed;            /* the stream failed (ring_failed): issue nothing more */
	unsigned test_delay_us; /* test-only: RINGFEED_TEST_READ_DELAY_US, a slow device */

	rf_place *retry;       /* places waiting for a replacement read, FIFO */
	uint32_t retry_cap, retry_first, retry_count;
	rf_place cur;          /* the next place to issue, held while resources are short */
	int cur_valid;
	uint64_t next_batch;   /* cursor over new places; starts at l->start_batch */
	uint32_t next_index;
	uint32_t next_slot;    /* the slot next_batch fills (taken at its index 0) */

	uint64_t wake_buf;     /* target of the eventfd read */
	int wake_armed;
	uint32_t *drain;       /* scratch for handed-back request ids */
};

/* Test-only, in builds with -Dtest_hooks=true (RF_TEST_HOOKS): called with
 * every read result before it is judged; returns the result to judge
 * instead (a short count, -EAGAIN, -EIO, ...). Process-wide; set it before
 * creating the loader. NULL (the default) costs one branch. */
typedef int (*rf_read_hook)(void *ctx, uint64_t sample, int res, int64_t size);
#if RF_TEST_HOOKS
void rf_ring_set_test_hook(rf_read_hook fn, void *ctx);
#endif

/* ring_setup.c */
int rf_ring_setup(rf_loader *l, struct rf_ring *r, char *err, size_t errlen);
void rf_ring_teardown(rf_loader *l, struct rf_ring *r);

#endif
