/* bench_parse.c - `ringfeed bench`'s command line: its help text, its
 * options, and bench_parse(), which fills a bench_opts and reports a bad
 * option or a bad combination, apart from the run (bench.c); as dav1d's
 * tools/dav1d_cli_parse.c is apart from tools/dav1d.c. Enum values are
 * parsed with the library's table of names (cli_enum()). */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"
#include "cache/node_cache.h" /* RF_CACHE_MIN_BYTES */

/* The help text, a part per group of options, printed in this order. */
static const char *const usage_parts[] = {
	/* the command, and where samples come from */
	"usage: ringfeed bench --source DIR|MANIFEST|SHARDS [--tokens --seq T] [options]\n"
	"\n"
	"Runs the loader (Resize + CenterCrop to uint8 HWC batches) and reports\n"
	"samples/s, MB/s read and where the time went.\n"
	"\n"
	"  --source PATH     ImageFolder directory or manifest (path<TAB>label lines);\n"
	"                    or WebDataset tar shards: a folder of *.tar (or of class\n"
	"                    folders of them), a list file of .tar paths, or a brace\n"
	"                    pattern 'train-{000000..000146}.tar' (see ringfeed pack).\n"
	"                    Images: JPEG, PNG and WebP, told by their bytes\n"
	"  --source-kind auto|files|tar   what a source folder holds: decided from\n"
	"                    its contents (default; a folder with both .tar files and\n"
	"                    loose files is refused, naming both), or said\n"
	"  --zstd-dict FILE  dictionary of the shards' .zst members (default: zstd.dict\n"
	"                    beside the shards, when there is one)\n"
	"  --column image=NAME,label=NAME   Parquet files: which column is which\n"
	"                    (default: the image column found by its bytes or the\n"
	"                    datasets Image struct, the label column 'label'); a\n"
	"                    label column is an integer (a ClassLabel's names) or a\n"
	"                    string (its sorted distinct values are the classes, as\n"
	"                    folder names are); a null label is -1; label= is none\n"
	"  --shard-access random|sequential   shards: a ranged read per sample, global\n"
	"                    shuffle (default); or front to back in 1 MiB chunks,\n"
	"                    shard order shuffled per epoch, samples shuffled within\n"
	"                    blocks of --shuffle-block N positions (default 1024)\n",
	/* the batch, the pipeline, epochs and bad samples */
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
	"  --read-pool MIB   read buffer pool in MiB (default 64)\n",
	/* images: augmentation, output type, decode */
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
	"  --raw-max KIB     largest file in raw mode, KiB (default 256)\n",
	/* other members of a sample, remote reads, the node cache */
	"  --fields LIST     deliver these members of each sample with its batch, such\n"
	"                    as txt,json (a shard's KEY.txt, KEY.json; in a loose tree\n"
	"                    the files beside the image with its key; Parquet: other\n"
	"                    columns, such as caption,url: strings and bytes as they\n"
	"                    are, numbers as decimal text, a null absent); a sample\n"
	"                    without one is a bad sample, unless it is marked\n"
	"                    optional: 'txt?'. The report counts their bytes\n"
	"  --field-max KIB   largest field value, KiB (default 64): larger is a bad sample\n"
	"  --remote-timeout S  a remote read's time, its tries included (default 120): past\n"
	"                    it the read fails, a bad sample named URL: reason\n"
	"  --cache-dir DIR   keep the remote shards' bytes in DIR/ringfeed-cache/ as they\n"
	"                    are fetched and read them from there the next time, in\n"
	"                    this run and later ones, by every process naming DIR (the\n"
	"                    ranks of a node fetch each range once); see ringfeed cache\n"
	"  --cache-size SIZE at most SIZE bytes in the cache, K/M/G/T suffixes (default\n"
	"                    10G, at least 4M): whole segments are evicted past it\n"
	"  --cache-group NAME  share the cache with the users of group NAME: its files\n"
	"                    are made theirs (0660), and theirs used; without it a\n"
	"                    cache folder or file of another user, or writable by\n"
	"                    others, is not used (a warning; reads go to the network)\n",
	/* token shards */
	"  --tokens          SOURCE holds token shards: llm.c's .bin (GPT-2 uint16 or\n"
	"                    Llama-3 uint32) or .bin.zst (ringfeed pack --tokens): a\n"
	"                    folder, a list file, a glob 'data/train_*.bin' or a brace\n"
	"                    pattern; a sample is a window of T + 1 tokens, a batch B\n"
	"                    rows (windows/s, tokens/s; --no-shuffle is llm.c's order)\n"
	"  --seq T           tokens per row, plus one (default 1024; implies --tokens)\n"
	"  --stride S        tokens between window starts (default T)\n"
	"  --token-dtype uint16|uint32|int32|int64   row type (default: as stored)\n",
	/* the run: a training step, logs, diagnose, the device */
	"  --step-ms T       simulate a training step of T ms per batch (the batch is\n"
	"                    held meanwhile); the report shows how long it waited\n"
	"  --log FILE        one JSON line per batch: index, wait, fetch and prep ms, bytes\n"
	"  --progress / --no-progress   live rate, ETA and queues on stderr (default:\n"
	"                    when stderr is a terminal)\n"
	"  --diagnose        measure fetch (reads only), prep (compute) and the full\n"
	"                    pipeline apart, then with a consumer (--step-ms, or one\n"
	"                    chosen to match the pipeline), and say what bounds it:\n"
	"                    storage-, decode-, network- or consumer-bound; and what\n"
	"                    the loader's threads cost a CPU-bound training step\n"
	"  --report FILE.html   with --diagnose or tune: a page with the charts\n"
	"  --device N        copy each batch to CUDA device N as it completes (pinned\n"
	"                    slots, a transfer stream); --device-convert sends uint8\n"
	"                    and converts to --dtype/--layout on the device; each\n"
	"                    batch is waited for on the device before it counts\n"
	"  --decode cpu|gpu|auto   where JPEGs are decoded (default cpu): gpu = the\n"
	"                    GPU's JPEG engines (nvJPEG, needs --device), auto = the\n"
	"                    engines and the --threads pool together (the pool alone\n"
	"                    where there are no engines)\n",
	/* walking and reading; what is printed */
	"  --include-hidden  walk names starting with '.' too (skipped by default:\n"
	"                    .DS_Store, AppleDouble ._x.jpg, .nfs*, .git)\n"
	"  --index-cache FILE   load the index from FILE (see ringfeed index);\n"
	"                    walk and rewrite it when missing or stale\n"
	"  --io-path auto|fixed|plain|pread   how files are read (default auto:\n"
	"                    io_uring with direct descriptors, falling back)\n"
	"  --verbose         log set-up choices and bad samples to stderr\n"
	"  --json            print one JSON object instead of text\n",
	/* order, ranks and resume (issue 6) */
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
	"                    threads, io-depth, prefetch, read-pool and epochs may differ)\n",
};

