/* ring_impl.h - the ring thread's own state. Only the ring thread touches
 * anything here (set-up included: SINGLE_ISSUER ties the ring to the thread
 * that creates it). Private to src/io/. */
#ifndef RF_RING_IMPL_H
#define RF_RING_IMPL_H

#include <liburing.h>

#include "io/bufpool.h"
#include "pipeline/loader_impl.h"

/* user_data of a chain's SQEs: request id << 2 | op. */
enum { OP_OPEN = 0, OP_READ = 1, OP_CLOSE = 2 };
#define UD_WAKE UINT64_MAX /* the eventfd read that wakes the ring thread */

struct rf_ring {
	struct io_uring ring;
	int ring_ok;
	unsigned setup_flags;  /* IORING_SETUP_* that the kernel accepted */
	rf_bufpool pool;       /* read buffers */
	int fixed_buffers;     /* pool registered: READ_FIXED */
	int direct;            /* O_DIRECT in use */
	size_t align;          /* O_DIRECT alignment of buffers and lengths */
	size_t max_file;       /* larger files are bad samples */

	uint32_t *free_reqs;   /* request ids not in use */
	uint32_t nfree;
	uint32_t inflight;     /* chains submitted whose 3 CQEs have not all come */

	rf_place *retry;       /* places waiting for a replacement read, FIFO */
	uint32_t retry_cap, retry_first, retry_count;
	rf_place cur;          /* the next place to issue, held while resources are short */
	int cur_valid;
	uint64_t next_batch;   /* cursor over new places; starts at l->start_batch */
	uint32_t next_index;

	uint64_t wake_buf;     /* target of the eventfd read */
	int wake_armed;
	uint32_t *drain;       /* scratch for handed-back request ids */
};

/* ring_setup.c */
int rf_ring_setup(rf_loader *l, struct rf_ring *r, char *err, size_t errlen);
void rf_ring_teardown(rf_loader *l, struct rf_ring *r);

#endif
