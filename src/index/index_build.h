/* index_build.h - what a kind's build fills an index with (records, paths,
 * the root, stamps, members) and the shared shard listing (shards.c, of
 * the names a kind's row gives). Kind-free; for src/index/ and the kinds'
 * builds in src/source/. */
#ifndef RF_INDEX_BUILD_H
#define RF_INDEX_BUILD_H

#include "index/index.h"

int rfi_index_add(rf_index *idx, const char *path, size_t len, int64_t size, int32_t label);
/* Adds a string to the arena alone (an extra's path): its offset in *off. */
int rfi_index_add_path(rf_index *idx, const char *path, size_t len, uint64_t *off);
int rfi_index_set_root(rf_index *idx, const char *root, char *err, size_t errlen);
/* Records the mtime and inode of path (relative to the root fd, "" = root). */
int rfi_index_stamp_add(rf_index *idx, int dirfd, const char *rel, const char *name);

/* Shard sources (shards.c), of the names a kind's row gives (names). Each
 * returns 1 when source is one, with the root set and the shards listed
 * (not scanned yet), 0 when it is not, or a negative code with err set. */
int rfi_index_shard_folder(rf_index *idx, const char *dir, const rf_shard_names *names, char *err,
			  size_t errlen);
int rfi_index_shard_pattern(rf_index *idx, const char *source, const rf_shard_names *names, char *err,
			   size_t errlen);
int rfi_index_is_shard_list(const char *file, const rf_shard_names *names);
/* One shard file: a source of one shard (its folder the root). */
int rfi_index_shard_file(rf_index *idx, const char *file, char *err, size_t errlen);
int rfi_index_shard_list(rf_index *idx, const char *file, const rf_shard_names *names, char *err,
			size_t errlen);
/* An S3 folder, "s3://bucket/prefix/" (the trailing '/' says it): the
 * shards of these names its listing holds. */
int rfi_index_shard_bucket(rf_index *idx, const char *source, const rf_shard_names *names, char *err,
			  size_t errlen);
/* Remote shards whose ETag idx does not know (an index built from local
 * copies, or a server without ETags): a byte of each is asked for, in
 * parallel, its size checked against shard_sizes and its ETag kept, so
 * that later reads ask for that object. @return : 0, or a negative code
 * with err naming the shard (-ESTALE: another size than indexed). */
int rfi_index_check_remote(rf_index *idx, rf_log_level log_level, char *err, size_t errlen);
/* A local source's index object beside its shards (root/ringfeed.index,
 * shards_beside.c): loaded into idx (its listed shards) instead of a scan
 * when it is trusted and every shard's size and mtime agree; what keeps
 * it from being used is logged (RF_LOG_WARN), naming the shard.
 * @return : 0 adopted (idx holds its records); 1 not (idx untouched: scan). */
int rfi_index_adopt_beside(rf_index *idx, int any_name, rf_log_level log_level);
int rfi_index_add_member(rf_index *idx, uint64_t offset, uint32_t shard, uint32_t flags);

#endif
