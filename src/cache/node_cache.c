/* node_cache.c - the node-local cache's store, on the ring thread
 * (node_cache.h says what it is and what is on disk): the table of cached
 * ranges, this process's segment and its appends through the engine, the
 * other processes' records read as they come, claims, and eviction. The
 * `ringfeed cache` command's look at a folder is node_cache_admin.c. */
#define _GNU_SOURCE
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h> /* renameat */
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/bufpool.h"
#include "cache/node_cache.h"
#include "util/hash.h"
#include "util/util.h"

#define SEG_MIN (256u << 10)
#define SEG_MAX RF_CACHE_SEG_MAX
#define STAGING_BYTES (32u << 20)  /* fetched bytes copied and waiting for their write */
#define FILL_WAIT_NS 2000000000ull /* a fill waits this long at most for the writes to make room */
#define FILL_NAP_NS 200000ull      /* ... napping this long when the engine has reads to hand */
#define MAX_PENDING 4096           /* ranges between their fill and their record */
#define REFRESH_NS 100000000ull    /* the other processes' records, looked at this often */
#define META_BYTES (64u << 10)     /* FORMAT, claims and the folders, counted against the size */
#define ACTIVE_NS 2000000000ull    /* a segment whose records grew this lately is being written */
#define FLUSH_BYTES (8u << 20)    /* a segment's bytes are sent to the disk this many at once */
#define BAD_LOOKS 20               /* a bad record still bad after this many looks is damage */
#define NO_SEG UINT32_MAX
#define FETCHING (UINT32_MAX - 1) /* a table cell's seg: this process is fetching the range */
#define GONE (UINT32_MAX - 2)     /* ... was, and let it go unfilled (a dead cell) */

/* A segment this process knows: its own (it writes it) or another's (it
 * reads its records as they come). */
typedef struct seg {
	char name[RF_CACHE_SEG_NAME_MAX]; /* S */
	uint32_t gen;       /* bumped when the slot is reused: ranges name (slot, gen) */
	uint8_t used;       /* the slot holds a segment */
	uint8_t alive;      /* still in the folder (not deleted by an eviction) */
	uint8_t mine;       /* this process writes it (until sealed) */
	uint8_t damaged;    /* a record failed its check for good: no more are read */
	int file;           /* the engine's read handle of S.data, or -1 */
	int idx_fd;         /* S.idx: read (another's), written (mine) */
	int data_fd;        /* mine: S.data to write, flock(LOCK_EX) held; else -1 */
	uint64_t idx_pos;   /* another's: bytes of S.idx taken in; mine: written */
	uint32_t bad_looks; /* another's: looks at a bad record at idx_pos */
	uint64_t data_end;  /* mine: where the next range's bytes go */
	uint64_t idx_end;   /* mine: S.idx's size once every record given out is written */
	uint64_t published; /* mine: where its published ranges' bytes end */
	uint64_t flushed;   /* mine: [0, flushed) sent to the disk (sync_file_range) */
	uint64_t dropped;   /* mine: [0, dropped) dropped from the page cache */
	uint32_t inflight;  /* reads of it in flight (its handle stays open meanwhile) */
	uint32_t writes;    /* mine: data and record writes in flight or queued */
	uint64_t last_used; /* ns: made, found, or last read */
	uint64_t active_until; /* another's: its records grew lately (looked at after each claim) */
	uint8_t seen;       /* in the folder at this listing */
	/* mine: records whose bytes are written wait (recs) for the one record
	 * write in flight (wbuf): records go out one write at a time, in order,
	 * so S.idx has no hole a reader could take for damage. Each holds at
	 * most MAX_PENDING, the ranges between fill and record. */
	rf_cache_rec *recs, *wbuf;
	uint32_t *rec_pending, *wbuf_pending; /* each record's pending range */
	uint32_t nrecs;        /* waiting */
	uint32_t writing_recs; /* in the write in flight (0: none) */
} seg;

/* A cached range in the table (open addressing; object 0: an empty cell). */
typedef struct ent {
	uint64_t object, offset;
	uint32_t len, got;
	uint32_t seg, gen;
	uint64_t at, hash;
} ent;

/* A range between its fill and its published record (a cell in use is not
 * on the free stack; one whose data write waits for engine room is also on
 * the queue). */
typedef struct pending {
	uint32_t seg, ticket;  /* its segment (this process's: never reused meanwhile) */
	uint8_t *buf;
	rf_cache_rec rec;
} pending;

struct rf_cache {
	rf_cache_params p;
	char *root;            /* DIR/ringfeed-cache */
	int segdir;            /* DIR/ringfeed-cache/segments */
	int format_fd;         /* flock(LOCK_EX) around count-evict-make */
	int claims_fd;         /* OFD locks, or -1: no claims (read-only) */
	int writable;          /* new ranges are written */
	uint64_t seg_bytes, idx_cap, max_segs;

	seg *segs;
	uint32_t nsegs;        /* slots used or once used (< RF_CACHE_MAX_FILES) */
	uint32_t cur;          /* the segment this process appends to, or NO_SEG */

	ent *tab;
	uint64_t tab_cap, tab_used; /* used: cells with an object (dead ones too) */

	rf_bufpool staging;
	pending *pend;
	uint32_t *pfree;       /* pending cells not in use: a stack */
	uint32_t npfree;
	uint32_t *queued;      /* pending ranges whose data write waits for room */
	uint32_t nqueued;
	uint64_t last_refresh;
	rf_io_wrote wrote[RF_IO_MAX_WRITES];
	uint64_t no_room_until; /* every segment was busy: no new one tried before this */
	struct timespec listed; /* the segments folder's mtime at the last listing */
	int listed_sure;        /* that listing came a tick or more after that mtime: a
	                         * change since would have moved it (a file system's
	                         * clock is coarse: a segment made in the same tick
	                         * as the listing leaves the mtime as it was) */
	rf_cache_counts n;
	uint8_t warned_write, warned_damage, warned_bytes, warned_trust, warned_stall;
	uint8_t stalled;       /* a fill waited FILL_WAIT_NS in vain: fills drop (the
	                        * writes are stuck) until a write finishes */
	int64_t gid;           /* the group trusted to share the cache, or -1 */
#if RF_TEST_HOOKS
	int test_hold;         /* fills are held: never written, their claims kept */
#endif
	char why[512];         /* why a file of the cache is not used (trusted()) */
};

#define TAG_DATA (1ull << 40) /* a write's tag: TAG_DATA | pending, or TAG_RECS | segment */
#define TAG_RECS (2ull << 40)

static void warn(rf_cache *c, const char *fmt, const char *what, int err)
{
	char msg[512];
	rfi_fmt(msg, sizeof(msg), fmt, what);
	rfi_log(c->p.log_level, RF_LOG_WARN, "cache %s: %s%s%s; those reads go to the network",
	       c->root, msg, err ? ": " : "", err ? strerror(err) : "");
}

/* New ranges are no longer written (the disk filled, the folder is
 * read-only): one warning. */
static void stop_writing(rf_cache *c, const char *what, int err)
{
	if (!c->warned_write)
		warn(c, "%s", what, err);
	c->warned_write = 1;
	c->writable = 0;
}

