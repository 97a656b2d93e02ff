/* index.h - the in-memory index of a source: which files, how big, which label.
 *
 * Memory: one arena of NUL-terminated path bytes (relative to the source's
 * root folder, or absolute) plus one fixed-size record per file. The index
 * costs RF_INDEX_RECORD_BYTES + path length + 1 bytes per file, plus one
 * string per class, plus 8 bytes per file for a manifest with weights.
 * Built once by rf_loader_create(), then read-only and shared by every
 * thread without locks. */
#ifndef RF_INDEX_H
#define RF_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h" /* rf_progress_fn */

typedef struct rf_index_entry {
	uint64_t path_off; /* offset of the path in the arena */
	int64_t size;      /* bytes at index time, or -errno when stat failed then */
	int32_t label;
	uint32_t path_len; /* bytes, without the NUL */
} rf_index_entry;

#define RF_INDEX_RECORD_BYTES 24 /* sizeof(rf_index_entry), checked at compile time */
_Static_assert(sizeof(rf_index_entry) == RF_INDEX_RECORD_BYTES, "index record size");

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
	rf_progress_fn progress; /* told every 4,096 files while building, or NULL */
	void *progress_user;
	double *weights; /* count sampling weights (finite, >= 0) from a manifest's
	                  * third column, or NULL when it has none; 8 bytes per file */
} rf_index;

/* Builds the index of source (a directory or a manifest file). any_name, the
 * RF_INDEX_* flags: RF_INDEX_RAW takes every regular file of a directory
 * (raw mode), not only JPEG names; files directly in the directory then get
 * label -1. RF_INDEX_HIDDEN takes names starting with '.' too. Returns 0, or
 * -ENOENT / -ENOTDIR / -EACCES (source unusable), RF_EINDEX (malformed
 * manifest), RF_EEMPTY (no sample), -ENOMEM; err[errlen] then says why. */
int rf_index_build(rf_index *idx, const char *source, int any_name, char *err, size_t errlen);
/* The same, telling progress (if not NULL) how it goes. */
int rf_index_build_progress(rf_index *idx, const char *source, int any_name, rf_progress_fn progress,
			    void *user, char *err, size_t errlen);

void rf_index_free(rf_index *idx);

/* Index cache (src/index/cache.c). Writes idx to path (atomically: a
 * temporary file renamed). @return : 0 or a negative errno, err set. */
int rf_index_cache_write(const rf_index *idx, const char *source, const char *path, char *err,
			 size_t errlen);
/* Loads the cache at path into idx if it was built from source in the same
 * mode and no directory (or manifest) it records changed since.
 * @return : 0 loaded; 1 stale or from elsewhere (idx untouched, err says
 *           why); negative: unreadable or corrupt (err says why). */
int rf_index_cache_load(rf_index *idx, const char *source, int any_name, const char *path,
			char *err, size_t errlen);

/* Memory the index holds now, in bytes (records + arena + class names + stamps +
 * weights). */
size_t rf_index_memory(const rf_index *idx);

static inline const char *rf_index_path(const rf_index *idx, uint64_t i)
{
	return idx->paths + idx->entries[i].path_off;
}

#endif
