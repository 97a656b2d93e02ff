/* tar.c - rfi_tar_scan_feed(): the headers of a tar shard, window by window
 * (see tar.h). A header is parsed only when all of its block is in the
 * window, and an extended header ('x', 'L') only with all of its data, so
 * that nothing but the pending name and size crosses from one window to the
 * next, and nothing is allocated. */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "source/tar.h"
#include "ringfeed.h"
#include "util/util.h"

/* The ustar header block (POSIX.1-1988): offsets of the fields read here. */
enum {
	H_NAME = 0,
	H_NAME_LEN = 100,
	H_SIZE = 124,
	H_SIZE_LEN = 12,
	H_CHKSUM = 148,
	H_CHKSUM_LEN = 8,
	H_TYPE = 156,
	H_MAGIC = 257, /* "ustar\0" + "00" (POSIX, pax), "ustar  \0" (GNU), nothing (v7) */
	H_PREFIX = 345,
	H_PREFIX_LEN = 155,
};

/* An octal field as tar writes it: leading spaces, digits, then NULs or
 * spaces; what follows a NUL is ignored and an empty field reads 0, as
 * Python's tarfile reads them. @return : 0, or -1 when the field is not
 * such a number or does not fit 64 bits. */
static int parse_octal(const uint8_t *f, size_t len, uint64_t *out)
{
	size_t i = 0;
	while (i < len && f[i] == ' ')
		i++;
	uint64_t v = 0;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 61)
			return -1;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < len && f[i] != '\0'; i++)
		if (f[i] != ' ')
			return -1;
	*out = v;
	return 0;
}

/* The size field: octal, or base-256 (GNU tar, and Python's GNU_FORMAT for
 * 8 GiB and more): a 0x80 marker, then the value big-endian. 0xff marks a
 * negative number, refused like a value past 64 bits. */
static int parse_size(const uint8_t *f, uint64_t *out)
{
	if (!(f[0] & 0x80))
		return parse_octal(f, H_SIZE_LEN, out);
	if (f[0] != 0x80 || f[1] || f[2] || f[3])
		return -1;
	uint64_t v = 0;
	for (int i = 4; i < H_SIZE_LEN; i++)
		v = v << 8 | f[i];
	*out = v;
	return 0;
}

/* Whether the stored checksum is the sum of the block's bytes with the
 * checksum field read as spaces: of unsigned bytes (POSIX), or of signed
 * ones (what some old tars wrote; GNU tar and Python accept both). */
static int checksum_ok(const uint8_t *h, uint64_t *stored, uint64_t *sum)
{
	uint64_t u = 0;
	int64_t sg = 0;
	for (int i = 0; i < RF_TAR_BLOCK; i++) {
		uint8_t b = i >= H_CHKSUM && i < H_CHKSUM + H_CHKSUM_LEN ? ' ' : h[i];
		u += b;
		sg += (int8_t)b;
	}
	*sum = u;
	if (parse_octal(h + H_CHKSUM, H_CHKSUM_LEN, stored))
		return 0;
	return *stored == u || (int64_t)*stored == sg;
}

static int is_zero_block(const uint8_t *h)
{
	for (int i = 0; i < RF_TAR_BLOCK; i++)
		if (h[i])
			return 0;
	return 1;
}

/* The name the header itself holds: name, or prefix/name when the header is
 * POSIX ustar (GNU headers keep other fields where the prefix would be).
 * out has room for 155 + 1 + 100 + 1 bytes. */
static void header_name(const uint8_t *h, char *out)
{
	size_t n = 0;
	if (!memcmp(h + H_MAGIC, "ustar\0", 6) && h[H_PREFIX]) {
		n = strnlen((const char *)h + H_PREFIX, H_PREFIX_LEN);
		memcpy(out, h + H_PREFIX, n);
		out[n++] = '/';
	}
	size_t k = strnlen((const char *)h + H_NAME, H_NAME_LEN);
	memcpy(out + n, h + H_NAME, k);
	out[n + k] = '\0';
}