#if RF_TEST_HOOKS
static size_t staging_bytes = STAGING_BYTES;
void rfi_cache_set_test_staging(size_t bytes)
{
	staging_bytes = bytes ? bytes : STAGING_BYTES;
}
static int hold_fills;
void rfi_cache_set_test_hold_fills(int hold)
{
	hold_fills = hold;
}
#else
#define staging_bytes STAGING_BYTES
#endif

/* ---- the user's alone ---- */

/* Whether fd, the cache's file or folder name (a path in the cache), may be
 * used: a regular file (a folder), the running user's or the trusted
 * group's, writable by no one else. The records' hashes are public, so
 * whoever can write a file of the cache can make it serve any bytes.
 * @return : 1; or 0 with c->why saying why not. */
static int trusted(rf_cache *c, int fd, const char *name, int folder)
{
	struct stat st;
	if (fstat(fd, &st)) {
		rfi_fmt(c->why, sizeof(c->why), "%s: %s", name, strerror(errno));
		return 0;
	}
	int group = c->gid >= 0 && st.st_gid == (gid_t)c->gid;
	if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		rfi_fmt(c->why, sizeof(c->why), "%s is %s, not %s", name, rfi_file_kind(st.st_mode),
		       folder ? "a directory" : "a regular file");
	else if (st.st_uid != geteuid() && !group)
		rfi_fmt(c->why, sizeof(c->why), "%s belongs to uid %u, not to this user (uid %u)%s",
		       name, (unsigned)st.st_uid, (unsigned)geteuid(),
		       c->gid >= 0 ? " nor to the trusted group" : " (--cache-group names a group "
		       "trusted to share it)");
	else if (st.st_mode & S_IWOTH)
		rfi_fmt(c->why, sizeof(c->why), "%s is writable by every user (mode %04o)", name,
		       (unsigned)(st.st_mode & 07777));
	else if ((st.st_mode & S_IWGRP) && !group)
		rfi_fmt(c->why, sizeof(c->why), "%s is writable by its group (gid %u, mode %04o), "
		       "not %s", name, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
		       c->gid >= 0 ? "the trusted one" : "one named trusted (--cache-group)");
	else
		return 1;
	return 0;
}

/* A file or folder of the cache found as it runs (another process's
 * segment) that may not be used: skipped, one warning. */
static void untrusted(rf_cache *c)
{
	if (!c->warned_trust)
		rfi_log(c->p.log_level, RF_LOG_WARN, "cache %s: %s; not used, those reads go to the "
		       "network", c->root, c->why);
	c->warned_trust = 1;
}

/* Opens an existing file of the cache (name in dirfd, shown as prefix
 * name), never through a link nor waiting on a FIFO, and only when
 * trusted(). @return : the descriptor; or -1 with errno set (ENOENT: not
 * there) and, when it is there but not to be used, c->why set (errno
 * EPERM). */
static int open_file(rf_cache *c, int dirfd, const char *prefix, const char *name, int flags)
{
	char shown[RF_CACHE_SEG_NAME_MAX + 32];
	rfi_fmt(shown, sizeof(shown), "%s%s", prefix, name);
	c->why[0] = '\0';
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP) {
		rfi_fmt(c->why, sizeof(c->why), "%s is a symbolic link (not followed)", shown);
		errno = EPERM;
	}
	if (fd >= 0 && !trusted(c, fd, shown, 0)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* Makes a new file of the cache: O_EXCL (never an existing name: a link
 * planted there is not followed, a file there not truncated), with the
 * cache's mode and group (0644; 0660 and the trusted group's: set after the
 * open, past the umask). @return : the descriptor, or -1 with errno set. */
static int make_file(rf_cache *c, int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			c->gid >= 0 ? 0660 : 0644);
	/* a new regular file (O_EXCL made it): O_NONBLOCK is let go, so that an
	 * engine write that would wait is punted to a worker on any kernel, not
	 * failed with EAGAIN */
	if (fd >= 0 && ((c->gid >= 0 && (fchown(fd, (uid_t)-1, (gid_t)c->gid) || fchmod(fd, 0660))) ||
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))) {
		int e = errno;
		close(fd);
		unlinkat(dirfd, name, 0);
		errno = e;
		return -1;
	}
	return fd;
}

/* Finds or makes the folder name in dirfd (path: for messages), trusted.
 * @return : its descriptor, or -1 with errno set (EPERM: c->why says why). */
