/* files.h - the loose-files kind's own parsers (files.c is the kind's row):
 * the walk of a folder (files_walk.c) and the manifest parser
 * (files_manifest.c). Each fills an index through the shared builders of
 * src/index/index_build.h. Private to the kind. */
#ifndef RF_SOURCE_FILES_H
#define RF_SOURCE_FILES_H

#include "index/index.h"
#include "source/source.h"

/* What a walk saw besides loose samples, for deciding a folder's kind. */
typedef struct rf_files_seen {
	rf_source_seen *kinds; /* the kinds watched for (the table's
	                        * rfi_source_watched), each one's shards counted */
	size_t nkinds;
	uint64_t pack_files;   /* what a pack writes beside its shards (zstd.dict,
	                        * RF_INDEX_OBJECT_NAME): samples in raw mode */
} rf_files_seen;

/* Walks an ImageFolder tree (raw mode, any_name's RF_INDEX_RAW: every
 * regular file) into idx: labels from the first-level folders, samples in
 * sorted path order; what else it saw into *seen. 0, or a negative code
 * with err set. */
int rfi_files_walk(rf_index *idx, const char *dir, int any_name, rf_files_seen *seen, char *err,
		   size_t errlen);

/* Reads a manifest (path<TAB>label[<TAB>weight] lines, or "#columns: ...")
 * into idx. 0, or a negative code with err set (RF_EINDEX: malformed). */
int rfi_files_manifest(rf_index *idx, const char *file, char *err, size_t errlen);

#endif
