/* tune.c - `ringfeed tune`: searches threads, io_depth and prefetch (and the
 * batch size if asked) for the best samples/s, then repeats the best few
 * configurations until the spread of their runs is known and recommends
 * the cheapest one that the best does not beat by more than that noise (or
 * by more than 5%), as practitioners do by hand, with the table of what it
 * tried. The search is coordinate descent over ladders of values, moving
 * one step while a trial improves on the best by more than 2%, at most two
 * passes; each trial is one short run. One run ranks nothing on a shared
 * machine (a second run of the same configuration can differ by 40%), so
 * the finalists run at least three times each, interleaved, and the answer
 * says whether a difference is noise and whether the machine was busy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "cli/run.h"
#include "util/util.h"

#define MAX_TRIALS 64

typedef struct trial {
	int v[4]; /* threads, io_depth, prefetch, batch */
	double rate;
} trial;

typedef struct search {
	rf_config cfg;
	long long batches;
	int progress, json;
	trial t[MAX_TRIALS];
	int n;
} search;

static const int ladders[4][12] = {
	{ 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 0 },
	{ 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 0 },
	{ 2, 3, 4, 6, 8, 12, 16, 0 },
	{ 16, 32, 64, 128, 256, 512, 0 },
};
static const char *names[4] = { "threads", "io_depth", "prefetch", "batch" };

/* samples/s of one run of configuration v (0 when it failed, said). */
static double run_trial(const search *s, const int v[4])
{
	rf_config c = s->cfg;
	c.threads = v[0];
	c.io_depth = v[1];
	c.prefetch = v[2];
	c.batch_size = v[3];
	double rate = 0;
	char err[512];
	rf_loader *l;
	if (rf_loader_create(&l, &c, err, sizeof(err)) == 0) {
		/* steady part only: after the prefetched batches */
		run_hooks h = { .max_batches = s->batches + c.prefetch + 1, .raw = c.raw,
				.warm_batches = c.prefetch + 1 };
		run_out o;
		if (run_consume(l, &h, &o) == 0)
			rate = run_steady_rate(&o);
		rf_loader_destroy(l);
	} else if (!s->json) {
		fprintf(stderr, "  (threads %d, io_depth %d, prefetch %d, batch %d: %s)\n", v[0], v[1],
			v[2], v[3], err);
	}
	return rate;
}

/* samples/s of one configuration in the search: one run, cached. */
static double measure(search *s, const int v[4])
{
	for (int i = 0; i < s->n; i++)
		if (!memcmp(s->t[i].v, v, sizeof(s->t[i].v)))
			return s->t[i].rate;
	if (s->n == MAX_TRIALS)
		return -1;
	double rate = run_trial(s, v);
	trial *t = &s->t[s->n++];
	memcpy(t->v, v, sizeof(t->v));
	t->rate = rate;
	if (!s->json && s->progress)
		fprintf(stderr, "  tried threads %2d, io_depth %4d, prefetch %2d, batch %3d: %8.0f samples/s\n",
			v[0], v[1], v[2], v[3], rate);
	return rate;
}

static int index_in(const int *ladder, int value)
{
	int best = 0;
	for (int i = 0; ladder[i]; i++)
		if (abs(ladder[i] - value) < abs(ladder[best] - value))
			best = i;
	return best;
}

/* The resources a configuration holds: threads first, then batch memory
 * (prefetch x batch), then reads in flight. */
static int cheaper(const int a[4], const int b[4])
{
	if (a[0] != b[0])
		return a[0] < b[0];
	if (a[2] * a[3] != b[2] * b[3])
		return a[2] * a[3] < b[2] * b[3];
	return a[1] < b[1];
}

/* ---- the finalists: repeated until their spread is known ------------------ */

#define MAX_FINALISTS 4
#define MIN_RUNS 3     /* runs of each finalist at least ... */
#define MAX_RUNS 7     /* ... and at most, */
#define WIDE 0.10      /* more while a finalist's runs spread over more than
			* this share of its median */

