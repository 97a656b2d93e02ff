/* bench.c - `ringfeed bench`: runs the loader over a dataset and reports
 * samples/s, MB/s and where the time went (per-stage timers from rf_stats);
 * optionally as one rank of several, saving or resuming its position, and
 * writing the sample ids it delivered. Its options are parsed apart, in
 * bench_parse.c; --diagnose and tune hand them to diagnose.c and tune.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/run.h"
#include "ringfeed.h"
#include "lists/rf_lists.h"

static const char *io_path_name(uint32_t p)
{
	return p == RF_IO_URING_FIXED ? "io_uring, direct descriptors"
	       : p == RF_IO_URING_PLAIN ? "io_uring, plain descriptors"
	       : p == RF_IO_PREAD ? "pread threads" : "?";
}

static long peak_rss_kib(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}


/* The kinds of loss the run tells apart, each summed up in one line at
 * the end (nothing is lost in silence), by the code the loader reports. */
enum { LOSS_SPAN, LOSS_UNREADABLE, LOSS_BAD, LOSS_KINDS };
static const char *const loss_what[LOSS_KINDS] = {
	[LOSS_SPAN] = "damaged or cut spans of shards (the samples in them)",
	[LOSS_UNREADABLE] = "files that could not be read",
	[LOSS_BAD] = "samples corrupt or unusable",
};

typedef struct bad_log {
	unsigned long shown, total;
	int fail; /* --on-error fail: the sample stops the run, it is not skipped */
	unsigned long n[LOSS_KINDS];
	char first[LOSS_KINDS][256]; /* the first of each kind, "path: reason" */
} bad_log;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	bad_log *b = user;
	int kind = err == RF_ELOST ? LOSS_SPAN : err < 0 && err > -4096 ? LOSS_UNREADABLE : LOSS_BAD;
	if (!b->n[kind]++)
		snprintf(b->first[kind], sizeof(b->first[kind]), "%s: %s", path, reason);
	if (b->shown < 10) {
		fprintf(stderr, "%s: %s %s: %s\n", cli_name, b->fail ? "bad sample" : "skipped",
			path, reason);
		b->shown++;
	}
	b->total++;
}

/* One line a kind of loss, on stderr whatever the output format: what was
 * reported during the run, and the damaged spans the index holds that
 * the run did not reach. */
static void tell_losses(const bad_log *b, const rf_stats *st)
{
	for (int k = 0; k < LOSS_KINDS; k++)
		if (b->n[k])
			fprintf(stderr, "%s: lost: %s: %lu%s; the first: %s\n", cli_name, loss_what[k],
				b->n[k], b->fail ? "" : ", each replaced", b->first[k]);
	if (st->lost_spans > b->n[LOSS_SPAN])
		fprintf(stderr, "%s: lost: the source's shards hold %llu damaged or cut spans "
			"(%llu bytes) whose samples are lost; %lu of them drawn in this run\n",
			cli_name, (unsigned long long)st->lost_spans,
			(unsigned long long)st->lost_bytes, b->n[LOSS_SPAN]);
}

/* SIGINT / SIGTERM / SIGHUP during a run (cli_catch_stop_signals): the run stops after
 * the batch in hand and ends as a finished one would (--ids whole lines,
 * --save-state written), then bench exits with 128 + the signal. */

/* What one run gave, for the report. */
typedef struct bench_result {
	double t0, t_created;  /* now_s() before rf_loader_create() and after it */
	run_out run;
	rf_stats st;
	rf_order_info order;
	bad_log bad;
} bench_result;

/* The files a run reads and writes: the state to resume from (read into
 * *resume_buf, which o->cfg.resume_state then points at; the caller frees
 * it), and --ids and --log opened. @return : 0, or 1 (the exit status)
 * after saying what failed, with nothing left open or allocated. */
static int open_files(bench_opts *o, void **resume_buf, FILE **ids, FILE **log)
{
	*resume_buf = NULL;
	*ids = *log = NULL;
	if (o->resume_path) {
		if (cli_state_read(o->resume_path, resume_buf, &o->cfg.resume_state_len))
			return 1;
		o->cfg.resume_state = *resume_buf;
	}
	if ((o->ids_path && !(*ids = fopen(o->ids_path, "w"))) ||
	    (o->log_path && !(*log = fopen(o->log_path, "w")))) {
		fprintf(stderr, "%s: %s: %s\n", cli_name, o->ids_path && !*ids ? o->ids_path : o->log_path,
			strerror(errno));
		if (*ids)
			fclose(*ids);
		free(*resume_buf);
		return 1;
	}
	return 0;
}

