/* chunks.c - sequential shard access (RF_SHARD_SEQUENTIAL, and token
 * windows in llm.c's order): instead of a ranged read per sample, the ring
 * thread reads shards in aligned chunks of RF_CHUNK_BYTES and lands every
 * sample whose bytes lie in a chunk from that one read. The order (sample/shard_order.c) walks each shard from
 * start to end, with a block shuffle that keeps the samples of a chunk
 * close together, so a chunk is read about once per epoch. A member that
 * straddles two chunks (or is larger than one) is read alone.
 *
 * Chunks live in the read pool, in a table of pool / 2 chunks: a chunk that
 * no request uses any more stays until its entry is needed (least recently
 * wanted first), so samples that come a little later still find it.
 *
 * The same table serves random access to a kind whose samples share reads
 * (rf_source_ops.shared_reads: a Parquet page holds many rows, and each
 * row's read is its page): with page_units its unit is a sample's read
 * itself, keyed by (shard, offset), so the rows of a page in flight
 * together, or while the page is still held, land from one read. Ring
 * thread only. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/feeder_state.h"
#include "util/util.h"

/* Pages (page_units): as many entries as the pool holds of the largest
 * read (an idle page is let go when room is wanted), at most this many
 * (each sample's read looks through them). */
#define PAGE_ENTRIES_MAX 512u

static void size_pages(struct rf_feeder *f)
{
	uint64_t unit = RF_MAX(f->overlap_bytes, 4096u);
	f->nchunks = (uint32_t)RF_MIN(RF_MAX(2u, f->pool.cap / unit), PAGE_ENTRIES_MAX);
	f->chunk_bytes = 0; /* no aligned chunks: each entry says its range */
	f->chunk_overlap = 0;
}

static void size_chunks(struct rf_feeder *f)
{
	/* half the pool: the other half serves members read alone */
	f->chunk_bytes = RF_CHUNK_BYTES;
	while (f->chunk_bytes > 64u << 10 && f->chunk_bytes > f->pool.cap / 4)
		f->chunk_bytes /= 2;
	f->nchunks = (uint32_t)RF_MAX(2u, f->pool.cap / 2 / f->chunk_bytes);
	/* token windows: each chunk read runs on past its end by the largest
	 * window's read, so that a window starting in it lies in it whole (one
	 * read alone for the window across each boundary held its batch, and
	 * in order every batch behind it: a 2 KiB read's latency every 1 MiB) */
	f->chunk_overlap = f->overlap_bytes;
}

int rfi_chunks_init(struct rf_feeder *f)
{
	if (f->page_units)
		size_pages(f);
	else
		size_chunks(f);
	f->chunks = calloc(f->nchunks, sizeof(*f->chunks));
	if (!f->chunks)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->nchunks; i++)
		f->chunks[i].waiting = NO_CHUNK;
	return 0;
}

void rfi_chunks_free(struct rf_feeder *f)
{
	free(f->chunks);
	f->chunks = NULL;
}

static rf_chunk *find(struct rf_feeder *f, uint32_t shard, uint64_t index)
{
	for (uint32_t i = 0; i < f->nchunks; i++) {
		rf_chunk *c = &f->chunks[i];
		if (c->state != CHUNK_FREE && c->shard == shard && c->index == index)
			return c;
	}
	return NULL;
}

/* The least recently wanted chunk that nobody uses, or NULL; a chunk read
 * ahead and not wanted yet goes only when no other can (it is about to be
 * wanted: evicting it by age would read it twice). */
static rf_chunk *idle(struct rf_feeder *f)
{
	rf_chunk *best = NULL;
	for (uint32_t i = 0; i < f->nchunks; i++) {
		rf_chunk *c = &f->chunks[i];
		if (c->state != CHUNK_READY || c->refs)
			continue;
		if (!best || (best->ahead && !c->ahead) ||
		    (best->ahead == c->ahead && c->used < best->used))
			best = c;
	}
	return best;
}

