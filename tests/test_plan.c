/* test_plan.c - the loader's plan alone (src/pipeline/plan.c): from a
 * configuration and a source's facts to thread count, order arithmetic,
 * batches, sample, read and slot sizes, with no source on disk, no thread
 * and no allocation; and the configurations it refuses, with why. */
#include <criterion/criterion.h>
#include <string.h>

#include "pipeline/plan.h"

static rf_config config(void)
{
	rf_config c;
	rf_config_default(&c);
	c.source = "/data/x";
	return c;
}

static rf_source_facts images(uint64_t n)
{
	return (rf_source_facts){ .name = "/data/x", .samples = n };
}

static int plan(rf_plan *p, rf_order *o, const rf_config *c, const rf_source_facts *f, char *err)
{
	return rfi_plan_make(p, o, c, f, 8, 0, 1, err, 256);
}

Test(plan, images_center_crop)
{
	rf_config c = config();
	c.batch_size = 10;
	c.crop = 224;
	c.threads = 0;
	rf_source_facts f = images(95);
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.threads, 7, "cores - 1 by default");
	cr_assert_eq(p.batches_per_epoch, 10, "95 samples: 9 full batches and a partial one");
	cr_assert_eq(p.total_batches, 10 * (uint64_t)c.epochs);
	cr_assert_eq(p.sample_bytes, 224 * 224 * 3);
	cr_assert_eq(p.height, 224);
	cr_assert_eq(p.width, 224);
	cr_assert_eq(p.channels, 3);
	cr_assert_eq(p.max_read, c.read_pool_bytes / 4, "a quarter of the pool");
	cr_assert_eq(p.slot_data % 4096, 0);
	cr_assert_geq(p.slot_data, 10 * p.sample_bytes);
	cr_assert_eq(p.slot_meta % 4096, 0);
	cr_assert_eq(o.n, 95);
	cr_assert_eq(o.rank_len, 95);
}

Test(plan, drop_last_and_ranks)
{
	rf_config c = config();
	c.batch_size = 10;
	c.drop_last = 1;
	rf_source_facts f = images(95);
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(rfi_plan_make(&p, &o, &c, &f, 2, 1, 4, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(o.rank_len, 24, "95 over 4 ranks, padded");
	cr_assert_eq(p.batches_per_epoch, 2);
	c.batch_size = 30;
	cr_assert_eq(rfi_plan_make(&p, &o, &c, &f, 2, 1, 4, err, sizeof(err)), RF_EEMPTY);
	cr_assert(strstr(err, "no full batch of 30"), "%s", err);
	cr_assert(strstr(err, "on each rank"), "%s", err);
}

Test(plan, raw_files_need_no_compute_thread)
{
	rf_config c = config();
	c.raw = 1;
	c.batch_size = 4;
	c.raw_max_bytes = 10000;
	rf_source_facts f = images(100);
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.threads, 0, "the ring thread lands raw reads");
	cr_assert_eq(p.sample_bytes, 0);
	cr_assert_eq(p.max_read, 10000);
	cr_assert_eq(p.slot_data, 4 * 12288, "raw_max_bytes + 1, 4 KiB aligned, per place");
	f.any_zstd = 1;
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.threads, 7, "zstd members are decompressed by the pool");
}

Test(plan, token_rows)
{
	rf_config c = config();
	c.seq_len = 1024;
	c.batch_size = 8;
	rf_source_facts f = { .name = "t", .samples = 1000, .token_width = 2,
			      .largest_read = 2050 };
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.token_dtype, RF_DTYPE_UINT16, "as stored");
	cr_assert_eq(p.sample_bytes, 1025 * 2);
	cr_assert_eq(p.height, 1);
	cr_assert_eq(p.channels, 1);
	cr_assert_eq(p.width, 1025);
	cr_assert_eq(p.dtype, RF_DTYPE_UINT16);
	cr_assert_eq(p.max_read, 2050, "the source's largest read");
	cr_assert_eq(p.threads, 0);
	c.token_dtype = RF_DTYPE_INT32;
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.sample_bytes, 1025 * 4);
	f.token_width = 4;
	c.token_dtype = RF_DTYPE_UINT16;
	cr_assert_eq(plan(&p, &o, &c, &f, err), RF_ECONFIG);
	cr_assert(strstr(err, "uint32 tokens"), "%s", err);
	c.token_dtype = 0;
	f.largest_read = c.read_pool_bytes;
	cr_assert_eq(plan(&p, &o, &c, &f, err), RF_ECONFIG);
	cr_assert(strstr(err, "quarter of the read pool"), "%s", err);
}

Test(plan, sequential_shard_access_needs_tar_shards)
{
	rf_config c = config();
	c.shard_access = RF_SHARD_SEQUENTIAL;
	rf_source_facts f = images(100);
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(plan(&p, &o, &c, &f, err), RF_ECONFIG);
	cr_assert(strstr(err, "needs a shard source"), "%s", err);
	f.sequential_shards = 1; /* a kind of shard members (tar) */
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert(o.blocked, "ranks read runs of shards");
}

Test(plan, epochs_that_overflow)
{
	rf_config c = config();
	c.batch_size = 1;
	c.epochs = 1 << 30;
	rf_source_facts f = images(UINT64_C(1) << 40);
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(plan(&p, &o, &c, &f, err), RF_ECONFIG);
	cr_assert(strstr(err, "do not fit in 64 bits"), "%s", err);
	c.epochs = 0;
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.total_batches, UINT64_MAX, "endless");
}

Test(plan, device_convert_keeps_uint8_on_the_host)
{
	rf_config c = config();
	c.crop = 64;
	c.dtype = RF_DTYPE_FLOAT32;
	c.layout = RF_LAYOUT_CHW;
	c.device_convert = 1;
	rf_source_facts f = images(10);
	rf_plan p;
	rf_order o;
	char err[256] = "";
	cr_assert_eq(plan(&p, &o, &c, &f, err), 0, "%s", err);
	cr_assert_eq(p.sample_bytes, 64 * 64 * 3, "uint8 HWC on the host");
	cr_assert_eq(p.dev_sample_bytes, 64 * 64 * 3 * 4, "float32 on the device");
}
