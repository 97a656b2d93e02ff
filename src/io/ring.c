/* ring.c - the ring thread's hot loop: pick the next place, start its read
 * (an open -> read -> close chain on io_uring, or a job for the pread pool),
 * collect completions, judge each read, hand landed reads to the compute
 * pool, take handed-back buffers and failed places back.
 * It sleeps only in io_uring_enter (or, on the pread path, in a read of the
 * wake eventfd); other threads wake it through that eventfd. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "io/ring_impl.h"
#include "util/util.h"

#if RF_TEST_HOOKS
static rf_read_hook test_hook;
static void *test_hook_ctx;

void rf_ring_set_test_hook(rf_read_hook fn, void *ctx)
{
	test_hook = fn;
	test_hook_ctx = ctx;
}
#endif

static void arm_wake(rf_loader *l, struct rf_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return; /* SQ full: armed on the next pass, after a submit */
	io_uring_prep_read(sqe, l->wake_fd, &r->wake_buf, sizeof(r->wake_buf), 0);
	io_uring_sqe_set_data64(sqe, UD_WAKE);
	r->wake_armed = 1;
}

static void ring_failed(rf_loader *l, int err, const char *what);

static void retry_push(struct rf_ring *r, const rf_place *p)
{
	/* Bounded: one entry per request plus the place being issued. */
	r->retry[(r->retry_first + r->retry_count) % r->retry_cap] = *p;
	r->retry_count++;
}

static void place_failed(rf_loader *l, struct rf_ring *r, const rf_place *p, uint64_t sample,
			 int err, const char *reason)
{
	rf_place again;
	if (rf_loader_place_failed(l, p, sample, err, reason, &again))
		retry_push(r, &again);
}

/* The next place to fill: a queued replacement first, then the cursor.
 * Returns 0 when none can start now (no more places, or the next batch's
 * slot is still held). */
static int next_place(rf_loader *l, struct rf_ring *r, rf_place *out)
{
	if (!r->cur_valid) {
		if (r->retry_count) {
			r->cur = r->retry[r->retry_first];
			r->retry_first = (r->retry_first + 1) % r->retry_cap;
			r->retry_count--;
		} else {
			if (r->next_batch >= l->total_batches)
				return 0;
			if (r->next_index == 0) {
				/* the batch takes any free slot (the lowest) */
				rf_slot *s = NULL;
				pthread_mutex_lock(&l->mu);
				for (int i = 0; i < l->cfg.prefetch && !s; i++)
					if (l->slots[i].state == SLOT_FREE)
						s = &l->slots[i];
				if (s) {
					s->state = SLOT_FILLING;
					s->err = 0;
					s->batch.index = r->next_batch;
					s->batch.epoch = (uint32_t)(r->next_batch / l->batches_per_epoch);
					s->batch.count = rf_loader_batch_count(l, r->next_batch);
					atomic_store(&s->remaining, s->batch.count);
					atomic_store(&s->replaced, 0);
					s->raw_used = 0;
					s->batch.bytes = 0;
					atomic_store(&s->t_last_read, 0);
					atomic_store(&s->prep_ns, 0);
					atomic_store(&s->read_bytes, 0);
				}
				pthread_mutex_unlock(&l->mu);
				if (!s)
					return 0;
				r->next_slot = (uint32_t)(s - l->slots);
				/* its last copy to the device must have read the host
				 * slot before the slot is filled again (outside the
				 * lock: this may block for the copy's remaining time) */
				if (l->gpu)
					rf_gpu_host_wait(l->gpu, (int)r->next_slot);
				s->t_start = rf_now_ns();
			}
			r->cur = (rf_place){ .batch = r->next_batch, .slot = r->next_slot,
					     .index = r->next_index };
			if (++r->next_index == rf_loader_batch_count(l, r->next_batch)) {
				r->next_batch++;
				r->next_index = 0;
			}
		}
		r->cur_valid = 1;
	}
	*out = r->cur;
	return 1;
}

/* O_NONBLOCK: a FIFO put where an indexed file was must not block the open
 * (waiting for a writer) or its read; regular files ignore the flag, and
 * io_uring still punts their reads to a worker when they would block. */
static int open_flags(const struct rf_ring *r)
{
	return O_RDONLY | O_NONBLOCK | (r->direct ? O_DIRECT : 0);
}

/* Cold path, after a read of sample failed or came short: when the path is
 * no longer a regular file (a FIFO, a device, a folder), says so in reason
 * and returns 1. */
