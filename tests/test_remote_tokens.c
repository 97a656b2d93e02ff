/* test_remote_tokens.c - token shards (.bin, .bin.zst) read over http:
 * shards written here (llm.c's layout; the .bin.zst after token_shard.h's,
 * with libzstd) are served by an nginx the test starts on 127.0.0.1 and
 * read both from their folder and from their URLs with the same config:
 * the same batches byte for byte, shuffled and in llm.c's order (read in
 * chunks), from a brace pattern, one URL, a list of URLs, an s3:// pattern
 * and an s3:// folder's listing; resume over http is exact; two ranks
 * over http split the windows; a shard the server lacks, or a damaged one,
 * fails create naming its URL and what is wrong; a server that trickles
 * a header in (tests/fault_server.py) holds create no longer than
 * remote_timeout_ms; a shard replaced after create is refused (If-Match),
 * never read. Skipped where the build has no
 * libcurl or nginx is missing (scripts/deps.sh installs both). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "remote/http.h"
#include "ringfeed.h"
#include "testutil.h"

enum { NSHARDS = 5, T = 63, VOCAB = 50257 };
/* 79, 47, 0 (shorter than a window), 111 and 17 windows of T + 1 tokens:
 * 254, an even count, so that two ranks that drop their tail cover all */
static const uint32_t counts[NSHARDS] = { 5000, 3000, 10, 7001, 1088 };
#define WINDOWS 254u

static char *dir;
static char zdir[4096], z7dir[4096];
static int port;

/* Token j of shard i (uint16: GPT-2's layout), different everywhere. */
static uint16_t token(int i, uint32_t j)
{
	return (uint16_t)((i * 7919u + j * 31u + j / 5) % VOCAB);
}

/* dir/train_%06d.bin: llm.c's write_datafile, 256 int32 header words
 * (magic, version, count) and the tokens. */
static void write_bin(const char *d, int i, uint32_t n)
{
	size_t len = 1024 + (size_t)n * 2;
	uint8_t *b = calloc(1, len);
	int32_t hdr[3] = { 20240520, 1, (int32_t)n };
	memcpy(b, hdr, sizeof(hdr));
	for (uint32_t j = 0; j < n; j++) {
		uint16_t t = token(i, j);
		memcpy(b + 1024 + 2 * (size_t)j, &t, 2);
	}
	char rel[64];
	snprintf(rel, sizeof(rel), "train_%06d.bin", i);
	tu_write(d, rel, b, len);
	free(b);
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* little-endian hosts only, as the library */
}

/* dir/train_i.bin -> zd/train_i.bin.zst with frames of F tokens. */
static void write_zst(const char *zd, uint32_t F)
{
	tu_run("mkdir -p '%s'", zd);
	for (int i = 0; i < NSHARDS; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "train_%06d.bin", i);
		size_t len;
		uint8_t *b = tu_read(dir, rel, &len);
		uint32_t count = counts[i], nf = (count + F - 1) / F;
		size_t table = 8 * ((size_t)nf + 1), cap = 1024 + table;
		for (uint32_t k = 0; k < nf; k++)
			cap += ZSTD_compressBound((size_t)F * 2);
		uint8_t *z = calloc(1, cap);
		put32(z, 20261124);
		put32(z + 4, 1);
		put32(z + 8, 2);
		put32(z + 12, 20240520);
		put32(z + 16, F);
		put32(z + 20, nf);
		put32(z + 24, count);
		uint64_t off = 1024 + table;
		for (uint32_t k = 0; k <= nf; k++) {
			memcpy(z + 1024 + 8 * (size_t)k, &off, 8);
			if (k == nf)
				break;
			uint64_t first = (uint64_t)k * F, n = count - first < F ? count - first : F;
			size_t r = ZSTD_compress(z + off, cap - off, b + 1024 + first * 2, n * 2, 3);
			cr_assert(!ZSTD_isError(r));
			off += r;
		}
		snprintf(rel, sizeof(rel), "train_%06d.bin.zst", i);
		tu_write(zd, rel, z, off);
		free(z);
		free(b);
	}
}

