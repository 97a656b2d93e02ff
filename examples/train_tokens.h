/* train_tokens.h - what train_tokens.c (CPU) and train_tokens_cuda.c (GPU)
 * share, so that the two cannot drift apart: the command line, the model's
 * parameters and their initialization, the token check, the loader's
 * configuration, the checkpoint file (one format: a GPU run's checkpoint
 * resumes on the CPU and the other way round) and the loop's lines (start,
 * plan, next batch, loss line, when to checkpoint).
 *
 * The model is a bigram language model through a low-rank table: a token x
 * predicts the next one with
 *   logits = emb[x] . out + bias,  emb: [vocab][dim], out: [dim][vocab]
 * trained by softmax cross-entropy and plain SGD. All parameters sit in one
 * array of floats, emb then out then bias (params_count() of them), so that
 * a checkpoint is one write and the GPU copy one cudaMemcpy.
 *
 * Everything here runs on the one thread that drives the loader. Static
 * functions in a header: each example is one program, compiled once. The
 * includer defines _POSIX_C_SOURCE 200809L before any header (clock_gettime,
 * fsync, O_CLOEXEC, O_DIRECTORY).
 */
#ifndef TRAIN_TOKENS_H
#define TRAIN_TOKENS_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ringfeed.h>

/* Every message starts with the program's name; main() sets it. */
static const char *prog = "train_tokens";

struct options {
	const char *source;
	uint32_t seq, batch, vocab, dim;
	uint64_t steps, print_every, checkpoint_every, seed;
	float lr;
	int threads;
	const char *checkpoint; /* NULL: no checkpoint is written */
	const char *resume;     /* NULL: start from step 0 */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s --source SHARDS [options]\n"
		"Trains a bigram language model (a low-rank table: emb[V][D], out[D][V], bias[V])\n"
		"on token shards in llm.c's layout (.bin, or the .bin.zst of `ringfeed pack --tokens`),\n"
		"with softmax cross-entropy and plain SGD.\n"
		"  --source SHARDS        a folder of shards, a list file, a glob or a brace pattern\n"
		"  --seq T                tokens a row predicts (rows are T + 1 tokens); default 64\n"
		"  --batch B              rows a step; default 8\n"
		"  --steps N              train until step N (counted from the first run); default 1000\n"
		"  --lr LR                SGD learning rate; default 10\n"
		"  --vocab V              token ids 0..V-1 (a larger id is an error); default 50257\n"
		"  --dim D                rank of the table; default 8\n"
		"  --print-every N        print the loss every N steps (and at the first and last); default 10\n"
		"  --seed S               initialization and data order; default 0\n"
		"  --threads N            the loader's compute threads (.bin.zst); default 0 = cores - 1\n"
		"  --checkpoint FILE      write parameters, step and the loader's position to FILE\n"
		"                         (atomically) at the end, and every K steps with:\n"
		"  --checkpoint-every K\n"
		"  --resume FILE          continue a checkpoint: its parameters, step and data position\n"
		"  --help\n"
		"The same options give the same losses bit for bit, resumed or not, whatever --threads.\n"
		"Exit status: 0 done, 1 error, 2 usage.\n",
		prog);
}

