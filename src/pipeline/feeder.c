/* feeder.c - the ring thread's loop: the pipeline's side of the read
 * engine (src/io/engine.h). It picks the next place of the next batch,
 * turns its sample into a read (a loose file: one whole-file read),
 * submits it (issue), judges each result (landed, short, bad, or the
 * system short of descriptors), and takes back what the decoders hand
 * back. It sleeps only in rfi_io_wait(); other threads wake it through
 * l->wake_fd. Its set-up and teardown are feeder_setup.c; what becomes of
 * a read that landed or a place that failed, feeder_land.c; reads through
 * chunks of a shard, chunks.c; through the node cache, node_cache_route.c. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "io/bufpool.h"
#include "io/engine.h"
#include "pipeline/feeder.h"
#include "pipeline/feeder_state.h"
#include "pipeline/loader_state.h"
#include "util/util.h"

#if RF_TEST_HOOKS
static rf_read_hook test_hook;
static void *test_hook_ctx;

void rfi_feeder_set_test_hook(rf_read_hook fn, void *ctx)
{
	test_hook = fn;
	test_hook_ctx = ctx;
}
#endif

static void feeder_failed(rf_loader *l, int err, const char *what)
{
	pthread_mutex_lock(&l->mu);
	if (!l->ring_err) {
		l->ring_err = err;
		rfi_fmt(l->ring_errmsg, sizeof(l->ring_errmsg), "%s: %s", what, strerror(-err));
	}
	pthread_cond_broadcast(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

/* Takes a free slot for batch b, resets it, and returns it; NULL when every
 * slot is in use. */
static rf_slot *take_slot(rf_loader *l, uint64_t b)
{
	rf_slot *s = NULL;
	pthread_mutex_lock(&l->mu);
	for (int i = 0; i < l->cfg.prefetch && !s; i++) /* any free slot (the lowest) */
		if (l->slots[i].state == SLOT_FREE)
			s = &l->slots[i];
	if (s) {
		/* a free slot has no place in flight: its batch, if any, was
		 * counted down to 0 before it was READY */
		assert(atomic_load(&s->remaining) == 0);
		rfi_slot_set_state(s, SLOT_FREE, SLOT_FILLING);
		s->err = 0;
		s->batch.index = b;
		s->batch.epoch = (uint32_t)(b / l->plan.batches_per_epoch);
		s->batch.count = rfi_loader_batch_count(l, b);
		atomic_store(&s->remaining, s->batch.count);
		atomic_store(&s->replaced, 0);
		atomic_store_explicit(&s->raw_used, 0, memory_order_relaxed);
		if (s->room) /* no place has room yet */
			memset(s->room, 0, (size_t)l->cfg.batch_size * sizeof(*s->room));
		s->failed[0] = '\0';
		s->batch.bytes = 0;
		atomic_store(&s->t_last_read, 0);
		atomic_store(&s->prep_ns, 0);
		atomic_store(&s->read_bytes, 0);
		rfi_slot_fields_reset(&s->fields, &l->fields, (uint32_t)l->cfg.batch_size,
				     s->batch.count);
	}
	pthread_mutex_unlock(&l->mu);
	return s;
}

/* The next place to fill: a queued replacement first, then the cursor.
 * Returns 0 when none can start now (no more places, or the next batch's
 * slot is still held). */
static int next_place(rf_loader *l, struct rf_feeder *f, rf_place *out)
{
	if (!f->cur_valid) {
		if (f->retry_q.count) {
			f->cur = f->retry[rfi_fifo_pop(&f->retry_q)];
		} else {
			if (f->next_batch >= l->plan.total_batches)
				return 0;
			if (f->next_index == 0) {
				rf_slot *s = take_slot(l, f->next_batch);
				if (!s)
					return 0;
				f->next_slot = (uint32_t)(s - l->slots);
				/* its last copy to the device must have read the host
				 * slot before the slot is filled again (outside the
				 * lock: this may block for the copy's remaining time) */
				if (l->gpu)
					rfi_gpu_host_wait(l->gpu, (int)f->next_slot);
				s->t_start = rfi_now_ns();
			}
			f->cur = (rf_place){ .batch = f->next_batch, .slot = f->next_slot,
					     .index = f->next_index };
			if (++f->next_index == rfi_loader_batch_count(l, f->next_batch)) {
				f->next_batch++;
				f->next_index = 0;
			}
		}
		f->cur_valid = 1;
	}
	*out = f->cur;
	return 1;
}