static int make_folder(rf_cache *c, int dirfd, const char *name, const char *path)
{
	c->why[0] = '\0';
	int made = !mkdirat(dirfd, name, c->gid >= 0 ? 02770 : 0755);
	if (!made && errno != EEXIST)
		return -1;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
		rfi_fmt(c->why, sizeof(c->why), "%s is not a directory (a symbolic link is not "
		       "followed)", path);
		errno = EPERM;
		return -1;
	}
	if (fd < 0)
		return -1;
	if (made && c->gid >= 0 && (fchown(fd, (uid_t)-1, (gid_t)c->gid) || fchmod(fd, 02770))) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (!trusted(c, fd, path, 1)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* Whether DIR (top, the folder the cache is made in) keeps others from
 * replacing DIR/ringfeed-cache: writable by no one untrusted, or sticky
 * (/scratch, 1777: no one renames another's folder in it), and the user's,
 * root's or the trusted group's (its owner may rename anything in it).
 * @return : 1; or 0 with c->why set. */
static int parent_trusted(rf_cache *c, int top)
{
	struct stat st;
	if (fstat(top, &st)) {
		rfi_fmt(c->why, sizeof(c->why), "%s: %s", c->p.dir, strerror(errno));
		return 0;
	}
	int group = c->gid >= 0 && st.st_gid == (gid_t)c->gid;
	int others = (st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && !group);
	if (st.st_uid != geteuid() && st.st_uid != 0 && !group)
		rfi_fmt(c->why, sizeof(c->why), "the folder it is in, %s, belongs to uid %u (who could "
		       "replace the cache in it), not to this user (uid %u)", c->p.dir,
		       (unsigned)st.st_uid, (unsigned)geteuid());
	else if (others && !(st.st_mode & S_ISVTX))
		rfi_fmt(c->why, sizeof(c->why), "the folder it is in, %s, is writable by other users "
		       "(mode %04o) without the sticky bit: they could replace the cache in it",
		       c->p.dir, (unsigned)(st.st_mode & 07777));
	else
		return 1;
	return 0;
}

int rfi_cache_group_id(const char *name, gid_t *gid)
{
	struct group gr, *found = NULL;
	size_t len = 4096;
	for (;;) { /* a group of many members needs more than 4 KiB */
		char *buf = malloc(len);
		if (!buf)
			return -ENOMEM;
		int e = getgrnam_r(name, &gr, buf, len, &found);
		if (!e && found)
			*gid = found->gr_gid;
		free(buf);
		if (e == ERANGE && len < (16u << 20)) {
			len *= 4;
			continue;
		}
		return e ? -e : found ? 0 : -ENOENT;
	}
}

/* Whether a query parameter (its name, n bytes) is one a signature adds:
 * S3's presigned URLs (X-Amz-*, any case, as S3 reads them) and
 * CloudFront's signed ones. They change with every signing of one object. */
static int signing_param(const char *name, size_t n)
{
	static const char *const exact[] = { "Signature", "Expires", "Key-Pair-Id", "Policy" };
	if (n >= 6 && !strncasecmp(name, "X-Amz-", 6))
		return 1;
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (n == strlen(exact[i]) && !memcmp(name, exact[i], n))
			return 1;
	return 0;
}

uint64_t rfi_cache_object(const char *url, const char *etag, uint64_t size)
{
	if (!etag || !etag[0])
		return 0;
	/* the path, then each parameter of the query that is not a signature's,
	 * in its order, its length first (a=b&c is not a=b&&c): a query may be
	 * all that tells two objects apart (/get?f=a.tar, ?f=b.tar), and two
	 * files of one size and mtime have one nginx-style ETag */
	size_t end = strcspn(url, "#"), n = strcspn(url, "?#");
	uint64_t h = rfi_hash_bytes(0x6f626a656374ull, url, n);
	for (size_t i = n; i < end;) {
		i++; /* the '?' or '&' before the parameter */
		size_t len = strcspn(url + i, "&#"), name = strcspn(url + i, "=&#");
		if (!signing_param(url + i, RF_MIN(name, len)))
			h = rfi_hash_bytes(rfi_hash_u64(h, len), url + i, len);
		i += len;
	}
	h = rfi_hash_bytes(h, etag, strlen(etag));
	h = rfi_hash_u64(h, size);
	return h ? h : 1;
}

static uint64_t rec_check(const rf_cache_rec *r)
{
	return rfi_hash_bytes(RF_CACHE_REC_SEED, r, offsetof(rf_cache_rec, check));
}

/* ---- the table of ranges ---- */

static uint64_t key_of(uint64_t object, uint64_t offset, uint32_t len)
{
	return rfi_hash_u64(rfi_hash_u64(object, offset), len);
}

static int ent_live(const rf_cache *c, const ent *e)
{
	if (e->seg >= GONE)
		return 0;
	const seg *s = &c->segs[e->seg];
	return s->used && s->gen == e->gen && s->alive;
}

static ent *tab_cell(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len)
{
	uint64_t mask = c->tab_cap - 1, i = key_of(object, offset, len) & mask;
	while (c->tab[i].object &&
	       (c->tab[i].object != object || c->tab[i].offset != offset || c->tab[i].len != len))
		i = (i + 1) & mask;
	return &c->tab[i];
}

static int tab_grow(rf_cache *c)
{
	ent *old = c->tab;
	uint64_t old_cap = c->tab_cap, cap = old_cap;
	uint64_t live = 0;
	for (uint64_t i = 0; i < old_cap; i++)
		live += old[i].object && (ent_live(c, &old[i]) || old[i].seg == FETCHING);
	while (live * 2 >= cap / 2) /* live ranges fill a quarter at most after a grow */
		cap *= 2;
	ent *tab = calloc(cap, sizeof(ent));
	if (!tab)
		return -ENOMEM;
	c->tab = tab;
	c->tab_cap = cap;
	c->tab_used = 0;
	for (uint64_t i = 0; i < old_cap; i++)
		if (old[i].object && (ent_live(c, &old[i]) || old[i].seg == FETCHING)) {
			*tab_cell(c, old[i].object, old[i].offset, old[i].len) = old[i];
			c->tab_used++;
		}
	free(old);
	return 0;
}

static void tab_put(rf_cache *c, uint32_t segno, const rf_cache_rec *r)
{
	if ((c->tab_used + 1) * 2 > c->tab_cap && tab_grow(c))
		return; /* out of memory: the range is not found, and fetched again */
	ent *e = tab_cell(c, r->object, r->offset, r->len);
	if (!e->object)
		c->tab_used++;
	else if (ent_live(c, e))
		return; /* the first copy stays (a read of it may be in flight) */
	*e = (ent){ .object = r->object, .offset = r->offset, .len = r->len, .got = r->got,
		    .seg = segno, .gen = c->segs[segno].gen, .at = r->at, .hash = r->data_hash };
}

/* ---- segments ---- */

static uint32_t seg_slot(rf_cache *c)
{
	for (uint32_t i = 0; i < c->nsegs; i++)
		if (!c->segs[i].used)
			return i;
	return c->nsegs < RF_CACHE_MAX_FILES ? c->nsegs++ : NO_SEG;
}

static void seg_init(seg *s, const char *name)
{
	uint32_t gen = s->gen + 1;
	*s = (seg){ .gen = gen, .used = 1, .alive = 1, .file = -1, .idx_fd = -1, .data_fd = -1,
		    .last_used = rfi_now_ns() };
	rfi_fmt(s->name, sizeof(s->name), "%s", name);
}

/* A segment's write-side memory (its records waiting and in flight). */
static void free_records(seg *s)
{
	free(s->recs);
	free(s->rec_pending);
	free(s->wbuf);
	free(s->wbuf_pending);
	s->recs = s->wbuf = NULL;
	s->rec_pending = s->wbuf_pending = NULL;
	s->nrecs = 0;
}

/* Its descriptors of its own (the engine's handle apart) and that memory. */
static void close_files(seg *s)
{
	if (s->idx_fd >= 0)
		close(s->idx_fd);
	if (s->data_fd >= 0)
		close(s->data_fd);
	s->idx_fd = s->data_fd = -1;
	free_records(s);
}

/* Frees a segment's slot once it is out of the folder and no read of it is
 * in flight (its handle closes then: a deleted file stays readable until). */
static void seg_release(rf_cache *c, uint32_t i)
{
	seg *s = &c->segs[i];
	if (!s->used || s->alive || s->inflight || s->writes)
		return;
	rfi_io_file_close(c->p.io, s->file);
	close_files(s);
	uint32_t gen = s->gen;
	*s = (seg){ .gen = gen, .file = -1, .idx_fd = -1, .data_fd = -1 };
}

/* Sends segment s's published bytes to the disk (up to all of them), and
 * drops from the page cache what an earlier call sent there. Hits read
 * O_DIRECT: a range whose pages are still dirty would have its read wait for
 * their writeback (io_uring hands such a read to a worker thread), and pages
 * kept after writeback only crowd out the page cache. Neither call waits. */
static void flush(seg *s, int all)
{
	if (s->data_fd < 0 || s->published - s->flushed < (all ? 1 : FLUSH_BYTES))
		return;
	if (s->flushed > s->dropped) {
		posix_fadvise(s->data_fd, (off_t)s->dropped, (off_t)(s->flushed - s->dropped),
			      POSIX_FADV_DONTNEED);
		s->dropped = s->flushed;
	}
	sync_file_range(s->data_fd, (off_t)s->flushed, (off_t)(s->published - s->flushed),
			SYNC_FILE_RANGE_WRITE);
	s->flushed = s->published;
}

/* This process's segment is full: no more ranges go to it; its files close
 * (the flock with them) once its writes are done. */
static void seal(rf_cache *c, uint32_t i)
{
	seg *s = &c->segs[i];
	if (c->cur == i)
		c->cur = NO_SEG;
	if (s->writes || !s->mine)
		return;
	s->mine = 0;
	flush(s, 1);
	if (s->data_fd >= 0)
		close(s->data_fd); /* lets the flock go: others may now evict it */
	s->data_fd = -1;
	free_records(s);
}

/* Reads another process's new records (whole ones, up to the first that
 * fails its check: a record being written, or damage). */
static void tail(rf_cache *c, uint32_t i)
{
	seg *s = &c->segs[i];
	if (s->mine || s->damaged || s->idx_fd < 0)
		return;
	struct stat st;
	if (fstat(s->idx_fd, &st) || (uint64_t)st.st_size < s->idx_pos + sizeof(rf_cache_rec))
		return;
	/* no writer writes more records than RF_CACHE_IDX_MAX holds: a longer
	 * file (damage, or a sparse file's zeros) is read no further */
	uint64_t size = RF_MIN((uint64_t)st.st_size, RF_CACHE_IDX_MAX);
	rf_cache_rec buf[256];
	while (s->idx_pos + sizeof(rf_cache_rec) <= size) {
		ssize_t n = pread(s->idx_fd, buf, sizeof(buf), (off_t)s->idx_pos);
		if (n < (ssize_t)sizeof(rf_cache_rec))
			return;
		size_t k = (size_t)n / sizeof(rf_cache_rec);
		for (size_t j = 0; j < k; j++) {
			if (buf[j].check != rec_check(&buf[j]) || !buf[j].object) {
				/* one being written now, or a damaged one: looked at
				 * again later; still bad after BAD_LOOKS looks (seconds)
				 * with more records behind it, it is damage */
				if (++s->bad_looks >= BAD_LOOKS &&
				    size > s->idx_pos + sizeof(rf_cache_rec)) {
					s->damaged = 1;
					if (!c->warned_damage)
						warn(c, "segment %s has a damaged record; the rest of it "
						     "is not used", s->name, 0);
					c->warned_damage = 1;
				}
				return;
			}
			s->bad_looks = 0;
			tab_put(c, i, &buf[j]);
			s->idx_pos += sizeof(rf_cache_rec);
			s->active_until = rfi_now_ns() + ACTIVE_NS;
		}
	}
}

static int ends_with(const char *s, const char *tail_)
{
	size_t n = strlen(s), t = strlen(tail_);
	return n > t && !strcmp(s + n - t, tail_);
}

/* When the folder is listed: its mtime then, and whether a change made in
 * the same tick could still be missed by a look at that mtime (listed_sure
 * says it cannot). */
static void note_listed(rf_cache *c)
{
	struct stat dst;
	struct timespec now;
	if (!fstat(c->segdir, &dst) && !clock_gettime(CLOCK_REALTIME, &now)) {
		c->listed = dst.st_mtim;
		int64_t age = (int64_t)(now.tv_sec - dst.st_mtim.tv_sec) * 1000000000 +
			      (now.tv_nsec - dst.st_mtim.tv_nsec);
		c->listed_sure = age > 50000000; /* 50 ms: coarser than any file system's tick */
	} else {
		c->listed_sure = 0;
	}
}

/* The segment named name among those held: its slot, or c->nsegs. */
static uint32_t find_seg(const rf_cache *c, const char *name)
{
	uint32_t i = 0;
	while (i < c->nsegs && !(c->segs[i].used && c->segs[i].alive &&
				 !strcmp(c->segs[i].name, name)))
		i++;
	return i;
}

/* Takes in segment name (its data file: data_name), new to this process:
 * its S.idx and S.data opened, when they are there and trusted, and a
 * handle left for it. */
static void take_in(rf_cache *c, const char *name, const char *data_name)
{
	uint32_t slot = seg_slot(c);
	if (slot == NO_SEG)
		return; /* more segments than handles: not read from */
	seg *s = &c->segs[slot];
	seg_init(s, name);
	char path[RF_CACHE_SEG_NAME_MAX + 8];
	rfi_fmt(path, sizeof(path), "%s.idx", name);
	s->idx_fd = open_file(c, c->segdir, "segments/", path, O_RDONLY);
	/* S.data checked here, then opened by name for the engine (O_DIRECT,
	 * registered): no one but the trusted can rename in this folder */
	int data = s->idx_fd < 0 ? -1
		   : open_file(c, c->segdir, "segments/", data_name, O_RDONLY);
	if (data >= 0)
		close(data);
	if (c->why[0])
		untrusted(c); /* a link, a FIFO, another user's: not a segment */
	s->file = data >= 0 ? rfi_io_file_open(c->p.io, c->segdir, data_name) : -1;
	if (s->idx_fd < 0 || s->file < 0) { /* deleted meanwhile, or no handle left */
		s->alive = 0;
		seg_release(c, slot);
		return;
	}
	struct stat st;
	if (!fstat(s->idx_fd, &st)) /* another's: its age is its last write */
		s->last_used = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			       (uint64_t)st.st_mtim.tv_nsec;
	s->seen = 1;
	s->active_until = rfi_now_ns() + ACTIVE_NS;
}

/* Lets go of the segments of other processes that the listing did not see. */
static void let_go_unseen(rf_cache *c)
{
	for (uint32_t i = 0; i < c->nsegs; i++) {
		seg *s = &c->segs[i];
		if (s->used && s->alive && !s->seen && !s->mine) {
			s->alive = 0; /* deleted by an eviction: its ranges are gone */
			seg_release(c, i);
		}
	}
}

/* Lists the segments: new ones are taken in, deleted ones let go. @return :
 * the segments in the folder. */
static uint64_t list(rf_cache *c)
{
	int fd = openat(c->segdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	note_listed(c);
	for (uint32_t i = 0; i < c->nsegs; i++)
		c->segs[i].seen = 0;
	uint64_t count = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (!ends_with(e->d_name, ".data") || len >= RF_CACHE_SEG_NAME_MAX + 5)
			continue;
		count++;
		char name[RF_CACHE_SEG_NAME_MAX];
		rfi_fmt(name, sizeof(name), "%.*s", (int)(len - 5), e->d_name);
		uint32_t i = find_seg(c, name);
		if (i < c->nsegs)
			c->segs[i].seen = 1;
		else
			take_in(c, name, e->d_name);
	}
	closedir(d);
	let_go_unseen(c);
	return count;
}

/* What another process published since the last look, cheaply: the folder
 * listed again only if its mtime moved (a segment made or deleted), and the
 * records read of the segments being written lately. */
static void look_again(rf_cache *c)
{
	struct stat dst;
	if (!c->listed_sure || fstat(c->segdir, &dst) || dst.st_mtim.tv_sec != c->listed.tv_sec ||
	    dst.st_mtim.tv_nsec != c->listed.tv_nsec)
		list(c);
	uint64_t now = rfi_now_ns();
	for (uint32_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].used && c->segs[i].alive && !c->segs[i].mine &&
		    c->segs[i].active_until > now)
			tail(c, i);
}

void rfi_cache_refresh(rf_cache *c)
{
	c->last_refresh = rfi_now_ns();
	list(c);
	for (uint32_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].used && c->segs[i].alive)
			tail(c, i);
}

