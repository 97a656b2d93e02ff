/* state.c - the saved state: its byte format, rf_loader_state_save(),
 * rf_state_parse(), the fingerprints, the checks before a resume and where
 * a resumed loader starts.
 *
 * Format version 1, 152 bytes, every field little-endian:
 *    0  8  magic "rfstate\0"
 *    8  4  format version (1)
 *   12  4  bytes in the state (152)
 *   16  8  next_batch: rf_batch.index of the next batch to deliver
 *   24  8  its epoch                 32  8  its number within the epoch
 *   40  8  seed                      48  4  sampler (rf_sampler, resolved)
 *   52  4  on_error                  56  4  batch_size
 *   60  4  drop_last                 64  4  rank
 *   68  4  world_size                72  4  rank_tail
 *   76  4  resize                    80  4  crop  (both 0 for a token source, which
 *                                          has no image settings)
 *   84  4  shard order: 0 random access (and every loose source), or
 *          1 | shuffle_block << 1 for sequential shard access
 *                                    88  8  global positions per epoch
 *   96  8  positions per rank and epoch
 *  104  8  batches per rank and epoch
 *  112  8  epochs of the saving loader (0 = endless; not checked on resume)
 *  120  8  samples in the dataset   128  8  dataset fingerprint
 *  136  8  output fingerprint
 *  144  8  checksum: rfi_hash_bytes() of bytes 0..143
 *
 * Format version 2 is written only by a loader that resumed inside an
 * epoch on another world size or batch size: it carries the rest of that
 * epoch (sample/rest.h), which applies to that epoch only; every other
 * state is version 1, which older libraries read. Bytes 0..143 as version 1, then:
 *  144  8  the epoch the runs are the rest of
 *  152  4  runs n (1 .. RF_REST_MAX_RUNS)    156  4  0
 *  160     n runs of global positions: 8 first, 8 count (ascending, disjoint)
 *  160 + 16n  8  checksum: rfi_hash_bytes() of the bytes before it
 * (168 + 16n bytes.)
 * A later version may add fields; this library refuses versions above its
 * own, so that a state is never half understood. */
#include "pipeline/state.h"
#include "sample/rest.h"
#include "sample/shard_order.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/util.h"

static const uint8_t magic[8] = { 'r', 'f', 's', 't', 'a', 't', 'e', 0 };

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t rfi_state_checksum(const uint8_t *state, size_t len)
{
	return rfi_hash_bytes(0x636865636b73756dull, state, len);
}

/* The position fields (bytes 16..39) of a version-1 state: all that
 * rf_state_seek() changes, besides the checksum. */
static void put_position(uint8_t *s, uint64_t batch, uint64_t batches_per_epoch)
{
	put64(s + 16, batch);
	put64(s + 24, batch / batches_per_epoch);
	put64(s + 32, batch % batches_per_epoch);
}

/* The checksum closes the state: its last 8 of len bytes. */
static void put_checksum(uint8_t *s, size_t len)
{
	put64(s + len - 8, rfi_state_checksum(s, len - 8));
}

static uint64_t hash_float(uint64_t h, float f)
{
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return rfi_hash_u64(h, bits);
}

/* Are the samples token rows (a token kind's, as the plan says)? Their
 * image settings are none of the stream's. */
static int token_rows(const rf_loader *l)
{
	return l->plan.token_width != 0;
}