/* What is wrong with a sample before any read: what its record says (the
 * source's check), or a size the read pool (raw: the batch) cannot take.
 * 0 if nothing, with its read in *r; else the error with reason set. */
static int check_entry(rf_loader *l, struct rf_feeder *f, uint64_t sample, rf_source_read *r,
		       char *reason, size_t len)
{
	int err = l->src.ops->check(&l->src, sample, reason, len);
	if (err)
		return err;
	rfi_source_read_of(&l->src, sample, r);
	if (r->expect > f->max_file) {
		if (l->cfg.raw)
			rfi_fmt(reason, len, "%lld bytes is more than the largest sample raw mode "
			       "takes (raw_max_bytes, --raw-max: %zu bytes)", (long long)r->expect,
			       f->max_file);
		else
			rfi_fmt(reason, len, "%lld bytes is more than the largest file the read pool "
			       "takes (%zu bytes: read_pool_bytes / 4)", (long long)r->expect, f->max_file);
		return -EFBIG;
	}
	return 0;
}

/* The engine's read for a source read: through the shard kept open, or
 * else opened for this read. */
static void engine_read(const rf_loader *l, const struct rf_feeder *f, const rf_source_read *r,
			rf_io_read *rd)
{
	*rd = (rf_io_read){ .dirfd = l->src.index.root_fd, .file = -1, .offset = r->offset,
			    .len = r->len, .path = r->path };
	if (!r->path)
		rfi_feeder_shard_read(l, f, r->shard, rd);
}

/* A sample with fields (cfg.fields): its read r widened to one span of its
 * shard over the members its fields are (a sample's members lie together:
 * a few KiB more, no read more), where each field lies in that read, and
 * the fields that are files of their own numbered as parts, read beside
 * it. Fills t's field table. 0, or the error with reason set. */
static int plan_fields(rf_loader *l, const struct rf_feeder *f, rf_request *t, rf_source_read *r,
		       char *reason, size_t len)
{
	int err = rfi_fields_locate(&l->fields, &l->src, t->sample, r, t->field, reason, len);
	if (err)
		return err;
	uint64_t lo = r->offset, hi = r->offset + r->expect, own = 0;
	uint8_t parts = 1;
	for (uint32_t i = 0; i < l->fields.n; i++) {
		rf_req_field *d = &t->field[i];
		if (d->where == RF_FIELD_IN_READ) {
			lo = RF_MIN(lo, d->at);
			hi = RF_MAX(hi, d->at + d->len);
		} else if (d->where == RF_FIELD_OWN_FILE || d->where == RF_FIELD_KIND_PART) {
			if (t->stage == RF_STAGE_RAW) { /* the read lands in the batch: no room
							  * for parts */
				rfi_fmt(reason, len, "its '%s' field is a file of its own, which raw mode "
				       "does not read", l->fields.spec[i].name);
				return RF_EBADSAMPLE;
			}
			d->part = parts++;
			own += d->len + 8192; /* and its alignment, at most */
		}
	}
	if (hi - lo + own > f->max_file) {
		rfi_fmt(reason, len, "with its fields, its reads take %llu bytes, more than the "
		       "largest read the pool takes (%zu bytes)", (unsigned long long)(hi - lo + own),
		       f->max_file);
		return -EFBIG;
	}
	t->main_at = (uint32_t)(r->offset - lo);
	t->main_len = r->expect;
	for (uint32_t i = 0; i < l->fields.n; i++)
		if (t->field[i].where == RF_FIELD_IN_READ)
			t->field[i].at -= lo;
	if (lo != r->offset || hi != r->offset + r->expect) {
		/* widened: only a shard's members can be (a loose file's own
		 * read is the whole file) */
		r->offset = lo;
		r->len = r->expect = (uint32_t)(hi - lo);
	}
	t->parts_left = parts;
	return 0;
}

