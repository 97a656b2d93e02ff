/* ring_setup.c - cold path of the ring thread: create the io_uring with the
 * best flags the kernel accepts, register the file table and the read pool,
 * and tear it all down (cancelling reads in flight) at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/dio_align.h"
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

/* Creates the io_uring with the first flag set the kernel accepts. In a
 * build with test hooks (-Dtest_hooks=true), the environment variable
 * RINGFEED_RING_SETUP=defer|coop|none (for measuring them,
 * bench/ring_flags.sh) starts the list at that set. */
static int ring_create(struct rf_ring *r, unsigned entries)
{
	int ret = -ENOSYS;
	size_t first = 0;
#if RF_TEST_HOOKS
	const char *force = getenv("RINGFEED_RING_SETUP");
	if (force && !strcmp(force, "coop"))
		first = 1;
	else if (force && !strcmp(force, "none"))
		first = 3;
#endif
	for (size_t i = first; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i];
		ret = io_uring_queue_init_params(entries, &r->ring, &p);
		if (ret == 0) {
			r->setup_flags = flag_sets[i];
			r->ring_ok = 1;
			return 0;
		}
		if (ret != -EINVAL)
			break; /* ENOSYS, EPERM, ENOMEM: flags will not help */
	}
	return ret;
}

/* Picks the backend: the one cfg.io_path forces, or under RF_IO_AUTO the
 * best that works, each fallback logged once. */
static int choose_backend(rf_loader *l, struct rf_ring *r, char *err, size_t errlen)
{
	rf_io_path want = l->cfg.io_path;
	uint32_t depth = (uint32_t)l->cfg.io_depth;
	if (want == RF_IO_PREAD) {
		r->backend = BACKEND_PREAD;
		return 0;
	}
	/* SQ: 3 SQEs a chain, the largest file's extra reads, the wake read */
	size_t max_file = l->cfg.raw ? l->cfg.raw_max_bytes : l->cfg.read_pool_bytes / 4;
	unsigned extra = (unsigned)((max_file + 4096 + RF_READ_CHUNK - 1) / RF_READ_CHUNK);
	unsigned entries = 4;
	while (entries < depth * 3 + extra + 1)
		entries <<= 1;
	int ret = ring_create(r, entries);
	if (ret) {
		if (want == RF_IO_AUTO && (ret == -ENOSYS || ret == -EPERM)) {
			rf_log(l->cfg.log_level, RF_LOG_WARN, "io_uring_setup: %s "
			       "(kernel.io_uring_disabled?): using the pread thread pool", strerror(-ret));
			r->backend = BACKEND_PREAD;
			return 0;
		}
		rf_fmt(err, errlen, "io_uring_setup: %s", strerror(-ret));
		return ret == -ENOSYS || ret == -EPERM ? RF_ENOIOURING : ret;
	}
	io_uring_register_ring_fd(&r->ring); /* optional: saves an fd lookup per enter */
	if (want == RF_IO_URING_PLAIN) {
		r->backend = BACKEND_PLAIN;
		return 0;
	}
	ret = io_uring_register_files_sparse(&r->ring, depth);
	if (ret == 0) {
		r->backend = BACKEND_FIXED;
		return 0;
	}
	if (want == RF_IO_URING_FIXED) {
		rf_fmt(err, errlen, "io_uring_register_files_sparse(%u): %s", depth, strerror(-ret));
		return RF_ENOIOURING;
	}
	rf_log(l->cfg.log_level, RF_LOG_WARN, "no direct descriptors (%s): io_uring with "
	       "plain descriptors", strerror(-ret));
	r->backend = BACKEND_PLAIN;
	return 0;
}

