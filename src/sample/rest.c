/* rest.c - the rest of an epoch (see rest.h): splitting it between ranks,
 * a rank's position in it, and what ranks leave of a stream. */
#include "sample/rest.h"

#include <errno.h>

#include "util/util.h"

void rfi_rest_split(rf_rest *r, uint32_t world, rf_rank_tail tail, uint32_t batch_size,
		   int drop_last)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < r->runs; i++) {
		r->before[i] = total;
		total += r->len[i];
	}
	r->total = total;
	r->rank_len = rfi_rank_len(total, world, tail);
	r->batches = rfi_rank_batches(r->rank_len, batch_size, drop_last);
}

/* The run holding stream position s (< total): the last with before <= s. */
static uint32_t run_of(const rf_rest *r, uint64_t s)
{
	uint32_t lo = 0, hi = r->runs;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (r->before[mid] <= s)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

uint64_t rfi_rest_global(const rf_rest *r, uint32_t rank, uint32_t world, int blocked,
			uint64_t q)
{
	uint64_t s = blocked ? (uint64_t)rank * r->rank_len + q : rank + (uint64_t)world * q;
	if (s >= r->total)
		s %= r->total;
	uint32_t i = run_of(r, s);
	return r->start[i] + (s - r->before[i]);
}

/* Appends global positions [start, start + len), joining the last run when
 * they continue it. */
static int add_run(rf_rest *out, uint64_t start, uint64_t len)
{
	if (len == 0)
		return 0;
	uint32_t n = out->runs;
	if (n && out->start[n - 1] + out->len[n - 1] == start) {
		out->len[n - 1] += len;
		return 0;
	}
	if (n == RF_REST_MAX_RUNS)
		return -E2BIG;
	out->start[n] = start;
	out->len[n] = len;
	out->runs = n + 1;
	return 0;
}

/* Appends the global positions behind stream positions [a, b) of from. */
static int add_stream(rf_rest *out, const rf_rest *from, uint64_t a, uint64_t b)
{
	if (a >= b)
		return 0;
	for (uint32_t i = run_of(from, a); i < from->runs && from->before[i] < b; i++) {
		uint64_t lo = from->before[i], hi = lo + from->len[i];
		uint64_t x = RF_MAX(a, lo), y = RF_MIN(b, hi);
		int ret = add_run(out, from->start[i] + (x - lo), y - x);
		if (ret)
			return ret;
	}
	return 0;
}

int rfi_rest_left(const rf_rest *from, uint32_t world, int blocked, uint64_t rank_len,
		 uint64_t delivered, uint64_t taken, rf_rest *out)
{
	uint64_t T = from->total;
	out->epoch = from->epoch;
	out->runs = 0;
	taken = RF_MIN(taken, delivered);
	/* Stream positions a rank takes past T are wraps: repeats of positions
	 * taken at the start, so they take nothing new. */
	if (!blocked) /* rank r's q-th is r + world * q: ranks took a prefix */
		return add_stream(out, from, RF_MIN((uint64_t)world * taken, T),
				  RF_MIN((uint64_t)world * delivered, T));
	for (uint32_t r = 0; r < world; r++) {
		uint64_t first = (uint64_t)r * rank_len;
		if (first >= T)
			break;
		int ret = add_stream(out, from, RF_MIN(first + taken, T), RF_MIN(first + delivered, T));
		if (ret)
			return ret;
	}
	return 0;
}
