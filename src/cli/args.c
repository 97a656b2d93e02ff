/* args.c - strict parsing of option values and usage errors for the CLI. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

int cli_int(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "ringfeed: %s: '%s' is not an integer in [%lld, %lld]\n", opt, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_u64(const char *opt, const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "ringfeed: %s: '%s' is not a non-negative integer\n", opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ringfeed %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'ringfeed %s --help'.\n", cmd);
	return 2;
}

int cli_float(const char *opt, const char *s, double lo, double hi, float *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "ringfeed: %s: '%s' is not a number in [%g, %g]\n", opt, s, lo, hi);
		return -1;
	}
	*out = (float)v;
	return 0;
}

int cli_float3(const char *opt, const char *s, float out[3])
{
	const char *p = s;
	for (int i = 0; i < 3; i++) {
		char *end;
		errno = 0;
		double v = strtod(p, &end);
		if (errno || end == p || (i < 2 && *end != ',') || (i == 2 && *end)) {
			fprintf(stderr, "ringfeed: %s: '%s' is not three numbers R,G,B\n", opt, s);
			return -1;
		}
		out[i] = (float)v;
		p = end + 1;
	}
	return 0;
}