uint64_t rfi_state_output_fingerprint(const rf_loader *l)
{
	const rf_config *c = &l->cfg;
	if (token_rows(l)) /* rows of tokens: only their type is an output setting */
		return rfi_hash_u64(0x726f777321212121ull, (uint64_t)l->plan.token_dtype);
	int64_t largest = 0;
	for (size_t i = 0; i < l->src.index.count; i++)
		largest = RF_MAX(largest, l->src.index.entries[i].size);
	/* The ring thread refuses files above this size as bad samples
	 * (src/io/ring_setup.c), which changes the stream only if some file
	 * is that large. */
	uint64_t max_file = c->raw ? c->raw_max_bytes : c->read_pool_bytes / 4;
	uint64_t cap = (uint64_t)largest <= max_file ? UINT64_MAX : max_file;
	uint64_t h = rfi_hash_u64(0x6f75747075742121ull, (uint64_t)c->resize);
	h = rfi_hash_u64(h, (uint64_t)c->crop);
	h = rfi_hash_u64(h, cap);
	/* Decode and augment (issue 4): what the window, the decode and the
	 * stored values depend on. */
	h = rfi_hash_u64(h, (uint64_t)c->raw);
	h = rfi_hash_u64(h, (uint64_t)c->random_resized_crop);
	for (int i = 0; i < 2; i++) {
		h = hash_float(h, c->rrc_scale[i]);
		h = hash_float(h, c->rrc_ratio[i]);
	}
	h = hash_float(h, c->flip_p);
	h = rfi_hash_u64(h, (uint64_t)c->dtype);
	h = rfi_hash_u64(h, (uint64_t)c->layout);
	for (int i = 0; i < 3; i++) {
		h = hash_float(h, c->mean[i]);
		h = hash_float(h, c->std[i]);
	}
	h = rfi_hash_u64(h, c->max_pixels); /* larger images are bad samples */
	h = rfi_hash_u64(h, (uint64_t)c->no_scaled_decode);
	if (c->verify_full) /* which files are bad; hashed only when set, so that
			     * states saved before the field existed still match */
		h = rfi_hash_u64(h, 0x7665726966ull);
	return rfi_hash_u64(h, (uint64_t)c->no_region_decode);
}

int rfi_loader_state_save(const rf_loader *l, void *buf, size_t len)
{
	uint64_t b = l->next_batch, bpe = l->plan.batches_per_epoch;
	/* A resumed loader's rest goes into every state it saves, also past
	 * its epoch: a state moved back into that epoch (rf_state_seek) needs it. */
	const rf_rest *rest = l->rest;
	size_t bytes = rest ? RF_STATE_V2_BYTES(rest->runs) : RF_STATE_V1_BYTES;
	if (!buf && len == 0)
		return (int)bytes;
	if (!buf || len < bytes)
		return -ENOSPC;
	/* Out of order, the position is one number only while the batches
	 * handed out are all those before it. */
	if (l->delivered_end != l->next_batch)
		return -EAGAIN;
	uint8_t *s = buf;
	memset(s, 0, bytes);
	memcpy(s, magic, sizeof(magic));
	put32(s + 8, rest ? 2 : 1);
	put32(s + 12, (uint32_t)bytes);
	put_position(s, b, bpe);
	put64(s + 40, l->cfg.seed);
	put32(s + 48, (uint32_t)l->order.kind);
	put32(s + 52, (uint32_t)l->cfg.on_error);
	put32(s + 56, (uint32_t)l->cfg.batch_size);
	put32(s + 60, (uint32_t)l->cfg.drop_last);
	put32(s + 64, l->order.rank);
	put32(s + 68, l->order.world);
	put32(s + 72, (uint32_t)l->order.tail);
	put32(s + 76, token_rows(l) ? 0 : (uint32_t)l->cfg.resize);
	put32(s + 80, token_rows(l) ? 0 : (uint32_t)l->cfg.crop);
	put32(s + 84, l->shard_order ? 1u | l->shard_order->block << 1 : 0);
	put64(s + 88, l->order.epoch_len);
	put64(s + 96, l->order.rank_len);
	put64(s + 104, bpe);
	put64(s + 112, (uint64_t)l->cfg.epochs);
	put64(s + 120, rfi_source_samples(&l->src));
	put64(s + 128, l->dataset_fp);
	put64(s + 136, l->output_fp);
	if (rest) {
		put64(s + 144, rest->epoch);
		put32(s + 152, rest->runs);
		for (uint32_t i = 0; i < rest->runs; i++) {
			put64(s + 160 + 16 * (size_t)i, rest->start[i]);
			put64(s + 168 + 16 * (size_t)i, rest->len[i]);
		}
	}
	put_checksum(s, bytes);
	return (int)bytes;
}

/* The header's length check: version 1 is 152 bytes, version 2 168 + 16
 * per run. The byte count alone must be a whole state of its version
 * before len is compared with it: every field read later lies inside it.
 * 0, or RF_ESTATE with err set. */
