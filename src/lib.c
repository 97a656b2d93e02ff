/* lib.c - the public face: every function include/ringfeed.h exports, and
 * nothing else. Each one checks what its caller passed (a NULL loader,
 * batch or buffer, a size or a flag out of range, a loader used in a
 * fork()ed child) and returns the documented code before any internal
 * function sees the call; then it calls the internal function in the file
 * of its stage (rfi_*, or the stage's own rf_* name), which may take its
 * arguments as valid. dav1d's src/lib.c is the model: its entry points
 * validate with validate_input_or_ret(), then call internal functions.
 *
 * A new exported function goes here, marked RF_API, with its checks; its
 * work goes into its stage's file. Every other function of the library is
 * hidden (gnu_symbol_visibility: 'hidden' in meson.build), so this file and
 * the header list the same names: `nm -D libringfeed.so` shows them. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h"
#include "decode/image.h"
#include "gpu/gpu.h"
#include "pipeline/config.h"
#include "pipeline/loader_state.h"
#include "pipeline/sample_hook.h"
#include "pipeline/state.h"
#include "source/source.h"
#include "util/util.h"

/* An argument the caller got wrong: return ret at once. The library never
 * prints (ringfeed.h), so unlike dav1d's macro this one logs nothing; the
 * functions with an error buffer say which argument with validate_msg. */
#define validate_input_or_ret(x, ret) \
	do {                          \
		if (!(x))             \
			return ret;   \
	} while (0)

/* The same for functions that return nothing. */
#define validate_input(x)     \
	do {                  \
		if (!(x))     \
			return; \
	} while (0)

/* The same, writing the message (printf's format and arguments after ret)
 * into the caller's err[errlen] first. */
#define validate_input_or_ret_msg(x, ret, err, errlen, ...) \
	do {                                                 \
		if (!(x)) {                                  \
			rfi_fmt(err, errlen, __VA_ARGS__);    \
			return ret;                          \
		}                                            \
	} while (0)

/* A loader does not survive fork(): in the child every call on it returns
 * RF_EFORKED, or does nothing (see rf_loader_destroy in ringfeed.h). */
#define not_forked(l) (!rfi_loader_forked(l))

/* ---- version, formats, ABI, errors -------------------------------------- */

RF_API int rf_version_number(void)
{
	return RF_VERSION_NUMBER;
}

RF_API const char *rf_version_string(void)
{
	return rfi_version_string();
}

RF_API unsigned rf_image_formats(void)
{
	return rfi_image_formats();
}

/* New fields come out of the reserved tails: the structs keep their sizes.
 * rf_config grew twice: from 352 to 368 bytes, for sample_fn and sample_user
 * (16 bytes, more than its 8-byte tail), then to 376 for columns (its last
 * 8 bytes kept reserved, for the next one): RF_ABI_CHECK() tells a caller
 * built against an older header. */
_Static_assert(sizeof(rf_config) == 376, "rf_config changed size: take new fields from reserved");

RF_API int rf_abi_check(size_t config, size_t batch, size_t stats, size_t order, size_t state)
{
	/* the check is the face's own: the sizes of the structs it takes */
	return config == sizeof(rf_config) && batch == sizeof(rf_batch) && stats == sizeof(rf_stats) &&
			       order == sizeof(rf_order_info) && state == sizeof(rf_state_info)
		       ? 0
		       : RF_EABI;
}

RF_API const char *rf_strerror(int err)
{
	return rfi_strerror(err); /* any int: unknown ones are "unknown error" */
}

/* ---- the caller's per-sample step ---------------------------------------- */

RF_API uint64_t rf_sample_rand(rf_sample_view *s)
{
	validate_input_or_ret(s != NULL, 0);
	return rfi_sample_rand(s);
}

RF_API double rf_sample_uniform(rf_sample_view *s)
{
	validate_input_or_ret(s != NULL, 0.0);
	return rfi_sample_uniform(s);
}

/* ---- configuration and the names of its enums ----------------------------- */

