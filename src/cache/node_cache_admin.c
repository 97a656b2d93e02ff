/* node_cache_admin.c - rfi_cache_stat() and rfi_cache_clear(): what a node-local
 * cache folder holds, and emptying it (`ringfeed cache DIR [--clear]`).
 *
 * The cold side of the cache, apart from the ring thread's node_cache.c:
 * the two share nothing but the folder's format (node_cache.h), so these run in any
 * process, beside live loaders, and never get in their way. A segment a
 * writer holds (flock LOCK_EX) is counted as being written and never
 * deleted; a segment deleted here stays readable through the descriptors
 * loaders already have open (as eviction's do), so no read in flight is torn.
 *
 * Nothing below DIR is reached through a symbolic link: DIR is opened as
 * the caller names it, everything inside with O_NOFOLLOW, and names are
 * only ever unlinked relative to the segments folder's descriptor, so a
 * link planted in the folder never makes clear delete, or stat read,
 * anything outside it. Every file is opened O_NONBLOCK and used only when
 * fstat says a regular file (a FIFO planted there never hangs a look), and
 * read in bounded amounts: an S.idx up to RF_CACHE_IDX_MAX, what a writer
 * writes at most (a sparse 3 GiB one costs no more than that).
 *
 * Threads: none of their own, no state between calls; any thread. */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/node_cache.h"
#include "util/hash.h"
#include "util/util.h"

#define SEGMENTS "segments"
#define DATA_EXT ".data"
#define IDX_EXT ".idx"
/* Records read per pread of an S.idx. */
#define REC_CHUNK 1024

/* The folders of one cache, open: DIR/ringfeed-cache and its segments/. */
typedef struct cache_dirs {
	int cache;    /* DIR/ringfeed-cache, or -1 */
	int segs;     /* DIR/ringfeed-cache/segments, or -1 (none yet: an empty cache) */
} cache_dirs;

static void dirs_close(cache_dirs *d)
{
	if (d->cache >= 0)
		close(d->cache);
	if (d->segs >= 0)
		close(d->segs);
	d->cache = d->segs = -1;
}

/* A folder inside parent, never through a link. @return : its descriptor;
 * -ENOENT (not there); or another negative errno with err set, naming
 * path (-ENOTDIR: a link or another kind of file). */
static int open_subdir(int parent, const char *name, const char *path, char *err, size_t errlen)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	int e = errno;
	if (e == ENOENT)
		return -ENOENT;
	if (e == ELOOP || e == ENOTDIR) {
		rfi_fmt(err, errlen, "cache folder '%s': not a directory (a symbolic link is not "
		       "followed)", path);
		return -ENOTDIR;
	}
	rfi_fmt(err, errlen, "cache folder '%s': %s", path, strerror(e));
	return -e;
}

/* Whether cache (DIR/ringfeed-cache) holds our FORMAT, exactly.
 * @return : 1 it does; 0 it is missing, or says something else (not ours:
 * left alone), or is not a regular file; a negative errno with err set
 * when it cannot be read. */
static int format_is_ours(int cache, const char *dir, char *err, size_t errlen)
{
	int fd = openat(cache, "FORMAT", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT || e == ELOOP)
			return 0;
		rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/FORMAT': %s", dir, strerror(e));
		return -e;
	}
	struct stat st;
	char buf[sizeof(RF_CACHE_FORMAT) + 1]; /* one byte more: a longer text is not ours */
	ssize_t n = 0;
	int ret = 0;
	if (fstat(fd, &st) != 0) {
		ret = -errno;
	} else if (S_ISREG(st.st_mode)) {
		do
			n = pread(fd, buf, sizeof(buf), 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			ret = -errno;
	}
	close(fd);
	if (ret) {
		rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/FORMAT': %s", dir, strerror(-ret));
		return ret;
	}
	return S_ISREG(st.st_mode) && (size_t)n == strlen(RF_CACHE_FORMAT) &&
	       !memcmp(buf, RF_CACHE_FORMAT, (size_t)n);
}

/* Opens DIR's cache. @return : 1 with d's folders open (d->segs -1 when
 * there is no segments/ yet); 0 when DIR holds no cache of ours (nothing
 * open), *why saying which way; or a negative errno with err set (-ENOENT:
 * DIR itself does not exist). */
