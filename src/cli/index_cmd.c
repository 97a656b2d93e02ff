/* index_cmd.c - `ringfeed index`: writes the index cache of a source, which
 * later runs load (cfg.index_cache, `ringfeed bench --index-cache`) instead
 * of walking the tree. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "source/source.h" /* --source-kind's RF_INDEX_* flag: the kinds' rows */
#include "util/util.h"
#include "ringfeed.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed index SOURCE -o FILE [--raw] [--include-hidden]\n"
		"                      [--source-kind auto|files|tar]\n"
		"\n"
		"Walks SOURCE (an ImageFolder directory or a manifest), or scans the\n"
		"headers of its tar shards (a folder, list or brace pattern of .tar),\n"
		"and writes its index to FILE. `ringfeed bench --index-cache FILE` (or\n"
		"cfg.index_cache) then loads it instead, as long as no directory of the\n"
		"tree (and no shard) changed; otherwise it walks again and rewrites FILE.\n"
		"Remote shards (http(s):// or s3:// URLs: a brace pattern, a list file of\n"
		"them, or s3://BUCKET/PREFIX/) are scanned over the network, and FILE\n"
		"records each shard's ETag: it is an index object. Put it beside the\n"
		"shards as ringfeed.index (a remote source looks for it there) or name\n"
		"it with --index-cache (a path or a URL); a source fetches it instead of\n"
		"scanning, and its reads ask for the ETags recorded (If-Match), so a\n"
		"shard changed since is refused, never half-read.\n"
		"\n"
		"  -o, --out FILE   the cache to write\n"
		"  --raw            index every regular file (raw mode), not only images\n"
		"  --include-hidden also names starting with '.' (skipped by default:\n"
		"                   .DS_Store, ._x.jpg, .nfs*, .git)\n"
		"  --source-kind K  what a SOURCE folder holds: auto (default: from its\n"
		"                   contents; both .tar files and loose files is refused),\n"
		"                   files or tar\n"
		"FILE is written only over nothing or an index cache: any other file is\n"
		"refused, never replaced.\n");
}

/* The live line on a terminal: files so far and their rate. */
static void show(void *user, uint64_t files)
{
	const struct timespec *t0 = user;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	double el = (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9;
	fprintf(stderr, "\rindex: %llu files, %.0f files/s", (unsigned long long)files,
		el > 0 ? (double)files / el : 0.0);
}

int cmd_index(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, 0, 'o' }, { "raw", no_argument, 0, 'r' },
		{ "include-hidden", no_argument, 0, 'H' },
		{ "source-kind", required_argument, 0, 'k' },
		{ "help", no_argument, 0, 'h' },      { 0, 0, 0, 0 },
	};
	const char *out = NULL;
	int raw = 0, c;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'r': raw |= RF_INDEX_RAW; break;
		case 'H': raw |= RF_INDEX_HIDDEN; break;
		case 'k': {
			int k;
			if (cli_enum("--source-kind", RF_ENUM_SOURCE_KIND, optarg, &k))
				return 2;
			raw = (raw & ~rfi_source_kind_modes()) | rfi_source_kind_mode((rf_source_kind)k);
			break;
		}
		case 'h': usage(stdout); return 0;
		default: return cli_usage_error("index", "bad option");
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error("index", "expected one SOURCE");
	if (!out)
		return cli_usage_error("index", "-o FILE is required");
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	char err[512];
	uint64_t files = 0;
	int ret = rf_index_write(argv[optind], raw, out, &files, isatty(STDERR_FILENO) ? show : NULL,
				 &t0, err, sizeof(err));
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "\n");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ret) {
		cli_fail(err, ret);
		return 1;
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	char *shown = rfi_redact_dup(argv[optind]); /* a URL's password is never printed */
	printf("indexed %s of %s in %.3f s into %s (peak RSS %ld KiB)\n",
	       cli_count(files, "file", 0), shown ? shown : "the source",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, out,
	       ru.ru_maxrss);
	free(shown);
	return 0;
}
