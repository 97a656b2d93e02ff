/* source.h - a source of samples, whatever its format: loose files (a
 * folder walk or a manifest), WebDataset tar shards, token shards, or
 * Parquet files. Each kind is one module (files.c, tar_shards.c,
 * token_shards.c, parquet.c) behind the same table, rf_source_ops; one probe table (source.c) picks the kind of a
 * source string. The rest of the loader knows a sample only through this
 * table: its name for messages, its label, the read that fetches its bytes
 * (file, offset, length) and the stage that turns those bytes into a sample.
 *
 * The records themselves (src/index/index.h) are kind-free: a name, a size,
 * a label, and for a sample inside a container file (a shard) where it lies.
 *
 * Each kind keeps what else it needs in its own private state (rf_source.priv,
 * made and freed by its build and free), which only its own files read:
 * the loader asks the kind, through its row, what it needs to know
 * (capabilities below, token rows, zstd frames).
 *
 * Built once by rf_loader_create() (or `ringfeed index`, `pack`), then
 * read-only and shared by every thread without locks. Private. */
#ifndef RF_SOURCE_H
#define RF_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "index/index.h"
#include "ringfeed.h"

/* What a source holds: the tag of its row in the kind table. An index
 * cache keeps it (rf_index.kind), so a loaded index is of the kind that
 * built it, never of one guessed from its records. A kind's number is in
 * cache files: a new kind takes the next one, none is reused. */
typedef enum rf_kind {
	RF_KIND_NONE = 0,   /* not said (a zeroed source or index) */
	RF_KIND_FILES = 1,  /* loose files: one file, one sample */
	RF_KIND_TAR = 2,    /* WebDataset tar shards: a sample is a member's byte range */
	RF_KIND_TOKENS = 3, /* token shards: a sample is a window of seq_len + 1 tokens */
	RF_KIND_PARQUET = 4, /* Parquet files: a sample is a row, read as its page */
	RF_KIND_COUNT
} rf_kind;

/* What turns a sample's read bytes into the sample in its batch slot, and
 * which thread does it: the ring thread (RAW, TOKENS: a copy, no decode) or
 * a decoder (the rest: the compute pool; a JPEG also the GPU's engines). */
typedef enum rf_stage {
	RF_STAGE_RAW = 0,      /* the bytes as they are (raw mode) */
	RF_STAGE_TOKENS,       /* a window's tokens into its row */
	RF_STAGE_IMAGE,        /* decode (JPEG, PNG or WebP, told by its bytes), crop,
	                        * resize into the slot */
	RF_STAGE_ZSTD_RAW,     /* one zstd frame, then as RAW */
	RF_STAGE_ZSTD_IMAGE,   /* one zstd frame, then as IMAGE */
	RF_STAGE_ZSTD_TOKENS,  /* the zstd frames that hold a window, then as TOKENS */
	RF_STAGE_FETCH,        /* nothing: the read is all there is (fetch_only) */
	RF_STAGE_KIND_RAW,     /* the kind's extract (a row's value out of its page),
	                        * then as RAW */
	RF_STAGE_KIND_IMAGE,   /* the kind's extract, then as IMAGE */
} rf_stage;

/* rf_source_ops.field_read's answers. */
enum { RF_FIELD_READ = 0, RF_FIELD_KEPT = 1, RF_FIELD_NULL = 2 };

/* What a source is built with (from rf_config). */
typedef struct rf_source_params {
	int mode;          /* RF_INDEX_RAW | RF_INDEX_HIDDEN | RF_INDEX_FILES | RF_INDEX_TAR */
	uint32_t seq_len;  /* > 0: a token source, windows of seq_len + 1 tokens */
	uint32_t stride;   /* tokens between window starts (0: seq_len) */
	const char *cache; /* index cache file, or NULL */
	rf_progress_fn progress; /* told every 4,096 files while walking, or NULL */
	void *progress_user;
	rf_log_level log_level;  /* of what the build notices (damaged shards) */
	uint32_t remote_timeout_ms; /* remote sources: a set-up request's time, all its
	                          * tries (0: the default, as cfg's) */
	const char *cache_dir;   /* the node cache a remote scan fills (cfg.cache_dir), or NULL */
	const char *cache_group; /* ... cfg.cache_group */
	uint64_t cache_bytes;    /* ... cfg.cache_bytes */
	const char *columns;     /* cfg.columns ("image=NAME,label=NAME"), or NULL: read
	                          * by a kind with columns; refused for the others */
} rf_source_params;

