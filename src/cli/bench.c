/* bench.c - `ringfeed bench`: runs the loader over a dataset and reports
 * samples/s, MB/s and where the time went (per-stage timers from rf_stats);
 * optionally as one rank of several, saving or resuming its position, and
 * writing the sample ids it delivered. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "ringfeed.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed bench --source DIR|MANIFEST|SHARDS [--tokens --seq T] [options]\n"
		"\n"
		"Runs the loader (Resize + CenterCrop to uint8 HWC batches) and reports\n"
		"samples/s, MB/s read and where the time went.\n"
		"\n"
		"  --source PATH     ImageFolder directory or manifest (path<TAB>label lines);\n"
		"                    or WebDataset tar shards: a folder of *.tar (or of class\n"
		"                    folders of them), a list file of .tar paths, or a brace\n"
		"                    pattern 'train-{000000..000146}.tar' (see ringfeed pack)\n"
		"  --source-kind auto|files|tar   what a source folder holds: decided from\n"
		"                    its contents (default; a folder with both .tar files and\n"
		"                    loose files is refused, naming both), or said\n"
		"  --zstd-dict FILE  dictionary of the shards' .zst members (default: zstd.dict\n"
		"                    beside the shards, when there is one)\n"
		"  --shard-access random|sequential   shards: a ranged read per sample, global\n"
		"                    shuffle (default); or front to back in 1 MiB chunks,\n"
		"                    shard order shuffled per epoch, samples shuffled within\n"
		"                    blocks of --shuffle-block N positions (default 1024)\n"
		"  --batch B         samples per batch (default 64)\n"
		"  --resize S        shorter side after resize (default 256)\n"
		"  --crop C          center crop size (default 224)\n"
		"  --threads N       compute threads (default: cores - 1, at least 1)\n"
		"  --io-depth D      reads in flight (default 256)\n"
		"  --prefetch P      batch slots (default 4)\n"
		"  --seed X          shuffle seed (default 0)\n"
		"  --epochs E        epochs to run (default 1)\n"
		"  --batches K       stop after K batches instead (epochs repeat as needed)\n"
		"  --no-shuffle      index order\n"
		"  --drop-last       drop each epoch's last partial batch\n"
		"  --on-error skip|fail   bad samples: replace and go on (default), or stop\n"
		"  --no-direct       buffered reads instead of O_DIRECT\n"
		"  --read-pool MIB   read buffer pool in MiB (default 64)\n"
		"  --random-resized-crop C   RandomResizedCrop(C, scale 0.08..1, ratio 3/4..4/3)\n"
		"                    instead of Resize + CenterCrop\n"
		"  --flip P          horizontal flip with probability P (default 0)\n"
		"  --dtype uint8|float16|float32   output type (default uint8)\n"
		"  --layout hwc|chw  output layout (default hwc)\n"
		"  --mean R,G,B --std R,G,B   normalization of float output (default 0 and 1)\n"
		"  --max-pixels N    larger images are bad samples (default 100000000)\n"
		"  --no-scaled-decode   always decode at full scale\n"
		"  --no-region-decode   decode every row and column\n"
		"  --verify-full     decode every image to its end, so that damage below the\n"
		"                    crop is a bad sample (a region decode stops above it)\n"
		"  --out-of-order    hand out batches as they complete\n"
		"  --raw             no decode: every file's bytes (files/s and MB/s)\n"
		"  --raw-max KIB     largest file in raw mode, KiB (default 256)\n"
		"  --tokens          SOURCE holds token shards: llm.c's .bin (GPT-2 uint16 or\n"
		"                    Llama-3 uint32) or .bin.zst (ringfeed pack --tokens): a\n"
		"                    folder, a list file, a glob 'data/train_*.bin' or a brace\n"
		"                    pattern; a sample is a window of T + 1 tokens, a batch B\n"
		"                    rows (windows/s, tokens/s; --no-shuffle is llm.c's order)\n"
		"  --seq T           tokens per row, plus one (default 1024; implies --tokens)\n"
		"  --stride S        tokens between window starts (default T)\n"
		"  --token-dtype uint16|uint32|int32   row type (default: as stored)\n"
		"  --step-ms T       simulate a training step of T ms per batch (the batch is\n"
		"                    held meanwhile); the report shows how long it waited\n"
		"  --log FILE        one JSON line per batch: index, wait, fetch and prep ms, bytes\n"
		"  --progress / --no-progress   live rate, ETA and queues on stderr (default:\n"
		"                    when stderr is a terminal)\n"
		"  --diagnose        measure fetch (reads only), prep (compute) and the full\n"
		"                    pipeline apart, then with a consumer (--step-ms, or one\n"
		"                    chosen to match the pipeline), and say what bounds it:\n"
		"                    storage-bound, decode-bound or consumer-bound\n"
		"  --report FILE.html   with --diagnose or tune: a page with the charts\n"
		"  --device N        copy each batch to CUDA device N as it completes (pinned\n"
		"                    slots, a transfer stream); --device-convert sends uint8\n"
		"                    and converts to --dtype/--layout on the device; each\n"
		"                    batch is waited for on the device before it counts\n"
		"  --decode cpu|gpu|auto   where JPEGs are decoded (default cpu): gpu = the\n"
		"                    GPU's JPEG engines (nvJPEG, needs --device), auto = the\n"
		"                    engines and the --threads pool together (the pool alone\n"
		"                    where there are no engines)\n"
		"  --include-hidden  walk names starting with '.' too (skipped by default:\n"
		"                    .DS_Store, AppleDouble ._x.jpg, .nfs*, .git)\n"
		"  --index-cache FILE   load the index from FILE (see ringfeed index);\n"
		"                    walk and rewrite it when missing or stale\n"
		"  --io-path auto|fixed|plain|pread   how files are read (default auto:\n"
		"                    io_uring with direct descriptors, falling back)\n"
		"  --verbose         log set-up choices and bad samples to stderr\n"
		"  --json            print one JSON object instead of text\n"
		"\n"
		"Order, ranks and resume:\n"
		"  --sampler S       shuffle (default), sequential, weighted (manifest weights:\n"
		"                    path<TAB>label<TAB>weight) or balanced (1 / class size);\n"
		"                    weighted and balanced draw with replacement\n"
		"  --samples-per-epoch N   draws per epoch over all ranks (weighted, balanced;\n"
		"                    default: the dataset's size)\n"
		"  --rank R --world W   this process is rank R of W (default: from RANK/WORLD_SIZE,\n"
		"                    SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/_SIZE or\n"
		"                    PMI_RANK/PMI_SIZE; else 0 of 1)\n"
		"  --rank-tail pad|drop   an epoch that does not divide by W: pad by wrapping\n"
		"                    (default) or drop its last positions\n"
		"  --ids FILE        write one line per delivered batch: its sample ids,\n"
		"                    space-separated, in slot order\n"
		"  --save-state FILE save the loader's position to FILE when the run stops\n"
		"  --after K         stop after K batches (then --save-state saves)\n"
		"  --resume FILE     continue from a saved state: the batches the saving run\n"
		"                    would have delivered next (same dataset and order options;\n"
		"                    threads, io-depth, prefetch, read-pool and epochs may differ)\n");
}

static const char *decode_name(uint32_t d)
{
	return d == RF_DECODE_GPU ? "gpu" : d == RF_DECODE_AUTO ? "auto" : "cpu";
}

static const char *io_path_name(uint32_t p)
{
	return p == RF_IO_URING_FIXED ? "io_uring, direct descriptors"
	       : p == RF_IO_URING_PLAIN ? "io_uring, plain descriptors"
	       : p == RF_IO_PREAD ? "pread threads" : "?";
}

static long peak_rss_kib(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}


/* The kinds of loss the run tells apart, each summed up in one line at
 * the end (nothing is lost in silence), by the code the loader reports. */
