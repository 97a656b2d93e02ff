/* dict.c - `ringfeed pack --dict-size`: trains the zstd dictionary that
 * every member is then compressed with, on a sample of the source's files.
 *
 * Which files: n of them, spread evenly over the index (sample
 * floor(j * count / n) for j = 0 .. n-1), each cut to its first 128 KiB (a
 * dictionary helps the start of a frame most: headers, tables), with n the
 * smallest of the sample count, 10,000, and as many average-sized (cut)
 * files as fit in 100 MB; a last file that would pass 100 MB is cut to fit.
 * Empty files are read but not given to the trainer. The same source gives
 * the same picks and (the trainer being deterministic) the same dictionary. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <zdict.h>
#include <zstd_errors.h>

#include "pack/pack_impl.h"
#include "util/util.h"

int rfi_pack_train(rf_packer *p, rf_buf *dict, size_t *len, char *err, size_t errlen)
{
	const rf_index *idx = &p->idx;
	uint64_t count = idx->count, sum = 0;
	for (uint64_t i = 0; i < count; i++)
		sum += (uint64_t)RF_MIN(RF_MAX(idx->entries[i].size, 0), (int64_t)RF_PACK_DICT_CUT);
	uint64_t avg = RF_MAX(sum / count, 1);
	uint64_t n = RF_MIN(RF_MIN(count, (uint64_t)RF_PACK_DICT_SAMPLES),
			    RF_MAX((uint64_t)RF_PACK_DICT_BYTES / avg, 1));

	rf_buf buf = { 0 };
	size_t *sizes = calloc(n, sizeof(*sizes));
	int ret = 0;
	if (!sizes || rfi_buf_reserve(&buf, (size_t)RF_MIN(n * RF_PACK_DICT_CUT, RF_PACK_DICT_BYTES)) ||
	    rfi_buf_reserve(dict, p->o->dict_size)) {
		ret = -ENOMEM;
		goto out;
	}
	p->prog = (rf_pack_progress){ .phase = RF_PACK_DICT, .total = n };
	rfi_pack_tell(p);
	size_t used = 0;
	unsigned k = 0; /* samples given to the trainer */
	for (uint64_t j = 0; j < n && used < RF_PACK_DICT_BYTES; j++) {
		if (p->o->stop && *p->o->stop) {
			ret = -EINTR;
			goto out;
		}
		size_t got;
		ret = rfi_pack_read(idx, j * count / n, &buf, used, RF_MIN(RF_PACK_DICT_CUT,
				   RF_PACK_DICT_BYTES - used), &got, err, errlen);
		if (ret)
			goto out;
		if (got > 0)
			sizes[k++] = got;
		used += got;
		p->prog.done = j + 1;
		p->prog.bytes_in = used;
		rfi_pack_tell(p);
	}
	p->res->dict_samples = k;
	size_t r = k ? ZDICT_trainFromBuffer(dict->p, p->o->dict_size, buf.p, sizes, k) : 0;
	if (!k || ZDICT_isError(r)) {
		/* the size is in range (check_opts): what failed is the samples.
		 * zstd's trainer (fastCover) keeps a quarter of them to test on
		 * and wants 5 to train on: 7 non-empty files at the least, however
		 * small the dictionary */
		int few = !k || ZSTD_getErrorCode(r) == ZSTD_error_srcSize_wrong;
		rfi_fmt(err, errlen, "--dict-size %zu: zstd dictionary training failed on %u "
		       "non-empty sample%s (%zu bytes): %s; %s", p->o->dict_size, k, k == 1 ? "" : "s",
		       used, k ? ZDICT_getErrorName(r) : "no data",
		       few ? "too few files to train on (zstd needs 7 at least, and a dictionary "
			     "pays off with thousands): a smaller --dict-size does not help; pack "
			     "without --dict-size"
			   : "try another --dict-size, or none");
		ret = RF_ECONFIG;
		goto out;
	}
	*len = r;
out:
	free(sizes);
	free(buf.p);
	return ret;
}
