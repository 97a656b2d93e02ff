/* node_cache.h - the node-local cache of remote bytes (cfg.cache_dir): ranges of
 * remote objects kept in files on local storage, found again by an exact
 * key, shared by every process that names the same directory (the ranks of
 * a node), bounded, and never serving a torn or stale byte.
 *
 * On disk, DIR/ringfeed-cache/:
 *   FORMAT          "ringfeed-cache 2\n": what the folder is (another text,
 *                   version 1's included: not ours, left alone, no cache)
 *   claims          empty: a one-byte lock (F_OFD_SETLK) at a range's key
 *                   says a process is fetching that range; the kernel drops
 *                   it when its holder dies, so no claim outlives a crash
 *   segments/S.data the ranges' bytes, appended by the one process that made
 *                   S (S: its pid and a random number, in hex), which holds
 *                   flock(LOCK_EX) on it while it writes; at most seg_bytes
 *   segments/S.idx  one rf_cache_rec per range, each appended only once its
 *                   bytes are written: a range is visible once complete
 * A range's key is (object, offset, len): the object a hash of the URL
 * (its query kept, but for the parameters a signature adds, which change
 * with every signing of one object), the ETag and the size, so a replaced
 * object is another object, and so are two objects one path serves by
 * their query; an object without an ETag is not cached. A record is served only
 * if its own checksum holds and, once read, its bytes hash to what it says
 * (a record cut short by SIGKILL, or bytes lost in a crash, are never
 * served).
 *
 * Bounded by whole segments: every segment counts at its largest
 * (seg_bytes of data plus seg_bytes / 16 of records), and before a process
 * starts one it deletes others until the count fits: never one a live
 * writer holds (flock); those the caller's order needs last, else the least
 * recently used. A deleted segment stays readable through descriptors
 * already open, so no read in flight is torn.
 *
 * The running user's alone: the records' hashes are public (anyone can
 * compute a record that holds), so the cache is used only where no one
 * else could have written it. DIR/ringfeed-cache, segments/ and every file
 * in them must belong to the running user (or to the group named trusted:
 * rf_cache_params.group, then made 02770 and 0660 and that group's) and be
 * writable by no one else; DIR itself by no one else either, unless it has
 * the sticky bit (/scratch, mode 1777: no one can rename another's folder
 * in it). Else one warning, and no cache. Every file is opened with
 * O_NOFOLLOW | O_NONBLOCK and taken only when fstat says a regular file (a
 * link or a FIFO planted in the folder is never followed, never hangs an
 * open); temporary names are made O_EXCL.
 *
 * Degrades, never fails: a folder that cannot be made or written, or is not
 * the user's, a full disk, a damaged record or bytes that do not match their
 * hash make those reads go to the network, with one warning each kind.
 *
 * Thread rule: one thread (the ring thread) makes, uses and frees a cache,
 * with the engine it was given (its writes and the segments' read handles
 * are that engine's). rfi_cache_stat() and rfi_cache_clear() are for any
 * thread or process (the `ringfeed cache` command). Private to the library. */
#ifndef RF_CACHE_NODE_CACHE_H
#define RF_CACHE_NODE_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* gid_t */

#include "io/engine.h"
#include "rf_config.h" /* RF_TEST_HOOKS */
#include "ringfeed.h"

#define RF_CACHE_DIR "ringfeed-cache"
#define RF_CACHE_FORMAT "ringfeed-cache 2\n" /* 2: the key keeps the query */
#define RF_CACHE_DEFAULT_BYTES (10ull << 30)
#define RF_CACHE_MIN_BYTES (4ull << 20)

/* One range, on disk (S.idx), little-endian, 48 bytes. */
typedef struct rf_cache_rec {
	uint64_t object;    /* rfi_cache_object() of the URL, ETag and size */
	uint64_t offset;    /* the range's offset in the object */
	uint32_t len;       /* the range asked for */
	uint32_t got;       /* its bytes stored: fewer where the object ended first */
	uint64_t at;        /* where they are in S.data */
	uint64_t data_hash; /* rfi_hash_data() of them */
	uint64_t check;     /* rfi_hash_bytes(RF_CACHE_REC_SEED, the 40 bytes above) */
} rf_cache_rec;
_Static_assert(sizeof(rf_cache_rec) == 48, "a record is 48 bytes on disk");
#define RF_CACHE_REC_SEED 0x72696e6763616368ull /* "ringcach" */
/* A segment's files are segments/S.data and S.idx, S = "%08x-%016llx": the
 * writer's pid and a random number. */