static int not_regular(rf_loader *l, uint64_t sample, char *reason, size_t len)
{
	struct stat st;
	if (fstatat(l->index.root_fd, rf_index_path(&l->index, sample), &st, 0) ||
	    S_ISREG(st.st_mode))
		return 0;
	rf_fmt(reason, len, "not a regular file (%s)", rf_file_kind(st.st_mode));
	return 1;
}

static uint16_t reads_of(uint32_t len)
{
	return (uint16_t)((len + RF_READ_CHUNK - 1) / RF_READ_CHUNK);
}

/* The reads and the close of a chain, once the file is open as fd (a direct
 * descriptor index when fixed): one read per RF_READ_CHUNK at its offset.
 * The last read asks for more than the file holds, so it is always "short":
 * hard links keep the next read and the close from being cancelled by that. */
static void prep_reads_close(struct rf_ring *r, uint32_t id, rf_request *q, int fd, int fixed)
{
	uint64_t ud = (uint64_t)id << 2;
	int raw = q->ticket == NO_TICKET;
	int use_fixed = raw ? r->fixed_slots : r->fixed_buffers;
	struct io_uring_sqe *sqe;
	for (uint32_t off = 0; off < q->read_len; off += RF_READ_CHUNK) {
		uint32_t n = RF_MIN(RF_READ_CHUNK, q->read_len - off);
		sqe = io_uring_get_sqe(&r->ring);
		if (use_fixed)
			io_uring_prep_read_fixed(sqe, fd, q->buf + off, n, off, raw ? 1 : 0);
		else
			io_uring_prep_read(sqe, fd, q->buf + off, n, off);
		sqe->flags |= IOSQE_IO_HARDLINK | (fixed ? IOSQE_FIXED_FILE : 0);
		io_uring_sqe_set_data64(sqe, ud | OP_READ);
	}
	sqe = io_uring_get_sqe(&r->ring);
	if (fixed)
		io_uring_prep_close_direct(sqe, (unsigned)fd);
	else
		io_uring_prep_close(sqe, fd);
	io_uring_sqe_set_data64(sqe, ud | OP_CLOSE);
}

/* Starts the read of request id: the whole chain on direct descriptors; the
 * open alone on plain ones (read and close follow its completion, see reap);
 * a job on the pread path. */
static void start_read(rf_loader *l, struct rf_ring *r, uint32_t id, rf_request *q)
{
	q->direct = (uint8_t)r->direct;
	q->align = (uint32_t)r->align;
	q->ncqes = (uint16_t)(2 + reads_of(q->read_len));
	if (r->backend == BACKEND_PREAD) {
		rf_idq_push(&r->pread.jobs, id);
		return;
	}
	const char *path = rf_index_path(&l->index, q->sample);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
	io_uring_sqe_set_data64(sqe, (uint64_t)id << 2 | OP_OPEN);
	if (r->backend == BACKEND_PLAIN) {
		io_uring_prep_openat(sqe, l->index.root_fd, path, open_flags(r) | O_CLOEXEC, 0);
		return;
	}
	/* No O_CLOEXEC: a direct descriptor has no fd to leak, and the kernel
	 * refuses the flag for one (EINVAL). */
	io_uring_prep_openat_direct(sqe, l->index.root_fd, path, open_flags(r), 0, id);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, (uint64_t)id << 2 | OP_OPEN);
	prep_reads_close(r, id, q, (int)id, 1);
}

/* Room to start a read of len bytes: SQEs for its whole chain (the pread
 * path needs none). */
static int have_room(struct rf_ring *r, uint32_t len)
{
	return r->backend == BACKEND_PREAD ||
	       io_uring_sq_space_left(&r->ring) >= 2u + reads_of(len);
}

