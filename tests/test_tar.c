/* test_tar.c - the tar shard scanner and WebDataset grouping (src/source/tar.h):
 * shards written by Python's tarfile (ustar, GNU, pax) and by GNU tar
 * (--format=gnu, --format=posix) give the members tarfile lists, at the
 * offsets it lists, whether fed whole or in windows of 512 bytes to 64 KiB
 * (hopping over members larger than the window); damaged shards (cut,
 * flipped, overlong, bad pax records) fail with a message naming the place;
 * members group into samples as webdataset groups them. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/tar.h"
#include "ringfeed.h"
#include "testutil.h"
#include "util/util.h"

/* ---- shards built here, byte by byte, for the damaged cases ---- */

typedef struct tbuf {
	uint8_t *p;
	size_t len, cap;
} tbuf;

static void tb_put(tbuf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 4096;
		b->p = realloc(b->p, b->cap);
		cr_assert(b->p);
	}
	if (d)
		memcpy(b->p + b->len, d, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

static void tb_pad(tbuf *b)
{
	if (b->len % 512)
		tb_put(b, NULL, 512 - b->len % 512);
}

/* Rewrites the checksum of the header at h (after a field was changed). */
static void set_checksum(uint8_t *h)
{
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	char f[8];
	snprintf(f, sizeof(f), "%06o", sum);
	memcpy(h + 148, f, 7); /* six digits and a NUL, then the space stays */
}

/* A POSIX ustar header; returns its offset in b. */
static size_t tb_header(tbuf *b, const char *name, uint64_t size, char type)
{
	uint8_t h[512] = { 0 };
	memcpy(h, name, RF_MIN(strlen(name), (size_t)100));
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	char f[24];
	snprintf(f, sizeof(f), "%011llo", (unsigned long long)size); /* tests stay < 8 GiB */
	memcpy(h + 124, f, 12);
	memcpy(h + 136, "14000000000", 12);
	h[156] = (uint8_t)type;
	memcpy(h + 257, "ustar\0" "00", 8);
	set_checksum(h);
	size_t at = b->len;
	tb_put(b, h, 512);
	return at;
}

static size_t tb_member(tbuf *b, const char *name, char type, const void *data, size_t n)
{
	size_t at = tb_header(b, name, n, type);
	tb_put(b, data, n);
	tb_pad(b);
	return at;
}

static size_t tb_file(tbuf *b, const char *name, const char *text)
{
	return tb_member(b, name, '0', text, strlen(text));
}

static void tb_end(tbuf *b)
{
	tb_put(b, NULL, 1024);
}

/* ---- what a scan reports ---- */

typedef struct got {
	size_t n;
	char *name[64];
	uint64_t off[64], size[64];
	int had_data[64];
	const uint8_t *shard; /* to check m->data against */
	/* the lost spans */
	size_t nlost;
	rf_tar_lost lost[8];
	uint64_t lost_off[8], lost_size[8];
	char *lost_name[8], *lost_why[8];
} got;

static int collect(void *u, const rf_tar_member *m)
{
	got *g = u;
	if (m->lost) {
		cr_assert(g->nlost < 8);
		cr_assert(m->why && m->why[0] && !m->data);
		g->lost[g->nlost] = m->lost;
		g->lost_off[g->nlost] = m->data_off;
		g->lost_size[g->nlost] = m->size;
		g->lost_name[g->nlost] = strdup(m->name);
		g->lost_why[g->nlost++] = strdup(m->why);
		return 0;
	}
	cr_assert(g->n < 64);
	g->name[g->n] = strdup(m->name);
	g->off[g->n] = m->data_off;
	g->size[g->n] = m->size;
	g->had_data[g->n] = m->data != NULL;
	if (m->data && g->shard)
		cr_assert_eq(memcmp(m->data, g->shard + m->data_off, m->size), 0,
			     "data of '%s' is the shard's bytes at its offset", m->name);
	g->n++;
	return 0;
}

static void got_free(got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->name[i]);
	g->n = 0;
	for (size_t i = 0; i < g->nlost; i++) {
		free(g->lost_name[i]);
		free(g->lost_why[i]);
	}
	g->nlost = 0;
}

/* Scans shard[len], feeding windows of w bytes (or s.need, if larger) at
 * s.pos, each copied to an allocation of its own so that a read past a
 * window shows under ASan. Checks that every call that returns 1 moves on
 * (pos grows) or asks for a larger window. */
static int scan(const uint8_t *shard, size_t len, size_t w, rf_tar_member_fn fn, void *user,
		char *err, size_t errlen)
{
	rf_tar_scan s;
	rfi_tar_scan_init(&s, len);
	for (;;) {
		size_t n = RF_MIN(RF_MAX(w, s.need), len - (size_t)s.pos);
		uint8_t *win = malloc(n ? n : 1);
		memcpy(win, shard + s.pos, n);
		uint64_t pos = s.pos;
		int r = rfi_tar_scan_feed(&s, win, n, s.pos, fn, user, err, errlen);
		free(win);
		if (r != 1)
			return r;
		cr_assert(s.pos > pos || s.need > n, "window %zu at %llu: no progress", n,
			  (unsigned long long)pos);
		/* more to read means bytes are left: a reader cannot read none */
		cr_assert(s.pos < len, "window %zu at %llu: more asked for at the end (%llu)", n,
			  (unsigned long long)pos, (unsigned long long)s.pos);
		cr_assert(s.pos % 512 == 0 && s.pos <= len && s.need <= RF_TAR_NEED_MAX);
	}
}

static const size_t windows[] = { 512, 700, 1024, 4096, 65536, SIZE_MAX };
#define NWINDOWS (sizeof(windows) / sizeof(windows[0]))

