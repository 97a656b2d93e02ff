/* engine.c - the read engine's hot path: start reads (chains on io_uring,
 * jobs for the pread pool), collect their completions, retry what is
 * transient, fall back to buffered reads where O_DIRECT is refused, back
 * off when the system runs short of descriptors or memory, and queue the
 * results for rfi_io_reap(). Set-up and teardown: engine_setup.c. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/engine_impl.h"
#include "util/util.h"

#define WAKE_POLL_MS 100 /* the pread path's longest sleep without a wake-up */

/* The engine's bookkeeping adds up (see engine_impl.h): for asserts. */
static int accounted(const rf_io *io)
{
	return (uint64_t)io->nfree + io->inflight + io->again_q.count + io->done_q.count ==
	       io->p.depth;
}

static uint16_t chunks_of(uint32_t span)
{
	return (uint16_t)((span + RF_IO_CHUNK - 1) / RF_IO_CHUNK);
}

size_t rfi_io_align(const rf_io *io)
{
	return io->align;
}

/* Aligned whenever O_DIRECT was asked for, even after a fallback to
 * buffered reads: a buffer sized before the fallback must still fit. */
size_t rfi_io_span(const rf_io *io, uint64_t offset, uint32_t len)
{
	if (!io->p.direct)
		return len;
	uint64_t start = offset & ~((uint64_t)io->align - 1);
	return (size_t)(RF_ALIGN_UP(offset + len, io->align) - start);
}

void rfi_io_get_info(const rf_io *io, rf_io_info *info)
{
	static const rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
	info->path = paths[io->backend];
	info->direct = io->direct;
	info->align = io->align;
	info->fixed_buffers = io->fixed_regions > 0;
	info->inflight = io->inflight;
	info->http = (rf_io_http_counts){ 0 };
	if (io->reader)
		io->p.url_reader->get_counts(io->reader, &info->http);
}

/* O_NONBLOCK: a FIFO put where a file was must not block the open (waiting
 * for a writer) or its read; regular files ignore the flag, and io_uring
 * still punts their reads to a worker when they would block. */
int rfi_io_open_flags(int direct)
{
	return O_RDONLY | O_NONBLOCK | (direct ? O_DIRECT : 0);
}

static void arm_wake(rf_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	if (!sqe)
		return; /* SQ full: armed on the next pass, after a submit */
	io_uring_prep_read(sqe, io->p.wake_fd, &io->wake_buf, sizeof(io->wake_buf), 0);
	io_uring_sqe_set_data64(sqe, UD_WAKE);
	io->wake_armed = 1;
}

/* SQEs a read of span bytes needs: open and close around a file's reads. */
static unsigned sqes_of(uint32_t span, int chain)
{
	return (chain ? 2u : 0u) + chunks_of(span);
}

static int have_room(rf_io *io, unsigned sqes)
{
	return io->backend == BACKEND_PREAD || io_uring_sq_space_left(&io->ring) >= sqes;
}

/* The registered region buf lies in, or -1. */
static int region_of(const rf_io *io, const uint8_t *buf, uint32_t len)
{
	for (int i = 0; i < io->fixed_regions; i++) {
		const uint8_t *b = io->regions[i].base;
		if (buf >= b && buf + len <= b + io->regions[i].len)
			return i;
	}
	return -1;
}

/* The reads of request id (and the close of a chain), once its file is fd
 * (a direct descriptor index when fixed_file): one read per RF_IO_CHUNK.
 * Hard links keep a short read (the last read of a whole file always is:
 * it asks for more than the file holds) from cancelling what follows. */