#define RF_CACHE_SEG_NAME_MAX 32
/* A segment's data holds at most RF_CACHE_SEG_MAX bytes, its S.idx at most
 * RF_CACHE_IDX_MAX (what a writer of the largest segments writes): a longer
 * S.idx is read no further (no reader's memory follows a file's size). */
#define RF_CACHE_SEG_MAX (64u << 20)
#define RF_CACHE_IDX_MAX (RF_CACHE_SEG_MAX / 16)

typedef struct rf_cache rf_cache;

/* The id of the group named name (rf_cache_params.group). @return : 0 with
 * *gid set; -ENOENT (no such group), or another negative errno. */
int rfi_cache_group_id(const char *name, gid_t *gid);

/* The object a remote shard is to the cache: nonzero, or 0 when it is not
 * cached (no ETag: nothing ties its bytes to one version). The URL counts
 * whole but for its fragment and the query parameters of a signature
 * (X-Amz-* of any case, Signature, Expires, Key-Pair-Id, Policy): two
 * presignings of one object are one object, /get?f=a and /get?f=b two. */
uint64_t rfi_cache_object(const char *url, const char *etag, uint64_t size);

/* How the ring thread's order tells which segments it needs soonest:
 * need[s] is set for each segment s < nseg (the caller fills it through
 * rfi_cache_segment_of()) to the number of reads ahead of now at which it is
 * first needed, or UINT64_MAX (not in what the order looked at). */
typedef void (*rf_cache_need_fn)(void *ctx, rf_cache *c, uint64_t *need, uint32_t nseg);

typedef struct rf_cache_params {
	const char *dir;       /* DIR: the cache is DIR/ringfeed-cache */
	uint64_t bytes;        /* 0: RF_CACHE_DEFAULT_BYTES */
	rf_io *io;             /* the ring thread's engine (made with max_files >=
	                        * RF_CACHE_MAX_FILES): reads and writes go through it */
	rf_log_level log_level;
	const char *group;     /* a group trusted to share the cache (its name), or
	                        * NULL: the running user's alone */
	rf_cache_need_fn need; /* or NULL: least recently used alone */
	void *need_ctx;
} rf_cache_params;

#define RF_CACHE_MAX_FILES 1024 /* engine file handles a cache may hold */

/* Opens (makes) the cache. @return : 0 with *out set; or 0 with *out NULL
 * after one warning when it cannot be used (then every read goes to the
 * network); -ENOMEM. */
int rfi_cache_open(rf_cache **out, const rf_cache_params *p);

/* Closes descriptors and frees the cache. Call after rfi_io_destroy() of its
 * engine (which ended its writes in flight and closed its handles). NULL is
 * accepted. */
void rfi_cache_free(rf_cache *c);

/* Work the ring thread does every pass: finished writes (their records are
 * published, their claims let go), and, at most every 100 ms, the other
 * processes' new records. */
void rfi_cache_step(rf_cache *c);

/* Where a cached range lies. */
typedef struct rf_cache_hit {
	int file;           /* the segment's engine handle: read [at, at + got) */
	uint64_t at;
	uint32_t got;
	uint32_t seg;       /* for rfi_cache_read_done() */
	uint64_t data_hash; /* what the bytes must hash to (rfi_cache_verify) */
} rf_cache_hit;

/* 1 with *hit set when the range is cached (count the read in flight: call
 * rfi_cache_read_done() when it finished); 2 when this process is fetching
 * it now (its record comes soon); else 0. */
int rfi_cache_find(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len, rf_cache_hit *hit);
/* A read of a hit finished (or was never made). */
void rfi_cache_read_done(rf_cache *c, const rf_cache_hit *hit);
/* A hit's bytes, read (got: the read's result, a negative errno when it
 * failed): 1 when they hash to what their record says; else 0, and the
 * record is dropped (one warning): read the range from the network. */
