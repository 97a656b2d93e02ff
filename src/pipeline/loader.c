/* loader.c - the loader's life: rf_loader_create() checks and resolves the
 * configuration, opens the source, plans (plan.c: pure), then acquires what
 * the plan says (the order's tables, batch slots, the device path, the
 * requests and queues, the ring thread and the decoders); destroy() gives
 * it all back in the reverse order. The consumer's side (next, release,
 * stats) is consumer.c; the places' bookkeeping, places.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "decode/unzstd.h"
#include "gpu/gpu.h"
#include "gpu/jpeg_gpu.h"
#include "pipeline/config.h"
#include "pipeline/feeder.h"
#include "pipeline/loader_state.h"
#include "pipeline/state.h"
#include "sample/ranks.h"
#include "sample/shard_order.h"
#include "util/cancel.h"
#include "util/util.h"

/* ---- resolve: the configuration, before anything is acquired ------------ */

/* Everything destroy() touches is valid once this returns. */
static rf_loader *loader_new(void)
{
	rf_loader *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
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
	l->src.index.root_fd = -1;
	l->pid = getpid();
	return l;
}

/* The loader's own copy of cfg: its strings duplicated, the caller's
 * resume bytes dropped (parsed into *resume first; the rest of an epoch
 * they carry, into l->rest until rfi_state_resume_at() decides). */
static int copy_config(rf_loader *l, const rf_config *cfg, rf_state_info *resume, char *err,
		       size_t errlen)
{
	l->cfg = *cfg;
	l->cfg.resume_state = NULL; /* the caller's bytes: not kept */
	l->cfg.resume_state_len = 0;
	if (!(l->source = strdup(cfg->source)))
		return -ENOMEM;
	l->cfg.source = l->source;
	if (cfg->zstd_dict && !(l->cfg.zstd_dict = l->zstd_dict_path = strdup(cfg->zstd_dict)))
		return -ENOMEM;
	if (cfg->index_cache && !(l->cfg.index_cache = l->cache_path = strdup(cfg->index_cache)))
		return -ENOMEM;
	if (cfg->cache_dir && !(l->cfg.cache_dir = l->cache_dir = strdup(cfg->cache_dir)))
		return -ENOMEM;
	if (cfg->cache_group && !(l->cfg.cache_group = l->cache_group = strdup(cfg->cache_group)))
		return -ENOMEM;
	if (cfg->columns && !(l->cfg.columns = l->columns = strdup(cfg->columns)))
		return -ENOMEM;
	l->cfg.fields = NULL; /* the caller's string: kept parsed, in l->fields */
	int ret = rfi_fields_parse(&l->fields, cfg->fields, cfg->field_max, err, errlen);
	if (ret)
		return ret;
	l->fields.raw = cfg->raw;
	if (cfg->field_max > (1u << 26) ||
	    (uint64_t)cfg->batch_size * l->fields.n * l->fields.max > (1ull << 36)) {
		rfi_fmt(err, errlen, "config: field_max = %u: at most 64 MiB, and batch_size x fields "
		       "x field_max at most 64 GiB (the address space a slot's fields reserve)",
		       cfg->field_max);
		return RF_ECONFIG;
	}
	/* checked before indexing, which may take a while on a large source */
	if (cfg->resume_state)
		return rfi_state_read(cfg->resume_state, cfg->resume_state_len, resume, &l->rest,
				     err, errlen);
	return 0;
}

/* The source: its kind, and its index from the cache or built. */
static int open_source(rf_loader *l, char *err, size_t errlen)
{
	rf_source_params p = {
		.mode = (l->cfg.raw ? RF_INDEX_RAW : 0) | (l->cfg.include_hidden ? RF_INDEX_HIDDEN : 0) |
			rfi_source_kind_mode(l->cfg.source_kind),
		.seq_len = l->cfg.seq_len, .stride = l->cfg.stride, .cache = l->cfg.index_cache,
		.log_level = l->cfg.log_level, .remote_timeout_ms = l->cfg.remote_timeout_ms,
		/* the scan fills the node cache with what a sample's read asks
		 * for: its member, when random access reads that alone (with
		 * fields a read spans the sample's members; sequential access
		 * reads whole chunks), else the scan keeps nothing there */
		.cache_dir = !l->fields.n && l->cfg.shard_access == RF_SHARD_RANDOM
			     ? l->cfg.cache_dir : NULL,
		.cache_group = l->cfg.cache_group, .cache_bytes = l->cfg.cache_bytes,
		.columns = l->cfg.columns,
	};
	int ret = rfi_source_open(&l->src, l->source, &p, err, errlen);
	if (!ret)
		rfi_index_lost(&l->src.index, &l->lost_spans, &l->lost_bytes);
	if (!ret && l->fields.n)
		ret = rfi_fields_resolve(&l->fields, &l->src, err, errlen);
	return ret;
}

