/* epoch_loop.c - the smallest complete ringfeed consumer: load an ImageFolder
 * tree as 224x224 uint8 batches and print one line per batch.
 *
 * Build (after installing ringfeed):
 *   cc -O2 epoch_loop.c -o epoch_loop $(pkg-config --cflags --libs ringfeed)
 * Run:
 *   ./epoch_loop /path/to/imagefolder
 */
#include <stdio.h>

#include <ringfeed.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	rf_config cfg;
	rf_config_default(&cfg); /* always first: every field gets its default */
	cfg.source = argv[1];
	cfg.batch_size = 32;
	cfg.epochs = 2;

	char err[512];
	rf_loader *loader;
	int ret = rf_loader_create(&loader, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "rf_loader_create: %s (%s)\n", err, rf_strerror(ret));
		return 1;
	}
	rf_batch *b;
	while ((ret = rf_loader_next(loader, &b)) == 0) {
		/* b->data: b->count images of height x width x 3 bytes, RGB */
		printf("epoch %u batch %llu: %u samples, first label %d\n", b->epoch,
		       (unsigned long long)b->index, b->count, b->labels[0]);
		rf_batch_release(loader, b); /* the slot goes back to the loader */
	}
	if (ret != RF_EOF)
		fprintf(stderr, "rf_loader_next: %s: %s\n", rf_strerror(ret), rf_loader_error(loader));
	rf_stats st;
	rf_loader_stats(loader, &st);
	printf("%llu samples, %llu bad samples replaced\n", (unsigned long long)st.samples,
	       (unsigned long long)st.bad_samples);
	rf_loader_destroy(loader);
	return ret == RF_EOF ? 0 : 1;
}