enum no_cache { NO_FOLDER, NO_FORMAT };
static int cache_open(const char *dir, cache_dirs *d, enum no_cache *why, char *err, size_t errlen)
{
	d->cache = d->segs = -1;
	int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* DIR: as named, links and all */
	if (top < 0) {
		int e = errno;
		rfi_fmt(err, errlen, "cache folder '%s': %s", dir, strerror(e));
		return -e;
	}
	char path[4096];
	rfi_fmt(path, sizeof(path), "%s/" RF_CACHE_DIR, dir);
	int fd = open_subdir(top, RF_CACHE_DIR, path, err, errlen);
	close(top);
	if (fd == -ENOENT) {
		*why = NO_FOLDER;
		return 0;
	}
	if (fd < 0)
		return fd;
	d->cache = fd;
	int ours = format_is_ours(d->cache, dir, err, errlen);
	if (ours <= 0) {
		dirs_close(d);
		*why = NO_FORMAT;
		return ours;
	}
	rfi_fmt(path, sizeof(path), "%s/" RF_CACHE_DIR "/" SEGMENTS, dir);
	fd = open_subdir(d->cache, SEGMENTS, path, err, errlen);
	if (fd < 0 && fd != -ENOENT) {
		dirs_close(d);
		return fd;
	}
	d->segs = fd >= 0 ? fd : -1; /* -ENOENT: no segment made yet */
	return 1;
}

/* name's stem when it ends in ext ("S" of "S.data"), into stem[len];
 * 0 when it does not, or the stem is empty or too long to be a segment's. */
static int stem_of(const char *name, const char *ext, char *stem, size_t len)
{
	size_t n = strlen(name), e = strlen(ext);
	if (n <= e || strcmp(name + n - e, ext) || n - e >= len)
		return 0;
	memcpy(stem, name, n - e);
	stem[n - e] = '\0';
	return 1;
}

/* A segment's file, read-only, never through a link: the descriptor;
 * -ENOENT (gone: deleted meanwhile, or never there) or -EINVAL (a link or
 * not a regular file: not a segment, skipped); another negative errno with
 * err set. st gets its fstat. */
static int open_seg_file(int segs, const char *name, const char *dir, struct stat *st, char *err,
			 size_t errlen)
{
	int fd = openat(segs, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return -ENOENT;
		if (e == ELOOP)
			return -EINVAL;
		rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s': %s", dir, name,
		       strerror(e));
		return -e;
	}
	if (fstat(fd, st) != 0) {
		int e = errno;
		rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s': %s", dir, name,
		       strerror(e));
		close(fd);
		return -e;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* What stat gathers: the counts, and the valid records' objects (to count
 * the distinct ones at the end) and one segment's records at a time. */
typedef struct stat_work {
	rf_cache_info *info;
	uint64_t *objects;
	size_t nobjects, objects_cap;   /* bytes of objects, for rfi_grow */
	rf_cache_rec *recs;
	size_t recs_cap;                /* bytes */
} stat_work;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* A record as read from disk, its fields in host order; 1 when its check
 * holds (computed over the 40 bytes as stored). */
static int rec_load(rf_cache_rec *r)
{
	int ok = le64toh(r->check) == rfi_hash_bytes(RF_CACHE_REC_SEED, r, offsetof(rf_cache_rec, check));
	r->object = le64toh(r->object);
	r->offset = le64toh(r->offset);
	r->len = le32toh(r->len);
	r->got = le32toh(r->got);
	r->at = le64toh(r->at);
	r->data_hash = le64toh(r->data_hash);
	return ok;
}

/* stem.idx's whole records into w->recs (*nrec of them; none when there is
 * no stem.idx yet: a segment just begun), its disk bytes counted. A last
 * record cut short (a writer killed mid-append, or one appending now) is
 * fewer than 48 bytes: ignored. Records past RF_CACHE_IDX_MAX bytes are no
 * writer's: not read. @return : 0, or a negative errno with err set. */
static int read_records(stat_work *w, int segs, const char *stem, size_t *nrec, const char *dir,
			char *err, size_t errlen)
{
	char name[RF_CACHE_SEG_NAME_MAX + sizeof(IDX_EXT)];
	rfi_fmt(name, sizeof(name), "%s" IDX_EXT, stem);
	struct stat st;
	*nrec = 0;
	int idx = open_seg_file(segs, name, dir, &st, err, errlen);
	if (idx == -ENOENT || idx == -EINVAL)
		return 0; /* no records yet, or not a record file (a link: not followed) */
	if (idx < 0)
		return idx;
	w->info->disk_bytes += (uint64_t)st.st_blocks * 512;
	int ret = 0;
	for (off_t off = 0; off + (off_t)sizeof(rf_cache_rec) <= (off_t)RF_CACHE_IDX_MAX;) {
		if (rfi_grow((uint8_t **)&w->recs, &w->recs_cap,
			    (*nrec + REC_CHUNK) * sizeof(rf_cache_rec))) {
			rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s': out of memory",
			       dir, name);
			ret = -ENOMEM;
			break;
		}
		size_t want = RF_MIN(REC_CHUNK * sizeof(rf_cache_rec), RF_CACHE_IDX_MAX - (size_t)off);
		ssize_t n = pread(idx, w->recs + *nrec, want, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s': %s", dir,
			       name, strerror(-ret));
			break;
		}
		size_t whole = (size_t)n / sizeof(rf_cache_rec);
		*nrec += whole;
		off += (off_t)(whole * sizeof(rf_cache_rec));
		if (whole == 0)
			break;
	}
	close(idx);
	return ret;
}