typedef struct finalist {
	int v[4];
	double runs[MAX_RUNS];
	int n;
	double median, lo, hi; /* of runs */
} finalist;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void summarize(finalist *f)
{
	double r[MAX_RUNS];
	memcpy(r, f->runs, sizeof(double) * (size_t)f->n);
	qsort(r, (size_t)f->n, sizeof(double), cmp_double);
	f->lo = r[0];
	f->hi = r[f->n - 1];
	f->median = f->n % 2 ? r[f->n / 2] : (r[f->n / 2 - 1] + r[f->n / 2]) / 2;
}

/* (highest - lowest) / median */
static double spread(const finalist *f)
{
	return f->median > 0 ? (f->hi - f->lo) / f->median : 0;
}

/* The search's best few (one run each is not enough to rank them: a
 * second run of the same configuration differs by tens of percent on a
 * shared machine): the three fastest, and the cheapest within 10% of the
 * fastest when it is not among them. @return : how many, into f. */
static int pick_finalists(const search *s, finalist *f)
{
	int used[MAX_TRIALS] = { 0 }, n = 0, fastest = -1;
	for (int k = 0; k < MAX_FINALISTS - 1; k++) {
		int bi = -1;
		for (int i = 0; i < s->n; i++)
			if (!used[i] && s->t[i].rate > 0 && (bi < 0 || s->t[i].rate > s->t[bi].rate))
				bi = i;
		if (bi < 0)
			break;
		if (fastest < 0)
			fastest = bi;
		used[bi] = 1;
		memcpy(f[n++].v, s->t[bi].v, sizeof(f->v));
	}
	if (fastest < 0)
		return 0;
	int ci = -1;
	for (int i = 0; i < s->n; i++)
		if (s->t[i].rate >= 0.9 * s->t[fastest].rate && (ci < 0 || cheaper(s->t[i].v, s->t[ci].v)))
			ci = i;
	if (ci >= 0 && !used[ci])
		memcpy(f[n++].v, s->t[ci].v, sizeof(f->v));
	return n;
}

/* Runs the finalists in rounds, one run of each a round (interleaved, so
 * that a machine getting busier or quieter meanwhile touches them all
 * alike), MIN_RUNS rounds, then more while one's runs spread wide, up to
 * MAX_RUNS. @return : the runs each got. */
static int repeat_finalists(const search *s, finalist *f, int nf)
{
	int rounds = 0;
	for (;;) {
		for (int i = 0; i < nf; i++) {
			f[i].runs[f[i].n++] = run_trial(s, f[i].v);
			summarize(&f[i]);
			if (!s->json && s->progress)
				fprintf(stderr, "  finalist threads %2d, io_depth %4d, prefetch %2d, batch %3d, "
					"run %d: %8.0f samples/s\n", f[i].v[0], f[i].v[1], f[i].v[2], f[i].v[3],
					f[i].n, f[i].runs[f[i].n - 1]);
		}
		rounds++;
		if (rounds < MIN_RUNS)
			continue;
		int wide = 0;
		for (int i = 0; i < nf; i++)
			wide |= spread(&f[i]) > WIDE;
		if (!wide || rounds == MAX_RUNS)
			return rounds;
	}
}

/* What tune recommends, and why. */
typedef struct choice {
	int best, rec;        /* indices into the finalists */
	int noise;            /* rec differs from best by less than the noise */
	char why[512];        /* one sentence */
} choice;

/* best: the highest median. Recommended: the cheapest finalist that cannot
 * be told from the best (its runs reach the best's lowest: the difference
 * is noise) or that is within 5% of it. */
