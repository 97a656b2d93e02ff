/* test_lifecycle.c - destroy in the middle of an epoch with reads in flight
 * returns promptly (and, under the sanitizer build, leaks nothing); destroy
 * right after create; NULL handling; a caller who holds every slot gets
 * -EDEADLK instead of a hang; batches may be released out of order; a
 * wait that times out or is interrupted takes nothing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline/feeder.h"
#include "testutil.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *dir;
static void setup(void) { dir = tu_tree("life", 4, 60); } /* 240 files */
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

Test(lifecycle, destroy_mid_epoch_is_prompt, .init = setup, .fini = teardown, .timeout = 30)
{
	for (int round = 0; round < 5; round++) {
		rf_config cfg;
		tu_config(&cfg, dir);
		cfg.io_depth = 256;
		cfg.prefetch = 8;
		cfg.epochs = 0;
		rf_loader *l;
		char err[256];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
		rf_batch *b;
		for (int i = 0; i < round; i++) {
			cr_assert_eq(rf_loader_next(l, &b), 0);
			if (i % 2)
				rf_batch_release(l, b); /* some held at destroy time */
		}
		double t0 = now();
		rf_loader_destroy(l);
		cr_assert_lt(now() - t0, TU_DESTROY_HUNG_S, "destroy took %.3f s", now() - t0);
	}
	tu_assert_no_leaks();
}

Test(lifecycle, null_and_misuse, .init = setup, .fini = teardown)
{
	rf_loader_destroy(NULL);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(NULL, &b), -EINVAL);
	rf_stats st;
	cr_assert_eq(rf_loader_stats(NULL, &st), -EINVAL);
	cr_assert_str_eq(rf_loader_error(NULL), "");
	rf_batch_release(NULL, NULL);

	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.prefetch = 2;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *x, *y, *z;
	cr_assert_eq(rf_loader_next(l, &x), 0);
	cr_assert_eq(rf_loader_next(l, &y), 0);
	cr_assert_eq(rf_loader_next(l, &z), -EDEADLK, "every slot is held");
	cr_assert(rf_loader_error(l)[0]);
	rf_batch fake = { 0 };
	rf_batch_release(l, &fake); /* not ours: ignored */
	rf_batch_release(l, y);     /* out of order */
	rf_batch_release(l, y);     /* twice: ignored */
	rf_batch_release(l, x);
	cr_assert_eq(rf_loader_next(l, &z), 0);
	cr_assert_eq(z->index, 2);
	rf_batch_release(l, z);
	rf_loader_destroy(l);
	tu_assert_no_leaks();
}

/* Takes n batches from l while keeping the batches for which keep(i) says
 * so (every other one is released at once); keeps at most `held` of them,
 * releasing the oldest kept one first. Each next() must succeed: a stalled
 * loader fails the test by its .timeout. */
static void take_keeping(rf_loader *l, int n, int held, int (*keep)(int))
{
	rf_batch *kept[16] = { 0 };
	int nkept = 0;
	for (int i = 0; i < n; i++) {
		rf_batch *b;
		int r = rf_loader_next(l, &b);
		cr_assert_eq(r, 0, "batch %d: %s (%s)", i, rf_strerror(r), rf_loader_error(l));
		if (!keep(i)) {
			rf_batch_release(l, b);
			continue;
		}
		if (nkept == held) {
			rf_batch_release(l, kept[0]);
			memmove(kept, kept + 1, (size_t)(held - 1) * sizeof(kept[0]));
			nkept--;
		}
		kept[nkept++] = b;
	}
	for (int i = 0; i < nkept; i++)
		rf_batch_release(l, kept[i]);
}

static int first_only(int i) { return i == 0; }
static int every(int i) { (void)i; return 1; }

static rf_loader *loader_with(const char *source, int in_order, int prefetch)
{
	rf_config cfg;
	tu_config(&cfg, source);
	cfg.in_order = in_order;
	cfg.prefetch = prefetch;
	cfg.epochs = 0;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	return l;
}

/* A batch kept for the whole run leaves prefetch - 1 slots to the others. */
Test(lifecycle, keep_the_first_batch_release_the_rest, .init = setup, .fini = teardown,
     .timeout = 30)
{
	for (int in_order = 0; in_order <= 1; in_order++) {
		rf_loader *l = loader_with(dir, in_order, 4);
		take_keeping(l, 40, 1, first_only);
		rf_loader_destroy(l);
	}
}

/* prefetch - 1 batches held at every moment: the most recent ones. */
Test(lifecycle, keep_the_3_most_recent_of_4, .init = setup, .fini = teardown, .timeout = 30)
{
	for (int in_order = 0; in_order <= 1; in_order++) {
		rf_loader *l = loader_with(dir, in_order, 4);
		take_keeping(l, 40, 3, every);
		rf_loader_destroy(l);
	}
}

/* Only when every slot is held is the next batch impossible: -EDEADLK
 * then, in either order mode, and the message says so. */