static int check_length(const uint8_t *s, size_t len, uint32_t version, uint32_t bytes,
			char *err, size_t errlen)
{
	int ok = version == 1 ? bytes == RF_STATE_V1_BYTES
		 : version == 2 && bytes >= RF_STATE_V2_BYTES(1) &&
			   bytes <= RF_STATE_V2_BYTES(RF_REST_MAX_RUNS) &&
			   (bytes - RF_STATE_V2_BYTES(0)) % 16 == 0;
	/* a version-2 state's run count agrees with its length (read only
	 * once len holds the count) */
	if (ok && version == 2 && len >= 156 &&
	    get32(s + 152) != (bytes - RF_STATE_V2_BYTES(0)) / 16)
		ok = 0;
	if (version == 0 || !ok) {
		rfi_fmt(err, errlen, "state: corrupted header (version %u, %u bytes; version 1 "
		       "has %d, version 2 168 + 16 per run)", version, bytes, RF_STATE_V1_BYTES);
		return RF_ESTATE;
	}
	if (len < bytes) {
		rfi_fmt(err, errlen, "state: truncated: %zu of its %u bytes", len, bytes);
		return RF_ESTATE;
	}
	if (len > bytes) {
		rfi_fmt(err, errlen, "state: %zu bytes where the state has %u: something else "
		       "follows it (corrupted, or more than one state)", len, bytes);
		return RF_ESTATE;
	}
	uint64_t sum = get64(s + bytes - 8);
	if (sum != rfi_state_checksum(s, bytes - 8)) {
		rfi_fmt(err, errlen, "state: corrupted (checksum mismatch)");
		return RF_ESTATE;
	}
	return 0;
}

static void decode_fields(const uint8_t *s, rf_state_info *x)
{
	x->next_batch = get64(s + 16);
	x->epoch = get64(s + 24);
	x->batch_in_epoch = get64(s + 32);
	x->seed = get64(s + 40);
	x->sampler = (rf_sampler)get32(s + 48);
	x->on_error = (rf_on_error)get32(s + 52);
	x->batch_size = get32(s + 56);
	x->drop_last = get32(s + 60);
	x->rank = get32(s + 64);
	x->world_size = get32(s + 68);
	x->rank_tail = (rf_rank_tail)get32(s + 72);
	x->resize = get32(s + 76);
	x->crop = get32(s + 80);
	uint32_t so = get32(s + 84);
	x->shard_access = so & 1 ? RF_SHARD_SEQUENTIAL : RF_SHARD_RANDOM;
	x->shuffle_block = so >> 1;
	x->epoch_samples = get64(s + 88);
	x->rank_samples = get64(s + 96);
	x->batches_per_epoch = get64(s + 104);
	x->epochs = get64(s + 112);
	x->dataset_samples = get64(s + 120);
	x->dataset_fingerprint = get64(s + 128);
	x->output_fingerprint = get64(s + 136);
}

/* A version-2 state's runs, checked (ascending, disjoint, inside the
 * epoch) and counted into x; copied into rest when not NULL. 0, or -1. */
static int decode_runs(const uint8_t *s, rf_state_info *x, rf_rest *rest)
{
	x->rest_epoch = get64(s + 144);
	x->rest_runs = get32(s + 152);
	if (get32(s + 156))
		return -1;
	uint64_t end = 0, total = 0;
	for (uint32_t i = 0; i < x->rest_runs; i++) {
		uint64_t first = get64(s + 160 + 16 * (size_t)i), n = get64(s + 168 + 16 * (size_t)i);
		if (n == 0 || (i && first <= end) || first > x->epoch_samples ||
		    n > x->epoch_samples - first)
			return -1;
		end = first + n;
		total += n;
		if (rest) {
			rest->start[i] = first;
			rest->len[i] = n;
		}
	}
	x->rest_samples = total;
	if (rest) {
		rest->epoch = x->rest_epoch;
		rest->runs = x->rest_runs;
	}
	return 0;
}

/* The batches of the saving loader's ranks in the rest x carries. */
static uint64_t saved_rest_batches(const rf_state_info *x)
{
	return rfi_rank_batches(rfi_rank_len(x->rest_samples, x->world_size, x->rank_tail),
			       x->batch_size, (int)x->drop_last);
}

/* The first batch of the rest x carries: the saving ranks' batches of it
 * are the last of its epoch. */
static uint64_t rest_first_batch(const rf_state_info *x)
{
	uint64_t bpe = x->batches_per_epoch;
	return x->rest_epoch * bpe + bpe - saved_rest_batches(x);
}

