/* parquet_file.h - a Parquet file as set-up reads it (parquet_table.c):
 * bytes at an offset, from a local file (bounded pread()s, never mapped)
 * or a remote one (the source's transport: ranged GETs, each answer
 * checked against what was asked and against the file's size and ETag as
 * the first answer gave them). A remote file's first request is its last
 * RF_PQ_TAIL_FETCH bytes (a suffix range: its size, its ETag, its tail,
 * its footer and, pyarrow writing them before it, its OffsetIndexes, in
 * one round trip); the page-header scan of a remote file reads a window of
 * RF_PQ_SCAN_WINDOW at each header where pages are large (a request a
 * page, not its body), RF_PQ_REMOTE_WINDOW where they are small or the
 * chunk's rest is no larger (many headers a request: the bodies between
 * them cost less than the requests). A file that changes between two requests (another size,
 * another ETag, a short read) is refused naming it. Private to the Parquet
 * kind; one thread a file (set-up reads many files at once, each on one
 * helper thread). */
#ifndef RF_PARQUET_FILE_H
#define RF_PARQUET_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index.h"
#include "source/parquet_meta.h"

/* A remote file's first request: its last this many bytes. */
#define RF_PQ_TAIL_FETCH ((size_t)64 << 10)
/* The page-header scan's window over a remote file's small pages (those
 * under RF_PQ_SMALL_PAGE apart) or the rest of a chunk this small (local
 * files and large pages: RF_PQ_SCAN_WINDOW). */
#define RF_PQ_REMOTE_WINDOW ((size_t)4 << 20)
#define RF_PQ_SMALL_PAGE ((uint64_t)256 << 10)

typedef struct rf_pq_file rf_pq_file;
struct rf_pq_file {
	char name[PATH_MAX]; /* as messages say it: root/shard, or the URL (no query) */
	rf_index *idx;       /* remote: idx->urls[f], idx->transport, idx->etags[f] set */
	uint32_t f;
	int fd;              /* local; -1 for a remote file */
	uint64_t size;       /* at open: every offset is checked against it */
	int64_t mtime_sec, mtime_nsec; /* local: at open */
	uint64_t ino;
	uint8_t *tail;       /* remote: the bytes [tail_off, size) the first request gave */
	uint64_t tail_off;
	uint8_t *win;        /* the page-header scan's window: bytes [win_off, +win_len) */
	int64_t win_off;
	size_t win_len, win_cap;
	uint64_t scan_end;   /* the chunk being scanned ends here: no window reads past it */
	int64_t scan_prev;   /* the header asked before (-1: none yet in this chunk): the
	                      * distance to the next is the page's size */
	int scan_small;      /* the last page was under RF_PQ_SMALL_PAGE */
	int read_failed;     /* a read failed, came back short, or the file changed */
	uint32_t requests;   /* remote: requests made (set-up's cost) */
};

/* Opens shard f of idx (a local file, or idx->urls[f]: its tail fetched).
 * @return : 0, or a negative code with err set (naming the file). */
int rfi_pq_file_open(rf_index *idx, uint32_t f, rf_pq_file *pf, char *err, size_t errlen);
void rfi_pq_file_close(rf_pq_file *pf);

/* n bytes at off into buf, all of them; why[len] says what failed without
 * the file's name (a caller prefixes it). @return : 0, or a negative code. */
int rfi_pq_file_read(rf_pq_file *pf, uint64_t off, size_t n, uint8_t *buf, char *why,
		     size_t len);

/* A remote file's bytes [off, off + n) read now, in one request, into the
 * window, when n is at most RF_PQ_HOLD_MAX: the reads of a small chunk
 * (a label column's pages and its dictionary) served from there. Local
 * files: nothing (pread is cheap). @return : 0, or a negative code with
 * why set (the read failed: the file changed). */
#define RF_PQ_HOLD_MAX ((size_t)8 << 20)
int rfi_pq_file_hold(rf_pq_file *pf, uint64_t off, uint64_t n, char *why, size_t len);

/* The page-header scan's reader (rf_pq_reader.read, ctx the rf_pq_file):
 * set pf->scan_end to the chunk's end first. */
int rfi_pq_file_scan_read(void *ctx, int64_t offset, size_t n, const uint8_t **p, char *why,
			  size_t len);

#endif