/* Closes --log and --ids after the run. @return : ret, or -EIO when a
 * close failed (said) and the run had not failed already. */
static int close_files(const bench_opts *o, FILE *ids, FILE *log, int ret)
{
	if (log && fclose(log) != 0 && ret >= 0) {
		fprintf(stderr, "%s: --log: %s\n", cli_name, strerror(errno));
		ret = -EIO;
	}
	if (ids && fclose(ids) != 0 && ret >= 0) {
		fprintf(stderr, "%s: --ids %s: %s\n", cli_name, o->ids_path, strerror(errno));
		ret = -EIO;
	}
	return ret;
}

/* Consumes the loader's batches as the options say, into r->run.
 * @return : 0 at the end, or a negative code (said where run_consume()
 * did not say it). */
static int consume(const bench_opts *o, rf_loader *l, FILE *ids, FILE *log, bench_result *r)
{
	if (o->cfg.decode == RF_DECODE_AUTO) {
		rf_stats first;
		rf_loader_stats(l, &first);
		if (first.decode_path == RF_DECODE_CPU)
			fprintf(stderr, "%s: --decode auto: no GPU JPEG decode here%s; decoding on the "
				"CPU\n", cli_name, o->cfg.log_level >= RF_LOG_WARN ? "" : " (--verbose says why)");
	}
	cli_catch_stop_signals();
	run_hooks hooks = { .max_batches = o->max_batches, .step_ms = o->step_ms, .log = log,
			    .ids = ids, .progress = o->progress, .raw = o->cfg.raw,
			    .stop = &cli_stop_signal, .device_sync = o->cfg.device >= 0,
			    .checksum = o->json };
	int ret = run_consume(l, &hooks, &r->run);
	if (ret == -EIO)
		fprintf(stderr, "%s: writing --ids or --log, or waiting for the device: %s\n", cli_name, strerror(errno));
	ret = close_files(o, ids, log, ret);
	if (ret < 0 && ret != -EIO)
		fprintf(stderr, "%s: %s: %s\n", cli_name, rf_strerror(ret), rf_loader_error(l));
	return ret;
}

/* --save-state, and what a run that delivered nothing after --resume
 * means. @return : 0, or -1 when the state could not be written (said). */
static int save_state(const bench_opts *o, const rf_loader *l, const bench_result *r)
{
	const rf_order_info *order = &r->order;
	unsigned long long batches = r->run.batches;
	if (o->save_path) {
		if (cli_state_write(l, o->save_path))
			return -1;
		if (order->next_batch >= order->total_batches)
			fprintf(stderr, "%s: the stream ended after %s, before --after %lld: the state "
				"saved to %s is its end (batch %llu of %llu); resuming from it delivers nothing\n",
				cli_name, cli_count(batches, "batch", 0), o->after, o->save_path,
				(unsigned long long)order->next_batch, (unsigned long long)order->total_batches);
		else
			fprintf(stderr, "%s: state saved to %s: resumes at batch %llu (epoch %llu)\n", cli_name,
				o->save_path, (unsigned long long)order->next_batch,
				(unsigned long long)(order->next_batch / order->batches_per_epoch));
	} else if (o->resume_path && batches == 0 && !cli_stop_signal) {
		fprintf(stderr, "%s: nothing left to deliver: the state in %s is at the end of the stream "
			"(batch %llu of %llu; more --epochs continue it)\n", cli_name, o->resume_path,
			(unsigned long long)order->next_batch, (unsigned long long)order->total_batches);
	}
	return 0;
}

/* The figures of the report, from the run's counters. */
typedef struct bench_figures {
	double secs, sps, mbps;
	/* ms per sample, and shares of the compute threads' wall time */
	double decode_ms, transform_ms, collate_ms, readwait_ms;
	double pct_decode, pct_transform, pct_collate, pct_readwait, pct_other;
	double wait_pct, ring_us, px_pct;
} bench_figures;