/* ---- shards written by Python's tarfile and GNU tar ---- */

/* Writes a shard in one of the formats and lists its regular members as
 * tarfile reads them: "name<TAB>offset_data<TAB>size" lines. Content of a
 * member: byte j = (j * 7 + sum(name bytes)) % 251, which check_content
 * recomputes. */
static const char *py_script =
	"import io, os, subprocess, sys, tarfile\n"
	"out, mode = sys.argv[1], sys.argv[2]\n"
	"def content(name, size):\n"
	"    h = sum(name.encode()) % 251\n"
	"    return bytes((j * 7 + h) % 251 for j in range(size))\n"
	"long1 = 'd' * 120 + '/e.jpg'\n"                                   /* prefix, 'L', path */
	"long2 = '/'.join('seg%02d' % i for i in range(50)) + '/f.jpg'\n" /* past ustar's 255 */
	"members = [('x/a.jpg', 1000), ('x/a.cls', 2), ('x/b.jpg', 0), ('y.z/c.d.jpg', 70000),\n"
	"           (long1, 513), ('x/\\u00e9t\\u00e9.jpg', 10), ('g.jpg', 512)]\n"
	"if mode != 'ustar':\n"
	"    members.append((long2, 100))\n"
	"if mode.startswith('gnutar'):\n"
	"    d = out + '.d'\n"
	"    for name, size in members:\n"
	"        os.makedirs(os.path.join(d, os.path.dirname(name)), exist_ok=True)\n"
	"        with open(os.path.join(d, name), 'wb') as f: f.write(content(name, size))\n"
	"    os.symlink('a.jpg', os.path.join(d, 'x', 'link.jpg'))\n"
	"    fmt = 'gnu' if mode == 'gnutar-gnu' else 'posix'\n"
	"    subprocess.run(['tar', '--format=' + fmt, '-cf', out, '-C', d] +\n"
	"                   sorted(os.listdir(d)), check=True)\n"
	"else:\n"
	"    fmt = {'ustar': tarfile.USTAR_FORMAT, 'gnu': tarfile.GNU_FORMAT,\n"
	"           'pax': tarfile.PAX_FORMAT, 'paxsize': tarfile.PAX_FORMAT}[mode]\n"
	"    with tarfile.open(out, 'w', format=fmt, encoding='utf-8') as t:\n"
	"        ti = tarfile.TarInfo('x'); ti.type = tarfile.DIRTYPE; t.addfile(ti)\n"
	"        for name, size in members:\n"
	"            ti = tarfile.TarInfo(name); ti.size = size; ti.mtime = 1700000000\n"
	"            t.addfile(ti, io.BytesIO(content(name, size)))\n"
	"            if name == 'x/a.jpg':\n"
	"                ti = tarfile.TarInfo('x/link.jpg'); ti.type = tarfile.SYMTYPE\n"
	"                ti.linkname = 'a.jpg'; t.addfile(ti)\n"
	"        if mode == 'paxsize':\n"
	"            ti = tarfile.TarInfo('p.jpg'); ti.size = 1500\n"
	"            ti.pax_headers = {'size': '1500', 'comment': 'c' * 600}\n"
	"            t.addfile(ti, io.BytesIO(content('p.jpg', 1500)))\n"
	"    if mode == 'paxsize':\n" /* the header says 0 bytes; only the pax size is right */
	"        with tarfile.open(out) as t:\n"
	"            at = t.getmember('p.jpg').offset_data - 512\n"
	"        with open(out, 'r+b') as f:\n"
	"            f.seek(at); h = bytearray(f.read(512))\n"
	"            h[124:136] = b'00000000000\\0'; h[148:156] = b' ' * 8\n"
	"            h[148:156] = b'%06o\\0 ' % sum(h)\n"
	"            f.seek(at); f.write(h)\n"
	"with tarfile.open(out) as t:\n"
	"    for ti in t:\n"
	"        if ti.isreg():\n"
	"            sys.stdout.buffer.write(b'%s\\t%d\\t%d\\n' % (ti.name.encode(), ti.offset_data, ti.size))\n";

static int have(const char *cmd)
{
	char c[256];
	snprintf(c, sizeof(c), "%s >/dev/null 2>&1", cmd);
	return system(c) == 0;
}

typedef struct listing {
	got g;        /* what tarfile lists */
	uint8_t *shard;
	size_t len;
} listing;

static char *dir;
static void setup(void)
{
	dir = tu_tmpdir("tar");
}
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

static void check_content(const char *name, const uint8_t *p, uint64_t size)
{
	unsigned h = 0;
	for (const char *c = name; *c; c++)
		h += (uint8_t)*c;
	h %= 251;
	for (uint64_t j = 0; j < size; j++)
		if (p[j] != (uint8_t)((j * 7 + h) % 251))
			cr_assert_fail("'%s' byte %llu differs from what Python wrote", name,
				       (unsigned long long)j);
}

/* Writes a shard in mode with Python (skips the test when python3, or tar
 * for the gnutar modes, is missing) and reads it and tarfile's listing. */
