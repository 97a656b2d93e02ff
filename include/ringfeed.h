/*
 * ringfeed.h - the one public header of libringfeed.
 *
 * ringfeed feeds training loops: it reads samples from local storage with
 * io_uring, decodes and transforms them on a small thread pool, and hands out
 * collated batches in order.
 *
 * Conventions (they hold for every function below):
 * - Functions returning int return 0 (or a count) on success and a negative
 *   errno-style code on failure (-ENOENT, -EINVAL, ... or one of the RF_E*
 *   codes below). rf_strerror() names any of them.
 * - The library never aborts, never exits and never prints, unless the caller
 *   set cfg.log_level or cfg.on_sample_error.
 * - Threads: a loader runs exactly 1 + cfg.threads threads of its own (the
 *   ring thread and the compute pool), created by rf_loader_create() and
 *   joined by rf_loader_destroy(). A loader is driven by one consumer thread:
 *   rf_loader_next(), rf_batch_release() and rf_loader_state functions must
 *   not be called concurrently on the same loader.
 */
#ifndef RINGFEED_H
#define RINGFEED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(RF_BUILDING_LIBRARY)
#define RF_API __attribute__((visibility("default")))
#else
#define RF_API
#endif

#define RF_VERSION_MAJOR 0
#define RF_VERSION_MINOR 1
#define RF_VERSION_PATCH 0
#define RF_VERSION_STRING "0.1.0"
#define RF_VERSION_NUMBER \
	(RF_VERSION_MAJOR * 10000 + RF_VERSION_MINOR * 100 + RF_VERSION_PATCH)

/* True when the library in use is at least major.minor (the header checks
 * itself at compile time; rf_version_number() checks the loaded library). */
#define RF_CHECK_VERSION(major, minor) \
	(RF_VERSION_NUMBER >= (major) * 10000 + (minor) * 100)

/* @return : RF_VERSION_NUMBER of the library actually loaded. */
RF_API int rf_version_number(void);

/* @return : a static string: the version, and whether CUDA support is built in
 * and a device was found, e.g. "0.1.0 (cuda: built, 1 device)". */
RF_API const char *rf_version_string(void);

/* ---- errors -------------------------------------------------------------
 * Negative errno values are used as they are. ringfeed's own codes sit below
 * -4096 so they never collide with errno. Values are stable. */
enum {
	RF_EOF = 1,              /* rf_loader_next(): every epoch was delivered */
	RF_EBADSAMPLE = -5001,   /* a sample could not be read or decoded (on_error = fail) */
	RF_ETOOMANYBAD = -5002,  /* replacements for one place ran out (dataset mostly bad) */
	RF_ENOIOURING = -5003,   /* io_uring is unavailable on this system */
	RF_ECONFIG = -5004,      /* a config value is out of range (detail in rf_loader_error) */
	RF_EEMPTY = -5005,       /* the source holds no usable sample */
	RF_EINDEX = -5006,       /* the source (directory or manifest) is malformed */
};

/* @return : a static string naming err (a negative errno, an RF_E* code or
 * RF_EOF). Never NULL. */
RF_API const char *rf_strerror(int err);

/* ---- configuration ------------------------------------------------------ */

typedef enum rf_on_error {
	RF_ON_ERROR_SKIP = 0, /* count, report, replace the sample, keep going */
	RF_ON_ERROR_FAIL = 1, /* rf_loader_next() returns RF_EBADSAMPLE naming the file */
} rf_on_error;

typedef enum rf_log_level {
	RF_LOG_NONE = 0, /* default: the library prints nothing */
	RF_LOG_ERROR = 1,
	RF_LOG_WARN = 2, /* fallbacks taken, bad samples */
	RF_LOG_INFO = 3, /* set-up choices */
} rf_log_level;

/* Element type of batch data. Values are stable. */
typedef enum rf_dtype {
	RF_DTYPE_UINT8 = 0,   /* 0..255, as decoded */
	RF_DTYPE_FLOAT32 = 1, /* (v / 255 - mean[c]) / std[c] */
	RF_DTYPE_FLOAT16 = 2, /* the same, as IEEE 754 half (uint16_t bits) */
} rf_dtype;

/* Order of a sample's values. Values are stable. */
typedef enum rf_layout {
	RF_LAYOUT_HWC = 0, /* row, column, channel (RGB interleaved) */
	RF_LAYOUT_CHW = 1, /* channel planes R, G, B, each row by row */
} rf_layout;

/* How files are read. Every path gives byte-identical batches. Values are stable. */
typedef enum rf_io_path {
	RF_IO_AUTO = 0,        /* the best the kernel offers, falling back as needed (default) */
	RF_IO_URING_FIXED = 1, /* io_uring, open -> read -> close chained on direct descriptors */
	RF_IO_URING_PLAIN = 2, /* io_uring with ordinary descriptors (open, then read + close) */
	RF_IO_PREAD = 3,       /* no io_uring: a pool of threads calling open / pread / close */
} rf_io_path;

/* Called once per bad sample, from one of the loader's threads, never two at
 * a time for one loader. path and reason are valid during the call only.
 * err is the negative code behind it. */
