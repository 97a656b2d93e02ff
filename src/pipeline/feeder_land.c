/* feeder_land.c - the ring thread's end of a read (its loop is feeder.c):
 * the bytes landed (a raw sample into its slot, a token window into its
 * row, anything else handed to a decoder), or the place failed (its
 * replacement queued). Also called by chunks.c, for the requests a chunk's
 * read served. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "pipeline/feeder_state.h"
#include "pipeline/loader_state.h"
#include "transform/token_row.h"
#include "util/util.h"

void rfi_feeder_place_failed(rf_loader *l, struct rf_feeder *f, const rf_place *p,
			    uint64_t sample, int err, const char *reason)
{
	rf_place again;
	if (rfi_loader_place_failed(l, p, sample, err, reason, &again))
		retry_push(f, &again);
}

/* A raw sample read in a chunk: copied into the batch after the samples
 * already there (a read of its own went straight there). @return : 0, or
 * -ENOSPC (reason set) when only a replacement found no room. */
static int raw_from_chunk(rf_loader *l, rf_slot *s, rf_request *q, char *reason, size_t len)
{
	size_t off;
	if (rfi_slot_reserve(s, q->place.index, q->len, l->raw_align, &off)) {
		rfi_slot_no_room(l, s, q->len, reason, len);
		return -ENOSPC;
	}
	memcpy(s->batch.data + off, q->data, q->len);
	q->data = s->batch.data + off;
	return 0;
}

/* A read with fields holds more than the sample's bytes: the members its
 * fields are (a span of its shard). Points each field at its bytes, and
 * q->data at the sample's own. */
static void carve_fields(rf_loader *l, rf_request *q)
{
	for (uint32_t i = 0; i < l->fields.n; i++)
		if (q->field[i].where == RF_FIELD_IN_READ)
			q->field[i].data = q->data + q->field[i].at;
	q->data += q->main_at;
	q->len = q->main_len;
}

void rfi_feeder_landed(rf_loader *l, struct rf_feeder *f, uint32_t id)
{
	rf_request *q = &l->req[id];
	atomic_fetch_add_explicit(&l->st.bytes_read, q->len, memory_order_relaxed);
	rf_slot *s = rfi_slot_of(l, &q->place);
	atomic_fetch_add_explicit(&s->read_bytes, q->len, memory_order_relaxed);
	if (l->fields.n)
		carve_fields(l, q);
	if (q->stage != RF_STAGE_KIND_RAW && q->stage != RF_STAGE_KIND_IMAGE)
		/* a kind's extract counts its value's bytes (compute.c) */
		atomic_fetch_add_explicit(&l->st.bytes_used, q->len, memory_order_relaxed);
	atomic_store_explicit(&s->t_last_read, rfi_now_ns(), memory_order_relaxed); /* one writer: this thread */
	rf_place p = q->place;
	uint64_t sample = q->sample;
	switch ((rf_stage)q->stage) {
	case RF_STAGE_RAW: { /* no decode: the bytes are the sample */
		char reason[RF_REASON_LEN];
		if (q->chunk != NO_CHUNK && raw_from_chunk(l, s, q, reason, sizeof(reason))) {
			rfi_feeder_release(f, id, q);
			rfi_feeder_place_failed(l, f, &p, sample, -ENOSPC, reason);
			return;
		}
		s->batch.offsets[p.index] = (uint64_t)(q->data - s->batch.data);
		s->batch.sizes[p.index] = q->len;
		break;
	}
	case RF_STAGE_TOKENS: /* a window, stored into its row (the O_DIRECT over-read
			       * is outside q->data) */
		rfi_token_row_store(s->host + (size_t)p.index * l->plan.sample_bytes, l->plan.token_bytes,
				   q->data, l->plan.token_width, l->cfg.seq_len + 1);
		break;
	default:
		rfi_loader_dispatch(l, id); /* now a decoder's, until handed back */
		return;
	}
	rfi_loader_store_fields(l, q);
	rfi_feeder_release(f, id, q);
	rfi_loader_land(l, &p, sample);
}
