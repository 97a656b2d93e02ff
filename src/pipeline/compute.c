/* compute.c - a compute thread: take a landed read, decode it, resize and
 * crop it straight into its place in the batch slot, hand the read buffer
 * back to the ring thread, count the batch down (the thread that lands the
 * last sample publishes the batch). */
#include <errno.h>
#include <string.h>

#include "decode/jpeg.h"
#include "pipeline/loader_impl.h"
#include "transform/resize_crop.h"
#include "util/util.h"

void *rf_compute_main(void *arg)
{
	rf_loader *l = arg;
	rf_jpeg_decoder dec;
	rf_resize_scratch rs;
	int ok_dec = rf_jpeg_decoder_init(&dec) == 0;
	int ok_rs = rf_resize_scratch_init(&rs, l->cfg.crop) == 0;

	for (;;) {
		uint32_t id;
		uint64_t idle;
		if (rf_idq_pop_wait(&l->work, &id, &idle) < 0)
			break;
		rf_request *q = &l->req[id];
		rf_slot *s = rf_slot_of(l, q->place.batch);
		const rf_index_entry *e = &l->index.entries[q->sample];
		uint64_t t0 = rf_now_ns();
		const uint8_t *rgb = NULL;
		int w = 0, h = 0;
		int err;
		if (!ok_dec || !ok_rs) {
			err = -ENOMEM;
			rf_fmt(q->reason, sizeof(q->reason), "out of memory for decoder scratch");
		} else {
			err = rf_jpeg_decode(&dec, q->buf, (size_t)e->size, &rgb, &w, &h,
					     q->reason, sizeof(q->reason));
		}
		uint64_t t1 = rf_now_ns();
		uint32_t place = q->place.index, attempt = q->place.attempt;
		if (!err) {
			rf_resize_crop_u8(rgb, w, h, l->cfg.resize, l->cfg.crop,
					  s->batch.data + (size_t)place * l->sample_bytes, &rs);
			s->batch.labels[place] = e->label;
			s->batch.ids[place] = q->sample;
		}
		uint64_t t2 = rf_now_ns();
		q->err = err;
		/* Hand the request back first, so its buffer is reused sooner; from
		 * here on q belongs to the ring thread. */
		if (rf_idq_push(&l->done, id))
			rf_loader_wake_ring(l);
		if (!err) {
			if (attempt)
				atomic_fetch_add_explicit(&s->replaced, 1, memory_order_relaxed);
			rf_loader_place_landed(l, s);
		}
		atomic_fetch_add_explicit(&l->st.ns_decode, t1 - t0, memory_order_relaxed);
		atomic_fetch_add_explicit(&l->st.ns_transform, t2 - t1, memory_order_relaxed);
		atomic_fetch_add_explicit(&l->st.ns_compute_idle, idle, memory_order_relaxed);
	}
	if (ok_rs)
		rf_resize_scratch_destroy(&rs);
	if (ok_dec)
		rf_jpeg_decoder_destroy(&dec);
	return NULL;
}