static void choose(const finalist *f, int nf, choice *c)
{
	c->best = 0;
	for (int i = 1; i < nf; i++)
		if (f[i].median > f[c->best].median)
			c->best = i;
	const finalist *b = &f[c->best];
	c->rec = c->best;
	for (int i = 0; i < nf; i++) {
		int overlap = f[i].hi >= b->lo, close = f[i].median >= 0.95 * b->median;
		if ((overlap || close) && cheaper(f[i].v, f[c->rec].v))
			c->rec = i;
	}
	const finalist *r = &f[c->rec];
	c->noise = c->rec != c->best && r->hi >= b->lo;
	if (c->rec == c->best) {
		int others_overlap = 0;
		for (int i = 0; i < nf; i++)
			others_overlap |= i != c->best && f[i].hi >= b->lo;
		snprintf(c->why, sizeof(c->why), "%s", others_overlap
			 ? "the best; the finalists whose runs overlap it hold more resources"
			 : "the best, faster than every other finalist by more than the spread of their runs");
	} else if (c->noise) {
		snprintf(c->why, sizeof(c->why), "the difference from the best (median %.0f against %.0f "
			 "samples/s) is noise: their runs overlap (%.0f-%.0f against %.0f-%.0f); the cheaper "
			 "configuration is recommended", r->median, b->median, r->lo, r->hi, b->lo, b->hi);
	} else {
		snprintf(c->why, sizeof(c->why), "%.1f%% slower than the best (median %.0f against %.0f "
			 "samples/s), more than the noise but within 5%%: the cheaper configuration is "
			 "recommended", 100 * (1 - r->median / b->median), r->median, b->median);
	}
}

/* ---- output ---------------------------------------------------------------- */

/* A finalist's figures as JSON: under "key":{...}, or a bare {...} when key is NULL. */
static void json_config(const char *key, const finalist *f, int all)
{
	if (key)
		printf("\"%s\":", key);
	printf("{\"threads\":%d,\"io_depth\":%d,\"prefetch\":%d,\"batch\":%d,"
	       "\"samples_per_s\":%.2f,\"min\":%.2f,\"max\":%.2f,\"runs\":%d", f->v[0], f->v[1],
	       f->v[2], f->v[3], f->median, f->lo, f->hi, f->n);
	if (all) { /* every run, and the spread */
		printf(",\"all\":[");
		for (int k = 0; k < f->n; k++)
			printf("%s%.2f", k ? "," : "", f->runs[k]);
		printf("],\"spread_pct\":%.1f", 100 * spread(f));
	}
	putchar('}');
}

static void print_json(const search *s, const finalist *f, int nf, const choice *c,
		       const cli_load *ld, const char *busy)
{
	printf("{\"source\":");
	cli_json_str(stdout, s->cfg.source);
	putchar(',');
	json_config("best", &f[c->best], 0);
	putchar(',');
	json_config("recommended", &f[c->rec], 0);
	printf(",\"difference_is_noise\":%s,\"why\":", c->noise ? "true" : "false");
	cli_json_str(stdout, c->why);
	printf(",\"batches_per_trial\":%lld,\"finalists\":[", s->batches);
	for (int i = 0; i < nf; i++) {
		if (i)
			putchar(',');
		json_config(NULL, &f[i], 1);
	}
	printf("],\"trials\":[");
	for (int i = 0; i < s->n; i++)
		printf("%s{\"threads\":%d,\"io_depth\":%d,\"prefetch\":%d,\"batch\":%d,\"samples_per_s\":%.2f}",
		       i ? "," : "", s->t[i].v[0], s->t[i].v[1], s->t[i].v[2], s->t[i].v[3], s->t[i].rate);
	printf("],\"machine\":{\"busy\":%s,\"cpus\":%d,\"loadavg\":", ld->busy ? "true" : "false",
	       ld->cpus ? ld->cpus : cli_cores());
	if (ld->loadavg >= 0)
		printf("%.2f", ld->loadavg);
	else
		printf("null");
	printf(",\"others_cores\":");
	if (ld->others_cores >= 0)
		printf("%.2f", ld->others_cores);
	else
		printf("null");
	printf(",\"warning\":");
	if (*busy)
		cli_json_str(stdout, busy);
	else
		printf("null");
	printf("}}\n");
}