enum { LOSS_SPAN, LOSS_UNREADABLE, LOSS_BAD, LOSS_KINDS };
static const char *const loss_what[LOSS_KINDS] = {
	[LOSS_SPAN] = "damaged or cut spans of shards (the samples in them)",
	[LOSS_UNREADABLE] = "files that could not be read",
	[LOSS_BAD] = "samples corrupt or unusable",
};

typedef struct bad_log {
	unsigned long shown, total;
	int fail; /* --on-error fail: the sample stops the run, it is not skipped */
	unsigned long n[LOSS_KINDS];
	char first[LOSS_KINDS][256]; /* the first of each kind, "path: reason" */
} bad_log;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	bad_log *b = user;
	int kind = err == RF_ELOST ? LOSS_SPAN : err < 0 && err > -4096 ? LOSS_UNREADABLE : LOSS_BAD;
	if (!b->n[kind]++)
		snprintf(b->first[kind], sizeof(b->first[kind]), "%s: %s", path, reason);
	if (b->shown < 10) {
		fprintf(stderr, "%s: %s %s: %s\n", cli_name, b->fail ? "bad sample" : "skipped",
			path, reason);
		b->shown++;
	}
	b->total++;
}

/* One line a kind of loss, on stderr whatever the output format: what was
 * reported during the run, and the damaged spans the index holds that
 * the run did not reach. */
static void tell_losses(const bad_log *b, const rf_stats *st)
{
	for (int k = 0; k < LOSS_KINDS; k++)
		if (b->n[k])
			fprintf(stderr, "%s: lost: %s: %lu%s; the first: %s\n", cli_name, loss_what[k],
				b->n[k], b->fail ? "" : ", each replaced", b->first[k]);
	if (st->lost_spans > b->n[LOSS_SPAN])
		fprintf(stderr, "%s: lost: the source's shards hold %llu damaged or cut spans "
			"(%llu bytes) whose samples are lost; %lu of them drawn in this run\n",
			cli_name, (unsigned long long)st->lost_spans,
			(unsigned long long)st->lost_bytes, b->n[LOSS_SPAN]);
}

/* SIGINT / SIGTERM / SIGHUP during a run (cli_catch_stop_signals): the run stops after
 * the batch in hand and ends as a finished one would (--ids whole lines,
 * --save-state written), then bench exits with 128 + the signal. */

