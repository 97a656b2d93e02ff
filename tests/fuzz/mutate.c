/* mutate.c - the mutation harness: damages real tar shards (byte flips,
 * cuts, splices) and checks the loader's promise on every mutant: each
 * sample the undamaged shards hold is delivered, or reported (by name as a
 * bad sample, or inside a reported damaged span); none is lost in silence.
 * Beside the libFuzzer targets, but a plain program: it needs the whole
 * loader (threads, io_uring, decode), not one parser.
 *
 *   mutate [--mutants N | --seconds S] [--seed X] [--keep DIR] [--shards DIR]
 *
 * The shards are written here, as webdataset's writers and `ringfeed pack`
 * write them: ustar members, pax headers for long names, pax padding
 * members (pack --align), members beside the image (json), labels (cls);
 * or, with --shards, they are the *.tar of DIR (up to 8, undamaged, as
 * `ringfeed pack`, Python's tarfile or GNU tar wrote them), their samples
 * listed by the library's own scanner.
 * Each mutant copies them, applies one to three mutations, runs a loader
 * over the folder (one epoch, index order, raw or decoded, skip on error),
 * and checks every original sample:
 *   - delivered: a batch holds its id (named through the same index), and
 *     in raw mode, when none of its bytes were touched, its bytes;
 *   - or reported: on_sample_error named its key, or a reported span
 *     ("SHARD:bytes A..B") holds one of its headers' offsets in the mutant,
 *     or the shard was reported cut at or before it;
 *   - or overwritten in place: its bytes were touched and the mutant holds a
 *     valid tar header where its first header was (the shard there is well
 *     formed and says something else: no reader can know).
 * A crash, a hang (alarm), a create that fails, or one sample unaccounted
 * for stops the run with the mutant kept in --keep's folder.
 * Output: one line a 1,000 mutants, then the totals and "N passed, N failed". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <strings.h>

#include "index/index.h"
#include "source/source.h"
#include "source/tar.h"
#include "ringfeed.h"
#include "testutil.h"
#include "util/util.h"

#define MAX_SHARDS 8
#define PER_SHARD 14 /* the shards written here */
#define BLOCK 512

static int nshards = 3;
static char shard_file[MAX_SHARDS][64] = { "m-000.tar", "m-001.tar", "m-002.tar" };

/* ---- the undamaged shards ---- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

typedef struct sample_truth {
	char key[160];
	uint64_t first_header;  /* where its first member (or that member's pax header) starts */
	uint64_t headers[4];    /* each member's first header block */
	int nheaders;
	uint64_t end;           /* past its last member's data */
	uint64_t img_off, img_len; /* the image member's data */
} sample_truth;

typedef struct shard_buf {
	uint8_t *p;
	size_t len, cap;
	sample_truth *s;
	int n, ns_cap;
} shard_buf;

static sample_truth *new_sample(shard_buf *b)
{
	if (b->n == b->ns_cap) {
		b->ns_cap = b->ns_cap ? 2 * b->ns_cap : 64;
		b->s = realloc(b->s, (size_t)b->ns_cap * sizeof(*b->s));
		if (!b->s)
			die("out of memory");
	}
	memset(&b->s[b->n], 0, sizeof(b->s[0]));
	return &b->s[b->n++];
}

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "mutate: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void put(shard_buf *b, const void *data, size_t n)
{
	size_t padded = (n + BLOCK - 1) / BLOCK * BLOCK;
	if (b->len + padded > b->cap) {
		b->cap = (b->len + padded) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("out of memory");
	}
	memset(b->p + b->len, 0, padded);
	if (data)
		memcpy(b->p + b->len, data, n);
	b->len += padded;
}

/* A ustar header: name (< 100 bytes), size, type; checksum filled in. */
static void header(shard_buf *b, const char *name, uint64_t size, char type)
{
	uint8_t h[BLOCK] = { 0 };
	snprintf((char *)h, 100, "%s", name);
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	snprintf((char *)h + 124, 12, "%011" PRIo64, size);
	memcpy(h + 136, "00000000000", 12);
	h[156] = (uint8_t)type;
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	put(b, h, sizeof(h));
}