static int stop(rf_tar_scan *s, int code)
{
	s->status = code;
	return code;
}

/* A decimal number of a pax record (digits only, 64 bits at most).
 * @return : 0, or -1. */
static int parse_dec(const uint8_t *p, size_t n, uint64_t *out)
{
	if (!n)
		return -1;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return 0;
}

/* The records of a pax extended header at offset at, data p[n]: "LEN KEY=VALUE\n",
 * LEN counting the whole record. path and size are kept for the next member;
 * an empty value deletes the keyword's earlier value (POSIX), and every other
 * keyword (mtime, comment, the padding records of `ringfeed pack --align`)
 * is skipped. NUL bytes after the last record are allowed. */
static int parse_pax(rf_tar_scan *s, const uint8_t *p, size_t n, uint64_t at, char *err,
		     size_t errlen)
{
	size_t i = 0;
	while (i < n) {
		const uint8_t *r = p + i;
		size_t left = n - i;
		if (r[0] == '\0') {
			for (size_t k = 1; k < left; k++)
				if (r[k])
					goto bad;
			break;
		}
		const uint8_t *sp = memchr(r, ' ', RF_MIN(left, (size_t)20));
		uint64_t len;
		if (!sp || parse_dec(r, (size_t)(sp - r), &len) || len > left || len < 5 ||
		    r[len - 1] != '\n')
			goto bad;
		const uint8_t *key = sp + 1, *end = r + len - 1;
		const uint8_t *eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			goto bad;
		size_t klen = (size_t)(eq - key), vlen = (size_t)(end - eq - 1);
		const uint8_t *val = eq + 1;
		if (klen == 4 && !memcmp(key, "path", 4)) {
			if (vlen > RF_TAR_NAME_MAX) {
				rfi_fmt(err, errlen, "pax header at offset %" PRIu64 ": path of %zu "
				       "bytes: name too long (at most %d)", at, vlen, RF_TAR_NAME_MAX);
				return -1;
			}
			if (memchr(val, 0, vlen))
				goto bad;
			if (vlen) {
				memcpy(s->name, val, vlen);
				s->name[vlen] = '\0';
				s->name_from = 2;
			} else if (s->name_from == 2) {
				s->name_from = 0;
			}
		} else if (klen == 4 && !memcmp(key, "size", 4)) {
			if (vlen && parse_dec(val, vlen, &s->size)) {
				rfi_fmt(err, errlen, "pax header at offset %" PRIu64 ": size '%.*s' is "
				       "not a number", at, (int)RF_MIN(vlen, (size_t)40), val);
				return -1;
			}
			s->has_size = vlen > 0;
		} else if (klen > 11 && !memcmp(key, "GNU.sparse.", 11)) {
			rfi_fmt(err, errlen, "pax header at offset %" PRIu64 ": sparse member "
			       "(%.*s): not supported", at, (int)klen, key);
			return -1;
		}
		i += len;
	}
	return 0;
bad:
	rfi_fmt(err, errlen, "pax header at offset %" PRIu64 ": bad record at byte %zu (expected "
	       "'LENGTH KEYWORD=VALUE\\n')", at, i);
	return -1;
}

/* A GNU long name ('L'): the data up to its NUL. */
static int parse_long_name(rf_tar_scan *s, const uint8_t *p, size_t n, uint64_t at, char *err,
			   size_t errlen)
{
	size_t len = strnlen((const char *)p, n);
	if (len > RF_TAR_NAME_MAX) {
		rfi_fmt(err, errlen, "GNU long name at offset %" PRIu64 ": %zu bytes: name too long "
		       "(at most %d)", at, len, RF_TAR_NAME_MAX);
		return -1;
	}
	if (s->name_from != 2) { /* a pax path wins, whichever came first */
		memcpy(s->name, p, len);
		s->name[len] = '\0';
		s->name_from = 1;
	}
	return 0;
}