/* Parses s as an unsigned integer in [lo, hi]: 0, or -1 with a message. */
static int parse_u64(const char *name, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		fprintf(stderr, "%s: --%s %s: expected an integer from %llu to %llu\n", prog, name, s,
			(unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* Fills *o from the command line.
 * @return : 0 to train; 2 after a usage error (message printed); -1 after
 *          --help (usage printed: exit 0). */
static int parse_options(int argc, char **argv, struct options *o)
{
	enum { O_SEQ = 256, O_PRINT, O_CKPT, O_CKPT_EVERY, O_RESUME, O_LR, O_VOCAB, O_DIM,
	       O_THREADS, O_STEPS, O_SEED };
	static const struct option opts[] = {
		{ "source", required_argument, NULL, 's' },
		{ "seq", required_argument, NULL, O_SEQ },
		{ "batch", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "lr", required_argument, NULL, O_LR },
		{ "vocab", required_argument, NULL, O_VOCAB },
		{ "dim", required_argument, NULL, O_DIM },
		{ "print-every", required_argument, NULL, O_PRINT },
		{ "seed", required_argument, NULL, O_SEED },
		{ "threads", required_argument, NULL, O_THREADS },
		{ "checkpoint", required_argument, NULL, O_CKPT },
		{ "checkpoint-every", required_argument, NULL, O_CKPT_EVERY },
		{ "resume", required_argument, NULL, O_RESUME },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	*o = (struct options){ .seq = 64, .batch = 8, .vocab = 50257, .dim = 8, .steps = 1000,
			       .print_every = 10, .lr = 10.0f };
	uint64_t v;
	int c;
	while ((c = getopt_long(argc, argv, "s:b:h", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case 's': o->source = optarg; break;
		case O_SEQ: bad = parse_u64("seq", optarg, 1, 1 << 20, &v); o->seq = (uint32_t)v; break;
		case 'b': bad = parse_u64("batch", optarg, 1, 1 << 16, &v); o->batch = (uint32_t)v; break;
		case O_STEPS: bad = parse_u64("steps", optarg, 1, UINT64_MAX, &o->steps); break;
		case O_VOCAB:
			/* int32 token ids, and vocab * (2 dim + 1) floats */
			bad = parse_u64("vocab", optarg, 2, 1 << 24, &v);
			o->vocab = (uint32_t)v;
			break;
		case O_DIM: bad = parse_u64("dim", optarg, 1, 256, &v); o->dim = (uint32_t)v; break;
		case O_PRINT: bad = parse_u64("print-every", optarg, 1, UINT64_MAX, &o->print_every); break;
		case O_SEED: bad = parse_u64("seed", optarg, 0, UINT64_MAX, &o->seed); break;
		case O_THREADS: bad = parse_u64("threads", optarg, 0, 1024, &v); o->threads = (int)v; break;
		case O_CKPT: o->checkpoint = optarg; break;
		case O_CKPT_EVERY:
			bad = parse_u64("checkpoint-every", optarg, 1, UINT64_MAX, &o->checkpoint_every);
			break;
		case O_RESUME: o->resume = optarg; break;
		case O_LR: {
			char *end;
			o->lr = strtof(optarg, &end);
			if (end == optarg || *end || !isfinite(o->lr) || o->lr <= 0) {
				fprintf(stderr, "%s: --lr %s: expected a positive number\n", prog, optarg);
				bad = -1;
			}
			break;
		}
		case 'h': usage(stdout); return -1;
		default: bad = -1; break; /* getopt printed why */
		}
		if (bad)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[optind]);
		return 2;
	}
	if (!o->source) {
		fprintf(stderr, "%s: --source is required (see --help)\n", prog);
		return 2;
	}
	if ((uint64_t)o->batch * o->seq > 1 << 26) { /* positions a step, counted in uint32 */
		fprintf(stderr, "%s: --batch %u --seq %u: at most 2^26 tokens a step\n", prog,
			o->batch, o->seq);
		return 2;
	}
	if (o->checkpoint_every && !o->checkpoint) {
		fprintf(stderr, "%s: --checkpoint-every needs --checkpoint FILE\n", prog);
		return 2;
	}
	return 0;
}

/* ---- parameters ---------------------------------------------------------- */

static size_t params_count(uint32_t vocab, uint32_t dim)
{
	return (size_t)vocab * (2 * (size_t)dim + 1);
}

/* A counter-based generator (splitmix64): the same seed, the same parameters. */
static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* emb uniform in [-1, 1); out and bias zero, so that the first step's
 * logits are all zero and its loss is exactly ln(vocab): a check that the
 * loop is wired right. out's gradient (emb times the softmax's) is not zero
 * from the first step on, emb's (the softmax's times out) from the second. */
static void params_init(float *p, uint32_t vocab, uint32_t dim, uint64_t seed)
{
	uint64_t s = seed;
	size_t n_emb = (size_t)vocab * dim;
	for (size_t i = 0; i < n_emb; i++)
		p[i] = (float)(splitmix64(&s) >> 40) * 0x1p-23f - 1.0f; /* 24 random bits */
	memset(p + n_emb, 0, (params_count(vocab, dim) - n_emb) * sizeof(float));
}

/* ---- the data ------------------------------------------------------------ */

/* Opens the loader: windows of seq + 1 tokens as int32 (the embedding's
 * index type), batch rows a step, endless epochs (--steps decides the end),
 * one process (a stray RANK in the environment does not shard the data).
 * state (NULL or state_len bytes) resumes a saved position.
 * @return : 0, or -1 with the library's message printed. */
static int open_loader(const struct options *o, int device, const void *state, size_t state_len,
		       rf_loader **out)
{
	rf_config cfg;
	rf_config_default(&cfg);
	cfg.source = o->source;
	cfg.seq_len = o->seq;
	cfg.token_dtype = RF_DTYPE_INT32;
	cfg.batch_size = (int)o->batch;
	cfg.seed = o->seed;
	cfg.epochs = 0;
	cfg.drop_last = 1; /* every step B rows: the gradient's scale never changes */
	cfg.threads = o->threads;
	cfg.rank = 0;
	cfg.world_size = 1;
	cfg.device = device;
	cfg.resume_state = state;
	cfg.resume_state_len = state_len;
	char err[512];
	int ret = rf_loader_create(out, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s (%s)\n", prog, err, rf_strerror(ret));
		return -1;
	}
	return 0;
}

/* Checks that b holds rows of seq + 1 int32 tokens below vocab (on the
 * host: every slot has its host copy, also with a device).
 * @return : 0, or -1 with a message naming the first token out of range. */
static int check_tokens(const rf_batch *b, uint32_t seq, uint32_t vocab)
{
	if (b->dtype != RF_DTYPE_INT32 || b->width != seq + 1 ||
	    b->sample_bytes != (size_t)(seq + 1) * sizeof(int32_t)) {
		fprintf(stderr, "%s: batch %llu: expected rows of %u int32 tokens, got width %u, dtype %d\n",
			prog, (unsigned long long)b->index, seq + 1, b->width, (int)b->dtype);
		return -1;
	}
	const int32_t *t = (const int32_t *)b->data;
	for (uint32_t r = 0; r < b->count; r++)
		for (uint32_t i = 0; i <= seq; i++) {
			int32_t x = t[(size_t)r * (seq + 1) + i];
			if (x < 0 || (uint32_t)x >= vocab) {
				fprintf(stderr,
					"%s: token %lld (window %llu, token %u of batch %llu) is outside "
					"the vocabulary: --vocab %u takes ids 0..%u\n",
					prog, (long long)(uint32_t)x, (unsigned long long)b->ids[r], i,
					(unsigned long long)b->index, vocab, vocab - 1);
				return -1;
			}
		}
	return 0;
}

/* Whether step (1-based, done) prints its loss: the first, every
 * print_every-th and the last. Depends on the step alone, so that a resumed
 * run prints the very lines the uninterrupted one prints from there on. */
static int print_due(const struct options *o, uint64_t step)
{
	return step == 1 || step % o->print_every == 0 || step == o->steps;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ---- the checkpoint file --------------------------------------------------
 * A header, the parameters (params_count() floats, emb, out, bias), then the
 * loader's state (rf_loader_state_save()). Native byte order: a checkpoint
 * moves between machines of one kind (the loader's state is little-endian
 * and checks itself). */
#define CKPT_MAGIC "RFTOKCK1"

struct ckpt_header {
	char magic[8];
	uint32_t vocab, dim;
	uint64_t step;        /* steps done */
	uint32_t state_bytes; /* of the loader's state after the parameters */
	uint32_t reserved;    /* zero */
};
_Static_assert(sizeof(struct ckpt_header) == 32, "ckpt_header has no padding");

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Writes the checkpoint to path.tmp, flushes it to the disk, renames it over
 * path and flushes the folder: after a crash, path holds the previous
 * checkpoint or this one, whole. Call between steps (the loader's state is
 * the position of the next rf_loader_next()).
 * @return : 0, or -1 with a message. */
static int checkpoint_save(const char *path, const float *params, uint32_t vocab, uint32_t dim,
			   uint64_t step, const rf_loader *l)
{
	unsigned char state[RF_STATE_MAX_BYTES];
	int n = rf_loader_state_save(l, state, sizeof(state));
	if (n < 0) {
		fprintf(stderr, "%s: rf_loader_state_save: %s\n", prog, rf_strerror(n));
		return -1;
	}
	struct ckpt_header h = { .vocab = vocab, .dim = dim, .step = step, .state_bytes = (uint32_t)n };
	memcpy(h.magic, CKPT_MAGIC, sizeof(h.magic));

	size_t len = strlen(path);
	char *tmp = malloc(len + 5), *dir = malloc(len + 1);
	if (!tmp || !dir) {
		free(tmp);
		free(dir);
		fprintf(stderr, "%s: out of memory\n", prog);
		return -1;
	}
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".tmp", 5);
	memcpy(dir, path, len + 1);
	const char *what = tmp;
	int renamed = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (write_all(fd, &h, sizeof(h)) ||
	    write_all(fd, params, params_count(vocab, dim) * sizeof(float)) ||
	    write_all(fd, state, (size_t)n) || fsync(fd))
		goto fail_close;
	if (close(fd)) {
		fd = -1;
		goto fail_close;
	}
	what = path;
	if (rename(tmp, path))
		goto fail;
	renamed = 1;
	/* the rename itself is durable once the folder is flushed */
	what = dirname(dir);
	int dfd = open(what, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd)) {
		if (dfd >= 0)
			close(dfd);
		goto fail;
	}
	close(dfd);
	free(tmp);
	free(dir);
	return 0;

fail_close:
	if (fd >= 0)
		close(fd);
fail:
	fprintf(stderr, "%s: checkpoint %s: %s\n", prog, what, strerror(errno));
	if (!renamed)
		unlink(tmp);
	free(tmp);
	free(dir);
	return -1;
}

/* Reads a checkpoint written by checkpoint_save() for a model of vocab x
 * dim: the parameters into params (params_count() floats), the steps done
 * into *step, the loader's state into state[RF_STATE_MAX_BYTES] and its size
 * into *state_len.
 * @return : 0, or -1 with a message (missing, not a checkpoint, another
 *          model's size, truncated). */
static int checkpoint_load(const char *path, float *params, uint32_t vocab, uint32_t dim,
			   uint64_t *step, unsigned char *state, size_t *state_len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: --resume %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	struct ckpt_header h;
	size_t n = params_count(vocab, dim);
	const char *why = NULL;
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, CKPT_MAGIC, sizeof(h.magic)))
		why = "not a checkpoint of train_tokens";
	else if (h.vocab != vocab || h.dim != dim) {
		fprintf(stderr, "%s: --resume %s: a model of vocab %u, dim %u; these options ask "
			"for --vocab %u --dim %u\n", prog, path, h.vocab, h.dim, vocab, dim);
		fclose(f);
		return -1;
	} else if (h.state_bytes > RF_STATE_MAX_BYTES || h.reserved)
		why = "corrupt header";
	else if (fread(params, sizeof(float), n, f) != n ||
		 fread(state, 1, h.state_bytes, f) != h.state_bytes)
		why = "truncated";
	else if (fgetc(f) != EOF)
		why = "longer than its header says";
	fclose(f);
	if (why) {
		fprintf(stderr, "%s: --resume %s: %s\n", prog, path, why);
		return -1;
	}
	*step = h.step;
	*state_len = h.state_bytes;
	return 0;
}

