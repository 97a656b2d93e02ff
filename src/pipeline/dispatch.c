/* dispatch.c - which decoder takes a landed read. CPU decode: the compute
 * pool. GPU decode: the GPU decode threads (they pass what the engines
 * refuse on to the pool). AUTO: the side that would finish it sooner, its
 * outstanding samples over its measured rate, so that both stay busy and
 * the split follows what each side actually delivers on this machine and
 * these images (the engines' speed depends on the pixels, the pool's on
 * the cores it gets). Rates are measured while a side has work; a side
 * that had none keeps its last rate, so it is offered work again. */
#include "decode/image.h"
#include "pipeline/loader_state.h"
#include "util/util.h"

#define MEASURE_NS 20000000ull /* 20 ms between rate updates */

void rfi_split_init(rf_split *sp, int threads, int decoders)
{
	atomic_init(&sp->gpu_out, 0);
	atomic_init(&sp->cpu_out, 0);
	/* priors, replaced after the first 20 ms: an engine group per decoder
	 * goes as fast as a few cores */
	sp->gpu_rate = 4000.0 * decoders;
	sp->cpu_rate = 600.0 * (threads > 0 ? threads : 1);
	sp->t_last = 0;
}

/* Ring thread: the rates from the decode counters, now and then. */
static void measure(rf_loader *l, rf_split *sp)
{
	uint64_t now = rfi_now_ns();
	if (!sp->t_last) {
		sp->t_last = now;
		return;
	}
	if (now - sp->t_last < MEASURE_NS)
		return;
	double dt = (double)(now - sp->t_last) * 1e-9;
	uint64_t g = atomic_load_explicit(&l->st.gpu_decodes, memory_order_relaxed);
	uint64_t c = atomic_load_explicit(&l->st.cpu_decodes, memory_order_relaxed);
	/* a side with outstanding work all along: its completions are its rate
	 * (smoothed); a side that ran dry keeps its rate */
	if (sp->gpu_busy && g > sp->gpu_done)
		sp->gpu_rate = 0.7 * sp->gpu_rate + 0.3 * (double)(g - sp->gpu_done) / dt;
	if (sp->cpu_busy && c > sp->cpu_done)
		sp->cpu_rate = 0.7 * sp->cpu_rate + 0.3 * (double)(c - sp->cpu_done) / dt;
	sp->gpu_done = g;
	sp->cpu_done = c;
	sp->t_last = now;
	sp->gpu_busy = sp->cpu_busy = 1;
}

void rfi_loader_dispatch(rf_loader *l, uint32_t id)
{
	rf_split *sp = &l->split;
	/* only plain JPEGs go to the engines: zstd members are decompressed
	 * on the CPU, so decoded there too, and PNG and WebP have no engine
	 * (their bytes are looked at only where an engine could take them) */
	const rf_request *q = &l->req[id];
	int jpeg = l->decode != RF_DECODE_CPU && q->stage == RF_STAGE_IMAGE &&
		   rfi_image_sniff(q->data, q->len) == RF_FORMAT_JPEG;
	int gpu = l->decode == RF_DECODE_GPU && jpeg;
	if (l->decode == RF_DECODE_AUTO && jpeg) {
		measure(l, sp);
		uint32_t go = atomic_load_explicit(&sp->gpu_out, memory_order_relaxed);
		uint32_t co = atomic_load_explicit(&sp->cpu_out, memory_order_relaxed);
		sp->gpu_busy &= go > 0;
		sp->cpu_busy &= co > 0;
		/* expected time to finish it on each side */
		gpu = (double)(go + 1) / sp->gpu_rate <= (double)(co + 1) / sp->cpu_rate;
	}
	if (gpu) {
		atomic_fetch_add_explicit(&sp->gpu_out, 1, memory_order_relaxed);
		rfi_idq_push(&l->gpu_work, id);
	} else {
		atomic_fetch_add_explicit(&sp->cpu_out, 1, memory_order_relaxed);
		rfi_idq_push(&l->work, id); /* now the compute pool's, until handed back */
	}
}
