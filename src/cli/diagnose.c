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
 * it, else storage-bound (network-bound for a remote source: its requests
 * per second, bytes and retries), with the numbers behind it and the
 * headroom. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "cli/run.h"
#include "util/util.h"

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

/* The stages' results and what follows from them. */
typedef struct diagnosis {
	long long nb;         /* batches per stage */
	stage_result fetch, full, cons, eng;
	int gpu;              /* the full run used the GPU's engines (eng is measured) */
	double prep;          /* the compute pool's samples/s; INFINITY in raw mode */
	unsigned threads;     /* compute threads of the full run */
	double step;          /* the consumer's ms per batch */
	double *waits;        /* the consumer stage's wait per batch, nb of them (malloc'ed) */
	const char *verdict;
	char why[512];
} diagnosis;

/* Runs the stages one after the other (fetch, full, the engines alone when
 * the full run used them, then with a consumer) into *d.
 * @return : 0, or -1 when a stage failed (said). */
static int run_stages(const rf_config *base, const diag_opts *o, diagnosis *d)
{
	long long nb = d->nb;
	rf_config cfg = *base;
	cfg.epochs = 0; /* endless: every stage runs nb batches */
	cfg.on_sample_error = NULL;
	if (!o->json)
		fprintf(stderr, "diagnose: fetch (reads only, %lld batches)...\n", nb);
	cfg.fetch_only = 1;
	cfg.decode = RF_DECODE_CPU; /* nothing is decoded */
	if (run_stage(&cfg, nb, 0, o->progress, NULL, 0, &d->fetch))
		return -1;
	cfg.fetch_only = 0;
	cfg.decode = base->decode;
	if (!o->json)
		fprintf(stderr, "diagnose: full pipeline...\n");
	if (run_stage(&cfg, nb, 0, o->progress, NULL, 0, &d->full))
		return -1;
	/* the engines alone, when the full run used them */
	d->gpu = d->full.st.decode_path != RF_DECODE_CPU;
	if (d->gpu) {
		if (!o->json)
			fprintf(stderr, "diagnose: the GPU's JPEG engines alone...\n");
		rf_config e = cfg;
		e.decode = RF_DECODE_GPU;
		e.threads = 1;
		if (run_stage(&e, nb, 0, o->progress, NULL, 0, &d->eng))
			return -1;
	}
	/* the pool's own samples (with GPU decode it decodes only its share) */
	const rf_stats *full = &d->full.st;
	uint64_t n = d->gpu ? full->cpu_decodes : full->samples;
	n = n ? n : 1;
	double compute_ns = (double)(full->ns_decode + full->ns_transform + full->ns_collate) / (double)n;
	d->threads = full->threads ? full->threads : 1;
	/* raw mode has no compute stage: prep is as fast as the reads come */
	d->prep = cfg.raw || compute_ns <= 0 ? INFINITY : d->threads * 1e9 / compute_ns;
	double batch = cfg.batch_size;
	d->step = o->step_ms > 0 ? o->step_ms : (d->full.rate > 0 ? 1e3 * batch / d->full.rate : 10);
	d->waits = calloc((size_t)nb, sizeof(double));
	if (!o->json)
		fprintf(stderr, "diagnose: with a consumer of %.2f ms per batch...\n", d->step);
	if (!d->waits || run_stage(&cfg, nb, d->step, o->progress, d->waits, (size_t)nb, &d->cons))
		return -1;
	return 0;
}

/* decode-bound without GPU decode: how many compute threads would match
 * storage, and whether this machine has them. */