/* Submits the reads of request id's fields that are files of their own or
 * pages of its shard, each into its own piece of the request's buffer
 * (laid out by issue()). */
static void submit_parts(rf_loader *l, struct rf_feeder *f, uint32_t id, rf_request *q)
{
	for (uint32_t i = 0; i < l->fields.n; i++) {
		const rf_req_field *d = &q->field[i];
		if (d->where == RF_FIELD_KIND_PART) {
			rf_io_read rd;
			engine_read(l, f, &(rf_source_read){ .shard = d->shard, .offset = d->from,
							     .len = d->len, .expect = d->len }, &rd);
			rd.buf = q->buf + d->at;
			rd.tag = id | (uint64_t)d->part << 32;
			rfi_io_submit(f->io, &rd);
			atomic_fetch_add_explicit(&l->st.reads_submitted, 1, memory_order_relaxed);
			continue;
		}
		if (d->where != RF_FIELD_OWN_FILE)
			continue;
		/* one byte past its size, as a loose file's read: a file that grew shows */
		rfi_io_submit(f->io, &(rf_io_read){ .dirfd = l->src.index.root_fd, .file = -1,
						   .path = d->path, .offset = 0, .len = d->len + 1,
						   .buf = q->buf + d->at,
						   .tag = id | (uint64_t)d->part << 32 });
		atomic_fetch_add_explicit(&l->st.reads_submitted, 1, memory_order_relaxed);
	}
}

/* What issue() does next with a place. */
enum { ISSUE_GO, ISSUE_NEXT, ISSUE_STOP }; /* go on with it; the next place; stop till the wait */

/* A place that will not be read: its sample failed before any read. */
static void fail_place(rf_loader *l, struct rf_feeder *f, const rf_place *p, uint64_t sample,
		       int err, const char *reason)
{
	f->cur_valid = 0;
	rfi_feeder_place_failed(l, f, p, sample, err, reason);
}

/* The request for place p, template t, and its source read r: its sample,
 * its stage, and with fields, the read widened over them. @return : 0, or
 * -1 when the place failed (a replacement is queued). */
static int plan_request(rf_loader *l, struct rf_feeder *f, const rf_place *p, rf_request *t,
			rf_source_read *r)
{
	char reason[RF_REASON_LEN];
	uint64_t sample, epoch, pos;
	rfi_loader_place_sample(l, p, &sample, &epoch, &pos);
	int err = check_entry(l, f, sample, r, reason, sizeof(reason));
	if (err) {
		fail_place(l, f, p, sample, err, reason);
		return -1;
	}
	rf_stage stage = rfi_loader_stage(l, sample);
	*t = (rf_request){ .place = *p, .sample = sample, .epoch = epoch, .pos = pos,
			   .ticket = NO_TICKET, .chunk = NO_CHUNK, .stage = (uint8_t)stage,
			   .parts_left = 1, .main_len = r->expect };
	if (l->fields.n) {
		err = plan_fields(l, f, t, r, reason, sizeof(reason));
		if (err) {
			fail_place(l, f, p, sample, err, reason);
			return -1;
		}
	}
	t->expect = r->expect;
	t->read_offset = r->offset;
	return 0;
}

/* Sequential shard access: t read through its chunk (chunks.c).
 * @return : ISSUE_NEXT (done: waits for the chunk or landed), ISSUE_STOP
 * (short of resources), ISSUE_GO (no chunks, or a member across chunks:
 * read alone). */
