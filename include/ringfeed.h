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
 * - Threads: a loader runs 1 + cfg.threads threads of its own (the ring
 *   thread and the compute pool; raw mode starts no compute threads), plus
 *   cfg.pread_threads only on the RF_IO_PREAD path (no io_uring), plus 3
 *   GPU decode threads while the GPU's JPEG engines are in use (cfg.decode;
 *   libnvjpeg and the CUDA runtime may run threads of their own), all created
 *   by rf_loader_create() and joined by rf_loader_destroy(). io_uring may run
 *   blocking opens on its own kernel workers (iou-wrk). A loader is driven by one consumer thread:
 *   rf_loader_next(), rf_batch_release() and rf_loader_state functions must
 *   not be called concurrently on the same loader; rf_loader_interrupt() is
 *   the exception (it wakes a waiting consumer from another thread).
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

/* @return : a static string: the version, whether CUDA support is built in
 * and a device was found (or, when none answers, why: no NVIDIA driver, an
 * older driver, no GPU visible), and the image formats the build decodes,
 * e.g. "0.1.0 (cuda: built in, 1 device; images: jpeg, png, webp)". */
RF_API const char *rf_version_string(void);

/* The image formats this library decodes, a bit each: JPEG always; PNG and
 * WebP when it was built with libspng and libwebp (otherwise such an image
 * is a bad sample that says so). A sample's format is told by its bytes,
 * never by its name. Values are stable. */
enum {
	RF_FORMAT_JPEG_BIT = 1,
	RF_FORMAT_PNG_BIT = 2,
	RF_FORMAT_WEBP_BIT = 4,
};

/* @return : the RF_FORMAT_*_BIT of every format this library decodes. */
RF_API unsigned rf_image_formats(void);

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
	RF_ESTATE = -5007,       /* a saved state is truncated, corrupted or not a state */
	RF_ESTATEVERSION = -5008, /* a saved state has a newer format than this library reads */
	RF_ESTATEMISMATCH = -5009, /* a saved state belongs to another dataset or config */
	RF_EFORKED = -5010,      /* the loader belongs to another process (this one was fork()ed) */
	RF_EABI = -5011,         /* the caller's structs do not match this library's (rf_abi_check) */
	RF_ELOST = -5012,        /* on_sample_error only: a span of a shard is damaged or cut,
	                          * and the samples in it are lost ("SHARD:bytes A..B") */
};

/* Bindings and plugins compiled against one version of this header and run
 * with another library: RF_ABI_CHECK() compares the sizes of the structs the
 * caller passes (rf_config, rf_batch, rf_stats, rf_order_info, rf_state_info)
 * with the library's, so that a mismatched layout is detected at run time
 * instead of silently misread. Fields are only ever added at the end of a
 * struct, or taken from its reserved tail (which keeps its size).
 * @return : 0 when they match; RF_EABI when one differs. */
RF_API int rf_abi_check(size_t config, size_t batch, size_t stats, size_t order, size_t state);
#define RF_ABI_CHECK()                                                                       \
	rf_abi_check(sizeof(rf_config), sizeof(rf_batch), sizeof(rf_stats), sizeof(rf_order_info), \
		     sizeof(rf_state_info))

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
	/* token sources (cfg.seq_len): the tokens' integer values */
	RF_DTYPE_UINT16 = 3,
	RF_DTYPE_UINT32 = 4,
	RF_DTYPE_INT32 = 5,
	RF_DTYPE_INT64 = 6,   /* what torch's cross_entropy takes as targets */
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

/* Where JPEGs are decoded. Values are stable. */
typedef enum rf_decode {
	RF_DECODE_CPU = 0,  /* the compute pool (libjpeg-turbo); the default */
	/* The GPU's JPEG engines (nvJPEG's hardware backend, loaded at run time
	 * from libnvjpeg.so.13) decode straight into device memory, and CUDA
	 * kernels resize, crop, flip and convert into the device batch: only
	 * compressed bytes cross the bus. Needs cfg.device; images the engines
	 * refuse (progressive, CMYK, 4:1:1, 12-bit, ...) go to the compute pool.
	 * create fails (-ENOTSUP) where the engines or libnvjpeg are missing. */
	RF_DECODE_GPU = 1,
	/* Both at once: the engines take what they can keep up with, the compute
	 * pool the rest; on a machine without engines (or without cfg.device)
	 * this is RF_DECODE_CPU, logged once at RF_LOG_WARN. */
	RF_DECODE_AUTO = 2,
} rf_decode;

/* Called once per bad sample and epoch (a bad file drawn again as another
 * place's replacement in the same epoch is not reported again), from one of
 * the loader's threads, never two at a time for one loader. path names the
 * sample as every message does: the source's root folder joined with its
 * name (a manifest's absolute path as it is; ROOT/SHARD:MEMBER or
 * ROOT/SHARD:bytes A..B for shards). path and reason are valid during the
 * call only.
 * err is the negative code behind it. */
typedef void (*rf_sample_error_fn)(void *user, const char *path, int err,
				   const char *reason);

/* Which sample comes at each position of an epoch. Values are stable.
 * Every sampler is a pure function of (seed, epoch, position): the loader's
 * place in the stream is a few integers, whatever the thread count. */
typedef enum rf_sampler {
	/* A new seeded permutation of the dataset each epoch (a keyed Feistel
	 * network computed on demand: no per-sample memory). The default. */
	RF_SAMPLER_SHUFFLE = 0,
	/* Index order every epoch (also what cfg.shuffle = 0 selects). */
	RF_SAMPLER_SEQUENTIAL = 1,
	/* Draws with replacement, sample i with probability weight[i] / sum,
	 * as PyTorch's WeightedRandomSampler: weights from the manifest's third
	 * column ("path<TAB>label<TAB>weight"). samples_per_epoch draws. */
	RF_SAMPLER_WEIGHTED = 2,
	/* The same with weight = 1 / (samples of the sample's class): every
	 * class equally often. Any source. */
	RF_SAMPLER_BALANCED = 3,
} rf_sampler;

/* What a source folder holds (cfg.source_kind). Stable values. */
typedef enum rf_source_kind {
	/* Decided from what the folder holds: tar shards (*.tar in it, or in
	 * its class folders) or loose files (ImageFolder, raw tree). A folder
	 * that holds both, or .tar files where shards do not go, fails create
	 * with RF_EINDEX saying what it found: a stray old.tar must never turn
	 * a tree into a shard source, nor shards be mixed with loose files in
	 * silence. The default. */
	RF_SOURCE_AUTO = 0,
	/* Loose files whatever else is there (a .tar is then a raw file in raw
	 * mode, and not an image otherwise). */
	RF_SOURCE_FILES = 1,
	/* Tar shards (in the folder, or in its class folders) whatever else is
	 * there; none is an error. */
	RF_SOURCE_TAR = 2,
} rf_source_kind;

/* How a shard source is read (cfg.shard_access). Stable values. */
typedef enum rf_shard_access {
	/* Each sample a ranged read of its member: the sampler's global
	 * shuffle across all shards, as for loose files. The default. */
	RF_SHARD_RANDOM = 0,
	/* Shards read front to back in chunks of 1 MiB, each chunk once, for
	 * storage that punishes small random reads: each epoch takes the
	 * shards in a new seeded order (index order without shuffle) and
	 * shuffles the samples within consecutive blocks of shuffle_block
	 * positions (WebDataset's shard shuffle and shuffle buffer, as pure
	 * functions of seed, epoch and position, so resume stays exact). Ranks
	 * take consecutive runs of the epoch (rank r: positions r*L .. r*L+L-1)
	 * so that each reads its own shards. Needs the SHUFFLE or SEQUENTIAL
	 * sampler. */
	RF_SHARD_SEQUENTIAL = 1,
} rf_shard_access;