static void prep_reads(rf_io *io, uint32_t id, rf_io_req *q)
{
	uint64_t ud = (uint64_t)id << 2;
	int region = region_of(io, q->rd.buf, q->span);
	struct io_uring_sqe *sqe;
	for (uint32_t off = 0; off < q->span; off += RF_IO_CHUNK) {
		uint32_t n = RF_MIN(RF_IO_CHUNK, q->span - off);
		sqe = io_uring_get_sqe(&io->ring);
		assert(sqe); /* have_room() reserved the whole chain */
		if (region >= 0)
			io_uring_prep_read_fixed(sqe, q->fd, q->rd.buf + off, n, q->start + off, region);
		else
			io_uring_prep_read(sqe, q->fd, q->rd.buf + off, n, q->start + off);
		int last = off + n >= q->span;
		if (q->fixed_file)
			sqe->flags |= IOSQE_FIXED_FILE;
		if (q->chain || !last)
			sqe->flags |= IOSQE_IO_HARDLINK;
		io_uring_sqe_set_data64(sqe, ud | OP_READ);
	}
	if (!q->chain)
		return;
	sqe = io_uring_get_sqe(&io->ring);
	assert(sqe); /* as above */
	if (q->fixed_file)
		io_uring_prep_close_direct(sqe, (unsigned)q->fd);
	else
		io_uring_prep_close(sqe, q->fd);
	io_uring_sqe_set_data64(sqe, ud | OP_CLOSE);
}

static void finished(rf_io *io, uint32_t id);

/* ---- URL reads: the URL reader's transfers, their sockets polled here ---- */

static struct io_uring_sqe *get_sqe(rf_io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	if (!sqe) { /* full: what is queued goes to the kernel first */
		io_uring_submit(&io->ring);
		sqe = io_uring_get_sqe(&io->ring);
	}
	return sqe;
}

/* Asks the ring to tell when fd has the events the reader wants. */
static void arm_poll(rf_io *io, int fd)
{
	rf_io_sock *k = &io->socks[fd];
	struct io_uring_sqe *sqe = get_sqe(io);
	if (!sqe)
		return; /* cannot happen after a submit; the reader's timer still runs */
	io_uring_prep_poll_add(sqe, fd, (unsigned)k->events);
	io_uring_sqe_set_data64(sqe, UD_POLL | (uint64_t)k->gen << 32 | (uint32_t)fd);
	k->armed = 1;
}

/* The reader's watch hook: fd to be watched for events, or no longer (0). */
static void url_watch(void *engine, int fd, short events)
{
	rf_io *io = engine;
	if (fd < 0)
		return;
	if (fd >= io->nsocks) {
		int n = RF_MAX(fd + 1, io->nsocks * 2);
		rf_io_sock *k = realloc(io->socks, (size_t)n * sizeof(*k));
		if (!k)
			return; /* not watched: the reader's timer still drives it, slowly */
		memset(k + io->nsocks, 0, (size_t)(n - io->nsocks) * sizeof(*k));
		io->socks = k;
		io->nsocks = n;
	}
	rf_io_sock *k = &io->socks[fd];
	if (k->armed) { /* taken back: its CQE, if it still comes, is stale */
		struct io_uring_sqe *sqe = get_sqe(io);
		if (sqe) {
			io_uring_prep_poll_remove(sqe, UD_POLL | (uint64_t)k->gen << 32 | (uint32_t)fd);
			io_uring_sqe_set_data64(sqe, UD_POLL_REMOVE);
		}
		k->armed = 0;
		k->gen = (k->gen + 1) & 0x3fffffffu;
	}
	k->events = events;
	if (events)
		arm_poll(io, fd);
}

/* A poll of a reader's socket fired: the reader reads or writes it; watched
 * again unless the reader changed its mind meanwhile. */
static void url_polled(rf_io *io, uint64_t ud, int res)
{
	int fd = (int)(uint32_t)ud;
	uint32_t gen = (uint32_t)(ud >> 32) & 0x3fffffffu;
	if (!io->reader || fd >= io->nsocks || io->socks[fd].gen != gen || !io->socks[fd].armed)
		return; /* a poll taken back */
	io->socks[fd].armed = 0;
	io->p.url_reader->socket_ready(io->reader, fd, res < 0 ? POLLERR : (short)res);
	rf_io_sock *k = &io->socks[fd];
	if (k->events && !k->armed)
		arm_poll(io, fd);
}

