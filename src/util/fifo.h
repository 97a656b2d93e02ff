/* fifo.h - the bookkeeping of a bounded FIFO ring: which cell of the
 * owner's array the next push fills and which the next pop empties. The
 * cells stay the owner's, of whatever type (ids, places, allocation
 * records), so a cell's number can also name the item while it is queued
 * (the read pool's tickets). One helper for every first/count ring in the
 * library (idq's ids, the feeder's retries, the engine's reads to start
 * again and results to reap, the read pool's live allocations), so that the
 * wrap-around is written once and its bounds asserted once.
 *
 * Thread rule: none of its own; the owner serializes (idq holds its mutex,
 * the others are one thread's). Private. */
#ifndef RF_FIFO_H
#define RF_FIFO_H

#include <assert.h>
#include <stdint.h>

typedef struct rf_fifo {
	uint32_t cap;   /* cells in the owner's array */
	uint32_t first; /* the oldest item's cell, < cap */
	uint32_t count; /* items queued, <= cap */
} rf_fifo;

/* An empty ring over cap cells (cap >= 1). */
static inline void rfi_fifo_init(rf_fifo *q, uint32_t cap)
{
	assert(cap >= 1 && cap <= UINT32_MAX / 2); /* first + count cannot wrap the type */
	*q = (rf_fifo){ .cap = cap };
}

static inline int rfi_fifo_full(const rf_fifo *q)
{
	return q->count == q->cap;
}

/* @return : the cell the new (newest) item goes in. The ring must not be
 * full: every owner either sizes it so that it never is, or checks
 * rfi_fifo_full() first. */
static inline uint32_t rfi_fifo_push(rf_fifo *q)
{
	assert(q->count < q->cap && q->first < q->cap);
	uint32_t cell = (q->first + q->count) % q->cap;
	q->count++;
	return cell;
}

/* @return : the oldest item's cell, left queued. The ring must not be empty. */
static inline uint32_t rfi_fifo_peek(const rf_fifo *q)
{
	assert(q->count > 0 && q->first < q->cap);
	return q->first;
}

/* @return : the oldest item's cell, taken off the ring (its content stays
 * readable until the next push). The ring must not be empty. */
static inline uint32_t rfi_fifo_pop(rf_fifo *q)
{
	uint32_t cell = rfi_fifo_peek(q);
	q->first = (q->first + 1) % q->cap;
	q->count--;
	return cell;
}

/* 1 when cell holds a queued item (for asserts on a cell named by its
 * number), else 0. */
static inline int rfi_fifo_holds(const rf_fifo *q, uint32_t cell)
{
	if (cell >= q->cap)
		return 0;
	uint32_t age = cell >= q->first ? cell - q->first : cell + (q->cap - q->first);
	return age < q->count;
}

#endif
