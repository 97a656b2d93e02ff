/* places.c - the bookkeeping of places, shared by the ring thread, the
 * compute threads and the GPU decode threads: which sample fills a place,
 * room in a raw batch, a place landed (written once: rfi_loader_land) or
 * failed (reported once per epoch, then replaced or the batch failed), and
 * the batch published by whoever lands its last place. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "pipeline/loader_state.h"
#include "sample/rest.h"
#include "sample/shard_order.h"
#include "util/hash.h"
#include "util/util.h"

const rf_rest *rfi_loader_rest_of(const rf_loader *l, uint64_t epoch)
{
	return l->rest && l->rest->epoch == epoch ? l->rest : NULL;
}

uint64_t rfi_loader_epoch_first_batch(const rf_loader *l, uint64_t b)
{
	uint64_t bpe = l->plan.batches_per_epoch;
	const rf_rest *rest = rfi_loader_rest_of(l, b / bpe);
	return b / bpe * bpe + (rest ? bpe - rest->batches : 0);
}

/* Batch b's first position of this rank's share of its epoch (or of the
 * rest that fills it: its batches come last, numbered up to the epoch's end,
 * so that every epoch starts at epoch * batches_per_epoch). */
static uint64_t batch_first(const rf_loader *l, uint64_t b)
{
	uint64_t first = rfi_loader_epoch_first_batch(l, b);
	assert(b >= first);
	return (b - first) * (uint64_t)l->cfg.batch_size;
}

uint32_t rfi_loader_batch_count(const rf_loader *l, uint64_t b)
{
	const rf_rest *rest = rfi_loader_rest_of(l, b / l->plan.batches_per_epoch);
	uint64_t m = rest ? rest->rank_len : l->order.rank_len;
	return (uint32_t)RF_MIN((uint64_t)l->cfg.batch_size, m - batch_first(l, b));
}

void rfi_loader_place_sample(const rf_loader *l, const rf_place *p, uint64_t *sample,
			    uint64_t *epoch, uint64_t *pos)
{
	uint64_t e = p->batch / l->plan.batches_per_epoch;
	const rf_rest *rest = rfi_loader_rest_of(l, e);
	uint64_t q = batch_first(l, p->batch) + p->index;
	const rf_order *o = &l->order;
	uint64_t g = rest ? rfi_rest_global(rest, o->rank, o->world, o->blocked, q)
			  : rfi_order_global(o, q);
	*epoch = e;
	*pos = g;
	*sample = l->shard_order && !p->attempt ? rfi_shard_order_sample(l->shard_order, e, g)
						 : rfi_order_sample(o, e, g, p->attempt);
}

int rfi_loader_forked(const rf_loader *l)
{
	return l->pid != getpid();
}

void rfi_loader_wake_ring(rf_loader *l)
{
	uint64_t one = 1;
	/* Can only fail if the counter would overflow, which a pending read
	 * rules out; the ring thread re-reads it on every wake. */
	ssize_t r = write(l->wake_fd, &one, sizeof(one));
	assert(r == (ssize_t)sizeof(one));
	(void)r;
}

int rfi_slot_reserve(rf_slot *s, uint32_t index, size_t len, size_t align, size_t *off)
{
	rf_raw_room *room = &s->room[index];
	if (room->len >= len && room->at % align == 0) {
		/* an earlier attempt's (its read is over): taken again */
		*off = room->at;
		return 0;
	}
	size_t used = atomic_load_explicit(&s->raw_used, memory_order_relaxed), at;
	do {
		at = RF_ALIGN_UP(used, align);
		if (at + len > s->raw_cap)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak_explicit(&s->raw_used, &used, at + len,
						       memory_order_relaxed, memory_order_relaxed));
	*off = at;
	*room = (rf_raw_room){ .at = at, .len = len };
	return 0;
}

void rfi_slot_no_room(rf_loader *l, rf_slot *s, size_t len, char *reason, size_t reason_len)
{
	char first[sizeof(s->failed)];
	pthread_mutex_lock(&l->mu);
	memcpy(first, s->failed, sizeof(first));
	pthread_mutex_unlock(&l->mu);
	rfi_fmt(reason, reason_len, "no room left in the batch for a replacement of %zu bytes%s%s",
	       len, first[0] ? "; the reads failed: " : "", first);
}

