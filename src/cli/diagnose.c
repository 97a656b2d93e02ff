/* diagnose.c - `ringfeed bench --diagnose`: is the input storage-bound,
 * decode-bound, or not the problem at all, and what does the loader cost
 * the training step beside it? In the manner of DS-Analyzer (VLDB 2021),
 * the stages are measured apart:
 *   fetch          reads only (cfg.fetch_only: compute threads hand every
 *                  read back undecoded); O_DIRECT bypasses the page cache, so
 *                  this is storage, cold; with its MB/s, reads/s and the
 *                  mean read latency (Little's law: the reads in flight,
 *                  sampled at each batch, over the reads per second);
 *   prep           what the compute pool can do with the reads taken out:
 *                  its threads over its own decode + transform + collate time
 *                  per sample, measured in the full run; none in raw mode
 *                  and for token windows without compute threads (nothing
 *                  is decoded: the ring thread lands every read itself);
 *   full           the whole pipeline;
 *   with consumer  the full pipeline feeding a simulated training step of
 *                  step_ms per batch: how long the consumer waits per batch,
 *                  and the share of the run an accelerator would idle.
 *   engines        with GPU decode (cfg.decode gpu or auto, and a device
 *                  whose engines answer): the GPU's JPEG engines alone
 *                  (decode gpu, one compute thread for what they refuse);
 *                  prep is then the pool's rate over the samples it decoded.
 *   trainer        the loader's cost to a training step that needs the CPU
 *                  (in-process loader threads compete with it for cores): a
 *                  fixed amount of arithmetic calibrated to about step_ms
 *                  alone, timed alone and then on the consumer's thread
 *                  beside the running loader; the same with one compute
 *                  thread fewer, and the training rate each gives by the
 *                  simplest sound model, min(feed rate, batch / step time),
 *                  beside the rate measured.
 * Verdict: consumer-bound when the consumer waits under 5% of the run (the
 * input keeps up); otherwise decode-bound when the decoders (prep, and the
 * engines with GPU decode) give less than fetch, saying which of them bounds
 * it, else storage-bound (network-bound for a remote source: its requests
 * per second, bytes and retries; ring-thread-bound when nothing is decoded
 * and the ring thread that lands every read is busy most of a core), with
 * the numbers behind it and the headroom. The machine's load is measured
 * throughout: a busy machine makes every figure noisy, and the output says
 * so. */
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
	double secs;          /* the loader's life: created to the last batch */
	double steady_s;      /* the steady part's length */
	double inflight;      /* reads in flight, mean over the steady batches */
	rf_stats st;          /* at the end */
	rf_stats warm;        /* when the steady part began */
	size_t nwaits;
} stage_result;

/* One stage: a loader over cfg, `batches` batches consumed, with a sleep
 * of step_ms or, when step is not NULL, step(step_arg) per batch. */
static int run_stage(const rf_config *cfg, long long batches, double step_ms, void (*step)(void *),
		     void *step_arg, int progress, double *waits, size_t waits_cap, stage_result *out)
{
	char err[512];
	rf_loader *l;
	double t0 = now_s();
	int ret = rf_loader_create(&l, cfg, err, sizeof(err));
	if (ret) {
		cli_fail(err, ret);
		return ret;
	}
	run_hooks h = { .max_batches = batches, .step_ms = step_ms, .progress = progress,
			.raw = cfg->raw, .waits = waits, .waits_cap = waits_cap,
			.warm_batches = cfg->prefetch + 1, .step = step, .step_arg = step_arg,
			.warm_stats = &out->warm, .sample_queues = 1 };
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
	out->secs = o.t_end - t0;
	out->steady_s = o.t_end - o.t_warm;
	out->inflight = o.steady_batches ? o.inflight_sum / (double)o.steady_batches : 0;
	return 0;
}

/* What the reads of the fetch stage did in its steady part: from the
 * counters at its start and end. */
typedef struct fetch_figures {
	double mb_s, reads_s;
	double latency_ms;   /* mean, by Little's law; < 0 when unknown */
	double inflight;     /* reads in flight on average */
	int remote;          /* reads are http requests */
} fetch_figures;

