/* util.c - clocks, CPU count, message formatting and logging helpers. */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <fcntl.h>

#include "util/util.h"

#include <ctype.h>
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

int rfi_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
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

int rfi_cpu_count(void)
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

void rfi_fmt(char *buf, size_t len, const char *fmt, ...)
{
	if (!buf || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void rfi_free_secret(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

char *rfi_strprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s;
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

/* The userinfo's password of the URL whose "://" is at in + at: its first
 * byte in *pw and its end (the '@') in *end. @return : 1 when there is one. */
static int url_password(const char *in, size_t at, size_t *pw, size_t *end)
{
	/* a scheme before "://": a letter, then letters, digits, '+', '-', '.'
	 * (RFC 3986); in a message it may follow such bytes ("3http://",
	 * "--source=http://"): it starts at the first letter */
	size_t s = at;
	while (s > 0 && (isalnum((unsigned char)in[s - 1]) || strchr("+-.", in[s - 1])))
		s--;
	while (s < at && !isalpha((unsigned char)in[s]))
		s++;
	if (s == at)
		return 0;
	/* the authority: up to a '/', '?', '#', a space or a quote (in a
	 * message the URL may be followed by anything); its last '@' ends
	 * the userinfo, whose first ':' starts the password */
	size_t a = at + 3, e = a, last_at = 0, colon = 0;
	for (; in[e] && !strchr("/?#\"' \t\n\r<>`", in[e]); e++) {
		if (in[e] == '@')
			last_at = e;
	}
	if (!last_at)
		return 0;
	for (size_t i = a; i < last_at && !colon; i++)
		if (in[i] == ':')
			colon = i;
	if (!colon)
		return 0;
	*pw = colon + 1;
	*end = last_at;
	return 1;
}

char *rfi_redact(const char *in, char *out, size_t len)
{
	if (!out || !len)
		return out;
	if (!in)
		in = "";
	/* in place: work from a copy of the text */
	char *copy = in == out ? strdup(in) : NULL;
	const char *src = copy ? copy : in;
	if (in == out && !copy) { /* out of memory: the text goes, never a password */
		out[0] = '\0';
		return out;
	}
	size_t o = 0, i = 0;
	while (src[i] && o + 1 < len) {
		size_t pw, end;
		if (!strncmp(src + i, "://", 3) && url_password(src, i, &pw, &end)) {
			/* copy "://" and the user and ':', then "***", then go on at '@' */
			for (; i < pw && o + 1 < len; i++)
				out[o++] = src[i];
			for (const char *m = "***"; *m && o + 1 < len; m++)
				out[o++] = *m;
			i = end;
			continue;
		}
		out[o++] = src[i++];
	}
	out[o] = '\0';
	free(copy);
	return out;
}

char *rfi_redact_dup(const char *in)
{
	size_t n = strlen(in ? in : "") + 4; /* "***" may be longer than the password */
	for (const char *p = in ? in : ""; (p = strstr(p, "://")); p += 3)
		n += 3;
	char *out = malloc(n);
	return out ? rfi_redact(in, out, n) : NULL;
}

void rfi_log(rf_log_level threshold, rf_log_level level, const char *fmt, ...)
{
	static const char *names[] = { "", "error", "warning", "info" };
	if (level > threshold || level <= RF_LOG_NONE)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	rfi_redact(line, line, sizeof(line));
	fprintf(stderr, "ringfeed: %s: %s\n", names[level], line);
}

const char *rfi_file_kind(unsigned mode)
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

int rfi_open_regular(int dirfd, const char *path, const char *what, char *err, size_t errlen)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		rfi_fmt(err, errlen, "%s '%s': %s", what, path, strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		rfi_fmt(err, errlen, "%s '%s': not a regular file (%s)", what, path,
		       rfi_file_kind(st.st_mode));
		close(fd);
		return -EINVAL;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
		int e = errno;
		rfi_fmt(err, errlen, "%s '%s': %s", what, path, strerror(e));
		close(fd);
		return -e;
	}
	return fd;
}

int rfi_grow(uint8_t **p, size_t *cap, size_t need)
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
