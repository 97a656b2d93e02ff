/* tar.c - rf_tar_scan_feed(): the headers of a tar shard, window by window
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
				rf_fmt(err, errlen, "pax header at offset %" PRIu64 ": path of %zu "
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
				rf_fmt(err, errlen, "pax header at offset %" PRIu64 ": size '%.*s' is "
				       "not a number", at, (int)RF_MIN(vlen, (size_t)40), val);
				return -1;
			}
			s->has_size = vlen > 0;
		} else if (klen > 11 && !memcmp(key, "GNU.sparse.", 11)) {
			rf_fmt(err, errlen, "pax header at offset %" PRIu64 ": sparse member "
			       "(%.*s): not supported", at, (int)klen, key);
			return -1;
		}
		i += len;
	}
	return 0;
bad:
	rf_fmt(err, errlen, "pax header at offset %" PRIu64 ": bad record at byte %zu (expected "
	       "'LENGTH KEYWORD=VALUE\\n')", at, i);
	return -1;
}

/* A GNU long name ('L'): the data up to its NUL. */
static int parse_long_name(rf_tar_scan *s, const uint8_t *p, size_t n, uint64_t at, char *err,
			   size_t errlen)
{
	size_t len = strnlen((const char *)p, n);
	if (len > RF_TAR_NAME_MAX) {
		rf_fmt(err, errlen, "GNU long name at offset %" PRIu64 ": %zu bytes: name too long "
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

void rf_tar_scan_init(rf_tar_scan *s, uint64_t shard_size)
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
		rf_fmt(s->why, sizeof(s->why), "%s", why);
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
			rf_fmt(s->why, sizeof(s->why), "a zero block (the end of an archive) at offset "
			       "%" PRIu64 " is followed by bytes that are not zeros nor tar members, up "
			       "to the end of the shard at %" PRIu64, s->end_off, size);
			r = report_lost(RF_TAR_LOST_DAMAGED, "", s->end_off, size - s->end_off, s->why,
					fn, user);
		} else if (size - s->end_off < 2 * RF_TAR_BLOCK) {
			/* tar writes two zero blocks; one, or part of the second, is
			 * what a cut inside them (or right after a zero block) leaves */
			rf_fmt(why, sizeof(why), "the shard ends %" PRIu64 " bytes into its end-of-archive "
			       "blocks (two blocks of zeros) at offset %" PRIu64 " (cut there?)",
			       size - s->end_off, s->end_off);
			r = report_lost(RF_TAR_LOST_UNENDED, "", s->end_off, size - s->end_off, why, fn,
					user);
		}
	} else if (s->resync || s->ext) {
		if (!s->resync)
			rf_fmt(s->why, sizeof(s->why), "extended header at offset %" PRIu64 " is "
			       "followed by no member: the shard ends at %" PRIu64, s->ext_off, size);
		uint64_t from = s->resync ? s->lost_off : s->ext_off;
		s->resync = s->ext = 0;
		r = report_lost(RF_TAR_LOST_DAMAGED, "", from, size - from, s->why, fn, user);
	} else if (!zeros) {
		rf_fmt(why, sizeof(why), "a partial header block at offset %" PRIu64 ": the shard "
		       "ends at %" PRIu64 " (cut)", pos, size);
		r = report_lost(RF_TAR_LOST_DAMAGED, "", pos, left, why, fn, user);
	} else {
		/* nothing, or less than a block of zeros, where a header or the
		 * end blocks belong */
		rf_fmt(why, sizeof(why), "the shard ends at offset %" PRIu64 " without its "
		       "end-of-archive blocks (cut there?)", size);
		r = report_lost(RF_TAR_LOST_UNENDED, "", pos, left, why, fn, user);
	}
	return r;
}

