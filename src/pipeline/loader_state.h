/* loader_state.h - the loader's state, shared by the ring thread (feeder.c),
 * the compute pool (compute.c), the GPU decode threads (gpu_decode.c) and
 * the consumer (consumer.c); set up and torn down by loader.c, the places'
 * bookkeeping in places.c. Private.
 *
 * Threads and who owns what:
 * - the consumer (caller's thread) owns next_batch, delivered_end and err_detail;
 * - the ring thread owns `feeder` (the read engine, the read pool, the
 *   requests while their reads are in flight, the retry list, the issue
 *   cursor);
 * - a compute thread owns a request between taking it from `work` and handing
 *   it back through `done`, and its own scratch; the GPU decode thread
 *   (cfg.decode) likewise between `gpu_work` and `done` (or `work`, when it
 *   passes an image the engines refuse to the compute pool), and the
 *   engines (gpu_jpeg);
 * - slot state and slot errors are guarded by `mu`; samples count down on
 *   `remaining` (atomic); counters in `st` are relaxed atomics.
 * Lock order: a thread holds at most one of mu, work.mu, done.mu, report_mu
 * at a time. */
#ifndef RF_LOADER_STATE_H
#define RF_LOADER_STATE_H

#include <assert.h>
#include <pthread.h>
#include <sys/types.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ringfeed.h"
#include "sample/order.h"
#include "pipeline/fields.h"
#include "pipeline/plan.h"
#include "sample/sampler.h"
#include "source/source.h"
#include "transform/resample.h"
#include "transform/window.h"
#include "util/idq.h"

#define RF_MAX_ATTEMPTS 64 /* replacements tried for one place before RF_ETOOMANYBAD */
#define RF_MAX_TRANSIENT 3 /* re-reads of one file after a short read or EAGAIN */
#define RF_REASON_LEN RF_SOURCE_REASON_LEN /* 192: a reason, as the source kinds write them */

/* A place in the output: the index-th sample of global batch `batch`,
 * filled by the attempt-th candidate (0 = the sample the order puts there). */
typedef struct rf_place {
	uint64_t batch;
	uint32_t slot;      /* the batch slot that batch fills (any slot that was free
	                     * when its first place was issued, see feeder.c next_place) */
	uint32_t index;
	uint32_t attempt;
	uint32_t transient; /* reads of this candidate retried after a short read or EAGAIN */
} rf_place;

/* One sample on its way: a read in the engine, then bytes waiting for or
 * under decode. At most io_depth exist; the id is its index in l->req (and
 * the tag of its read). */
typedef struct rf_request {
	rf_place place;
	uint64_t sample;     /* sample id in the index */
	uint64_t epoch, pos; /* global position in that epoch's order (over all ranks) */
	uint8_t *buf;        /* read buffer: in the pool, or the batch slot (raw) */
	uint32_t ticket;     /* its pool allocation */
	uint32_t chunk;      /* sequential shard access: the chunk its bytes are in
	                      * (ring thread's, feeder_state.h), or UINT32_MAX */
	uint32_t next;       /* the next request waiting for that chunk's read */
	uint32_t expect;     /* bytes its read must give (rf_source_read.expect) */
	uint64_t read_offset; /* where its read starts in its file (rf_source_read.offset) */
	uint8_t stage;       /* rf_stage: what turns its bytes into the sample; decided
	                      * once, when it is issued (rfi_loader_stage) */
	/* fields (cfg.fields), set when it is issued: the sample's own bytes lie
	 * main_at bytes into its read (widened over its fields' members), and
	 * each field where field[] says; parts_left counts its reads in flight
	 * (1 + its fields in files of their own), err and reason the first
	 * failure among them */
	uint8_t parts_left;
	uint32_t main_at, main_len;
	rf_req_field field[RF_MAX_FIELDS];
	/* set when the read landed (the feeder), read by the decoder: */
	const uint8_t *data; /* the sample's bytes (inside buf, past any over-read) */
	uint32_t len;
	/* set by the compute thread when it hands the request back: */
	int err;             /* 0 = landed in its slot, else why not */
	char reason[RF_REASON_LEN];
} rf_request;

enum rf_slot_state { SLOT_FREE = 0, SLOT_FILLING, SLOT_READY, SLOT_LENT };