/* Starts reads while a request, buffer space, SQ room and a place exist. */
static void issue(rf_loader *l, struct rf_ring *r)
{
	char reason[RF_REASON_LEN];
	rf_place p;
	while (!r->failed && r->nfree && r->inflight < r->inflight_cap && next_place(l, r, &p)) {
		uint64_t sample, epoch, pos;
		rf_loader_place_sample(l, &p, &sample, &epoch, &pos);
		int64_t size = l->index.entries[sample].size;
		int err = 0;
		if (size < 0) {
			assert(size >= -4095); /* an errno: the index and its cache check it */
			err = (int)size;
			if (!not_regular(l, sample, reason, sizeof(reason)))
				rf_fmt(reason, sizeof(reason), "cannot stat: %s", strerror((int)-size));
		} else if (size == 0) {
			err = RF_EBADSAMPLE;
			rf_fmt(reason, sizeof(reason), "empty file");
		} else if ((uint64_t)size > r->max_file) {
			err = -EFBIG;
			rf_fmt(reason, sizeof(reason), "%lld bytes is more than the largest file "
			       "the read pool takes (%zu bytes: read_pool_bytes / 4)",
			       (long long)size, r->max_file);
		}
		if (err) {
			r->cur_valid = 0;
			place_failed(l, r, &p, sample, err, reason);
			continue;
		}
		/* One byte more than the index says, so a file that grew shows. */
		size_t len = RF_ALIGN_UP((size_t)size + 1, r->align);
		if (!have_room(r, (uint32_t)len))
			break; /* the SQ empties at the next submit */
		uint32_t ticket = NO_TICKET;
		uint8_t *buf;
		if (l->cfg.raw) {
			/* straight into the batch, after the samples issued before */
			rf_slot *s = rf_slot_of(l, &p);
			size_t off = RF_ALIGN_UP(s->raw_used, r->align);
			if (off + len > s->raw_cap) {
				/* only replacements can use up the room */
				r->cur_valid = 0;
				rf_fmt(reason, sizeof(reason), "no room left in the batch for a "
				       "replacement of %lld bytes", (long long)size);
				place_failed(l, r, &p, sample, -ENOSPC, reason);
				continue;
			}
			buf = s->batch.data + off;
			s->raw_used = off + len;
		} else if (rf_bufpool_alloc(&r->pool, len, &ticket, &buf)) {
			break; /* wait for buffers to come back */
		}
		uint32_t id = r->free_reqs[--r->nfree];
		rf_request *q = &l->req[id];
		*q = (rf_request){ .place = p, .sample = sample, .epoch = epoch, .pos = pos,
				   .buf = buf, .ticket = ticket, .read_len = (uint32_t)len };
		start_read(l, r, id, q);
		r->inflight++;
		r->cur_valid = 0;
		atomic_fetch_add_explicit(&l->st.reads_submitted, 1, memory_order_relaxed);
	}
}

static void release_request(struct rf_ring *r, uint32_t id, rf_request *q)
{
	if (q->ticket != NO_TICKET)
		rf_bufpool_free(&r->pool, q->ticket);
	r->free_reqs[r->nfree++] = id;
}

/* Reads the place again, the same candidate (after EAGAIN or a short read). */
static void read_again(struct rf_ring *r, uint32_t id, rf_request *q)
{
	rf_place p = q->place;
	p.transient++;
	release_request(r, id, q);
	retry_push(r, &p);
}

/* Errors that say the system is short of something (descriptors, memory),
 * not that the sample is bad. */
static int system_short(int res)
{
	return res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS;
}

/* The open or read of request id failed for want of descriptors or memory:
 * read the place again, with fewer reads in flight from now on (those still
 * in flight give theirs back). With nothing else in flight the process is at
 * its limit: after a few tries the stream fails, naming the limit, rather
 * than counting good samples as bad. @return : 0, or the error that stops
 * the loader. */
static int system_shortage(rf_loader *l, struct rf_ring *r, uint32_t id, rf_request *q, int res)
{
	uint32_t cap = RF_MAX(1u, r->inflight);
	if (cap < r->inflight_cap) {
		if (r->inflight_cap == (uint32_t)l->cfg.io_depth) /* logged once */
			rf_log(l->cfg.log_level, RF_LOG_WARN, "%s: %s: fewer reads in flight (%u, "
			       "then as many as the system allows)", q->open_res < 0 ? "open" : "read",
			       strerror(-res), cap);
		r->inflight_cap = cap;
	}
	r->starved = r->inflight ? 0 : r->starved + 1;
	if (r->starved > RF_MAX_TRANSIENT) {
		struct rlimit lim = { 0 };
		getrlimit(RLIMIT_NOFILE, &lim);
		char what[160];
		rf_fmt(what, sizeof(what), "%s of %s/%s with no other read in flight (the "
		       "descriptor limit, ulimit -n, is %llu)", q->open_res < 0 ? "open" : "read",
		       l->index.root, rf_index_path(&l->index, q->sample),
		       (unsigned long long)lim.rlim_cur);
		release_request(r, id, q);
		ring_failed(l, res, what);
		r->failed = 1;
		return res;
	}
	rf_place p = q->place; /* the same candidate: nothing is counted against it */
	release_request(r, id, q);
	retry_push(r, &p);
	return 0;
}