typedef void (*rf_sample_error_fn)(void *user, const char *path, int err,
				   const char *reason);

typedef struct rf_config {
	/* Where samples come from: a directory in ImageFolder layout (class =
	 * first-level subfolder, labels in sorted class order, *.jpg / *.jpeg
	 * in any case, nested folders below a class allowed) or a manifest file
	 * (one "path<TAB>label" per line; relative paths are resolved against
	 * the manifest's folder). The string is copied at create time. */
	const char *source;

	int batch_size;     /* samples per batch; default 64 */
	int resize;         /* Resize: shorter side to this many pixels; default 256 */
	int crop;           /* output is crop x crop: CenterCrop after Resize, or the
	                     * RandomResizedCrop size; default 224 */
	int threads;        /* compute threads; 0 = cores - 1, at least 1 (default 0) */
	int io_depth;       /* reads in flight at most; default 256 (1..4096) */
	int prefetch;       /* batch slots: batches being filled or waiting; default 4 */
	uint64_t seed;      /* shuffle seed; default 0 */
	int shuffle;        /* 1 = new seeded order each epoch (default), 0 = index order */
	int epochs;         /* epochs to deliver; 0 = endless; default 1 */
	int drop_last;      /* 1 = drop the last partial batch of an epoch; default 0 */
	rf_on_error on_error;          /* default RF_ON_ERROR_SKIP */
	size_t read_pool_bytes;        /* bytes of registered read buffers; default 64 MiB.
	                                * A file larger than a quarter of it is a bad sample. */
	rf_sample_error_fn on_sample_error; /* optional; see rf_sample_error_fn */
	void *user;                    /* passed to on_sample_error */
	rf_log_level log_level;        /* messages to stderr; default RF_LOG_NONE */
	int no_direct_io;              /* 1 = buffered reads instead of O_DIRECT; default 0 */

	/* Decode and augment. Transforms are those of torchvision, fused into
	 * one pass that writes the batch slot: bilinear resampling at pixel
	 * centres, antialiased (the triangle widened to the factor) when
	 * shrinking by more than 2x. Random choices depend only on (seed,
	 * epoch, sample id). EXIF orientation is ignored, as torchvision
	 * ignores it. Grayscale, CMYK and YCCK JPEGs become RGB. */
	int random_resized_crop;       /* 1 = RandomResizedCrop(crop) instead of
	                                * Resize(resize) + CenterCrop(crop); default 0 */
	float rrc_scale[2];            /* area fraction range; default {0.08, 1} */
	float rrc_ratio[2];            /* aspect ratio range; default {3/4, 4/3} */
	float flip_p;                  /* horizontal flip probability; default 0 */
	rf_dtype dtype;                /* default RF_DTYPE_UINT8 */
	rf_layout layout;              /* default RF_LAYOUT_HWC */
	float mean[3], std[3];         /* per channel, for float output; default 0 and 1 */
	uint64_t max_pixels;           /* larger images are bad samples; default 100,000,000 */
	int no_scaled_decode;          /* 1 = always decode at full scale; default 0 */
	int no_region_decode;          /* 1 = decode every row and column; default 0 */
	int in_order;                  /* 1 = batches in order (default); 0 = as they complete */

	/* I/O engine. */
	rf_io_path io_path;            /* default RF_IO_AUTO; forcing a path that the system
	                                * lacks makes create fail (RF_ENOIOURING) */
	int pread_threads;             /* threads of the RF_IO_PREAD path; 0 = 16 */

	/* Raw mode: no decode. The index takes every regular file below the
	 * source whatever its name (labels by first-level folder as in
	 * ImageFolder; files directly in the source folder get label -1), and a
	 * batch holds the files' bytes one after the other, each starting at a
	 * multiple of the O_DIRECT alignment, read straight into the batch (no
	 * copy). No compute threads are started. */
	int raw;                       /* 1 = raw mode; default 0 */
	size_t raw_max_bytes;          /* largest file in raw mode; default 256 KiB */

	/* Index cache (see rf_index_write()): loaded instead of walking the
	 * source when it was built from the same source in the same mode and no
	 * directory (or manifest) changed since; otherwise the source is walked
	 * and the cache rewritten. NULL (default): always walk. Copied at create. */
	const char *index_cache;

	uint8_t reserved[160];         /* zeroed by rf_config_default(); keep zero */
} rf_config;

/* Fills every field of cfg with its default. Always call it first, then edit
 * the fields you need: fields added later get sensible defaults this way. */
RF_API void rf_config_default(rf_config *cfg);

/* ---- batches ------------------------------------------------------------ */

typedef struct rf_batch {
	uint64_t index;      /* batch number since the start, over all epochs */
	uint32_t epoch;      /* epoch this batch belongs to */
	uint32_t count;      /* samples in this batch (< batch_size only for a last partial batch) */
	uint32_t height, width, channels; /* per sample: crop, crop, 3 */
	rf_dtype dtype;      /* element type of data */
	rf_layout layout;    /* HWC or CHW per sample */
	uint8_t *data;       /* count samples of sample_bytes each, RGB */
	size_t sample_bytes; /* height * width * channels * element size */
	int32_t *labels;     /* count labels */
	uint64_t *ids;       /* count sample ids (index positions in the source) */
	uint32_t replaced;   /* places in this batch filled by a replacement sample */
	/* raw mode (cfg.raw): sample i is sizes[i] bytes at data + offsets[i];
	 * bytes is the extent used; height, width, channels, sample_bytes are 0 */
	uint64_t *offsets;
	uint32_t *sizes;
	size_t bytes;
} rf_batch;