static void python_shard(const char *mode, listing *l)
{
	if (!have("python3 -c 'import tarfile'"))
		cr_skip_test("python3 is missing: the shards of this test are written by tarfile");
	if (!strncmp(mode, "gnutar", 6) && !have("tar --version"))
		cr_skip_test("GNU tar is missing");
	tu_write(dir, "make.py", py_script, strlen(py_script));
	char cmd[1024], shard[256];
	snprintf(shard, sizeof(shard), "%s.tar", mode);
	snprintf(cmd, sizeof(cmd), "cd '%s' && python3 make.py %s.tar %s > %s.list", dir, mode,
		 mode, mode);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	l->shard = tu_read(dir, shard, &l->len);
	char list[256];
	snprintf(list, sizeof(list), "%s.list", mode);
	size_t n;
	char *text = (char *)tu_read(dir, list, &n);
	text = realloc(text, n + 1);
	text[n] = '\0';
	memset(&l->g, 0, sizeof(l->g));
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		cr_assert(t2, "listing line '%s'", line);
		*t1 = '\0';
		size_t i = l->g.n++;
		l->g.name[i] = strdup(line);
		l->g.off[i] = strtoull(t1 + 1, NULL, 10);
		l->g.size[i] = strtoull(t2 + 1, NULL, 10);
		cr_assert(l->g.off[i] + l->g.size[i] <= l->len);
		check_content(line, l->shard + l->g.off[i], l->g.size[i]);
	}
	free(text);
	cr_assert_geq(l->g.n, 7, "tarfile lists the members written");
}

/* The scan gives what tarfile lists, in every window size; keep, if not
 * NULL, receives the listing and the shard. */
static void same_as_tarfile(const char *mode, listing *keep)
{
	listing l;
	python_shard(mode, &l);
	for (size_t w = 0; w < NWINDOWS; w++) {
		got g = { .shard = l.shard };
		char err[256] = "";
		int r = scan(l.shard, l.len, windows[w], collect, &g, err, sizeof(err));
		cr_assert_eq(r, 0, "%s, window %zu: %d %s", mode, windows[w], r, err);
		cr_assert_eq(g.n, l.g.n, "%s, window %zu: %zu members, tarfile lists %zu", mode,
			     windows[w], g.n, l.g.n);
		for (size_t i = 0; i < g.n; i++) {
			cr_assert_str_eq(g.name[i], l.g.name[i], "%s, window %zu", mode, windows[w]);
			cr_assert_eq(g.off[i], l.g.off[i], "%s: '%s' offset", mode, g.name[i]);
			cr_assert_eq(g.size[i], l.g.size[i], "%s: '%s' size", mode, g.name[i]);
			if (windows[w] == SIZE_MAX)
				cr_assert(g.had_data[i], "the whole shard holds every member's data");
		}
		got_free(&g);
	}
	if (keep) {
		*keep = l;
		return;
	}
	got_free(&l.g);
	free(l.shard);
}

Test(tar, python_ustar, .init = setup, .fini = teardown) { same_as_tarfile("ustar", NULL); }
Test(tar, python_gnu, .init = setup, .fini = teardown) { same_as_tarfile("gnu", NULL); }
Test(tar, python_pax, .init = setup, .fini = teardown) { same_as_tarfile("pax", NULL); }
Test(tar, gnu_tar_gnu, .init = setup, .fini = teardown) { same_as_tarfile("gnutar-gnu", NULL); }
Test(tar, gnu_tar_posix, .init = setup, .fini = teardown) { same_as_tarfile("gnutar-posix", NULL); }

Test(tar, pax_size_overrides_the_header, .init = setup, .fini = teardown)
{
	listing l;
	same_as_tarfile("paxsize", &l); /* the header's size field says 0 */
	cr_assert_str_eq(l.g.name[l.g.n - 1], "p.jpg");
	cr_assert_eq(l.g.size[l.g.n - 1], 1500);
	got_free(&l.g);
	free(l.shard);
}

/* ---- damaged shards ---- */

/* Scans shard[len] whole and in 512-byte windows: both fail with code and a
 * message holding want (and want2 if not NULL). */
/* Scans shard[len] (whole, and in 512-byte windows): the scan ends (0)
 * with nmembers members and one lost span of kind, bytes [off, off + size)
 * of the shard, whose reason says want (and want2). */
static void loses(const uint8_t *shard, size_t len, size_t nmembers, rf_tar_lost kind,
		  uint64_t off, uint64_t size, const char *want, const char *want2)
{
	for (int k = 0; k < 2; k++) {
		got g = { 0 };
		char err[512] = "";
		int r = scan(shard, len, k ? 512 : SIZE_MAX, collect, &g, err, sizeof(err));
		cr_assert_eq(r, 0, "got %d (%s)", r, err);
		cr_assert_eq(g.n, nmembers, "%zu members, expected %zu", g.n, nmembers);
		cr_assert_eq(g.nlost, 1, "%zu lost spans, expected 1", g.nlost);
		cr_assert_eq(g.lost[0], kind);
		cr_assert_eq(g.lost_off[0], off, "lost from %llu, expected %llu",
			     (unsigned long long)g.lost_off[0], (unsigned long long)off);
		cr_assert_eq(g.lost_size[0], size, "lost %llu bytes, expected %llu",
			     (unsigned long long)g.lost_size[0], (unsigned long long)size);
		const char *why = g.lost_why[0];
		cr_assert(strstr(why, want), "'%s' does not say '%s'", why, want);
		cr_assert(!want2 || strstr(why, want2), "'%s' does not say '%s'", why, want2);
		got_free(&g);
	}
}

static tbuf three_members(void)
{
	tbuf b = { 0 };
	tb_file(&b, "a.jpg", "aaaa");
	static char big[3000];
	memset(big, 'b', sizeof(big));
	tb_member(&b, "b.jpg", '0', big, sizeof(big));
	tb_file(&b, "c.jpg", "cc");
	tb_end(&b);
	return b;
}

