/* test_formats.c - the decoders behind rf_decoder (src/decode/image.c): the
 * format told by the bytes, and PNG and WebP decoded exactly where the
 * format is lossless: every pixel of a PNG of each kind (RGB, 16-bit grey to
 * its high byte, palette, Adam7) and of a lossless WebP, whole, for a window
 * (the rows and columns it needs, at the offsets the decoder says); an
 * image over max_pixels refused from its header; a cut
 * file a bad sample with the library's reason. Pixels against PIL and
 * torchvision: python/tests/test_formats.py. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "decode/image.h"
#include "rf_config.h"
#include "ringfeed.h"
#if RF_HAVE_PNG
#include <spng.h>
#endif
#if RF_HAVE_WEBP
#include <webp/encode.h>
#endif

enum { W = 37, H = 23 };

#if RF_HAVE_PNG || RF_HAVE_WEBP
/* The test image: a value per pixel and channel that differs everywhere. */
static uint8_t px(int x, int y, int c)
{
	return (uint8_t)(x * 7 + y * 11 + c * 85);
}

static void assert_region(const rf_image *img, int scaled_w, int scaled_h)
{
	cr_assert_eq(img->scaled_w, scaled_w);
	cr_assert_eq(img->scaled_h, scaled_h);
	cr_assert(img->x0 >= 0 && img->y0 >= 0 && img->x0 + img->w <= scaled_w &&
		  img->y0 + img->h <= scaled_h, "%d,%d %dx%d", img->x0, img->y0, img->w, img->h);
}

/* Every decoded pixel is the test image's (rgb: expect(x, y, c)). */
static void assert_pixels(const rf_image *img, uint8_t (*expect)(int, int, int))
{
	for (int y = 0; y < img->h; y++)
		for (int x = 0; x < img->w; x++)
			for (int c = 0; c < 3; c++) {
				uint8_t got = img->rgb[(size_t)y * img->stride + (size_t)x * 3 + c];
				uint8_t want = expect(img->x0 + x, img->y0 + y, c);
				cr_assert_eq(got, want, "pixel (%d, %d) channel %d: %d, not %d",
					     img->x0 + x, img->y0 + y, c, got, want);
			}
}
#endif

Test(formats, the_format_is_told_by_the_bytes)
{
	cr_assert_eq(rfi_image_sniff((const uint8_t *)"\xff\xd8\xff\xe0", 4), RF_FORMAT_JPEG);
	cr_assert_eq(rfi_image_sniff((const uint8_t *)"\x89PNG\r\n\x1a\n", 8), RF_FORMAT_PNG);
	cr_assert_eq(rfi_image_sniff((const uint8_t *)"RIFF\x10\0\0\0WEBPVP8 ", 16), RF_FORMAT_WEBP);
	cr_assert_eq(rfi_image_sniff((const uint8_t *)"RIFF\x10\0\0\0WAVEfmt ", 16), RF_FORMAT_UNKNOWN);
	cr_assert_eq(rfi_image_sniff((const uint8_t *)"\x89PNG", 4), RF_FORMAT_UNKNOWN);
	/* what is none of them is named so, with its first bytes */
	rf_decoder *d;
	cr_assert_eq(rfi_decoder_create(&d), 0);
	int w, h, md;
	char reason[256];
	cr_assert_eq(rfi_decoder_open(d, (const uint8_t *)"hello, world", 12, 1u << 20, &w, &h, &md,
				     reason, sizeof(reason)), RF_EBADSAMPLE);
	cr_assert(strstr(reason, "not an image (JPEG, PNG or WebP): 12 bytes starting 0x68 0x65"),
		  "%s", reason);
	rfi_decoder_destroy(d);
	unsigned f = rf_image_formats();
	cr_assert(f & RF_FORMAT_JPEG_BIT);
	cr_assert_eq(!!(f & RF_FORMAT_PNG_BIT), RF_HAVE_PNG);
	cr_assert_eq(!!(f & RF_FORMAT_WEBP_BIT), RF_HAVE_WEBP);
}

