/* config.c - rf_config defaults and the checks rf_loader_create() applies
 * before anything is allocated. */
#include <string.h>

#include "pipeline/config.h"
#include "cache/node_cache.h" /* RF_CACHE_MIN_BYTES */
#include "source/source.h"       /* rfi_source_kind_last */
#include "util/util.h"

void rfi_config_default(rf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->batch_size = 64;
	cfg->resize = 256;
	cfg->crop = 224;
	cfg->threads = 0;
	cfg->io_depth = 256;
	cfg->prefetch = 4;
	cfg->seed = 0;
	cfg->shuffle = 1;
	cfg->epochs = 1;
	cfg->drop_last = 0;
	cfg->on_error = RF_ON_ERROR_SKIP;
	cfg->read_pool_bytes = 64u << 20;
	cfg->log_level = RF_LOG_NONE;
	cfg->random_resized_crop = 0;
	cfg->rrc_scale[0] = 0.08f;
	cfg->rrc_scale[1] = 1.0f;
	cfg->rrc_ratio[0] = 3.0f / 4.0f;
	cfg->rrc_ratio[1] = 4.0f / 3.0f;
	cfg->flip_p = 0.0f;
	cfg->dtype = RF_DTYPE_UINT8;
	cfg->layout = RF_LAYOUT_HWC;
	for (int c = 0; c < 3; c++) {
		cfg->mean[c] = 0.0f;
		cfg->std[c] = 1.0f;
	}
	cfg->max_pixels = 100000000ull;
	cfg->in_order = 1;
	cfg->raw_max_bytes = 256u << 10;
	cfg->device = -1;
	/* Order, ranks and resume. */
	cfg->sampler = RF_SAMPLER_SHUFFLE;
	cfg->samples_per_epoch = 0;
	cfg->rank = -1;
	cfg->world_size = -1;
	cfg->rank_tail = RF_RANK_TAIL_PAD;
	cfg->resume_state = NULL;
	cfg->resume_state_len = 0;
}

#define CHECK_RANGE(field, lo, hi)                                                   \
	do {                                                                         \
		if ((long long)cfg->field < (lo) || (long long)cfg->field > (hi)) {  \
			rfi_fmt(err, errlen, "config: " #field " = %lld is out of range " \
			       "[%lld, %lld]", (long long)cfg->field, (long long)(lo), \
			       (long long)(hi));                                     \
			return RF_ECONFIG;                                           \
		}                                                                    \
	} while (0)

/* Token sources (cfg.seq_len): what goes with them. */
static int check_tokens(const rf_config *cfg, char *err, size_t errlen)
{
	if (!cfg->seq_len) {
		if (cfg->stride || cfg->token_dtype) {
			rfi_fmt(err, errlen, "config: stride and token_dtype apply to token sources "
			       "(seq_len > 0) only");
			return RF_ECONFIG;
		}
		return 0;
	}
	CHECK_RANGE(seq_len, 1, 1 << 24);
	CHECK_RANGE(stride, 0, 1 << 30);
	if (cfg->token_dtype != RF_DTYPE_UINT8 && cfg->token_dtype != RF_DTYPE_UINT16 &&
	    cfg->token_dtype != RF_DTYPE_UINT32 && cfg->token_dtype != RF_DTYPE_INT32 &&
	    cfg->token_dtype != RF_DTYPE_INT64) {
		rfi_fmt(err, errlen, "config: token_dtype = %d is not uint16, uint32, int32, int64 or 0 "
		       "(as stored)", (int)cfg->token_dtype);
		return RF_ECONFIG;
	}
	const char *no = cfg->raw ? "raw" : cfg->decode != RF_DECODE_CPU ? "decode"
			 : cfg->device_convert ? "device_convert" : cfg->index_cache ? "index_cache"
			 : cfg->shard_access != RF_SHARD_RANDOM ? "shard_access"
			 : cfg->source_kind != RF_SOURCE_AUTO ? "source_kind"
			 : cfg->fields && cfg->fields[0] ? "fields" : NULL;
	if (no) {
		rfi_fmt(err, errlen, "config: %s does not apply to token sources (seq_len = %u)", no,
		       cfg->seq_len);
		return RF_ECONFIG;
	}
	if (cfg->sampler == RF_SAMPLER_WEIGHTED || cfg->sampler == RF_SAMPLER_BALANCED) {
		rfi_fmt(err, errlen, "config: token windows have no weights or classes: sampler = "
		       "shuffle or sequential");
		return RF_ECONFIG;
	}
	return 0;
}