/* A pax record "LEN key=value\n" (LEN counts itself). */
static size_t pax_record(char *out, size_t cap, const char *key, const char *value)
{
	size_t body = strlen(key) + strlen(value) + 3, len = body + 1;
	for (;;) {
		int d = snprintf(NULL, 0, "%zu", len);
		if (body + (size_t)d == len)
			break;
		len = body + (size_t)d;
	}
	return (size_t)snprintf(out, cap, "%zu %s=%s\n", len, key, value);
}

/* A member; a name of 100 bytes or more goes in a pax header before it.
 * Returns the offset of its first header block. */
static uint64_t member(shard_buf *b, const char *name, const void *data, size_t n)
{
	uint64_t at = b->len;
	if (strlen(name) >= 100) {
		char rec[512];
		size_t k = pax_record(rec, sizeof(rec), "path", name);
		header(b, "PaxHeaders/long", k, 'x');
		put(b, rec, k);
	}
	header(b, strlen(name) >= 100 ? "long-name-see-pax" : name, n, '0');
	put(b, data, n);
	return at;
}

/* Padding as `ringfeed pack --align 4096` writes it: a pax comment that
 * moves the next member's data onto the boundary. */
static void pad_to(shard_buf *b, uint64_t align)
{
	uint64_t data_at = b->len + 2 * BLOCK; /* after a pad header + this member's header */
	if (data_at % align == 0)
		return;
	uint64_t pad = align - data_at % align; /* bytes of comment data, a multiple of 512 */
	char *rec = malloc(pad);
	size_t len = pad, head = (size_t)snprintf(NULL, 0, "%zu comment=", len);
	memset(rec, 'x', len);
	snprintf(rec, head + 1, "%zu comment=", len);
	rec[head] = 'x';
	rec[len - 1] = '\n';
	header(b, "PaxHeaders/pad", pad, 'x');
	put(b, rec, pad);
	free(rec);
}

static void make_shards(shard_buf *shards, const char *jpeg_dir, uint64_t seed)
{
	for (int s = 0; s < nshards; s++) {
		shard_buf *b = &shards[s];
		memset(b, 0, sizeof(*b));
		for (int i = 0; i < PER_SHARD; i++) {
			sample_truth *t = new_sample(b);
			int g = s * PER_SHARD + i;
			if (i % 5 == 3) /* a long key: pax headers */
				snprintf(t->key, sizeof(t->key), "%s/%06d",
					 "very/long/folder/name/that/does/not/fit/in/one/ustar/"
					 "name/field/of/a/hundred/bytes", g);
			else
				snprintf(t->key, sizeof(t->key), "%06d", g);
			char rel[32], name[256];
			snprintf(rel, sizeof(rel), "%d.jpg", g);
			int w = 24 + (int)((seed + (uint64_t)g * 7) % 40), h = 20 + (g * 13) % 30;
			tu_jpeg(jpeg_dir, rel, w, h, seed + (uint64_t)g);
			size_t n;
			uint8_t *jpg = tu_read(jpeg_dir, rel, &n);
			if (s == 2)
				pad_to(b, 4096); /* the pack --align layout */
			snprintf(name, sizeof(name), "%s.jpg", t->key);
			t->first_header = member(b, name, jpg, n);
			t->headers[t->nheaders++] = t->first_header;
			t->img_len = n;
			t->img_off = b->len - (n + BLOCK - 1) / BLOCK * BLOCK;
			free(jpg);
			char cls[8];
			snprintf(cls, sizeof(cls), "%d", g % 4);
			snprintf(name, sizeof(name), "%s.cls", t->key);
			t->headers[t->nheaders++] = member(b, name, cls, strlen(cls));
			if (i % 3 == 1) {
				const char *json = "{\"caption\": \"a picture\"}";
				snprintf(name, sizeof(name), "%s.json", t->key);
				t->headers[t->nheaders++] = member(b, name, json, strlen(json));
			}
			t->end = b->len;
		}
		put(b, NULL, 2 * BLOCK);
	}
}

/* ---- or shards written by real writers (--shards DIR) ---- */

