/* tar_samples.c - WebDataset samples from the members of a tar shard (see
 * tar.h): members grouped by key as webdataset's group_by_keys groups them,
 * each sample's image member picked by extension (in raw mode its first
 * member that is not a label), and its label read from the cls member.
 * Only the sample being gathered is kept: memory grows with the number of
 * other members the largest sample has (every one is kept, never a fixed
 * number of them), not with the shard. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "index/index.h"
#include "source/tar.h"
#include "util/util.h"

_Static_assert(RF_TAR_EXTRA_EXT == RF_EXTRA_EXT, "an extra kept is one a field can name");

/* A cls member longer than this is no label (and is not asked for). */
#define CLS_MAX 4096

long rfi_tar_key_split(const char *name)
{
	/* As Python's re tries ^((?:.*[/]|)[^.]+)[.]([^/]*)$: the longest prefix
	 * ending in '/' first, then shorter ones, then none; from there [^.]+
	 * runs to the first dot, which must be followed by no '/'. Only a base
	 * name starting with a dot ("a/.x.jpg", key "a/") makes the shorter
	 * prefixes matter. ".*" stops at a newline, so the prefix holds none. */
	size_t len = strlen(name), nl = strcspn(name, "\n");
	const char *slash = strrchr(name, '/');
	long last_slash = slash ? (long)(slash - name) : -1, dot = -1;
	for (size_t i = len + 1; i-- > 0;) {
		if (i < len && name[i] == '.')
			dot = (long)i; /* the first dot at or after i */
		if ((i == 0 || name[i - 1] == '/') && i <= nl && dot > (long)i && dot > last_slash)
			return dot;
	}
	return -1;
}

/* webdataset's tar_file_iterator skips metadata: a first path component
 * "__x__" (re.match(r"__[^/]*__($|/)")), or a name without '/' that starts
 * and ends with "__". */
static int is_meta(const char *name)
{
	size_t first = strcspn(name, "/"), len = strlen(name);
	if (strncmp(name, "__", 2))
		return 0;
	if (first >= 4 && !strncmp(name + first - 2, "__", 2))
		return 1;
	return first == len && len >= 2 && !strcmp(name + len - 2, "__");
}

/* The image extensions (webdataset lowercases extensions before comparing);
 * ".zst" ones hold a zstd-compressed image. Exact: "seg.jpg" is another
 * member of the sample (a mask, say), not its image. The format is told
 * by the bytes when decoded, not by this name. */
static int is_image_ext(const char *ext, int *zst)
{
	size_t n = strlen(ext);
	char base[8];
	*zst = n > 4 && !strcasecmp(ext + n - 4, ".zst");
	if (*zst) { /* the image's own extension before ".zst" */
		if (n - 4 >= sizeof(base))
			return 0;
		memcpy(base, ext, n - 4);
		base[n - 4] = '\0';
		ext = base;
	}
	return rfi_index_image_ext(ext);
}

static int ends_zst(const char *ext)
{
	size_t n = strlen(ext);
	return !strcasecmp(ext, "zst") || (n > 4 && !strcasecmp(ext + n - 4, ".zst"));
}

static int is_space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

int rfi_tar_parse_cls(const uint8_t *p, size_t n, int32_t *label, char *why, size_t whylen)
{
	size_t a = 0, b = n;
	while (a < b && is_space(p[a]))
		a++;
	while (b > a && is_space(p[b - 1]))
		b--;
	uint64_t v = 0;
	size_t i = a;
	for (; i < b && p[i] >= '0' && p[i] <= '9' && v <= INT32_MAX; i++)
		v = v * 10 + (uint64_t)(p[i] - '0');
	if (a < b && i == b && v <= INT32_MAX) {
		*label = (int32_t)v;
		return 0;
	}
	/* what it holds, printable, for the message */
	char shown[24];
	size_t k = 0;
	for (; k < sizeof(shown) - 1 && a + k < b; k++)
		shown[k] = p[a + k] >= 0x20 && p[a + k] < 0x7f ? (char)p[a + k] : '?';
	shown[k] = '\0';
	if (a == b)
		rfi_fmt(why, whylen, "cls is empty: not a label");
	else
		rfi_fmt(why, whylen, "cls '%s%s': not a label (decimal, 0 to 2147483647)", shown,
		       a + k < b ? "..." : "");
	return -1;
}

