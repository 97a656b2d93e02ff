/* test_tokens.c - token shards as a source (cfg.seq_len): shards written
 * here by a Python writer that follows llm.c's layout (write_datafile:
 * 256 int32 header words, then uint16 / uint32 tokens) are read; every row
 * of every batch equals the reference slice of the file (read whole here,
 * window w -> its shard and first token by the windows each shard holds),
 * for T that is and is not block-aligned, other strides, every row type
 * and every read path, O_DIRECT and buffered; each bad shard (magic,
 * version, a header that lies about the size, truncated, negative count,
 * shorter than a header, mixed widths, a FIFO, a damaged frame table) fails
 * create naming the file and the reason; a folder, a list, a glob, a brace
 * pattern and one file give the same windows; sequential is llm.c's order;
 * resume is exact at many cut points with other thread counts; ranks are
 * disjoint and cover the epoch; .bin.zst shards (written here with libzstd,
 * independently of `ringfeed pack`) give the same batches as the .bin. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "testutil.h"


/* llm.c's dev/data/data_common.py write_datafile, in plain Python (numpy
 * may be missing from the python3 on PATH): header = 256 int32 zeros with
 * magic, version, count; then the tokens, uint16 (GPT-2) or uint32
 * (Llama-3). Shard i holds counts[i] tokens: token j of shard i is
 * (i * 7919 + j * 31 + j / 5) % vocab, so windows differ everywhere. */
static void write_shards(const char *dir, const char *counts, int llama3)
{
	tu_run("mkdir -p '%s' && python3 - '%s' '%s' %d <<'EOF'\n"
	    "import struct, sys\n"
	    "out, counts, llama3 = sys.argv[1], [int(c) for c in sys.argv[2].split(',')], int(sys.argv[3])\n"
	    "magic, version, fmt, vocab = (20240801, 7, 'I', 128256) if llama3 else (20240520, 1, 'H', 50257)\n"
	    "for i, n in enumerate(counts):\n"
	    "    header = [0] * 256\n"
	    "    header[0], header[1], header[2] = magic, version, n\n"
	    "    toks = [(i * 7919 + j * 31 + j // 5) %% vocab for j in range(n)]\n"
	    "    with open('%%s/train_%%06d.bin' %% (out, i), 'wb') as f:\n"
	    "        f.write(struct.pack('<256i', *header))\n"
	    "        f.write(struct.pack('<%%d%%s' %% (n, fmt), *toks))\n"
	    "EOF",
	    dir, dir, counts, llama3);
}

/* The reference: every shard's tokens read whole, as uint32. */
typedef struct ref_shard {
	uint32_t *tok;
	uint64_t n, first_window, windows;
} ref_shard;

typedef struct ref {
	ref_shard s[16];
	int n;
	uint64_t windows;
} ref;

static void ref_load(ref *r, const char *dir, int nshards, uint32_t T, uint32_t stride)
{
	memset(r, 0, sizeof(*r));
	r->n = nshards;
	for (int i = 0; i < nshards; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "train_%06d.bin", i);
		size_t len;
		uint8_t *b = tu_read(dir, rel, &len);
		int32_t hdr[256];
		memcpy(hdr, b, sizeof(hdr));
		uint32_t width = hdr[0] == 20240801 ? 4 : 2;
		ref_shard *s = &r->s[i];
		s->n = (uint64_t)hdr[2];
		cr_assert_eq(len, 1024 + s->n * width);
		s->tok = malloc((s->n + 1) * sizeof(uint32_t));
		for (uint64_t j = 0; j < s->n; j++) {
			uint32_t v = 0;
			memcpy(&v, b + 1024 + j * width, width);
			s->tok[j] = v;
		}
		free(b);
		s->first_window = r->windows;
		s->windows = s->n < T + 1 ? 0 : (s->n - T - 1) / stride + 1;
		r->windows += s->windows;
	}
}

static void ref_free(ref *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->s[i].tok);
}

/* The reference tokens of window w, as uint32. */
static const uint32_t *ref_window(const ref *r, uint64_t w, uint32_t stride)
{
	for (int i = 0; i < r->n; i++)
		if (w < r->s[i].first_window + r->s[i].windows)
			return r->s[i].tok + (w - r->s[i].first_window) * stride;
	cr_assert_fail("window %llu past the reference's %llu", (unsigned long long)w,
		       (unsigned long long)r->windows);
	return NULL;
}

