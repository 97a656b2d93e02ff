/* tar_scan.h - the tar kind's scan of a source's listed shards (tar_scan.c),
 * which tar_shards.c calls once src/index/shards.c has listed them. Private
 * to the tar kind. */
#ifndef RF_SOURCE_TAR_SCAN_H
#define RF_SOURCE_TAR_SCAN_H

#include <stddef.h>

#include "index/index.h"

/* Scans the listed shards' headers (many at once, through the read engine)
 * and adds their samples to idx, in shard order. raw: a sample's member is
 * KEY.bin rather than an image. @return : 0, or a negative code with err
 * set. */
int rfi_tar_scan_shards(rf_index *idx, int raw, rf_log_level log_level, char *err,
		       size_t errlen);

#endif
