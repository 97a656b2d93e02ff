/* test_pack.c - the tar pieces `ringfeed pack` writes, checked field by
 * field: ustar headers (octal fields, checksum, base-256 sizes), the padding
 * that puts data on an --align boundary for every offset and alignment, and
 * the pax record whose length prefix counts its own digits (the lengths
 * where the digit count changes included); where an output folder lies
 * against the source (rfi_out_dir_place). tests/cli_pack.sh reads whole
 * packs back with GNU tar, Python's tarfile and webdataset. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/out_file.h"
#include "pack/pack.h"
#include "ringfeed.h"
#include "pack/tar_write.h"

static uint64_t field(const uint8_t *h, int off, int len)
{
	char buf[16] = { 0 };
	memcpy(buf, h + off, (size_t)len);
	return strtoull(buf, NULL, 8);
}

static unsigned sum_as_spaces(const uint8_t *h)
{
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return sum;
}

Test(tar, header_fields)
{
	uint8_t h[512];
	cr_assert_eq(rfi_tar_header(h, "000000042.jpg", 123456, '0'), 0);
	cr_assert_str_eq((char *)h, "000000042.jpg");
	cr_assert_eq(field(h, 100, 8), 0644);
	cr_assert_eq(field(h, 108, 8), 0);
	cr_assert_eq(field(h, 116, 8), 0);
	cr_assert_eq(field(h, 124, 12), 123456);
	cr_assert_eq(field(h, 136, 12), 0, "mtime 0");
	cr_assert_eq(h[156], '0');
	cr_assert_eq(memcmp(h + 257, "ustar\0" "00", 8), 0);
	cr_assert_eq(h[265], 0, "no user name");
	cr_assert_eq(h[297], 0, "no group name");
	cr_assert_eq(field(h, 148, 7), sum_as_spaces(h), "checksum");
	cr_assert_eq(h[154], 0);
	cr_assert_eq(h[155], ' ');
}

Test(tar, header_names)
{
	uint8_t h[512];
	char name[102];
	memset(name, 'a', 100);
	name[100] = '\0';
	cr_assert_eq(rfi_tar_header(h, name, 1, '0'), 0, "100 bytes fit (no NUL)");
	cr_assert_eq(memcmp(h, name, 100), 0);
	name[100] = 'a';
	name[101] = '\0';
	cr_assert_eq(rfi_tar_header(h, name, 1, '0'), -ENAMETOOLONG);
	cr_assert_eq(rfi_tar_header(h, "", 1, '0'), -ENAMETOOLONG);
}

Test(tar, sizes_past_octal)
{
	uint8_t h[512];
	uint64_t max = 077777777777ull; /* 8 GiB - 1: the last 11-digit size */
	cr_assert_eq(rfi_tar_header(h, "big.bin", max, '0'), 0);
	cr_assert_eq(field(h, 124, 12), max);
	uint64_t big = (8ull << 30) + 12345;
	cr_assert_eq(rfi_tar_header(h, "big.bin", big, '0'), 0);
	cr_assert_eq(h[124], 0x80, "GNU base-256 marker");
	uint64_t v = 0;
	for (int i = 1; i < 12; i++)
		v = v << 8 | h[124 + i];
	cr_assert_eq(v, big);
	cr_assert_eq(field(h, 148, 7), sum_as_spaces(h), "checksum");
}

/* The pax record in buf[512 .. len): "N comment=...\n" with N == its length. */
static void check_record(const uint8_t *buf, uint64_t len)
{
	const char *r = (const char *)buf + 512;
	uint64_t rec = len - 512;
	cr_assert_eq(buf[156], 'x');
	cr_assert_eq(field(buf, 124, 12), rec, "the record fills the data exactly");
	cr_assert_eq(field(buf, 148, 7), sum_as_spaces(buf), "checksum");
	char *end;
	uint64_t n = strtoull(r, &end, 10);
	cr_assert_eq(n, rec, "length prefix %llu, record %llu", (unsigned long long)n,
		     (unsigned long long)rec);
	cr_assert_eq(strncmp(end, " comment=", 9), 0);
	cr_assert_eq(r[rec - 1], '\n');
	cr_assert_null(memchr(r, '\n', rec - 1), "one record");
	cr_assert_null(memchr(r, '\0', rec), "no NUL in the record");
}

Test(tar, padding_aligns_every_offset)
{
	static const uint64_t aligns[] = { 512, 1024, 4096, 65536, 1u << 20 };
	uint8_t *buf = malloc((1u << 20) + 1024);
	cr_assert(buf);
	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
		uint64_t align = aligns[a];
		for (uint64_t off = 0; off < 3 * align + 4096; off += 512) {
			uint64_t pad = rfi_tar_pad_bytes(off, align);
			cr_assert_eq((off + pad + 512) % align, 0, "off %llu align %llu: pad %llu",
				     (unsigned long long)off, (unsigned long long)align,
				     (unsigned long long)pad);
			cr_assert(pad == 0 || (pad >= 1024 && pad % 512 == 0 && pad < align + 1024));
			if (align == 512)
				cr_assert_eq(pad, 0);
			if (pad) {
				cr_assert_eq(rfi_tar_pad_member(buf, pad, "000000007.jpg"), 0);
				cr_assert_str_eq((char *)buf, "PaxHeaders/000000007.jpg");
				check_record(buf, pad);
			}
		}
	}
	free(buf);
}