void rfi_tar_samples_init(rf_tar_samples *g, int raw, rf_tar_sample_fn fn, void *user)
{
	memset(g, 0, sizeof(*g));
	g->fn = fn;
	g->user = user;
	g->raw = raw;
}

void rfi_tar_samples_free(rf_tar_samples *g)
{
	free(g->extras);
	g->extras = NULL;
	g->nextras = g->extras_cap = 0;
}

/* Marks the sample being gathered bad, with its reason; the first stands. */
__attribute__((format(printf, 3, 4)))
static void bad(rf_tar_samples *g, rf_tar_bad code, const char *fmt, ...)
{
	if (g->code)
		return;
	g->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->bad, sizeof(g->bad), fmt, ap);
	va_end(ap);
}

/* Hands the sample gathered so far, if any, to g->fn. */
static int report(rf_tar_samples *g)
{
	if (!g->open)
		return 0;
	g->open = 0;
	if (!g->code && !g->has_member)
		bad(g, g->raw ? RF_TAR_NO_MEMBER : RF_TAR_NO_IMAGE, "%s",
		    g->raw ? "no member besides cls" : "no image member (jpg, jpeg, png, webp)");
	rf_tar_sample smp = { .key = g->key, .ext = "", .label = -1, .code = g->code };
	if (g->code) {
		smp.bad = g->bad;
		if (g->code == RF_TAR_TRUNCATED)
			smp.ext = g->ext; /* the member that was cut */
	} else {
		smp.ext = g->ext;
		smp.data_off = g->off;
		smp.size = g->size;
		smp.compressed = g->compressed;
		if (g->has_cls) {
			smp.label = g->label;
			smp.has_cls = 1;
		}
		smp.extras = g->extras;
		smp.nextras = g->nextras;
		smp.nlong = g->nlong;
		smp.long_ext = g->long_ext;
	}
	return g->fn(g->user, &smp);
}

static void start(rf_tar_samples *g, const char *key, size_t len)
{
	memcpy(g->key, key, len); /* len <= RF_TAR_NAME_MAX: a member name's prefix */
	g->key[len] = '\0';
	g->open = 1;
	g->has_member = g->has_cls = g->compressed = 0;
	g->nextras = g->nlong = 0;
	g->long_ext[0] = '\0';
	g->code = RF_TAR_GOOD;
	g->bad[0] = g->ext[0] = '\0';
}

/* Keeps member m (extension ext) as one of the sample's others when its
 * extension is short enough to name a field, else counts it (the sample
 * says how many it left out). @return : 0, or -ENOMEM. */
