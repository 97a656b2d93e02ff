/* gen.c - `ringfeed gen`: writes a synthetic ImageFolder tree of JPEGs. */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/synth.h"


static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed gen --out DIR --count N [--classes K] [--seed S]\n"
		"                    [--quality Q] [--threads T]\n"
		"       ringfeed gen --raw --out DIR --count N --min-size A --max-size B [...]\n"
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
		"                 sizes uniform in [--min-size A, --max-size B] bytes\n");
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

int cmd_gen(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, 0, 'o' },     { "count", required_argument, 0, 'n' },
		{ "classes", required_argument, 0, 'k' }, { "seed", required_argument, 0, 's' },
		{ "quality", required_argument, 0, 'q' }, { "threads", required_argument, 0, 't' },
		{ "help", no_argument, 0, 'h' },          { "raw", no_argument, 0, 'r' },
		{ "min-size", required_argument, 0, 'a' }, { "max-size", required_argument, 0, 'b' },
		{ 0, 0, 0, 0 },
	};
	rf_synth_tree t = { .classes = 10, .seed = 1, .quality = 90, .threads = (int)sysconf(_SC_NPROCESSORS_ONLN) };
	long long v;
	int have_count = 0, c;
	int have_min = 0, have_max = 0;
	while ((c = getopt_long(argc, argv, "o:n:k:s:q:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o': t.out = optarg; break;
		case 'n':
			if (cli_int("--count", optarg, 1, 1000000000, &v)) return 2;
			t.count = (uint64_t)v;
			have_count = 1;
			break;
		case 'k':
			if (cli_int("--classes", optarg, 1, 100000, &v)) return 2;
			t.classes = (int)v;
			break;
		case 's':
			if (cli_u64("--seed", optarg, &t.seed)) return 2;
			break;
		case 'q':
			if (cli_int("--quality", optarg, 1, 100, &v)) return 2;
			t.quality = (int)v;
			break;
		case 't':
			if (cli_int("--threads", optarg, 1, 1024, &v)) return 2;
			t.threads = (int)v;
			break;
		case 'r': t.raw = 1; break;
		case 'a': if (cli_u64("--min-size", optarg, &t.min_size)) return 2; have_min = 1; break;
		case 'b': if (cli_u64("--max-size", optarg, &t.max_size)) return 2; have_max = 1; break;
		case 'h': usage(stdout); return 0;
		default: return cli_usage_error("gen", "bad option");
		}
	}
	if (optind < argc)
		return cli_usage_error("gen", "unexpected argument '%s'", argv[optind]);
	if (!t.out)
		return cli_usage_error("gen", "--out DIR is required");
	if (!have_count)
		return cli_usage_error("gen", "--count N is required");
	if (t.raw && (!have_min || !have_max))
		return cli_usage_error("gen", "--raw needs --min-size A and --max-size B");
	if (t.raw && (t.min_size > t.max_size || t.max_size > (1ull << 32)))
		return cli_usage_error("gen", "--min-size must be <= --max-size <= 4 GiB");
	if (!t.raw && (have_min || have_max))
		return cli_usage_error("gen", "--min-size and --max-size go with --raw");
	if (isatty(STDERR_FILENO))
		t.progress = progress;
	char err[512];
	if (rf_synth_imagefolder(&t, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", cli_name, err);
		return 1;
	}
	printf("wrote %llu %s in %d classes to %s\n", (unsigned long long)t.count,
	       t.raw ? "files" : "images", t.classes, t.out);
	return 0;
}
