/* run.c - one measured run of a loader (see run.h). */
#define _GNU_SOURCE
#include "cli/run.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms * 1e6) % 1000000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The run's checksum: a hash of every delivered byte, label and id, so
 * that two runs that deliver the same batches print the same value and any
 * difference shows. Each batch is hashed from its index, and the batches'
 * hashes are added: the same in any delivery order (--out-of-order) (ringfeed bench --json "checksum";
 * bench/same_batches.sh compares builds with it). Four independent lanes of
 * xxHash64's round (the multiplies overlap), folded at the end of each
 * buffer; about 10 GB/s on one core, a few percent of one core at the
 * loader's rates. Words are read in the machine's byte order: compare
 * checksums from machines of one byte order. Samples decoded on the device
 * (no host copy) add their labels and ids only. */
#define P1 0x9e3779b185ebca87ull
#define P2 0xc2b2ae3d27d4eb4full

static inline uint64_t round64(uint64_t acc, uint64_t w)
{
	acc += w * P2;
	acc = (acc << 31) | (acc >> 33);
	return acc * P1;
}

static uint64_t hash_buf(uint64_t h, const uint8_t *p, size_t len)
{
	uint64_t a = h + P1 + P2, b = h + P2, c = h, d = h - P1;
	size_t i = 0;
	for (; i + 32 <= len; i += 32) {
		uint64_t w[4];
		memcpy(w, p + i, 32);
		a = round64(a, w[0]);
		b = round64(b, w[1]);
		c = round64(c, w[2]);
		d = round64(d, w[3]);
	}
	uint64_t x = ((a << 1) | (a >> 63)) + ((b << 7) | (b >> 57)) + ((c << 12) | (c >> 52)) +
		     ((d << 18) | (d >> 46));
	for (; i < len; i++)
		x = round64(x, p[i]);
	return round64(x ^ h, (uint64_t)len);
}

static uint64_t hash_batch(const rf_batch *b, int raw)
{
	uint64_t h = round64(P1, b->index);
	for (uint32_t i = 0; i < b->count; i++) {
		h = round64(h, b->ids[i]);
		h = round64(h, (uint64_t)(uint32_t)b->labels[i]);
		if (!b->data)
			continue;
		if (raw)
			h = hash_buf(h, b->data + b->offsets[i], b->sizes[i]);
		else
			h = hash_buf(h, b->data + (size_t)i * b->sample_bytes, b->sample_bytes);
	}
	for (uint32_t f = 0; f < b->nfields; f++) { /* fields: each value and whether it is there */
		const rf_field *x = &b->fields[f];
		for (uint32_t i = 0; i < b->count; i++) {
			h = round64(h, x->present[i]);
			h = hash_buf(h, x->bytes + x->offsets[i], x->offsets[i + 1] - x->offsets[i]);
		}
	}
	return h;
}

/* The live line: rate, ETA and the queues. */
static void show_progress(rf_loader *l, const run_out *o, double t0, long long max_batches, int last)
{
	rf_stats st;
	rf_order_info ord;
	rf_loader_stats(l, &st);
	rf_loader_order(l, &ord);
	double el = now_s() - t0, rate = el > 0 ? (double)o->samples / el : 0;
	unsigned long long total = max_batches >= 0 ? (unsigned long long)max_batches
			   : ord.total_batches != UINT64_MAX ? (unsigned long long)(ord.total_batches - ord.next_batch + o->batches) : 0;
	char eta[32] = "?";
	if (total && o->batches) {
		double left = el / (double)o->batches * (double)(total - RF_CLI_MIN(total, o->batches));
		snprintf(eta, sizeof(eta), "%d:%02d", (int)(left / 60), (int)left % 60);
	}
	fprintf(stderr, "\r  %llu batches, %.0f samples/s, ETA %s | reads in flight %u, "
		"waiting for decode %u, batches ready %u   %s", o->batches, rate, eta,
		st.reads_in_flight, st.reads_waiting, st.batches_ready, last ? "\n" : "");
}