/* ---- acquire: what the plan says ---------------------------------------- */

/* Sequential shard access: the shard order (the order's arithmetic was
 * planned blocked: ranks in consecutive runs). */
static int open_shard_order(rf_loader *l, char *err, size_t errlen)
{
	if (l->cfg.shard_access != RF_SHARD_SEQUENTIAL)
		return 0;
	l->shard_order = calloc(1, sizeof(*l->shard_order));
	uint32_t block = l->cfg.shuffle_block ? l->cfg.shuffle_block : 1024;
	if (!l->shard_order ||
	    rfi_shard_order_init(l->shard_order, &l->src, l->cfg.seed,
				l->order.kind == RF_SAMPLER_SHUFFLE, block)) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The zstd members' dictionary (cfg.zstd_dict, or zstd.dict beside the
 * shards, through their transport: fetched when they are remote), for a
 * kind whose members may use one. */
static int open_zstd_dict(rf_loader *l, char *err, size_t errlen)
{
	if (!l->src.ops->zstd_dict)
		return 0;
	char beside[4096];
	const char *path = l->cfg.zstd_dict;
	int fetched = -1; /* a remote source's zstd.dict, fetched into an anonymous file */
	if (!path && l->src.any_zstd) {
		int ret = rfi_transport_beside(&l->src.index.transport, l->src.index.root,
					      "zstd.dict", 64u << 20, l->cfg.remote_timeout_ms,
					      beside, sizeof(beside), &fetched, err, errlen);
		if (ret)
			return ret;
		path = beside[0] ? beside : NULL;
	}
	if (!path)
		return 0;
	char why[512];
	int ret = rfi_zstd_dict_load(path, &l->zstd_dict, why, sizeof(why));
	if (fetched >= 0)
		close(fetched);
	if (ret)
		rfi_fmt(err, errlen, "config: zstd_dict: %s", why);
	return ret == RF_EINDEX ? RF_ECONFIG : ret;
}

/* The batch slots: prefetch of them in one mapping, each its samples then
 * its metadata (the 8-byte arrays first, so every array is aligned). */
static int alloc_slots(rf_loader *l)
{
	const rf_plan *pl = &l->plan;
	int P = l->cfg.prefetch, B = l->cfg.batch_size;
	size_t data = pl->slot_data, meta = pl->slot_meta;
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
		s->batch.ids = (uint64_t *)(base + data);
		s->batch.offsets = (uint64_t *)(base + data + (size_t)B * sizeof(uint64_t));
		s->batch.labels = (int32_t *)(base + data + (size_t)B * 2 * sizeof(uint64_t));
		s->batch.sizes = (uint32_t *)(base + data + (size_t)B * (2 * sizeof(uint64_t) + sizeof(int32_t)));
		s->raw_cap = data;
		s->batch.height = pl->height;
		s->batch.width = pl->width;
		s->batch.channels = pl->channels;
		s->batch.dtype = pl->dtype;
		s->batch.layout = l->cfg.layout;
		s->batch.sample_bytes = pl->sample_bytes;
		s->state = SLOT_FREE;
		atomic_init(&s->remaining, 0);
		atomic_init(&s->replaced, 0);
		if (rfi_slot_fields_alloc(&s->fields, &l->fields, (uint32_t)B))
			return -ENOMEM;
		if (l->cfg.raw && !(s->room = calloc((size_t)B, sizeof(*s->room))))
			return -ENOMEM;
	}
	return 0;
}

