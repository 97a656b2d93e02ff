/* llmc_loader.c - a peer for bench/tokens.sh: what llm.c's DataLoader
 * (llmc/dataloader.h) does, on one thread: check every shard's header at
 * set-up as its dataloader_init does, and again each time it loads a shard
 * (magic 20240520 version 1, or 20240801 version 7; the file's size), then
 * per batch fseek to the batch's place and fread B*T+1 tokens through stdio,
 * and form int inputs[B*T] and targets[B*T] from them (llm.c copies into int
 * arrays the model reads).
 *   --sequential  llm.c without shuffle: batch after batch through a shard,
 *                 then the next shard
 *   --random      llm.c's shuffle: each epoch a seeded permutation of the
 *                 shards, and within a shard of its batch positions
 * A window is one row of T+1 tokens: a batch is B windows, as a ringfeed
 * batch of B rows (llm.c's B rows are consecutive in the file, one read).
 * The clock starts after the set-up checks, as ringfeed's steady rate starts
 * after its index. Prints one JSON line: windows/s, tokens/s, MB/s of token
 * bytes read, seconds, CPU seconds. Page cache: as llm.c, buffered reads;
 * the script drops the cache before a cold run.
 *
 * usage: llmc_loader --seq T --batch B [--random|--sequential] [--seed S]
 *                    [--batches K] SHARD...          (K default: one epoch) */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct shard {
	const char *path;
	uint64_t tokens, batches; /* batches of B*T+1 tokens that fit (llm.c's count) */
	int width;
} shard;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec * 1e-6 +
	       (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec * 1e-6;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Fisher-Yates with a seeded generator, as llm.c's random_permutation. */
static void permute(uint64_t *a, uint64_t n, uint64_t *state)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = i;
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = (*state = mix(*state)) % i;
		uint64_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* llm.c's dataloader_load_shard_: open, read the header, check magic,
 * version and that the file's size is what the count implies, seek back.
 * @return the open file (the caller closes it), or NULL with a message. */
static FILE *load_shard(shard *s, uint64_t B, uint64_t T)
{
	FILE *f = fopen(s->path, "rb");
	int32_t h[256];
	long size;
	if (!f) {
		perror(s->path);
		return NULL;
	}
	if (fread(h, sizeof(h), 1, f) != 1) {
		fprintf(stderr, "llmc_loader: %s: cannot read its header\n", s->path);
		goto fail;
	}
	if (!((h[0] == 20240520 && h[1] == 1) || (h[0] == 20240801 && h[1] == 7)) || h[2] <= 0) {
		fprintf(stderr, "llmc_loader: %s: bad magic, version or token count\n", s->path);
		goto fail;
	}
	s->width = h[0] == 20240520 ? 2 : 4;
	s->tokens = (uint64_t)h[2];
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 ||
	    (uint64_t)size != 1024 + s->tokens * (uint64_t)s->width) {
		fprintf(stderr, "llmc_loader: %s: size does not match the header\n", s->path);
		goto fail;
	}
	if (fseek(f, 0, SEEK_SET))
		goto fail;
	/* llm.c: (ntok * sizeof(uint16_t) - sizeof(uint16_t)) / total_batch_size_bytes */
	s->batches = (s->tokens - 1) / (B * T);
	return f;
fail:
	fclose(f);
	return NULL;
}

/* llm.c's cast loop (inputs[i] = (int)buffer[i]), per token width: typed
 * loops the compiler vectorizes, as llm.c's uint16_t one is. */
