/* ring_setup.c - cold path of the ring thread: create the io_uring with the
 * best flags the kernel accepts, register the file table and the read pool,
 * and tear it all down (cancelling reads in flight) at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "io/ring_impl.h"
#include "util/util.h"

/* Newest first; the first the kernel accepts is used. DEFER_TASKRUN runs
 * completion work only when this thread enters the kernel, which is when it
 * wants it; COOP_TASKRUN at least avoids interrupting it with IPIs. */
static const unsigned flag_sets[] = {
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
	IORING_SETUP_COOP_TASKRUN,
	0,
};

int rf_ring_setup(rf_loader *l, struct rf_ring *r, char *err, size_t errlen)
{
	uint32_t depth = (uint32_t)l->cfg.io_depth;
	unsigned entries = 4;
	while (entries < depth * 3 + 1)
		entries <<= 1;
	int ret = -ENOSYS;
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i];
		ret = io_uring_queue_init_params(entries, &r->ring, &p);
		if (ret == 0) {
			r->setup_flags = flag_sets[i];
			break;
		}
		if (ret != -EINVAL)
			break; /* ENOSYS, EPERM, ENOMEM: flags will not help */
	}
	if (ret) {
		rf_fmt(err, errlen, "io_uring_setup: %s", strerror(-ret));
		return ret == -ENOSYS || ret == -EPERM ? RF_ENOIOURING : ret;
	}
	r->ring_ok = 1;
	io_uring_register_ring_fd(&r->ring); /* optional: saves an fd lookup per enter */

	ret = io_uring_register_files_sparse(&r->ring, depth);
	if (ret) {
		rf_fmt(err, errlen, "io_uring_register_files_sparse(%u): %s", depth, strerror(-ret));
		return ret;
	}
	/* Pool: a quarter of it is the largest file, so a big file never waits
	 * for the whole pool to drain. */
	r->align = 4096;
	r->max_file = l->cfg.read_pool_bytes / 4;
	ret = rf_bufpool_init(&r->pool, l->cfg.read_pool_bytes, r->align, depth);
	if (ret) {
		rf_fmt(err, errlen, "read pool of %zu bytes: out of memory", l->cfg.read_pool_bytes);
		return ret;
	}
	struct iovec iov = { .iov_base = r->pool.base, .iov_len = r->pool.cap };
	ret = io_uring_register_buffers(&r->ring, &iov, 1);
	r->fixed_buffers = ret == 0;
	if (ret)
		rf_log(l->cfg.log_level, RF_LOG_WARN, "io_uring_register_buffers: %s; "
		       "reading into unregistered buffers (check RLIMIT_MEMLOCK)", strerror(-ret));
	r->direct = !l->cfg.no_direct_io;
	/* A resumed loader issues from its saved position on: every place is a
	 * pure function of (batch, index, attempt), nothing before it is needed. */
	r->next_batch = l->start_batch;
	r->next_index = 0;
	atomic_store(&l->st.fixed_buffers, (unsigned)r->fixed_buffers);
	atomic_store(&l->st.direct_io, (unsigned)r->direct);

	r->free_reqs = malloc(depth * sizeof(uint32_t));
	r->drain = malloc(depth * sizeof(uint32_t));
	r->retry_cap = depth + 2;
	r->retry = malloc(r->retry_cap * sizeof(rf_place));
	if (!r->free_reqs || !r->drain || !r->retry) {
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < depth; i++)
		r->free_reqs[i] = depth - 1 - i;
	r->nfree = depth;
	return 0;
}

void rf_ring_teardown(rf_loader *l, struct rf_ring *r)
{
	(void)l;
	if (r->ring_ok) {
		/* Cancel every read in flight and wait for the chains to end (at
		 * most a second: a read stuck in a device is left to the kernel,
		 * which keeps the pages it pins). */
		struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
		if (sqe && r->inflight) {
			io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
			io_uring_sqe_set_data64(sqe, UD_WAKE - 1);
			io_uring_submit(&r->ring);
		}
		uint64_t deadline = rf_now_ns() + 1000000000ull;
		while (r->inflight && rf_now_ns() < deadline) {
			struct io_uring_cqe *cqe;
			struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 50000000 };
			if (io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts) < 0 && !io_uring_cq_ready(&r->ring))
				continue;
			unsigned head, n = 0;
			io_uring_for_each_cqe(&r->ring, head, cqe) {
				n++;
				if (cqe->user_data >= UD_WAKE - 1)
					continue;
				rf_request *q = &l->req[cqe->user_data >> 2];
				if (++q->cqes == 3)
					r->inflight--;
			}
			io_uring_cq_advance(&r->ring, n);
		}
		io_uring_queue_exit(&r->ring);
	}
	/* The pool is unmapped by rf_loader_destroy() once no thread reads it. */
	free(r->free_reqs);
	free(r->drain);
	free(r->retry);
}

void rf_ring_free(struct rf_ring *r)
{
	if (!r)
		return;
	rf_bufpool_destroy(&r->pool);
	free(r);
}