static void usage(FILE *f)
{
	for (size_t i = 0; i < sizeof(usage_parts) / sizeof(usage_parts[0]); i++)
		fputs(usage_parts[i], f);
}

enum {
	O_NOSHUF = 256, O_DROP, O_ONERR, O_NODIRECT, O_POOL, O_VERBOSE, O_JSON, O_IODEPTH, O_RRC,
	O_FLIP, O_DTYPE, O_LAYOUT, O_MEAN, O_STD, O_MAXPX, O_NOSCALE, O_NOREGION, O_VERIFY,
	O_UNORDERED, O_IOPATH, O_RAW, O_RAWMAX, O_ICACHE, O_ZDICT, O_STEP, O_LOG, O_PROGRESS,
	O_NOPROGRESS, O_DIAGNOSE, O_REPORT, O_TUNE, O_TUNEBATCH, O_DEVICE, O_DEVCONV, O_DECODE,
	O_HIDDEN, O_ACCESS, O_BLOCK, O_TOKENS, O_SEQ, O_STRIDE, O_TOKDTYPE, O_KIND, O_FIELDS,
	O_FIELDMAX, O_REMOTE_TIMEOUT, O_CACHE_DIR, O_CACHE_SIZE, O_CACHE_GROUP, O_COLUMNS,
	/* Order, ranks and resume (issue 6). */
	O_SAMPLER = 512, O_SPE, O_RANK, O_WORLD, O_TAIL, O_IDS, O_SAVE, O_AFTER, O_RESUME
};

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
	{ "raw", no_argument, 0, O_RAW },          { "include-hidden", no_argument, 0, O_HIDDEN },
	{ "raw-max", required_argument, 0, O_RAWMAX },
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
	{ "fields", required_argument, 0, O_FIELDS },
	{ "column", required_argument, 0, O_COLUMNS },
	{ "field-max", required_argument, 0, O_FIELDMAX },
	{ "remote-timeout", required_argument, 0, O_REMOTE_TIMEOUT },
	{ "cache-dir", required_argument, 0, O_CACHE_DIR },
	{ "cache-size", required_argument, 0, O_CACHE_SIZE },
	{ "cache-group", required_argument, 0, O_CACHE_GROUP },
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

