/* parquet_hf.h - what the Hugging Face `datasets` library writes into a
 * Parquet file's key/value metadata: under the key "huggingface", a JSON
 * object {"info": {"features": {COLUMN: {"_type": "ClassLabel", "names":
 * [...]}, ...}}}. The Parquet kind's (parquet_*.c); private to the library.
 *
 * The JSON is the file's, so it is read as hostile: a single pass over its
 * bytes, nesting skipped with a counter (no recursion), strings decoded
 * with their escapes checked, and nothing allocated beyond what the names
 * themselves take. */
#ifndef RF_PARQUET_HF_H
#define RF_PARQUET_HF_H

#include <stddef.h>
#include <stdint.h>

#include "source/parquet_meta.h"

#define RF_PQ_HF_KEY "huggingface"

/* The class names of column `column` when the file's "huggingface" metadata
 * says it is a ClassLabel: *names gets a new array of *count NUL-terminated
 * UTF-8 strings (free with rfi_pq_hf_names_free).
 * @return : 1 with the names; 0 when there are none to give (no such key,
 *           the column absent from the features or not a ClassLabel);
 *           -1 with why ("FILE: the huggingface metadata: ...") when the
 *           JSON on the way to them is malformed. */
int rfi_pq_hf_class_names(const rf_pq_meta *m, const char *column, char ***names,
			  uint32_t *count, char *why, size_t len);
void rfi_pq_hf_names_free(char **names, uint32_t count);

#endif
