/* rf_lists.h - the one list each of rf_config's fields, rf_stats' counters
 * and ringfeed's error codes, as X-macros (RF_CONFIG_FIELDS(X),
 * RF_STATS_FIELDS(X), RF_ERROR_CODES(X)). Every place that walks one of
 * them is made from it: rf_strerror(), the Python extension's rf_config
 * table, its stats() dict and its error constants, the `bench --json`
 * counters. include/ringfeed.h keeps the structs and the enum written out
 * (they are the ABI and its documentation); tests/test_lists.c fails when
 * the header has a field, a counter or a code that its list lacks, or a
 * list entry the header does not have, and python/tests/test_lists.py when
 * the package misses one. Adding a field, a counter or a code: write it in
 * the header, then here; the compilers and those tests say what else.
 *
 * Macros over the public header's names only (no private symbol), so the
 * Python extension, which sees the public API alone, includes it too. */
#ifndef RF_LISTS_H
#define RF_LISTS_H

#include <stddef.h>

#include "ringfeed.h"

/* ---- rf_config -----------------------------------------------------------
 * X(name, kind, python, state), in the struct's order.
 *
 * kind: how the field's value is held, for the tables made from the list:
 *   INT (int or an enum), U32, U64, SIZE, FLOAT, FLOAT2, FLOAT3 (float[2],
 *   float[3]), STR (a string, a path, copied at create), PTR (a callback,
 *   its user pointer, a buffer: no value a table can print or parse),
 *   RESERVED (must stay zero).
 * python: what the Python package does with it:
 *   KEYWORD  Loader(field=...) (the keyword may be renamed: _keywords.RENAMED)
 *   PACKAGE  the package sets it itself through the config dict, from its
 *            own arguments (source positional, epochs endless, device=)
 *   EXTENSION the extension sets it itself (its bad-sample callback for
 *            on_bad_sample=, resume_state='s bytes)
 *   NONE     not reachable from Python; the reason is beside the entry.
 * state: what a saved state (rf_loader_state_save) does with it:
 *   ORDER    recorded in the state (the order and the rank layout)
 *   OUTPUT   hashed into the output fingerprint: a resume must match it
 *   TOKENS   token sources: the resolved token type is their output fingerprint
 *   DATASET  picks which samples the index holds: the dataset fingerprint
 *            covers what it picks
 *   FREE     not recorded: a resume takes the new config's value */