void rfi_tar_scan_init(rf_tar_scan *s, uint64_t shard_size)
{
	memset(s, 0, sizeof(*s));
	s->shard_size = shard_size;
	s->need = RF_TAR_BLOCK;
	s->status = 1;
}

/* Types without data (POSIX: links, devices, directories, FIFOs); every
 * other type has size bytes of data, as Python's tarfile reads it. */
static int has_data(uint8_t type)
{
	return type < '1' || type > '6';
}

/* Reports a lost span [at, at + len) to fn. @return : 0, or what fn
 * returned (RF_TAR_WANT_DATA means nothing for a span). */
static int report_lost(rf_tar_lost kind, const char *name, uint64_t at, uint64_t len,
		       const char *why, rf_tar_member_fn fn, void *user)
{
	if (!fn)
		return 0;
	rf_tar_member m = { .name = name ? name : "", .data_off = at, .size = len, .lost = kind,
			    .why = why };
	int r = fn(user, &m);
	return r == RF_TAR_WANT_DATA ? 0 : r;
}

/* A malformed header at pos (why says how): the bytes from there (from
 * the first pending extended header, whose member is lost with it) are
 * lost up to the next valid header. Damage in an extended header loses
 * the member it describes too (skip_member): its ustar header alone would
 * give the wrong name. */
static void damage(rf_tar_scan *s, uint64_t pos, int in_ext, const char *why)
{
	if (!s->resync) {
		s->resync = 1;
		s->lost_off = s->ext ? s->ext_off : pos;
		rfi_fmt(s->why, sizeof(s->why), "%s", why);
	}
	s->skip_member |= in_ext || s->ext;
	s->ext = s->name_from = s->has_size = 0;
	s->pos = pos + RF_TAR_BLOCK;
}

/* Could h (with room bytes of the shard from it) be where members start
 * again after damage: a header with a right checksum and a size that fits?
 * *size gets the size of its data (0 for types without data). */
static int valid_header(const uint8_t *h, uint64_t room, uint64_t *size)
{
	uint64_t stored, sum;
	if (is_zero_block(h) || !checksum_ok(h, &stored, &sum) || parse_size(h + H_SIZE, size))
		return 0;
	if (!has_data(h[H_TYPE]))
		*size = 0;
	return RF_ALIGN_UP(*size, RF_TAR_BLOCK) <= room - RF_TAR_BLOCK && *size <= room;
}

/* The end of the shard at s->pos, with left (< 512) bytes after it in
 * buf: a damaged span still open, pending extended headers or a partial
 * block that is not zeros are lost; no end block at all (nothing, or part
 * of a block of zeros) may be a cut. Past a whole zero block, the end is
 * as tar writes it, unless bytes other than zeros were seen. */