static void to_ints(const void *buf, int width, uint64_t n, int *inputs, int *targets)
{
	if (width == 2) {
		const uint16_t *t = buf;
		for (uint64_t i = 0; i < n; i++) {
			inputs[i] = (int)t[i];
			targets[i] = (int)t[i + 1];
		}
	} else {
		const uint32_t *t = buf;
		for (uint64_t i = 0; i < n; i++) {
			inputs[i] = (int)t[i];
			targets[i] = (int)t[i + 1];
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seq", required_argument, 0, 'T' },    { "batch", required_argument, 0, 'B' },
		{ "random", no_argument, 0, 'r' },       { "sequential", no_argument, 0, 's' },
		{ "seed", required_argument, 0, 'x' },   { "batches", required_argument, 0, 'k' },
		{ 0, 0, 0, 0 },
	};
	uint64_t T = 1024, B = 16, seed = 0, max_batches = 0;
	int random = 0, c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'T': T = strtoull(optarg, NULL, 10); break;
		case 'B': B = strtoull(optarg, NULL, 10); break;
		case 'r': random = 1; break;
		case 's': random = 0; break;
		case 'x': seed = strtoull(optarg, NULL, 10); break;
		case 'k': max_batches = strtoull(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: llmc_loader --seq T --batch B [--random|--sequential] "
				"[--seed S] [--batches K] SHARD...\n");
			return 2;
		}
	}
	int n = argc - optind;
	if (n < 1 || T < 1 || B < 1 || B * T > (1ull << 32)) {
		fprintf(stderr, "llmc_loader: give --seq, --batch (B*T up to 2^32) and shards\n");
		return 2;
	}
	/* set-up, untimed: llm.c's dataloader_init checks every shard */
	shard *s = calloc((size_t)n, sizeof(*s));
	uint64_t total = 0, most = 0;
	if (!s)
		return 1;
	for (int i = 0; i < n; i++) {
		s[i].path = argv[optind + i];
		FILE *f = load_shard(&s[i], B, T);
		if (!f)
			return 1;
		fclose(f);
		/* one buffer of one width, as llm.c's uint16_t one */
		if (s[i].width != s[0].width) {
			fprintf(stderr, "llmc_loader: %s: %d-byte tokens, %s has %d-byte ones\n",
				s[i].path, s[i].width, s[0].path, s[0].width);
			return 1;
		}
		total += s[i].batches;
		if (s[i].batches > most)
			most = s[i].batches;
	}
	/* a batch that fits no shard would leave the epoch loop turning forever */
	if (!total) {
		fprintf(stderr, "llmc_loader: no shard holds B*T+1 = %llu tokens\n",
			(unsigned long long)(B * T + 1));
		return 1;
	}
	if (!max_batches)
		max_batches = total;
	int width = s[0].width;
	uint8_t *buf = malloc((B * T + 1) * (size_t)width);
	int *inputs = malloc(B * T * sizeof(int)), *targets = malloc(B * T * sizeof(int));
	uint64_t *shard_order = malloc((size_t)n * sizeof(uint64_t));
	uint64_t *batch_order = malloc(most * sizeof(uint64_t));
	if (!buf || !inputs || !targets || !shard_order || !batch_order) {
		fprintf(stderr, "llmc_loader: out of memory\n");
		return 1;
	}
	uint64_t rng = mix(seed), done = 0, sum = 0;
	double t0 = now(), c0 = cpu_s();
	while (done < max_batches) { /* epochs */
		permute(shard_order, (uint64_t)n, &rng);
		for (int k = 0; k < n && done < max_batches; k++) {
			shard *sh = &s[random ? shard_order[k] : (uint64_t)k];
			if (!sh->batches)
				continue;
			FILE *f = load_shard(sh, B, T); /* llm.c reopens and rechecks each shard it loads */
			if (!f)
				return 1;
			permute(batch_order, sh->batches, &rng);
			for (uint64_t b = 0; b < sh->batches && done < max_batches; b++, done++) {
				uint64_t pos = random ? batch_order[b] : b;
				if (fseek(f, (long)(1024 + pos * B * T * (uint64_t)width), SEEK_SET) ||
				    fread(buf, (size_t)width, B * T + 1, f) != B * T + 1) {
					fprintf(stderr, "llmc_loader: %s: short read\n", sh->path);
					return 1;
				}
				to_ints(buf, width, B * T, inputs, targets);
				sum += (uint64_t)inputs[B * T / 2] + (uint64_t)targets[0];
			}
			fclose(f);
		}
	}
	double secs = now() - t0, cpu = cpu_s() - c0;
	double windows = (double)done * (double)B;
	printf("{\"loader\":\"llmc\",\"mode\":\"%s\",\"batches\":%llu,\"samples\":%.0f,"
	       "\"seconds\":%.6f,\"windows_per_s\":%.1f,\"samples_per_s\":%.1f,\"tokens_per_s\":%.1f,"
	       "\"mb_per_s\":%.3f,\"cpu_s\":%.3f,\"checksum\":%llu}\n", random ? "random" : "sequential",
	       (unsigned long long)done, windows, secs, windows / secs, windows / secs,
	       windows * (double)(T + 1) / secs, (double)done * (double)(B * T + 1) * width / secs / 1e6,
	       cpu, (unsigned long long)sum);
	free(batch_order);
	free(shard_order);
	free(targets);
	free(inputs);
	free(buf);
	free(s);
	return 0;
}