/* The reader's done hook: read id is over. */
static void url_done(void *engine, uint32_t id, const rf_io_url_result *r)
{
	rf_io *io = engine;
	rf_io_req *q = &io->reqs[id];
	q->object_size = r->size;
	q->http_status = (uint16_t)RF_MIN(r->status, 999L);
	q->tries = (uint16_t)RF_MIN(r->tries, 65535u);
	q->ms = (uint32_t)RF_MIN(r->ns / 1000000, (uint64_t)UINT32_MAX);
	q->open_res = r->step == RF_IO_STEP_OPEN ? r->res : 0;
	q->read_res = r->res;
	rfi_fmt(q->why, sizeof(q->why), "%s", r->why ? r->why : "");
	finished(io, id);
}

/* Makes the URL reader at the first URL read (cold path); a failure is
 * logged once, and every URL read fails. */
static void make_reader(rf_io *io)
{
	char why[256];
	rf_io_url_hooks hooks = { .engine = io, .watch = url_watch, .done = url_done };
	io->reader_failed = 1;
	if (io->backend == BACKEND_PREAD)
		rfi_fmt(why, sizeof(why), "http(s) reads need io_uring (the pread path has no "
		       "event loop for sockets)");
	else if (!io->p.url_reader)
		rfi_fmt(why, sizeof(why), "a URL read, and no URL reader (the source's transport "
		       "reads no URLs)");
	else if (!io->p.url_reader->create(&io->reader, &hooks, &io->p, why, sizeof(why)))
		io->reader_failed = 0;
	if (io->reader_failed) {
		io->reader = NULL;
		rfi_log(io->p.log_level, RF_LOG_ERROR, "%s", why);
	}
}

/* Starts read id of a URL: a ranged read, no alignment, nothing over-read. */
static void start_url(rf_io *io, uint32_t id, rf_io_req *q)
{
	q->direct = 0;
	q->start = q->rd.offset;
	q->skip = 0;
	q->span = q->rd.len;
	q->open_res = q->read_res = q->close_res = q->read_err = 0;
	q->cqes = q->ncqes = 0;
	io->inflight++;
	if (!io->reader && !io->reader_failed)
		make_reader(io);
	if (!io->reader) {
		url_done(io, id, &(rf_io_url_result){ .res = -EPROTONOSUPPORT,
						      .step = RF_IO_STEP_OPEN });
		return;
	}
	io->p.url_reader->start(io->reader, id, &q->rd);
}

/* Starts (or starts again) read id: the span this read covers in this mode,
 * then the whole chain on direct descriptors, the open alone on plain ones
 * (reads and close follow its completion, see plain_opened), or a job for
 * the pread pool. Room was checked by the caller. */
static void start(rf_io *io, uint32_t id)
{
	rf_io_req *q = &io->reqs[id];
	if (q->rd.url) {
		start_url(io, id, q);
		return;
	}
	const rf_io_file *f = q->chain ? NULL : &io->files[q->rd.file];
	uint32_t was = q->span; /* 0: its first start (rfi_io_submit cleared q) */
	q->direct = (uint8_t)(f ? f->direct : io->direct);
	q->start = q->direct ? q->rd.offset & ~((uint64_t)io->align - 1) : q->rd.offset;
	q->skip = (uint32_t)(q->rd.offset - q->start);
	q->span = (uint32_t)(q->direct ? RF_ALIGN_UP(q->rd.offset + q->rd.len, io->align) - q->start
				       : q->rd.len);
	/* started again, it needs no more of the caller's buffer than at first
	 * (direct only ever turns off) */
	assert(!was || q->span <= was);
	(void)was;
	q->open_res = q->read_res = q->close_res = q->read_err = 0;
	q->cqes = 0;
	q->ncqes = (uint16_t)sqes_of(q->span, q->chain);
	q->fd = f ? (f->slot >= 0 ? f->slot : f->fd) : -1;
	q->fixed_file = (uint8_t)(f ? f->slot >= 0 : io->backend == BACKEND_FIXED);
	io->inflight++;
	if (io->backend == BACKEND_PREAD) {
		rfi_idq_push(&io->pread.jobs, id);
		return;
	}
	if (!q->chain) {
		prep_reads(io, id, q);
		return;
	}
	struct io_uring_sqe *sqe = io_uring_get_sqe(&io->ring);
	assert(sqe); /* have_room() reserved the whole chain */
	int flags = rfi_io_open_flags(q->direct);
	if (io->backend == BACKEND_PLAIN) {
		io_uring_prep_openat(sqe, q->rd.dirfd, q->rd.path, flags | O_CLOEXEC, 0);
		io_uring_sqe_set_data64(sqe, (uint64_t)id << 2 | OP_OPEN);
		return;
	}
	/* No O_CLOEXEC: a direct descriptor has no fd to leak, and the kernel
	 * refuses the flag for one (EINVAL). */
	io_uring_prep_openat_direct(sqe, q->rd.dirfd, q->rd.path, flags, 0, id);
	sqe->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(sqe, (uint64_t)id << 2 | OP_OPEN);
	q->fd = (int)id;
	prep_reads(io, id, q);
}