/* The option parsers below each take the options of one part of the help
 * text: @return : 0 when c was theirs and its value good, 2 after a usage
 * error (reported), NOT_MINE when c is another part's. */
#define NOT_MINE (-1)

/* An enum option into its rf_config field (of any enum type). */
#define ENUM(opt, kind, field)                                    \
	do {                                                      \
		int value_;                                       \
		if (cli_enum(opt, kind, arg, &value_))            \
			return 2;                                 \
		field = value_;                                   \
	} while (0)

/* Where samples come from: the source and what it holds. */
static int parse_source(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case 's': cfg->source = arg; break;
	case O_KIND: ENUM("--source-kind", RF_ENUM_SOURCE_KIND, cfg->source_kind); break;
	case O_ZDICT: cfg->zstd_dict = arg; break;
	case O_COLUMNS: cfg->columns = arg; break;
	case O_ACCESS: ENUM("--shard-access", RF_ENUM_SHARD_ACCESS, cfg->shard_access); break;
	case O_BLOCK:
		if (cli_int("--shuffle-block", arg, 1, 1 << 24, &v)) return 2;
		cfg->shuffle_block = (uint32_t)v;
		break;
	case O_RAW: cfg->raw = 1; break;
	case O_RAWMAX:
		if (cli_int("--raw-max", arg, 1, 1 << 20, &v)) return 2;
		cfg->raw_max_bytes = (size_t)v << 10;
		break;
	case O_HIDDEN: cfg->include_hidden = 1; break;
	case O_ICACHE: cfg->index_cache = arg; break;
	default: return NOT_MINE;
	}
	return 0;
}

/* How samples are read and made into batches: threads, reads, slots. */
static int parse_pipeline(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case 't': if (cli_int("--threads", arg, 1, 1024, &v)) return 2; cfg->threads = (int)v; break;
	case O_IODEPTH: if (cli_int("--io-depth", arg, 1, 4096, &v)) return 2; cfg->io_depth = (int)v; break;
	case 'p': if (cli_int("--prefetch", arg, 1, 1024, &v)) return 2; cfg->prefetch = (int)v; break;
	case O_NODIRECT: cfg->no_direct_io = 1; break;
	case O_POOL: if (cli_int("--read-pool", arg, 1, 1024, &v)) return 2; cfg->read_pool_bytes = (size_t)v << 20; break;
	case O_UNORDERED: cfg->in_order = 0; break;
	case O_IOPATH: ENUM("--io-path", RF_ENUM_IO_PATH, cfg->io_path); break;
	case O_VERBOSE: cfg->log_level = RF_LOG_INFO; break;
	default: return NOT_MINE;
	}
	return 0;
}

/* Remote reads and the node-local cache of their bytes. */
static int parse_remote(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case O_REMOTE_TIMEOUT:
		if (cli_int("--remote-timeout", arg, 1, 86400, &v)) return 2;
		cfg->remote_timeout_ms = (uint32_t)v * 1000u;
		break;
	case O_CACHE_DIR: cfg->cache_dir = arg; break;
	case O_CACHE_GROUP: cfg->cache_group = arg; break;
	case O_CACHE_SIZE:
		if (cli_size("--cache-size", arg, RF_CACHE_MIN_BYTES, 1ull << 50, &cfg->cache_bytes))
			return 2;
		break;
	default: return NOT_MINE;
	}
	return 0;
}

/* Images: their size, augmentation, output type and decode. */
static int parse_image(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case 'b': if (cli_int("--batch", arg, 1, 65536, &v)) return 2; cfg->batch_size = (int)v; break;
	case 'r': if (cli_int("--resize", arg, 1, 16384, &v)) return 2; cfg->resize = (int)v; break;
	case 'c': if (cli_int("--crop", arg, 1, 16384, &v)) return 2; cfg->crop = (int)v; break;
	case O_RRC:
		if (cli_int("--random-resized-crop", arg, 1, 16384, &v)) return 2;
		cfg->random_resized_crop = 1;
		cfg->crop = (int)v;
		break;
	case O_FLIP: if (cli_float("--flip", arg, 0, 1, &cfg->flip_p)) return 2; break;
	case O_DTYPE: ENUM("--dtype", RF_ENUM_DTYPE, cfg->dtype); break;
	case O_LAYOUT: ENUM("--layout", RF_ENUM_LAYOUT, cfg->layout); break;
	case O_MEAN: if (cli_float3("--mean", arg, cfg->mean)) return 2; break;
	case O_STD: if (cli_float3("--std", arg, cfg->std)) return 2; break;
	case O_MAXPX: if (cli_u64("--max-pixels", arg, &cfg->max_pixels)) return 2; break;
	case O_NOSCALE: cfg->no_scaled_decode = 1; break;
	case O_NOREGION: cfg->no_region_decode = 1; break;
	case O_VERIFY: cfg->verify_full = 1; break;
	default: return NOT_MINE;
	}
	return 0;
}

