/* test_remote.c - tar shards read over http (issue 25's first source): the
 * same shards from a folder and from an nginx the test starts on 127.0.0.1
 * (a brace pattern of URLs) give the same batches, byte for byte, labels
 * and ids and fields included, with random and sequential shard access and
 * in raw mode; a shard the server does not have fails create naming its
 * URL; an index cache (a local file, or an index object beside the shards
 * fetched by URL) spares the scan and gives the same batches, and a shard
 * changed on the server after it was indexed is refused (its ETag, If-Match),
 * never half-read; exact resume and ranks over http. Skipped where the build has no
 * libcurl or nginx is missing (scripts/deps.sh installs both). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/http.h"
#include "pack/pack.h"
#include "ringfeed.h"
#include "testutil.h"

enum { SHARDS = 3, PER_SHARD = 9 };

static char *dir;
static char shards[4096], urls[512];
static int port;

/* SHARDS tar shards of PER_SHARD samples: KEY.jpg, KEY.cls, KEY.txt. */
static void setup(void)
{
	if (!rfi_http_available())
		cr_skip_test("this ringfeed was built without libcurl (meson feature 'remote'; "
			     "scripts/deps.sh installs libcurl4-openssl-dev)");
	dir = tu_tmpdir("remote");
	for (int s = 0; s < SHARDS; s++)
		for (int k = 0; k < PER_SHARD; k++) {
			int i = s * PER_SHARD + k;
			char rel[64], text[64];
			snprintf(rel, sizeof(rel), "src%d/%06d.jpg", s, i);
			tu_jpeg(dir, rel, 40 + i % 13, 30 + i % 7, (uint64_t)i);
			snprintf(rel, sizeof(rel), "src%d/%06d.cls", s, i);
			int n = snprintf(text, sizeof(text), "%d", i % 4);
			tu_write(dir, rel, text, (size_t)n);
			snprintf(rel, sizeof(rel), "src%d/%06d.txt", s, i);
			n = snprintf(text, sizeof(text), "caption %d", i);
			tu_write(dir, rel, text, (size_t)n);
		}
	tu_mkdirs(dir, "shards");
	for (int s = 0; s < SHARDS; s++)
		tu_run("cd '%s/src%d' && tar --format=ustar -cf '%s/shards/shard-%02d.tar' *", dir, s,
		       dir, s);
	snprintf(shards, sizeof(shards), "%s/shards", dir);
	port = tu_nginx_start(shards);
	if (!port)
		cr_skip_test("nginx is not installed (scripts/deps.sh installs nginx-light)");
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d/shard-{00..%02d}.tar", port, SHARDS - 1);
}

static void teardown(void)
{
	tu_nginx_stop();
	if (dir)
		tu_rmrf(dir);
	free(dir);
}

TestSuite(remote, .init = setup, .fini = teardown, .timeout = 120);

static void config(rf_config *cfg, const char *source, int raw, int sequential)
{
	tu_config(cfg, source);
	cfg->epochs = 2;
	cfg->seed = 11;
	cfg->raw = raw;
	cfg->fields = raw ? NULL : "txt";
	cfg->batch_size = 4;
	cfg->shard_access = sequential ? RF_SHARD_SEQUENTIAL : RF_SHARD_RANDOM;
	cfg->shuffle_block = 5;
}

/* Source (remote) and the local copy deliver the same bytes and ids. */
static void same_as_local(const char *source, int raw, int sequential)
{
	rf_config local, remote;
	config(&local, shards, raw, sequential);
	config(&remote, source, raw, sequential);
	size_t nl, nr, il, ir;
	rf_stats sl, sr;
	uint8_t *bl = tu_drain_bytes(&local, &nl, &sl), *br = tu_drain_bytes(&remote, &nr, &sr);
	uint64_t *idl = tu_drain_ids(&local, &il), *idr = tu_drain_ids(&remote, &ir);
	cr_assert_eq(il, 2 * SHARDS * PER_SHARD);
	cr_assert_eq(il, ir);
	cr_assert(!memcmp(idl, idr, il * sizeof(uint64_t)), "the same samples in the same order");
	cr_assert_eq(nl, nr);
	cr_assert(!memcmp(bl, br, nl), "the same bytes");
	cr_assert_eq(sr.bad_samples, 0);
	free(bl);
	free(br);
	free(idl);
	free(idr);
}

