/* files.h - the loose-files kind's own parsers (files.c is the kind's row):
 * the walk of a folder (files_walk.c) and the manifest parser
 * (files_manifest.c). Each fills an index through the shared builders of
 * src/index/index_build.h. Private to the kind. */
#ifndef RF_SOURCE_FILES_H
#define RF_SOURCE_FILES_H

#include "index/index.h"

/* Walks an ImageFolder tree (raw mode, any_name's RF_INDEX_RAW: every
 * regular file) into idx: labels from the first-level folders, samples in
 * sorted path order. 0, or a negative code with err set. */
int rfi_files_walk(rf_index *idx, const char *dir, int any_name, char *err, size_t errlen);

/* Reads a manifest (path<TAB>label[<TAB>weight] lines, or "#columns: ...")
 * into idx. 0, or a negative code with err set (RF_EINDEX: malformed). */
int rfi_files_manifest(rf_index *idx, const char *file, char *err, size_t errlen);

#endif