int rfi_cache_verify(rf_cache *c, const rf_cache_hit *hit, const uint8_t *data, int32_t got);

enum rfi_cache_claim {
	RF_CACHE_OFF = 0,     /* no writes now (unusable, full of segments in use): fetch,
	                       * do not fill */
	RF_CACHE_MINE = 1,    /* this process fetches the range: fill or unclaim it */
	RF_CACHE_THEIRS = 2,  /* another process is fetching it: look again later
	                       * (rfi_cache_find after rfi_cache_refresh) */
	RF_CACHE_FOUND = 3,   /* another process published it just now: rfi_cache_find */
};
/* Claims a missing range for this process to fetch. A claim already this
 * process's is MINE again (two reads of one range in one process both fetch). */
int rfi_cache_claim(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len);
/* Lets a claim go without filling it (the fetch failed). */
void rfi_cache_unclaim(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len);
/* The fetched bytes of a range this process claimed: copied, then written
 * through the engine; the claim is let go once its record is written (or
 * the write failed). When the writes are behind (its staging memory
 * full), it waits for them to make room: 2 s at most, then the writes
 * count as stuck (one warning) and fills drop at once until one finishes.
 * @return : 1 queued, 0 not cached (stuck writes, a range larger than the
 * staging memory, no segment can be made: the claim was let go). */
int rfi_cache_fill(rf_cache *c, uint64_t object, uint64_t offset, uint32_t len,
		  const uint8_t *data, uint32_t got);

#if RF_TEST_HOOKS
/* Test-only: the staging memory of caches opened from now on (0: the
 * default, 32 MiB), small enough for a test's fills to fall behind. */
void rfi_cache_set_test_staging(size_t bytes);
/* Test-only: with hold, the fills of caches opened from now on are never
 * written and their claims kept until the cache closes (a process that
 * stalls holding its claims, for the others' bounded wait). */
void rfi_cache_set_test_hold_fills(int hold);
#endif

/* Writes what was filled and is not published yet, waiting for it until
 * deadline (rfi_now_ns()) at the latest: the loader is closing, so the reads
 * still in flight are reaped and dropped meanwhile. */
void rfi_cache_flush(rf_cache *c, uint64_t deadline);

/* Reads the other processes' new records now (a waiting read's look). */
void rfi_cache_refresh(rf_cache *c);

/* For rf_cache_need_fn: the segment a cached range is in, or UINT32_MAX. */
uint32_t rfi_cache_segment_of(const rf_cache *c, uint64_t object, uint64_t offset, uint32_t len);

/* What this process wrote to the cache, and the segments it deleted to
 * stay within its size, since it was opened (the reads' hits and misses are
 * the caller's to count). */
typedef struct rf_cache_counts {
	uint64_t written_bytes, evictions;
	uint64_t fill_waits; /* fills that waited for the writes to make room */
	uint64_t fill_drops; /* fills not cached for want of room (the writes stuck,
	                      * a range larger than the staging memory) */
} rf_cache_counts;
void rfi_cache_counts_get(const rf_cache *c, rf_cache_counts *out);

/* What a cache directory holds (`ringfeed cache DIR`). */
typedef struct rf_cache_info {
	int found;               /* DIR/ringfeed-cache with our FORMAT */
	uint64_t segments;       /* segment files (S.data) */
	uint64_t writing;        /* of them, held by a live writer */
	uint64_t ranges;         /* valid records */
	uint64_t objects;        /* distinct objects among them */
	uint64_t data_bytes;     /* the ranges' bytes */
	uint64_t disk_bytes;     /* the segments' files, as they are on disk */
	uint64_t damaged;        /* records whose checksum fails (not served) */
} rf_cache_info;
/* @return : 0 (info->found 0 when DIR holds no cache), or a negative errno
 * with err set. */
int rfi_cache_stat(const char *dir, rf_cache_info *info, char *err, size_t errlen);
/* Deletes what DIR/ringfeed-cache holds, except segments a live writer
 * holds (counted in *busy). @return : 0, or a negative errno with err set. */
int rfi_cache_clear(const char *dir, uint64_t *deleted, uint64_t *busy, char *err, size_t errlen);

#endif
