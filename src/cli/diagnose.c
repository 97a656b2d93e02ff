/* diagnose.c - `ringfeed bench --diagnose`: is the input storage-bound,
 * decode-bound, or not the problem at all? In the manner of DS-Analyzer
 * (VLDB 2021), the stages are measured apart:
 *   fetch          reads only (cfg.fetch_only: compute threads hand every
 *                  read back undecoded); O_DIRECT bypasses the page cache, so
 *                  this is storage, cold;
 *   prep           what the compute pool can do with the reads taken out:
 *                  its threads over its own decode + transform + collate time
 *                  per sample, measured in the full run;
 *   full           the whole pipeline;
 *   with consumer  the full pipeline feeding a simulated training step of
 *                  step_ms per batch: how long the consumer waits per batch,
 *                  and the share of the run an accelerator would idle.
 *   engines        with GPU decode (cfg.decode gpu or auto, and a device
 *                  whose engines answer): the GPU's JPEG engines alone
 *                  (decode gpu, one compute thread for what they refuse);
 *                  prep is then the pool's rate over the samples it decoded.
 * Verdict: consumer-bound when the consumer waits under 5% of the run (the
 * input keeps up); otherwise decode-bound when the decoders (prep, and the
 * engines with GPU decode) give less than fetch, saying which of them bounds
 * it, else storage-bound, with the numbers behind it and the headroom. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "cli/run.h"

typedef struct stage_result {
	double rate;          /* samples/s in the steady part (after the first batch) */
	double wait_frac;     /* consumer wait / run time */
	double wait_ms_batch; /* mean wait per batch */
	rf_stats st;
	size_t nwaits;
} stage_result;

/* One stage: a loader over cfg, `batches` batches consumed. */
static int run_stage(const rf_config *cfg, long long batches, double step_ms, int progress,
		     double *waits, size_t waits_cap, stage_result *out)
{
	char err[512];
	rf_loader *l;
	int ret = rf_loader_create(&l, cfg, err, sizeof(err));
	if (ret) {
		cli_fail(err, ret);
		return ret;
	}
	run_hooks h = { .max_batches = batches, .step_ms = step_ms, .progress = progress,
			.raw = cfg->raw, .waits = waits, .waits_cap = waits_cap,
			.warm_batches = cfg->prefetch + 1 };
	run_out o;
	ret = run_consume(l, &h, &o);
	if (ret) {
		fprintf(stderr, "%s --diagnose: %s: %s\n", cli_name, rf_strerror(ret), rf_loader_error(l));
		rf_loader_destroy(l);
		return ret;
	}
	rf_loader_stats(l, &out->st);
	rf_loader_destroy(l);
	/* steady: after the first prefetch + 1 batches (start-up is the time to
	 * first batch, and batches read ahead meanwhile would flatter the rate) */
	out->rate = run_steady_rate(&o);
	out->wait_frac = run_steady_wait_frac(&o);
	out->wait_ms_batch = o.steady_batches ? o.steady_wait_s * 1e3 / (double)o.steady_batches : 0;
	out->nwaits = o.nwaits;
	return 0;
}

