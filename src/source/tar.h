/* tar.h - WebDataset tar shards: an incremental scanner of tar headers
 * (tar.c) and the grouping of its members into samples (tar_samples.c).
 * Private to the library. Neither reads a file: the caller reads the shard
 * in windows (one read of 64 KiB holding many small members, or hops over
 * large ones) and feeds each window here, so that the same code serves the
 * index builder, a test and the fuzz target. The tar kind's parser
 * (tar_shards.c); it lives with that kind, not in src/index/, which keeps
 * only kind-free records.
 *
 * Formats read: ustar (prefix + name), pax ('x' records path and size;
 * every other keyword is skipped), GNU (long names 'L'; long link names 'K'
 * skipped), base-256 sizes; as Python's tarfile (USTAR_FORMAT, GNU_FORMAT,
 * PAX_FORMAT, and so webdataset's ShardWriter) and GNU tar write them.
 * Checksums are verified (the unsigned and the signed sum are accepted, as
 * tar does). Sparse members (GNU 'S', pax GNU.sparse.*) are not read: their
 * bytes are not one extent of the shard.
 *
 * Nothing is lost in silence: every byte of a shard is either in a member
 * reported to the caller or in a lost span reported to the caller
 * (rf_tar_member.lost). A malformed header does not end the scan: the scan
 * resynchronises at the next block that is a valid header (members are
 * 512-byte aligned) and reports the bytes between as one damaged span.
 * The end of the archive (a zero block) is looked past too: zeros up to
 * the end of the shard are the end as tar writes it; a valid header
 * further on means more members (as tar -i reads them); other bytes there
 * (where tar would stop reading) are reported as damaged.
 *
 * Memory: an rf_tar_scan holds one name buffer (RF_TAR_NAME_MAX + 1) and
 * allocates nothing; extended headers larger than RF_TAR_EXT_MAX are an
 * error, never a large read. */
#ifndef RF_INDEX_TAR_H
#define RF_INDEX_TAR_H

#include <stddef.h>
#include <stdint.h>

#define RF_TAR_BLOCK 512
#define RF_TAR_NAME_MAX 4095  /* longest member name in bytes (PATH_MAX - 1) */
#define RF_TAR_EXT_MAX 65536  /* largest pax header or GNU long name data */
/* The most a scan ever needs in one window (rf_tar_scan.need): a header and
 * the data of an extended header, or of a member whose data was asked for. */
#define RF_TAR_NEED_MAX (RF_TAR_BLOCK + RF_TAR_EXT_MAX)

/* Why a span of the shard is lost (rf_tar_member.lost). */
typedef enum rf_tar_lost {
	RF_TAR_LOST_NONE = 0,
	/* Bytes that are not members: malformed headers (a bad checksum, an
	 * unparseable size or pax record, a name too long, an extended header
	 * with no member after it) and everything up to the next valid header
	 * or the end of the shard; also a sparse member, which is not read. */
	RF_TAR_LOST_DAMAGED = 1,
	/* A member whose data runs past the end of the shard (a cut shard):
	 * name is that member's; the span runs from its header to the end. */
	RF_TAR_LOST_TRUNCATED = 2,
	/* The shard ends without its end-of-archive blocks (nothing, or less
	 * than two blocks of zeros, follows its last member): it may have been
	 * cut there. The span runs to the end. */
	RF_TAR_LOST_UNENDED = 3,
} rf_tar_lost;

/* A regular-file member of the shard, or a lost span (lost != 0). */
typedef struct rf_tar_member {
	const char *name;    /* full name (pax path, GNU long name, or ustar prefix/name),
	                      * NUL-terminated; valid during the callback only. A lost
	                      * span: "" (RF_TAR_LOST_TRUNCATED: the cut member's name) */
	uint64_t data_off;   /* offset of the member's data in the shard (a multiple of 512);
	                      * a lost span: its first byte */
	uint64_t size;       /* bytes of data (a pax size overrides the header's field);
	                      * a lost span: its bytes */
	const uint8_t *data; /* the data when all of it lies inside the window fed, else
	                      * NULL; valid during the callback only. NULL for a lost span */
	rf_tar_lost lost;    /* RF_TAR_LOST_NONE for a member */
	const char *why;     /* a lost span: what was found there, with its offset (for
	                      * messages); valid during the callback only. NULL otherwise */
} rf_tar_member;

/* A callback may return this when m->data is NULL and it needs the bytes
 * (a label member, say): the scan then stops before this member with
 * rf_tar_scan.need covering its data, and calls back again with m->data set
 * once the caller feeds a window that large. Only for members of
 * RF_TAR_EXT_MAX bytes or less. */
#define RF_TAR_WANT_DATA 2

/* Called for each regular-file member, in shard order. @return : 0 to go on;
 * RF_TAR_WANT_DATA (above); any other value stops the scan, and
 * rfi_tar_scan_feed() returns it as it is (use a negative code, or one > 2,
 * to tell it from the feed's own 0 and 1). The scan has then passed this
 * member, and may go on from rf_tar_scan.pos. */
