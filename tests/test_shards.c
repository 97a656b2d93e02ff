/* test_shards.c - WebDataset tar shards as a source: shards written here by
 * Python's tarfile (ustar, GNU and pax formats, long names) and by GNU tar
 * give batches byte-identical to the loose tree they were packed from (JPEG
 * and raw, every read path, a folder, a list file and a brace pattern, the
 * index cache); labels come from cls members or the shard's class folder;
 * bad input (no image member, a bad cls, a truncated shard, a bad header
 * checksum, a damaged JPEG inside a member) is reported with shard, member
 * and reason and replaced, or fails the stream in fail mode, never the run;
 * resume and ranks work across shards; `ringfeed pack`'s shards (aligned,
 * zstd with and without a dictionary) give the same batches, raw ones the
 * decompressed bytes; a wrong dictionary or a corrupt frame is a bad sample
 * with that reason; members the index cannot keep (past the 4096th distinct
 * extension, or an extension too long to name a field) are said once. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index.h"
#include "pack/pack.h"
#include "source/source.h"
#include "testutil.h"

#define CLASSES 3
#define PER_CLASS 12 /* 36 samples */

static char *tree, *out;

static int have(const char *cmd)
{
	char line[256];
	snprintf(line, sizeof(line), "command -v %s >/dev/null 2>&1", cmd);
	return system(line) == 0;
}


/* Packs the tree with Python's tarfile into shards of `per` samples in
 * sample-id order (the ImageFolder order): KEY.jpg (or KEY.bin in raw
 * naming) and KEY.cls, keys as long as `keylen` (pax and GNU long names
 * past 100 bytes), in the given format (USTAR, GNU, PAX), into out/DIR. */
static void pack_python(const char *dir, const char *format, int per, int keylen, int cls,
			const char *ext)
{
	tu_run("python3 - '%s' '%s/%s' %s %d %d %d %s <<'EOF'\n"
	    "import io, os, sys, tarfile\n"
	    "src, out, fmt, per, keylen, cls, ext = sys.argv[1], sys.argv[2], sys.argv[3], "
	    "int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]\n"
	    "os.makedirs(out, exist_ok=True)\n"
	    "files = []\n"
	    "for ci, c in enumerate(sorted(d for d in os.listdir(src) if not d.startswith('.'))):\n"
	    "    for f in sorted(os.listdir(os.path.join(src, c))):\n"
	    "        files.append((os.path.join(src, c, f), ci))\n"
	    "for s in range(0, len(files), per):\n"
	    "    with tarfile.open('%%s/shard-%%06d.tar' %% (out, s // per), 'w',\n"
	    "                      format=getattr(tarfile, fmt + '_FORMAT')) as t:\n"
	    "        for i, (p, ci) in enumerate(files[s:s + per]):\n"
	    "            key = ('%%0' + str(keylen) + 'd') %% (s + i)\n"
	    "            t.add(p, arcname=key + '.' + ext)\n"
	    "            if cls:\n"
	    "                b = str(ci).encode()\n"
	    "                ti = tarfile.TarInfo(key + '.cls'); ti.size = len(b)\n"
	    "                t.addfile(ti, io.BytesIO(b))\n"
	    "EOF",
	    tree, out, dir, format, per, keylen, cls, ext);
}

static void setup(void)
{
	if (!have("python3"))
		cr_skip_test("python3 is missing (it writes the shards)");
	tree = tu_tree("shards-src", CLASSES, PER_CLASS);
	out = tu_tmpdir("shards");
}

static void teardown(void)
{
	if (tree)
		tu_rmrf(tree);
	if (out)
		tu_rmrf(out);
	free(tree);
	free(out);
	tree = out = NULL;
}

static char *at(const char *rel)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", out, rel) > 0);
	return p;
}