/* The GPU: the device batches are copied to, and where JPEGs are decoded. */
static int parse_device(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case O_DEVICE: if (cli_int("--device", arg, 0, 1023, &v)) return 2; cfg->device = (int)v; break;
	case O_DEVCONV: cfg->device_convert = 1; break;
	case O_DECODE: ENUM("--decode", RF_ENUM_DECODE, cfg->decode); break;
	default: return NOT_MINE;
	}
	return 0;
}

/* What a batch holds besides images: token rows, and a sample's fields. */
static int parse_rows(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case O_TOKENS: o->tokens = 1; break;
	case O_SEQ: if (cli_int("--seq", arg, 1, 1 << 24, &v)) return 2; cfg->seq_len = (uint32_t)v; break;
	case O_STRIDE: if (cli_int("--stride", arg, 1, 1 << 30, &v)) return 2; cfg->stride = (uint32_t)v; break;
	case O_TOKDTYPE: ENUM("--token-dtype", RF_ENUM_TOKEN_DTYPE, cfg->token_dtype); break;
	case O_FIELDS: cfg->fields = arg; break;
	case O_FIELDMAX:
		if (cli_int("--field-max", arg, 1, 1 << 16, &v)) return 2;
		cfg->field_max = (uint32_t)v << 10;
		break;
	default: return NOT_MINE;
	}
	return 0;
}

/* Order, ranks and resume (issue 6), epochs and bad samples. */
static int parse_order(int c, const char *arg, bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	long long v;
	switch (c) {
	case 'x': if (cli_u64("--seed", arg, &cfg->seed)) return 2; break;
	case 'e':
		if (cli_int("--epochs", arg, 1, 1 << 30, &v)) return 2;
		cfg->epochs = (int)v;
		o->have_epochs = 1;
		break;
	case O_NOSHUF: cfg->shuffle = 0; break;
	case O_DROP: cfg->drop_last = 1; break;
	case O_ONERR: ENUM("--on-error", RF_ENUM_ON_ERROR, cfg->on_error); break;
	case O_SAMPLER: ENUM("--sampler", RF_ENUM_SAMPLER, cfg->sampler); break;
	case O_SPE: if (cli_u64("--samples-per-epoch", arg, &cfg->samples_per_epoch)) return 2; break;
	case O_RANK: if (cli_int("--rank", arg, 0, 1 << 20, &v)) return 2; cfg->rank = (int)v; break;
	case O_WORLD: if (cli_int("--world", arg, 1, 1 << 20, &v)) return 2; cfg->world_size = (int)v; break;
	case O_TAIL: ENUM("--rank-tail", RF_ENUM_RANK_TAIL, cfg->rank_tail); break;
	default: return NOT_MINE;
	}
	return 0;
}

/* The run itself: how long, what it writes, and the modes (diagnose, tune). */
static int parse_run(int c, const char *arg, bench_opts *o)
{
	float fv;
	switch (c) {
	case 'k': if (cli_int("--batches", arg, 1, 1LL << 40, &o->max_batches)) return 2; break;
	case O_AFTER: if (cli_int("--after", arg, 0, 1LL << 40, &o->after)) return 2; break;
	case O_STEP:
		if (cli_float("--step-ms", arg, 0, 1e6, &fv)) return 2;
		o->step_ms = fv;
		break;
	case O_LOG: o->log_path = arg; break;
	case O_IDS: o->ids_path = arg; break;
	case O_SAVE: o->save_path = arg; break;
	case O_RESUME: o->resume_path = arg; break;
	case O_PROGRESS: o->progress = 1; break;
	case O_NOPROGRESS: o->progress = 0; break;
	case O_JSON: o->json = 1; break;
	case O_DIAGNOSE: o->diagnose = 1; break;
	case O_REPORT: o->report_path = arg; break;
	case O_TUNE: o->tune = 1; break;
	case O_TUNEBATCH: o->tune = 1; o->tune_batch = 1; break;
	default: return NOT_MINE;
	}
	return 0;
}