/* Raw mode: the room of a slot's data a place was last given. A read that
 * failed leaves it unused, and the room cannot be given back (the slot's
 * data is taken in order, rfi_slot_reserve): the place's next attempt takes
 * it again where it fits, so replacements do not use up the batch. Touched
 * only by the thread that has the place's one attempt in hand (the ring
 * thread, or the compute thread its request went to). */
typedef struct rf_raw_room {
	size_t at, len; /* len 0: none yet */
} rf_raw_room;

typedef struct rf_slot {
	rf_batch batch;        /* consumer's view; header set when filling starts */
	int state;             /* enum rf_slot_state; guarded by mu; set by rfi_slot_set_state */
	int err;               /* first error of this batch (fail mode); guarded by mu */
	char errmsg[512];      /* guarded by mu */
	atomic_uint remaining; /* places not landed yet; the thread that takes it to 0 publishes */
	atomic_uint replaced;
	atomic_size_t raw_used; /* raw mode: bytes of data handed out (rfi_slot_reserve) */
	uint64_t t_start;      /* when its first read was submitted; ring thread, set before any lands */
	atomic_uint_fast64_t t_last_read; /* the latest landing of one of its reads */
	atomic_uint_fast64_t prep_ns, read_bytes; /* summed over its samples */
	size_t raw_cap;        /* raw mode: bytes of data the slot holds */
	rf_raw_room *room;     /* raw mode: per place (batch_size), reset with the slot */
	char failed[256];      /* raw mode: the batch's first failed read, "PATH: REASON"
	                        * (for a replacement that finds no room); guarded by mu */
	uint8_t *host;         /* the slot's sample memory on the host (batch.data is
	                        * NULL when the samples are decoded on the GPU) */
	uint8_t *on_host;      /* GPU decode: per place, 1 = decoded on the host (to be
	                        * copied). Set by the thread that lands the place, read
	                        * and cleared by the one that lands the last */
	rf_slot_fields fields; /* cfg.fields: its samples' values (fields.h) */
} rf_slot;

/* Moves slot s from `from` to `to`, with mu held. The only moves:
 * FREE -> FILLING (the ring takes the slot for a batch), FILLING -> READY
 * (its last place landed), READY -> LENT (next() hands it out), READY ->
 * FREE (next() fails with the batch's error), LENT -> FREE (released). */
static inline void rfi_slot_set_state(rf_slot *s, enum rf_slot_state from, enum rf_slot_state to)
{
	assert(s->state == (int)from);
	assert((from == SLOT_FREE && to == SLOT_FILLING) ||
	       (from == SLOT_FILLING && to == SLOT_READY) ||
	       (from == SLOT_READY && (to == SLOT_LENT || to == SLOT_FREE)) ||
	       (from == SLOT_LENT && to == SLOT_FREE));
	(void)from;
	s->state = (int)to;
}

/* Counters; relaxed atomics, read by rf_loader_stats(). */
typedef struct rf_counters {
	atomic_uint_fast64_t bytes_read, bad_samples, reads_submitted;
	atomic_uint_fast64_t ns_decode, ns_transform, ns_collate, ns_ring_cpu, ns_read_wait;
	atomic_uint_fast64_t scaled_decodes, decoded_pixels, source_pixels;
	atomic_uint direct_io, fixed_buffers, io_path, dio_align;
	atomic_uint reads_in_flight; /* the ring thread's count, published each pass */
	/* likewise: the engine's URL read counters (rf_io_http_counts) */
	atomic_uint_fast64_t http_requests, http_retries, http_errors, http_bytes;
	atomic_uint_fast64_t http_retry_throttled, http_retry_server, http_retry_connection,
		http_retry_stalled, http_connections;
	atomic_uint_fast64_t cache_hits, cache_hit_bytes, cache_misses, cache_written_bytes,
		cache_waits, cache_evictions, /* the ring thread's cache (feeder.c) */
		cache_fill_waits, cache_fill_drops;
	/* read amplification: the ring thread's reads (feeder.c judge), the
	 * samples' own bytes (landed, or a kind's extract on a compute thread),
	 * samples served by another's read (chunks.c, page_share.c) */
	atomic_uint_fast64_t bytes_fetched, bytes_used, reads_shared;
	atomic_uint_fast64_t cpu_decodes, gpu_decodes, ns_gpu_decode, ns_gpu_host;
} rf_counters;

