/* window.c - source windows of Resize + CenterCrop and RandomResizedCrop,
 * and the flip decision (see window.h). */
#include "transform/window.h"

#include <math.h>

#include "util/hash.h" /* rfi_mix64 */

uint64_t rfi_stream_key(uint64_t seed, uint64_t epoch, uint64_t id, uint64_t what)
{
	return rfi_mix64(rfi_mix64(rfi_mix64(seed ^ what) ^ epoch) ^ id);
}

uint64_t rfi_stream_draw(uint64_t key, uint64_t k)
{
	return rfi_mix64(key + 0x9e3779b97f4a7c15ull * k);
}

double rfi_stream_unit(uint64_t bits)
{
	return (double)(bits >> 11) * (1.0 / 9007199254740992.0);
}

/* A stream and the draws taken from it so far. */
typedef struct stream {
	uint64_t key, k;
} stream;

static double uniform01(stream *s) /* [0, 1) */
{
	return rfi_stream_unit(rfi_stream_draw(s->key, ++s->k));
}

static uint64_t stream_key(uint64_t seed, uint64_t epoch, uint64_t id, uint64_t what)
{
	return rfi_stream_key(seed, epoch, id, what);
}

void rfi_rrc_box(const rf_window_params *p, uint64_t epoch, uint64_t id, int w, int h,
		int *i, int *j, int *bh, int *bw)
{
	stream s = { stream_key(p->seed, epoch, id, 0x72726363ull /* "rrcc" */), 0 };
	double area = (double)w * h;
	for (int attempt = 0; attempt < 10; attempt++) {
		double target = area * (p->scale_lo + (p->scale_hi - p->scale_lo) * uniform01(&s));
		double ratio = exp(p->log_ratio_lo + (p->log_ratio_hi - p->log_ratio_lo) * uniform01(&s));
		int cw = (int)nearbyint(sqrt(target * ratio));
		int ch = (int)nearbyint(sqrt(target / ratio));
		if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
			*i = (int)(uniform01(&s) * (h - ch + 1));
			*j = (int)(uniform01(&s) * (w - cw + 1));
			*bh = ch;
			*bw = cw;
			return;
		}
	}
	/* central fallback: the largest centred box whose ratio is in range */
	double in_ratio = (double)w / h;
	double rlo = exp(p->log_ratio_lo), rhi = exp(p->log_ratio_hi);
	int cw = w, ch = h;
	if (in_ratio < rlo)
		ch = (int)nearbyint(w / rlo);
	else if (in_ratio > rhi)
		cw = (int)nearbyint(h * rhi);
	*bw = cw;
	*bh = ch;
	*i = (h - ch) / 2;
	*j = (w - cw) / 2;
}

void rfi_window_for(const rf_window_params *p, uint64_t epoch, uint64_t id, int w, int h,
		   rf_window *out)
{
	int C = p->crop;
	if (p->random_resized_crop) {
		int i, j, bh, bw;
		rfi_rrc_box(p, epoch, id, w, h, &i, &j, &bh, &bw);
		*out = (rf_window){ .x = j, .y = i, .w = bw, .h = bh,
				    .bound_x0 = j, .bound_y0 = i,
				    .bound_x1 = j + bw, .bound_y1 = i + bh };
	} else {
		/* torchvision: the shorter side becomes S, the longer
		 * int(S * long / short); the crop starts at round((size - C) / 2) */
		int S = p->resize, rw, rh;
		if (w <= h) {
			rw = S;
			rh = (int)((int64_t)S * h / w);
		} else {
			rh = S;
			rw = (int)((int64_t)S * w / h);
		}
		double left = nearbyint((rw - C) / 2.0), top = nearbyint((rh - C) / 2.0);
		double fx = (double)w / rw, fy = (double)h / rh;
		*out = (rf_window){ .x = left * fx, .y = top * fy, .w = C * fx, .h = C * fy,
				    .bound_x0 = 0, .bound_y0 = 0, .bound_x1 = w, .bound_y1 = h };
	}
	out->flip = 0;
	if (p->flip_p > 0) {
		stream s = { stream_key(p->seed, epoch, id, 0x666c6970ull /* "flip" */), 0 };
		out->flip = uniform01(&s) < p->flip_p;
	}
}
