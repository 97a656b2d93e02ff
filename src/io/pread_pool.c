/* pread_pool.c - open / pread / close on a pool of threads (see pread_pool.h). */
#define _GNU_SOURCE
#include "io/pread_pool.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Reads up to len bytes from the start of fd: a read that returns less than
 * asked is continued, unless O_DIRECT makes an unaligned offset impossible
 * (that is end of file anyway). Returns bytes read or -errno. */
static ssize_t read_file(int fd, uint8_t *buf, size_t len, int direct, size_t align)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno; /* EAGAIN too: a FIFO without data; the ring decides */
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (direct && got % align)
			break;
	}
	return (ssize_t)got;
}

/* O_NONBLOCK (see ring.c open_flags): a FIFO where a file was opens and
 * reads at once instead of waiting for a writer; regular files ignore it. */
static void *worker(void *arg)
{
	rf_pread_pool *p = arg;
	rf_loader *l = p->l;
	uint32_t id;
	uint64_t idle;
	while (rf_idq_pop_wait(&p->jobs, &id, &idle) == 0) {
		rf_request *q = &l->req[id];
		int fd = openat(l->index.root_fd, rf_index_path(&l->index, q->sample),
				O_RDONLY | O_CLOEXEC | O_NONBLOCK | (q->direct ? O_DIRECT : 0));
		if (fd < 0) {
			q->open_res = -errno;
			q->read_res = q->close_res = -ECANCELED; /* as a linked chain reports it */
		} else {
			q->open_res = 0;
			ssize_t n = read_file(fd, q->buf, q->read_len, q->direct, q->align);
			q->read_res = (int32_t)n;
			q->close_res = close(fd) ? -errno : 0;
		}
		q->cqes = q->ncqes;
		if (rf_idq_push(&p->done, id))
			rf_loader_wake_ring(l);
	}
	return NULL;
}

int rf_pread_pool_start(rf_pread_pool *p, rf_loader *l, int n)
{
	p->l = l;
	p->nthreads = 0;
	uint32_t cap = (uint32_t)l->cfg.io_depth;
	if (rf_idq_init(&p->jobs, cap) || rf_idq_init(&p->done, cap))
		goto fail;
	p->threads = calloc((size_t)n, sizeof(pthread_t));
	if (!p->threads)
		goto fail;
	for (int i = 0; i < n; i++) {
		char name[16];
		snprintf(name, sizeof(name), "rf-pread-%d", i % 100000);
		if (rf_thread_start(&p->threads[i], worker, p, name))
			break;
		p->nthreads++;
	}
	if (p->nthreads == n)
		return 0;
fail:
	rf_pread_pool_stop(p);
	return -ENOMEM;
}

void rf_pread_pool_stop(rf_pread_pool *p)
{
	if (p->jobs.ids)
		rf_idq_shutdown(&p->jobs);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	p->nthreads = 0;
	free(p->threads);
	p->threads = NULL;
	rf_idq_destroy(&p->jobs);
	rf_idq_destroy(&p->done);
}