/* How ranks split an epoch whose length does not divide by world_size.
 * Either way every rank yields the same number of batches (unequal counts
 * hang DistributedDataParallel). Values are stable. */
typedef enum rf_rank_tail {
	/* Pad by wrapping to the start of the epoch, as PyTorch's
	 * DistributedSampler: every sample is seen, up to world_size - 1 of
	 * them twice. The default. */
	RF_RANK_TAIL_PAD = 0,
	/* Drop the last (epoch length mod world_size) positions of each epoch:
	 * nothing is seen twice, those few samples are skipped that epoch. */
	RF_RANK_TAIL_DROP = 1,
} rf_rank_tail;

/* ---- the caller's per-sample step (cfg.sample_fn) ------------------------
 * A hook for an augmentation of the caller's own (cutout, noise, a colour
 * jitter), run by the compute threads on each decoded sample in its place
 * in the batch slot, after ringfeed's own steps: decode, Resize +
 * CenterCrop or RandomResizedCrop, flip, and the conversion to cfg.dtype
 * and cfg.layout (mean and std applied). It sees the sample as rf_batch.data
 * will hold it, and what it leaves there is what the batch delivers (and
 * what is copied to the device). With device_convert the host holds uint8
 * HWC (the conversion happens on the device, after the hook): dtype and
 * layout below say which. */

/* One sample, lent to the hook for the call. Element (y, x, c), for
 * y < height, x < width, c < channels, is at
 *   data + y * stride_y + x * stride_x + c * stride_c
 * (strides in bytes; the element is an elem_bytes-byte rf_dtype value). */
typedef struct rf_sample_view {
	uint8_t *data;           /* the sample's bytes in the host batch slot, bytes of
	                          * them: read and write these during the call, no others */
	size_t bytes;            /* rf_batch.sample_bytes */
	rf_dtype dtype;          /* as rf_batch.dtype (float16: IEEE half bits) */
	rf_layout layout;        /* as rf_batch.layout */
	uint32_t height, width, channels; /* crop, crop, 3 */
	uint32_t elem_bytes;     /* 1 (uint8), 2 (float16) or 4 (float32) */
	size_t stride_y, stride_x, stride_c;
	uint64_t id;             /* the sample's id (rf_batch.ids: its index position) */
	int32_t label;           /* its label (rf_batch.labels) */
	uint32_t index;          /* its place in the batch, 0 .. count - 1 */
	uint64_t batch;          /* rf_batch.index of the batch it goes into */
	uint64_t epoch;          /* the epoch whose order drew it */
	char *reason;            /* reason_len bytes where a hook that refuses the sample
	                          * may say why (NUL-terminated); empty at the call */
	size_t reason_len;
	uint64_t rng_key, rng_count; /* rf_sample_rand()'s stream: leave them alone */
	uint64_t reserved[4];
} rf_sample_view;

/* The hook (cfg.sample_fn), called with cfg.sample_user.
 *
 * When: once for every sample placed in a batch, replacements of bad
 * samples included, before the batch can be handed out; a sample drawn
 * once per epoch (every sampler but WEIGHTED and BALANCED, without rank
 * padding) meets the hook once per epoch.
 * Threads: from the compute threads, several at once (each with another
 * sample, whose bytes are its alone during the call): the hook must be
 * thread-safe, and should not block (it holds a compute thread; its time
 * counts in rf_stats.ns_transform). It must not call into the loader.
 * @return : 0 keeps the sample. Anything else makes it a bad sample that
 *           follows cfg.on_error (replaced by another sample, whose hook is
 *           called in turn; or rf_loader_next() fails with RF_EBADSAMPLE),
 *           reported to on_sample_error with err = the return value when it
 *           is negative (an errno-style code), RF_EBADSAMPLE otherwise, and
 *           reason "sample_fn: " followed by what the hook wrote into
 *           s->reason, or "sample_fn returned N" when it wrote nothing. */
typedef int (*rf_sample_fn)(void *user, rf_sample_view *s);

/* The sample's own random draws, for the hook (during its call only): the
 * k-th call for a sample returns the k-th number of a counter-based stream
 * keyed on (cfg.seed, the sample's epoch, its id) alone, the key ringfeed's
 * own crop and flip choices use (but a stream of its own, independent of
 * theirs). The same seed gives the same draws, so the same batches,
 * whatever the thread count, scheduling or resume; another epoch, other
 * draws. A sample drawn twice in one epoch (WEIGHTED, BALANCED, rank
 * padding) gets the same draws each time, as it gets the same crop and flip.
 * @return : rf_sample_rand(): the next 64 random bits;
 *           rf_sample_uniform(): the next draw as a double in [0, 1);
 *           0 when s is NULL. */
RF_API uint64_t rf_sample_rand(rf_sample_view *s);
RF_API double rf_sample_uniform(rf_sample_view *s);

/* Open-time settings: fill with rf_config_default(), then set what you need.
 * The fields keep their order for the ABI (new ones come from the reserved
 * tails), so this index groups them; each field's own comment is below.
 *
 * Common knobs, for every source:
 *   source, batch_size, threads, io_depth, prefetch, seed, shuffle, epochs,
 *   drop_last, in_order, on_error, on_sample_error + user, log_level,
 *   read_pool_bytes, index_cache, include_hidden, source_kind;
 *   order, ranks and resume: sampler, rank, world_size, rank_tail,
 *   samples_per_epoch, resume_state + resume_state_len.
 * Images (decode and augment; ignored by token sources):
 *   resize, crop, random_resized_crop, rrc_scale, rrc_ratio, flip_p, dtype,
 *   layout, mean, std, max_pixels, decode, device, device_convert,
 *   sample_fn + sample_user, fields + field_max (not token sources).
 * Per-kind knobs, each read by one kind of source or transport only:
 *   raw mode (every file's bytes, no decode): raw, raw_max_bytes;
 *   tar shards: shard_access, shuffle_block, zstd_dict;
 *   token shards: seq_len (which makes the source one), stride, token_dtype;
 *   remote sources (http(s)://, s3://): remote_timeout_ms, cache_dir,
 *   cache_bytes, cache_group;
 *   sources of columns (Parquet files): columns.
 * Diagnostic knobs, for measuring and for working around a system; the
 * defaults are what to run with:
 *   io_path, pread_threads, no_direct_io: how files are read (the same
 *   batches whichever);
 *   no_scaled_decode, no_region_decode, verify_full: how images are decoded
 *   (they change pixels or which samples are bad: a saved state records them);
 *   fetch_only: reads only, batch data stays zero (storage measured alone).
 * Reserved (zero): reserved0, reserved. */
