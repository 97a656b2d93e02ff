/* test_token_pack.c - the token shard writers of `ringfeed gen --tokens`
 * and `ringfeed pack --tokens` (src/pack/token_gen.c, token_pack.c),
 * through their functions. Every .bin.zst the packer writes passes the
 * loader's own header and frame-table checks (rfi_token_header_parse,
 * rfi_tokz_table_check), holds exactly one zstd frame per table entry with
 * its content size, and decompresses to the .bin's bytes, frame by frame
 * and window by window (the frames the index's read plan names for a
 * window), for frames of 1, 7 and 4096 tokens, counts that are and are not
 * multiples of them (and 0), uint16 and uint32 tokens. A stop (the flag a
 * signal handler sets) leaves nothing behind, mid-shard or between shards;
 * bad sources and output folders are refused naming the file. Token j of a
 * generated set is a function of (seed, j) alone. tests/cli_tokens.sh runs
 * the commands themselves. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "index/index.h"
#include "source/token_shard.h"
#include "source/token_windows.h"
#include "source/source.h"
#include "pack/tokens.h"
#include "testutil.h"

/* Writes dir/name in llm.c's layout (dev/data/data_common.py
 * write_datafile): 256 int32 header words (magic, version, count, zeros),
 * then n tokens of width 2 or 4. Token j is mixed from (salt, j), below
 * the vocabulary (GPT-2's, Llama-3's), so frames differ everywhere. */
static void write_bin(const char *dir, const char *name, uint32_t n, int llama3, uint32_t salt)
{
	uint32_t w = llama3 ? 4 : 2;
	size_t len = RF_TOKEN_HEADER_BYTES + (size_t)n * w;
	uint8_t *b = calloc(1, len);
	cr_assert(b);
	mkdir(dir, 0755); /* its parent exists; it may too */
	int32_t hdr[3] = { llama3 ? RF_TOKENS_LLAMA3 : RF_TOKENS_GPT2,
			   llama3 ? RF_TOKENS_LLAMA3_VERSION : RF_TOKENS_GPT2_VERSION, (int32_t)n };
	memcpy(b, hdr, sizeof(hdr)); /* little-endian hosts, as the library */
	for (uint32_t j = 0; j < n; j++) {
		uint32_t t = ((j * 2654435761u) ^ (salt * 40503u)) % (llama3 ? 128256u : 50257u);
		t = j % 3 ? t % 512 : t; /* two of three small: something to compress */
		memcpy(b + RF_TOKEN_HEADER_BYTES + (size_t)j * w, &t, w);
	}
	tu_write(dir, name, b, len);
	free(b);
}

static int exists(const char *dir, const char *name)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	struct stat st;
	int yes = stat(p, &st) == 0;
	free(p);
	return yes;
}

/* Files in dir whose names end with ".tmp" (the writers' temporary files). */
static int temps_in(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "test -z \"$(find '%s' -name '*.tmp' 2>/dev/null)\"", dir);
	return system(cmd) != 0;
}

static int pack(const char *src, const char *out, uint32_t F, int level, char *err, size_t len)
{
	rf_token_pack_opts o = { .source = src, .out = out, .frame_tokens = F, .level = level };
	rf_token_pack_result res;
	return rfi_token_pack(&o, &res, err, len);
}

/* zdir/name.zst against bdir/name, checked as a reader would and frame by
 * frame against the plain shard's bytes. */
