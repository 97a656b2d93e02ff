/* args.c - strict parsing of option values and usage errors for the CLI,
 * and the stop-signal flag that bench and pack share. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cli_int(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: %s: '%s' is not an integer in [%lld, %lld]\n", cli_name, opt, s, lo, hi);
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
		fprintf(stderr, "%s: %s: '%s' is not a non-negative integer\n", cli_name, opt, s);
		return -1;
	}
	*out = v;
	return 0;
}

int cli_size(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;
	const char *units = "KMGT", *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
	if (u) {
		shift = 10 * (int)(u - units + 1);
		end++;
	}
	if (errno || end == s || *end || s[0] == '-' || (shift && v > (UINT64_MAX >> shift)) ||
	    (v << shift) < lo || (v << shift) > hi) {
		fprintf(stderr, "%s: %s: '%s' is not a size in [%llu, %llu] (suffixes K, M, G, T)\n",
			cli_name, opt, s, (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = (uint64_t)v << shift;
	return 0;
}

const char *cli_name = "ringfeed";

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	(void)cmd; /* the command running names itself: tune runs bench's parser */
	va_list ap;
	fprintf(stderr, "%s: ", cli_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", cli_name);
	return 2;
}

const char *cli_count(unsigned long long n, const char *word, int k)
{
	static char buf[4][64];
	size_t w = strlen(word);
	int es = (w >= 2 && !strcmp(word + w - 2, "ch")) || (w && strchr("sx", word[w - 1]));
	snprintf(buf[k & 3], sizeof(buf[0]), "%llu %s%s", n, word, n == 1 ? "" : es ? "es" : "s");
	return buf[k & 3];
}

void cli_fail(const char *err, int code)
{
	const char *why = rf_strerror(code);
	if (strstr(err, why))
		fprintf(stderr, "%s: %s\n", cli_name, err);
	else
		fprintf(stderr, "%s: %s (%s)\n", cli_name, err, why);
}

int cli_writer_status(int ret, const char *err)
{
	if (ret == -EINTR && cli_stop_signal) {
		fprintf(stderr, "%s: stopped by %s; the shards written so far were removed\n", cli_name,
			cli_signal_name(cli_stop_signal));
		return 128 + cli_stop_signal;
	}
	if (ret) {
		cli_fail(err, ret);
		return 1;
	}
	return 0;
}

int cli_float(const char *opt, const char *s, double lo, double hi, float *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "%s: %s: '%s' is not a number in [%g, %g]\n", cli_name, opt, s, lo, hi);
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
			fprintf(stderr, "%s: %s: '%s' is not three numbers R,G,B\n", cli_name, opt, s);
			return -1;
		}
		out[i] = (float)v;
		p = end + 1;
	}
	return 0;
}

volatile sig_atomic_t cli_stop_signal;

static void on_stop_signal(int sig)
{
	cli_stop_signal = sig;
}

void cli_catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART; /* a write of --ids, --log or a shard is not cut short */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a closed terminal or ssh session: stop as cleanly as on SIGTERM, not
	 * die with half a pack on disk */
	sigaction(SIGHUP, &sa, NULL);
}

const char *cli_signal_name(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
									  : "a signal";
}

/* kind's listed names as "a, b or c" into buf[len]. */
static void choices(rf_enum_kind kind, char *buf, size_t len)
{
	size_t count = 0, k = 0, at = 0;
	int listed;
	const char *name;
	for (size_t i = 0; rf_enum_entry(kind, i, NULL, &listed); i++)
		count += (size_t)listed;
	buf[0] = '\0';
	for (size_t i = 0; (name = rf_enum_entry(kind, i, NULL, &listed)); i++) {
		if (!listed)
			continue;
		int n = snprintf(buf + at, len - at, "%s%s", k == 0 ? "" : k + 1 == count ? " or " : ", ",
				 name);
		if (n < 0 || (size_t)n >= len - at)
			return;
		at += (size_t)n;
		k++;
	}
}

int cli_enum(const char *opt, rf_enum_kind kind, const char *s, int *out)
{
	int value, listed;
	const char *name;
	for (size_t i = 0; (name = rf_enum_entry(kind, i, &value, &listed)); i++)
		if (listed && !strcmp(name, s)) {
			*out = value;
			return 0;
		}
	char expected[256];
	choices(kind, expected, sizeof(expected));
	return cli_usage_error(cli_name, "%s: expected %s, not '%s'", opt, expected, s);
}

const char *cli_enum_name(rf_enum_kind kind, int value)
{
	const char *name = rf_enum_name(kind, value);
	return name ? name : "unknown";
}
