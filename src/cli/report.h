/* report.h - the HTML report of `ringfeed bench --diagnose --report FILE`
 * and `ringfeed tune --report FILE`:
 * one self-contained page (inline SVG, no script or file fetched from
 * anywhere) with the charts a person wants. */
#ifndef RF_REPORT_H
#define RF_REPORT_H
#include <stddef.h>
#include <stdint.h>

typedef struct rf_report_stage {
	const char *name;      /* "fetch", "prep", "full", "with consumer" ... */
	double samples_per_s;  /* the figure (the median of repeated runs) */
	double lo, hi;         /* repeated runs: the lowest and highest (a whisker);
	                        * 0, 0 for one figure */
} rf_report_stage;

typedef struct rf_report_trial {  /* one configuration `ringfeed tune` tried */
	int threads, io_depth, prefetch, batch;
	double samples_per_s;
} rf_report_trial;

typedef struct rf_report {
	const char *title;           /* e.g. "ringfeed diagnosis: /data/train" */
	const char *verdict;         /* "storage-bound", "decode-bound", "consumer-bound", "tuned" ... */
	const char *explanation;     /* one or two sentences with the numbers behind it */
	const char *machine;         /* "2 cores, kernel 6.18, /dev/vda ext4" etc. */
	const rf_report_stage *stages; size_t nstages;
	const double *batch_wait_ms; size_t nbatches;   /* consumer wait per batch, in order (may be 0 batches) */
	double step_ms;              /* simulated step per batch, 0 if none */
	const rf_report_trial *trials; size_t ntrials;  /* may be 0 */
	/* The bar chart's heading and note; NULL: "Throughput by stage" and
	 * what a stage is (tune titles its finalists' chart its own way). */
	const char *stages_title, *stages_note;
	const char *warning;         /* shown under the verdict when not NULL (a busy machine) */
	/* Further findings, a paragraph each, under notes_title (may be 0) */
	const char *notes_title;
	const char *const *notes; size_t nnotes;
} rf_report;
/* A section whose data is empty (no stages, no batches, no trials, no
 * notes) is left out of the page, not drawn empty. */

/* Writes the page to path. @return : 0, or -errno with err[errlen] naming the file. */
int rfi_report_write_html(const char *path, const rf_report *r, char *err, size_t errlen);
#endif
