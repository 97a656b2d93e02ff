/* test_fifo.c - the bounded FIFO helper (src/util/fifo.h) that every
 * first/count ring uses: cells in push order across the wrap-around, full
 * and empty at their bounds, rfi_fifo_holds() naming exactly the queued
 * cells; and the invariants the test builds assert: a push on a full ring,
 * a pop on an empty one, a slot state change the loader never makes and a
 * read buffer given back twice each abort (Criterion runs every test in its
 * own process: .signal = SIGABRT expects that death). A build with NDEBUG
 * (a release) compiles the asserts out: those tests skip, saying so (and
 * expect no signal, else Criterion counts the skip as a failure). */
#include <criterion/criterion.h>
#include <signal.h>

#include "io/bufpool.h"
#include "pipeline/loader_state.h"
#include "util/fifo.h"

#define CAP 5u

Test(fifo, empty_then_full)
{
	rf_fifo q;
	rfi_fifo_init(&q, CAP);
	cr_assert_eq(q.count, 0);
	cr_assert_not(rfi_fifo_full(&q));
	for (uint32_t i = 0; i < CAP; i++) {
		cr_assert_not(rfi_fifo_full(&q));
		cr_assert_eq(rfi_fifo_push(&q), i, "from an empty ring, cells in order");
	}
	cr_assert(rfi_fifo_full(&q));
	cr_assert_eq(q.count, CAP);
	for (uint32_t i = 0; i < CAP; i++)
		cr_assert_eq(rfi_fifo_pop(&q), i, "oldest first");
	cr_assert_eq(q.count, 0);
}

/* Items through a ring of CAP cells, never more than `keep` queued: every
 * item comes out in the order it went in, from the cell it went into, over
 * many turns of the ring. */
static void through(uint32_t keep)
{
	rf_fifo q;
	uint32_t cells[CAP];
	rfi_fifo_init(&q, CAP);
	uint32_t in = 0, out = 0;
	while (out < 100) {
		while (q.count < keep)
			cells[rfi_fifo_push(&q)] = in++;
		cr_assert_eq(cells[rfi_fifo_peek(&q)], out, "peek: the oldest");
		cr_assert_eq(q.count, keep, "peek takes nothing");
		cr_assert_eq(cells[rfi_fifo_pop(&q)], out, "item %u after %u pushes", out, in);
		out++;
	}
	cr_assert_eq(in - out, keep - 1);
}

Test(fifo, wraps_around)
{
	for (uint32_t keep = 1; keep <= CAP; keep++)
		through(keep);
}

Test(fifo, holds_names_the_queued_cells)
{
	rf_fifo q;
	rfi_fifo_init(&q, CAP);
	for (uint32_t c = 0; c <= CAP; c++)
		cr_assert_not(rfi_fifo_holds(&q, c), "empty: no cell");
	/* queued cells 3, 4, 0 (wrapped): pushes 0..5 and pops 0..2 */
	for (int i = 0; i < 3; i++)
		rfi_fifo_push(&q);
	for (int i = 0; i < 3; i++)
		rfi_fifo_pop(&q);
	for (int i = 0; i < 3; i++)
		rfi_fifo_push(&q);
	cr_assert_eq(rfi_fifo_peek(&q), 3);
	int want[CAP] = { 1, 0, 0, 1, 1 };
	for (uint32_t c = 0; c < CAP; c++)
		cr_assert_eq(rfi_fifo_holds(&q, c), want[c], "cell %u", c);
	cr_assert_not(rfi_fifo_holds(&q, CAP), "past the end");
}

Test(fifo, one_cell)
{
	rf_fifo q;
	rfi_fifo_init(&q, 1);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rfi_fifo_push(&q), 0);
		cr_assert(rfi_fifo_full(&q));
		cr_assert_eq(rfi_fifo_pop(&q), 0);
		cr_assert_eq(q.count, 0);
	}
}

/* ---- what the test builds assert ---------------------------------------- */

#ifdef NDEBUG
#define ABORTS 0
#else
#define ABORTS SIGABRT
#endif

static void needs_asserts(void)
{
#ifdef NDEBUG
	cr_skip_test("built with NDEBUG (a release build): the asserts are compiled out");
#endif
}

Test(fifo_asserts, push_on_full_aborts, .signal = ABORTS)
{
	needs_asserts();
	rf_fifo q;
	rfi_fifo_init(&q, 2);
	rfi_fifo_push(&q);
	rfi_fifo_push(&q);
	rfi_fifo_push(&q);
}

Test(fifo_asserts, pop_on_empty_aborts, .signal = ABORTS)
{
	needs_asserts();
	rf_fifo q;
	rfi_fifo_init(&q, 2);
	rfi_fifo_push(&q);
	rfi_fifo_pop(&q);
	rfi_fifo_pop(&q);
}

Test(fifo_asserts, slot_moves_as_the_loader_moves_it)
{
	rf_slot s = { .state = SLOT_FREE };
	rfi_slot_set_state(&s, SLOT_FREE, SLOT_FILLING);
	rfi_slot_set_state(&s, SLOT_FILLING, SLOT_READY);
	rfi_slot_set_state(&s, SLOT_READY, SLOT_LENT);
	rfi_slot_set_state(&s, SLOT_LENT, SLOT_FREE);
	rfi_slot_set_state(&s, SLOT_FREE, SLOT_FILLING);
	rfi_slot_set_state(&s, SLOT_FILLING, SLOT_READY);
	rfi_slot_set_state(&s, SLOT_READY, SLOT_FREE); /* a failed batch */
	cr_assert_eq(s.state, SLOT_FREE);
}

Test(fifo_asserts, slot_from_the_wrong_state_aborts, .signal = ABORTS)
{
	needs_asserts();
	rf_slot s = { .state = SLOT_FILLING };
	rfi_slot_set_state(&s, SLOT_READY, SLOT_LENT); /* lent before it was ready */
}

Test(fifo_asserts, slot_move_never_made_aborts, .signal = ABORTS)
{
	needs_asserts();
	rf_slot s = { .state = SLOT_FILLING };
	rfi_slot_set_state(&s, SLOT_FILLING, SLOT_LENT); /* skips READY */
}

Test(fifo_asserts, read_buffer_given_back_twice_aborts, .signal = ABORTS)
{
	needs_asserts();
	rf_bufpool p;
	uint32_t t1, t2;
	uint8_t *b;
	cr_assert_eq(rfi_bufpool_init(&p, 1u << 16, 4096, 4), 0);
	cr_assert_eq(rfi_bufpool_alloc(&p, 100, &t1, &b), 0);
	cr_assert_eq(rfi_bufpool_alloc(&p, 100, &t2, &b), 0);
	rfi_bufpool_free(&p, t2); /* still live: t1 holds back the reclaim */
	rfi_bufpool_free(&p, t2);
}
