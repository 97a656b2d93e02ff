/* plan.h - what a loader will be, decided from its configuration and what
 * its source holds, before anything is acquired: thread count, order
 * arithmetic, batches, output format, sample, read and slot sizes. Pure:
 * no threads, files or allocation (tests/test_plan.c checks it alone).
 * rf_loader_create() plans, then acquires (memory, ring, threads) what the
 * plan says. Private. */
#ifndef RF_PLAN_H
#define RF_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ringfeed.h"
#include "sample/sampler.h"
#include "source/source.h"
#include "transform/resample.h"
#include "transform/window.h"

/* What the plan needs to know of the source (rfi_source_facts_of()). */
typedef struct rf_source_facts {
	const char *name;       /* the source string, for messages */
	uint64_t samples;
	int any_zstd;           /* some sample goes through a zstd stage */
	int kind_stage;         /* its samples go through their kind's own stage
	                         * (rf_source_ops.extract): a compute thread's */
	uint32_t token_width;   /* samples are token rows: bytes per stored token (2
	                         * or 4); 0: bytes or images */
	uint64_t largest_read;  /* the source's largest read, or 0: records say */
	int sequential_shards;  /* shard_access = sequential is open to it (its kind's
	                         * capability) */
} rf_source_facts;

typedef struct rf_plan {
	int threads;            /* compute threads; 0 when no sample needs one (the
	                         * ring thread lands raw bytes and token rows) */
	uint64_t batches_per_epoch; /* this rank's; the same on every rank */
	uint64_t total_batches; /* UINT64_MAX when epochs == 0 (endless) */
	rf_output output;       /* how samples are stored on the host */
	rf_output dev_output;   /* with device_convert: how the device stores them */
	rf_window_params window; /* how windows are chosen */
	rf_dtype token_dtype;   /* token sources: the rows' type (resolved), and */
	uint32_t token_bytes;   /* its size (0: samples are no token rows) */
	uint32_t token_width;   /* bytes per token as stored (2 or 4; 0 likewise) */
	size_t sample_bytes;    /* one sample in a slot (0 in raw mode: sizes vary) */
	size_t dev_sample_bytes; /* one sample on the device */
	size_t max_read;        /* the largest sample read: larger ones are bad samples */
	size_t slot_data;       /* bytes of a slot's samples (raw: room for batch_size
	                         * of raw_max_bytes + 1, O_DIRECT aligned) */
	size_t slot_meta;       /* bytes of its ids, offsets, labels, sizes */
	size_t dev_slot;        /* bytes of a slot on the device */
	uint32_t height, width, channels; /* a sample's shape in the batch header */
	rf_dtype dtype;         /* the host batch's type */
} rf_plan;

/* Plans a loader of cfg (checked by rfi_config_check) over a source with
 * these facts, for rank of world on a machine of cpus cores; fills *order's
 * arithmetic (rfi_order_plan: its tables come at acquisition).
 * @return : 0, or RF_ECONFIG / RF_EEMPTY with err[errlen] saying why. */
int rfi_plan_make(rf_plan *p, rf_order *order, const rf_config *cfg, const rf_source_facts *src,
		 int cpus, uint32_t rank, uint32_t world, char *err, size_t errlen);

/* The facts of an open source. */
void rfi_source_facts_of(const rf_source *s, const char *name, rf_source_facts *out);

#endif
