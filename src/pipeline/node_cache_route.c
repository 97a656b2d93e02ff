/* node_cache_route.c - the ring thread's side of the node-local cache
 * (src/cache/node_cache.h): which way a remote read goes (the cache's local file,
 * or the network, claimed for this process to fill, or waiting for another
 * process's fetch), what happens when it is in (its bytes checked, or
 * written to the cache), and which segments the order needs soonest when
 * the cache must evict. Only the ring thread runs any of this. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "index/index_build.h" /* rfi_index_check_remote */
#include "cache/node_cache.h"
#include "pipeline/feeder_state.h"
#include "util/util.h"

#define LOOKAHEAD 65536 /* places the eviction looks ahead at */

/* The shards' ETags as the server says them now, against the index's: a
 * shard whose ETag changed is not cached (its reads then fail as they do
 * without a cache: If-Match, "changed on the server"), so no run ever
 * serves bytes of a replaced object. Only an index that came from a cache
 * with its ETags holds some this process did not see. @return : 0, or -1 (the check itself
 * failed: no cache this run). */
static int changed_shards(const rf_loader *l, uint8_t *changed)
{
	const rf_index *idx = &l->src.index;
	if (!l->src.cached || idx->etags_seen)
		return 0;
	rf_index t = *idx; /* read-only, but for the ETags it fills */
	t.etags = calloc(idx->nshards, sizeof(*t.etags));
	if (!t.etags)
		return -1;
	char err[512];
	int ret = rfi_index_check_remote(&t, RF_LOG_ERROR, err, sizeof(err));
	if (ret)
		rfi_log(l->cfg.log_level, RF_LOG_WARN, "cache: checking the shards' ETags: %s; no "
		       "cache this run", err);
	for (size_t i = 0; !ret && i < idx->nshards; i++)
		changed[i] = strcmp(t.etags[i], idx->etags[i]) != 0;
	free(t.etags);
	return ret ? -1 : 0;
}

int rfi_feeder_cache_open(rf_loader *l, struct rf_feeder *f)
{
	const rf_index *idx = &l->src.index;
	if (!l->cfg.cache_dir || !l->cfg.cache_dir[0] || f->shard_way != SHARD_BY_URL)
		return 0;
	f->objects = calloc(idx->nshards, sizeof(uint64_t));
	f->req_cache = calloc((size_t)l->cfg.io_depth, sizeof(rf_cached));
	uint8_t *changed = calloc(idx->nshards, 1);
	if (!f->objects || !f->req_cache || !changed) {
		free(changed);
		return -ENOMEM;
	}
	if (changed_shards(l, changed)) {
		free(changed);
		return 0;
	}
	for (size_t i = 0; i < idx->nshards; i++)
		if (!changed[i])
			f->objects[i] = rfi_cache_object(idx->urls[i], idx->etags[i],
							idx->shard_sizes ? idx->shard_sizes[i] : 0);
	free(changed);
	rf_cache_params p = { .dir = l->cfg.cache_dir, .bytes = l->cfg.cache_bytes, .io = f->io,
			      .log_level = l->cfg.log_level, .group = l->cfg.cache_group,
			      .need = rfi_feeder_cache_need,
			      .need_ctx = l };
	return rfi_cache_open(&f->cache, &p);
}

/* Points rd at the cached range. */
static void read_hit(rf_io_read *rd, const rf_cache_hit *hit)
{
	rd->url = NULL;
	rd->etag = NULL;
	rd->etag_out = NULL;
	rd->path = NULL;
	rd->file = hit->file;
	rd->offset = hit->at;
	rd->len = hit->got;
}

int rfi_feeder_cache_route(struct rf_feeder *f, uint32_t shard, rf_io_read *rd, rf_cached *out,
			  int how)
{
	*out = (rf_cached){ 0 };
	uint64_t object = f->objects[shard];
	if (!object)
		return ROUTE_NET;
	out->object = object;
	out->offset = rd->offset;
	out->len = rd->len;
	int found = how == ROUTE_NO_HIT ? 0 : rfi_cache_find(f->cache, object, rd->offset, rd->len,
							     &out->hit);
	if (found == 1) {
		read_hit(rd, &out->hit);
		return out->route = ROUTE_HIT;
	}
	if (found == 2 && how == ROUTE_MAY_WAIT)
		return ROUTE_WAIT; /* this process fetches it now: its record comes soon */
	switch (rfi_cache_claim(f->cache, object, rd->offset, rd->len)) {
	case RF_CACHE_FOUND:
		if (how != ROUTE_NO_HIT &&
		    rfi_cache_find(f->cache, object, rd->offset, rd->len, &out->hit)) {
			read_hit(rd, &out->hit);
			return out->route = ROUTE_HIT;
		}
		return ROUTE_NET;
	case RF_CACHE_MINE:
		return out->route = ROUTE_FILL;
	case RF_CACHE_THEIRS:
		if (how == ROUTE_MAY_WAIT) {
			/* another process is fetching it: its record comes soon (or its
			 * claim goes, when it fails or dies); the next look reads the
			 * others' new records first */
			f->cache_looked = 0;
			return ROUTE_WAIT;
		}
		/* waited a read's budget already (rfi_feeder_cache_how): fetched
		 * here too */
		return ROUTE_NET;
	default:
		return ROUTE_NET;
	}
}

/* Whether place p is the one waiting for another process's fetch (its
 * wait timed since f->wait_since). */
