/* run.h - one measured run for the CLI: consume a loader's batches (with an
 * optional simulated training step), write the per-batch log and ids, keep
 * the per-batch waits, and show live progress on a terminal. Used by
 * `bench`, `bench --diagnose` and `tune`. */
#ifndef RF_CLI_RUN_H
#define RF_CLI_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "ringfeed.h"

typedef struct run_hooks {
	long long max_batches; /* < 0: until the loader ends */
	double step_ms;        /* simulated training step per batch (the batch held meanwhile) */
	FILE *log;             /* one JSON line per batch, or NULL */
	FILE *ids;             /* --ids: one line of sample ids per batch, or NULL */
	int progress;          /* a live line on stderr */
	int raw;               /* batches are raw bytes (what to touch) */
	double *waits;         /* when not NULL: wait ms per batch, up to waits_cap */
	size_t waits_cap;
	long long warm_batches; /* the steady figures start after this many batches:
	                         * prefetched batches would flatter a short run */
	int device_sync;     /* wait (rf_batch_sync) for each batch on the device */
	int checksum;        /* hash every delivered byte, label and id into
	                      * run_out.checksum (--json prints it): about 4 GB/s
	                      * of the consumer's thread, so only when asked */
	volatile sig_atomic_t *stop; /* when not NULL and set (by a signal handler):
	                              * stop after the batch in hand */
	/* when not NULL: the training step, called with step_arg on the
	 * consumer's thread for each batch (the batch held meanwhile) instead
	 * of step_ms's sleep: a step that works the CPU, as a real one does
	 * (diagnose.c measures what the loader's threads cost it) */
	void (*step)(void *step_arg);
	void *step_arg;
	/* when not NULL: the loader's counters when the steady part starts
	 * (after warm_batches), so that a run's counters can be taken over the
	 * steady part alone (the end minus these) */
	rf_stats *warm_stats;
	int sample_queues;   /* add the reads in flight, as each steady batch
	                      * comes, into run_out.inflight_sum */
} run_hooks;

typedef struct run_out {
	unsigned long long batches, samples, checksum;
	unsigned long long field_bytes; /* bytes of the fields delivered (cfg.fields) */
	double t_first, t_end; /* seconds (now_s()) of the first batch and of the end */
	double wait_s;         /* time spent in rf_loader_next() */
	size_t nwaits;         /* entries written to hooks->waits */
	/* steady part: after warm_batches (at least the first) */
	double t_warm;         /* when the last warm-up batch came */
	unsigned long long steady_samples, steady_batches;
	double steady_wait_s;  /* time spent waiting in the steady part */
	/* sample_queues: rf_stats.reads_in_flight summed over the steady
	 * batches (divide by steady_batches for the mean) */
	double inflight_sum;
} run_out;

/* samples/s and the consumer's share of time waiting, in the steady part */
double run_steady_rate(const run_out *o);
double run_steady_wait_frac(const run_out *o);

/* Seconds on the monotonic clock. */
double now_s(void);

/* Consumes batches of l as the hooks say. @return : 0 at the end or after
 * max_batches, else the negative code rf_loader_next() returned (or -EIO
 * when a file could not be written); o is filled either way. */
int run_consume(rf_loader *l, const run_hooks *h, run_out *o);

#endif