typedef struct rf_config {
	/* ---- common -------------------------------------------------------- */

	/* Where samples come from; the string is copied at create time. Any
	 * source ringfeed reads, told apart by what it is:
	 * - a folder of images in ImageFolder layout (class = first-level
	 *   subfolder, labels in sorted class order; .jpg, .jpeg, .png, .webp
	 *   in any case, nested folders below a class allowed), or of any files
	 *   in raw mode;
	 * - a folder of WebDataset .tar shards (or of class folders of them),
	 *   a single .tar, a list file of shard paths, a glob or a brace
	 *   pattern ("data/train-{000000..000146}.tar");
	 * - a manifest file (one "path<TAB>label" per line; relative paths are
	 *   resolved against the manifest's folder);
	 * - token shards (with seq_len > 0): a folder, list file, glob or
	 *   pattern of .bin or .bin.zst files;
	 * - remote shards, tar or token: http(s):// or s3:// URLs (one, a brace
	 *   pattern or a list file of them), or an S3 folder, which ends with
	 *   '/' (s3://BUCKET/PREFIX/, listed).
	 * source_kind settles a folder that could be read two ways. */
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
	int no_direct_io;              /* diagnostic: 1 = buffered reads instead of O_DIRECT;
	                                * default 0 */

	/* ---- images: decode and augment (no_scaled_decode, no_region_decode and
	 * verify_full are diagnostic) ------------------------------------------
	 * Transforms are those of torchvision, fused into
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
	float mean[3], std[3];         /* per channel, for float output; default 0 and 1
	                                * (anything else with dtype UINT8: RF_ECONFIG) */
	uint64_t max_pixels;           /* larger images are bad samples; default 100,000,000 */
	int no_scaled_decode;          /* 1 = always decode at full scale; default 0 */
	int no_region_decode;          /* 1 = decode every row and column; default 0 */
	int verify_full;               /* 1 = decode every image to its end marker, so that
	                                * damage below the rows a crop needs is a bad sample;
	                                * default 0: a region decode stops at the last row it
	                                * needs, and a file truncated or corrupt below that is
	                                * delivered (the same pixels every epoch) */

	/* ---- common: delivery -------------------------------------------------- */
	int in_order;                  /* 1 = batches in order (default); 0 = as they complete */

	/* ---- diagnostic: the I/O engine (the default picks the best path) ---- */
	rf_io_path io_path;            /* default RF_IO_AUTO; forcing a path that the system
	                                * lacks makes create fail (RF_ENOIOURING) */
	int pread_threads;             /* threads of the RF_IO_PREAD path; 0 = 16 */

	/* ---- per kind: raw mode ---------------------------------------------- */

	/* Raw mode: no decode. The index takes every regular file below the
	 * source whatever its name (labels by first-level folder as in
	 * ImageFolder; files directly in the source folder get label -1), and a
	 * batch holds the files' bytes one after the other, each starting at a
	 * multiple of the O_DIRECT alignment, read straight into the batch (no
	 * copy). No compute threads are started. */
	int raw;                       /* 1 = raw mode; default 0 */
	size_t raw_max_bytes;          /* largest file in raw mode; default 256 KiB */

	/* ---- common: the index ------------------------------------------------ */

	/* Index cache (see rf_index_write()): loaded instead of walking the
	 * source when it was built from the same source in the same mode and no
	 * directory (or manifest) changed since; otherwise the source is walked
	 * and the cache rewritten. NULL (default): always walk. Copied at create. */
	const char *index_cache;

	/* Directory walks skip hidden names (starting with '.': .DS_Store,
	 * AppleDouble ._x.jpg files, .nfs* files, .git folders) unless this is
	 * 1. Default 0. Manifests list what they list. */
	int include_hidden;

	/* ---- common: order, ranks and resume -------------------------------
	 *
	 * Ranks: the epoch is one global sequence of positions (the dataset's
	 * permutation, or samples_per_epoch weighted draws); rank r of W takes
	 * positions r, r + W, r + 2W, ... (padded or dropped per rank_tail), so
	 * ranks are disjoint and together cover the epoch. rank and world_size
	 * are both set, or both -1: then they come from the launcher's
	 * environment, the first pair found of RANK/WORLD_SIZE (torchrun),
	 * SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE,
	 * PMI_RANK/PMI_SIZE, else rank 0 of 1. Slurm's pair reaches every
	 * process of an allocation, also those mpirun started: it yields to a
	 * complete Open MPI or PMI pair, and half of it (SLURM_NTASKS alone, as
	 * in an salloc shell) is ignored. rf_loader_order() tells which was
	 * used. An invalid value (here or in the environment), or half of any
	 * other pair, fails create with RF_ECONFIG naming it. The environment is
	 * read by rf_loader_create() with getenv(): do not setenv() on another
	 * thread meanwhile. */
	rf_sampler sampler;            /* default RF_SAMPLER_SHUFFLE; with shuffle = 0,
	                                * SHUFFLE means SEQUENTIAL */
	int rank;                      /* 0 .. world_size - 1, or -1 (default): environment */
	int world_size;                /* 1 .. 1048576, or -1 (default): environment */
	rf_rank_tail rank_tail;        /* default RF_RANK_TAIL_PAD */
	uint64_t samples_per_epoch;    /* WEIGHTED and BALANCED: draws per epoch over all
	                                * ranks, at most 2^48; 0 = the dataset's size
	                                * (default). Must be 0 for the other samplers. */
	/* Resume: a state written by rf_loader_state_save(), or NULL (default).
	 * The loader then starts at the saved position and yields exactly the
	 * batches the saving loader would have yielded next. The bytes are read
	 * during rf_loader_create() only (the caller keeps ownership). See
	 * rf_loader_state_save() for what must match. */
	const void *resume_state;
	size_t resume_state_len;

	/* ---- diagnostic -------------------------------------------------------
	 * 1 = read only; compute threads hand every read back undecoded (batch
	 * data stays zero). Measures storage alone, as `ringfeed bench
	 * --diagnose` does. Default 0. */
	int fetch_only;

	/* ---- images: the device and the decoder ------------------------------ */

	/* GPU. With a device, batch slots are pinned and each finished batch is
	 * copied to the device at once, on the loader's transfer stream, by the
	 * thread that finished it (see rf_batch_wait, rf_batch_release_on). */
	int device;                    /* CUDA device index; -1 = host batches only (default) */
	int device_convert;            /* 1 = send uint8 HWC over the bus (a quarter of float32's
	                                * bytes) and convert to dtype/layout on the device;
	                                * dtype must be float16 or float32. Default 0 */

	/* Where JPEGs are decoded (see rf_decode); default RF_DECODE_CPU. With
	 * RF_DECODE_GPU or AUTO (when the engines are in use) a batch's samples
	 * are only in device_data: data is NULL. Pixels: the same windows
	 * (center crop, RandomResizedCrop and flip for the same seed, epoch and
	 * id) and the same resampling integers as the CPU path, but the engines'
	 * IDCT and chroma upsampling differ from libjpeg-turbo's: a sample
	 * decoded on the GPU differs from the CPU's at the same decode scale by
	 * about half a level per channel on average (about 1.5 at most for one
	 * sample; the tests bound the mean absolute difference per channel by
	 * 1.5). The engines decode at full scale, and so does the compute pool
	 * beside them (no DCT scaling under GPU or AUTO). Each sample is stable
	 * run to run for one decoder; under AUTO which decoder takes a sample
	 * depends on timing. Not with raw or device_convert. */
	rf_decode decode;

	/* ---- per kind: tar shards -------------------------------------------- */

	/* Shard sources (source = a folder of WebDataset .tar shards, or of
	 * class folders of them; a list file of shard paths; or a brace pattern
	 * such as "data/train-{000000..000146}.tar"): a member whose name ends
	 * in .zst (KEY.jpg.zst, KEY.bin.zst) is one zstd frame, decompressed by
	 * the compute threads (raw mode then starts them too, and delivers the
	 * decompressed bytes; under RF_DECODE_GPU / AUTO such samples are
	 * decoded on the CPU). zstd_dict: the dictionary they were compressed
	 * with (what `ringfeed pack --dict-size` or `zstd --train` wrote), or
	 * NULL (default): the file zstd.dict beside the shards, when there is
	 * one. A corrupt frame or a wrong dictionary is a bad sample with that
	 * reason. Copied at create. */
	const char *zstd_dict;

	/* Shard sources: how they are read (see rf_shard_access). */
	rf_shard_access shard_access;  /* default RF_SHARD_RANDOM */
	uint32_t shuffle_block;        /* RF_SHARD_SEQUENTIAL with shuffle: positions
	                                * shuffled together; 0 = 1024 (default) */

	/* ---- per kind: token shards ------------------------------------------ */

	/* Token sources (seq_len > 0): source is a set of token shards, llm.c's
	 * .bin files (256 int32 header words: magic 20240520 with uint16 tokens
	 * or 20240801 with uint32 tokens, a version, the token count; then the
	 * tokens) or the .bin.zst that `ringfeed pack --tokens` writes from
	 * them: a folder of them (sorted by name), a list file (one path a line,
	 * relative to its folder), a glob ("data/fineweb_train_*.bin") or a
	 * brace pattern. Every shard's header is checked at create: a wrong
	 * magic or version, a token count the file's size contradicts, a
	 * truncated file, or shards of both widths fail create with RF_EINDEX
	 * naming the file and the reason.
	 *
	 * A sample is a window of seq_len + 1 consecutive tokens (a row's inputs
	 * and, shifted by one, its targets); windows start every stride tokens
	 * from each shard's start and never cross a shard's end. Windows are
	 * numbered shard after shard (rf_batch.ids), and every sampler but
	 * WEIGHTED and BALANCED orders them over all shards at once (SEQUENTIAL
	 * is llm.c's order); ranks, resume and epochs work as for files. A batch
	 * is count rows of seq_len + 1 tokens (height 1, width seq_len + 1,
	 * channels 1, dtype token_dtype, labels -1): no decode stage, the
	 * ring thread trims each read (O_DIRECT reads whole blocks) into its row,
	 * converting the width when asked; .bin.zst windows are decompressed by
	 * the compute threads. Not with raw, decode, device_convert, index_cache
	 * or shard_access = SEQUENTIAL; the image settings are ignored. */
	uint32_t seq_len;              /* T; 0 = not a token source (default) */
	uint32_t stride;               /* tokens from one window's start to the next;
	                                * 0 = seq_len (default: windows tile each shard,
	                                * sharing one token, as llm.c's batches do) */
	rf_dtype token_dtype;          /* RF_DTYPE_UINT16, UINT32, INT32 or INT64; 0 (UINT8, the
	                                * default) = as the shards store them. UINT16 is
	                                * refused for uint32 shards */

	/* ---- common ------------------------------------------------------------
	 * What a source folder holds (see rf_source_kind); lists, patterns and
	 * manifests say it themselves. Must be AUTO for token sources. */
	rf_source_kind source_kind;    /* default RF_SOURCE_AUTO */

	/* ---- images: other members of a sample ------------------------------- */

	/* Fields: other members of each sample delivered with its batch, beside
	 * the pixels (image-text samples: a caption, metadata). A comma-separated
	 * list of member extensions, such as "txt,json": in a WebDataset shard
	 * the members KEY.txt, KEY.json of the sample; in a loose tree the files
	 * beside the image with its key (img2dataset's "files" layout:
	 * 00000/000000123.jpg, 000000123.txt, 000000123.json); in Parquet
	 * files, other columns by name ("caption,url"): strings and bytes as
	 * they are, integers as their decimal text, booleans "true"/"false", a
	 * null as a sample lacking the member (each row's value read with its
	 * page of that column, beside the image's). Up to
	 * RF_MAX_FIELDS, compared without case. A sample that lacks one is a bad
	 * sample (on_error), naming the member, unless its name ends in '?'
	 * ("txt?": optional, then delivered empty and marked absent). Each value
	 * is delivered as it is stored, one byte string per sample and field,
	 * packed into the batch (rf_batch.fields, rf_batch_field()). NULL or ""
	 * (default): none. Not with token sources. The string is copied.
	 * (field_max comes first: it fills what was padding.) */
	uint32_t field_max;            /* bytes of the largest field value; a larger one
	                                * is a bad sample. 0 = default (65536). Bounds the
	                                * memory a batch's fields may take */
	const char *fields;

	/* ---- per transport: remote sources and their node-local cache -------- */

	/* Remote sources (http(s)://, s3://): a read's time, all its tries
	 * included (a 503 or a reset is tried again after a backoff, a stalled
	 * transfer given up after 15 s without a byte); past it the read fails,
	 * a bad sample named "URL: reason" (on_error). 0 = default (120000). */
	uint32_t remote_timeout_ms;

	uint32_t reserved0;            /* zero (keeps cache_dir 8-aligned) */
	/* A node-local cache of remote sources' bytes: every range fetched from
	 * an http(s):// or s3:// shard is written under cache_dir/ringfeed-cache/
	 * on its first read and read from there (the local io_uring path) on every
	 * later one, by this process and by every other one that names the same
	 * directory (the ranks of a node share it: a range one fetched, the
	 * others read; two that miss the same range at once fetch it once). A
	 * range is tied to its object's URL, ETag and size: a shard replaced on
	 * the server is never served from the cache. Bounded by cache_bytes
	 * (its data and records together), evicting whole segments: what this
	 * rank's order needs last, else the least recently used. A directory
	 * that cannot be made or written (read-only, full), or a damaged cache
	 * file, makes those reads go to the network with one warning, never an
	 * error. NULL or "" (default): no cache. The string is copied. Local
	 * sources ignore it. */
	const char *cache_dir;
	uint64_t cache_bytes;          /* 0 = default (10 GiB); at least 4 MiB */
	/* The cache is the running user's alone: a cache folder or file of
	 * another user's, or one others can write (DIR itself may be shared if
	 * sticky, as /scratch is), is not used (one warning; reads go to the
	 * network), since anyone who can write it can make it serve any bytes.
	 * cache_group names a group trusted to share it (the users of a node's
	 * jobs): its folders are then made 02770 and its files 0660, that
	 * group's, and those of its other members used. The running user must
	 * be in it. NULL or "" (default): none. The string is copied. */
	const char *cache_group;

	/* ---- images: the caller's step ---------------------------------------- */

	/* The caller's per-sample step (see rf_sample_fn, rf_sample_view): NULL
	 * (default) or a function the compute threads call on each decoded
	 * sample, with sample_user. Not with raw, token sources (seq_len),
	 * fetch_only, or decode = gpu or auto (samples the GPU decodes never
	 * reach the host): rf_loader_create() refuses those with RF_ECONFIG.
	 * A saved state does not record the hook: resume with the same one. */
	rf_sample_fn sample_fn;
	void *sample_user;

	/* ---- per kind: sources of columns (Parquet files) --------------------- */

	/* Which column is which, overriding what the source finds by itself:
	 * "image=NAME,label=NAME" (either or both; NAME a column, a struct's
	 * leaf as "img.bytes", or a struct whose `bytes` leaf is the image).
	 * "label=" (nothing) = no label column: labels -1. A column the files
	 * lack is refused at create, naming the file and the columns it has.
	 * The image column holds the samples' encoded bytes (or, with raw, any
	 * bytes); the label column is an integer (any width; a ClassLabel's
	 * names from the `huggingface` metadata) or a string (the classes are
	 * its distinct values, sorted; a label is the index of its value). A
	 * null label is -1 (unlabelled, as Hugging Face's test splits write
	 * it), not a bad sample. NULL or "" (default): as found. Refused for a
	 * source without columns (tar, files, tokens). The string is copied.
	 * Other columns are fields (cfg.fields, by column name). */
	const char *columns;

	uint8_t reserved[8];          /* zeroed by rf_config_default(); must stay zero:
	                                * rf_loader_create() refuses other bytes (a caller
	                                * built against a newer header) with RF_ECONFIG */
} rf_config;

