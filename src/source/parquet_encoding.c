/* parquet_encoding.c - the RLE/bit-packed hybrid and DELTA_BINARY_PACKED
 * decoders (parquet_encoding.h), bounded by their bytes and by the values
 * their caller expects. */
#include "source/parquet_encoding.h"

int rfi_pq_bit_width(uint32_t max)
{
	int w = 0;
	while (max) {
		w++;
		max >>= 1;
	}
	return w;
}

/* A ULEB128 varint of at most 10 bytes; sets *err on a short or long one. */
static uint64_t uleb(const uint8_t **p, const uint8_t *end, const char **err)
{
	uint64_t v = 0;
	for (int i = 0; i < 10; i++) {
		if (*p >= end) {
			*err = "truncated (a varint past the end)";
			return 0;
		}
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	*err = "a varint longer than 64 bits";
	return 0;
}

void rfi_pq_rle_init(rf_pq_rle *r, const uint8_t *p, size_t n, int width, uint64_t expect)
{
	*r = (rf_pq_rle){.p = p, .end = p + n, .width = width, .left = expect};
	if (width < 0 || width > 32)
		r->err = "a bit width over 32";
}

/* Reads the next run's header. */
static int rle_run(rf_pq_rle *r)
{
	uint64_t h = uleb(&r->p, r->end, &r->err);
	if (r->err)
		return -1;
	if (h & 1) {
		uint64_t values = (h >> 1) * 8, bytes = (h >> 1) * (uint64_t)r->width;
		/* the last group is padded to 8 values: at most 7 past what is expected */
		if (values == 0 || values > r->left + 7) {
			r->err = "a bit-packed run longer than the values left in the page";
			return -1;
		}
		if (bytes > (uint64_t)(r->end - r->p)) {
			r->err = "a bit-packed run past the end of its bytes";
			return -1;
		}
		r->packed = 1;
		r->run = (uint32_t)values;
		r->bits = r->p;
		r->bit = 0;
		r->p += bytes;
		return 0;
	}
	uint64_t count = h >> 1;
	int nbytes = (r->width + 7) / 8;
	if (count == 0 || count > r->left) {
		r->err = count ? "a run longer than the values left in the page" : "an empty run";
		return -1;
	}
	if (nbytes > r->end - r->p) {
		r->err = "a run's value past the end of its bytes";
		return -1;
	}
	uint32_t v = 0;
	for (int i = 0; i < nbytes; i++)
		v |= (uint32_t)*r->p++ << (8 * i);
	if (r->width < 32 && (v >> r->width) != 0) {
		r->err = "a run's value wider than its bit width";
		return -1;
	}
	r->packed = 0;
	r->run = (uint32_t)count;
	r->value = v;
	return 0;
}

/* width bits, least significant first, from bits at bit offset *bit. */
static uint64_t unpack(const uint8_t *bits, uint64_t *bit, int width)
{
	uint64_t v = 0;
	for (int got = 0; got < width;) {
		const uint8_t byte = bits[*bit >> 3];
		int off = (int)(*bit & 7), take = 8 - off < width - got ? 8 - off : width - got;
		v |= (uint64_t)((byte >> off) & ((1u << take) - 1)) << got;
		got += take;
		*bit += (uint64_t)take;
	}
	return v;
}

int rfi_pq_rle_next(rf_pq_rle *r, uint32_t *v)
{
	if (r->err)
		return -1;
	if (r->left == 0) {
		r->err = "more values asked for than expected";
		return -1;
	}
	if (r->run == 0 && rle_run(r) < 0)
		return -1;
	if (r->packed) {
		uint64_t bit = r->bit;
		*v = (uint32_t)unpack(r->bits, &bit, r->width);
		r->bit = (uint32_t)bit;
	} else {
		*v = r->value;
	}
	r->run--;
	r->left--;
	return 0;
}

/* ---- DELTA_BINARY_PACKED ---------------------------------------------- */

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int rfi_pq_delta_init(rf_pq_delta *d, const uint8_t *p, size_t n, uint64_t max_values)
{
	*d = (rf_pq_delta){.p = p, .end = p + n};
	uint64_t block = uleb(&d->p, d->end, &d->err);
	uint64_t minis = uleb(&d->p, d->end, &d->err);
	d->total = uleb(&d->p, d->end, &d->err);
	d->last = unzigzag(uleb(&d->p, d->end, &d->err));
	if (d->err)
		return -1;
	if (block == 0 || block % 128 || block > (1u << 20) || minis == 0 || block % minis ||
	    (block / minis) % 32) {
		d->err = "a DELTA_BINARY_PACKED header with a bad block size or miniblock count";
		return -1;
	}
	if (d->total > max_values) {
		d->err = "a DELTA_BINARY_PACKED stream of more values than its page holds";
		return -1;
	}
	d->block = (uint32_t)block;
	d->minis = (uint32_t)minis;
	d->per_mini = (uint32_t)(block / minis);
	return 0;
}

/* Reads a block's header: its minimum delta and miniblock widths. */
static int delta_block(rf_pq_delta *d)
{
	d->min_delta = unzigzag(uleb(&d->p, d->end, &d->err));
	if (d->err)
		return -1;
	if ((size_t)(d->end - d->p) < d->minis) {
		d->err = "a DELTA_BINARY_PACKED block's widths past the end";
		return -1;
	}
	d->widths = d->p;
	d->p += d->minis;
	for (uint32_t i = 0; i < d->minis; i++)
		if (d->widths[i] > 64) {
			d->err = "a DELTA_BINARY_PACKED miniblock wider than 64 bits";
			return -1;
		}
	d->mini = 0;
	return 0;
}

/* Enters the next miniblock (reading the next block's header when this
 * block is done): its bytes must be there whole. */
static int delta_mini(rf_pq_delta *d)
{
	if (d->mini_data)
		d->mini++;
	if ((!d->widths || d->mini >= d->minis) && delta_block(d) < 0)
		return -1;
	uint64_t bytes = (uint64_t)d->widths[d->mini] * d->per_mini / 8;
	if (bytes > (uint64_t)(d->end - d->p)) {
		d->err = "a DELTA_BINARY_PACKED miniblock past the end of its bytes";
		return -1;
	}
	d->mini_data = d->p;
	d->p += bytes;
	d->in_mini = 0;
	return 0;
}

int rfi_pq_delta_next(rf_pq_delta *d, int64_t *v)
{
	if (d->err)
		return -1;
	if (d->done >= d->total) {
		d->err = "more DELTA_BINARY_PACKED values asked for than the stream holds";
		return -1;
	}
	if (d->done > 0) { /* the first value is the header's */
		if ((!d->mini_data || d->in_mini == d->per_mini) && delta_mini(d) < 0)
			return -1;
		uint64_t bit = (uint64_t)d->in_mini * d->widths[d->mini];
		uint64_t delta = unpack(d->mini_data, &bit, d->widths[d->mini]);
		d->in_mini++;
		d->last = (int64_t)((uint64_t)d->last + (uint64_t)d->min_delta + delta);
	}
	*v = d->last;
	d->done++;
	return 0;
}

const uint8_t *rfi_pq_delta_end(rf_pq_delta *d)
{
	int64_t v;
	while (d->done < d->total)
		if (rfi_pq_delta_next(d, &v) < 0)
			return NULL;
	return d->p;
}
