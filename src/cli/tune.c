/* tune.c - `ringfeed tune`: searches threads, io_depth and prefetch (and the
 * batch size if asked) for the best samples/s, then recommends the smallest
 * configuration within 5% of the best, as practitioners do by hand, with the
 * table of what it tried. A search, not a grid: coordinate descent over
 * ladders of values, moving one step while a trial improves on the best by
 * more than 2%, at most two passes; each trial is a short run. */
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

/* samples/s of one configuration (cached). */
static double measure(search *s, const int v[4])
{
	for (int i = 0; i < s->n; i++)
		if (!memcmp(s->t[i].v, v, sizeof(s->t[i].v)))
			return s->t[i].rate;
	if (s->n == MAX_TRIALS)
		return -1;
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
static int cheaper(const trial *a, const trial *b)
{
	if (a->v[0] != b->v[0])
		return a->v[0] < b->v[0];
	if (a->v[2] * a->v[3] != b->v[2] * b->v[3])
		return a->v[2] * a->v[3] < b->v[2] * b->v[3];
	return a->v[1] < b->v[1];
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
	/* best and the cheapest within 5% of it */
	int bi = 0, ri = -1;
	for (int i = 0; i < s->n; i++)
		if (s->t[i].rate > s->t[bi].rate)
			bi = i;
	for (int i = 0; i < s->n; i++)
		if (s->t[i].rate >= 0.95 * s->t[bi].rate && (ri < 0 || cheaper(&s->t[i], &s->t[ri])))
			ri = i;
	const trial *b = &s->t[bi], *rec = &s->t[ri];
	if (b->rate <= 0) {
		fprintf(stderr, "%s: no trial delivered a sample (%d tried)\n", cli_name, s->n);
		free(s);
		return -1;
	}
	if (o->json) {
		printf("{\"source\":");
		cli_json_str(stdout, s->cfg.source);
		printf(",\"best\":{\"threads\":%d,\"io_depth\":%d,\"prefetch\":%d,\"batch\":%d,\"samples_per_s\":%.2f},"
		       "\"recommended\":{\"threads\":%d,\"io_depth\":%d,\"prefetch\":%d,\"batch\":%d,\"samples_per_s\":%.2f},"
		       "\"batches_per_trial\":%lld,\"trials\":[", b->v[0], b->v[1], b->v[2], b->v[3], b->rate,
		       rec->v[0], rec->v[1], rec->v[2], rec->v[3], rec->rate, s->batches);
		for (int i = 0; i < s->n; i++)
			printf("%s{\"threads\":%d,\"io_depth\":%d,\"prefetch\":%d,\"batch\":%d,\"samples_per_s\":%.2f}",
			       i ? "," : "", s->t[i].v[0], s->t[i].v[1], s->t[i].v[2], s->t[i].v[3], s->t[i].rate);
		printf("]}\n");
	} else {
		printf("%s: %d trials of %lld batches (searched: %s%s%s%s)\n", cli_name, s->n, s->batches,
		       names[0], ", io_depth, prefetch", dims == 4 ? ", " : "", dims == 4 ? names[3] : "");
		printf("  %7s %8s %8s %5s %12s\n", "threads", "io_depth", "prefetch", "batch", "samples/s");
		for (int i = 0; i < s->n; i++)
			printf("  %7d %8d %8d %5d %12.0f%s\n", s->t[i].v[0], s->t[i].v[1], s->t[i].v[2],
			       s->t[i].v[3], s->t[i].rate, i == bi ? "  best" : i == ri ? "  recommended" : "");
		printf("best: threads %d, io_depth %d, prefetch %d, batch %d: %.0f samples/s\n", b->v[0],
		       b->v[1], b->v[2], b->v[3], b->rate);
		printf("recommended (the smallest within 5%% of the best): --threads %d --io-depth %d "
		       "--prefetch %d --batch %d: %.0f samples/s\n", rec->v[0], rec->v[1], rec->v[2], rec->v[3], rec->rate);
	}
	int ret = 0;
	if (o->report) {
		rf_report_trial tr[MAX_TRIALS];
		for (int i = 0; i < s->n; i++)
			tr[i] = (rf_report_trial){ s->t[i].v[0], s->t[i].v[1], s->t[i].v[2], s->t[i].v[3],
						   s->t[i].rate };
		rf_report_stage st[2] = { { "best", b->rate }, { "recommended", rec->rate } };
		char why[512], title[1024], machine[256];
		snprintf(why, sizeof(why), "tuned: best %.0f samples/s with threads %d, io_depth %d, "
			 "prefetch %d; recommended threads %d, io_depth %d, prefetch %d (%.0f samples/s)",
			 b->rate, b->v[0], b->v[1], b->v[2], rec->v[0], rec->v[1], rec->v[2], rec->rate);
		snprintf(title, sizeof(title), "ringfeed tune: %s", s->cfg.source);
		rf_redact(title, title, sizeof(title));
		rf_report rep = { .title = title, .verdict = "tuned", .explanation = why,
				  .machine = cli_machine_line(machine, sizeof(machine)),
				  .stages = st, .nstages = 2, .trials = tr, .ntrials = (size_t)s->n };
		if (rf_report_write_html(o->report, &rep, err, sizeof(err))) {
			fprintf(stderr, "%s --report: %s\n", cli_name, err);
			ret = -1;
		}
	}
	free(s);
	return ret;
}