/* Starts the reads waiting to be read again, oldest first, while there is
 * room. */
static void start_again(rf_io *io)
{
	while (io->again_q.count && io->inflight < io->cap) {
		uint32_t id = io->again[rfi_fifo_peek(&io->again_q)];
		const rf_io_req *q = &io->reqs[id];
		/* the span is at most what it was (direct only ever turns off) */
		if (!have_room(io, sqes_of(q->span, q->chain)))
			return;
		rfi_fifo_pop(&io->again_q);
		start(io, id);
	}
}

int rfi_io_ready(rf_io *io, size_t span)
{
	start_again(io);
	return !io->again_q.count && io->nfree && io->inflight < io->cap &&
	       have_room(io, sqes_of((uint32_t)span, 1));
}

int rfi_io_ready_n(rf_io *io, size_t span, uint32_t n)
{
	start_again(io);
	return !io->again_q.count && io->nfree >= n && io->inflight + n <= io->cap &&
	       have_room(io, n * sqes_of((uint32_t)span, 1));
}

void rfi_io_submit(rf_io *io, const rf_io_read *rd)
{
	assert(io->nfree && rd->len > 0);
	uint32_t id = io->free_ids[--io->nfree];
	rf_io_req *q = &io->reqs[id];
	memset(q, 0, sizeof(*q));
	q->rd = *rd;
	q->chain = rd->path != NULL && !rd->url;
	assert(q->chain || rd->url || (rd->file >= 0 && (uint32_t)rd->file < io->p.max_files &&
				       io->files[rd->file].fd >= 0));
	start(io, id);
	assert(accounted(io));
}

static void read_again(rf_io *io, uint32_t id)
{
	/* Bounded: a read is either in flight, waiting here, or free (the
	 * push asserts room). */
	io->again[rfi_fifo_push(&io->again_q)] = id;
}

/* Queues the result of read id; its number is freed when it is reaped, so
 * that reads in flight and results waiting are depth at most together. */
static void complete(rf_io *io, uint32_t id, int32_t res, int step)
{
	rf_io_req *q = &io->reqs[id];
	if (res >= 0) /* the caller's range only: trim the over-read */
		res = res <= (int32_t)q->skip ? 0 : (int32_t)RF_MIN((uint32_t)res - q->skip, q->rd.len);
	q->result = res;
	q->step = (uint8_t)step;
	io->done[rfi_fifo_push(&io->done_q)] = id; /* bounded as above */
}

/* Errors that say the system is short of something (descriptors, memory),
 * not that the file is bad. */
static int system_short(int res)
{
	return res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS;
}

/* Cold path: is path (still) a regular file? */
static int is_regular(const rf_io_req *q)
{
	struct stat st;
	return fstatat(q->rd.dirfd, q->rd.path, &st, 0) == 0 && S_ISREG(st.st_mode);
}

/* All the CQEs of read id are in (or the pool finished it): retry, fall
 * back, back off, or queue its result. */