Test(remote, shards_over_http_give_the_local_batches)
{
	same_as_local(urls, 0, 0);
}

Test(remote, sequential_access_over_http_gives_the_local_batches)
{
	same_as_local(urls, 0, 1);
}

Test(remote, raw_shards_over_http_give_the_local_bytes)
{
	same_as_local(urls, 1, 0);
}

Test(remote, fields_over_http_are_the_members)
{
	rf_config cfg;
	config(&cfg, urls, 0, 0);
	cfg.epochs = 1;
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int seen = 0;
	while (rf_loader_next(l, &b) == 0) {
		rf_field f;
		cr_assert_eq(rf_batch_field(b, "txt", &f), 0);
		for (uint32_t i = 0; i < b->count; i++) {
			char want[64];
			int n = snprintf(want, sizeof(want), "caption %d", (int)b->ids[i]);
			cr_assert_eq(f.offsets[i + 1] - f.offsets[i], (uint64_t)n);
			cr_assert(!memcmp(f.bytes + f.offsets[i], want, (size_t)n));
		}
		seen += (int)b->count;
		rf_batch_release(l, b);
	}
	cr_assert_eq(seen, SHARDS * PER_SHARD);
	rf_loader_destroy(l);
}

Test(remote, a_shard_the_server_lacks_fails_create_naming_it)
{
	char missing[512];
	snprintf(missing, sizeof(missing), "http://127.0.0.1:%d/shard-{00..%02d}.tar", port, SHARDS);
	rf_config cfg;
	config(&cfg, missing, 0, 0);
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), -ENOENT, "%s", err);
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/shard-%02d.tar", port, SHARDS);
	cr_assert(strstr(err, url) && strstr(err, "404"), "%s", err);
}

/* Stopped after k batches and resumed from its state (with other threads
 * and depths), a loader over http gives the rest of the folder's batches,
 * in both access modes. */
Test(remote, resume_over_http_is_exact)
{
	for (int sequential = 0; sequential < 2; sequential++) {
		rf_config local, remote;
		config(&local, shards, 0, sequential);
		config(&remote, urls, 0, sequential);
		tu_assert_resumes_exactly(&local, &remote, "resumed over http");
	}
}

/* Three ranks over http: each gets what it gets from the folder, no
 * sample is on two, and together they have every one. */
Test(remote, ranks_over_http_split_the_samples)
{
	for (int sequential = 0; sequential < 2; sequential++) {
		uint8_t seen[SHARDS * PER_SHARD] = { 0 };
		size_t total = 0;
		for (int rank = 0; rank < 3; rank++) {
			rf_config local, remote;
			config(&local, shards, 0, sequential);
			config(&remote, urls, 0, sequential);
			local.epochs = remote.epochs = 1;
			local.rank = remote.rank = rank;
			local.world_size = remote.world_size = 3;
			local.rank_tail = remote.rank_tail = RF_RANK_TAIL_DROP;
			size_t nl, nr;
			uint64_t *idl = tu_drain_ids(&local, &nl), *idr = tu_drain_ids(&remote, &nr);
			cr_assert_eq(nl, nr);
			cr_assert(!memcmp(idl, idr, nl * sizeof(uint64_t)), "rank %d: as the folder's",
				  rank);
			for (size_t i = 0; i < nr; i++) {
				cr_assert_lt(idr[i], SHARDS * PER_SHARD);
				cr_assert_eq(seen[idr[i]]++, 0, "sample %llu on two ranks",
					     (unsigned long long)idr[i]);
			}
			total += nr;
			free(idl);
			free(idr);
		}
		cr_assert_eq(total, SHARDS * PER_SHARD, "every sample on a rank");
	}
}