static void figures(const bench_result *r, bench_figures *f)
{
	const rf_stats *st = &r->st;
	unsigned long long samples = r->run.samples;
	double secs = r->run.t_end - r->t0;
	f->secs = secs;
	f->sps = samples / secs;
	f->mbps = (double)st->bytes_read / secs / 1e6;
	double per = samples ? 1e-6 / (double)samples : 0; /* ns total -> ms per sample */
	f->decode_ms = (double)st->ns_decode * per;
	f->transform_ms = (double)st->ns_transform * per;
	f->collate_ms = (double)st->ns_collate * per;
	f->readwait_ms = (double)st->ns_read_wait * per;
	/* shares of the compute threads' wall time */
	double wall_threads = secs * st->threads * 1e9;
	f->pct_decode = wall_threads > 0 ? 100.0 * (double)st->ns_decode / wall_threads : 0;
	f->pct_transform = wall_threads > 0 ? 100.0 * (double)st->ns_transform / wall_threads : 0;
	f->pct_collate = wall_threads > 0 ? 100.0 * (double)st->ns_collate / wall_threads : 0;
	f->pct_readwait = wall_threads > 0 ? 100.0 * (double)st->ns_read_wait / wall_threads : 0;
	f->pct_other = 100.0 - f->pct_decode - f->pct_transform - f->pct_collate - f->pct_readwait;
	f->wait_pct = secs > 0 ? 100.0 * (double)st->ns_consumer_wait * 1e-9 / secs : 0;
	f->ring_us = samples ? (double)st->ns_ring_cpu * 1e-3 / (double)samples : 0;
	f->px_pct = st->source_pixels ? 100.0 * (double)st->decoded_pixels / (double)st->source_pixels : 0;
}

/* "counters":{...}, every counter of rf_stats by name as the library gives
 * it (times in ns, the paths as their values), from the one list of them. */
static void print_json_counters(const rf_stats *st)
{
	static const rf_stat_entry list[] = { RF_STATS_FIELDS(RF_STAT_ENTRY) };
	const char *sep = "";
	printf("\"counters\":{");
	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
		if (list[i].kind == RF_STAT_RESERVED)
			continue;
		printf("%s\"%s\":%llu", sep, list[i].name,
		       (unsigned long long)rfi_stat_value(st, &list[i]));
		sep = ",";
	}
	printf("},");
}

