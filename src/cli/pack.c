/* pack.c - `ringfeed pack`: writes a source as WebDataset-style tar shards
 * (the writer is src/pack/; this file reads the options and shows how it
 * goes). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "cli/cli.h"
#include "source/token_shard.h"
#include "pack/pack.h"
#include "pack/tokens.h"
#include "ringfeed.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed pack SOURCE -o DIR [--raw] [--include-hidden] [--shard-size SIZE]\n"
		"                     [--align N] [--compress zstd[:LEVEL] [--dict-size SIZE]]\n"
		"       ringfeed pack --tokens SHARDS -o DIR [--frame-tokens F] [--compress zstd:LEVEL]\n"
		"\n"
		"Writes SOURCE (an ImageFolder directory, a manifest, or with --raw a tree of\n"
		"any files) as WebDataset-style tar shards DIR/shard-000000.tar, ...: samples\n"
		"in index order, sample i as the members KEY.jpg (KEY.png, KEY.webp: named\n"
		"by what its bytes are; KEY.bin with --raw) then KEY.cls (its label in\n"
		"decimal, when it has one), KEY = i in 9 digits\n"
		"(000000042; more past 10^9 samples). A loader that numbers a pack's samples\n"
		"in shard order gives each the id it has in SOURCE: same sampler, same\n"
		"batches. A manifest's weights (third column) are not written.\n"
		"Shards are plain ustar (pax headers only with --align), mtime 0, owner 0/0,\n"
		"no 10 KiB record padding: the same SOURCE gives byte-identical shards.\n"
		"Each is written as DIR/.shard-NNNNNN.tar.tmp, flushed and renamed when\n"
		"whole; a failed or interrupted (SIGINT, SIGTERM, SIGHUP) pack removes what\n"
		"it wrote. DIR/ringfeed.index, written last, is the shards' index: a remote\n"
		"source of them (http(s)://, s3://) fetches it instead of scanning their\n"
		"headers. DIR/.ringfeed-pack-incomplete exists from before the first shard\n"
		"until every file is on disk: a pack killed outright (SIGKILL, the OOM\n"
		"killer, a crash) leaves it, and ringfeed refuses to read such a folder or\n"
		"to pack into it (remove the folder and pack again).\n"
		"A file that cannot be read fails the pack, naming it: skipping it would\n"
		"change the id of every sample after it.\n"
		"\n"
		"  -o, --out DIR       folder to write (created if absent, its parent must\n"
		"                      exist; it must not hold a pack already, nor be SOURCE\n"
		"                      or a folder inside it)\n"
		"  --raw               every regular file is a sample (members KEY.bin)\n"
		"  --include-hidden    also names starting with '.' (skipped by default)\n"
		"  --shard-size SIZE   a shard ends before the sample that would take it past\n"
		"                      SIZE (K, M, G suffixes; default 256M); a larger sample\n"
		"                      gets a shard of its own\n"
		"  --align N           each data member's bytes start at a multiple of N in its\n"
		"                      shard (a power of two, 512..16M; 4096 for O_DIRECT\n"
		"                      reads), padded with pax 'comment' headers that tar,\n"
		"                      Python's tarfile and webdataset ignore\n"
		"  --compress zstd[:LEVEL]\n"
		"                      each data member as one zstd frame, KEY.jpg.zst (content\n"
		"                      size and checksum in the frame); LEVEL 1..%d, or\n"
		"                      negative for faster (default 3)\n"
		"  --dict-size SIZE    train a zstd dictionary of SIZE bytes (256 to 16M; 16K\n"
		"                      to 112K suit most sources), write it to DIR/zstd.dict\n"
		"                      and compress every member with it\n"
		"                      (zstd -d -D DIR/zstd.dict). Trained on up to 10,000\n"
		"                      files spread evenly over SOURCE (sample j * count / n),\n"
		"                      each cut to its first 128 KiB, 100 MB in all, on one\n"
		"                      core (deterministic: the same SOURCE, the same\n"
		"                      dictionary); fewer than 7 non-empty files fails the pack\n"
		"\n"
		"With --tokens, SHARDS are llm.c token shards (.bin: a folder, a list file, a\n"
		"glob, a brace pattern or one file) and each is written as DIR/NAME.bin.zst:\n"
		"the tokens in frames of F tokens, each frame one zstd frame (content size,\n"
		"checksum), with a table of where each starts, so that a loader reads and\n"
		"decompresses only the one or two frames a window of tokens lies in (ringfeed\n"
		"bench --tokens reads them as it reads the .bin; llm.c's own loader does not).\n"
		"Every header is checked first: a shard that is not an llm.c shard, is cut\n"
		"short or is a .bin.zst already fails the pack, naming it. A shard is read a\n"
		"few MiB at a time, never whole; files appear whole, as tar shards do, and\n"
		"DIR/.ringfeed-pack-incomplete marks an unfinished pack the same way. DIR may\n"
		"not be a folder that holds SHARDS.\n"
		"  --frame-tokens F    tokens a frame, 1..%u (default %u)\n"
		"  --compress zstd[:LEVEL]\n"
		"                      the frames' level (default 3)\n",
		ZSTD_maxCLevel(), RF_TOKZ_FRAME_MAX, RF_TOKZ_FRAME_DEFAULT);
}

/* SIGINT / SIGTERM / SIGHUP once files are being written (cli_catch_stop_signals):
 * the pack stops before its next sample and removes what it wrote, then
 * exits with 128 + the signal. Before that (walking, training) the default
 * action stands: there is nothing to clean up, and a long walk should not
 * ignore ^C. */