/* The whole stream's bytes, ids and labels agree between two sources. */
static void assert_same_stream(const rf_config *base, const char *a, const char *b,
			       const char *what)
{
	rf_config ca = *base, cb = *base;
	ca.source = a;
	cb.source = b;
	size_t na, nb;
	rf_stats sa, sb;
	uint8_t *x = tu_drain_bytes(&ca, &na, &sa);
	uint8_t *y = tu_drain_bytes(&cb, &nb, &sb);
	cr_assert_eq(na, nb, "%s: %zu vs %zu bytes", what, na, nb);
	cr_assert_eq(memcmp(x, y, na), 0, "%s: bytes differ", what);
	cr_assert_eq(sb.bad_samples, 0, "%s: %llu bad samples", what,
		     (unsigned long long)sb.bad_samples);
	free(x);
	free(y);
	rf_loader *la, *lb;
	char err[512];
	cr_assert_eq(rf_loader_create(&la, &ca, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rf_loader_create(&lb, &cb, err, sizeof(err)), 0, "%s", err);
	tu_batch *ba, *bb;
	size_t ka = tu_take(la, SIZE_MAX, &ba), kb = tu_take(lb, SIZE_MAX, &bb);
	cr_assert_eq(ka, kb);
	for (size_t i = 0; i < ka; i++)
		tu_assert_same_batch(&ba[i], &bb[i], what);
	tu_batches_free(ba, ka);
	tu_batches_free(bb, kb);
	rf_loader_destroy(la);
	rf_loader_destroy(lb);
}

Test(shards, python_formats_match_the_loose_tree, .init = setup, .fini = teardown,
     .timeout = 120)
{
	static const char *formats[] = { "USTAR", "GNU", "PAX" };
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.epochs = 2;
	for (int f = 0; f < 3; f++) {
		char dir[32];
		snprintf(dir, sizeof(dir), "py-%s", formats[f]);
		/* ustar keys fit in 100 bytes; GNU and pax get 120-byte names */
		pack_python(dir, formats[f], 10, f == 0 ? 9 : 120, 1, "jpg");
		char *src = at(dir);
		rf_io_path paths[] = { RF_IO_URING_FIXED, RF_IO_URING_PLAIN, RF_IO_PREAD };
		for (int p = 0; p < 3; p++) {
			cfg.io_path = paths[p];
			assert_same_stream(&cfg, tree, src, formats[f]);
		}
		cfg.io_path = RF_IO_AUTO;
		cfg.random_resized_crop = 1;
		cfg.flip_p = 0.5f;
		assert_same_stream(&cfg, tree, src, "random resized crop");
		cfg.random_resized_crop = 0;
		cfg.flip_p = 0;
		free(src);
	}
}

Test(shards, raw_mode_matches, .init = setup, .fini = teardown, .timeout = 60)
{
	pack_python("raw", "PAX", 7, 9, 1, "bin");
	char *src = at("raw");
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.raw = 1;
	cfg.raw_max_bytes = 1 << 20;
	assert_same_stream(&cfg, tree, src, "raw");
	free(src);
}

Test(shards, gnu_tar_class_folders_label_by_folder, .init = setup, .fini = teardown,
     .timeout = 60)
{
	if (!have("tar"))
		cr_skip_test("GNU tar is missing");
	/* one shard per class folder, written by GNU tar from the class's own
	 * folder, no cls members: the label is the folder's */
	for (int c = 0; c < CLASSES; c++)
		tu_run("mkdir -p '%s/byclass/c%d' && cd '%s/c%d' && tar --format=gnu -cf "
		    "'%s/byclass/c%d/part-0.tar' $(ls | sort)", out, c, tree, c, out, c);
	char *src = at("byclass");
	rf_config cfg;
	tu_config(&cfg, tree);
	assert_same_stream(&cfg, tree, src, "class folders");
	free(src);
}

Test(shards, list_file_and_brace_pattern, .init = setup, .fini = teardown, .timeout = 60)
{
	pack_python("py", "PAX", 10, 9, 1, "jpg");
	char *list = at("shards.txt");
	FILE *f = fopen(list, "w");
	cr_assert(f);
	fprintf(f, "# shards\npy/shard-000000.tar\npy/shard-000001.tar\n\npy/shard-000002.tar\n"
		   "py/shard-000003.tar\n");
	fclose(f);
	char *pattern = at("py/shard-{000000..000003}.tar");
	char *dir = at("py");
	rf_config cfg;
	tu_config(&cfg, tree);
	assert_same_stream(&cfg, tree, list, "list file");
	assert_same_stream(&cfg, tree, pattern, "brace pattern");
	assert_same_stream(&cfg, dir, pattern, "folder vs pattern");
	/* a pattern naming a shard that is not there fails create, naming it */
	char *missing = at("py/shard-{000000..000009}.tar");
	cfg.source = missing;
	rf_loader *l;
	char err[512] = "";
	cr_assert_lt(rf_loader_create(&l, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "shard-000004.tar"), "%s", err);
	free(missing);
	free(list);
	free(pattern);
	free(dir);
}

Test(shards, index_cache_round_trip, .init = setup, .fini = teardown, .timeout = 60)
{
	pack_python("py", "GNU", 9, 9, 1, "jpg");
	char *src = at("py"), *cache = at("py.idx");
	char err[512];
	uint64_t files;
	cr_assert_eq(rf_index_write(src, 0, cache, &files, NULL, NULL, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(files, CLASSES * PER_CLASS);
	rf_config cfg;
	tu_config(&cfg, src);
	size_t n0, n1;
	rf_stats st;
	uint8_t *a = tu_drain_bytes(&cfg, &n0, &st);
	cr_assert_eq(st.index_cached, 0);
	cfg.index_cache = cache;
	uint8_t *b = tu_drain_bytes(&cfg, &n1, &st);
	cr_assert_eq(st.index_cached, 1, "the cache was not used");
	cr_assert_eq(n0, n1);
	cr_assert_eq(memcmp(a, b, n0), 0);
	free(a);
	free(b);
	/* a shard rewritten in place: the cache is stale, the shards are scanned */
	tu_run("cd '%s/py' && cp shard-000001.tar x && mv x shard-000001.tar", out);
	b = tu_drain_bytes(&cfg, &n1, &st);
	cr_assert_eq(st.index_cached, 0, "a stale cache was used");
	free(b);
	free(src);
	free(cache);
}

/* Saves after every third batch of a 2-epoch run, resumes with another
 * thread count (1 + k % thread_mod), and checks the rest is the same; for a
 * sequential-access config, the other access mode refuses the state. */
static void assert_exact_resume(const rf_config *cfg, int thread_mod, const char *what)
{
	rf_config base = *cfg;
	base.epochs = 2;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
	tu_batch *ref;
	size_t nref = tu_take(l, SIZE_MAX, &ref);
	rf_loader_destroy(l);
	for (size_t k = 1; k < nref; k += 3) {
		cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
		tu_batch *b;
		size_t n = tu_take(l, k, &b);
		tu_batches_free(b, n);
		static uint8_t state[RF_STATE_MAX_BYTES];
		int len = rf_loader_state_save(l, state, sizeof(state));
		cr_assert_gt(len, 0);
		rf_loader_destroy(l);
		rf_config c = base;
		c.resume_state = state;
		c.resume_state_len = (size_t)len;
		c.threads = 1 + (int)(k % (size_t)thread_mod); /* another thread count */
		cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
		n = tu_take(l, SIZE_MAX, &b);
		cr_assert_eq(n, nref - k);
		for (size_t i = 0; i < n; i++)
			tu_assert_same_batch(&ref[k + i], &b[i], what);
		tu_batches_free(b, n);
		rf_loader_destroy(l);
		if (base.shard_access == RF_SHARD_SEQUENTIAL) {
			/* the other access mode refuses the state, naming it */
			c.shard_access = RF_SHARD_RANDOM;
			cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), RF_ESTATEMISMATCH);
			cr_assert(strstr(err, "shard_access"), "%s", err);
		}
	}
	tu_batches_free(ref, nref);
}

/* world ranks of one epoch: disjoint, and together every sample. */
static void assert_ranks_cover(const rf_config *cfg, int world)
{
	int seen[CLASSES * PER_CLASS] = { 0 };
	rf_config c = *cfg;
	c.epochs = 1;
	c.world_size = world;
	for (int r = 0; r < world; r++) {
		c.rank = r;
		size_t n;
		uint64_t *ids = tu_drain_ids(&c, &n);
		cr_assert_eq(n, CLASSES * PER_CLASS / (size_t)world);
		for (size_t i = 0; i < n; i++)
			cr_assert_eq(seen[ids[i]]++, 0, "sample %llu on two ranks",
				     (unsigned long long)ids[i]);
		free(ids);
	}
}

/* The bad-input shard: writes out/bad/shard-000000.tar from Python with a
 * sample with no image, one with a bad cls, one whose JPEG is garbage, then
 * good samples; then damages shard 1 as asked. */
static void pack_bad(const char *damage)
{
	pack_python("bad", "PAX", 12, 9, 1, "jpg");
	tu_run("python3 - '%s/bad/shard-000000.tar' <<'EOF'\n"
	    "import io, sys, tarfile\n"
	    "p = sys.argv[1]\n"
	    "with tarfile.open(p) as t:\n"
	    "    members = [(m, t.extractfile(m).read()) for m in t.getmembers()]\n"
	    "with tarfile.open(p, 'w', format=tarfile.PAX_FORMAT) as t:\n"
	    "    for m, b in members:\n"
	    "        if m.name == '000000001.jpg': continue              # no image member\n"
	    "        if m.name == '000000002.cls': b = b'7x'              # not a label\n"
	    "        if m.name == '000000003.jpg': b = b'\\xff\\xd8garbage' # not a JPEG\n"
	    "        m.size = len(b); t.addfile(m, io.BytesIO(b))\n"
	    "EOF",
	    out);
	if (!strcmp(damage, "truncate")) /* cut inside the last member's data */
		tu_run("cd '%s/bad' && python3 -c \"import os,sys; p='shard-000001.tar'; "
		    "import tarfile; t=tarfile.open(p); m=t.getmembers()[-2]; t.close(); "
		    "os.truncate(p, m.offset_data + m.size // 2)\"", out);
	else if (!strcmp(damage, "checksum")) /* flip a byte in the 5th member's header */
		tu_run("cd '%s/bad' && python3 -c \"import tarfile; p='shard-000001.tar'; "
		    "t=tarfile.open(p); o=t.getmembers()[4].offset; t.close(); "
		    "f=open(p,'r+b'); f.seek(o+2); c=f.read(1); f.seek(o+2); "
		    "f.write(bytes([c[0]^0x55])); f.close()\"", out);
}

static int count_reasons(const char *log, const char *what)
{
	int n = 0;
	for (const char *p = log; (p = strstr(p, what)); p++)
		n++;
	return n;
}

typedef struct reports {
	char all[8192];
	int n;
} reports;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	reports *r = user;
	(void)err;
	size_t len = strlen(r->all);
	snprintf(r->all + len, sizeof(r->all) - len, "%s: %s\n", path, reason);
	r->n++;
}