struct rf_feeder; /* src/pipeline/feeder.c: the ring thread's own state */
struct ZSTD_DDict_s;
struct rf_gpu_jpeg; /* src/gpu/jpeg_gpu.h: the GPU's JPEG engines */

/* GPU decode threads: several, so that some prepare groups (headers, taps)
 * while another's submit blocks until the engines took its group (the
 * hardware backend's batched decode returns only then): on an H100 with
 * ~60 KB JPEGs, 1, 2, 3 and 4 threads gave 12.2, 15.6, 17.2 and 15.3
 * thousand images/s. Each owns its engine handle. */
#define RF_GPU_DECODERS 3
/* AUTO's split between the engines and the pool. The outstanding counts go
 * up when the ring dispatches a read to a side and down when that side is
 * done with it (a decoder that passes a refused image on moves it from
 * gpu_out to cpu_out); the rest is the ring thread's. */
typedef struct rf_split {
	atomic_uint gpu_out, cpu_out;  /* dispatched and not done */
	double gpu_rate, cpu_rate;     /* samples/s, measured */
	uint64_t t_last, gpu_done, cpu_done;
	int gpu_busy, cpu_busy;        /* the side had work since the last measure */
} rf_split;

/* A side is done with n requests dispatched to it: its outstanding count
 * (gpu_out or cpu_out) goes down, never below 0 (each was counted up before
 * it was queued to that side). Any thread. */
static inline void rfi_split_done(atomic_uint *out, unsigned n)
{
	unsigned was = atomic_fetch_sub_explicit(out, n, memory_order_relaxed);
	assert(was >= n);
	(void)was;
}

typedef struct rf_gpu_decoder {
	struct rf_loader *l;
	struct rf_gpu_jpeg *jpeg;
	pthread_t thread;
	int started;
} rf_gpu_decoder;

struct rf_loader {
	rf_config cfg;         /* copy, validated, defaults resolved; read-only after create */
	char *source;          /* owned copy of cfg.source */
	char *cache_path;      /* owned copy of cfg.index_cache, or NULL */
	char *cache_dir;       /* owned copy of cfg.cache_dir, or NULL */
	char *cache_group;     /* owned copy of cfg.cache_group, or NULL */
	char *columns;         /* owned copy of cfg.columns, or NULL */
	uint64_t lost_spans, lost_bytes; /* damaged spans in the index (rf_stats); read-only
	                                  * after create */
	rf_source src;         /* the samples: their kind, records, reads, stages;
	                        * read-only after create */
	rf_plan plan;          /* sizes, counts, output format (pipeline/plan.h);
	                        * read-only after create */
	rf_fields fields;      /* cfg.fields parsed and resolved; read-only after create */
	struct rf_gpu *gpu;       /* with cfg.device: the transfer path (src/gpu/); else NULL */
	struct ZSTD_DDict_s *zstd_dict; /* its dictionary, or NULL; read-only, shared */
	char *zstd_dict_path;     /* owned copy of cfg.zstd_dict */
	uint32_t raw_align;       /* raw mode: where samples start in a slot (the O_DIRECT
	                           * alignment); set by the ring thread at set-up */

	/* Order, ranks and resume: read-only after create. */
	rf_order order;          /* which sample fills each place; the rank split */
	struct rf_shard_order *shard_order; /* sequential shard access: the order
	                          * instead of order's permutation (attempt 0), or
	                          * NULL; its cache is the ring thread's */
	const char *rank_source; /* static: where rank and world size came from */
	uint64_t start_batch;    /* first batch to deliver: 0, or the resumed position */
	struct rf_rest *rest;    /* resumed on another world size or batch size inside an
	                          * epoch: what is left of it (sample/rest.h), which
	                          * fills that epoch's last rest->batches batches; else
	                          * NULL (owned) */
	uint64_t dataset_fp;     /* fingerprints written into saved states */
	uint64_t output_fp;

	/* batch slots: prefetch of them. A batch takes whichever slot is free
	 * when its first place is issued (not b % prefetch): a caller who keeps
	 * some batches and releases others never stalls the loader while one
	 * slot is free. */
	rf_slot *slots;
	uint8_t *slot_mem;
	size_t slot_mem_len;
	pthread_mutex_t mu;
	pthread_cond_t ready;   /* a slot became READY, ring_err or interrupted was set
	                         * (CLOCK_MONOTONIC, for rf_loader_next_timeout) */
	int ring_err;           /* guarded by mu: the ring thread stopped on this error */
	int interrupted;        /* guarded by mu: rf_loader_interrupt() was called and no
	                         * next() has returned -EINTR for it yet */
	char ring_errmsg[256];  /* guarded by mu */