static int at_end(rf_tar_scan *s, const uint8_t *tail, uint64_t left, rf_tar_member_fn fn,
		  void *user)
{
	const uint64_t pos = s->pos, size = s->shard_size;
	int zeros = 1;
	for (uint64_t i = 0; i < left; i++)
		zeros &= tail[i] == 0;
	char why[192];
	int r = 0;
	s->pos = size;
	s->status = 0;
	if (s->after_end) {
		/* zeros after the end blocks are the end as tar writes it; other
		 * bytes there may be members cut off from their headers (a
		 * zero block written over a header, a misaligned splice): lost */
		if (s->junk || (left && !zeros)) {
			rfi_fmt(s->why, sizeof(s->why), "a zero block (the end of an archive) at offset "
			       "%" PRIu64 " is followed by bytes that are not zeros nor tar members, up "
			       "to the end of the shard at %" PRIu64, s->end_off, size);
			r = report_lost(RF_TAR_LOST_DAMAGED, "", s->end_off, size - s->end_off, s->why,
					fn, user);
		} else if (size - s->end_off < 2 * RF_TAR_BLOCK) {
			/* tar writes two zero blocks; one, or part of the second, is
			 * what a cut inside them (or right after a zero block) leaves */
			rfi_fmt(why, sizeof(why), "the shard ends %" PRIu64 " bytes into its end-of-archive "
			       "blocks (two blocks of zeros) at offset %" PRIu64 " (cut there?)",
			       size - s->end_off, s->end_off);
			r = report_lost(RF_TAR_LOST_UNENDED, "", s->end_off, size - s->end_off, why, fn,
					user);
		}
	} else if (s->resync || s->ext) {
		if (!s->resync)
			rfi_fmt(s->why, sizeof(s->why), "extended header at offset %" PRIu64 " is "
			       "followed by no member: the shard ends at %" PRIu64, s->ext_off, size);
		uint64_t from = s->resync ? s->lost_off : s->ext_off;
		s->resync = s->ext = 0;
		r = report_lost(RF_TAR_LOST_DAMAGED, "", from, size - from, s->why, fn, user);
	} else if (!zeros) {
		rfi_fmt(why, sizeof(why), "a partial header block at offset %" PRIu64 ": the shard "
		       "ends at %" PRIu64 " (cut)", pos, size);
		r = report_lost(RF_TAR_LOST_DAMAGED, "", pos, left, why, fn, user);
	} else {
		/* nothing, or less than a block of zeros, where a header or the
		 * end blocks belong */
		rfi_fmt(why, sizeof(why), "the shard ends at offset %" PRIu64 " without its "
		       "end-of-archive blocks (cut there?)", size);
		r = report_lost(RF_TAR_LOST_UNENDED, "", pos, left, why, fn, user);
	}
	return r;
}

/* One header block at s->pos, as rfi_tar_scan_feed looks at it: filled step
 * by step (the scan_* functions below). */
typedef struct tar_at {
	const uint8_t *h;   /* the block, in the window */
	uint64_t pos, left; /* its offset, and the shard's bytes from there */
	uint64_t end;       /* the window's end (an offset in the shard) */
	uint8_t type;
	int ext, meta;      /* an extended header; any header that describes the next member */
	const char *name;   /* the member's name: its header's, or a pending long one */
	uint64_t size;      /* its data's size */
	uint64_t data_off, next; /* where its data starts; where the next header is */
	char hname[H_PREFIX_LEN + 1 + H_NAME_LEN + 1];
	char why[192 + RF_TAR_NAME_MAX];
} tar_at;

/* What a scan_* step says: go on with this header, go to the next block
 * (s->pos moved), or return *ret from rfi_tar_scan_feed. */
enum { SCAN_ON, SCAN_NEXT, SCAN_RETURN };

/* Past the end blocks: zeros and junk skipped until a header comes (more
 * members: a zero block written over members, or tars concatenated). */
static int scan_after_end(rf_tar_scan *s, tar_at *a, rf_tar_member_fn fn, void *user, int *ret)
{
	uint64_t vsize;
	if (is_zero_block(a->h) || !valid_header(a->h, a->left, &vsize)) {
		s->junk |= !is_zero_block(a->h);
		s->pos = a->pos + RF_TAR_BLOCK;
		return SCAN_NEXT;
	}
	/* bytes between that are not zeros were damaged */
	s->after_end = 0;
	if (!s->junk)
		return SCAN_ON;
	s->junk = 0;
	rfi_fmt(a->why, sizeof(a->why), "a zero block (the end of an archive) at offset %" PRIu64
	       " is followed by bytes that are not tar members, then by more members at offset %"
	       PRIu64, s->end_off, a->pos);
	*ret = report_lost(RF_TAR_LOST_DAMAGED, "", s->end_off, a->pos - s->end_off, a->why, fn,
			   user);
	return *ret ? SCAN_RETURN : SCAN_ON; /* at this header: a later feed parses it */
}