#define RF_CONFIG_FIELDS(X)                                                                \
	X(source, STR, PACKAGE, DATASET)                                                   \
	X(batch_size, INT, KEYWORD, ORDER)                                                 \
	X(resize, INT, KEYWORD, OUTPUT)                                                    \
	X(crop, INT, KEYWORD, OUTPUT)                                                      \
	X(threads, INT, KEYWORD, FREE)                                                     \
	X(io_depth, INT, KEYWORD, FREE)                                                    \
	X(prefetch, INT, KEYWORD, FREE)                                                    \
	X(seed, U64, KEYWORD, ORDER)                                                       \
	X(shuffle, INT, KEYWORD, ORDER)                                                    \
	X(epochs, INT, PACKAGE, FREE)                                                      \
	X(drop_last, INT, KEYWORD, ORDER)                                                  \
	X(on_error, INT, KEYWORD, ORDER)                                                   \
	X(read_pool_bytes, SIZE, KEYWORD, OUTPUT) /* which files are too large */          \
	X(on_sample_error, PTR, EXTENSION, FREE)    /* on_bad_sample= */                     \
	X(user, PTR, EXTENSION, FREE)                                                        \
	X(log_level, INT, KEYWORD, FREE)                                                   \
	X(no_direct_io, INT, KEYWORD, FREE)                                                \
	X(random_resized_crop, INT, KEYWORD, OUTPUT)                                       \
	X(rrc_scale, FLOAT2, KEYWORD, OUTPUT)                                              \
	X(rrc_ratio, FLOAT2, KEYWORD, OUTPUT)                                              \
	X(flip_p, FLOAT, KEYWORD, OUTPUT)                                                  \
	X(dtype, INT, KEYWORD, OUTPUT)                                                     \
	X(layout, INT, KEYWORD, OUTPUT)                                                    \
	X(mean, FLOAT3, KEYWORD, OUTPUT)                                                   \
	X(std, FLOAT3, KEYWORD, OUTPUT)                                                    \
	X(max_pixels, U64, KEYWORD, OUTPUT)                                                \
	X(no_scaled_decode, INT, KEYWORD, OUTPUT)                                          \
	X(no_region_decode, INT, KEYWORD, OUTPUT)                                          \
	X(verify_full, INT, KEYWORD, OUTPUT)                                               \
	X(in_order, INT, KEYWORD, FREE)                                                    \
	X(io_path, INT, KEYWORD, FREE)                                                     \
	X(pread_threads, INT, KEYWORD, FREE)                                               \
	X(raw, INT, KEYWORD, OUTPUT)                                                       \
	X(raw_max_bytes, SIZE, KEYWORD, OUTPUT) /* which files are too large */            \
	X(index_cache, STR, KEYWORD, FREE)                                                 \
	X(include_hidden, INT, KEYWORD, DATASET)                                           \
	X(sampler, INT, KEYWORD, ORDER)                                                    \
	X(rank, INT, KEYWORD, ORDER)                                                       \
	X(world_size, INT, KEYWORD, ORDER)                                                 \
	X(rank_tail, INT, KEYWORD, ORDER)                                                  \
	X(samples_per_epoch, U64, KEYWORD, ORDER)                                          \
	X(resume_state, PTR, EXTENSION, FREE)     /* resume_state= (bytes) */                \
	X(resume_state_len, SIZE, EXTENSION, FREE) /* its length */                          \
	X(fetch_only, INT, KEYWORD, FREE)                                                  \
	X(device, INT, PACKAGE, FREE)           /* device= ('cuda:N', torch.device) */     \
	X(device_convert, INT, KEYWORD, FREE)                                              \
	X(decode, INT, KEYWORD, FREE)                                                      \
	X(zstd_dict, STR, KEYWORD, FREE)                                                   \
	X(shard_access, INT, KEYWORD, ORDER)                                               \
	X(shuffle_block, U32, KEYWORD, ORDER)                                              \
	X(seq_len, U32, KEYWORD, DATASET)       /* the windows */                          \
	X(stride, U32, KEYWORD, DATASET)        /* the windows */                          \
	X(token_dtype, INT, KEYWORD, TOKENS)                                               \
	X(source_kind, INT, KEYWORD, DATASET)                                              \
	X(field_max, U32, KEYWORD, FREE)                                                   \
	X(fields, STR, KEYWORD, FREE)                                                      \
	X(remote_timeout_ms, U32, KEYWORD, FREE)                                           \
	X(reserved0, RESERVED, NONE, FREE)                                                 \
	X(cache_dir, STR, KEYWORD, FREE)                                                   \
	X(cache_bytes, U64, KEYWORD, FREE)                                                 \
	X(cache_group, STR, KEYWORD, FREE)                                                 \
	/* a per-sample hook runs on the compute threads, where Python's GIL \
	 * would serialise them: the package offers batch_transform instead */            \
	X(sample_fn, PTR, NONE, FREE)                                                      \
	X(sample_user, PTR, NONE, FREE)                                                    \
	X(columns, STR, KEYWORD, DATASET)       /* which column is which */                \
	X(reserved, RESERVED, NONE, FREE)

/* ---- rf_stats ------------------------------------------------------------
 * X(name, kind, key), in the struct's order. kind:
 *   COUNT     a count (uint32_t or uint64_t): Python's stats()[name]
 *   TIME      nanoseconds summed: Python's stats()[key], in seconds
 *   IO_PATH, DECODE   an rf_io_path, an rf_decode: stats()[key] is its
 *             name (rf_enum_name)
 *   RESERVED  zero, for later counters
 * `bench --json` gives every one but RESERVED under "counters", by name. */
