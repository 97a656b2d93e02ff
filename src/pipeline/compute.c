/* compute.c - a compute thread: take a landed read, choose the source window
 * (center crop or random resized crop, flip), decode only what that window
 * needs (DCT scale, rows, columns), resample it straight into its place in
 * the batch slot, run the caller's sample_fn on it, hand the read buffer
 * back to the ring thread, count the batch down (the thread that lands the
 * last sample publishes the batch). */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "decode/image.h"
#include "decode/unzstd.h"
#include "pipeline/loader_state.h"
#include "pipeline/sample_hook.h"
#include "transform/token_row.h"
#include "util/util.h"

/* Per-thread scratch: created once, grown to the largest image, never shared. */
typedef struct worker {
	rf_decoder *dec;     /* JPEG, PNG and WebP */
	rf_resampler rs;
	rf_unzstd unzstd;    /* zstd members: context and output, kept */
	/* .bin.zst windows: the frames now in unzstd's buffer (shard, first,
	 * count; count 0: none), so that the next window in them (llm.c's
	 * order: four windows of 1,024 tokens a frame of 4,096) is stored
	 * without decompressing them again */
	uint32_t z_shard, z_frame, z_frames;
	void *kind_scratch;  /* the source kind's own (its extract's), or NULL */
	uint64_t ns_decode, ns_transform, scaled, decoded_px, source_px;
} worker;

/* Decodes and transforms the image of request q (JPEG, PNG or WebP, told
 * by its first bytes) into dst. Returns 0 or a negative code with q->reason set. */
static int process(rf_loader *l, worker *w, rf_request *q, size_t len, uint8_t *dst)
{
	uint64_t t0 = rfi_now_ns();
	int W, H, C = l->cfg.crop, max_denom;
	int err = rfi_decoder_open(w->dec, q->data, len, l->cfg.max_pixels, &W, &H, &max_denom,
				  q->reason, sizeof(q->reason));
	if (err)
		return err;
	rf_window win;
	rfi_window_for(&l->plan.window, q->epoch, q->sample, W, H, &win);
	/* beside the GPU's engines, which decode at full scale, so does the pool:
	 * which decoder takes a sample should change its pixels as little as it can */
	int denom = l->cfg.no_scaled_decode || l->decode != RF_DECODE_CPU ? 1 : rfi_denom_for_window(&win, C);
	denom = RF_MIN(denom, max_denom);
	if (rfi_taps_for_window(&w->rs.tx, &w->rs.ty, &win, W, H, denom, C)) {
		rfi_decoder_abort(w->dec);
		rfi_fmt(q->reason, sizeof(q->reason), "out of memory for resampling tables");
		return -ENOMEM;
	}
	rf_region want = { w->rs.tx.lo, w->rs.tx.hi, w->rs.ty.lo, w->rs.ty.hi };
	rf_image img;
	err = rfi_decoder_decode(w->dec, denom, l->cfg.no_region_decode ? NULL : &want,
				l->cfg.verify_full, &img, q->reason, sizeof(q->reason));
	uint64_t t1 = rfi_now_ns();
	w->ns_decode += t1 - t0;
	if (err)
		return err;
	err = rfi_resample_store(&w->rs, &l->plan.output, img.rgb, img.stride, img.x0, img.y0, dst);
	if (err)
		rfi_fmt(q->reason, sizeof(q->reason), "out of memory for resampling");
	w->ns_transform += rfi_now_ns() - t1;
	w->scaled += denom > 1;
	w->decoded_px += (uint64_t)img.w * (uint64_t)img.h;
	w->source_px += (uint64_t)W * (uint64_t)H;
	return err;
}

/* A zstd member: its decompressed bytes become the request's data (in the
 * worker's buffer, until its next sample). The largest accepted: raw mode's
 * raw_max_bytes, else 256 MiB (no JPEG of a trainable size comes near). */