/* Fills every field of cfg with its default. Always call it first, then edit
 * the fields you need: fields added later get sensible defaults this way. */
RF_API void rf_config_default(rf_config *cfg);

/* ---- names of the enums ---------------------------------------------------
 * One table gives the names of the values that rf_config's enum fields take,
 * the spellings the ringfeed command's options and the Python package accept
 * and print ("float16" for cfg.dtype = RF_DTYPE_FLOAT16). A kind is one such
 * field; its names are the values that field takes, no others (RF_ENUM_DTYPE
 * names uint8, float16 and float32: the token types are RF_ENUM_TOKEN_DTYPE's).
 * Kinds, names and values are stable; later versions may add kinds and names.
 * Every string returned below is static. */
typedef enum rf_enum_kind {
	RF_ENUM_DTYPE = 0,        /* cfg.dtype: uint8, float16, float32 */
	RF_ENUM_LAYOUT = 1,       /* cfg.layout: hwc, chw */
	RF_ENUM_ON_ERROR = 2,     /* cfg.on_error: skip, fail */
	RF_ENUM_LOG_LEVEL = 3,    /* cfg.log_level: none, error, warn, info */
	RF_ENUM_IO_PATH = 4,      /* cfg.io_path: auto, fixed, plain, pread
	                           * (also uring_fixed, uring_plain) */
	RF_ENUM_SAMPLER = 5,      /* cfg.sampler: shuffle, sequential, weighted, balanced */
	RF_ENUM_RANK_TAIL = 6,    /* cfg.rank_tail: pad, drop */
	RF_ENUM_DECODE = 7,       /* cfg.decode: cpu, gpu, auto */
	RF_ENUM_SHARD_ACCESS = 8, /* cfg.shard_access: random, sequential */
	RF_ENUM_TOKEN_DTYPE = 9,  /* cfg.token_dtype: uint16, uint32, int32 (also stored: 0) */
	RF_ENUM_SOURCE_KIND = 10, /* cfg.source_kind: auto, files, tar */
	RF_ENUM_KINDS = 11        /* kinds this header knows (a newer library may know more) */
} rf_enum_kind;