/* After damage: blocks skipped until a valid header, then the damaged span
 * reported. */
static int scan_resync(rf_tar_scan *s, tar_at *a, rf_tar_member_fn fn, void *user, int *ret)
{
	uint64_t vsize;
	if (!valid_header(a->h, a->left, &vsize)) {
		s->pos = a->pos + RF_TAR_BLOCK;
		return SCAN_NEXT;
	}
	const uint8_t t = a->h[H_TYPE];
	if (s->skip_member && t != 'x' && t != 'X' && t != 'L' && t != 'K' && t != 'g') {
		/* the member the damaged extended header described */
		s->skip_member = 0;
		s->pos = a->pos + RF_TAR_BLOCK + RF_ALIGN_UP(vsize, RF_TAR_BLOCK);
		return SCAN_NEXT;
	}
	s->resync = s->skip_member = 0;
	*ret = report_lost(RF_TAR_LOST_DAMAGED, "", s->lost_off, a->pos - s->lost_off, s->why, fn,
			   user);
	return *ret ? SCAN_RETURN : SCAN_ON; /* at this header: a later feed parses it */
}

/* A zero block: the end. tar writes two zero blocks; the first is enough,
 * as Python's tarfile reads it. What follows is looked at for more members
 * (after_end) up to the end of the shard. */
static int scan_end_block(rf_tar_scan *s, tar_at *a)
{
	if (s->ext) {
		rfi_fmt(a->why, sizeof(a->why), "extended header at offset %" PRIu64 " is followed "
		       "by the end of the archive, not a member", s->ext_off);
		damage(s, a->pos, 1, a->why);
		return SCAN_NEXT;
	}
	s->after_end = 1;
	s->junk = 0;
	s->end_off = a->pos;
	s->pos = a->pos + RF_TAR_BLOCK;
	return SCAN_NEXT;
}

/* The header's checksum, type, name and size, and where its data and the
 * next header are: damage, or a member truncated by the shard's end (the
 * scan is over). */
static int scan_header(rf_tar_scan *s, tar_at *a, rf_tar_member_fn fn, void *user, int *ret)
{
	uint64_t stored = UINT64_MAX, sum;
	if (!checksum_ok(a->h, &stored, &sum)) {
		char st[24] = "unreadable";
		if (stored != UINT64_MAX)
			rfi_fmt(st, sizeof(st), "%06" PRIo64, stored);
		rfi_fmt(a->why, sizeof(a->why), "header at offset %" PRIu64 ": bad checksum (stored "
		       "%s, computed %06" PRIo64 "): not a tar header, or corrupted", a->pos, st, sum);
		damage(s, a->pos, 0, a->why);
		return SCAN_NEXT;
	}
	a->type = a->h[H_TYPE];
	/* extended headers, read here ('X': Solaris pax), and the other
	 * headers that describe the next member rather than one of their own */
	a->ext = a->type == 'x' || a->type == 'X' || a->type == 'L';
	a->meta = a->ext || a->type == 'K' || a->type == 'g';
	header_name(a->h, a->hname);
	a->name = !a->meta && s->name_from ? s->name : a->hname;
	if (parse_size(a->h + H_SIZE, &a->size)) {
		rfi_fmt(a->why, sizeof(a->why), "member '%s' (header at offset %" PRIu64 "): size "
		       "field unparseable (not octal, or negative or past 64 bits in "
		       "base-256)", a->name, a->pos);
		damage(s, a->pos, a->meta, a->why);
		return SCAN_NEXT;
	}
	if (!a->meta && s->has_size)
		a->size = s->size;
	a->data_off = a->pos + RF_TAR_BLOCK;
	const uint64_t room = s->shard_size - a->data_off;
	if (has_data(a->type) && (a->size > room || RF_ALIGN_UP(a->size, RF_TAR_BLOCK) > room)) {
		rfi_fmt(a->why, sizeof(a->why), "member '%s' (header at offset %" PRIu64 "): its %"
		       PRIu64 " bytes of data run past the end of the shard (%" PRIu64
		       " bytes): truncated", a->name, a->pos, a->size, s->shard_size);
		if (a->meta) {
			damage(s, a->pos, 1, a->why);
			return SCAN_NEXT;
		}
		/* the scan is over: name is free */
		if (a->name != s->name)
			rfi_fmt(s->name, sizeof(s->name), "%s", a->name);
		uint64_t from = s->ext ? s->ext_off : a->pos;
		s->ext = s->name_from = s->has_size = 0;
		s->pos = s->shard_size;
		s->status = 0;
		*ret = report_lost(RF_TAR_LOST_TRUNCATED, s->name, from, s->shard_size - from, a->why,
				   fn, user);
		return SCAN_RETURN;
	}
	a->next = a->data_off + (has_data(a->type) ? RF_ALIGN_UP(a->size, RF_TAR_BLOCK) : 0);
	return SCAN_ON;
}

