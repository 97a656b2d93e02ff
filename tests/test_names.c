/* test_names.c - the one table of enum names (src/util/names.c): every name
 * of every kind round-trips through rf_enum_value() and rf_enum_name(); the
 * names are those the command and the Python package have always taken, in
 * the order the command's messages list them; and a kind names exactly the
 * values rf_loader_create() accepts in its field. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/config.h"

/* What each kind held when the table was made: the listed names in order
 * ("a|b|c"), then the other spellings ("name=value"). A change here is a
 * change of the command's and the package's interface. */
static const char *const expected[RF_ENUM_KINDS] = {
	[RF_ENUM_DTYPE] = "dtype: uint8=0 float16=2 float32=1",
	[RF_ENUM_LAYOUT] = "layout: hwc=0 chw=1",
	[RF_ENUM_ON_ERROR] = "on_error: skip=0 fail=1",
	[RF_ENUM_LOG_LEVEL] = "log_level: none=0 error=1 warn=2 info=3",
	[RF_ENUM_IO_PATH] = "io_path: auto=0 fixed=1 plain=2 pread=3 (uring_fixed=1 uring_plain=2)",
	[RF_ENUM_SAMPLER] = "sampler: shuffle=0 sequential=1 weighted=2 balanced=3",
	[RF_ENUM_RANK_TAIL] = "rank_tail: pad=0 drop=1",
	[RF_ENUM_DECODE] = "decode: cpu=0 gpu=1 auto=2",
	[RF_ENUM_SHARD_ACCESS] = "shard_access: random=0 sequential=1",
	[RF_ENUM_TOKEN_DTYPE] = "token_dtype: uint16=3 uint32=4 int32=5 int64=6 (stored=0)",
	[RF_ENUM_SOURCE_KIND] = "source_kind: auto=0 files=1 tar=2",
};

/* kind's table in the form of expected[] */
static void describe(rf_enum_kind kind, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "%s:", rf_enum_kind_name(kind));
	int value, listed, open = 0;
	const char *name;
	for (size_t i = 0; (name = rf_enum_entry(kind, i, &value, &listed)); i++) {
		at += (size_t)snprintf(buf + at, len - at, "%s%s=%d", !listed && !open ? " (" : " ",
				       name, value);
		open |= !listed;
	}
	if (open)
		snprintf(buf + at, len - at, ")");
}

Test(names, every_kind_holds_its_names_in_order)
{
	for (int k = 0; k < RF_ENUM_KINDS; k++) {
		char got[512];
		describe((rf_enum_kind)k, got, sizeof(got));
		cr_assert_str_eq(got, expected[k]);
	}
	cr_assert_null(rf_enum_kind_name(RF_ENUM_KINDS));
	cr_assert_null(rf_enum_kind_name((rf_enum_kind)-1));
}

Test(names, every_name_round_trips)
{
	for (int k = 0; k < RF_ENUM_KINDS; k++) {
		int value, listed, seen_other = 0;
		const char *name;
		for (size_t i = 0; (name = rf_enum_entry((rf_enum_kind)k, i, &value, &listed)); i++) {
			int v = -100;
			cr_assert_eq(rf_enum_value((rf_enum_kind)k, name, &v), 0, "%s", name);
			cr_assert_eq(v, value, "%s", name);
			const char *back = rf_enum_name((rf_enum_kind)k, value);
			cr_assert_not_null(back, "%s", name);
			int v2;
			cr_assert_eq(rf_enum_value((rf_enum_kind)k, back, &v2), 0);
			cr_assert_eq(v2, value, "%s names %d, its name %s names %d", name, value, back, v2);
			/* the listed names come first, each value once */
			if (listed) {
				cr_assert(!seen_other, "%s: listed after another spelling", name);
				cr_assert_str_eq(back, name, "a value listed twice");
			}
			seen_other |= !listed;
		}
	}
}

