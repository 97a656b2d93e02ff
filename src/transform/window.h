/* window.h - which part of the source image becomes the output: the window
 * (in source pixels) that Resize(S) + CenterCrop(C) or RandomResizedCrop(C)
 * cuts out, and whether it is flipped. Random choices come from a
 * counter-based generator keyed on (seed, epoch, sample id) only, so they are
 * the same whatever the thread count or timing. Private. */
#ifndef RF_WINDOW_H
#define RF_WINDOW_H

#include <stdint.h>

typedef struct rf_window {
	double x, y, w, h; /* the window, in source pixels */
	/* pixels the resampler may read: the whole image for Resize + CenterCrop
	 * (torchvision resizes first, then crops), the window itself for
	 * RandomResizedCrop (it crops first, then resizes) */
	int bound_x0, bound_y0, bound_x1, bound_y1;
	int flip;          /* mirror left-right */
} rf_window;

typedef struct rf_window_params {
	int resize, crop;             /* Resize(resize) + CenterCrop(crop), or RRC(crop) */
	int random_resized_crop;      /* 1 = RandomResizedCrop */
	double scale_lo, scale_hi;    /* RRC area fraction range */
	double log_ratio_lo, log_ratio_hi; /* RRC log aspect ratio range */
	double flip_p;                /* probability of a horizontal flip */
	uint64_t seed;
} rf_window_params;

/* The counter-based streams behind every random choice: the key of the
 * stream `what` (a tag: "rrcc", "flip", "user") of sample id in epoch; its
 * k-th draw (k = 1, 2, ...), 64 random bits; and bits as a double in
 * [0, 1) (their top 53). Pure: the same arguments, the same numbers. */
uint64_t rfi_stream_key(uint64_t seed, uint64_t epoch, uint64_t id, uint64_t what);
uint64_t rfi_stream_draw(uint64_t key, uint64_t k);
double rfi_stream_unit(uint64_t bits);

/* The window for sample id of epoch in a w x h image. */
void rfi_window_for(const rf_window_params *p, uint64_t epoch, uint64_t id, int w, int h,
		   rf_window *out);

/* RandomResizedCrop's box (torchvision's get_params: 10 attempts, then the
 * central fallback): top i, left j, height bh, width bw, integers. */
void rfi_rrc_box(const rf_window_params *p, uint64_t epoch, uint64_t id, int w, int h,
		int *i, int *j, int *bh, int *bw);

#endif
