/* state.h - the saved state of a loader (rf_loader_state_save(),
 * rf_state_parse()) and the checks that let a new loader resume from one:
 * fingerprints of the dataset and of the output settings, and the comparison
 * of a state with the loader being created. Private. */
#ifndef RF_STATE_H
#define RF_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/loader_state.h"

#define RF_STATE_VERSION 2
#define RF_STATE_V1_BYTES 152
/* version 2: the header, the rest's epoch and run count, the runs, the checksum */
#define RF_STATE_V2_BYTES(runs) (160 + 16 * (size_t)(runs) + 8)

struct rf_rest;

/* The dataset fingerprint is the source's (rf_source_ops.fingerprint): the
 * count, and each record's name, size and label (and weight when the
 * sampler uses weights), or a token source's shards and windows. Not its
 * root folder: a dataset moved elsewhere still matches. */

/* Fingerprint of the settings that decide a batch's content beyond its ids:
 * resize, crop, the decode and augment settings (raw, random_resized_crop,
 * rrc_scale, rrc_ratio, flip_p, dtype, layout, mean, std, max_pixels,
 * no_scaled_decode, no_region_decode), and which files the read pool (raw:
 * raw_max_bytes) leaves too large (only that: two pool sizes that both hold
 * every file give the same fingerprint). A setting added to rf_config that
 * changes pixels or which samples are bad belongs here. */
uint64_t rfi_state_output_fingerprint(const rf_loader *l);

/* rf_state_parse(), and the rest of an epoch a version-2 state carries:
 * into *rest (allocated, the caller's to free; rfi_rest_split not applied),
 * or NULL when it carries none. */
int rfi_state_read(const void *buf, size_t len, rf_state_info *out, struct rf_rest **rest,
		  char *err, size_t errlen);

/* Checks that state (parsed) was saved by a loader with this one's dataset
 * and stream settings (world_size and batch_size may differ: see
 * rfi_state_resume_at). Returns 0, or RF_ESTATEMISMATCH with err naming the
 * first difference. Called by rf_loader_create() once everything but the
 * threads is set up. */
int rfi_state_check_resume(const rf_loader *l, const rf_state_info *state, char *err,
			  size_t errlen);

/* Where the loader resumes from a checked state: l->start_batch, and
 * l->rest when it resumes inside an epoch on another world size or batch
 * size. On entry l->rest is the rest the state carries (rfi_state_read) or
 * NULL; on return the rest the loader delivers, or NULL. Returns 0;
 * RF_ESTATEMISMATCH (the position lies past the loader's last epoch, or the
 * rest would take more runs than a state holds) or -ENOMEM, with err set. */
int rfi_state_resume_at(rf_loader *l, const rf_state_info *state, char *err, size_t errlen);

/* The checksum of a version-1 state: a hash of its bytes before the checksum. */
uint64_t rfi_state_checksum(const uint8_t *state, size_t len);

/* rf_loader_state_save() and rf_state_seek() behind src/lib.c's checks (l
 * not NULL nor a fork()ed child's; buf not NULL for the seek). */
int rfi_loader_state_save(const rf_loader *l, void *buf, size_t len);
int rfi_state_seek(void *buf, size_t len, uint64_t next_batch, char *err, size_t errlen);

#endif
