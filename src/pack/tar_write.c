/* tar_write.c - ustar headers and pax padding members for `ringfeed pack`
 * (see tar_write.h). */
#include "pack/tar_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* v as len - 1 octal digits and a NUL (ustar's numeric fields).
 * @return : 1, or 0 when v needs more digits (the field is then garbage). */
static int octal(char *f, size_t len, uint64_t v)
{
	for (size_t i = len - 1; i-- > 0; v >>= 3)
		f[i] = (char)('0' + (v & 7));
	f[len - 1] = '\0';
	return v == 0;
}

int rfi_tar_header(uint8_t h[RF_TAR_BLOCK], const char *name, uint64_t size, char type)
{
	size_t n = strlen(name);
	if (n == 0 || n > RF_TAR_NAME_MAX)
		return -ENAMETOOLONG;
	char *c = (char *)h;
	memset(h, 0, RF_TAR_BLOCK);
	memcpy(c, name, n); /* a name of exactly 100 bytes has no NUL: ustar allows it */
	octal(c + 100, 8, 0644);
	octal(c + 108, 8, 0); /* uid */
	octal(c + 116, 8, 0); /* gid */
	if (!octal(c + 124, 12, size)) {
		/* GNU base-256: 0x80, then the size big-endian in the field's last 8 bytes */
		memset(c + 124, 0, 12);
		h[124] = 0x80;
		for (int i = 11; i >= 4; i--, size >>= 8)
			h[124 + i] = (uint8_t)size;
	}
	octal(c + 136, 12, 0); /* mtime 0: the same files give the same shard bytes */
	c[156] = type;
	memcpy(c + 257, "ustar", 6); /* magic "ustar\0", version "00" */
	memcpy(c + 263, "00", 2);
	octal(c + 329, 8, 0); /* devmajor, devminor */
	octal(c + 337, 8, 0);
	/* the checksum is the sum of the header's bytes with its own field as
	 * spaces; written as 6 digits, NUL, space (as GNU tar does) */
	memset(c + 148, ' ', 8);
	unsigned sum = 0;
	for (unsigned i = 0; i < RF_TAR_BLOCK; i++)
		sum += h[i];
	snprintf(c + 148, 7, "%06o", sum); /* at most 512 * 255 = 0376400: 6 digits */
	return 0;
}

uint64_t rfi_tar_pad_bytes(uint64_t off, uint64_t align)
{
	if (align <= RF_TAR_BLOCK)
		return 0; /* data always starts on a block */
	uint64_t miss = (align - (off + RF_TAR_BLOCK) % align) % align;
	/* miss is a multiple of 512; a pax member is at least a header and one
	 * block of data, so a gap of one block is widened by a whole align */
	if (miss != 0 && miss < 2 * RF_TAR_BLOCK)
		miss += align;
	return miss;
}

int rfi_tar_pad_member(uint8_t *buf, uint64_t len, const char *name)
{
	if (len < 2 * RF_TAR_BLOCK || len % RF_TAR_BLOCK)
		return -EINVAL;
	char xname[RF_TAR_NAME_MAX + 1];
	if (snprintf(xname, sizeof(xname), "PaxHeaders/%s", name) > (int)RF_TAR_NAME_MAX)
		return -ENAMETOOLONG;
	/* The record fills the data blocks exactly, so there is no padding to
	 * explain. Its length is chosen first and the comment fills the rest,
	 * so the digit count of the length prefix (which counts itself) never
	 * has to be solved for. */
	uint64_t rec = len - RF_TAR_BLOCK;
	int ret = rfi_tar_header(buf, xname, rec, 'x');
	if (ret)
		return ret;
	char *r = (char *)buf + RF_TAR_BLOCK;
	int n = snprintf(r, (size_t)rec, "%llu comment=ringfeed pack: alignment padding",
			 (unsigned long long)rec);
	memset(r + n, ' ', (size_t)rec - (size_t)n - 1);
	r[rec - 1] = '\n';
	return 0;
}