/* What every config needs: zero reserved bytes and a source. */
static int check_source(const rf_config *cfg, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(cfg->reserved); i++)
		if (cfg->reserved[i]) {
			rfi_fmt(err, errlen, "config: reserved byte %zu is %u, not 0 (built against a newer "
			       "ringfeed.h than this library, %s? RF_ABI_CHECK() tells)", i, cfg->reserved[i],
			       RF_VERSION_STRING);
			return RF_ECONFIG;
		}
	if (cfg->reserved0) {
		rfi_fmt(err, errlen, "config: reserved0 is %u, not 0 (built against a newer ringfeed.h "
		       "than this library, %s? RF_ABI_CHECK() tells)", cfg->reserved0, RF_VERSION_STRING);
		return RF_ECONFIG;
	}
	if (!cfg->source || !cfg->source[0]) {
		rfi_fmt(err, errlen, "config: source is not set (a directory or a manifest file)");
		return RF_ECONFIG;
	}
	return 0;
}

/* Each number and enum field within its range (device_convert's needs are
 * checked as soon as the fields they name are). */
static int check_ranges(const rf_config *cfg, char *err, size_t errlen)
{
	CHECK_RANGE(batch_size, 1, 1 << 16);
	gid_t gid;
	if (cfg->cache_group && cfg->cache_group[0] && rfi_cache_group_id(cfg->cache_group, &gid)) {
		rfi_fmt(err, errlen, "config: cache_group = '%s': no such group here (the group trusted "
		       "to share cache_dir)", cfg->cache_group);
		return RF_ECONFIG;
	}
	if (cfg->cache_bytes && cfg->cache_bytes < RF_CACHE_MIN_BYTES) {
		rfi_fmt(err, errlen, "config: cache_bytes = %llu: at least %llu (4 MiB), or 0 for the "
		       "default (10 GiB)", (unsigned long long)cfg->cache_bytes,
		       (unsigned long long)RF_CACHE_MIN_BYTES);
		return RF_ECONFIG;
	}
	CHECK_RANGE(resize, 1, 1 << 14);
	CHECK_RANGE(crop, 1, 1 << 14);
	CHECK_RANGE(threads, 0, 1024);
	CHECK_RANGE(io_depth, 1, 4096);
	CHECK_RANGE(prefetch, 1, 1024);
	CHECK_RANGE(shuffle, 0, 1);
	CHECK_RANGE(epochs, 0, 1 << 30);
	CHECK_RANGE(drop_last, 0, 1);
	CHECK_RANGE(on_error, RF_ON_ERROR_SKIP, RF_ON_ERROR_FAIL);
	CHECK_RANGE(log_level, RF_LOG_NONE, RF_LOG_INFO);
	CHECK_RANGE(no_direct_io, 0, 1);
	/* One registered buffer may not exceed 1 GiB. */
	CHECK_RANGE(read_pool_bytes, 1 << 20, 1 << 30);
	CHECK_RANGE(random_resized_crop, 0, 1);
	CHECK_RANGE(dtype, RF_DTYPE_UINT8, RF_DTYPE_FLOAT16);
	CHECK_RANGE(layout, RF_LAYOUT_HWC, RF_LAYOUT_CHW);
	CHECK_RANGE(no_scaled_decode, 0, 1);
	CHECK_RANGE(no_region_decode, 0, 1);
	CHECK_RANGE(verify_full, 0, 1);
	CHECK_RANGE(in_order, 0, 1);
	CHECK_RANGE(io_path, RF_IO_AUTO, RF_IO_PREAD);
	CHECK_RANGE(pread_threads, 0, 1024);
	CHECK_RANGE(raw, 0, 1);
	CHECK_RANGE(include_hidden, 0, 1);
	CHECK_RANGE(fetch_only, 0, 1);
	CHECK_RANGE(device, -1, 1023);
	CHECK_RANGE(device_convert, 0, 1);
	if (cfg->device_convert && (cfg->device < 0 || cfg->raw || cfg->dtype == RF_DTYPE_UINT8)) {
		rfi_fmt(err, errlen, "config: device_convert needs a device, decoded samples and a "
		       "float dtype (it sends uint8 and converts on the device)");
		return RF_ECONFIG;
	}
	CHECK_RANGE(decode, RF_DECODE_CPU, RF_DECODE_AUTO);
	CHECK_RANGE(shard_access, RF_SHARD_RANDOM, RF_SHARD_SEQUENTIAL);
	CHECK_RANGE(source_kind, RF_SOURCE_AUTO, rfi_source_kind_last()); /* the kinds' rows */
	CHECK_RANGE(shuffle_block, 0, 1 << 24);
	return 0;
}