static void why_decode_bound(diagnosis *d)
{
	double prep = d->prep, fetch = d->fetch.rate, per_thread = prep / d->threads;
	int cores = cli_cores(), need = (int)ceil(fetch / per_thread);
	int most = cores > 1 ? cores - 1 : 1; /* the ring thread and the consumer need a core */
	if (need <= most)
		snprintf(d->why, sizeof(d->why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s; "
			 "each compute thread does %.0f samples/s: about %d threads would match "
			 "storage (this machine lets %d run)", prep, fetch, per_thread, need, most);
	else if ((int)d->threads < most)
		snprintf(d->why, sizeof(d->why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s; "
			 "each compute thread does %.0f samples/s: use up to %d threads (%d cores "
			 "available; storage would take about %d)", prep, fetch, per_thread, most,
			 cores, need);
	else
		snprintf(d->why, sizeof(d->why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s "
			 "with %u threads on %d cores available: more cores (storage would take about "
			 "%d threads), or GPU decode (--decode auto)", prep, fetch, d->threads, cores,
			 need);
}

/* The verdict and the sentence behind it, into d->verdict and d->why. */
static void judge(const diag_opts *o, int batch_size, diagnosis *d)
{
	const stage_result *fetch = &d->fetch, *full = &d->full, *eng = &d->eng;
	double prep = d->prep, step = d->step, idle = d->cons.wait_frac;
	if (o->step_ms > 0 && idle < 0.05) {
		d->verdict = "consumer-bound";
		snprintf(d->why, sizeof(d->why), "consumer-bound: a %.1f ms step per batch of %d needs %.0f "
			 "samples/s, the input gives %.0f; the consumer waits %.2f ms per batch (%.1f%% of "
			 "the run): the input is not the bottleneck", step, batch_size,
			 1e3 * (double)batch_size / step, full->rate, d->cons.wait_ms_batch, 100 * idle);
	} else if (d->gpu && eng->rate + (full->st.decode_path == RF_DECODE_AUTO ? prep : 0) < fetch->rate) {
		int aut = full->st.decode_path == RF_DECODE_AUTO;
		d->verdict = "decode-bound";
		snprintf(d->why, sizeof(d->why), "decode-bound: the GPU's JPEG engines give %.0f samples/s%s%.0f, "
			 "fetch %.0f samples/s; the full pipeline %.0f (%.0f%% decoded by the engines)%s",
			 eng->rate, aut ? " and the compute pool " : " (the pool decodes only what they refuse: ",
			 aut ? prep : (double)full->st.cpu_decodes, fetch->rate, full->rate,
			 100.0 * (double)full->st.gpu_decodes / (double)(full->st.samples ? full->st.samples : 1),
			 aut ? (eng->rate >= prep ? "; the engines do the larger part: more compute threads add "
						    "the rest" : "; the pool does the larger part")
			     : " samples); --decode auto adds the compute pool");
	} else if (prep < fetch->rate && !d->gpu) {
		d->verdict = "decode-bound";
		why_decode_bound(d);
	} else if (fetch->st.http_requests) { /* a remote source: the network is the storage */
		const rf_stats *st = &fetch->st;
		double per = st->samples ? fetch->rate / (double)st->samples : 0;
		char than[96];
		if (isinf(prep))
			snprintf(than, sizeof(than), "and nothing is decoded (raw mode)");
		else
			snprintf(than, sizeof(than), "< prep %.0f samples/s (%.1fx more than the network "
				 "delivers)", prep, prep / fetch->rate);
		d->verdict = "network-bound";
		snprintf(d->why, sizeof(d->why), "network-bound: fetch %.0f samples/s (%.1f MB/s, %.0f "
			 "requests/s; %llu of %llu requests tried again, %llu failed) %s; %u requests in "
			 "flight at most: try a deeper io_depth (an object store answers many requests "
			 "at once), a store closer to this machine, or a node-local copy", fetch->rate,
			 (double)st->http_bytes * per / 1e6, (double)st->http_requests * per,
			 (unsigned long long)st->http_retries, (unsigned long long)st->http_requests,
			 (unsigned long long)st->http_errors, than, full->st.io_depth);
	} else {
		d->verdict = "storage-bound";
		snprintf(d->why, sizeof(d->why), "storage-bound: fetch %.0f samples/s < prep %.0f samples/s "
			 "(%.1fx more than storage delivers); %u reads in flight at most: try a deeper "
			 "io_depth or faster storage", fetch->rate, isinf(prep) ? fetch->rate : prep,
			 isinf(prep) ? 1.0 : prep / fetch->rate, full->st.io_depth);
	}
}

static void print_diagnosis(const rf_config *cfg, const diag_opts *o, const diagnosis *d)
{
	double prep = d->prep, step = d->step, idle = d->cons.wait_frac;
	if (o->json) {
		printf("{\"source\":");
		cli_json_str(stdout, cfg->source);
		printf(",\"verdict\":\"%s\",\"why\":", d->verdict);
		cli_json_str(stdout, d->why);
		printf(",\"stages\":{\"fetch\":%.2f,\"prep\":%.2f,"
		       "\"full\":%.2f,\"with_consumer\":%.2f,\"engines\":%.2f},\"step_ms\":%.3f,\"consumer_wait_ms_per_batch\":%.3f,"
		       "\"accelerator_idle_pct\":%.2f,\"threads\":%u,\"io_depth\":%u,\"batches_per_stage\":%lld,"
		       "\"prep_note\":\"compute threads over their decode+transform+collate time per sample in the full run\"}\n",
		       d->fetch.rate, isinf(prep) ? -1.0 : prep, d->full.rate, d->cons.rate,
		       d->gpu ? d->eng.rate : -1.0, step,
		       d->cons.wait_ms_batch, 100 * idle, d->threads, d->full.st.io_depth, d->nb);
		return;
	}
	printf("ringfeed diagnosis (%s of %d per stage, %s, io_depth %u)\n",
	       cli_count((unsigned long long)d->nb, "batch", 0), cfg->batch_size,
	       cli_count(d->threads, "compute thread", 1), d->full.st.io_depth);
	printf("  fetch (reads only)          %10.0f samples/s\n", d->fetch.rate);
	if (isinf(prep))
		printf("  prep (compute)                      none (raw mode)\n");
	else
		printf("  prep (compute, from timers) %10.0f samples/s\n", prep);
	if (d->gpu)
		printf("  GPU JPEG engines alone      %10.0f samples/s\n", d->eng.rate);
	printf("  full pipeline               %10.0f samples/s\n", d->full.rate);
	printf("  with a %.2f ms step         %10.0f samples/s; waits %.2f ms per batch, "
	       "an accelerator would idle %.1f%%\n", step, d->cons.rate, d->cons.wait_ms_batch, 100 * idle);
	printf("verdict: %s\n", d->why);
}

/* --report FILE.html. @return : 0, or -1 when it could not be written (said). */
static int write_report(const rf_config *cfg, const diag_opts *o, const diagnosis *d)
{
	char err[512], machine[256], title[1024];
	snprintf(title, sizeof(title), "ringfeed diagnosis: %s", cfg->source);
	rf_redact(title, title, sizeof(title));
	rf_report_stage stages[4] = {
		{ "fetch (reads only)", d->fetch.rate },
		{ "prep (compute)", isinf(d->prep) ? d->fetch.rate : d->prep },
		{ "full pipeline", d->full.rate },
		{ "with consumer", d->cons.rate },
	};
	size_t nwaits = d->cons.nwaits;
	rf_report r = { .title = title, .verdict = d->verdict, .explanation = d->why,
			.machine = cli_machine_line(machine, sizeof(machine)), .stages = stages,
			.nstages = 4,
			/* the first batch's wait is the start-up (index, threads,
			 * first reads): left out, it would flatten the chart */
			.batch_wait_ms = nwaits > 1 ? d->waits + 1 : d->waits,
			.nbatches = nwaits > 1 ? nwaits - 1 : nwaits,
			.step_ms = d->step };
	if (rf_report_write_html(o->report, &r, err, sizeof(err))) {
		fprintf(stderr, "ringfeed bench --report: %s\n", err);
		return -1;
	}
	if (!o->json)
		printf("report: %s\n", o->report);
	return 0;
}

int cli_diagnose(const rf_config *base, const diag_opts *o)
{
	diagnosis d;
	memset(&d, 0, sizeof(d));
	d.nb = o->batches > 0 ? o->batches : 100;
	if (d.nb < base->prefetch + 3)
		d.nb = base->prefetch + 3; /* a steady part after the warm-up */
	int ret = run_stages(base, o, &d);
	if (ret == 0) {
		judge(o, base->batch_size, &d);
		print_diagnosis(base, o, &d);
		if (o->report)
			ret = write_report(base, o, &d);
	}
	free(d.waits);
	return ret;
}