/* What config gives, and whether its index came from its cache. */
static uint8_t *drain_cached(const rf_config *cfg, size_t *n, int *cached)
{
	rf_stats st;
	uint8_t *b = tu_drain_bytes(cfg, n, &st);
	*cached = (int)st.index_cached;
	cr_assert_eq(st.bad_samples, 0);
	return b;
}

Test(remote, an_index_cache_or_object_spares_the_scan_and_gives_the_local_batches)
{
	rf_config local, remote;
	config(&local, shards, 0, 0);
	size_t nl, n;
	rf_stats sl;
	uint8_t *want = tu_drain_bytes(&local, &nl, &sl), *got;
	int cached;
	/* a local cache of the remote source: scanned, kept, then loaded */
	char cache[4200];
	snprintf(cache, sizeof(cache), "%s/remote.idx", dir);
	config(&remote, urls, 0, 0);
	remote.index_cache = cache;
	for (int run = 0; run < 2; run++) {
		got = drain_cached(&remote, &n, &cached);
		cr_assert_eq(cached, run, "run %d", run);
		cr_assert(n == nl && !memcmp(got, want, n), "run %d: the local batches", run);
		free(got);
	}
	/* an index object beside the shards (`ringfeed index` of the URLs),
	 * fetched by URL: never rewritten */
	char object[4200], object_url[256], err[512];
	snprintf(object, sizeof(object), "%s/index.rfi", shards);
	cr_assert_eq(rf_index_write(urls, 0, object, NULL, NULL, NULL, err, sizeof(err)), 0, "%s",
		     err);
	snprintf(object_url, sizeof(object_url), "http://127.0.0.1:%d/index.rfi", port);
	remote.index_cache = object_url;
	got = drain_cached(&remote, &n, &cached);
	cr_assert_eq(cached, 1);
	cr_assert(n == nl && !memcmp(got, want, n), "the local batches");
	free(got);
	/* of other shards: scanned instead */
	char fewer[256];
	snprintf(fewer, sizeof(fewer), "http://127.0.0.1:%d/shard-{00..%02d}.tar", port, SHARDS - 2);
	config(&remote, fewer, 0, 0);
	remote.index_cache = object_url;
	free(drain_cached(&remote, &n, &cached));
	cr_assert_eq(cached, 0);
	free(want);
}

/* The index object `ringfeed pack` writes beside its shards (built from the
 * local copies: no ETags) is found by a remote source of them without
 * being named; its shards' sizes are checked, and one that differs makes
 * the source scan instead. */
Test(remote, the_index_object_beside_the_shards_is_found_and_checked)
{
	rf_config local, remote;
	config(&local, shards, 0, 0);
	config(&remote, urls, 0, 0);
	size_t nl, n;
	rf_stats sl;
	uint8_t *want = tu_drain_bytes(&local, &nl, &sl), *got;
	char object[4200], err[512];
	snprintf(object, sizeof(object), "%s/ringfeed.index", shards);
	cr_assert_eq(rf_index_write(shards, RF_INDEX_TAR, object, NULL, NULL, NULL, err,
				    sizeof(err)), 0, "%s", err);
	int cached;
	got = drain_cached(&remote, &n, &cached);
	cr_assert_eq(cached, 1, "found beside the shards");
	cr_assert(n == nl && !memcmp(got, want, n), "the local batches");
	free(got);
	/* the served shard-02 grows by two zero blocks (still the same samples):
	 * not the shard indexed, so scanned */
	tu_run("head -c 1024 /dev/zero >> '%s/shard-02.tar'", shards);
	got = drain_cached(&remote, &n, &cached);
	cr_assert_eq(cached, 0, "another size than indexed: scanned");
	cr_assert(n == nl && !memcmp(got, want, n), "the local batches");
	free(got);
	free(want);
}

/* A pack with zstd members and a dictionary, served: its zstd.dict is
 * fetched from beside the shards, its ringfeed.index spares the scan, and
 * the batches are the folder's. */