double run_steady_rate(const run_out *o)
{
	double span = o->t_end - o->t_warm;
	return o->steady_batches && span > 0 ? (double)o->steady_samples / span : 0;
}

double run_steady_wait_frac(const run_out *o)
{
	double span = o->t_end - o->t_warm;
	return o->steady_batches && span > 0 ? o->steady_wait_s / span : 0;
}

/* Batch b, waited for w s, into o's figures: the first batch's time, and
 * the steady part's (after the warm-up batches) batches, samples, waits and
 * queues; w into h->waits while there is room. */
static void count_batch(rf_loader *l, const run_hooks *h, run_out *o, const rf_batch *b, double w)
{
	if (!o->batches)
		o->t_first = now_s();
	o->wait_s += w;
	long long warm = h->warm_batches > 0 ? h->warm_batches : 1;
	if ((long long)o->batches == warm - 1) {
		o->t_warm = now_s();
		if (h->warm_stats)
			rf_loader_stats(l, h->warm_stats);
	} else if ((long long)o->batches >= warm) {
		o->steady_samples += b->count;
		o->steady_batches++;
		o->steady_wait_s += w;
		if (h->sample_queues) {
			rf_stats q;
			rf_loader_stats(l, &q);
			o->inflight_sum += q.reads_in_flight;
		}
	}
	if (h->waits && o->nwaits < h->waits_cap)
		h->waits[o->nwaits++] = w * 1e3;
}

/* What the consumer does with batch b (waited for w s) while it holds it:
 * waits for it on the device, hashes it, logs it, writes its ids, takes the
 * training step. @return : 0, or -EIO when a step failed (the steps after it
 * are still taken). */
static int use_batch(const run_hooks *h, run_out *o, const rf_batch *b, double w)
{
	int ret = 0;
	/* The batch is consumed once it is on the device (and, with the
	 * checksum, once every byte on the host was read). */
	if (h->device_sync && rf_batch_sync(b))
		ret = -EIO;
	if (h->checksum)
		o->checksum += hash_batch(b, h->raw);
	if (h->log && fprintf(h->log, "{\"batch\":%llu,\"epoch\":%u,\"samples\":%u,\"wait_ms\":%.3f,"
			      "\"fetch_ms\":%.3f,\"prep_ms\":%.3f,\"bytes\":%llu,\"replaced\":%u}\n",
			      (unsigned long long)b->index, b->epoch, b->count, w * 1e3,
			      (double)b->fetch_ns * 1e-6, (double)b->prep_ns * 1e-6,
			      (unsigned long long)b->read_bytes, b->replaced) < 0)
		ret = -EIO;
	if (h->ids && cli_ids_write(h->ids, b))
		ret = -EIO;
	if (h->step)
		h->step(h->step_arg); /* a training step that works the CPU */
	else if (h->step_ms > 0)
		sleep_ms(h->step_ms); /* the training step, holding the batch */
	return ret;
}

int run_consume(rf_loader *l, const run_hooks *h, run_out *o)
{
	memset(o, 0, sizeof(*o));
	double t0 = now_s(), next_show = t0 + 0.25;
	rf_batch *b;
	int ret = 0;
	while ((h->max_batches < 0 || (long long)o->batches < h->max_batches) &&
	       !(h->stop && *h->stop)) {
		double w0 = now_s();
		ret = rf_loader_next(l, &b);
		double w = now_s() - w0;
		if (ret)
			break;
		count_batch(l, h, o, b, w);
		ret = use_batch(h, o, b, w);
		for (uint32_t f = 0; f < b->nfields; f++)
			o->field_bytes += b->fields[f].offsets[b->count];
		o->batches++;
		o->samples += b->count;
		rf_batch_release(l, b);
		if (ret)
			break;
		if (h->progress && now_s() >= next_show) {
			show_progress(l, o, t0, h->max_batches, 0);
			next_show = now_s() + 0.25;
		}
	}
	o->t_end = now_s();
	if (h->progress)
		show_progress(l, o, t0, h->max_batches, 1);
	return ret == RF_EOF ? 0 : ret;
}