/* Runs cfg with on_error = fail to its end: the stream must stop with
 * RF_EBADSAMPLE (no hang); the error detail is copied to detail. */
static void fails_on_bad(rf_config *cfg, char *detail, size_t len)
{
	cfg->on_error = RF_ON_ERROR_FAIL;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int ret;
	while ((ret = rf_loader_next(l, &b)) == 0)
		rf_batch_release(l, b);
	cr_assert_eq(ret, RF_EBADSAMPLE, "%s", rf_strerror(ret));
	snprintf(detail, len, "%s", rf_loader_error(l));
	rf_loader_destroy(l);
}

Test(shards, bad_members_reported_and_replaced, .init = setup, .fini = teardown,
     .timeout = 60)
{
	pack_bad("truncate");
	char *src = at("bad");
	reports r = { .n = 0 };
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	cfg.log_level = RF_LOG_ERROR;
	size_t n;
	rf_stats st;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert(strstr(r.all, "shard-000000.tar:000000001: no image member (jpg, jpeg, png, webp)"), "%s",
		  r.all);
	cr_assert(strstr(r.all, "shard-000000.tar:000000002: its cls member is not a label"),
		  "%s", r.all);
	cr_assert(strstr(r.all, "shard-000000.tar:000000003.jpg: "), "%s", r.all);
	cr_assert(strstr(r.all, "shard-000001.tar:000000023.jpg: the member runs past the end of "
			 "the shard"),
		  "%s", r.all);
	cr_assert_eq(count_reasons(r.all, "\n"), 4, "%s", r.all);
	cr_assert_eq(st.bad_samples, 4);
	/* fail mode: the stream fails with the first of them, no hang */
	char detail[1024];
	fails_on_bad(&cfg, detail, sizeof(detail));
	cr_assert(strstr(detail, ".tar:"), "%s", detail);
	free(src);
}

/* A shard cut just before a sample's cls member: that sample is bad (no
 * label, in a labelled source), and the cut is reported; with on_error =
 * fail the run fails. */
Test(shards, cut_before_a_label, .init = setup, .fini = teardown, .timeout = 60)
{
	pack_python("cut", "GNU", 12, 9, 1, "jpg");
	tu_run("cd '%s/cut' && python3 -c \"import os, tarfile; p='shard-000001.tar'; "
	       "t=tarfile.open(p); m=t.getmembers()[-1]; t.close(); assert m.name.endswith('.cls'); "
	       "os.truncate(p, m.offset)\"", out);
	char *src = at("cut");
	reports r = { .n = 0 };
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	size_t n;
	rf_stats st;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert(strstr(r.all, "shard-000001.tar:000000023.jpg: no cls member"), "%s", r.all);
	cr_assert(strstr(r.all, "shard-000001.tar:bytes "), "%s", r.all);
	cr_assert(strstr(r.all, "without its end-of-archive blocks"), "%s", r.all);
	cr_assert_eq(st.bad_samples, 2, "%s", r.all);
	char detail[1024];
	fails_on_bad(&cfg, detail, sizeof(detail));
	free(src);
}