static void print_json(const rf_config *cfg, const bench_result *r, const bench_figures *f)
{
	const rf_stats *st = &r->st;
	double t_end = r->run.t_end, t_first = r->run.t_first;
	/* steady: without set-up (index walk, threads), as peers that list
	 * their files before their clock starts are timed */
	printf("{\"loader\":\"ringfeed\",\"source\":");
	cli_json_str(stdout, cfg->source);
	printf(",\"raw\":%d,\"steady_samples_per_s\":%.2f,"
	       "\"index_files\":%llu,\"index_bytes\":%llu,\"index_cached\":%u,"
	       "\"peak_rss_kib\":%ld,\"device_copy_gb_per_s\":%.3f,\"device_bytes\":%llu,", cfg->raw,
	       t_end > r->t_created ? r->run.samples / (t_end - r->t_created) : 0.0,
	       (unsigned long long)st->samples_total, (unsigned long long)st->index_bytes,
	       st->index_cached, peak_rss_kib(),
	       st->ns_device_copy ? (double)st->device_bytes / (double)st->ns_device_copy : 0.0,
	       (unsigned long long)st->device_bytes);
	print_json_counters(st); /* before "samples": same_batches.sh reads the last one */
	if (cfg->seq_len) /* token windows: samples are windows of seq_len + 1 tokens */
		printf("\"seq_len\":%u,\"tokens_per_s\":%.1f,", cfg->seq_len,
		       f->sps * (cfg->seq_len + 1.0));
	if (cfg->fields && cfg->fields[0])
		printf("\"field_bytes\":%llu,", r->run.field_bytes);
	if (st->http_requests) /* a remote source: its requests, and per request the ring's CPU */
		printf("\"http_requests\":%llu,\"http_retries\":%llu,\"http_errors\":%llu,"
		       "\"http_bytes\":%llu,\"http_retry_throttled\":%llu,\"http_retry_server\":%llu,"
		       "\"http_retry_connection\":%llu,\"http_retry_stalled\":%llu,\"http_connections\":%llu,"
		       "\"ring_cpu_us_per_request\":%.2f,\"ring_cpu_ms_per_mb\":%.3f,",
		       (unsigned long long)st->http_requests, (unsigned long long)st->http_retries,
		       (unsigned long long)st->http_errors, (unsigned long long)st->http_bytes,
		       (unsigned long long)st->http_retry_throttled,
		       (unsigned long long)st->http_retry_server,
		       (unsigned long long)st->http_retry_connection,
		       (unsigned long long)st->http_retry_stalled,
		       (unsigned long long)st->http_connections,
		       (double)st->ns_ring_cpu / 1e3 / (double)st->http_requests,
		       st->bytes_read ? (double)st->ns_ring_cpu / 1e6 / ((double)st->bytes_read / 1e6)
				      : 0.0);
	if (cfg->cache_dir && cfg->cache_dir[0]) /* --cache-dir: what the node-local cache did */
		printf("\"cache_hits\":%llu,\"cache_hit_bytes\":%llu,\"cache_misses\":%llu,"
		       "\"cache_written_bytes\":%llu,\"cache_waits\":%llu,\"cache_evictions\":%llu,",
		       (unsigned long long)st->cache_hits, (unsigned long long)st->cache_hit_bytes,
		       (unsigned long long)st->cache_misses,
		       (unsigned long long)st->cache_written_bytes,
		       (unsigned long long)st->cache_waits, (unsigned long long)st->cache_evictions);
	printf("\"samples\":%llu,\"batches\":%llu,\"seconds\":%.6f,"
	       "\"samples_per_s\":%.2f,\"mb_per_s\":%.3f,\"bytes_read\":%llu,"
	       "\"bad_samples\":%llu,\"replaced\":%llu,\"lost_spans\":%llu,\"lost_bytes\":%llu,"
	       "\"create_s\":%.6f,\"first_batch_s\":%.6f,"
	       "\"threads\":%u,\"io_depth\":%u,\"io_path\":\"%s\",\"direct_io\":%u,\"fixed_buffers\":%u,"
	       "\"stages\":{\"read_wait_ms_per_sample\":%.4f,\"decode_ms_per_sample\":%.4f,"
	       "\"transform_ms_per_sample\":%.4f,\"collate_ms_per_sample\":%.4f,"
	       "\"read_wait_pct\":%.1f,\"decode_pct\":%.1f,\"transform_pct\":%.1f,"
	       "\"collate_pct\":%.1f,\"other_pct\":%.1f,\"consumer_wait_pct\":%.1f,"
	       "\"ring_cpu_us_per_sample\":%.2f,\"ring_cpu_ms_per_10k\":%.2f,\"scaled_decodes\":%llu,"
	       "\"decoded_pixels_pct\":%.1f},\"decode\":\"%s\",\"cpu_decodes\":%llu,"
	       "\"gpu_decodes\":%llu,\"gpu_busy_s\":%.6f,\"gpu_host_s\":%.6f,\"checksum\":%llu}\n",
	       r->run.samples, r->run.batches, f->secs, f->sps, f->mbps,
	       (unsigned long long)st->bytes_read, (unsigned long long)st->bad_samples,
	       (unsigned long long)st->replaced, (unsigned long long)st->lost_spans,
	       (unsigned long long)st->lost_bytes, r->t_created - r->t0,
	       t_first ? t_first - r->t0 : 0.0, st->threads, st->io_depth, io_path_name(st->io_path),
	       st->direct_io, st->fixed_buffers, f->readwait_ms, f->decode_ms, f->transform_ms,
	       f->collate_ms, f->pct_readwait, f->pct_decode, f->pct_transform, f->pct_collate,
	       f->pct_other, f->wait_pct, f->ring_us, f->ring_us * 10,
	       (unsigned long long)st->scaled_decodes, f->px_pct,
	       cli_enum_name(RF_ENUM_DECODE, (int)st->decode_path),
	       (unsigned long long)st->cpu_decodes, (unsigned long long)st->gpu_decodes,
	       (double)st->ns_gpu_decode * 1e-9, (double)st->ns_gpu_host * 1e-9, r->run.checksum);
}

