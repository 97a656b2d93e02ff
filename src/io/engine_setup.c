/* engine_setup.c - the read engine's cold path: pick the back end, create
 * the io_uring with the best flags the kernel accepts, register the file
 * table and the memory reads land in, and tear it all down (cancelling
 * reads in flight) at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/dio_align.h"
#include "io/engine_impl.h"
#include "rf_config.h" /* RF_TEST_HOOKS */
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
static int ring_create(rf_io *io, unsigned entries)
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
		ret = io_uring_queue_init_params(entries, &io->ring, &p);
		if (ret == 0) {
			io->setup_flags = flag_sets[i];
			io->ring_ok = 1;
			return 0;
		}
		if (ret != -EINVAL)
			break; /* ENOSYS, EPERM, ENOMEM: flags will not help */
	}
	return ret;
}

/* Picks the back end: the one the params force, or under RF_IO_AUTO the
 * best that works, each fallback logged once. */
static int choose_backend(rf_io *io, char *err, size_t errlen)
{
	const rf_io_params *p = &io->p;
	if (p->path == RF_IO_PREAD) {
		io->backend = BACKEND_PREAD;
		return 0;
	}
	/* SQ: 3 SQEs a chain, the largest read's extra pieces, the wake read */
	unsigned extra = (unsigned)((p->max_read + RF_IO_CHUNK - 1) / RF_IO_CHUNK);
	unsigned entries = 4;
	while (entries < p->depth * 3 + extra + 1)
		entries <<= 1;
	int ret = ring_create(io, entries);
	if (ret) {
		if (p->path == RF_IO_AUTO && (ret == -ENOSYS || ret == -EPERM)) {
			rfi_log(p->log_level, RF_LOG_WARN, "io_uring_setup: %s "
			       "(kernel.io_uring_disabled?): using the pread thread pool", strerror(-ret));
			io->backend = BACKEND_PREAD;
			return 0;
		}
		rfi_fmt(err, errlen, "io_uring_setup: %s", strerror(-ret));
		return ret == -ENOSYS || ret == -EPERM ? RF_ENOIOURING : ret;
	}
	io_uring_register_ring_fd(&io->ring); /* optional: saves an fd lookup per enter */
	if (p->path == RF_IO_URING_PLAIN) {
		io->backend = BACKEND_PLAIN;
		return 0;
	}
	/* direct descriptors: one per read (its chain's), one per kept file */
	unsigned table = p->depth + p->max_files;
	ret = io_uring_register_files_sparse(&io->ring, table);
	if (ret == 0) {
		io->backend = BACKEND_FIXED;
		return 0;
	}
	if (p->path == RF_IO_URING_FIXED) {
		rfi_fmt(err, errlen, "io_uring_register_files_sparse(%u): %s", table, strerror(-ret));
		return RF_ENOIOURING;
	}
	rfi_log(p->log_level, RF_LOG_WARN, "no direct descriptors (%s): io_uring with "
	       "plain descriptors", strerror(-ret));
	io->backend = BACKEND_PLAIN;
	return 0;
}

/* Each region at most 1 GiB, the kernel's limit for one buffer: the first
 * that is larger ends the list. */
int rfi_io_register_regions(rf_io *io, const rf_io_region *regions, int n)
{
	struct iovec iov[2];
	unsigned k = 0;
	for (int i = 0; i < n && i < 2; i++) {
		if (!regions[i].len || regions[i].len > (1u << 30))
			break;
		io->regions[k] = regions[i];
		iov[k++] = (struct iovec){ .iov_base = regions[i].base, .iov_len = regions[i].len };
	}
	if (!k || !io->ring_ok)
		return 0;
	int ret = io_uring_register_buffers(&io->ring, iov, k);
	if (ret) {
		rfi_log(io->p.log_level, RF_LOG_WARN, "io_uring_register_buffers: %s; reading "
		       "into unregistered buffers (check RLIMIT_MEMLOCK)", strerror(-ret));
		return 0;
	}
	io->fixed_regions = (int)k;
	return 1;
}

int rfi_io_create(rf_io **out, const rf_io_params *p, char *err, size_t errlen)
{
	*out = NULL;
	rf_io *io = calloc(1, sizeof(*io));
	if (!io) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	io->p = *p;
	io->p.depth = RF_MAX(p->depth, 1u);
	int ret = rfi_io_setup(io, err, errlen);
	if (ret) {
		rfi_io_destroy(io);
		return ret;
	}
	*out = io;
	return 0;
}

