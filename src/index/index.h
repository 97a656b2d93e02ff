/* index.h - the in-memory index of a source: which files, how big, which label.
 *
 * Memory: one arena of NUL-terminated path bytes (relative to the source's
 * root folder, or absolute) plus one fixed-size record per file. The index
 * costs RF_INDEX_RECORD_BYTES + path length + 1 bytes per file, plus one
 * string per class, plus 8 bytes per file for a manifest with weights.
 * Filled once by a source kind (src/source/), then read-only and shared by
 * every thread without locks. */
#ifndef RF_INDEX_H
#define RF_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "remote/transport.h" /* rf_transport: how the shards are reached */
#include "ringfeed.h" /* rf_progress_fn */

typedef struct rf_index_entry {
	uint64_t path_off; /* offset of the path in the arena */
	int64_t size;      /* bytes at index time, or -errno when stat failed then */
	int32_t label;
	uint32_t path_len; /* bytes, without the NUL */
} rf_index_entry;

#define RF_INDEX_RECORD_BYTES 24 /* sizeof(rf_index_entry), checked at compile time */
_Static_assert(sizeof(rf_index_entry) == RF_INDEX_RECORD_BYTES, "index record size");

/* Shard sources: where a sample's member is. One per entry, beside it. */
typedef struct rf_index_member {
	uint64_t offset;   /* of the member's data in its shard */
	uint32_t shard;    /* index into rf_index.shards */
	uint32_t flags;    /* RF_MEMBER_* */
} rf_index_member;
#define RF_MEMBER_ZSTD 1u /* the member is one zstd frame (name ends in .zst) */

/* Sizes of shard samples that cannot be used, each with its reason
 * (rfi_index_bad_reason); any other negative size is -errno from a stat. */
#define RF_INDEX_NO_IMAGE (-100000)  /* no image member (jpg, jpeg, png, webp) */
#define RF_INDEX_BAD_LABEL (-100001) /* a cls member that is not a label */
#define RF_INDEX_TRUNCATED (-100002) /* runs past the end of its shard */
#define RF_INDEX_TWO_LABELS (-100003) /* two cls members */
#define RF_INDEX_TWO_IMAGES (-100004) /* two members of its image's extension */
#define RF_INDEX_NO_MEMBER (-100005) /* raw mode: no member besides cls */
#define RF_INDEX_NO_LABEL (-100006)  /* no cls member, in a source whose samples have one */
/* Not samples: spans of a shard whose samples are lost, each an entry of
 * its own (named "bytes A..B") so that it is reported, counted and, with
 * on_error = fail, fails the run like a bad sample. */
#define RF_INDEX_DAMAGED (-100007)   /* bytes that are not tar members */
#define RF_INDEX_UNENDED (-100008)   /* the shard ends without end-of-archive blocks */
#define RF_INDEX_REASON_FIRST RF_INDEX_UNENDED
#define RF_INDEX_REASON_LAST RF_INDEX_NO_IMAGE
/* Is size one of the codes above? */
#define RF_INDEX_IS_REASON(size) ((size) >= RF_INDEX_REASON_FIRST && (size) <= RF_INDEX_REASON_LAST)
/* Is it a lost span rather than a sample? */
#define RF_INDEX_IS_LOST(size) ((size) == RF_INDEX_DAMAGED || (size) == RF_INDEX_UNENDED)

/* A sample's other members: what a WebDataset sample (or, in a loose tree,
 * the files beside its image with the same key, as img2dataset's "files"
 * layout writes them) holds besides its image and label, under one key:
 * KEY.txt, KEY.json, ... Delivered as fields (cfg.fields) beside the
 * pixels; the index keeps them all, so that which fields a run asks for
 * needs no new index. 16 bytes each, none for a sample that has none. */
typedef struct rf_index_extra {
	uint64_t at;       /* RF_EXTRA_MEMBER: its data's offset in the sample's shard;
	                    * RF_EXTRA_FILE: its path's offset in the arena;
	                    * RF_EXTRA_INLINE: its bytes' offset in the arena */
	uint32_t size;     /* bytes (UINT32_MAX: 4 GiB or more) */
	uint16_t name;     /* its extension, lowercased: idx->extra_names[name] */
	uint16_t how;      /* RF_EXTRA_MEMBER, RF_EXTRA_FILE or RF_EXTRA_INLINE */
} rf_index_extra;
#define RF_EXTRA_MEMBER 0 /* a member of the sample's shard */
#define RF_EXTRA_FILE 1   /* a file of its own (a loose tree) */
#define RF_EXTRA_INLINE 2 /* its bytes are in the index (a manifest's caption column) */
#define RF_EXTRA_NAMES_MAX 4096 /* extensions kept; members with further ones are not */
/* An extra's extension is shorter than this many bytes (no one types that
 * long a field name: fields.c refuses one); a kind keeps no member with a
 * longer one, and counts it (RF_UNKEPT_LONG). */
