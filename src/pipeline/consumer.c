/* consumer.c - the caller's side of the batch ring: next (in order or as
 * batches complete, with a deadline or interrupted), release, and what the
 * loader reports of itself (stats, order, the last error). Runs on the
 * caller's thread; see loader_state.h for what it owns. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gpu/gpu.h"
#include "pipeline/loader_state.h"
#include "util/util.h"

/* The slot to hand out next, or NULL: in order, the next batch's slot once
 * it is ready; otherwise the ready slot with the lowest batch number.
 * Called with l->mu held. */
static rf_slot *ready_slot(rf_loader *l)
{
	rf_slot *best = NULL;
	for (int i = 0; i < l->cfg.prefetch; i++) {
		rf_slot *s = &l->slots[i];
		if (s->state == SLOT_READY && (!best || s->batch.index < best->batch.index))
			best = s;
	}
	if (best && l->cfg.in_order && best->batch.index != l->next_batch)
		return NULL; /* batches are issued in order: the next one is not ready yet */
	return best;
}

/* Nothing can become ready while every slot is lent to the caller: the ring
 * issues batches in order, each into any free slot, so one slot that is not
 * lent is enough for the next batch to come (in either order mode). */
static int all_lent(rf_loader *l)
{
	for (int i = 0; i < l->cfg.prefetch; i++)
		if (l->slots[i].state != SLOT_LENT)
			return 0;
	return 1;
}

/* Waits for the next batch until deadline_ns (CLOCK_MONOTONIC; UINT64_MAX:
 * no deadline). -ETIMEDOUT and -EINTR take nothing and leave the position.
 * src/lib.c checked l and out, set *out to NULL, and refused a fork()ed child. */
static int next_until(rf_loader *l, rf_batch **out, uint64_t deadline_ns)
{
	if (l->failed)
		return l->failed;
	if (l->next_batch >= l->plan.total_batches)
		return RF_EOF;
	uint64_t t0 = rfi_now_ns();
	pthread_mutex_lock(&l->mu);
	if (all_lent(l)) {
		pthread_mutex_unlock(&l->mu);
		rfi_fmt(l->err_detail, sizeof(l->err_detail), "all %d batch slots are held by the "
		       "caller: release a batch before asking for the next", l->cfg.prefetch);
		return -EDEADLK;
	}
	struct timespec until = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};
	rf_slot *s = NULL;
	int timed_out = 0;
	while (!l->interrupted && !(s = ready_slot(l)) && !l->ring_err && !timed_out) {
		if (deadline_ns == UINT64_MAX)
			pthread_cond_wait(&l->ready, &l->mu);
		else
			timed_out = pthread_cond_timedwait(&l->ready, &l->mu, &until) == ETIMEDOUT;
	}
	if (l->interrupted || (timed_out && !s && !l->ring_err)) {
		int ret = l->interrupted ? -EINTR : -ETIMEDOUT;
		l->interrupted = 0;
		pthread_mutex_unlock(&l->mu);
		l->ns_wait += rfi_now_ns() - t0;
		return ret;
	}
	int err = s ? s->err : l->ring_err;
	if (err) {
		rfi_redact(s ? s->errmsg : l->ring_errmsg, l->err_detail, sizeof(l->err_detail));
		if (s)
			rfi_slot_set_state(s, SLOT_READY, SLOT_FREE);
		pthread_mutex_unlock(&l->mu);
		l->failed = err;
		return err;
	}
	rfi_slot_set_state(s, SLOT_READY, SLOT_LENT);
	pthread_mutex_unlock(&l->mu);
	s->batch.replaced = atomic_load_explicit(&s->replaced, memory_order_relaxed);
	l->ns_wait += rfi_now_ns() - t0;
	l->delivered_batches++;
	l->delivered_samples += s->batch.count;
	l->delivered_replaced += s->batch.replaced;
	l->next_batch++;
	if (s->batch.index >= l->delivered_end)
		l->delivered_end = s->batch.index + 1;
	*out = &s->batch;
	return 0;
}

int rfi_loader_next(rf_loader *l, rf_batch **out)
{
	return next_until(l, out, UINT64_MAX);
}