static void fetch_figures_of(const stage_result *s, fetch_figures *f)
{
	const rf_stats *a = &s->warm, *b = &s->st;
	double span = s->steady_s > 0 ? s->steady_s : 0;
	f->remote = b->http_requests > 0;
	/* the bytes storage gave: a read shared by many samples (a chunk, a
	 * Parquet page) once */
	uint64_t bytes = f->remote ? b->http_bytes - a->http_bytes
				   : b->bytes_fetched - a->bytes_fetched;
	uint64_t reads = f->remote ? b->http_requests - a->http_requests
				   : b->reads_submitted - a->reads_submitted;
	if (!reads || !bytes) { /* a run so short that its reads were all ahead of the
				 * steady part: the loader's whole life, set-up included */
		static const rf_stats zero;
		a = &zero;
		span = s->secs;
		bytes = f->remote ? b->http_bytes : b->bytes_fetched;
		reads = f->remote ? b->http_requests : b->reads_submitted;
	}
	f->mb_s = span > 0 ? (double)bytes / span / 1e6 : 0;
	f->reads_s = span > 0 ? (double)reads / span : 0;
	f->inflight = s->inflight;
	f->latency_ms = f->reads_s > 0 && s->inflight > 0 ? 1e3 * s->inflight / f->reads_s : -1;
}

/* ---- the loader's cost to a CPU-bound training step ---------------------- */

/* A training step that needs the CPU: iters rounds of integer arithmetic
 * (xorshift and a multiply-add: no memory traffic, nothing to optimise
 * away), timed; the times land in ms[] (up to cap). */
typedef struct cpu_step {
	unsigned long long iters;
	double *ms;
	size_t n, cap;
	unsigned long long sink;
} cpu_step;

static void cpu_work(cpu_step *c)
{
	unsigned long long x = 88172645463325252ull + c->sink, acc = 0;
	for (unsigned long long i = 0; i < c->iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc = acc * 6364136223846793005ull + x;
	}
	c->sink += acc; /* kept: the loop's result is used */
}

static void cpu_step_run(void *arg)
{
	cpu_step *c = arg;
	double t0 = now_s();
	cpu_work(c);
	if (c->n < c->cap)
		c->ms[c->n++] = (now_s() - t0) * 1e3;
}

/* The mean of v[from..n): the time a trainer pays, descheduled steps
 * included (a median would hide what contention for cores costs). */
static double mean_from(const double *v, size_t from, size_t n)
{
	double sum = 0;
	for (size_t i = from; i < n; i++)
		sum += v[i];
	return n > from ? sum / (double)(n - from) : 0;
}

/* Sets c->iters so that a step takes about target_ms on this core with
 * nothing else of ours running. */
static void cpu_step_calibrate(cpu_step *c, double target_ms)
{
	double best = INFINITY;
	c->iters = 200000;
	for (int i = 0; i < 3; i++) { /* the quickest of three: the least disturbed */
		double t0 = now_s();
		cpu_work(c);
		double ms = (now_s() - t0) * 1e3;
		if (ms < best)
			best = ms;
	}
	double per = best > 0 ? best / (double)c->iters : 1e-6;
	c->iters = (unsigned long long)(target_ms / per);
	if (c->iters < 1000)
		c->iters = 1000;
	/* again at about the full length: a short loop's timing is coarse */
	best = INFINITY;
	for (int i = 0; i < 3; i++) {
		double t0 = now_s();
		cpu_work(c);
		double ms = (now_s() - t0) * 1e3;
		if (ms < best)
			best = ms;
	}
	if (best > 0)
		c->iters = (unsigned long long)((double)c->iters * target_ms / best);
	if (c->iters < 1000)
		c->iters = 1000;
}

/* One thread count's figures with the CPU-bound step. */
typedef struct trainer_run {
	unsigned threads;
	double feed;         /* the full pipeline's samples/s, no consumer */
	double step_ms;      /* the step's mean time beside the loader */
	double by_step;      /* batch / step: samples/s the step alone allows */
	double model;        /* min(feed, by_step): the bound without contention */
	double measured;     /* samples/s the run with the step delivered: the
			      * training rate, contention for cores included */
	double wait_ms;      /* the consumer's wait per batch in that run */
} trainer_run;

typedef struct trainer {
	int done;
	double alone_ms;     /* the step with no loader running */
	trainer_run cur, fewer;
	int has_fewer;       /* fewer is measured (cur has more than one compute thread) */
	int fewer_better;    /* fewer threads trained faster (measured, by more than 5%) */
	char line[320];      /* "a CPU-bound step of X ms took Y ms beside the loader ..." */
	char advice[320];
} trainer;

/* ---- the stages ----------------------------------------------------------- */

