/* pack_marker.c - refuses a folder that holds an unfinished pack (see
 * pack_marker.h): one check, made once per distinct shard folder when an
 * index of shards is built. */
#define _GNU_SOURCE
#include "index/pack_marker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ringfeed.h"
#include "util/util.h"

int rfi_index_check_complete(int dirfd, const char *folder, char *err, size_t errlen)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/" RF_PACK_MARKER, folder) >= (int)sizeof(path))
		return 0; /* no such path can be opened either: the shard's own open says so */
	struct stat st;
	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	rfi_fmt(err, errlen, "%s: an incomplete ringfeed pack (it holds " RF_PACK_MARKER ": the pack "
	       "that wrote it was interrupted before it finished; remove the folder, or its shards "
	       "and that file, and run ringfeed pack again)", folder);
	return RF_EINDEX;
}

/* The length of the folder part of a shard path ("a/b/x.tar": 3; "x.tar": 0;
 * "/x.tar": 1, the root). */
static size_t dir_len(const char *shard)
{
	const char *slash = strrchr(shard, '/');
	return !slash ? 0 : slash == shard ? 1 : (size_t)(slash - shard);
}

static int cmp_dir(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t nx = dir_len(x), ny = dir_len(y);
	int c = memcmp(x, y, nx < ny ? nx : ny);
	return c ? c : (nx > ny) - (nx < ny);
}

int rfi_index_check_shards_complete(const rf_index *idx, char *err, size_t errlen)
{
	size_t n = idx->nshards;
	if (!n)
		return 0;
	/* sorted by folder, so that each folder is looked at once whatever the
	 * order of a list */
	const char **by_dir = malloc(n * sizeof(*by_dir));
	if (!by_dir)
		return -ENOMEM;
	memcpy(by_dir, idx->shards, n * sizeof(*by_dir));
	qsort(by_dir, n, sizeof(*by_dir), cmp_dir);
	int ret = 0;
	size_t root_len = strlen(idx->root);
	while (root_len > 1 && idx->root[root_len - 1] == '/')
		root_len--;
	const char *sep = idx->root[root_len - 1] == '/' ? "" : "/"; /* the root is "/" */
	for (size_t i = 0; i < n && !ret; i++) {
		if (i && !cmp_dir(&by_dir[i - 1], &by_dir[i]))
			continue;
		const char *sh = by_dir[i];
		size_t len = dir_len(sh);
		char folder[PATH_MAX];
		if (sh[0] == '/') /* an absolute path in a list: the root plays no part */
			rfi_fmt(folder, sizeof(folder), "%.*s", (int)len, sh);
		else if (len)
			rfi_fmt(folder, sizeof(folder), "%.*s%s%.*s", (int)root_len, idx->root, sep,
			       (int)len, sh);
		else
			rfi_fmt(folder, sizeof(folder), "%.*s", (int)root_len, idx->root);
		ret = rfi_index_check_complete(AT_FDCWD, folder, err, errlen);
	}
	free(by_dir);
	return ret;
}