/* @return : the rf_config field that kind names ("dtype", "io_path", ...), or
 *           NULL when this library does not know kind (so that a caller can
 *           walk kinds 0, 1, ... until NULL). */
RF_API const char *rf_enum_kind_name(rf_enum_kind kind);

/* @return : the name of value in kind ("chw" for RF_ENUM_LAYOUT, RF_LAYOUT_CHW;
 *           the first in rf_enum_entry()'s order when a value has several),
 *           or NULL when kind is unknown or the field does not take value. */
RF_API const char *rf_enum_name(rf_enum_kind kind, int value);

/* Looks name up among kind's names, listed or not (see rf_enum_entry()); the
 * comparison is exact (case matters). name is read during the call only.
 * @return : 0 with *value set; -ENOENT when name is not one of them, or
 *           -EINVAL when kind is unknown or name or value is NULL (*value
 *           untouched on error). */
RF_API int rf_enum_value(rf_enum_kind kind, const char *name, int *value);

/* Walks kind's names, i = 0, 1, ...: first those that help texts list, in
 * their order there ("uint8|float16|float32", "expected skip or fail"), each
 * value once; then the other spellings rf_enum_value() also takes for a
 * value already named (*listed = 0: "uring_fixed" for RF_IO_URING_FIXED, as
 * the Python package has always spelled it) or for a value that needs no
 * option ("stored", token_dtype 0: the shards' own type).
 * @return : the i-th name, with *value and *listed (1 or 0) set where they
 *           are not NULL; NULL when i is past the last or kind is unknown. */
RF_API const char *rf_enum_entry(rf_enum_kind kind, size_t i, int *value, int *listed);

/* ---- batches ------------------------------------------------------------ */

/* One field of a batch (cfg.fields): sample i's value is the bytes
 * bytes[offsets[i] .. offsets[i + 1]), the samples' values one after
 * another in batch order (a packed tensor and its offsets, for bulk
 * tokenizers). Valid until the batch is released. */
#define RF_MAX_FIELDS 8
typedef struct rf_field {
	const char *name;        /* as cfg.fields names it, without the '?' */
	const uint8_t *bytes;    /* offsets[count] bytes */
	const uint64_t *offsets; /* count + 1 of them, offsets[0] = 0 */
	const uint8_t *present;  /* count: 0 where an optional field was missing (its
	                          * value is then empty), else 1 */
} rf_field;

typedef struct rf_batch {
	uint64_t index;      /* batch number since the start, over all epochs */
	uint32_t epoch;      /* epoch this batch belongs to */
	uint32_t count;      /* samples in this batch (< batch_size only for a last partial batch) */
	uint32_t height, width, channels; /* per sample: crop, crop, 3 */
	rf_dtype dtype;      /* element type of data */
	rf_layout layout;    /* HWC or CHW per sample */
	uint8_t *data;       /* count samples of sample_bytes each, RGB; NULL when the
	                      * samples are decoded on the GPU (cfg.decode). Aligned
	                      * to 4096 bytes (raw mode: each file at offsets[i], a
	                      * multiple of the O_DIRECT alignment); device_data to
	                      * 256 bytes. */
	size_t sample_bytes; /* height * width * channels * element size */
	int32_t *labels;     /* count labels */
	uint64_t *ids;       /* count sample ids (index positions in the source) */
	uint32_t replaced;   /* places in this batch filled by a replacement sample */
	/* raw mode (cfg.raw): sample i is sizes[i] bytes at data + offsets[i];
	 * bytes is the extent used; height, width, channels, sample_bytes are 0 */
	uint64_t *offsets;
	uint32_t *sizes;
	size_t bytes;
	/* where this batch's time went: from its first read submitted to its
	 * last read landed, and its samples' decode + transform time summed */
	uint64_t fetch_ns, prep_ns;
	uint64_t read_bytes;  /* file bytes read for it */
	/* with cfg.device: the batch on the device (device_sample_bytes a sample,
	 * device_dtype / device_layout; with device_convert the host data stays
	 * uint8 HWC), and the event recorded after its copy (a cudaEvent_t).
	 * NULL without a device. Valid until the batch is released. */
	void *device_data;
	void *ready_event;
	rf_dtype device_dtype;
	rf_layout device_layout;
	size_t device_sample_bytes;
	/* cfg.fields: nfields fields, in the order cfg.fields names them (see
	 * rf_field, rf_batch_field()); 0 and NULL without. */
	uint32_t nfields;
	const rf_field *fields;
} rf_batch;

/* Field `name` of batch b (as cfg.fields names it, without '?', any case)
 * into *out. @return : 0, or -ENOENT when the loader delivers no such field. */
RF_API int rf_batch_field(const rf_batch *b, const char *name, rf_field *out);

/* ---- index cache --------------------------------------------------------- */

/* How rf_index_write() walks (its `raw` argument, a set of flags): */
#define RF_INDEX_RAW 1    /* raw mode: every regular file (cfg.raw) */
#define RF_INDEX_HIDDEN 2 /* include hidden names (cfg.include_hidden) */
#define RF_INDEX_FILES 4  /* a folder is loose files (cfg.source_kind = RF_SOURCE_FILES) */
#define RF_INDEX_TAR 8    /* a folder is tar shards (cfg.source_kind = RF_SOURCE_TAR) */

