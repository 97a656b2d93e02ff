/* feeder.h - the ring thread (feeder.c): places -> samples -> reads on the
 * read engine, and results -> slots or decoders. Private. */
#ifndef RF_FEEDER_H
#define RF_FEEDER_H

#include <stdint.h>

#include "rf_config.h" /* RF_TEST_HOOKS */

struct rf_feeder;

/* The thread's entry point: its argument is the rf_loader. It reports its
 * set-up through l->init_* and runs until l->stop. */
void *rfi_feeder_main(void *loader);

/* Frees what outlives the thread (the read pool, which decoders read):
 * after the decoders and the ring thread joined. Accepts NULL. */
void rfi_feeder_free(struct rf_feeder *f);

/* Test-only, in builds with -Dtest_hooks=true (RF_TEST_HOOKS): called with
 * every read result (bytes, or a read's -errno) before it is judged;
 * returns the result to judge instead (a short count, -EAGAIN, -EIO, ...).
 * Process-wide; set it before creating the loader. NULL (the default)
 * costs one branch. */
typedef int (*rf_read_hook)(void *ctx, uint64_t sample, int res, int64_t size);
#if RF_TEST_HOOKS
void rfi_feeder_set_test_hook(rf_read_hook fn, void *ctx);
#endif

#endif