/* The stages' results and what follows from them. */
typedef struct diagnosis {
	long long nb;         /* batches per stage */
	stage_result fetch, full, cons, eng;
	fetch_figures ff;
	int gpu;              /* the full run used the GPU's engines (eng is measured) */
	int compute;          /* there is a compute stage (not raw, not token rows landed
			       * by the ring thread) */
	double prep;          /* the compute pool's samples/s; INFINITY without a compute stage */
	unsigned threads;     /* compute threads of the full run (0: none) */
	double ring_share;    /* the ring thread's CPU over the full run's time */
	double step;          /* the consumer's ms per batch */
	double *waits;        /* the consumer stage's wait per batch, nb of them (malloc'ed) */
	trainer tr;
	cli_load load;
	char busy[256];       /* "the machine is busy ...", or "" */
	const char *verdict;
	char why[768];
} diagnosis;

/* Whether GPU decode could be had here: a CUDA build that sees a device
 * (rf_version_string() says "cuda: built in, N device(s)"). */
static int gpu_here(void)
{
	const char *v = strstr(rf_version_string(), "cuda: built in, ");
	int n = 0;
	return v && sscanf(v + strlen("cuda: built in, "), "%d device", &n) == 1 && n > 0;
}

/* The trainer's figures with cfg's threads: the step beside the loader,
 * and the feed (a full run with no consumer, unless given). */
static int trainer_measure(const rf_config *cfg, const diag_opts *o, long long steps,
			   cpu_step *c, double feed, trainer_run *out)
{
	stage_result r;
	if (feed < 0) {
		if (run_stage(cfg, steps, 0, NULL, NULL, o->progress, NULL, 0, &r))
			return -1;
		feed = r.rate;
	}
	c->n = 0;
	if (run_stage(cfg, steps, 0, cpu_step_run, c, o->progress, NULL, 0, &r))
		return -1;
	out->threads = r.st.threads;
	out->feed = feed;
	/* the steps after the warm-up, when the loader runs steadily */
	out->step_ms = mean_from(c->ms, c->n > (size_t)cfg->prefetch + 2 ? (size_t)cfg->prefetch + 1 : 0,
				   c->n);
	double by_step = out->step_ms > 0 ? 1e3 * cfg->batch_size / out->step_ms : INFINITY;
	out->by_step = by_step;
	out->model = feed < by_step ? feed : by_step;
	out->measured = r.rate;
	out->wait_ms = r.wait_ms_batch;
	return 0;
}

/* The loader's cost to a CPU-bound step of about d->step ms, into d->tr. */
static int measure_trainer(const rf_config *cfg, const diag_opts *o, diagnosis *d)
{
	trainer *t = &d->tr;
	double target = d->step < 1 ? 1 : d->step;
	/* enough steps for a median past the warm-up, at most about 4 s of them */
	long long steps = (long long)(4000 / target);
	long long least = cfg->prefetch + 6;
	if (steps > d->nb)
		steps = d->nb;
	if (steps < least)
		steps = least;
	cpu_step c = { .cap = (size_t)steps };
	c.ms = calloc((size_t)steps, sizeof(double));
	if (!c.ms)
		return -1;
	cpu_step_calibrate(&c, target);
	for (int i = 0; i < 7; i++)
		cpu_step_run(&c);
	t->alone_ms = mean_from(c.ms, 0, c.n);
	if (!o->json)
		fprintf(stderr, "diagnose: a CPU-bound step of %.2f ms beside the loader...\n", t->alone_ms);
	int ret = trainer_measure(cfg, o, steps, &c, d->full.rate, &t->cur);
	if (!ret && d->compute && d->threads > 1) {
		rf_config fewer = *cfg;
		fewer.threads = (int)d->threads - 1;
		if (!o->json)
			fprintf(stderr, "diagnose: the same with %s...\n",
				cli_count(d->threads - 1, "compute thread", 0));
		ret = trainer_measure(&fewer, o, steps, &c, -1, &t->fewer);
		t->has_fewer = !ret;
	}
	free(c.ms);
	if (ret)
		return -1;
	t->done = 1;
	const trainer_run *cur = &t->cur;
	double slower = t->alone_ms > 0 ? 100 * (cur->step_ms / t->alone_ms - 1) : 0;
	char who[96];
	if (cur->threads)
		snprintf(who, sizeof(who), "%s and the ring thread", cli_count(cur->threads, "compute thread", 1));
	else
		snprintf(who, sizeof(who), "the ring thread alone: no compute threads");
	char by[64];
	if (slower >= 2)
		snprintf(by, sizeof(by), "%.0f%% slower", slower);
	else /* a step that got quicker beside the loader is noise, not a gain */
		snprintf(by, sizeof(by), "no slower: %+.0f%%, within the noise", slower);
	snprintf(t->line, sizeof(t->line), "a CPU-bound step of %.2f ms took %.2f ms beside the loader "
		 "(%s; %s, on %s)", t->alone_ms, cur->step_ms, by, who,
		 cli_count((unsigned)cli_cores(), "core", 2));
	if (!t->has_fewer) {
		snprintf(t->advice, sizeof(t->advice), "%s", cur->threads > 1 || !d->compute
			 ? "no fewer compute threads to compare with"
			 : "one compute thread: none fewer to compare with");
		return 0;
	}
	const trainer_run *few = &t->fewer;
	/* Measured decides: the model's feed is the loader's alone, and beside
	 * a step that needs a core the loader feeds less (the threads share
	 * the cores); 5%: less is within what two single runs differ by. */
	t->fewer_better = few->measured > 1.05 * cur->measured;
	if (t->fewer_better)
		snprintf(t->advice, sizeof(t->advice), "fewer threads would train faster: with %s it "
			 "trained at %.0f samples/s against %.0f (%.0f%% more): --threads %u",
			 cli_count(few->threads, "compute thread", 0), few->measured, cur->measured,
			 100 * (few->measured / cur->measured - 1), few->threads);
	else
		snprintf(t->advice, sizeof(t->advice), "fewer threads would not train faster: with %s it "
			 "trained at %.0f samples/s against %.0f", cli_count(few->threads, "compute thread", 0),
			 few->measured, cur->measured);
	return 0;
}

