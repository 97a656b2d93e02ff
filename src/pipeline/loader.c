/* loader.c - the public loader: create and destroy (set-up and teardown of
 * every thread and buffer), next / release (the consumer's side of the batch
 * ring), stats, and the bookkeeping of places shared by the ring and compute
 * threads. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "gpu/jpeg_gpu.h"
#include "decode/unzstd.h"
#include "pipeline/config.h"
#include "pipeline/feeder.h"
#include "index/tokens.h"
#include "pipeline/loader_impl.h"
#include "pipeline/state.h"
#include "sample/ranks.h"
#include "sample/shard_order.h"
#include "util/hash.h"
#include "util/util.h"

/* ---- places ------------------------------------------------------------- */

uint32_t rf_loader_batch_count(const rf_loader *l, uint64_t b)
{
	uint64_t m = l->order.rank_len, bs = (uint64_t)l->cfg.batch_size;
	uint64_t first = (b % l->batches_per_epoch) * bs;
	return (uint32_t)RF_MIN(bs, m - first);
}

void rf_loader_place_sample(const rf_loader *l, const rf_place *p, uint64_t *sample,
			    uint64_t *epoch, uint64_t *pos)
{
	uint64_t e = p->batch / l->batches_per_epoch;
	uint64_t q = (p->batch % l->batches_per_epoch) * (uint64_t)l->cfg.batch_size + p->index;
	uint64_t g = rf_order_global(&l->order, q);
	*epoch = e;
	*pos = g;
	*sample = l->shard_order && !p->attempt ? rf_shard_order_sample(l->shard_order, e, g)
						 : rf_order_sample(&l->order, e, g, p->attempt);
}

int rf_loader_forked(const rf_loader *l)
{
	return l->pid != getpid();
}

void rf_loader_wake_ring(rf_loader *l)
{
	uint64_t one = 1;
	/* Can only fail if the counter would overflow, which a pending read
	 * rules out; the ring thread re-reads it on every wake. */
	ssize_t r = write(l->wake_fd, &one, sizeof(one));
	assert(r == (ssize_t)sizeof(one));
	(void)r;
}

int rf_slot_reserve(rf_slot *s, size_t len, size_t align, size_t *off)
{
	size_t used = atomic_load_explicit(&s->raw_used, memory_order_relaxed), at;
	do {
		at = RF_ALIGN_UP(used, align);
		if (at + len > s->raw_cap)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak_explicit(&s->raw_used, &used, at + len,
						       memory_order_relaxed, memory_order_relaxed));
	*off = at;
	return 0;
}

void rf_loader_place_landed(rf_loader *l, rf_slot *s)
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
	uint64_t last = atomic_load_explicit(&s->t_last_read, memory_order_relaxed);
	s->batch.fetch_ns = last > s->t_start ? last - s->t_start : 0;
	if (l->gpu) {
		/* the copy goes out now, from the thread that finished the batch */
		pthread_mutex_lock(&l->mu);
		int failed = s->err;
		pthread_mutex_unlock(&l->mu);
		char why[256];
		size_t bytes = l->cfg.raw ? s->batch.bytes : (size_t)s->batch.count * l->sample_bytes;
		if (!failed && rf_gpu_copy(l->gpu, (int)(s - l->slots), s->host, bytes, s->batch.count,
					   s->on_host, l->sample_bytes, &s->batch.device_data,
					   &s->batch.ready_event, why, sizeof(why))) {
			pthread_mutex_lock(&l->mu);
			s->err = -EIO;
			rf_fmt(s->errmsg, sizeof(s->errmsg), "batch %llu to device %d: %s",
			       (unsigned long long)s->batch.index, l->cfg.device, why);
			pthread_mutex_unlock(&l->mu);
		}
	}
	s->batch.prep_ns = atomic_load_explicit(&s->prep_ns, memory_order_relaxed);
	s->batch.read_bytes = atomic_load_explicit(&s->read_bytes, memory_order_relaxed);
	pthread_mutex_lock(&l->mu);
	rf_slot_set_state(s, SLOT_FILLING, SLOT_READY);
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
				size_t j = rf_mix64(l->bad_seen[i]) & (cap - 1);
				while (t[j])
					j = (j + 1) & (cap - 1);
				t[j] = l->bad_seen[i];
			}
		free(l->bad_seen);
		l->bad_seen = t;
		l->bad_cap = cap;
	}
	size_t j = rf_mix64(key) & (l->bad_cap - 1);
	for (; l->bad_seen[j]; j = (j + 1) & (l->bad_cap - 1))
		if (l->bad_seen[j] == key)
			return 0;
	l->bad_seen[j] = key;
	l->bad_n++;
	return 1;
}