static int through_chunk(rf_loader *l, struct rf_feeder *f, const rf_request *t,
			 const rf_source_read *r)
{
	if (!f->chunks || t->parts_left != 1)
		return ISSUE_GO;
	int c = rfi_chunk_issue(l, f, t, r);
	if (c == 1)
		f->cur_valid = 0;
	return c == 1 ? ISSUE_NEXT : c == 0 ? ISSUE_STOP : ISSUE_GO;
}

/* A URL read through the node cache (node_cache_route.c), its route in *cached.
 * @return : 1 when the range is another process's to fetch (counted; the
 * place is looked at again after a short wait). */
static int through_cache(rf_loader *l, struct rf_feeder *f, const rf_place *p, uint32_t shard,
			 rf_io_read *rd, rf_cached *cached)
{
	if (!rd->url || !f->cache ||
	    rfi_feeder_cache_route(f, shard, rd, cached, rfi_feeder_cache_how(l, f, p)) != ROUTE_WAIT)
		return 0;
	rfi_feeder_cache_wait(l, f, p);
	return 1;
}

/* The buffer t's reads take, from span (its main read's): with fields in
 * files of their own, each part's piece after it (each at the engine's
 * alignment, its place in t->field[].at). @return : the bytes, *widest the
 * largest single read. */
static size_t lay_out_parts(rf_loader *l, struct rf_feeder *f, rf_request *t, size_t span,
			    size_t *widest)
{
	size_t align = rfi_io_align(f->io), need = span;
	*widest = span;
	for (uint32_t i = 0; i < l->fields.n && t->parts_left > 1; i++) {
		rf_req_field *d = &t->field[i];
		if (d->where != RF_FIELD_OWN_FILE && d->where != RF_FIELD_KIND_PART)
			continue;
		size_t part = d->where == RF_FIELD_KIND_PART ? rfi_io_span(f->io, d->from, d->len)
							      : rfi_io_span(f->io, 0, d->len + 1);
		need = RF_ALIGN_UP(need, align);
		d->at = need; /* its piece of the buffer */
		need += part;
		*widest = RF_MAX(*widest, part);
	}
	return need;
}

/* Where t's read lands: straight into the batch (raw), or a buffer of need
 * bytes from the pool, in *buf and *ticket. @return : ISSUE_GO, ISSUE_NEXT
 * (the place failed: no room left in its batch), ISSUE_STOP (the pool is
 * full; after an idle chunk made room: ISSUE_NEXT with the place kept). */
static int take_buffer(rf_loader *l, struct rf_feeder *f, const rf_request *t, size_t span,
		       size_t need, rf_cached *cached, uint8_t **buf, uint32_t *ticket)
{
	*ticket = NO_TICKET;
	if (t->stage == RF_STAGE_RAW) {
		/* straight into the batch, after the samples issued before
		 * (a zstd member goes through the pool: a compute thread
		 * puts its decompressed bytes in the batch) */
		rf_slot *s = rfi_slot_of(l, &t->place);
		size_t off;
		if (rfi_slot_reserve(s, t->place.index, span, rfi_io_align(f->io), &off)) {
			/* only replacements can use up the room */
			char reason[RF_REASON_LEN];
			rfi_feeder_cache_cancel(f, cached);
			rfi_slot_no_room(l, s, (size_t)t->expect, reason, sizeof(reason));
			fail_place(l, f, &t->place, t->sample, -ENOSPC, reason);
			return ISSUE_NEXT;
		}
		*buf = s->batch.data + off;
	} else if (rfi_bufpool_alloc(&f->pool, need, ticket, buf)) {
		rfi_feeder_cache_cancel(f, cached);
		if (rfi_chunks_evict(f))
			return ISSUE_NEXT; /* an idle chunk made room: the same place again */
		return ISSUE_STOP; /* wait for buffers to come back */
	}
	return ISSUE_GO;
}