/* Fields that a correct checksum cannot vouch for: a writer's bug, not
 * damage; refused all the same. 1 when consistent. */
static int consistent(const rf_state_info *x, uint32_t so)
{
	if (x->batches_per_epoch == 0 || x->epoch != x->next_batch / x->batches_per_epoch ||
	    x->batch_in_epoch != x->next_batch % x->batches_per_epoch ||
	    (uint32_t)x->sampler > RF_SAMPLER_BALANCED || (uint32_t)x->rank_tail > RF_RANK_TAIL_DROP ||
	    (uint32_t)x->on_error > RF_ON_ERROR_FAIL || x->world_size == 0 ||
	    x->rank >= x->world_size || x->batch_size == 0 || (so != 0 && !(so & 1)) ||
	    (so & 1 && so >> 1 == 0))
		return 0;
	if (x->rank_samples != rfi_rank_len(x->epoch_samples, x->world_size, x->rank_tail) ||
	    x->batches_per_epoch != rfi_rank_batches(x->rank_samples, x->batch_size, (int)x->drop_last))
		return 0;
	if (x->rest_runs) { /* the rest's batches end its epoch, and it has some */
		uint64_t n = saved_rest_batches(x);
		if (n == 0 || n > x->batches_per_epoch)
			return 0;
		if (x->rest_epoch == x->epoch && x->next_batch < rest_first_batch(x))
			return 0;
	}
	return 1;
}

int rfi_state_read(const void *buf, size_t len, rf_state_info *out, rf_rest **rest, char *err,
		  size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (rest)
		*rest = NULL;
	if (!buf || !out) {
		rfi_fmt(err, errlen, "rf_state_parse: buf and out must not be NULL");
		return -EINVAL;
	}
	const uint8_t *s = buf;
	size_t head = RF_MIN(len, sizeof(magic));
	if (memcmp(s, magic, head) != 0) {
		rfi_fmt(err, errlen, "state: not a ringfeed state (it does not start with "
		       "\"rfstate\")");
		return RF_ESTATE;
	}
	if (len < 16) {
		rfi_fmt(err, errlen, "state: truncated: %zu bytes, not even the 16-byte header", len);
		return RF_ESTATE;
	}
	uint32_t version = get32(s + 8), bytes = get32(s + 12);
	if (version > RF_STATE_VERSION) {
		rfi_fmt(err, errlen, "state: format version %u is newer than this library reads "
		       "(up to %u): saved by a newer ringfeed (or corrupted)", version,
		       RF_STATE_VERSION);
		return RF_ESTATEVERSION;
	}
	int ret = check_length(s, len, version, bytes, err, errlen);
	if (ret)
		return ret;
	rf_state_info x;
	memset(&x, 0, sizeof(x));
	x.version = version;
	x.bytes = bytes;
	decode_fields(s, &x);
	rf_rest *r = NULL;
	if (version == 2 && rest && !(r = malloc(sizeof(*r)))) {
		rfi_fmt(err, errlen, "state: out of memory");
		return -ENOMEM;
	}
	if ((version == 2 && decode_runs(s, &x, r)) || !consistent(&x, get32(s + 84))) {
		free(r);
		rfi_fmt(err, errlen, "state: inconsistent fields (written by a faulty program?)");
		return RF_ESTATE;
	}
	x.epoch_first_batch = x.rest_runs && x.rest_epoch == x.epoch ? rest_first_batch(&x)
				: x.epoch * x.batches_per_epoch;
	*out = x;
	if (rest)
		*rest = r;
	return 0;
}

/* rf_state_parse() knows every version's layout: the position fields are
 * where version 1 has them in every version, the checksum closes each. */
_Static_assert(RF_STATE_VERSION == 2, "rf_state_seek() knows versions 1 and 2");

int rfi_state_seek(void *buf, size_t len, uint64_t next_batch, char *err, size_t errlen)
{
	rf_state_info x;
	int ret = rfi_state_read(buf, len, &x, NULL, err, errlen);
	if (ret)
		return ret;
	uint64_t bpe = x.batches_per_epoch;
	assert(bpe > 0 && len == x.bytes); /* parse refuses others */
	if (x.rest_runs && next_batch / bpe == x.rest_epoch) /* the rest's batches only */
		next_batch = RF_MAX(next_batch, rest_first_batch(&x));
	put_position(buf, next_batch, bpe);
	put_checksum(buf, len);
	return 0;
}

