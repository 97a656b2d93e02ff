/* feeder_state.h - the ring thread's own state (struct rf_feeder), shared
 * by the files that make up the ring thread: its set-up (feeder_setup.c),
 * its loop (feeder.c), the end of a read (feeder_land.c), its sequential
 * shard reader (chunks.c) and its node cache route (node_cache_route.c). Only
 * the ring thread touches anything here. Private to src/pipeline/. */
#ifndef RF_FEEDER_STATE_H
#define RF_FEEDER_STATE_H

#include "io/bufpool.h"
#include "cache/node_cache.h"
#include "io/engine.h"
#include "pipeline/loader_state.h"
#include "rf_config.h" /* RF_TEST_HOOKS */
#include "util/fifo.h"

#define NO_TICKET UINT32_MAX /* a raw read: its buffer is the batch slot, not the pool */

/* The ring thread's own state: only it touches anything here. */
/* Sequential shard access (chunks.c): a chunk is an aligned piece of a
 * shard (RF_CHUNK_BYTES, less when the read pool is small), read once and
 * shared by the samples whose members lie in it; kept (least recently used
 * first out) while the pool has room. */
#define RF_CHUNK_BYTES (1u << 20)
#define NO_CHUNK UINT32_MAX
#define CHUNK_TAG (1ull << 63) /* an engine tag with this bit: chunk number */

/* The way a remote read went (node_cache_route.c): the network alone, the
 * cache's file (its bytes checked when in), or the network claimed for this
 * process (its bytes written to the cache when in). */
enum rf_route { ROUTE_NET = 0, ROUTE_HIT, ROUTE_FILL, ROUTE_WAIT };
enum { ROUTE_MAY_WAIT = 1, ROUTE_NO_WAIT = 2, ROUTE_NO_HIT = 3 }; /* how to route */

typedef struct rf_cached {
	uint8_t route;        /* enum rf_route */
	uint64_t object, offset;
	uint32_t len;         /* the range, as the cache keys it */
	rf_cache_hit hit;     /* ROUTE_HIT: where it lies */
} rf_cached;

/* How the ring thread reaches a shard (rfi_feeder_shard_read): the source's
 * transport row says fetched (URL) or opened; an opened one is kept open
 * (its handle) while the descriptor limit allows, else opened each read. */
enum rf_shard_way { SHARD_BY_PATH = 0, SHARD_BY_HANDLE, SHARD_BY_URL };

enum rf_chunk_state { CHUNK_FREE = 0, CHUNK_READING, CHUNK_READY };

typedef struct rf_chunk {
	int state;          /* enum rf_chunk_state */
	uint32_t shard;
	uint64_t index;     /* its key: offset in the shard / chunk_bytes, or with
	                     * page_units the read's offset */
	uint64_t offset;    /* what its read reads: from offset in the shard, */
	uint32_t len;       /* len bytes */
	uint8_t *buf;       /* its pool allocation (ticket), the chunk at buf + skip */
	uint32_t ticket, skip, got; /* got: bytes read (less at the shard's end) */
	uint32_t refs;      /* requests that wait for it or use its bytes */
	uint32_t waiting;   /* first request waiting for the read (rf_request.next), or NO_CHUNK */
	uint64_t used;      /* when last wanted (a tick), for eviction */
	int ahead;          /* read ahead (token windows in order) and not wanted yet */
	rf_cached cache;    /* how its read went (READING) */
} rf_chunk;

struct rf_feeder {
	rf_io *io;
	rf_bufpool pool;       /* read buffers (a token one in raw mode) */
	size_t max_file;       /* larger files are bad samples */
	int failed;            /* the stream failed: issue nothing more */
#if RF_TEST_HOOKS
	unsigned test_delay_us; /* RINGFEED_TEST_READ_DELAY_US, a slow device */
#endif