/* Runs the stages one after the other (fetch, full, the engines alone when
 * the full run used them, then with a consumer, then the trainer's cost)
 * into *d. @return : 0, or -1 when a stage failed (said). */
static int run_stages(const rf_config *base, const diag_opts *o, diagnosis *d)
{
	long long nb = d->nb;
	rf_config cfg = *base;
	cfg.epochs = 0; /* endless: every stage runs nb batches */
	cfg.on_sample_error = NULL;
	if (!o->json)
		fprintf(stderr, "diagnose: fetch (reads only, %s)...\n", cli_count((unsigned long long)nb, "batch", 0));
	cfg.fetch_only = 1;
	cfg.decode = RF_DECODE_CPU; /* nothing is decoded */
	if (run_stage(&cfg, nb, 0, NULL, NULL, o->progress, NULL, 0, &d->fetch))
		return -1;
	fetch_figures_of(&d->fetch, &d->ff);
	cfg.fetch_only = 0;
	cfg.decode = base->decode;
	if (!o->json)
		fprintf(stderr, "diagnose: full pipeline...\n");
	if (run_stage(&cfg, nb, 0, NULL, NULL, o->progress, NULL, 0, &d->full))
		return -1;
	/* the engines alone, when the full run used them */
	d->gpu = d->full.st.decode_path != RF_DECODE_CPU;
	if (d->gpu) {
		if (!o->json)
			fprintf(stderr, "diagnose: the GPU's JPEG engines alone...\n");
		rf_config e = cfg;
		e.decode = RF_DECODE_GPU;
		e.threads = 1;
		if (run_stage(&e, nb, 0, NULL, NULL, o->progress, NULL, 0, &d->eng))
			return -1;
	}
	/* the pool's own samples (with GPU decode it decodes only its share) */
	const rf_stats *full = &d->full.st;
	uint64_t n = d->gpu ? full->cpu_decodes : full->samples;
	n = n ? n : 1;
	double compute_ns = (double)(full->ns_decode + full->ns_transform + full->ns_collate) / (double)n;
	d->threads = full->threads;
	/* raw mode, and token rows the ring thread lands, have no compute
	 * stage: nothing is decoded, the reads are the pipeline */
	d->compute = !cfg.raw && d->threads > 0 && compute_ns > 0;
	d->prep = d->compute ? d->threads * 1e9 / compute_ns : INFINITY;
	d->ring_share = d->full.secs > 0 ? (double)full->ns_ring_cpu * 1e-9 / d->full.secs : 0;
	double batch = cfg.batch_size;
	d->step = o->step_ms > 0 ? o->step_ms : (d->full.rate > 0 ? 1e3 * batch / d->full.rate : 10);
	d->waits = calloc((size_t)nb, sizeof(double));
	if (!o->json)
		fprintf(stderr, "diagnose: with a consumer of %.2f ms per batch...\n", d->step);
	if (!d->waits || run_stage(&cfg, nb, d->step, NULL, NULL, o->progress, d->waits, (size_t)nb, &d->cons))
		return -1;
	return measure_trainer(&cfg, o, d);
}