/* Deletes segment i from the folder if no live writer holds it. @return :
 * 1 deleted (or gone already), 0 busy. */
static int evict(rf_cache *c, uint32_t i)
{
	seg *s = &c->segs[i];
	char path[RF_CACHE_SEG_NAME_MAX + 8];
	rfi_fmt(path, sizeof(path), "%s.data", s->name);
	int fd = openat(c->segdir, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		return 0; /* its writer is alive */
	}
	if (fd >= 0) {
		unlinkat(c->segdir, path, 0);
		rfi_fmt(path, sizeof(path), "%s.idx", s->name);
		unlinkat(c->segdir, path, 0);
		close(fd);
		c->n.evictions++;
	}
	s->alive = 0;
	seg_release(c, i);
	return 1;
}

/* The eviction order: segments the order does not need ahead first, then
 * those it needs last; among equals the least recently used. What it
 * compares is passed in (qsort_r), never kept in a static: each loader's
 * ring thread evicts its own cache, two loaders of one process at once. */
typedef struct victims {
	const uint64_t *need;
	const seg *segs;
} victims;
static int victim_cmp(const void *x, const void *y, void *ctx)
{
	const victims *v = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	if (v->need[a] != v->need[b])
		return v->need[a] > v->need[b] ? -1 : 1;
	return v->segs[a].last_used < v->segs[b].last_used ? -1
	       : v->segs[a].last_used > v->segs[b].last_used;
}