int rfi_chunks_evict(struct rf_feeder *f)
{
	rf_chunk *c = f->chunks ? idle(f) : NULL;
	if (c)
		rfi_chunk_drop(f, c);
	return c != NULL;
}

static rf_chunk *free_entry(struct rf_feeder *f)
{
	for (uint32_t i = 0; i < f->nchunks; i++)
		if (f->chunks[i].state == CHUNK_FREE)
			return &f->chunks[i];
	return NULL;
}

/* The bytes of request q's member, from its (read) chunk c: 0, or 1 when the
 * chunk ended first (the shard shrank since it was indexed). */
static int point_into(const rf_loader *l, const struct rf_feeder *f, const rf_chunk *c,
		      rf_request *q)
{
	(void)l, (void)f;
	uint64_t at = q->read_offset - c->offset;
	uint32_t len = q->expect;
	if (at + len > c->got)
		return 1;
	q->data = c->buf + c->skip + at;
	q->len = len;
	return 0;
}

static void cut_short(rf_loader *l, struct rf_feeder *f, uint32_t id, rf_request *q,
		      const char *what)
{
	char reason[RF_REASON_LEN];
	rfi_fmt(reason, sizeof(reason), "%s", what);
	rf_place p = q->place;
	uint64_t sample = q->sample;
	rfi_feeder_release(f, id, q);
	rfi_feeder_place_failed(l, f, &p, sample, RF_EBADSAMPLE, reason);
}

/* Starts the read of chunk index of shard (len bytes from offset), for
 * place p (NULL: read ahead): an entry (a free one, or the least recently wanted idle one),
 * pool room (idle chunks make way), engine room. A chunk another process
 * is fetching (or this one, its record not written yet) is waited for as
 * a sample read waits, for p (counted, looked at again in 5 ms; fetched
 * here too once p waited a read's budget); read ahead, it is left alone.
 * @return : the chunk, READING; NULL when something is short or the chunk
 * is waited for (the entry stays free). */
static rf_chunk *start(rf_loader *l, struct rf_feeder *f, uint32_t shard, uint64_t index,
		       uint64_t offset, uint32_t len, const rf_place *p)
{
	int ahead = !p;
	rf_io_read rd = { .dirfd = l->src.index.root_fd, .file = -1, .offset = offset,
			  .len = len };
	rfi_feeder_shard_read(l, f, shard, &rd);
	rf_cached cached = { 0 };
	if (rd.url && f->cache &&
	    rfi_feeder_cache_route(f, shard, &rd, &cached,
				  p ? rfi_feeder_cache_how(l, f, p) : ROUTE_MAY_WAIT) == ROUTE_WAIT) {
		if (p)
			rfi_feeder_cache_wait(l, f, p);
		return NULL;
	}
	size_t span = rfi_io_span(f->io, rd.offset, rd.len);
	if (!rfi_io_ready(f->io, span)) {
		rfi_feeder_cache_cancel(f, &cached);
		return NULL;
	}
	/* an entry: a free one, or the least recently wanted idle chunk's; a
	 * read ahead never pushes out another still to be wanted */
	rf_chunk *c = free_entry(f);
	if (!c) {
		c = idle(f);
		if (!c || (ahead && c->ahead)) {
			rfi_feeder_cache_cancel(f, &cached);
			return NULL; /* every chunk in use */
		}
		rfi_chunk_drop(f, c);
	}
	while (rfi_bufpool_alloc(&f->pool, span, &c->ticket, &c->buf)) {
		rf_chunk *e = idle(f); /* pool room: idle chunks make way */
		if (!e || (ahead && e->ahead)) {
			rfi_feeder_cache_cancel(f, &cached);
			return NULL; /* the entry stays free */
		}
		rfi_chunk_drop(f, e);
	}
	rd.buf = c->buf;
	rd.tag = CHUNK_TAG | (uint64_t)(c - f->chunks);
	assert(c->state == CHUNK_FREE); /* FREE -> READING */
	*c = (rf_chunk){ .state = CHUNK_READING, .shard = shard, .index = index, .offset = offset,
			 .len = len, .buf = c->buf,
			 .ticket = c->ticket, .waiting = NO_CHUNK, .used = ++f->tick,
			 .cache = cached };
	rfi_io_submit(f->io, &rd);
	if (f->cache)
		rfi_feeder_cache_submitted(l, &cached);
	atomic_fetch_add_explicit(&l->st.reads_submitted, 1, memory_order_relaxed);
	return c;
}