/* The undamaged shard's samples, as the library's own scanner lists them
 * (it is trusted on whole shards: tests/test_tar.c checks it against
 * Python's tarfile and GNU tar). */
typedef struct truth_ctx {
	shard_buf *b;
	int lost;
} truth_ctx;

static int truth_member(void *u, const rf_tar_member *m)
{
	truth_ctx *c = u;
	if (m->lost) {
		c->lost = 1;
		return 0;
	}
	long k = rfi_tar_key_split(m->name);
	if (k < 0 || k >= 160 || !strncmp(m->name, "__", 2))
		return 0; /* in no sample */
	shard_buf *b = c->b;
	sample_truth *t = b->n ? &b->s[b->n - 1] : NULL;
	uint64_t header = m->data_off - BLOCK;
	if (!t || strncmp(t->key, m->name, (size_t)k) || t->key[k]) {
		t = new_sample(b);
		memcpy(t->key, m->name, (size_t)k);
		t->key[k] = '\0';
		t->first_header = header;
	}
	if (t->nheaders < 4)
		t->headers[t->nheaders++] = header;
	t->end = m->data_off + (m->size + BLOCK - 1) / BLOCK * BLOCK;
	const char *ext = m->name + k + 1;
	if (!t->img_len && (!strcasecmp(ext, "jpg") || !strcasecmp(ext, "jpeg"))) {
		t->img_off = m->data_off;
		t->img_len = m->size;
	}
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Reads the *.tar of folder (at most MAX_SHARDS, sorted) as the originals. */
static void load_shards(shard_buf *shards, const char *folder)
{
	DIR *d = opendir(folder);
	if (!d)
		die("%s: %s", folder, strerror(errno));
	nshards = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 4, ".tar") || de->d_name[0] == '.')
			continue;
		if (nshards == MAX_SHARDS)
			die("%s: more than %d shards", folder, MAX_SHARDS);
		if (n >= sizeof(shard_file[0]))
			die("%s: name too long", de->d_name);
		memcpy(shard_file[nshards++], de->d_name, n + 1);
	}
	closedir(d);
	if (!nshards)
		die("%s: no .tar shards", folder);
	qsort(shard_file, (size_t)nshards, sizeof(shard_file[0]), cmp_name);
	for (int s = 0; s < nshards; s++) {
		shard_buf *b = &shards[s];
		memset(b, 0, sizeof(*b));
		b->p = tu_read(folder, shard_file[s], &b->len);
		rf_tar_scan scan;
		rfi_tar_scan_init(&scan, b->len);
		truth_ctx c = { b, 0 };
		char err[256];
		if (rfi_tar_scan_feed(&scan, b->p, b->len, 0, truth_member, &c, err, sizeof(err)) != 0)
			die("%s: %s", shard_file[s], err);
		if (c.lost || !b->n)
			die("%s: not an undamaged shard of samples", shard_file[s]);
	}
}

/* ---- mutations, and where original offsets went ---- */

typedef struct mutant {
	uint8_t *p;
	size_t len;
	/* touched original bytes: [lo, hi) ranges */
	uint64_t lo[8], hi[8];
	int ntouched;
	/* one structural change: bytes [at, at + del) replaced by ins new bytes */
	int moved;
	uint64_t at, del, ins;
	uint64_t cut; /* the mutant ends here (original offsets): len without a cut */
} mutant;

static uint64_t rnd_state;
static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void touch(mutant *m, uint64_t lo, uint64_t hi)
{
	if (m->ntouched < 8) {
		m->lo[m->ntouched] = lo;
		m->hi[m->ntouched++] = hi;
	} else { /* widen the last one */
		m->lo[7] = RF_MIN(m->lo[7], lo);
		m->hi[7] = RF_MAX(m->hi[7], hi);
	}
}

/* Where original offset o went in the mutant: where it is, or for bytes
 * deleted the place of the deletion, or for bytes cut off the end. */
static uint64_t place(const mutant *m, uint64_t o)
{
	if (o >= m->cut)
		return m->len;
	if (m->moved && o >= m->at && o < m->at + m->del)
		return m->at;
	return o < m->at || !m->moved ? o : o - m->del + m->ins;
}

