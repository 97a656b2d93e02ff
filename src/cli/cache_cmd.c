/* cache_cmd.c - `ringfeed cache DIR [--clear]`: says what the node-local
 * cache in DIR holds (cfg.cache_dir, `bench --cache-dir`), or empties it,
 * beside loaders that may be using it (rfi_cache_stat(), rfi_cache_clear():
 * library-private, linked in from the private archive as pack's code is). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cache/node_cache.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed cache DIR [--clear] [--json]\n"
		"\n"
		"Says what the node-local cache in DIR holds (DIR/" RF_CACHE_DIR "/, the one\n"
		"that `ringfeed bench --cache-dir DIR` and cfg.cache_dir fill with the ranges\n"
		"of remote shards): its segment files and how many are being written by a\n"
		"running loader now, the ranges in them and of how many remote objects,\n"
		"their bytes and the room the files take on disk, and any damaged records\n"
		"(a checksum that fails: never served, the range is fetched again).\n"
		"\n"
		"  --clear   delete every segment that no running loader is writing, and say\n"
		"            how many were deleted and how many were left (busy); loaders\n"
		"            using the cache meanwhile go on, fetching what they miss again.\n"
		"            The folder and its FORMAT and claims files stay\n"
		"  --json    print one JSON object instead of text\n"
		"Exits 1 when DIR does not exist or cannot be read, and, with --clear, when\n"
		"it holds no cache (another program's " RF_CACHE_DIR "/ is left alone).\n");
}

/* "12.6 MB (12582912 bytes)" in a static buffer per slot k (0..1). */
static const char *bytes(uint64_t n, int k)
{
	static char buf[2][64];
	snprintf(buf[k & 1], sizeof(buf[0]), "%.1f MB (%llu bytes)", (double)n / 1e6,
		 (unsigned long long)n);
	return buf[k & 1];
}

static void print_json(const char *dir, const rf_cache_info *x)
{
	printf("{\"dir\":");
	cli_json_str(stdout, dir);
	printf(",\"found\":%s,\"segments\":%llu,\"writing\":%llu,\"ranges\":%llu,\"objects\":%llu,"
	       "\"data_bytes\":%llu,\"disk_bytes\":%llu,\"damaged\":%llu}\n", x->found ? "true" : "false",
	       (unsigned long long)x->segments, (unsigned long long)x->writing,
	       (unsigned long long)x->ranges, (unsigned long long)x->objects,
	       (unsigned long long)x->data_bytes, (unsigned long long)x->disk_bytes,
	       (unsigned long long)x->damaged);
}

static void print_text(const char *dir, const rf_cache_info *x)
{
	if (!x->found) {
		printf("%s: no ringfeed cache (no " RF_CACHE_DIR "/ with a FORMAT of this ringfeed's)\n",
		       dir);
		return;
	}
	printf("%s/" RF_CACHE_DIR ": ringfeed cache\n", dir);
	printf("  %s (%llu being written by a running loader), %s on disk\n",
	       cli_count(x->segments, "segment", 0), (unsigned long long)x->writing,
	       bytes(x->disk_bytes, 0));
	printf("  %s of %s, %s of data\n", cli_count(x->ranges, "range", 0),
	       cli_count(x->objects, "remote object", 1), bytes(x->data_bytes, 0));
	if (x->damaged)
		printf("  %s: checksum fails, never served (their ranges are fetched "
		       "again)\n", cli_count(x->damaged, "damaged record", 0));
}

int cmd_cache(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "clear", no_argument, 0, 'c' },
		{ "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int clear = 0, json = 0, c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': clear = 1; break;
		case 'j': json = 1; break;
		case 'h': usage(stdout); return 0;
		default: return cli_usage_error("cache", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("cache", "expected one DIR");
	const char *dir = argv[optind];
	char err[1024];
	if (clear) {
		uint64_t deleted, busy;
		if (rfi_cache_clear(dir, &deleted, &busy, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", cli_name, err); /* err names the path and why */
			return 1;
		}
		if (json) {
			printf("{\"dir\":");
			cli_json_str(stdout, dir);
			printf(",\"deleted\":%llu,\"busy\":%llu}\n", (unsigned long long)deleted,
			       (unsigned long long)busy);
		} else {
			printf("%s/" RF_CACHE_DIR ": deleted %s", dir, cli_count(deleted, "segment", 0));
			if (busy)
				printf("; left %s that running loaders are writing (run --clear again once "
				       "they stopped)", cli_count(busy, "segment", 1));
			printf("\n");
		}
		return 0;
	}
	rf_cache_info x;
	if (rfi_cache_stat(dir, &x, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", cli_name, err);
		return 1;
	}
	/* rfi_cache_stat() finds no cache in a DIR that is not there, as a
	 * loader would make it; asked about it by name, that is a mistake */
	struct stat st;
	if (!x.found && stat(dir, &st) != 0) {
		fprintf(stderr, "%s: cache folder '%s': %s\n", cli_name, dir, strerror(errno));
		return 1;
	}
	if (json)
		print_json(dir, &x);
	else
		print_text(dir, &x);
	return 0;
}