typedef struct view {
	struct timespec t0;
	double last;     /* when the line was last drawn, s since t0 */
	double t_dict, t_write; /* when those phases began, s since t0 (0: not yet) */
	int tty, armed;
	rf_pack_phase phase;
} view;

static double since(const struct timespec *t0)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9;
}

static void show(void *user, const rf_pack_progress *p)
{
	view *v = user;
	double el = since(&v->t0);
	if (p->phase == RF_PACK_DICT && !v->t_dict)
		v->t_dict = el;
	if (p->phase == RF_PACK_WRITE && !v->armed) {
		cli_catch_stop_signals();
		v->armed = 1;
		v->t_write = el;
	}
	if (!v->tty)
		return;
	/* at most 10 lines a second; a new phase and a finished one always */
	int end = p->total && p->done == p->total;
	if (p->phase == v->phase && !end && el - v->last < 0.1)
		return;
	if (p->phase != v->phase)
		fprintf(stderr, "\n");
	v->phase = p->phase;
	v->last = el;
	char line[160];
	if (p->phase == RF_PACK_INDEX)
		snprintf(line, sizeof(line), p->done ? "pack: indexing, %llu files" : "pack: indexing",
			 (unsigned long long)p->done);
	else if (p->phase == RF_PACK_DICT)
		snprintf(line, sizeof(line), "pack: dictionary samples %llu / %llu, %.1f MB%s",
			 (unsigned long long)p->done, (unsigned long long)p->total, (double)p->bytes_in / 1e6,
			 end ? ", training" : "");
	else
		snprintf(line, sizeof(line), "pack: %llu / %llu samples, %.1f MB -> %.1f MB, %s, %.1f MB/s",
			 (unsigned long long)p->done, (unsigned long long)p->total, (double)p->bytes_in / 1e6,
			 (double)p->bytes_out / 1e6, cli_count(p->shards, "shard", 0),
			 el > v->t_write ? (double)p->bytes_in / 1e6 / (el - v->t_write) : 0.0);
	fprintf(stderr, "\r%-78s", line); /* the spaces wipe a longer line before it */
}

/* "zstd" or "zstd:LEVEL". */
static int parse_compress(const char *s, int *level)
{
	if (strncmp(s, "zstd", 4) || (s[4] && s[4] != ':'))
		return cli_usage_error("pack", "--compress %s: only zstd[:LEVEL] is known", s);
	long long v = 3;
	if (s[4] && cli_int("--compress zstd:LEVEL", s + 5, ZSTD_minCLevel(), ZSTD_maxCLevel(), &v))
		return 2;
	*level = (int)v;
	return 0;
}

/* Token shards' progress: a line at most 10 times a second on a terminal. */
static void show_tokens(void *user, uint64_t done, uint64_t total)
{
	view *v = user;
	double el = since(&v->t0);
	if (!v->tty || (done != total && el - v->last < 0.1))
		return;
	v->last = el;
	fprintf(stderr, "\rpack: %llu / %llu tokens, %.0f M tokens/s   ", (unsigned long long)done,
		(unsigned long long)total, el > 0 ? (double)done / el / 1e6 : 0.0);
}