#if RF_HAVE_PNG || RF_HAVE_WEBP
/* Opens and decodes data at 1/denom for want (NULL: all). */
static int decode(rf_decoder *d, const uint8_t *data, size_t len, int denom, const rf_region *want,
		  rf_image *img, char *reason)
{
	int w, h, max_denom;
	int err = rfi_decoder_open(d, data, len, 1u << 20, &w, &h, &max_denom, reason, 256);
	if (err)
		return err;
	cr_assert_eq(w, W);
	cr_assert_eq(h, H);
	cr_assert(denom <= max_denom);
	return rfi_decoder_decode(d, denom, want, 0, img, reason, 256);
}
#endif

#if RF_HAVE_PNG
static uint8_t grey16_high(int x, int y, int c)
{
	(void)c;
	return px(x, y, 0);
}

static uint8_t palette_rgb(int x, int y, int c)
{
	int i = (x + y) % 16;
	return (uint8_t)(c == 0 ? i * 16 : c == 1 ? 255 - i * 16 : i * 5);
}

/* A PNG from libspng's encoder: type 2 (RGB8), 0 at 16 bits (the high
 * byte px(), the low byte noise), or 3 (a 16-entry palette). */
static uint8_t *make_png(int type, int interlace, size_t *len)
{
	int depth = type == 0 ? 16 : 8, ch = type == 2 ? 3 : 1;
	size_t row = (size_t)W * ch * depth / 8;
	uint8_t *raw = malloc(row * H);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			for (int c = 0; c < ch; c++) {
				uint8_t *p = raw + (size_t)y * row + (size_t)(x * ch + c) * depth / 8;
				if (type == 0) { /* SPNG_FMT_PNG takes host-endian samples */
					uint16_t v = (uint16_t)(px(x, y, 0) << 8 | (uint8_t)(x * 31 + y));
					memcpy(p, &v, 2);
				} else {
					p[0] = type == 3 ? (uint8_t)((x + y) % 16) : px(x, y, c);
				}
			}
	spng_ctx *e = spng_ctx_new(SPNG_CTX_ENCODER);
	spng_set_option(e, SPNG_ENCODE_TO_BUFFER, 1);
	struct spng_ihdr ihdr = { .width = W, .height = H, .bit_depth = (uint8_t)depth,
				  .color_type = (uint8_t)type, .interlace_method = (uint8_t)interlace };
	spng_set_ihdr(e, &ihdr);
	if (type == 3) {
		struct spng_plte plte = { .n_entries = 16 };
		for (int i = 0; i < 16; i++)
			plte.entries[i] = (struct spng_plte_entry){ (uint8_t)(i * 16), (uint8_t)(255 - i * 16),
								    (uint8_t)(i * 5), 255 };
		spng_set_plte(e, &plte);
	}
	int err = spng_encode_image(e, raw, row * H, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
	cr_assert_eq(err, 0, "%s", spng_strerror(err));
	uint8_t *png = spng_get_png_buffer(e, len, &err);
	cr_assert(png, "%s", spng_strerror(err));
	spng_ctx_free(e);
	free(raw);
	return png;
}
#endif

Test(formats, png_every_pixel_whole_and_for_a_window)
{
#if !RF_HAVE_PNG
	cr_skip_test("built without libspng (scripts/deps.sh installs libspng-dev)");
#else
	struct { int type, interlace; uint8_t (*expect)(int, int, int); } kinds[] = {
		{ 2, 0, px }, { 2, 1, px }, { 0, 0, grey16_high }, { 3, 0, palette_rgb },
		{ 3, 1, palette_rgb } };
	rf_decoder *d;
	cr_assert_eq(rfi_decoder_create(&d), 0);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t len;
		uint8_t *png = make_png(kinds[k].type, kinds[k].interlace, &len);
		char reason[256] = "";
		rf_image img;
		cr_assert_eq(decode(d, png, len, 1, NULL, &img, reason), 0, "%s", reason);
		assert_region(&img, W, H);
		cr_assert_eq(img.w * img.h, W * H);
		assert_pixels(&img, kinds[k].expect);
		/* a window: its rows at least (whole rows), down to no further
		 * than its last when not interlaced */
		rf_region want = { 5, 20, 7, 15 };
		cr_assert_eq(decode(d, png, len, 1, &want, &img, reason), 0, "%s", reason);
		assert_region(&img, W, H);
		cr_assert(img.y0 <= 7 && img.y0 + img.h >= 15 && img.x0 <= 5 && img.x0 + img.w >= 20);
		if (!kinds[k].interlace)
			cr_assert_eq(img.y0 + img.h, 15);
		assert_pixels(&img, kinds[k].expect);
		/* cut in half: a bad sample with libspng's reason */
		int err = decode(d, png, len / 2, 1, NULL, &img, reason);
		cr_assert_eq(err, RF_EBADSAMPLE, "type %d: %d", kinds[k].type, err);
		cr_assert(!strncmp(reason, "corrupt PNG: ", 13), "%s", reason);
		free(png);
	}
	/* over max_pixels: refused from the header */
	size_t len;
	uint8_t *png = make_png(2, 0, &len);
	int w, h, md;
	char reason[256];
	cr_assert_eq(rfi_decoder_open(d, png, len, W * H - 1, &w, &h, &md, reason, sizeof(reason)),
		     RF_EBADSAMPLE);
	cr_assert(strstr(reason, "max_pixels"), "%s", reason);
	free(png);
	rfi_decoder_destroy(d);
#endif
}

