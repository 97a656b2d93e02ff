/* test_config.c - rf_loader_create() refuses bad config values, a missing
 * source and an empty dataset with a message that names the problem; the
 * defaults are documented values. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rf_config.h"
#include "testutil.h"

static char *dir;

static void setup(void) { dir = tu_tree("cfg", 1, 3); }
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

static void refused(const rf_config *cfg, int want, const char *needle)
{
	rf_loader *l = (rf_loader *)0x1;
	char err[512] = "";
	int r = rf_loader_create(&l, cfg, err, sizeof(err));
	cr_assert_eq(r, want, "want %d got %d (%s)", want, r, err);
	cr_assert_null(l, "out is NULL on failure");
	cr_assert(strstr(err, needle), "message '%s' should mention '%s'", err, needle);
}

Test(config, defaults)
{
	rf_config c;
	memset(&c, 0xab, sizeof(c));
	rf_config_default(&c);
	cr_assert_eq(c.batch_size, 64);
	cr_assert_eq(c.resize, 256);
	cr_assert_eq(c.crop, 224);
	cr_assert_eq(c.io_depth, 256);
	cr_assert_eq(c.threads, 0);
	cr_assert_eq(c.epochs, 1);
	cr_assert_eq(c.shuffle, 1);
	cr_assert_eq(c.on_error, RF_ON_ERROR_SKIP);
	cr_assert_eq(c.log_level, RF_LOG_NONE);
	cr_assert_null(c.source);
	cr_assert_eq(c.sampler, RF_SAMPLER_SHUFFLE);
	cr_assert_eq(c.samples_per_epoch, 0);
	cr_assert_eq(c.rank, -1, "unset: from the launcher's environment");
	cr_assert_eq(c.world_size, -1);
	cr_assert_eq(c.rank_tail, RF_RANK_TAIL_PAD);
	cr_assert_null(c.resume_state);
	cr_assert_eq(c.resume_state_len, 0);
	for (size_t i = 0; i < sizeof(c.reserved); i++)
		cr_assert_eq(c.reserved[i], 0);
}

Test(config, bad_values, .init = setup, .fini = teardown)
{
	rf_config c;
#define BAD(field, value)                                   \
	do {                                                \
		tu_config(&c, dir);                         \
		c.field = value;                            \
		refused(&c, RF_ECONFIG, #field);            \
	} while (0)
	BAD(batch_size, 0);
	BAD(batch_size, -3);
	BAD(resize, 0);
	BAD(crop, 0);
	BAD(threads, -1);
	BAD(io_depth, 0);
	BAD(io_depth, 4097);
	BAD(prefetch, 0);
	BAD(epochs, -1);
	BAD(shuffle, 2);
	BAD(drop_last, 7);
	BAD(on_error, 5);
	BAD(log_level, 9);
	BAD(read_pool_bytes, 1000);
#undef BAD
	tu_config(&c, dir);
	c.crop = 300;
	c.resize = 256;
	refused(&c, RF_ECONFIG, "crop = 300 is larger than resize = 256");
	tu_config(&c, NULL);
	refused(&c, RF_ECONFIG, "source");
	cr_assert_eq(rf_loader_create(NULL, &c, NULL, 0), -EINVAL);
}

Test(config, missing_and_empty_sources, .init = setup, .fini = teardown)
{
	rf_config c;
	tu_config(&c, "/nonexistent/ringfeed-data");
	refused(&c, -ENOENT, "/nonexistent/ringfeed-data");
	char *e = tu_tmpdir("emptysrc");
	tu_config(&c, e);
	refused(&c, RF_EEMPTY, "no samples");
	tu_rmrf(e);
	free(e);
	/* 3 samples cannot make a full batch of 8 when drop_last is set */
	tu_config(&c, dir);
	c.drop_last = 1;
	refused(&c, RF_EEMPTY, "drop_last");
}

Test(config, strerror_names_codes)
{
	cr_assert(strstr(rf_strerror(RF_ECONFIG), "configuration"));
	cr_assert(strstr(rf_strerror(RF_EOF), "end"));
	cr_assert_str_eq(rf_strerror(-ENOENT), "No such file or directory");
	cr_assert_not_null(rf_strerror(-123456));
	cr_assert_eq(rf_version_number(), RF_VERSION_NUMBER);
	cr_assert(strstr(rf_version_string(), RF_VERSION_STRING));
	cr_assert(strstr(rf_version_string(), "cuda"));
	cr_assert(strstr(rf_version_string(), RF_HAVE_PNG ? "png" : "images: jpeg"));
}

/* mean and std normalise float output; with uint8 output they were silently
 * ignored (a model trained on pixels it was not meant to see). */
Test(config, mean_and_std_with_uint8_output_are_refused, .init = setup, .fini = teardown)
{
	rf_config c;
	tu_config(&c, dir);
	c.mean[1] = 0.456f;
	refused(&c, RF_ECONFIG, "with dtype = uint8 they would be ignored");
	tu_config(&c, dir);
	c.std[2] = 0.225f;
	refused(&c, RF_ECONFIG, "with dtype = uint8 they would be ignored");
	tu_config(&c, dir);
	c.mean[0] = 0.485f;
	c.dtype = RF_DTYPE_FLOAT16;
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
	rf_loader_destroy(l);
}