static void setup(void)
{
	if (!rfi_http_available())
		cr_skip_test("this ringfeed was built without libcurl (meson feature 'remote'; "
			     "scripts/deps.sh installs libcurl4-openssl-dev)");
	dir = tu_tmpdir("rtokens");
	for (int i = 0; i < NSHARDS; i++)
		write_bin(dir, i, counts[i]);
	/* frames of 500 tokens: a window in one or two; of 7: in ten */
	snprintf(zdir, sizeof(zdir), "%s/z", dir);
	snprintf(z7dir, sizeof(z7dir), "%s/z7", dir);
	write_zst(zdir, 500);
	write_zst(z7dir, 7);
	port = tu_nginx_start(dir);
	if (!port)
		cr_skip_test("nginx is not installed (scripts/deps.sh installs nginx-light)");
}

static void teardown(void)
{
	tu_nginx_stop();
	if (dir)
		tu_rmrf(dir);
	free(dir);
}

TestSuite(remote_tokens, .init = setup, .fini = teardown, .timeout = 120);

/* The URLs of the shards under folder ("" or "z/"): a brace pattern. */
static void pattern(char *buf, size_t len, const char *folder, const char *ext)
{
	snprintf(buf, len, "http://127.0.0.1:%d/%strain_{000000..%06d}%s", port, folder,
		 NSHARDS - 1, ext);
}

static void config(rf_config *cfg, const char *source, int shuffle)
{
	tu_config(cfg, source);
	cfg->seq_len = T;
	cfg->epochs = 2;
	cfg->seed = 11;
	cfg->batch_size = 8;
	cfg->shuffle = shuffle; /* 0: llm.c's order, read in chunks of the shards */
}

/* remote and local (sources) deliver the same bytes and windows, and
 * remote's went over http. */
static void same_as_local(const char *local_src, const char *remote_src, int shuffle)
{
	rf_config local, remote;
	config(&local, local_src, shuffle);
	config(&remote, remote_src, shuffle);
	size_t nl, nr, il, ir;
	rf_stats sl, sr;
	uint8_t *bl = tu_drain_bytes(&local, &nl, &sl), *br = tu_drain_bytes(&remote, &nr, &sr);
	uint64_t *idl = tu_drain_ids(&local, &il), *idr = tu_drain_ids(&remote, &ir);
	cr_assert_gt(il, 0);
	cr_assert_eq(il, ir, "%s: %zu windows, the folder %zu", remote_src, ir, il);
	cr_assert(!memcmp(idl, idr, il * sizeof(uint64_t)), "%s: the same windows in the same order",
		  remote_src);
	cr_assert_eq(nl, nr);
	cr_assert_eq(nl, il * (T + 1) * 2, "uint16 tokens, as stored");
	cr_assert(!memcmp(bl, br, nl), "%s: the same bytes", remote_src);
	cr_assert_eq(sr.bad_samples, 0);
	cr_assert_gt(sr.http_requests, 0, "%s: read over http", remote_src);
	cr_assert_eq(sr.http_errors, 0);
	free(bl);
	free(br);
	free(idl);
	free(idr);
}

Test(remote_tokens, bin_shards_over_http_give_the_local_batches)
{
	char urls[256];
	pattern(urls, sizeof(urls), "", ".bin");
	for (int shuffle = 0; shuffle < 2; shuffle++)
		same_as_local(dir, urls, shuffle);
	tu_assert_no_leaks();
}

Test(remote_tokens, zst_shards_over_http_give_the_local_batches)
{
	char urls[256], urls7[256];
	pattern(urls, sizeof(urls), "z/", ".bin.zst");
	pattern(urls7, sizeof(urls7), "z7/", ".bin.zst");
	for (int shuffle = 0; shuffle < 2; shuffle++) {
		same_as_local(zdir, urls, shuffle);
		same_as_local(dir, urls, shuffle); /* and the tokens of the .bin */
		same_as_local(z7dir, urls7, shuffle);
	}
	tu_assert_no_leaks();
}

/* One URL is a source of one shard; a list file of URLs (a query after
 * a name allowed) is the shards it lists. An http folder (no listing to
 * read) and a glob of URLs are refused, saying what is taken. */