static int waiting_is(const struct rf_feeder *f, const rf_place *p)
{
	return f->wait_since && f->waited.batch == p->batch && f->waited.index == p->index &&
	       f->waited.attempt == p->attempt;
}

int rfi_feeder_cache_how(const rf_loader *l, const struct rf_feeder *f, const rf_place *p)
{
	if (!waiting_is(f, p))
		return ROUTE_MAY_WAIT;
	/* a claimer whose fetch took a whole read's budget would have failed it
	 * and let its claim go: one that holds it longer is stalled (stopped,
	 * its ring thread held), so the range is fetched here too */
	uint64_t budget = l->cfg.remote_timeout_ms ? l->cfg.remote_timeout_ms : RF_IO_URL_BUDGET_MS;
	return rfi_now_ns() - f->wait_since < budget * 1000000ull ? ROUTE_MAY_WAIT : ROUTE_NO_WAIT;
}

void rfi_feeder_cache_wait(rf_loader *l, struct rf_feeder *f, const rf_place *p)
{
	f->cache_waiting = 1;
	if (!waiting_is(f, p)) {
		f->waited = *p;
		f->wait_since = rfi_now_ns();
		atomic_fetch_add_explicit(&l->st.cache_waits, 1, memory_order_relaxed);
	}
}

void rfi_feeder_cache_submitted(rf_loader *l, const rf_cached *cd)
{
	/* counted as they happen (not each pass): a batch's stats are whole
	 * when it is taken */
	if (cd->object && cd->route != ROUTE_HIT)
		atomic_fetch_add_explicit(&l->st.cache_misses, 1, memory_order_relaxed);
}

void rfi_feeder_cache_cancel(struct rf_feeder *f, rf_cached *cd)
{
	if (cd->route == ROUTE_HIT)
		rfi_cache_read_done(f->cache, &cd->hit);
	else if (cd->route == ROUTE_FILL)
		rfi_cache_unclaim(f->cache, cd->object, cd->offset, cd->len);
	cd->route = ROUTE_NET;
}

/* The fills' counts that rfi_cache_fill() moves (waits, drops) into the
 * loader's stats. */
static void publish_fills(rf_loader *l, const struct rf_feeder *f)
{
	rf_cache_counts n;
	rfi_cache_counts_get(f->cache, &n);
	atomic_store_explicit(&l->st.cache_fill_waits, n.fill_waits, memory_order_relaxed);
	atomic_store_explicit(&l->st.cache_fill_drops, n.fill_drops, memory_order_relaxed);
}

int rfi_feeder_cache_done(rf_loader *l, struct rf_feeder *f, rf_cached *cd, const uint8_t *data,
			 int32_t res, int64_t want)
{
	int again = 0;
	if (cd->route == ROUTE_HIT) {
		/* a read that failed, or bytes that do not hash to their record:
		 * that record is dropped, and the range read from the network */
		again = !rfi_cache_verify(f->cache, &cd->hit, data, res);
		rfi_cache_read_done(f->cache, &cd->hit);
		if (!again) {
			atomic_fetch_add_explicit(&l->st.cache_hits, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&l->st.cache_hit_bytes, (uint64_t)res,
						  memory_order_relaxed);
		}
	} else if (cd->route == ROUTE_FILL) {
		if (res >= 0 && (want < 0 || res == want)) {
			rfi_cache_fill(f->cache, cd->object, cd->offset, cd->len, data, (uint32_t)res);
			publish_fills(l, f); /* before the read lands: whole when its batch is */
		} else
			rfi_cache_unclaim(f->cache, cd->object, cd->offset, cd->len);
	}
	cd->route = ROUTE_NET;
	return again;
}

/* rf_cache_need_fn: the segments the next LOOKAHEAD places read from, each
 * with how far ahead it is first read. Sample reads only (shared pages are
 * those; a chunk of
 * sequential access is not looked for: those are evicted by age). */
void rfi_feeder_cache_need(void *ctx, rf_cache *c, uint64_t *need, uint32_t nseg)
{
	rf_loader *l = ctx;
	struct rf_feeder *f = l->feeder;
	if (!f || (f->chunks && !f->page_units))
		return;
	uint64_t b = f->next_batch;
	uint32_t i = f->next_index;
	for (uint64_t ahead = 0; ahead < LOOKAHEAD && b < l->plan.total_batches; ahead++) {
		rf_place p = { .batch = b, .index = i };
		uint64_t sample, epoch, pos;
		rfi_loader_place_sample(l, &p, &sample, &epoch, &pos);
		rf_source_read r;
		rfi_source_read_of(&l->src, sample, &r);
		if (!r.path && f->objects[r.shard]) {
			uint32_t s = rfi_cache_segment_of(c, f->objects[r.shard], r.offset, r.len);
			if (s < nseg && need[s] == UINT64_MAX)
				need[s] = ahead;
		}
		if (++i == rfi_loader_batch_count(l, b)) {
			b++;
			i = 0;
		}
	}
}

void rfi_feeder_cache_publish(rf_loader *l, struct rf_feeder *f)
{
	rf_cache_counts n;
	rfi_cache_counts_get(f->cache, &n);
	atomic_store_explicit(&l->st.cache_written_bytes, n.written_bytes, memory_order_relaxed);
	atomic_store_explicit(&l->st.cache_evictions, n.evictions, memory_order_relaxed);
}