/* Settings that go together or not: sequential shard access and the
 * sampler, GPU decode and what it decodes, raw mode's file size. */
static int check_modes(const rf_config *cfg, char *err, size_t errlen)
{
	if (cfg->shard_access == RF_SHARD_SEQUENTIAL && cfg->sampler != RF_SAMPLER_SHUFFLE &&
	    cfg->sampler != RF_SAMPLER_SEQUENTIAL) {
		rfi_fmt(err, errlen, "config: shard_access = sequential reads shards front to back: "
		       "it takes the shuffle or the sequential sampler, not weighted or balanced");
		return RF_ECONFIG;
	}
	if (cfg->decode == RF_DECODE_GPU && (cfg->device < 0 || cfg->raw || cfg->device_convert ||
					     cfg->fetch_only)) {
		rfi_fmt(err, errlen, "config: decode = gpu needs a device (device = %d) and decoded "
		       "samples (not raw, device_convert or fetch_only)", cfg->device);
		return RF_ECONFIG;
	}
	if (cfg->raw && (cfg->raw_max_bytes < 1 || cfg->raw_max_bytes > (1u << 30))) {
		rfi_fmt(err, errlen, "config: raw_max_bytes = %zu is out of range [1, 1 GiB]",
		       cfg->raw_max_bytes);
		return RF_ECONFIG;
	}
	return 0;
}

/* The caller's per-sample step: it works on decoded pixels in the host
 * batch slot, so every mode without them is refused here, with what to
 * change, rather than leave a hook that is never called. */
static int check_hook(const rf_config *cfg, char *err, size_t errlen)
{
	if (!cfg->sample_fn)
		return 0;
	if (cfg->decode != RF_DECODE_CPU) {
		rfi_fmt(err, errlen, "config: sample_fn works on pixels on the host, and decode = %s "
		       "decodes samples into device memory that the host never sees: use decode = "
		       "cpu with sample_fn (or do the step on the device batch)",
		       rfi_enum_name(RF_ENUM_DECODE, cfg->decode));
		return RF_ECONFIG;
	}
	const char *no = cfg->raw ? "raw (a batch holds the files' bytes, read straight into it)"
			 : cfg->seq_len ? "token sources (seq_len > 0: rows of tokens, no pixels)"
			 : cfg->fetch_only ? "fetch_only (nothing is decoded)" : NULL;
	if (no) {
		rfi_fmt(err, errlen, "config: sample_fn works on decoded pixels: not with %s", no);
		return RF_ECONFIG;
	}
	return 0;
}

/* Decode and augment: the values a sample's pixels depend on. */
static int check_augment(const rf_config *cfg, char *err, size_t errlen)
{
	if (cfg->max_pixels < 1) {
		rfi_fmt(err, errlen, "config: max_pixels must be at least 1");
		return RF_ECONFIG;
	}
	if (!(cfg->flip_p >= 0.0f && cfg->flip_p <= 1.0f)) {
		rfi_fmt(err, errlen, "config: flip_p = %g is not a probability in [0, 1]", cfg->flip_p);
		return RF_ECONFIG;
	}
	if (!(cfg->rrc_scale[0] > 0.0f && cfg->rrc_scale[0] <= cfg->rrc_scale[1] &&
	      cfg->rrc_scale[1] <= 1.0f)) {
		rfi_fmt(err, errlen, "config: rrc_scale = (%g, %g) must satisfy 0 < lo <= hi <= 1",
		       cfg->rrc_scale[0], cfg->rrc_scale[1]);
		return RF_ECONFIG;
	}
	if (!(cfg->rrc_ratio[0] > 0.0f && cfg->rrc_ratio[0] <= cfg->rrc_ratio[1])) {
		rfi_fmt(err, errlen, "config: rrc_ratio = (%g, %g) must satisfy 0 < lo <= hi",
		       cfg->rrc_ratio[0], cfg->rrc_ratio[1]);
		return RF_ECONFIG;
	}
	for (int c = 0; c < 3; c++) {
		if (!(cfg->std[c] != 0.0f && cfg->std[c] == cfg->std[c] && cfg->mean[c] == cfg->mean[c])) {
			rfi_fmt(err, errlen, "config: std[%d] = %g, mean[%d] = %g: std must be non-zero "
			       "and both numbers", c, cfg->std[c], c, cfg->mean[c]);
			return RF_ECONFIG;
		}
	}
	int normalised = 0;
	for (int c = 0; c < 3; c++)
		normalised |= cfg->mean[c] != 0.0f || cfg->std[c] != 1.0f;
	if (normalised && cfg->dtype == RF_DTYPE_UINT8) {
		/* silently ignored, it trained a model on unnormalised pixels */
		rfi_fmt(err, errlen, "config: mean and std normalise float output (dtype = float16 or "
		       "float32); with dtype = uint8 they would be ignored: set a float dtype, or "
		       "leave them at 0 and 1");
		return RF_ECONFIG;
	}
	return 0;
}