/* Makes room for one more segment: deletes others until the folder holds
 * fewer than max_segs. Under the FORMAT file's flock (two processes must
 * not both take the last place). @return : 1 room; 0 none (every other
 * segment busy); -1 none until this process's own full segments are
 * written. */
static int make_room(rf_cache *c)
{
	uint64_t count = list(c);
	if (count < c->max_segs)
		return 1;
	uint64_t *need = malloc(c->nsegs * sizeof(uint64_t));
	uint32_t *order = malloc(c->nsegs * sizeof(uint32_t)), n = 0;
	if (!need || !order) {
		free(need);
		free(order);
		return 0;
	}
	for (uint32_t i = 0; i < c->nsegs; i++)
		need[i] = UINT64_MAX;
	if (c->p.need)
		c->p.need(c->p.need_ctx, c, need, c->nsegs);
	for (uint32_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].used && c->segs[i].alive && !c->segs[i].mine)
			order[n++] = i;
	victims v = { .need = need, .segs = c->segs };
	qsort_r(order, n, sizeof(uint32_t), victim_cmp, &v);
	for (uint32_t j = 0; j < n && count >= c->max_segs; j++)
		if (evict(c, order[j])) /* else a live writer holds it */
			count--;
	free(need);
	free(order);
	if (count < c->max_segs)
		return 1;
	/* this process's own full segments, whose last writes are on their way,
	 * are evictable in a moment: only others' busy ones are worth a pause */
	for (uint32_t i = 0; i < c->nsegs; i++)
		if (c->segs[i].used && c->segs[i].alive && c->segs[i].mine && i != c->cur)
			return -1;
	return 0;
}

/* Starts this process's next segment. @return : 0, or -1 (none now: no
 * room, or writes stopped). */
static int new_segment(rf_cache *c)
{
	if (c->cur != NO_SEG)
		seal(c, c->cur);
	if (rfi_now_ns() < c->no_room_until || flock(c->format_fd, LOCK_EX))
		return -1;
	int ret = -1;
	uint32_t slot = NO_SEG;
	int room = make_room(c);
	if (room <= 0) { /* every segment busy: ranges are not cached for a while */
		c->no_room_until = rfi_now_ns() + (room ? 1000000ull : 1000000000ull);
		goto out;
	}
	slot = seg_slot(c);
	if (slot == NO_SEG)
		goto out;
	uint64_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = rfi_mix64(rfi_now_ns() ^ (uint64_t)getpid() << 32);
	char name[RF_CACHE_SEG_NAME_MAX], path[RF_CACHE_SEG_NAME_MAX + 8];
	rfi_fmt(name, sizeof(name), "%08x-%016llx", (unsigned)getpid(), (unsigned long long)rnd);
	seg *s = &c->segs[slot];
	seg_init(s, name);
	s->mine = 1;
	/* S.idx first, then S.data made under another name, locked, and only
	 * then named S.data: whoever lists S.data finds its records' file, and
	 * never a segment unlocked for a moment (an evictor would take it) */
	rfi_fmt(path, sizeof(path), "%s.idx", name);
	s->idx_fd = make_file(c, c->segdir, path, O_RDWR);
	rfi_fmt(path, sizeof(path), "%s.new", name);
	s->data_fd = s->idx_fd < 0 ? -1 : make_file(c, c->segdir, path, O_RDWR);
	char final[RF_CACHE_SEG_NAME_MAX + 8];
	rfi_fmt(final, sizeof(final), "%s.data", name);
	if (s->data_fd < 0 || flock(s->data_fd, LOCK_EX | LOCK_NB) ||
	    renameat(c->segdir, path, c->segdir, final)) {
		/* ENOENT: a `ringfeed cache --clear` took it between its making and
		 * its lock (it looked left behind): the next fill makes another */
		if (errno != ENOENT && errno != EWOULDBLOCK)
			stop_writing(c, "cannot make a segment", errno);
		unlinkat(c->segdir, path, 0);
		goto undo;
	}
	s->file = rfi_io_file_open(c->p.io, c->segdir, final);
	s->recs = malloc(MAX_PENDING * sizeof(rf_cache_rec));
	s->wbuf = malloc(MAX_PENDING * sizeof(rf_cache_rec));
	s->rec_pending = malloc(MAX_PENDING * sizeof(uint32_t));
	s->wbuf_pending = malloc(MAX_PENDING * sizeof(uint32_t));
	if (s->file < 0 || !s->recs || !s->wbuf || !s->rec_pending || !s->wbuf_pending) {
		stop_writing(c, "cannot make a segment", s->file < 0 ? -s->file : ENOMEM);
		goto undo;
	}
	c->cur = slot;
	ret = 0;
	goto out;
undo:
	rfi_fmt(path, sizeof(path), "%s.data", name);
	unlinkat(c->segdir, path, 0);
	rfi_fmt(path, sizeof(path), "%s.idx", name);
	unlinkat(c->segdir, path, 0);
	s->alive = 0;
	s->mine = 0;
	seg_release(c, slot);
out:
	flock(c->format_fd, LOCK_UN);
	return ret;
}

/* ---- open, close ---- */

/* FORMAT, made: written whole under a temporary name (O_EXCL: a leftover
 * of a process of this pid, or a link planted there, loses its name, and
 * nothing it points at is opened), then renamed. @return : 0, or an errno. */
static int make_format(rf_cache *c, int rootfd)
{
	char tmp[64];
	rfi_fmt(tmp, sizeof(tmp), "FORMAT.%d", (int)getpid());
	int w = make_file(c, rootfd, tmp, O_WRONLY);
	if (w < 0 && errno == EEXIST && !unlinkat(rootfd, tmp, 0))
		w = make_file(c, rootfd, tmp, O_WRONLY);
	if (w < 0)
		return errno;
	int ok = write(w, RF_CACHE_FORMAT, strlen(RF_CACHE_FORMAT)) == (ssize_t)strlen(RF_CACHE_FORMAT);
	int e = ok ? 0 : errno ? errno : EIO;
	close(w);
	if (ok && renameat(rootfd, tmp, rootfd, "FORMAT"))
		e = errno;
	if (e)
		unlinkat(rootfd, tmp, 0);
	return e;
}