#define RF_STATS_FIELDS(X)                                            \
	X(samples_total, COUNT, samples_total)                        \
	X(batches, COUNT, batches)                                    \
	X(samples, COUNT, samples)                                    \
	X(bytes_read, COUNT, bytes_read)                              \
	X(bad_samples, COUNT, bad_samples)                            \
	X(reads_submitted, COUNT, reads_submitted)                    \
	X(ns_consumer_wait, TIME, consumer_wait_s)                    \
	X(ns_decode, TIME, decode_s)                                  \
	X(ns_transform, TIME, transform_s)                            \
	X(ns_collate, TIME, collate_s)                                \
	X(ns_ring_cpu, TIME, ring_cpu_s)                              \
	X(ns_read_wait, TIME, read_wait_s)                            \
	X(threads, COUNT, threads)                                    \
	X(io_depth, COUNT, io_depth)                                  \
	X(direct_io, COUNT, direct_io)                                \
	X(io_path, IO_PATH, io_path)                                  \
	X(dio_align, COUNT, dio_align)                                \
	X(fixed_buffers, COUNT, fixed_buffers)                        \
	X(scaled_decodes, COUNT, scaled_decodes)                      \
	X(decoded_pixels, COUNT, decoded_pixels)                      \
	X(source_pixels, COUNT, source_pixels)                        \
	X(index_bytes, COUNT, index_bytes)                            \
	X(index_cached, COUNT, index_cached)                          \
	X(reads_in_flight, COUNT, reads_in_flight)                    \
	X(reads_waiting, COUNT, reads_waiting)                        \
	X(batches_ready, COUNT, batches_ready)                        \
	X(reserved0, RESERVED, reserved0)                             \
	X(device_bytes, COUNT, device_bytes)                          \
	X(ns_device_copy, TIME, device_copy_s)                        \
	X(decode_path, DECODE, decode)                                \
	X(reserved1, RESERVED, reserved1)                             \
	X(cpu_decodes, COUNT, cpu_decodes)                            \
	X(gpu_decodes, COUNT, gpu_decodes)                            \
	X(ns_gpu_decode, TIME, gpu_busy_s) /* bench --json's name */  \
	X(ns_gpu_host, TIME, gpu_host_s)                              \
	X(replaced, COUNT, replaced)                                  \
	X(lost_spans, COUNT, lost_spans)                              \
	X(lost_bytes, COUNT, lost_bytes)                              \
	X(http_requests, COUNT, http_requests)                        \
	X(http_retries, COUNT, http_retries)                          \
	X(http_errors, COUNT, http_errors)                            \
	X(http_bytes, COUNT, http_bytes)                              \
	X(http_retry_throttled, COUNT, http_retry_throttled)          \
	X(http_retry_server, COUNT, http_retry_server)                \
	X(http_retry_connection, COUNT, http_retry_connection)        \
	X(http_retry_stalled, COUNT, http_retry_stalled)              \
	X(http_connections, COUNT, http_connections)                  \
	X(cache_hits, COUNT, cache_hits)                              \
	X(cache_hit_bytes, COUNT, cache_hit_bytes)                    \
	X(cache_misses, COUNT, cache_misses)                          \
	X(cache_written_bytes, COUNT, cache_written_bytes)            \
	X(cache_waits, COUNT, cache_waits)                            \
	X(cache_evictions, COUNT, cache_evictions)                    \
	X(cache_fill_waits, COUNT, cache_fill_waits)                  \
	X(cache_fill_drops, COUNT, cache_fill_drops)                  \
	X(bytes_fetched, COUNT, bytes_fetched)                        \
	X(bytes_used, COUNT, bytes_used)                              \
	X(reads_shared, COUNT, reads_shared)                          \
	X(reserved, RESERVED, reserved)


/* ---- error codes ----------------------------------------------------------
 * X(code, name, text): the header's RF_E* values (and RF_EOF), the name
 * Python exports them by (ringfeed.ECONFIG, Error.name) and rf_strerror()'s
 * sentence. */