/* cfg.device: the transfer path (pinned slots, device slots, a stream). */
static int open_device(rf_loader *l, char *err, size_t errlen)
{
	if (l->cfg.device < 0)
		return 0;
	rf_gpu_params gp = { .device = l->cfg.device, .slots = l->cfg.prefetch,
			     .host = l->slot_mem, .host_len = l->slot_mem_len,
			     .dev_bytes = l->plan.dev_slot, .convert = l->cfg.device_convert,
			     .crop = l->cfg.crop, .dtype = l->cfg.dtype, .layout = l->cfg.layout,
			     .lut32 = &l->plan.dev_output.lut32[0][0],
			     .lut16 = &l->plan.dev_output.lut16[0][0] };
	int ret = rfi_gpu_create(&l->gpu, &gp, err, errlen);
	if (ret)
		return ret;
	for (int i = 0; i < l->cfg.prefetch; i++) {
		l->slots[i].batch.device_dtype = l->slots[i].batch.dtype;
		l->slots[i].batch.device_layout = l->cfg.layout;
		l->slots[i].batch.device_sample_bytes = l->plan.dev_sample_bytes;
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
		rfi_fmt(why, sizeof(why), "%s", l->cfg.device < 0 ? "no device (cfg.device = -1)"
								  : "device_convert is set");
	} else {
		l->gpu_group = (uint32_t)RF_MAX(1, RF_MIN(256, l->cfg.io_depth / 4));
		rf_gpu_jpeg_params p = { .device = l->cfg.device, .stream = rfi_gpu_stream(l->gpu),
					 .max_group = (int)l->gpu_group, .crop = l->cfg.crop,
					 .dtype = l->cfg.dtype, .layout = l->cfg.layout,
					 .lut32 = &l->plan.output.lut32[0][0], .lut16 = &l->plan.output.lut16[0][0] };
		for (ret = 0; !ret && l->ngpu_dec < RF_GPU_DECODERS; l->ngpu_dec++) {
			rf_gpu_decoder *d = &l->gpu_dec[l->ngpu_dec];
			d->l = l;
			ret = rfi_gpu_jpeg_create(&d->jpeg, &p, why, sizeof(why));
		}
	}
	if (ret) {
		if (l->cfg.decode == RF_DECODE_GPU) {
			rfi_fmt(err, errlen, "config: decode = gpu: %s", why);
			return ret;
		}
		rfi_log(l->cfg.log_level, RF_LOG_WARN, "decode = auto: %s; decoding on the CPU", why);
		return 0;
	}
	if (rfi_idq_init(&l->gpu_work, (uint32_t)l->cfg.io_depth))
		return -ENOMEM;
	for (int i = 0; i < l->cfg.prefetch; i++) {
		l->slots[i].on_host = calloc((size_t)l->cfg.batch_size, 1);
		if (!l->slots[i].on_host)
			return -ENOMEM;
		l->slots[i].batch.data = NULL; /* the samples are on the device only */
	}
	l->decode = l->cfg.decode;
	rfi_split_init(&l->split, l->cfg.threads, l->ngpu_dec);
	return 0;
}

/* The requests (io_depth), the queues between the threads, the ring's
 * wake descriptor. */
static int open_queues(rf_loader *l, char *err, size_t errlen)
{
	l->req = calloc((size_t)l->cfg.io_depth, sizeof(*l->req));
	if (!l->req || rfi_idq_init(&l->work, (uint32_t)l->cfg.io_depth) ||
	    rfi_idq_init(&l->done, (uint32_t)l->cfg.io_depth))
		return -ENOMEM;
	l->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (l->wake_fd < 0) {
		int e = errno;
		rfi_fmt(err, errlen, "eventfd: %s", strerror(e));
		return -e;
	}
	return 0;
}

static int start_ring(rf_loader *l, char *err, size_t errlen)
{
	int r = rfi_thread_start(&l->ring_thread, rfi_feeder_main, l, "rf-ring");
	if (r) {
		rfi_fmt(err, errlen, "cannot start the ring thread: %s", strerror(-r));
		return r;
	}
	l->ring_started = 1;
	pthread_mutex_lock(&l->init_mu);
	while (!l->init_done)
		pthread_cond_wait(&l->init_cv, &l->init_mu);
	pthread_mutex_unlock(&l->init_mu);
	if (l->init_ret)
		rfi_fmt(err, errlen, "%s", l->init_err);
	return l->init_ret;
}