/* Record lengths on both sides of the points where the length prefix gains
 * a digit (records here are whole blocks: 512 has 3 digits, 1024 4, 10240 5;
 * 1 MiB + 512 has 7). */
Test(tar, padding_record_lengths)
{
	uint8_t *buf = malloc((2u << 20) + 1024);
	cr_assert(buf);
	for (uint64_t len = 1024; len <= 24 * 512; len += 512) {
		cr_assert_eq(rfi_tar_pad_member(buf, len, "k.jpg"), 0);
		check_record(buf, len);
	}
	cr_assert_eq(rfi_tar_pad_member(buf, (1u << 20) + 1024, "k.jpg"), 0);
	check_record(buf, (1u << 20) + 1024);
	cr_assert_eq(rfi_tar_pad_member(buf, 512, "k.jpg"), -EINVAL, "no room for a record");
	cr_assert_eq(rfi_tar_pad_member(buf, 1000, "k.jpg"), -EINVAL, "not whole blocks");
	free(buf);
}

/* Where an output folder lies against the source (rfi_out_dir_place): by the
 * resolved paths, the output through its nearest existing parent, so that
 * neither a link, "..", a trailing '/' nor a folder not made yet hides that
 * it is the source or inside it; a sibling whose name starts with the
 * source's is apart. */
Test(out_dir, place)
{
	char tmpl[] = "/tmp/rf-place.XXXXXX";
	char *t = mkdtemp(tmpl);
	cr_assert(t);
	char src[256], sib[256], link[256], p[512];
	snprintf(src, sizeof(src), "%s/src", t);
	snprintf(sib, sizeof(sib), "%s/src2", t);
	snprintf(link, sizeof(link), "%s/link", t);
	cr_assert_eq(mkdir(src, 0755), 0);
	cr_assert_eq(mkdir(sib, 0755), 0);
	cr_assert_eq(symlink(src, link), 0);
	static const struct {
		const char *out; /* relative to t */
		rf_out_place want;
	} cases[] = {
		{ "src", RF_OUT_SAME },        { "src/", RF_OUT_SAME },
		{ "link", RF_OUT_SAME },       { "src2/../src", RF_OUT_SAME },
		{ "src/new", RF_OUT_INSIDE },  { "link/new", RF_OUT_INSIDE },
		{ "src/a/b/c", RF_OUT_INSIDE }, { "src//new/", RF_OUT_INSIDE },
		{ "src2", RF_OUT_APART },      { "src2/new", RF_OUT_APART },
		{ "new", RF_OUT_APART },       { "", RF_OUT_APART },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", t, cases[i].out);
		cr_expect_eq(rfi_out_dir_place(p, src), cases[i].want, "%s against %s", p, src);
	}
	cr_expect_eq(rfi_out_dir_place(t, src), RF_OUT_APART, "the source inside the output");
	cr_expect_eq(rfi_out_dir_place(src, "/"), RF_OUT_INSIDE, "everything is below /");
	cr_expect_eq(rfi_out_dir_place("/", "/"), RF_OUT_SAME);
	snprintf(p, sizeof(p), "%s/missing", t);
	cr_expect_eq(rfi_out_dir_place(src, p), RF_OUT_APART, "a source that is not there");
	/* relative to the working folder */
	char cwd[4096];
	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(chdir(src), 0);
	cr_expect_eq(rfi_out_dir_place("new", src), RF_OUT_INSIDE);
	cr_expect_eq(rfi_out_dir_place(".", src), RF_OUT_SAME);
	cr_expect_eq(rfi_out_dir_place("../src2/x", src), RF_OUT_APART);
	cr_assert_eq(chdir(cwd), 0);
	snprintf(p, sizeof(p), "rm -rf '%s'", t);
	cr_assert_eq(system(p), 0);
}

/* A dictionary size out of zstd's range is refused before anything is read
 * or written, with the range (the trainer itself said "Destination buffer
 * is too small", and the pack then asked for a smaller size). */
Test(pack, dict_size_range)
{
	char err[512];
	rf_pack_result res;
	static const size_t sizes[] = { 1, 255, (16u << 20) + 1 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t size = sizes[i];
		rf_pack_opts o = { .source = "/nonexistent-source", .out = "/nonexistent-out",
				   .shard_size = 1 << 20, .compress = 1, .level = 3, .dict_size = size };
		cr_assert_eq(rfi_pack_run(&o, &res, err, sizeof(err)), RF_ECONFIG, "%zu: %s", size, err);
		cr_assert(strstr(err, "a zstd dictionary is 256 bytes to 16777216"), "%s", err);
	}
}
