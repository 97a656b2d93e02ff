/* gpu_decode.c - a GPU decode thread (cfg.decode = GPU or AUTO): gathers
 * landed reads into groups, reads their headers, passes what the engines
 * refuse to the compute pool, chooses each sample's window and taps as a
 * compute thread does (at full scale: the engines decode the window's
 * region; the pool then decodes at full scale too), has the engines decode the group and the
 * resample kernel write its samples into the device batch slots (both on the
 * transfer stream, so a batch's ready event follows them), lands the places,
 * and hands the read buffers back to the ring once the engines have read
 * them. The host waits for a group only after enqueuing the next one, so
 * the engines always have work while the host prepares more. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/jpeg_gpu.h"
#include "pipeline/loader_state.h"
#include "util/util.h"

/* Center crops without flips: the taps depend on the image's size alone, and
 * collections repeat a few sizes, so they are kept by size. An entry used by
 * the group being prepared is not replaced before that group is submitted. */
#define TAPS_CACHE 64
typedef struct taps_entry {
	int w, h, used;
	uint64_t group;      /* the last group that used it */
	rf_taps tx, ty;
} taps_entry;

/* The thread's own scratch: per image of a group, its taps and item. */
typedef struct gpu_worker {
	uint32_t max;
	uint64_t group;       /* groups prepared so far */
	taps_entry cache[TAPS_CACHE];
	rf_taps *tx, *ty;
	rf_gpu_jpeg_item *items;
	uint32_t *ids;        /* the group's requests, in items' order */
	uint32_t *held;       /* the previous group's, until the engines read them */
	uint32_t nheld;
	int held_ticket;
	int warned;           /* an engine failure was logged */
} gpu_worker;

static int worker_init(gpu_worker *w, uint32_t max)
{
	memset(w, 0, sizeof(*w));
	w->max = max;
	w->tx = calloc(max, sizeof(*w->tx));
	w->ty = calloc(max, sizeof(*w->ty));
	w->items = calloc(max, sizeof(*w->items));
	w->ids = calloc(max, sizeof(*w->ids));
	w->held = calloc(max, sizeof(*w->held));
	return w->tx && w->ty && w->items && w->ids && w->held ? 0 : -1;
}

static void worker_free(gpu_worker *w)
{
	for (int i = 0; i < TAPS_CACHE; i++) {
		free(w->cache[i].tx.start);
		free(w->cache[i].tx.weight);
		free(w->cache[i].ty.start);
		free(w->cache[i].ty.weight);
	}
	for (uint32_t i = 0; w->tx && i < w->max; i++) {
		free(w->tx[i].start);
		free(w->tx[i].weight);
		free(w->ty[i].start);
		free(w->ty[i].weight);
	}
	free(w->tx);
	free(w->ty);
	free(w->items);
	free(w->ids);
	free(w->held);
}

/* Passes a request the engines will not decode to the compute pool. */
static void to_pool(rf_loader *l, uint32_t id)
{
	rfi_split_done(&l->split.gpu_out, 1);
	atomic_fetch_add_explicit(&l->split.cpu_out, 1, memory_order_relaxed);
	rfi_idq_push(&l->work, id); /* the compute pool's now */
}

/* Gives the previous group's requests back to the ring, once the engines
 * have read their bytes. */
static void hand_back_held(rf_loader *l, struct rf_gpu_jpeg *jpeg, gpu_worker *w)
{
	if (!w->nheld)
		return;
	rfi_gpu_jpeg_wait(jpeg, w->held_ticket);
	int wake = 0;
	for (uint32_t i = 0; i < w->nheld; i++) {
		l->req[w->held[i]].err = 0;
		wake |= rfi_idq_push(&l->done, w->held[i]);
	}
	w->nheld = 0;
	if (wake)
		rfi_loader_wake_ring(l);
}

/* Prepares request id as item k of the group. @return : 0, or 1 when the
 * compute pool must take it (the engines refuse it, or it is too large). */