/* Takes a request for t, reading rd into buf, and submits its reads (its
 * fields' own files too). */
static void submit(rf_loader *l, struct rf_feeder *f, const rf_request *t, rf_io_read *rd,
		   const rf_cached *cached, uint8_t *buf, uint32_t ticket)
{
	uint32_t id = f->free_reqs[--f->nfree];
	rf_request *q = &l->req[id];
	*q = *t;
	q->buf = buf;
	q->ticket = ticket;
	if (f->req_cache)
		f->req_cache[id] = *cached;
	rd->buf = buf;
	rd->tag = id;
	rfi_io_submit(f->io, rd);
	if (f->cache)
		rfi_feeder_cache_submitted(l, cached);
	if (q->parts_left > 1)
		submit_parts(l, f, id, q);
	f->cur_valid = 0;
	atomic_fetch_add_explicit(&l->st.reads_submitted, 1, memory_order_relaxed);
}

/* Before issuing: a read waited for another process's fetch since the
 * cache's records were last read, so read the others' new ones. */
static void cache_look(struct rf_feeder *f)
{
	f->cache_waiting = 0;
	if (f->cache && !f->cache_looked) {
		rfi_cache_refresh(f->cache);
		f->cache_looked = 1;
	}
}

/* Starts reads while a request, buffer space, engine room and a place exist. */
static void issue(rf_loader *l, struct rf_feeder *f)
{
	rf_place p;
	cache_look(f);
	while (!f->failed && f->nfree && next_place(l, f, &p)) {
		rf_request t;
		rf_source_read r;
		if (plan_request(l, f, &p, &t, &r))
			continue;
		int go = through_chunk(l, f, &t, &r);
		if (go == ISSUE_STOP)
			break; /* resources come back at the next wait */
		if (go == ISSUE_NEXT)
			continue;
		rf_io_read rd;
		engine_read(l, f, &r, &rd);
		rf_cached cached = { 0 };
		if (through_cache(l, f, &p, r.shard, &rd, &cached))
			break; /* looked at again after a short wait */
		size_t span = rfi_io_span(f->io, rd.offset, rd.len), widest;
		size_t need = lay_out_parts(l, f, &t, span, &widest);
		if (!rfi_io_ready_n(f->io, widest, t.parts_left)) {
			rfi_feeder_cache_cancel(f, &cached);
			break; /* room comes back at the next wait */
		}
		uint32_t ticket;
		uint8_t *buf;
		go = take_buffer(l, f, &t, span, need, &cached, &buf, &ticket);
		if (go == ISSUE_STOP)
			break;
		if (go == ISSUE_NEXT)
			continue;
		submit(l, f, &t, &rd, &cached, buf, ticket);
	}
}

/* Reads the place again, the same candidate (after EAGAIN or a short read). */
static void read_again(struct rf_feeder *f, uint32_t id, rf_request *q)
{
	rf_place p = q->place;
	p.transient++;
	rfi_feeder_release(f, id, q);
	retry_push(f, &p);
}

/* Errors that say the system is short of something (descriptors, memory),
 * not that the sample is bad: the engine reports them only once it gave up
 * waiting for others to let theirs go. */
static int system_short(int res)
{
	return res == -EMFILE || res == -ENFILE || res == -ENOMEM || res == -ENOBUFS;
}

/* The field whose file is read `part` of request q. */
static rf_req_field *field_of_part(const rf_loader *l, rf_request *q, unsigned part)
{
	for (uint32_t i = 0; i < l->fields.n; i++)
		if ((q->field[i].where == RF_FIELD_OWN_FILE ||
		     q->field[i].where == RF_FIELD_KIND_PART) && q->field[i].part == part)
			return &q->field[i];
	assert(!"a read part no field has");
	return &q->field[0];
}

#define READ_AGAIN 1 /* q->err while parts are in flight: one came short or EAGAIN */

