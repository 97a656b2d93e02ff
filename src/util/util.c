/* util.c - clocks, CPU count, message formatting and logging helpers. */
#define _GNU_SOURCE
#include <sys/stat.h>

#include "util/util.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The CPU quota of our cgroup in cores (rounded up), or 0 when none is set:
 * cgroup v2's cpu.max ("quota period" or "max period"), else v1's
 * cpu.cfs_quota_us / cpu.cfs_period_us (-1: none). */
static int cgroup_cores(void)
{
	long long quota = -1, period = 0;
	FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
	if (f) {
		char q[32];
		if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max"))
			quota = atoll(q);
		fclose(f);
	} else if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r"))) {
		if (fscanf(f, "%lld", &quota) != 1)
			quota = -1;
		fclose(f);
		if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r"))) {
			if (fscanf(f, "%lld", &period) != 1)
				period = 0;
			fclose(f);
		}
	}
	if (quota <= 0 || period <= 0)
		return 0;
	return (int)((quota + period - 1) / period);
}

int rf_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		pthread_setname_np(*t, name); /* fails only for names too long: ours are not */
	return -r;
}

int rf_cpu_count(void)
{
	int n = 0;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (int)c : 1;
	}
	int q = cgroup_cores();
	return q > 0 && q < n ? q : n;
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