Test(remote, a_zstd_pack_with_a_dictionary_over_http_gives_the_local_batches)
{
	char *tree = tu_tree("remote-tree", 3, 12);
	char out[4200], err[512];
	snprintf(out, sizeof(out), "%s/zd", shards);
	rf_pack_opts opts = { .source = tree, .out = out, .shard_size = 64 << 10, .compress = 1,
			      .level = 3, .dict_size = 4096 };
	rf_pack_result res;
	cr_assert_eq(rfi_pack_run(&opts, &res, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(res.shards, 1);
	cr_assert_gt(res.dict_bytes, 0);
	char url[256];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/zd/shard-{000000..%06u}.tar", port,
		 res.shards - 1);
	rf_config local, remote;
	tu_config(&local, out);
	tu_config(&remote, url);
	local.seed = remote.seed = 5;
	local.epochs = remote.epochs = 1;
	size_t nl, nr;
	rf_stats sl, sr;
	uint8_t *bl = tu_drain_bytes(&local, &nl, &sl), *br = tu_drain_bytes(&remote, &nr, &sr);
	cr_assert_eq(sr.bad_samples, 0, "every member decompressed with the dictionary");
	cr_assert_eq(sr.index_cached, 1, "ringfeed.index found beside the shards");
	cr_assert(nl == nr && !memcmp(bl, br, nl), "the folder's batches");
	free(bl);
	free(br);
	tu_rmrf(tree);
	free(tree);
}

Test(remote, a_shard_replaced_after_indexing_is_refused_never_half_read)
{
	char object[4200], object_url[256], err[512];
	snprintf(object, sizeof(object), "%s/index.rfi", shards);
	cr_assert_eq(rf_index_write(urls, 0, object, NULL, NULL, NULL, err, sizeof(err)), 0, "%s",
		     err);
	snprintf(object_url, sizeof(object_url), "http://127.0.0.1:%d/index.rfi", port);
	/* shard-01's bytes become shard-00's (the same size; nginx's ETag is its
	 * mtime and size, so a new one) */
	tu_run("cp '%s/shard-00.tar' '%s/new.tar' && touch -d '2001-01-01' '%s/new.tar' && "
	       "mv '%s/new.tar' '%s/shard-01.tar'", shards, shards, shards, shards, shards);
	rf_config cfg;
	config(&cfg, urls, 0, 0);
	cfg.index_cache = object_url;
	cfg.epochs = 1;
	cfg.on_error = RF_ON_ERROR_FAIL;
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int rc;
	while ((rc = rf_loader_next(l, &b)) == 0)
		rf_batch_release(l, b);
	cr_assert_eq(rc, RF_EBADSAMPLE, "%d: %s", rc, rf_loader_error(l));
	cr_assert(strstr(rf_loader_error(l), "/shard-01.tar") &&
		  strstr(rf_loader_error(l), "changed on the server"), "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	/* skipped: every sample of shard-01 is bad, none of its new bytes delivered */
	cfg.on_error = RF_ON_ERROR_SKIP;
	size_t n;
	uint64_t *ids = tu_drain_ids(&cfg, &n);
	cr_assert_eq(n, SHARDS * PER_SHARD);
	for (size_t i = 0; i < n; i++)
		cr_assert(ids[i] / PER_SHARD != 1, "sample %llu of the replaced shard",
			  (unsigned long long)ids[i]);
	free(ids);
	rf_stats st;
	size_t nb;
	free(tu_drain_bytes(&cfg, &nb, &st));
	cr_assert_eq(st.bad_samples, PER_SHARD);
}

/* Over TLS: a certificate from a CA the system does not know is refused,
 * naming the URL and what to do; with that CA named (CURL_CA_BUNDLE), the
 * same batches as the local copy. */
Test(remote, https_verifies_the_certificate_and_gives_the_local_batches)
{
	tu_nginx_stop(); /* the plain server of the setup */
	char *ca = NULL;
	int tls = tu_nginx_start_tls(shards, &ca);
	if (!tls)
		cr_skip_test("openssl's command line or nginx is missing");
	char https[512];
	snprintf(https, sizeof(https), "https://127.0.0.1:%d/shard-{00..%02d}.tar", tls, SHARDS - 1);
	unsetenv("CURL_CA_BUNDLE");
	unsetenv("SSL_CERT_FILE");
	rf_config cfg;
	config(&cfg, https, 0, 0);
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), -EPERM, "%s", err);
	cr_assert(strstr(err, "https://127.0.0.1") && strstr(err, "certificate") &&
		  strstr(err, "CURL_CA_BUNDLE"), "%s", err);

	setenv("CURL_CA_BUNDLE", ca, 1);
	same_as_local(https, 0, 0);
	unsetenv("CURL_CA_BUNDLE");
	free(ca);
}