Test(remote_tokens, one_url_and_a_list_of_urls_are_sources_too)
{
	char one_local[4200], one[256];
	snprintf(one_local, sizeof(one_local), "%s/z/train_000003.bin.zst", dir);
	snprintf(one, sizeof(one), "http://127.0.0.1:%d/z/train_000003.bin.zst", port);
	same_as_local(one_local, one, 1);

	char list[4200];
	snprintf(list, sizeof(list), "%s/urls.txt", dir);
	FILE *f = fopen(list, "w");
	cr_assert(f);
	fprintf(f, "# the shards\n");
	for (int i = 0; i < NSHARDS; i++)
		fprintf(f, "http://127.0.0.1:%d/train_%06d.bin%s\n", port, i, i == 2 ? "?v=2" : "");
	fclose(f);
	same_as_local(dir, list, 0);

	char folder[128], glob[128];
	snprintf(folder, sizeof(folder), "http://127.0.0.1:%d/", port);
	snprintf(glob, sizeof(glob), "http://127.0.0.1:%d/train_*.bin", port);
	const char *refused[] = { folder, glob };
	for (int k = 0; k < 2; k++) {
		rf_config cfg;
		config(&cfg, refused[k], 1);
		rf_loader *l;
		char err[1024];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_EINDEX, "%s", err);
		cr_assert(strstr(err, refused[k]) && strstr(err, "brace pattern") &&
			  strstr(err, "list file"), "%s", err);
	}
	tu_assert_no_leaks();
}

/* A loader over http stopped after k batches and resumed from its state
 * (over http, with other threads and depths) gives the rest of the
 * folder's batches, shuffled .bin and .bin.zst in llm.c's order. */
Test(remote_tokens, resume_over_http_is_exact)
{
	char bin[256], zst[256];
	pattern(bin, sizeof(bin), "", ".bin");
	pattern(zst, sizeof(zst), "z/", ".bin.zst");
	const char *local_src[] = { dir, zdir }, *remote_src[] = { bin, zst };
	for (int s = 0; s < 2; s++) {
		rf_config local, remote;
		config(&local, local_src[s], s == 0);
		config(&remote, remote_src[s], s == 0);
		tu_assert_resumes_exactly(&local, &remote, "resumed over http");
	}
	tu_assert_no_leaks();
}

/* Two ranks over http: each gets what it gets from the folder, the two
 * share no window, and together they have every one. */
Test(remote_tokens, two_ranks_over_http_split_the_windows)
{
	char urls[256];
	pattern(urls, sizeof(urls), "z/", ".bin.zst");
	for (int shuffle = 0; shuffle < 2; shuffle++) {
		uint8_t seen[WINDOWS] = { 0 };
		size_t total = 0;
		for (int rank = 0; rank < 2; rank++) {
			rf_config local, remote;
			config(&local, zdir, shuffle);
			config(&remote, urls, shuffle);
			local.epochs = remote.epochs = 1;
			local.rank = remote.rank = rank;
			local.world_size = remote.world_size = 2;
			local.rank_tail = remote.rank_tail = RF_RANK_TAIL_DROP;
			size_t nl, nr;
			uint64_t *idl = tu_drain_ids(&local, &nl), *idr = tu_drain_ids(&remote, &nr);
			cr_assert_eq(nr, WINDOWS / 2);
			cr_assert_eq(nl, nr);
			cr_assert(!memcmp(idl, idr, nl * sizeof(uint64_t)), "rank %d: as the folder's",
				  rank);
			for (size_t i = 0; i < nr; i++) {
				cr_assert_lt(idr[i], WINDOWS);
				cr_assert_eq(seen[idr[i]]++, 0, "window %llu on two ranks",
					     (unsigned long long)idr[i]);
			}
			total += nr;
			free(idl);
			free(idr);
		}
		cr_assert_eq(total, WINDOWS, "every window on a rank");
	}
	tu_assert_no_leaks();
}