/* Was original offset o deleted (by a splice out)? */
static int deleted(const mutant *m, uint64_t o)
{
	return m->moved && o >= m->at && o < m->at + m->del;
}

/* Where, in the mutant, the first original header after a deletion is
 * (its end, when none is left). */
static uint64_t next_header(const mutant *m, const shard_buf *b)
{
	uint64_t best = m->len;
	for (int j = 0; j < b->n; j++)
		for (int h = 0; h < b->s[j].nheaders; h++) {
			uint64_t o = b->s[j].headers[h];
			if (o >= m->at + m->del && o < m->cut)
				best = RF_MIN(best, place(m, o));
		}
	return best;
}

/* Was any original byte of [lo, hi) touched (changed, deleted, cut)? */
static int touched(const mutant *m, uint64_t lo, uint64_t hi)
{
	if (hi > m->cut)
		return 1;
	for (int i = 0; i < m->ntouched; i++)
		if (m->lo[i] < hi && lo < m->hi[i])
			return 1;
	if (m->moved && m->at < hi && lo < m->at + RF_MAX(m->del, 1))
		return 1;
	return 0;
}

/* An offset inside a header block of some member, or anywhere. */
static uint64_t pick_offset(const shard_buf *b, size_t len)
{
	if (rnd() & 1) {
		const sample_truth *t = &b->s[below((uint64_t)b->n)];
		uint64_t h = t->headers[below((uint64_t)t->nheaders)];
		return RF_MIN(h + below(BLOCK), len ? len - 1 : 0);
	}
	return below(len);
}

static const char *mutate(mutant *m, const shard_buf *b, const shard_buf *all)
{
	static char what[256];
	what[0] = '\0';
	m->len = b->len;
	m->p = malloc(b->len + 65536);
	memcpy(m->p, b->p, b->len);
	m->ntouched = m->moved = 0;
	m->cut = UINT64_MAX;
	int n = 1 + (int)below(3);
	for (int k = 0; k < n; k++) {
		size_t w = strlen(what);
		switch (below(6)) {
		case 0: case 1: case 2: { /* byte flips */
			uint64_t at = pick_offset(b, m->len);
			if (at >= m->len || m->moved)
				break;
			m->p[at] ^= (uint8_t)(1 + below(255));
			touch(m, at, at + 1);
			snprintf(what + w, sizeof(what) - w, " flip@%" PRIu64, at);
			break;
		}
		case 3: { /* a cut: anywhere, or at a header boundary */
			if (m->moved)
				break;
			uint64_t at = rnd() & 1 ? pick_offset(b, m->len) : pick_offset(b, m->len) / BLOCK * BLOCK;
			if (at >= m->len)
				break;
			m->len = at;
			m->cut = RF_MIN(m->cut, at);
			snprintf(what + w, sizeof(what) - w, " cut@%" PRIu64, at);
			break;
		}
		case 4: { /* a splice over: bytes of another shard (or this one) copied in place */
			const shard_buf *src = &all[below((uint64_t)nshards)];
			uint64_t len = 1 + below(rnd() & 1 ? 64 : 4096);
			uint64_t from = below(src->len), at = pick_offset(b, m->len);
			if (m->moved || at >= m->len)
				break;
			len = RF_MIN(len, RF_MIN(src->len - from, m->len - at));
			if (rnd() & 1) { /* whole blocks, block aligned */
				from = from / BLOCK * BLOCK;
				at = at / BLOCK * BLOCK;
				len = RF_MIN((len + BLOCK - 1) / BLOCK * BLOCK,
					     RF_MIN(src->len - from, m->len - at));
			}
			memmove(m->p + at, src->p + from, len);
			touch(m, at, at + len);
			snprintf(what + w, sizeof(what) - w, " over@%" PRIu64 "+%" PRIu64, at, len);
			break;
		}
		case 5: { /* a splice in or out: bytes inserted or deleted (offsets move) */
			if (m->moved || m->cut != UINT64_MAX)
				break;
			uint64_t at = pick_offset(b, m->len);
			uint64_t del = rnd() & 1 ? below(2048) : 0, ins = del ? 0 : 1 + below(2048);
			if (rnd() & 1) {
				at = at / BLOCK * BLOCK;
				del = del / BLOCK * BLOCK;
				ins = ins ? (ins + BLOCK - 1) / BLOCK * BLOCK : 0;
			}
			if (at > m->len || (!del && !ins))
				break;
			del = RF_MIN(del, m->len - at);
			const shard_buf *src = &all[below((uint64_t)nshards)];
			ins = RF_MIN(ins, src->len);
			uint64_t from = below(src->len - ins + 1);
			uint8_t *q = malloc(m->len - del + ins + 1);
			memcpy(q, m->p, at);
			memcpy(q + at, src->p + from, ins);
			memcpy(q + at + ins, m->p + at + del, m->len - at - del);
			free(m->p);
			m->p = q;
			m->len = m->len - del + ins;
			m->moved = 1;
			m->at = at;
			m->del = del;
			m->ins = ins;
			snprintf(what + w, sizeof(what) - w, " %s@%" PRIu64 "+%" PRIu64,
				 del ? "delete" : "insert", at, del ? del : ins);
			break;
		}
		}
	}
	return what;
}