/* The result to judge: the read's, or in test builds what the test hook
 * says instead (after the planted slow device's delay). */
static inline int result_of(const struct rf_feeder *f, const rf_io_done *d, const rf_request *q,
			    unsigned part, int64_t size)
{
	int res = d->res;
#if RF_TEST_HOOKS
	if (f->test_delay_us) /* a slow device (see feeder_setup.c) */
		usleep(f->test_delay_us);
	if (test_hook && !part && !(res < 0 && d->step == RF_IO_STEP_OPEN))
		res = test_hook(test_hook_ctx, q->sample, res, size);
#else
	(void)f, (void)q, (void)part, (void)size;
#endif
	return res;
}

/* A read routed through the node cache (node_cache_route.c): a hit checked, a
 * fill written. @return : 1 when the hit's bytes failed their check (the
 * copy is dropped, and the place read again, from the network). */
static int cache_refused(rf_loader *l, struct rf_feeder *f, uint32_t id, rf_request *q,
			 const rf_io_done *d, int res, int64_t size)
{
	if (!f->req_cache || !f->req_cache[id].route ||
	    !rfi_feeder_cache_done(l, f, &f->req_cache[id], q->buf + d->skip, res, size))
		return 0;
	rf_place p = q->place;
	rfi_feeder_release(f, id, q);
	retry_push(f, &p);
	return 1;
}

/* What a read of size bytes that gave res says: 0 (all its bytes), or the
 * error with reason (RF_REASON_LEN) set, and *again when reading it again
 * may mend it (EAGAIN, a short read, a few times). fld: the field whose
 * own file it read, or NULL. */
static int verdict(rf_loader *l, const rf_io_done *d, const rf_request *q,
		   const rf_req_field *fld, int res, int64_t size, int *again, char *reason)
{
	if (system_short(res))
		return res; /* failing the stream, in judge() */
	int transient_left = q->place.transient < RF_MAX_TRANSIENT;
	int err = 0;
	if (res < 0) {
		if ((res == -EAGAIN || res == -EINTR) && transient_left)
			*again = 1;
		err = res;
		char what[RF_REASON_LEN];
		rf_io_done said = *d; /* what is judged: res (a test hook may have changed it) */
		said.res = err;
		rfi_io_describe(&said, what, sizeof(what));
		rfi_fmt(reason, RF_REASON_LEN, "%s: %s",
		       d->step == RF_IO_STEP_OPEN ? "open" : "read", what);
	} else if ((int64_t)res != size) {
		/* Short: a transient short read, or a file that shrank. Read again
		 * a few times before believing the file changed. */
		if ((int64_t)res < size && transient_left)
			*again = 1;
		err = RF_EBADSAMPLE;
		if (fld) {
			rfi_fmt(reason, RF_REASON_LEN, "%d bytes, not the %lld it had when indexed "
			       "(the file changed)", res, (long long)size);
		} else {
			rf_source_read r = { .expect = q->expect };
			l->src.ops->cut_short(&l->src, &r, res, reason, RF_REASON_LEN);
		}
	}
	if (err && fld) { /* name the field's file */
		char what[RF_REASON_LEN];
		memcpy(what, reason, sizeof(what));
		if (fld->path)
			rfi_fmt(reason, RF_REASON_LEN, "its field file %s: %s", fld->path, what);
		else
			rfi_fmt(reason, RF_REASON_LEN, "its field '%s' (a read at %llu): %s",
			       l->fields.spec[fld - q->field].name, (unsigned long long)fld->from, what);
	}
	return err;
}

/* A request read in parts (its fields' own files) waits for all of them.
 * @return : 1 while others are in flight (the first failure stands, one
 * that reading again cannot mend over one it can); 0 at its last, *err,
 * *again and reason then the request's. */