/* Where the compute threads' time went (or, without them, the ring thread's). */
static void print_stages(const rf_config *cfg, const rf_stats *st, const bench_figures *f)
{
	if (cfg->seq_len && !st->threads) { /* no compute stage: the ring thread lands rows */
		printf("  tokens: no compute threads; the ring thread reads every window and "
		       "stores it into its row (io_depth %u): %.2f us of its CPU per window, "
		       "%.1f ms per 10,000, %.1f%% of one core\n", st->io_depth, f->ring_us, f->ring_us * 10,
		       f->secs > 0 ? 100.0 * (double)st->ns_ring_cpu * 1e-9 / f->secs : 0.0);
		printf("  consumer waiting for batches %5.1f%% of the run\n", f->wait_pct);
	} else if (cfg->raw && st->threads) { /* a kind's stage cuts raw samples out */
		printf("  raw mode: each sample's bytes cut out of its read by %s (the source's "
		       "own stage: a Parquet row out of its page); the ring thread %.2f us of its "
		       "CPU per sample (io_depth %u)\n", cli_count(st->threads, "compute thread", 0),
		       f->ring_us, st->io_depth);
		printf("  consumer waiting for batches %5.1f%% of the run\n", f->wait_pct);
	} else if (cfg->raw) { /* no compute stage: the ring thread lands every read */
		printf("  raw mode: no compute threads; the ring thread reads and lands every file "
		       "(io_depth %u): %.2f us of its CPU per file, %.1f%% of one core\n", st->io_depth,
		       f->ring_us, f->secs > 0 ? 100.0 * (double)st->ns_ring_cpu * 1e-9 / f->secs : 0.0);
		printf("  consumer waiting for batches %5.1f%% of the run\n", f->wait_pct);
	} else {
		printf("  where the compute threads' time went (%s, io_depth %u):\n",
		       cli_count(st->threads, "thread", 0), st->io_depth);
		printf("    read wait   %7.3f ms/sample  %5.1f%%  (no landed read to work on)\n", f->readwait_ms, f->pct_readwait);
		printf("    decode      %7.3f ms/sample  %5.1f%%  (%.0f%% of the pixels decoded, %llu scaled)\n",
		       f->decode_ms, f->pct_decode, f->px_pct, (unsigned long long)st->scaled_decodes);
		printf("    transform   %7.3f ms/sample  %5.1f%%  (resample + store into the slot)\n", f->transform_ms, f->pct_transform);
		printf("    collate     %7.3f ms/sample  %5.1f%%  (labels, ids, count-down, publish)\n", f->collate_ms, f->pct_collate);
		printf("    other               %5.1f%%  (queues, descheduled)\n", f->pct_other);
		printf("  consumer waiting for batches %5.1f%% of the run; ring thread CPU %.2f us/sample\n",
		       f->wait_pct, f->ring_us);
	}
}

static void print_text(const rf_config *cfg, const bench_result *r, const bench_figures *f)
{
	const rf_stats *st = &r->st;
	double t_first = r->run.t_first;
	const char *unit = cfg->raw ? "file" : cfg->seq_len ? "window" : "sample";
	printf("%s: %s in %s, %.3f s\n", cli_name, cli_count(r->run.samples, unit, 0),
	       cli_count(r->run.batches, "batch", 1), f->secs);
	if (cfg->seq_len)
		printf("  %.0f tokens/s (windows of %u + 1 tokens)\n", f->sps * (cfg->seq_len + 1.0),
		       cfg->seq_len);
	printf("  %.1f %ss/s, %.1f MB/s read (%s, %s, alignment %u, %s)\n", f->sps, unit, f->mbps,
	       io_path_name(st->io_path), st->direct_io ? "O_DIRECT" : "buffered", st->dio_align,
	       st->fixed_buffers ? "fixed buffers" : "plain buffers");
	printf("  set-up (index%s + threads) %.3f s, first batch after %.3f s; index %llu %ss, "
	       "%.1f bytes each\n", st->index_cached ? " from cache" : " walk", r->t_created - r->t0,
	       t_first ? t_first - r->t0 : 0.0, (unsigned long long)st->samples_total,
	       cfg->seq_len ? "window" : "file",
	       st->samples_total ? (double)st->index_bytes / (double)st->samples_total : 0.0);
	print_stages(cfg, st, f);
	if (st->cache_hits + st->cache_misses) /* --cache-dir, with a remote source */
		printf("  node-local cache: %s (%.1f MB) read from it, %s fetched (%.1f MB written "
		       "to it), %s for another process's fetch, %s evicted\n",
		       cli_count(st->cache_hits, "range", 0), (double)st->cache_hit_bytes / 1e6,
		       cli_count(st->cache_misses, "range", 1), (double)st->cache_written_bytes / 1e6,
		       cli_count(st->cache_waits, "wait", 2), cli_count(st->cache_evictions, "segment", 3));
	if (st->bad_samples)
		printf("  bad samples skipped and replaced: %llu (%llu places of the delivered "
		       "batches filled by a replacement)\n", (unsigned long long)st->bad_samples,
		       (unsigned long long)st->replaced);
}

