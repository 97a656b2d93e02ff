/* state.h - the saved state of a loader (rf_loader_state_save(),
 * rf_state_parse()) and the checks that let a new loader resume from one:
 * fingerprints of the dataset and of the output settings, and the comparison
 * of a state with the loader being created. Private. */
#ifndef RF_STATE_H
#define RF_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/loader_impl.h"

#define RF_STATE_VERSION 1
#define RF_STATE_V1_BYTES 152

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
uint64_t rf_state_output_fingerprint(const rf_loader *l);

/* Checks that state (parsed) was saved by a loader with this one's dataset
 * and stream settings. Returns 0, or RF_ESTATEMISMATCH with err naming the
 * first difference. Called by rf_loader_create() once everything but the
 * threads is set up. */
int rf_state_check_resume(const rf_loader *l, const rf_state_info *state, char *err,
			  size_t errlen);

/* The checksum of a version-1 state: a hash of its bytes before the checksum. */
uint64_t rf_state_checksum(const uint8_t *state, size_t len);

#endif