/* ---- index cache --------------------------------------------------------- */

/* Walks source (as rf_loader_create() would, raw mode if raw) and writes its
 * index to path (a temporary file renamed over it), for cfg.index_cache.
 * *files (if not NULL) gets the number of files indexed.
 * @return : 0, or a negative code with err[errlen] saying why. */
RF_API int rf_index_write(const char *source, int raw, const char *path, uint64_t *files,
			  char *err, size_t errlen);

/* ---- the loader --------------------------------------------------------- */

typedef struct rf_loader rf_loader;

/* Indexes cfg->source, allocates every buffer, starts the ring thread and the
 * compute pool. On success *out holds a loader that the caller frees with
 * rf_loader_destroy(). On failure *out is NULL and the return is negative;
 * when errmsg is not NULL, a message naming what was wrong (the field and
 * value, or the path and reason) is written into errmsg[errmsg_len].
 * @return : 0, or -EINVAL / RF_ECONFIG (bad config), -ENOENT (missing source),
 *           RF_EEMPTY (no samples), RF_EINDEX (malformed manifest),
 *           RF_ENOIOURING, -ENOMEM. */
RF_API int rf_loader_create(rf_loader **out, const rf_config *cfg,
			    char *errmsg, size_t errmsg_len);

/* Waits for the next batch in order and lends it to the caller until
 * rf_batch_release(). Up to cfg.prefetch batches may be held at once; holding
 * all of them stalls the loader.
 * @return : 0 with *out set; RF_EOF when every epoch was delivered (also on
 *           later calls); or a negative code, with rf_loader_error() naming
 *           the file and reason (RF_EBADSAMPLE, RF_ETOOMANYBAD). After an
 *           error every later call returns the same error. */
RF_API int rf_loader_next(rf_loader *l, rf_batch **out);

/* Gives the batch's slot back to the loader. b must come from
 * rf_loader_next() on the same loader and not have been released before;
 * its pointers are invalid afterwards. Batches may be released in any order. */
RF_API void rf_batch_release(rf_loader *l, rf_batch *b);

typedef struct rf_stats {
	uint64_t samples_total;   /* samples in the index */
	uint64_t batches;         /* batches delivered by rf_loader_next() */
	uint64_t samples;         /* samples delivered */
	uint64_t bytes_read;      /* file bytes read from storage (payload, not padding) */
	uint64_t bad_samples;     /* samples skipped as unreadable or corrupt */
	uint64_t reads_submitted; /* read chains submitted to io_uring */
	uint64_t ns_consumer_wait; /* consumer time spent waiting in rf_loader_next() */
	uint64_t ns_decode;       /* compute time in JPEG decode, summed over threads */
	uint64_t ns_transform;    /* compute time resampling and storing into the slot, summed */
	uint64_t ns_collate;      /* compute time for labels, ids, count-down and publishing */
	uint64_t ns_ring_cpu;     /* CPU time of the ring thread */
	uint64_t ns_read_wait;    /* time compute threads waited for a landed read, summed */
	uint32_t threads;         /* compute threads running */
	uint32_t io_depth;        /* reads in flight at most */
	uint32_t direct_io;       /* 1 = O_DIRECT in use, 0 = buffered (refused, or asked) */
	uint32_t io_path;         /* rf_io_path in use (never RF_IO_AUTO) */
	uint32_t dio_align;       /* O_DIRECT alignment in use, bytes */
	uint32_t fixed_buffers;   /* 1 = read buffers registered with io_uring */
	uint64_t scaled_decodes;  /* samples decoded at a DCT scale below 1 */
	uint64_t decoded_pixels;  /* pixels actually decoded (scaled, region) */
	uint64_t source_pixels;   /* pixels of the images in full */
	uint64_t index_bytes;     /* memory the index holds (records, paths, classes) */
	uint32_t index_cached;    /* 1 = the index came from cfg.index_cache */
	uint32_t reserved[5];
} rf_stats;

/* Copies the loader's counters into *out; callable at any time from the
 * consumer thread. @return : 0, or -EINVAL when an argument is NULL. */
RF_API int rf_loader_stats(const rf_loader *l, rf_stats *out);

/* @return : the detail of the loader's last error ("path: reason"), or "" if
 * none. Valid until the next call into the loader. */
RF_API const char *rf_loader_error(const rf_loader *l);

/* Stops every thread, cancels reads in flight, frees everything. Returns
 * promptly (reads in flight are cancelled, not waited for). Accepts NULL.
 * Batches still held by the caller become invalid. */
RF_API void rf_loader_destroy(rf_loader *l);

#ifdef __cplusplus
}
#endif

#endif /* RINGFEED_H */
