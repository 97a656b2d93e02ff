/* util.c - clocks, CPU count, message formatting and logging helpers. */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <fcntl.h>

#include "util/util.h"

#include <errno.h>
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

/* What a new thread runs first: it names itself (a prctl: naming another
 * thread would open a /proc file, which can fail for want of descriptors). */
typedef struct thread_start {
	void *(*fn)(void *);
	void *arg;
	char name[16];
} thread_start;

static void *named(void *p)
{
	thread_start s = *(thread_start *)p;
	free(p);
	pthread_setname_np(pthread_self(), s.name);
	return s.fn(s.arg);
}

int rf_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	thread_start *s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fn = fn;
	s->arg = arg;
	snprintf(s->name, sizeof(s->name), "%s", name);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(t, NULL, named, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		free(s);
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

void rf_free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

char *rf_strprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
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

int rf_open_regular(int dirfd, const char *path, const char *what, char *err, size_t errlen)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		rf_fmt(err, errlen, "%s '%s': %s", what, path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		rf_fmt(err, errlen, "%s '%s': not a regular file (%s)", what, path,
		       rf_file_kind(st.st_mode));
		close(fd);
		return -EINVAL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int e = errno;
		rf_fmt(err, errlen, "%s '%s': %s", what, path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int rf_grow(uint8_t **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	uint8_t *n = realloc(*p, need);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = need;
	return 0;
}