/* The read that fetches a sample's bytes: a file of its own (path, relative
 * to the root) or a range of shard `shard`. */
#define RF_NO_SHARD UINT32_MAX
typedef struct rf_source_read {
	const char *path;  /* its own file, or NULL */
	uint32_t shard;    /* else: the shard (index.shards[shard]) */
	uint64_t offset;
	uint32_t len;      /* bytes to read */
	uint32_t expect;   /* bytes a read of an unchanged source gives (a loose
	                    * file is read one byte past its size, so that a file
	                    * that grew shows) */
} rf_source_read;

typedef struct rf_source rf_source;

/* What a folder walk saw of a kind that takes a folder by its look (a row
 * with take_folder): its shards, by the names its row gives. */
typedef struct rf_source_seen {
	const struct rf_source_ops *ops; /* the kind watched for */
	uint64_t n;                      /* files named as its shards */
	char first[256];                 /* the first of them, relative to the root */
} rf_source_seen;

/* For an RF_STAGE_ZSTD_TOKENS read: the zstd frames it holds and where
 * the window lies in them. */
typedef struct rf_source_frames {
	uint32_t shard;     /* the shard read */
	uint32_t first;     /* the first frame read */
	uint32_t last;      /* the frame holding the window's last token */
	uint64_t frame_tokens; /* tokens per frame (the shard's last frame: fewer) */
	uint64_t shard_tokens; /* tokens in the shard */
	uint64_t token;     /* the window's first token, in the shard */
	uint64_t tokens;    /* tokens in the window */
} rf_source_frames;

/* One kind: a row of the probe table. Functions taking a sample id get one
 * below rfi_source_samples(). */