/* Makes DIR/ringfeed-cache and what is in it, or finds it, and checks it is
 * the user's (the user's and the trusted group's) alone. @return : 0, or
 * the errno (EPERM: not the user's, c->why says what; EPROTO: not a cache
 * of this version). */
static int open_folder(rf_cache *c)
{
	/* DIR itself is made (its parent must be there), and opened as the user
	 * names it, links and all; everything in it never through a link */
	if (mkdir(c->p.dir, 0755) && errno != EEXIST)
		return errno;
	int top = open(c->p.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return errno;
	if (!parent_trusted(c, top)) {
		close(top);
		return EPERM;
	}
	int rootfd = make_folder(c, top, RF_CACHE_DIR, "the folder itself");
	close(top);
	if (rootfd < 0)
		return errno;
	int fd = open_file(c, rootfd, "", "FORMAT", O_RDONLY);
	if (fd < 0 && errno == ENOENT) { /* a new cache */
		int e = make_format(c, rootfd);
		if (e) {
			close(rootfd);
			return e;
		}
		fd = open_file(c, rootfd, "", "FORMAT", O_RDONLY);
	}
	if (fd < 0) {
		int e = errno;
		close(rootfd);
		return e;
	}
	char text[64] = "";
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	if (n != (ssize_t)strlen(RF_CACHE_FORMAT) || memcmp(text, RF_CACHE_FORMAT, (size_t)n)) {
		close(fd);
		close(rootfd);
		return EPROTO; /* not our folder, or another version of it */
	}
	c->format_fd = fd;
	c->segdir = make_folder(c, rootfd, "segments", "segments/");
	int e = c->segdir < 0 ? errno : 0;
	if (!e) {
		c->claims_fd = open_file(c, rootfd, "", "claims", O_RDWR);
		if (c->claims_fd < 0 && errno == ENOENT) {
			c->claims_fd = make_file(c, rootfd, "claims", O_RDWR);
			if (c->claims_fd < 0 && errno == EEXIST) /* another process made it now */
				c->claims_fd = open_file(c, rootfd, "", "claims", O_RDWR);
		}
		if (c->claims_fd < 0 && errno == EPERM && c->why[0])
			e = EPERM; /* another's claims file: not a cache of the user's */
		else if (c->claims_fd < 0) /* a read-only cache: served from, never written */
			stop_writing(c, "cannot write its claims file", errno);
	}
	close(rootfd);
	return e;
}

/* The sizes that follow from the cache's bytes: a segment, its records'
 * room, and how many segments fit. */
static void set_sizes(rf_cache *c, uint64_t bytes)
{
	c->seg_bytes = RF_MIN(RF_MAX(bytes / 16, SEG_MIN), SEG_MAX);
	c->seg_bytes &= ~4095ull;
	c->idx_cap = c->seg_bytes / 16 / sizeof(rf_cache_rec) * sizeof(rf_cache_rec);
	c->max_segs = bytes > META_BYTES ? (bytes - META_BYTES) / (c->seg_bytes + c->idx_cap) : 0;
}

/* c's tables and its root's name (DIR/ringfeed-cache, DIR without its
 * trailing slashes). @return : 0, or -ENOMEM (what was made is freed with
 * c). */
static int alloc_tables(rf_cache *c, const char *dir)
{
	size_t n = strlen(dir);
	c->root = malloc(n + sizeof("/" RF_CACHE_DIR));
	c->segs = calloc(RF_CACHE_MAX_FILES, sizeof(seg));
	c->tab_cap = 1024;
	c->tab = calloc(c->tab_cap, sizeof(ent));
	c->pend = calloc(MAX_PENDING, sizeof(pending));
	c->pfree = malloc(MAX_PENDING * sizeof(uint32_t));
	c->queued = malloc(MAX_PENDING * sizeof(uint32_t));
	if (!c->root || !c->segs || !c->tab || !c->pend || !c->pfree || !c->queued ||
	    rfi_bufpool_init(&c->staging, staging_bytes, 64, MAX_PENDING))
		return -ENOMEM;
	memcpy(c->root, dir, n);
	while (n > 1 && c->root[n - 1] == '/')
		n--;
	rfi_fmt(c->root + n, sizeof("/" RF_CACHE_DIR), "/%s", RF_CACHE_DIR);
	for (uint32_t i = 0; i < RF_CACHE_MAX_FILES; i++)
		c->segs[i].file = c->segs[i].idx_fd = c->segs[i].data_fd = -1;
	for (uint32_t k = 0; k < MAX_PENDING; k++)
		c->pfree[c->npfree++] = MAX_PENDING - 1 - k;
	return 0;
}

/* The one warning of a cache that is not used: why (e: the errno of the
 * group's lookup or of open_folder(), 0 when the bytes were too few). */
static void say_no_cache(const rf_cache *c, int e, uint64_t bytes)
{
	const rf_cache_params *p = &c->p;
	if (e == ESRCH)
		rfi_log(p->log_level, RF_LOG_WARN, "cache %s: the group trusted to share it, "
		       "'%s', is not a group here; no cache, every read goes to the network",
		       c->root, p->group);
	else if (e == EPERM && c->why[0])
		rfi_log(p->log_level, RF_LOG_WARN, "cache %s: %s; no cache, every read goes to "
		       "the network", c->root, c->why);
	else if (c->max_segs < 2)
		rfi_log(p->log_level, RF_LOG_WARN, "cache %s: %llu bytes hold fewer than two "
		       "segments; no cache", c->root, (unsigned long long)bytes);
	else if (e == EPROTO)
		rfi_log(p->log_level, RF_LOG_WARN, "cache %s: not a ringfeed cache of this "
		       "version (its FORMAT differs); no cache, every read goes to the network",
		       c->root);
	else
		rfi_log(p->log_level, RF_LOG_WARN, "cache %s: %s; no cache, every read goes to "
		       "the network", c->root, strerror(e));
}

int rfi_cache_open(rf_cache **out, const rf_cache_params *p)
{
	*out = NULL;
	rf_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->p = *p;
	c->segdir = c->format_fd = c->claims_fd = -1;
	c->cur = NO_SEG;
	c->writable = 1;
	c->gid = -1;
#if RF_TEST_HOOKS
	c->test_hold = hold_fills;
#endif
	uint64_t bytes = p->bytes ? p->bytes : RF_CACHE_DEFAULT_BYTES;
	set_sizes(c, bytes);
	if (alloc_tables(c, p->dir)) {
		rfi_cache_free(c);
		return -ENOMEM;
	}
	int e = 0;
	if (p->group && p->group[0]) {
		gid_t gid;
		e = rfi_cache_group_id(p->group, &gid) ? ESRCH : 0;
		c->gid = e ? -1 : (int64_t)gid;
	}
	if (!e && c->max_segs >= 2)
		e = open_folder(c);
	if (c->max_segs < 2 || e) {
		say_no_cache(c, e, bytes);
		rfi_cache_free(c);
		return 0;
	}
	rfi_cache_refresh(c);
	*out = c;
	return 0;
}

void rfi_cache_free(rf_cache *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; c->segs && i < c->nsegs; i++) {
		flush(&c->segs[i], 1); /* this process's last segment: its tail to the disk */
		close_files(&c->segs[i]); /* the engine is gone: its handles closed with it */
	}
	if (c->segdir >= 0)
		close(c->segdir);
	if (c->format_fd >= 0)
		close(c->format_fd);
	if (c->claims_fd >= 0)
		close(c->claims_fd);
	rfi_bufpool_destroy(&c->staging);
	free(c->root);
	free(c->segs);
	free(c->tab);
	free(c->pend);
	free(c->pfree);
	free(c->queued);
	free(c);
}