static void token_config(rf_config *cfg, const char *source, uint32_t T)
{
	tu_config(cfg, source);
	cfg->seq_len = T;
}

/* Drains cfg and checks every row of every batch against the reference;
 * returns the windows delivered (malloc'ed ids, *n). */
static uint64_t *check_rows(const rf_config *cfg, const ref *r, uint32_t stride, size_t *n)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	uint32_t T = cfg->seq_len, width = cfg->token_dtype == RF_DTYPE_UINT16 ? 2
					   : cfg->token_dtype == RF_DTYPE_INT64 ? 8 : 4;
	size_t cap = 1024;
	uint64_t *ids = malloc(cap * sizeof(*ids));
	*n = 0;
	rf_batch *b;
	int ret;
	while ((ret = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq(b->width, T + 1);
		cr_assert_eq(b->height, 1);
		cr_assert_eq(b->channels, 1);
		cr_assert_eq(b->dtype, cfg->token_dtype);
		cr_assert_eq(b->sample_bytes, (size_t)(T + 1) * width);
		for (uint32_t i = 0; i < b->count; i++) {
			const uint32_t *want = ref_window(r, b->ids[i], stride);
			const uint8_t *row = b->data + (size_t)i * b->sample_bytes;
			for (uint32_t j = 0; j <= T; j++) {
				uint64_t v = 0;
				memcpy(&v, row + (size_t)j * width, width);
				cr_assert_eq(v, want[j], "window %llu token %u: %llu, the file has %u",
					     (unsigned long long)b->ids[i], j, (unsigned long long)v,
					     want[j]);
			}
			cr_assert_eq(b->labels[i], -1);
			if (*n == cap)
				ids = realloc(ids, (cap *= 2) * sizeof(*ids));
			ids[(*n)++] = b->ids[i];
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(ret, RF_EOF, "%s", rf_loader_error(l));
	rf_stats st;
	rf_loader_stats(l, &st);
	cr_assert_eq(st.samples_total, r->windows);
	cr_assert_eq(st.bad_samples, 0);
	rf_loader_destroy(l);
	return ids;
}

/* Every window of the epoch exactly once. */
static void assert_permutation(const uint64_t *ids, size_t n, uint64_t windows)
{
	cr_assert_eq(n, windows);
	uint8_t *seen = calloc(windows, 1);
	for (size_t i = 0; i < n; i++) {
		cr_assert_lt(ids[i], windows);
		cr_assert_eq(seen[ids[i]]++, 0, "window %llu twice", (unsigned long long)ids[i]);
	}
	free(seen);
}

/* Shards of 5,000, 3,000, 10 (no window), 7,001 and 1,025 tokens. */
#define COUNTS "5000,3000,10,7001,1025"
#define NSHARDS 5

Test(tokens, rows_equal_the_files_slices)
{
	char *dir = tu_tmpdir("tokens");
	write_shards(dir, COUNTS, 0);
	/* T + 1 = 1025 tokens = 2050 bytes: not block-aligned, windows start
	 * anywhere in a block; T = 255: 512 bytes; stride below and above T */
	const uint32_t Ts[] = { 1024, 255, 63, 64 }, strides[] = { 0, 0, 17, 100 };
	for (size_t k = 0; k < sizeof(Ts) / sizeof(Ts[0]); k++) {
		uint32_t stride = strides[k] ? strides[k] : Ts[k];
		ref r;
		ref_load(&r, dir, NSHARDS, Ts[k], stride);
		rf_config cfg;
		token_config(&cfg, dir, Ts[k]);
		cfg.stride = strides[k];
		cfg.token_dtype = RF_DTYPE_UINT16;
		cfg.seed = k;
		size_t n;
		uint64_t *ids = check_rows(&cfg, &r, stride, &n);
		assert_permutation(ids, n, r.windows);
		free(ids);
		ref_free(&r);
	}
	tu_rmrf(dir);
	free(dir);
}

Test(tokens, every_row_type_read_path_and_buffering)
{
	char *dir = tu_tmpdir("tokens");
	write_shards(dir, COUNTS, 0);
	char *dir32 = tu_tmpdir("tokens32");
	write_shards(dir32, COUNTS, 1);
	const rf_io_path paths[] = { RF_IO_AUTO, RF_IO_URING_PLAIN, RF_IO_PREAD };
	for (int llama = 0; llama < 2; llama++) {
		const char *d = llama ? dir32 : dir;
		ref r;
		ref_load(&r, d, NSHARDS, 100, 100);
		for (int t = 0; t < 4; t++) {
			rf_dtype want = t == 0 ? (llama ? RF_DTYPE_UINT32 : RF_DTYPE_UINT16)
				      : t == 1 ? RF_DTYPE_INT32 : t == 2 ? RF_DTYPE_UINT32
				      : RF_DTYPE_INT64;
			for (int p = 0; p < 3; p++) {
				rf_config cfg;
				token_config(&cfg, d, 100);
				cfg.token_dtype = t == 0 ? 0 : want; /* 0: as stored */
				cfg.io_path = paths[p];
				cfg.no_direct_io = (p + t) % 2;
				size_t n;
				rf_loader *l;
				char err[512];
				cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
				rf_batch *b;
				cr_assert_eq(rf_loader_next(l, &b), 0);
				cr_assert_eq(b->dtype, want, "as stored: %d, delivered %d", want, b->dtype);
				rf_batch_release(l, b);
				rf_loader_destroy(l);
				cfg.token_dtype = want;
				free(check_rows(&cfg, &r, 100, &n));
				cr_assert_eq(n, r.windows);
			}
		}
		ref_free(&r);
	}
	/* uint16 rows cannot hold Llama-3's tokens */
	rf_config cfg;
	token_config(&cfg, dir32, 100);
	cfg.token_dtype = RF_DTYPE_UINT16;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "uint32"), "%s", err);
	tu_rmrf(dir);
	tu_rmrf(dir32);
	free(dir);
	free(dir32);
}

