/* cache.c - the index cache: an index written to a file so that later runs
 * load it instead of walking the tree, and notice when the tree changed.
 *
 * Format (native byte order, version 2): magic "RFINDEX\0", u32 version,
 * u32 any_name, u64 count, u64 paths_len, u32 nclasses, u32 nstamps,
 * u32 has_weights, then strings as u32 length + bytes: source, root,
 * classes, and per stamp its path + i64 mtime_sec + i64 mtime_nsec +
 * u64 ino; then count 24-byte records, the path arena, count doubles of
 * sampling weights when has_weights (a manifest's third column), and a u64
 * checksum of everything before it. (Version 1 had no weights; such a cache
 * is walked again and rewritten.)
 *
 * Staleness: adding, removing or renaming a file changes its directory's
 * mtime; every directory walked is recorded and checked at load (for a
 * manifest, the manifest file itself). A file rewritten in place does not
 * change its directory: the ring thread checks each file's size as it reads
 * it (a changed size fails that sample, with the reason). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "ringfeed.h"
#include "sample/order.h"
#include "util/util.h"

#define CACHE_MAGIC "RFINDEX"
#define CACHE_VERSION 2u

typedef struct writer {
	FILE *f;
	uint64_t sum;
	int ok;
} writer;

static void put(writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		w->sum = rf_mix64(w->sum ^ b[i]) + i; /* slow per byte, fine for metadata */
	if (w->ok && fwrite(p, 1, n, w->f) != n)
		w->ok = 0;
}

/* The bulk arrays get a faster sum: 8 bytes at a time. */
static void put_bulk(writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t x;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&x, b + i, 8);
		w->sum = rf_mix64(w->sum ^ x);
	}
	for (; i < n; i++)
		w->sum = rf_mix64(w->sum ^ b[i]);
	if (w->ok && fwrite(p, 1, n, w->f) != n)
		w->ok = 0;
}

static void put_str(writer *w, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	put(w, &n, sizeof(n));
	put(w, s, n);
}