int rfi_loader_next_timeout(rf_loader *l, rf_batch **out, uint64_t timeout_ns)
{
	uint64_t now = rfi_now_ns();
	/* the deadline saturates below UINT64_MAX, which means none */
	uint64_t deadline = timeout_ns < UINT64_MAX - 1 - now ? now + timeout_ns : UINT64_MAX - 1;
	return next_until(l, out, deadline);
}

void rfi_loader_interrupt(rf_loader *l)
{
	pthread_mutex_lock(&l->mu);
	l->interrupted = 1;
	pthread_cond_broadcast(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

int rfi_batch_wait(const rf_batch *b, void *stream)
{
	return rfi_gpu_stream_wait(b->ready_event, stream);
}

int rfi_batch_sync(const rf_batch *b)
{
	return rfi_gpu_event_sync(b->ready_event);
}

void rfi_batch_release_on(rf_loader *l, rf_batch *b, void *stream)
{
	if (l->gpu) {
		rf_slot *s = (rf_slot *)((char *)b - offsetof(rf_slot, batch));
		if (s >= l->slots && s < l->slots + l->cfg.prefetch)
			rfi_gpu_mark_release(l->gpu, (int)(s - l->slots), stream);
	}
	rfi_batch_release(l, b);
}

void rfi_batch_release(rf_loader *l, rf_batch *b)
{
	rf_slot *s = (rf_slot *)((char *)b - offsetof(rf_slot, batch));
	if (s < l->slots || s >= l->slots + l->cfg.prefetch)
		return; /* not one of ours */
	pthread_mutex_lock(&l->mu);
	int lent = s->state == SLOT_LENT; /* else released twice, or never handed out */
	if (lent)
		rfi_slot_set_state(s, SLOT_LENT, SLOT_FREE);
	pthread_mutex_unlock(&l->mu);
	if (lent)
		rfi_loader_wake_ring(l);
}

int rfi_loader_stats(const rf_loader *l, rf_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->samples_total = rfi_source_samples(&l->src);
	out->batches = l->delivered_batches;
	out->samples = l->delivered_samples;
	out->replaced = l->delivered_replaced;
	out->lost_spans = l->lost_spans;
	out->lost_bytes = l->lost_bytes;
	out->http_requests = atomic_load_explicit(&l->st.http_requests, memory_order_relaxed);
	out->http_retries = atomic_load_explicit(&l->st.http_retries, memory_order_relaxed);
	out->http_errors = atomic_load_explicit(&l->st.http_errors, memory_order_relaxed);
	out->http_bytes = atomic_load_explicit(&l->st.http_bytes, memory_order_relaxed);
	out->http_retry_throttled = atomic_load_explicit(&l->st.http_retry_throttled,
							 memory_order_relaxed);
	out->http_retry_server = atomic_load_explicit(&l->st.http_retry_server, memory_order_relaxed);
	out->http_retry_connection = atomic_load_explicit(&l->st.http_retry_connection,
							  memory_order_relaxed);
	out->http_retry_stalled = atomic_load_explicit(&l->st.http_retry_stalled, memory_order_relaxed);
	out->http_connections = atomic_load_explicit(&l->st.http_connections, memory_order_relaxed);
	out->cache_hits = atomic_load_explicit(&l->st.cache_hits, memory_order_relaxed);
	out->cache_hit_bytes = atomic_load_explicit(&l->st.cache_hit_bytes, memory_order_relaxed);
	out->cache_misses = atomic_load_explicit(&l->st.cache_misses, memory_order_relaxed);
	out->cache_written_bytes = atomic_load_explicit(&l->st.cache_written_bytes, memory_order_relaxed);
	out->cache_waits = atomic_load_explicit(&l->st.cache_waits, memory_order_relaxed);
	out->cache_evictions = atomic_load_explicit(&l->st.cache_evictions, memory_order_relaxed);
	out->cache_fill_waits = atomic_load_explicit(&l->st.cache_fill_waits, memory_order_relaxed);
	out->cache_fill_drops = atomic_load_explicit(&l->st.cache_fill_drops, memory_order_relaxed);
	out->bytes_fetched = atomic_load_explicit(&l->st.bytes_fetched, memory_order_relaxed);
	out->bytes_used = atomic_load_explicit(&l->st.bytes_used, memory_order_relaxed);
	out->reads_shared = atomic_load_explicit(&l->st.reads_shared, memory_order_relaxed);
	out->ns_consumer_wait = l->ns_wait;
	out->bytes_read = atomic_load_explicit(&l->st.bytes_read, memory_order_relaxed);
	out->bad_samples = atomic_load_explicit(&l->st.bad_samples, memory_order_relaxed);
	out->reads_submitted = atomic_load_explicit(&l->st.reads_submitted, memory_order_relaxed);
	out->ns_decode = atomic_load_explicit(&l->st.ns_decode, memory_order_relaxed);
	out->ns_transform = atomic_load_explicit(&l->st.ns_transform, memory_order_relaxed);
	out->ns_ring_cpu = atomic_load_explicit(&l->st.ns_ring_cpu, memory_order_relaxed);
	out->ns_collate = atomic_load_explicit(&l->st.ns_collate, memory_order_relaxed);
	out->ns_read_wait = atomic_load_explicit(&l->st.ns_read_wait, memory_order_relaxed);
	out->scaled_decodes = atomic_load_explicit(&l->st.scaled_decodes, memory_order_relaxed);
	out->decoded_pixels = atomic_load_explicit(&l->st.decoded_pixels, memory_order_relaxed);
	out->source_pixels = atomic_load_explicit(&l->st.source_pixels, memory_order_relaxed);
	out->index_bytes = l->src.ops->memory(&l->src);
	if (l->gpu)
		rfi_gpu_copy_stats(l->gpu, &out->device_bytes, &out->ns_device_copy);
	out->reads_in_flight = atomic_load_explicit(&l->st.reads_in_flight, memory_order_relaxed);
	rf_loader *m = (rf_loader *)l; /* the locks are not part of the loader's value */
	out->reads_waiting = rfi_idq_count(&m->work);
	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < l->cfg.prefetch; i++)
		out->batches_ready += l->slots[i].state == SLOT_READY;
	pthread_mutex_unlock(&m->mu);
	out->index_cached = (uint32_t)l->src.cached;
	out->threads = (uint32_t)l->cfg.threads;
	out->io_depth = (uint32_t)l->cfg.io_depth;
	out->direct_io = atomic_load(&l->st.direct_io);
	out->fixed_buffers = atomic_load(&l->st.fixed_buffers);
	out->io_path = atomic_load(&l->st.io_path);
	out->dio_align = atomic_load(&l->st.dio_align);
	out->decode_path = (uint32_t)l->decode;
	out->cpu_decodes = atomic_load_explicit(&l->st.cpu_decodes, memory_order_relaxed);
	out->gpu_decodes = atomic_load_explicit(&l->st.gpu_decodes, memory_order_relaxed);
	out->ns_gpu_decode = atomic_load_explicit(&l->st.ns_gpu_decode, memory_order_relaxed);
	out->ns_gpu_host = atomic_load_explicit(&l->st.ns_gpu_host, memory_order_relaxed);
	return 0;
}

int rfi_loader_order(const rf_loader *l, rf_order_info *out)
{
	memset(out, 0, sizeof(*out));
	out->sampler = l->order.kind;
	out->rank_tail = l->order.tail;
	out->rank = l->order.rank;
	out->world_size = l->order.world;
	out->rank_source = l->rank_source;
	out->dataset_samples = rfi_source_samples(&l->src);
	out->epoch_samples = l->order.epoch_len;
	out->rank_samples = l->order.rank_len;
	out->batches_per_epoch = l->plan.batches_per_epoch;
	out->next_batch = l->next_batch;
	out->total_batches = l->plan.total_batches;
	out->sampler_bytes = rfi_order_memory(&l->order);
	out->epoch_first_batch = rfi_loader_epoch_first_batch(l, l->next_batch);
	return 0;
}

const char *rfi_loader_error(const rf_loader *l)
{
	return l->err_detail;
}

int rfi_batch_field(const rf_batch *b, const char *name, rf_field *out)
{
	for (uint32_t i = 0; i < b->nfields; i++)
		if (!strcasecmp(b->fields[i].name, name)) {
			if (out)
				*out = b->fields[i];
			return 0;
		}
	return -ENOENT;
}