/* ---- one run of the loader over the mutants ---- */

typedef struct report {
	int shard;
	char key[200];   /* the sample's key, or "" for a span */
	uint64_t a, b;   /* a span's bytes */
	int span, truncated;
} report;

typedef struct run_log {
	report r[256];
	int n;
	const rf_index *names; /* unused by the callback */
} run_log;


/* The shard a report names: "FOLDER/SHARD:member" (the callback's path is
 * the shard's under the source's folder). */
static int shard_of(const char *name)
{
	const char *colon = strchr(name, ':');
	if (!colon)
		return -1;
	const char *start = memrchr(name, '/', (size_t)(colon - name));
	start = start ? start + 1 : name;
	for (int s = 0; s < nshards; s++) {
		size_t k = strlen(shard_file[s]);
		if ((size_t)(colon - start) == k && !strncmp(start, shard_file[s], k))
			return s;
	}
	return -1;
}

/* "SHARD:key.ext" or "SHARD:key" -> shard, key (webdataset's split: up to
 * the first dot of the base name). */
static int split_name(const char *name, int *shard, char *key, size_t keylen)
{
	*shard = shard_of(name);
	if (*shard < 0)
		return -1;
	const char *p = strchr(name, ':') + 1;
	const char *base = strrchr(p, '/');
	base = base ? base + 1 : p;
	const char *dot = strchr(base, '.');
	size_t n = dot ? (size_t)(dot - p) : strlen(p);
	snprintf(key, keylen, "%.*s", (int)n, p);
	return 0;
}

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	run_log *log = user;
	if (log->n == 256)
		return;
	report *r = &log->r[log->n];
	memset(r, 0, sizeof(*r));
	if (split_name(path, &r->shard, r->key, sizeof(r->key)))
		return;
	const char *colon = strchr(path, ':');
	unsigned long long a, b;
	if (err == RF_ELOST && sscanf(colon + 1, "bytes %llu..%llu", &a, &b) == 2) {
		r->span = 1;
		r->a = a;
		r->b = b;
		r->key[0] = '\0';
		r->truncated = strstr(reason, "without its end-of-archive") != NULL;
	} else if (strstr(reason, "runs past the end of the shard")) {
		r->truncated = 1;
	}
	log->n++;
}

typedef struct totals {
	uint64_t mutants, samples, delivered, by_name, by_span, overwritten, raw_checked;
} totals;

static int valid_header_at(const uint8_t *p, size_t len, uint64_t at)
{
	if (at == UINT64_MAX || at % BLOCK || at + BLOCK > len)
		return 0;
	const uint8_t *h = p + at;
	unsigned sum = 0, zero = 1;
	for (int i = 0; i < BLOCK; i++) {
		sum += i >= 148 && i < 156 ? ' ' : h[i];
		zero &= h[i] == 0;
	}
	return !zero && strtoul((const char *)h + 148, NULL, 8) == sum;
}