#define RF_EXTRA_EXT 32

/* The names a kind's shards have, as its row gives them
 * (src/source/source.h: rf_source_ops.shard_names): what the shard listing
 * (shards.c: a folder, its class folders, a list, a pattern, a bucket)
 * takes as a shard. The listing knows no kind but through these. */
typedef struct rf_shard_names {
	const char *const *suffixes; /* a shard's name ends with one of these
	                              * (and is longer); NULL ends the list */
	const char *shown;           /* the names as messages say them: ".x or .y" */
	int class_folders;           /* a folder with no shards of its own may hold
	                              * them in its class folders (labelled by folder) */
	int any_depth;               /* a remote listing's shards at any depth, in name
	                              * order (a dataset's CONFIG/SPLIT/ files), not
	                              * only the folder's own */
} rf_shard_names;

/* Is name (its first n bytes) one of these shards' names? */
int rfi_shard_named(const rf_shard_names *names, const char *name, size_t n);

typedef struct rf_index_stamp {
	char *path;     /* relative to root ("" = root), or the manifest's absolute path */
	int64_t mtime_sec, mtime_nsec;
	uint64_t ino;
} rf_index_stamp;

typedef struct rf_index {
	rf_index_entry *entries;
	size_t count, cap;
	char *paths; /* the arena */
	size_t paths_len, paths_cap;
	char *root;     /* folder the relative paths start from */
	int root_fd;    /* open O_PATH descriptor of root, for openat() */
	char **classes; /* ImageFolder class names, label order; NULL for manifests */
	int nclasses;
	/* What the index was built from, for the cache's staleness check: every
	 * directory walked (or the manifest), with its mtime and inode. */
	rf_index_stamp *stamps;
	size_t nstamps, cap_stamps;
	int any_name;   /* how it was built: RF_INDEX_RAW | RF_INDEX_HIDDEN (ringfeed.h) */
	uint32_t kind;  /* the source kind that built it (rf_kind, src/source/source.h;
	                 * 0: none said), kept in the cache: the records never tell it */
	rf_progress_fn progress; /* told every 4,096 files while building, or NULL */
	void *progress_user;
	double *weights; /* count sampling weights (finite, >= 0) from a manifest's
	                  * third column, or NULL when it has none; 8 bytes per file */
	/* Shard sources (src/index/shards.c): the entries' paths are member
	 * names inside the shards; NULL / 0 for loose files. */
	rf_index_member *members; /* one per entry */
	size_t members_cap;
	char **shards;            /* shard paths, relative to root */
	char **urls;              /* remote shards (http(s)://, issue 25): each shard's whole
	                           * URL (root + "/" + its path); NULL for local ones. root
	                           * is then the URL of their folder, root_fd -1 */
	uint64_t *shard_sizes;    /* each shard's bytes when it was indexed, or NULL */
	char (*etags)[RF_IO_ETAG_MAX]; /* remote shards: each one's ETag when it was
	                           * indexed ("" none); its reads ask for it (If-Match) */
	int etags_seen;           /* every ETag came from the server in this process (an
	                           * index scanned or checked now, not one cached with them) */
	rf_transport *transport;  /* remote shards: the row their scheme chose and its
	                           * state (an s3 bucket, its signer for every read:
	                           * rfi_transport_sign); NULL for local ones */
	int32_t *shard_labels;    /* each shard's class folder label, or -1 */
	size_t nshards;
	uint32_t remote_timeout_ms; /* remote shards: each set-up request's and scan
	                           * read's time, all its tries (rf_config's
	                           * remote_timeout_ms; 0: RF_IO_URL_BUDGET_MS) */
	/* remote shards: the node cache a scan's windows fill (the members
	 * they hold whole, keyed as the samples' reads are), so that epoch 1
	 * does not fetch them again; NULL dir: none. Borrowed from the
	 * loader's config for the build. */
	const char *scan_cache_dir, *scan_cache_group;
	uint64_t scan_cache_bytes;
	/* Other members (extras.c): sample i's are extras[extra_first[i] ..
	 * extra_first[i + 1]) (.. nextras for the last); extra_first is NULL
	 * when no sample has any. While building, extra_owner holds each
	 * extra's sample (its path_off), until rfi_index_extras_settle(). */
	rf_index_extra *extras;
	size_t nextras, extras_cap;
	uint32_t *extra_first;
	uint64_t *extra_owner;
	char **extra_names;       /* the extensions extras have, lowercased */
	uint32_t nextra_names;
	/* Other members kept as no sample's extra, counted while building (a
	 * warning names them once, rfi_index_warn_unkept; pack refuses them):
	 * [RF_UNKEPT_NAMES] those whose extension came after the
	 * RF_EXTRA_NAMES_MAX distinct ones kept, [RF_UNKEPT_LONG] tar members
	 * whose extension is RF_EXTRA_EXT bytes or longer (longer than a
	 * field's name can be). The first of each, as messages name it. */
	uint64_t unkept[2];
	char unkept_first[2][256];
	/* The kind's own part of an index cache (rf_source_ops.save/restore: a
	 * Parquet table), as the cache holds it; NULL when none. Written and
	 * judged by its kind alone. */
	uint8_t *kind_blob;
	size_t kind_blob_len;
} rf_index;
#define RF_UNKEPT_NAMES 0
#define RF_UNKEPT_LONG 1