/* "(12.3 MB/s, 480 reads/s, 2.10 ms a read with 1.0 in flight on average)" */
static const char *fetch_detail(const fetch_figures *f, char *buf, size_t len)
{
	const char *reads = f->remote ? "requests" : "reads";
	if (f->latency_ms >= 0)
		snprintf(buf, len, "%.1f MB/s, %.0f %s/s, %.2f ms a read with %.1f in flight on average",
			 f->mb_s, f->reads_s, reads, f->latency_ms, f->inflight);
	else
		snprintf(buf, len, "%.1f MB/s, %.0f %s/s", f->mb_s, f->reads_s, reads);
	return buf;
}

/* decode-bound without GPU decode: how many compute threads would match
 * storage, and whether this machine has them. */
static void why_decode_bound(diagnosis *d)
{
	double prep = d->prep, fetch = d->fetch.rate, per_thread = prep / d->threads;
	int cores = cli_cores(), need = (int)ceil(fetch / per_thread);
	int most = cores > 1 ? cores - 1 : 1; /* the ring thread and the consumer need a core */
	char gpu[96] = "";
	if (gpu_here()) /* only where it could be had: a CUDA build and a device */
		snprintf(gpu, sizeof(gpu), ", or GPU decode (--decode auto)");
	if (need <= most)
		snprintf(d->why, sizeof(d->why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s; "
			 "each compute thread does %.0f samples/s: about %s would match "
			 "storage (this machine lets %d run)%s", prep, fetch, per_thread,
			 cli_count((unsigned)need, "thread", 0), most, gpu);
	else if ((int)d->threads < most)
		snprintf(d->why, sizeof(d->why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s; "
			 "each compute thread does %.0f samples/s: use up to %s (%s "
			 "available; storage would take about %d)%s", prep, fetch, per_thread,
			 cli_count((unsigned)most, "thread", 0), cli_count((unsigned)cores, "core", 1), need, gpu);
	else
		snprintf(d->why, sizeof(d->why), "decode-bound: prep %.0f samples/s < fetch %.0f samples/s "
			 "with %s on %s available: more cores (storage would take about %s)%s", prep, fetch,
			 cli_count(d->threads, "compute thread", 0), cli_count((unsigned)cores, "core", 1),
			 cli_count((unsigned)need, "thread", 2), gpu);
}

/* Nothing is decoded (raw mode, token rows): the reads are the pipeline;
 * what bounds them, storage or the ring thread that lands every one. */
static void why_reads_bound(const rf_config *cfg, diagnosis *d)
{
	char det[160];
	const char *what = cfg->raw ? "raw mode decodes nothing" : "token windows are not decoded";
	fetch_detail(&d->ff, det, sizeof(det));
	if (d->ring_share >= 0.85) {
		d->verdict = "ring-thread-bound";
		snprintf(d->why, sizeof(d->why), "ring-thread-bound: %s, and the ring thread that reads and "
			 "lands every sample was busy %.0f%% of one core in the full run (%.0f samples/s): its "
			 "CPU, not storage, is the limit (fetch %.0f samples/s: %s)", what,
			 100 * d->ring_share, d->full.rate, d->fetch.rate, det);
		return;
	}
	unsigned depth = d->full.st.io_depth;
	unsigned ahead = (unsigned)(cfg->prefetch * cfg->batch_size);
	char hint[224];
	if (d->ff.latency_ms < 0) /* nothing in flight whenever a batch was taken */
		snprintf(hint, sizeof(hint), "no read was in flight when a batch was taken: the "
			 "reads kept ahead, and the consumer waited %.0f%% of the full run",
			 100 * d->full.wait_frac);
	else if (d->ff.inflight >= 0.5 * depth)
		snprintf(hint, sizeof(hint), "%u reads in flight at most: try a deeper io_depth or "
			 "faster storage", depth);
	else
		snprintf(hint, sizeof(hint), "the reads in flight average %.1f of io_depth %u: the depth "
			 "is not the limit, the batch slots are (prefetch %d x batch %d = %u samples read "
			 "ahead at most): try a larger --prefetch, or faster storage", d->ff.inflight, depth,
			 cfg->prefetch, cfg->batch_size, ahead);
	d->verdict = "storage-bound";
	snprintf(d->why, sizeof(d->why), "storage-bound: %s, so the reads are the pipeline: fetch "
		 "%.0f samples/s (%s), full pipeline %.0f samples/s, the ring thread busy %.0f%% of a "
		 "core; %s", what, d->fetch.rate, det, d->full.rate, 100 * d->ring_share, hint);
}

/* The verdict and the sentence behind it, into d->verdict and d->why. */
static void judge(const rf_config *cfg, const diag_opts *o, diagnosis *d)
{
	const stage_result *fetch = &d->fetch, *full = &d->full, *eng = &d->eng;
	double prep = d->prep, step = d->step, idle = d->cons.wait_frac;
	int batch_size = cfg->batch_size;
	char det[160];
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
	} else if (d->compute && prep < fetch->rate && !d->gpu) {
		d->verdict = "decode-bound";
		why_decode_bound(d);
	} else if (fetch->st.http_requests) { /* a remote source: the network is the storage */
		const rf_stats *st = &fetch->st;
		char than[128];
		if (!d->compute)
			snprintf(than, sizeof(than), "and nothing is decoded (%s)",
				 cfg->raw ? "raw mode" : "token windows");
		else
			snprintf(than, sizeof(than), "< prep %.0f samples/s (%.1fx more than the network "
				 "delivers)", prep, prep / fetch->rate);
		d->verdict = "network-bound";
		snprintf(d->why, sizeof(d->why), "network-bound: fetch %.0f samples/s (%s; %llu of %llu "
			 "requests tried again, %llu failed) %s; %u requests in "
			 "flight at most: try a deeper io_depth (an object store answers many requests "
			 "at once), a store closer to this machine, or a node-local copy", fetch->rate,
			 fetch_detail(&d->ff, det, sizeof(det)),
			 (unsigned long long)st->http_retries, (unsigned long long)st->http_requests,
			 (unsigned long long)st->http_errors, than, full->st.io_depth);
	} else if (!d->compute) {
		why_reads_bound(cfg, d);
	} else {
		d->verdict = "storage-bound";
		snprintf(d->why, sizeof(d->why), "storage-bound: fetch %.0f samples/s (%s) < prep %.0f "
			 "samples/s (%.1fx more than storage delivers); %u reads in flight at most: try a "
			 "deeper io_depth or faster storage", fetch->rate, fetch_detail(&d->ff, det, sizeof(det)),
			 prep, prep / fetch->rate, full->st.io_depth);
	}
}

/* A number, or null when absent (never a sentinel such as -1). */
static void json_num(const char *key, double v, int present)
{
	if (present && isfinite(v))
		printf("\"%s\":%.3f", key, v);
	else
		printf("\"%s\":null", key);
}

/* "2 compute threads", "1 compute thread", "no compute threads" */
static const char *threads_words(unsigned n, int k)
{
	return n ? cli_count(n, "compute thread", k) : "no compute threads";
}

static void json_trainer_run(const trainer_run *r)
{
	printf("{\"threads\":%u,", r->threads);
	json_num("step_beside_ms", r->step_ms, 1);
	putchar(',');
	json_num("feed_samples_per_s", r->feed, 1);
	putchar(',');
	json_num("step_allows_samples_per_s", r->by_step, 1);
	putchar(',');
	json_num("model_samples_per_s", r->model, 1);
	putchar(',');
	json_num("measured_samples_per_s", r->measured, 1);
	putchar(',');
	json_num("wait_ms_per_batch", r->wait_ms, 1);
	putchar('}');
}

static void print_json(const rf_config *cfg, const diagnosis *d)
{
	const trainer *t = &d->tr;
	const fetch_figures *ff = &d->ff;
	printf("{\"source\":");
	cli_json_str(stdout, cfg->source);
	printf(",\"verdict\":\"%s\",\"why\":", d->verdict);
	cli_json_str(stdout, d->why);
	printf(",\"stages\":{\"fetch\":%.2f,", d->fetch.rate);
	json_num("prep", d->prep, d->compute);
	printf(",\"full\":%.2f,\"with_consumer\":%.2f,", d->full.rate, d->cons.rate);
	json_num("engines", d->eng.rate, d->gpu);
	printf("},\"fetch\":{\"mb_per_s\":%.3f,\"%s_per_s\":%.2f,", ff->mb_s,
	       ff->remote ? "requests" : "reads", ff->reads_s);
	json_num("read_latency_ms", ff->latency_ms, ff->latency_ms >= 0);
	const rf_stats *fs = &d->full.st; /* the full run's reads against its samples' bytes */
	printf(",\"bytes_fetched\":%llu,\"bytes_used\":%llu,\"reads_shared\":%llu,",
	       (unsigned long long)fs->bytes_fetched, (unsigned long long)fs->bytes_used,
	       (unsigned long long)fs->reads_shared);
	json_num("read_amplification", fs->bytes_used ? (double)fs->bytes_fetched / (double)fs->bytes_used
						      : 0, fs->bytes_used > 0);
	printf(",\"reads_in_flight_mean\":%.2f,\"latency_note\":\"Little's law: reads in flight "
	       "over reads per second\"},\"step_ms\":%.3f,\"consumer_wait_ms_per_batch\":%.3f,"
	       "\"accelerator_idle_pct\":%.2f,\"threads\":%u,\"io_depth\":%u,\"batches_per_stage\":%lld,"
	       "\"ring_cpu_pct\":%.1f,", ff->inflight, d->step, d->cons.wait_ms_batch,
	       100 * d->cons.wait_frac, d->threads, d->full.st.io_depth, d->nb, 100 * d->ring_share);
	printf("\"trainer\":{\"step_alone_ms\":%.3f,\"step_beside_ms\":%.3f,\"slowdown_pct\":%.1f,"
	       "\"current\":", t->alone_ms, t->cur.step_ms,
	       t->alone_ms > 0 ? 100 * (t->cur.step_ms / t->alone_ms - 1) : 0.0);
	json_trainer_run(&t->cur);
	printf(",\"fewer\":");
	if (t->has_fewer)
		json_trainer_run(&t->fewer);
	else
		printf("null");
	printf(",\"fewer_threads_faster\":%s,\"recommended_threads\":", t->fewer_better ? "true" : "false");
	if (t->fewer_better)
		printf("%u", t->fewer.threads);
	else
		printf("null");
	printf(",\"line\":");
	cli_json_str(stdout, t->line);
	printf(",\"advice\":");
	cli_json_str(stdout, t->advice);
	printf(",\"model\":\"model_samples_per_s = min(feed rate alone, batch / step time beside the "
	       "loader): the bound without contention; measured_samples_per_s decides\"},");
	printf("\"machine\":{\"busy\":%s,\"cpus\":%d,", d->load.busy ? "true" : "false",
	       d->load.cpus ? d->load.cpus : cli_cores());
	json_num("loadavg", d->load.loadavg, d->load.loadavg >= 0);
	putchar(',');
	json_num("others_cores", d->load.others_cores, d->load.others_cores >= 0);
	printf(",\"warning\":");
	if (d->busy[0])
		cli_json_str(stdout, d->busy);
	else
		printf("null");
	printf("},\"prep_note\":\"compute threads over their decode+transform+collate time per sample "
	       "in the full run; null when nothing is decoded\"}\n");
}

/* "with 2 compute threads: step 2.32 ms, waited 1.90 ms a batch: trained at
 * 1889 samples/s (the bound min(feed alone 3543, batch/step 3445) = 3445)" */
static const char *trainer_run_line(const trainer_run *r, char *buf, size_t len)
{
	snprintf(buf, len, "with %s: step %.2f ms, waited %.2f ms a batch: trained at %.0f samples/s "
		 "(the bound min(feed alone %.0f, batch/step %.0f) = %.0f)", threads_words(r->threads, 0),
		 r->step_ms, r->wait_ms, r->measured, r->feed, r->by_step, r->model);
	return buf;
}

static void print_trainer_run(const trainer_run *r)
{
	char b[320];
	printf("  %s\n", trainer_run_line(r, b, sizeof(b)));
}

/* Read amplification in the full run, where reads are not one a sample
 * and their own bytes: shared (chunks, Parquet pages) or larger than the
 * samples (a Parquet page a row). */
static void print_amplification(const rf_stats *st)
{
	if (!st->bytes_used || (!st->reads_shared && st->bytes_fetched < st->bytes_used / 10 * 11))
		return;
	printf("  reads (full pipeline)       %10.2fx the samples' own bytes (%.1f MB read for "
	       "%.1f MB; %llu samples served by a shared read)\n",
	       (double)st->bytes_fetched / (double)st->bytes_used, (double)st->bytes_fetched / 1e6,
	       (double)st->bytes_used / 1e6, (unsigned long long)st->reads_shared);
}

static void print_text(const rf_config *cfg, const diagnosis *d)
{
	double prep = d->prep, step = d->step, idle = d->cons.wait_frac;
	char threads[96], det[160];
	if (d->compute || d->threads)
		snprintf(threads, sizeof(threads), "%s", cli_count(d->threads, "compute thread", 1));
	else
		snprintf(threads, sizeof(threads), "no compute threads: %s",
			 cfg->raw ? "raw mode" : "the ring thread lands every window");
	printf("ringfeed diagnosis (%s of %d per stage, %s, io_depth %u)\n",
	       cli_count((unsigned long long)d->nb, "batch", 0), cfg->batch_size, threads,
	       d->full.st.io_depth);
	printf("  fetch (reads only)          %10.0f samples/s; %s\n", d->fetch.rate,
	       fetch_detail(&d->ff, det, sizeof(det)));
	print_amplification(&d->full.st);
	if (!d->compute)
		printf("  prep (compute)                      none: %s\n",
		       cfg->raw ? "raw mode decodes nothing" : "token windows are not decoded");
	else
		printf("  prep (compute, from timers) %10.0f samples/s\n", prep);
	if (d->gpu)
		printf("  GPU JPEG engines alone      %10.0f samples/s\n", d->eng.rate);
	printf("  full pipeline               %10.0f samples/s\n", d->full.rate);
	printf("  with a %.2f ms step         %10.0f samples/s; waits %.2f ms per batch, "
	       "an accelerator would idle %.1f%%\n", step, d->cons.rate, d->cons.wait_ms_batch, 100 * idle);
	printf("verdict: %s\n", d->why);
	if (d->tr.done) {
		const trainer *t = &d->tr;
		printf("cost to the trainer: %s\n", t->line);
		print_trainer_run(&t->cur);
		if (t->has_fewer)
			print_trainer_run(&t->fewer);
		printf("  %s\n", t->advice);
	}
	if (d->busy[0])
		printf("warning: %s\n", d->busy);
}

/* --report FILE.html. @return : 0, or -1 when it could not be written (said). */
static int write_report(const rf_config *cfg, const diag_opts *o, const diagnosis *d)
{
	char err[512], machine[256], title[1024], fetch_name[32] = "fetch (reads only)";
	snprintf(title, sizeof(title), "ringfeed diagnosis: %s", cfg->source);
	rfi_redact(title, title, sizeof(title));
	rf_report_stage stages[5];
	size_t ns = 0;
	stages[ns++] = (rf_report_stage){ fetch_name, d->fetch.rate, 0, 0 };
	if (d->compute) /* no bar for a stage that does not exist */
		stages[ns++] = (rf_report_stage){ "prep (compute)", d->prep, 0, 0 };
	if (d->gpu)
		stages[ns++] = (rf_report_stage){ "GPU JPEG engines", d->eng.rate, 0, 0 };
	stages[ns++] = (rf_report_stage){ "full pipeline", d->full.rate, 0, 0 };
	stages[ns++] = (rf_report_stage){ "with consumer", d->cons.rate, 0, 0 };
	char det[160], fetch_note[256];
	snprintf(fetch_note, sizeof(fetch_note), "Fetch: %s.", fetch_detail(&d->ff, det, sizeof(det)));
	const char *notes[4];
	size_t nn = 0;
	notes[nn++] = fetch_note;
	char trainer_line[704], cur[320], fewer[320];
	if (d->tr.done) {
		const trainer *t = &d->tr;
		snprintf(trainer_line, sizeof(trainer_line), "Cost to the trainer: %s; %s.", t->line,
			 t->advice);
		notes[nn++] = trainer_line;
		notes[nn++] = trainer_run_line(&t->cur, cur, sizeof(cur));
		if (t->has_fewer)
			notes[nn++] = trainer_run_line(&t->fewer, fewer, sizeof(fewer));
	}
	size_t nwaits = d->cons.nwaits;
	rf_report r = { .title = title, .verdict = d->verdict, .explanation = d->why,
			.machine = cli_machine_line(machine, sizeof(machine)), .stages = stages,
			.nstages = ns,
			/* the first batch's wait is the start-up (index, threads,
			 * first reads): left out, it would flatten the chart */
			.batch_wait_ms = nwaits > 1 ? d->waits + 1 : d->waits,
			.nbatches = nwaits > 1 ? nwaits - 1 : nwaits,
			.step_ms = d->step, .warning = d->busy[0] ? d->busy : NULL,
			.notes_title = "Reads, and the cost to the trainer", .notes = notes, .nnotes = nn };
	if (rfi_report_write_html(o->report, &r, err, sizeof(err))) {
		fprintf(stderr, "ringfeed bench --report: %s\n", err);
		return -1;
	}
	if (!o->json)
		printf("report: %s\n", o->report);
	return 0;
}

int cli_diagnose(const rf_config *base, const diag_opts *o)
{
	diagnosis *d = calloc(1, sizeof(*d));
	if (!d)
		return -1;
	d->nb = o->batches > 0 ? o->batches : 100;
	if (d->nb < base->prefetch + 3)
		d->nb = base->prefetch + 3; /* a steady part after the warm-up */
	cli_load_start(&d->load);
	int ret = run_stages(base, o, d);
	if (ret == 0) {
		cli_load_end(&d->load, d->busy, sizeof(d->busy));
		judge(base, o, d);
		if (o->json)
			print_json(base, d);
		else
			print_text(base, d);
		if (o->report)
			ret = write_report(base, o, d);
	}
	free(d->waits);
	free(d);
	return ret;
}
