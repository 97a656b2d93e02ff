/* index_file.c - the index cache: an index written to a file so that later runs
 * load it instead of walking the tree, and notice when the tree changed.
 *
 * Format (native byte order, version 2): magic "RFINDEX\0", u32 version,
 * u32 any_name, (version 9:) u32 kind, u64 count, u64 paths_len, u32 nclasses, u32 nstamps,
 * u32 has_weights, then strings as u32 length + bytes: source (canonical
 * path), root, classes, and per stamp its path + i64 mtime_sec +
 * i64 mtime_nsec + u64 ino; then count 24-byte records, the path arena,
 * count doubles of sampling weights when has_weights (a manifest's third
 * column), count 16-byte member records when nshards > 0, and a u64
 * checksum of everything before it. Version 4 adds, after has_weights,
 * u32 nshards, and after the stamps each shard's path (a string) and its
 * class folder label (i32). Version 7 adds, after nshards, u32 nextra_names
 * and u64 nextras, after the shards the extras' names (strings), and after
 * the members, when nextras > 0, count u32 extra_first and nextras 16-byte
 * extra records (a sample's other members, extras.c). Version 8 adds after
 * each shard's label its ETag (a string; "" for local shards) and its size
 * (u64). Version 9 adds, after any_name, the source kind that built the
 * index (rf_index.kind): what it is comes from there, never from its
 * records. Version 10 adds, after nextras, u64 kind_blob_len, and after
 * the extras that many bytes: the kind's own part (rf_index.kind_blob: a
 * Parquet table, written and judged by its kind alone). (Older versions
 * are walked again and rewritten.)
 *
 * Remote shards (http(s)://, s3://): the cache is the index object a
 * source fetches instead of scanning its shards (rfi_index_cache_adopt):
 * written by `ringfeed index` and put beside the shards, or kept on the
 * local disk, or written by `ringfeed pack` beside its shards
 * (DIR/ringfeed.index: a remote source looks for it there). It holds no
 * stamps; it matches a source that lists the same shard names (wherever
 * they were indexed), and each shard's reads ask for the ETag it had when
 * indexed (If-Match), so a shard changed since fails its reads (HTTP 412),
 * never half-read. A shard indexed without an ETag (from a local copy) has
 * its size checked and its ETag taken at set-up, a byte of each asked for
 * (rfi_index_check_remote).
 *
 * Staleness: adding, removing or renaming a file changes its directory's
 * mtime; every directory walked is recorded and checked at load (for a
 * manifest, the manifest file itself). A file rewritten in place does not
 * change its directory: the ring thread checks each file's size as it reads
 * it (a changed size fails that sample, with the reason). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h> /* kill(pid, 0) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "ringfeed.h"
#include "util/hash.h" /* rfi_mix64 */
#include "util/util.h"

#define CACHE_MAGIC "RFINDEX"
/* 3: the mode word holds RF_INDEX_HIDDEN too; 4: shards; 5: shard entries may
 * be lost spans and carry the finer reasons (issue 23), and the mode word the
 * source kind; a version-4 cache of a damaged shard holds only what the old
 * scan kept, so it is scanned again; 6: .png and .webp files and members are
 * images (issue 27): a version-5 cache left them out of a tree (or held them
 * as samples without an image), so it is walked again; 7: a sample's other
 * members (extras: KEY.txt, KEY.json), which version 6 did not keep; 8:
 * each shard's ETag (remote shards); 9: the source kind (a version-8 cache
 * left it to be guessed from its shards); 10: the kind's own bytes (a
 * Parquet table: footers, page locations, labels) */
#define CACHE_VERSION 10u

static int read_at(int fd, void *p, size_t n, off_t off);

typedef struct writer {
	FILE *f;
	uint64_t sum;
	int ok;
} writer;

/* The cache's checksum, the one both the writer and the reader use: sum
 * mixed with p[n]. Metadata (bulk = 0) byte by byte; the bulk arrays (records,
 * paths, weights) 8 bytes at a time, which is what keeps a million-file
 * cache fast to check. */
static uint64_t checksum(uint64_t sum, const void *p, size_t n, int bulk)
{
	const uint8_t *b = p;
	size_t i = 0;
	if (bulk) {
		uint64_t x;
		for (; i + 8 <= n; i += 8) {
			memcpy(&x, b + i, 8);
			sum = rfi_mix64(sum ^ x);
		}
		for (; i < n; i++)
			sum = rfi_mix64(sum ^ b[i]);
		return sum;
	}
	for (; i < n; i++)
		sum = rfi_mix64(sum ^ b[i]) + i;
	return sum;
}