/* Called now and then (every 4,096 files) by a long walk, from the calling
 * thread, with the files indexed so far. */
typedef void (*rf_progress_fn)(void *user, uint64_t files);

/* Walks source (as rf_loader_create() would, with the RF_INDEX_* flags in
 * raw: 1 is raw mode as before) and writes its index to path (a temporary
 * file renamed over it), for cfg.index_cache.
 * *files (if not NULL) gets the number of files indexed; progress (if not
 * NULL) is told how the walk goes, with user.
 * @return : 0, or a negative code with err[errlen] saying why (-EINVAL when
 *           source or path is NULL or raw holds another bit). */
RF_API int rf_index_write(const char *source, int raw, const char *path, uint64_t *files,
			  rf_progress_fn progress, void *user, char *err, size_t errlen);

/* ---- the loader --------------------------------------------------------- */

typedef struct rf_loader rf_loader;

/* Indexes cfg->source, allocates every buffer, starts the ring thread and the
 * compute pool. On success *out holds a loader that the caller frees with
 * rf_loader_destroy(). On failure *out is NULL and the return is negative;
 * when errmsg is not NULL, a message naming what was wrong (the field and
 * value, or the path and reason) is written into errmsg[errmsg_len].
 * @return : 0, or -EINVAL / RF_ECONFIG (bad config, or bad rank variables
 *           in the environment), -ENOENT (missing source), RF_EEMPTY (no
 *           samples, or none for this rank), RF_EINDEX (malformed manifest),
 *           RF_ESTATE / RF_ESTATEVERSION / RF_ESTATEMISMATCH (cfg.resume_state
 *           refused; see rf_loader_state_save()), RF_ENOIOURING, -ENOMEM. */
RF_API int rf_loader_create(rf_loader **out, const rf_config *cfg,
			    char *errmsg, size_t errmsg_len);

/* rf_loader_create() that can be called off: while it runs (on any
 * thread), another thread or a signal handler may set *cancel to non-zero;
 * a remote source's set-up (its index scan, listing and set-up requests,
 * however slow the server) then stops within about 100 ms, and the call
 * returns -ECANCELED with nothing left behind (a loader already made is
 * destroyed). A local folder's walk is not interrupted. cancel NULL: as
 * rf_loader_create(). Python's Loader runs create through it, so that
 * Ctrl-C during a long create raises KeyboardInterrupt.
 * @return : as rf_loader_create(), or -ECANCELED. */
RF_API int rf_loader_create_cancel(rf_loader **out, const rf_config *cfg,
				   const volatile int *cancel, char *errmsg, size_t errmsg_len);

/* Waits for the next batch in order and lends it to the caller until
 * rf_batch_release(). Up to cfg.prefetch - 1 batches may be kept while
 * asking for more, released in any order (in either order mode); when all
 * cfg.prefetch are held, the call returns -EDEADLK instead of waiting.
 * @return : 0 with *out set; RF_EOF when every epoch was delivered (also on
 *           later calls); or a negative code, with rf_loader_error() naming
 *           the file and reason (RF_EBADSAMPLE, RF_ETOOMANYBAD; -EDEADLK
 *           when every slot is held, which is not sticky). After an
 *           error every later call returns the same error. RF_EFORKED in a
 *           fork()ed child (see rf_loader_destroy()). */
RF_API int rf_loader_next(rf_loader *l, rf_batch **out);

/* rf_loader_next() that waits at most timeout_ns nanoseconds (0: does not
 * wait) for the next batch to become ready, so that a consumer can look
 * at other things (a signal, a stop flag) between waits.
 * @return : as rf_loader_next(); or -ETIMEDOUT when no batch became ready
 *           in time, or -EINTR when rf_loader_interrupt() woke the call:
 *           neither takes a batch nor moves the position (the next call,
 *           and rf_loader_state_save(), stand where this one started), and
 *           neither is sticky. */
RF_API int rf_loader_next_timeout(rf_loader *l, rf_batch **out, uint64_t timeout_ns);

/* Wakes the consumer: the rf_loader_next() or rf_loader_next_timeout() call
 * waiting on l returns -EINTR at once, without taking a batch; when none is
 * running, the next call that finds no error and no end of stream returns
 * -EINTR instead (once). The one function that may be called from any
 * thread while the consumer is inside rf_loader_next(): to stop a waiting
 * consumer before rf_loader_destroy() (which must still be called after
 * that consumer has returned, never concurrently with it). Accepts NULL;
 * does nothing in a fork()ed child. */
RF_API void rf_loader_interrupt(rf_loader *l);

/* Makes stream (a cudaStream_t; NULL = the legacy default stream) wait,
 * on the device, until b's copy (and conversion) is done: no host
 * synchronization. Call it before launching work that reads b->device_data.
 * @return : 0; -EINVAL when b has no device copy; -ENOTSUP without CUDA
 *           support; -EIO when CUDA refused. */
RF_API int rf_batch_wait(const rf_batch *b, void *stream);

/* Blocks the calling thread until b's device copy (and, with GPU decode,
 * its decoding) is finished: for consumers that do not order work on
 * streams. @return : 0; -EINVAL when b has no device copy; -ENOTSUP without
 * CUDA support; -EIO when CUDA reports an error. */
RF_API int rf_batch_sync(const rf_batch *b);

/* rf_batch_release() for device batches: records the release point on
 * stream (the caller's, after its last work on b->device_data): the loader
 * copies a later batch into that device slot only once stream has passed
 * it. rf_batch_release() records it on the legacy default stream. */
RF_API void rf_batch_release_on(rf_loader *l, rf_batch *b, void *stream);

/* Gives the batch's slot back to the loader. b must come from
 * rf_loader_next() on the same loader and not have been released before;
 * its pointers are invalid afterwards. Batches may be released in any order. */
RF_API void rf_batch_release(rf_loader *l, rf_batch *b);