/* ---- reads ---- */

int rfi_cache_find(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len, rf_cache_hit *hit)
{
	ent *e = tab_cell(c, object, offset, len);
	if (e->object && e->seg == FETCHING)
		return 2;
	if (!e->object || !ent_live(c, e))
		return 0;
	seg *s = &c->segs[e->seg];
	if (s->file < 0)
		return 0;
	*hit = (rf_cache_hit){ .file = s->file, .at = e->at, .got = e->got, .seg = e->seg,
			       .data_hash = e->hash };
	s->inflight++;
	s->last_used = rfi_now_ns();
	return 1;
}

void rfi_cache_read_done(rf_cache *c, const rf_cache_hit *hit)
{
	seg *s = &c->segs[hit->seg];
	assert(s->inflight > 0);
	s->inflight--;
	seg_release(c, hit->seg);
}

int rfi_cache_verify(rf_cache *c, const rf_cache_hit *hit, const uint8_t *data, int32_t got)
{
	if (got >= 0 && (uint32_t)got == hit->got && rfi_hash_data(data, (size_t)got) == hit->data_hash)
		return 1;
	/* bytes lost in a crash, or the file damaged: this range is not used again */
	for (uint64_t i = 0; i < c->tab_cap; i++) {
		ent *e = &c->tab[i];
		if (e->object && e->seg == hit->seg && e->at == hit->at && e->hash == hit->data_hash)
			e->gen = c->segs[hit->seg].gen - 1; /* dead: its segment's old generation */
	}
	if (!c->warned_bytes)
		warn(c, got < 0 ? "segment %s cannot be read" : "bytes in segment %s do not match "
		     "their record", c->segs[hit->seg].name, got < 0 ? -got : 0);
	c->warned_bytes = 1;
	return 0;
}

uint32_t rfi_cache_segment_of(const rf_cache *c, uint64_t object, uint64_t offset, uint32_t len)
{
	ent *e = tab_cell((rf_cache *)c, object, offset, len);
	return e->object && ent_live(c, e) ? e->seg : UINT32_MAX;
}

/* ---- claims ---- */

/* The range is being fetched by this process: another read of it here
 * waits for that fetch's record rather than fetching it again (the claim,
 * a lock this process holds, does not stop a second read of its own). */
static void mark_fetching(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len)
{
	if ((c->tab_used + 1) * 2 > c->tab_cap && tab_grow(c))
		return;
	ent *e = tab_cell(c, object, offset, len);
	if (!e->object)
		c->tab_used++;
	*e = (ent){ .object = object, .offset = offset, .len = len, .seg = FETCHING };
}

static int lock(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET,
			    .l_start = (off_t)(key_of(object, offset, len) >> 2), .l_len = 1 };
	return fcntl(c->claims_fd, F_OFD_SETLK, &fl);
}

int rfi_cache_claim(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len)
{
	if (!c->writable || c->claims_fd < 0)
		return RF_CACHE_OFF;
	if (!lock(c, object, offset, len, F_WRLCK)) {
		/* its fetcher may have published it and let go just now (a claim
		 * goes only after its record is written): looked for once more */
		look_again(c);
		ent *e = tab_cell(c, object, offset, len);
		if (e->object && ent_live(c, e)) {
			lock(c, object, offset, len, F_UNLCK);
			return RF_CACHE_FOUND;
		}
		mark_fetching(c, object, offset, len);
		return RF_CACHE_MINE;
	}
	if (errno == EAGAIN || errno == EACCES)
		return RF_CACHE_THEIRS;
	stop_writing(c, "cannot claim a range (file locks)", errno);
	return RF_CACHE_OFF;
}

void rfi_cache_unclaim(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len)
{
	ent *e = tab_cell(c, object, offset, len);
	if (e->object && e->seg == FETCHING)
		e->seg = GONE;
	if (c->claims_fd >= 0)
		lock(c, object, offset, len, F_UNLCK);
}

/* ---- writes ---- */

static void pending_drop(rf_cache *c, uint32_t k)
{
	pending *q = &c->pend[k];
	rfi_cache_unclaim(c, q->rec.object, q->rec.offset, q->rec.len);
	rfi_bufpool_free(&c->staging, q->ticket);
	c->pfree[c->npfree++] = k;
}

static int submit_data(rf_cache *c, uint32_t k)
{
	pending *q = &c->pend[k];
	seg *s = &c->segs[q->seg];
	return rfi_io_write(c->p.io, s->data_fd, q->buf, q->rec.got, q->rec.at, TAG_DATA | k);
}

/* Where a range of got bytes goes in a segment whose bytes end at end: there,
 * or at the next O_DIRECT boundary when that saves its reads a block (a
 * range stored across one more boundary than its size needs costs every
 * read of it a block more: 1.5x the bytes for 1-16 KiB samples). The gap
 * is a few bytes of a block already written, or a hole. */
static uint64_t place(const rf_cache *c, uint64_t end, uint32_t got)
{
	uint64_t a = rfi_io_align(c->p.io);
	if (a <= 1 || !got)
		return end;
	uint64_t blocks = (end % a + got + a - 1) / a, least = (got + a - 1) / a;
	return blocks > least ? RF_ALIGN_UP(end, a) : end;
}

/* A pending cell and got bytes of staging memory for a fill. When the
 * writes are behind (every cell or the staging memory taken), the fill
 * waits for them (backpressure: the ring thread fetches no faster than the
 * cache's disk takes the bytes, and no fetched range is dropped for want
 * of room, to be fetched again). The wait needs nothing from the caller:
 * rfi_cache_step() submits the queued writes and publishes the written
 * ones, which frees their cells and memory. It ends: FILL_WAIT_NS at most,
 * after which the writes count as stuck (one warning) and fills drop at
 * once until a write finishes. @return : the cell, or -1 (not cached). */
