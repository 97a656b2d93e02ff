/* out_file.c - output files written whole or not at all (see out_file.h). */
#define _GNU_SOURCE
#include "pack/out_file.h"
#include "rf_config.h" /* RF_TEST_HOOKS */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/pack_marker.h"
#include "util/util.h"

static int fail(rf_out_file *f, const char *what, const char *name, char *err, size_t errlen)
{
	int e = errno;
	rfi_fmt(err, errlen, "%s '%s/%s': %s%s", what, f->dir, name, strerror(e),
	       e == ENOSPC || e == EDQUOT ? " (the output disk is full)" : "");
	return -e;
}

int rfi_out_open(rf_out_file *f, int dirfd, const char *dir, const char *name, char *err,
		size_t errlen)
{
	f->dirfd = dirfd;
	f->dir = dir;
	f->bytes = 0;
	f->fd = -1;
	/* a name cut to fit would be another file's: refuse it (pack --tokens
	 * names its files after the source's, whatever their length) */
	if (snprintf(f->tmp, sizeof(f->tmp), ".%s.tmp", name) >= (int)sizeof(f->tmp)) {
		rfi_fmt(err, errlen, "output file '%s/%s': too long a name (%zu bytes; its temporary "
		       "form .NAME.tmp must fit in %d)", dir, name, strlen(name), NAME_MAX);
		return -ENAMETOOLONG;
	}
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->fd = openat(dirfd, f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (f->fd < 0)
		return fail(f, "creating", f->tmp, err, errlen);
	return 0;
}

int rfi_out_writev(rf_out_file *f, struct iovec *iov, int n, char *err, size_t errlen)
{
	for (;;) {
		while (n > 0 && iov->iov_len == 0) {
			iov++;
			n--;
		}
		if (n == 0)
			return 0;
		ssize_t w = writev(f->fd, iov, n < IOV_MAX ? n : IOV_MAX);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO; /* a regular file that takes nothing: never loop on it */
			return fail(f, "writing", f->tmp, err, errlen);
		}
		f->bytes += (uint64_t)w;
		for (size_t left = (size_t)w; left > 0;) {
			size_t k = RF_MIN(left, iov->iov_len);
			iov->iov_base = (char *)iov->iov_base + k;
			iov->iov_len -= k;
			left -= k;
			if (iov->iov_len == 0) {
				iov++;
				n--;
			}
		}
	}
}

