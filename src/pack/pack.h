/* pack.h - `ringfeed pack`'s work: a source (ImageFolder tree, manifest, raw
 * tree) written as WebDataset-style tar shards, samples in index order, so
 * that a loader numbering a pack's samples in shard order gives every
 * sample the id it has in the loose source. Private: the CLI's, not the
 * library's.
 *
 * The output folder holds shard-000000.tar, shard-000001.tar, ... and, with
 * a dictionary, zstd.dict; while the pack runs, .ringfeed-pack-incomplete
 * too (index/pack_marker.h). In a shard, sample i is the members KEY.jpg
 * (KEY.bin in raw mode; KEY.jpg.zst / KEY.bin.zst compressed: one zstd
 * frame with its content size and checksum) then KEY.cls (the label in
 * decimal, no newline) when the label is >= 0; KEY is i zero-padded to 9
 * digits (more when the source has 10^9 samples or more, the same width
 * for every key), so that names sort in id order. */
#ifndef RF_PACK_H
#define RF_PACK_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define RF_PACK_ALIGN_MAX (16u << 20)    /* --align: 512 .. 16 MiB */
#define RF_PACK_DICT_MIN 256u           /* --dict-size: zstd's least (ZDICT_DICTSIZE_MIN) .. */
#define RF_PACK_DICT_MAX (16u << 20)     /* ... 16 MiB */
#define RF_PACK_DICT_SAMPLES 10000u      /* dictionary training: at most this many samples */
#define RF_PACK_DICT_BYTES (100u << 20)  /* ... and this many bytes of them */
#define RF_PACK_DICT_CUT (128u << 10)    /* ... each cut to its first 128 KiB */

typedef enum rf_pack_phase {
	RF_PACK_INDEX = 0, /* walking the source: done = files found so far */
	RF_PACK_DICT = 1,  /* reading dictionary samples (done of total), then training */
	RF_PACK_WRITE = 2, /* writing shards: done of total samples. Files are
	                    * written from here on, not before. */
} rf_pack_phase;

typedef struct rf_pack_progress {
	rf_pack_phase phase;
	uint64_t done, total;
	uint64_t bytes_in;  /* source bytes packed so far */
	uint64_t bytes_out; /* shard bytes written so far */
	uint32_t shards;    /* shards complete */
} rf_pack_progress;

typedef struct rf_pack_opts {
	const char *source;  /* ImageFolder folder or manifest (raw folder with RF_INDEX_RAW) */
	const char *out;     /* output folder: created when absent (its parent must
	                      * exist); must not hold a pack already (or the
	                      * marker of an interrupted one), nor be a tree
	                      * source or a folder inside it */
	int index_flags;     /* RF_INDEX_RAW | RF_INDEX_HIDDEN (ringfeed.h) */
	uint64_t shard_size; /* a shard ends before the sample that would take it
	                      * past this many bytes; a bigger sample gets a shard
	                      * of its own */
	uint64_t align;      /* 0, or a power of two 512..RF_PACK_ALIGN_MAX: each
	                      * data member's bytes start at a multiple of it */
	int compress;        /* 1: zstd frames */
	int level;           /* zstd level (ZSTD_minCLevel() .. ZSTD_maxCLevel()) */
	size_t dict_size;    /* 0, or a dictionary of this many bytes at most,
	                      * RF_PACK_DICT_MIN..RF_PACK_DICT_MAX (needs compress) */
	/* Told at each phase's start and after each file, sample or dictionary
	 * sample (the caller throttles what it shows); may be NULL. */
	void (*progress)(void *user, const rf_pack_progress *p);
	void *user;
	/* When *stop becomes nonzero (a signal handler sets it), the pack stops
	 * before its next sample and removes what it wrote. May be NULL. */
	volatile sig_atomic_t *stop;
} rf_pack_opts;

typedef struct rf_pack_result {
	uint64_t samples;
	uint32_t shards;
	uint64_t bytes_in;     /* the source files' bytes */
	uint64_t bytes_out;    /* the shards' bytes (tar headers and padding included) */
	uint64_t bytes_data;   /* the data members' bytes (compressed when compressing) */
	uint64_t dict_bytes;   /* zstd.dict's size, 0 without one */
	uint64_t dict_samples; /* samples it was trained on */
} rf_pack_result;

/* Packs o->source into o->out.
 * @return : 0 with *res filled; -EINTR when *o->stop was set; otherwise a
 *           negative errno or RF_E* code with err saying why (a source file
 *           that cannot be read fails the pack, naming the file: skipping it
 *           would change every later sample's id). On failure and on -EINTR
 *           every file the pack wrote is removed, the marker of
 *           index/pack_marker.h last (and the output folder, if it created
 *           it and it is empty); killed outright, it leaves the marker. */
int rfi_pack_run(const rf_pack_opts *o, rf_pack_result *res, char *err, size_t errlen);

#endif
