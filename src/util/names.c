/* names.c - the one table of names for rf_config's enum fields
 * (rf_enum_name(), rf_enum_value(), rf_enum_entry()): what the ringfeed
 * command's options parse and list, what the library and the command print,
 * and what the Python package takes (the extension exports this table).
 * Beside errors.c, which names the error codes the same way: static strings
 * for public values, with no state and no dependency on the pipeline. */
#include <errno.h>
#include <string.h>

#include "ringfeed.h"
#include "util/util.h"

typedef struct name {
	const char *name; /* NULL ends a kind's list */
	int value;
	int listed;       /* 1: shown in help texts and "expected a, b or c";
	                   * 0: another spelling, after the listed ones */
} name;

/* Listed names in the order help texts give them (not always the values'
 * order: "uint8, float16 or float32"), then the other spellings. */
static const name dtype[] = {
	{ "uint8", RF_DTYPE_UINT8, 1 },
	{ "float16", RF_DTYPE_FLOAT16, 1 },
	{ "float32", RF_DTYPE_FLOAT32, 1 },
	{ NULL, 0, 0 },
};
static const name layout[] = {
	{ "hwc", RF_LAYOUT_HWC, 1 },
	{ "chw", RF_LAYOUT_CHW, 1 },
	{ NULL, 0, 0 },
};
static const name on_error[] = {
	{ "skip", RF_ON_ERROR_SKIP, 1 },
	{ "fail", RF_ON_ERROR_FAIL, 1 },
	{ NULL, 0, 0 },
};
static const name log_level[] = {
	{ "none", RF_LOG_NONE, 1 },
	{ "error", RF_LOG_ERROR, 1 },
	{ "warn", RF_LOG_WARN, 1 },
	{ "info", RF_LOG_INFO, 1 },
	{ NULL, 0, 0 },
};
/* The command's --io-path spelling first; the Python package's names
 * before this table existed stay accepted. */
static const name io_path[] = {
	{ "auto", RF_IO_AUTO, 1 },
	{ "fixed", RF_IO_URING_FIXED, 1 },
	{ "plain", RF_IO_URING_PLAIN, 1 },
	{ "pread", RF_IO_PREAD, 1 },
	{ "uring_fixed", RF_IO_URING_FIXED, 0 },
	{ "uring_plain", RF_IO_URING_PLAIN, 0 },
	{ NULL, 0, 0 },
};
static const name sampler[] = {
	{ "shuffle", RF_SAMPLER_SHUFFLE, 1 },
	{ "sequential", RF_SAMPLER_SEQUENTIAL, 1 },
	{ "weighted", RF_SAMPLER_WEIGHTED, 1 },
	{ "balanced", RF_SAMPLER_BALANCED, 1 },
	{ NULL, 0, 0 },
};
static const name rank_tail[] = {
	{ "pad", RF_RANK_TAIL_PAD, 1 },
	{ "drop", RF_RANK_TAIL_DROP, 1 },
	{ NULL, 0, 0 },
};
static const name decode[] = {
	{ "cpu", RF_DECODE_CPU, 1 },
	{ "gpu", RF_DECODE_GPU, 1 },
	{ "auto", RF_DECODE_AUTO, 1 },
	{ NULL, 0, 0 },
};
static const name shard_access[] = {
	{ "random", RF_SHARD_RANDOM, 1 },
	{ "sequential", RF_SHARD_SEQUENTIAL, 1 },
	{ NULL, 0, 0 },
};
/* 0 (the default: as the shards store them) is not an option's value on the
 * command line, which simply leaves --token-dtype out; Python names it. */
static const name token_dtype[] = {
	{ "uint16", RF_DTYPE_UINT16, 1 },
	{ "uint32", RF_DTYPE_UINT32, 1 },
	{ "int32", RF_DTYPE_INT32, 1 },
	{ "int64", RF_DTYPE_INT64, 1 },
	{ "stored", 0, 0 },
	{ NULL, 0, 0 },
};
static const name source_kind[] = {
	{ "auto", RF_SOURCE_AUTO, 1 },
	{ "files", RF_SOURCE_FILES, 1 },
	{ "tar", RF_SOURCE_TAR, 1 },
	{ NULL, 0, 0 },
};

static const struct kind {
	const char *field; /* the rf_config field */
	const name *names;
} kinds[] = {
	[RF_ENUM_DTYPE] = { "dtype", dtype },
	[RF_ENUM_LAYOUT] = { "layout", layout },
	[RF_ENUM_ON_ERROR] = { "on_error", on_error },
	[RF_ENUM_LOG_LEVEL] = { "log_level", log_level },
	[RF_ENUM_IO_PATH] = { "io_path", io_path },
	[RF_ENUM_SAMPLER] = { "sampler", sampler },
	[RF_ENUM_RANK_TAIL] = { "rank_tail", rank_tail },
	[RF_ENUM_DECODE] = { "decode", decode },
	[RF_ENUM_SHARD_ACCESS] = { "shard_access", shard_access },
	[RF_ENUM_TOKEN_DTYPE] = { "token_dtype", token_dtype },
	[RF_ENUM_SOURCE_KIND] = { "source_kind", source_kind },
};
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == RF_ENUM_KINDS,
	       "every rf_enum_kind has its row in kinds[]");

/* @return : kind's names, or NULL for a kind this library does not know. */
static const name *names_of(rf_enum_kind kind)
{
	return (unsigned)kind < RF_ENUM_KINDS ? kinds[kind].names : NULL;
}

const char *rfi_enum_kind_name(rf_enum_kind kind)
{
	return (unsigned)kind < RF_ENUM_KINDS ? kinds[kind].field : NULL;
}

const char *rfi_enum_name(rf_enum_kind kind, int value)
{
	for (const name *n = names_of(kind); n && n->name; n++)
		if (n->value == value)
			return n->name;
	return NULL;
}

int rfi_enum_value(rf_enum_kind kind, const char *s, int *value)
{
	const name *n = names_of(kind);
	if (!n)
		return -EINVAL;
	for (; n->name; n++)
		if (!strcmp(n->name, s)) {
			*value = n->value;
			return 0;
		}
	return -ENOENT;
}

const char *rfi_enum_entry(rf_enum_kind kind, size_t i, int *value, int *listed)
{
	const name *n = names_of(kind);
	for (size_t k = 0; n && n[k].name; k++)
		if (k == i) {
			if (value)
				*value = n[k].value;
			if (listed)
				*listed = n[k].listed;
			return n[k].name;
		}
	return NULL;
}