static void print_text(const search *s, int dims, const finalist *f, int nf, const choice *c,
		       const char *busy)
{
	printf("%s: %s of %s (searched: %s%s%s%s), then %s repeated %s each, interleaved\n",
	       cli_name, cli_count((unsigned)s->n, "trial", 0), cli_count((unsigned long long)s->batches,
	       "batch", 1), names[0], ", io_depth, prefetch", dims == 4 ? ", " : "",
	       dims == 4 ? names[3] : "", cli_count((unsigned)nf, "finalist", 2),
	       cli_count((unsigned)f[0].n, "time", 3));
	printf("  the search, one run each:\n");
	printf("  %7s %8s %8s %5s %12s\n", "threads", "io_depth", "prefetch", "batch", "samples/s");
	for (int i = 0; i < s->n; i++)
		printf("  %7d %8d %8d %5d %12.0f\n", s->t[i].v[0], s->t[i].v[1], s->t[i].v[2],
		       s->t[i].v[3], s->t[i].rate);
	printf("  the finalists, %s each (median, lowest-highest, spread):\n",
	       cli_count((unsigned)f[0].n, "run", 0));
	printf("  %7s %8s %8s %5s %12s %19s %7s\n", "threads", "io_depth", "prefetch", "batch",
	       "median", "lowest-highest", "spread");
	for (int i = 0; i < nf; i++) {
		char range[48];
		snprintf(range, sizeof(range), "%.0f-%.0f", f[i].lo, f[i].hi);
		printf("  %7d %8d %8d %5d %12.0f %19s %6.0f%%%s\n", f[i].v[0], f[i].v[1], f[i].v[2],
		       f[i].v[3], f[i].median, range, 100 * spread(&f[i]),
		       i == c->best && i == c->rec ? "  best, recommended" : i == c->best ? "  best"
		       : i == c->rec ? "  recommended" : "");
	}
	const finalist *b = &f[c->best], *r = &f[c->rec];
	printf("best: threads %d, io_depth %d, prefetch %d, batch %d: median %.0f samples/s "
	       "(%.0f-%.0f over %s)\n", b->v[0], b->v[1], b->v[2], b->v[3], b->median, b->lo, b->hi,
	       cli_count((unsigned)b->n, "run", 0));
	printf("recommended: --threads %d --io-depth %d --prefetch %d --batch %d: median %.0f "
	       "samples/s: %s\n", r->v[0], r->v[1], r->v[2], r->v[3], r->median, c->why);
	if (*busy)
		printf("warning: %s\n", busy);
}

static int write_report(const search *s, const tune_opts *o, const finalist *f, int nf,
			const choice *c, const char *busy)
{
	rf_report_trial tr[MAX_TRIALS];
	for (int i = 0; i < s->n; i++)
		tr[i] = (rf_report_trial){ s->t[i].v[0], s->t[i].v[1], s->t[i].v[2], s->t[i].v[3],
					   s->t[i].rate };
	char names_buf[MAX_FINALISTS][64];
	rf_report_stage st[MAX_FINALISTS];
	for (int i = 0; i < nf; i++) {
		snprintf(names_buf[i], sizeof(names_buf[i]), "%dt d%d p%d b%d%s", f[i].v[0], f[i].v[1],
			 f[i].v[2], f[i].v[3], i == c->rec ? " *" : "");
		st[i] = (rf_report_stage){ names_buf[i], f[i].median, f[i].lo, f[i].hi };
	}
	const finalist *b = &f[c->best], *r = &f[c->rec];
	char why[1024], title[1024], machine[256], note[256], err[512];
	snprintf(why, sizeof(why), "recommended: threads %d, io_depth %d, prefetch %d, batch %d "
		 "(median %.0f samples/s): %s. Best: threads %d, io_depth %d, prefetch %d, batch %d "
		 "(median %.0f).", r->v[0], r->v[1], r->v[2], r->v[3], r->median, c->why, b->v[0],
		 b->v[1], b->v[2], b->v[3], b->median);
	snprintf(note, sizeof(note), "Each finalist (t threads, d io_depth, p prefetch, b batch; * "
		 "recommended) ran %d times, interleaved: the bar is the median, the whisker the "
		 "lowest to the highest run.", f[0].n);
	snprintf(title, sizeof(title), "ringfeed tune: %s", s->cfg.source);
	rfi_redact(title, title, sizeof(title));
	rf_report rep = { .title = title, .verdict = "tuned", .explanation = why,
			  .machine = cli_machine_line(machine, sizeof(machine)),
			  .stages = st, .nstages = (size_t)nf, .trials = tr, .ntrials = (size_t)s->n,
			  .stages_title = "Finalists, repeated: samples/s", .stages_note = note,
			  .warning = *busy ? busy : NULL };
	if (rfi_report_write_html(o->report, &rep, err, sizeof(err))) {
		fprintf(stderr, "%s --report: %s\n", cli_name, err);
		return -1;
	}
	return 0;
}

