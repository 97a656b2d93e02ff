/* checkpoint.c - a training loop that can be killed and restarted: every
 * 10 batches it saves the loader's position next to its (pretend) model
 * checkpoint; started again, it resumes from the saved state and sees
 * exactly the batches it would have seen. Run one copy per rank under
 * torchrun, srun or mpirun: rank and world size come from their variables.
 *
 * Build (after installing ringfeed):
 *   cc -O2 checkpoint.c -o checkpoint $(pkg-config --cflags --libs ringfeed)
 * Run:
 *   ./checkpoint /path/to/imagefolder STATE_FILE
 */
#include <stdio.h>
#include <stdlib.h>

#include <ringfeed.h>

/* Writes the state to path.tmp, then renames: a crash never leaves half a state. */
static int save(const rf_loader *l, const char *path)
{
	unsigned char state[RF_STATE_MAX_BYTES];
	int n = rf_loader_state_save(l, state, sizeof(state));
	if (n < 0) {
		fprintf(stderr, "rf_loader_state_save: %s\n", rf_strerror(n));
		return -1;
	}
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "wb");
	if (!f || fwrite(state, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) {
		perror(tmp);
		return -1;
	}
	if (rename(tmp, path) != 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s DIR STATE_FILE\n", argv[0]);
		return 2;
	}
	rf_config cfg;
	rf_config_default(&cfg); /* rank and world size: from the launcher */
	cfg.source = argv[1];
	cfg.batch_size = 32;
	cfg.epochs = 3;
	cfg.seed = 42;

	/* A state from an earlier run, if there is one. */
	unsigned char state[RF_STATE_MAX_BYTES + 1];
	FILE *f = fopen(argv[2], "rb");
	if (f) {
		cfg.resume_state = state;
		cfg.resume_state_len = fread(state, 1, sizeof(state), f);
		fclose(f);
	}

	char err[512];
	rf_loader *loader;
	int ret = rf_loader_create(&loader, &cfg, err, sizeof(err));
	if (ret) {
		/* e.g. the state belongs to another dataset, seed or world size */
		fprintf(stderr, "rf_loader_create: %s (%s)\n", err, rf_strerror(ret));
		return 1;
	}
	rf_order_info order;
	rf_loader_order(loader, &order);
	printf("rank %u of %u (%s), starting at batch %llu of %llu\n", order.rank,
	       order.world_size, order.rank_source, (unsigned long long)order.next_batch,
	       (unsigned long long)order.total_batches);

	rf_batch *b;
	while ((ret = rf_loader_next(loader, &b)) == 0) {
		/* ... the training step on b->data, b->labels ... */
		uint64_t index = b->index;
		rf_batch_release(loader, b);
		if ((index + 1) % 10 == 0) {
			/* ... save the model here, then the loader's position ... */
			if (save(loader, argv[2]) != 0)
				break;
			printf("saved after batch %llu\n", (unsigned long long)index);
		}
	}
	if (ret != 0 && ret != RF_EOF)
		fprintf(stderr, "rf_loader_next: %s: %s\n", rf_strerror(ret), rf_loader_error(loader));
	rf_loader_destroy(loader);
	return ret == RF_EOF ? 0 : 1;
}