/* An extended header (pax, GNU long name): read whole, what it says kept
 * for the member it describes. */
static int scan_ext(rf_tar_scan *s, tar_at *a, int *ret)
{
	if (a->size > RF_TAR_EXT_MAX) {
		rfi_fmt(a->why, sizeof(a->why), "%s at offset %" PRIu64 ": %" PRIu64 " bytes (at "
		       "most %d)", a->type == 'L' ? "GNU long name" : "pax header", a->pos,
		       a->size, RF_TAR_EXT_MAX);
		damage(s, a->pos, 1, a->why);
		return SCAN_NEXT;
	}
	if (a->end - a->data_off < a->size) { /* end >= data_off: the header is in */
		s->need = (size_t)(RF_TAR_BLOCK + a->size);
		*ret = 1; /* read it whole next time */
		return SCAN_RETURN;
	}
	const uint8_t *p = a->h + RF_TAR_BLOCK;
	uint64_t ext_off = s->ext ? s->ext_off : a->pos;
	int bad = a->type == 'L' ?
		  parse_long_name(s, p, (size_t)a->size, a->pos, a->why, sizeof(a->why)) :
		  parse_pax(s, p, (size_t)a->size, a->pos, a->why, sizeof(a->why));
	if (bad) {
		damage(s, a->pos, 1, a->why);
		return SCAN_NEXT;
	}
	s->ext_off = ext_off;
	s->ext = 1;
	s->pos = a->next;
	return SCAN_NEXT;
}

/* A GNU sparse file: not read (its bytes are not one extent); lost with
 * its data. */
static int scan_sparse(rf_tar_scan *s, tar_at *a, rf_tar_member_fn fn, void *user, int *ret)
{
	rfi_fmt(a->why, sizeof(a->why), "member '%s' (header at offset %" PRIu64 "): GNU "
	       "sparse file: not supported", a->name, a->pos);
	uint64_t from = s->ext ? s->ext_off : a->pos;
	s->ext = s->name_from = s->has_size = 0;
	s->pos = a->next;
	*ret = report_lost(RF_TAR_LOST_DAMAGED, "", from, a->next - from, a->why, fn, user);
	return *ret ? SCAN_RETURN : SCAN_NEXT;
}

/* A member: a regular file is handed to fn (with its data when the window
 * holds it, or when fn asks for it: then the next feed comes back here). */
