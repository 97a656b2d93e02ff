/* test_report.c - writes HTML reports with rfi_report_write_html for
 * tests/report_render.sh: a typical one (4 stages, 300 batch waits, a step,
 * 8 tuning trials, findings, a busy-machine warning) to argv[1], tune's
 * (finalists with whiskers, trials, no waits) to argv[1].tune.html, and an
 * edge case (no batches, no trials, odd values, a title and strings
 * needing escapes) to argv[2]. Also checks the error path.
 * Usage: test_report MAIN.html EDGE.html */
#include <errno.h>
#include <math.h>   /* NAN, INFINITY */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report.h"

static int write_main(const char *path)
{
	static const rf_report_stage stages[] = {
		{"fetch", 18450.0, 0, 0},
		{"prep", 2310.5, 0, 0},
		{"full", 2204.0, 0, 0},
		{"with consumer", 1980.2, 0, 0},
	};
	static const rf_report_trial trials[] = {
		{1, 64, 4, 64, 640.0},   {2, 64, 4, 64, 1210.0},
		{2, 256, 4, 64, 1265.0}, {4, 128, 4, 64, 2150.0},
		{4, 256, 8, 64, 2290.0}, {4, 512, 8, 64, 2240.0},
		{8, 256, 8, 64, 2180.0}, {8, 512, 4, 128, 2205.0},
	};
	double waits[300];
	char err[256] = "";
	rf_report r;
	int i, rc;

	/* a warm-up stall, then a steady saw with a stall every 50 batches */
	for (i = 0; i < 300; i++) {
		waits[i] = 1.5 + 0.8 * (i % 10) + (abs(i % 60 - 30) - 15) / 5.0;
		if (waits[i] < 0)
			waits[i] = 0;
		if (i < 4)
			waits[i] = 48.0 - 10 * i;
		if (i % 50 == 25)
			waits[i] = 24.0;
	}
	memset(&r, 0, sizeof r);
	r.title = "ringfeed diagnosis: /data/imagenet/train";
	r.verdict = "decode-bound";
	r.explanation = "The loader delivers 2,204 samples/s and JPEG decode alone sustains "
			"2,311 samples/s, while reads alone reach 18,450 samples/s: decode is "
			"the limit. More cores or smaller --resize would help.";
	r.machine = "2 cores, kernel 6.18, /dev/vda ext4";
	r.stages = stages;
	r.nstages = sizeof stages / sizeof stages[0];
	r.batch_wait_ms = waits;
	r.nbatches = 300;
	r.step_ms = 12.0;
	r.trials = trials;
	r.ntrials = sizeof trials / sizeof trials[0];
	static const char *const notes[] = {
		"Fetch: 120.5 MB/s, 18450 reads/s, 1.20 ms a read with 22.1 in flight on average.",
		"Cost to the trainer: a CPU-bound step of 10.00 ms took 12.50 ms beside the loader (25% slower).",
	};
	r.notes_title = "Reads, and the cost to the trainer";
	r.notes = notes;
	r.nnotes = 2;
	r.warning = "the machine is busy (load 3.1 on 2 CPUs): figures are noisy";
	rc = rfi_report_write_html(path, &r, err, sizeof err);
	if (rc) {
		fprintf(stderr, "test_report: main report: %d %s\n", rc, err);
		return 1;
	}
	return 0;
}

/* What `ringfeed tune --report` writes: finalists with the spread of their
 * repeated runs (whiskers) under tune's own title, the trials, and no
 * consumer waits (the section is left out, not drawn empty). */