	uint32_t *free_reqs;   /* request ids not in use */
	uint32_t nfree;
	rf_place *retry;       /* places waiting for a replacement read: cells of retry_q */
	rf_fifo retry_q;
	rf_place cur;          /* the next place to issue, held while resources are short */
	int cur_valid;
	uint64_t next_batch;   /* cursor over new places; starts at l->start_batch */
	uint32_t next_index;
	uint32_t next_slot;    /* the slot next_batch fills (taken at its index 0) */
	uint32_t *drain;       /* scratch for handed-back request ids */
	rf_io_done *done;      /* scratch for finished reads */
	int shard_way;         /* enum rf_shard_way: how a shard is read, chosen once at
	                        * set-up (feeder_setup.c) */
	int *shard_files;      /* SHARD_BY_HANDLE: each shard's engine handle (kept open) */
	rf_chunk *chunks;      /* sequential shard access: the chunk table, or NULL */
	uint32_t nchunks;
	uint32_t chunk_bytes;  /* RF_CHUNK_BYTES, or a quarter of a smaller pool */
	uint32_t overlap_bytes; /* set before rfi_chunks_init: how far a chunk read runs on
	                         * past its end (token windows: the largest window read) */
	uint32_t chunk_overlap; /* in use */
	int page_units;        /* set before rfi_chunks_init: the table's unit is a
	                        * sample's read itself (a Parquet page, shared by the
	                        * rows in flight on it: random access), keyed by its
	                        * offset, not an aligned chunk */
	uint64_t tick;
	/* the node-local cache (cfg.cache_dir, remote sources), or NULL */
	rf_cache *cache;
	uint64_t *objects;     /* each shard's object (rfi_cache_object), 0: not cached */
	rf_cached *req_cache;  /* each request's route (by request id) */
	int cache_looked;      /* the others' records were read since a read began to wait */
	int cache_waiting;     /* a read waits for another process's fetch: wake up soon */
	rf_place waited;       /* the last place counted as waiting (once each) */
	uint64_t wait_since;   /* when it began to wait (rfi_now_ns()), 0: none yet */
};

/* feeder_setup.c */
/* Sets up f (zeroed) for loader l, on the ring thread: the engine, the
 * shards kept open, the cache, the read pool, the chunks and the request
 * lists. @return : 0, or a negative errno with err set; either way
 * rfi_feeder_close() lets go of what it made. */
int rfi_feeder_setup(rf_loader *l, struct rf_feeder *f, char *err, size_t errlen);
/* Lets go of what the ring thread holds (the engine first: the reads in
 * flight are cancelled), but the read pool (rfi_feeder_free). */
void rfi_feeder_close(struct rf_feeder *f);

/* feeder_land.c */
/* Place p's read of sample failed (err, reason): a replacement is queued,
 * or the place is counted down failed (rfi_loader_place_failed). */
void rfi_feeder_place_failed(rf_loader *l, struct rf_feeder *f, const rf_place *p,
			    uint64_t sample, int err, const char *reason);
/* Request id's bytes are in (q->data, q->len): count them, land them (raw)
 * or hand them to a decoder. */
void rfi_feeder_landed(rf_loader *l, struct rf_feeder *f, uint32_t id);

/* node_cache_route.c */
/* Opens the cache when the config asks for one and the source is remote
 * (after the engine). @return : 0 (f->cache may stay NULL), -ENOMEM. */
int rfi_feeder_cache_open(rf_loader *l, struct rf_feeder *f);
/* Routes rd (a URL read of shard) through the cache: ROUTE_HIT (rd now
 * reads the cache's file), ROUTE_FILL or ROUTE_NET (rd unchanged), or, with
 * how = ROUTE_MAY_WAIT, ROUTE_WAIT (another process fetches the range, or
 * this one does: try again after a short wait). ROUTE_NO_WAIT: fetched
 * here too. ROUTE_NO_HIT: never from the cache (its copy just failed its
 * check). */
int rfi_feeder_cache_route(struct rf_feeder *f, uint32_t shard, rf_io_read *rd, rf_cached *out,
			  int how);
/* How place p's read routes: ROUTE_MAY_WAIT, or ROUTE_NO_WAIT once p has
 * waited a whole read's budget (cfg.remote_timeout_ms) for another
 * process's fetch (a stalled claimer: fetched here too). */
int rfi_feeder_cache_how(const rf_loader *l, const struct rf_feeder *f, const rf_place *p);
/* Place p's read waits for another process's fetch of its range: counted
 * once a place (its wait timed from then), and the ring thread sleeps no
 * longer than a short while. */
void rfi_feeder_cache_wait(rf_loader *l, struct rf_feeder *f, const rf_place *p);
/* A routed read was submitted: a miss is counted (a read of a cached shard
 * that goes to the network). */