Test(shards, bad_checksum_resyncs_and_reports_the_span, .init = setup, .fini = teardown,
     .timeout = 60)
{
	pack_bad("checksum");
	char *src = at("bad");
	reports r = { .n = 0 };
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_order_info oi;
	cr_assert_eq(rf_loader_order(l, &oi), 0);
	/* shard 0: 12 samples (the one with no image a bad one); shard 1: its
	 * 12 samples and the damaged span as an entry of its own (member 4's
	 * header is a pax header, tarfile's for the JPEG after it: that header
	 * is lost, and the scan resumes at the JPEG's own ustar header, which
	 * names it too); shard 2: 12 */
	cr_assert_eq(oi.dataset_samples, 12 + 13 + 12, "%llu",
		     (unsigned long long)oi.dataset_samples);
	rf_loader_destroy(l);
	r = (reports){ .n = 0 }; /* that loader read ahead, and reported */
	size_t n;
	rf_stats st;
	free(tu_drain_bytes(&cfg, &n, &st));
	/* the span: the pax header and its data block */
	cr_assert(strstr(r.all, "shard-000001.tar:bytes "), "%s", r.all);
	cr_assert(strstr(r.all, "damaged"), "%s", r.all);
	/* everything after the damage is delivered: 37 entries, 3 reported
	 * (shard 0's two, the span) and 1 undecodable JPEG */
	cr_assert_eq(st.bad_samples, 4, "%s", r.all);
	cr_assert_eq(st.samples, 37);
	/* fail mode fails */
	char detail[1024];
	fails_on_bad(&cfg, detail, sizeof(detail));
	free(src);
}

Test(shards, resume_and_ranks_across_shards, .init = setup, .fini = teardown, .timeout = 60)
{
	pack_python("py", "PAX", 5, 9, 1, "jpg");
	char *src = at("py");
	rf_config cfg;
	tu_config(&cfg, src);
	assert_exact_resume(&cfg, 3, "resumed");
	/* 3 ranks: disjoint, and together every sample of the epoch */
	cfg.rank_tail = RF_RANK_TAIL_DROP;
	assert_ranks_cover(&cfg, 3);
	free(src);
}

static void pack_with(const char *dir, int raw, uint64_t align, int compress, size_t dict)
{
	char *o = at(dir);
	rf_pack_opts opts = { .source = tree, .out = o, .index_flags = raw ? RF_INDEX_RAW : 0,
			      .shard_size = 64 << 10, .align = align, .compress = compress,
			      .level = 3, .dict_size = dict };
	rf_pack_result res;
	char err[512];
	cr_assert_eq(rfi_pack_run(&opts, &res, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(res.samples, CLASSES * PER_CLASS);
	cr_assert_gt(res.shards, 1);
	free(o);
}

Test(shards, pack_aligned_and_zstd_match, .init = setup, .fini = teardown, .timeout = 120)
{
	pack_with("plain", 0, 0, 0, 0);
	pack_with("aligned", 0, 4096, 0, 0);
	pack_with("zstd", 0, 4096, 1, 0);
	pack_with("zstd-dict", 0, 0, 1, 4096);
	pack_with("raw-zstd-dict", 1, 0, 1, 4096);
	rf_config cfg;
	tu_config(&cfg, tree);
	static const char *dirs[] = { "plain", "aligned", "zstd", "zstd-dict" };
	for (int i = 0; i < 4; i++) {
		char *src = at(dirs[i]);
		assert_same_stream(&cfg, tree, src, dirs[i]);
		cfg.decode = RF_DECODE_AUTO; /* no GPU here: the pool; zstd stays on the CPU */
		assert_same_stream(&cfg, tree, src, dirs[i]);
		cfg.decode = RF_DECODE_CPU;
		/* read front to back, in index order: the tree's index order */
		rf_config a = cfg, b = cfg;
		a.shuffle = b.shuffle = 0;
		b.shard_access = RF_SHARD_SEQUENTIAL;
		size_t na, nb;
		a.source = tree;
		b.source = src;
		uint8_t *x = tu_drain_bytes(&a, &na, NULL), *y = tu_drain_bytes(&b, &nb, NULL);
		cr_assert(na == nb && !memcmp(x, y, na), "%s, sequential", dirs[i]);
		free(x);
		free(y);
		free(src);
	}
	cfg.raw = 1;
	cfg.raw_max_bytes = 1 << 20;
	char *src = at("raw-zstd-dict");
	assert_same_stream(&cfg, tree, src, "raw, zstd with a dictionary");
	cfg.threads = 1;
	assert_same_stream(&cfg, tree, src, "raw, zstd, one thread");
	cfg.shuffle = 0;
	size_t na, nb;
	cfg.source = tree;
	uint8_t *x = tu_drain_bytes(&cfg, &na, NULL);
	cfg.source = src;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	uint8_t *y = tu_drain_bytes(&cfg, &nb, NULL);
	cr_assert(na == nb && !memcmp(x, y, na), "raw, zstd, sequential");
	free(x);
	free(y);
	free(src);
}

Test(shards, wrong_dictionary_and_corrupt_frame, .init = setup, .fini = teardown,
     .timeout = 60)
{
	pack_with("a", 0, 0, 1, 4096);
	pack_with("b", 0, 0, 1, 8192); /* another dictionary (another size) */
	char *src = at("a"), *wrong = at("b/zstd.dict");
	reports r = { .n = 0 };
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.zstd_dict = wrong;
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	cfg.log_level = RF_LOG_ERROR;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int got = rf_loader_next(l, &b);
	cr_assert_eq(got, RF_ETOOMANYBAD, "every sample is bad: %d %s", got, rf_loader_error(l));
	rf_loader_destroy(l);
	cr_assert(strstr(r.all, ".jpg.zst: zstd: Dictionary mismatch"), "%s", r.all);
	/* a dictionary file that is not one fails create */
	cfg.zstd_dict = "/etc/hostname";
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "zstd_dict"), "%s", err);
	/* a corrupt frame: one sample, reported and replaced */
	cfg.zstd_dict = NULL;
	r.n = 0;
	r.all[0] = '\0';
	tu_run("cd '%s' && python3 -c \"import tarfile; p='shard-000000.tar'; t=tarfile.open(p); "
	    "m=[m for m in t.getmembers() if m.name.endswith('.zst')][2]; t.close(); "
	    "f=open(p,'r+b'); f.seek(m.offset_data + m.size // 2); c=f.read(1); "
	    "f.seek(m.offset_data + m.size // 2); f.write(bytes([c[0]^0xff])); f.close()\"", src);
	size_t n;
	rf_stats st;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert_eq(st.bad_samples, 1, "%s", r.all);
	cr_assert(strstr(r.all, "shard-000000.tar:000000002.jpg.zst: zstd: "), "%s", r.all);
	free(src);
	free(wrong);
}

