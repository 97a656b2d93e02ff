/* gen.c - `ringfeed gen`: writes a synthetic ImageFolder tree of JPEGs (or
 * of raw files, or token shards). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/synth.h"
#include "pack/tokens.h"


static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed gen --out DIR --count N [--classes K] [--seed S]\n"
		"                    [--quality Q] [--threads T]\n"
		"       ringfeed gen --raw --out DIR --count N --min-size A --max-size B [...]\n"
		"       ringfeed gen --tokens --out DIR --shards N --shard-tokens M [--vocab V]\n"
		"                    [--dist zipf|uniform] [--zipf-s S] [--llama3] [--seed S]\n"
		"\n"
		"Writes N synthetic JPEGs as DIR/class_KKK/img_NNNNNNNN.jpg (image i in\n"
		"class i %% K): sizes spread around 500x375, portrait and landscape, one\n"
		"in ten larger; content with gradients, edges, texture and noise, so it\n"
		"compresses and decodes like photographs. The same seed gives the same files.\n"
		"\n"
		"  --out DIR      folder to create (its parent must exist)\n"
		"  --count N      number of images (required)\n"
		"  --classes K    number of class folders (default 10)\n"
		"  --seed S       (default 1)\n"
		"  --quality Q    JPEG quality 1..100 (default 90)\n"
		"  --threads T    encoder threads (default: all cores)\n"
		"  --raw          random bytes instead: DIR/class_KKK/file_NNNNNNNN.bin,\n"
		"                 sizes uniform in [--min-size A, --max-size B] bytes\n"
		"\n"
		"--tokens writes token shards in llm.c's layout instead (256 int32 header\n"
		"words: magic 20240520, version 1, the count; then uint16 tokens), as\n"
		"DIR/tokens_000000.bin ...; each file appears whole (written, flushed, renamed)\n"
		"and an interrupted run removes what it wrote. The same seed gives the same bytes.\n"
		"  --shards N        files (required)\n"
		"  --shard-tokens M  tokens a file, up to 2^31 - 1 (required)\n"
		"  --vocab V         token ids 0..V-1 (default 50257, GPT-2's; 128256 with --llama3)\n"
		"  --dist zipf|uniform   zipf (default): id k drawn with weight 1/(k+1)^S, so\n"
		"                    id 0 is the most frequent, as in text; uniform: all alike\n"
		"  --zipf-s S        the exponent (default 1.0)\n"
		"  --llama3          Llama-3's layout: magic 20240801, version 7, uint32 tokens\n"
		"  --seed S          (default 0)\n"
		"The JPEG and raw options (--count, --raw, ...) do not go with --tokens.\n");
}

static void progress(uint64_t done, uint64_t total, void *user)
{
	(void)user;
	if (done == total || done % 256 == 0)
		fprintf(stderr, "\rgen: %llu / %llu images", (unsigned long long)done,
			(unsigned long long)total);
	if (done == total)
		fprintf(stderr, "\n");
}

/* Token shards' progress on a terminal. */
static void token_progress(void *user, uint64_t done, uint64_t total)
{
	(void)user;
	/* at most 10 lines a second (a chunk is 1M tokens: ~100 a second) */
	static struct timespec last;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double dt = (double)(now.tv_sec - last.tv_sec) + (double)(now.tv_nsec - last.tv_nsec) * 1e-9;
	if (done != total && dt < 0.1)
		return;
	last = now;
	fprintf(stderr, "\rgen: %llu / %llu tokens", (unsigned long long)done,
		(unsigned long long)total);
	if (done == total)
		fprintf(stderr, "\n");
}

/* gen --tokens, its options read and checked. */
static int gen_tokens(rf_token_gen_opts *o)
{
	if (isatty(STDERR_FILENO))
		o->progress = token_progress;
	cli_catch_stop_signals();
	o->stop = &cli_stop_signal;
	char err[512];
	int ret = rfi_token_gen(o, err, sizeof(err));
	if (ret)
		return cli_writer_status(ret, err);
	printf("wrote %u token shard%s of %llu %s tokens (%s, vocab %u) to %s\n", o->shards,
	       o->shards == 1 ? "" : "s", (unsigned long long)o->shard_tokens,
	       o->llama3 ? "uint32" : "uint16", o->zipf ? "zipf" : "uniform", o->vocab, o->out);
	return 0;
}