/* create fails on source with code, naming what and saying why. */
static void assert_refused(const char *source, int code, const char *what, const char *why)
{
	rf_config cfg;
	config(&cfg, source, 1);
	rf_loader *l = (rf_loader *)1;
	char err[1024];
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	cr_assert_eq(ret, code, "%s: %d (%s), not %d", source, ret, err, code);
	cr_assert_null(l);
	cr_assert(strstr(err, what), "the message names %s: %s", what, err);
	cr_assert(strstr(err, why), "the message says '%s': %s", why, err);
}

Test(remote_tokens, a_missing_or_damaged_shard_fails_create_naming_its_url)
{
	char src[256], url[256];
	snprintf(src, sizeof(src), "http://127.0.0.1:%d/train_{000000..%06d}.bin", port, NSHARDS);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/train_%06d.bin", port, NSHARDS);
	assert_refused(src, -ENOENT, url, "HTTP 404");
	snprintf(src, sizeof(src), "http://127.0.0.1:%d/z/train_{000000..%06d}.bin.zst", port,
		 NSHARDS);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/z/train_%06d.bin.zst", port, NSHARDS);
	assert_refused(src, -ENOENT, url, "HTTP 404");

	/* cut short, as the local copy: the header's count says more */
	tu_mkdirs(dir, "cut");
	tu_run("head -c 3000 '%s/train_000000.bin' > '%s/cut/train_000000.bin' && "
	       "head -c 1030 '%s/z/train_000001.bin.zst' > '%s/cut/train_000001.bin.zst' && "
	       ": > '%s/cut/train_000002.bin'", dir, dir, dir, dir, dir);
	const char *cut[] = { "train_000000.bin", "train_000001.bin.zst", "train_000002.bin" };
	for (int k = 0; k < 3; k++) {
		char local[4200];
		snprintf(local, sizeof(local), "%s/cut/%s", dir, cut[k]);
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/cut/%s", port, cut[k]);
		assert_refused(local, RF_EINDEX, cut[k], "truncated");
		assert_refused(url, RF_EINDEX, url, "truncated");
	}

	/* nothing listening: the URL and the connection's failure */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/train_000000.bin", tu_free_port());
	assert_refused(url, -ECONNREFUSED, url, "onnect");
	tu_assert_no_leaks();
}

/* The shards' headers trickled in, 16 bytes every 0.5 s (a KiB in 32 s,
 * never a stall): create fails in remote_timeout_ms (2 s here), every try
 * of the request included, naming the URL and that time; it took 30 s a
 * try, four tries a shard. The test's own timeout bounds it. */
Test(remote_tokens, a_trickling_server_holds_create_no_longer_than_remote_timeout,
     .timeout = 60)
{
	tu_fault fs;
	int fport = tu_fault_server_start(&fs, dir, "--trickle-path train_");
	if (!fport)
		cr_skip_test("python3 is missing: tests/fault_server.py cannot run");
	char src[256], url[256];
	snprintf(src, sizeof(src), "http://127.0.0.1:%d/train_{000000..%06d}.bin", fport,
		 NSHARDS - 1);
	rf_config cfg;
	config(&cfg, src, 1);
	cfg.remote_timeout_ms = 2000;
	rf_loader *l = NULL;
	char err[1024] = "";
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	tu_fault_stop(&fs);
	cr_assert_lt(ret, 0, "create succeeded");
	cr_assert_null(l);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/train_000000.bin", fport);
	cr_assert(strstr(err, url), "the message names %s: %s", url, err);
	cr_assert(strstr(err, "remote_timeout_ms = 2000"), "the message says the time: %s", err);
	tu_assert_no_leaks();
}

/* s3:// shards, of a store of its own (AWS_ENDPOINT_URL: path-style,
 * ENDPOINT/BUCKET/KEY, signed requests nginx ignores): a brace pattern,
 * and a folder listed (ListObjectsV2; nginx answers it with the bucket's
 * index.html, a listing that also holds an object of another kind). */