Test(tokens, sequential_is_llmc_order_and_sources_agree)
{
	char *dir = tu_tmpdir("tokens");
	write_shards(dir, COUNTS, 0);
	ref r;
	ref_load(&r, dir, NSHARDS, 64, 64);
	rf_config cfg;
	token_config(&cfg, dir, 64);
	cfg.shuffle = 0;
	cfg.token_dtype = RF_DTYPE_UINT16;
	size_t n;
	uint64_t *ids = check_rows(&cfg, &r, 64, &n);
	cr_assert_eq(n, r.windows);
	for (size_t i = 0; i < n; i++) /* shard after shard, window after window */
		cr_assert_eq(ids[i], i);
	free(ids);
	/* a list file, a glob, a brace pattern: the same windows in the same
	 * order; one file alone: its own windows */
	char list[4096], glob[4096], brace[4096];
	snprintf(list, sizeof(list), "%s/shards.txt", dir);
	tu_run("cd '%s' && printf '# shards\\ntrain_000000.bin\\ntrain_000001.bin\\ntrain_000002.bin\\n"
	    "train_000003.bin\\n\\ntrain_000004.bin\\n' > shards.txt", dir);
	snprintf(glob, sizeof(glob), "%s/train_*.bin", dir);
	snprintf(brace, sizeof(brace), "%s/train_{000000..000004}.bin", dir);
	const char *sources[] = { list, glob, brace };
	for (int s = 0; s < 3; s++) {
		cfg.source = sources[s];
		ids = check_rows(&cfg, &r, 64, &n);
		cr_assert_eq(n, r.windows, "%s", sources[s]);
		free(ids);
	}
	char one[4096];
	snprintf(one, sizeof(one), "%s/train_000001.bin", dir);
	cfg.source = one;
	size_t m;
	uint64_t *only = tu_drain_ids(&cfg, &m);
	cr_assert_eq(m, r.s[1].windows);
	free(only);
	ref_free(&r);
	tu_rmrf(dir);
	free(dir);
}

/* create on dir fails with code, and its message names the shard and has
 * the reason. */
static void assert_refused(const char *dir, int code, const char *shard, const char *reason)
{
	rf_config cfg;
	token_config(&cfg, dir, 64);
	rf_loader *l = (rf_loader *)1;
	char err[512];
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	cr_assert_eq(ret, code, "%s: %d (%s), not %d", shard, ret, err, code);
	cr_assert_null(l);
	cr_assert(strstr(err, shard), "the message names %s: %s", shard, err);
	cr_assert(strstr(err, reason), "the message says '%s': %s", reason, err);
}