/* A list file of URLs is a remote source too (a query after the name
 * allowed, as presigned URLs have); a list that mixes URLs and paths is
 * refused, naming the line. */
Test(remote, a_list_of_urls_gives_the_local_batches)
{
	char list[4096], line[4200];
	snprintf(list, sizeof(list), "%s/urls.txt", dir);
	FILE *f = fopen(list, "w");
	for (int s = 0; s < SHARDS; s++)
		fprintf(f, "http://127.0.0.1:%d/shard-%02d.tar%s\n", port, s, s == 1 ? "?v=1" : "");
	fclose(f);
	same_as_local(list, 0, 0);

	f = fopen(list, "a");
	snprintf(line, sizeof(line), "%s/shard-00.tar", shards);
	fprintf(f, "%s\n", line);
	fclose(f);
	rf_config remote;
	config(&remote, list, 0, 0);
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &remote, err, sizeof(err)), RF_EINDEX, "%s", err);
	cr_assert(strstr(err, "URLs or paths, not both"), "%s", err);

	/* a presigned URL's signature is a credential: a message names the
	 * shard without its query */
	f = fopen(list, "w");
	fprintf(f, "http://127.0.0.1:%d/shard-00.tar\n", port);
	fprintf(f, "http://127.0.0.1:%d/gone.tar?X-Amz-Signature=5ecret\n", port);
	fclose(f);
	config(&remote, list, 0, 0);
	cr_assert_eq(rf_loader_create(&l, &remote, err, sizeof(err)), -ENOENT, "%s", err);
	cr_assert(strstr(err, "/gone.tar") && strstr(err, "404") && !strstr(err, "5ecret"), "%s",
		  err);
}

/* Damage is counted over http as it is on disk: a shard with a corrupt
 * header gives the same lost span, the same samples and the same
 * reports from the server as from the folder. */
Test(remote, a_damaged_remote_shard_loses_what_the_local_copy_loses)
{
	/* shard-00 with its fourth member's header overwritten */
	tu_run("cp '%s/shard-00.tar' '%s/bad.tar' && printf 'XXXXXXXXXXXXXXXX' | dd of='%s/bad.tar' "
	       "bs=1 seek=%d conv=notrunc 2>/dev/null", shards, shards, shards, 3 * 1024 + 100);
	char local_src[4200], remote_src[256];
	snprintf(local_src, sizeof(local_src), "%s/bad.tar", shards);
	snprintf(remote_src, sizeof(remote_src), "http://127.0.0.1:%d/bad.tar", port);
	rf_config local, remote;
	config(&local, local_src, 0, 0);
	config(&remote, remote_src, 0, 0);
	local.epochs = remote.epochs = 1;
	size_t il, ir;
	uint64_t *idl = tu_drain_ids(&local, &il), *idr = tu_drain_ids(&remote, &ir);
	cr_assert_eq(il, ir);
	cr_assert(!memcmp(idl, idr, il * sizeof(uint64_t)));
	rf_stats sl, sr;
	size_t nl, nr;
	free(tu_drain_bytes(&local, &nl, &sl));
	free(tu_drain_bytes(&remote, &nr, &sr));
	cr_assert_gt(sl.lost_spans, 0, "the damage is found");
	cr_assert_eq(sr.lost_spans, sl.lost_spans);
	cr_assert_eq(sr.lost_bytes, sl.lost_bytes);
	cr_assert_eq(sr.bad_samples, sl.bad_samples);
	cr_assert_gt(sr.http_requests, 0);
	free(idl);
	free(idr);
}