/* gen of a JPEG or raw tree, its options read and checked. */
static int gen_tree(rf_synth_tree *t)
{
	if (isatty(STDERR_FILENO))
		t->progress = progress;
	char err[512];
	if (rfi_synth_imagefolder(t, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", cli_name, err);
		return 1;
	}
	printf("wrote %llu %s in %d classes to %s\n", (unsigned long long)t->count,
	       t->raw ? "files" : "images", t->classes, t->out);
	return 0;
}

enum { O_RAW = 256, O_MIN, O_MAX, O_TOKENS, O_SHARDS, O_SHARD_TOKENS, O_VOCAB, O_DIST, O_ZIPF_S,
       O_LLAMA3 };

/* One table for both kinds of output, so that an option of the other kind
 * gets a usage error that names it, not "unrecognized option". */
static const struct option gen_opts[] = {
	/* both */
	{ "out", required_argument, 0, 'o' },         { "seed", required_argument, 0, 's' },
	{ "help", no_argument, 0, 'h' },
	/* JPEG and raw trees */
	{ "count", required_argument, 0, 'n' },       { "classes", required_argument, 0, 'k' },
	{ "quality", required_argument, 0, 'q' },     { "threads", required_argument, 0, 't' },
	{ "raw", no_argument, 0, O_RAW },             { "min-size", required_argument, 0, O_MIN },
	{ "max-size", required_argument, 0, O_MAX },
	/* token shards */
	{ "tokens", no_argument, 0, O_TOKENS },       { "shards", required_argument, 0, O_SHARDS },
	{ "shard-tokens", required_argument, 0, O_SHARD_TOKENS },
	{ "vocab", required_argument, 0, O_VOCAB },   { "dist", required_argument, 0, O_DIST },
	{ "zipf-s", required_argument, 0, O_ZIPF_S }, { "llama3", no_argument, 0, O_LLAMA3 },
	{ 0, 0, 0, 0 },
};

/* The name (no "--") of the option getopt_long returned as c; li: its long
 * index, -1 when it was given in its short form. */
static const char *opt_name(int c, int li)
{
	for (int i = 0; li < 0 && gen_opts[i].name; i++)
		if (gen_opts[i].val == c)
			li = i;
	return li >= 0 ? gen_opts[li].name : "?";
}

enum { ANY, TREE, TOKENS };

/* Which kind of output option c goes with. */
static int kind_of(int c)
{
	switch (c) {
	case 'n': case 'k': case 'q': case 't': case O_RAW: case O_MIN: case O_MAX:
		return TREE;
	case O_SHARDS: case O_SHARD_TOKENS: case O_VOCAB: case O_DIST: case O_ZIPF_S: case O_LLAMA3:
		return TOKENS;
	default:
		return ANY;
	}
}

/* What gen's command line said: the settings of both kinds of output, and
 * which options were given. */
typedef struct gen_args {
	rf_synth_tree t;
	rf_token_gen_opts o;
	uint64_t seed;
	int tokens, have_seed, have_count, have_min, have_max, have_vocab, have_zipf_s;
	const char *tree_opt, *token_opt; /* the first option of each kind seen */
} gen_args;

/* The option parsers below each take the options of one kind of output:
 * @return : 0 when c was theirs and its value good, 2 after a usage error
 * (reported), NOT_MINE when c is another kind's. */
#define NOT_MINE (-1)

/* JPEG and raw trees. */
static int tree_option(int c, const char *arg, gen_args *a)
{
	rf_synth_tree *t = &a->t;
	long long v;
	switch (c) {
	case 'n':
		if (cli_int("--count", arg, 1, 1000000000, &v)) return 2;
		t->count = (uint64_t)v;
		a->have_count = 1;
		break;
	case 'k':
		if (cli_int("--classes", arg, 1, 100000, &v)) return 2;
		t->classes = (int)v;
		break;
	case 'q':
		if (cli_int("--quality", arg, 1, 100, &v)) return 2;
		t->quality = (int)v;
		break;
	case 't':
		if (cli_int("--threads", arg, 1, 1024, &v)) return 2;
		t->threads = (int)v;
		break;
	case O_RAW: t->raw = 1; break;
	case O_MIN: if (cli_u64("--min-size", arg, &t->min_size)) return 2; a->have_min = 1; break;
	case O_MAX: if (cli_u64("--max-size", arg, &t->max_size)) return 2; a->have_max = 1; break;
	default: return NOT_MINE;
	}
	return 0;
}

/* --zipf-s S: a number in (0, 100). */
static int zipf_s(const char *arg, rf_token_gen_opts *o)
{
	char *end;
	o->zipf_s = strtod(arg, &end);
	if (end == arg || *end || !(o->zipf_s > 0 && o->zipf_s < 100))
		return cli_usage_error("gen", "--zipf-s: expected a number in (0, 100), not '%s'", arg);
	return 0;
}

/* Token shards. */
static int token_option(int c, const char *arg, gen_args *a)
{
	rf_token_gen_opts *o = &a->o;
	long long v;
	switch (c) {
	case O_TOKENS: a->tokens = 1; break;
	case O_SHARDS:
		if (cli_int("--shards", arg, 1, 1000000, &v)) return 2;
		o->shards = (uint32_t)v;
		break;
	case O_SHARD_TOKENS:
		if (cli_int("--shard-tokens", arg, 1, INT32_MAX, &v)) return 2;
		o->shard_tokens = (uint64_t)v;
		break;
	case O_VOCAB:
		if (cli_int("--vocab", arg, 1, UINT32_MAX, &v)) return 2;
		o->vocab = (uint32_t)v;
		a->have_vocab = 1;
		break;
	case O_DIST:
		if (!strcmp(arg, "zipf")) o->zipf = 1;
		else if (!strcmp(arg, "uniform")) o->zipf = 0;
		else return cli_usage_error("gen", "--dist: expected zipf or uniform, not '%s'", arg);
		break;
	case O_ZIPF_S:
		if (zipf_s(arg, o)) return 2;
		a->have_zipf_s = 1;
		break;
	case O_LLAMA3: o->llama3 = 1; break;
	default: return NOT_MINE;
	}
	return 0;
}

/* One option (not --help): both kinds', then each kind's.
 * @return : 0, or 2 after a usage error. */
static int gen_option(int c, const char *arg, gen_args *a)
{
	switch (c) {
	case 'o': a->t.out = a->o.out = arg; return 0;
	case 's': if (cli_u64("--seed", arg, &a->seed)) return 2; a->have_seed = 1; return 0;
	}
	int ret = tree_option(c, arg, a);
	if (ret == NOT_MINE)
		ret = token_option(c, arg, a);
	if (ret == NOT_MINE)
		return cli_usage_error("gen", "bad option");
	return ret;
}

/* gen --tokens: what it needs, and what follows (the vocabulary's default).
 * @return : 0, or 2 after a usage error. */
static int check_tokens(gen_args *a)
{
	rf_token_gen_opts *o = &a->o;
	if (!o->out || !o->shards || !o->shard_tokens)
		return cli_usage_error("gen", "--tokens needs --out DIR, --shards N and --shard-tokens M");
	if (a->have_zipf_s && !o->zipf)
		return cli_usage_error("gen", "--zipf-s goes with --dist zipf");
	if (!a->have_vocab)
		o->vocab = o->llama3 ? 128256 : 50257;
	if (o->vocab > 65536 && !o->llama3)
		return cli_usage_error("gen", "--vocab %u does not fit uint16 tokens (--llama3 writes uint32)", o->vocab);
	o->seed = a->seed;
	return 0;
}

/* gen of a JPEG or raw tree: what it needs. @return : 0, or 2 after a usage
 * error. */
static int check_tree(gen_args *a)
{
	rf_synth_tree *t = &a->t;
	if (!t->out)
		return cli_usage_error("gen", "--out DIR is required");
	if (!a->have_count)
		return cli_usage_error("gen", "--count N is required");
	if (t->raw && (!a->have_min || !a->have_max))
		return cli_usage_error("gen", "--raw needs --min-size A and --max-size B");
	if (t->raw && (t->min_size > t->max_size || t->max_size > (1ull << 32)))
		return cli_usage_error("gen", "--min-size must be <= --max-size <= 4 GiB");
	if (!t->raw && (a->have_min || a->have_max))
		return cli_usage_error("gen", "--min-size and --max-size go with --raw");
	if (a->have_seed)
		t->seed = a->seed;
	return 0;
}

int cmd_gen(int argc, char **argv)
{
	gen_args a = {
		.t = { .classes = 10, .seed = 1, .quality = 90,
		       .threads = (int)sysconf(_SC_NPROCESSORS_ONLN) },
		.o = { .zipf = 1, .zipf_s = 1.0 }, /* seed 0 */
	};
	for (;;) {
		int li = -1;
		int c = getopt_long(argc, argv, "o:n:k:s:q:t:h", gen_opts, &li);
		if (c == -1)
			break;
		if (kind_of(c) == TREE && !a.tree_opt)
			a.tree_opt = opt_name(c, li);
		if (kind_of(c) == TOKENS && !a.token_opt)
			a.token_opt = opt_name(c, li);
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		int ret = gen_option(c, optarg, &a);
		if (ret)
			return ret;
	}
	if (optind < argc)
		return cli_usage_error("gen", "unexpected argument '%s'", argv[optind]);
	if (a.tokens && a.tree_opt)
		return cli_usage_error("gen", "--%s makes JPEG or raw trees: not with --tokens", a.tree_opt);
	if (!a.tokens && a.token_opt)
		return cli_usage_error("gen", "--%s goes with --tokens", a.token_opt);
	if (a.tokens)
		return check_tokens(&a) ? 2 : gen_tokens(&a.o);
	return check_tree(&a) ? 2 : gen_tree(&a.t);
}