/* What chunk index of shard reads: [index * cb, + cb) and the overlap, or
 * the kind's tile of it (every read starting in it, whole: Parquet pages);
 * *len 0 when no read starts in it. */
static void chunk_range(const rf_loader *l, const struct rf_feeder *f, uint32_t shard,
			uint64_t index, uint64_t *offset, uint32_t *len)
{
	uint64_t cb = f->chunk_bytes, start, end;
	if (!l->src.ops->tile) {
		*offset = index * cb;
		*len = (uint32_t)cb + f->chunk_overlap;
		return;
	}
	l->src.ops->tile(&l->src, shard, index * cb, (index + 1) * cb, &start, &end);
	*offset = start;
	*len = (uint32_t)(end - start);
}

/* Token windows in llm.c's order: the chunks after this one in its shard
 * are wanted next, so they are read now, up to a quarter of the table
 * ahead. Without this, the reads in flight would be bounded by the windows
 * in flight (prefetch x batch_size places, a few hundred: less than one
 * 1 MiB chunk of 2 KiB windows), one chunk at a time. Only where nothing
 * else needs the room: read-ahead takes a free entry or an idle one (never
 * another chunk read ahead and not wanted yet), never waits. It pays only
 * with chunk_overlap: before it, the one window across each chunk boundary
 * was a read of its own, and its batch (in order, every batch behind it)
 * waited for that read whatever was read ahead. Tar shards read front to
 * back keep their block shuffle's own spread (and the index has no shard
 * sizes to stop at). */
static void read_ahead(rf_loader *l, struct rf_feeder *f, uint32_t shard, uint64_t index)
{
	uint64_t size = l->src.ops->shard_bytes(&l->src, shard), cb = f->chunk_bytes;
	if (!size)
		return;
	uint32_t ahead = RF_MAX(1u, f->nchunks / 4);
	for (uint64_t k = index + 1; k <= index + ahead && k * cb < size; k++) {
		uint64_t offset;
		uint32_t len;
		if (find(f, shard, k))
			continue;
		chunk_range(l, f, shard, k, &offset, &len);
		if (!len)
			continue; /* no read starts in it */
		rf_chunk *c = start(l, f, shard, k, offset, len, NULL);
		if (!c)
			return;
		c->ahead = 1;
	}
}

int rfi_chunk_issue(rf_loader *l, struct rf_feeder *f, const rf_request *tmpl,
		   const rf_source_read *r)
{
	const rf_source_read m = *r;
	uint64_t index = f->page_units ? m.offset : m.offset / f->chunk_bytes, offset = m.offset;
	uint32_t len = m.len;
	rf_chunk *c = find(f, m.shard, index);
	if (c && c->state == CHUNK_READY && !c->got && !c->refs) {
		rfi_chunk_drop(f, c); /* its read failed: read it again */
		c = NULL;
	}
	if (c) {
		offset = c->offset;
		len = c->len;
	} else if (!f->page_units) {
		chunk_range(l, f, m.shard, index, &offset, &len);
	}
	if (m.offset < offset || m.offset + m.len > offset + len)
		return -1; /* it does not lie in one chunk: read alone */
	if (c) /* served by a read made or started before (stats) */
		atomic_fetch_add_explicit(&l->st.reads_shared, 1, memory_order_relaxed);
	else if (!(c = start(l, f, m.shard, index, offset, len, &tmpl->place)))
		return 0; /* no room now (requests and buffers come back), or waits for
		           * another process's fetch (looked at again in 5 ms) */
	c->used = ++f->tick;
	c->ahead = 0;
	if (!f->page_units) {
		c->refs++; /* held: read-ahead must not take its entry (an idle chunk
			    * found here is the least recently wanted of a small table) */
		read_ahead(l, f, m.shard, index);
		c->refs--;
	}
	assert(f->nfree > 0); /* issue() calls only with a free request */
	uint32_t id = f->free_reqs[--f->nfree];
	rf_request *q = &l->req[id];
	*q = *tmpl;
	q->ticket = NO_TICKET;
	q->chunk = (uint32_t)(c - f->chunks);
	q->next = NO_CHUNK;
	c->refs++;
	if (c->state == CHUNK_READING) {
		q->next = c->waiting; /* landed when the read is in (order does not matter) */
		c->waiting = id;
		return 1;
	}
	if (point_into(l, f, c, q))
		cut_short(l, f, id, q, "member cut short: the shard shrank since it was indexed");
	else
		rfi_feeder_landed(l, f, id);
	return 1;
}