int rfi_io_setup(rf_io *io, char *err, size_t errlen)
{
	const rf_io_params *p = &io->p;
	uint32_t depth = p->depth;
	int ret = choose_backend(io, err, errlen);
	if (ret)
		return ret;
	/* O_DIRECT alignment of buffers, offsets and lengths: what the file
	 * system says for the probe file (one source, one file system), at
	 * least 512; 4096 when it does not say. A file system that refuses
	 * O_DIRECT outright gets buffered reads from the start. */
	size_t dio = p->probe_path ? rfi_dio_alignment(p->probe_dirfd, p->probe_path) : 0;
	io->align = dio > 1 ? (dio < 512 ? 512 : dio) : 4096;
	io->direct = p->direct && dio != 1;
	if (p->direct && dio == 1)
		rfi_log(p->log_level, RF_LOG_WARN, "the file system under %s does not support "
		       "O_DIRECT (statx): using buffered reads", p->name ? p->name : "the source");

	io->reqs = calloc(depth, sizeof(*io->reqs));
	io->free_ids = malloc(depth * sizeof(uint32_t));
	io->again = malloc(depth * sizeof(uint32_t));
	io->drain = malloc(depth * sizeof(uint32_t));
	io->done = malloc(depth * sizeof(uint32_t));
	io->files = malloc(RF_MAX(p->max_files, 1u) * sizeof(rf_io_file));
	if (!io->reqs || !io->free_ids || !io->again || !io->drain || !io->done || !io->files) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < p->max_files; i++)
		io->files[i] = (rf_io_file){ .fd = -1, .slot = -1 };
	for (uint32_t i = 0; i < depth; i++)
		io->free_ids[i] = depth - 1 - i;
	io->nfree = depth;
	io->cap = depth;
	rfi_fifo_init(&io->again_q, depth);
	rfi_fifo_init(&io->done_q, depth);
	rfi_fifo_init(&io->wdone_q, RF_IO_MAX_WRITES);
	if (io->backend == BACKEND_PREAD) {
		int n = p->pread_threads ? p->pread_threads : 16;
		ret = rfi_pread_pool_start(&io->pread, io, n);
		if (ret) {
			rfi_fmt(err, errlen, "cannot start %d pread threads", n);
			return ret;
		}
	}
	return 0;
}

/* Cancels every read in flight and waits for the chains to end (at most a
 * second: a read stuck in a device is left to the kernel, which keeps the
 * pages it pins). */
static void cancel_ring(rf_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	if (sqe && io->inflight) {
		io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_sqe_set_data64(sqe, UD_CANCEL);
		io_uring_submit(&io->ring);
	}
	uint64_t deadline = rfi_now_ns() + 1000000000ull;
	/* writes are not cancelled (a buffered write runs to its end): waited for,
	 * so that no write reads its buffer after the caller freed it */
	while ((io->inflight || io->writes_inflight) && rfi_now_ns() < deadline) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 50000000 };
		if (io_uring_wait_cqe_timeout(&io->ring, &cqe, &ts) < 0 && !io_uring_cq_ready(&io->ring))
			continue;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&io->ring, head, cqe) {
			n++;
			if (cqe->user_data >= UD_POLL_REMOVE || UD_IS_POLL(cqe->user_data))
				continue;
			if (UD_IS_WRITE(cqe->user_data)) {
				io->writes_inflight--;
				continue;
			}
			rf_io_req *q = &io->reqs[cqe->user_data >> 2];
			if (io->backend == BACKEND_PLAIN && (cqe->user_data & 3) == OP_OPEN) {
				/* no read or close follows an open now */
				if (cqe->res >= 0)
					close(cqe->res);
				io->inflight--;
				continue;
			}
			if (++q->cqes == q->ncqes)
				io->inflight--;
		}
		io_uring_cq_advance(&io->ring, n);
	}
}

void rfi_io_teardown(rf_io *io)
{
	if (io->reader) { /* its transfers end now, unreported; their polls are cancelled below */
		io->inflight -= io->p.url_reader->active(io->reader);
		io->p.url_reader->destroy(io->reader);
		io->reader = NULL;
	}
	free(io->socks);
	io->socks = NULL;
	if (io->backend == BACKEND_PREAD && io->pread.threads)
		rfi_pread_pool_stop(&io->pread); /* reads in progress finish first */
	if (io->ring_ok)
		cancel_ring(io);
	if (io->files)
		for (uint32_t i = 0; i < io->p.max_files; i++)
			if (io->files[i].fd >= 0)
				close(io->files[i].fd);
	if (io->ring_ok)
		io_uring_queue_exit(&io->ring);
	free(io->reqs);
	free(io->free_ids);
	free(io->again);
	free(io->drain);
	free(io->done);
	free(io->files);
}

void rfi_io_destroy(rf_io *io)
{
	if (!io)
		return;
	rfi_io_teardown(io);
	free(io);
}