static int extra(rf_tar_samples *g, const char *ext, const rf_tar_member *m)
{
	size_t n = strlen(ext);
	if (n >= RF_TAR_EXTRA_EXT) {
		if (!g->nlong++)
			rfi_fmt(g->long_ext, sizeof(g->long_ext), "%s", ext);
		return 0;
	}
	if (g->nextras == g->extras_cap) {
		size_t cap = g->extras_cap ? g->extras_cap * 2 : 16;
		rf_tar_extra *x = realloc(g->extras, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		g->extras = x;
		g->extras_cap = cap;
	}
	rf_tar_extra *x = &g->extras[g->nextras++];
	memcpy(x->ext, ext, n + 1);
	x->data_off = m->data_off;
	x->size = m->size;
	return 0;
}

/* The cls member: its label, or why it is none. */
static int take_cls(rf_tar_samples *g, const rf_tar_member *m)
{
	if (g->has_cls) {
		bad(g, RF_TAR_TWO_CLS, "two cls members");
		return 0;
	}
	if (m->size > CLS_MAX) {
		bad(g, RF_TAR_BAD_CLS, "cls of %" PRIu64 " bytes: not a label", m->size);
		return 0;
	}
	if (!m->data)
		return RF_TAR_WANT_DATA; /* the scanner calls again with the bytes */
	char why[96];
	if (rfi_tar_parse_cls(m->data, (size_t)m->size, &g->label, why, sizeof(why)))
		bad(g, RF_TAR_BAD_CLS, "%s", why);
	g->has_cls = 1;
	return 0;
}

/* The member name (key of k bytes) belongs to the sample being gathered,
 * or ends it (reported) and starts the next. The next sample starts even
 * when fn stops the scan, so that a scan resumed from rf_tar_scan.pos loses
 * no member. @return : 0, or what fn returned. */
static int join(rf_tar_samples *g, const char *name, long k)
{
	if (g->open && !strncmp(g->key, name, (size_t)k) && !g->key[k])
		return 0;
	int ret = report(g);
	start(g, name, (size_t)k);
	return ret;
}

/* A lost span: the sample being gathered ends (a truncated member is its
 * own sample's, or one of its own), and a damaged span or a missing end is
 * reported as a sample of its own. */
static int lost(rf_tar_samples *g, const rf_tar_member *m)
{
	if (m->lost == RF_TAR_LOST_TRUNCATED) {
		long k = rfi_tar_key_split(m->name);
		if (k >= 0 && !is_meta(m->name)) {
			int ret = join(g, m->name, k);
			if (ret)
				return ret;
			g->code = RF_TAR_GOOD; /* this reason wins: the shard is cut here */
			rfi_fmt(g->ext, sizeof(g->ext), "%s", m->name + k + 1);
			bad(g, RF_TAR_TRUNCATED, "its member %s runs past the end of the shard "
			    "(truncated)", m->name + k + 1);
			return 0;
		}
		/* a member in no sample was cut: what came after it is lost */
	}
	int ret = report(g);
	if (ret)
		return ret;
	rf_tar_sample smp = { .key = "", .ext = "", .label = -1, .data_off = m->data_off,
			      .size = m->size, .bad = m->why ? m->why : "",
			      .code = m->lost == RF_TAR_LOST_UNENDED ? RF_TAR_UNENDED :
				      RF_TAR_DAMAGED };
	return g->fn(g->user, &smp);
}

int rfi_tar_samples_member(void *arg, const rf_tar_member *m)
{
	rf_tar_samples *g = arg;
	if (m->lost)
		return lost(g, m);
	long k = rfi_tar_key_split(m->name);
	if (k < 0 || is_meta(m->name))
		return 0; /* in no sample, as in webdataset */
	const char *ext = m->name + k + 1;
	int ret = join(g, m->name, k);
	if (ret)
		return ret;
	if (g->code)
		return 0; /* the first reason stands */
	if (!strcasecmp(ext, "cls"))
		return take_cls(g, m);
	int zst = 0;
	int candidate = g->raw ? (zst = ends_zst(ext), 1) : is_image_ext(ext, &zst);
	if (candidate && !g->has_member) {
		g->has_member = 1;
		g->off = m->data_off;
		g->size = m->size;
		g->compressed = zst;
		rfi_fmt(g->ext, sizeof(g->ext), "%s", ext);
	} else if (candidate && strlen(ext) < sizeof(g->ext) && !strcasecmp(ext, g->ext)) {
		/* webdataset refuses a sample with two members of one extension */
		bad(g, RF_TAR_TWO_IMAGES, "two '%s' members", ext);
	} else {
		/* another member (json, txt; another image, jpeg beside jpg, or
		 * in raw mode another member: the first wins): a field's */
		return extra(g, ext, m);
	}
	return 0;
}

int rfi_tar_samples_chose(const rf_tar_samples *g, const rf_tar_member *m)
{
	return g->open && g->has_member && !g->code && g->off == m->data_off && g->size == m->size;
}

int rfi_tar_samples_finish(rf_tar_samples *g)
{
	return report(g);
}