int rf_ring_setup(rf_loader *l, struct rf_ring *r, char *err, size_t errlen)
{
	uint32_t depth = (uint32_t)l->cfg.io_depth;
#if RF_TEST_HOOKS
	/* Test-only: every read is judged this many microseconds late, by this
	 * thread, so reads complete at most 1e6 / delay per second: a slow
	 * device, planted (the slow suite's storage-bound diagnosis). */
	const char *delay = getenv("RINGFEED_TEST_READ_DELAY_US");
	r->test_delay_us = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
#endif
	/* A resumed loader issues from its saved position on, on every path:
	 * each place is a pure function of (batch, index, attempt), nothing
	 * before it is needed. */
	r->next_batch = l->start_batch;
	r->next_index = 0;
	int ret = choose_backend(l, r, err, errlen);
	if (ret)
		return ret;
	static const unsigned paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	atomic_store(&l->st.io_path, paths[r->backend]);

	/* O_DIRECT alignment of buffers, offsets and lengths: what the file
	 * system says for the first sample (one source, one file system), at
	 * least 512; 4096 when it does not say. A file system that refuses
	 * O_DIRECT outright gets buffered reads from the start. */
	size_t dio = rf_dio_alignment(l->index.root_fd, rf_index_path(&l->index, 0));
	r->align = dio > 1 ? (dio < 512 ? 512 : dio) : 4096;
	r->direct_refused = dio == 1;
	atomic_store(&l->st.dio_align, (unsigned)r->align);
	/* Pool: a quarter of it is the largest file, so a big file never waits
	 * for the whole pool to drain. */
	r->max_file = l->cfg.raw ? l->cfg.raw_max_bytes : l->cfg.read_pool_bytes / 4;
	/* raw mode reads into the batch slots: the pool stays a token one */
	size_t pool_bytes = l->cfg.raw ? r->align : l->cfg.read_pool_bytes;
	ret = rf_bufpool_init(&r->pool, pool_bytes, r->align, depth);
	if (ret) {
		rf_fmt(err, errlen, "read pool of %zu bytes: out of memory", l->cfg.read_pool_bytes);
		return ret;
	}
	if (r->ring_ok) {
		/* raw mode reads straight into the batch slots: register them
		 * too when they fit in one registered buffer (1 GiB) */
		struct iovec iov[2] = { { .iov_base = r->pool.base, .iov_len = r->pool.cap },
					{ .iov_base = l->slot_mem, .iov_len = l->slot_mem_len } };
		int n = l->cfg.raw && l->slot_mem_len <= (1u << 30) ? 2 : 1;
		ret = io_uring_register_buffers(&r->ring, iov, (unsigned)n);
		r->fixed_buffers = ret == 0;
		r->fixed_slots = ret == 0 && n == 2;
		if (ret)
			rf_log(l->cfg.log_level, RF_LOG_WARN, "io_uring_register_buffers: %s; reading "
			       "into unregistered buffers (check RLIMIT_MEMLOCK)", strerror(-ret));
	}
	r->direct = !l->cfg.no_direct_io && !r->direct_refused;
	if (r->direct_refused && !l->cfg.no_direct_io)
		rf_log(l->cfg.log_level, RF_LOG_WARN, "the file system under %s does not support "
		       "O_DIRECT (statx): using buffered reads", l->index.root);
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
	r->inflight_cap = depth;
	r->nfree = depth;
	if (r->backend == BACKEND_PREAD) {
		int n = l->cfg.pread_threads ? l->cfg.pread_threads : 16;
		ret = rf_pread_pool_start(&r->pread, l, n);
		if (ret) {
			rf_fmt(err, errlen, "cannot start %d pread threads", n);
			return ret;
		}
	}
	return 0;
}

void rf_ring_teardown(rf_loader *l, struct rf_ring *r)
{
	if (r->backend == BACKEND_PREAD)
		rf_pread_pool_stop(&r->pread); /* reads in progress finish first */
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
				if (r->backend == BACKEND_PLAIN && (cqe->user_data & 3) == OP_OPEN) {
					/* no read or close follows an open now */
					if (cqe->res >= 0)
						close(cqe->res);
					r->inflight--;
					continue;
				}
				if (++q->cqes == q->ncqes)
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
