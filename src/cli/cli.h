/* cli.h - the ringfeed command's subcommands and argument helpers. */
#ifndef RF_CLI_H
#define RF_CLI_H

#include <stdint.h>

int cmd_gen(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_index(int argc, char **argv);

/* Strict number parsing for option values: the whole string must be a number
 * in [lo, hi]. On failure prints "ringfeed OPT: ..." and returns -1. */
int cli_int(const char *opt, const char *s, long long lo, long long hi, long long *out);
int cli_u64(const char *opt, const char *s, uint64_t *out);
int cli_float(const char *opt, const char *s, double lo, double hi, float *out);
/* "R,G,B": three numbers. */
int cli_float3(const char *opt, const char *s, float out[3]);

/* Prints "ringfeed CMD: message" to stderr and returns 2 (usage) or 1. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
