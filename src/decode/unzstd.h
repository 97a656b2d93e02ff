/* unzstd.h - a shard member stored as one zstd frame (KEY.jpg.zst,
 * KEY.bin.zst), decompressed for a compute thread, optionally with the
 * dictionary the pack was compressed with. Private.
 *
 * Thread rule: one rf_unzstd per compute thread (its context and its output
 * buffer, grown to the largest sample and kept: no allocation per sample);
 * the dictionary (rf_zstd_dict) is read-only and shared by all. */
#ifndef RF_UNZSTD_H
#define RF_UNZSTD_H

#include <stddef.h>
#include <stdint.h>

typedef struct ZSTD_DCtx_s ZSTD_DCtx;
typedef struct ZSTD_DDict_s ZSTD_DDict;

typedef struct rf_unzstd {
	ZSTD_DCtx *dctx;
	uint8_t *buf;
	size_t cap;
} rf_unzstd;

/* Loads the dictionary at path. @return : 0 with *out set; a negative errno
 * (unreadable), or RF_EINDEX (not a zstd dictionary); err says which. */
int rfi_zstd_dict_load(const char *path, ZSTD_DDict **out, char *err, size_t errlen);
void rfi_zstd_dict_free(ZSTD_DDict *d);

/* @return : 0, or -ENOMEM. dict may be NULL. */
int rfi_unzstd_init(rf_unzstd *z, const ZSTD_DDict *dict);
void rfi_unzstd_destroy(rf_unzstd *z);

/* Decompresses the frame src[n] (exactly one frame) into z's buffer, at most
 * max bytes. @return : 0 with *out (valid until the next call) and *len set;
 * RF_EBADSAMPLE with reason set: a corrupt frame, a wrong or missing
 * dictionary, more than max bytes, trailing bytes; -ENOMEM. */
int rfi_unzstd_frame(rf_unzstd *z, const uint8_t *src, size_t n, size_t max, const uint8_t **out,
		    size_t *len, char *reason, size_t rlen);

/* Token shards (.bin.zst): decompresses the frames src[n] (one or more
 * whole frames, back to back, no dictionary) into z's buffer, which must
 * come to exactly want bytes. @return : 0 with *out (valid until the next
 * call) set; RF_EBADSAMPLE with reason set (corrupt, or another size);
 * -ENOMEM. */
int rfi_unzstd_frames(rf_unzstd *z, const uint8_t *src, size_t n, size_t want, const uint8_t **out,
		     char *reason, size_t rlen);

#endif