static int prepare(rf_loader *l, struct rf_gpu_jpeg *jpeg, gpu_worker *w, uint32_t k, uint32_t id)
{
	rf_request *q = &l->req[id];
	int W, H;
	if (rfi_gpu_jpeg_probe(jpeg, q->data, q->len, &W, &H) ||
	    (uint64_t)W * (uint64_t)H > l->cfg.max_pixels)
		return 1; /* the CPU decoder reports what is wrong with it, if anything */
	rf_window win;
	rfi_window_for(&l->plan.window, q->epoch, q->sample, W, H, &win);
	rf_taps *tx = &w->tx[k], *ty = &w->ty[k];
	taps_entry *c = NULL;
	if (!l->cfg.random_resized_crop && l->cfg.flip_p == 0) {
		c = &w->cache[((unsigned)W * 31u + (unsigned)H) % TAPS_CACHE];
		if (c->used && c->w == W && c->h == H) {
			tx = &c->tx, ty = &c->ty;
		} else if (!c->used || c->group != w->group) {
			c->used = 0;
			if (rfi_taps_for_window(&c->tx, &c->ty, &win, W, H, 1, l->cfg.crop))
				return 1;
			*c = (taps_entry){ .w = W, .h = H, .used = 1, .tx = c->tx, .ty = c->ty };
			tx = &c->tx, ty = &c->ty;
		} else {
			c = NULL; /* taken by another size in this group */
		}
		if (c)
			c->group = w->group;
	}
	if (!c && rfi_taps_for_window(tx, ty, &win, W, H, 1, l->cfg.crop))
		return 1;
	int slot = (int)(rfi_slot_of(l, &q->place) - l->slots);
	w->items[k] = (rf_gpu_jpeg_item){
		.data = q->data, .len = q->len, .width = W, .height = H,
		.roi_x = tx->lo, .roi_y = ty->lo, .roi_w = tx->hi - tx->lo, .roi_h = ty->hi - ty->lo,
		.xstart = tx->start, .ystart = ty->start, .xweight = tx->weight, .yweight = ty->weight,
		.kx = tx->taps, .ky = ty->taps,
		.dst = rfi_gpu_slot_device(l->gpu, slot) + (size_t)q->place.index * l->plan.sample_bytes,
	};
	/* the slot's device memory may still be read by the consumer's last
	 * step on its previous batch */
	return rfi_gpu_slot_begin(l->gpu, slot) ? 1 : 0;
}

/* Lands the group's places: labels and ids on the host, the pixels on the
 * device in stream order (before any ready event recorded after this). */
static void land_group(rf_loader *l, gpu_worker *w, uint32_t n, uint64_t host_ns)
{
	for (uint32_t k = 0; k < n; k++) {
		rf_request *q = &l->req[w->ids[k]];
		atomic_fetch_add_explicit(&rfi_slot_of(l, &q->place)->prep_ns, host_ns / n,
					  memory_order_relaxed);
		rfi_loader_store_fields(l, q);
		rfi_loader_land(l, &q->place, q->sample);
	}
	atomic_fetch_add_explicit(&l->st.gpu_decodes, n, memory_order_relaxed);
	rfi_split_done(&l->split.gpu_out, n);
}

/* Takes the next group's requests: at least one (blocking), at most
 * w->max. While nothing is waiting, the previous group's buffers go back
 * first, so that the ring never waits on a group the engines finished.
 * @return : how many, or 0 on shutdown. */
static uint32_t gather(rf_loader *l, struct rf_gpu_jpeg *jpeg, gpu_worker *w, uint32_t *ids)
{
	uint32_t n = rfi_idq_drain(&l->gpu_work, ids, w->max);
	if (n)
		return n;
	hand_back_held(l, jpeg, w);
	uint64_t idle;
	if (rfi_idq_pop_wait(&l->gpu_work, &ids[0], &idle) < 0)
		return 0;
	return 1 + rfi_idq_drain(&l->gpu_work, ids + 1, w->max - 1);
}

void *rfi_gpu_decode_main(void *arg)
{
	rf_gpu_decoder *d = arg;
	rf_loader *l = d->l;
	struct rf_gpu_jpeg *jpeg = d->jpeg;
	uint64_t last_ns = 0;
	gpu_worker w;
	uint32_t *landed = calloc(l->gpu_group, sizeof(*landed));
	int ok = worker_init(&w, l->gpu_group) == 0 && landed;
	for (;;) {
		uint32_t n = gather(l, jpeg, &w, landed);
		if (!n)
			break;
		w.group++;
		uint64_t t0 = rfi_now_ns();
		uint32_t k = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (!ok || prepare(l, jpeg, &w, k, landed[i]))
				to_pool(l, landed[i]);
			else
				w.ids[k++] = landed[i];
		}
		if (!k)
			continue;
		char why[256];
		int ticket;
		if (rfi_gpu_jpeg_decode(jpeg, w.items, (int)k, &ticket, why, sizeof(why))) {
			if (!w.warned++)
				rfi_log(l->cfg.log_level, RF_LOG_WARN, "GPU decode of %u images failed (%s); "
				       "the compute pool decodes such groups", k, why);
			for (uint32_t i = 0; i < k; i++)
				to_pool(l, w.ids[i]);
			continue;
		}
		uint64_t host = rfi_now_ns() - t0;
		atomic_fetch_add_explicit(&l->st.ns_gpu_host, host, memory_order_relaxed);
		land_group(l, &w, k, host);
		hand_back_held(l, jpeg, &w); /* the group before: its bytes are read by now */
		memcpy(w.held, w.ids, k * sizeof(*w.ids));
		w.nheld = k;
		w.held_ticket = ticket;
		uint64_t images, ns;
		rfi_gpu_jpeg_stats(jpeg, &images, &ns);
		atomic_fetch_add_explicit(&l->st.ns_gpu_decode, ns - last_ns, memory_order_relaxed);
		last_ns = ns;
	}
	if (w.nheld) /* shutting down: the ring takes nothing back; just let the engines finish */
		rfi_gpu_jpeg_wait(jpeg, w.held_ticket);
	worker_free(&w);
	free(landed);
	return NULL;
}
