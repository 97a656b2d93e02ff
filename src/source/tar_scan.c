/* tar_scan.c - the tar kind's scan of its shards (tar_shards.c lists
 * them through src/index/shards.c): every shard's headers read through the
 * read engine, many shards at once, one window of each in flight, and each
 * sample's member recorded: which shard, where, how many bytes, its label
 * (its cls member, else its class folder, else -1), and whether it is
 * zstd-compressed. Samples are numbered in shard order.
 *
 * A sample that cannot be used (no image member, a bad cls, no cls in a
 * source whose samples have one, a member that runs past the end of a
 * truncated shard) keeps its place with a negative size that says why
 * (rfi_index_bad_reason): it is reported and replaced when drawn, never the
 * run. Nothing is dropped in silence: a span of a shard that holds no
 * readable members (a corrupt header and the bytes up to the next valid
 * one, a shard cut without its end blocks) becomes an
 * entry of its own, named "bytes A..B", reported like a bad sample when
 * drawn (and failing the run with on_error = fail); the scan goes on after
 * it. A read that fails (after the engine's tries), or that comes back
 * shorter than asked (a server whose 206 or 416 contradicts the size it
 * gave, a file that shrank), is no fact about the shard's bytes: it fails
 * the build, naming the shard and what the read met, and is never recorded
 * (nor written into an index cache) as damage; no window is asked twice,
 * so a scan ends. Remote reads take remote_timeout_ms at most, all their
 * tries; a create called off (util/cancel.h) ends the scan. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/node_cache.h"
#include "index/index_build.h"
#include "index/pack_marker.h"
#include "io/engine.h"
#include "remote/fetch.h"
#include "ringfeed.h"
#include "source/tar.h"
#include "source/tar_scan.h"
#include "util/cancel.h"
#include "util/util.h"

#define SCAN_WINDOW (256u << 10) /* bytes read per window: many small members at once */
#define SCAN_SHARDS 32u          /* shards scanned at once */
#define SCAN_SLICE_NS 100000000ull /* a scan's waits: a create called off is seen this soon */
#define EMPTY_ASKS 2 /* a remote shard said empty is asked this many more times */
#define RESCANS 2    /* a remote shard whose ETag changed is scanned again this often */

/* One shard's scan, and the samples it found (in shard order). */
typedef struct shard_scan {
	rf_index *idx;
	uint32_t shard;
	int file;              /* engine handle, -1 when not open */
	uint64_t size;
	rf_tar_scan scan;
	rf_tar_samples group;
	uint8_t *buf;          /* its window buffer (one read in flight at most) */
	uint32_t asked;        /* bytes its read in flight asked for */
	uint32_t empty_asks;   /* a remote shard's first window asked again because
	                        * its answer said the shard is empty */
	uint32_t rescans;      /* a remote shard's scan begun again (its ETag changed) */
	rf_cache *cache;       /* the node cache its windows fill, or NULL */
	uint64_t object;       /* its object there (rfi_cache_object), 0: not cached */
	/* samples: names in an arena, records in an array */
	char *names;
	size_t names_len, names_cap;
	struct found {
		uint64_t name_off, off;
		int64_t size;      /* or a negative code (rfi_index_bad_reason) */
		int32_t label;
		uint32_t flags;
		int has_cls;       /* the label came from a cls member */
		size_t first_extra; /* its other members: extras[first_extra .. + nextras) */
		uint32_t nextras;
	} *found;
	size_t nfound, cap;
	struct found_extra {
		uint64_t off, size;
		uint32_t name;     /* id in idx->extra_names */
	} *extras;
	size_t nextras, extras_cap;
	int done;
	rf_log_level log_level;
} shard_scan;