/* The lost spans of a shard source's index (RF_INDEX_IS_LOST entries,
 * named "bytes A..B"): how many, and their bytes. */
void rfi_index_lost(const rf_index *idx, uint64_t *spans, uint64_t *bytes);

/* Is source an http(s) URL (a remote source, issue 25)? */
int rfi_index_is_url(const char *source);

/* Shard i as messages name it: root/name, or a list's URL as it stands,
 * without its query (a presigned URL's signature is a credential: only
 * idx->urls, what is read, holds it). */
const char *rfi_index_shard_shown(const rf_index *idx, size_t i, char *buf, size_t len);

/* Trims the growth slack of a built index (it lives as long as the loader). */
void rfi_index_trim(rf_index *idx);

void rfi_index_free(rf_index *idx);

/* Index cache (src/index/index_file.c). Is path a file the cache may be written over: nothing yet, or a ringfeed
 * index cache (of any version)? Anything else (a shard, a list, a folder,
 * a FIFO) is refused, so that a mistyped --index-cache destroys nothing.
 * @return : 0, or RF_ECONFIG (or a negative errno) with err[errlen] saying
 *           why. rfi_index_cache_write() checks it too. */
int rfi_index_cache_check_target(const char *path, char *err, size_t errlen);

/* Writes idx to path (atomically: a temporary file renamed), when
 * rfi_index_cache_check_target() allows. @return : 0 or a negative code, err set. */
int rfi_index_cache_write(const rf_index *idx, const char *source, const char *path, char *err,
			 size_t errlen);
/* Loads the cache at path into idx if it was built from source in the same
 * mode and no directory (or manifest) it records changed since.
 * @return : 0 loaded; 1 stale or from elsewhere (idx untouched, err says
 *           why); negative: unreadable or corrupt (err says why). */
int rfi_index_cache_load(rf_index *idx, const char *source, int any_name, const char *path,
			char *err, size_t errlen);

/* The index object `ringfeed pack` writes beside its shards, and the name
 * a remote source looks for beside its shards when index_cache is unset. */
#define RF_INDEX_OBJECT_NAME "ringfeed.index"

/* A remote source's index object (http(s)://, s3://; index_file.c's format):
 * idx holds the shards the source lists (not scanned yet, urls set); when
 * the index at path (a local file, or a URL fetched now) is of the same
 * kind (idx->kind), root, shards and mode, its records and each shard's ETag replace idx's.
 * @return : 0 adopted; 1 not (none there, or of other shards: err says
 * which); negative: a fetch or the file failed (err set). */
int rfi_index_cache_adopt(rf_index *idx, int any_name, const char *path, char *err, size_t errlen);