static int unzstd(rf_loader *l, worker *w, rf_request *q)
{
	w->z_frames = 0; /* the buffer is a member's now */
	uint64_t t0 = rfi_now_ns();
	size_t max = l->cfg.raw ? l->cfg.raw_max_bytes : (size_t)256 << 20, len;
	const uint8_t *out;
	int err = rfi_unzstd_frame(&w->unzstd, q->data, q->len, max, &out, &len, q->reason,
				  sizeof(q->reason));
	w->ns_decode += rfi_now_ns() - t0;
	if (err == -ENOMEM)
		rfi_fmt(q->reason, sizeof(q->reason), "out of memory for decoder scratch");
	if (err)
		return err;
	q->data = out;
	q->len = (uint32_t)len;
	atomic_fetch_add_explicit(&l->st.bytes_used, len, memory_order_relaxed);
	return 0;
}

/* Fields that are columns (cfg.fields of a kind with columns): each value
 * cut out of its page, read beside the sample's, by the kind; then held
 * as an inline value until the place lands. A null is absent, or a bad
 * sample when the field is not optional, as a member a sample lacks. */
static int kind_fields(rf_loader *l, worker *w, rf_request *q)
{
	for (uint32_t k = 0; k < l->fields.n; k++) {
		rf_req_field *d = &q->field[k];
		const rf_field_spec *spec = &l->fields.spec[k];
		if (d->where != RF_FIELD_KIND_PART)
			continue;
		const uint8_t *out;
		size_t len;
		int present;
		int err = l->src.ops->field_extract(&l->src, q->sample, k, spec->id, d->data, d->len,
						    &w->kind_scratch, &out, &len, &present, q->reason,
						    sizeof(q->reason));
		if (err)
			return err;
		if (!present && !spec->optional) {
			rfi_fmt(q->reason, sizeof(q->reason), "its '%s' field is null (fields asks for "
				"it; '%s?' would make it optional)", spec->name, spec->name);
			return RF_EBADSAMPLE;
		}
		if (len > l->fields.max) {
			rfi_fmt(q->reason, sizeof(q->reason), "its '%s' field is %zu bytes, more than "
				"field_max (--field-max: %u bytes)", spec->name, len, l->fields.max);
			return RF_EBADSAMPLE;
		}
		*d = present ? (rf_req_field){ .where = RF_FIELD_INLINE, .data = out,
					       .len = (uint32_t)len }
			     : (rf_req_field){ .where = RF_FIELD_ABSENT };
	}
	return 0;
}

/* The kind's own stage (rf_source_ops.extract): the sample's bytes cut out
 * of what was read (a Parquet row's value out of its page) become the
 * request's data, valid until this thread's next sample; and its fields
 * that are columns read as pages, their values. */
static int kind_extract(rf_loader *l, worker *w, rf_request *q)
{
	uint64_t t0 = rfi_now_ns();
	const uint8_t *out;
	size_t len;
	int err = l->src.ops->extract(&l->src, q->sample, q->data, q->len, &w->kind_scratch, &out,
				      &len, q->reason, sizeof(q->reason));
	if (!err && l->fields.n && l->src.ops->field_extract)
		err = kind_fields(l, w, q);
	w->ns_decode += rfi_now_ns() - t0;
	if (err)
		return err;
	if (len > UINT32_MAX || (l->cfg.raw && len > l->cfg.raw_max_bytes)) {
		rfi_fmt(q->reason, sizeof(q->reason), "%zu bytes is more than the largest sample "
			"raw mode takes (raw_max_bytes, --raw-max: %zu bytes)", len,
			(size_t)l->cfg.raw_max_bytes);
		return -EFBIG;
	}
	q->data = out;
	q->len = (uint32_t)len;
	atomic_fetch_add_explicit(&l->st.bytes_used, len, memory_order_relaxed);
	return 0;
}

/* A window of a .bin.zst: its frames decompressed, its tokens stored into
 * its row. */