/* ---- the index beside a local shard folder (issue 37 item 6) ------------
 * `ringfeed pack` writes DIR/ringfeed.index; a run of DIR loads it instead
 * of scanning every shard (index_cached), unless a shard changed since
 * (size, or modified after the index was written) or the file could have
 * been planted (another user's, writable by others, a link): then it says
 * why, naming the shard, and scans. */

/* Drains cfg's stream with stderr kept: *said gets what was logged (free
 * it), the bytes are returned (free them). */
static uint8_t *drain_said(const rf_config *cfg, size_t *n, rf_stats *st, char **said)
{
	char *log = at("stderr.txt");
	fflush(stderr);
	int saved = dup(2), fd = open(log, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	cr_assert(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	uint8_t *b = tu_drain_bytes(cfg, n, st);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	size_t len;
	*said = (char *)tu_read(out, "stderr.txt", &len);
	*said = realloc(*said, len + 1);
	(*said)[len] = '\0';
	free(log);
	return b;
}

/* A run of the pack that must not use its index: it scans, says why
 * (want in what it logged), and hands out the bytes the index's run did. */
static void assert_scanned(const rf_config *cfg, const uint8_t *a, size_t n0, const char *want)
{
	size_t n1;
	rf_stats st;
	char *said;
	uint8_t *b = drain_said(cfg, &n1, &st, &said);
	cr_assert_eq(st.index_cached, 0, "the index was used: %s", want);
	cr_assert(strstr(said, want), "expected '%s' in:\n%s", want, said);
	cr_assert(strstr(said, "scanning the shards"), "%s", said);
	cr_assert_eq(n0, n1);
	cr_assert_eq(memcmp(a, b, n0), 0);
	free(b);
	free(said);
}

Test(shards, the_index_beside_a_local_pack_is_loaded_and_checked, .init = setup, .fini = teardown,
     .timeout = 120)
{
	pack_with("pk", 0, 0, 0, 0);
	char *src = at("pk");
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.log_level = RF_LOG_WARN;
	size_t n0, n1;
	rf_stats st;
	char *said;
	uint8_t *a = drain_said(&cfg, &n0, &st, &said);
	cr_assert_eq(st.index_cached, 1, "the index beside the shards was not loaded:\n%s", said);
	free(said);
	/* the same stream as a scan of the same shards */
	tu_run("cd '%s/pk' && mv ringfeed.index keep.index", out);
	uint8_t *b = tu_drain_bytes(&cfg, &n1, &st);
	cr_assert_eq(st.index_cached, 0);
	cr_assert_eq(n0, n1);
	cr_assert_eq(memcmp(a, b, n0), 0);
	free(b);
	/* a link to a good index is not followed */
	tu_run("cd '%s/pk' && ln -s keep.index ringfeed.index", out);
	assert_scanned(&cfg, a, n0, "symbolic link");
	/* writable by every user: anyone could have written it */
	tu_run("cd '%s/pk' && rm ringfeed.index && cp -p keep.index ringfeed.index && "
	       "chmod 0666 ringfeed.index", out);
	assert_scanned(&cfg, a, n0, "writable by every user");
	/* another user's (who is neither the folder's owner nor root) */
	tu_run("chmod 0600 '%s/pk/ringfeed.index'", out);
	if (geteuid() == 0) {
		tu_run("chown 54321 '%s/pk/ringfeed.index'", out);
		assert_scanned(&cfg, a, n0, "belongs to uid 54321");
		tu_run("chown 0 '%s/pk/ringfeed.index'", out);
	}
	b = tu_drain_bytes(&cfg, &n1, &st);
	cr_assert_eq(st.index_cached, 1, "a good index again");
	free(b);
	/* a shard touched after the index was written (its size unchanged) */
	tu_run("touch -d '+1 hour' '%s/pk/shard-000001.tar'", out);
	assert_scanned(&cfg, a, n0, "shard shard-000001.tar: modified after the index was written");
	/* a shard of another size (its mtime set back): its samples are what
	 * the scan finds now; said, naming it */
	tu_run("cd '%s/pk' && touch -d '-1 hour' shard-000001.tar && "
	       "head -c 512 /dev/zero >> shard-000001.tar && touch -d '-1 hour' shard-000001.tar",
	       out);
	b = drain_said(&cfg, &n1, &st, &said);
	cr_assert_eq(st.index_cached, 0);
	cr_assert(strstr(said, "shard shard-000001.tar: ") && strstr(said, "when it was indexed"),
		  "%s", said);
	free(said);
	free(b);
	free(a);
	free(src);
}

/* id -> hash of its delivered pixels (batch size 1), for the whole stream */
static void pixel_hashes(const rf_config *cfg, uint64_t *hash, size_t n, uint64_t *ids_out)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	tu_batch *b;
	size_t k = tu_take(l, SIZE_MAX, &b);
	cr_assert_eq(k, n);
	for (size_t i = 0; i < k; i++) {
		cr_assert_eq(b[i].count, 1);
		hash[b[i].ids[0]] = b[i].data_hash;
		if (ids_out)
			ids_out[i] = b[i].ids[0];
	}
	tu_batches_free(b, k);
	rf_loader_destroy(l);
}

Test(shards, sequential_access, .init = setup, .fini = teardown, .timeout = 120)
{
	enum { N = CLASSES * PER_CLASS };
	pack_python("py", "PAX", 5, 9, 1, "jpg"); /* 8 shards */
	char *src = at("py");
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.batch_size = 1;
	uint64_t ref[N], got[N], ids[N];
	pixel_hashes(&cfg, ref, N, NULL);
	/* every sample once, with the pixels random access gives it */
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	cfg.shuffle_block = 4;
	memset(got, 0, sizeof(got));
	pixel_hashes(&cfg, got, N, ids);
	int seen[N] = { 0 };
	for (int i = 0; i < N; i++) {
		cr_assert_eq(seen[ids[i]]++, 0, "sample %llu twice", (unsigned long long)ids[i]);
		cr_assert_eq(got[ids[i]], ref[ids[i]], "sample %llu: other pixels",
			     (unsigned long long)ids[i]);
	}
	/* block 1: whole shards in a row (a new shard order, each shard in order) */
	cfg.shuffle_block = 1;
	pixel_hashes(&cfg, got, N, ids);
	int breaks = 0;
	for (int i = 1; i < N; i++)
		breaks += ids[i] != ids[i - 1] + 1;
	cr_assert_leq(breaks, 7, "%d jumps for 8 shards", breaks);
	cr_assert_neq(ids[0] % 5 == 0 && ids[0] == 0 && breaks == 0, 1, "shards not shuffled");
	/* no shuffle: index order */
	cfg.shuffle = 0;
	pixel_hashes(&cfg, got, N, ids);
	for (int i = 0; i < N; i++)
		cr_assert_eq(ids[i], (uint64_t)i);
	/* a loose source refuses it */
	rf_config bad;
	tu_config(&bad, tree);
	bad.shard_access = RF_SHARD_SEQUENTIAL;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &bad, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "shard source"), "%s", err);
	free(src);
}