/* Does the mutant hold a valid header that the mutation made (copied or
 * inserted there)? Then a member it names may be delivered with bytes
 * that are not that member's, and no reader can tell: its shard's raw
 * deliveries are not compared byte for byte. */
static int forged_header(const mutant *m, uint64_t at)
{
	if (!valid_header_at(m->p, m->len, at))
		return 0;
	uint64_t o = at; /* the original offset of the block */
	if (m->moved && at >= m->at) {
		if (at < m->at + m->ins)
			return 1; /* inserted */
		o = at - m->ins + m->del;
	}
	return touched(m, o, o + BLOCK) || (m->moved && o % BLOCK != at % BLOCK);
}

/* Does a forged header's member (its header and data) cover mutant offset x? */
static int in_forged_member(const mutant *m, uint64_t x)
{
	for (uint64_t at = 0; at + BLOCK <= m->len && at <= x; at += BLOCK) {
		if (!forged_header(m, at))
			continue;
		uint64_t size = strtoull((const char *)m->p + at + 124, NULL, 8);
		if (x < at + BLOCK + (size + BLOCK - 1) / BLOCK * BLOCK)
			return 1;
	}
	return 0;
}

static int forged(const mutant *m)
{
	for (uint64_t at = 0; at + BLOCK <= m->len; at += BLOCK)
		if (forged_header(m, at))
			return 1;
	return 0;
}

/* Runs the loader on dir (holding the mutants m[]) and checks every
 * original sample. Returns 0, or -1 with why[] saying what went wrong. */
