/* state.c - saved loader states on the command line: `ringfeed state FILE`
 * prints one in words; the helpers `bench` uses to read and write states
 * and sample ids. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/util.h"

/* A state is RF_STATE_MAX_BYTES at most; more is read so that a file with
 * something after the state is refused as such, not cut. */
#define READ_LIMIT (64 * 1024)

int cli_state_read(const char *path, void **buf, size_t *len)
{
	char why[512];
	int fd = rfi_open_regular(AT_FDCWD, path, "state", why, sizeof(why));
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (!f) {
		fprintf(stderr, "%s: %s\n", cli_name, fd >= 0 ? strerror(errno) : why);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	uint8_t *b = malloc(READ_LIMIT);
	size_t n = b ? fread(b, 1, READ_LIMIT, f) : 0;
	int bad = !b || ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: %s: cannot read\n", cli_name, path);
		free(b);
		return -1;
	}
	*buf = b;
	*len = n;
	return 0;
}

int cli_state_write(const rf_loader *l, const char *path)
{
	uint8_t state[RF_STATE_MAX_BYTES];
	int n = rf_loader_state_save(l, state, sizeof(state));
	if (n < 0) {
		fprintf(stderr, "%s: saving the state: %s\n", cli_name, rf_strerror(n));
		return -1;
	}
	/* Never leave a half-written state where a good one was. */
	char *tmp;
	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -1;
	/* the user's alone (0600), as the index cache: a state says where a
	 * run stands in which data. Made new (O_EXCL): a PATH.tmp left by a
	 * run that was killed, or put there by another user, would keep its
	 * owner and mode through O_TRUNC and the rename */
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	int ok = f && fwrite(state, 1, (size_t)n, f) == (size_t)n;
	ok = f && fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
	if (f)
		ok = fclose(f) == 0 && ok;
	if (ok && rename(tmp, path) != 0)
		ok = 0;
	if (!ok) {
		fprintf(stderr, "%s: writing the state to %s: %s\n", cli_name, path,
			strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return ok ? 0 : -1;
}

int cli_ids_write(FILE *f, const rf_batch *b)
{
	for (uint32_t i = 0; i < b->count; i++)
		if (fprintf(f, i ? " %llu" : "%llu", (unsigned long long)b->ids[i]) < 0)
			return -1;
	return fputc('\n', f) == EOF ? -1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed state FILE\n"
		"\n"
		"Prints a loader state saved by `ringfeed bench --save-state FILE` (or by\n"
		"rf_loader_state_save()) in words: where it resumes, the order and rank\n"
		"layout it belongs to, and the fingerprints a resuming loader must match.\n"
		"Exits 1 when the file is not a state, is truncated or corrupted, or has a\n"
		"newer format than this ringfeed reads.\n");
}

int cmd_state(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return 0;
		default: return cli_usage_error("state", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("state", "expected one FILE");
	const char *path = argv[optind];
	void *buf;
	size_t len;
	if (cli_state_read(path, &buf, &len))
		return 1;
	rf_state_info x;
	char err[512];
	int r = rf_state_parse(buf, len, &x, err, sizeof(err));
	free(buf);
	if (r) {
		fprintf(stderr, "%s: %s: %s (%s)\n", cli_name, path, err, rf_strerror(r));
		return 1;
	}
	printf("%s: ringfeed loader state, format version %u, %u bytes, checksum correct\n",
	       path, x.version, x.bytes);
	printf("  resumes at batch %llu: epoch %llu, batch %llu of the %llu in each epoch\n",
	       (unsigned long long)x.next_batch, (unsigned long long)x.epoch,
	       (unsigned long long)x.batch_in_epoch, (unsigned long long)x.batches_per_epoch);
	if (x.rest_runs) /* saved by a loader resumed on another split inside an epoch */
		printf("  epoch %llu was resumed on another world size or batch size: %llu of its "
		       "positions were left, in %u run%s, for its last batches\n",
		       (unsigned long long)x.rest_epoch, (unsigned long long)x.rest_samples,
		       x.rest_runs, x.rest_runs == 1 ? "" : "s");
	if (x.rest_runs && x.rest_epoch == x.epoch)
		printf("  this epoch's first batch is %llu\n",
		       (unsigned long long)x.epoch_first_batch);
	if (x.epochs)
		printf("  the saving loader was set for %llu epochs (%llu batches on each rank)\n",
		       (unsigned long long)x.epochs,
		       (unsigned long long)(x.epochs * x.batches_per_epoch));
	else
		printf("  the saving loader was set for endless epochs\n");
	printf("  order: %s sampler, seed %llu, %llu positions per epoch over all ranks\n",
	       cli_enum_name(RF_ENUM_SAMPLER, x.sampler), (unsigned long long)x.seed,
	       (unsigned long long)x.epoch_samples);
	printf("  ranks: rank %u of %u, tail %s: %llu samples per rank and epoch\n", x.rank,
	       x.world_size,
	       x.rank_tail == RF_RANK_TAIL_PAD ? "padded by wrapping to the epoch's start"
					      : "dropped",
	       (unsigned long long)x.rank_samples);
	printf("  batches of %u samples, last partial batch %s; bad samples %s\n", x.batch_size,
	       x.drop_last ? "dropped" : "kept",
	       x.on_error == RF_ON_ERROR_SKIP ? "replaced (on_error skip)" : "stop the run (on_error fail)");
	if (x.resize || x.crop)
		printf("  output: resize %u, crop %u; output fingerprint %016llx\n", x.resize, x.crop,
		       (unsigned long long)x.output_fingerprint);
	else /* a token source's state: no image settings */
		printf("  output: token rows; output fingerprint %016llx (the token dtype)\n",
		       (unsigned long long)x.output_fingerprint);
	printf("  dataset: %llu samples, fingerprint %016llx (paths, sizes, labels%s)\n",
	       (unsigned long long)x.dataset_samples, (unsigned long long)x.dataset_fingerprint,
	       x.sampler == RF_SAMPLER_WEIGHTED ? ", weights" : "");
	return 0;
}