static int write_tune(const char *path)
{
	static const rf_report_stage finalists[] = {
		{"2t d128 p4 b64 *", 1065.0, 869.0, 1261.0},
		{"2t d256 p4 b64", 1102.0, 901.0, 1240.0},
		{"1t d256 p4 b64", 640.0, 611.0, 655.0},
	};
	static const rf_report_trial trials[] = {
		{1, 256, 4, 64, 620.0}, {2, 256, 4, 64, 1300.0},
		{2, 128, 4, 64, 870.0}, {2, 512, 4, 64, 990.0},
	};
	char err[256] = "";
	rf_report r;
	memset(&r, 0, sizeof r);
	r.title = "ringfeed tune: /data/train";
	r.verdict = "tuned";
	r.explanation = "recommended: threads 2, io_depth 128: the difference from the best is noise";
	r.machine = "2 cores";
	r.stages = finalists;
	r.nstages = 3;
	r.stages_title = "Finalists, repeated: samples/s";
	r.stages_note = "Each finalist ran 5 times, interleaved.";
	r.trials = trials;
	r.ntrials = 4;
	if (rfi_report_write_html(path, &r, err, sizeof err)) {
		fprintf(stderr, "test_report: tune report: %s\n", err);
		return 1;
	}
	return 0;
}

static int write_edge(const char *path)
{
	static const rf_report_stage stages[] = {
		{"fetch <raw> & \"quoted\"", NAN, 0, 0},
		{"prep", -5.0, 0, 0},
		{NULL, INFINITY, 0, 0},
		{"a stage name far too long to fit beside its bar, ending in \xc3\xa9\xc3\xa9\xc3\xa9", 0.0, 0, 0},
	};
	char err[256] = "";
	rf_report r;
	int rc;

	memset(&r, 0, sizeof r);
	r.title = "title <&>\" with 'quotes' </svg><script>alert(1)</script>";
	r.verdict = "storage-bound";
	r.explanation = "<b>not bold</b> & not a tag";
	r.machine = NULL;
	r.stages = stages;
	r.nstages = sizeof stages / sizeof stages[0];
	r.batch_wait_ms = NULL;
	r.nbatches = 0;
	r.step_ms = NAN;
	r.trials = NULL;
	r.ntrials = 0;
	rc = rfi_report_write_html(path, &r, err, sizeof err);
	if (rc) {
		fprintf(stderr, "test_report: edge report: %d %s\n", rc, err);
		return 1;
	}

	/* an unwritable path: -errno and a message naming the file */
	err[0] = '\0';
	rc = rfi_report_write_html("/nonexistent-dir/x.html", &r, err, sizeof err);
	if (rc != -ENOENT || !strstr(err, "/nonexistent-dir/x.html")) {
		fprintf(stderr, "test_report: bad path gave %d \"%s\"\n", rc, err);
		return 1;
	}
	if (rfi_report_write_html(path, NULL, err, sizeof err) != -EINVAL) {
		fprintf(stderr, "test_report: NULL report not refused\n");
		return 1;
	}
	/* a report with only waits: many batches (bucketed), all zero or NaN */
	{
		static double many[5000];
		char p2[4096];
		int i;
		for (i = 0; i < 5000; i++)
			many[i] = i % 7 ? (double)(i % 97) / 10 : (i % 2 ? NAN : -1.0);
		memset(&r, 0, sizeof r);
		r.batch_wait_ms = many;
		r.nbatches = 5000;
		r.step_ms = 3;
		snprintf(p2, sizeof p2, "%s.many.html", path);
		if (rfi_report_write_html(p2, &r, err, sizeof err)) {
			fprintf(stderr, "test_report: many batches: %s\n", err);
			return 1;
		}
		for (i = 0; i < 5000; i++)
			many[i] = 0;
		snprintf(p2, sizeof p2, "%s.zeros.html", path);
		if (rfi_report_write_html(p2, &r, err, sizeof err)) {
			fprintf(stderr, "test_report: zero waits: %s\n", err);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test_report MAIN.html EDGE.html\n");
		return 2;
	}
	char tune[4096];
	snprintf(tune, sizeof tune, "%s.tune.html", argv[1]);
	if (write_main(argv[1]) || write_edge(argv[2]) || write_tune(tune))
		return 1;
	return 0;
}