static int check(const char *dir, const shard_buf *orig, const mutant *m, int raw, totals *t,
		 char *why, size_t whylen)
{
	run_log log = { .n = 0 };
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.shuffle = 0;
	cfg.threads = 1;
	cfg.raw = raw;
	cfg.raw_max_bytes = 1 << 20;
	cfg.on_sample_error = on_bad;
	cfg.user = &log;
	rf_loader *l;
	char err[512];
	int ret = rf_loader_create(&l, &cfg, err, sizeof(err));
	if (ret) {
		snprintf(why, whylen, "create failed: %s (%s)", err, rf_strerror(ret));
		return -1;
	}
	rf_index idx; /* the same index, for naming ids */
	if (rfi_index_build_progress(&idx, dir, raw ? RF_INDEX_RAW : 0, NULL, NULL, RF_LOG_NONE, err,
				    sizeof(err))) {
		rf_loader_destroy(l);
		snprintf(why, whylen, "index: %s", err);
		return -1;
	}
	size_t cap = idx.count + 1;
	uint8_t *seen = calloc(cap, 1);
	int forgery[MAX_SHARDS];
	for (int s = 0; s < nshards; s++)
		forgery[s] = forged(&m[s]);
	rf_batch *b;
	int failed = 0;
	while ((ret = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			if (b->ids[i] >= idx.count) {
				snprintf(why, whylen, "id %llu past the index (%zu)",
					 (unsigned long long)b->ids[i], idx.count);
				failed = 1;
				continue;
			}
			seen[b->ids[i]] = 1;
			if (!raw)
				continue;
			/* raw: an untouched sample's bytes are its image's */
			char name[1024], key[200];
			int s;
			rfi_index_name(&idx, b->ids[i], name, sizeof(name));
			size_t nl = strlen(name);
			if (split_name(name, &s, key, sizeof(key)) || forgery[s] || nl < 4 ||
			    strcmp(name + nl - 4, ".jpg"))
				continue; /* (another member of the key stands in for a lost image) */
			for (int j = 0; j < orig[s].n; j++) {
				const sample_truth *st = &orig[s].s[j];
				if (strcmp(st->key, key) || touched(&m[s], st->first_header, st->end))
					continue;
				if (b->sizes[i] != st->img_len ||
				    memcmp(b->data + b->offsets[i], orig[s].p + st->img_off, st->img_len)) {
					snprintf(why, whylen, "%s: delivered bytes differ from its member's",
						 name);
					failed = 1;
				}
				t->raw_checked++;
			}
		}
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
	if (ret != RF_EOF && !failed) {
		snprintf(why, whylen, "next: %s", rf_strerror(ret));
		failed = 1;
	}
	/* the keys delivered, per shard */
	for (int s = 0; s < nshards && !failed; s++) {
		for (int j = 0; j < orig[s].n && !failed; j++) {
			const sample_truth *st = &orig[s].s[j];
			t->samples++;
			int ok = 0;
			for (size_t i = 0; i < idx.count && !ok; i++) {
				char name[1024], key[200];
				int sh;
				if (!seen[i] || idx.entries[i].size < 0)
					continue;
				rfi_index_name(&idx, i, name, sizeof(name));
				ok = !split_name(name, &sh, key, sizeof(key)) && sh == s &&
				     !strcmp(key, st->key);
			}
			if (ok) {
				t->delivered++;
				continue;
			}
			for (int r = 0; r < log.n && !ok; r++)
				ok = log.r[r].shard == s && !log.r[r].span && !strcmp(log.r[r].key, st->key);
			if (ok) {
				t->by_name++;
				continue;
			}
			/* inside a reported span, or at or past a reported cut */
			for (int r = 0; r < log.n && !ok; r++) {
				const report *rp = &log.r[r];
				if (rp->shard != s)
					continue;
				/* a span to the mutant's end, or a cut member named, says the
				 * shard was cut: what lies past the mutant's end is covered */
				int cut_said = rp->truncated || (rp->span && rp->b >= m[s].len);
				for (int h = 0; h < st->nheaders && !ok; h++) {
					uint64_t o = st->headers[h], at = place(&m[s], o);
					ok = rp->span && at >= rp->a && (at < rp->b || cut_said);
					ok |= cut_said && at >= m[s].len;
					if (!ok && rp->span && deleted(&m[s], o))
						/* a header deleted: the structure breaks where the
						 * next header was due, between the deletion and the
						 * first header after it */
						ok = rp->a >= m[s].at && rp->a <= next_header(&m[s], &orig[s]);
				}
				if (!ok && rp->truncated && !rp->span) {
					/* the cut sample was named: it and what came after */
					for (int j2 = 0; j2 <= j && !ok; j2++)
						ok = !strcmp(orig[s].s[j2].key, rp->key);
				}
			}
			if (!ok && m[s].len == 0) /* an empty shard: reported as cut at 0 */
				for (int r = 0; r < log.n && !ok; r++)
					ok = log.r[r].shard == s && log.r[r].span;
			if (ok) {
				t->by_span++;
				continue;
			}
			uint64_t first = place(&m[s], st->first_header);
			/* overwritten in place: a well-formed header the mutation made
			 * stands where its header was, or claims its bytes as data */
			if ((touched(&m[s], st->first_header, st->end) &&
			     valid_header_at(m[s].p, m[s].len, first)) ||
			    in_forged_member(&m[s], first)) {
				t->overwritten++;
				continue;
			}
			snprintf(why, whylen, "%s:%s (first header at %llu, %s) was neither delivered nor "
				 "reported (%d reports)", shard_file[s], st->key,
				 (unsigned long long)st->first_header,
				 touched(&m[s], st->first_header, st->end) ? "touched" : "untouched",
				 log.n);
			for (int r = 0; r < log.n; r++)
				fprintf(stderr, "  report: %s %s bytes %llu..%llu%s\n",
					shard_file[log.r[r].shard], log.r[r].key,
					(unsigned long long)log.r[r].a, (unsigned long long)log.r[r].b,
					log.r[r].truncated ? " (cut)" : "");
			failed = 1;
		}
	}
	free(seen);
	rfi_index_free(&idx);
	return failed ? -1 : 0;
}


static void write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	tu_write(dir, name, p, n);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "mutate: a mutant ran past 60 s: a hang\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

int main(int argc, char **argv)
{
	uint64_t mutants = 200, seed = (uint64_t)time(NULL);
	double seconds = 0;
	const char *keep = NULL, *real = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mutants") && i + 1 < argc)
			mutants = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtod(argv[++i], NULL), mutants = UINT64_MAX;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--shards") && i + 1 < argc)
			real = argv[++i];
		else {
			fprintf(stderr, "usage: mutate [--mutants N | --seconds S] [--seed X] [--keep DIR] "
				"[--shards DIR]\n");
			return 2;
		}
	}
	signal(SIGALRM, on_alarm);
	char *jpegs = tu_tmpdir("mutate-jpegs"), *dir = tu_tmpdir("mutate");
	shard_buf orig[MAX_SHARDS];
	if (real)
		load_shards(orig, real);
	else
		make_shards(orig, jpegs, seed);
	printf("mutate: seed %llu, %d shards (%s):", (unsigned long long)seed, nshards,
	       real ? real : "written here");
	for (int s = 0; s < nshards; s++)
		printf(" %s %d samples %zu bytes,", shard_file[s], orig[s].n, orig[s].len);
	printf("\n");
	fflush(stdout);
	rnd_state = seed;
	totals t = { 0 };
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int failed = 0;
	for (uint64_t k = 0; k < mutants; k++) {
		if (seconds > 0) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9 > seconds)
				break;
		}
		mutant m[MAX_SHARDS];
		char what[1024] = "";
		/* one to three shards damaged; the others as they were */
		int damaged = 0;
		for (int s = 0; s < nshards; s++) {
			if ((rnd() % 3 == 0 || (s == nshards - 1 && !damaged))) {
				const char *w = mutate(&m[s], &orig[s], orig);
				size_t n = strlen(what);
				snprintf(what + n, sizeof(what) - n, " %s:%s", shard_file[s], w);
				damaged++;
			} else {
				m[s] = (mutant){ .p = malloc(orig[s].len), .len = orig[s].len,
						 .cut = UINT64_MAX };
				memcpy(m[s].p, orig[s].p, orig[s].len);
			}
			write_file(dir, shard_file[s], m[s].p, m[s].len);
		}
		char why[1024] = "";
		int raw = (int)(k & 1);
		alarm(60);
		int r = check(dir, orig, m, raw, &t, why, sizeof(why));
		alarm(0);
		t.mutants++;
		if (r) {
			printf("mutate: mutant %llu (%s,%s): %s\n", (unsigned long long)k,
			       raw ? "raw" : "decoded", what, why);
			if (keep) {
				char cmd[4096];
				snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s' '%s'", keep, dir, keep);
				if (system(cmd) != 0)
					fprintf(stderr, "mutate: could not keep the mutant in %s\n", keep);
				else
					printf("mutate: the mutant's shards are in %s\n", keep);
			}
			failed = 1;
		}
		for (int s = 0; s < nshards; s++)
			free(m[s].p);
		if (failed)
			break;
		if ((k + 1) % 1000 == 0) {
			printf("mutate: %llu mutants, %llu samples: %llu delivered, %llu reported by name, "
			       "%llu in reported spans, %llu overwritten in place\n",
			       (unsigned long long)t.mutants, (unsigned long long)t.samples,
			       (unsigned long long)t.delivered, (unsigned long long)t.by_name,
			       (unsigned long long)t.by_span, (unsigned long long)t.overwritten);
			fflush(stdout);
		}
	}
	printf("mutate: %llu mutants, %llu samples checked: %llu delivered, %llu reported by name, "
	       "%llu in reported spans, %llu overwritten in place; %llu raw deliveries compared "
	       "byte for byte; %s\n",
	       (unsigned long long)t.mutants, (unsigned long long)t.samples,
	       (unsigned long long)t.delivered, (unsigned long long)t.by_name,
	       (unsigned long long)t.by_span, (unsigned long long)t.overwritten,
	       (unsigned long long)t.raw_checked, failed ? "an invariant broke" : "no sample lost in silence");
	printf("%d passed, %d failed\n", !failed, failed);
	tu_rmrf(dir);
	tu_rmrf(jpegs);
	free(dir);
	free(jpegs);
	for (int s = 0; s < nshards; s++) {
		free(orig[s].p);
		free(orig[s].s);
	}
	return failed;
}