/* ---- servers that lie (issue 36), tests/fault_server.py ------------------ */

/* A fault server of root on port (0: any), no fault but those args ask for. */
static int fault_on(tu_fault *s, const char *root, int port, const char *const *args)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", port);
	const char *all[40] = { "--p503", "0", "--preset", "0", "--pshort", "0", "--port", p };
	int n = 8;
	for (; args && *args && n < 39; args++)
		all[n++] = *args;
	all[n] = NULL;
	if (!tu_fault_start(s, root, all))
		cr_skip_test("python3 is missing: tests/fault_server.py cannot run");
	return s->port;
}

/* The first error of a run of cfg (on_error fail), copied to err. */
static int first_error(const rf_config *cfg, char *err, size_t errlen)
{
	rf_loader *l;
	int rc = rf_loader_create(&l, cfg, err, errlen);
	if (rc)
		return rc;
	rf_batch *b;
	while ((rc = rf_loader_next(l, &b)) == 0)
		rf_batch_release(l, b);
	snprintf(err, errlen, "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	return rc;
}

/* Indexed from an honest server, then read from one on the same port that
 * lies: every lie is a bad sample whose message names the shard's URL and
 * what the server did, never bytes taken for others: a 206 of another
 * range, a gzip-encoded 206, the shard replaced (another ETag and other
 * bytes) on a server that ignores If-Match, a header over libcurl's limit
 * (not "out of memory", no advice about descriptors). */
Test(remote, a_server_that_lies_after_indexing_gives_bad_samples_saying_what_it_did)
{
	tu_fault s;
	int p = fault_on(&s, shards, 0, NULL);
	char src[256], cache[4200], err[512];
	snprintf(src, sizeof(src), "http://127.0.0.1:%d/shard-{00..%02d}.tar", p, SHARDS - 1);
	snprintf(cache, sizeof(cache), "%s/lies.rfi", dir);
	rf_config cfg;
	config(&cfg, src, 0, 0);
	cfg.epochs = 1;
	cfg.index_cache = cache;
	cfg.on_error = RF_ON_ERROR_FAIL;
	cfg.remote_timeout_ms = 20000;
	cr_assert_eq(first_error(&cfg, err, sizeof(err)), RF_EOF, "%s", err);
	tu_fault_stop(&s);
	static const struct {
		const char *flag, *value, *says[2];
	} lies[] = {
		{ "--lie-range", "1", { "asked bytes ", ", the server sent Content-Range bytes " } },
		{ "--gzip", "1", { "asked bytes ", "Content-Encoding: gzip" } },
		{ "--new-etag-after", "0", { "changed on the server: ETag ", "If-Match" } },
		{ "--huge-header", "1", { "header line over libcurl's limit of 100 KiB", NULL } },
	};
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		fault_on(&s, shards, p, (const char *[]){ lies[i].flag, lies[i].value, NULL });
		int rc = first_error(&cfg, err, sizeof(err));
		tu_fault_stop(&s);
		cr_assert_eq(rc, RF_EBADSAMPLE, "%s: %d: %s", lies[i].flag, rc, err);
		char url[64];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/shard-0", p);
		cr_assert(strstr(err, url), "%s: %s", lies[i].flag, err);
		for (int k = 0; k < 2; k++)
			cr_assert(!lies[i].says[k] || strstr(err, lies[i].says[k]), "%s: %s",
				  lies[i].flag, err);
		cr_assert(!strstr(err, "ulimit"), "%s: %s", lies[i].flag, err);
	}
}