/* The decoders: the GPU decode threads (cfg.decode), the compute pool. */
static int start_decoders(rf_loader *l, char *err, size_t errlen)
{
	l->compute = calloc((size_t)RF_MAX(l->cfg.threads, 1), sizeof(pthread_t));
	if (!l->compute)
		return -ENOMEM;
	for (int i = 0; l->decode != RF_DECODE_CPU && i < l->ngpu_dec; i++) {
		char name[16];
		snprintf(name, sizeof(name), "rf-gpu-%d", i);
		int ret = rfi_thread_start(&l->gpu_dec[i].thread, rfi_gpu_decode_main, &l->gpu_dec[i], name);
		if (ret) {
			rfi_fmt(err, errlen, "cannot start GPU decode thread %d: %s", i, strerror(-ret));
			return ret;
		}
		l->gpu_dec[i].started = 1;
	}
	for (int i = 0; i < l->cfg.threads; i++) {
		char name[16];
		snprintf(name, sizeof(name), "rf-compute-%d", i % 10000);
		int ret = rfi_thread_start(&l->compute[i], rfi_compute_main, l, name);
		if (ret) {
			rfi_fmt(err, errlen, "cannot start compute thread %d: %s", i, strerror(-ret));
			return ret;
		}
		l->ncompute++;
	}
	return 0;
}

/* Everything the plan says, in the order destroy() undoes; resume: the
 * parsed state to resume from, or NULL. */
static int acquire(rf_loader *l, const rf_state_info *resume, char *err, size_t errlen)
{
	int ret = rfi_order_tables(&l->order, &l->src.index, err, errlen);
	if (!ret)
		ret = open_shard_order(l, err, errlen);
	if (!ret)
		ret = open_zstd_dict(l, err, errlen);
	if (ret)
		return ret;
	/* the weights were only needed for the alias table and the fingerprint */
	l->dataset_fp = l->src.ops->fingerprint(&l->src, l->order.kind == RF_SAMPLER_WEIGHTED);
	l->output_fp = rfi_state_output_fingerprint(l);
	free(l->src.index.weights);
	l->src.index.weights = NULL;
	if (resume) {
		ret = rfi_state_check_resume(l, resume, err, errlen);
		if (!ret)
			ret = rfi_state_resume_at(l, resume, err, errlen);
		if (ret)
			return ret;
	}
	l->next_batch = l->start_batch;
	l->delivered_end = l->start_batch;
	if ((ret = alloc_slots(l)) || (ret = open_device(l, err, errlen)) ||
	    (ret = open_gpu_decode(l, err, errlen)) || (ret = open_queues(l, err, errlen)) ||
	    (ret = start_ring(l, err, errlen)))
		return ret;
	return start_decoders(l, err, errlen);
}

/* ---- create / destroy --------------------------------------------------- */

/* src/lib.c checked out and cfg, set *out to NULL and err to "", and
 * passed cfg through rfi_config_check(). */
int rfi_loader_create(rf_loader **out, const rf_config *cfg, char *err, size_t errlen)
{
	int ret;
	rf_loader *l = loader_new();
	if (!l)
		return -ENOMEM;
	rf_state_info resume = { 0 };
	uint32_t rank, world;
	rf_source_facts facts;
	ret = copy_config(l, cfg, &resume, err, errlen);
	if (!ret)
		ret = rfi_ranks_resolve(l->cfg.rank, l->cfg.world_size, &rank, &world, &l->rank_source,
				       err, errlen);
	if (!ret)
		ret = open_source(l, err, errlen);
	if (!ret) {
		rfi_source_facts_of(&l->src, l->source, &facts);
		ret = rfi_plan_make(&l->plan, &l->order, &l->cfg, &facts, rfi_cpu_count(), rank, world,
				   err, errlen);
	}
	if (!ret) {
		l->cfg.threads = l->plan.threads;
		ret = acquire(l, cfg->resume_state ? &resume : NULL, err, errlen);
	}
	if (ret) {
		if (ret == -ENOMEM && err && errlen && !err[0])
			rfi_fmt(err, errlen, "out of memory");
		rfi_redact(err, err, errlen); /* a URL's password stays in the process */
		rfi_loader_destroy(l);
		return ret;
	}
	rfi_log(l->cfg.log_level, RF_LOG_INFO, "loader: %llu samples, %d compute threads, "
	       "io_depth %d, %s, %s", (unsigned long long)facts.samples, l->cfg.threads,
	       l->cfg.io_depth, atomic_load(&l->st.direct_io) ? "O_DIRECT" : "buffered reads",
	       atomic_load(&l->st.fixed_buffers) ? "fixed buffers" : "unregistered buffers");
	rfi_log(l->cfg.log_level, RF_LOG_INFO, "order: rank %u of %u (%s), %llu of %llu positions "
	       "per epoch, %llu batches per epoch, starting at batch %llu", rank, world,
	       l->rank_source, (unsigned long long)l->order.rank_len,
	       (unsigned long long)l->order.epoch_len, (unsigned long long)l->plan.batches_per_epoch,
	       (unsigned long long)l->start_batch);
	*out = l;
	return 0;
}