int rf_loader_place_failed(rf_loader *l, const rf_place *p, uint64_t sample, int err,
			   const char *reason, rf_place *retry)
{
	char name[1024];
	const char *path = rf_index_name(&l->index, sample, name, sizeof(name));
	pthread_mutex_lock(&l->report_mu);
	if (first_report(l, p->batch / l->batches_per_epoch, sample)) {
		atomic_fetch_add_explicit(&l->st.bad_samples, 1, memory_order_relaxed);
		if (l->cfg.on_sample_error)
			l->cfg.on_sample_error(l->cfg.user, path, err, reason);
		rf_log(l->cfg.log_level, RF_LOG_WARN, "bad sample %s/%s: %s",
		       l->index.root, path, reason);
	}
	pthread_mutex_unlock(&l->report_mu);

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
	rf_slot *s = rf_slot_of(l, p);
	pthread_mutex_lock(&l->mu);
	if (!s->err) {
		s->err = fatal;
		if (fatal == RF_ETOOMANYBAD)
			rf_fmt(s->errmsg, sizeof(s->errmsg), "%d bad samples in a row for batch %llu "
			       "place %u; the last: %s/%s: %s", RF_MAX_ATTEMPTS,
			       (unsigned long long)p->batch, p->index, l->index.root, path, reason);
		else
			rf_fmt(s->errmsg, sizeof(s->errmsg), "%s/%s: %s", l->index.root, path, reason);
	}
	pthread_mutex_unlock(&l->mu);
	rf_loader_place_landed(l, s);
	return 0;
}

/* ---- create / destroy --------------------------------------------------- */

