/* jpeg.c - scaled, region-limited JPEG decode with the libjpeg API of
 * libjpeg-turbo; libjpeg's errors and warnings are turned into ringfeed codes
 * plus a reason string here, at the boundary (see jpeg.h). */
#include "decode/jpeg.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h> /* jpeglib.h needs FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "ringfeed.h"
#include "util/util.h"

typedef struct err_mgr {
	struct jpeg_error_mgr pub;
	jmp_buf jump;
	char msg[JMSG_LENGTH_MAX];
} err_mgr;

struct rf_jpeg_decoder {
	struct jpeg_decompress_struct cinfo;
	err_mgr err;
	int open;          /* an image is between open and decode */
	int cmyk;          /* decoding as CMYK, converted here */
	int inverted;      /* Adobe CMYK: stored inverted */
	uint8_t *buf;      /* decoded rows */
	size_t cap;
	uint8_t *cmyk_row; /* one CMYK row before conversion */
	size_t cmyk_cap;
	uint8_t *spare_row; /* verify: the rows below the region, decoded and dropped */
	size_t spare_cap;
};

static void on_error(j_common_ptr cinfo)
{
	err_mgr *e = (err_mgr *)cinfo->err;
	e->pub.format_message(cinfo, e->msg);
	longjmp(e->jump, 1);
}

/* Warnings (level -1: a damaged stream) stop the decode like errors;
 * trace messages (level >= 0) are dropped: the library prints nothing. */
static void on_message(j_common_ptr cinfo, int level)
{
	if (level < 0)
		on_error(cinfo);
}

int rfi_jpeg_decoder_create(rf_jpeg_decoder **out)
{
	rf_jpeg_decoder *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cinfo.err = jpeg_std_error(&d->err.pub);
	d->err.pub.error_exit = on_error;
	d->err.pub.emit_message = on_message;
	if (setjmp(d->err.jump)) {
		free(d);
		return -ENOMEM;
	}
	jpeg_create_decompress(&d->cinfo);
	*out = d;
	return 0;
}

void rfi_jpeg_decoder_destroy(rf_jpeg_decoder *d)
{
	if (!d)
		return;
	jpeg_destroy_decompress(&d->cinfo);
	free(d->buf);
	free(d->cmyk_row);
	free(d->spare_row);
	free(d);
}

void rfi_jpeg_abort(rf_jpeg_decoder *d)
{
	jpeg_abort_decompress(&d->cinfo);
	d->open = 0;
}

int rfi_jpeg_open(rf_jpeg_decoder *d, const uint8_t *data, size_t len, uint64_t max_pixels,
		 int *w, int *h, char *reason, size_t rlen)
{
	struct jpeg_decompress_struct *ci = &d->cinfo;
	if (d->open)
		rfi_jpeg_abort(d);
	if (setjmp(d->err.jump)) {
		/* Past the SOI marker it is a JPEG this build cannot read (12-bit,
		 * lossless, arithmetic-coded...) or a damaged one, not "not a JPEG". */
		int soi = len >= 2 && data[0] == 0xFF && data[1] == 0xD8;
		rfi_fmt(reason, rlen, "%s: %s", soi ? "unsupported or corrupt JPEG" : "not a JPEG",
		       d->err.msg);
		rfi_jpeg_abort(d);
		return RF_EBADSAMPLE;
	}
	jpeg_mem_src(ci, data, (unsigned long)len);
	jpeg_read_header(ci, TRUE);
	d->open = 1;
	*w = (int)ci->image_width;
	*h = (int)ci->image_height;
	if ((uint64_t)*w * (uint64_t)*h > max_pixels) {
		rfi_fmt(reason, rlen, "image of %d x %d pixels is over the limit of %llu pixels "
		       "(max_pixels)", *w, *h, (unsigned long long)max_pixels);
		rfi_jpeg_abort(d);
		return RF_EBADSAMPLE;
	}
	switch (ci->jpeg_color_space) {
	case JCS_GRAYSCALE:
	case JCS_YCbCr:
	case JCS_RGB:
		ci->out_color_space = JCS_EXT_RGB;
		d->cmyk = 0;
		break;
	case JCS_CMYK:
	case JCS_YCCK:
		ci->out_color_space = JCS_CMYK;
		d->cmyk = 1;
		d->inverted = ci->saw_Adobe_marker;
		break;
	default:
		rfi_fmt(reason, rlen, "unsupported JPEG colour space %d", (int)ci->jpeg_color_space);
		rfi_jpeg_abort(d);
		return RF_EBADSAMPLE;
	}
	return 0;
}