/* (ringfeed.h) The flag is the creating thread's (util/cancel.h): set-up
 * runs on this thread, so the scan and fetch.c see it without its address
 * passed through every layer. */
int rfi_loader_create_cancel(rf_loader **out, const rf_config *cfg, const volatile int *cancel,
			     char *err, size_t errlen)
{
	rfi_cancel_begin(cancel);
	int ret = rfi_loader_create(out, cfg, err, errlen);
	int called_off = rfi_cancelled();
	rfi_cancel_end();
	if (!called_off)
		return ret;
	if (!ret) { /* called off after the last look: made, and not wanted */
		rfi_loader_destroy(*out);
		*out = NULL;
	}
	if (ret != -ECANCELED)
		rfi_fmt(err, errlen, "rf_loader_create: cancelled");
	return -ECANCELED;
}

/* src/lib.c refused NULL and a fork()ed child's copy (the threads and the
 * ring are the parent's). */
void rfi_loader_destroy(rf_loader *l)
{
	atomic_store(&l->stop, 1);
	/* Compute threads first: they read from the ring's buffers. */
	if (l->work.ids)
		rfi_idq_shutdown(&l->work);
	for (int i = 0; i < l->ncompute; i++)
		pthread_join(l->compute[i], NULL);
	if (l->gpu_work.ids)
		rfi_idq_shutdown(&l->gpu_work);
	for (int i = 0; i < l->ngpu_dec; i++) {
		if (l->gpu_dec[i].started)
			pthread_join(l->gpu_dec[i].thread, NULL);
		rfi_gpu_jpeg_destroy(l->gpu_dec[i].jpeg); /* waits until the engines no longer read the pool */
	}
	if (l->ring_started) {
		rfi_loader_wake_ring(l);
		pthread_join(l->ring_thread, NULL); /* cancels its reads, closes the ring */
	}
	rfi_feeder_free(l->feeder); /* the read pool: no thread reads it any more */
	free(l->compute);
	rfi_gpu_destroy(l->gpu); /* waits for copies that read the slots */
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	rfi_idq_destroy(&l->work);
	rfi_idq_destroy(&l->done);
	rfi_idq_destroy(&l->gpu_work);
	free(l->req);
	rfi_zstd_dict_free(l->zstd_dict);
	free(l->zstd_dict_path);
	for (int i = 0; l->slots && i < l->cfg.prefetch; i++) {
		free(l->slots[i].on_host);
		free(l->slots[i].room);
		rfi_slot_fields_free(&l->slots[i].fields, &l->fields, (uint32_t)l->cfg.batch_size);
	}
	free(l->slots);
	if (l->slot_mem)
		munmap(l->slot_mem, l->slot_mem_len);
	rfi_order_free(&l->order);
	free(l->rest);
	if (l->shard_order)
		rfi_shard_order_free(l->shard_order);
	free(l->shard_order);
	rfi_source_free(&l->src);
	free(l->source);
	free(l->cache_path);
	free(l->cache_dir);
	free(l->cache_group);
	free(l->columns);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->ready);
	pthread_mutex_destroy(&l->init_mu);
	pthread_cond_destroy(&l->init_cv);
	pthread_mutex_destroy(&l->report_mu);
	free(l->bad_seen);
	free(l);
}