/* Order, ranks and resume (issue 6): the text report's last lines. */
static void print_order(const bench_result *r)
{
	const rf_order_info *order = &r->order;
	unsigned long long batches = r->run.batches;
	printf("  order: %s sampler, rank %u of %u (%s): %llu of the %llu samples and %s "
	       "per epoch\n", cli_enum_name(RF_ENUM_SAMPLER, order->sampler), order->rank,
	       order->world_size, order->rank_source, (unsigned long long)order->rank_samples,
	       (unsigned long long)order->epoch_samples, cli_count(order->batches_per_epoch, "batch", 0));
	if (batches)
		printf("  delivered batches %llu to %llu; the next is %llu\n",
		       (unsigned long long)(order->next_batch - batches),
		       (unsigned long long)(order->next_batch - 1),
		       (unsigned long long)order->next_batch);
}

/* The run bench_parse() asked for. @return : the exit status. */
static int bench_run(bench_opts *o)
{
	void *resume_buf;
	FILE *ids, *log;
	if (open_files(o, &resume_buf, &ids, &log))
		return 1;
	bench_result r;
	memset(&r, 0, sizeof(r));
	r.bad.fail = o->cfg.on_error == RF_ON_ERROR_FAIL;
	o->cfg.on_sample_error = on_bad;
	o->cfg.user = &r.bad;

	char err[512];
	rf_loader *l;
	r.t0 = now_s();
	int ret = rf_loader_create(&l, &o->cfg, err, sizeof(err));
	free(resume_buf); /* read during create only */
	if (ret) {
		cli_fail(err, ret);
		if (ids)
			fclose(ids);
		if (log)
			fclose(log);
		return 1;
	}
	r.t_created = now_s();
	if (consume(o, l, ids, log, &r) < 0) {
		rf_loader_destroy(l);
		return 1;
	}
	rf_loader_order(l, &r.order);
	if (save_state(o, l, &r)) {
		rf_loader_destroy(l);
		return 1;
	}
	rf_loader_stats(l, &r.st);
	rf_loader_destroy(l);

	bench_figures f;
	figures(&r, &f);
	if (o->json)
		print_json(&o->cfg, &r, &f);
	else
		print_text(&o->cfg, &r, &f);
	tell_losses(&r.bad, &r.st);
	if (!o->json)
		print_order(&r);
	if (cli_stop_signal) {
		fprintf(stderr, "%s: stopped by %s after %s\n", cli_name,
			cli_signal_name(cli_stop_signal), cli_count(r.run.batches, "batch", 0));
		return 128 + cli_stop_signal;
	}
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	bench_opts o;
	int ret = bench_parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (o.tune) {
		tune_opts t = { .batches = o.max_batches, .tune_batch = o.tune_batch, .json = o.json,
				.progress = o.progress, .report = o.report_path };
		return cli_tune(&o.cfg, &t) ? 1 : 0;
	}
	if (o.diagnose) {
		diag_opts d = { .step_ms = o.step_ms, .batches = o.max_batches, .json = o.json,
				.progress = o.progress, .report = o.report_path };
		return cli_diagnose(&o.cfg, &d) ? 1 : 0;
	}
	return bench_run(&o);
}

int cmd_tune(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ringfeed tune --source DIR [bench options] [--batches K] "
			       "[--tune-batch] [--json] [--report FILE.html]\n\n"
			       "Searches threads, io_depth and prefetch (and the batch size with\n"
			       "--tune-batch) by coordinate descent, each trial K batches (default 30),\n"
			       "then repeats the best few (3 to 7 runs each, interleaved) and shows\n"
			       "their median and spread; recommends the cheapest configuration the\n"
			       "best does not beat by more than the noise (or 5%%), and warns when\n"
			       "the machine is busy.\n"
			       "Every `ringfeed bench` option sets what stays fixed (see bench --help).\n");
			return 0;
		}
	char **args = calloc((size_t)argc + 2, sizeof(char *));
	if (!args)
		return 1;
	args[0] = (char *)cli_name;
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	args[argc] = "--tune";
	int ret = cmd_bench(argc + 1, args);
	free(args);
	return ret;
}