Test(formats, lossless_webp_every_pixel_whole_and_for_a_window)
{
#if !RF_HAVE_WEBP
	cr_skip_test("built without libwebp (scripts/deps.sh installs libwebp-dev)");
#else
	uint8_t raw[W * H * 3];
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			for (int c = 0; c < 3; c++)
				raw[(y * W + x) * 3 + c] = px(x, y, c);
	uint8_t *webp;
	size_t len = WebPEncodeLosslessRGB(raw, W, H, W * 3, &webp);
	cr_assert(len > 0);
	rf_decoder *d;
	cr_assert_eq(rfi_decoder_create(&d), 0);
	char reason[256] = "";
	rf_image img;
	cr_assert_eq(decode(d, webp, len, 1, NULL, &img, reason), 0, "%s", reason);
	assert_region(&img, W, H);
	cr_assert_eq(img.w * img.h, W * H);
	assert_pixels(&img, px);
	/* a window at odd offsets: cropped at the even ones before them */
	rf_region want = { 5, 20, 7, 15 };
	cr_assert_eq(decode(d, webp, len, 1, &want, &img, reason), 0, "%s", reason);
	assert_region(&img, W, H);
	cr_assert_eq(img.x0, 4);
	cr_assert_eq(img.y0, 6);
	cr_assert_eq(img.x0 + img.w, 20);
	cr_assert_eq(img.y0 + img.h, 15);
	assert_pixels(&img, px);
	/* cut: a bad sample with a reason */
	cr_assert_eq(decode(d, webp, len / 2, 1, NULL, &img, reason), RF_EBADSAMPLE);
	cr_assert(!strncmp(reason, "corrupt WebP: ", 14), "%s", reason);
	WebPFree(webp);
	rfi_decoder_destroy(d);
#endif
}

Test(formats, a_format_not_built_in_is_a_bad_sample_that_says_so)
{
#if RF_HAVE_PNG && RF_HAVE_WEBP
	cr_skip_test("built with libspng and libwebp (-Dpng=disabled -Dwebp=disabled runs this)");
#else
	rf_decoder *d;
	cr_assert_eq(rfi_decoder_create(&d), 0);
	int w, h, md;
	char reason[256] = "";
#if !RF_HAVE_PNG
	cr_assert_eq(rfi_decoder_open(d, (const uint8_t *)"\x89PNG\r\n\x1a\n....", 12, 1u << 20, &w, &h,
				     &md, reason, sizeof(reason)), RF_EBADSAMPLE);
	cr_assert(strstr(reason, "a PNG image: this ringfeed was built without libspng"), "%s", reason);
#endif
#if !RF_HAVE_WEBP
	cr_assert_eq(rfi_decoder_open(d, (const uint8_t *)"RIFF\0\0\0\0WEBPVP8 ", 16, 1u << 20, &w, &h,
				     &md, reason, sizeof(reason)), RF_EBADSAMPLE);
	cr_assert(strstr(reason, "a WebP image: this ringfeed was built without libwebp"), "%s", reason);
#endif
	rfi_decoder_destroy(d);
#endif
}