int cmd_bench(int argc, char **argv)
{
	enum { O_NOSHUF = 256, O_DROP, O_ONERR, O_NODIRECT, O_POOL, O_VERBOSE, O_JSON, O_IODEPTH,
	       O_RRC, O_FLIP, O_DTYPE, O_LAYOUT, O_MEAN, O_STD, O_MAXPX, O_NOSCALE, O_NOREGION, O_VERIFY,
	       O_UNORDERED, O_IOPATH, O_RAW, O_RAWMAX, O_ICACHE, O_ZDICT, O_STEP, O_LOG, O_PROGRESS,
	       O_NOPROGRESS, O_DIAGNOSE, O_REPORT, O_TUNE, O_TUNEBATCH, O_DEVICE, O_DEVCONV, O_DECODE, O_HIDDEN,
	       O_ACCESS, O_BLOCK, O_TOKENS, O_SEQ, O_STRIDE, O_TOKDTYPE, O_KIND };
	/* Order, ranks and resume (issue 6). */
	enum { O_SAMPLER = 512, O_SPE, O_RANK, O_WORLD, O_TAIL, O_IDS, O_SAVE, O_AFTER, O_RESUME };
	static const struct option opts[] = {
		{ "source", required_argument, 0, 's' },  { "batch", required_argument, 0, 'b' },
		{ "resize", required_argument, 0, 'r' },  { "crop", required_argument, 0, 'c' },
		{ "threads", required_argument, 0, 't' }, { "io-depth", required_argument, 0, O_IODEPTH },
		{ "prefetch", required_argument, 0, 'p' }, { "seed", required_argument, 0, 'x' },
		{ "epochs", required_argument, 0, 'e' },  { "batches", required_argument, 0, 'k' },
		{ "no-shuffle", no_argument, 0, O_NOSHUF }, { "drop-last", no_argument, 0, O_DROP },
		{ "on-error", required_argument, 0, O_ONERR }, { "no-direct", no_argument, 0, O_NODIRECT },
		{ "read-pool", required_argument, 0, O_POOL }, { "verbose", no_argument, 0, O_VERBOSE },
		{ "json", no_argument, 0, O_JSON },       { "help", no_argument, 0, 'h' },
		{ "random-resized-crop", required_argument, 0, O_RRC },
		{ "flip", required_argument, 0, O_FLIP },  { "dtype", required_argument, 0, O_DTYPE },
		{ "layout", required_argument, 0, O_LAYOUT }, { "mean", required_argument, 0, O_MEAN },
		{ "std", required_argument, 0, O_STD },    { "max-pixels", required_argument, 0, O_MAXPX },
		{ "no-scaled-decode", no_argument, 0, O_NOSCALE },
		{ "no-region-decode", no_argument, 0, O_NOREGION },
		{ "verify-full", no_argument, 0, O_VERIFY },
		{ "out-of-order", no_argument, 0, O_UNORDERED },
		{ "io-path", required_argument, 0, O_IOPATH },
		{ "raw", no_argument, 0, O_RAW },          { "include-hidden", no_argument, 0, O_HIDDEN },          { "raw-max", required_argument, 0, O_RAWMAX },
		{ "index-cache", required_argument, 0, O_ICACHE },
		{ "zstd-dict", required_argument, 0, O_ZDICT },
		{ "step-ms", required_argument, 0, O_STEP }, { "log", required_argument, 0, O_LOG },
		{ "progress", no_argument, 0, O_PROGRESS }, { "no-progress", no_argument, 0, O_NOPROGRESS },
		{ "diagnose", no_argument, 0, O_DIAGNOSE }, { "report", required_argument, 0, O_REPORT },
		{ "tune", no_argument, 0, O_TUNE },        { "tune-batch", no_argument, 0, O_TUNEBATCH },
		{ "device", required_argument, 0, O_DEVICE }, { "device-convert", no_argument, 0, O_DEVCONV },
		{ "decode", required_argument, 0, O_DECODE },
		{ "shard-access", required_argument, 0, O_ACCESS },
		{ "source-kind", required_argument, 0, O_KIND },
		{ "shuffle-block", required_argument, 0, O_BLOCK },
		{ "tokens", no_argument, 0, O_TOKENS },    { "seq", required_argument, 0, O_SEQ },
		{ "stride", required_argument, 0, O_STRIDE },
		{ "token-dtype", required_argument, 0, O_TOKDTYPE },
		/* Order, ranks and resume (issue 6). */
		{ "sampler", required_argument, 0, O_SAMPLER },
		{ "samples-per-epoch", required_argument, 0, O_SPE },
		{ "rank", required_argument, 0, O_RANK }, { "world", required_argument, 0, O_WORLD },
		{ "rank-tail", required_argument, 0, O_TAIL }, { "ids", required_argument, 0, O_IDS },
		{ "save-state", required_argument, 0, O_SAVE },
		{ "after", required_argument, 0, O_AFTER },
		{ "resume", required_argument, 0, O_RESUME },
		{ 0, 0, 0, 0 },
	};
	rf_config cfg;
	rf_config_default(&cfg);
	long long v, max_batches = -1;
	float fv;
	double step_ms = 0;
	const char *log_path = NULL, *report_path = NULL;
	int progress = isatty(STDERR_FILENO), diagnose = 0, tune = 0, tune_batch = 0;
	int json = 0, c, have_epochs = 0, tokens = 0;
	/* Order, ranks and resume (issue 6). */
	long long after = -1;
	const char *ids_path = NULL, *save_path = NULL, *resume_path = NULL;
	while ((c = getopt_long(argc, argv, "s:b:r:c:t:p:x:e:k:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': cfg.source = optarg; break;
		case 'b': if (cli_int("--batch", optarg, 1, 65536, &v)) return 2; cfg.batch_size = (int)v; break;
		case 'r': if (cli_int("--resize", optarg, 1, 16384, &v)) return 2; cfg.resize = (int)v; break;
		case 'c': if (cli_int("--crop", optarg, 1, 16384, &v)) return 2; cfg.crop = (int)v; break;
		case 't': if (cli_int("--threads", optarg, 1, 1024, &v)) return 2; cfg.threads = (int)v; break;
		case O_IODEPTH: if (cli_int("--io-depth", optarg, 1, 4096, &v)) return 2; cfg.io_depth = (int)v; break;
		case 'p': if (cli_int("--prefetch", optarg, 1, 1024, &v)) return 2; cfg.prefetch = (int)v; break;
		case 'x': if (cli_u64("--seed", optarg, &cfg.seed)) return 2; break;
		case 'e': if (cli_int("--epochs", optarg, 1, 1 << 30, &v)) return 2; cfg.epochs = (int)v; have_epochs = 1; break;
		case 'k': if (cli_int("--batches", optarg, 1, 1LL << 40, &max_batches)) return 2; break;
		case O_NOSHUF: cfg.shuffle = 0; break;
		case O_DROP: cfg.drop_last = 1; break;
		case O_ONERR:
			if (!strcmp(optarg, "skip")) cfg.on_error = RF_ON_ERROR_SKIP;
			else if (!strcmp(optarg, "fail")) cfg.on_error = RF_ON_ERROR_FAIL;
			else return cli_usage_error("bench", "--on-error: expected skip or fail, not '%s'", optarg);
			break;
		case O_NODIRECT: cfg.no_direct_io = 1; break;
		case O_POOL: if (cli_int("--read-pool", optarg, 1, 1024, &v)) return 2; cfg.read_pool_bytes = (size_t)v << 20; break;
		case O_VERBOSE: cfg.log_level = RF_LOG_INFO; break;
		case O_RRC:
			if (cli_int("--random-resized-crop", optarg, 1, 16384, &v)) return 2;
			cfg.random_resized_crop = 1;
			cfg.crop = (int)v;
			break;
		case O_FLIP:
			if (cli_float("--flip", optarg, 0, 1, &cfg.flip_p)) return 2;
			break;
		case O_DTYPE:
			if (!strcmp(optarg, "uint8")) cfg.dtype = RF_DTYPE_UINT8;
			else if (!strcmp(optarg, "float16")) cfg.dtype = RF_DTYPE_FLOAT16;
			else if (!strcmp(optarg, "float32")) cfg.dtype = RF_DTYPE_FLOAT32;
			else return cli_usage_error("bench", "--dtype: expected uint8, float16 or float32, not '%s'", optarg);
			break;
		case O_LAYOUT:
			if (!strcmp(optarg, "hwc")) cfg.layout = RF_LAYOUT_HWC;
			else if (!strcmp(optarg, "chw")) cfg.layout = RF_LAYOUT_CHW;
			else return cli_usage_error("bench", "--layout: expected hwc or chw, not '%s'", optarg);
			break;
		case O_MEAN: if (cli_float3("--mean", optarg, cfg.mean)) return 2; break;
		case O_STD: if (cli_float3("--std", optarg, cfg.std)) return 2; break;
		case O_MAXPX: if (cli_u64("--max-pixels", optarg, &cfg.max_pixels)) return 2; break;
		case O_NOSCALE: cfg.no_scaled_decode = 1; break;
		case O_NOREGION: cfg.no_region_decode = 1; break;
		case O_VERIFY: cfg.verify_full = 1; break;
		case O_UNORDERED: cfg.in_order = 0; break;
		case O_RAW: cfg.raw = 1; break;
		case O_HIDDEN: cfg.include_hidden = 1; break;
		case O_ICACHE: cfg.index_cache = optarg; break;
		case O_ZDICT: cfg.zstd_dict = optarg; break;
		case O_STEP:
			if (cli_float("--step-ms", optarg, 0, 1e6, &fv)) return 2;
			step_ms = fv;
			break;
		case O_LOG: log_path = optarg; break;
		case O_PROGRESS: progress = 1; break;
		case O_NOPROGRESS: progress = 0; break;
		case O_DIAGNOSE: diagnose = 1; break;
		case O_REPORT: report_path = optarg; break;
		case O_TUNE: tune = 1; break;
		case O_DEVICE: if (cli_int("--device", optarg, 0, 1023, &v)) return 2; cfg.device = (int)v; break;
		case O_DEVCONV: cfg.device_convert = 1; break;
		case O_DECODE:
			if (!strcmp(optarg, "cpu")) cfg.decode = RF_DECODE_CPU;
			else if (!strcmp(optarg, "gpu")) cfg.decode = RF_DECODE_GPU;
			else if (!strcmp(optarg, "auto")) cfg.decode = RF_DECODE_AUTO;
			else return cli_usage_error("bench", "--decode: expected cpu, gpu or auto, not '%s'", optarg);
			break;
		case O_KIND:
			if (cli_source_kind("bench", optarg, &cfg.source_kind)) return 2;
			break;
		case O_ACCESS:
			if (!strcmp(optarg, "random")) cfg.shard_access = RF_SHARD_RANDOM;
			else if (!strcmp(optarg, "sequential")) cfg.shard_access = RF_SHARD_SEQUENTIAL;
			else return cli_usage_error("bench", "--shard-access: expected random or sequential, not '%s'", optarg);
			break;
		case O_BLOCK:
			if (cli_int("--shuffle-block", optarg, 1, 1 << 24, &v)) return 2;
			cfg.shuffle_block = (uint32_t)v;
			break;
		case O_TOKENS: tokens = 1; break;
		case O_SEQ:
			if (cli_int("--seq", optarg, 1, 1 << 24, &v)) return 2;
			cfg.seq_len = (uint32_t)v;
			break;
		case O_STRIDE:
			if (cli_int("--stride", optarg, 1, 1 << 30, &v)) return 2;
			cfg.stride = (uint32_t)v;
			break;
		case O_TOKDTYPE:
			if (!strcmp(optarg, "uint16")) cfg.token_dtype = RF_DTYPE_UINT16;
			else if (!strcmp(optarg, "uint32")) cfg.token_dtype = RF_DTYPE_UINT32;
			else if (!strcmp(optarg, "int32")) cfg.token_dtype = RF_DTYPE_INT32;
			else return cli_usage_error("bench", "--token-dtype: expected uint16, uint32 or int32, not '%s'", optarg);
			break;
		case O_TUNEBATCH: tune = 1; tune_batch = 1; break;
		case O_RAWMAX:
			if (cli_int("--raw-max", optarg, 1, 1 << 20, &v)) return 2;
			cfg.raw_max_bytes = (size_t)v << 10;
			break;
		case O_IOPATH:
			if (!strcmp(optarg, "auto")) cfg.io_path = RF_IO_AUTO;
			else if (!strcmp(optarg, "fixed")) cfg.io_path = RF_IO_URING_FIXED;
			else if (!strcmp(optarg, "plain")) cfg.io_path = RF_IO_URING_PLAIN;
			else if (!strcmp(optarg, "pread")) cfg.io_path = RF_IO_PREAD;
			else return cli_usage_error("bench", "--io-path: expected auto, fixed, plain or pread, not '%s'", optarg);
			break;
		case O_JSON: json = 1; break;
		/* Order, ranks and resume (issue 6). */
		case O_SAMPLER:
			if (cli_sampler_parse(optarg, &cfg.sampler))
				return cli_usage_error("bench", "--sampler: expected shuffle, sequential, "
						       "weighted or balanced, not '%s'", optarg);
			break;
		case O_SPE: if (cli_u64("--samples-per-epoch", optarg, &cfg.samples_per_epoch)) return 2; break;
		case O_RANK: if (cli_int("--rank", optarg, 0, 1 << 20, &v)) return 2; cfg.rank = (int)v; break;
		case O_WORLD: if (cli_int("--world", optarg, 1, 1 << 20, &v)) return 2; cfg.world_size = (int)v; break;
		case O_TAIL:
			if (!strcmp(optarg, "pad")) cfg.rank_tail = RF_RANK_TAIL_PAD;
			else if (!strcmp(optarg, "drop")) cfg.rank_tail = RF_RANK_TAIL_DROP;
			else return cli_usage_error("bench", "--rank-tail: expected pad or drop, not '%s'", optarg);
			break;
		case O_IDS: ids_path = optarg; break;
		case O_SAVE: save_path = optarg; break;
		case O_AFTER: if (cli_int("--after", optarg, 0, 1LL << 40, &after)) return 2; break;
		case O_RESUME: resume_path = optarg; break;
		case 'h': usage(stdout); return 0;
		default: return cli_usage_error("bench", "bad option");
		}
	}
	if (optind < argc)
		return cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
	if (!cfg.source)
		return cli_usage_error("bench", "--source is required");
	if (tokens && !cfg.seq_len)
		cfg.seq_len = 1024;
	if ((cfg.stride || cfg.token_dtype) && !cfg.seq_len)
		return cli_usage_error("bench", "--stride and --token-dtype go with --tokens");
	if (cfg.seq_len && (cfg.raw || diagnose || tune))
		return cli_usage_error("bench", "--tokens has no decode stage: not with --raw, "
				       "--diagnose or tune");
	if (max_batches >= 0 && have_epochs)
		return cli_usage_error("bench", "give --batches or --epochs, not both");
	if (max_batches >= 0)
		cfg.epochs = 0; /* endless; stopped after max_batches */
	if (report_path && !diagnose && !tune)
		return cli_usage_error("bench", "--report goes with --diagnose (or ringfeed tune)");
	if (tune && diagnose)
		return cli_usage_error("bench", "run --diagnose and ringfeed tune apart");
	if (tune) {
		tune_opts t = { .batches = max_batches, .tune_batch = tune_batch, .json = json,
				.progress = progress, .report = report_path };
		return cli_tune(&cfg, &t) ? 1 : 0;
	}
	if (diagnose) {
		if (save_path || resume_path || ids_path || log_path)
			return cli_usage_error("bench", "--diagnose runs its own stages: no "
					       "--save-state, --resume, --ids or --log with it");
		diag_opts d = { .step_ms = step_ms, .batches = max_batches, .json = json,
				.progress = progress, .report = report_path };
		return cli_diagnose(&cfg, &d) ? 1 : 0;
	}
	/* Order, ranks and resume (issue 6). */
	if ((cfg.rank < 0) != (cfg.world_size < 0))
		return cli_usage_error("bench", "give --rank and --world together");
	if (after >= 0 && !save_path)
		return cli_usage_error("bench", "--after K stops to save: give --save-state FILE");
	if (after >= 0 && max_batches >= 0)
		return cli_usage_error("bench", "give --after or --batches, not both");
	if (after >= 0)
		max_batches = after; /* the epochs stay as given: --resume continues them */
	void *resume_buf = NULL;
	if (resume_path) {
		if (cli_state_read(resume_path, &resume_buf, &cfg.resume_state_len))
			return 1;
		cfg.resume_state = resume_buf;
	}
	FILE *ids = NULL, *log = NULL;
	if ((ids_path && !(ids = fopen(ids_path, "w"))) || (log_path && !(log = fopen(log_path, "w")))) {
		fprintf(stderr, "%s: %s: %s\n", cli_name, ids_path && !ids ? ids_path : log_path,
			strerror(errno));
		if (ids)
			fclose(ids);
		free(resume_buf);
		return 1;
	}

	bad_log bad = { .fail = cfg.on_error == RF_ON_ERROR_FAIL };
	cfg.on_sample_error = on_bad;
	cfg.user = &bad;

	char err[512];
	rf_loader *l;
	double t0 = now_s();
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	free(resume_buf); /* read during create only */
	if (ret) {
		cli_fail(err, ret);
		if (ids)
			fclose(ids);
		if (log)
			fclose(log);
		return 1;
	}
	double t_created = now_s();
	if (cfg.decode == RF_DECODE_AUTO) {
		rf_stats first;
		rf_loader_stats(l, &first);
		if (first.decode_path == RF_DECODE_CPU)
			fprintf(stderr, "%s: --decode auto: no GPU JPEG decode here%s; decoding on the "
				"CPU\n", cli_name, cfg.log_level >= RF_LOG_WARN ? "" : " (--verbose says why)");
	}
	cli_catch_stop_signals();
	run_hooks hooks = { .max_batches = max_batches, .step_ms = step_ms, .log = log, .ids = ids,
			    .progress = progress, .raw = cfg.raw, .stop = &cli_stop_signal,
			    .device_sync = cfg.device >= 0 };
	run_out run;
	ret = run_consume(l, &hooks, &run);
	if (ret == -EIO)
		fprintf(stderr, "%s: writing --ids or --log, or waiting for the device: %s\n", cli_name, strerror(errno));
	double t_first = run.t_first;
	unsigned long long batches = run.batches, samples = run.samples, checksum = run.checksum;
	double t_end = run.t_end;
	if (log && fclose(log) != 0 && ret >= 0) {
		fprintf(stderr, "%s: --log: %s\n", cli_name, strerror(errno));
		ret = -EIO;
	}
	if (ids && fclose(ids) != 0 && ret >= 0) {
		fprintf(stderr, "%s: --ids %s: %s\n", cli_name, ids_path, strerror(errno));
		ret = -EIO;
	}
	if (ret < 0) {
		if (ret != -EIO)
			fprintf(stderr, "%s: %s: %s\n", cli_name, rf_strerror(ret), rf_loader_error(l));
		rf_loader_destroy(l);
		return 1;
	}
	/* Order, ranks and resume (issue 6). */
	rf_order_info order;
	rf_loader_order(l, &order);
	if (save_path) {
		if (cli_state_write(l, save_path)) {
			rf_loader_destroy(l);
			return 1;
		}
		if (order.next_batch >= order.total_batches)
			fprintf(stderr, "%s: the stream ended after %s, before --after %lld: the state "
				"saved to %s is its end (batch %llu of %llu); resuming from it delivers nothing\n",
				cli_name, cli_count(batches, "batch", 0), after, save_path,
				(unsigned long long)order.next_batch, (unsigned long long)order.total_batches);
		else
			fprintf(stderr, "%s: state saved to %s: resumes at batch %llu (epoch %llu)\n", cli_name,
				save_path, (unsigned long long)order.next_batch,
				(unsigned long long)(order.next_batch / order.batches_per_epoch));
	} else if (resume_path && batches == 0 && ret == 0 && !cli_stop_signal) {
		fprintf(stderr, "%s: nothing left to deliver: the state in %s is at the end of the stream "
			"(batch %llu of %llu; more --epochs continue it)\n", cli_name, resume_path,
			(unsigned long long)order.next_batch, (unsigned long long)order.total_batches);
	}
	rf_stats st;
	rf_loader_stats(l, &st);
	rf_loader_destroy(l);

	double secs = t_end - t0;
	double sps = samples / secs, mbps = (double)st.bytes_read / secs / 1e6;
	double per = samples ? 1e-6 / (double)samples : 0; /* ns total -> ms per sample */
	double decode_ms = (double)st.ns_decode * per, transform_ms = (double)st.ns_transform * per;
	double collate_ms = (double)st.ns_collate * per, readwait_ms = (double)st.ns_read_wait * per;
	/* shares of the compute threads' wall time */
	double wall_threads = secs * st.threads * 1e9;
	double pct_decode = wall_threads > 0 ? 100.0 * (double)st.ns_decode / wall_threads : 0;
	double pct_transform = wall_threads > 0 ? 100.0 * (double)st.ns_transform / wall_threads : 0;
	double pct_collate = wall_threads > 0 ? 100.0 * (double)st.ns_collate / wall_threads : 0;
	double pct_readwait = wall_threads > 0 ? 100.0 * (double)st.ns_read_wait / wall_threads : 0;
	double pct_other = 100.0 - pct_decode - pct_transform - pct_collate - pct_readwait;
	double wait_pct = secs > 0 ? 100.0 * (double)st.ns_consumer_wait * 1e-9 / secs : 0;
	double ring_us = samples ? (double)st.ns_ring_cpu * 1e-3 / (double)samples : 0;
	double px_pct = st.source_pixels ? 100.0 * (double)st.decoded_pixels / (double)st.source_pixels : 0;
	if (json) {
		/* steady: without set-up (index walk, threads), as peers that list
		 * their files before their clock starts are timed */
		printf("{\"loader\":\"ringfeed\",\"source\":");
		cli_json_str(stdout, cfg.source);
		printf(",\"raw\":%d,\"steady_samples_per_s\":%.2f,"
		       "\"index_files\":%llu,\"index_bytes\":%llu,\"index_cached\":%u,"
		       "\"peak_rss_kib\":%ld,\"device_copy_gb_per_s\":%.3f,\"device_bytes\":%llu,", cfg.raw,
		       t_end > t_created ? samples / (t_end - t_created) : 0.0,
		       (unsigned long long)st.samples_total, (unsigned long long)st.index_bytes,
		       st.index_cached, peak_rss_kib(),
		       st.ns_device_copy ? (double)st.device_bytes / (double)st.ns_device_copy : 0.0,
		       (unsigned long long)st.device_bytes);
		if (cfg.seq_len) /* token windows: samples are windows of seq_len + 1 tokens */
			printf("\"seq_len\":%u,\"tokens_per_s\":%.1f,", cfg.seq_len,
			       sps * (cfg.seq_len + 1.0));
		printf("\"samples\":%llu,\"batches\":%llu,\"seconds\":%.6f,"
		       "\"samples_per_s\":%.2f,\"mb_per_s\":%.3f,\"bytes_read\":%llu,"
		       "\"bad_samples\":%llu,\"replaced\":%llu,\"lost_spans\":%llu,\"lost_bytes\":%llu,"
		       "\"create_s\":%.6f,\"first_batch_s\":%.6f,"
		       "\"threads\":%u,\"io_depth\":%u,\"io_path\":\"%s\",\"direct_io\":%u,\"fixed_buffers\":%u,"
		       "\"stages\":{\"read_wait_ms_per_sample\":%.4f,\"decode_ms_per_sample\":%.4f,"
		       "\"transform_ms_per_sample\":%.4f,\"collate_ms_per_sample\":%.4f,"
		       "\"read_wait_pct\":%.1f,\"decode_pct\":%.1f,\"transform_pct\":%.1f,"
		       "\"collate_pct\":%.1f,\"other_pct\":%.1f,\"consumer_wait_pct\":%.1f,"
		       "\"ring_cpu_us_per_sample\":%.2f,\"ring_cpu_ms_per_10k\":%.2f,\"scaled_decodes\":%llu,"
		       "\"decoded_pixels_pct\":%.1f},\"decode\":\"%s\",\"cpu_decodes\":%llu,"
		       "\"gpu_decodes\":%llu,\"gpu_busy_s\":%.6f,\"gpu_host_s\":%.6f,\"checksum\":%llu}\n",
		       samples, batches, secs, sps, mbps, (unsigned long long)st.bytes_read,
		       (unsigned long long)st.bad_samples, (unsigned long long)st.replaced,
		       (unsigned long long)st.lost_spans, (unsigned long long)st.lost_bytes, t_created - t0,
		       t_first ? t_first - t0 : 0.0, st.threads, st.io_depth, io_path_name(st.io_path),
		       st.direct_io, st.fixed_buffers, readwait_ms, decode_ms, transform_ms, collate_ms, pct_readwait,
		       pct_decode, pct_transform, pct_collate, pct_other, wait_pct, ring_us, ring_us * 10,
		       (unsigned long long)st.scaled_decodes, px_pct, decode_name(st.decode_path),
		       (unsigned long long)st.cpu_decodes, (unsigned long long)st.gpu_decodes,
		       (double)st.ns_gpu_decode * 1e-9, (double)st.ns_gpu_host * 1e-9, checksum);
	} else {
		const char *unit = cfg.raw ? "file" : cfg.seq_len ? "window" : "sample";
		printf("%s: %s in %s, %.3f s\n", cli_name, cli_count(samples, unit, 0),
		       cli_count(batches, "batch", 1), secs);
		if (cfg.seq_len)
			printf("  %.0f tokens/s (windows of %u + 1 tokens)\n", sps * (cfg.seq_len + 1.0),
			       cfg.seq_len);
		printf("  %.1f %ss/s, %.1f MB/s read (%s, %s, alignment %u, %s)\n", sps, unit, mbps,
		       io_path_name(st.io_path), st.direct_io ? "O_DIRECT" : "buffered", st.dio_align,
		       st.fixed_buffers ? "fixed buffers" : "plain buffers");
		printf("  set-up (index%s + threads) %.3f s, first batch after %.3f s; index %llu %ss, "
		       "%.1f bytes each\n", st.index_cached ? " from cache" : " walk", t_created - t0,
		       t_first ? t_first - t0 : 0.0, (unsigned long long)st.samples_total,
		       cfg.seq_len ? "window" : "file",
		       st.samples_total ? (double)st.index_bytes / (double)st.samples_total : 0.0);
		if (cfg.seq_len && !st.threads) { /* no compute stage: the ring thread lands rows */
			printf("  tokens: no compute threads; the ring thread reads every window and "
			       "stores it into its row (io_depth %u): %.2f us of its CPU per window, "
			       "%.1f ms per 10,000, %.1f%% of one core\n", st.io_depth, ring_us, ring_us * 10,
			       secs > 0 ? 100.0 * (double)st.ns_ring_cpu * 1e-9 / secs : 0.0);
			printf("  consumer waiting for batches %5.1f%% of the run\n", wait_pct);
		} else if (cfg.raw) { /* no compute stage: the ring thread lands every read */
			printf("  raw mode: no compute threads; the ring thread reads and lands every file "
			       "(io_depth %u): %.2f us of its CPU per file, %.1f%% of one core\n", st.io_depth,
			       ring_us, secs > 0 ? 100.0 * (double)st.ns_ring_cpu * 1e-9 / secs : 0.0);
			printf("  consumer waiting for batches %5.1f%% of the run\n", wait_pct);
		} else {
		printf("  where the compute threads' time went (%s, io_depth %u):\n",
		       cli_count(st.threads, "thread", 0), st.io_depth);
		printf("    read wait   %7.3f ms/sample  %5.1f%%  (no landed read to work on)\n", readwait_ms, pct_readwait);
		printf("    decode      %7.3f ms/sample  %5.1f%%  (%.0f%% of the pixels decoded, %llu scaled)\n",
		       decode_ms, pct_decode, px_pct, (unsigned long long)st.scaled_decodes);
		printf("    transform   %7.3f ms/sample  %5.1f%%  (resample + store into the slot)\n", transform_ms, pct_transform);
		printf("    collate     %7.3f ms/sample  %5.1f%%  (labels, ids, count-down, publish)\n", collate_ms, pct_collate);
		printf("    other               %5.1f%%  (queues, descheduled)\n", pct_other);
		printf("  consumer waiting for batches %5.1f%% of the run; ring thread CPU %.2f us/sample\n",
		       wait_pct, ring_us);
		}
		if (st.bad_samples)
			printf("  bad samples skipped and replaced: %llu (%llu places of the delivered "
			       "batches filled by a replacement)\n", (unsigned long long)st.bad_samples,
			       (unsigned long long)st.replaced);
	}
	tell_losses(&bad, &st);
	/* Order, ranks and resume (issue 6). */
	if (!json) {
		printf("  order: %s sampler, rank %u of %u (%s): %llu of the %llu samples and %s "
		       "per epoch\n", cli_sampler_name(order.sampler), order.rank,
		       order.world_size, order.rank_source, (unsigned long long)order.rank_samples,
		       (unsigned long long)order.epoch_samples, cli_count(order.batches_per_epoch, "batch", 0));
		if (batches)
			printf("  delivered batches %llu to %llu; the next is %llu\n",
			       (unsigned long long)(order.next_batch - batches),
			       (unsigned long long)(order.next_batch - 1),
			       (unsigned long long)order.next_batch);
	}
	if (cli_stop_signal) {
		fprintf(stderr, "%s: stopped by %s after %s\n", cli_name,
			cli_signal_name(cli_stop_signal), cli_count(batches, "batch", 0));
		return 128 + cli_stop_signal;
	}
	return 0;
}

int cmd_tune(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ringfeed tune --source DIR [bench options] [--batches K] "
			       "[--tune-batch] [--json] [--report FILE.html]\n\n"
			       "Searches threads, io_depth and prefetch (and the batch size with\n"
			       "--tune-batch) by coordinate descent, each trial K batches (default 30),\n"
			       "and recommends the smallest configuration within 5%% of the best.\n"
			       "Every `ringfeed bench` option sets what stays fixed (see bench --help).\n");
			return 0;
		}
	char **args = calloc((size_t)argc + 2, sizeof(char *));
	if (!args)
		return 1;
	args[0] = (char *)cli_name;
	for (int i = 1; i < argc; i++)
		args[i] = argv[i];
	args[argc] = "--tune";
	int ret = cmd_bench(argc + 1, args);
	free(args);
	return ret;
}