typedef struct rf_source_ops {
	rf_kind kind;     /* the tag of the sources it builds */
	const char *name; /* for messages: "loose files", "tar shards", ... */
	/* Is source this kind's? st: its stat, or NULL when no such path exists
	 * (a pattern). 1 yes, 0 no. Asked in table order; the first yes builds. */
	int (*claims)(const char *source, const struct stat *st, const rf_source_params *p);
	/* Fills s->index and the kind's own state from source. 0, or a
	 * negative code with err set (s is freed by the caller). */
	int (*build)(rf_source *s, const char *source, const struct stat *st,
		     const rf_source_params *p, char *err, size_t errlen);
	const char *(*name_of)(const rf_source *s, uint64_t i, char *buf, size_t len);
	int32_t (*label)(const rf_source *s, uint64_t i);
	/* What is wrong with sample i before any read, from its record: 0, or
	 * the error (RF_EBADSAMPLE, RF_ELOST, -errno) with reason set. */
	int (*check)(const rf_source *s, uint64_t i, char *reason, size_t len);
	void (*read_of)(const rf_source *s, uint64_t i, rf_source_read *r);
	rf_stage (*stage)(const rf_source *s, uint64_t i);
	/* Why a read gave got bytes instead of r->expect. */
	void (*cut_short)(const rf_source *s, const rf_source_read *r, int got, char *reason,
			  size_t len);
	/* A hash of what the samples are (saved states refuse another
	 * dataset); with_weights: a manifest's weights count too. */
	uint64_t (*fingerprint)(const rf_source *s, int with_weights);
	/* Samples the source holds. */
	uint64_t (*samples)(const rf_source *s);
	/* Bytes of the largest read read_of() gives, or 0 when only the
	 * records say (files, tar members: their sizes). */
	uint64_t (*largest_read)(const rf_source *s);
	/* Bytes of shard `shard` when the source knows them (token shards:
	 * read ahead stops there), else 0 (tar shards: no read-ahead). */
	uint64_t (*shard_bytes)(const rf_source *s, uint32_t shard);
	size_t (*memory)(const rf_source *s);
	/* Frees the kind's private state (s->priv) and sets it NULL; the
	 * records are freed by the caller. */
	void (*free)(rf_source *s);
	/* Samples that are token rows (RF_STAGE_TOKENS): bytes per stored
	 * token (2 or 4). NULL for a kind whose samples are bytes or images. */
	uint32_t (*token_width)(const rf_source *s);
	/* RF_STAGE_ZSTD_TOKENS: where sample i's window lies in the frames its
	 * read gives. NULL for a kind without that stage. */
	void (*frames_of)(const rf_source *s, uint64_t i, rf_source_frames *f);
	/* RF_STAGE_KIND_RAW / RF_STAGE_KIND_IMAGE, on a compute thread: sample
	 * i's bytes out of what its read gave (data[len]): a Parquet row's value
	 * out of its page, decompressed. *out, *out_len: bytes in data or in the
	 * thread's *scratch (NULL at first: the kind makes it, and keeps what
	 * *out points to until the thread's next call), which scratch_free
	 * frees when the thread ends. 0, or RF_EBADSAMPLE / -ENOMEM with reason
	 * set. NULL for a kind without that stage. */
	int (*extract)(const rf_source *s, uint64_t i, const uint8_t *data, size_t len,
		       void **scratch, const uint8_t **out, size_t *out_len, char *reason,
		       size_t rlen);
	void (*scratch_free)(void *scratch);
	/* Fields that are columns of its rows (cfg.fields; a kind with
	 * columns), else NULL and fields are index records' members.
	 * field_column, at create: field `name`'s column, its number in *id (-1:
	 * optional and no file has it). 0, or RF_ECONFIG with err naming the
	 * columns there are. The kind keeps what it needs to read it. */
	int (*field_column)(const rf_source *s, const char *name, int optional, int *id,
			    char *err, size_t errlen);
	/* Column id's value for sample i: RF_FIELD_READ, r the read that gives
	 * it (its page: a read of the sample's shard; r->len 0: the sample's
	 * file lacks the column); RF_FIELD_KEPT, the value is in memory
	 * (*value, *len: no read); RF_FIELD_NULL, kept, and a null. */
	int (*field_read)(const rf_source *s, uint64_t i, int id, rf_source_read *r,
			  const uint8_t **value, uint32_t *len);
	/* On a compute thread, after extract (same scratch; the value lives as
	 * long as extract's): field k's (its place in cfg.fields, column id)
	 * value for sample i out of what its read gave (data[len]): *out,
	 * *out_len, *present (0: a null). 0, or RF_EBADSAMPLE with reason set. */
	int (*field_extract)(const rf_source *s, uint64_t i, uint32_t k, int id,
			     const uint8_t *data, size_t len, void **scratch, const uint8_t **out,
			     size_t *out_len, int *present, char *reason, size_t rlen);
	/* The names of its shards, for the shard listing (src/index/shards.c:
	 * suffixes, whether class folders hold them); NULL for a kind without
	 * shards. */
	const rf_shard_names *shard_names;
	/* The cfg.source_kind value users force this kind with (a folder that
	 * could be read two ways), and the rf_index_write() flag (RF_INDEX_*)
	 * that value maps to; both 0 for a kind no source_kind names (tokens:
	 * said by seq_len). The one mapping: everyone asks the table
	 * (rfi_source_kind_mode and kin below). */
	rf_source_kind source_kind;
	int mode_flag;
	/* A folder another kind's walk found holding only this kind's shards
	 * (seen: how many, the first), with no source_kind said: builds s from
	 * it, as the table hands it over (rfi_source_hand_over: s's records
	 * freed, s of this kind), or refuses it (shards where its shards do not
	 * go). NULL: a folder is never this kind's by its look. */
	int (*take_folder)(rf_source *s, const char *source, const rf_source_seen *seen,
			   const rf_source_params *p, char *err, size_t errlen);
	int columns;       /* its samples are rows of columns: cfg.columns says which
	                    * column is which (others refuse a set columns) */
	int cached;        /* its index may come from and go to an index cache */
	/* A kind whose samples live in its own state (priv), not in records,
	 * and that keeps it in the cache: save puts what a later create needs
	 * into s->index.kind_blob (index_file.c writes it), restore builds the
	 * state back from it after a cache load: 0, 1 stale (a file changed:
	 * the source is built again), negative with err set. NULL both: none. */
	int (*save)(rf_source *s, char *err, size_t errlen);
	int (*restore)(rf_source *s, char *err, size_t errlen);
	int zstd_dict;     /* its zstd members may use a dictionary (cfg.zstd_dict,
	                    * or zstd.dict beside the shards) */
	int in_order_tiles; /* its samples in index order tile its shards (windows
	                    * of stride <= seq_len): read in chunks when in order */
	int sequential_shards; /* shard_access = sequential: its samples lie in
	                    * shards, each shard one run of ids (shard_of says
	                    * which), which ranks can read as runs of whole
	                    * shards, front to back */
	int shared_reads;  /* many samples' reads are the same range (a Parquet
	                    * page holds many rows): random access shares one read
	                    * among the samples in flight on it (chunks.c,
	                    * page_units) */
	/* Reads in chunks (shard_access = sequential, in_order_tiles) of a kind
	 * whose reads may be larger than a chunk's slack (a Parquet page of
	 * 1 MiB or more): [*start, *end), the bytes of shard that hold every
	 * read starting in [from, to) (none: *start = *end = from), so that a
	 * chunk's read holds its samples' reads whole and no byte is read by
	 * two chunks. NULL: a chunk is [from, to) and the largest read past it
	 * (token windows), or a member across two chunks is read alone (tar). */
	void (*tile)(const rf_source *s, uint32_t shard, uint64_t from, uint64_t to,
		     uint64_t *start, uint64_t *end);
	/* With sequential_shards: the shard sample i lies in (tar: its
	 * member's; Parquet: its row's file). NULL for the other kinds. */
	uint32_t (*shard_of)(const rf_source *s, uint64_t i);
} rf_source_ops;

