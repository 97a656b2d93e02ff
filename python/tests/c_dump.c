/* c_dump.c - the C API's side of the Python tests: writes every batch of one
 * epoch (data bytes, then labels as int32) to a file, for the config given
 * on the command line, so that test_loader.py can compare the package's
 * tensors with what rf_loader_next() hands a C caller.
 *
 * usage: c_dump SOURCE OUT BATCH RESIZE CROP RRC FLIP DTYPE LAYOUT SEED THREADS */
#include <stdio.h>
#include <stdlib.h>

#include "ringfeed.h"

int main(int argc, char **argv)
{
	if (argc != 12) {
		fprintf(stderr, "usage: c_dump SOURCE OUT BATCH RESIZE CROP RRC FLIP DTYPE LAYOUT SEED THREADS\n");
		return 2;
	}
	rf_config cfg;
	rf_config_default(&cfg);
	cfg.source = argv[1];
	cfg.batch_size = atoi(argv[3]);
	cfg.resize = atoi(argv[4]);
	cfg.crop = atoi(argv[5]);
	cfg.random_resized_crop = atoi(argv[6]);
	cfg.flip_p = strtof(argv[7], NULL);
	cfg.dtype = (rf_dtype)atoi(argv[8]);
	cfg.layout = (rf_layout)atoi(argv[9]);
	cfg.seed = strtoull(argv[10], NULL, 10);
	cfg.threads = atoi(argv[11]);
	if (cfg.dtype != RF_DTYPE_UINT8) { /* normalised float output only */
		cfg.mean[0] = cfg.mean[1] = cfg.mean[2] = 0.45f;
		cfg.std[0] = cfg.std[1] = cfg.std[2] = 0.25f;
	}
	rf_loader *l;
	char msg[512];
	int rc = rf_loader_create(&l, &cfg, msg, sizeof(msg));
	if (rc < 0) {
		fprintf(stderr, "c_dump: %s\n", msg);
		return 1;
	}
	FILE *f = fopen(argv[2], "wb");
	if (!f) {
		perror(argv[2]);
		rf_loader_destroy(l);
		return 1;
	}
	rf_batch *b;
	while ((rc = rf_loader_next(l, &b)) == 0) {
		fwrite(b->data, b->sample_bytes, b->count, f);
		fwrite(b->labels, sizeof(int32_t), b->count, f);
		rf_batch_release(l, b);
	}
	fclose(f);
	if (rc != RF_EOF)
		fprintf(stderr, "c_dump: %s: %s\n", rf_strerror(rc), rf_loader_error(l));
	rf_loader_destroy(l);
	return rc == RF_EOF ? 0 : 1;
}