typedef int (*rf_tar_member_fn)(void *user, const rf_tar_member *m);

/* The state of a scan between windows. Fields are read-only to callers. */
typedef struct rf_tar_scan {
	uint64_t pos;        /* offset of the next header: where the next window starts */
	size_t need;         /* bytes from pos the next window must hold (or up to the end
	                      * of the shard, if nearer) for the scan to move on; 512, or
	                      * up to RF_TAR_NEED_MAX for an extended header or a member
	                      * whose data was asked for */
	uint64_t shard_size; /* bytes in the shard */
	int status;          /* 1 scanning, 0 ended, or the error that stopped it */
	/* Extended headers ('x', 'L') seen, which apply to the next member: */
	int ext;             /* one or more are pending */
	int name_from;       /* 0 none, 1 a GNU long name, 2 a pax path (wins over 1) */
	int has_size;        /* a pax size is pending in size */
	uint64_t size;
	uint64_t ext_off;    /* offset of the first pending extended header */
	int resync;          /* looking for the next valid header after damage at lost_off */
	int skip_member;     /* ... and the member a damaged extended header described */
	int after_end;       /* past a zero block (at end_off): looking for more members */
	int junk;            /* ... and bytes that are neither zeros nor a header seen */
	uint64_t end_off;
	uint64_t lost_off;
	char why[192];       /* what the damage at lost_off was */
	char name[RF_TAR_NAME_MAX + 1];
} rf_tar_scan;

/* Starts a scan of a shard of shard_size bytes at offset 0 (need = 512). */
void rfi_tar_scan_init(rf_tar_scan *s, uint64_t shard_size);

/* Feeds bytes [off, off + n) of the shard; off must be s->pos, and bytes
 * past shard_size are ignored. Parses every header that lies wholly inside
 * the window, calls fn for each regular-file member (directories, links,
 * devices, pax global headers 'g', GNU long link names 'K' and other types
 * are skipped) and advances s->pos past it: past the window too when a
 * member's data runs beyond it (a hop). Calls fn for each lost span too
 * (rf_tar_lost), in shard order with the members: a malformed header
 * starts one, which ends at the next valid header (or the shard's end).
 * @return : 1 more to read: feed the window at s->pos next, of at least
 *           s->need bytes (a smaller one returns 1 again without moving);
 *           0 the archive ended (a zero block, or the end of the shard),
 *           also on any later call: every byte before the end was reported
 *           as a member or a lost span;
 *           -EINVAL off is not s->pos, or fn asked for data too large, with
 *           err[errlen] saying so;
 *           or what fn returned to stop the scan. */
int rfi_tar_scan_feed(rf_tar_scan *s, const uint8_t *buf, size_t n, uint64_t off,
		     rf_tar_member_fn fn, void *user, char *err, size_t errlen);

/* ---- Samples (tar_samples.c): WebDataset's grouping of members ----
 *
 * The key of a member is its name up to the first dot of its base name,
 * the extension the rest (webdataset's keysplit ^((?:.*[/]|)[^.]+)[.]([^/]*)$:
 * "a.b/c.d.jpg" is key "a.b/c", extension "d.jpg"). Consecutive members
 * with one key form a sample. As in webdataset, members whose name has no
 * key (no dot in the base name) and metadata members (a first path
 * component "__x__") belong to no sample; extensions compare without case. */

/* Splits name as webdataset's keysplit does. @return : the key's length
 * (the extension starts at name + return + 1), or -1 when name has no key. */
long rfi_tar_key_split(const char *name);

/* Why a sample cannot be used (rf_tar_sample.code). */
typedef enum rf_tar_bad {
	RF_TAR_GOOD = 0,
	RF_TAR_NO_IMAGE,   /* no image member (jpg, jpeg, png, webp) */
	RF_TAR_NO_MEMBER,  /* raw mode: no member besides cls */
	RF_TAR_BAD_CLS,    /* its cls member is not a label */
	RF_TAR_TWO_CLS,    /* two cls members */
	RF_TAR_TWO_IMAGES, /* two members of its image's extension */
	RF_TAR_TRUNCATED,  /* a member of it runs past the end of the shard */
	RF_TAR_DAMAGED,    /* not a sample: a lost span (RF_TAR_LOST_DAMAGED) */
	RF_TAR_UNENDED,    /* not a sample: the shard ends without end blocks */
} rf_tar_bad;

/* A member of a sample besides its chosen one and cls: a field's bytes
 * (KEY.txt, KEY.json). Every one is kept, however many a sample has (the
 * grouping's array grows); only extensions shorter than RF_TAR_EXTRA_EXT
 * bytes name a field (no one types that long a name: fields.c refuses
 * one), so members with longer ones are no field's and are not kept: the
 * sample counts them (nlong, the first's extension in long_ext), for the
 * index to say so. */