/* The name of a field's value in a message, from the one table
 * (src/util/names.c); parse and rfi_config_check() let no other value by. */
static const char *enum_name(rf_enum_kind kind, int value)
{
	const char *name = rfi_enum_name(kind, value);
	return name ? name : "?";
}

#define DIFFER(what, fmt, then, now)                                                  \
	do {                                                                          \
		rfi_fmt(err, errlen, "state: saved with " what " " fmt ", this config has " \
		       fmt ": refused (resume with the same " what ")", then, now);          \
		return RF_ESTATEMISMATCH;                                             \
	} while (0)

int rfi_state_check_resume(const rf_loader *l, const rf_state_info *x, char *err, size_t errlen)
{
	if (x->dataset_samples != rfi_source_samples(&l->src)) {
		rfi_fmt(err, errlen, "state: saved from another dataset (%llu samples then, %llu "
		       "in '%s' now)", (unsigned long long)x->dataset_samples,
		       (unsigned long long)rfi_source_samples(&l->src), l->source);
		return RF_ESTATEMISMATCH;
	}
	if (x->dataset_fingerprint != l->dataset_fp) {
		rfi_fmt(err, errlen, "state: saved from another dataset (the same %llu samples in "
		       "number, but other paths, sizes, labels%s in '%s')",
		       (unsigned long long)rfi_source_samples(&l->src),
		       l->order.kind == RF_SAMPLER_WEIGHTED ? " or weights" : "", l->source);
		return RF_ESTATEMISMATCH;
	}
	if (x->sampler != l->order.kind)
		DIFFER("sampler", "%s", enum_name(RF_ENUM_SAMPLER, x->sampler),
		       enum_name(RF_ENUM_SAMPLER, l->order.kind));
	rf_shard_access access = l->shard_order ? RF_SHARD_SEQUENTIAL : RF_SHARD_RANDOM;
	if (x->shard_access != access)
		DIFFER("shard_access", "%s", enum_name(RF_ENUM_SHARD_ACCESS, x->shard_access),
		       enum_name(RF_ENUM_SHARD_ACCESS, access));
	if (l->shard_order && x->shuffle_block != l->shard_order->block)
		DIFFER("shuffle_block", "%u", x->shuffle_block, l->shard_order->block);
	if (x->seed != l->cfg.seed)
		DIFFER("seed", "%llu", (unsigned long long)x->seed, (unsigned long long)l->cfg.seed);
	if (x->epoch_samples != l->order.epoch_len)
		DIFFER("samples per epoch", "%llu", (unsigned long long)x->epoch_samples,
		       (unsigned long long)l->order.epoch_len);
	if (x->drop_last != (uint32_t)l->cfg.drop_last)
		DIFFER("drop_last", "%u", x->drop_last, (uint32_t)l->cfg.drop_last);
	if (x->on_error != l->cfg.on_error)
		DIFFER("on_error", "%s", enum_name(RF_ENUM_ON_ERROR, x->on_error),
		       enum_name(RF_ENUM_ON_ERROR, l->cfg.on_error));
	if (x->rank_tail != l->order.tail)
		DIFFER("rank_tail", "%s", enum_name(RF_ENUM_RANK_TAIL, x->rank_tail),
		       enum_name(RF_ENUM_RANK_TAIL, l->order.tail));
	/* token rows have no image settings (a state saved before they were
	 * written as 0 holds the config's, ignored as they were) */
	if (!token_rows(l) && x->resize != (uint32_t)l->cfg.resize)
		DIFFER("resize", "%u", x->resize, (uint32_t)l->cfg.resize);
	if (!token_rows(l) && x->crop != (uint32_t)l->cfg.crop)
		DIFFER("crop", "%u", x->crop, (uint32_t)l->cfg.crop);
	if (x->output_fingerprint != l->output_fp && token_rows(l)) {
		rfi_fmt(err, errlen, "state: saved with another token_dtype (%s now; 0 means as "
		       "the shards store them)", enum_name(RF_ENUM_TOKEN_DTYPE, l->plan.token_dtype));
		return RF_ESTATEMISMATCH;
	}
	if (x->output_fingerprint != l->output_fp) {
		rfi_fmt(err, errlen, "state: saved with other output settings: raw, "
		       "random_resized_crop, rrc_scale, rrc_ratio, flip_p, dtype, layout, mean, "
		       "std, max_pixels, no_scaled_decode, no_region_decode, or a read pool "
		       "(raw: raw_max_bytes) that makes other files too large (read_pool_bytes = "
		       "%zu now)", l->cfg.read_pool_bytes);
		return RF_ESTATEMISMATCH;
	}
	return 0;
}