/* Reads chunk c again from the network, into its buffer (span bytes: a
 * URL read lands no more than the object has from its offset, which its
 * cached copy held). @return : 1 submitted; 0 no engine room (the chunk
 * fails as a failed read does). */
static int refetch(rf_loader *l, struct rf_feeder *f, rf_chunk *c, uint32_t span)
{
	rf_io_read rd = { .dirfd = l->src.index.root_fd, .file = -1, .offset = c->offset,
			  .len = RF_MIN(c->len, span), .buf = c->buf,
			  .tag = CHUNK_TAG | (uint64_t)(c - f->chunks) };
	rfi_feeder_shard_read(l, f, c->shard, &rd);
	if (!rfi_io_ready(f->io, span))
		return 0;
	rfi_feeder_cache_route(f, c->shard, &rd, &c->cache, ROUTE_NO_HIT);
	rfi_io_submit(f->io, &rd);
	rfi_feeder_cache_submitted(l, &c->cache);
	atomic_fetch_add_explicit(&l->st.reads_submitted, 1, memory_order_relaxed);
	return 1;
}

void rfi_chunk_done(rf_loader *l, struct rf_feeder *f, const rf_io_done *d)
{
	assert((uint32_t)(d->tag & ~CHUNK_TAG) < f->nchunks);
	rf_chunk *c = &f->chunks[(uint32_t)(d->tag & ~CHUNK_TAG)];
	assert(c->state == CHUNK_READING); /* READING -> READY, once per read */
	if (c->cache.route) {
		uint32_t span = c->cache.route == ROUTE_HIT ? (uint32_t)rfi_io_span(f->io, c->cache.hit.at,
										   c->cache.hit.got) : 0;
		if (rfi_feeder_cache_done(l, f, &c->cache, c->buf + d->skip, d->res, -1) &&
		    refetch(l, f, c, span))
			return; /* its cached copy failed its check: read from the network */
	}
	char reason[RF_REASON_LEN] = "";
	if (d->res < 0) {
		char what[128];
		rfi_io_describe(d, what, sizeof(what));
		rfi_fmt(reason, sizeof(reason), "%s of its chunk: %s",
		       d->step == RF_IO_STEP_OPEN ? "open" : "read", what);
	}
	c->state = CHUNK_READY;
	c->skip = d->skip;
	c->got = d->res < 0 ? 0 : (uint32_t)d->res;
	/* land the waiting requests (each may release its reference, so the
	 * list is taken first) */
	uint32_t id = c->waiting;
	c->waiting = NO_CHUNK;
	c->refs++; /* held while its waiters land */
	while (id != NO_CHUNK) {
		rf_request *q = &l->req[id];
		assert(q->chunk == (uint32_t)(c - f->chunks));
		uint32_t next = q->next;
		if (reason[0])
			cut_short(l, f, id, q, reason);
		else if (point_into(l, f, c, q))
			cut_short(l, f, id, q, "member cut short: the shard shrank since it was "
						"indexed");
		else
			rfi_feeder_landed(l, f, id);
		id = next;
	}
	assert(c->refs > 0); /* the hold above */
	c->refs--;
	if (reason[0] && !c->refs)
		rfi_chunk_drop(f, c); /* read it again when next wanted */
}