struct rf_source {
	rf_kind kind;
	const rf_source_ops *ops;  /* the kind's row of the table */
	rf_index index;            /* the records; root, shards, stamps */
	int raw;                   /* samples are bytes, not images (RF_INDEX_RAW) */
	const char *columns;       /* cfg.columns (rf_source_params'), or NULL: read
	                            * while it is opened (a kind's restore compares
	                            * what its cached state was built for) */
	int any_zstd;              /* some sample is zstd (the compute pool decompresses) */
	int cached;                /* the index came from the cache */
	void *priv;                /* the kind's own state, or NULL: read by its
	                            * files alone (token shards: their headers and
	                            * windows, token_windows.h) */
};

/* Builds the source: picks its kind (the probe table), then loads its
 * index from p->cache when that still matches, or builds it (and then
 * rewrites the cache; failing to write it is logged, not fatal).
 * @return : 0; -ENOENT and kin (source unusable); RF_EINDEX; RF_EEMPTY (no
 *           sample); RF_ECONFIG (a cache path that is not a cache);
 *           -ENOMEM; err[errlen] then says why. */
int rfi_source_open(rf_source *s, const char *source, const rf_source_params *p, char *err,
		   size_t errlen);
/* Frees what open built; accepts a zeroed or freed source. */
void rfi_source_free(rf_source *s);

/* Room for a reason (the loader's RF_REASON_LEN). */
#define RF_SOURCE_REASON_LEN 192

/* The kinds, in probe order, and the one of each tag. */
extern const rf_source_ops rf_source_files, rf_source_tar, rf_source_tokens, rf_source_parquet;
const rf_source_ops *rfi_source_kind_ops(rf_kind kind);

/* cfg.source_kind, from the table's rows: the RF_INDEX_* flag of value k
 * (0 for RF_SOURCE_AUTO and for a value no kind answers to); every kind's
 * flag or'ed (what a mode's kind part may hold); and the largest value a
 * kind answers to (the config's range check ends there). */
