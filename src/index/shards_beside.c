/* shards_beside.c - a local shard source's index object: the
 * ringfeed.index that `ringfeed pack` writes beside its shards (or that
 * `ringfeed index -o DIR/ringfeed.index` put there), loaded instead of
 * scanning every shard's headers (the scan reads all of a small-file
 * pack's bytes: 2.7 GB for 200k samples, before the first batch).
 *
 * It is believed only when it could not have been planted and still
 * describes the shards on disk, as a remote source's index object is
 * checked (rfi_index_cache_adopt: same shard names, each shard's size as
 * the server says it now):
 *   - the file is a regular file opened without following a link and
 *     without waiting on a FIFO, owned by the running user, by root or by
 *     the owner of the shards' folder (who could rewrite the shards
 *     anyway), and writable by no one else (group or others), as the node
 *     cache's files are (src/cache/node_cache.c);
 *   - it lists the folder's shards, by name and in order, in this mode;
 *   - each shard is a regular file of the size the index recorded, last
 *     modified no later than the index itself was written (pack writes
 *     the index after its shards; a shard rewritten since is newer). The
 *     pack's index holds no stamps (two packs of one source write the same
 *     bytes), so the index file's own mtime is the mark.
 * Anything else: the reason is said (which shard, what changed) and the
 * shards are scanned, as a remote source does with an index object of
 * other shards. A folder whose pack was interrupted (its marker) is never
 * trusted: the scan says so. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "index/pack_marker.h"
#include "util/util.h"

static int newer(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec : a->tv_nsec > b->tv_nsec;
}

/* Whether the opened index (st) could only have been written by someone
 * who could rewrite the shards (folder: the shards' folder). @return : 1;
 * or 0 with why set. */
static int trusted(const struct stat *st, const struct stat *folder, char *why, size_t len)
{
	uid_t me = geteuid();
	if (!S_ISREG(st->st_mode))
		rfi_fmt(why, len, "it is %s, not a regular file", rfi_file_kind(st->st_mode));
	else if (st->st_uid != me && st->st_uid != 0 && st->st_uid != folder->st_uid)
		rfi_fmt(why, len, "it belongs to uid %u, not to this user (uid %u), root or the "
		       "folder's owner (uid %u)", (unsigned)st->st_uid, (unsigned)me,
		       (unsigned)folder->st_uid);
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		rfi_fmt(why, len, "it is writable by %s (mode %04o)",
		       st->st_mode & S_IWOTH ? "every user" : "its group",
		       (unsigned)(st->st_mode & 07777));
	else
		return 1;
	return 0;
}

/* Each shard of t (the index, written at written) against the file system.
 * @return : 1 when every one matches; 0 with why naming the first that
 * does not. */
static int shards_match(const rf_index *t, int root_fd, const struct timespec *written,
			char *why, size_t len)
{
	for (size_t i = 0; i < t->nshards; i++) {
		struct stat st;
		const char *name = t->shards[i];
		if (fstatat(root_fd, name, &st, 0) != 0) {
			rfi_fmt(why, len, "shard %s: %s", name, strerror(errno));
			return 0;
		}
		if (!S_ISREG(st.st_mode)) {
			rfi_fmt(why, len, "shard %s: not a regular file (%s)", name,
			       rfi_file_kind(st.st_mode));
			return 0;
		}
		if ((uint64_t)st.st_size != t->shard_sizes[i]) {
			rfi_fmt(why, len, "shard %s: %llu bytes, %llu when it was indexed", name,
			       (unsigned long long)st.st_size,
			       (unsigned long long)t->shard_sizes[i]);
			return 0;
		}
		if (newer(&st.st_mtim, written)) {
			rfi_fmt(why, len, "shard %s: modified after the index was written", name);
			return 0;
		}
	}
	return 1;
}

/* Opens DIR/ringfeed.index (root_fd: DIR) and checks who could have
 * written it. @return : its descriptor with *st set; -ENOENT (none there:
 * nothing to say); or another negative errno with why set. */
static int open_beside(int root_fd, struct stat *st, char *why, size_t len)
{
	struct stat folder;
	int fd = openat(root_fd, RF_INDEX_OBJECT_NAME,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP)
			rfi_fmt(why, len, "it is a symbolic link (not followed)");
		else
			rfi_fmt(why, len, "%s", strerror(e));
		return -e;
	}
	if (fstat(fd, st) != 0 || fstat(root_fd, &folder) != 0) {
		int e = errno;
		rfi_fmt(why, len, "%s", strerror(e));
		close(fd);
		return -e;
	}
	if (!trusted(st, &folder, why, len)) {
		close(fd);
		return -EPERM;
	}
	int fl = fcntl(fd, F_GETFL); /* a regular file: reads may block again */
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int rfi_index_adopt_beside(rf_index *idx, int any_name, rf_log_level log_level)
{
	if (idx->urls || idx->root_fd < 0 || !idx->nshards)
		return 1;
	char err[512], why[512], path[PATH_MAX + 32];
	rfi_fmt(path, sizeof(path), "%s/%s", idx->root, RF_INDEX_OBJECT_NAME);
	if (rfi_index_check_shards_complete(idx, err, sizeof(err)))
		return 1; /* an interrupted pack: the scan says so */
	struct stat st;
	int fd = open_beside(idx->root_fd, &st, why, sizeof(why));
	if (fd == -ENOENT)
		return 1;
	if (fd < 0) {
		rfi_log(log_level, RF_LOG_WARN, "%s: not used (%s); scanning the shards", path, why);
		return 1;
	}
	rf_index t;
	int ret = rfi_index_cache_of_shards(&t, idx, any_name, fd, path, err, sizeof(err));
	if (ret) { /* of other shards (a source naming some of the pack's): no warning */
		rfi_log(log_level, ret == 1 ? RF_LOG_INFO : RF_LOG_WARN, "%s; scanning the shards", err);
		return 1;
	}
	int same_classes = t.nclasses == idx->nclasses;
	for (int c = 0; same_classes && c < t.nclasses; c++)
		same_classes = !strcmp(t.classes[c], idx->classes[c]);
	for (size_t i = 0; same_classes && i < t.nshards; i++)
		same_classes = t.shard_labels[i] == idx->shard_labels[i];
	if (!same_classes) {
		rfi_log(log_level, RF_LOG_WARN, "%s: not used, its class folders are not the "
		       "source's; scanning the shards", path);
		rfi_index_free(&t);
		return 1;
	}
	if (!t.shard_sizes || !shards_match(&t, idx->root_fd, &st.st_mtim, why, sizeof(why))) {
		rfi_log(log_level, RF_LOG_WARN, "%s: not used, the shards changed since it was "
		       "written (%s); scanning the shards", path,
		       t.shard_sizes ? why : "it records no sizes");
		rfi_index_free(&t);
		return 1;
	}
	/* the source's root and listing; the index's records. Local shards
	 * have no ETags, and the index's stamps (if `ringfeed index` wrote
	 * it) are of wherever it was built. */
	for (size_t i = 0; i < t.nstamps; i++)
		free(t.stamps[i].path);
	free(t.stamps);
	t.stamps = NULL;
	t.nstamps = t.cap_stamps = 0;
	free(t.etags);
	t.etags = NULL;
	free(t.root);
	t.root = idx->root;
	t.root_fd = idx->root_fd;
	t.progress = idx->progress;
	t.progress_user = idx->progress_user;
	idx->root = NULL;
	idx->root_fd = -1;
	rfi_index_free(idx);
	*idx = t;
	return 0;
}
