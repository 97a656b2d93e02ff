/* pack_marker.h - the mark of a pack that is not finished: `ringfeed pack`
 * (and pack --tokens) creates RF_PACK_MARKER in its output folder before it
 * writes its first shard and removes it as its very last step, once every
 * shard and the dictionary are on disk. A pack killed in between (SIGKILL,
 * the OOM killer, a crash, a power cut) leaves the marker beside whole
 * shards: the index builders refuse such a folder instead of loading the
 * prefix it holds as if it were the dataset. The name starts with '.', so
 * that tree walks pass it over. Private to the library and the CLI. */
#ifndef RF_INDEX_PACK_MARKER_H
#define RF_INDEX_PACK_MARKER_H

#include <stddef.h>

#include "index/index.h"

#define RF_PACK_MARKER ".ringfeed-pack-incomplete"

/* Is folder a whole pack, or no pack at all? folder is a path relative to
 * dirfd (AT_FDCWD: the working folder), also what the message names.
 * @return : 0 when folder holds no RF_PACK_MARKER (also when it cannot be
 *           looked into: opening its shards then says why); RF_EINDEX with
 *           err naming folder when it does. */
int rfi_index_check_complete(int dirfd, const char *folder, char *err, size_t errlen);

/* rfi_index_check_complete() on each distinct folder that holds one of
 * idx's listed shards (idx->root joined with the shard's folder), each
 * once: a folder source, a list, a glob or a brace pattern, tar or token
 * shards alike.
 * @return : 0; RF_EINDEX with err set (the first incomplete folder in
 *           sorted order); -ENOMEM. */
int rfi_index_check_shards_complete(const rf_index *idx, char *err, size_t errlen);

#endif