/* The checks below each take one part of check(), in the order the command
 * has always checked them (the first problem found is the one reported).
 * @return : 0 when the options make sense, else 2 after a usage error. */

/* Token rows, the cache and the run's length: what goes with what. Fills
 * what follows from them (the default --seq, endless epochs). */
static int check_pairs(bench_opts *o)
{
	rf_config *cfg = &o->cfg;
	if (o->tokens && !cfg->seq_len)
		cfg->seq_len = 1024;
	if ((cfg->stride || cfg->token_dtype) && !cfg->seq_len)
		return cli_usage_error("bench", "--stride and --token-dtype go with --tokens");
	if (cfg->seq_len && (cfg->raw || o->tune))
		return cli_usage_error("bench", "--tokens has no decode stage: not with --raw or tune");
	if (cfg->cache_bytes && !(cfg->cache_dir && cfg->cache_dir[0]))
		return cli_usage_error("bench", "--cache-size goes with --cache-dir");
	if (cfg->cache_group && !(cfg->cache_dir && cfg->cache_dir[0]))
		return cli_usage_error("bench", "--cache-group goes with --cache-dir");
	if (o->max_batches >= 0 && o->have_epochs)
		return cli_usage_error("bench", "give --batches or --epochs, not both");
	if (o->max_batches >= 0)
		cfg->epochs = 0; /* endless; stopped after max_batches */
	return 0;
}

/* The modes, diagnose and tune: apart, and diagnose without the options of
 * a plain run (it runs its own stages). */
static int check_modes(const bench_opts *o)
{
	if (o->report_path && !o->diagnose && !o->tune)
		return cli_usage_error("bench", "--report goes with --diagnose (or ringfeed tune)");
	if (o->tune && o->diagnose)
		return cli_usage_error("bench", "run --diagnose and ringfeed tune apart");
	if (o->diagnose && (o->save_path || o->resume_path || o->ids_path || o->log_path))
		return cli_usage_error("bench", "--diagnose runs its own stages: no "
				       "--save-state, --resume, --ids or --log with it");
	return 0;
}

/* Order, ranks and resume (issue 6), checked for a plain run only. Fills
 * the run's length from --after. */
static int check_order(bench_opts *o)
{
	const rf_config *cfg = &o->cfg;
	if ((cfg->rank < 0) != (cfg->world_size < 0))
		return cli_usage_error("bench", "give --rank and --world together");
	if (o->after >= 0 && !o->save_path)
		return cli_usage_error("bench", "--after K stops to save: give --save-state FILE");
	if (o->after >= 0 && o->max_batches >= 0)
		return cli_usage_error("bench", "give --after or --batches, not both");
	if (o->after >= 0)
		o->max_batches = o->after; /* the epochs stay as given: --resume continues them */
	return 0;
}

/* The options together (tune and diagnose skip the checks of a plain run).
 * @return : -1 when they make sense, else 2 after a usage error. */
static int check(bench_opts *o, int argc, char **argv)
{
	if (optind < argc)
		return cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
	if (!o->cfg.source)
		return cli_usage_error("bench", "--source is required");
	if (check_pairs(o) || check_modes(o))
		return 2;
	if (o->tune || o->diagnose)
		return -1;
	return check_order(o) ? 2 : -1;
}

int bench_parse(int argc, char **argv, bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	rf_config_default(&o->cfg);
	o->max_batches = -1;
	o->after = -1;
	o->progress = isatty(STDERR_FILENO);
	int (*const parsers[])(int, const char *, bench_opts *) = {
		parse_source, parse_pipeline, parse_remote, parse_image, parse_device, parse_rows,
		parse_order, parse_run,
	};
	int c;
	while ((c = getopt_long(argc, argv, "s:b:r:c:t:p:x:e:k:h", opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		int ret = NOT_MINE;
		for (size_t i = 0; ret == NOT_MINE && i < sizeof(parsers) / sizeof(parsers[0]); i++)
			ret = parsers[i](c, optarg, o);
		if (ret == NOT_MINE)
			return cli_usage_error("bench", "bad option");
		if (ret)
			return ret;
	}
	return check(o, argc, argv);
}
