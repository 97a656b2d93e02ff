/* plan.c - the loader's plan (plan.h): configuration and source in, sizes
 * and counts out, nothing acquired. */
#include "pipeline/plan.h"

#include <math.h>
#include <string.h>

#include "util/util.h"

void rfi_source_facts_of(const rf_source *s, const char *name, rf_source_facts *out)
{
	*out = (rf_source_facts){
		.name = name, .samples = rfi_source_samples(s), .any_zstd = s->any_zstd,
		.token_width = rfi_source_token_width(s), .largest_read = s->ops->largest_read(s),
		.sequential_shards = s->ops->sequential_shards, .kind_stage = s->ops->extract != NULL,
	};
}

/* Token sources: the row type (as stored, unless token_dtype says), and a
 * window's read against the pool. */
static int plan_tokens(rf_plan *p, const rf_config *cfg, const rf_source_facts *src, char *err,
		       size_t errlen)
{
	rf_dtype stored = src->token_width == 2 ? RF_DTYPE_UINT16 : RF_DTYPE_UINT32;
	p->token_width = src->token_width;
	p->token_dtype = cfg->token_dtype ? cfg->token_dtype : stored;
	if (p->token_dtype == RF_DTYPE_UINT16 && src->token_width == 4) {
		rfi_fmt(err, errlen, "config: token_dtype = uint16, but the shards hold uint32 tokens "
		       "(Llama-3's): uint32 or int32");
		return RF_ECONFIG;
	}
	p->token_bytes = p->token_dtype == RF_DTYPE_UINT16 ? 2 : p->token_dtype == RF_DTYPE_INT64 ? 8 : 4;
	if (src->largest_read + 8192 > cfg->read_pool_bytes / 4) {
		rfi_fmt(err, errlen, "config: a window of %u + 1 tokens reads up to %llu bytes, more "
		       "than a quarter of the read pool (read_pool_bytes = %zu)", cfg->seq_len,
		       (unsigned long long)src->largest_read, cfg->read_pool_bytes);
		return RF_ECONFIG;
	}
	return 0;
}

/* The order's arithmetic and the batches it makes. */
static int plan_batches(rf_plan *p, rf_order *order, const rf_config *cfg,
			const rf_source_facts *src, uint32_t rank, uint32_t world, char *err,
			size_t errlen)
{
	rf_sampler kind = cfg->sampler == RF_SAMPLER_SHUFFLE && !cfg->shuffle
				  ? RF_SAMPLER_SEQUENTIAL : cfg->sampler;
	int ret = rfi_order_plan(order, src->samples, kind, cfg->samples_per_epoch, cfg->seed, rank,
				world, cfg->rank_tail, err, errlen);
	if (ret)
		return ret;
	if (cfg->shard_access == RF_SHARD_SEQUENTIAL) {
		if (!src->sequential_shards) {
			rfi_fmt(err, errlen, "config: shard_access = sequential needs a shard source "
			       "whose kind reads its shards in order (a folder, list or pattern of "
			       "shards); '%s' is not one", src->name);
			return RF_ECONFIG;
		}
		order->blocked = 1; /* each rank reads its own run of shards */
	}
	uint64_t m = order->rank_len, bs = (uint64_t)cfg->batch_size;
	p->batches_per_epoch = rfi_rank_batches(m, (uint32_t)bs, cfg->drop_last);
	if (p->batches_per_epoch == 0) {
		rfi_fmt(err, errlen, "source '%s': %llu samples per epoch%s make no full batch of "
		       "%llu (drop_last is set)", src->name, (unsigned long long)m,
		       world > 1 ? " on each rank" : "", (unsigned long long)bs);
		return RF_EEMPTY;
	}
	if (cfg->epochs && p->batches_per_epoch > (UINT64_MAX - 1) / (uint64_t)cfg->epochs) {
		rfi_fmt(err, errlen, "config: %llu batches per epoch x %d epochs do not fit in 64 "
		       "bits", (unsigned long long)p->batches_per_epoch, cfg->epochs);
		return RF_ECONFIG;
	}
	p->total_batches = cfg->epochs ? p->batches_per_epoch * (uint64_t)cfg->epochs : UINT64_MAX;
	return 0;
}