static int alloc_slots(rf_loader *l)
{
	int P = l->cfg.prefetch, B = l->cfg.batch_size;
	/* raw mode: room for B files of raw_max_bytes, each read with the
	 * extra byte that shows growth, rounded to any O_DIRECT alignment */
	size_t data = l->cfg.raw ? (size_t)B * RF_ALIGN_UP(l->cfg.raw_max_bytes + 1, 4096)
				 : RF_ALIGN_UP((size_t)B * l->sample_bytes, 4096);
	size_t meta = RF_ALIGN_UP((size_t)B * (sizeof(int32_t) + 2 * sizeof(uint64_t) +
					       sizeof(uint32_t)), 4096);
	l->slot_mem_len = (size_t)P * (data + meta);
	void *m = mmap(NULL, l->slot_mem_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	l->slot_mem = m;
	l->slots = calloc((size_t)P, sizeof(*l->slots));
	if (!l->slots)
		return -ENOMEM;
	for (int i = 0; i < P; i++) {
		rf_slot *s = &l->slots[i];
		uint8_t *base = l->slot_mem + (size_t)i * (data + meta);
		s->host = s->batch.data = base;
		/* metadata: the 8-byte arrays first, so every array is aligned */
		s->batch.ids = (uint64_t *)(base + data);
		s->batch.offsets = (uint64_t *)(base + data + (size_t)B * sizeof(uint64_t));
		s->batch.labels = (int32_t *)(base + data + (size_t)B * 2 * sizeof(uint64_t));
		s->batch.sizes = (uint32_t *)(base + data + (size_t)B * (2 * sizeof(uint64_t) + sizeof(int32_t)));
		s->raw_cap = data;
		s->batch.height = s->batch.width = l->cfg.raw ? 0 : (uint32_t)l->cfg.crop;
		s->batch.channels = l->cfg.raw ? 0 : 3;
		s->batch.dtype = l->cfg.dtype;
		if (l->index.tokens) { /* a row of seq_len + 1 tokens */
			s->batch.height = s->batch.channels = 1;
			s->batch.width = l->cfg.seq_len + 1;
			s->batch.dtype = l->token_dtype;
		}
		s->batch.layout = l->cfg.layout;
		s->batch.sample_bytes = l->sample_bytes;
		s->state = SLOT_FREE;
		atomic_init(&s->remaining, 0);
		atomic_init(&s->replaced, 0);
	}
	return 0;
}

/* cfg.decode: opens the GPU's JPEG engines (GPU, or AUTO where they exist)
 * and the per-slot masks of host-decoded samples. AUTO without engines is
 * CPU decode, logged once. */
static int open_gpu_decode(rf_loader *l, char *err, size_t errlen)
{
	l->decode = RF_DECODE_CPU;
	if (l->cfg.decode == RF_DECODE_CPU || l->cfg.raw || l->cfg.fetch_only)
		return 0;
	char why[256] = "";
	int ret = -ENOTSUP;
	if (l->cfg.device < 0 || l->cfg.device_convert) {
		rf_fmt(why, sizeof(why), "%s", l->cfg.device < 0 ? "no device (cfg.device = -1)"
								  : "device_convert is set");
	} else {
		l->gpu_group = (uint32_t)RF_MAX(1, RF_MIN(256, l->cfg.io_depth / 4));
		rf_gpu_jpeg_params p = { .device = l->cfg.device, .stream = rf_gpu_stream(l->gpu),
					 .max_group = (int)l->gpu_group, .crop = l->cfg.crop,
					 .dtype = l->cfg.dtype, .layout = l->cfg.layout,
					 .lut32 = &l->output.lut32[0][0], .lut16 = &l->output.lut16[0][0] };
		for (ret = 0; !ret && l->ngpu_dec < RF_GPU_DECODERS; l->ngpu_dec++) {
			rf_gpu_decoder *d = &l->gpu_dec[l->ngpu_dec];
			d->l = l;
			ret = rf_gpu_jpeg_create(&d->jpeg, &p, why, sizeof(why));
		}
	}
	if (ret) {
		if (l->cfg.decode == RF_DECODE_GPU) {
			rf_fmt(err, errlen, "config: decode = gpu: %s", why);
			return ret;
		}
		rf_log(l->cfg.log_level, RF_LOG_WARN, "decode = auto: %s; decoding on the CPU", why);
		return 0;
	}
	if (rf_idq_init(&l->gpu_work, (uint32_t)l->cfg.io_depth))
		return -ENOMEM;
	for (int i = 0; i < l->cfg.prefetch; i++) {
		l->slots[i].on_host = calloc((size_t)l->cfg.batch_size, 1);
		if (!l->slots[i].on_host)
			return -ENOMEM;
		l->slots[i].batch.data = NULL; /* the samples are on the device only */
	}
	l->decode = l->cfg.decode;
	rf_split_init(&l->split, l->cfg.threads, l->ngpu_dec);
	return 0;
}

static int start_ring(rf_loader *l, char *err, size_t errlen)
{
	int r = rf_thread_start(&l->ring_thread, rf_feeder_main, l, "rf-ring");
	if (r) {
		rf_fmt(err, errlen, "cannot start the ring thread: %s", strerror(-r));
		return r;
	}
	l->ring_started = 1;
	pthread_mutex_lock(&l->init_mu);
	while (!l->init_done)
		pthread_cond_wait(&l->init_cv, &l->init_mu);
	pthread_mutex_unlock(&l->init_mu);
	if (l->init_ret)
		rf_fmt(err, errlen, "%s", l->init_err);
	return l->init_ret;
}

/* The index: from the cache when it still matches the source, else by
 * walking (and then the cache is rewritten; failing to write it is logged,
 * not fatal). */
/* Sequential shard access: the shard order, and ranks in consecutive runs. */
static int open_shard_order(rf_loader *l, char *err, size_t errlen)
{
	if (l->cfg.shard_access != RF_SHARD_SEQUENTIAL)
		return 0;
	if (!l->index.members) {
		rf_fmt(err, errlen, "config: shard_access = sequential needs a shard source "
		       "(a folder, list or pattern of .tar shards); '%s' is not one", l->source);
		return RF_ECONFIG;
	}
	l->shard_order = calloc(1, sizeof(*l->shard_order));
	uint32_t block = l->cfg.shuffle_block ? l->cfg.shuffle_block : 1024;
	if (!l->shard_order ||
	    rf_shard_order_init(l->shard_order, &l->index, l->cfg.seed,
				l->order.kind == RF_SAMPLER_SHUFFLE, block)) {
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->order.blocked = 1;
	return 0;
}

/* Token sources: the row type (as stored, unless token_dtype says), and
 * whether the compute threads decompress (.bin.zst shards). */
static int open_tokens(rf_loader *l, char *err, size_t errlen)
{
	const rf_tokens *tk = l->index.tokens;
	rf_dtype stored = tk->width == 2 ? RF_DTYPE_UINT16 : RF_DTYPE_UINT32;
	l->token_dtype = l->cfg.token_dtype ? l->cfg.token_dtype : stored;
	if (l->token_dtype == RF_DTYPE_UINT16 && tk->width == 4) {
		rf_fmt(err, errlen, "config: token_dtype = uint16, but the shards hold uint32 tokens "
		       "(Llama-3's): uint32 or int32");
		return RF_ECONFIG;
	}
	l->token_bytes = l->token_dtype == RF_DTYPE_UINT16 ? 2 : 4;
	l->has_zstd = tk->any_zstd;
	uint64_t max_read = rf_tokens_max_read(tk);
	if (max_read + 8192 > l->cfg.read_pool_bytes / 4) {
		rf_fmt(err, errlen, "config: a window of %u + 1 tokens reads up to %llu bytes, more "
		       "than a quarter of the read pool (read_pool_bytes = %zu)", l->cfg.seq_len,
		       (unsigned long long)max_read, l->cfg.read_pool_bytes);
		return RF_ECONFIG;
	}
	return 0;
}

/* zstd members: is there any, and their dictionary (cfg.zstd_dict, or
 * zstd.dict beside the shards). */
static int open_zstd(rf_loader *l, char *err, size_t errlen)
{
	for (size_t i = 0; l->index.members && i < l->index.count && !l->has_zstd; i++)
		l->has_zstd = (l->index.members[i].flags & RF_MEMBER_ZSTD) != 0;
	char beside[4096];
	const char *path = l->cfg.zstd_dict;
	if (!path && l->has_zstd) {
		rf_fmt(beside, sizeof(beside), "%s/zstd.dict", l->index.root);
		if (access(beside, F_OK) == 0)
			path = beside;
	}
	if (!path)
		return 0;
	char why[512];
	int ret = rf_zstd_dict_load(path, &l->zstd_dict, why, sizeof(why));
	if (ret)
		rf_fmt(err, errlen, "config: zstd_dict: %s", why);
	return ret == RF_EINDEX ? RF_ECONFIG : ret;
}

static int build_index(rf_loader *l, char *err, size_t errlen)
{
	if (l->cfg.seq_len)
		return rf_tokens_build(&l->index, l->source, l->cfg.seq_len, l->cfg.stride, err,
				       errlen);
	const char *cache = l->cfg.index_cache;
	int mode = (l->cfg.raw ? RF_INDEX_RAW : 0) | (l->cfg.include_hidden ? RF_INDEX_HIDDEN : 0) |
		   (l->cfg.source_kind == RF_SOURCE_FILES ? RF_INDEX_FILES : 0) |
		   (l->cfg.source_kind == RF_SOURCE_TAR ? RF_INDEX_TAR : 0);
	char why[512];
	if (cache) {
		/* before the walk: a cache path that names a file of the user's
		 * fails create, rather than the walk and then the write */
		int bad = rf_index_cache_check_target(cache, why, sizeof(why));
		if (bad) {
			rf_fmt(err, errlen, "config: index_cache: %s", why);
			return bad;
		}
		int r = rf_index_cache_load(&l->index, l->source, mode, cache, why, sizeof(why));
		if (r == 0) {
			l->index_cached = 1;
			return 0;
		}
		rf_log(l->cfg.log_level, RF_LOG_INFO, "%s: walking the source", why);
	}
	int ret = rf_index_build_progress(&l->index, l->source, mode, NULL, NULL, l->cfg.log_level,
					  err, errlen);
	if (ret == 0 && cache && rf_index_cache_write(&l->index, l->source, cache, why, sizeof(why)))
		rf_log(l->cfg.log_level, RF_LOG_WARN, "%s", why);
	return ret;
}

RF_API int rf_index_write(const char *source, int raw, const char *path, uint64_t *files,
			  rf_progress_fn progress, void *user, char *err, size_t errlen)
{
	if (!source || !path) {
		rf_fmt(err, errlen, "rf_index_write: source and path must not be NULL");
		return -EINVAL;
	}
	rf_index idx;
	if ((raw & ~(RF_INDEX_RAW | RF_INDEX_HIDDEN | RF_INDEX_FILES | RF_INDEX_TAR)) ||
	    ((raw & RF_INDEX_FILES) && (raw & RF_INDEX_TAR))) {
		rf_fmt(err, errlen, "rf_index_write: raw = %d: not a set of RF_INDEX_* flags", raw);
		return -EINVAL;
	}
	int ret = rf_index_build_progress(&idx, source, raw, progress, user, RF_LOG_WARN, err, errlen);
	if (ret)
		return ret;
	ret = rf_index_cache_write(&idx, source, path, err, errlen);
	if (files)
		*files = idx.count;
	rf_index_free(&idx);
	return ret;
}

RF_API int rf_loader_create(rf_loader **out, const rf_config *cfg, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	if (!out || !cfg) {
		rf_fmt(err, errlen, "rf_loader_create: out and cfg must not be NULL");
		return -EINVAL;
	}
	*out = NULL;
	int ret = rf_config_check(cfg, err, errlen);
	if (ret)
		return ret;

	rf_loader *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	/* Everything destroy() touches is valid from here on. */
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* next_timeout's deadline */
	pthread_cond_init(&l->ready, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&l->init_mu, NULL);
	pthread_cond_init(&l->init_cv, NULL);
	pthread_mutex_init(&l->report_mu, NULL);
	l->wake_fd = -1;
	l->index.root_fd = -1;
	l->pid = getpid();

	l->cfg = *cfg;
	l->source = strdup(cfg->source);
	if (!l->source) {
		ret = -ENOMEM;
		goto fail;
	}
	l->cfg.source = l->source;
	if (cfg->zstd_dict) {
		l->zstd_dict_path = strdup(cfg->zstd_dict);
		if (!l->zstd_dict_path) {
			ret = -ENOMEM;
			goto fail;
		}
		l->cfg.zstd_dict = l->zstd_dict_path;
	}
	if (cfg->index_cache) {
		l->cache_path = strdup(cfg->index_cache);
		if (!l->cache_path) {
			ret = -ENOMEM;
			goto fail;
		}
		l->cfg.index_cache = l->cache_path;
	}
	if (l->cfg.threads == 0)
		l->cfg.threads = RF_MAX(1, rf_cpu_count() - 1);
	uint32_t rank, world;
	ret = rf_ranks_resolve(l->cfg.rank, l->cfg.world_size, &rank, &world, &l->rank_source,
			       err, errlen);
	if (ret)
		goto fail;
	/* Checked before indexing, which may take a while on a large source. */
	rf_state_info resume;
	if (l->cfg.resume_state) {
		ret = rf_state_parse(l->cfg.resume_state, l->cfg.resume_state_len, &resume,
				     err, errlen);
		if (ret)
			goto fail;
	}
	l->cfg.resume_state = NULL; /* the caller's bytes: not kept */
	l->cfg.resume_state_len = 0;

	ret = build_index(l, err, errlen);
	if (!ret)
		rf_index_lost(&l->index, &l->lost_spans, &l->lost_bytes);
	if (ret)
		goto fail;
	ret = l->index.tokens ? open_tokens(l, err, errlen) : open_zstd(l, err, errlen);
	if (ret)
		goto fail;
	if ((l->cfg.raw || l->index.tokens) && !l->has_zstd)
		l->cfg.threads = 0; /* nothing to decode: the ring thread lands raw reads */
	rf_sampler kind = l->cfg.sampler == RF_SAMPLER_SHUFFLE && !l->cfg.shuffle
				  ? RF_SAMPLER_SEQUENTIAL : l->cfg.sampler;
	ret = rf_order_init(&l->order, &l->index, kind, l->cfg.samples_per_epoch, l->cfg.seed,
			    rank, world, l->cfg.rank_tail, err, errlen);
	if (ret)
		goto fail;
	ret = open_shard_order(l, err, errlen);
	if (ret)
		goto fail;
	uint64_t n = rf_index_samples(&l->index), m = l->order.rank_len, bs = (uint64_t)l->cfg.batch_size;
	l->batches_per_epoch = l->cfg.drop_last ? m / bs : (m + bs - 1) / bs;
	if (l->batches_per_epoch == 0) {
		rf_fmt(err, errlen, "source '%s': %llu samples per epoch%s make no full batch of "
		       "%llu (drop_last is set)", l->source, (unsigned long long)m,
		       world > 1 ? " on each rank" : "", (unsigned long long)bs);
		ret = RF_EEMPTY;
		goto fail;
	}
	if (l->cfg.epochs && l->batches_per_epoch > (UINT64_MAX - 1) / (uint64_t)l->cfg.epochs) {
		rf_fmt(err, errlen, "config: %llu batches per epoch x %d epochs do not fit in 64 "
		       "bits", (unsigned long long)l->batches_per_epoch, l->cfg.epochs);
		ret = RF_ECONFIG;
		goto fail;
	}
	l->total_batches = l->cfg.epochs ? l->batches_per_epoch * (uint64_t)l->cfg.epochs
					 : UINT64_MAX;
	/* device_convert: the host holds uint8 HWC, the device the real output */
	rf_output_init(&l->dev_output, l->cfg.crop, l->cfg.dtype, l->cfg.layout, l->cfg.mean, l->cfg.std);
	if (l->cfg.device_convert)
		rf_output_init(&l->output, l->cfg.crop, RF_DTYPE_UINT8, RF_LAYOUT_HWC, l->cfg.mean, l->cfg.std);
	else
		l->output = l->dev_output;
	l->sample_bytes = l->cfg.raw ? 0 : l->index.tokens ? (l->cfg.seq_len + 1ull) * l->token_bytes
			  : rf_output_sample_bytes(&l->output);
	l->window = (rf_window_params){
		.resize = l->cfg.resize, .crop = l->cfg.crop,
		.random_resized_crop = l->cfg.random_resized_crop,
		.scale_lo = l->cfg.rrc_scale[0], .scale_hi = l->cfg.rrc_scale[1],
		.log_ratio_lo = log(l->cfg.rrc_ratio[0]), .log_ratio_hi = log(l->cfg.rrc_ratio[1]),
		.flip_p = l->cfg.flip_p, .seed = l->cfg.seed,
	};
	/* The weights were only needed for the alias table and the fingerprint. */
	l->dataset_fp = rf_state_dataset_fingerprint(&l->index, kind == RF_SAMPLER_WEIGHTED);
	l->output_fp = rf_state_output_fingerprint(l);
	free(l->index.weights);
	l->index.weights = NULL;
	if (cfg->resume_state) {
		ret = rf_state_check_resume(l, &resume, err, errlen);
		if (ret)
			goto fail;
		l->start_batch = resume.next_batch;
	}
	l->next_batch = l->start_batch;
	l->delivered_end = l->start_batch;

	ret = alloc_slots(l);
	if (ret)
		goto fail_nomem;
	if (l->cfg.device >= 0) {
		size_t dev_sample = l->cfg.raw ? 0 : l->index.tokens ? l->sample_bytes
				    : rf_output_sample_bytes(&l->dev_output);
		size_t per_slot = l->cfg.raw ? (size_t)l->cfg.batch_size * RF_ALIGN_UP(l->cfg.raw_max_bytes + 1, 4096)
					     : (size_t)l->cfg.batch_size * dev_sample;
		rf_gpu_params gp = { .device = l->cfg.device, .slots = l->cfg.prefetch,
				     .host = l->slot_mem, .host_len = l->slot_mem_len, .dev_bytes = per_slot,
				     .convert = l->cfg.device_convert, .crop = l->cfg.crop,
				     .dtype = l->cfg.dtype, .layout = l->cfg.layout,
				     .lut32 = &l->dev_output.lut32[0][0], .lut16 = &l->dev_output.lut16[0][0] };
		ret = rf_gpu_create(&l->gpu, &gp, err, errlen);
		if (ret)
			goto fail;
		for (int i = 0; i < l->cfg.prefetch; i++) {
			l->slots[i].batch.device_dtype = l->slots[i].batch.dtype;
			l->slots[i].batch.device_layout = l->cfg.layout;
			l->slots[i].batch.device_sample_bytes = dev_sample;
		}
	}
	ret = open_gpu_decode(l, err, errlen);
	if (ret)
		goto fail;
	l->req = calloc((size_t)l->cfg.io_depth, sizeof(*l->req));
	if (!l->req)
		goto fail_nomem;
	if (rf_idq_init(&l->work, (uint32_t)l->cfg.io_depth) ||
	    rf_idq_init(&l->done, (uint32_t)l->cfg.io_depth))
		goto fail_nomem;
	l->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (l->wake_fd < 0) {
		ret = -errno;
		rf_fmt(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}

	ret = start_ring(l, err, errlen);
	if (ret)
		goto fail;
	l->compute = calloc((size_t)RF_MAX(l->cfg.threads, 1), sizeof(pthread_t));
	if (!l->compute)
		goto fail_nomem;
	for (int i = 0; l->decode != RF_DECODE_CPU && i < l->ngpu_dec; i++) {
		char name[16];
		snprintf(name, sizeof(name), "rf-gpu-%d", i);
		ret = rf_thread_start(&l->gpu_dec[i].thread, rf_gpu_decode_main, &l->gpu_dec[i], name);
		if (ret) {
			rf_fmt(err, errlen, "cannot start GPU decode thread %d: %s", i, strerror(-ret));
			goto fail;
		}
		l->gpu_dec[i].started = 1;
	}
	for (int i = 0; i < l->cfg.threads; i++) {
		char name[16];
		snprintf(name, sizeof(name), "rf-compute-%d", i % 10000);
		ret = rf_thread_start(&l->compute[i], rf_compute_main, l, name);
		if (ret) {
			rf_fmt(err, errlen, "cannot start compute thread %d: %s", i, strerror(-ret));
			goto fail;
		}
		l->ncompute++;
	}
	rf_log(l->cfg.log_level, RF_LOG_INFO, "loader: %llu samples, %d compute threads, "
	       "io_depth %d, %s, %s", (unsigned long long)n, l->cfg.threads, l->cfg.io_depth,
	       atomic_load(&l->st.direct_io) ? "O_DIRECT" : "buffered reads",
	       atomic_load(&l->st.fixed_buffers) ? "fixed buffers" : "unregistered buffers");
	rf_log(l->cfg.log_level, RF_LOG_INFO, "order: rank %u of %u (%s), %llu of %llu positions "
	       "per epoch, %llu batches per epoch, starting at batch %llu", rank,
	       world, l->rank_source, (unsigned long long)m,
	       (unsigned long long)l->order.epoch_len, (unsigned long long)l->batches_per_epoch,
	       (unsigned long long)l->start_batch);
	*out = l;
	return 0;

fail_nomem:
	ret = -ENOMEM;
	if (err && errlen && !err[0])
		rf_fmt(err, errlen, "out of memory");
fail:
	rf_loader_destroy(l);
	return ret;
}

RF_API void rf_loader_destroy(rf_loader *l)
{
	if (!l || rf_loader_forked(l))
		return; /* a child's copy: the threads and the ring are the parent's */
	atomic_store(&l->stop, 1);
	/* Compute threads first: they read from the ring's buffers. */
	if (l->work.ids)
		rf_idq_shutdown(&l->work);
	for (int i = 0; i < l->ncompute; i++)
		pthread_join(l->compute[i], NULL);
	if (l->gpu_work.ids)
		rf_idq_shutdown(&l->gpu_work);
	for (int i = 0; i < l->ngpu_dec; i++) {
		if (l->gpu_dec[i].started)
			pthread_join(l->gpu_dec[i].thread, NULL);
		rf_gpu_jpeg_destroy(l->gpu_dec[i].jpeg); /* waits until the engines no longer read the pool */
	}
	if (l->ring_started) {
		rf_loader_wake_ring(l);
		pthread_join(l->ring_thread, NULL); /* cancels its reads, closes the ring */
	}
	rf_feeder_free(l->feeder); /* the read pool: no thread reads it any more */
	free(l->compute);
	rf_gpu_destroy(l->gpu); /* waits for copies that read the slots */
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	rf_idq_destroy(&l->work);
	rf_idq_destroy(&l->done);
	rf_idq_destroy(&l->gpu_work);
	free(l->req);
	rf_zstd_dict_free(l->zstd_dict);
	free(l->zstd_dict_path);
	for (int i = 0; l->slots && i < l->cfg.prefetch; i++)
		free(l->slots[i].on_host);
	free(l->slots);
	if (l->slot_mem)
		munmap(l->slot_mem, l->slot_mem_len);
	rf_order_free(&l->order);
	if (l->shard_order)
		rf_shard_order_free(l->shard_order);
	free(l->shard_order);
	rf_index_free(&l->index);
	free(l->source);
	free(l->cache_path);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->ready);
	pthread_mutex_destroy(&l->init_mu);
	pthread_cond_destroy(&l->init_cv);
	pthread_mutex_destroy(&l->report_mu);
	free(l->bad_seen);
	free(l);
}

/* ---- the consumer's side ------------------------------------------------ */

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
 * no deadline). -ETIMEDOUT and -EINTR take nothing and leave the position. */
static int next_until(rf_loader *l, rf_batch **out, uint64_t deadline_ns)
{
	if (!l || !out)
		return -EINVAL;
	*out = NULL;
	if (rf_loader_forked(l))
		return RF_EFORKED;
	if (l->failed)
		return l->failed;
	if (l->next_batch >= l->total_batches)
		return RF_EOF;
	uint64_t t0 = rf_now_ns();
	pthread_mutex_lock(&l->mu);
	if (all_lent(l)) {
		pthread_mutex_unlock(&l->mu);
		rf_fmt(l->err_detail, sizeof(l->err_detail), "all %d batch slots are held by the "
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
		l->ns_wait += rf_now_ns() - t0;
		return ret;
	}
	int err = s ? s->err : l->ring_err;
	if (err) {
		rf_fmt(l->err_detail, sizeof(l->err_detail), "%s", s ? s->errmsg : l->ring_errmsg);
		if (s)
			rf_slot_set_state(s, SLOT_READY, SLOT_FREE);
		pthread_mutex_unlock(&l->mu);
		l->failed = err;
		return err;
	}
	rf_slot_set_state(s, SLOT_READY, SLOT_LENT);
	pthread_mutex_unlock(&l->mu);
	s->batch.replaced = atomic_load_explicit(&s->replaced, memory_order_relaxed);
	l->ns_wait += rf_now_ns() - t0;
	l->delivered_batches++;
	l->delivered_samples += s->batch.count;
	l->delivered_replaced += s->batch.replaced;
	l->next_batch++;
	if (s->batch.index >= l->delivered_end)
		l->delivered_end = s->batch.index + 1;
	*out = &s->batch;
	return 0;
}

RF_API int rf_loader_next(rf_loader *l, rf_batch **out)
{
	return next_until(l, out, UINT64_MAX);
}

RF_API int rf_loader_next_timeout(rf_loader *l, rf_batch **out, uint64_t timeout_ns)
{
	uint64_t now = rf_now_ns();
	/* the deadline saturates below UINT64_MAX, which means none */
	uint64_t deadline = timeout_ns < UINT64_MAX - 1 - now ? now + timeout_ns : UINT64_MAX - 1;
	return next_until(l, out, deadline);
}

RF_API void rf_loader_interrupt(rf_loader *l)
{
	if (!l || rf_loader_forked(l))
		return;
	pthread_mutex_lock(&l->mu);
	l->interrupted = 1;
	pthread_cond_broadcast(&l->ready);
	pthread_mutex_unlock(&l->mu);
}

RF_API int rf_batch_wait(const rf_batch *b, void *stream)
{
	if (!b || !b->ready_event)
		return -EINVAL;
	return rf_gpu_stream_wait(b->ready_event, stream);
}

RF_API int rf_batch_sync(const rf_batch *b)
{
	if (!b || !b->ready_event)
		return -EINVAL;
	return rf_gpu_event_sync(b->ready_event);
}

RF_API void rf_batch_release_on(rf_loader *l, rf_batch *b, void *stream)
{
	if (l && b && l->gpu && !rf_loader_forked(l)) {
		rf_slot *s = (rf_slot *)((char *)b - offsetof(rf_slot, batch));
		if (s >= l->slots && s < l->slots + l->cfg.prefetch)
			rf_gpu_mark_release(l->gpu, (int)(s - l->slots), stream);
	}
	rf_batch_release(l, b);
}

RF_API void rf_batch_release(rf_loader *l, rf_batch *b)
{
	if (!l || !b || rf_loader_forked(l))
		return;
	rf_slot *s = (rf_slot *)((char *)b - offsetof(rf_slot, batch));
	if (s < l->slots || s >= l->slots + l->cfg.prefetch)
		return; /* not one of ours */
	pthread_mutex_lock(&l->mu);
	int lent = s->state == SLOT_LENT; /* else released twice, or never handed out */
	if (lent)
		rf_slot_set_state(s, SLOT_LENT, SLOT_FREE);
	pthread_mutex_unlock(&l->mu);
	if (lent)
		rf_loader_wake_ring(l);
}

RF_API int rf_loader_stats(const rf_loader *l, rf_stats *out)
{
	if (!l || !out)
		return -EINVAL;
	if (rf_loader_forked(l))
		return RF_EFORKED;
	memset(out, 0, sizeof(*out));
	out->samples_total = rf_index_samples(&l->index);
	out->batches = l->delivered_batches;
	out->samples = l->delivered_samples;
	out->replaced = l->delivered_replaced;
	out->lost_spans = l->lost_spans;
	out->lost_bytes = l->lost_bytes;
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
	out->index_bytes = rf_index_memory(&l->index);
	if (l->gpu)
		rf_gpu_copy_stats(l->gpu, &out->device_bytes, &out->ns_device_copy);
	out->reads_in_flight = atomic_load_explicit(&l->st.reads_in_flight, memory_order_relaxed);
	rf_loader *m = (rf_loader *)l; /* the locks are not part of the loader's value */
	out->reads_waiting = rf_idq_count(&m->work);
	pthread_mutex_lock(&m->mu);
	for (int i = 0; i < l->cfg.prefetch; i++)
		out->batches_ready += l->slots[i].state == SLOT_READY;
	pthread_mutex_unlock(&m->mu);
	out->index_cached = (uint32_t)l->index_cached;
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

RF_API int rf_loader_order(const rf_loader *l, rf_order_info *out)
{
	if (!l || !out)
		return -EINVAL;
	if (rf_loader_forked(l))
		return RF_EFORKED;
	memset(out, 0, sizeof(*out));
	out->sampler = l->order.kind;
	out->rank_tail = l->order.tail;
	out->rank = l->order.rank;
	out->world_size = l->order.world;
	out->rank_source = l->rank_source;
	out->dataset_samples = rf_index_samples(&l->index);
	out->epoch_samples = l->order.epoch_len;
	out->rank_samples = l->order.rank_len;
	out->batches_per_epoch = l->batches_per_epoch;
	out->next_batch = l->next_batch;
	out->total_batches = l->total_batches;
	out->sampler_bytes = rf_order_memory(&l->order);
	return 0;
}

RF_API const char *rf_loader_error(const rf_loader *l)
{
	return l ? l->err_detail : "";
}
