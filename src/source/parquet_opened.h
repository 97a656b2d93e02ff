/* parquet_opened.h - the image column's compressed pages, opened
 * (decompressed) once and shared by the compute threads while their rows
 * are cut out. Without it every row of a page decompressed the whole page
 * again: a page of 18 photos was decompressed 18 times an epoch, 7% of the
 * CPU of a snappy file read sequentially (perf, bench/parquet.sh), where a
 * tar shard has nothing of the kind. Rows of a page come close together in
 * the orders that read pages once (the sequential sampler, shard_access =
 * sequential's blocks of 1024 positions, the rows of a page in flight
 * together in random access), so a small set of recent pages serves them.
 *
 * Only pages that own their bytes (decompressed) are kept: an uncompressed
 * page points into its read, which the pipeline frees after the sample.
 *
 * Thread rule: any compute thread; one mutex guards the entries (a lookup
 * a sample, against a JPEG decode's milliseconds). A page handed out is
 * read-only and stays until every holder releases it. Private to the
 * Parquet kind. */
#ifndef RF_PARQUET_OPENED_H
#define RF_PARQUET_OPENED_H

#include <stddef.h>
#include <stdint.h>

#include "source/parquet_page.h"

/* Decompressed bytes kept at most, and pages: about a shuffle block's pages
 * of the `datasets` library's 256 KiB - 1 MiB pages. */
#define RF_PQ_OPENED_BYTES ((size_t)64 << 20)
#define RF_PQ_OPENED_PAGES 128u

typedef struct rf_pq_opened rf_pq_opened;

/* @return : a set, or NULL (out of memory: rows then open their pages
 *           themselves, as without it). */
rf_pq_opened *rfi_pq_opened_new(void);
/* Frees the set; no page may be held. Accepts NULL. */
void rfi_pq_opened_free(rf_pq_opened *o);

/* Page `key` (its place in the table's pages), held, or NULL: not kept. */
const rf_pq_page *rfi_pq_opened_get(rf_pq_opened *o, uint64_t key);
/* Offers page `key`, opened by the caller and owning its bytes: kept (the
 * set takes *pg, zeroing it) and returned held; or, when another thread
 * kept it first, that one returned held (*pg left to the caller); or NULL:
 * no room (every page held), *pg left to the caller. */
const rf_pq_page *rfi_pq_opened_put(rf_pq_opened *o, uint64_t key, rf_pq_page *pg);
/* Gives back a page get or put returned. */
void rfi_pq_opened_release(rf_pq_opened *o, const rf_pq_page *pg);
/* Decompressed bytes kept now. */
size_t rfi_pq_opened_bytes(rf_pq_opened *o);

#endif
