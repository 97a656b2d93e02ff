/* bufpool.c - the read-buffer byte ring (see bufpool.h). */
#define _GNU_SOURCE
#include "io/bufpool.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/util.h"

int rfi_bufpool_init(rf_bufpool *p, size_t cap, size_t align, uint32_t max_live)
{
	memset(p, 0, sizeof(*p));
	p->align = align;
	p->cap = RF_ALIGN_UP(cap, align);
	rfi_fifo_init(&p->live, max_live);
	p->rec = calloc(max_live, sizeof(*p->rec));
	if (!p->rec)
		return -ENOMEM;
	/* mmap gives page alignment (O_DIRECT needs the logical block size);
	 * try huge pages first, as fewer TLB entries help pinned memory. */
	void *m = MAP_FAILED;
	if (p->cap % (2u << 20) == 0)
		m = mmap(NULL, p->cap, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (m == MAP_FAILED)
		m = mmap(NULL, p->cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		free(p->rec);
		p->rec = NULL;
		return -ENOMEM;
	}
	p->base = m;
	return 0;
}

void rfi_bufpool_destroy(rf_bufpool *p)
{
	if (p->base)
		munmap(p->base, p->cap);
	free(p->rec);
	memset(p, 0, sizeof(*p));
}

int rfi_bufpool_alloc(rf_bufpool *p, size_t len, uint32_t *ticket, uint8_t **ptr)
{
	len = RF_ALIGN_UP(len ? len : 1, p->align);
	if (rfi_fifo_full(&p->live) || len > p->cap)
		return -ENOSPC;
	size_t off;
	if (p->live.count == 0) {
		p->head = p->tail = off = 0;
	} else if (p->head > p->tail) {
		/* free: [head, cap) and [0, tail) */
		if (p->cap - p->head >= len)
			off = p->head;
		else if (p->tail >= len)
			off = 0; /* [head, cap) stays unused until the ring passes it */
		else
			return -ENOSPC;
	} else {
		/* head <= tail with live allocations: free is [head, tail) */
		if (p->tail - p->head >= len)
			off = p->head;
		else
			return -ENOSPC;
	}
	assert(off + len <= p->cap);
	uint32_t t = rfi_fifo_push(&p->live);
	p->rec[t] = (rf_bufpool_rec){ .off = off, .end = off + len, .freed = 0 };
	p->head = off + len;
	*ticket = t;
	*ptr = p->base + off;
	return 0;
}

void rfi_bufpool_free(rf_bufpool *p, uint32_t ticket)
{
	/* a live allocation, not given back yet */
	assert(rfi_fifo_holds(&p->live, ticket) && !p->rec[ticket].freed);
	p->rec[ticket].freed = 1;
	while (p->live.count && p->rec[rfi_fifo_peek(&p->live)].freed)
		p->tail = p->rec[rfi_fifo_pop(&p->live)].end;
}