void rfi_feeder_cache_submitted(rf_loader *l, const rf_cached *cd);
/* A routed read that will not be made after all. */
void rfi_feeder_cache_cancel(struct rf_feeder *f, rf_cached *cd);
/* A routed read finished with res bytes at data (want: the bytes it must
 * give to be filled, or -1 any): a hit checked, a fill written or let go.
 * @return : 1 when a hit's bytes failed (read the range from the network). */
int rfi_feeder_cache_done(rf_loader *l, struct rf_feeder *f, rf_cached *cd, const uint8_t *data,
			 int32_t res, int64_t want);
void rfi_feeder_cache_need(void *ctx, rf_cache *c, uint64_t *need, uint32_t nseg);
void rfi_feeder_cache_publish(rf_loader *l, struct rf_feeder *f);

/* chunks.c */
int rfi_chunks_init(struct rf_feeder *f);
void rfi_chunks_free(struct rf_feeder *f);
/* Issues a request like tmpl (its place, sample, stage, fields), read as
 * r, through its chunk. @return : 1 done (the
 * request waits for the chunk, or has landed); 0 not now (no request, no
 * chunk entry or buffer, no engine room, or the chunk is another process's
 * fetch: try again after a wait); -1 the
 * member does not lie in one chunk (read it alone). */
int rfi_chunk_issue(rf_loader *l, struct rf_feeder *f, const rf_request *tmpl,
		   const rf_source_read *r);
/* A chunk read finished. */
void rfi_chunk_done(rf_loader *l, struct rf_feeder *f, const rf_io_done *d);
/* Frees the least recently wanted chunk nobody uses, to make room in the
 * pool. @return : 1 when one was freed. */
int rfi_chunks_evict(struct rf_feeder *f);

/* Inline: called for each read, by the loop and by chunks.c. */
/* Queues place p for its next read (a replacement, or the same
 * candidate again). */
static inline void retry_push(struct rf_feeder *f, const rf_place *p)
{
	/* Bounded: one entry per request plus the place being issued (the
	 * push asserts room). */
	f->retry[rfi_fifo_push(&f->retry_q)] = *p;
}

/* READY -> FREE: only a chunk whose read is in and that nobody uses (a
 * READING one still has its read in the engine, into its buffer). */
static inline void rfi_chunk_drop(struct rf_feeder *f, rf_chunk *c)
{
	assert(c->state == CHUNK_READY && c->refs == 0 && c->waiting == NO_CHUNK);
	rfi_bufpool_free(&f->pool, c->ticket);
	c->state = CHUNK_FREE;
}

/* Request q no longer needs its chunk. */
static inline void rfi_chunk_unref(struct rf_feeder *f, rf_request *q)
{
	assert(q->chunk < f->nchunks);
	rf_chunk *c = &f->chunks[q->chunk];
	assert(c->refs > 0 && c->state != CHUNK_FREE); /* q's reference is one of them */
	q->chunk = NO_CHUNK;
	if (--c->refs == 0 && c->state == CHUNK_READY && !c->got)
		rfi_chunk_drop(f, c); /* a failed read: nothing to keep */
}

/* Request id is done with: its chunk, its buffer and its id let go. */
static inline void rfi_feeder_release(struct rf_feeder *f, uint32_t id, rf_request *q)
{
	if (q->chunk != NO_CHUNK)
		rfi_chunk_unref(f, q);
	if (q->ticket != NO_TICKET)
		rfi_bufpool_free(&f->pool, q->ticket);
	f->free_reqs[f->nfree++] = id;
}

/* Points rd at shard `shard` the way set-up chose (f->shard_way): its URL
 * (a remote source), its handle kept open, or its path (opened for this
 * read). */
static inline void rfi_feeder_shard_read(const rf_loader *l, const struct rf_feeder *f, uint32_t shard,
					 rf_io_read *rd)
{
	const rf_index *idx = &l->src.index;
	if (f->shard_way == SHARD_BY_HANDLE)
		rd->file = f->shard_files[shard];
	else if (f->shard_way == SHARD_BY_URL) { /* a ranged GET, of the object indexed */
		rd->url = idx->urls[shard];
		rd->etag = idx->etags[shard];
		rd->size = idx->shard_sizes ? idx->shard_sizes[shard] : 0;
	} else
		rd->path = idx->shards[shard];
}

#endif