/* Overwrites int32 header word k of dir/train_000001.bin. */
static void set_word(const char *dir, int k, int32_t v)
{
	tu_run("python3 -c \"import struct; f=open('%s/train_000001.bin','r+b'); f.seek(%d); "
	    "f.write(struct.pack('<i', %d))\"", dir, 4 * k, v);
}

Test(tokens, bad_shards_are_refused_naming_file_and_reason)
{
	char *dir = tu_tmpdir("badtok");
	struct {
		const char *what, *reason;
	} cases[] = {
		{ "magic", "bad magic 12345" },
		{ "version", "version 2 with magic 20240520" },
		{ "count_more", "truncated: the header says 3001 tokens" },
		{ "count_less", "size mismatch: the header says 2999 tokens" },
		{ "negative", "negative" },
		{ "truncated", "truncated" },
		{ "short", "less than the 1024-byte header" },
		{ "empty", "less than the 1024-byte header" },
		{ "mixed", "one source has one token width" },
		{ "fifo", "not a regular file" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *w = cases[i].what;
		tu_rmrf(dir);
		write_shards(dir, "5000,3000,2000", 0);
		if (!strcmp(w, "magic"))
			set_word(dir, 0, 12345);
		else if (!strcmp(w, "version"))
			set_word(dir, 1, 2);
		else if (!strcmp(w, "count_more"))
			set_word(dir, 2, 3001);
		else if (!strcmp(w, "count_less"))
			set_word(dir, 2, 2999);
		else if (!strcmp(w, "negative"))
			set_word(dir, 2, -5);
		else if (!strcmp(w, "truncated"))
			tu_run("truncate -s 4000 '%s/train_000001.bin'", dir);
		else if (!strcmp(w, "short"))
			tu_run("truncate -s 1000 '%s/train_000001.bin'", dir);
		else if (!strcmp(w, "empty"))
			tu_run("truncate -s 0 '%s/train_000001.bin'", dir);
		else if (!strcmp(w, "mixed")) {
			char *d32 = tu_tmpdir("tok32");
			write_shards(d32, "3000,3000", 1);
			tu_run("cp '%s/train_000001.bin' '%s/train_000001.bin'", d32, dir);
			tu_rmrf(d32);
			free(d32);
		} else if (!strcmp(w, "fifo")) {
			tu_run("rm '%s/train_000001.bin' && mkfifo '%s/train_000001.bin'", dir, dir);
		}
		assert_refused(dir, RF_EINDEX, "train_000001.bin", cases[i].reason);
	}
	/* no shard in the folder; shards too short for one window */
	tu_rmrf(dir);
	tu_run("mkdir -p '%s'", dir);
	tu_write(dir, "readme.txt", "x", 1);
	assert_refused(dir, RF_EEMPTY, dir, "no token shards");
	write_shards(dir, "20,64", 0);
	assert_refused(dir, RF_EEMPTY, dir, "none holds a window of 64 + 1 tokens");
	/* a list naming something else, a glob that matches nothing */
	char src[4096];
	snprintf(src, sizeof(src), "%s/list.txt", dir);
	tu_run("printf 'train_000000.bin\\nnotes.txt\\n' > '%s'", src);
	rf_config cfg;
	token_config(&cfg, src, 64);
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_EINDEX);
	cr_assert(strstr(err, "notes.txt"), "%s", err);
	snprintf(src, sizeof(src), "%s/val_*.bin", dir);
	cfg.source = src;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_EEMPTY);
	cr_assert(strstr(err, "no file matches"), "%s", err);
	/* settings that do not go with tokens */
	write_shards(dir, "5000", 0);
	cfg.source = dir;
	cfg.raw = 1;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "raw"), "%s", err);
	cfg.raw = 0;
	cfg.sampler = RF_SAMPLER_BALANCED;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "sampler"), "%s", err);
	tu_rmrf(dir);
	free(dir);
}

/* ---- .bin.zst, written here with libzstd after token_shard.h's layout ---- */

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* little-endian hosts only, as the library */
}