Test(shards, sequential_raw_resume_and_ranks, .init = setup, .fini = teardown, .timeout = 120)
{
	pack_with("raw", 1, 4096, 0, 0);
	char *src = at("raw");
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.raw = 1;
	cfg.raw_max_bytes = 1 << 20;
	cfg.shuffle = 0;
	size_t nloose, nseq;
	uint8_t *loose = tu_drain_bytes(&cfg, &nloose, NULL);
	cfg.source = src;
	cfg.shard_access = RF_SHARD_SEQUENTIAL; /* no shuffle: index order, from chunks */
	uint8_t *seq = tu_drain_bytes(&cfg, &nseq, NULL);
	cr_assert_eq(nloose, nseq);
	cr_assert_eq(memcmp(loose, seq, nseq), 0, "raw bytes from chunks differ");
	free(loose);
	free(seq);
	/* exact resume at every third cut, with other thread counts */
	cfg.shuffle = 1;
	cfg.shuffle_block = 6;
	assert_exact_resume(&cfg, 2, "resumed, sequential");
	/* ranks: consecutive runs, disjoint, covering */
	assert_ranks_cover(&cfg, 4);
	free(src);
}

/* Sequential access reads each chunk about once an epoch even when a
 * shuffle block spans more chunks than the default read pool holds (700
 * samples of 64 KiB, one block: 44 chunks against the 32 a 64 MiB pool
 * kept, which read chunks again and again): the pool grows to fit the
 * block. */
Test(shards, sequential_blocks_larger_than_the_pool_read_each_chunk_once, .timeout = 120)
{
	enum { N = 700, SIZE = 64 << 10 };
	char *dir = tu_tmpdir("shards-span");
	uint8_t *data = malloc(SIZE);
	cr_assert(data);
	for (int i = 0; i < N; i++) {
		char rel[64];
		for (int j = 0; j < SIZE; j += 8)
			memcpy(data + j, &(uint64_t){ (uint64_t)i * 0x9e3779b97f4a7c15ull + (uint64_t)j },
			       8);
		snprintf(rel, sizeof(rel), "raw/%04d.bin", i);
		tu_write(dir, rel, data, SIZE);
	}
	free(data);
	char raw[4200], out[4200], err[512];
	snprintf(raw, sizeof(raw), "%s/raw", dir);
	snprintf(out, sizeof(out), "%s/pack", dir);
	rf_pack_opts opts = { .source = raw, .out = out, .index_flags = RF_INDEX_RAW,
			      .shard_size = 16 << 20 };
	rf_pack_result res;
	cr_assert_eq(rfi_pack_run(&opts, &res, err, sizeof(err)), 0, "%s", err);
	rf_config cfg;
	tu_config(&cfg, out);
	cfg.raw = 1;
	cfg.epochs = 1;
	cfg.shard_access = RF_SHARD_SEQUENTIAL;
	cfg.shuffle_block = 1024;
	size_t n;
	rf_stats st;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert_eq(st.samples, N);
	cr_assert_eq(st.bad_samples, 0);
	/* reads: a chunk each, about once, and the members across chunk
	 * edges alone (698 when the pool held 32 chunks: a read a sample) */
	cr_assert_lt(st.reads_submitted, N * 7 / 10, "%llu reads for %d samples in %llu bytes",
		     (unsigned long long)st.reads_submitted, N, (unsigned long long)res.bytes_out);
	tu_rmrf(dir);
	free(dir);
}