int rf_tar_scan_feed(rf_tar_scan *s, const uint8_t *buf, size_t n, uint64_t off,
		     rf_tar_member_fn fn, void *user, char *err, size_t errlen)
{
	if (s->status < 0) {
		rf_fmt(err, errlen, "the scan stopped earlier, at offset %" PRIu64, s->pos);
		return s->status;
	}
	if (s->status == 0)
		return 0;
	if (off != s->pos) {
		rf_fmt(err, errlen, "window at offset %" PRIu64 ", but the scan is at %" PRIu64,
		       off, s->pos);
		return -EINVAL;
	}
	/* pos <= shard_size always: every hop was checked against it */
	if (n > s->shard_size - off)
		n = (size_t)(s->shard_size - off);
	const uint64_t end = off + n;
	char hname[H_PREFIX_LEN + 1 + H_NAME_LEN + 1];
	char why[192 + RF_TAR_NAME_MAX];

	for (;;) {
		const uint64_t pos = s->pos, left = s->shard_size - pos;
		s->need = RF_TAR_BLOCK;
		if (left < RF_TAR_BLOCK) {
			if (!left) /* no bytes needed (a hop may have landed past the window) */
				return at_end(s, NULL, 0, fn, user);
			if (pos > end || end - pos < left)
				return 1; /* the last bytes are not in */
			return at_end(s, buf + (pos - off), left, fn, user);
		}
		if (pos > end || end - pos < RF_TAR_BLOCK)
			return 1; /* hopped past the window, or the header is not all in */
		const uint8_t *h = buf + (pos - off);
		if (s->after_end) {
			uint64_t vsize;
			if (is_zero_block(h) || !valid_header(h, left, &vsize)) {
				s->junk |= !is_zero_block(h);
				s->pos = pos + RF_TAR_BLOCK;
				continue;
			}
			/* more members after the end blocks: a zero block written over
			 * members, or tars concatenated; bytes between that are not
			 * zeros were damaged */
			s->after_end = 0;
			if (s->junk) {
				s->junk = 0;
				rf_fmt(why, sizeof(why), "a zero block (the end of an archive) at offset %"
				       PRIu64 " is followed by bytes that are not tar members, then by "
				       "more members at offset %" PRIu64, s->end_off, pos);
				int r = report_lost(RF_TAR_LOST_DAMAGED, "", s->end_off, pos - s->end_off,
						    why, fn, user);
				if (r)
					return r; /* at this header: a later feed parses it */
			}
		}
		if (s->resync) {
			uint64_t vsize;
			if (!valid_header(h, left, &vsize)) {
				s->pos = pos + RF_TAR_BLOCK;
				continue;
			}
			const uint8_t t = h[H_TYPE];
			if (s->skip_member && t != 'x' && t != 'X' && t != 'L' && t != 'K' &&
			    t != 'g') {
				/* the member the damaged extended header described */
				s->skip_member = 0;
				s->pos = pos + RF_TAR_BLOCK + RF_ALIGN_UP(vsize, RF_TAR_BLOCK);
				continue;
			}
			s->resync = s->skip_member = 0;
			int r = report_lost(RF_TAR_LOST_DAMAGED, "", s->lost_off, pos - s->lost_off,
					    s->why, fn, user);
			if (r)
				return r; /* at this header: a later feed parses it */
		}
		if (is_zero_block(h)) {
			/* the end: tar writes two zero blocks; the first is enough, as
			 * Python's tarfile reads it. What follows is looked at for more
			 * members (after_end) up to the end of the shard. */
			if (s->ext) {
				rf_fmt(why, sizeof(why), "extended header at offset %" PRIu64 " is "
				       "followed by the end of the archive, not a member", s->ext_off);
				damage(s, pos, 1, why);
				continue;
			}
			s->after_end = 1;
			s->junk = 0;
			s->end_off = pos;
			s->pos = pos + RF_TAR_BLOCK;
			continue;
		}
		uint64_t stored = UINT64_MAX, sum;
		if (!checksum_ok(h, &stored, &sum)) {
			char st[24] = "unreadable";
			if (stored != UINT64_MAX)
				rf_fmt(st, sizeof(st), "%06" PRIo64, stored);
			rf_fmt(why, sizeof(why), "header at offset %" PRIu64 ": bad checksum (stored "
			       "%s, computed %06" PRIo64 "): not a tar header, or corrupted", pos, st,
			       sum);
			damage(s, pos, 0, why);
			continue;
		}
		const uint8_t type = h[H_TYPE];
		/* extended headers, read here ('X': Solaris pax), and the other
		 * headers that describe the next member rather than one of their own */
		const int ext = type == 'x' || type == 'X' || type == 'L';
		const int meta = ext || type == 'K' || type == 'g';
		header_name(h, hname);
		const char *name = !meta && s->name_from ? s->name : hname;
		uint64_t size;
		if (parse_size(h + H_SIZE, &size)) {
			rf_fmt(why, sizeof(why), "member '%s' (header at offset %" PRIu64 "): size "
			       "field unparseable (not octal, or negative or past 64 bits in "
			       "base-256)", name, pos);
			damage(s, pos, meta, why);
			continue;
		}
		if (!meta && s->has_size)
			size = s->size;
		const uint64_t data_off = pos + RF_TAR_BLOCK;
		const uint64_t room = s->shard_size - data_off;
		if (has_data(type) && (size > room || RF_ALIGN_UP(size, RF_TAR_BLOCK) > room)) {
			rf_fmt(why, sizeof(why), "member '%s' (header at offset %" PRIu64 "): its %"
			       PRIu64 " bytes of data run past the end of the shard (%" PRIu64
			       " bytes): truncated", name, pos, size, s->shard_size);
			if (meta) {
				damage(s, pos, 1, why);
				continue;
			}
			/* the scan is over: name is free */
			if (name != s->name)
				rf_fmt(s->name, sizeof(s->name), "%s", name);
			uint64_t from = s->ext ? s->ext_off : pos;
			s->ext = s->name_from = s->has_size = 0;
			s->pos = s->shard_size;
			s->status = 0;
			return report_lost(RF_TAR_LOST_TRUNCATED, s->name, from, s->shard_size - from,
					   why, fn, user);
		}
		const uint64_t next = data_off + (has_data(type) ? RF_ALIGN_UP(size, RF_TAR_BLOCK) : 0);

		if (ext) {
			if (size > RF_TAR_EXT_MAX) {
				rf_fmt(why, sizeof(why), "%s at offset %" PRIu64 ": %" PRIu64 " bytes (at "
				       "most %d)", type == 'L' ? "GNU long name" : "pax header", pos,
				       size, RF_TAR_EXT_MAX);
				damage(s, pos, 1, why);
				continue;
			}
			if (end - data_off < size) { /* end >= data_off: the header is in */
				s->need = (size_t)(RF_TAR_BLOCK + size);
				return 1; /* read it whole next time */
			}
			const uint8_t *p = h + RF_TAR_BLOCK;
			uint64_t ext_off = s->ext ? s->ext_off : pos;
			int bad = type == 'L' ? parse_long_name(s, p, (size_t)size, pos, why, sizeof(why)) :
				  parse_pax(s, p, (size_t)size, pos, why, sizeof(why));
			if (bad) {
				damage(s, pos, 1, why);
				continue;
			}
			s->ext_off = ext_off;
			s->ext = 1;
			s->pos = next;
			continue;
		}
		if (type == 'S') {
			/* not read: its bytes are not one extent; lost with its data */
			rf_fmt(why, sizeof(why), "member '%s' (header at offset %" PRIu64 "): GNU "
			       "sparse file: not supported", name, pos);
			uint64_t from = s->ext ? s->ext_off : pos;
			s->ext = s->name_from = s->has_size = 0;
			s->pos = next;
			int r = report_lost(RF_TAR_LOST_DAMAGED, "", from, next - from, why, fn, user);
			if (r)
				return r;
			continue;
		}
		if (type == 'K' || type == 'g') {
			/* a long link name, or pax globals: skipped; what is pending still
			 * belongs to the next member */
			s->pos = next;
			continue;
		}
		size_t len = strlen(name);
		int regular = type == '0' || type == '7' ||
			      (type == '\0' && !(len && name[len - 1] == '/')); /* v7 directory */
		if (regular && fn) {
			rf_tar_member m = { .name = name, .data_off = data_off, .size = size };
			if (end >= data_off && end - data_off >= size)
				m.data = h + RF_TAR_BLOCK;
			int r = fn(user, &m);
			if (r == RF_TAR_WANT_DATA && !m.data) {
				if (size > RF_TAR_EXT_MAX) {
					rf_fmt(err, errlen, "member '%s': its data was asked for, but it "
					       "has %" PRIu64 " bytes (at most %d)", name, size,
					       RF_TAR_EXT_MAX);
					return stop(s, -EINVAL);
				}
				/* stay at this header, with its pending name and size */
				s->need = (size_t)(RF_TAR_BLOCK + size);
				assert(s->need <= RF_TAR_NEED_MAX);
				return 1;
			}
			if (r != 0 && r != RF_TAR_WANT_DATA) {
				s->ext = s->name_from = s->has_size = 0;
				s->pos = next;
				return r;
			}
		}
		s->ext = s->name_from = s->has_size = 0;
		s->pos = next;
	}
}
