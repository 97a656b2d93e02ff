/* sample_hook.c - the caller's per-sample step (cfg.sample_fn): the view of
 * a sample in its place that the hook gets, what its return makes of the
 * sample, and the sample's own random stream (rf_sample_rand). */
#include <string.h>

#include "pipeline/sample_hook.h"
#include "source/source.h"
#include "transform/window.h"
#include "util/util.h"

/* The tag of the hook's stream beside RandomResizedCrop's and the flip's
 * (transform/window.c): the same key, another stream. */
#define USER_STREAM 0x75736572ull /* "user" */

int rfi_sample_hook_run(rf_loader *l, rf_request *q, uint8_t *dst)
{
	const rf_output *o = &l->plan.output; /* what the host slot holds */
	uint32_t C = (uint32_t)l->cfg.crop, elem = o->dtype == RF_DTYPE_FLOAT32 ? 4
						   : o->dtype == RF_DTYPE_FLOAT16 ? 2 : 1;
	/* the hook writes its reason here; q->reason gets it with a prefix */
	char why[RF_REASON_LEN - 16];
	why[0] = '\0';
	rf_sample_view v = {
		.data = dst,
		.bytes = l->plan.sample_bytes,
		.dtype = o->dtype,
		.layout = o->layout,
		.height = C,
		.width = C,
		.channels = 3,
		.elem_bytes = elem,
		.stride_y = o->layout == RF_LAYOUT_CHW ? (size_t)C * elem : (size_t)C * 3 * elem,
		.stride_x = o->layout == RF_LAYOUT_CHW ? elem : 3 * (size_t)elem,
		.stride_c = o->layout == RF_LAYOUT_CHW ? (size_t)C * C * elem : elem,
		.id = q->sample,
		.label = rfi_source_label(&l->src, q->sample),
		.index = q->place.index,
		.batch = q->place.batch,
		.epoch = q->epoch,
		.reason = why,
		.reason_len = sizeof(why),
		.rng_key = rfi_stream_key(l->plan.window.seed, q->epoch, q->sample, USER_STREAM),
	};
	int ret = l->cfg.sample_fn(l->cfg.sample_user, &v);
	if (!ret)
		return 0;
	why[sizeof(why) - 1] = '\0'; /* whatever the hook wrote */
	if (why[0])
		rfi_fmt(q->reason, sizeof(q->reason), "sample_fn: %s", why);
	else
		rfi_fmt(q->reason, sizeof(q->reason), "sample_fn returned %d", ret);
	return ret < 0 ? ret : RF_EBADSAMPLE;
}

uint64_t rfi_sample_rand(rf_sample_view *s)
{
	return rfi_stream_draw(s->rng_key, ++s->rng_count);
}

double rfi_sample_uniform(rf_sample_view *s)
{
	return rfi_stream_unit(rfi_sample_rand(s));
}
