/* cli.h - the ringfeed command's subcommands and argument helpers. */
#ifndef RF_CLI_H
#define RF_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ringfeed.h"

int cmd_gen(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_pack(int argc, char **argv);
/* `ringfeed tune ...` is `ringfeed bench --tune ...` (same options). */
int cmd_tune(int argc, char **argv);
int cmd_state(int argc, char **argv);
/* `ringfeed cache DIR [--clear]`: the node-local cache's contents (cache_cmd.c). */
int cmd_cache(int argc, char **argv);

/* Strict number parsing for option values: the whole string must be a number
 * in [lo, hi]. On failure prints "ringfeed OPT: ..." and returns -1. */
int cli_int(const char *opt, const char *s, long long lo, long long hi, long long *out);
int cli_u64(const char *opt, const char *s, uint64_t *out);
/* A byte count: a number, optionally followed by K, M, G or T (powers of
 * 1024, either case), in [lo, hi]. */
int cli_size(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int cli_float(const char *opt, const char *s, double lo, double hi, float *out);
/* "R,G,B": three numbers. */
int cli_float3(const char *opt, const char *s, float out[3]);
/* An option whose value is one of the names of kind that help texts list
 * (the library's table, rf_enum_entry()): --dtype float16, --io-path pread.
 * @return : 0 with *out set to its value; 2 after a usage error
 * "ringfeed CMD: OPT: expected a, b or c, not 'S'". */
int cli_enum(const char *opt, rf_enum_kind kind, const char *s, int *out);
/* The name of value in kind (rf_enum_name()), or "unknown": for reports. */
const char *cli_enum_name(rf_enum_kind kind, int value);

/* Prints "ringfeed CMD: message" to stderr and returns 2 (usage) or 1. */
/* SIGINT, SIGTERM and SIGHUP from now on set cli_stop_signal (to the
 * signal) instead of ending the process, with SA_RESTART so that writes are
 * not cut short: bench and pack check it between batches or samples, finish
 * cleanly and exit with 128 + the signal. */
extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop_signals(void);
/* "SIGINT", "SIGTERM", "SIGHUP" (a static string). */
const char *cli_signal_name(int sig);

int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "ringfeed COMMAND", the prefix of every message of the command running
 * (set by main before it dispatches; tune runs bench's code under its own name). */
extern const char *cli_name;

/* Writes str as a JSON string (quoted, escaped; bytes that are not UTF-8 as
 * \u00XX): the only way a string reaches --json output. */
void cli_json_str(FILE *f, const char *str);

/* Cores this process may use (affinity mask, cgroup quota), at least 1. */
int cli_cores(void);
/* "2 cores available, Linux 6.18.44 (x86_64)" into buf; returns buf. */
const char *cli_machine_line(char *buf, size_t len);

/* Whether the machine was busy with other work while a measurement ran:
 * the 1-minute load average when it started, and what other processes
 * used of the CPUs meanwhile (/proc/stat's busy time less this process's
 * own, from getrusage). Figures measured beside other work are noisy. */
typedef struct cli_load {
	double t0;               /* now_s() at the start */
	double busy0_s, self0_s; /* all CPUs' busy seconds, this process's CPU seconds */
	double loadavg;          /* 1-minute load average at the start (-1: unknown) */
	int cpus;                /* CPUs /proc/stat counts (online) */
	/* filled by cli_load_end() */
	double others_cores;     /* CPUs' worth that other processes used (-1: unknown) */
	int busy;                /* 1 = busy enough that the figures are noisy */
} cli_load;
void cli_load_start(cli_load *ld);
/* Measures since cli_load_start(); when busy, writes "the machine is busy
 * (...): figures are noisy" into msg (else ""). @return : ld->busy. */
int cli_load_end(cli_load *ld, char *msg, size_t len);

/* "1 thread", "2 threads": n and the word, plural when n != 1, in a static
 * buffer of its own per call site slot (k: 0..3, so that several fit in one
 * printf). */
const char *cli_count(unsigned long long n, const char *word, int k);

/* err, then " (reason)" unless err already says it: one line for a failure. */
void cli_fail(const char *err, int code);
/* The end of a shard writer (pack, gen --tokens) that returned ret: 0 when
 * it succeeded; else says so (stopped by a signal: what was written was
 * removed; failed: err) and returns the exit status (128 + the signal, or 1). */
int cli_writer_status(int ret, const char *err);

/* Saved states and sample ids for `bench` (src/cli/state.c). Each prints
 * "ringfeed CMD: ..." on failure and returns -1. */
/* Reads a state file whole into *buf (malloc'ed, caller frees). */
int cli_state_read(const char *path, void **buf, size_t *len);
/* Saves l's state to path (written to a temporary file, then renamed). */
int cli_state_write(const rf_loader *l, const char *path);
/* One line: the batch's sample ids, space-separated, in slot order. */
int cli_ids_write(FILE *f, const rf_batch *b);

#define RF_CLI_MIN(a, b) ((a) < (b) ? (a) : (b))

/* bench --diagnose (diagnose.c): the stages apart, then the verdict. */
typedef struct diag_opts {
	double step_ms;        /* the simulated training step (0: chosen from the full run) */
	long long batches;     /* batches per stage run */
	int json, progress;
	const char *report;    /* HTML report path, or NULL */
} diag_opts;
int cli_diagnose(const rf_config *cfg, const diag_opts *o);

/* ringfeed tune (tune.c): search threads, io_depth, prefetch (and batch). */
typedef struct tune_opts {
	long long batches;     /* batches per trial (0: 30) */
	int tune_batch;        /* search the batch size too */
	int json, progress;
	const char *report;    /* HTML report path, or NULL */
} tune_opts;
int cli_tune(const rf_config *cfg, const tune_opts *o);

#endif