/* What is left of epoch x->epoch after the saving ranks' position: their
 * split of it (the whole epoch, or the rest they were given: saved) minus
 * what each handed out, split between this loader's ranks, into *out. */
static int rest_after(const rf_loader *l, const rf_state_info *x, rf_rest *saved, rf_rest *out,
		      char *err, size_t errlen)
{
	rf_rest *whole = NULL, *from = saved;
	if (!saved || saved->epoch != x->epoch) { /* the whole epoch: one run */
		if (!(from = whole = malloc(sizeof(*whole))))
			return -ENOMEM;
		whole->epoch = x->epoch;
		whole->runs = 1;
		whole->start[0] = 0;
		whole->len[0] = x->epoch_samples;
	}
	rfi_rest_split(from, x->world_size, x->rank_tail, x->batch_size, (int)x->drop_last);
	/* Every saving rank handed out its batches of from before the position */
	uint64_t taken = (x->next_batch - x->epoch_first_batch) * x->batch_size;
	uint64_t delivered = RF_MIN(from->rank_len, from->batches * x->batch_size);
	int ret = rfi_rest_left(from, x->world_size, l->order.blocked, from->rank_len, delivered,
			       taken, out);
	free(whole);
	if (ret) {
		rfi_fmt(err, errlen, "state: the rest of epoch %llu, saved on %u ranks at batch %llu, "
		       "takes more than %d runs of positions with sequential shard access: "
		       "refused (resume on %u ranks with batch_size %u, or from a state saved at "
		       "an epoch's start)", (unsigned long long)x->epoch, x->world_size,
		       (unsigned long long)x->next_batch, RF_REST_MAX_RUNS, x->world_size,
		       x->batch_size);
		return RF_ESTATEMISMATCH;
	}
	rfi_rest_split(out, l->order.world, l->order.tail, (uint32_t)l->cfg.batch_size,
		      l->cfg.drop_last);
	return 0;
}

int rfi_state_resume_at(rf_loader *l, const rf_state_info *x, char *err, size_t errlen)
{
	uint64_t bpe = l->plan.batches_per_epoch, e = x->epoch;
	rf_rest *saved = l->rest && l->rest->epoch == e ? l->rest : NULL; /* else moot */
	rf_rest *rest = NULL;
	int ret = 0;
	if (x->world_size == l->order.world && x->batch_size == (uint32_t)l->cfg.batch_size) {
		/* the saving split: the same batches from the same index on */
		l->start_batch = x->next_batch;
		if (saved) {
			rfi_rest_split(saved, l->order.world, l->order.tail,
				      (uint32_t)l->cfg.batch_size, l->cfg.drop_last);
			rest = saved;
		}
	} else if (x->batch_in_epoch == 0 && !saved) {
		l->start_batch = e * bpe; /* an epoch's start: the same on any split */
	} else if (!(rest = malloc(sizeof(*rest)))) {
		ret = -ENOMEM;
	} else if (!(ret = rest_after(l, x, saved, rest, err, errlen)) && rest->batches) {
		l->start_batch = e * bpe + (bpe - rest->batches);
	} else {
		l->start_batch = (e + 1) * bpe; /* nothing left for these ranks */
		free(rest);
		rest = NULL;
	}
	if (l->rest != rest)
		free(l->rest);
	l->rest = rest;
	if (!ret && l->start_batch > l->plan.total_batches) {
		rfi_fmt(err, errlen, "state: its position (batch %llu, epoch %llu) lies past the "
		       "end of this config's %d epochs (%llu batches)",
		       (unsigned long long)x->next_batch, (unsigned long long)e, l->cfg.epochs,
		       (unsigned long long)l->plan.total_batches);
		ret = RF_ESTATEMISMATCH;
	}
	return ret;
}
