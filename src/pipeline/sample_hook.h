/* sample_hook.h - the caller's per-sample step (cfg.sample_fn) as a compute
 * thread runs it on a sample just stored into its place. Private. */
#ifndef RF_SAMPLE_HOOK_H
#define RF_SAMPLE_HOOK_H

#include "pipeline/loader_state.h"

/* Calls cfg.sample_fn on request q's sample, stored at dst in its slot.
 * Called by the compute thread that holds q, after the sample was stored
 * and before the place lands.
 * @return : 0, or the bad sample's code (the hook's negative return, else
 *           RF_EBADSAMPLE) with q->reason set. */
int rfi_sample_hook_run(rf_loader *l, rf_request *q, uint8_t *dst);

/* rf_sample_rand(), rf_sample_uniform() behind src/lib.c's check (s not NULL). */
uint64_t rfi_sample_rand(rf_sample_view *s);
double rfi_sample_uniform(rf_sample_view *s);

#endif
