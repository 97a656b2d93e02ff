/* main.c - the ringfeed command: dispatches to its subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "ringfeed.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed COMMAND [OPTIONS]\n"
		"\n"
		"Commands:\n"
		"  gen     write a synthetic ImageFolder tree of JPEGs\n"
		"  bench   run the loader over a dataset and report its speed\n"
		"  index   write the index cache of a dataset\n"
		"  pack    write a dataset as tar shards (WebDataset layout), zstd optional\n"
		"  tune    search threads, io_depth and prefetch for the best samples/s\n"
		"  state   print a saved loader state (bench --save-state) in words\n"
		"  cache   say what a node-local cache folder (--cache-dir) holds, or empty it\n"
		"\n"
		"  ringfeed COMMAND --help   options of a command\n"
		"  ringfeed --version        version, and CUDA support\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("ringfeed %s\n", rf_version_string());
		return 0;
	}
	/* every message of the command, getopt's too, starts with "ringfeed CMD" */
	static char name[64];
	snprintf(name, sizeof(name), "ringfeed %s", cmd);
	cli_name = name;
	argv[1] = name;
	if (!strcmp(cmd, "gen"))
		return cmd_gen(argc - 1, argv + 1);
	if (!strcmp(cmd, "bench"))
		return cmd_bench(argc - 1, argv + 1);
	if (!strcmp(cmd, "index"))
		return cmd_index(argc - 1, argv + 1);
	if (!strcmp(cmd, "pack"))
		return cmd_pack(argc - 1, argv + 1);
	if (!strcmp(cmd, "tune"))
		return cmd_tune(argc - 1, argv + 1);
	if (!strcmp(cmd, "state"))
		return cmd_state(argc - 1, argv + 1);
	if (!strcmp(cmd, "cache"))
		return cmd_cache(argc - 1, argv + 1);
	fprintf(stderr, "ringfeed: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