static void put_as(writer *w, const void *p, size_t n, int bulk)
{
	w->sum = checksum(w->sum, p, n, bulk);
	if (n && w->ok && fwrite(p, 1, n, w->f) != n) /* n 0: p may be NULL (no records) */
		w->ok = 0;
}

static void put(writer *w, const void *p, size_t n)
{
	put_as(w, p, n, 0);
}

static void put_bulk(writer *w, const void *p, size_t n)
{
	put_as(w, p, n, 1);
}

static void put_str(writer *w, const char *s)
{
	uint32_t n = (uint32_t)strlen(s);
	put(w, &n, sizeof(n));
	put(w, s, n);
}

/* A source or root that may be a URL: written as rfi_redact() shows it, so
 * that no password is ever stored (a remote index matches its source by
 * that form too, rfi_index_cache_adopt). */
static void put_url(writer *w, const char *s)
{
	char *shown = rfi_redact_dup(s);
	if (!shown)
		w->ok = 0;
	put_str(w, shown ? shown : "");
	free(shown);
}

/* Opens the file the cache is written to: an unnamed file (O_TMPFILE) in
 * path's folder where the file system has them, so that a writer killed
 * half-way leaves nothing behind; else tmp itself. *unnamed says which. */
static FILE *open_temp(const char *path, const char *tmp, int *unnamed)
{
	char *folder = strdup(path);
	if (!folder)
		return NULL;
	char *slash = strrchr(folder, '/');
	const char *d = slash ? (slash == folder ? "/" : (*slash = '\0', folder)) : ".";
	/* 0600: the user's alone (it names the source, and a list of the
	 * user's files; a URL's password is never in it, see put_url) */
	int fd = open(d, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	free(folder);
	*unnamed = fd >= 0;
	if (fd < 0)
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "wb");
	if (!f)
		close(fd);
	return f;
}

/* Gives the unnamed file f the name tmp (from where rename() moves it). */
static int name_temp(FILE *f, const char *tmp)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fileno(f));
	unlink(tmp); /* a leftover of a process with our pid */
	if (linkat(fileno(f), "", AT_FDCWD, tmp, AT_EMPTY_PATH) == 0) /* CAP_DAC_READ_SEARCH */
		return 0;
	return linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW);
}

int rfi_index_cache_check_target(const char *path, char *err, size_t errlen)
{
	int fd = rfi_open_regular(AT_FDCWD, path, "index cache", err, errlen);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd == -EINVAL ? RF_ECONFIG : fd;
	char magic[8];
	int ours = read_at(fd, magic, sizeof(magic), 0) == 0 && !memcmp(magic, CACHE_MAGIC, 8);
	close(fd);
	if (ours)
		return 0;
	rfi_fmt(err, errlen, "index cache '%s': the file exists and is not a ringfeed index cache; "
	       "it is not overwritten (name a new file, or remove this one)", path);
	return RF_ECONFIG;
}

/* Removes PATH.tmp.PID files of writers no longer alive. The unnamed file
 * has a name only between its linkat and its rename: a writer killed
 * (SIGKILL) in that moment leaves one, which the next write of PATH takes
 * away. */
static void sweep_temps(const char *path)
{
	char *folder = strdup(path);
	if (!folder)
		return;
	char *slash = strrchr(folder, '/');
	const char *base = slash ? slash + 1 : path;
	const char *d = slash ? (slash == folder ? "/" : (*slash = '\0', folder)) : ".";
	size_t n = strlen(base);
	DIR *dir = opendir(d);
	struct dirent *e;
	while (dir && (e = readdir(dir))) {
		char *end;
		if (strncmp(e->d_name, base, n) || strncmp(e->d_name + n, ".tmp.", 5))
			continue;
		long pid = strtol(e->d_name + n + 5, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() || !(kill((pid_t)pid, 0) && errno == ESRCH))
			continue;
		unlinkat(dirfd(dir), e->d_name, 0);
	}
	if (dir)
		closedir(dir);
	free(folder);
}

