/* fields.h - a sample's fields (cfg.fields: its caption, its metadata):
 * which members are asked for, where one sample's lie when its read is
 * issued, and their bytes stored into its batch slot and packed, in batch
 * order, when the batch is published. Private to src/pipeline/.
 *
 * Where a field's bytes come from: a member of the sample's shard (its read
 * is widened to one span over the image and those members: the members of
 * one sample lie together, so this costs a few KiB and no extra read), the
 * sample's own bytes (a field named by its own extension), a file of its
 * own beside a loose image (one more read, issued with the image's), or,
 * for a kind whose samples are rows of columns (Parquet), the sample's page
 * of the field's column (one more read of its shard, issued with the
 * image's; the kind cuts the value out on a compute thread). */
#ifndef RF_FIELDS_H
#define RF_FIELDS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "index/index.h" /* RF_EXTRA_EXT */
#include "ringfeed.h"

struct rf_source;
struct rf_source_read;

/* The fields asked for: parsed from cfg.fields, resolved against the
 * index. Read-only after create. */
typedef struct rf_field_spec {
	char name[RF_EXTRA_EXT];     /* lowercased, without the '?' */
	int optional;                /* "txt?": a sample without it is not bad */
	int id;                      /* its id among the index's extra names, or -1:
	                              * no sample has such a member (only its own
	                              * bytes can be it); a kind with columns: the
	                              * kind's number for its column, or -1: none */
} rf_field_spec;

typedef struct rf_fields {
	uint32_t n;                  /* 0: no fields */
	uint32_t max;                /* cfg.field_max, resolved */
	rf_field_spec spec[RF_MAX_FIELDS];
	int raw;                     /* raw mode: the sample's read lands in the batch */
} rf_fields;

#define RF_FIELD_MAX_DEFAULT 65536u

/* Parses list (cfg.fields) into f. @return : 0, or RF_ECONFIG with err
 * saying what is wrong (an empty name, a repeated one, too many). */
int rfi_fields_parse(rf_fields *f, const char *list, uint32_t max, char *err, size_t errlen);

/* Ties each field to the index's member names. A field that is not
 * optional and that no sample has (a typo, most likely) fails create:
 * RF_ECONFIG, naming the members the samples do have. */
int rfi_fields_resolve(rf_fields *f, const struct rf_source *src, char *err, size_t errlen);

/* One field of one sample in flight (in its rf_request), from its issue to
 * its landing. */
enum rf_field_where {
	RF_FIELD_ABSENT = 0, /* an optional field the sample lacks */
	RF_FIELD_IN_READ,    /* inside the sample's own read, `at` bytes from its start */
	RF_FIELD_OWN_FILE,   /* a file of its own: read `part`, at `at` in the buffer */
	RF_FIELD_INLINE,     /* in the index (a manifest's column): data set at once */
	RF_FIELD_KIND_PART,  /* a read of its own of the sample's shard (`from`, len:
	                      * its column's page): read `part`, at `at` in the
	                      * buffer; then the kind's field_extract makes data
	                      * and len the value (a compute thread) */
};
typedef struct rf_req_field {
	const uint8_t *data;  /* its bytes, once landed */
	uint64_t at;          /* IN_READ: from rfi_fields_locate() its offset in the
	                       * sample's shard or file, then from the read's start;
	                       * OWN_FILE: its buffer's offset in the request's */
	uint32_t len;
	uint8_t where;        /* enum rf_field_where */
	uint8_t part;         /* RF_FIELD_OWN_FILE: its read, 1.. */
	uint16_t path_len;
	const char *path;     /* RF_FIELD_OWN_FILE: relative to the root (index arena) */
	uint64_t from;        /* RF_FIELD_KIND_PART: its read's offset in shard */
	uint32_t shard;
} rf_req_field;

/* Where sample's fields lie, for its read r (the sample's own, as the
 * source gives it): fills fld[f] (at relative to the shard or file, for
 * IN_READ). @return : 0, or RF_EBADSAMPLE with reason set (a required
 * field missing, or larger than field_max). */
int rfi_fields_locate(const rf_fields *f, const struct rf_source *src, uint64_t sample,
		     const struct rf_source_read *r, rf_req_field *fld, char *reason, size_t len);

/* A slot's fields: values stored as their samples land (any order, any
 * thread), then packed in batch order by the thread that publishes it. */
typedef struct rf_slot_fields {
	uint8_t *stage;        /* landed values, one after another: cap bytes */
	atomic_size_t used;    /* bytes of stage taken */
	size_t cap;            /* batch_size * n * max: every sample fits, once each */
	uint64_t *stage_off;   /* [field * B + index]: its value in stage */
	uint32_t *stage_len;
	uint8_t *present;      /* [field * B + index] */
	uint8_t *packed;       /* the values in batch order: cap bytes */
	uint64_t *offsets;     /* [field * (B + 1) + index] */
	rf_field views[RF_MAX_FIELDS]; /* what rf_batch.fields points to */
} rf_slot_fields;

/* Memory for one slot's fields (reserved address space: only what is
 * written is touched). @return : 0 or -ENOMEM. */
int rfi_slot_fields_alloc(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size);
void rfi_slot_fields_free(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size);
/* Empties a slot taken for a new batch (the ring thread, before any place
 * of it is issued). */
void rfi_slot_fields_reset(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size,
			  uint32_t count);
/* Copies the field values of a landed sample (place index) into the slot.
 * Any thread; each place once. */
void rfi_slot_fields_store(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size,
			  uint32_t index, const rf_req_field *fld);
/* Packs the values in batch order and points b->fields at them: by the
 * thread that lands the batch's last place. */
void rfi_slot_fields_pack(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size,
			 rf_batch *b);

#endif