static int scan_member(rf_tar_scan *s, tar_at *a, rf_tar_member_fn fn, void *user, char *err,
		       size_t errlen, int *ret)
{
	size_t len = strlen(a->name);
	int regular = a->type == '0' || a->type == '7' ||
		      (a->type == '\0' && !(len && a->name[len - 1] == '/')); /* v7 directory */
	if (regular && fn) {
		rf_tar_member m = { .name = a->name, .data_off = a->data_off, .size = a->size };
		if (a->end >= a->data_off && a->end - a->data_off >= a->size)
			m.data = a->h + RF_TAR_BLOCK;
		int r = fn(user, &m);
		if (r == RF_TAR_WANT_DATA && !m.data) {
			if (a->size > RF_TAR_EXT_MAX) {
				rfi_fmt(err, errlen, "member '%s': its data was asked for, but it "
				       "has %" PRIu64 " bytes (at most %d)", a->name, a->size,
				       RF_TAR_EXT_MAX);
				*ret = stop(s, -EINVAL);
				return SCAN_RETURN;
			}
			/* stay at this header, with its pending name and size */
			s->need = (size_t)(RF_TAR_BLOCK + a->size);
			assert(s->need <= RF_TAR_NEED_MAX);
			*ret = 1;
			return SCAN_RETURN;
		}
		if (r != 0 && r != RF_TAR_WANT_DATA) {
			s->ext = s->name_from = s->has_size = 0;
			s->pos = a->next;
			*ret = r;
			return SCAN_RETURN;
		}
	}
	s->ext = s->name_from = s->has_size = 0;
	s->pos = a->next;
	return SCAN_NEXT;
}

/* The header at a->pos, whole in the window, step by step. */
static int scan_block(rf_tar_scan *s, tar_at *a, rf_tar_member_fn fn, void *user, char *err,
		      size_t errlen, int *ret)
{
	int step;
	if (s->after_end && (step = scan_after_end(s, a, fn, user, ret)) != SCAN_ON)
		return step;
	if (s->resync && (step = scan_resync(s, a, fn, user, ret)) != SCAN_ON)
		return step;
	if (is_zero_block(a->h))
		return scan_end_block(s, a);
	if ((step = scan_header(s, a, fn, user, ret)) != SCAN_ON)
		return step;
	if (a->ext)
		return scan_ext(s, a, ret);
	if (a->type == 'S')
		return scan_sparse(s, a, fn, user, ret);
	if (a->type == 'K' || a->type == 'g') {
		/* a long link name, or pax globals: skipped; what is pending still
		 * belongs to the next member */
		s->pos = a->next;
		return SCAN_NEXT;
	}
	return scan_member(s, a, fn, user, err, errlen, ret);
}

int rfi_tar_scan_feed(rf_tar_scan *s, const uint8_t *buf, size_t n, uint64_t off,
		     rf_tar_member_fn fn, void *user, char *err, size_t errlen)
{
	if (s->status < 0) {
		rfi_fmt(err, errlen, "the scan stopped earlier, at offset %" PRIu64, s->pos);
		return s->status;
	}
	if (s->status == 0)
		return 0;
	if (off != s->pos) {
		rfi_fmt(err, errlen, "window at offset %" PRIu64 ", but the scan is at %" PRIu64,
		       off, s->pos);
		return -EINVAL;
	}
	/* pos <= shard_size always: every hop was checked against it */
	if (n > s->shard_size - off)
		n = (size_t)(s->shard_size - off);
	const uint64_t end = off + n;
	for (;;) {
		tar_at a;
		a.pos = s->pos;
		a.left = s->shard_size - a.pos;
		a.end = end;
		s->need = RF_TAR_BLOCK;
		if (a.left < RF_TAR_BLOCK) {
			if (!a.left) /* no bytes needed (a hop may have landed past the window) */
				return at_end(s, NULL, 0, fn, user);
			if (a.pos > end || end - a.pos < a.left)
				return 1; /* the last bytes are not in */
			return at_end(s, buf + (a.pos - off), a.left, fn, user);
		}
		if (a.pos > end || end - a.pos < RF_TAR_BLOCK)
			return 1; /* hopped past the window, or the header is not all in */
		a.h = buf + (a.pos - off);
		int ret = 0;
		if (scan_block(s, &a, fn, user, err, errlen, &ret) == SCAN_RETURN)
			return ret;
	}
}