/* s3:// shards signed with a session token, from an endpoint that
 * redirects every request to another port: the token (a custom header,
 * which curl sends wherever a redirect points) never reaches it, and create
 * says the redirect was not followed. A redirect to the endpoint itself is
 * followed: the local batches. */
Test(remote, an_s3_session_token_never_follows_a_redirect_to_another_host)
{
	char root[4200], log_a[4200], log_b[4200], log_c[4200], port_b[16], err[512];
	snprintf(root, sizeof(root), "%s/s3", dir);
	tu_run("mkdir -p '%s/bkt' && cp '%s'/shard-*.tar '%s/bkt/'", root, shards, root);
	snprintf(log_a, sizeof(log_a), "%s/a.log", dir);
	snprintf(log_b, sizeof(log_b), "%s/b.log", dir);
	snprintf(log_c, sizeof(log_c), "%s/c.log", dir);
	tu_fault a, b, c;
	snprintf(port_b, sizeof(port_b), "%d",
		 fault_on(&b, root, 0, (const char *[]){ "--log-headers", log_b, NULL }));
	int pa = fault_on(&a, root, 0, (const char *[]){ "--redirect-to", port_b, "--log-headers",
							 log_a, NULL });
	int pc = fault_on(&c, root, 0, (const char *[]){ "--redirect-to", "0", "--log-headers",
							 log_c, NULL });
	tu_s3_env(pa, "TOKEN-OF-ISSUE-36");
	char src[128];
	snprintf(src, sizeof(src), "s3://bkt/shard-{00..%02d}.tar", SHARDS - 1);
	rf_config cfg;
	config(&cfg, src, 0, 0);
	rf_loader *l;
	int rc = rf_loader_create(&l, &cfg, err, sizeof(err));
	cr_assert_lt(rc, 0, "create over a redirect to another host: %d", rc);
	cr_assert(strstr(err, "not followed") && strstr(err, port_b), "%s", err);

	tu_s3_env(pc, "TOKEN-OF-ISSUE-36");
	same_as_local(src, 0, 0);
	tu_fault_stop(&a);
	tu_fault_stop(&b);
	tu_fault_stop(&c);
	size_t na, nb, nc;
	char *sa = (char *)tu_read(dir, "a.log", &na), *sc = (char *)tu_read(dir, "c.log", &nc);
	sa = realloc(sa, na + 1), sa[na] = '\0';
	sc = realloc(sc, nc + 1), sc[nc] = '\0';
	cr_assert(strstr(sa, "x-amz-security-token: TOKEN-OF-ISSUE-36"), "signed: %s", sa);
	cr_assert(strstr(sc, "GET /moved/bkt/shard-00.tar") &&
		  strstr(sc, "x-amz-security-token: TOKEN-OF-ISSUE-36"), "%s", sc);
	FILE *f = fopen(log_b, "r");
	if (f) { /* requests may have come: none with the token */
		fclose(f);
		char *sb = (char *)tu_read(dir, "b.log", &nb);
		sb = realloc(sb, nb + 1), sb[nb] = '\0';
		cr_assert(!strstr(sb, "TOKEN-OF-ISSUE-36"), "the token went to another host: %s", sb);
		free(sb);
	}
	free(sa);
	free(sc);
}

/* A host name that does not resolve fails create saying so, naming the
 * host ("No route to host" it is not). */
Test(remote, a_host_name_that_does_not_resolve_fails_create_naming_it)
{
	rf_config cfg;
	config(&cfg, "http://no-such-host.invalid/shard-{00..01}.tar", 0, 0);
	char err[512];
	rf_loader *l;
	int rc = rf_loader_create(&l, &cfg, err, sizeof(err));
	cr_assert_eq(rc, -ENXIO, "%d: %s", rc, err);
	cr_assert(strstr(err, "the host name no-such-host.invalid does not resolve") &&
		  !strstr(err, "route"), "%s", err);
}

/* ---- a server that refuses every sample read (issue 36, item 17) ------- */

typedef struct refusals {
	int n, forbidden, no_room;
	char first[512];
} refusals;