static void finished(rf_io *io, uint32_t id)
{
	rf_io_req *q = &io->reqs[id];
	assert(io->inflight > 0); /* id was in flight */
	io->inflight--;
	if (q->read_err)
		q->read_res = q->read_err;
	int step = q->open_res < 0 ? RF_IO_STEP_OPEN : RF_IO_STEP_READ;
	int32_t res = q->open_res < 0 ? q->open_res : q->read_res;
	if (system_short(res)) {
		/* Fewer reads in flight from now on (those still in flight give
		 * theirs back), and this one again. With nothing else in flight
		 * the process is at its limit: after a few tries the result is
		 * the error (the caller fails its stream, naming the limit),
		 * rather than a good file reported bad. */
		uint32_t cap = RF_MAX(1u, io->inflight);
		if (cap < io->cap) {
			if (io->cap == io->p.depth) /* logged once */
				rfi_log(io->p.log_level, RF_LOG_WARN, "%s: %s: fewer reads in flight "
				       "(%u, then as many as the system allows)",
				       step == RF_IO_STEP_OPEN ? "open" : "read", strerror(-res), cap);
			io->cap = cap;
		}
		io->starved = io->inflight ? 0 : io->starved + 1;
		if (io->starved > RF_IO_MAX_TRANSIENT)
			complete(io, id, res, step);
		else
			read_again(io, id);
		return;
	}
	if (q->open_res >= 0) {
		io->starved = 0;
		/* after a shortage, one more read in flight per 16 that open: the
		 * limit is found again if what used the descriptors let them go */
		if (io->cap < io->p.depth && ++io->opened_since_cap % 16 == 0)
			io->cap++;
	}
	if (step == RF_IO_STEP_OPEN && res == -EINVAL && q->direct && is_regular(q)) {
		/* tmpfs and some others refuse O_DIRECT: read buffered from now
		 * on, this file included, as if nothing happened. (A FIFO or a
		 * device refuses it too: that EINVAL goes to the caller.) */
		if (io->direct) {
			io->direct = 0;
			rfi_log(io->p.log_level, RF_LOG_WARN, "O_DIRECT refused (EINVAL) under %s: "
			       "using buffered reads", io->p.name ? io->p.name : "the source");
		}
		read_again(io, id);
		return;
	}
	if ((res == -EAGAIN || res == -EINTR) && q->transient < RF_IO_MAX_TRANSIENT) {
		q->transient++;
		read_again(io, id);
		return;
	}
	complete(io, id, res, step);
}

/* A plain-descriptor open completed: on success start its reads and close;
 * on failure the chain is over (no read or close will post). */
static void plain_opened(rf_io *io, uint32_t id, rf_io_req *q, int res)
{
	q->open_res = res;
	if (res < 0) {
		finished(io, id);
		return;
	}
	q->cqes = 1;
	q->fd = res;
	if (io_uring_sq_space_left(&io->ring) < q->ncqes - 1u)
		io_uring_submit(&io->ring); /* a chain must not straddle two submits */
	prep_reads(io, id, q);
}