int cli_tune(const rf_config *base, const tune_opts *o)
{
	search *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->cfg = *base;
	s->cfg.epochs = 0;
	s->cfg.on_sample_error = NULL;
	s->batches = o->batches > 0 ? o->batches : 30;
	s->progress = o->progress;
	s->json = o->json;
	int dims = o->tune_batch ? 4 : 3;
	int cur[4] = { base->threads > 0 ? base->threads : 1, base->io_depth, base->prefetch,
		       base->batch_size };
	int max_threads = cli_cores();
	/* the base configuration first: a source that cannot be read fails the
	 * command, as bench does, instead of six trials of nothing */
	rf_loader *l;
	char err[512];
	int r = rf_loader_create(&l, &s->cfg, err, sizeof(err));
	if (r) {
		cli_fail(err, r);
		free(s);
		return -1;
	}
	if (base->threads == 0) { /* the library's default: cores - 1 */
		rf_stats st;
		rf_loader_stats(l, &st);
		cur[0] = (int)st.threads;
	}
	rf_loader_destroy(l);
	cli_load load;
	cli_load_start(&load);
	double best = measure(s, cur);
	for (int pass = 0; pass < 2; pass++) {
		int moved = 0;
		for (int d = 0; d < dims; d++) {
			for (int dir = -1; dir <= 1; dir += 2) {
				for (;;) {
					int i = index_in(ladders[d], cur[d]) + dir;
					if (i < 0 || !ladders[d][i] || (d == 0 && ladders[d][i] > max_threads))
						break; /* more threads than cores only compete */
					int next[4];
					memcpy(next, cur, sizeof(next));
					next[d] = ladders[d][i];
					double r = measure(s, next);
					if (r <= best * 1.02)
						break;
					best = r;
					memcpy(cur, next, sizeof(cur));
					moved = 1;
				}
			}
		}
		if (!moved)
			break;
	}
	finalist f[MAX_FINALISTS];
	memset(f, 0, sizeof(f));
	int nf = pick_finalists(s, f);
	if (nf == 0) {
		fprintf(stderr, "%s: no trial delivered a sample (%d tried)\n", cli_name, s->n);
		free(s);
		return -1;
	}
	if (!s->json)
		fprintf(stderr, "%s: %d trials; repeating the %s...\n", cli_name, s->n,
			cli_count((unsigned)nf, "finalist", 0));
	repeat_finalists(s, f, nf);
	char busy[256];
	cli_load_end(&load, busy, sizeof(busy));
	choice c;
	choose(f, nf, &c);
	if (o->json)
		print_json(s, f, nf, &c, &load, busy);
	else
		print_text(s, dims, f, nf, &c, busy);
	int ret = o->report ? write_report(s, o, f, nf, &c, busy) : 0;
	free(s);
	return ret;
}