static int token_window(rf_loader *l, worker *w, rf_request *q, uint8_t *row)
{
	uint64_t t0 = rfi_now_ns();
	/* the frames read: up to the one holding the window's last token, the
	 * last frame of the shard shorter (the kind says which) */
	rf_source_frames fr;
	l->src.ops->frames_of(&l->src, q->sample, &fr);
	uint32_t width = l->plan.token_width;
	uint64_t n = fr.tokens, first = (uint64_t)fr.first * fr.frame_tokens;
	const uint8_t *out;
	int err = 0;
	if (w->z_frames && w->z_shard == fr.shard && fr.first >= w->z_frame &&
	    fr.last < w->z_frame + w->z_frames) {
		/* in the frames decompressed last */
		first = (uint64_t)w->z_frame * fr.frame_tokens;
		out = w->unzstd.buf;
	} else {
		uint64_t end = RF_MIN(((uint64_t)fr.last + 1) * fr.frame_tokens, fr.shard_tokens);
		w->z_frames = 0;
		err = rfi_unzstd_frames(&w->unzstd, q->data, q->len, (size_t)((end - first) * width),
				       &out, q->reason, sizeof(q->reason));
		if (!err) {
			w->z_shard = fr.shard;
			w->z_frame = fr.first;
			w->z_frames = fr.last - fr.first + 1;
		}
	}
	uint64_t t1 = rfi_now_ns();
	w->ns_decode += t1 - t0;
	if (err == -ENOMEM)
		rfi_fmt(q->reason, sizeof(q->reason), "out of memory for decoder scratch");
	if (err)
		return err;
	rfi_token_row_store(row, l->plan.token_bytes, out + (fr.token - first) * width, width, n);
	w->ns_transform += rfi_now_ns() - t1;
	return 0;
}

/* Raw mode, a decompressed member: copied into the batch after the samples
 * already there, as a read straight into it would have been. */
static int land_raw(rf_loader *l, rf_slot *s, rf_request *q)
{
	size_t off;
	if (rfi_slot_reserve(s, q->place.index, q->len, l->raw_align, &off)) {
		rfi_slot_no_room(l, s, q->len, q->reason, sizeof(q->reason));
		return -ENOSPC;
	}
	memcpy(s->batch.data + off, q->data, q->len);
	s->batch.offsets[q->place.index] = off;
	s->batch.sizes[q->place.index] = q->len;
	return 0;
}

/* The caller's own step on the sample just stored at dst (cfg.sample_fn),
 * its time counted as the transform's. */
static int user_step(rf_loader *l, worker *w, rf_request *q, uint8_t *dst)
{
	if (!l->cfg.sample_fn)
		return 0;
	uint64_t t0 = rfi_now_ns();
	int err = rfi_sample_hook_run(l, q, dst);
	w->ns_transform += rfi_now_ns() - t0;
	return err;
}

/* Turns request q's bytes into its place in slot s, as its stage says.
 * @return : 0, or a negative code with q->reason set. */
static int run_stage(rf_loader *l, worker *w, rf_request *q, rf_slot *s, rf_stage stage)
{
	uint8_t *dst = s->host + (size_t)q->place.index * l->plan.sample_bytes;
	int err;
	switch (stage) {
	case RF_STAGE_FETCH:
		return 0; /* storage alone: the read is all there is */
	case RF_STAGE_ZSTD_TOKENS:
		return token_window(l, w, q, dst);
	case RF_STAGE_ZSTD_RAW:
		err = unzstd(l, w, q);
		return err ? err : land_raw(l, s, q);
	case RF_STAGE_ZSTD_IMAGE:
		err = unzstd(l, w, q);
		err = err ? err : process(l, w, q, q->len, dst);
		return err ? err : user_step(l, w, q, dst);
	case RF_STAGE_IMAGE:
		err = process(l, w, q, q->len, dst);
		return err ? err : user_step(l, w, q, dst);
	case RF_STAGE_KIND_RAW:
		err = kind_extract(l, w, q);
		return err ? err : land_raw(l, s, q);
	case RF_STAGE_KIND_IMAGE:
		err = kind_extract(l, w, q);
		err = err ? err : process(l, w, q, q->len, dst);
		return err ? err : user_step(l, w, q, dst);
	case RF_STAGE_RAW:
	case RF_STAGE_TOKENS:
		break; /* the ring thread's: never dispatched */
	}
	assert(!"a ring thread stage reached the compute pool");
	rfi_fmt(q->reason, sizeof(q->reason), "internal error: stage %d in the compute pool", (int)stage);
	return -EINVAL;
}