/* How many times needle is in hay. */
static int times_in(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A sample with more distinct member extensions than an index keeps
 * (RF_EXTRA_NAMES_MAX) and members whose extension is too long to name a
 * field: the index keeps what it can and says once, at build, how many it
 * did not keep, the first of them, and the limit; never a silent drop. */
Test(shards, members_an_index_cannot_keep_are_said_once, .init = setup, .fini = teardown,
     .timeout = 120)
{
	static const char *long_ext = "left_camera.rectified.depth_16bit.png"; /* 37 bytes */
	tu_mkdirs(out, "many/src");
	tu_mkdirs(out, "many/shards");
	tu_jpeg(out, "many/src/k0.jpg", 16, 16, 1);
	tu_jpeg(out, "many/src/k1.jpg", 16, 16, 2);
	/* k0: 4100 members of distinct extensions (e0000 .. e4099), and two samples
	 * with a long one */
	tu_run("cd '%s/many/src' && for i in $(seq -w 0 4099); do printf x > k0.e$i; done && "
	       "printf d > k0.%s && printf d > k1.%sx && "
	       "tar --format=gnu -cf ../shards/s-0.tar k0.* k1.*", out, long_ext, long_ext);
	char *shards = at("many/shards"), *log = at("stderr.txt");
	rf_index idx;
	char err[512];
	fflush(stderr);
	int saved = dup(2), fd = open(log, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	cr_assert(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	int ret = rfi_index_build(&idx, shards, 0, err, sizeof(err));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	cr_assert_eq(ret, 0, "%s", err);
	cr_assert_eq(idx.count, 2);
	cr_assert_eq(idx.nextra_names, RF_EXTRA_NAMES_MAX, "the first 4096 extensions are kept");
	size_t len;
	char *said = (char *)tu_read(out, "stderr.txt", &len);
	said = realloc(said, len + 1);
	said[len] = '\0';
	cr_assert_eq(times_in(said, "not indexed"), 2, "each said once:\n%s", said);
	cr_assert(strstr(said, "4 members not indexed, such as ") && strstr(said, "s-0.tar:k0.e") &&
		  strstr(said, "after the 4096 distinct ones"), "%s", said);
	char first_long[128];
	snprintf(first_long, sizeof(first_long), "s-0.tar:k0.%s: their extensions are 32 bytes",
		 long_ext);
	cr_assert(strstr(said, "2 members not indexed") && strstr(said, first_long), "%s", said);
	free(said);
	rfi_index_free(&idx);
	free(shards);
	free(log);
}

/* ---- remote scans that cannot progress (issue 36) ------------------------
 * Shards served by tests/fault_server.py, which answers without an error
 * but without progress: an honest 206 shorter than asked, a 416 past an
 * end its size contradicts, a body trickled in, a 503 on every try of a
 * window after the first, and S3 listings that repeat a token or keys or
 * list out of order. Each fails create with the reason, naming the URL
 * (or the bucket and prefix), within the test's own timeout (the scan
 * used to ask the same window forever, or 120 s a window, or record the
 * window as damaged bytes and exit 0). */

#define RSHARDS 2
#define RPER 200 /* KEY.bin members of 1536 bytes: 2048 a member, so that a
		  * header starts at 256 KiB, where the scan's second window does */

static char *rdir;

static void remote_setup(void)
{
	if (!have("python3"))
		cr_skip_test("python3 is missing (it writes the shards and serves them)");
	rdir = tu_tmpdir("shards-remote");
	tu_run("python3 - '%s' <<'EOF'\n"
	       "import io, os, random, sys, tarfile\n"
	       "root = sys.argv[1]\n"
	       "os.makedirs(root + '/bk/data')\n"
	       "r = random.Random(3)\n"
	       "for s in range(%d):\n"
	       "    p = '%%s/bk/data/shard-%%02d.tar' %% (root, s)\n"
	       "    with tarfile.open(p, 'w', format=tarfile.USTAR_FORMAT) as t:\n"
	       "        for j in range(%d):\n"
	       "            b = bytes(r.randrange(256) for _ in range(1536))\n"
	       "            ti = tarfile.TarInfo('%%06d.bin' %% (s * %d + j)); ti.size = len(b)\n"
	       "            t.addfile(ti, io.BytesIO(b))\n"
	       "EOF", rdir, RSHARDS, RPER, RPER);
}

static void remote_teardown(void)
{
	if (rdir)
		tu_rmrf(rdir);
	free(rdir);
	rdir = NULL;
}

/* The samples l indexed (0 when there is no loader). */
static unsigned long long samples_of(const rf_loader *l)
{
	rf_order_info o;
	return l && !rf_loader_order(l, &o) ? (unsigned long long)o.dataset_samples : 0ull;
}

/* A raw config over the shards at port (http, a brace pattern). */
static void remote_config(rf_config *cfg, char *src, size_t len, int port)
{
	snprintf(src, len, "http://127.0.0.1:%d/bk/data/shard-{00..%02d}.tar", port, RSHARDS - 1);
	tu_config(cfg, src);
	cfg->raw = 1;
	cfg->remote_timeout_ms = 2000;
}

/* Create over the server started with flags fails (ret < 0) with a message
 * holding each of want (NULL-terminated). */
static void assert_create_fails(const char *flags, const char *index_cache,
				const char *const *want)
{
	tu_fault fs;
	int port = tu_fault_server_start(&fs, rdir, flags);
	if (!port)
		cr_skip_test("python3 is missing: tests/fault_server.py cannot run");
	rf_config cfg;
	char src[256], err[1024] = "";
	remote_config(&cfg, src, sizeof(src), port);
	cfg.index_cache = index_cache;
	rf_loader *l = NULL;
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	tu_fault_stop(&fs);
	if (ret == -EPROTONOSUPPORT)
		cr_skip_test("this ringfeed was built without libcurl");
	cr_assert_lt(ret, 0, "%s: create succeeded (%llu samples)", flags, samples_of(l));
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/bk/data/shard-0", port);
	cr_assert(strstr(err, url), "%s: '%s' does not name the shard's URL", flags, err);
	for (const char *const *w = want; *w; w++)
		cr_assert(strstr(err, *w), "%s: '%s' does not say '%s'", flags, err, *w);
}

Test(shards_remote, a_206_shorter_than_asked_fails_create, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	/* refused by the response checker (http_check.c) as it lands, after
	 * its tries: what was asked and what the server sent */
	assert_create_fails("--short-window 1", NULL,
			    (const char *[]){ "asked bytes 0-262143", "bytes 0-255/", NULL });
}

Test(shards_remote, a_416_before_the_size_the_server_gave_fails_create, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	assert_create_fails("--eof-at 262144", NULL, (const char *[]){ "416", NULL });
}

Test(shards_remote, a_trickling_server_holds_create_no_longer_than_remote_timeout,
     .init = remote_setup, .fini = remote_teardown, .timeout = 60)
{
	assert_create_fails("--trickle-path shard-01", NULL, (const char *[]){ "timed out", NULL });
}

/* A window after the first answered 503 on every try (the server busy past
 * the read's time): create fails naming it, and no index cache is written
 * holding those bytes as damage; the same cache with a healthy server then
 * indexes every sample. */
Test(shards_remote, a_window_that_cannot_be_read_fails_create_and_is_not_cached,
     .init = remote_setup, .fini = remote_teardown, .timeout = 60)
{
	char cache[4200];
	snprintf(cache, sizeof(cache), "%s/index.cache", rdir);
	assert_create_fails("--busy-seconds 300 --busy-from 1", cache,
			    (const char *[]){ "HTTP 503", "bytes 262144..", NULL });
	struct stat st;
	cr_assert_neq(stat(cache, &st), 0, "an index cache was written by a failed scan");
	tu_fault fs;
	int port = tu_fault_server_start(&fs, rdir, "");
	rf_config cfg;
	char src[256];
	remote_config(&cfg, src, sizeof(src), port);
	cfg.index_cache = cache;
	size_t n;
	uint64_t *ids = tu_drain_ids(&cfg, &n);
	tu_fault_stop(&fs);
	cr_assert_eq(n, RSHARDS * RPER);
	free(ids);
	cr_assert_eq(stat(cache, &st), 0);
}

/* One lie of the server's, once, to a shard's scan (fault_server.py
 * --lie-once): the scan is not fooled and create still indexes every
 * sample, the same ids as an honest server gives. */
static void assert_one_lie_is_outlived(const char *lie)
{
	char flags[64];
	snprintf(flags, sizeof(flags), "--lie-once %s", lie);
	tu_fault fs;
	int port = tu_fault_server_start(&fs, rdir, flags);
	if (!port)
		cr_skip_test("python3 is missing: tests/fault_server.py cannot run");
	rf_config cfg;
	char src[256];
	remote_config(&cfg, src, sizeof(src), port);
	cfg.remote_timeout_ms = 20000; /* a lie is tried again after a backoff */
	size_t n;
	uint64_t *ids = tu_drain_ids(&cfg, &n);
	tu_fault_stop(&fs);
	cr_assert_eq(n, RSHARDS * RPER, "%s: %zu samples", lie, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_lt(ids[i], (uint64_t)(RSHARDS * RPER));
	free(ids);
}

/* A shard's first answer says it is empty (416 "bytes *\/0"): asked again
 * before it is believed (nothing later could contradict it). */
Test(shards_remote, a_first_answer_saying_empty_is_asked_again, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	assert_one_lie_is_outlived("empty416@1");
}

/* A later window's 416 says the shard ends where that window starts, though
 * the first answer gave its size: a lie, tried again. */
Test(shards_remote, a_416_inside_the_size_the_server_gave_is_tried_again, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	assert_one_lie_is_outlived("empty416@2");
}

/* The first answer's ETag and bytes are another object's: the next window
 * (If-Match that ETag) is refused, and the shard is scanned again from its
 * first byte, its first answer's samples forgotten. */
Test(shards_remote, a_first_answer_from_another_object_is_scanned_again, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	assert_one_lie_is_outlived("etag@1");
}

/* s3://bk/data/ listed by the server (ListObjectsV2, 2 keys a page) with
 * bug: refused naming the bucket and prefix and what the store did;
 * "none" lists every shard once. */
static void s3_listing(const char *bug, const char *want)
{
	char flags[128];
	snprintf(flags, sizeof(flags), "--s3-list-bug %s --s3-page 1", bug);
	tu_fault fs;
	int port = tu_fault_server_start(&fs, rdir, flags);
	if (!port)
		cr_skip_test("python3 is missing: tests/fault_server.py cannot run");
	/* more keys than shards, so that pages come in order: a.txt, shards, z.txt */
	tu_write(rdir, "bk/data/a.txt", "a", 1);
	tu_write(rdir, "bk/data/z.txt", "z", 1);
	tu_s3_env(port, NULL);
	rf_config cfg;
	tu_config(&cfg, "s3://bk/data/");
	cfg.raw = 1;
	cfg.remote_timeout_ms = 5000;
	rf_loader *l = NULL;
	char err[1024] = "";
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	tu_fault_stop(&fs);
	if (ret == -EPROTONOSUPPORT)
		cr_skip_test("this ringfeed was built without libcurl");
	if (!want) {
		cr_assert_eq(ret, 0, "%s", err);
		cr_assert_eq(samples_of(l), RSHARDS * RPER);
		rf_loader_destroy(l);
		return;
	}
	cr_assert_lt(ret, 0, "listing with %s: create succeeded (%llu samples)", bug, samples_of(l));
	cr_assert(strstr(err, "listing s3://bk/data/"), "'%s' names no bucket and prefix", err);
	cr_assert(strstr(err, want), "'%s' does not say '%s'", err, want);
}

Test(shards_remote, an_s3_listing_read_honestly_lists_each_shard_once, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	s3_listing("none", NULL);
}

Test(shards_remote, an_s3_listing_repeating_its_token_is_refused, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	s3_listing("repeat-token", "NextContinuationToken 't1'");
}

Test(shards_remote, an_s3_listing_repeating_keys_is_refused, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	s3_listing("repeat-keys", "again");
}

Test(shards_remote, an_s3_listing_out_of_order_is_refused, .init = remote_setup,
     .fini = remote_teardown, .timeout = 60)
{
	s3_listing("unordered", "ascending order");
}