#define RF_TAR_EXTRA_EXT 32 /* the index's RF_EXTRA_EXT (tar_samples.c checks) */
typedef struct rf_tar_extra {
	char ext[RF_TAR_EXTRA_EXT]; /* NUL-terminated, as in the name */
	uint64_t data_off;
	uint64_t size;
} rf_tar_extra;

/* A sample: its image member (or in raw mode its first member that is not
 * a label) and its label; or a lost span of the shard (code
 * RF_TAR_DAMAGED / RF_TAR_UNENDED: key "", data_off and size the span). */
typedef struct rf_tar_sample {
	const char *key;   /* NUL-terminated; valid during the callback only */
	const char *ext;   /* the chosen member's extension ("jpg", "jpeg.zst"); "" if none */
	uint64_t data_off; /* the chosen member's data in the shard */
	uint64_t size;
	int32_t label;     /* from the "cls" member, or -1 when there is none */
	int compressed;    /* the chosen member is zstd-compressed (extension ends in .zst) */
	int has_cls;       /* label came from a cls member */
	rf_tar_bad code;   /* RF_TAR_GOOD, or why the sample cannot be used */
	const char *bad;   /* NULL, or why in words ("no image member (jpg, jpeg, png, webp)",
	                    * "cls '7x': not a label ..."); then only key (and a lost span's
	                    * data_off and size) holds */
	const rf_tar_extra *extras; /* its other members, in shard order; valid during
	                    * the callback only */
	size_t nextras;
	size_t nlong;      /* other members not in extras: an extension RF_TAR_EXTRA_EXT
	                    * bytes or longer */
	const char *long_ext; /* the first of them's (cut at 127 bytes); "" when none */
} rf_tar_sample;

/* Called once per sample, in shard order. @return : 0 to go on, or non-zero
 * to stop the scan (rfi_tar_scan_feed() or rfi_tar_samples_finish() returns
 * it; use a negative code, or one > 2). */
typedef int (*rf_tar_sample_fn)(void *user, const rf_tar_sample *s);

/* The grouping state: the sample being gathered. Fields are private. */
typedef struct rf_tar_samples {
	rf_tar_sample_fn fn;
	void *user;
	int raw;           /* raw mode: the first member that is not cls, whatever its
	                    * extension, rather than the JPEG */
	int open;          /* a sample is being gathered */
	int has_member;    /* a member was chosen (off, size, ext) */
	int has_cls;
	int compressed;
	int32_t label;
	uint64_t off, size;
	rf_tar_bad code;   /* why the sample is bad, RF_TAR_GOOD when it is not */
	char bad[160];     /* the same in words, "" when it is not bad */
	char ext[32];      /* the chosen member's extension (cut if longer) */
	char key[RF_TAR_NAME_MAX + 1];
	rf_tar_extra *extras; /* its other members so far (grown as needed, kept
	                    * for the next sample: the only memory a grouping holds) */
	size_t nextras, extras_cap;
	size_t nlong;      /* its members with too long an extension (rf_tar_sample) */
	char long_ext[128];
} rf_tar_samples;

/* Starts grouping; raw as cfg.raw. fn receives the samples. Call
 * rfi_tar_samples_free() when done (after an error too). */
void rfi_tar_samples_init(rf_tar_samples *g, int raw, rf_tar_sample_fn fn, void *user);

/* Frees what the grouping allocated (its other members' array); g may be
 * zeroed memory or freed before. */
void rfi_tar_samples_free(rf_tar_samples *g);

/* The rf_tar_member_fn that groups: pass it to rfi_tar_scan_feed() with g as
 * user. It reports each sample to g's fn when the next key starts, and asks
 * for the data of cls members (RF_TAR_WANT_DATA) to read their labels. A
 * lost span ends the sample being gathered (a truncated member marks its
 * own sample RF_TAR_TRUNCATED) and is reported to fn as a sample of its
 * own (RF_TAR_DAMAGED, RF_TAR_UNENDED). Returns -ENOMEM (which stops the
 * scan) when a sample's other members cannot be kept. */
int rfi_tar_samples_member(void *g, const rf_tar_member *m);

/* Whether member m, just given to rfi_tar_samples_member(), is the one its
 * sample reads (the image, or in raw mode the first member not a label):
 * the member a sample's read asks for, as a scan filling the node cache
 * needs to know. */
int rfi_tar_samples_chose(const rf_tar_samples *g, const rf_tar_member *m);

/* Reports the last sample, once the scan has returned 0.
 * @return : 0, or what g's fn returned. */
int rfi_tar_samples_finish(rf_tar_samples *g);

/* Parses a cls member: decimal text in [0, 2^31), with optional spaces,
 * tabs and newlines around it. @return : 0 with *label set, or -1 with
 * why[whylen] saying what is wrong. */
int rfi_tar_parse_cls(const uint8_t *p, size_t n, int32_t *label, char *why, size_t whylen);

#endif