typedef struct rf_stats {
	uint64_t samples_total;   /* samples in the index */
	uint64_t batches;         /* batches delivered by rf_loader_next() */
	uint64_t samples;         /* samples delivered */
	uint64_t bytes_read;      /* file bytes read from storage (payload, not padding) */
	uint64_t bad_samples;     /* samples found unreadable or corrupt, once per epoch each
	                           * (drawn again as a replacement, a bad file is not
	                           * counted again) */
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
	/* queues now (a snapshot, for progress displays) */
	uint32_t reads_in_flight; /* reads submitted and not landed */
	uint32_t reads_waiting;   /* landed reads waiting for a compute thread */
	uint32_t batches_ready;   /* batches ready and not yet taken */
	uint32_t reserved0;
	/* with cfg.device: bytes copied host to device, and the time the copies
	 * took on the transfer stream (timed with events, summed) */
	uint64_t device_bytes, ns_device_copy;
	/* decode: the rf_decode in use (AUTO that fell back reads CPU), samples
	 * decoded by the compute pool and by the GPU's engines; the stream time
	 * of the engines' groups (decode + resample, timed with events, summed
	 * over the GPU decode threads, whose groups overlap: it can exceed the
	 * run's time); the GPU decode threads' own time on the host (headers,
	 * taps, submitting), summed */
	uint32_t decode_path;
	uint32_t reserved1;
	uint64_t cpu_decodes, gpu_decodes, ns_gpu_decode, ns_gpu_host;
	/* What was lost, beside bad_samples (nothing is lost in silence):
	 * places of delivered batches filled by a replacement sample (each bad
	 * sample drawn is replaced); and the spans of tar shards that hold no
	 * readable member (a corrupt header and the bytes up to the next valid
	 * one, a shard cut short or without its end blocks), found when the
	 * index was built, and their bytes. Each span is also an index entry
	 * ("SHARD:bytes A..B"), reported like a bad sample (err RF_ELOST) when
	 * drawn, so on_error = RF_ON_ERROR_FAIL fails on it. */
	uint64_t replaced;
	uint64_t lost_spans, lost_bytes;
	/* Remote sources (http(s) URLs): transfers made (a read tried again
	 * counts each time), of them those that failed and were tried again
	 * after a backoff (503, 429, a reset, a stall), and reads that failed
	 * for good (their samples are in bad_samples). 0 for local sources. */
	uint64_t http_requests, http_retries, http_errors;
	/* Remote sources, more: bytes received in reads' bodies; and
	 * http_retries by what failed: the store asked to slow down (429,
	 * 503), a server error (500, 502, 504), the connection (a reset, a
	 * body cut short), or a transfer that stalled (no byte for 15 s) or
	 * outlasted its read's time (remote_timeout_ms). */
	uint64_t http_bytes;
	uint64_t http_retry_throttled, http_retry_server, http_retry_connection, http_retry_stalled;
	uint64_t http_connections; /* connections opened (the other requests reused one) */
	/* The node-local cache (cfg.cache_dir): remote reads served from it and
	 * their bytes; reads that went to the network while it was on (misses:
	 * each one's bytes are written to it, unless its writes fell behind the
	 * fetches (its staging memory is bounded), it was full of segments in
	 * use, or it is unusable); bytes written to it; reads that waited for
	 * another fetch of the same range (another process's, or this one's
	 * still being written); segments this process deleted to stay within
	 * cache_bytes. Hits, misses and waits are counted as they happen, the
	 * bytes written and the evictions as the ring thread passes. 0 without
	 * a cache. */
	uint64_t cache_hits, cache_hit_bytes, cache_misses, cache_written_bytes, cache_waits,
		 cache_evictions;
	/* The cache's fills (misses' bytes written to it): those that waited
	 * for its writes to make room in its staging memory (the writes behind
	 * the fetches), and those not cached for want of room (the writes
	 * stuck 2 s, a range larger than the staging memory): fetched again
	 * when next read. Counted as they happen; 0 without a cache. */
	uint64_t cache_fill_waits, cache_fill_drops;
	/* Read amplification: bytes the sample reads brought in, each read
	 * counted once however many samples it served (a chunk of a shard read
	 * front to back, a Parquet page shared by its rows in flight) and
	 * again when tried again; the samples' own bytes (a file's, a member's,
	 * a Parquet row's value); and samples served by a read another sample
	 * started instead of a read of their own. bytes_fetched / bytes_used
	 * is the amplification (random access to a Parquet page of N rows
	 * reads it once a row unless they are in flight together). bytes_read
	 * counts each sample's read whole (a Parquet page per row). */
	uint64_t bytes_fetched, bytes_used, reads_shared;
	uint64_t reserved[1];     /* zero; later counters come from here */
} rf_stats;

/* Copies the loader's counters into *out; callable at any time from the
 * consumer thread. @return : 0, -EINVAL when an argument is NULL, or
 * RF_EFORKED in a fork()ed child. */
RF_API int rf_loader_stats(const rf_loader *l, rf_stats *out);

/* @return : the detail of the loader's last error ("path: reason"), or "" if
 * none. Valid until the next call into the loader. */
RF_API const char *rf_loader_error(const rf_loader *l);

/* What the loader's samples are called: class names and sample names,
 * read from the index (no I/O). Callable at any time from any thread while
 * the loader lives.
 *
 * Class names: a folder of class folders (of images, or of tar shards)
 * numbers its classes in the sorted order of their folders' names, as
 * torchvision's ImageFolder does, and label i is the i-th name. Other
 * sources name no class: a manifest (its labels are numbers), tar shards
 * whose labels come from their cls members, token shards.
 * @return : the number of class names (0 when the source names none);
 *           -EINVAL when l is NULL; RF_EFORKED in a fork()ed child. */
RF_API int rf_loader_class_count(const rf_loader *l);

/* @return : the name of class `label` (its folder's name), a string the
 *           loader owns, valid until rf_loader_destroy(); NULL when label
 *           is not below rf_loader_class_count(), when l is NULL, or in a
 *           fork()ed child. */
RF_API const char *rf_loader_class_name(const rf_loader *l, int label);

/* Writes the name of sample `id` (an rf_batch.ids value: an index id, or a
 * token source's window id; 0 to rf_stats.samples_total - 1) into buf[len],
 * NUL-terminated and cut to fit when len is smaller (snprintf's way): the
 * name every message and on_sample_error give it. A loose file's path (the
 * source's folder joined with its path in the index, or a manifest's
 * absolute path as it is); a tar shard's member as "SHARD.tar:MEMBER"
 * after the shard's folder or URL (a URL's password shown as ***); a lost
 * span of a damaged shard as "SHARD.tar:bytes A..B"; a token window as
 * "SHARD:tokens A..B (window ID)".
 * @return : the length of the whole name, without its NUL (len or more:
 *           it was cut; call again with a buffer of the return + 1);
 *           -ERANGE when id is not a sample of the index; -EINVAL when l is
 *           NULL, or buf is NULL and len is not 0; RF_EFORKED in a fork()ed
 *           child. */
RF_API int rf_loader_sample_name(const rf_loader *l, uint64_t id, char *buf, size_t len);

/* Stops every thread, cancels reads in flight, frees everything. Returns
 * promptly (reads in flight are cancelled, not waited for). Accepts NULL.
 * Batches still held by the caller become invalid.
 *
 * fork(): a loader does not survive into a child process (its threads, ring
 * and device state stay in the parent). In the child every call on it
 * returns RF_EFORKED (or does nothing, for the functions that return void),
 * and rf_loader_destroy() frees nothing there (the memory is a copy of the
 * parent's, its locks possibly held): the child creates its own loader. */
RF_API void rf_loader_destroy(rf_loader *l);

/* ---- order, ranks and resume -------------------------------------------- */

/* Where a loader's order stands and how the ranks split it. */
typedef struct rf_order_info {
	rf_sampler sampler;          /* in use (SEQUENTIAL when cfg.shuffle = 0) */
	rf_rank_tail rank_tail;
	uint32_t rank, world_size;   /* in use */
	const char *rank_source;     /* static string: "config", the environment variables
	                              * they came from (e.g. "RANK/WORLD_SIZE"), or "default" */
	uint64_t dataset_samples;    /* samples in the index */
	uint64_t epoch_samples;      /* global positions per epoch, over all ranks */
	uint64_t rank_samples;       /* this rank's samples per epoch (the same on every rank) */
	uint64_t batches_per_epoch;  /* this rank's batches per epoch (the same on every rank) */
	uint64_t next_batch;         /* rf_batch.index of the batch rf_loader_next() returns
	                              * next (in_order = 0: batches handed out, counted from
	                              * the start of the run) */
	uint64_t total_batches;      /* where the stream ends; UINT64_MAX when endless */
	size_t sampler_bytes;        /* memory of the sampler: 0, or 8 per sample (the alias
	                              * table of WEIGHTED and BALANCED) */
	uint64_t epoch_first_batch;  /* the first batch of next_batch's epoch: epoch *
	                              * batches_per_epoch, or later in an epoch resumed on
	                              * another world size or batch size (its rest fills
	                              * the epoch's last batches; see rf_loader_state_save) */
	uint64_t reserved[7];
} rf_order_info;

