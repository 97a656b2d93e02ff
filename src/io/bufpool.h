/* bufpool.h - the read-buffer pool: one aligned region (registered with
 * io_uring as a single fixed buffer) handed out as a byte ring.
 *
 * Allocations are made in submission order and may be freed in any order;
 * space is reclaimed from the oldest allocation forward, so a slow sample
 * holds back reuse of the space after it until it is freed (bounded by the
 * pool size). Memory stays proportional to the bytes actually in flight,
 * whatever the mix of file sizes, with no allocation per sample.
 *
 * Thread rule: owned by the ring thread alone; no locking. */
#ifndef RF_BUFPOOL_H
#define RF_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "util/fifo.h"

typedef struct rf_bufpool_rec {
	size_t off, end; /* [off, end) of the allocation */
	int freed;
} rf_bufpool_rec;

typedef struct rf_bufpool {
	uint8_t *base;
	size_t cap;
	size_t align;
	size_t head;  /* next allocation starts here (or at 0 after a wrap) */
	size_t tail;  /* the oldest live allocation starts here */
	rf_bufpool_rec *rec; /* live allocations in allocation order: cells of `live`; an
	                      * allocation's ticket is its cell */
	rf_fifo live;
} rf_bufpool;

/* Maps cap bytes (rounded up to align) and room for max_live allocations.
 * Returns 0 or -ENOMEM. */
int rfi_bufpool_init(rf_bufpool *p, size_t cap, size_t align, uint32_t max_live);
void rfi_bufpool_destroy(rf_bufpool *p);

/* Takes len bytes (rounded up to align). Returns 0 with *ticket and *ptr set,
 * or -ENOSPC when the space is not free now (try again after a free). */
int rfi_bufpool_alloc(rf_bufpool *p, size_t len, uint32_t *ticket, uint8_t **ptr);

/* Gives back the allocation named by ticket (once: a ticket given back
 * twice is a bug, asserted). */
void rfi_bufpool_free(rf_bufpool *p, uint32_t ticket);

#endif