/* The index object read from fd (which it closes; a negative errno from
 * opening it: -ENOENT is none there), named path in messages, into *t when
 * it lists idx's shards (names, in order) in idx's mode (any_name's
 * RF_INDEX_RAW). Its checks of the shards themselves (ETags, sizes) are the
 * caller's. @return : 0 with *t filled (free it); 1 not (none there, or of
 * other shards: err says which); negative: unreadable or corrupt (err set). */
int rfi_index_cache_of_shards(rf_index *t, const rf_index *idx, int any_name, int fd,
			     const char *path, char *err, size_t errlen);

/* The URL a remote shard (or an index object beside the shards) is read
 * at: an http(s) URL as it is; an s3:// one as its bucket's object URL
 * (idx's bucket, opened at the first). *out is malloc'd. @return : 0 or a
 * negative code, err set. */
int rfi_index_read_url(rf_index *idx, const char *url, char **out, char *err, size_t errlen);

/* Memory the index holds now, in bytes (records + arena + class names + stamps +
 * weights). */
size_t rfi_index_memory(const rf_index *idx);

static inline const char *rfi_index_path(const rf_index *idx, uint64_t i)
{
	return idx->paths + idx->entries[i].path_off;
}

/* What to call sample i in a message: its path, or "SHARD:MEMBER" for a
 * shard source. @return : buf. */
const char *rfi_index_name(const rf_index *idx, uint64_t i, char *buf, size_t len);

/* Why a sample whose size is negative cannot be read: the shard reasons
 * above, or "cannot stat: <errno text>". Static strings or buf. */
const char *rfi_index_bad_reason(int64_t size, char *buf, size_t len);

/* Extras (extras.c). The id of extension ext (lowercased), added when new:
 * >= 0, or -ENOMEM, or -E2BIG past RF_EXTRA_NAMES_MAX names. */
int rfi_index_extra_name(rf_index *idx, const char *ext, size_t len);
/* The id of ext among the names (any case), or -1 when no extra has it. */
int rfi_index_extra_find(const rf_index *idx, const char *ext);
/* Counts a member the index keeps as no sample's extra (why:
 * RF_UNKEPT_NAMES or RF_UNKEPT_LONG), named (printf-style) the first time. */
void rfi_index_unkept(rf_index *idx, int why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Says once, at level warn, which members of source the index did not
 * keep and why (nothing when it kept them all). */
void rfi_index_warn_unkept(const rf_index *idx, const char *source, rf_log_level log_level);
/* Adds an extra to the sample added last (rfi_index_add), or to record
 * `entry` (added, not yet sorted). */
int rfi_index_add_extra(rf_index *idx, uint32_t name, uint64_t at, uint64_t size, int how);
int rfi_index_add_extra_of(rf_index *idx, size_t entry, uint32_t name, uint64_t at,
			  uint64_t size, int how);
/* An extra of record `entry` that is a file of its own: path (relative to
 * the root) goes into the arena; the extension of its base name (after its
 * first dot) names it. A size < 0 (the stat failed) adds nothing. */
int rfi_index_add_extra_file(rf_index *idx, size_t entry, const char *path, size_t len,
			    int64_t size);
/* An extra of the sample added last whose bytes are kept in the arena
 * (a manifest column's text). */
int rfi_index_add_extra_inline(rf_index *idx, uint32_t name, const char *bytes, size_t len);
/* After the records are in their final order (a walk sorts them): ties
 * each extra to its sample's position. @return : 0 or -ENOMEM. */
int rfi_index_extras_settle(rf_index *idx);
/* Sample i's extras: a pointer to the first, and how many in *n. */
static inline const rf_index_extra *rfi_index_extras_of(const rf_index *idx, uint64_t i,
							 uint32_t *n)
{
	if (!idx->extra_first) {
		*n = 0;
		return NULL;
	}
	uint32_t a = idx->extra_first[i];
	uint32_t b = i + 1 < idx->count ? idx->extra_first[i + 1] : (uint32_t)idx->nextras;
	*n = b - a;
	return idx->extras + a;
}
void rfi_index_extras_free(rf_index *idx);
size_t rfi_index_extras_memory(const rf_index *idx);

/* Whether ext (a file's or a shard member's extension, without the dot,
 * any case) names an image: jpg, jpeg, png, webp. Which of them a file is
 * the decoder tells by its bytes (src/decode/image.c); the name only says
 * which files and members are samples. The one list the walk and the shard
 * scan share. */
int rfi_index_image_ext(const char *ext);

#endif