int cli_diagnose(const rf_config *base, const diag_opts *o)
{
	long long nb = o->batches > 0 ? o->batches : 100;
	if (nb < base->prefetch + 3)
		nb = base->prefetch + 3; /* a steady part after the warm-up */
	rf_config cfg = *base;
	cfg.epochs = 0; /* endless: every stage runs nb batches */
	cfg.on_sample_error = NULL;
	stage_result fetch, full, cons, eng = { 0 };
	if (!o->json)
		fprintf(stderr, "diagnose: fetch (reads only, %lld batches)...\n", nb);
	cfg.fetch_only = 1;
	cfg.decode = RF_DECODE_CPU; /* nothing is decoded */
	if (run_stage(&cfg, nb, 0, o->progress, NULL, 0, &fetch))
		return -1;
	cfg.fetch_only = 0;
	cfg.decode = base->decode;
	if (!o->json)
		fprintf(stderr, "diagnose: full pipeline...\n");
	if (run_stage(&cfg, nb, 0, o->progress, NULL, 0, &full))
		return -1;
	/* the engines alone, when the full run used them */
	int gpu = full.st.decode_path != RF_DECODE_CPU;
	if (gpu) {
		if (!o->json)
			fprintf(stderr, "diagnose: the GPU's JPEG engines alone...\n");
		rf_config e = cfg;
		e.decode = RF_DECODE_GPU;
		e.threads = 1;
		if (run_stage(&e, nb, 0, o->progress, NULL, 0, &eng))
			return -1;
	}
	/* the pool's own samples (with GPU decode it decodes only its share) */
	uint64_t n = gpu ? full.st.cpu_decodes : full.st.samples;
	n = n ? n : 1;
	double compute_ns = (double)(full.st.ns_decode + full.st.ns_transform + full.st.ns_collate) / (double)n;
	unsigned threads = full.st.threads ? full.st.threads : 1;
	/* raw mode has no compute stage: prep is as fast as the reads come */
	double prep = cfg.raw || compute_ns <= 0 ? INFINITY : threads * 1e9 / compute_ns;
	double batch = cfg.batch_size;
	double step = o->step_ms > 0 ? o->step_ms : (full.rate > 0 ? 1e3 * batch / full.rate : 10);
	double *waits = calloc((size_t)nb, sizeof(double));
	if (!o->json)
		fprintf(stderr, "diagnose: with a consumer of %.2f ms per batch...\n", step);
	if (!waits || run_stage(&cfg, nb, step, o->progress, waits, (size_t)nb, &cons)) {
		free(waits);
		return -1;
	}

	const char *verdict;
	char why[512];
	double idle = cons.wait_frac;
	if (o->step_ms > 0 && idle < 0.05) {
		verdict = "consumer-bound";
		snprintf(why, sizeof(why), "consumer-bound: a %.1f ms step per batch of %d needs %.0f "
			 "samples/s, the input gives %.0f; the consumer waits %.2f ms per batch (%.1f%% of "
			 "the run): the input is not the bottleneck", step, cfg.batch_size,
			 1e3 * batch / step, full.rate, cons.wait_ms_batch, 100 * idle);
	} else if (gpu && eng.rate + (full.st.decode_path == RF_DECODE_AUTO ? prep : 0) < fetch.rate) {
		int aut = full.st.decode_path == RF_DECODE_AUTO;
		verdict = "decode-bound";
		snprintf(why, sizeof(why), "decode-bound: the GPU's JPEG engines give %.0f samples/s%s%.0f, "
			 "fetch %.0f samples/s; the full pipeline %.0f (%.0f%% decoded by the engines)%s",
			 eng.rate, aut ? " and the compute pool " : " (the pool decodes only what they refuse: ",
			 aut ? prep : (double)full.st.cpu_decodes, fetch.rate, full.rate,
			 100.0 * (double)full.st.gpu_decodes / (double)(full.st.samples ? full.st.samples : 1),
			 aut ? (eng.rate >= prep ? "; the engines do the larger part: more compute threads add "
						   "the rest" : "; the pool does the larger part")
			     : " samples); --decode auto adds the compute pool");
	} else if (prep < fetch.rate && !gpu) {
		verdict = "decode-bound";
		double per_thread = prep / threads;
		int cores = cli_cores(), need = (int)ceil(fetch.rate / per_thread);
		int most = cores > 1 ? cores - 1 : 1; /* the ring thread and the consumer need a core */
		if (need <= most)
			snprintf(why, sizeof(why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s; "
				 "each compute thread does %.0f samples/s: about %d threads would match "
				 "storage (this machine lets %d run)", prep, fetch.rate, per_thread, need, most);
		else if ((int)threads < most)
			snprintf(why, sizeof(why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s; "
				 "each compute thread does %.0f samples/s: use up to %d threads (%d cores "
				 "available; storage would take about %d)", prep, fetch.rate, per_thread, most,
				 cores, need);
		else
			snprintf(why, sizeof(why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s "
				 "with %u threads on %d cores available: more cores (storage would take about "
				 "%d threads), or GPU decode (--decode auto)", prep, fetch.rate, threads, cores,
				 need);
	} else {
		verdict = "storage-bound";
		snprintf(why, sizeof(why), "storage-bound: fetch %.0f samples/s < prep %.0f samples/s "
			 "(%.1fx more than storage delivers); %u reads in flight at most: try a deeper "
			 "io_depth or faster storage", fetch.rate, isinf(prep) ? fetch.rate : prep,
			 isinf(prep) ? 1.0 : prep / fetch.rate, full.st.io_depth);
	}

	if (o->json) {
		printf("{\"source\":");
		cli_json_str(stdout, cfg.source);
		printf(",\"verdict\":\"%s\",\"why\":", verdict);
		cli_json_str(stdout, why);
		printf(",\"stages\":{\"fetch\":%.2f,\"prep\":%.2f,"
		       "\"full\":%.2f,\"with_consumer\":%.2f,\"engines\":%.2f},\"step_ms\":%.3f,\"consumer_wait_ms_per_batch\":%.3f,"
		       "\"accelerator_idle_pct\":%.2f,\"threads\":%u,\"io_depth\":%u,\"batches_per_stage\":%lld,"
		       "\"prep_note\":\"compute threads over their decode+transform+collate time per sample in the full run\"}\n",
		       fetch.rate, isinf(prep) ? -1.0 : prep, full.rate, cons.rate,
		       gpu ? eng.rate : -1.0, step,
		       cons.wait_ms_batch, 100 * idle, threads, full.st.io_depth, nb);
	} else {
		printf("ringfeed diagnosis (%s of %d per stage, %s, io_depth %u)\n",
		       cli_count((unsigned long long)nb, "batch", 0), cfg.batch_size,
		       cli_count(threads, "compute thread", 1), full.st.io_depth);
		printf("  fetch (reads only)          %10.0f samples/s\n", fetch.rate);
		if (isinf(prep))
			printf("  prep (compute)                      none (raw mode)\n");
		else
			printf("  prep (compute, from timers) %10.0f samples/s\n", prep);
		if (gpu)
			printf("  GPU JPEG engines alone      %10.0f samples/s\n", eng.rate);
		printf("  full pipeline               %10.0f samples/s\n", full.rate);
		printf("  with a %.2f ms step         %10.0f samples/s; waits %.2f ms per batch, "
		       "an accelerator would idle %.1f%%\n", step, cons.rate, cons.wait_ms_batch, 100 * idle);
		printf("verdict: %s\n", why);
	}
	int ret = 0;
	if (o->report) {
		char err[512], machine[256], title[1024];
		snprintf(title, sizeof(title), "ringfeed diagnosis: %s", cfg.source);
		rf_report_stage stages[4] = {
			{ "fetch (reads only)", fetch.rate },
			{ "prep (compute)", isinf(prep) ? fetch.rate : prep },
			{ "full pipeline", full.rate },
			{ "with consumer", cons.rate },
		};
		rf_report r = { .title = title, .verdict = verdict, .explanation = why,
				.machine = cli_machine_line(machine, sizeof(machine)), .stages = stages,
				.nstages = 4,
				/* the first batch's wait is the start-up (index, threads,
				 * first reads): left out, it would flatten the chart */
				.batch_wait_ms = cons.nwaits > 1 ? waits + 1 : waits,
				.nbatches = cons.nwaits > 1 ? cons.nwaits - 1 : cons.nwaits,
				.step_ms = step };
		if (rf_report_write_html(o->report, &r, err, sizeof(err))) {
			fprintf(stderr, "ringfeed bench --report: %s\n", err);
			ret = -1;
		} else if (!o->json) {
			printf("report: %s\n", o->report);
		}
	}
	free(waits);
	return ret;
}