static int parts_pending(rf_request *q, int *err, int *again, char *reason)
{
	if (q->parts_left > 1) {
		q->parts_left--;
		if (*err && (q->err == 0 || (q->err == READ_AGAIN && !*again))) {
			q->err = *again ? READ_AGAIN : *err;
			memcpy(q->reason, reason, RF_REASON_LEN);
		}
		return 1;
	}
	if (!*err && q->err) { /* an earlier part failed */
		*again = q->err == READ_AGAIN;
		*err = *again ? -EAGAIN : q->err;
		memcpy(reason, q->reason, RF_REASON_LEN);
	}
	return 0;
}

/* The process is at its limit (descriptors, memory): fail the stream
 * naming it, rather than count good samples as bad. */
static void stream_short(rf_loader *l, struct rf_feeder *f, uint32_t id, rf_request *q,
			 const rf_io_done *d, int err)
{
	struct rlimit lim = { 0 };
	getrlimit(RLIMIT_NOFILE, &lim);
	char what[256], name[1280];
	rfi_fmt(what, sizeof(what), "%s of %s with no other read in flight (the "
	       "descriptor limit, ulimit -n, is %llu)", d->step == RF_IO_STEP_OPEN ? "open" : "read",
	       rfi_source_path(&l->src, q->sample, name, sizeof(name)),
	       (unsigned long long)lim.rlim_cur);
	rfi_feeder_release(f, id, q);
	feeder_failed(l, err, what);
	f->failed = 1;
}

/* The read failed for good: its place is replaced. */
static void read_failed(rf_loader *l, struct rf_feeder *f, uint32_t id, rf_request *q,
			const rf_io_done *d, const rf_req_field *fld, int err, char *reason)
{
	rf_place p = q->place;
	uint64_t sample = q->sample;
	if (!fld && rfi_source_not_regular(&l->src, sample, reason, RF_REASON_LEN) &&
	    d->step == RF_IO_STEP_READ)
		err = RF_EBADSAMPLE;
	rfi_feeder_release(f, id, q);
	rfi_feeder_place_failed(l, f, &p, sample, err, reason);
}

/* A read finished: judge it, then land it, hand it to a decoder, read it
 * again, or replace its place. A sample read in parts (its fields' own
 * files) is judged when its last part is in. */
static void judge(rf_loader *l, struct rf_feeder *f, const rf_io_done *d)
{
	if (d->res > 0)
		atomic_fetch_add_explicit(&l->st.bytes_fetched, (uint64_t)d->res, memory_order_relaxed);
	if (d->tag & CHUNK_TAG) {
		rfi_chunk_done(l, f, d);
		return;
	}
	uint32_t id = (uint32_t)d->tag;
	unsigned part = (unsigned)(d->tag >> 32);
	rf_request *q = &l->req[id];
	rf_req_field *fld = part ? field_of_part(l, q, part) : NULL;
	int64_t size = fld ? fld->len : q->expect;
	int res = result_of(f, d, q, part, size);
	if (!part && cache_refused(l, f, id, q, d, res, size))
		return;
	char reason[RF_REASON_LEN];
	int again = 0;
	int err = verdict(l, d, q, fld, res, size, &again, reason);
	if (!err) {
		if (fld)
			fld->data = q->buf + fld->at + d->skip;
		else
			q->data = q->buf + d->skip;
		if (fld && fld->where == RF_FIELD_KIND_PART) /* a column's page: bytes read too */
			atomic_fetch_add_explicit(&l->st.bytes_read, fld->len, memory_order_relaxed);
	}
	if (parts_pending(q, &err, &again, reason))
		return;
	if (system_short(err)) {
		stream_short(l, f, id, q, d, err);
	} else if (again) {
		read_again(f, id, q);
	} else if (err) {
		read_failed(l, f, id, q, d, fld, err, reason);
	} else {
		q->len = (uint32_t)q->expect;
		rfi_feeder_landed(l, f, id);
	}
}

/* Requests the decoders handed back: free their buffers; a failed decode
 * asks for a replacement. */
