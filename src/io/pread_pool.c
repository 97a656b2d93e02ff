/* pread_pool.c - open / pread / close on a pool of threads (see pread_pool.h). */
#define _GNU_SOURCE
#include "io/pread_pool.h"
#include "io/engine_impl.h"
#include "util/util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Reads up to len bytes at offset of fd: a read that returns less than
 * asked is continued, unless O_DIRECT makes an unaligned offset impossible
 * (that is end of file anyway). Returns bytes read or -errno. */
static ssize_t read_span(int fd, uint8_t *buf, size_t len, uint64_t offset, int direct,
			 size_t align)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(offset + got));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno; /* EAGAIN too: a FIFO without data; the engine decides */
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (direct && got % align)
			break;
	}
	return (ssize_t)got;
}

static void *worker(void *arg)
{
	rf_pread_pool *p = arg;
	rf_io *io = p->io;
	uint32_t id;
	uint64_t idle;
	while (rfi_idq_pop_wait(&p->jobs, &id, &idle) == 0) {
		rf_io_req *q = &io->reqs[id];
		if (!q->chain) { /* a kept file */
			ssize_t n = read_span(io->files[q->rd.file].fd, q->rd.buf, q->span, q->start,
					      q->direct, io->align);
			q->read_res = (int32_t)n;
		} else {
			int fd = openat(q->rd.dirfd, q->rd.path, rfi_io_open_flags(q->direct) | O_CLOEXEC);
			if (fd < 0) {
				q->open_res = -errno;
			} else {
				ssize_t n = read_span(fd, q->rd.buf, q->span, q->start, q->direct,
						      io->align);
				q->read_res = (int32_t)n;
				q->close_res = close(fd) ? -errno : 0;
			}
		}
		q->cqes = q->ncqes;
		if (rfi_idq_push(&p->done, id)) {
			uint64_t one = 1; /* the engine may sleep in a read of wake_fd */
			ssize_t w = write(io->p.wake_fd, &one, sizeof(one));
			/* the counter cannot overflow: see rfi_loader_wake_ring */
			assert(w == (ssize_t)sizeof(one));
			(void)w;
		}
	}
	return NULL;
}

int rfi_pread_pool_start(rf_pread_pool *p, rf_io *io, int n)
{
	p->io = io;
	p->nthreads = 0;
	uint32_t cap = io->p.depth;
	if (rfi_idq_init(&p->jobs, cap) || rfi_idq_init(&p->done, cap))
		goto fail;
	p->threads = calloc((size_t)n, sizeof(pthread_t));
	if (!p->threads)
		goto fail;
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "rf-pread-%d", i % 100000);
		if (rfi_thread_start(&p->threads[i], worker, p, name))
			break;
		p->nthreads++;
	}
	if (p->nthreads == n)
		return 0;
fail:
	rfi_pread_pool_stop(p);
	return -ENOMEM;
}

void rfi_pread_pool_stop(rf_pread_pool *p)
{
	if (p->jobs.ids)
		rfi_idq_shutdown(&p->jobs);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	p->nthreads = 0;
	free(p->threads);
	p->threads = NULL;
	rfi_idq_destroy(&p->jobs);
	rfi_idq_destroy(&p->done);
}