void rfi_loader_place_landed(rf_loader *l, rf_slot *s)
{
	/* never below 0: each place lands once. (Not checked against the
	 * batch's count: once another thread lands the last place, the slot may
	 * already hold the next batch.) */
	unsigned before = atomic_fetch_sub_explicit(&s->remaining, 1, memory_order_acq_rel);
	assert(before >= 1);
	if (before != 1)
		return;
	if (l->cfg.raw) /* every sample of the batch has its room by now */
		s->batch.bytes = atomic_load_explicit(&s->raw_used, memory_order_relaxed);
	if (l->fields.n) /* every landed sample stored its values by now */
		rfi_slot_fields_pack(&s->fields, &l->fields, (uint32_t)l->cfg.batch_size, &s->batch);
	uint64_t last = atomic_load_explicit(&s->t_last_read, memory_order_relaxed);
	s->batch.fetch_ns = last > s->t_start ? last - s->t_start : 0;
	if (l->gpu) {
		/* the copy goes out now, from the thread that finished the batch */
		pthread_mutex_lock(&l->mu);
		int failed = s->err;
		pthread_mutex_unlock(&l->mu);
		char why[256];
		size_t bytes = l->cfg.raw ? s->batch.bytes : (size_t)s->batch.count * l->plan.sample_bytes;
		if (!failed && rfi_gpu_copy(l->gpu, (int)(s - l->slots), s->host, bytes, s->batch.count,
					   s->on_host, l->plan.sample_bytes, &s->batch.device_data,
					   &s->batch.ready_event, why, sizeof(why))) {
			pthread_mutex_lock(&l->mu);
			s->err = -EIO;
			rfi_fmt(s->errmsg, sizeof(s->errmsg), "batch %llu to device %d: %s",
			       (unsigned long long)s->batch.index, l->cfg.device, why);
			pthread_mutex_unlock(&l->mu);
		}
	}
	s->batch.prep_ns = atomic_load_explicit(&s->prep_ns, memory_order_relaxed);
	s->batch.read_bytes = atomic_load_explicit(&s->read_bytes, memory_order_relaxed);
	pthread_mutex_lock(&l->mu);
	rfi_slot_set_state(s, SLOT_FILLING, SLOT_READY);
	pthread_cond_broadcast(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

/* 1 when (epoch, sample) was not reported yet (and now is). With
 * report_mu held. Out of memory, it reports again rather than not at all. */
static int first_report(rf_loader *l, uint64_t epoch, uint64_t sample)
{
	uint64_t key = ((epoch << 40) | (sample & ((1ull << 40) - 1))) + 1;
	if (2 * (l->bad_n + 1) > l->bad_cap) {
		size_t cap = l->bad_cap ? 2 * l->bad_cap : 64;
		uint64_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return 1;
		for (size_t i = 0; i < l->bad_cap; i++)
			if (l->bad_seen[i]) {
				size_t j = rfi_mix64(l->bad_seen[i]) & (cap - 1);
				while (t[j])
					j = (j + 1) & (cap - 1);
				t[j] = l->bad_seen[i];
			}
		free(l->bad_seen);
		l->bad_seen = t;
		l->bad_cap = cap;
	}
	size_t j = rfi_mix64(key) & (l->bad_cap - 1);
	for (; l->bad_seen[j]; j = (j + 1) & (l->bad_cap - 1))
		if (l->bad_seen[j] == key)
			return 0;
	l->bad_seen[j] = key;
	l->bad_n++;
	return 1;
}

int rfi_loader_place_failed(rf_loader *l, const rf_place *p, uint64_t sample, int err,
			   const char *reason, rf_place *retry)
{
	/* one name for the sample in the callback and in every message: a
	 * path the user can open (rfi_source_path) */
	char full[1280], shown[1280], why[512];
	const char *path = rfi_source_path(&l->src, sample, full, sizeof(full));
	/* what leaves the loader (the callback, the log, the error) shows no
	 * URL's password */
	path = rfi_redact(path, shown, sizeof(shown));
	reason = rfi_redact(reason, why, sizeof(why));
	pthread_mutex_lock(&l->report_mu);
	if (first_report(l, p->batch / l->plan.batches_per_epoch, sample)) {
		atomic_fetch_add_explicit(&l->st.bad_samples, 1, memory_order_relaxed);
		if (l->cfg.on_sample_error)
			l->cfg.on_sample_error(l->cfg.user, path, err, reason);
		rfi_log(l->cfg.log_level, RF_LOG_WARN, "bad sample %s: %s", path, reason);
	}
	pthread_mutex_unlock(&l->report_mu);

	rf_slot *s = rfi_slot_of(l, p);
	if (l->cfg.raw && err != -ENOSPC) {
		/* what took the batch's room, for a replacement that finds none */
		pthread_mutex_lock(&l->mu);
		if (!s->failed[0])
			rfi_fmt(s->failed, sizeof(s->failed), "%s: %s", path, reason);
		pthread_mutex_unlock(&l->mu);
	}

	int fatal = 0;
	if (l->cfg.on_error == RF_ON_ERROR_FAIL)
		fatal = RF_EBADSAMPLE;
	else if (p->attempt + 1 >= RF_MAX_ATTEMPTS)
		fatal = RF_ETOOMANYBAD;
	if (!fatal) {
		*retry = *p;
		retry->attempt++;
		retry->transient = 0;
		return 1;
	}
	pthread_mutex_lock(&l->mu);
	if (!s->err) {
		s->err = fatal;
		if (fatal == RF_ETOOMANYBAD)
			rfi_fmt(s->errmsg, sizeof(s->errmsg), "%d bad samples in a row for batch %llu "
			       "place %u; the last: %s: %s", RF_MAX_ATTEMPTS,
			       (unsigned long long)p->batch, p->index, path, reason);
		else
			rfi_fmt(s->errmsg, sizeof(s->errmsg), "%s: %s", path, reason);
	}
	pthread_mutex_unlock(&l->mu);
	rfi_loader_place_landed(l, s);
	return 0;
}

void rfi_loader_land(rf_loader *l, const rf_place *p, uint64_t sample)
{
	rf_slot *s = rfi_slot_of(l, p);
	s->batch.labels[p->index] = rfi_source_label(&l->src, sample);
	s->batch.ids[p->index] = sample;
	if (p->attempt)
		atomic_fetch_add_explicit(&s->replaced, 1, memory_order_relaxed);
	rfi_loader_place_landed(l, s);
}
