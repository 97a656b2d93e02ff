/* index_build.h - the two ways an index is filled, and the helpers they share.
 * Private to src/index/. */
#ifndef RF_INDEX_BUILD_H
#define RF_INDEX_BUILD_H

#include "index/index.h"

int rf_index_add(rf_index *idx, const char *path, size_t len, int64_t size, int32_t label);
int rf_index_set_root(rf_index *idx, const char *root, char *err, size_t errlen);
/* Records the mtime and inode of path (relative to the root fd, "" = root). */
int rf_index_stamp_add(rf_index *idx, int dirfd, const char *rel, const char *name);
int rf_index_walk_imagefolder(rf_index *idx, const char *dir, int any_name, char *err,
			      size_t errlen);
int rf_index_parse_manifest(rf_index *idx, const char *file, char *err, size_t errlen);

#endif