static void flush_counters(rf_loader *l, worker *w)
{
	atomic_fetch_add_explicit(&l->st.ns_decode, w->ns_decode, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->st.ns_transform, w->ns_transform, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->st.scaled_decodes, w->scaled, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->st.decoded_pixels, w->decoded_px, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->st.source_pixels, w->source_px, memory_order_relaxed);
	w->ns_decode = w->ns_transform = w->scaled = w->decoded_px = w->source_px = 0;
}

void *rfi_compute_main(void *arg)
{
	rf_loader *l = arg;
	worker w = { 0 };
	int ok = rfi_decoder_create(&w.dec) == 0;
	ok = rfi_resampler_init(&w.rs, l->cfg.crop) == 0 && ok;
	ok = (!l->src.any_zstd || rfi_unzstd_init(&w.unzstd, l->zstd_dict) == 0) && ok;

	for (;;) {
		uint32_t id;
		uint64_t idle;
		if (rfi_idq_pop_wait(&l->work, &id, &idle) < 0)
			break;
		rf_request *q = &l->req[id];
		rf_slot *s = rfi_slot_of(l, &q->place);
		rf_place place = q->place;
		uint64_t sample = q->sample;
		uint64_t prep0 = w.ns_decode + w.ns_transform;
		rf_stage stage = (rf_stage)q->stage;
		int err = ok ? run_stage(l, &w, q, s, stage) : -ENOMEM;
		if (!ok)
			rfi_fmt(q->reason, sizeof(q->reason), "out of memory for decoder scratch");
		atomic_fetch_add_explicit(&s->prep_ns, w.ns_decode + w.ns_transform - prep0,
					  memory_order_relaxed);
		uint64_t t0 = rfi_now_ns();
		if (!err && s->on_host) /* GPU decode: this one is copied to the device */
			s->on_host[place.index] = 1;
		if (!err && (stage == RF_STAGE_IMAGE || stage == RF_STAGE_ZSTD_IMAGE ||
			     stage == RF_STAGE_KIND_IMAGE))
			atomic_fetch_add_explicit(&l->st.cpu_decodes, 1, memory_order_relaxed);
		if (!err)
			rfi_loader_store_fields(l, q); /* before q goes back: its bytes */
		q->err = err;
		rfi_split_done(&l->split.cpu_out, 1);
		/* Hand the request back first, so its buffer is reused sooner; from
		 * here on q belongs to the ring thread. */
		if (rfi_idq_push(&l->done, id))
			rfi_loader_wake_ring(l);
		if (!err)
			rfi_loader_land(l, &place, sample);
		atomic_fetch_add_explicit(&l->st.ns_collate, rfi_now_ns() - t0, memory_order_relaxed);
		atomic_fetch_add_explicit(&l->st.ns_read_wait, idle, memory_order_relaxed);
		flush_counters(l, &w);
	}
	rfi_resampler_destroy(&w.rs);
	rfi_decoder_destroy(w.dec);
	rfi_unzstd_destroy(&w.unzstd);
	if (w.kind_scratch)
		l->src.ops->scratch_free(w.kind_scratch);
	return NULL;
}