Test(names, unknown_names_kinds_and_values)
{
	int v = 42;
	cr_assert_eq(rf_enum_value(RF_ENUM_DTYPE, "float64", &v), -ENOENT);
	cr_assert_eq(rf_enum_value(RF_ENUM_DTYPE, "Float16", &v), -ENOENT); /* exact */
	cr_assert_eq(rf_enum_value(RF_ENUM_DTYPE, "", &v), -ENOENT);
	cr_assert_eq(rf_enum_value(RF_ENUM_DTYPE, "int32", &v), -ENOENT); /* a token type */
	cr_assert_eq(v, 42, "untouched on error");
	cr_assert_eq(rf_enum_value(RF_ENUM_KINDS, "uint8", &v), -EINVAL);
	cr_assert_eq(rf_enum_value(RF_ENUM_DTYPE, NULL, &v), -EINVAL);
	cr_assert_eq(rf_enum_value(RF_ENUM_DTYPE, "uint8", NULL), -EINVAL);
	cr_assert_null(rf_enum_name(RF_ENUM_DTYPE, RF_DTYPE_UINT16));
	cr_assert_null(rf_enum_name(RF_ENUM_LAYOUT, 2));
	cr_assert_null(rf_enum_name(RF_ENUM_LAYOUT, -1));
	cr_assert_null(rf_enum_name((rf_enum_kind)99, 0));
	cr_assert_null(rf_enum_entry((rf_enum_kind)99, 0, NULL, NULL));
	cr_assert_null(rf_enum_entry(RF_ENUM_LAYOUT, 2, NULL, NULL));
	cr_assert_str_eq(rf_enum_entry(RF_ENUM_LAYOUT, 1, NULL, NULL), "chw");
	cr_assert_str_eq(rf_enum_name(RF_ENUM_IO_PATH, RF_IO_URING_FIXED), "fixed");
	cr_assert_str_eq(rf_enum_name(RF_ENUM_TOKEN_DTYPE, 0), "stored");
}

/* Whether rfi_config_check() refuses value in kind's field as a value (its
 * message "FIELD = VALUE is ..."), other fields set so that it can. */
static int refused_as_value(rf_enum_kind kind, int value)
{
	rf_config c;
	rf_config_default(&c);
	c.source = "/nonexistent";
	int *field = NULL;
	switch (kind) {
	case RF_ENUM_DTYPE: field = (int *)&c.dtype; break;
	case RF_ENUM_LAYOUT: field = (int *)&c.layout; break;
	case RF_ENUM_ON_ERROR: field = (int *)&c.on_error; break;
	case RF_ENUM_LOG_LEVEL: field = (int *)&c.log_level; break;
	case RF_ENUM_IO_PATH: field = (int *)&c.io_path; break;
	case RF_ENUM_SAMPLER: field = (int *)&c.sampler; break;
	case RF_ENUM_RANK_TAIL: field = (int *)&c.rank_tail; break;
	case RF_ENUM_DECODE: field = (int *)&c.decode; break;
	case RF_ENUM_SHARD_ACCESS: field = (int *)&c.shard_access; break;
	case RF_ENUM_TOKEN_DTYPE: field = (int *)&c.token_dtype; c.seq_len = 8; break;
	case RF_ENUM_SOURCE_KIND: field = (int *)&c.source_kind; break;
	case RF_ENUM_KINDS: break;
	}
	cr_assert_not_null(field);
	*field = value;
	char err[512] = "", as_int[64], as_unsigned[64];
	rfi_config_check(&c, err, sizeof(err));
	/* an enum without negative values is unsigned: -1 prints as 4294967295 */
	snprintf(as_int, sizeof(as_int), "%s = %d is", rf_enum_kind_name(kind), value);
	snprintf(as_unsigned, sizeof(as_unsigned), "%s = %u is", rf_enum_kind_name(kind),
		 (unsigned)value);
	return strstr(err, as_int) || strstr(err, as_unsigned);
}

Test(names, a_kind_names_the_values_its_field_takes)
{
	for (int k = 0; k < RF_ENUM_KINDS; k++)
		for (int v = -2; v < 12; v++) {
			int named = rf_enum_name((rf_enum_kind)k, v) != NULL;
			cr_assert_eq(named, !refused_as_value((rf_enum_kind)k, v),
				     "%s = %d: %s by the table, %s by rfi_config_check()",
				     rf_enum_kind_name((rf_enum_kind)k), v, named ? "named" : "unnamed",
				     named ? "refused" : "accepted");
		}
}