/* dir/train_i.bin -> zdir/train_i.bin.zst with frames of F tokens. */
static void write_zst(const char *dir, const char *zdir, int nshards, uint32_t F)
{
	tu_run("mkdir -p '%s'", zdir);
	for (int i = 0; i < nshards; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "train_%06d.bin", i);
		size_t len;
		uint8_t *b = tu_read(dir, rel, &len);
		int32_t magic, count;
		memcpy(&magic, b, 4);
		memcpy(&count, b + 8, 4);
		uint32_t width = magic == 20240801 ? 4 : 2;
		uint32_t nf = ((uint32_t)count + F - 1) / F;
		size_t table = 8 * ((size_t)nf + 1), cap = 1024 + table;
		for (uint32_t k = 0; k < nf; k++)
			cap += ZSTD_compressBound((size_t)F * width);
		uint8_t *z = calloc(1, cap);
		put32(z, 20261124);
		put32(z + 4, 1);
		put32(z + 8, width);
		put32(z + 12, (uint32_t)magic);
		put32(z + 16, F);
		put32(z + 20, nf);
		put32(z + 24, (uint32_t)count);
		uint64_t off = 1024 + table;
		for (uint32_t k = 0; k <= nf; k++) {
			memcpy(z + 1024 + 8 * (size_t)k, &off, 8);
			if (k == nf)
				break;
			uint64_t first = (uint64_t)k * F, n = (uint64_t)count - first < F ? (uint64_t)count - first : F;
			size_t r = ZSTD_compress(z + off, cap - off, b + 1024 + first * width, n * width, 3);
			cr_assert(!ZSTD_isError(r));
			off += r;
		}
		snprintf(rel, sizeof(rel), "train_%06d.bin.zst", i);
		tu_write(zdir, rel, z, off);
		free(z);
		free(b);
	}
}

Test(tokens, zst_shards_give_the_same_batches)
{
	char *dir = tu_tmpdir("tokens");
	write_shards(dir, COUNTS, 0);
	char zdir[4096];
	snprintf(zdir, sizeof(zdir), "%s/z", dir);
	/* F = 1000: a window of 101 tokens in one or two frames; F = 7: in
	 * many; F = 100000: one frame a shard */
	const uint32_t frames[] = { 1000, 7, 100000 };
	for (int k = 0; k < 3; k++) {
		tu_run("rm -rf '%s'", zdir);
		write_zst(dir, zdir, NSHARDS, frames[k]);
		for (int seq = 0; seq < 2; seq++) {
			rf_config a, b;
			token_config(&a, dir, 100);
			a.shuffle = !seq;
			a.token_dtype = RF_DTYPE_INT32;
			b = a;
			b.source = zdir;
			b.threads = 1 + k;
			tu_batch *ba, *bb;
			rf_loader *l;
			char err[512];
			cr_assert_eq(rf_loader_create(&l, &a, err, sizeof(err)), 0, "%s", err);
			size_t na = tu_take(l, SIZE_MAX, &ba);
			rf_loader_destroy(l);
			cr_assert_eq(rf_loader_create(&l, &b, err, sizeof(err)), 0, "%s", err);
			size_t nb = tu_take(l, SIZE_MAX, &bb);
			rf_loader_destroy(l);
			cr_assert_eq(na, nb);
			for (size_t i = 0; i < na; i++)
				tu_assert_same_batch(&ba[i], &bb[i], ".bin.zst");
			tu_batches_free(ba, na);
			tu_batches_free(bb, nb);
		}
	}
	/* a damaged frame table is refused at create, naming the shard */
	tu_run("python3 -c \"import struct; f=open('%s/train_000002.bin.zst','r+b'); f.seek(1032); "
	    "f.write(struct.pack('<Q', 1))\"", zdir);
	assert_refused(zdir, RF_EINDEX, "train_000002.bin.zst", "frame table");
	/* a corrupt frame is a bad window: reported with the reason, replaced */
	write_zst(dir, zdir, NSHARDS, 1000);
	tu_run("python3 -c \"f=open('%s/train_000000.bin.zst','r+b'); f.seek(1024 + 8 * 6 + 8); "
	    "f.write(b'\\xff' * 16)\"", zdir);
	rf_config c;
	token_config(&c, zdir, 100);
	tu_bad_log bad = { 0 };
	c.on_sample_error = tu_on_bad;
	c.user = &bad;
	size_t n;
	free(tu_drain_ids(&c, &n));
	cr_assert_gt(bad.n, 0);
	cr_assert(strstr(bad.reason, "zstd"), "%s", bad.reason);
	tu_rmrf(dir);
	free(dir);
}

