/* util.c - clocks, CPU count, message formatting and logging helpers. */
#define _GNU_SOURCE
#include <sys/stat.h>

#include "util/util.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int rf_cpu_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		int n = CPU_COUNT(&set);
		if (n > 0)
			return n;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

void rf_fmt(char *buf, size_t len, const char *fmt, ...)
{
	if (!buf || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void rf_log(rf_log_level threshold, rf_log_level level, const char *fmt, ...)
{
	static const char *names[] = { "", "error", "warning", "info" };
	if (level > threshold || level <= RF_LOG_NONE)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "ringfeed: %s: %s\n", names[level], line);
}

const char *rf_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFSOCK: return "a socket";
	case S_IFLNK: return "a symbolic link";
	default: return "not a file";
	}
}