/* The read of a chain is complete (its three results are in): judge it. */
static void chain_done(rf_loader *l, struct rf_ring *r, uint32_t id)
{
	rf_request *q = &l->req[id];
	int64_t size = l->index.entries[q->sample].size;
	char reason[RF_REASON_LEN];
	int err = 0;
	r->inflight--;
	if (r->test_delay_us) /* test-only: a slow device (see ring_setup.c) */
		usleep(r->test_delay_us);
	if (q->read_err)
		q->read_res = q->read_err;
#if RF_TEST_HOOKS
	if (test_hook && q->open_res >= 0)
		q->read_res = test_hook(test_hook_ctx, q->sample, q->read_res, size);
#endif
	int transient_left = q->place.transient < RF_MAX_TRANSIENT;
	int short_of = q->open_res < 0 ? q->open_res : q->read_res < 0 ? q->read_res : 0;
	if (system_short(short_of)) {
		system_shortage(l, r, id, q, short_of);
		return;
	}
	if (q->open_res >= 0)
		r->starved = 0;
	if (q->open_res < 0) {
		if (q->open_res == -EINVAL && q->direct && !not_regular(l, q->sample, reason,
								       sizeof(reason))) {
			/* tmpfs and some others refuse O_DIRECT: read buffered from
			 * now on, and read this place again as if nothing happened. */
			if (r->direct) {
				r->direct = 0;
				atomic_store(&l->st.direct_io, 0);
				rf_log(l->cfg.log_level, RF_LOG_WARN, "O_DIRECT refused (EINVAL) "
				       "under %s: using buffered reads", l->index.root);
			}
			rf_place p = q->place;
			release_request(r, id, q);
			retry_push(r, &p);
			return;
		}
		if ((q->open_res == -EAGAIN || q->open_res == -EINTR) && transient_left) {
			read_again(r, id, q);
			return;
		}
		err = q->open_res;
		if (err != -EINVAL || !q->direct) /* else reason says it is not a regular file */
			rf_fmt(reason, sizeof(reason), "open: %s", strerror(-err));
	} else if (q->read_res < 0) {
		if ((q->read_res == -EAGAIN || q->read_res == -EINTR) && transient_left) {
			read_again(r, id, q);
			return;
		}
		err = q->read_res;
		rf_fmt(reason, sizeof(reason), "read: %s", strerror(-err));
	} else if ((int64_t)q->read_res != size) {
		/* Short: a transient short read, or a file that shrank. Read again
		 * a few times before believing the file changed. */
		if ((int64_t)q->read_res < size && transient_left) {
			read_again(r, id, q);
			return;
		}
		err = RF_EBADSAMPLE;
		rf_fmt(reason, sizeof(reason), "file %s since it was indexed (%lld bytes then, "
		       "read %d)", (int64_t)q->read_res < size ? "shrank" : "grew",
		       (long long)size, q->read_res);
	}
	if (err) {
		rf_place p = q->place;
		uint64_t sample = q->sample;
		if (q->open_res >= 0 && not_regular(l, sample, reason, sizeof(reason)))
			err = RF_EBADSAMPLE;
		release_request(r, id, q);
		place_failed(l, r, &p, sample, err, reason);
		return;
	}
	atomic_fetch_add_explicit(&l->st.bytes_read, (uint64_t)size, memory_order_relaxed);
	rf_slot *slot = rf_slot_of(l, &q->place);
	atomic_fetch_add_explicit(&slot->read_bytes, (uint64_t)size, memory_order_relaxed);
	atomic_store_explicit(&slot->t_last_read, rf_now_ns(), memory_order_relaxed); /* one writer: this thread */
	if (q->ticket == NO_TICKET) { /* raw: the bytes are in place, the sample has landed */
		rf_slot *s = rf_slot_of(l, &q->place);
		uint32_t i = q->place.index;
		s->batch.offsets[i] = (uint64_t)(q->buf - s->batch.data);
		s->batch.sizes[i] = (uint32_t)size;
		s->batch.labels[i] = l->index.entries[q->sample].label;
		s->batch.ids[i] = q->sample;
		s->batch.bytes = s->raw_used; /* final at the batch's last landing */
		if (q->place.attempt)
			atomic_fetch_add_explicit(&s->replaced, 1, memory_order_relaxed);
		release_request(r, id, q);
		rf_loader_place_landed(l, s);
		return;
	}
	rf_loader_dispatch(l, id); /* now a decoder's, until handed back */
}

/* A plain-descriptor open completed: on success start its read and close; on
 * failure the chain is over (no read or close will post). */
static void plain_opened(rf_loader *l, struct rf_ring *r, uint32_t id, rf_request *q, int res)
{
	q->open_res = res;
	if (res < 0) {
		q->read_res = q->close_res = -ECANCELED;
		q->cqes = q->ncqes;
		chain_done(l, r, id);
		return;
	}
	q->cqes = 1;
	prep_reads_close(r, id, q, res, 0); /* SQ room: reserved at issue (a whole chain) */
}

