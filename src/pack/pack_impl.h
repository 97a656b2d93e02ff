/* pack_impl.h - what the parts of `ringfeed pack` share: the packer's state
 * (pack.c sets it up and tears it down, pack_loop.c runs the per-sample
 * loop, dict.c trains the dictionary). Private to src/pack/.
 * One thread does all of it. */
#ifndef RF_PACK_IMPL_H
#define RF_PACK_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

#include "index/index.h"
#include "pack/out_file.h"
#include "pack/pack.h"

/* A buffer that only grows: allocated once to the largest size asked for,
 * so that the loop allocates nothing per sample. */
typedef struct rf_buf {
	uint8_t *p;
	size_t cap;
} rf_buf;

/* Makes room for n bytes, keeping the contents. @return : 0 or -ENOMEM. */
int rfi_buf_reserve(rf_buf *b, size_t n);

typedef struct rf_packer {
	const rf_pack_opts *o;
	rf_pack_result *res;   /* samples, shards, bytes as they are written */
	rf_index idx;
	int dirfd;             /* the output folder */
	int key_width;         /* digits of every key */
	ZSTD_CCtx *cctx;       /* NULL: members stored as they are */
	ZSTD_CDict *cdict;     /* the dictionary, digested once; NULL without one */
	rf_buf in;             /* the sample being packed, as read */
	rf_buf z;              /* ... compressed */
	rf_buf xs;             /* its other members' places and headers (struct
	                        * pack_extra, pack_loop.c), as many as it has */
	rf_buf iov;            /* the struct iovec list that writes the sample */
	uint8_t *pad;          /* room for the largest padding member (align + 1024) */
	rf_out_file shard;     /* the shard being written (fd -1 between shards) */
	uint64_t shard_samples; /* samples in it so far */
	rf_pack_progress prog; /* what o->progress is told */
} rf_packer;

/* Reads the first max bytes (all of it when it is shorter) of sample i's
 * file into b at offset at, growing b; *len gets the bytes read.
 * @return : 0, or a negative errno with err naming the file and the reason
 *           (missing, unreadable, not a regular file, shrunk while read). */
int rfi_pack_read(const rf_index *idx, uint64_t i, rf_buf *b, size_t at, uint64_t max,
		 size_t *len, char *err, size_t errlen);

/* Tells o->progress (if any) where p stands. */
void rfi_pack_tell(rf_packer *p);

/* dict.c: trains a dictionary of at most o->dict_size bytes on a sample of
 * the source's files into dict (*len bytes); p->res->dict_samples gets how
 * many files it read. Reads only: writes no file.
 * @return : 0; -EINTR (stopped); RF_ECONFIG (training failed: too few
 *           samples for the size); a negative errno; err says why. */
int rfi_pack_train(rf_packer *p, rf_buf *dict, size_t *len, char *err, size_t errlen);

/* pack_loop.c: writes every sample of p->idx, in index order, into shards.
 * @return : 0; -EINTR (stopped); a negative errno with err set. The shard
 *           being written when it fails is removed; complete ones are
 *           counted in p->res->shards (the caller removes them). */
int rfi_pack_write_all(rf_packer *p, char *err, size_t errlen);

#endif