static void reap_ring(rf_io *io)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&io->ring, head, cqe) {
		n++;
		if (cqe->user_data == UD_WAKE) {
			io->wake_armed = 0;
			continue;
		}
		if (cqe->user_data == UD_CANCEL || cqe->user_data == UD_POLL_REMOVE)
			continue;
		if (UD_IS_POLL(cqe->user_data)) {
			url_polled(io, cqe->user_data, cqe->res);
			continue;
		}
		if (UD_IS_WRITE(cqe->user_data)) {
			uint32_t w = (uint32_t)(cqe->user_data & (RF_IO_MAX_WRITES - 1));
			io->writes[w].res = cqe->res;
			io->wdone[rfi_fifo_push(&io->wdone_q)] = w;
			io->writes_inflight--;
			continue;
		}
		uint32_t id = (uint32_t)(cqe->user_data >> 2);
		assert(id < io->p.depth);
		rf_io_req *q = &io->reqs[id];
		/* a chain posts exactly the ncqes it was counted for (a plain
		 * open's CQE is counted in plain_opened) */
		assert(q->cqes < q->ncqes);
		switch (cqe->user_data & 3) {
		case OP_OPEN:
			if (io->backend == BACKEND_PLAIN) {
				plain_opened(io, id, q, cqe->res);
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
			finished(io, id);
	}
	io_uring_cq_advance(&io->ring, n);
}

static void reap_pread(rf_io *io)
{
	uint32_t n = rfi_idq_drain(&io->pread.done, io->drain, io->p.depth);
	for (uint32_t i = 0; i < n; i++)
		finished(io, io->drain[i]);
}

void rfi_io_describe(const rf_io_done *d, char *buf, size_t len)
{
	char what[RF_IO_WHY_MAX];
	if (d->why[0])
		rfi_fmt(what, sizeof(what), "%s", d->why);
	else if (d->res == -ESTALE && d->http_status == 412)
		rfi_fmt(what, sizeof(what), "changed on the server (HTTP 412: not the ETag indexed)");
	else if (d->http_status >= 400)
		rfi_fmt(what, sizeof(what), "HTTP %u", d->http_status);
	else if (d->res == -ETIMEDOUT)
		rfi_fmt(what, sizeof(what), "timed out");
	else if (d->res == -ECONNRESET)
		rfi_fmt(what, sizeof(what), "connection reset or cut short");
	else if (d->res == -EPROTONOSUPPORT && d->tries == 0)
		rfi_fmt(what, sizeof(what), "no http(s) reads here (a build without libcurl, or the "
		       "pread path)");
	else
		rfi_fmt(what, sizeof(what), "%s", strerror(-d->res));
	if (d->tries > 1)
		rfi_fmt(buf, len, "%s (%u tries in %.1f s)", what, d->tries, d->ms / 1e3);
	else
		rfi_fmt(buf, len, "%s", what);
}

uint32_t rfi_io_reap(rf_io *io, rf_io_done *done, uint32_t max)
{
	if (io->backend == BACKEND_PREAD)
		reap_pread(io);
	uint32_t n = 0;
	while (n < max && io->done_q.count) {
		uint32_t id = io->done[rfi_fifo_pop(&io->done_q)];
		const rf_io_req *q = &io->reqs[id];
		done[n++] = (rf_io_done){ .tag = q->rd.tag, .res = q->result, .skip = q->skip,
					  .step = q->step, .size = q->object_size,
					  .http_status = q->http_status, .tries = q->tries, .ms = q->ms };
		if (q->why[0])
			memcpy(done[n - 1].why, q->why, sizeof(q->why));
		assert(io->nfree < io->p.depth);
		io->free_ids[io->nfree++] = id;
	}
	assert(accounted(io));
	return n;
}

int rfi_io_write(rf_io *io, int fd, const void *buf, uint32_t len, uint64_t offset, uint64_t tag)
{
	if (io->backend == BACKEND_PREAD)
		return -ENOTSUP;
	uint32_t w = 0;
	while (w < RF_IO_MAX_WRITES && io->writes[w].busy)
		w++;
	if (w == RF_IO_MAX_WRITES)
		return -EBUSY;
	struct io_uring_sqe *sqe = get_sqe(io);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_write(sqe, fd, buf, len, offset);
	io_uring_sqe_set_data64(sqe, UD_WRITE | w);
	io->writes[w].tag = tag;
	io->writes[w].busy = 1;
	io->writes_inflight++;
	return 0;
}

uint32_t rfi_io_reap_writes(rf_io *io, rf_io_wrote *out, uint32_t max)
{
	uint32_t n = 0;
	while (n < max && io->wdone_q.count) {
		uint32_t w = io->wdone[rfi_fifo_pop(&io->wdone_q)];
		out[n++] = (rf_io_wrote){ .tag = io->writes[w].tag, .res = io->writes[w].res };
		io->writes[w].busy = 0;
	}
	return n;
}

int rfi_io_wait(rf_io *io)
{
	return rfi_io_wait_until(io, UINT64_MAX);
}

int rfi_io_wait_until(rf_io *io, uint64_t until)
{
	start_again(io);
	if (io->backend == BACKEND_PREAD) {
		reap_pread(io);
		/* what that reap put back (a shortage of descriptors with nothing
		 * else in flight) goes out again before this thread sleeps: else
		 * no read is in flight to wake it, and it sleeps for good */
		start_again(io);
		if (io->done_q.count)
			return 0;
		/* Sleep on the wake descriptor, but never for good: a lost wake-up
		 * (seen once in a few loaded runs of io::no_descriptor_left_fails_
		 * naming_the_limit, where a loader on io_uring was destroyed just
		 * before this one took the same descriptor number: a read the old
		 * ring still had queued on it may take the count) costs at most
		 * WAKE_POLL_MS, not a hung loader. */
		struct pollfd pfd = { .fd = io->p.wake_fd, .events = POLLIN };
		int ready = poll(&pfd, 1, WAKE_POLL_MS);
		if (ready < 0 && errno != EINTR)
			return -errno;
		if (ready > 0) {
			uint64_t v;
			ssize_t n = read(io->p.wake_fd, &v, sizeof(v));
			if (n < 0 && errno != EINTR && errno != EAGAIN)
				return -errno;
		}
		reap_pread(io);
		return 0;
	}
	if (!io->wake_armed)
		arm_wake(io);
	/* with results waiting, only collect what else finished (DEFER_TASKRUN
	 * posts completions only when this thread asks the kernel for them) */
	uint64_t deadline = io->reader ? io->p.url_reader->deadline(io->reader) : UINT64_MAX, now;
	deadline = RF_MIN(deadline, until);
	int ret;
	if (io->done_q.count || io->wdone_q.count) {
		ret = io_uring_submit_and_get_events(&io->ring);
	} else if (deadline != UINT64_MAX) { /* the reader's timer: sleep no longer than it */
		now = rfi_now_ns();
		uint64_t ns = deadline > now ? deadline - now : 0;
		struct __kernel_timespec ts = { .tv_sec = (long long)(ns / 1000000000ull),
						.tv_nsec = (long long)(ns % 1000000000ull) };
		struct io_uring_cqe *cqe;
		ret = ns ? io_uring_submit_and_wait_timeout(&io->ring, &cqe, 1, &ts, NULL)
			 : io_uring_submit_and_get_events(&io->ring);
		if (ret == -ETIME)
			ret = 0;
	} else {
		ret = io_uring_submit_and_wait(&io->ring, 1);
	}
	if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
		return ret;
	reap_ring(io);
	if (io->reader)
		io->p.url_reader->run_timer(io->reader);
	return 0;
}

int rfi_io_file_open(rf_io *io, int dirfd, const char *path)
{
	uint32_t h = 0;
	while (h < io->p.max_files && io->files[h].fd >= 0)
		h++;
	if (h == io->p.max_files)
		return -EMFILE;
	int direct = io->direct;
	int fd = openat(dirfd, path, rfi_io_open_flags(direct) | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL && direct) {
		direct = 0; /* a file system without O_DIRECT (a FIFO fails again below) */
		fd = openat(dirfd, path, rfi_io_open_flags(0) | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	int slot = -1;
	if (io->backend == BACKEND_FIXED) {
		int s = (int)(io->p.depth + h);
		if (io_uring_register_files_update(&io->ring, (unsigned)s, &fd, 1) == 1)
			slot = s;
	}
	io->files[h] = (rf_io_file){ .fd = fd, .slot = slot, .direct = (uint8_t)direct };
	return (int)h;
}

void rfi_io_file_close(rf_io *io, int file)
{
	if (file < 0 || (uint32_t)file >= io->p.max_files || io->files[file].fd < 0)
		return;
	rf_io_file *f = &io->files[file];
	if (f->slot >= 0) {
		int none = -1;
		io_uring_register_files_update(&io->ring, (unsigned)f->slot, &none, 1);
	}
	close(f->fd);
	f->fd = -1;
	f->slot = -1;
}