int rfi_out_pwrite(rf_out_file *f, const void *buf, size_t len, uint64_t off, char *err,
		  size_t errlen)
{
	const uint8_t *p = buf;
	while (len) {
		ssize_t w = pwrite(f->fd, p, len, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return fail(f, "writing", f->tmp, err, errlen);
		}
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

#if RF_TEST_HOOKS
/* Test-only (builds with -Dtest_hooks=true): RINGFEED_TEST_PACK_HANG_AFTER=N
 * makes the N-th file this process commits its last: the writer then waits
 * to be killed, so that a test kills a pack mid-write at a known point
 * instead of racing it. */
static void hang_after_commit(void)
{
	static int committed;
	const char *v = getenv("RINGFEED_TEST_PACK_HANG_AFTER");
	if (v && ++committed == atoi(v))
		for (;;)
			pause();
}
#endif

int rfi_out_commit(rf_out_file *f, char *err, size_t errlen)
{
	/* on disk before the rename gives it its name: after a crash the name
	 * holds the whole file or nothing */
	if (fsync(f->fd) != 0) {
		int ret = fail(f, "flushing", f->tmp, err, errlen);
		rfi_out_abort(f);
		return ret;
	}
	int ret = close(f->fd);
	f->fd = -1;
	if (ret != 0 || renameat(f->dirfd, f->tmp, f->dirfd, f->name) != 0) {
		ret = fail(f, ret ? "closing" : "renaming", f->tmp, err, errlen);
		unlinkat(f->dirfd, f->tmp, 0);
		return ret;
	}
	/* the rename itself is on disk once the folder is */
	if (fsync(f->dirfd) != 0)
		return fail(f, "flushing the folder of", f->name, err, errlen);
#if RF_TEST_HOOKS
	hang_after_commit();
#endif
	return 0;
}

void rfi_out_abort(rf_out_file *f)
{
	if (f->fd < 0)
		return;
	close(f->fd);
	f->fd = -1;
	unlinkat(f->dirfd, f->tmp, 0);
}

/* Does name match one of the NULL-terminated patterns? */
static int matches(const char *const *pats, const char *name)
{
	for (; *pats; pats++)
		if (!fnmatch(*pats, name, FNM_PERIOD))
			return 1;
	return 0;
}

int rfi_out_dir_open(const char *dir, const char *const *names, const char *what, int *dirfd,
		    int *made, char *err, size_t errlen)
{
	*made = mkdir(dir, 0755) == 0;
	if (!*made && errno != EEXIST) {
		int e = errno;
		rfi_fmt(err, errlen, "output folder '%s': cannot create it: %s", dir, strerror(e));
		return -e;
	}
	*dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0) {
		int e = errno;
		rfi_fmt(err, errlen, "output folder '%s': %s", dir, strerror(e));
		return -e;
	}
	/* a folder we write in must take files: find out now, not after the
	 * index and the dictionary */
	if (faccessat(*dirfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
		int e = errno;
		rfi_fmt(err, errlen, "output folder '%s': cannot write in it: %s", dir, strerror(e));
		return -e;
	}
	int fd = dup(*dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rfi_fmt(err, errlen, "output folder '%s': %s", dir, strerror(e));
		return -e;
	}
	int ret = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (!strcmp(de->d_name, RF_PACK_MARKER)) { /* said so whatever else is there */
			rfi_fmt(err, errlen, "output folder '%s' holds an interrupted pack (" RF_PACK_MARKER
			       " is there: the pack that wrote it did not finish): remove the folder, or "
			       "its shards and that file, or choose another output folder", dir);
			ret = -EEXIST;
			break;
		}
		if (!ret && matches(names, de->d_name)) {
			rfi_fmt(err, errlen, "output folder '%s' already holds %s ('%s'): remove it "
			       "or choose another output folder", dir, what, de->d_name);
			ret = -EEXIST;
		}
	}
	closedir(d);
	return ret;
}


int rfi_out_mark_begin(int dirfd, const char *dir, char *err, size_t errlen)
{
	static const char text[] = "ringfeed pack is writing this folder. While this file is here, "
				   "the folder is no complete pack\n(if no pack is running, one was "
				   "interrupted): ringfeed refuses to read it.\n";
	rf_out_file f = { .dirfd = dirfd, .dir = dir };
	int fd = openat(dirfd, RF_PACK_MARKER, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fail(&f, "creating", RF_PACK_MARKER, err, errlen);
	ssize_t w = write(fd, text, sizeof(text) - 1);
	int e = w < 0 ? errno : w != (ssize_t)sizeof(text) - 1 ? EIO : fsync(fd) != 0 ? errno : 0;
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && fsync(dirfd) != 0) /* the marker is on disk before any shard can be */
		e = errno;
	if (!e)
		return 0;
	unlinkat(dirfd, RF_PACK_MARKER, 0);
	errno = e;
	return fail(&f, "writing", RF_PACK_MARKER, err, errlen);
}

int rfi_out_mark_end(int dirfd, const char *dir, char *err, size_t errlen)
{
	rf_out_file f = { .dirfd = dirfd, .dir = dir };
	if (unlinkat(dirfd, RF_PACK_MARKER, 0) != 0)
		return fail(&f, "removing", RF_PACK_MARKER, err, errlen);
	if (fsync(dirfd) != 0)
		return fail(&f, "flushing the folder of", RF_PACK_MARKER, err, errlen);
	return 0;
}

/* out resolved into res (PATH_MAX bytes): its nearest existing ancestor by
 * realpath, then the components below it as written. @return : 0 or -1. */
static int resolve_out(const char *out, char *res)
{
	char path[PATH_MAX], tail[PATH_MAX] = "";
	if (snprintf(path, sizeof(path), "%s", out) >= (int)sizeof(path) || !path[0])
		return -1;
	for (size_t n = strlen(path); n > 1 && path[n - 1] == '/';)
		path[--n] = '\0';
	while (!realpath(path, res)) {
		if (errno != ENOENT)
			return -1;
		char *slash = strrchr(path, '/');
		char t[PATH_MAX];
		if (snprintf(t, sizeof(t), "%s%s%s", slash ? slash + 1 : path, tail[0] ? "/" : "",
			     tail) >= (int)sizeof(t))
			return -1;
		memcpy(tail, t, sizeof(t));
		if (!slash)
			strcpy(path, ".");
		else if (slash == path)
			path[1] = '\0'; /* "/" */
		else
			for (*slash = '\0'; slash > path + 1 && slash[-1] == '/';)
				*--slash = '\0';
	}
	size_t n = strlen(res);
	if (tail[0] && snprintf(res + n, PATH_MAX - n, "%s%s", n > 1 ? "/" : "", tail) >=
			       (int)(PATH_MAX - n))
		return -1;
	return 0;
}

rf_out_place rfi_out_dir_place(const char *out, const char *in)
{
	char o[PATH_MAX], i[PATH_MAX];
	if (resolve_out(out, o) || !realpath(in, i))
		return RF_OUT_APART;
	size_t n = strlen(i);
	if (!strcmp(o, i))
		return RF_OUT_SAME;
	/* below in: in and a '/' start it ("/" itself ends in one) */
	if (!strncmp(o, i, n) && (o[n] == '/' || i[n - 1] == '/'))
		return RF_OUT_INSIDE;
	return RF_OUT_APART;
}