int rf_index_cache_write(const rf_index *idx, const char *source, const char *path, char *err,
			 size_t errlen)
{
	char *tmp;
	if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	writer w = { .f = fopen(tmp, "wbe"), .sum = 0x726676696478ull, .ok = 1 };
	if (!w.f) {
		int e = errno;
		rf_fmt(err, errlen, "index cache '%s': %s", tmp, strerror(e));
		free(tmp);
		return -e;
	}
	uint32_t version = CACHE_VERSION, any = (uint32_t)idx->any_name;
	uint64_t count = idx->count, plen = idx->paths_len;
	uint32_t ncl = (uint32_t)idx->nclasses, nst = (uint32_t)idx->nstamps;
	uint32_t has_weights = idx->weights != NULL;
	put(&w, CACHE_MAGIC, 8);
	put(&w, &version, 4);
	put(&w, &any, 4);
	put(&w, &count, 8);
	put(&w, &plen, 8);
	put(&w, &ncl, 4);
	put(&w, &nst, 4);
	put(&w, &has_weights, 4);
	put_str(&w, source);
	put_str(&w, idx->root);
	for (uint32_t i = 0; i < ncl; i++)
		put_str(&w, idx->classes[i]);
	for (uint32_t i = 0; i < nst; i++) {
		const rf_index_stamp *s = &idx->stamps[i];
		put_str(&w, s->path);
		put(&w, &s->mtime_sec, 8);
		put(&w, &s->mtime_nsec, 8);
		put(&w, &s->ino, 8);
	}
	put_bulk(&w, idx->entries, count * sizeof(rf_index_entry));
	put_bulk(&w, idx->paths, plen);
	if (has_weights)
		put_bulk(&w, idx->weights, count * sizeof(double));
	uint64_t sum = w.sum;
	if (w.ok && fwrite(&sum, 1, 8, w.f) != 8)
		w.ok = 0;
	if (fclose(w.f) != 0)
		w.ok = 0;
	int ret = 0;
	if (!w.ok || rename(tmp, path) != 0) {
		ret = -errno;
		rf_fmt(err, errlen, "index cache '%s': %s", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return ret;
}

typedef struct reader {
	const uint8_t *p, *end;
	uint64_t sum;
	int ok;
} reader;

static const void *get(reader *r, size_t n, int bulk)
{
	if (!r->ok || (size_t)(r->end - r->p) < n) {
		r->ok = 0;
		return NULL;
	}
	const uint8_t *b = r->p;
	if (bulk) {
		uint64_t x;
		size_t i = 0;
		for (; i + 8 <= n; i += 8) {
			memcpy(&x, b + i, 8);
			r->sum = rf_mix64(r->sum ^ x);
		}
		for (; i < n; i++)
			r->sum = rf_mix64(r->sum ^ b[i]);
	} else {
		for (size_t i = 0; i < n; i++)
			r->sum = rf_mix64(r->sum ^ b[i]) + i;
	}
	r->p += n;
	return b;
}

static uint64_t get_u(reader *r, size_t n)
{
	uint64_t v = 0;
	const void *p = get(r, n, 0);
	if (p)
		memcpy(&v, p, n);
	return v;
}

static char *get_str(reader *r)
{
	uint32_t n = (uint32_t)get_u(r, 4);
	const char *s = get(r, n, 0);
	return s ? strndup(s, n) : NULL;
}

int rf_index_cache_load(rf_index *idx, const char *source, int any_name, const char *path,
			char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		rf_fmt(err, errlen, "index cache '%s': %s", path, strerror(e));
		return e == ENOENT ? 1 : -e;
	}
	struct stat st;
	uint8_t *buf = NULL;
	int ret = -EIO;
	if (fstat(fd, &st) != 0 || !(buf = malloc((size_t)st.st_size ? (size_t)st.st_size : 1)))
		goto out;
	for (size_t got = 0; got < (size_t)st.st_size;) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	reader r = { buf, buf + st.st_size, 0x726676696478ull, 1 };
	rf_index t;
	memset(&t, 0, sizeof(t));
	t.root_fd = -1;
	const char *magic = get(&r, 8, 0);
	uint32_t version = (uint32_t)get_u(&r, 4), any = (uint32_t)get_u(&r, 4);
	if (!magic || memcmp(magic, CACHE_MAGIC, 8) || version != CACHE_VERSION) {
		rf_fmt(err, errlen, "index cache '%s': not an index cache of version %u", path,
		       CACHE_VERSION);
		ret = RF_EINDEX;
		goto out;
	}
	uint64_t count = get_u(&r, 8), plen = get_u(&r, 8);
	uint32_t ncl = (uint32_t)get_u(&r, 4), nst = (uint32_t)get_u(&r, 4);
	uint32_t has_weights = (uint32_t)get_u(&r, 4);
	char *src = get_str(&r);
	t.root = get_str(&r);
	int same = src && !strcmp(src, source) && any == (uint32_t)any_name;
	free(src);
	t.any_name = (int)any;
	if (ncl && r.ok && ncl < (1u << 24)) {
		t.classes = calloc(ncl, sizeof(char *));
		for (uint32_t i = 0; t.classes && i < ncl; i++)
			t.classes[t.nclasses++] = get_str(&r);
	}
	if (nst && r.ok && nst < (1u << 28)) {
		t.stamps = calloc(nst, sizeof(*t.stamps));
		t.cap_stamps = nst;
		for (uint32_t i = 0; t.stamps && i < nst; i++) {
			rf_index_stamp *s = &t.stamps[t.nstamps++];
			s->path = get_str(&r);
			s->mtime_sec = (int64_t)get_u(&r, 8);
			s->mtime_nsec = (int64_t)get_u(&r, 8);
			s->ino = get_u(&r, 8);
		}
	}
	const void *ents = count < (1ull << 40) ? get(&r, count * sizeof(rf_index_entry), 1) : NULL;
	const void *paths = get(&r, plen, 1);
	const void *weights = has_weights && count < (1ull << 40)
				      ? get(&r, count * sizeof(double), 1) : NULL;
	uint64_t want = r.sum, sum = get_u(&r, 8);
	if (!r.ok || !ents || !paths || (has_weights && !weights) || has_weights > 1 ||
	    sum != want || r.p != r.end || !t.root) {
		rf_fmt(err, errlen, "index cache '%s': truncated or corrupt", path);
		ret = RF_EINDEX;
		goto fail;
	}
	if (!same) {
		rf_fmt(err, errlen, "index cache '%s': built from another source or mode", path);
		ret = 1;
		goto fail;
	}
	t.root_fd = open(t.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t.root_fd < 0) {
		rf_fmt(err, errlen, "index cache '%s': root '%s': %s", path, t.root, strerror(errno));
		ret = 1;
		goto fail;
	}
	for (size_t i = 0; i < t.nstamps; i++) {
		const rf_index_stamp *s = &t.stamps[i];
		struct stat now;
		int dfd = s->path[0] == '/' ? AT_FDCWD : t.root_fd;
		if (!s->path || fstatat(dfd, s->path, &now, s->path[0] ? 0 : AT_EMPTY_PATH) != 0 ||
		    now.st_mtim.tv_sec != s->mtime_sec || now.st_mtim.tv_nsec != s->mtime_nsec ||
		    (uint64_t)now.st_ino != s->ino) {
			rf_fmt(err, errlen, "index cache '%s': '%s' changed since it was written", path,
			       s->path && s->path[0] ? s->path : t.root);
			ret = 1;
			goto fail;
		}
	}
	t.entries = malloc(count ? count * sizeof(rf_index_entry) : 1);
	t.paths = malloc(plen ? plen : 1);
	if (has_weights)
		t.weights = malloc(count ? count * sizeof(double) : 1);
	if (!t.entries || !t.paths || (has_weights && !t.weights)) {
		ret = -ENOMEM;
		goto fail;
	}
	memcpy(t.entries, ents, count * sizeof(rf_index_entry));
	memcpy(t.paths, paths, plen);
	if (has_weights)
		memcpy(t.weights, weights, count * sizeof(double));
	t.count = t.cap = count;
	t.paths_len = t.paths_cap = plen;
	for (size_t i = 0; i < count; i++) /* the arena must hold every path */
		if (t.entries[i].path_off + t.entries[i].path_len >= plen) {
			rf_fmt(err, errlen, "index cache '%s': corrupt record %zu", path, i);
			ret = RF_EINDEX;
			goto fail;
		}
	*idx = t;
	ret = 0;
	goto out;
fail:
	rf_index_free(&t);
out:
	free(buf);
	close(fd);
	return ret;
}