/* One segment: stem.data (open as data) and its records in stem.idx.
 * @return : 0, or a negative errno with err set. */
static int stat_segment(stat_work *w, int segs, const char *stem, int data, const char *dir,
			char *err, size_t errlen)
{
	rf_cache_info *info = w->info;
	info->segments++;
	/* a live writer holds LOCK_EX for as long as it appends: a shared lock
	 * that cannot be had says so (and is let go at once if it can) */
	if (flock(data, LOCK_SH | LOCK_NB) == 0)
		flock(data, LOCK_UN);
	else if (errno == EWOULDBLOCK)
		info->writing++;
	/* The records first, then the data's size: a record is appended only
	 * once its bytes are written, so every record read here has its bytes
	 * within the size read after. */
	size_t nrec;
	int ret = read_records(w, segs, stem, &nrec, dir, err, errlen);
	if (ret)
		return ret;
	struct stat st;
	if (fstat(data, &st) != 0) {
		int e = errno;
		rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s" DATA_EXT "': %s",
		       dir, stem, strerror(e));
		return -e;
	}
	info->disk_bytes += (uint64_t)st.st_blocks * 512;
	uint64_t size = (uint64_t)st.st_size;
	for (size_t i = 0; i < nrec; i++) {
		rf_cache_rec *r = &w->recs[i];
		if (!rec_load(r)) {
			info->damaged++;
			continue;
		}
		/* a record whose bytes the data file lacks (lost in a crash before
		 * writeback) is not served: not a range, though its check holds */
		if (r->got > size || r->at > size - r->got)
			continue;
		if (rfi_grow((uint8_t **)&w->objects, &w->objects_cap,
			    (w->nobjects + 1) * sizeof(uint64_t))) {
			rfi_fmt(err, errlen, "cache folder '%s/" RF_CACHE_DIR "': out of memory", dir);
			return -ENOMEM;
		}
		w->objects[w->nobjects++] = r->object;
		info->ranges++;
		info->data_bytes += r->got;
	}
	return 0;
}

/* The segments folder (its descriptor segs) to list, from its start; NULL
 * with *ret a negative errno and err set. */
static DIR *open_segments(int segs, const char *dir, int *ret, char *err, size_t errlen)
{
	int fd = dup(segs);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		rfi_fmt(err, errlen, "cache folder '%s/" RF_CACHE_DIR "/" SEGMENTS "': %s", dir, strerror(e));
		*ret = -e;
		return NULL;
	}
	rewinddir(d); /* a dup shares its offset: an earlier pass left it at the end */
	return d;
}

/* Every S.data of segs, and the disk bytes of every S.idx (a stray one, left
 * by a process killed between a segment's two deletes, takes room too). */