static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, int n, int inverted)
{
	for (int i = 0; i < n; i++, in += 4, out += 3) {
		unsigned c = in[0], m = in[1], y = in[2], k = in[3];
		if (!inverted) { /* plain CMYK: 0 = no ink */
			c = 255 - c;
			m = 255 - m;
			y = 255 - y;
			k = 255 - k;
		}
		out[0] = (uint8_t)((c * k + 127) / 255);
		out[1] = (uint8_t)((m * k + 127) / 255);
		out[2] = (uint8_t)((y * k + 127) / 255);
	}
}

int rfi_jpeg_decode(rf_jpeg_decoder *d, int denom, const rf_region *want, int crop_columns,
		   int verify, rf_image *out, char *reason, size_t rlen)
{
	struct jpeg_decompress_struct *ci = &d->cinfo;
	if (!d->open) {
		rfi_fmt(reason, rlen, "internal: decode without open");
		return -EINVAL;
	}
	if (setjmp(d->err.jump)) {
		rfi_fmt(reason, rlen, "corrupt JPEG: %s", d->err.msg);
		rfi_jpeg_abort(d);
		return RF_EBADSAMPLE;
	}
	ci->scale_num = 1;
	ci->scale_denom = (unsigned)denom;
	jpeg_start_decompress(ci);
	int sw = (int)ci->output_width, sh = (int)ci->output_height;
	int y0 = 0, y1 = sh;
	JDIMENSION xoff = 0, width = (JDIMENSION)sw;
	if (want) {
		y0 = RF_MAX(0, RF_MIN(want->y0, sh - 1));
		y1 = RF_MAX(y0 + 1, RF_MIN(want->y1, sh));
		if (crop_columns) {
			int x0 = RF_MAX(0, RF_MIN(want->x0, sw - 1));
			int x1 = RF_MAX(x0 + 1, RF_MIN(want->x1, sw));
			xoff = (JDIMENSION)x0;
			width = (JDIMENSION)(x1 - x0);
			if (width < (JDIMENSION)sw)
				jpeg_crop_scanline(ci, &xoff, &width); /* widens to iMCU edges */
		}
	}
	size_t stride = (size_t)width * 3;
	int rows = y1 - y0;
	if (rfi_grow(&d->buf, &d->cap, stride * (size_t)rows) ||
	    (d->cmyk && rfi_grow(&d->cmyk_row, &d->cmyk_cap, (size_t)width * 4))) {
		rfi_fmt(reason, rlen, "out of memory for a %d x %d region", (int)width, rows);
		rfi_jpeg_abort(d);
		return -ENOMEM;
	}
	if (y0 > 0)
		jpeg_skip_scanlines(ci, (JDIMENSION)y0);
	/* Several rows a call (libjpeg hands out what one row group yields);
	 * CMYK one at a time, through the conversion row. */
	for (int r = 0; r < rows;) {
		JSAMPROW ptr[16];
		int ask = d->cmyk ? 1 : RF_MIN(rows - r, 16);
		for (int i = 0; i < ask; i++)
			ptr[i] = d->cmyk ? d->cmyk_row : d->buf + (size_t)(r + i) * stride;
		int got = (int)jpeg_read_scanlines(ci, ptr, (JDIMENSION)ask);
		if (got < 1) {
			rfi_fmt(reason, rlen, "corrupt JPEG: no data for row %d", y0 + r);
			rfi_jpeg_abort(d);
			return RF_EBADSAMPLE;
		}
		if (d->cmyk)
			cmyk_to_rgb(d->cmyk_row, d->buf + (size_t)r * stride, (int)width, d->inverted);
		r += got;
	}
	if (verify) {
		/* The rows below the region and the stream to its end marker:
		 * a damaged tail warns, and a warning is an error (on_message).
		 * (jpeg_skip_scanlines() to the last row would not read them.) */
		if (rfi_grow(&d->spare_row, &d->spare_cap, (size_t)width * 4)) {
			rfi_fmt(reason, rlen, "out of memory for a row of %d pixels", (int)width);
			rfi_jpeg_abort(d);
			return -ENOMEM;
		}
		while (ci->output_scanline < ci->output_height) {
			JSAMPROW row = d->spare_row;
			if (jpeg_read_scanlines(ci, &row, 1) < 1) {
				rfi_fmt(reason, rlen, "corrupt JPEG: no data for row %u", ci->output_scanline);
				rfi_jpeg_abort(d);
				return RF_EBADSAMPLE;
			}
		}
		jpeg_finish_decompress(ci);
		d->open = 0;
	} else {
		/* The rows below the region are never decoded: damage there
		 * goes unnoticed (verify decodes them). */
		rfi_jpeg_abort(d);
	}
	*out = (rf_image){ .rgb = d->buf, .stride = stride, .scaled_w = sw, .scaled_h = sh,
				.x0 = (int)xoff, .y0 = y0, .w = (int)width, .h = rows };
	return 0;
}
