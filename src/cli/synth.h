/* synth.h - synthetic datasets for `ringfeed gen` and the tests: JPEGs that
 * compress like photographs (smooth gradients, hard edges, texture, noise)
 * at sizes spread around 500 x 375, portrait and landscape, some larger.
 * Everything is a pure function of (seed, image number). */
#ifndef RF_SYNTH_H
#define RF_SYNTH_H

#include <stddef.h>
#include <stdint.h>

/* The size of image i of a dataset generated with seed. */
void rfi_synth_size(uint64_t seed, uint64_t i, int *w, int *h);

/* Fills rgb (w x h x 3) with the picture for seed. */
void rfi_synth_pixels(uint8_t *rgb, int w, int h, uint64_t seed);

/* Encodes the picture for seed as a baseline 4:2:0 JPEG. *out is allocated
 * with malloc (caller frees). Returns 0, or -1 with err set. */
int rfi_synth_jpeg(int w, int h, uint64_t seed, int quality, uint8_t **out, size_t *len,
		  char *err, size_t errlen);

/* Writes it to path. Returns 0, or -1 with err set. */
int rfi_synth_write_jpeg(const char *path, int w, int h, uint64_t seed, int quality,
			char *err, size_t errlen);

typedef struct rf_synth_tree {
	const char *out;  /* folder to create (parents must exist) */
	uint64_t count;   /* images */
	int classes;      /* class folders class_000 ... */
	uint64_t seed;
	int quality;      /* JPEG quality, 1..100 */
	int raw;          /* random bytes instead of JPEGs: file_NNNNNNNN.bin */
	uint64_t min_size, max_size; /* raw file sizes, uniform in [min, max] */
	int threads;      /* encoder threads */
	void (*progress)(uint64_t done, uint64_t total, void *user); /* optional, from any thread */
	void *user;
} rf_synth_tree;

/* Writes an ImageFolder tree: out/class_KKK/img_NNNNNNNN.jpg, image i in
 * class i % classes (raw: out/class_KKK/file_NNNNNNNN.bin of random bytes).
 * Returns 0, or -1 with err set. */
int rfi_synth_imagefolder(const rf_synth_tree *t, char *err, size_t errlen);

#endif
