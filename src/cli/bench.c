/* bench.c - `ringfeed bench`: runs the loader over a dataset and reports
 * samples/s, MB/s and where the time went (per-stage timers from rf_stats);
 * optionally as one rank of several, saving or resuming its position, and
 * writing the sample ids it delivered. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "ringfeed.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfeed bench --source DIR|MANIFEST [options]\n"
		"\n"
		"Runs the loader (Resize + CenterCrop to uint8 HWC batches) and reports\n"
		"samples/s, MB/s read and where the time went.\n"
		"\n"
		"  --source PATH     ImageFolder directory or manifest (path<TAB>label lines)\n"
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

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bad_log {
	unsigned long shown, total;
} bad_log;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	bad_log *b = user;
	(void)err;
	if (b->shown < 10) {
		fprintf(stderr, "ringfeed bench: skipped %s: %s\n", path, reason);
		b->shown++;
	}
	b->total++;
}

int cmd_bench(int argc, char **argv)
{
	enum { O_NOSHUF = 256, O_DROP, O_ONERR, O_NODIRECT, O_POOL, O_VERBOSE, O_JSON, O_IODEPTH };
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
	int json = 0, c, have_epochs = 0;
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
	if (max_batches >= 0 && have_epochs)
		return cli_usage_error("bench", "give --batches or --epochs, not both");
	if (max_batches >= 0)
		cfg.epochs = 0; /* endless; stopped after max_batches */
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
		if (cli_state_read("bench", resume_path, &resume_buf, &cfg.resume_state_len))
			return 1;
		cfg.resume_state = resume_buf;
	}
	FILE *ids = NULL;
	if (ids_path && !(ids = fopen(ids_path, "w"))) {
		fprintf(stderr, "ringfeed bench: --ids %s: %s\n", ids_path, strerror(errno));
		free(resume_buf);
		return 1;
	}

	bad_log bad = { 0, 0 };
	cfg.on_sample_error = on_bad;
	cfg.user = &bad;

	char err[512];
	rf_loader *l;
	double t0 = now_s();
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	free(resume_buf); /* read during create only */
	if (ret) {
		fprintf(stderr, "ringfeed bench: %s (%s)\n", err, rf_strerror(ret));
		if (ids)
			fclose(ids);
		return 1;
	}
	double t_created = now_s(), t_first = 0;
	unsigned long long batches = 0, samples = 0, checksum = 0;
	rf_batch *b;
	while ((max_batches < 0 || (long long)batches < max_batches) &&
	       (ret = rf_loader_next(l, &b)) == 0) {
		if (!batches)
			t_first = now_s();
		/* Touch one byte per sample so the batch is really consumed. */
		for (uint32_t i = 0; i < b->count; i++)
			checksum += b->data[i * b->sample_bytes + b->sample_bytes / 2];
		if (ids && cli_ids_write(ids, b)) {
			fprintf(stderr, "ringfeed bench: --ids %s: %s\n", ids_path, strerror(errno));
			ret = -EIO;
		}
		batches++;
		samples += b->count;
		rf_batch_release(l, b);
		if (ret)
			break;
	}
	double t_end = now_s();
	if (ids && fclose(ids) != 0 && ret >= 0) {
		fprintf(stderr, "ringfeed bench: --ids %s: %s\n", ids_path, strerror(errno));
		ret = -EIO;
	}
	if (ret < 0) {
		if (ret != -EIO)
			fprintf(stderr, "ringfeed bench: %s: %s\n", rf_strerror(ret), rf_loader_error(l));
		rf_loader_destroy(l);
		return 1;
	}
	/* Order, ranks and resume (issue 6). */
	rf_order_info order;
	rf_loader_order(l, &order);
	if (save_path) {
		if (cli_state_write("bench", l, save_path)) {
			rf_loader_destroy(l);
			return 1;
		}
		fprintf(stderr, "ringfeed bench: state saved to %s: resumes at batch %llu (epoch %llu)\n",
			save_path, (unsigned long long)order.next_batch,
			(unsigned long long)(order.next_batch / order.batches_per_epoch));
	}
	rf_stats st;
	rf_loader_stats(l, &st);
	rf_loader_destroy(l);

	double secs = t_end - t0;
	double sps = samples / secs, mbps = (double)st.bytes_read / secs / 1e6;
	double per = samples ? 1e-6 / (double)samples : 0; /* ns total -> ms per sample */
	double decode_ms = (double)st.ns_decode * per, transform_ms = (double)st.ns_transform * per;
	double busy = (double)(st.ns_decode + st.ns_transform) * 1e-9;
	double wall_threads = secs * st.threads;
	double idle_pct = wall_threads > 0 ? 100.0 * (double)st.ns_compute_idle * 1e-9 / wall_threads : 0;
	double busy_pct = wall_threads > 0 ? 100.0 * busy / wall_threads : 0;
	double wait_pct = secs > 0 ? 100.0 * (double)st.ns_read_wait * 1e-9 / secs : 0;
	double ring_us = samples ? (double)st.ns_ring_cpu * 1e-3 / (double)samples : 0;
	if (json) {
		printf("{\"loader\":\"ringfeed\",\"samples\":%llu,\"batches\":%llu,\"seconds\":%.6f,"
		       "\"samples_per_s\":%.2f,\"mb_per_s\":%.3f,\"bytes_read\":%llu,"
		       "\"bad_samples\":%llu,\"create_s\":%.6f,\"first_batch_s\":%.6f,"
		       "\"threads\":%u,\"io_depth\":%u,\"direct_io\":%u,\"fixed_buffers\":%u,"
		       "\"stages\":{\"decode_ms_per_sample\":%.4f,\"transform_ms_per_sample\":%.4f,"
		       "\"compute_busy_pct\":%.1f,\"compute_idle_pct\":%.1f,\"consumer_wait_pct\":%.1f,"
		       "\"ring_cpu_us_per_sample\":%.2f},\"checksum\":%llu}\n",
		       samples, batches, secs, sps, mbps, (unsigned long long)st.bytes_read,
		       (unsigned long long)st.bad_samples, t_created - t0,
		       t_first ? t_first - t0 : 0.0, st.threads, st.io_depth, st.direct_io,
		       st.fixed_buffers, decode_ms, transform_ms, busy_pct, idle_pct, wait_pct,
		       ring_us, checksum);
	} else {
		printf("ringfeed bench: %llu samples in %llu batches, %.3f s\n", samples, batches, secs);
		printf("  %.1f samples/s, %.1f MB/s read (%s, %s)\n", sps, mbps,
		       st.direct_io ? "O_DIRECT" : "buffered", st.fixed_buffers ? "fixed buffers" : "plain buffers");
		printf("  set-up (index + threads) %.3f s, first batch after %.3f s\n",
		       t_created - t0, t_first ? t_first - t0 : 0.0);
		printf("  where the time went (%u compute threads, io_depth %u):\n", st.threads, st.io_depth);
		printf("    decode        %7.3f ms/sample\n", decode_ms);
		printf("    resize+crop   %7.3f ms/sample\n", transform_ms);
		printf("    compute busy  %5.1f%%   idle (waiting for reads) %5.1f%%\n", busy_pct, idle_pct);
		printf("    consumer waiting for batches %5.1f%% of the run\n", wait_pct);
		printf("    ring thread CPU %.2f us/sample\n", ring_us);
		if (st.bad_samples)
			printf("  bad samples skipped and replaced: %llu\n", (unsigned long long)st.bad_samples);
	}
	/* Order, ranks and resume (issue 6). */
	if (!json) {
		printf("  order: %s sampler, rank %u of %u (%s): %llu of the %llu samples and %llu "
		       "batches per epoch\n", cli_sampler_name(order.sampler), order.rank,
		       order.world_size, order.rank_source, (unsigned long long)order.rank_samples,
		       (unsigned long long)order.epoch_samples,
		       (unsigned long long)order.batches_per_epoch);
		if (batches)
			printf("  delivered batches %llu to %llu; the next is %llu\n",
			       (unsigned long long)(order.next_batch - batches),
			       (unsigned long long)(order.next_batch - 1),
			       (unsigned long long)order.next_batch);
	}
	return 0;
}