static void on_refused(void *user, const char *path, int err, const char *reason)
{
	(void)err;
	refusals *r = user;
	if (!r->n++)
		snprintf(r->first, sizeof(r->first), "%s: %s", path, reason);
	r->forbidden += strstr(reason, "403") != NULL && strstr(path, "http://127.0.0.1:") != NULL;
	r->no_room += strstr(reason, "no room") != NULL;
}

/* Raw mode reads a sample straight into the batch: a read the server
 * refuses (403 to every ranged GET but the scan's, from byte 0) leaves its
 * room to the place's replacement, so the run ends with the server's
 * answer, naming the URL, not with "no room left in the batch". */
Test(remote, raw_reads_the_server_refuses_end_the_run_with_its_answer)
{
	tu_fault srv;
	int p = fault_on(&srv, shards, 0, (const char *[]){ "--forbid-ranges", NULL });
	char src[512];
	snprintf(src, sizeof(src), "http://127.0.0.1:%d/shard-{00..%02d}.tar", p, SHARDS - 1);
	rf_config cfg;
	config(&cfg, src, 1, 0);
	cfg.raw_max_bytes = 4096; /* the batch's room: 4 places of a little over 4 KiB */
	refusals r = { 0 };
	cfg.on_sample_error = on_refused;
	cfg.user = &r;
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_neq(rf_loader_next(l, &b), 0, "no sample can be read");
	const char *why = rf_loader_error(l);
	cr_assert(strstr(why, "403") && strstr(why, "http://127.0.0.1:"), "%s", why);
	cr_assert(!strstr(why, "no room"), "%s", why);
	cr_log_info("%s", why);
	rf_loader_destroy(l);
	tu_fault_stop(&srv);
	cr_assert_gt(r.n, 0);
	cr_assert_eq(r.no_room, 0, "%d of %d reports say no room; the first: %s", r.no_room, r.n,
		     r.first);
	cr_assert_eq(r.forbidden, r.n, "every report names the 403 and the URL; the first: %s",
		     r.first);
}

/* An index made elsewhere (an index cache of another server's URLs) has
 * each shard's ETag asked at create; the first answer for every shard
 * gives another object's ETag (a proxy's lie, once): it is asked again,
 * the two answers disagree, and the shard is asked anew, so that no read
 * is refused (412) for an ETag only a lie gave. */
Test(remote, an_etag_one_answer_gave_is_not_believed_alone)
{
	char cache[4200], src_a[256], src_b[256];
	snprintf(cache, sizeof(cache), "%s/index.cache", dir);
	tu_fault a, b;
	int pa = fault_on(&a, shards, 0, NULL);
	snprintf(src_a, sizeof(src_a), "http://127.0.0.1:%d/shard-{00..%02d}.tar", pa, SHARDS - 1);
	rf_config cfg;
	config(&cfg, src_a, 1, 0);
	cfg.index_cache = cache;
	size_t n_a, n_b;
	rf_stats st;
	uint8_t *bytes_a = tu_drain_bytes(&cfg, &n_a, &st);
	tu_fault_stop(&a);
	cr_assert_eq(st.bad_samples, 0);
	int pb = fault_on(&b, shards, 0, (const char *[]){ "--lie-once", "etag@1", NULL });
	snprintf(src_b, sizeof(src_b), "http://127.0.0.1:%d/shard-{00..%02d}.tar", pb, SHARDS - 1);
	config(&cfg, src_b, 1, 0);
	cfg.index_cache = cache;
	cfg.remote_timeout_ms = 20000;
	uint8_t *bytes_b = tu_drain_bytes(&cfg, &n_b, &st);
	tu_fault_stop(&b);
	cr_assert_eq(st.bad_samples, 0, "%llu samples refused", (unsigned long long)st.bad_samples);
	cr_assert_eq(n_a, n_b);
	cr_assert(!memcmp(bytes_a, bytes_b, n_a), "the same bytes");
	free(bytes_a);
	free(bytes_b);
}