Test(lifecycle, every_slot_held_is_edeadlk_in_both_modes, .init = setup, .fini = teardown,
     .timeout = 30)
{
	for (int in_order = 0; in_order <= 1; in_order++) {
		rf_loader *l = loader_with(dir, in_order, 3);
		rf_batch *b[3], *x;
		for (int i = 0; i < 3; i++)
			cr_assert_eq(rf_loader_next(l, &b[i]), 0);
		cr_assert_eq(rf_loader_next(l, &x), -EDEADLK);
		cr_assert(strstr(rf_loader_error(l), "all 3 batch slots"), "%s", rf_loader_error(l));
		rf_batch_release(l, b[1]);
		cr_assert_eq(rf_loader_next(l, &x), 0);
		cr_assert_eq(x->index, 3);
		rf_batch_release(l, x);
		rf_batch_release(l, b[0]);
		rf_batch_release(l, b[2]);
		rf_loader_destroy(l);
	}
}

/* A gate on every read (the read hook of test builds): closed, no batch can
 * become ready, so a wait is a wait for sure. Bounded: a gate left closed
 * opens by itself after 30 s so that a failing test cannot hang destroy. */
static atomic_int gate_open = 1;

#if RF_TEST_HOOKS
static int gate(void *ctx, uint64_t sample, int res, int64_t size)
{
	(void)ctx, (void)sample, (void)size;
	for (int i = 0; i < 30000 && !atomic_load(&gate_open); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	return res;
}
#endif

static void gate_teardown(void)
{
	atomic_store(&gate_open, 1);
#if RF_TEST_HOOKS
	rfi_feeder_set_test_hook(NULL, NULL);
#endif
	teardown();
}

static rf_loader *gated_loader(void)
{
#if !RF_TEST_HOOKS
	cr_skip_test("the read hook is compiled into test builds only (meson -Dtest_hooks=true)");
#else
	atomic_store(&gate_open, 0);
	rfi_feeder_set_test_hook(gate, NULL);
#endif
	return loader_with(dir, 1, 4);
}

static int state_of(rf_loader *l, uint8_t *buf)
{
	int n = rf_loader_state_save(l, buf, RF_STATE_MAX_BYTES);
	cr_assert_gt(n, 0, "%s", rf_strerror(n));
	return n;
}

/* A timed-out wait takes nothing: the state and the next batch are those
 * from before it. */
Test(lifecycle, next_timeout_takes_nothing, .init = setup, .fini = gate_teardown,
     .timeout = 60)
{
	rf_loader *l = gated_loader();
	uint8_t s0[RF_STATE_MAX_BYTES], s1[RF_STATE_MAX_BYTES];
	int n0 = state_of(l, s0);
	rf_batch *b = (rf_batch *)1;
	double t0 = now();
	cr_assert_eq(rf_loader_next_timeout(l, &b, 20 * 1000000ull), -ETIMEDOUT);
	cr_assert_geq(now() - t0, 0.019, "it waited %.3f s", now() - t0);
	cr_assert_null(b);
	cr_assert_eq(rf_loader_next_timeout(l, &b, 0), -ETIMEDOUT, "0: a poll");
	cr_assert_eq(state_of(l, s1), n0);
	cr_assert_arr_eq(s0, s1, (size_t)n0, "a timed-out wait moved the position");
	rf_order_info o;
	rf_loader_order(l, &o);
	cr_assert_eq(o.next_batch, 0);
	atomic_store(&gate_open, 1);
	cr_assert_eq(rf_loader_next_timeout(l, &b, 20 * 1000000000ull), 0, "%s",
		     rf_loader_error(l));
	cr_assert_eq(b->index, 0);
	rf_batch_release(l, b);
	cr_assert_eq(rf_loader_next(l, &b), 0);
	cr_assert_eq(b->index, 1);
	rf_batch_release(l, b);
	rf_loader_destroy(l);
}

struct waiter {
	rf_loader *l;
	rf_batch *b;
	atomic_int started;
	int ret;
};

static void *wait_next(void *arg)
{
	struct waiter *w = arg;
	atomic_store(&w->started, 1);
	w->ret = rf_loader_next(w->l, &w->b);
	return NULL;
}

/* rf_loader_interrupt() from another thread wakes a consumer waiting in
 * rf_loader_next() (or makes its next call return at once, when it comes
 * before the wait): -EINTR, nothing taken; the call after it delivers
 * batch 0. Also before a call, once, even with a batch ready. */
Test(lifecycle, interrupt_wakes_the_waiting_consumer, .init = setup, .fini = gate_teardown,
     .timeout = 60)
{
	rf_loader_interrupt(NULL);
	rf_loader *l = gated_loader();
	struct waiter w = { .l = l };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, wait_next, &w), 0);
	while (!atomic_load(&w.started))
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
	rf_loader_interrupt(l);
	pthread_join(t, NULL);
	cr_assert_eq(w.ret, -EINTR, "%s", rf_strerror(w.ret));
	cr_assert_null(w.b);
	rf_order_info o;
	rf_loader_order(l, &o);
	cr_assert_eq(o.next_batch, 0);
	atomic_store(&gate_open, 1);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), 0, "not sticky: %s", rf_loader_error(l));
	cr_assert_eq(b->index, 0);
	rf_batch_release(l, b);
	/* before the call: that call returns -EINTR once, ready batch or not */
	for (int i = 0; i < 20000; i++) { /* bounded: 20 s */
		rf_stats st;
		cr_assert_eq(rf_loader_stats(l, &st), 0);
		if (st.batches_ready > 0)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	rf_loader_interrupt(l);
	cr_assert_eq(rf_loader_next(l, &b), -EINTR);
	cr_assert_eq(rf_loader_next(l, &b), 0);
	cr_assert_eq(b->index, 1);
	rf_batch_release(l, b);
	rf_loader_destroy(l);
}