	rf_request *req;       /* io_depth of them */
	rf_idq work;           /* ring -> compute: requests whose read landed */
	rf_idq done;           /* compute -> ring: requests handed back */
	/* GPU decode (cfg.decode): read-only after create but for the queue */
	rf_decode decode;      /* in use: RF_DECODE_CPU, or GPU / AUTO with the engines open */
	rf_gpu_decoder gpu_dec[RF_GPU_DECODERS];
	int ngpu_dec;          /* decoders opened */
	rf_idq gpu_work;       /* ring -> GPU decode threads: requests whose read landed */
	uint32_t gpu_group;    /* images per engine call at most */
	rf_split split;        /* AUTO: how landed reads are split (dispatch.c) */
	int wake_fd;           /* eventfd: anyone -> ring thread (it reads it through the ring) */
	atomic_bool stop;      /* destroy asks every thread to leave */

	pthread_t ring_thread;
	int ring_started;
	struct rf_feeder *feeder;
	pthread_mutex_t init_mu; /* ring thread reports its set-up result */
	pthread_cond_t init_cv;
	int init_done, init_ret;
	char init_err[256];

	pthread_t *compute;
	int ncompute;

	pthread_mutex_t report_mu; /* serializes on_sample_error and log lines */
	/* (epoch, sample) pairs reported bad, so that a bad file drawn again as
	 * another place's replacement in the same epoch is reported and counted
	 * once: an open-addressing set of keys epoch << 40 | sample (+1, so that
	 * 0 is free), grown at half full; guarded by report_mu */
	uint64_t *bad_seen;
	size_t bad_cap, bad_n;
	rf_counters st;

	/* consumer only */
	uint64_t next_batch;   /* in order: the batch to deliver next; else: batches delivered;
	                        * starts at start_batch */
	uint64_t delivered_end; /* 1 + the highest batch index delivered (start_batch at first):
	                         * equal to next_batch while the delivered batches are a prefix */
	uint64_t delivered_batches, delivered_samples, delivered_replaced, ns_wait;
	int failed;            /* sticky error returned by every later next() */
	pid_t pid;             /* the process that created it: in a fork()ed child every
	                        * call returns RF_EFORKED (read-only after create) */
	char err_detail[768];
};

/* Hands a landed read to its decoder: the GPU decode threads or the compute
 * pool (src/pipeline/dispatch.c). Ring thread. */
void rfi_loader_dispatch(rf_loader *l, uint32_t id);
void rfi_split_init(rf_split *sp, int threads, int decoders);

/* 1 when l was created by another process (the caller is a fork()ed child). */
int rfi_loader_forked(const rf_loader *l);

/* Wakes the ring thread (from any thread). */
void rfi_loader_wake_ring(rf_loader *l);

/* Ends a place that will not be filled: counts, reports, then either queues
 * its replacement (returns 1, *retry set) or, in fail mode or when
 * replacements ran out, records the error on the slot and counts the place
 * down (returns 0). Called by the ring thread. */
int rfi_loader_place_failed(rf_loader *l, const rf_place *p, uint64_t sample, int err,
			   const char *reason, rf_place *retry);

/* Raw mode: room for len bytes of place `index` in slot s's data, at a
 * multiple of align: the room an earlier attempt of the place was given
 * where it fits, else the next len bytes of the slot's. Any thread, the
 * one with the place's attempt in hand.
 * @return : 0 with *off set, or -ENOSPC when the batch has no room left
 * (only replacements can use it up: see rfi_slot_no_room). */
int rfi_slot_reserve(rf_slot *s, uint32_t index, size_t len, size_t align, size_t *off);

/* Raw mode: the reason a replacement of len bytes found no room in slot s,
 * into reason: it names the batch's first failed read (what used the room
 * up: the server's or the file's answer). Any thread. */
void rfi_slot_no_room(rf_loader *l, rf_slot *s, size_t len, char *reason, size_t reason_len);

/* The stage that turns sample's bytes into its place in the batch: the
 * source's, except that with fetch_only the decoders do nothing (the read
 * is all there is; what the ring thread does itself stays). */
