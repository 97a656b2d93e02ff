/* fuzz_image.h - the body of the image targets (fuzz_jpeg.c, fuzz_png.c,
 * fuzz_webp.c): one image through the compute path's steps (open, window,
 * reduced scale, region or full decode, verify, resample into every output
 * type and layout), as src/pipeline/compute.c chains them, through the
 * decoder that tells the format by the bytes. The targets differ in their
 * seeds (make_seeds.c), so that each one's corpus stays in its format. The
 * first 4 bytes choose the settings; the rest is the file. */
#ifndef RF_FUZZ_IMAGE_H
#define RF_FUZZ_IMAGE_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/image.h"
#include "transform/resample.h"
#include "transform/window.h"
#include "util/util.h"

static rf_decoder *dec;
static rf_resampler rs[3];
static const int crops[3] = { 8, 24, 61 };

static int fuzz_image(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	if (!dec) {
		if (rfi_decoder_create(&dec))
			abort();
		for (int i = 0; i < 3; i++)
			if (rfi_resampler_init(&rs[i], crops[i]))
				abort();
	}
	uint8_t k0 = data[0], k1 = data[1], k2 = data[2], k3 = data[3];
	data += 4;
	size -= 4;
	int ci = k0 % 3, C = crops[ci];
	rf_window_params wp = { .resize = C + (k0 >> 2) % 40, .crop = C,
				.random_resized_crop = k1 & 1, .scale_lo = 0.08, .scale_hi = 1.0,
				.log_ratio_lo = log(3.0 / 4), .log_ratio_hi = log(4.0 / 3),
				.flip_p = (k1 & 2) ? 1.0 : 0.0, .seed = k3 };
	int scaled = !(k1 & 4), region = !(k1 & 8), verify = (k1 >> 4) & 1;
	rf_dtype dtype = (rf_dtype)(k2 % 3);
	rf_layout layout = (rf_layout)((k2 >> 2) & 1);
	static const float mean[3] = { 0.485f, 0.456f, 0.406f }, stdv[3] = { 0.229f, 0.224f, 0.225f };
	rf_output out;
	rfi_output_init(&out, C, dtype, layout, mean, stdv);

	char reason[256];
	int W, H, max_denom;
	if (rfi_decoder_open(dec, data, size, 1u << 22, &W, &H, &max_denom, reason, sizeof(reason)))
		return 0;
	rf_window win;
	rfi_window_for(&wp, k3 >> 4, k2, W, H, &win);
	int denom = scaled ? rfi_denom_for_window(&win, C) : 1;
	denom = denom < max_denom ? denom : max_denom;
	rf_resampler *r = &rs[ci];
	if (rfi_taps_for_window(&r->tx, &r->ty, &win, W, H, denom, C)) { /* as compute.c */
		rfi_decoder_abort(dec);
		return 0;
	}
	rf_region want = { r->tx.lo, r->tx.hi, r->ty.lo, r->ty.hi };
	rf_image img;
	if (rfi_decoder_decode(dec, denom, region ? &want : NULL, verify, &img, reason, sizeof(reason)))
		return 0;
	size_t n = rfi_output_sample_bytes(&out);
	uint8_t *dst = malloc(n);
	if (!dst)
		abort();
	rfi_resample_store(r, &out, img.rgb, img.stride, img.x0, img.y0, dst);
	free(dst);
	return 0;
}

#endif
