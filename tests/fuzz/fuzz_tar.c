/* fuzz_tar.c - libFuzzer target: a tar shard scanned by rfi_tar_scan_feed()
 * and grouped into samples (rfi_tar_samples_member). The first input byte
 * picks the window size (bits 0-2), raw mode (bit 3) and whether checksums
 * are mended first (bit 4: mutated header fields would otherwise rarely get
 * past the checksum); the rest is the shard. It is scanned twice, whole and in windows (each window copied to
 * an allocation of its own, so that a read past it shows under ASan), and
 * both scans must agree: the same result, members and samples. Every member
 * must lie inside the shard, after the one before it, and so must every
 * lost span the scan reports; pos only grows, in whole blocks, and each
 * call moves on or asks for a larger window. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/tar.h"
#include "util/hash.h"

/* Aborts (a crash libFuzzer keeps) when an invariant does not hold. */
#define must(c)                                                                    \
	do {                                                                       \
		if (!(c)) {                                                        \
			fprintf(stderr, "fuzz_tar: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                   \
		}                                                                  \
	} while (0)

typedef struct run {
	const uint8_t *shard;
	size_t len;
	const uint8_t *win; /* the window being fed: [off, off + n) */
	uint64_t off;
	size_t n;
	uint64_t next_min;  /* the least data offset the next member may have */
	uint64_t hash;      /* of members and samples, in order */
	rf_tar_samples g;
} run;

static int on_sample(void *u, const rf_tar_sample *s)
{
	run *r = u;
	must(s->key && strlen(s->key) <= RF_TAR_NAME_MAX);
	if (s->bad) {
		must(s->bad[0]);
	} else {
		must(s->size <= r->len && s->data_off <= r->len - s->size);
		must(s->label >= -1 && (s->compressed == 0 || s->compressed == 1));
	}
	r->hash = rfi_hash_bytes(r->hash, s->key, strlen(s->key));
	r->hash = rfi_hash_u64(r->hash, s->bad ? UINT64_MAX : s->data_off ^ s->size << 20);
	r->hash = rfi_hash_u64(r->hash, (uint64_t)(int64_t)s->label);
	return 0;
}

/* A lost span: inside the shard, after the member before it, in whole
 * blocks from a header's place; a missing end is less than two blocks, at
 * the end. */
static int on_lost(run *r, const rf_tar_member *m)
{
	must(m->why && m->why[0] && !m->data && m->lost <= RF_TAR_LOST_UNENDED);
	must(m->data_off % RF_TAR_BLOCK == 0 && m->data_off + RF_TAR_BLOCK >= r->next_min);
	must(m->size <= r->len && m->data_off <= r->len - m->size);
	must(m->lost != RF_TAR_LOST_UNENDED || (m->size < 2 * RF_TAR_BLOCK && m->data_off + m->size == r->len));
	must(m->lost != RF_TAR_LOST_TRUNCATED || m->data_off + m->size == r->len);
	must(rfi_tar_samples_member(&r->g, m) == 0);
	r->next_min = m->data_off + m->size + RF_TAR_BLOCK;
	r->hash = rfi_hash_u64(r->hash, m->data_off ^ m->size << 20 ^ (uint64_t)m->lost << 60);
	return 0;
}

static int on_member(void *u, const rf_tar_member *m)
{
	run *r = u;
	if (m->lost)
		return on_lost(r, m);
	size_t len = strlen(m->name);
	must(len <= RF_TAR_NAME_MAX);
	must(m->data_off % RF_TAR_BLOCK == 0 && m->data_off >= r->next_min);
	must(m->size <= r->len && m->data_off <= r->len - m->size);
	if (m->data) {
		must(m->data_off >= r->off && m->data_off - r->off + m->size <= r->n);
		must(m->data == r->win + (m->data_off - r->off));
		must(memcmp(m->data, r->shard + m->data_off, m->size) == 0);
	}
	int ret = rfi_tar_samples_member(&r->g, m);
	if (ret == RF_TAR_WANT_DATA) {
		must(!m->data);
		return ret; /* it comes again, with its data */
	}
	must(ret == 0);
	r->next_min = m->data_off + m->size + RF_TAR_BLOCK;
	r->hash = rfi_hash_bytes(r->hash, m->name, len);
	r->hash = rfi_hash_u64(r->hash, m->data_off ^ m->size << 20);
	return 0;
}

/* Scans the shard in windows of w bytes (or s.need, if larger).
 * @return : the scan's result; r->hash what it found. */
static int scan(run *r, size_t w, int raw)
{
	rf_tar_scan s;
	rfi_tar_scan_init(&s, r->len);
	rfi_tar_samples_init(&r->g, raw, on_sample, r);
	r->next_min = RF_TAR_BLOCK;
	r->hash = 0;
	char err[256];
	size_t calls = 0;
	for (;;) {
		uint64_t pos = s.pos;
		size_t need = s.need;
		size_t n = r->len - (size_t)pos;
		if (n > w && n > need)
			n = w > need ? w : need;
		uint8_t *win = malloc(n ? n : 1);
		must(win);
		memcpy(win, r->shard + pos, n);
		r->win = win;
		r->off = pos;
		r->n = n;
		int ret = rfi_tar_scan_feed(&s, win, n, pos, on_member, r, err, sizeof(err));
		free(win);
		must(++calls <= 2 * (r->len / RF_TAR_BLOCK) + 4);
		if (ret != 1) {
			must(ret <= 0);
			if (ret < 0)
				must(err[0]);
			if (ret == 0)
				must(rfi_tar_samples_finish(&r->g) == 0);
			rfi_tar_samples_free(&r->g);
			return ret;
		}
		must(s.pos >= pos && s.pos % RF_TAR_BLOCK == 0 && s.pos <= r->len);
		must(s.need >= RF_TAR_BLOCK && s.need <= RF_TAR_NEED_MAX);
		must(s.pos > pos || s.need > n); /* moved on, or asks for more */
		must(s.pos < r->len);             /* ... of bytes that are left */
	}
}

/* Rewrites the checksum of every block that has a ustar magic. */
static void mend_checksums(uint8_t *p, size_t len)
{
	for (size_t at = 0; at + RF_TAR_BLOCK <= len; at += RF_TAR_BLOCK) {
		uint8_t *h = p + at;
		if (memcmp(h + 257, "ustar", 5))
			continue;
		memset(h + 148, ' ', 8);
		unsigned sum = 0;
		for (int i = 0; i < RF_TAR_BLOCK; i++)
			sum += h[i];
		char f[8];
		snprintf(f, sizeof(f), "%06o", sum);
		memcpy(h + 148, f, 7);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t windows[] = { 1, 512, 700, 1024, 4096, 65536, 513, SIZE_MAX };
	if (size < 1)
		return 0;
	uint8_t *copy = NULL;
	run r = { .shard = data + 1, .len = size - 1 };
	if (data[0] & 0x10) {
		copy = malloc(r.len ? r.len : 1);
		must(copy);
		memcpy(copy, r.shard, r.len);
		mend_checksums(copy, r.len);
		r.shard = copy;
	}
	int raw = data[0] >> 3 & 1;
	int whole = scan(&r, SIZE_MAX, raw);
	uint64_t h = r.hash;
	int windowed = scan(&r, windows[data[0] & 7], raw);
	must(whole == windowed);
	must(h == r.hash);
	free(copy);
	return 0;
}