static inline rf_stage rfi_loader_stage(const rf_loader *l, uint64_t sample)
{
	rf_stage st = rfi_source_stage(&l->src, sample);
	return l->cfg.fetch_only && st != RF_STAGE_RAW && st != RF_STAGE_TOKENS ? RF_STAGE_FETCH : st;
}

/* Stores the fields of request q's sample (landed, its bytes still in
 * its buffer) into its slot, when the loader delivers fields. Called just
 * before the place lands, by the thread that lands it. */
static inline void rfi_loader_store_fields(rf_loader *l, const rf_request *q)
{
	if (l->fields.n)
		rfi_slot_fields_store(&l->slots[q->place.slot].fields, &l->fields,
				     (uint32_t)l->cfg.batch_size, q->place.index, q->field);
}

/* Lands the sample of place p: its label and id into the batch, a
 * replacement counted, the place counted down (the thread that counts the
 * last publishes the batch). Called once per landed place, by whichever
 * thread finished it: the ring thread (RAW, TOKENS), a compute thread or a
 * GPU decode thread; the sample's bytes are in the slot by then. */
void rfi_loader_land(rf_loader *l, const rf_place *p, uint64_t sample);

/* Counts one place of slot s down; publishes the batch when it was the last. */
void rfi_loader_place_landed(rf_loader *l, rf_slot *s);

static inline rf_slot *rfi_slot_of(rf_loader *l, const rf_place *p)
{
	assert(p->slot < (uint32_t)l->cfg.prefetch);
	return &l->slots[p->slot];
}

/* The sample behind a place, its epoch and its global position in the
 * epoch (the same place gives the same sample on every run and resume). */
void rfi_loader_place_sample(const rf_loader *l, const rf_place *p, uint64_t *sample,
			    uint64_t *epoch, uint64_t *pos);

/* The rest (sample/rest.h) that fills epoch, or NULL when it is whole. */
const struct rf_rest *rfi_loader_rest_of(const rf_loader *l, uint64_t epoch);

/* The first batch of batch b's epoch: its start, or where its rest's
 * batches start. */
uint64_t rfi_loader_epoch_first_batch(const rf_loader *l, uint64_t b);

/* Places in global batch b (batch_size, or fewer for a last partial batch). */
uint32_t rfi_loader_batch_count(const rf_loader *l, uint64_t b);

/* The threads' entry points. */
void *rfi_compute_main(void *loader); /* src/pipeline/compute.c */
void *rfi_gpu_decode_main(void *decoder); /* src/pipeline/gpu_decode.c: an rf_gpu_decoder */

/* ---- behind the public face (src/lib.c) ----------------------------------
 * What rf_loader_create() ... rf_loader_destroy() do once src/lib.c has
 * checked their arguments (NULL pointers, a fork()ed child: see there), so
 * each takes them as valid. Documented in ringfeed.h under the public name. */
int rfi_loader_create(rf_loader **out, const rf_config *cfg, char *err, size_t errlen); /* loader.c */
int rfi_loader_create_cancel(rf_loader **out, const rf_config *cfg, const volatile int *cancel,
			     char *err, size_t errlen);
void rfi_loader_destroy(rf_loader *l);
int rfi_loader_next(rf_loader *l, rf_batch **out); /* consumer.c */
int rfi_loader_next_timeout(rf_loader *l, rf_batch **out, uint64_t timeout_ns);
void rfi_loader_interrupt(rf_loader *l);
int rfi_batch_wait(const rf_batch *b, void *stream);
int rfi_batch_sync(const rf_batch *b);
void rfi_batch_release_on(rf_loader *l, rf_batch *b, void *stream);
void rfi_batch_release(rf_loader *l, rf_batch *b);
int rfi_batch_field(const rf_batch *b, const char *name, rf_field *out);
int rfi_loader_stats(const rf_loader *l, rf_stats *out);
int rfi_loader_order(const rf_loader *l, rf_order_info *out);
const char *rfi_loader_error(const rf_loader *l);
int rfi_loader_class_count(const rf_loader *l); /* sample_names.c */
const char *rfi_loader_class_name(const rf_loader *l, int label);
int rfi_loader_sample_name(const rf_loader *l, uint64_t id, char *buf, size_t len);

#endif