/* Order, ranks and resume; rank and world_size are checked with
 * the environment they may come from (sample/ranks.c). */
static int check_order(const rf_config *cfg, char *err, size_t errlen)
{
	CHECK_RANGE(sampler, RF_SAMPLER_SHUFFLE, RF_SAMPLER_BALANCED);
	CHECK_RANGE(rank_tail, RF_RANK_TAIL_PAD, RF_RANK_TAIL_DROP);
	int weighted = cfg->sampler == RF_SAMPLER_WEIGHTED || cfg->sampler == RF_SAMPLER_BALANCED;
	if (weighted && !cfg->shuffle) {
		rfi_fmt(err, errlen, "config: shuffle = 0 asks for index order, which contradicts "
		       "sampler = %s", rfi_enum_name(RF_ENUM_SAMPLER, cfg->sampler));
		return RF_ECONFIG;
	}
	if (cfg->samples_per_epoch && !weighted) {
		rfi_fmt(err, errlen, "config: samples_per_epoch = %llu applies to the weighted and "
		       "balanced samplers only (the others take each sample once per epoch)",
		       (unsigned long long)cfg->samples_per_epoch);
		return RF_ECONFIG;
	}
	if (cfg->samples_per_epoch > (1ull << 48)) {
		rfi_fmt(err, errlen, "config: samples_per_epoch = %llu is out of range [0, 2^48]",
		       (unsigned long long)cfg->samples_per_epoch);
		return RF_ECONFIG;
	}
	if (!cfg->resume_state && cfg->resume_state_len) {
		rfi_fmt(err, errlen, "config: resume_state_len = %zu but resume_state is NULL",
		       cfg->resume_state_len);
		return RF_ECONFIG;
	}
	return 0;
}

static int check_crop(const rf_config *cfg, char *err, size_t errlen)
{
	if (!cfg->raw && !cfg->random_resized_crop && cfg->crop > cfg->resize) {
		rfi_fmt(err, errlen, "config: crop = %d is larger than resize = %d "
		       "(the center crop must fit in the resized image)", cfg->crop, cfg->resize);
		return RF_ECONFIG;
	}
	return 0;
}

/* The batch slots, all prefetch of them, within 64 GiB. */
static int check_memory(const rf_config *cfg, char *err, size_t errlen)
{
	unsigned long long elem = cfg->dtype == RF_DTYPE_FLOAT32 ? 4 : cfg->dtype == RF_DTYPE_FLOAT16 ? 2 : 1;
	unsigned long long slot_bytes = (unsigned long long)cfg->batch_size * elem *
					(unsigned long long)cfg->crop * (unsigned long long)cfg->crop * 3ull;
	if (cfg->raw)
		slot_bytes = (unsigned long long)cfg->batch_size * (cfg->raw_max_bytes + 4096);
	if (cfg->seq_len) /* a row of seq_len + 1 tokens, at most 4 bytes each */
		slot_bytes = (unsigned long long)cfg->batch_size * (cfg->seq_len + 1ull) * 4;
	if (slot_bytes * (unsigned long long)cfg->prefetch > (64ull << 30)) {
		rfi_fmt(err, errlen, "config: prefetch x batch_size x crop^2 x 3 x element size = %llu bytes "
		       "exceeds the 64 GiB limit", slot_bytes * (unsigned long long)cfg->prefetch);
		return RF_ECONFIG;
	}
	return 0;
}

int rfi_config_check(const rf_config *cfg, char *err, size_t errlen)
{
	/* In this order: the first problem found is the one reported. */
	static int (*const checks[])(const rf_config *, char *, size_t) = {
		check_source, check_ranges, check_modes, check_hook, check_augment,
		check_order, check_crop, check_tokens, check_memory,
	};
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		int ret = checks[i](cfg, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}