Test(tar, ends_at_a_header_boundary_or_zero_block)
{
	tbuf b = three_members();
	got g = { 0 };
	char err[256];
	/* without its end blocks: ends after c.jpg's padding, and says it may
	 * have been cut there */
	loses(b.p, b.len - 1024, 3, RF_TAR_LOST_UNENDED, b.len - 1024, 0, "without its "
	      "end-of-archive blocks", NULL);
	/* cut inside the end blocks, or after the first: not whole, said so */
	loses(b.p, b.len - 1024 + 300, 3, RF_TAR_LOST_UNENDED, b.len - 1024, 300, "without", NULL);
	loses(b.p, b.len - 200, 3, RF_TAR_LOST_UNENDED, b.len - 1024, 824, "into its "
	      "end-of-archive blocks", NULL);
	loses(b.p, b.len - 512, 3, RF_TAR_LOST_UNENDED, b.len - 1024, 512, "into its "
	      "end-of-archive blocks", NULL);
	/* bytes after the end that are not zeros (where members may have been,
	 * cut off from their headers) are reported */
	memset(b.p + b.len - 512, 0xee, 512);
	loses(b.p, b.len, 3, RF_TAR_LOST_DAMAGED, b.len - 1024, 1024, "followed by bytes that are "
	      "not zeros", NULL);
	/* zeros after the end: the end as GNU tar pads it */
	tbuf z = three_members();
	z.p = realloc(z.p, z.len + 8192);
	memset(z.p + z.len, 0, 8192);
	cr_assert_eq(scan(z.p, z.len + 8192, 4096, collect, &g, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g.n, 3);
	cr_assert_eq(g.nlost, 0);
	got_free(&g);
	free(z.p);
	/* members after the end blocks (tars concatenated): read on, nothing lost */
	z = three_members();
	tbuf two = { 0 };
	tb_put(&two, z.p, z.len);
	tb_put(&two, z.p, z.len);
	cr_assert_eq(scan(two.p, two.len, 4096, collect, &g, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g.n, 6);
	cr_assert_eq(g.nlost, 0);
	got_free(&g);
	free(z.p);
	free(two.p);
	/* an empty file has no end blocks either: cut at 0 */
	loses(b.p, 0, 0, RF_TAR_LOST_UNENDED, 0, 0, "without", NULL);
	free(b.p);
}

Test(tar, truncated)
{
	tbuf b = three_members();
	/* b.jpg's header at 1024, data 1536..4536 (padded to 4608), c.jpg at 4608 */
	loses(b.p, 1024 + 100, 1, RF_TAR_LOST_DAMAGED, 1024, 100, "offset 1024", "cut");
	loses(b.p, 3000, 1, RF_TAR_LOST_TRUNCATED, 1024, 3000 - 1024, "'b.jpg'", "past the end");
	/* the padding is missing */
	loses(b.p, 4536, 1, RF_TAR_LOST_TRUNCATED, 1024, 4536 - 1024, "'b.jpg'", "truncated");
	loses(b.p, 4608 + 511, 2, RF_TAR_LOST_DAMAGED, 4608, 511, "offset 4608", "cut");
	/* cut right after a member whose data was hopped over (windows smaller
	 * than it): the scan ends there, reporting the missing end */
	loses(b.p, 4608, 2, RF_TAR_LOST_UNENDED, 4608, 0, "without", NULL);
	/* the truncated member is named */
	got g = { 0 };
	char err[256];
	cr_assert_eq(scan(b.p, 3000, 512, collect, &g, err, sizeof(err)), 0);
	cr_assert_str_eq(g.lost_name[0], "b.jpg");
	got_free(&g);
	free(b.p);
}

Test(tar, bad_checksum)
{
	tbuf b = three_members();
	b.p[1024 + 3] ^= 0x20; /* b.jpg's name */
	/* b.jpg (header 1024, data to 4608) is lost; the scan finds c.jpg's
	 * header and goes on */
	loses(b.p, b.len, 2, RF_TAR_LOST_DAMAGED, 1024, 4608 - 1024, "offset 1024", "checksum");
	free(b.p);
	/* a header that sums its bytes as signed chars is accepted, as tar does */
	b = three_members();
	b.p[1024 + 99] = 0xe9; /* a byte >= 0x80 makes the two sums differ */
	uint8_t *h = b.p + 1024;
	memset(h + 148, ' ', 8);
	int sum = 0;
	for (int i = 0; i < 512; i++)
		sum += (int8_t)h[i];
	char f[8];
	snprintf(f, sizeof(f), "%06o", sum);
	memcpy(h + 148, f, 7);
	got g = { 0 };
	char err[256];
	cr_assert_eq(scan(b.p, b.len, 512, collect, &g, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g.n, 3);
	got_free(&g);
	free(b.p);
}

Test(tar, size_fields)
{
	/* base-256, as GNU tar writes sizes of 8 GiB and more */
	tbuf b = three_members();
	uint8_t *h = b.p + 1024;
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[134] = 3000 >> 8;
	h[135] = 3000 & 0xff;
	set_checksum(h);
	got g = { 0 };
	char err[256];
	cr_assert_eq(scan(b.p, b.len, 512, collect, &g, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g.n, 3);
	cr_assert_eq(g.size[1], 3000);
	cr_assert_str_eq(g.name[2], "c.jpg");
	got_free(&g);
	/* negative base-256, then a field that is not octal */
	h[124] = 0xff;
	set_checksum(h);
	loses(b.p, b.len, 2, RF_TAR_LOST_DAMAGED, 1024, 4608 - 1024, "'b.jpg'", "size field");
	memcpy(h + 124, "0000005x700\0", 12);
	set_checksum(h);
	loses(b.p, b.len, 2, RF_TAR_LOST_DAMAGED, 1024, 4608 - 1024, "'b.jpg'", "size field");
	/* a size that runs past the end of the shard: a cut shard */
	snprintf((char *)h + 124, 12, "%011o", 077777777);
	set_checksum(h);
	loses(b.p, b.len, 1, RF_TAR_LOST_TRUNCATED, 1024, b.len - 1024, "'b.jpg'",
	      "past the end of the shard");
	free(b.p);
}

Test(tar, pax_records)
{
	/* path and size are taken; unknown keywords and comments of any length
	 * (the padding of `ringfeed pack --align`) are skipped */
	tbuf b = { 0 };
	const char *recs = "30 mtime=1700000000.123456789\n"
			   "21 path=dir/long.jpg\n"
			   "10 size=3\n"
			   "20 SCHILY.xattr.a=b\n"
			   "14 comment=xx\n";
	tb_member(&b, "././@PaxHeader", 'x', recs, strlen(recs));
	tb_member(&b, "short", '0', "abcdef", 6); /* the header's 6 gives way to 3 */
	/* an empty value deletes: back to the header's own name and size */
	const char *del = "8 path=\n8 size=\n";
	tb_member(&b, "././@PaxHeader", 'x', del, strlen(del));
	tb_file(&b, "own.jpg", "zz");
	tb_end(&b);
	got g = { 0 };
	char err[256];
	for (size_t w = 0; w < NWINDOWS; w++) {
		cr_assert_eq(scan(b.p, b.len, windows[w], collect, &g, err, sizeof(err)), 0, "%s",
			     err);
		cr_assert_eq(g.n, 2);
		cr_assert_str_eq(g.name[0], "dir/long.jpg");
		cr_assert_eq(g.size[0], 3);
		cr_assert_str_eq(g.name[1], "own.jpg");
		cr_assert_eq(g.size[1], 2);
		got_free(&g);
	}
	free(b.p);

	/* bad records: a length that overruns, no '=', no newline, a bad size */
	const char *bad[][2] = {
		{ "99 path=a.jpg\n", "bad record" },
		{ "13 pathajpg\n\n", "bad record" },
		{ "14 path=a.jpgX", "bad record" },
		{ "x4 path=a.jpg\n", "bad record" },
		{ "11 size=1z\n", "size '1z'" },
		{ "22 GNU.sparse.major=1\n", "sparse" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tbuf c = { 0 };
		tb_file(&c, "first.jpg", "1");
		tb_member(&c, "././@PaxHeader", 'x', bad[i][0], strlen(bad[i][0]));
		tb_file(&c, "a.jpg", "a");
		tb_file(&c, "b.jpg", "b");
		tb_end(&c);
		/* the pax header and the member it describes are lost (its own
		 * header would give it the wrong name); b.jpg is read */
		loses(c.p, c.len, 2, RF_TAR_LOST_DAMAGED, 1024, 3072 - 1024,
		      "pax header at offset 1024", bad[i][1]);
		free(c.p);
	}
}

Test(tar, extended_header_limits)
{
	/* a pax header larger than RF_TAR_EXT_MAX: an error, not a large read */
	tbuf b = { 0 };
	tb_header(&b, "././@PaxHeader", RF_TAR_EXT_MAX + 1, 'x');
	tb_put(&b, NULL, RF_TAR_EXT_MAX + 512);
	tb_end(&b);
	/* its data blocks are zeros: lost with it up to the end */
	loses(b.p, b.len, 0, RF_TAR_LOST_DAMAGED, 0, b.len, "pax header at offset 0", "at most");
	free(b.p);
	/* a GNU long name longer than RF_TAR_NAME_MAX */
	b = (tbuf){ 0 };
	static char name[RF_TAR_NAME_MAX + 2];
	memset(name, 'n', sizeof(name) - 1);
	tb_member(&b, "././@LongLink", 'L', name, sizeof(name)); /* with its NUL */
	size_t at = b.len;
	tb_file(&b, "x.jpg", "x");
	tb_file(&b, "y.jpg", "y");
	tb_end(&b);
	loses(b.p, b.len, 1, RF_TAR_LOST_DAMAGED, 0, at + 1024, "GNU long name at offset 0",
	      "name too long");
	free(b.p);
	/* one of RF_TAR_NAME_MAX is fine, and comes out whole */
	b = (tbuf){ 0 };
	name[RF_TAR_NAME_MAX] = '\0';
	tb_member(&b, "././@LongLink", 'L', name, RF_TAR_NAME_MAX + 1);
	tb_file(&b, "x.jpg", "x");
	tb_end(&b);
	got g = { 0 };
	char err[256];
	cr_assert_eq(scan(b.p, b.len, 512, collect, &g, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g.n, 1);
	cr_assert_str_eq(g.name[0], name);
	got_free(&g);
	free(b.p);
	/* an extended header followed by the end, or by nothing */
	b = (tbuf){ 0 };
	tb_member(&b, "././@LongLink", 'L', "abc.jpg", 8);
	size_t cut = b.len;
	tb_end(&b);
	loses(b.p, b.len, 0, RF_TAR_LOST_DAMAGED, 0, b.len, "extended header at offset 0",
	      "end of the archive");
	loses(b.p, cut, 0, RF_TAR_LOST_DAMAGED, 0, cut, "extended header at offset 0",
	      "followed by no member");
	free(b.p);
	/* GNU sparse members cannot be read as one extent */
	b = (tbuf){ 0 };
	tb_member(&b, "s.jpg", 'S', "ss", 2);
	tb_file(&b, "t.jpg", "t");
	tb_end(&b);
	loses(b.p, b.len, 1, RF_TAR_LOST_DAMAGED, 0, 1024, "'s.jpg'", "sparse");
	free(b.p);
}

Test(tar, skips_other_types)
{
	tbuf b = { 0 };
	tb_member(&b, "d/", '5', NULL, 0);
	tb_member(&b, "d/l.jpg", '2', NULL, 0);
	tb_member(&b, "d/h.jpg", '1', NULL, 0);
	tb_member(&b, "pax_global_header", 'g', "26 comment=some commit id\n", 26);
	tb_member(&b, "././@LongLink", 'K', "target-name", 12);
	tb_member(&b, "v7dir/", '\0', NULL, 0);
	tb_file(&b, "d/r.jpg", "r");
	tb_member(&b, "d/c.jpg", '7', "cc", 2); /* contiguous: a regular file */
	tb_member(&b, "d/v7.jpg", '\0', "v", 1);
	tb_end(&b);
	got g = { 0 };
	char err[256];
	cr_assert_eq(scan(b.p, b.len, 512, collect, &g, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(g.n, 3);
	cr_assert_str_eq(g.name[0], "d/r.jpg");
	cr_assert_str_eq(g.name[1], "d/c.jpg");
	cr_assert_str_eq(g.name[2], "d/v7.jpg");
	got_free(&g);
	free(b.p);
}

static int stop_at_b(void *u, const rf_tar_member *m)
{
	collect(u, m);
	return strcmp(m->name, "b.jpg") ? 0 : -42;
}

Test(tar, caller_contract)
{
	tbuf b = three_members();
	rf_tar_scan s;
	rfi_tar_scan_init(&s, b.len);
	char err[256];
	got g = { 0 };
	/* a window that is not at pos, and one smaller than need */
	cr_assert_eq(rfi_tar_scan_feed(&s, b.p + 512, 512, 512, collect, &g, err, sizeof(err)),
		     -EINVAL);
	cr_assert_eq(rfi_tar_scan_feed(&s, b.p, 511, 0, collect, &g, err, sizeof(err)), 1);
	cr_assert_eq(s.pos, 0);
	cr_assert_eq(s.need, 512);
	/* a callback's non-zero value stops the scan past that member... */
	int r = rfi_tar_scan_feed(&s, b.p, b.len, 0, stop_at_b, &g, err, sizeof(err));
	cr_assert_eq(r, -42);
	cr_assert_eq(g.n, 2);
	cr_assert_eq(s.pos, 4608);
	/* ...and it may go on from there */
	r = rfi_tar_scan_feed(&s, b.p + s.pos, b.len - s.pos, s.pos, collect, &g, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	cr_assert_eq(g.n, 3);
	cr_assert_str_eq(g.name[2], "c.jpg");
	/* the end is sticky, and so is an error */
	cr_assert_eq(rfi_tar_scan_feed(&s, NULL, 0, s.pos, collect, &g, err, sizeof(err)), 0);
	got_free(&g);
	/* damage is reported and the scan goes on; an error is sticky */
	b.p[1024] ^= 1;
	rfi_tar_scan_init(&s, b.len);
	cr_assert_eq(rfi_tar_scan_feed(&s, b.p, b.len, 0, collect, &g, err, sizeof(err)), 0);
	cr_assert_eq(g.n, 2);
	cr_assert_eq(g.nlost, 1);
	got_free(&g);
	rfi_tar_scan_init(&s, b.len);
	cr_assert_eq(rfi_tar_scan_feed(&s, b.p + 512, 512, 512, collect, &g, err, sizeof(err)),
		     -EINVAL);
	got_free(&g);
	free(b.p);
}

/* ---- samples ---- */

Test(tar, key_split)
{
	const struct {
		const char *name, *key, *ext; /* key NULL: no key */
	} t[] = {
		{ "a.b/c.d.jpg", "a.b/c", "d.jpg" },
		{ "x.jpg", "x", "jpg" },
		{ "x.tar.gz", "x", "tar.gz" },
		{ "dir/sub/x.y", "dir/sub/x", "y" },
		{ "a/.x.jpg", "a/", "x.jpg" }, /* what the regular expression gives */
		{ "a.b/.x", NULL, NULL },
		{ ".x", NULL, NULL },
		{ "noext", NULL, NULL },
		{ "a.b/noext", NULL, NULL },
		{ "x.", "x", "" },
		{ "", NULL, NULL },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		long k = rfi_tar_key_split(t[i].name);
		if (!t[i].key) {
			cr_assert_eq(k, -1, "'%s' has no key", t[i].name);
			continue;
		}
		cr_assert_eq(k, (long)strlen(t[i].key), "'%s': key length %ld", t[i].name, k);
		cr_assert_eq(strncmp(t[i].name, t[i].key, (size_t)k), 0);
		cr_assert_str_eq(t[i].name + k + 1, t[i].ext);
	}
}

Test(tar, parse_cls)
{
	const char *ok[] = { "7", " 12\n", "0", "2147483647", "\t3\r\n", "007" };
	const int32_t want[] = { 7, 12, 0, 2147483647, 3, 7 };
	char why[128];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int32_t l = -5;
		cr_assert_eq(rfi_tar_parse_cls((const uint8_t *)ok[i], strlen(ok[i]), &l, why,
					      sizeof(why)), 0, "'%s': %s", ok[i], why);
		cr_assert_eq(l, want[i]);
	}
	const char *bad[] = { "", " \n", "-1", "+1", "1.5", "2147483648", "99999999999999999999",
			      "7x", "abc", "1 2" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int32_t l;
		why[0] = '\0';
		cr_assert_eq(rfi_tar_parse_cls((const uint8_t *)bad[i], strlen(bad[i]), &l, why,
					      sizeof(why)), -1, "'%s' is no label", bad[i]);
		cr_assert(strstr(why, "not a label"), "'%s': %s", bad[i], why);
	}
	/* binary bytes are not copied into the message */
	const uint8_t bin[] = { 0x01, '7', 0xff };
	rfi_tar_parse_cls(bin, sizeof(bin), &(int32_t){ 0 }, why, sizeof(why));
	cr_assert(strstr(why, "'?7?'"), "%s", why);
}

typedef struct samples {
	size_t n;
	char key[32][160], ext[32][16], bad[32][160];
	uint64_t off[32], size[32];
	int32_t label[32];
	int compressed[32];
} samples;

static int take_sample(void *u, const rf_tar_sample *s)
{
	samples *v = u;
	cr_assert(v->n < 32);
	size_t i = v->n++;
	snprintf(v->key[i], sizeof(v->key[i]), "%s", s->key);
	snprintf(v->ext[i], sizeof(v->ext[i]), "%s", s->ext);
	snprintf(v->bad[i], sizeof(v->bad[i]), "%s", s->bad ? s->bad : "");
	v->off[i] = s->data_off;
	v->size[i] = s->size;
	v->label[i] = s->label;
	v->compressed[i] = s->compressed;
	return 0;
}

/* Groups shard[len] into samples, scanning in windows of w bytes. */
static void group(const uint8_t *shard, size_t len, size_t w, int raw, samples *out)
{
	rf_tar_samples g;
	memset(out, 0, sizeof(*out));
	rfi_tar_samples_init(&g, raw, take_sample, out);
	char err[256];
	cr_assert_eq(scan(shard, len, w, rfi_tar_samples_member, &g, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(rfi_tar_samples_finish(&g), 0);
	rfi_tar_samples_free(&g);
}

Test(tar, samples)
{
	tbuf b = { 0 };
	size_t s1 = tb_file(&b, "s1.jpg", "J1");
	tb_file(&b, "s1.cls", "7\n");
	tb_file(&b, "s1.json", "{}");
	tb_file(&b, "s2.cls", " 3 "); /* the label first */
	size_t s2 = tb_file(&b, "s2.jpeg", "J2");
	tb_file(&b, "s3.cls", "1");   /* no image */
	tb_file(&b, "s4.jpg", "J4");
	tb_file(&b, "s4.cls", "x");   /* bad label */
	size_t s5 = tb_file(&b, "d.x/s5.JPG.ZST", "Z5");
	tb_file(&b, "__meta__/info.json", "{}"); /* metadata, as webdataset skips */
	tb_file(&b, "README", "no key");
	tb_file(&b, "a.b/c.d.jpg", "mask");      /* key a.b/c, ext d.jpg: not the image */
	size_t c = tb_file(&b, "a.b/c.jpg", "C");
	tb_file(&b, "s6.jpg", "A");
	tb_file(&b, "s6.JPG", "B");              /* webdataset: duplicate extension */
	tb_file(&b, "s7.jpg", "7");              /* no cls: label -1 */
	tb_end(&b);
	for (size_t w = 0; w < NWINDOWS; w++) {
		samples v;
		group(b.p, b.len, windows[w], 0, &v);
		cr_assert_eq(v.n, 8, "window %zu: %zu samples", windows[w], v.n);
		cr_assert_str_eq(v.key[0], "s1");
		cr_assert_str_eq(v.bad[0], "");
		cr_assert_eq(v.off[0], s1 + 512);
		cr_assert_eq(v.size[0], 2);
		cr_assert_eq(v.label[0], 7);
		cr_assert_str_eq(v.ext[0], "jpg");
		cr_assert_eq(v.label[1], 3);
		cr_assert_eq(v.off[1], s2 + 512);
		cr_assert_str_eq(v.key[2], "s3");
		cr_assert_str_eq(v.bad[2], "no image member (jpg, jpeg, png, webp)");
		cr_assert_str_eq(v.key[3], "s4");
		cr_assert(strstr(v.bad[3], "cls 'x': not a label"), "%s", v.bad[3]);
		cr_assert_str_eq(v.key[4], "d.x/s5");
		cr_assert_eq(v.compressed[4], 1);
		cr_assert_eq(v.off[4], s5 + 512);
		cr_assert_eq(v.label[4], -1);
		cr_assert_str_eq(v.key[5], "a.b/c");
		cr_assert_str_eq(v.ext[5], "jpg");
		cr_assert_eq(v.off[5], c + 512);
		cr_assert_str_eq(v.key[6], "s6");
		cr_assert(strstr(v.bad[6], "two 'JPG' members"), "%s", v.bad[6]);
		cr_assert_str_eq(v.key[7], "s7");
		cr_assert_eq(v.label[7], -1);
		cr_assert_str_eq(v.bad[7], "");
	}
	free(b.p);
}

static int take_extras(void *u, const rf_tar_sample *s)
{
	rf_tar_sample *out = u;
	cr_assert_eq(out->nextras, 0, "one sample");
	cr_assert_eq(s->code, RF_TAR_GOOD, "%s", s->bad);
	*out = *s;
	/* the array is valid during the call: copy what is checked */
	rf_tar_extra *x = malloc(s->nextras * sizeof(*x) + 1);
	memcpy(x, s->extras, s->nextras * sizeof(*x));
	out->extras = x;
	return 0;
}

/* A sample with 40 other members keeps every one, in shard order. */
Test(tar, samples_keep_every_other_member)
{
	tbuf b = { 0 };
	size_t at[40];
	tb_file(&b, "k.jpg", "J");
	for (int m = 0; m < 40; m++) {
		char name[32], text[16];
		snprintf(name, sizeof(name), "k.m%02d", m);
		snprintf(text, sizeof(text), "m%d", m);
		at[m] = tb_file(&b, name, text);
	}
	tb_end(&b);
	for (size_t w = 0; w < NWINDOWS; w++) {
		rf_tar_sample got = { 0 };
		rf_tar_samples g;
		rfi_tar_samples_init(&g, 0, take_extras, &got);
		char err[256];
		cr_assert_eq(scan(b.p, b.len, windows[w], rfi_tar_samples_member, &g, err,
				  sizeof(err)), 0, "%s", err);
		cr_assert_eq(rfi_tar_samples_finish(&g), 0);
		rfi_tar_samples_free(&g);
		cr_assert_eq(got.nextras, 40, "window %zu: %zu other members kept", windows[w],
			     got.nextras);
		for (int m = 0; m < 40; m++) {
			char ext[8], text[16];
			snprintf(ext, sizeof(ext), "m%02d", m);
			snprintf(text, sizeof(text), "m%d", m);
			cr_assert_str_eq(got.extras[m].ext, ext);
			cr_assert_eq(got.extras[m].data_off, at[m] + 512);
			cr_assert_eq(got.extras[m].size, strlen(text));
		}
		free((void *)got.extras);
	}
	free(b.p);
}

typedef struct long_seen {
	size_t n, nextras, nlong;
	char long_ext[128];
} long_seen;

static int take_long(void *u, const rf_tar_sample *s)
{
	long_seen *v = u;
	v->n++;
	v->nextras += s->nextras;
	v->nlong += s->nlong;
	if (s->nlong && !v->long_ext[0])
		snprintf(v->long_ext, sizeof(v->long_ext), "%s", s->long_ext);
	return 0;
}

/* A member whose extension is RF_TAR_EXTRA_EXT bytes or longer names no
 * field and is not among the extras: the sample says so (how many, the
 * first's extension), so that the index can warn rather than drop it in
 * silence. */
Test(tar, samples_count_the_members_too_long_to_keep)
{
	static const char *long_ext = "left_camera.rectified.depth_16bit.png"; /* 37 bytes */
	tbuf b = { 0 };
	tb_file(&b, "k.jpg", "J");
	tb_file(&b, "k.txt", "t");
	char name[64];
	snprintf(name, sizeof(name), "k.%s", long_ext);
	tb_file(&b, name, "d");
	snprintf(name, sizeof(name), "k.%sx", long_ext);
	tb_file(&b, name, "e");
	tb_file(&b, "m.jpg", "J"); /* a sample without: none counted */
	tb_end(&b);
	for (size_t w = 0; w < NWINDOWS; w++) {
		long_seen v = { 0 };
		rf_tar_samples g;
		rfi_tar_samples_init(&g, 0, take_long, &v);
		char err[256];
		cr_assert_eq(scan(b.p, b.len, windows[w], rfi_tar_samples_member, &g, err,
				  sizeof(err)), 0, "%s", err);
		cr_assert_eq(rfi_tar_samples_finish(&g), 0);
		rfi_tar_samples_free(&g);
		cr_assert_eq(v.n, 2);
		cr_assert_eq(v.nextras, 1, "txt is kept");
		cr_assert_eq(v.nlong, 2, "window %zu: %zu counted", windows[w], v.nlong);
		cr_assert_str_eq(v.long_ext, long_ext);
	}
	free(b.p);
}

Test(tar, samples_raw_and_consecutive_keys)
{
	tbuf b = { 0 };
	tb_file(&b, "k1.cls", "2");
	size_t k1 = tb_file(&b, "k1.npy", "N");
	tb_file(&b, "k1.txt", "T");
	tb_file(&b, "k2.bin.zst", "Z");
	tb_file(&b, "k1.npy", "again"); /* the same key later: another sample */
	tb_file(&b, "k3.cls", "4");     /* nothing but a label */
	tb_end(&b);
	samples v;
	group(b.p, b.len, 512, 1, &v);
	cr_assert_eq(v.n, 4);
	cr_assert_str_eq(v.key[0], "k1");
	cr_assert_str_eq(v.ext[0], "npy");
	cr_assert_eq(v.off[0], k1 + 512);
	cr_assert_eq(v.label[0], 2);
	cr_assert_str_eq(v.key[1], "k2");
	cr_assert_eq(v.compressed[1], 1);
	cr_assert_str_eq(v.key[2], "k1");
	cr_assert_eq(v.size[2], 5);
	cr_assert_str_eq(v.bad[3], "no member besides cls");
	/* not raw: none has an image */
	group(b.p, b.len, 512, 0, &v);
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < 4; i++)
		cr_assert_str_eq(v.bad[i], "no image member (jpg, jpeg, png, webp)");
	free(b.p);
}

Test(tar, samples_from_python_shard, .init = setup, .fini = teardown)
{
	/* x/a.jpg and x/a.cls (2 bytes that are no label) form one bad sample */
	listing l;
	python_shard("pax", &l);
	samples v;
	group(l.shard, l.len, 512, 0, &v);
	cr_assert_str_eq(v.key[0], "x/a");
	cr_assert(strstr(v.bad[0], "not a label"), "%s", v.bad[0]);
	cr_assert_str_eq(v.key[1], "x/b");
	cr_assert_eq(v.size[1], 0);
	cr_assert_str_eq(v.key[2], "y.z/c"); /* y.z/c.d.jpg: its extension is d.jpg */
	cr_assert_str_eq(v.bad[2], "no image member (jpg, jpeg, png, webp)");
	cr_assert_str_eq(v.key[3], "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
			 "dddddddddddddddddddddddddddddddddddddddddddddddddddd/e");
	cr_assert_eq(v.size[3], 513);
	cr_assert_str_eq(v.bad[3], "");
	got_free(&l.g);
	free(l.shard);
}