/* Fills *out; callable at any time from the consumer thread.
 * @return : 0, or -EINVAL when an argument is NULL. */
RF_API int rf_loader_order(const rf_loader *l, rf_order_info *out);

/* Bytes of every state this version writes; a buffer of this size always
 * fits. A state is 152 bytes, except inside an epoch resumed on another
 * world size or batch size: 168 bytes + 16 per run of positions left (one
 * with interleaved ranks, up to a run per rank with sequential shard
 * access, 1024 at most). */
#define RF_STATE_MAX_BYTES 16552

/* Writes the loader's position into buf[len] so that a loader created with
 * cfg.resume_state = buf continues exactly where this one stands: its first
 * batch is the one this loader's next rf_loader_next() would return, then
 * the same batches in the same order (ids, labels, pixels and replacements
 * of bad samples alike), including those this loader had already read ahead,
 * whatever the thread count, io_depth, prefetch or read pool of either.
 * A batch counts as consumed once rf_loader_next() returned it, released or
 * not; after rf_loader_next() failed, the state points at the batch that
 * failed. Call it between rf_loader_next() calls on the consumer thread.
 *
 * The state (RF_STATE_MAX_BYTES at most, versioned, little-endian, with a
 * checksum) holds the position (batch, epoch), the order (sampler, with
 * shuffle = 0 as SEQUENTIAL; seed, samples_per_epoch, batch_size, drop_last,
 * on_error, shard_access and its shuffle_block), the rank layout (rank,
 * world_size, rank_tail), and fingerprints of the dataset (count, paths,
 * sizes, labels, and the weights when WEIGHTED) and of the output settings
 * (resize, crop, raw, random_resized_crop, rrc_scale, rrc_ratio, flip_p,
 * dtype, layout, mean, std, max_pixels, no_scaled_decode, no_region_decode,
 * verify_full, and which files read_pool_bytes or raw_max_bytes leaves too
 * large; for token sources, the rows' token type).
 * rf_loader_create() refuses a state whose dataset or any of those settings
 * but world_size and batch_size differ (RF_ESTATEMISMATCH, the message says
 * which), one that is truncated, corrupted or not a state (RF_ESTATE), one
 * of a newer format (RF_ESTATEVERSION), or one whose position lies past
 * this config's last epoch (RF_ESTATEMISMATCH). A different rank is
 * accepted, because the position is the same on every rank of a synchronous
 * job: each rank resumes from rank 0's state. cfg.epochs may differ (it
 * decides where the stream ends, not what it holds), and so may in_order.
 *
 * Elastic resume: world_size and batch_size may differ (a job checkpointed
 * on W ranks resumes on W' ranks: torchrun's elastic restarts, a node lost,
 * a bigger allocation). At an epoch's start that changes nothing. Inside an
 * epoch the state says which of the epoch's global positions every rank has
 * handed out (all ranks stand at the same batch); the new ranks split what
 * is left the way they split an epoch (interleaved, or in runs with
 * sequential shard access; padded or dropped per rank_tail), so that across
 * both runs each position of the epoch is delivered once; the next epochs
 * are whole. The rest's batches come last in its epoch: the first is
 * rf_order_info.epoch_first_batch, and epoch E still starts at
 * E * batches_per_epoch. Such a loader saves the rest in its state (see
 * RF_STATE_MAX_BYTES), so it can be resumed again, on any world size. The
 * one refusal (RF_ESTATEMISMATCH): sequential shard access whose rest would
 * take more than 1024 runs of positions (resume on the saving world size,
 * or from a state at an epoch's start).
 *
 * With in_order = 0 a position exists only while the batches handed out are
 * exactly those before some batch (they usually are: the lowest ready batch
 * is handed out first); otherwise the call returns -EAGAIN and a later call,
 * after more rf_loader_next(), may succeed.
 * @return : the state's size in bytes (also when buf is NULL and len 0, to
 *           ask for it); -ENOSPC when len is smaller, buf untouched;
 *           -EAGAIN (in_order = 0, see above); -EINVAL when l is NULL. */
RF_API int rf_loader_state_save(const rf_loader *l, void *buf, size_t len);

/* A saved state, decoded (for display; rf_loader_create() does its own checks). */
typedef struct rf_state_info {
	uint32_t version;            /* format version */
	uint32_t bytes;              /* size of the state */
	uint64_t next_batch;         /* rf_batch.index of the first batch after resuming */
	uint64_t epoch;              /* its epoch */
	uint64_t batch_in_epoch;     /* its number within the epoch */
	uint64_t seed;
	rf_sampler sampler;
	rf_on_error on_error;
	uint32_t batch_size, drop_last;
	uint32_t rank, world_size;
	rf_rank_tail rank_tail;
	uint32_t resize, crop;
	uint64_t epoch_samples;      /* global positions per epoch */
	uint64_t rank_samples;       /* per rank and epoch */
	uint64_t batches_per_epoch;  /* per rank */
	uint64_t epochs;             /* of the saving loader; 0 = endless */
	uint64_t dataset_samples;
	uint64_t dataset_fingerprint;
	uint64_t output_fingerprint;
	rf_shard_access shard_access; /* (a state from before shards: RANDOM) */
	uint32_t shuffle_block;      /* SEQUENTIAL: resolved, 1 without shuffle */
	uint64_t rest_epoch;         /* version 2: the epoch whose rest the state carries */
	uint64_t rest_samples;       /* positions left of it (0: the state carries no rest) */
	uint32_t rest_runs;          /* the runs they make */
	uint32_t reserved32;
	uint64_t epoch_first_batch;  /* the first batch of the state's epoch (as
	                              * rf_order_info.epoch_first_batch) */
	uint64_t reserved[3];
} rf_state_info;

/* Decodes and checks (magic, version, length, checksum) a state written by
 * rf_loader_state_save(). Reads buf[len] only during the call.
 * @return : 0 with *out filled; RF_ESTATE (truncated, corrupted, not a
 *           state) or RF_ESTATEVERSION (newer format), with a message in
 *           errmsg[errmsg_len] when errmsg is not NULL; -EINVAL when buf or
 *           out is NULL. */
RF_API int rf_state_parse(const void *buf, size_t len, rf_state_info *out,
			  char *errmsg, size_t errmsg_len);

/* Moves a state written by rf_loader_state_save() to another batch of the
 * same stream: a loader created with it resumes at batch next_batch (an
 * rf_batch.index; its epoch is next_batch / batches_per_epoch), everything
 * else as saved, so that rf_loader_create() checks it as it would the
 * original. The first batch of epoch E is E * rf_state_info.batches_per_epoch
 * (what the Python package's set_epoch() asks for), except in the epoch
 * whose rest a version-2 state carries: its batches start later, and a
 * next_batch before them moves to the first. Whether next_batch lies
 * within a loader's epochs is checked when one resumes from it. buf[len] is
 * checked as by rf_state_parse(), then rewritten in place (the position and
 * the checksum) only on success.
 * @return : 0; RF_ESTATE or RF_ESTATEVERSION (buf untouched), with a message
 *           in errmsg[errmsg_len] when errmsg is not NULL, as rf_state_parse();
 *           -EINVAL when buf is NULL. */
RF_API int rf_state_seek(void *buf, size_t len, uint64_t next_batch, char *errmsg,
			 size_t errmsg_len);

#ifdef __cplusplus
}
#endif

#endif /* RINGFEED_H */