/* The header's counts, then the source (its canonical path) and the root. */
static void put_header(writer *w, const rf_index *idx, const char *source)
{
	char *canon = realpath(source, NULL);
	uint32_t version = CACHE_VERSION, any = (uint32_t)idx->any_name, kind = idx->kind;
	uint64_t count = idx->count, plen = idx->paths_len;
	uint32_t ncl = (uint32_t)idx->nclasses, nst = (uint32_t)idx->nstamps;
	uint32_t has_weights = idx->weights != NULL;
	uint32_t nsh = (uint32_t)idx->nshards, nxn = idx->nextra_names;
	uint64_t nx = idx->extra_first ? idx->nextras : 0;
	uint64_t blob = idx->kind_blob_len;
	put(w, CACHE_MAGIC, 8);
	put(w, &version, 4);
	put(w, &any, 4);
	put(w, &kind, 4);
	put(w, &count, 8);
	put(w, &plen, 8);
	put(w, &ncl, 4);
	put(w, &nst, 4);
	put(w, &has_weights, 4);
	put(w, &nsh, 4);
	put(w, &nxn, 4);
	put(w, &nx, 8);
	put(w, &blob, 8);
	put_url(w, canon ? canon : source);
	free(canon);
	put_url(w, idx->root);
}

/* The rest of the header: class names, stamps, shards (label, ETag, size),
 * extra names. */
static void put_strings(writer *w, const rf_index *idx)
{
	uint32_t ncl = (uint32_t)idx->nclasses, nst = (uint32_t)idx->nstamps;
	uint32_t nsh = (uint32_t)idx->nshards, nxn = idx->nextra_names;
	for (uint32_t i = 0; i < ncl; i++)
		put_str(w, idx->classes[i]);
	for (uint32_t i = 0; i < nst; i++) {
		const rf_index_stamp *s = &idx->stamps[i];
		put_str(w, s->path);
		put(w, &s->mtime_sec, 8);
		put(w, &s->mtime_nsec, 8);
		put(w, &s->ino, 8);
	}
	for (uint32_t i = 0; i < nsh; i++) {
		put_str(w, idx->shards[i]);
		put(w, &idx->shard_labels[i], 4);
		put_str(w, idx->etags ? idx->etags[i] : "");
		uint64_t size = idx->shard_sizes ? idx->shard_sizes[i] : 0;
		put(w, &size, 8);
	}
	for (uint32_t i = 0; i < nxn; i++)
		put_str(w, idx->extra_names[i]);
}

/* The bulk: records, the path arena, weights, members, extras. */
static void put_records(writer *w, const rf_index *idx)
{
	uint64_t count = idx->count;
	uint32_t nsh = (uint32_t)idx->nshards; /* as the header counts them */
	uint64_t nx = idx->extra_first ? idx->nextras : 0;
	put_bulk(w, idx->entries, count * sizeof(rf_index_entry));
	put_bulk(w, idx->paths, idx->paths_len);
	if (idx->weights)
		put_bulk(w, idx->weights, count * sizeof(double));
	if (nsh)
		put_bulk(w, idx->members, count * sizeof(rf_index_member));
	if (nx) {
		put_bulk(w, idx->extra_first, count * sizeof(uint32_t));
		put_bulk(w, idx->extras, nx * sizeof(rf_index_extra));
	}
	if (idx->kind_blob_len)
		put_bulk(w, idx->kind_blob, idx->kind_blob_len);
}

/* Ends the file w writes: its checksum, on disk, named tmp (when unnamed),
 * then renamed to path. @return : 0, or a negative errno (err set; tmp
 * removed). */
static int finish(writer *w, const char *tmp, int unnamed, const char *path, char *err,
		  size_t errlen)
{
	uint64_t sum = w->sum;
	if (w->ok && fwrite(&sum, 1, 8, w->f) != 8)
		w->ok = 0;
	/* on disk before the rename makes it the cache (a crash must leave the
	 * old cache or the new one, never a torn one under the final name) */
	if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0)
		w->ok = 0;
	if (w->ok && unnamed && name_temp(w->f, tmp) != 0)
		w->ok = 0;
	if (fclose(w->f) != 0)
		w->ok = 0;
	int ret = 0;
	if (!w->ok || rename(tmp, path) != 0) {
		ret = errno ? -errno : -EIO;
		rfi_fmt(err, errlen, "index cache '%s': %s", path, strerror(errno));
		unlink(tmp);
	}
	return ret;
}