/* ---- the loop's pieces ----------------------------------------------------- */

/* Starts the model: from the checkpoint o->resume (its parameters, the steps
 * it had done into *steps_done, the loader's state into
 * state[RF_STATE_MAX_BYTES] and its size into *state_len), or fresh from
 * o->seed.
 * @return : 0 to train; 1 when the checkpoint has done o->steps already (said
 *          on stdout: the run is complete, not failed); -1 with a message. */
static int start_model(const struct options *o, float *params, uint64_t *steps_done,
		       unsigned char *state, size_t *state_len)
{
	*steps_done = 0;
	*state_len = 0;
	if (!o->resume) {
		params_init(params, o->vocab, o->dim, o->seed);
		return 0;
	}
	if (checkpoint_load(o->resume, params, o->vocab, o->dim, steps_done, state, state_len))
		return -1;
	if (*steps_done >= o->steps) {
		printf("%s: %s is at step %llu: --steps %llu are done\n", prog, o->resume,
		       (unsigned long long)*steps_done, (unsigned long long)o->steps);
		return 1;
	}
	return 0;
}

/* Prints the run's first line: windows, steps an epoch, parameters, steps. */
static void print_plan(const struct options *o, rf_loader *loader, uint64_t steps_done)
{
	rf_order_info order;
	rf_loader_order(loader, &order);
	printf("%s: %llu windows of %u tokens, %llu steps an epoch; %zu parameters%s%s; "
	       "steps %llu to %llu\n",
	       prog, (unsigned long long)order.dataset_samples, o->seq + 1,
	       (unsigned long long)order.batches_per_epoch, params_count(o->vocab, o->dim),
	       o->resume ? " from " : "", o->resume ? o->resume : "", (unsigned long long)steps_done + 1,
	       (unsigned long long)o->steps);
}