static int64_t stage(rf_cache *c, uint32_t got, uint32_t *ticket, uint8_t **buf)
{
	uint64_t until = 0;
	if (RF_ALIGN_UP((size_t)(got ? got : 1), 64) > c->staging.cap)
		return -1; /* never fits, however long it waits */
	for (;;) {
		if (c->npfree && !rfi_bufpool_alloc(&c->staging, got ? got : 1, ticket, buf))
			return c->pfree[--c->npfree];
		if (c->stalled || !c->writable)
			return -1;
		uint64_t now = rfi_now_ns();
		if (!until) {
			until = now + FILL_WAIT_NS;
			c->n.fill_waits++;
		} else if (now >= until) {
			c->stalled = 1;
			if (!c->warned_stall)
				rfi_log(c->p.log_level, RF_LOG_WARN, "cache %s: its writes made no room "
				       "for %llu s; ranges fetched meanwhile are not cached", c->root,
				       (unsigned long long)(FILL_WAIT_NS / 1000000000ull));
			c->warned_stall = 1;
			return -1;
		}
		rfi_cache_step(c);
		if (c->npfree && !rfi_bufpool_alloc(&c->staging, got ? got : 1, ticket, buf))
			return c->pfree[--c->npfree];
		/* a write's completion wakes the engine; so do reads waiting to be
		 * reaped (the caller's, later): then a nap, not a spin */
		if (rfi_io_wait_until(c->p.io, RF_MIN(until, now + 10000000ull)))
			return -1;
		if (rfi_now_ns() - now < FILL_NAP_NS / 2)
			nanosleep(&(struct timespec){ 0, FILL_NAP_NS }, NULL);
	}
}

int rfi_cache_fill(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len,
		  const uint8_t *data, uint32_t got)
{
#if RF_TEST_HOOKS
	if (c->test_hold)
		return 1; /* a claimer that stalls after its fetch: the claim stays */
#endif
	if (!c->writable || got > c->seg_bytes)
		goto drop;
	uint32_t ticket;
	uint8_t *buf;
	int64_t cell = stage(c, got, &ticket, &buf); /* first: its wait may seal segments */
	if (cell < 0) {
		c->n.fill_drops++;
		goto drop;
	}
	uint32_t k = (uint32_t)cell;
	seg *s = c->cur != NO_SEG ? &c->segs[c->cur] : NULL;
	uint64_t at = s ? place(c, s->data_end, got) : 0;
	if (!s || at + got > c->seg_bytes || s->idx_end + sizeof(rf_cache_rec) > c->idx_cap) {
		if (new_segment(c)) {
			rfi_bufpool_free(&c->staging, ticket);
			c->pfree[c->npfree++] = k;
			goto drop;
		}
		s = &c->segs[c->cur];
		at = 0;
	}
	pending *q = &c->pend[k];
	q->ticket = ticket;
	q->buf = buf;
	memcpy(q->buf, data, got);
	q->seg = c->cur;
	q->rec = (rf_cache_rec){ .object = object, .offset = offset, .len = len, .got = got,
				 .at = at, .data_hash = rfi_hash_data(data, got) };
	q->rec.check = rec_check(&q->rec);
	s->data_end = at + got;
	s->idx_end += sizeof(rf_cache_rec);
	s->writes++;
	if (c->nqueued || submit_data(c, k))
		c->queued[c->nqueued++] = k;
	return 1;
drop:
	rfi_cache_unclaim(c, object, offset, len);
	return 0;
}

/* Writes the records whose bytes are written, in one write, if none is in flight. */
static void write_records(rf_cache *c, uint32_t i)
{
	seg *s = &c->segs[i];
	if (s->writing_recs || !s->nrecs)
		return;
	memcpy(s->wbuf, s->recs, s->nrecs * sizeof(rf_cache_rec));
	if (rfi_io_write(c->p.io, s->idx_fd, s->wbuf, s->nrecs * (uint32_t)sizeof(rf_cache_rec),
			s->idx_pos, TAG_RECS | i))
		return; /* no room: the next step tries again */
	memcpy(s->wbuf_pending, s->rec_pending, s->nrecs * sizeof(uint32_t));
	s->writing_recs = s->nrecs;
	s->nrecs = 0;
}

/* A range's bytes are written: its record waits for the next record write. */
static void data_written(rf_cache *c, uint32_t k, int res)
{
	pending *q = &c->pend[k];
	seg *s = &c->segs[q->seg];
	if (res != (int)q->rec.got) {
		stop_writing(c, "cannot write to it", res < 0 ? -res : ENOSPC);
		pending_drop(c, k);
		s->writes--;
		return;
	}
	assert(s->nrecs < MAX_PENDING);
	s->recs[s->nrecs] = q->rec;
	s->rec_pending[s->nrecs++] = k;
}

/* A record write finished: its ranges are published (found by this process
 * from now on, by the others at their next look), their claims let go. */
static void records_written(rf_cache *c, uint32_t i, int res)
{
	seg *s = &c->segs[i];
	uint32_t n = s->writing_recs;
	int ok = res == (int)(n * sizeof(rf_cache_rec));
	if (!ok)
		stop_writing(c, "cannot write to it", res < 0 ? -res : ENOSPC);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t k = s->wbuf_pending[j];
		if (ok) {
			tab_put(c, i, &c->pend[k].rec);
			c->n.written_bytes += c->pend[k].rec.got;
			s->published = RF_MAX(s->published, c->pend[k].rec.at + c->pend[k].rec.got);
		}
		pending_drop(c, k);
	}
	if (ok)
		s->idx_pos += n * sizeof(rf_cache_rec);
	s->writes -= n;
	s->writing_recs = 0;
	flush(s, 0);
}

void rfi_cache_step(rf_cache *c)
{
	uint32_t n;
	while ((n = rfi_io_reap_writes(c->p.io, c->wrote, RF_IO_MAX_WRITES)) > 0) {
		c->stalled = 0; /* a write finished: they are not stuck */
		for (uint32_t j = 0; j < n; j++) {
			uint64_t tag = c->wrote[j].tag;
			if (tag & TAG_DATA)
				data_written(c, (uint32_t)(tag & 0xffffffffu), c->wrote[j].res);
			else
				records_written(c, (uint32_t)(tag & 0xffffffffu), c->wrote[j].res);
		}
	}
	/* data writes that waited for room, in order */
	uint32_t done = 0;
	while (done < c->nqueued && !submit_data(c, c->queued[done]))
		done++;
	memmove(c->queued, c->queued + done, (c->nqueued - done) * sizeof(uint32_t));
	c->nqueued -= done;
	for (uint32_t i = 0; i < c->nsegs; i++) {
		seg *s = &c->segs[i];
		if (!s->used || !s->mine)
			continue;
		write_records(c, i);
		if (i != c->cur && !s->writes)
			seal(c, i);
	}
	if (rfi_now_ns() - c->last_refresh >= REFRESH_NS)
		rfi_cache_refresh(c);
}

void rfi_cache_counts_get(const rf_cache *c, rf_cache_counts *out)
{
	*out = c->n;
}

/* Ranges filled and not yet published (their data or record write to come). */
static uint32_t unpublished(const rf_cache *c)
{
	return MAX_PENDING - c->npfree;
}

void rfi_cache_flush(rf_cache *c, uint64_t deadline)
{
	rf_io_done done[64];
	while (unpublished(c) && rfi_now_ns() < deadline) {
		rfi_cache_step(c);
		if (!unpublished(c))
			break;
		/* the reads still in flight are not wanted: the loader is closing */
		while (rfi_io_reap(c->p.io, done, 64))
			;
		if (rfi_io_wait_until(c->p.io, RF_MIN(deadline, rfi_now_ns() + 10000000ull)))
			break;
	}
}