int rfi_source_kind_mode(rf_source_kind k);
int rfi_source_kind_modes(void);
rf_source_kind rfi_source_kind_last(void);

static inline uint64_t rfi_source_samples(const rf_source *s)
{
	return s->ops->samples(s);
}

static inline const char *rfi_source_name(const rf_source *s, uint64_t i, char *buf, size_t len)
{
	return s->ops->name_of(s, i, buf, len);
}

static inline int32_t rfi_source_label(const rf_source *s, uint64_t i)
{
	return s->ops->label(s, i);
}

static inline void rfi_source_read_of(const rf_source *s, uint64_t i, rf_source_read *r)
{
	s->ops->read_of(s, i, r);
}

static inline rf_stage rfi_source_stage(const rf_source *s, uint64_t i)
{
	return s->ops->stage(s, i);
}

/* Bytes per stored token of a source whose samples are token rows, else 0. */
static inline uint32_t rfi_source_token_width(const rf_source *s)
{
	return s->ops->token_width ? s->ops->token_width(s) : 0;
}

/* What to call sample i in a message or a report to the user: its name
 * (rfi_source_name) under the source's root folder, or as it is when the
 * name is already absolute (a manifest's absolute paths). Every message
 * and the on_sample_error callback name a sample this one way. @return : buf. */
const char *rfi_source_path(const rf_source *s, uint64_t i, char *buf, size_t len);

/* The file a read is from, relative to the root. */
static inline const char *rfi_source_file(const rf_source *s, const rf_source_read *r)
{
	return r->path ? r->path : s->index.shards[r->shard];
}

/* Helpers the kinds of records share (records.c): a record's label, its
 * check, name, fingerprint and memory. */
int32_t rfi_records_label(const rf_source *s, uint64_t i);
int rfi_records_check(const rf_source *s, uint64_t i, char *reason, size_t len);
uint64_t rfi_records_fingerprint(const rf_source *s, int with_weights);
uint64_t rfi_records_samples(const rf_source *s);
size_t rfi_records_memory(const rf_source *s);
uint64_t rfi_records_no_largest(const rf_source *s);
uint64_t rfi_records_no_shard_bytes(const rf_source *s, uint32_t shard);
/* After a build: refuses an empty index (naming the source, st: its stat
 * or NULL), and trims the growth slack (the index lives as long as the
 * loader). */
int rfi_records_finish(rf_source *s, const char *source, const struct stat *st, char *err,
		      size_t errlen);

/* Cold path, after a read of sample i failed or came short, or its stat
 * did: when its file is no longer a regular file (a FIFO, a device, a
 * folder), says so in reason and returns 1. */
int rfi_source_not_regular(const rf_source *s, uint64_t i, char *reason, size_t len);

/* For a kind that walks folders (files.c): the kinds that take a folder
 * by its look, in table order, into seen[max] (counts zeroed); how many. */
size_t rfi_source_watched(rf_source_seen *seen, size_t max);
/* A walked folder that holds only seen->ops's shards: s (walked, of the
 * walker's kind) becomes of that kind, its records freed, and the kind's
 * take_folder builds it. 0, or a negative code with err set. */
int rfi_source_hand_over(rf_source *s, const char *source, const rf_source_seen *seen,
			 const rf_source_params *p, char *err, size_t errlen);

/* The index of a loose-files or tar source (no cache), for what reads its
 * records alone (pack, tests): rfi_source_open() with the kind's state
 * dropped. Token sources are refused (RF_EINDEX). */
int rfi_index_build(rf_index *idx, const char *source, int any_name, char *err, size_t errlen);
int rfi_index_build_progress(rf_index *idx, const char *source, int any_name, rf_progress_fn progress,
			    void *user, rf_log_level log_level, char *err, size_t errlen);

/* rf_index_write() behind src/lib.c's checks (source and path not NULL, raw
 * a set of RF_INDEX_* flags). */
int rfi_index_write(const char *source, int raw, const char *path, uint64_t *files,
		    rf_progress_fn progress, void *user, char *err, size_t errlen);

#endif