#define RF_ERROR_CODES(X)                                                                      \
	X(RF_EOF, EOF, "end of data: every epoch was delivered")                               \
	X(RF_EBADSAMPLE, EBADSAMPLE, "a sample could not be read or decoded")                  \
	X(RF_ETOOMANYBAD, ETOOMANYBAD,                                                         \
	  "too many bad samples in a row: no replacement could be found")                      \
	X(RF_ENOIOURING, ENOIOURING, "io_uring is unavailable on this system")                 \
	X(RF_ECONFIG, ECONFIG, "invalid configuration value")                                  \
	X(RF_EEMPTY, EEMPTY, "the source holds no usable sample")                              \
	X(RF_EINDEX, EINDEX, "the source is malformed")                                        \
	X(RF_ESTATE, ESTATE, "the saved state is truncated, corrupted or not a state")         \
	X(RF_ESTATEVERSION, ESTATEVERSION,                                                     \
	  "the saved state has a newer format than this library reads")                        \
	X(RF_ESTATEMISMATCH, ESTATEMISMATCH,                                                   \
	  "the saved state belongs to another dataset or configuration")                       \
	X(RF_EFORKED, EFORKED, "the loader belongs to another process (created before a fork)") \
	X(RF_EABI, EABI,                                                                       \
	  "the caller's structs do not match this library's (built against another ringfeed.h)") \
	X(RF_ELOST, ELOST, "part of a shard is damaged or cut: the samples in it are lost")

/* ---- the lists as tables -------------------------------------------------
 * A consumer that walks a list at run time makes its table with these:
 *   static const rf_config_entry t[] = { RF_CONFIG_FIELDS(RF_CONFIG_ENTRY) };
 * (a static copy in each file that makes one; they are small). */
typedef enum rf_field_kind {
	RF_FIELD_INT, RF_FIELD_U32, RF_FIELD_U64, RF_FIELD_SIZE, RF_FIELD_FLOAT,
	RF_FIELD_FLOAT2, RF_FIELD_FLOAT3, RF_FIELD_STR, RF_FIELD_PTR, RF_FIELD_RESERVED,
} rf_field_kind;
typedef enum rf_field_python {
	RF_PY_KEYWORD, RF_PY_PACKAGE, RF_PY_EXTENSION, RF_PY_NONE,
} rf_field_python;
typedef enum rf_field_state {
	RF_STATE_ORDER, RF_STATE_OUTPUT, RF_STATE_TOKENS, RF_STATE_DATASET, RF_STATE_FREE,
} rf_field_state;

typedef struct rf_config_entry {
	const char *name;
	rf_field_kind kind;
	rf_field_python python;
	rf_field_state state;
	size_t offset, size; /* within rf_config */
} rf_config_entry;
#define RF_CONFIG_ENTRY(name, kind, python, state)                                      \
	{ #name, RF_FIELD_##kind, RF_PY_##python, RF_STATE_##state, offsetof(rf_config, name), \
	  sizeof(((rf_config *)0)->name) },

typedef enum rf_stat_kind {
	RF_STAT_COUNT, RF_STAT_TIME, RF_STAT_IO_PATH, RF_STAT_DECODE, RF_STAT_RESERVED,
} rf_stat_kind;
typedef struct rf_stat_entry {
	const char *name, *key;
	rf_stat_kind kind;
	size_t offset, size; /* within rf_stats: 4 or 8 (a reserved array: more) */
} rf_stat_entry;
#define RF_STAT_ENTRY(name, kind, key) \
	{ #name, #key, RF_STAT_##kind, offsetof(rf_stats, name), sizeof(((rf_stats *)0)->name) },

/* @return : counter e of s, whichever its width. */
static inline uint64_t rfi_stat_value(const rf_stats *s, const rf_stat_entry *e)
{
	const char *p = (const char *)s + e->offset;
	return e->size == 4 ? *(const uint32_t *)p : *(const uint64_t *)p;
}

typedef struct rf_error_entry {
	int code;
	const char *name, *text;
} rf_error_entry;
#define RF_ERROR_ENTRY(code, name, text) { code, #name, text },

#endif /* RF_LISTS_H */
