/* report.h - the HTML report of `ringfeed bench --diagnose --report FILE`:
 * one self-contained page (inline SVG, no script or file fetched from
 * anywhere) with the charts a person wants. */
#ifndef RF_REPORT_H
#define RF_REPORT_H
#include <stddef.h>
#include <stdint.h>

typedef struct rf_report_stage {
	const char *name;      /* "fetch", "prep", "full", "with consumer" ... */
	double samples_per_s;
} rf_report_stage;

typedef struct rf_report_trial {  /* one configuration `ringfeed tune` tried */
	int threads, io_depth, prefetch, batch;
	double samples_per_s;
} rf_report_trial;

typedef struct rf_report {
	const char *title;           /* e.g. "ringfeed diagnosis: /data/train" */
	const char *verdict;         /* "storage-bound", "decode-bound" or "consumer-bound" */
	const char *explanation;     /* one or two sentences with the numbers behind it */
	const char *machine;         /* "2 cores, kernel 6.18, /dev/vda ext4" etc. */
	const rf_report_stage *stages; size_t nstages;
	const double *batch_wait_ms; size_t nbatches;   /* consumer wait per batch, in order (may be 0 batches) */
	double step_ms;              /* simulated step per batch, 0 if none */
	const rf_report_trial *trials; size_t ntrials;  /* may be 0 */
} rf_report;

/* Writes the page to path. @return : 0, or -errno with err[errlen] naming the file. */
int rf_report_write_html(const char *path, const rf_report *r, char *err, size_t errlen);
#endif