/* pack --tokens: .bin shards -> .bin.zst. */
static int pack_tokens(const char *source, const char *out, uint32_t frame, int level)
{
	view vw = { .tty = isatty(STDERR_FILENO) };
	clock_gettime(CLOCK_MONOTONIC, &vw.t0);
	cli_catch_stop_signals(); /* files are written from the start */
	rf_token_pack_opts o = { .source = source, .out = out, .frame_tokens = frame,
				 .level = level, .progress = show_tokens, .user = &vw,
				 .stop = &cli_stop_signal };
	rf_token_pack_result res;
	char err[1024];
	int ret = rfi_token_pack(&o, &res, err, sizeof(err));
	double el = since(&vw.t0);
	if (vw.tty)
		fprintf(stderr, "\n");
	if (ret)
		return cli_writer_status(ret, err);
	printf("packed %s (%llu tokens) into %s: %.1f MB -> %.1f MB (frames of %u tokens, zstd "
	       "level %d, compression ratio %.3f), %.2f s (%.1f M tokens/s)\n",
	       cli_count(res.shards, "token shard", 0), (unsigned long long)res.tokens, out,
	       (double)res.bytes_in / 1e6, (double)res.bytes_out / 1e6, frame, level,
	       res.bytes_out ? (double)res.bytes_in / (double)res.bytes_out : 0.0, el,
	       el > 0 ? (double)res.tokens / el / 1e6 : 0.0);
	return 0;
}

enum { O_RAW = 256, O_HIDDEN, O_SHARD, O_ALIGN, O_COMPRESS, O_DICT, O_TOKENS, O_FRAME };

static const struct option pack_opts[] = {
	{ "out", required_argument, 0, 'o' },
	{ "raw", no_argument, 0, O_RAW },
	{ "include-hidden", no_argument, 0, O_HIDDEN },
	{ "shard-size", required_argument, 0, O_SHARD },
	{ "align", required_argument, 0, O_ALIGN },
	{ "compress", required_argument, 0, O_COMPRESS },
	{ "dict-size", required_argument, 0, O_DICT },
	{ "tokens", no_argument, 0, O_TOKENS },
	{ "frame-tokens", required_argument, 0, O_FRAME },
	{ "help", no_argument, 0, 'h' },
	{ 0, 0, 0, 0 },
};

/* What pack's command line said. */
typedef struct pack_args {
	rf_pack_opts o;
	int tokens, other;  /* other: an option of tar packs */
	long long frame;    /* --frame-tokens (0: not given) */
} pack_args;

/* --dict-size SIZE: 0 (none), or a size a zstd dictionary can have. */
static int dict_size(const char *arg, size_t *size)
{
	uint64_t v;
	if (cli_size("--dict-size", arg, 0, RF_PACK_DICT_MAX, &v))
		return 2;
	if (v && v < RF_PACK_DICT_MIN) /* 0: none */
		return cli_usage_error("pack", "--dict-size %s: a zstd dictionary is %u "
				       "bytes to 16M; 16K to 112K suit most sources",
				       arg, RF_PACK_DICT_MIN);
	*size = (size_t)v;
	return 0;
}

/* One option (not --help). @return : 0, or 2 after a usage error. */
static int pack_option(int c, const char *arg, pack_args *a)
{
	rf_pack_opts *o = &a->o;
	int r;
	switch (c) {
	case 'o': o->out = arg; break;
	case O_RAW: o->index_flags |= RF_INDEX_RAW; a->other = 1; break;
	case O_HIDDEN: o->index_flags |= RF_INDEX_HIDDEN; a->other = 1; break;
	case O_SHARD:
		if (cli_size("--shard-size", arg, 1, UINT64_MAX, &o->shard_size)) return 2;
		a->other = 1;
		break;
	case O_TOKENS: a->tokens = 1; break;
	case O_FRAME:
		if (cli_int("--frame-tokens", arg, 1, RF_TOKZ_FRAME_MAX, &a->frame)) return 2;
		break;
	case O_ALIGN:
		a->other = 1;
		if (cli_size("--align", arg, 512, RF_PACK_ALIGN_MAX, &o->align)) return 2;
		if (o->align & (o->align - 1))
			return cli_usage_error("pack", "--align %s: not a power of two", arg);
		break;
	case O_COMPRESS:
		if ((r = parse_compress(arg, &o->level))) return r;
		o->compress = 1;
		break;
	case O_DICT:
		if ((r = dict_size(arg, &o->dict_size))) return r;
		a->other = 1;
		break;
	default: return cli_usage_error("pack", "bad option");
	}
	return 0;
}