static int on_sample(void *user, const rf_tar_sample *s)
{
	shard_scan *sc = user;
	size_t klen = strlen(s->key), elen = strlen(s->ext);
	if (sc->nfound == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 256;
		struct found *x = realloc(sc->found, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		sc->found = x;
		sc->cap = cap;
	}
	char span[64];
	if (s->code == RF_TAR_DAMAGED || s->code == RF_TAR_UNENDED) {
		/* a lost span: named by its bytes */
		rfi_fmt(span, sizeof(span), "bytes %llu..%llu", (unsigned long long)s->data_off,
		       (unsigned long long)(s->data_off + s->size));
		rfi_log(sc->log_level, RF_LOG_WARN, "shard %s/%s: %s", sc->idx->root,
		       sc->idx->shards[sc->shard], s->bad);
		klen = strlen(span);
		elen = 0;
	}
	size_t need = klen + 1 + elen + 1;
	if (sc->names_len + need > sc->names_cap) {
		size_t cap = sc->names_cap ? sc->names_cap * 2 : 16384;
		while (cap < sc->names_len + need)
			cap *= 2;
		char *x = realloc(sc->names, cap);
		if (!x)
			return -ENOMEM;
		sc->names = x;
		sc->names_cap = cap;
	}
	char *name = sc->names + sc->names_len;
	memcpy(name, s->code == RF_TAR_DAMAGED || s->code == RF_TAR_UNENDED ? span : s->key, klen);
	if (elen) {
		name[klen] = '.';
		memcpy(name + klen + 1, s->ext, elen + 1);
	} else {
		name[klen] = '\0';
	}
	static const int64_t codes[] = {
		[RF_TAR_NO_IMAGE] = RF_INDEX_NO_IMAGE,     [RF_TAR_NO_MEMBER] = RF_INDEX_NO_MEMBER,
		[RF_TAR_BAD_CLS] = RF_INDEX_BAD_LABEL,     [RF_TAR_TWO_CLS] = RF_INDEX_TWO_LABELS,
		[RF_TAR_TWO_IMAGES] = RF_INDEX_TWO_IMAGES, [RF_TAR_TRUNCATED] = RF_INDEX_TRUNCATED,
		[RF_TAR_DAMAGED] = RF_INDEX_DAMAGED,       [RF_TAR_UNENDED] = RF_INDEX_UNENDED,
	};
	int64_t size = (int64_t)s->size;
	if (s->code) {
		assert((size_t)s->code < sizeof(codes) / sizeof(codes[0]) && codes[s->code]);
		size = codes[s->code];
	}
	int32_t label = s->label >= 0 ? s->label : sc->idx->shard_labels[sc->shard];
	struct found *f = &sc->found[sc->nfound++];
	*f = (struct found){ .name_off = sc->names_len, .off = s->data_off, .size = size,
			     .label = label, .flags = s->compressed ? RF_MEMBER_ZSTD : 0,
			     .has_cls = s->has_cls, .first_extra = sc->nextras };
	for (size_t k = 0; k < s->nextras; k++) {
		int id = rfi_index_extra_name(sc->idx, s->extras[k].ext, strlen(s->extras[k].ext));
		if (id == -E2BIG) { /* past the names kept: no field can name it (said once
				     * the index is built) */
			rfi_index_unkept(sc->idx, RF_UNKEPT_NAMES, "%s/%s:%s.%s", sc->idx->root,
					sc->idx->shards[sc->shard], s->key, s->extras[k].ext);
			continue;
		}
		if (id < 0)
			return id;
		if (sc->nextras == sc->extras_cap) {
			size_t cap = sc->extras_cap ? sc->extras_cap * 2 : 512;
			struct found_extra *x = realloc(sc->extras, cap * sizeof(*x));
			if (!x)
				return -ENOMEM;
			sc->extras = x;
			sc->extras_cap = cap;
		}
		sc->extras[sc->nextras++] = (struct found_extra){ s->extras[k].data_off,
								  s->extras[k].size, (uint32_t)id };
		f->nextras++;
	}
	for (size_t k = 0; k < s->nlong; k++) /* no field's (said once the index is built) */
		rfi_index_unkept(sc->idx, RF_UNKEPT_LONG, "%s/%s:%s.%s", sc->idx->root,
				sc->idx->shards[sc->shard], s->key, s->long_ext);
	sc->names_len += strlen(name) + 1;
	return 0;
}

static void scan_free(shard_scan *sc)
{
	rfi_tar_samples_free(&sc->group);
	free(sc->names);
	free(sc->found);
	free(sc->extras);
	sc->names = NULL;
	sc->found = NULL;
	sc->extras = NULL;
}

/* Forgets what a scan found, for the scan to begin again. */
static void scan_reset(shard_scan *sc)
{
	rfi_tar_samples_free(&sc->group);
	sc->names_len = sc->nfound = sc->nextras = 0;
}

/* rf_tar_member_fn of a scan: the member grouped into samples, and, when
 * it is the member its sample reads and the window held it whole, its
 * bytes kept in the node cache under the key a sample's read of it asks for (the shard's object, the member's offset
 * and size): a remote source without an index object streams its shards
 * once, and epoch 1 reads the samples from the cache, not the network
 * again. A member across two windows is not kept (fetched when read).
 * Claimed as any fill is: a range another process fetches or already
 * cached is left to it. */
static int scan_member(void *user, const rf_tar_member *m)
{
	shard_scan *sc = user;
	int r = rfi_tar_samples_member(&sc->group, m);
	if (r || !sc->cache || !sc->object || !m->data || !m->size || m->lost ||
	    m->size > UINT32_MAX || !rfi_tar_samples_chose(&sc->group, m))
		return r; /* only what a sample's read asks for: a caption or a
			   * label kept in the index would never be read there */
	if (rfi_cache_claim(sc->cache, sc->object, m->data_off, (uint32_t)m->size) == RF_CACHE_MINE)
		rfi_cache_fill(sc->cache, sc->object, m->data_off, (uint32_t)m->size, m->data,
			      (uint32_t)m->size);
	return 0;
}

/* Starts (again) the scan of remote shard s: its first window, whose
 * response says the shard's size and ETag (the object indexed: every later
 * read of it asks for that one, If-Match). */
static void remote_begin(shard_scan *s, rf_io *io, int raw)
{
	rf_index *idx = s->idx;
	s->size = UINT64_MAX;
	rfi_tar_scan_init(&s->scan, s->size);
	rfi_tar_samples_init(&s->group, raw, on_sample, s);
	s->asked = SCAN_WINDOW;
	s->empty_asks = 0;
	idx->etags[s->shard][0] = '\0';
	rfi_io_submit(io, &(rf_io_read){ .file = -1, .url = idx->urls[s->shard], .offset = 0,
					.len = SCAN_WINDOW, .buf = s->buf, .tag = s->shard,
					.etag_out = idx->etags[s->shard] });
}

/* The shard as messages name it: its URL, or root/path. */
static void shard_name(const shard_scan *sc, char *buf, size_t len)
{
	const rf_index *idx = sc->idx;
	if (idx->urls)
		rfi_index_shard_shown(idx, sc->shard, buf, len);
	else
		rfi_fmt(buf, len, "%s/%s", idx->root, idx->shards[sc->shard]);
}

/* Feeds a finished window. A read that failed, or came back shorter than
 * asked, fails the build: what the read met is not what the shard holds
 * (a transient failure recorded as damage would lose those samples from
 * every epoch, and from every later run that loads the index), and asking
 * the same window again would never end. @return : 1 when the shard needs
 * another, 0 when its scan is over, or a negative code with err set. */
static int scan_window(shard_scan *sc, const rf_io_done *d, char *err, size_t errlen)
{
	char name[PATH_MAX + 8], what[256];
	if (d->res < 0) {
		shard_name(sc, name, sizeof(name));
		rfi_io_describe(d, what, sizeof(what));
		rfi_fmt(err, errlen, "shard %s: the read of bytes %llu..%llu failed: %s; the index "
		       "cannot be built without them", name, (unsigned long long)sc->scan.pos,
		       (unsigned long long)(sc->scan.pos + sc->asked), what);
		return d->res == -EAGAIN ? -EIO : d->res;
	}
	if ((uint32_t)d->res < sc->asked) {
		shard_name(sc, name, sizeof(name));
		if (d->http_status == 416)
			rfi_fmt(what, sizeof(what), "the server answered HTTP 416 (nothing there) for "
			       "bytes %llu..%llu", (unsigned long long)sc->scan.pos,
			       (unsigned long long)(sc->scan.pos + sc->asked));
		else
			rfi_fmt(what, sizeof(what), "%s%u of the %u bytes asked at offset %llu came",
			       d->http_status ? "the server's answer was short: " : "",
			       (unsigned)d->res, sc->asked, (unsigned long long)sc->scan.pos);
		rfi_fmt(err, errlen, "shard %s: %s, though the shard is %llu bytes%s: it cannot be "
		       "scanned", name, what, (unsigned long long)sc->size,
		       sc->idx->urls ? " as the server said" : " (it shrank while it was scanned?)");
		return sc->idx->urls ? -EPROTO : -EIO;
	}
	int r = rfi_tar_scan_feed(&sc->scan, sc->buf + d->skip, (size_t)d->res, sc->scan.pos,
				 scan_member, sc, err, errlen);
	if (r == 0)
		r = rfi_tar_samples_finish(&sc->group);
	if (r == -ENOMEM)
		rfi_fmt(err, errlen, "out of memory");
	return r;
}

static uint32_t window_len(const shard_scan *sc)
{
	uint64_t left = sc->size - sc->scan.pos;
	size_t want = RF_MAX((size_t)SCAN_WINDOW, sc->scan.need);
	return (uint32_t)RF_MIN((uint64_t)want, left);
}

/* A remote shard's first window came back: its size is what the server
 * said (Content-Range), and a failure to fetch it fails the build, naming
 * the URL (as a local shard that cannot be opened does). */
static int remote_sized(rf_index *idx, shard_scan *s, const rf_io_done *d, char *err,
			size_t errlen)
{
	const char *url = idx->urls[s->shard];
	char name[PATH_MAX + 8];
	rfi_index_shard_shown(idx, s->shard, name, sizeof(name));
	if (d->res < 0) {
		char what[256];
		rfi_io_describe(d, what, sizeof(what));
		if (d->http_status >= 400) { /* what the server said, S3's error code too */
			rf_fetch_result r;
			char ignored[64];
			if (!rfi_transport_fetch(idx->transport,
						&(rf_fetch){ .url = url, .len = 1, .tries = 1,
						       .budget_ms = idx->remote_timeout_ms,
						       .max_body = 65536 }, &r, ignored, sizeof(ignored)) &&
			    r.status >= 400)
				rfi_fetch_why(&r, what, sizeof(what));
			rfi_fetch_result_free(&r);
		}
		rfi_fmt(err, errlen, "shard %s: %s%s", name, what,
		       rfi_transport_hint(idx->transport, d->res));
		return d->res; /* -ENOENT, -EACCES, -EPERM (a certificate), ... as a local shard's */
	}
	if (!d->size && d->res) {
		rfi_fmt(err, errlen, "shard %s: the server gave no size (no Content-Range)", name);
		return RF_EINDEX;
	}
	s->size = d->size;
	s->object = rfi_cache_object(url, idx->etags[s->shard], s->size);
	s->asked = (uint32_t)RF_MIN((uint64_t)s->asked, s->size); /* all of a smaller one */
	rfi_tar_scan_init(&s->scan, s->size);
	return 0;
}

/* One rfi_tar_scan_shards: the engine, its window buffers (one slot a
 * shard being scanned) and each shard's scan. */
typedef struct scan_run {
	rf_index *idx;
	int raw;
	rf_log_level log_level;
	shard_scan *sc;         /* one a shard */
	uint32_t n, width;      /* shards; scanned at once */
	rf_io *io;
	rf_cache *cache;        /* remote shards with a cache folder: their windows kept */
	int wake;               /* the engine sleeps on it; nobody else wakes it */
	uint8_t *mem;           /* width slots of `slot` bytes */
	size_t slot;
	uint32_t *free_slots, nfree;
	uint32_t next, active;  /* the next shard to start; shards being scanned */
	rf_io_done *done;
	char *err;
	size_t errlen;
} scan_run;

/* The engine, the cache and the buffers. @return : 0, or a negative errno
 * (err set where the engine said why). */
static int scan_open(scan_run *sr)
{
	rf_index *idx = sr->idx;
	uint32_t width = sr->width;
	int caching = idx->urls && idx->scan_cache_dir && idx->scan_cache_dir[0];
	sr->wake = eventfd(0, EFD_CLOEXEC);
	sr->slot = RF_ALIGN_UP(SCAN_WINDOW + RF_TAR_NEED_MAX, 4096) + 8192;
	size_t slot = sr->slot;
	int ret = sr->wake < 0 ? -errno
		  : posix_memalign((void **)&sr->mem, 4096, slot * width) ? -ENOMEM : 0;
	if (!ret) {
		rf_io_params p = { .path = RF_IO_AUTO, .depth = width, .max_read = slot,
				   .max_files = caching ? RF_CACHE_MAX_FILES : width, .direct = 1, .probe_dirfd = idx->root_fd,
				   .probe_path = idx->shards[0], .wake_fd = sr->wake, .name = idx->root,
				   .log_level = sr->log_level,
				   .url_reader = rfi_transport_reader(idx->transport),
				   .sign = rfi_transport_sign(idx->transport),
				   .url_budget_ms = idx->remote_timeout_ms };
		ret = rfi_io_create(&sr->io, &p, sr->err, sr->errlen);
	}
	if (!ret && caching) /* a cache that cannot be used: one warning, none */
		ret = rfi_cache_open(&sr->cache, &(rf_cache_params){ .dir = idx->scan_cache_dir,
								    .bytes = idx->scan_cache_bytes,
								    .io = sr->io, .log_level = sr->log_level,
								    .group = idx->scan_cache_group });
	sr->free_slots = malloc(width * sizeof(uint32_t));
	sr->done = malloc(width * sizeof(rf_io_done));
	if (!ret && (!sr->free_slots || !sr->done))
		ret = -ENOMEM;
	if (ret)
		return ret;
	rf_io_region reg = { sr->mem, slot * width };
	rfi_io_register_regions(sr->io, &reg, 1);
	for (uint32_t i = 0; i < width; i++)
		sr->free_slots[i] = i;
	sr->nfree = width;
	return 0;
}

static void scan_close(scan_run *sr)
{
	rfi_io_destroy(sr->io); /* first: it ends the cache's writes in flight */
	rfi_cache_free(sr->cache);
	if (sr->wake >= 0)
		close(sr->wake);
	for (uint32_t i = 0; i < sr->n; i++)
		scan_free(&sr->sc[i]);
	free(sr->sc);
	free(sr->mem);
	free(sr->free_slots);
	free(sr->done);
}

/* Starts the scan of the next shard: its first window asked for (a local
 * shard opened; an empty one scanned at once). @return : 0, or the error
 * (err set). */
static int scan_start(scan_run *sr)
{
	rf_index *idx = sr->idx;
	shard_scan *s = &sr->sc[sr->next];
	s->idx = idx;
	s->cache = sr->cache;
	s->shard = sr->next++;
	s->log_level = sr->log_level;
	struct stat st;
	const char *path = idx->shards[s->shard];
	if (idx->urls) {
		s->file = -1;
		s->buf = sr->mem + (size_t)sr->free_slots[--sr->nfree] * sr->slot;
		remote_begin(s, sr->io, sr->raw);
		sr->active++;
		return 0;
	}
	if (fstatat(idx->root_fd, path, &st, 0)) {
		int ret = -errno;
		rfi_fmt(sr->err, sr->errlen, "shard %s/%s: %s", idx->root, path, strerror(-ret));
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		rfi_fmt(sr->err, sr->errlen, "shard %s/%s: not a regular file (%s)", idx->root,
		       path, rfi_file_kind(st.st_mode));
		return RF_EINDEX;
	}
	s->size = (uint64_t)st.st_size;
	rfi_tar_scan_init(&s->scan, s->size);
	rfi_tar_samples_init(&s->group, sr->raw, on_sample, s);
	if (s->size == 0) {
		/* no end blocks either: reported as cut at 0 */
		char why[64];
		int r = rfi_tar_scan_feed(&s->scan, NULL, 0, 0, rfi_tar_samples_member,
					 &s->group, why, sizeof(why));
		s->done = 1;
		return r ? r : rfi_tar_samples_finish(&s->group);
	}
	s->file = rfi_io_file_open(sr->io, idx->root_fd, path);
	if (s->file < 0) {
		rfi_fmt(sr->err, sr->errlen, "shard %s/%s: %s", idx->root, path, strerror(-s->file));
		return s->file;
	}
	s->buf = sr->mem + (size_t)sr->free_slots[--sr->nfree] * sr->slot;
	if (!rfi_io_ready(sr->io, rfi_io_span(sr->io, 0, window_len(s))))
		return -EIO; /* cannot happen: one read per free buffer */
	s->asked = window_len(s);
	rfi_io_submit(sr->io, &(rf_io_read){ .file = s->file, .offset = 0,
					    .len = s->asked, .buf = s->buf,
					    .tag = s->shard });
	sr->active++;
	return 0;
}

/* A window of shard s came back (d): scanned, then the next one asked
 * for, or the shard done (its slot free again). @return : 0, or the error
 * (err set). */
static int scan_reaped(scan_run *sr, shard_scan *s, const rf_io_done *d)
{
	rf_index *idx = sr->idx;
	rf_io *io = sr->io;
	if (s->size == UINT64_MAX && d->res == 0 && d->size == 0 && s->empty_asks < EMPTY_ASKS) {
		/* "empty" (a 416 at 0) is the one answer to a first window
		 * no later read can contradict (nothing is asked after it):
		 * asked again before it is believed, as a proxy's lie may
		 * pass */
		s->empty_asks++;
		rfi_io_submit(io, &(rf_io_read){ .file = -1, .url = idx->urls[s->shard],
						.offset = 0, .len = SCAN_WINDOW,
						.buf = s->buf, .tag = s->shard,
						.etag_out = idx->etags[s->shard] });
		return 0;
	}
	if (s->size == UINT64_MAX) { /* a remote shard's first window */
		int ret = remote_sized(idx, s, d, sr->err, sr->errlen);
		if (ret)
			return ret;
	}
	int r = scan_window(s, d, sr->err, sr->errlen);
	if (r == -ESTALE && idx->urls && s->rescans < RESCANS) {
		/* another ETag than its first answer's: the shard was
		 * replaced while it was scanned, or that first answer
		 * was a proxy's lie; what was found goes, and the scan
		 * begins again from its first byte */
		s->rescans++;
		scan_reset(s);
		remote_begin(s, io, sr->raw);
		return 0;
	}
	if (r < 0)
		return r;
	if (r == 1) {
		s->asked = window_len(s);
		rfi_io_submit(io, &(rf_io_read){ .file = s->file, .offset = s->scan.pos,
						.len = s->asked, .buf = s->buf,
						.tag = s->shard,
						.url = idx->urls ? idx->urls[s->shard] : NULL,
						.etag = idx->urls ? idx->etags[s->shard] : NULL,
						/* what the first window said: a
						 * later answer is checked against it */
						.size = idx->urls ? s->size : 0 });
		return 0;
	}
	sr->active--;
	s->done = 1;
	if (s->file >= 0)
		rfi_io_file_close(io, s->file);
	s->file = -1;
	sr->free_slots[sr->nfree++] = (uint32_t)((s->buf - sr->mem) / sr->slot);
	if (idx->progress)
		idx->progress(idx->progress_user, idx->count);
	return 0;
}

/* Every shard scanned, SCAN_SHARDS at once. @return : 0, or the error. */
static int scan_all(scan_run *sr)
{
	int ret = 0;
	while (!ret && (sr->next < sr->n || sr->active)) {
		/* start the next shards while buffers are free */
		while (!ret && sr->next < sr->n && sr->nfree)
			ret = scan_start(sr);
		if (ret || !sr->active)
			break;
		ret = rfi_io_wait_until(sr->io, rfi_now_ns() + SCAN_SLICE_NS);
		if (!ret && rfi_cancelled()) {
			rfi_fmt(sr->err, sr->errlen, "%s: scanning the shards: cancelled", sr->idx->root);
			ret = -ECANCELED;
		}
		uint32_t k = ret ? 0 : rfi_io_reap(sr->io, sr->done, sr->width);
		if (sr->cache)
			rfi_cache_step(sr->cache);
		for (uint32_t i = 0; i < k && !ret; i++)
			ret = scan_reaped(sr, &sr->sc[sr->done[i].tag], &sr->done[i]);
	}
	return ret;
}

/* What the scans found into idx: each shard's stamp and size, and the
 * samples in shard order (a sample without a cls member of a labelled
 * source bad). @return : 0, or the error. */
/* A labelled source (a sample has a cls member, and its shards are not
 * in class folders): a sample without one is bad, not label -1. */
static void mark_unlabelled(const rf_index *idx, shard_scan *sc, uint32_t n)
{
	int labelled = 0;
	for (uint32_t i = 0; i < n && !labelled; i++)
		for (size_t j = 0; j < sc[i].nfound && !labelled; j++)
			labelled = sc[i].found[j].has_cls;
	for (uint32_t i = 0; i < n && labelled; i++)
		for (size_t j = 0; j < sc[i].nfound; j++) {
			struct found *f = &sc[i].found[j];
			if (f->size >= 0 && !f->has_cls && idx->shard_labels[i] < 0)
				f->size = RF_INDEX_NO_LABEL;
		}
}

static int scan_collect(rf_index *idx, shard_scan *sc, uint32_t n)
{
	int ret = 0;
	/* each shard's own mtime and inode: a shard rewritten in place leaves
	 * its folder's mtime as it was */
	for (uint32_t i = 0; i < n && !ret && !idx->urls; i++)
		ret = rfi_index_stamp_add(idx, idx->root_fd, idx->shards[i], idx->shards[i]);
	if (!ret)
		mark_unlabelled(idx, sc, n);
	/* each shard's bytes, for an index object to be checked against */
	if (!ret && !(idx->shard_sizes = calloc(RF_MAX(n, 1), sizeof(uint64_t))))
		ret = -ENOMEM;
	for (uint32_t i = 0; i < n && !ret; i++)
		idx->shard_sizes[i] = sc[i].size;
	/* the samples, in shard order */
	for (uint32_t i = 0; i < n && !ret; i++) {
		for (size_t j = 0; j < sc[i].nfound && !ret; j++) {
			const struct found *f = &sc[i].found[j];
			const char *name = sc[i].names + f->name_off;
			ret = rfi_index_add(idx, name, strlen(name), f->size, f->label);
			if (!ret)
				ret = rfi_index_add_member(idx, f->off, i, f->flags);
			for (uint32_t k = 0; k < f->nextras && !ret; k++) {
				const struct found_extra *x = &sc[i].extras[f->first_extra + k];
				ret = rfi_index_add_extra(idx, x->name, x->off, x->size,
							 RF_EXTRA_MEMBER);
			}
		}
		scan_free(&sc[i]);
	}
	return ret;
}

/* Scans every shard (SCAN_SHARDS at once) and adds their samples to idx in
 * shard order. */
int rfi_tar_scan_shards(rf_index *idx, int raw, rf_log_level log_level, char *err,
		       size_t errlen)
{
	/* an interrupted pack (remote folders hold no marker we can see) */
	int whole = idx->urls ? 0 : rfi_index_check_shards_complete(idx, err, errlen);
	if (whole)
		return whole;
	uint32_t n = (uint32_t)idx->nshards;
	scan_run sr = { .idx = idx, .raw = raw, .log_level = log_level, .n = n,
			.width = RF_MIN(n, SCAN_SHARDS), .wake = -1, .err = err, .errlen = errlen };
	sr.sc = calloc(n, sizeof(*sr.sc));
	if (!sr.sc)
		return -ENOMEM;
	int ret = scan_open(&sr);
	if (!ret)
		ret = scan_all(&sr);
	if (sr.cache && !ret) /* what the windows filled is kept: its writes first (2 s at most) */
		rfi_cache_flush(sr.cache, rfi_now_ns() + 2000000000ull);
	if (!ret)
		ret = scan_collect(idx, sr.sc, n);
	scan_close(&sr);
	return ret;
}