int rfi_index_cache_write(const rf_index *idx, const char *source, const char *path, char *err,
			 size_t errlen)
{
	int checked = rfi_index_cache_check_target(path, err, errlen);
	if (checked)
		return checked;
	sweep_temps(path);
	char *tmp;
	if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
		return -ENOMEM;
	int unnamed;
	writer w = { .f = open_temp(path, tmp, &unnamed), .sum = 0x726676696478ull, .ok = 1 };
	if (!w.f) {
		int e = errno;
		rfi_fmt(err, errlen, "index cache '%s': %s", path, strerror(e));
		free(tmp);
		return -e;
	}
	put_header(&w, idx, source);
	put_strings(&w, idx);
	put_records(&w, idx);
	int ret = finish(&w, tmp, unnamed, path, err, errlen);
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
	r->sum = checksum(r->sum, b, n, bulk);
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

/* Walks the header (strings included) without keeping anything: does it
 * end inside the bytes the reader holds? */
static int header_fits(reader *r)
{
	get(r, 20, 0); /* magic, version, any_name, kind */
	get_u(r, 8);
	get_u(r, 8);
	uint32_t ncl = (uint32_t)get_u(r, 4), nst = (uint32_t)get_u(r, 4);
	get_u(r, 4); /* has_weights */
	uint32_t nsh = (uint32_t)get_u(r, 4), nxn = (uint32_t)get_u(r, 4);
	get_u(r, 8); /* nextras */
	get_u(r, 8); /* kind_blob_len */
	for (uint32_t i = 0; r->ok && i < 2 + ncl; i++)
		get(r, (uint32_t)get_u(r, 4), 0);
	for (uint32_t i = 0; r->ok && i < nst; i++) {
		get(r, (uint32_t)get_u(r, 4), 0);
		get(r, 24, 0);
	}
	for (uint32_t i = 0; r->ok && i < nsh; i++) {
		get(r, (uint32_t)get_u(r, 4), 0);
		get(r, 4, 0);
		get(r, (uint32_t)get_u(r, 4), 0);
		get(r, 8, 0);
	}
	for (uint32_t i = 0; r->ok && i < nxn; i++)
		get(r, (uint32_t)get_u(r, 4), 0);
	return r->ok;
}

/* Each shard named, its label -1 (raw files beside the classes) or a class. */
static int shards_valid(const rf_index *t)
{
	for (size_t i = 0; i < t->nshards; i++)
		if (!t->shards[i] || t->shard_labels[i] < -1 ||
		    (t->nclasses > 0 && t->shard_labels[i] >= (int64_t)t->nclasses))
			return 0;
	return 1;
}

/* Entry i: its path inside the arena, ending with its NUL there; its size a
 * byte count or an errno (or a shard sample's reason code); its label -1
 * or a class. */
static int entry_valid(const rf_index *t, uint64_t i)
{
	const rf_index_entry *e = &t->entries[i];
	if ((uint64_t)e->path_len >= t->paths_len || e->path_off >= t->paths_len - e->path_len ||
	    t->paths[e->path_off + e->path_len] != '\0')
		return 0;
	int reason = t->nshards && RF_INDEX_IS_REASON(e->size);
	return !((e->size < -4095 && !reason) || e->label < -1 ||
		 (t->nclasses > 0 && e->label >= (int64_t)t->nclasses));
}

/* Sample i's member (of a shard source): in a listed shard, below 2^62
 * bytes, its size below 4 GiB. */
static int member_valid(const rf_index *t, uint64_t i)
{
	const rf_index_member *m = &t->members[i];
	return !(m->shard >= t->nshards || m->flags & ~RF_MEMBER_ZSTD ||
		 m->offset >= (1ull << 62) ||
		 (t->entries[i].size > 0 && (uint64_t)t->entries[i].size >= (1ull << 32)));
}

/* Sample i's weight finite and not negative; its first extra not before
 * sample i - 1's, nor past the extras. */
static int sample_valid(const rf_index *t, uint64_t i, int has_weights)
{
	if (has_weights && (!isfinite(t->weights[i]) || t->weights[i] < 0))
		return 0;
	return !(t->extra_first && (t->extra_first[i] > t->nextras ||
				    (i && t->extra_first[i] < t->extra_first[i - 1])));
}

/* An extra: its name listed; a member's offset below 2^62, a file's path
 * in the arena with its NUL there, an inline value inside the arena. */
static int extra_valid(const rf_index *t, const rf_index_extra *x)
{
	return !(x->name >= t->nextra_names || x->how > RF_EXTRA_INLINE ||
		 (x->how == RF_EXTRA_MEMBER && x->at >= (1ull << 62)) ||
		 (x->how == RF_EXTRA_FILE && (x->at >= t->paths_len ||
					      !memchr(t->paths + x->at, '\0', t->paths_len - x->at))) ||
		 (x->how == RF_EXTRA_INLINE && (x->at > t->paths_len ||
						x->size > t->paths_len - x->at)));
}

/* The records of a cache whose checksum matched may still be crafted: each
 * kind is checked above. @return : 1 when every record is valid, else 0. */
static int records_valid(const rf_index *t, int has_weights)
{
	if (!shards_valid(t))
		return 0;
	for (uint64_t i = 0; i < t->count; i++)
		if (!entry_valid(t, i) || (t->nshards && !member_valid(t, i)) ||
		    !sample_valid(t, i, has_weights))
			return 0;
	if (t->extra_first && t->count && t->extra_first[0] != 0)
		return 0;
	for (uint32_t i = 0; i < t->nextra_names; i++)
		if (!t->extra_names[i])
			return 0;
	for (size_t k = 0; k < t->nextras; k++)
		if (!extra_valid(t, &t->extras[k]))
			return 0;
	return 1;
}

/* Reads n bytes at offset off of fd into p. */
static int read_at(int fd, void *p, size_t n, off_t off)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = pread(fd, (uint8_t *)p + got, n - got, off + (off_t)got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* What a cache's header says of its bulk: counts, then where each array
 * lies in the file and its bytes. */
typedef struct cache_shape {
	uint64_t count, plen, nx;
	uint32_t ncl, nst, has_weights, nsh, nxn;
	size_t off;                 /* where the records start */
	size_t ebytes, wbytes, mbytes, fbytes, xbytes; /* entries, weights, members, extra_first, extras */
	size_t bbytes;              /* the kind's own bytes */
} cache_shape;

/* The header: the first 1 MiB of the file (size bytes), more only if its
 * strings (class names, directory stamps) run past that. @return : the
 * header in *head (free it), *hlen its bytes; -1 when it cannot be read. */
static int read_head(int fd, uint64_t size, uint8_t **head, size_t *hlen)
{
	*hlen = (size_t)RF_MIN(size, 1u << 20);
	for (;;) {
		free(*head);
		*head = malloc(*hlen ? *hlen : 1);
		if (!*head || read_at(fd, *head, *hlen, 0))
			return -1;
		reader r = { *head, *head + *hlen, 0x726676696478ull, 1 };
		if (header_fits(&r) || *hlen == (size_t)size)
			return 0;
		*hlen = (size_t)RF_MIN(size, (uint64_t)*hlen * 16);
	}
}

/* The header's strings into t: class names, stamps, shards (label, ETag,
 * size), extra names. @return : 0, or -1 (corrupt, or out of memory). */
static int read_strings(reader *r, rf_index *t, const cache_shape *c)
{
	/* Nothing is allocated for more than the file holds: a class name takes
	 * at least its 4-byte length, a stamp 4 + 24 bytes, a shard 4 + 4 + 4 + 8,
	 * in the header that header_fits() found whole in head (or else r->ok
	 * is 0 by now). */
	if (!r->ok || c->nxn > RF_EXTRA_NAMES_MAX ||
	    (uint64_t)c->ncl * 4 + (uint64_t)c->nst * 28 + (uint64_t)c->nsh * 20 +
		    (uint64_t)c->nxn * 4 > (uint64_t)(r->end - r->p))
		return -1;
	if (c->ncl) {
		t->classes = calloc(c->ncl, sizeof(char *));
		for (uint32_t i = 0; t->classes && i < c->ncl; i++)
			t->classes[t->nclasses++] = get_str(r);
	}
	if (c->nst) {
		t->stamps = calloc(c->nst, sizeof(*t->stamps));
		t->cap_stamps = c->nst;
		for (uint32_t i = 0; t->stamps && i < c->nst; i++) {
			rf_index_stamp *s = &t->stamps[t->nstamps++];
			s->path = get_str(r);
			s->mtime_sec = (int64_t)get_u(r, 8);
			s->mtime_nsec = (int64_t)get_u(r, 8);
			s->ino = get_u(r, 8);
		}
	}
	if (c->nsh) {
		uint32_t nsh = c->nsh;
		t->shards = calloc(nsh, sizeof(char *));
		t->shard_labels = calloc(nsh, sizeof(int32_t));
		t->etags = calloc(nsh, sizeof(*t->etags));
		t->shard_sizes = calloc(nsh, sizeof(uint64_t));
		for (uint32_t i = 0; t->shards && t->shard_labels && t->etags && t->shard_sizes &&
				     i < nsh; i++) {
			t->shards[t->nshards++] = get_str(r);
			t->shard_labels[i] = (int32_t)get_u(r, 4);
			char *etag = get_str(r);
			if (!etag || strlen(etag) >= RF_IO_ETAG_MAX) {
				free(etag);
				return -1;
			}
			memcpy(t->etags[i], etag, strlen(etag) + 1);
			free(etag);
			t->shard_sizes[i] = get_u(r, 8);
		}
		if (!t->shards || !t->shard_labels || !t->etags || !t->shard_sizes)
			return -1;
	}
	if (c->nxn) {
		t->extra_names = calloc(c->nxn, sizeof(char *));
		if (!t->extra_names)
			return -1;
		for (uint32_t i = 0; i < c->nxn; i++)
			t->extra_names[t->nextra_names++] = get_str(r);
	}
	return 0;
}

/* The records and the path arena (the bulk), straight into their final
 * arrays in t, so loading never holds the index twice, and checked
 * against the file's checksum (sum: the header's, so far). @return : 0,
 * RF_EINDEX (corrupt) or -ENOMEM. */
static int read_bulk(int fd, rf_index *t, const cache_shape *c, uint64_t sum_so_far)
{
	const size_t off = c->off, ebytes = c->ebytes, wbytes = c->wbytes, mbytes = c->mbytes;
	const size_t fbytes = c->fbytes, xbytes = c->xbytes, plen = c->plen;
	if (c->nx) {
		t->extra_first = malloc(fbytes ? fbytes : 1);
		t->extras = malloc(xbytes);
		if (!t->extra_first || !t->extras)
			return -ENOMEM;
	}
	t->entries = malloc(ebytes ? ebytes : 1);
	t->paths = malloc(plen ? plen : 1);
	if (c->has_weights)
		t->weights = malloc(wbytes ? wbytes : 1);
	if (c->nsh)
		t->members = malloc(mbytes ? mbytes : 1);
	if (c->bbytes && !(t->kind_blob = malloc(c->bbytes)))
		return -ENOMEM;
	t->kind_blob_len = c->bbytes;
	if (!t->entries || !t->paths || (c->has_weights && !t->weights) || (c->nsh && !t->members))
		return -ENOMEM;
	/* in the file's order; an array the cache has not is NULL, and takes
	 * no bytes */
	const struct { void *p; size_t n; } part[] = {
		{ t->entries, ebytes }, { t->paths, plen }, { t->weights, wbytes },
		{ t->members, mbytes }, { t->extra_first, fbytes }, { t->extras, xbytes },
		{ t->kind_blob, c->bbytes },
	};
	uint64_t total = sum_so_far, sum;
	size_t at = off;
	for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++) {
		if (!part[i].p)
			continue;
		if (read_at(fd, part[i].p, part[i].n, (off_t)at))
			return RF_EINDEX;
		total = checksum(total, part[i].p, part[i].n, 1);
		at += part[i].n;
	}
	if (read_at(fd, &sum, 8, (off_t)at))
		return RF_EINDEX;
	return sum == total ? 0 : RF_EINDEX;
}

/* Reads the cache in fd (named path in messages) into *t, every check of
 * its own made (magic, version, sizes, checksum, records); *src gets the
 * source it was built from (free it), *any its mode. @return : 0, or
 * RF_EINDEX / -ENOMEM with err set and *t freed. */
static int cache_read(int fd, const char *path, rf_index *t, char **src, uint32_t *any,
		      char *err, size_t errlen)
{
	/* The header and strings (small) are read first; the records and the
	 * path arena (the bulk) straight into their final arrays (read_bulk). */
	struct stat st;
	uint8_t *head = NULL;
	size_t hlen;
	int ret = RF_EINDEX;
	memset(t, 0, sizeof(*t));
	t->root_fd = -1;
	*src = NULL;
	if (fstat(fd, &st) != 0)
		goto fail;
	if (read_head(fd, (uint64_t)st.st_size, &head, &hlen))
		goto corrupt;
	reader r = { head, head + hlen, 0x726676696478ull, 1 };
	const char *magic = get(&r, 8, 0);
	uint32_t version = (uint32_t)get_u(&r, 4);
	*any = (uint32_t)get_u(&r, 4);
	if (!magic || memcmp(magic, CACHE_MAGIC, 8) || version != CACHE_VERSION) {
		rfi_fmt(err, errlen, "index cache '%s': not an index cache of version %u", path,
		       CACHE_VERSION);
		goto fail;
	}
	t->kind = (uint32_t)get_u(&r, 4);
	cache_shape c = { 0 };
	c.count = get_u(&r, 8);
	c.plen = get_u(&r, 8);
	c.ncl = (uint32_t)get_u(&r, 4);
	c.nst = (uint32_t)get_u(&r, 4);
	c.has_weights = (uint32_t)get_u(&r, 4);
	c.nsh = (uint32_t)get_u(&r, 4);
	c.nxn = (uint32_t)get_u(&r, 4);
	c.nx = get_u(&r, 8);
	uint64_t blob = get_u(&r, 8);
	*src = get_str(&r);
	t->root = get_str(&r);
	t->any_name = (int)*any;
	if (read_strings(&r, t, &c))
		goto corrupt;
	c.off = (size_t)(r.p - head);
	c.ebytes = (size_t)c.count * sizeof(rf_index_entry);
	c.wbytes = c.has_weights ? (size_t)c.count * sizeof(double) : 0;
	c.mbytes = c.nsh ? (size_t)c.count * sizeof(rf_index_member) : 0;
	if (c.nx >= UINT32_MAX || c.count >= (1ull << 40) || blob >= (1ull << 40) ||
	    blob > (uint64_t)st.st_size)
		goto corrupt;
	c.bbytes = (size_t)blob;
	c.fbytes = c.nx ? (size_t)c.count * sizeof(uint32_t) : 0;
	c.xbytes = (size_t)c.nx * sizeof(rf_index_extra);
	if (!r.ok || !t->root || !*src || c.plen >= (1ull << 40) || c.has_weights > 1 ||
	    (uint64_t)st.st_size != c.off + c.ebytes + c.plen + c.wbytes + c.mbytes + c.fbytes +
					    c.xbytes + c.bbytes + 8)
		goto corrupt;
	ret = read_bulk(fd, t, &c, r.sum);
	if (ret == RF_EINDEX)
		goto corrupt;
	if (ret)
		goto fail;
	t->count = t->cap = c.count;
	t->members_cap = c.nsh ? c.count : 0;
	t->nextras = t->extras_cap = c.nx;
	t->paths_len = t->paths_cap = c.plen;
	if (!records_valid(t, c.has_weights))
		goto corrupt;
	free(head);
	return 0;
corrupt:
	rfi_fmt(err, errlen, "index cache '%s': truncated or corrupt", path);
	ret = RF_EINDEX;
fail:
	rfi_index_free(t);
	free(*src);
	*src = NULL;
	free(head);
	return ret;
}

/* cache_read() of an opened cache (fd, or a negative errno from opening
 * it: -ENOENT is no cache, 1), which it closes. */
static int cache_take(int fd, const char *path, rf_index *t, char **src, uint32_t *any, char *err,
		      size_t errlen)
{
	if (fd < 0)
		return fd == -ENOENT ? 1 : fd;
	int ret = cache_read(fd, path, t, src, any, err, errlen);
	close(fd);
	return ret;
}

int rfi_index_cache_load(rf_index *idx, const char *source, int any_name, const char *path,
			char *err, size_t errlen)
{
	rf_index t;
	char *src;
	uint32_t any;
	int ret = cache_take(rfi_open_regular(AT_FDCWD, path, "index cache", err, errlen), path, &t,
			     &src, &any, err, errlen);
	if (ret)
		return ret;
	/* Sources compare as canonical paths: "data" and "/abs/data" are one. */
	char *canon = realpath(source, NULL);
	int same = !strcmp(src, canon ? canon : source) && any == (uint32_t)any_name &&
		   !rfi_index_is_url(t.root);
	free(canon);
	free(src);
	if (!same) {
		rfi_fmt(err, errlen, "index cache '%s': built from another source or mode", path);
		goto stale;
	}
	t.root_fd = open(t.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t.root_fd < 0) {
		rfi_fmt(err, errlen, "index cache '%s': root '%s': %s", path, t.root, strerror(errno));
		goto stale;
	}
	for (size_t i = 0; i < t.nstamps; i++) {
		const rf_index_stamp *s = &t.stamps[i];
		struct stat now;
		int dfd = s->path && s->path[0] == '/' ? AT_FDCWD : t.root_fd;
		if (!s->path || fstatat(dfd, s->path, &now, s->path[0] ? 0 : AT_EMPTY_PATH) != 0 ||
		    now.st_mtim.tv_sec != s->mtime_sec || now.st_mtim.tv_nsec != s->mtime_nsec ||
		    (uint64_t)now.st_ino != s->ino) {
			rfi_fmt(err, errlen, "index cache '%s': '%s' changed since it was written", path,
			       s->path && s->path[0] ? s->path : t.root);
			goto stale;
		}
	}
	free(t.etags); /* local shards have none */
	t.etags = NULL;
	*idx = t;
	return 0;
stale:
	rfi_index_free(&t);
	return 1;
}

/* The index object at url, fetched through the source's transport into an
 * anonymous file. @return : its descriptor, or a negative errno with err
 * set (-ENOENT: none there). */
static int fetch_object(rf_index *idx, const char *url, char *err, size_t errlen)
{
	return rfi_transport_fetch_file(&idx->transport, url, "index object", "ringfeed-index",
				       (size_t)1 << 32, idx->remote_timeout_ms, err, errlen);
}

int rfi_index_cache_of_shards(rf_index *t, const rf_index *idx, int any_name, int fd,
			     const char *path, char *err, size_t errlen)
{
	char *src;
	uint32_t any;
	int ret = cache_take(fd, path, t, &src, &any, err, errlen);
	if (ret)
		return ret;
	free(src); /* an index object is the shards', wherever it was built */
	/* the same samples: raw mode counts KEY.bin members (the rest of the
	 * mode is a folder walk's, which shards listed by name have none of) */
	int same = (any & RF_INDEX_RAW) == ((uint32_t)any_name & RF_INDEX_RAW) &&
		   t->kind == idx->kind && t->nshards == idx->nshards;
	for (size_t i = 0; same && i < t->nshards; i++)
		same = !strcmp(t->shards[i], idx->shards[i]);
	if (!same) {
		rfi_fmt(err, errlen, "index cache '%s': of other shards (or another mode) than the "
		       "source's", path);
		rfi_index_free(t);
		return 1;
	}
	return 0;
}

int rfi_index_cache_adopt(rf_index *idx, int any_name, const char *path, char *err, size_t errlen)
{
	rf_index t;
	int ret = rfi_index_cache_of_shards(&t, idx, any_name,
					   rfi_index_is_url(path) ? fetch_object(idx, path, err, errlen)
					   : rfi_open_regular(AT_FDCWD, path, "index cache", err, errlen),
					   path, err, errlen);
	if (ret)
		return ret;
	/* indexed elsewhere: their ETags are not these (the root as stored,
	 * its password redacted) */
	char *shown = rfi_redact_dup(idx->root);
	if (!shown) {
		rfi_index_free(&t);
		return -ENOMEM;
	}
	if (strcmp(t.root, shown))
		memset(t.etags, 0, t.nshards * sizeof(*t.etags));
	free(shown);
	/* the shards it knows no ETag of: their sizes checked, their ETags
	 * taken (t reads through the source's URLs and bucket for that) */
	t.urls = idx->urls;
	t.transport = idx->transport;
	t.remote_timeout_ms = idx->remote_timeout_ms;
	ret = rfi_index_check_remote(&t, RF_LOG_WARN, err, errlen);
	if (ret) {
		t.urls = NULL;
		t.transport = NULL;
		rfi_index_free(&t);
		return ret == -ESTALE ? 1 : ret; /* other shards: scanned instead */
	}
	/* the source's root, URLs and bucket; the index's records and ETags */
	free(t.root);
	t.root = idx->root;
	t.progress = idx->progress;
	t.progress_user = idx->progress_user;
	idx->root = NULL;
	idx->urls = NULL;
	idx->transport = NULL;
	rfi_index_free(idx);
	*idx = t;
	return 0;
}