RF_API void rf_config_default(rf_config *cfg)
{
	validate_input(cfg != NULL);
	rfi_config_default(cfg);
}

RF_API const char *rf_enum_kind_name(rf_enum_kind kind)
{
	validate_input_or_ret((unsigned)kind < RF_ENUM_KINDS, NULL);
	return rfi_enum_kind_name(kind);
}

RF_API const char *rf_enum_name(rf_enum_kind kind, int value)
{
	validate_input_or_ret((unsigned)kind < RF_ENUM_KINDS, NULL);
	return rfi_enum_name(kind, value);
}

RF_API int rf_enum_value(rf_enum_kind kind, const char *name, int *value)
{
	validate_input_or_ret((unsigned)kind < RF_ENUM_KINDS, -EINVAL);
	validate_input_or_ret(name != NULL && value != NULL, -EINVAL);
	return rfi_enum_value(kind, name, value);
}

RF_API const char *rf_enum_entry(rf_enum_kind kind, size_t i, int *value, int *listed)
{
	validate_input_or_ret((unsigned)kind < RF_ENUM_KINDS, NULL);
	return rfi_enum_entry(kind, i, value, listed); /* value, listed: NULL allowed */
}

/* ---- batches ------------------------------------------------------------ */

RF_API int rf_batch_field(const rf_batch *b, const char *name, rf_field *out)
{
	/* a NULL batch or name delivers no such field (out may be NULL: is it there?) */
	validate_input_or_ret(b != NULL && name != NULL, -ENOENT);
	return rfi_batch_field(b, name, out);
}

/* ---- index cache --------------------------------------------------------- */

RF_API int rf_index_write(const char *source, int raw, const char *path, uint64_t *files,
			  rf_progress_fn progress, void *user, char *err, size_t errlen)
{
	validate_input_or_ret_msg(source != NULL && path != NULL, -EINVAL, err, errlen,
				  "rf_index_write: source and path must not be NULL");
	validate_input_or_ret_msg(
		!(raw & ~(RF_INDEX_RAW | RF_INDEX_HIDDEN | rfi_source_kind_modes())) &&
			__builtin_popcount((unsigned)(raw & rfi_source_kind_modes())) <= 1,
		-EINVAL, err, errlen, "rf_index_write: raw = %d: not a set of RF_INDEX_* flags", raw);
	return rfi_index_write(source, raw, path, files, progress, user, err, errlen);
}

/* ---- the loader: create, next, release, destroy -------------------------- */

/* What both creates check: the pointers, then the config's every field
 * (rfi_config_check names the first one out of range). */
static int validate_create(rf_loader **out, const rf_config *cfg, char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	validate_input_or_ret_msg(out != NULL && cfg != NULL, -EINVAL, err, errlen,
				  "rf_loader_create: out and cfg must not be NULL");
	*out = NULL;
	return rfi_config_check(cfg, err, errlen);
}

RF_API int rf_loader_create(rf_loader **out, const rf_config *cfg, char *err, size_t errlen)
{
	int ret = validate_create(out, cfg, err, errlen);
	return ret ? ret : rfi_loader_create(out, cfg, err, errlen);
}

RF_API int rf_loader_create_cancel(rf_loader **out, const rf_config *cfg,
				   const volatile int *cancel, char *err, size_t errlen)
{
	int ret = validate_create(out, cfg, err, errlen);
	return ret ? ret : rfi_loader_create_cancel(out, cfg, cancel, err, errlen); /* cancel: NULL allowed */
}

RF_API int rf_loader_next(rf_loader *l, rf_batch **out)
{
	validate_input_or_ret(l != NULL && out != NULL, -EINVAL);
	*out = NULL;
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	return rfi_loader_next(l, out);
}

RF_API int rf_loader_next_timeout(rf_loader *l, rf_batch **out, uint64_t timeout_ns)
{
	validate_input_or_ret(l != NULL && out != NULL, -EINVAL);
	*out = NULL;
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	return rfi_loader_next_timeout(l, out, timeout_ns);
}