/* Borrows the next batch into *b and checks its tokens (check_tokens()).
 * @return : 0 with *b lent; -1 with a message and nothing lent. */
static int next_rows(const struct options *o, rf_loader *loader, rf_batch **b)
{
	int ret = rf_loader_next(loader, b);
	if (ret) { /* never RF_EOF: the epochs are endless */
		fprintf(stderr, "%s: rf_loader_next: %s: %s\n", prog, rf_strerror(ret),
			rf_loader_error(loader));
		return -1;
	}
	if (check_tokens(*b, o->seq, o->vocab)) {
		rf_batch_release(loader, *b);
		return -1;
	}
	return 0;
}

/* The time per step between two loss lines. */
struct loss_clock {
	double t0;      /* now_ms() at the last line (or the start) */
	uint64_t steps; /* steps since then */
};

/* Prints step's loss line, or says the model diverged when loss is not
 * finite.
 * @return : 0, or -1 for a loss that is not finite. */
static int print_loss(struct loss_clock *c, uint64_t step, double loss)
{
	if (!isfinite(loss)) {
		fprintf(stderr, "%s: the loss is %f at step %llu: the model diverged "
			"(a smaller --lr)\n", prog, loss, (unsigned long long)step);
		return -1;
	}
	double t = now_ms();
	printf("step %llu loss %.6f (%.1f ms/step)\n", (unsigned long long)step, loss,
	       (t - c->t0) / (double)c->steps);
	fflush(stdout);
	c->t0 = t;
	c->steps = 0;
	return 0;
}

/* Whether a checkpoint is written after step (1-based, done): every
 * --checkpoint-every steps and after the last. */
static int checkpoint_due(const struct options *o, uint64_t step)
{
	return o->checkpoint && ((o->checkpoint_every && step % o->checkpoint_every == 0) ||
				 step == o->steps);
}

#endif /* TRAIN_TOKENS_H */
