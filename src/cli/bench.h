/* bench.h - what `ringfeed bench` was asked for: bench_parse()
 * (bench_parse.c) fills it from the command line, and the run (bench.c),
 * `bench --diagnose` and `tune` take it from there. */
#ifndef RF_CLI_BENCH_H
#define RF_CLI_BENCH_H

#include "ringfeed.h"

typedef struct bench_opts {
	rf_config cfg;          /* the loader's settings; strings point into argv */
	long long max_batches;  /* --batches K (or --after K): stop after K; -1: by epochs */
	long long after;        /* --after K, -1 when not given */
	double step_ms;         /* --step-ms: simulated training step per batch */
	const char *log_path, *report_path, *ids_path, *save_path, *resume_path; /* or NULL */
	int progress;           /* live line on stderr (default: stderr is a terminal) */
	int json;
	int diagnose, tune, tune_batch; /* the modes: bench --diagnose, ringfeed tune */
	int have_epochs;        /* --epochs was given */
	int tokens;             /* --tokens */
} bench_opts;

/* Parses bench's options (argv[0] is the command's name) into *o, which
 * it first fills with the defaults; prints the help text for --help and
 * "ringfeed bench: ..." for a bad option, value or combination.
 * @return : -1 when the run goes on with *o; else the exit status: 0 after
 *           --help, 2 after a usage error. */
int bench_parse(int argc, char **argv, bench_opts *o);

#endif