/* ---- order, resume and ranks --------------------------------------------- */

Test(tokens, resume_is_exact_with_other_thread_counts)
{
	char *dir = tu_tmpdir("tokens");
	write_shards(dir, COUNTS, 0);
	char zdir[4096];
	snprintf(zdir, sizeof(zdir), "%s/z", dir);
	write_zst(dir, zdir, NSHARDS, 500);
	/* shuffled, and in llm.c's order (read in chunks), .bin and .bin.zst */
	const char *sources[] = { dir, zdir, dir, zdir };
	for (int s = 0; s < 4; s++) {
		rf_config base;
		token_config(&base, sources[s], 127);
		base.shuffle = s < 2;
		base.epochs = 2;
		base.batch_size = 7;
		rf_loader *l;
		char err[512];
		cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
		tu_batch *ref;
		size_t nref = tu_take(l, SIZE_MAX, &ref);
		rf_loader_destroy(l);
		/* cut points spread over both epochs, not on a pattern */
		for (size_t k = 1; k < nref; k += 1 + (k * 7) % 11) {
			cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
			tu_batch *b;
			size_t n = tu_take(l, k, &b);
			tu_batches_free(b, n);
			uint8_t state[RF_STATE_MAX_BYTES];
			int len = rf_loader_state_save(l, state, sizeof(state));
			cr_assert_gt(len, 0);
			rf_loader_destroy(l);
			rf_config c = base;
			c.resume_state = state;
			c.resume_state_len = (size_t)len;
			c.threads = 1 + (int)(k % 3);
			c.io_depth = 3 + (int)(k % 5);
			c.prefetch = 1 + (int)(k % 4);
			cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), 0, "%s", err);
			n = tu_take(l, SIZE_MAX, &b);
			cr_assert_eq(n, nref - k);
			for (size_t i = 0; i < n; i++)
				tu_assert_same_batch(&ref[k + i], &b[i], "resumed");
			tu_batches_free(b, n);
			rf_loader_destroy(l);
		}
		/* another seq_len is another dataset: refused, naming it */
		cr_assert_eq(rf_loader_create(&l, &base, err, sizeof(err)), 0, "%s", err);
		uint8_t state[RF_STATE_MAX_BYTES];
		int len = rf_loader_state_save(l, state, sizeof(state));
		rf_loader_destroy(l);
		rf_config c = base;
		c.resume_state = state;
		c.resume_state_len = (size_t)len;
		c.seq_len = 128;
		cr_assert_eq(rf_loader_create(&l, &c, err, sizeof(err)), RF_ESTATEMISMATCH, "%s", err);
		tu_batches_free(ref, nref);
	}
	tu_rmrf(dir);
	free(dir);
}

Test(tokens, ranks_are_disjoint_and_cover_the_epoch)
{
	char *dir = tu_tmpdir("tokens");
	write_shards(dir, COUNTS, 0);
	ref r;
	ref_load(&r, dir, NSHARDS, 50, 50);
	for (int shuffle = 0; shuffle < 2; shuffle++) {
		const int world = 3;
		uint8_t *seen = calloc(r.windows, 1);
		size_t total = 0;
		for (int rank = 0; rank < world; rank++) {
			rf_config cfg;
			token_config(&cfg, dir, 50);
			cfg.shuffle = shuffle;
			cfg.rank = rank;
			cfg.world_size = world;
			cfg.rank_tail = RF_RANK_TAIL_DROP;
			size_t n;
			uint64_t *ids = tu_drain_ids(&cfg, &n);
			cr_assert_eq(n, r.windows / world);
			for (size_t i = 0; i < n; i++)
				cr_assert_eq(seen[ids[i]]++, 0, "window %llu on two ranks",
					     (unsigned long long)ids[i]);
			total += n;
			free(ids);
		}
		cr_assert_eq(total, r.windows - r.windows % world);
		free(seen);
	}
	ref_free(&r);
	tu_rmrf(dir);
	free(dir);
}