static void reap_ring(rf_loader *l, struct rf_ring *r)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&r->ring, head, cqe) {
		n++;
		if (cqe->user_data == UD_WAKE) {
			r->wake_armed = 0;
			continue;
		}
		uint32_t id = (uint32_t)(cqe->user_data >> 2);
		rf_request *q = &l->req[id];
		switch (cqe->user_data & 3) {
		case OP_OPEN:
			if (r->backend == BACKEND_PLAIN) {
				plain_opened(l, r, id, q, cqe->res);
				continue;
			}
			q->open_res = cqe->res;
			break;
		case OP_READ:
			if (cqe->res < 0) {
				if (!q->read_err)
					q->read_err = cqe->res;
			} else {
				q->read_res += cqe->res;
			}
			break;
		default: q->close_res = cqe->res; break;
		}
		if (++q->cqes == q->ncqes)
			chain_done(l, r, id);
	}
	io_uring_cq_advance(&r->ring, n);
}

static void reap_pread(rf_loader *l, struct rf_ring *r)
{
	uint32_t n = rf_idq_drain(&r->pread.done, r->drain, (uint32_t)l->cfg.io_depth);
	for (uint32_t i = 0; i < n; i++)
		chain_done(l, r, r->drain[i]);
}

/* Requests the compute pool handed back: free their buffers; a failed
 * decode asks for a replacement. */
static void take_back(rf_loader *l, struct rf_ring *r)
{
	uint32_t n = rf_idq_drain(&l->done, r->drain, (uint32_t)l->cfg.io_depth);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = r->drain[i];
		rf_request *q = &l->req[id];
		rf_place p = q->place;
		uint64_t sample = q->sample;
		int err = q->err;
		char reason[RF_REASON_LEN];
		if (err)
			memcpy(reason, q->reason, sizeof(reason));
		release_request(r, id, q);
		if (err)
			place_failed(l, r, &p, sample, err, reason);
	}
}

static void ring_failed(rf_loader *l, int err, const char *what)
{
	pthread_mutex_lock(&l->mu);
	if (!l->ring_err) {
		l->ring_err = err;
		rf_fmt(l->ring_errmsg, sizeof(l->ring_errmsg), "%s: %s", what, strerror(-err));
	}
	pthread_cond_broadcast(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

/* Sleeps until something happens. @return : 0, or a negative code that
 * stops the loader. */
static int wait_events(rf_loader *l, struct rf_ring *r)
{
	if (r->backend == BACKEND_PREAD) {
		uint64_t v;
		ssize_t n = read(l->wake_fd, &v, sizeof(v));
		return n < 0 && errno != EINTR && errno != EAGAIN ? -errno : 0;
	}
	if (!r->wake_armed)
		arm_wake(l, r);
	int ret = io_uring_submit_and_wait(&r->ring, 1);
	if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
		return ret;
	reap_ring(l, r);
	return 0;
}

void *rf_ring_main(void *arg)
{
	rf_loader *l = arg;
	struct rf_ring *r = calloc(1, sizeof(*r));
	char err[256] = "out of memory";
	int ret = r ? rf_ring_setup(l, r, err, sizeof(err)) : -ENOMEM;
	l->ring = r;
	pthread_mutex_lock(&l->init_mu);
	l->init_ret = ret;
	rf_fmt(l->init_err, sizeof(l->init_err), "%s", err);
	l->init_done = 1;
	pthread_cond_signal(&l->init_cv);
	pthread_mutex_unlock(&l->init_mu);
	if (ret)
		goto out;

	uint64_t cpu0 = rf_thread_cpu_ns();
	if (r->backend != BACKEND_PREAD)
		arm_wake(l, r);
	while (!atomic_load_explicit(&l->stop, memory_order_acquire)) {
		take_back(l, r);
		if (r->backend == BACKEND_PREAD)
			reap_pread(l, r);
		issue(l, r);
		ret = wait_events(l, r);
		if (ret) {
			ring_failed(l, ret, r->backend == BACKEND_PREAD ? "read(eventfd)"
									: "io_uring_submit_and_wait");
			break;
		}
		atomic_store_explicit(&l->st.ns_ring_cpu, rf_thread_cpu_ns() - cpu0,
				      memory_order_relaxed);
		atomic_store_explicit(&l->st.reads_in_flight, r->inflight, memory_order_relaxed);
	}
out:
	if (r)
		rf_ring_teardown(l, r);
	return NULL;
}