RF_API void rf_loader_interrupt(rf_loader *l)
{
	validate_input(l != NULL && not_forked(l));
	rfi_loader_interrupt(l);
}

RF_API int rf_batch_wait(const rf_batch *b, void *stream)
{
	validate_input_or_ret(b != NULL && b->ready_event != NULL, -EINVAL); /* no device copy */
	return rfi_batch_wait(b, stream);
}

RF_API int rf_batch_sync(const rf_batch *b)
{
	validate_input_or_ret(b != NULL && b->ready_event != NULL, -EINVAL); /* no device copy */
	return rfi_batch_sync(b);
}

RF_API void rf_batch_release_on(rf_loader *l, rf_batch *b, void *stream)
{
	validate_input(l != NULL && b != NULL && not_forked(l));
	rfi_batch_release_on(l, b, stream); /* b not one of l's: ignored there */
}

RF_API void rf_batch_release(rf_loader *l, rf_batch *b)
{
	validate_input(l != NULL && b != NULL && not_forked(l));
	rfi_batch_release(l, b); /* b not one of l's, or released twice: ignored there */
}

RF_API void rf_loader_destroy(rf_loader *l)
{
	/* a child's copy: the threads and the ring are the parent's */
	validate_input(l != NULL && not_forked(l));
	rfi_loader_destroy(l);
}

/* ---- what the loader reports of itself ----------------------------------- */

RF_API int rf_loader_stats(const rf_loader *l, rf_stats *out)
{
	validate_input_or_ret(l != NULL && out != NULL, -EINVAL);
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	return rfi_loader_stats(l, out);
}

RF_API const char *rf_loader_error(const rf_loader *l)
{
	/* also in a fork()ed child: the message is a copy, and reading it is safe */
	validate_input_or_ret(l != NULL, "");
	return rfi_loader_error(l);
}

RF_API int rf_loader_class_count(const rf_loader *l)
{
	validate_input_or_ret(l != NULL, -EINVAL);
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	return rfi_loader_class_count(l);
}

RF_API const char *rf_loader_class_name(const rf_loader *l, int label)
{
	validate_input_or_ret(l != NULL && not_forked(l) && label >= 0, NULL);
	return rfi_loader_class_name(l, label); /* NULL past the last class */
}

RF_API int rf_loader_sample_name(const rf_loader *l, uint64_t id, char *buf, size_t len)
{
	validate_input_or_ret(l != NULL && (buf != NULL || len == 0), -EINVAL);
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	return rfi_loader_sample_name(l, id, buf, len); /* -ERANGE for an id past the index */
}

/* ---- order, ranks and resume --------------------------------------------- */

RF_API int rf_loader_order(const rf_loader *l, rf_order_info *out)
{
	validate_input_or_ret(l != NULL && out != NULL, -EINVAL);
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	return rfi_loader_order(l, out);
}

RF_API int rf_loader_state_save(const rf_loader *l, void *buf, size_t len)
{
	validate_input_or_ret(l != NULL, -EINVAL);
	validate_input_or_ret(not_forked(l), RF_EFORKED);
	/* buf NULL with len 0 asks for the size; with a len, -ENOSPC there */
	return rfi_loader_state_save(l, buf, len);
}

RF_API int rf_state_parse(const void *buf, size_t len, rf_state_info *out, char *err,
			  size_t errlen)
{
	if (err && errlen)
		err[0] = '\0';
	validate_input_or_ret_msg(buf != NULL && out != NULL, -EINVAL, err, errlen,
				  "rf_state_parse: buf and out must not be NULL");
	return rfi_state_read(buf, len, out, NULL, err, errlen);
}

RF_API int rf_state_seek(void *buf, size_t len, uint64_t next_batch, char *err, size_t errlen)
{
	validate_input_or_ret_msg(buf != NULL, -EINVAL, err, errlen,
				  "rf_state_seek: buf must not be NULL");
	return rfi_state_seek(buf, len, next_batch, err, errlen);
}