Test(remote_tokens, s3_pattern_and_listing_give_the_local_batches)
{
	tu_mkdirs(dir, "tok/p");
	tu_run("cp '%s'/z/*.bin.zst '%s/tok/p/' && printf 'notes' > '%s/tok/p/README.txt'", dir,
	       dir, dir);
	char listing[4200];
	snprintf(listing, sizeof(listing), "%s/tok/index.html", dir);
	FILE *f = fopen(listing, "w");
	cr_assert(f);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult><Name>tok</Name>"
		"<Prefix>p/</Prefix><KeyCount>%d</KeyCount><IsTruncated>false</IsTruncated>",
		NSHARDS + 1);
	fprintf(f, "<Contents><Key>p/README.txt</Key><Size>5</Size></Contents>");
	for (int i = 0; i < NSHARDS; i++)
		fprintf(f, "<Contents><Key>p/train_%06d.bin.zst</Key><Size>1</Size></Contents>", i);
	fprintf(f, "</ListBucketResult>\n");
	fclose(f);
	tu_s3_env(port, NULL);
	char src[128];
	snprintf(src, sizeof(src), "s3://tok/p/train_{000000..%06d}.bin.zst", NSHARDS - 1);
	same_as_local(zdir, src, 1);
	same_as_local(zdir, "s3://tok/p/", 0);
	/* a key the bucket lacks: its s3:// name and URL, and the 404 */
	snprintf(src, sizeof(src), "s3://tok/p/train_{000000..%06d}.bin.zst", NSHARDS);
	char url[128];
	snprintf(url, sizeof(url), "s3://tok/p/train_%06d.bin.zst (http://127.0.0.1:%d/tok/p/",
		 NSHARDS, port);
	assert_refused(src, -ENOENT, url, "HTTP 404");
	tu_assert_no_leaks();
}

/* Every read of a run asks for the object whose header was read
 * (If-Match): a shard replaced after create gives bad windows, reported
 * naming its URL, never the new bytes. */
typedef struct stale_log {
	int n;
	char path[512], reason[256];
} stale_log;

/* on_sample_error: called under the loader's report lock, read after
 * destroy has joined its threads. */
static void on_stale(void *user, const char *path, int err, const char *reason)
{
	stale_log *s = user;
	(void)err;
	if (s->n++)
		return;
	snprintf(s->path, sizeof(s->path), "%s", path);
	snprintf(s->reason, sizeof(s->reason), "%s", reason);
}

Test(remote_tokens, a_shard_replaced_after_create_is_not_read)
{
	char urls[256];
	pattern(urls, sizeof(urls), "", ".bin");
	rf_config cfg;
	config(&cfg, urls, 1);
	stale_log bad = { 0 };
	cfg.on_sample_error = on_stale;
	cfg.user = &bad;
	cfg.prefetch = 1;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	/* shard 0 as large, all its tokens 65535 (above GPT-2's vocabulary),
	 * with another mtime: another ETag for nginx */
	size_t len = 1024 + (size_t)counts[0] * 2;
	uint8_t *b = malloc(len);
	memset(b, 0xff, len);
	memset(b, 0, 1024);
	int32_t hdr[3] = { 20240520, 1, (int32_t)counts[0] };
	memcpy(b, hdr, sizeof(hdr));
	tu_write(dir, "train_000000.bin.new", b, len);
	free(b);
	tu_run("cd '%s' && touch -d '2001-02-03 04:05:06' train_000000.bin.new && "
	       "mv train_000000.bin.new train_000000.bin", dir);
	rf_batch *batch;
	int ret;
	size_t windows = 0;
	while ((ret = rf_loader_next(l, &batch)) == 0) {
		for (size_t i = 0; i < (size_t)batch->count * (T + 1); i++) {
			uint16_t t;
			memcpy(&t, batch->data + 2 * i, 2);
			cr_assert_lt(t, VOCAB, "a token of the replaced shard was delivered");
		}
		windows += batch->count;
		rf_batch_release(l, batch);
	}
	cr_assert_eq(ret, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(windows, 2 * WINDOWS, "every place filled (bad windows replaced)");
	rf_stats st;
	rf_loader_stats(l, &st);
	rf_loader_destroy(l);
	cr_assert_gt(st.bad_samples, 0, "the replaced shard's windows are bad");
	cr_assert_eq((uint64_t)bad.n, st.bad_samples);
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/train_000000.bin:", port);
	cr_assert(strstr(bad.path, url), "%s", bad.path);
	cr_assert(strstr(bad.reason, "412"), "%s", bad.reason);
	tu_assert_no_leaks();
}