static void take_back(rf_loader *l, struct rf_feeder *f)
{
	uint32_t n = rfi_idq_drain(&l->done, f->drain, (uint32_t)l->cfg.io_depth);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = f->drain[i];
		rf_request *q = &l->req[id];
		rf_place p = q->place;
		uint64_t sample = q->sample;
		int err = q->err;
		char reason[RF_REASON_LEN];
		if (err)
			memcpy(reason, q->reason, sizeof(reason));
		rfi_feeder_release(f, id, q);
		if (err)
			rfi_feeder_place_failed(l, f, &p, sample, err, reason);
	}
}


/* Publishes what the engine settled on (it changes after a fallback). */
static void publish_io(rf_loader *l, struct rf_feeder *f)
{
	rf_io_info info;
	rfi_io_get_info(f->io, &info);
	atomic_store_explicit(&l->st.direct_io, (unsigned)info.direct, memory_order_relaxed);
	atomic_store_explicit(&l->st.reads_in_flight, info.inflight, memory_order_relaxed);
	if (!info.http.requests)
		return; /* no URL read */
	atomic_store_explicit(&l->st.http_requests, info.http.requests, memory_order_relaxed);
	atomic_store_explicit(&l->st.http_retries, info.http.retries, memory_order_relaxed);
	atomic_store_explicit(&l->st.http_errors, info.http.errors, memory_order_relaxed);
	atomic_store_explicit(&l->st.http_bytes, info.http.bytes, memory_order_relaxed);
	atomic_store_explicit(&l->st.http_retry_throttled, info.http.retry_throttled,
			      memory_order_relaxed);
	atomic_store_explicit(&l->st.http_retry_server, info.http.retry_server, memory_order_relaxed);
	atomic_store_explicit(&l->st.http_retry_connection, info.http.retry_connection,
			      memory_order_relaxed);
	atomic_store_explicit(&l->st.http_retry_stalled, info.http.retry_stalled, memory_order_relaxed);
	atomic_store_explicit(&l->st.http_connections, info.http.connections, memory_order_relaxed);
}

void *rfi_feeder_main(void *arg)
{
	rf_loader *l = arg;
	struct rf_feeder *f = calloc(1, sizeof(*f));
	char err[256] = "out of memory";
	int ret = f ? rfi_feeder_setup(l, f, err, sizeof(err)) : -ENOMEM;
	if (!ret)
		publish_io(l, f);
	l->feeder = f;
	pthread_mutex_lock(&l->init_mu);
	l->init_ret = ret;
	rfi_fmt(l->init_err, sizeof(l->init_err), "%s", err);
	l->init_done = 1;
	pthread_cond_signal(&l->init_cv);
	pthread_mutex_unlock(&l->init_mu);
	if (ret)
		goto out;

	uint64_t cpu0 = rfi_thread_cpu_ns();
	uint32_t depth = (uint32_t)l->cfg.io_depth;
	while (!atomic_load_explicit(&l->stop, memory_order_acquire)) {
		take_back(l, f);
		uint32_t n = rfi_io_reap(f->io, f->done, depth);
		for (uint32_t i = 0; i < n; i++)
			judge(l, f, &f->done[i]);
		if (f->cache)
			rfi_cache_step(f->cache);
		issue(l, f);
		if (f->cache) /* before the sleep: a batch landed above may be taken meanwhile */
			rfi_feeder_cache_publish(l, f);
		/* a read waiting for another process's fetch looks again in 5 ms */
		ret = rfi_io_wait_until(f->io, f->cache_waiting ? rfi_now_ns() + 5000000ull : UINT64_MAX);
		if (ret) {
			feeder_failed(l, ret, "waiting for reads");
			break;
		}
		atomic_store_explicit(&l->st.ns_ring_cpu, rfi_thread_cpu_ns() - cpu0,
				      memory_order_relaxed);
		publish_io(l, f);
	}
out:
	if (f)
		rfi_feeder_close(f);
	return NULL;
}