static int stat_segments(stat_work *w, int segs, const char *dir, char *err, size_t errlen)
{
	int ret = 0;
	DIR *d = open_segments(segs, dir, &ret, err, errlen);
	if (!d)
		return ret;
	struct dirent *de;
	char stem[RF_CACHE_SEG_NAME_MAX + 1];
	while (!ret && (errno = 0, de = readdir(d))) {
		struct stat st;
		if (stem_of(de->d_name, DATA_EXT, stem, sizeof(stem))) {
			int data = open_seg_file(segs, de->d_name, dir, &st, err, errlen);
			if (data == -ENOENT || data == -EINVAL)
				continue; /* deleted since the listing, or not a segment */
			if (data < 0) {
				ret = data;
				break;
			}
			ret = stat_segment(w, segs, stem, data, dir, err, errlen);
			close(data);
		} else if (stem_of(de->d_name, IDX_EXT, stem, sizeof(stem)) &&
			   fstatat(segs, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
			/* the .idx of a segment counts with it (stat_segment) */
			char data_name[sizeof(stem) + sizeof(DATA_EXT)];
			struct stat dst;
			rfi_fmt(data_name, sizeof(data_name), "%s" DATA_EXT, stem);
			if (fstatat(segs, data_name, &dst, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(dst.st_mode))
				w->info->disk_bytes += (uint64_t)st.st_blocks * 512;
		}
	}
	if (!ret && errno) {
		ret = -errno;
		rfi_fmt(err, errlen, "cache folder '%s/" RF_CACHE_DIR "/" SEGMENTS "': %s", dir,
		       strerror(-ret));
	}
	closedir(d);
	return ret;
}

int rfi_cache_stat(const char *dir, rf_cache_info *info, char *err, size_t errlen)
{
	memset(info, 0, sizeof(*info));
	rfi_fmt(err, errlen, "%s", "");
	cache_dirs d;
	enum no_cache why;
	int ret = cache_open(dir, &d, &why, err, errlen);
	if (ret == -ENOENT) { /* no DIR: no cache there, as the contract says */
		rfi_fmt(err, errlen, "%s", "");
		return 0;
	}
	if (ret <= 0)
		return ret;
	info->found = 1;
	if (d.segs < 0) { /* the folder made, no segment yet */
		dirs_close(&d);
		return 0;
	}
	stat_work w = { .info = info };
	ret = stat_segments(&w, d.segs, dir, err, errlen);
	dirs_close(&d);
	if (!ret && w.nobjects) {
		qsort(w.objects, w.nobjects, sizeof(uint64_t), cmp_u64);
		info->objects = 1;
		for (size_t i = 1; i < w.nobjects; i++)
			info->objects += w.objects[i] != w.objects[i - 1];
	}
	assert(ret || info->writing <= info->segments);
	assert(ret || info->objects <= info->ranges);
	free(w.objects);
	free(w.recs);
	return ret;
}

/* Deletes segment stem (its S.data open as data) if no writer holds it.
 * @return : 1 deleted; 0 busy; 2 gone meanwhile (deleted by another
 * process: an evicting loader, another clear); a negative errno with err
 * set. */
static int clear_segment(int segs, const char *stem, int data, const char *dir, char *err,
			 size_t errlen)
{
	if (flock(data, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			return 0;
		int e = errno;
		rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s" DATA_EXT "': %s",
		       dir, stem, strerror(e));
		return -e;
	}
	/* Locked: but the name may have been deleted between our open and the
	 * lock, by a process that held it then: only the file still linked
	 * under the name is deleted. */
	char name[RF_CACHE_SEG_NAME_MAX + sizeof(DATA_EXT)];
	struct stat mine, now;
	rfi_fmt(name, sizeof(name), "%s" DATA_EXT, stem);
	if (fstat(data, &mine) != 0 || fstatat(segs, name, &now, AT_SYMLINK_NOFOLLOW) != 0 ||
	    mine.st_ino != now.st_ino || mine.st_dev != now.st_dev)
		return 2;
	/* The records go first: a clear killed between the two leaves a
	 * segment without records (no range served from it; a later clear or
	 * eviction deletes it), never records without their bytes. */
	static const char *const exts[] = { IDX_EXT, DATA_EXT };
	for (int i = 0; i < 2; i++) {
		rfi_fmt(name, sizeof(name), "%s%s", stem, exts[i]);
		if (unlinkat(segs, name, 0) != 0 && errno != ENOENT) {
			int e = errno;
			rfi_fmt(err, errlen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s': cannot "
			       "delete: %s", dir, name, strerror(e));
			return -e;
		}
	}
	return 1; /* the lock goes with the caller's close */
}

/* The entries clear_pass() deletes, one helper each. @return : 0, or a
 * negative errno with why set (the pass goes on). */

/* Segment S (its data file: name), deleted unless in use; counted in
 * *deleted or *busy. */
static int clear_data(int segs, const char *name, const char *stem, const char *dir,
		      uint64_t *deleted, uint64_t *busy, char *why, size_t whylen)
{
	struct stat st;
	int data = open_seg_file(segs, name, dir, &st, why, whylen);
	if (data == -ENOENT || data == -EINVAL)
		return 0;
	if (data < 0)
		return data;
	int ret = clear_segment(segs, stem, data, dir, why, whylen);
	close(data);
	*deleted += ret == 1;
	*busy += ret == 0;
	return ret < 0 ? ret : 0;
}

/* S.new: a segment being made (locked), or left by a writer killed before
 * it named it S.data (unlocked: deleted, its S.idx in pass 1). */
static int clear_new(int segs, const char *name, const char *dir, char *why, size_t whylen)
{
	struct stat st;
	int fd = open_seg_file(segs, name, dir, &st, why, whylen);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
		unlinkat(segs, name, 0);
	if (fd >= 0)
		close(fd);
	else if (fd != -ENOENT && fd != -EINVAL)
		return fd;
	return 0;
}

/* S.idx (a regular file), deleted when it is a stray: a writer makes S.idx,
 * then S.new, locks it and names it S.data, so an S.idx beside S.new is a
 * segment being made, not a stray. */
static int clear_stray_idx(int segs, const char *name, const char *stem, const char *dir,
			   char *why, size_t whylen)
{
	char data_name[RF_CACHE_SEG_NAME_MAX + 1 + sizeof(DATA_EXT)];
	char new_name[RF_CACHE_SEG_NAME_MAX + 1 + 8];
	rfi_fmt(data_name, sizeof(data_name), "%s" DATA_EXT, stem);
	rfi_fmt(new_name, sizeof(new_name), "%s.new", stem);
	struct stat dst;
	if (fstatat(segs, data_name, &dst, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT &&
	    fstatat(segs, new_name, &dst, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT &&
	    unlinkat(segs, name, 0) != 0 && errno != ENOENT) {
		int ret = -errno;
		rfi_fmt(why, whylen, "cache file '%s/" RF_CACHE_DIR "/" SEGMENTS "/%s': cannot "
		       "delete: %s", dir, name, strerror(-ret));
		return ret;
	}
	return 0;
}

/* One pass over segs: every S.data (pass 0), or every stray S.idx whose
 * S.data is gone (pass 1: after pass 0, so that a segment's own .idx is
 * deleted with it, under its lock). Keeps going past a failed delete:
 * @return : 0, or the first negative errno (err set). */
static int clear_pass(int segs, int pass, const char *dir, uint64_t *deleted, uint64_t *busy,
		      char *err, size_t errlen)
{
	int first = 0;
	DIR *d = open_segments(segs, dir, &first, err, errlen);
	if (!d)
		return first;
	struct dirent *de;
	char stem[RF_CACHE_SEG_NAME_MAX + 1];
	char why[512];
	while ((errno = 0, de = readdir(d))) {
		int ret = 0;
		struct stat st;
		if (pass == 0 && stem_of(de->d_name, DATA_EXT, stem, sizeof(stem)))
			ret = clear_data(segs, de->d_name, stem, dir, deleted, busy, why, sizeof(why));
		else if (pass == 0 && stem_of(de->d_name, ".new", stem, sizeof(stem)))
			ret = clear_new(segs, de->d_name, dir, why, sizeof(why));
		else if (pass == 1 && stem_of(de->d_name, IDX_EXT, stem, sizeof(stem)) &&
			 fstatat(segs, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			ret = clear_stray_idx(segs, de->d_name, stem, dir, why, sizeof(why));
		if (ret < 0 && !first) {
			first = ret;
			rfi_fmt(err, errlen, "%s", why);
		}
	}
	if (errno && !first) {
		first = -errno;
		rfi_fmt(err, errlen, "cache folder '%s/" RF_CACHE_DIR "/" SEGMENTS "': %s", dir,
		       strerror(-first));
	}
	closedir(d);
	return first;
}

/* FORMAT, claims and segments/ stay, even when nothing is left: a loader
 * running now holds them open (a deleted folder would take its next
 * segment with it), and a second clear finds an empty cache, not none. */
int rfi_cache_clear(const char *dir, uint64_t *deleted, uint64_t *busy, char *err, size_t errlen)
{
	*deleted = *busy = 0;
	rfi_fmt(err, errlen, "%s", "");
	cache_dirs d;
	enum no_cache why;
	int ret = cache_open(dir, &d, &why, err, errlen);
	if (ret < 0)
		return ret;
	if (ret == 0) {
		if (why == NO_FOLDER)
			rfi_fmt(err, errlen, "cache folder '%s': no ringfeed cache in it (no " RF_CACHE_DIR
			       "/)", dir);
		else /* another program's folder, or another version's: left alone */
			rfi_fmt(err, errlen, "cache folder '%s/" RF_CACHE_DIR "': its FORMAT is not \"%.*s\": "
			       "not a cache this ringfeed writes, left alone", dir,
			       (int)strlen(RF_CACHE_FORMAT) - 1, RF_CACHE_FORMAT);
		return -ENOENT;
	}
	if (d.segs >= 0) {
		ret = clear_pass(d.segs, 0, dir, deleted, busy, err, errlen);
		int ret2 = clear_pass(d.segs, 1, dir, deleted, busy, ret ? NULL : err, ret ? 0 : errlen);
		ret = ret ? ret : ret2;
	} else {
		ret = 0; /* no segments/ yet: nothing to delete */
	}
	dirs_close(&d);
	return ret;
}