static void check_packed(const char *bdir, const char *zdir, const char *name, uint32_t F)
{
	char zname[512];
	snprintf(zname, sizeof(zname), "%s.zst", name);
	size_t blen, zlen;
	uint8_t *b = tu_read(bdir, name, &blen), *z = tu_read(zdir, zname, &zlen);
	rf_token_header hb, h;
	char why[256];
	cr_assert_eq(rfi_token_header_parse(b, blen, &hb, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(rfi_token_header_parse(z, zlen, &h, why, sizeof(why)), 0, "%s: %s", zname, why);
	uint64_t nf = (hb.tokens + F - 1) / F;
	cr_assert_eq(h.magic, hb.magic);
	cr_assert_eq(h.width, hb.width);
	cr_assert_eq(h.tokens, hb.tokens);
	cr_assert_eq(h.frame_tokens, F);
	cr_assert_eq(h.frames, nf, "%s: %u frames, want ceil(%llu / %u) = %llu", zname, h.frames,
		     (unsigned long long)hb.tokens, F, (unsigned long long)nf);
	cr_assert_eq(h.table_bytes, 8 * (nf + 1));
	for (int i = 8; i < 256; i++)
		cr_assert_eq(((uint32_t *)z)[i], 0, "%s: header word %d", zname, i);
	uint64_t *off = malloc(h.table_bytes);
	cr_assert(off);
	cr_assert_eq(rfi_tokz_table_check(&h, z + RF_TOKEN_HEADER_BYTES, zlen, off, why, sizeof(why)),
		     0, "%s: %s", zname, why);
	size_t fb = (size_t)F * h.width;
	uint8_t *out = malloc(fb);
	cr_assert(out);
	for (uint64_t k = 0; k < nf; k++) {
		size_t len = (size_t)(off[k + 1] - off[k]);
		uint64_t n = hb.tokens - k * F < F ? hb.tokens - k * F : F;
		cr_assert_eq(ZSTD_findFrameCompressedSize(z + off[k], len), len,
			     "%s: frame %llu is one zstd frame, all of its table entry", zname,
			     (unsigned long long)k);
		cr_assert_eq(ZSTD_getFrameContentSize(z + off[k], len), n * h.width,
			     "%s: frame %llu's content size", zname, (unsigned long long)k);
		size_t r = ZSTD_decompress(out, fb, z + off[k], len);
		cr_assert(!ZSTD_isError(r), "%s: frame %llu: %s", zname, (unsigned long long)k,
			  ZSTD_getErrorName(r));
		cr_assert_eq(r, n * h.width);
		cr_assert_eq(memcmp(out, b + RF_TOKEN_HEADER_BYTES + k * fb, r), 0,
			     "%s: frame %llu differs from tokens %llu.. of %s", zname,
			     (unsigned long long)k, (unsigned long long)(k * F), name);
	}
	free(out);
	free(off);
	free(b);
	free(z);
}

/* Every window of T + 1 tokens every stride tokens of the packed folder,
 * read as the loader reads it (the bytes rfi_tokens_read_of names: whole
 * frames), decompressed and trimmed, equals the same tokens of the .bin. */
static void check_windows(const char *bdir, const char *zdir, uint32_t T, uint32_t stride)
{
	rf_source src;
	char err[512];
	rf_source_params sp = { .seq_len = T, .stride = stride, .log_level = RF_LOG_WARN };
	cr_assert_eq(rfi_source_open(&src, zdir, &sp, err, sizeof(err)), 0, "%s", err);
	const rf_index idx = src.index;
	const rf_tokens *tk = rfi_source_tokens_of(&src);
	cr_assert(tk->any_zstd);
	uint8_t **b = calloc(idx.nshards, sizeof(*b)), **z = calloc(idx.nshards, sizeof(*z));
	cr_assert(b && z);
	for (size_t i = 0; i < idx.nshards; i++) {
		char name[512];
		size_t len;
		snprintf(name, sizeof(name), "%.*s", (int)(strlen(idx.shards[i]) - 4), idx.shards[i]);
		b[i] = tu_read(bdir, name, &len); /* the .bin of NAME.bin.zst */
		z[i] = tu_read(zdir, idx.shards[i], &len);
	}
	size_t wlen = ((size_t)T + 1) * tk->width;
	uint64_t spanning = 0; /* windows in two frames or more */
	for (uint64_t w = 0; w < tk->windows; w++) {
		rf_token_read rd;
		rfi_tokens_read_of(tk, w, &rd);
		cr_assert(rd.zstd);
		const rf_token_shard *sh = &tk->shards[rd.shard];
		cr_assert_leq(rd.offset + rd.len, sh->size);
		uint64_t first = (uint64_t)rd.frame * sh->frame_tokens;
		size_t cap = (size_t)(rd.token + T + 1 - first + sh->frame_tokens) * tk->width;
		uint8_t *out = malloc(cap);
		cr_assert(out);
		/* the frames read one after the other: ZSTD_decompress takes them all */
		size_t r = ZSTD_decompress(out, cap, z[rd.shard] + rd.offset, rd.len);
		cr_assert(!ZSTD_isError(r), "window %llu: %s", (unsigned long long)w,
			  ZSTD_getErrorName(r));
		size_t at = (size_t)(rd.token - first) * tk->width;
		cr_assert_leq(at + wlen, r, "window %llu: its frames hold it", (unsigned long long)w);
		cr_assert_eq(memcmp(out + at, b[rd.shard] + RF_TOKEN_HEADER_BYTES + rd.token * tk->width,
				    wlen), 0, "window %llu (%s, token %llu) differs from the .bin",
			     (unsigned long long)w, idx.shards[rd.shard], (unsigned long long)rd.token);
		spanning += (rd.token + T) / sh->frame_tokens > rd.frame;
		free(out);
	}
	cr_assert_gt(spanning, 0, "some window spans frames");
	for (size_t i = 0; i < idx.nshards; i++) {
		free(b[i]);
		free(z[i]);
	}
	free(b);
	free(z);
	rfi_source_free(&src);
}

Test(token_pack, frames_and_windows_equal_the_plain_shards)
{
	static const struct {
		uint32_t F;
		uint32_t counts[4]; /* multiples of F and not; 0: an empty shard */
	} cases[] = {
		{ 1, { 1, 2, 1000, 0 } },
		{ 7, { 70, 75, 6, 1 } },
		{ 4096, { 8192, 10000, 4095, 0 } },
	};
	for (int llama3 = 0; llama3 < 2; llama3++) {
		for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			char *dir = tu_tmpdir("tokpack");
			char bdir[4096], zdir[4096], name[64], err[512];
			snprintf(bdir, sizeof(bdir), "%s/bin", dir);
			snprintf(zdir, sizeof(zdir), "%s/zst", dir);
			for (uint32_t i = 0; i < 4; i++) {
				snprintf(name, sizeof(name), "train_%06u.bin", i);
				write_bin(bdir, name, cases[c].counts[i], llama3, i + 1);
			}
			uint32_t F = cases[c].F;
			cr_assert_eq(pack(bdir, zdir, F, 3, err, sizeof(err)), 0, "F %u: %s", F, err);
			for (uint32_t i = 0; i < 4; i++) {
				snprintf(name, sizeof(name), "train_%06u.bin", i);
				check_packed(bdir, zdir, name, F);
			}
			cr_assert(!temps_in(dir), "a temporary file left");
			/* windows across many frames (F 1), two or three (F 7), in
			 * one or across two (F 4096) */
			check_windows(bdir, zdir, 8, 3);
			if (F == 4096)
				check_windows(bdir, zdir, 5000, 1000);
			tu_rmrf(dir);
			free(dir);
		}
	}
}

/* Progress callbacks that stop the pack (or gen) as a signal handler would. */
typedef struct stopper {
	volatile sig_atomic_t stop;
	uint64_t at; /* set stop once this many tokens are done */
	int calls;
} stopper;

static void stop_at(void *user, uint64_t done, uint64_t total)
{
	(void)total;
	stopper *s = user;
	s->calls++;
	if (done >= s->at)
		s->stop = SIGINT;
}

Test(token_pack, a_stop_leaves_nothing)
{
	char *dir = tu_tmpdir("tokstop");
	char bdir[4096], zdir[4096], err[512];
	snprintf(bdir, sizeof(bdir), "%s/bin", dir);
	snprintf(zdir, sizeof(zdir), "%s/zst", dir);
	/* 3M tokens: the pack reads 2M (4 MiB) at a time, so the first stop
	 * comes in the middle of shard 0; the second once shard 0 is whole */
	write_bin(bdir, "a.bin", 3000000, 0, 1);
	write_bin(bdir, "b.bin", 3000000, 0, 2);
	const uint64_t ats[] = { 1, 3000000 };
	for (int k = 0; k < 2; k++) {
		for (int premade = 0; premade < 2; premade++) {
			if (premade)
				tu_mkdirs(dir, "zst");
			stopper s = { .at = ats[k] };
			rf_token_pack_opts o = { .source = bdir, .out = zdir, .frame_tokens = 4096,
						 .level = 1, .progress = stop_at, .user = &s,
						 .stop = &s.stop };
			rf_token_pack_result res;
			cr_assert_eq(rfi_token_pack(&o, &res, err, sizeof(err)), -EINTR,
				     "stopped after %llu tokens", (unsigned long long)ats[k]);
			cr_assert_gt(s.calls, 0);
			/* a folder it made goes; one that was there stays, empty */
			cr_assert_eq(exists(dir, "zst"), premade, "the output folder");
			if (premade) {
				cr_assert(!exists(zdir, "a.bin.zst") && !exists(zdir, ".a.bin.zst.tmp"));
				cr_assert(!exists(zdir, "b.bin.zst") && !exists(zdir, ".b.bin.zst.tmp"));
				cr_assert_eq(rmdir(zdir), 0, "the folder is empty: %s", strerror(errno));
			}
		}
	}
	/* gen stopped in its first shard's first chunk, and after a whole shard */
	for (int k = 0; k < 2; k++) {
		stopper s = { .at = k ? 2000000 : 1 };
		rf_token_gen_opts g = { .out = zdir, .shards = 3, .shard_tokens = 2000000,
					.vocab = 50257, .zipf = 1, .zipf_s = 1.0, .progress = stop_at,
					.user = &s, .stop = &s.stop };
		cr_assert_eq(rfi_token_gen(&g, err, sizeof(err)), -EINTR, "%s", err);
		cr_assert(!exists(dir, "zst"), "gen: the folder it made is gone");
	}
	cr_assert(!temps_in(dir));
	tu_rmrf(dir);
	free(dir);
}

static void assert_refused(int ret, int want, const char *err, const char *a, const char *b)
{
	cr_assert_eq(ret, want, "returned %d, want %d: %s", ret, want, err);
	cr_assert(strstr(err, a), "'%s' does not name '%s'", err, a);
	cr_assert(!b || strstr(err, b), "'%s' does not say '%s'", err, b);
}

Test(token_pack, bad_sources_and_outputs_are_refused)
{
	char *dir = tu_tmpdir("tokbad");
	char bdir[4096], zdir[4096], other[4096], err[512];
	snprintf(bdir, sizeof(bdir), "%s/bin", dir);
	snprintf(zdir, sizeof(zdir), "%s/zst", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	write_bin(bdir, "a.bin", 1000, 0, 1);
	cr_assert_eq(pack(bdir, zdir, 100, 3, err, sizeof(err)), 0, "%s", err);

	/* a .bin.zst source, packed again */
	assert_refused(pack(zdir, other, 100, 3, err, sizeof(err)), RF_EINDEX, err, "a.bin.zst",
		       "already a .bin.zst");
	cr_assert(!exists(dir, "other"), "nothing written");
	/* an output folder that holds .bin.zst shards: left alone */
	assert_refused(pack(bdir, zdir, 100, 3, err, sizeof(err)), -EEXIST, err, "a.bin.zst",
		       "already holds token shards");
	check_packed(bdir, zdir, "a.bin", 100);
	/* the source's own folder */
	assert_refused(pack(bdir, bdir, 100, 3, err, sizeof(err)), RF_ECONFIG, err, bdir,
		       "the source's");

	/* a file that is no token shard, and one cut short: named, nothing written */
	tu_write(bdir, "b.bin", "not tokens, not at all; a header is 1024 bytes long", 51);
	assert_refused(pack(bdir, other, 100, 3, err, sizeof(err)), RF_EINDEX, err, "b.bin",
		       "truncated");
	uint8_t junk[2048];
	memset(junk, 'x', sizeof(junk));
	tu_write(bdir, "b.bin", junk, sizeof(junk));
	assert_refused(pack(bdir, other, 100, 3, err, sizeof(err)), RF_EINDEX, err, "b.bin",
		       "bad magic");
	write_bin(bdir, "b.bin", 1000, 0, 2);
	char p[4200];
	snprintf(p, sizeof(p), "%s/b.bin", bdir);
	cr_assert_eq(truncate(p, RF_TOKEN_HEADER_BYTES + 999 * 2), 0);
	assert_refused(pack(bdir, other, 100, 3, err, sizeof(err)), RF_EINDEX, err, "b.bin",
		       "truncated");
	cr_assert(!exists(dir, "other"), "nothing written");
	cr_assert_eq(unlink(p), 0);

	/* bad frame sizes and levels */
	assert_refused(pack(bdir, other, 0, 3, err, sizeof(err)), RF_ECONFIG, err, "frame", NULL);
	assert_refused(pack(bdir, other, RF_TOKZ_FRAME_MAX + 1, 3, err, sizeof(err)), RF_ECONFIG,
		       err, "frame", NULL);
	assert_refused(pack(bdir, other, 100, ZSTD_maxCLevel() + 1, err, sizeof(err)), RF_ECONFIG,
		       err, "level", NULL);

	/* a name as long as a file name may be with ".zst", ".", ".tmp": whole */
	char longname[256];
	memset(longname, 'n', 242);
	snprintf(longname + 242, sizeof(longname) - 242, ".bin");
	cr_assert_eq(strlen(longname) + 4 + 5, 255);
	write_bin(other, longname, 500, 1, 3);
	snprintf(p, sizeof(p), "%s/long", dir);
	cr_assert_eq(pack(other, p, 7, 3, err, sizeof(err)), 0, "%s", err);
	check_packed(other, p, longname, 7);
	/* one byte more does not fit: refused, not cut */
	snprintf(p, sizeof(p), "%s/%s", other, longname);
	cr_assert_eq(unlink(p), 0);
	memmove(longname + 1, longname, strlen(longname) + 1);
	write_bin(other, longname, 500, 1, 3);
	snprintf(p, sizeof(p), "%s/long2", dir);
	assert_refused(pack(other, p, 7, 3, err, sizeof(err)), -ENAMETOOLONG, err, longname,
		       "too long a name");
	cr_assert(!exists(dir, "long2"));
	tu_rmrf(dir);
	free(dir);
}

/* Token j of a generated set depends on (seed, j) only: 4 shards of 1000
 * tokens hold the tokens of 2 shards of 2000; another seed differs. */
Test(token_pack, gen_tokens_are_a_function_of_seed_and_position)
{
	char *dir = tu_tmpdir("tokgen");
	char a[4096], b[4096], c[4096], err[512];
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(c, sizeof(c), "%s/c", dir);
	rf_token_gen_opts g = { .out = a, .shards = 4, .shard_tokens = 1000, .vocab = 128256,
				.zipf = 1, .zipf_s = 1.2, .llama3 = 1, .seed = 7 };
	cr_assert_eq(rfi_token_gen(&g, err, sizeof(err)), 0, "%s", err);
	g.out = b;
	g.shards = 2;
	g.shard_tokens = 2000;
	cr_assert_eq(rfi_token_gen(&g, err, sizeof(err)), 0, "%s", err);
	g.out = c;
	g.seed = 8;
	cr_assert_eq(rfi_token_gen(&g, err, sizeof(err)), 0, "%s", err);
	size_t len;
	uint8_t *all = malloc(4000 * 4);
	cr_assert(all);
	for (int i = 0; i < 4; i++) {
		char name[64];
		snprintf(name, sizeof(name), "tokens_%06d.bin", i);
		uint8_t *s = tu_read(a, name, &len);
		cr_assert_eq(len, RF_TOKEN_HEADER_BYTES + 1000 * 4);
		memcpy(all + i * 4000, s + RF_TOKEN_HEADER_BYTES, 4000);
		free(s);
	}
	for (int i = 0; i < 2; i++) {
		char name[64];
		snprintf(name, sizeof(name), "tokens_%06d.bin", i);
		uint8_t *s = tu_read(b, name, &len), *t = tu_read(c, name, &len);
		cr_assert_eq(memcmp(all + i * 8000, s + RF_TOKEN_HEADER_BYTES, 8000), 0,
			     "shard %d of 2 holds shards %d and %d of 4", i, 2 * i, 2 * i + 1);
		cr_assert_neq(memcmp(t + RF_TOKEN_HEADER_BYTES, s + RF_TOKEN_HEADER_BYTES, 8000), 0,
			      "seed 8 gives other tokens than seed 7");
		free(s);
		free(t);
	}
	free(all);
	tu_rmrf(dir);
	free(dir);
}