/* What a sample is in a slot: pixels (device_convert: uint8 HWC on the
 * host, the real output on the device), a token row, or raw bytes. */
static void plan_samples(rf_plan *p, const rf_config *cfg, const rf_source_facts *src)
{
	rfi_output_init(&p->dev_output, cfg->crop, cfg->dtype, cfg->layout, cfg->mean, cfg->std);
	if (cfg->device_convert)
		rfi_output_init(&p->output, cfg->crop, RF_DTYPE_UINT8, RF_LAYOUT_HWC, cfg->mean, cfg->std);
	else
		p->output = p->dev_output;
	int tokens = src->token_width != 0;
	p->sample_bytes = cfg->raw ? 0 : tokens ? (cfg->seq_len + 1ull) * p->token_bytes
			  : rfi_output_sample_bytes(&p->output);
	p->dev_sample_bytes = cfg->raw ? 0 : tokens ? p->sample_bytes
			      : rfi_output_sample_bytes(&p->dev_output);
	p->height = p->width = cfg->raw ? 0 : (uint32_t)cfg->crop;
	p->channels = cfg->raw ? 0 : 3;
	p->dtype = cfg->dtype;
	if (tokens) { /* a row of seq_len + 1 tokens */
		p->height = p->channels = 1;
		p->width = cfg->seq_len + 1;
		p->dtype = p->token_dtype;
	}
	p->window = (rf_window_params){
		.resize = cfg->resize, .crop = cfg->crop,
		.random_resized_crop = cfg->random_resized_crop,
		.scale_lo = cfg->rrc_scale[0], .scale_hi = cfg->rrc_scale[1],
		.log_ratio_lo = log(cfg->rrc_ratio[0]), .log_ratio_hi = log(cfg->rrc_ratio[1]),
		.flip_p = cfg->flip_p, .seed = cfg->seed,
	};
}

/* Reads and slots. A quarter of the pool is the largest file, so a big file
 * never waits for the whole pool to drain; raw mode: room for batch_size
 * files of raw_max_bytes, each read with the extra byte that shows growth,
 * rounded to any O_DIRECT alignment. */
static void plan_sizes(rf_plan *p, const rf_config *cfg, const rf_source_facts *src)
{
	size_t B = (size_t)cfg->batch_size;
	p->max_read = cfg->raw ? cfg->raw_max_bytes
		      : src->largest_read ? (size_t)src->largest_read : cfg->read_pool_bytes / 4;
	/* raw samples a kind's stage cuts out of larger reads (Parquet pages):
	 * the reads may be larger than a sample (the stage checks the sample) */
	if (cfg->raw && src->kind_stage)
		p->max_read = RF_MAX(p->max_read, (size_t)src->largest_read);
	size_t raw_place = RF_ALIGN_UP(cfg->raw_max_bytes + 1, 4096);
	p->slot_data = cfg->raw ? B * raw_place : RF_ALIGN_UP(B * p->sample_bytes, 4096);
	p->slot_meta = RF_ALIGN_UP(B * (sizeof(int32_t) + 2 * sizeof(uint64_t) + sizeof(uint32_t)),
				   4096);
	p->dev_slot = cfg->raw ? B * raw_place : B * p->dev_sample_bytes;
}

int rfi_plan_make(rf_plan *p, rf_order *order, const rf_config *cfg, const rf_source_facts *src,
		 int cpus, uint32_t rank, uint32_t world, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	int ret = src->token_width ? plan_tokens(p, cfg, src, err, errlen) : 0;
	if (ret)
		return ret;
	p->threads = cfg->threads ? cfg->threads : RF_MAX(1, cpus - 1);
	if ((cfg->raw || src->token_width) && !src->any_zstd && !src->kind_stage)
		p->threads = 0; /* nothing to decode: the ring thread lands raw reads */
	ret = plan_batches(p, order, cfg, src, rank, world, err, errlen);
	if (ret)
		return ret;
	plan_samples(p, cfg, src);
	plan_sizes(p, cfg, src);
	return 0;
}