/* The options together. @return : 0 when they make sense, else 2 after a
 * usage error. */
static int check(const pack_args *a, int argc)
{
	if (optind + 1 != argc)
		return cli_usage_error("pack", "expected one SOURCE");
	if (!a->o.out)
		return cli_usage_error("pack", "-o DIR is required");
	if (a->frame && !a->tokens)
		return cli_usage_error("pack", "--frame-tokens goes with --tokens");
	if (a->tokens && a->other)
		return cli_usage_error("pack", "--tokens writes .bin.zst token shards: not with --raw, "
				       "--include-hidden, --shard-size, --align or --dict-size");
	if (!a->tokens && a->o.dict_size && !a->o.compress)
		return cli_usage_error("pack", "--dict-size goes with --compress zstd");
	return 0;
}

/* The line that says what a tar pack wrote: el seconds in all, of which the
 * writing began at vw->t_write. */
static void say_packed(const rf_pack_opts *o, const rf_pack_result *res, const view *vw, double el)
{
	char how[160] = "";
	if (o->compress)
		/* the ratio of the members themselves: tar headers are no compressor's doing */
		snprintf(how, sizeof(how), " (zstd level %d, compression ratio %.3f%s", o->level,
			 res->bytes_data ? (double)res->bytes_in / (double)res->bytes_data : 0.0,
			 res->dict_bytes ? "" : ")");
	if (res->dict_bytes)
		snprintf(how + strlen(how), sizeof(how) - strlen(how), ", %.1f KiB dictionary from %s)",
			 (double)res->dict_bytes / 1024, cli_count(res->dict_samples, "sample", 1));
	/* the rates are the writing's: training a dictionary is a fixed cost of
	 * its own (mostly the trainer's; up to 100 MB of samples) */
	char train[64] = "";
	double w = el - vw->t_write;
	if (res->dict_bytes)
		snprintf(train, sizeof(train), "dictionary %.2f s, then ", vw->t_write - vw->t_dict);
	printf("packed %s into %s in %s: %.1f MB -> %.1f MB%s, %.2f s (%s%.0f samples/s, %.1f MB/s)\n",
	       cli_count(res->samples, "sample", 0), cli_count(res->shards, "shard", 1), o->out,
	       (double)res->bytes_in / 1e6, (double)res->bytes_out / 1e6, how, el, train,
	       w > 0 ? (double)res->samples / w : 0.0, w > 0 ? (double)res->bytes_in / 1e6 / w : 0.0);
}

/* pack of images or raw files into tar shards. */
static int pack_tar(rf_pack_opts *o)
{
	view vw = { .tty = isatty(STDERR_FILENO), .phase = RF_PACK_INDEX };
	clock_gettime(CLOCK_MONOTONIC, &vw.t0);
	o->progress = show;
	o->user = &vw;
	o->stop = &cli_stop_signal;
	rf_pack_result res;
	char err[1024];
	int ret = rfi_pack_run(o, &res, err, sizeof(err));
	double el = since(&vw.t0);
	if (vw.tty)
		fprintf(stderr, "\n");
	if (ret)
		return cli_writer_status(ret, err);
	say_packed(o, &res, &vw, el);
	return 0;
}

int cmd_pack(int argc, char **argv)
{
	pack_args a = { .o = { .shard_size = 256ull << 20, .level = 3 } };
	int c;
	while ((c = getopt_long(argc, argv, "o:h", pack_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		int ret = pack_option(c, optarg, &a);
		if (ret)
			return ret;
	}
	if (check(&a, argc))
		return 2;
	if (a.tokens)
		return pack_tokens(argv[optind], a.o.out,
				   a.frame ? (uint32_t)a.frame : RF_TOKZ_FRAME_DEFAULT, a.o.level);
	a.o.source = argv[optind];
	return pack_tar(&a.o);
}
