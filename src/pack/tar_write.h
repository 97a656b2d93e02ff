/* tar_write.h - the tar format as `ringfeed pack` writes it: ustar headers,
 * and pax members that pad the next member's data onto an alignment
 * boundary. Pure functions (no I/O, no clock, no user names), so that the
 * same input gives the same bytes. Private to src/pack/. */
#ifndef RF_PACK_TAR_WRITE_H
#define RF_PACK_TAR_WRITE_H

#include <stdint.h>

#define RF_TAR_BLOCK 512u
#define RF_TAR_NAME_MAX 100u /* ustar's name field; we never use its prefix field */

/* Bytes that n bytes of member data take in the archive (whole blocks). */
static inline uint64_t rfi_tar_blocks(uint64_t n)
{
	return (n + RF_TAR_BLOCK - 1) / RF_TAR_BLOCK * RF_TAR_BLOCK;
}

/* Fills h with the ustar header of a member named name holding size bytes,
 * of type type ('0' a regular file, 'x' a pax extended header): mode 0644,
 * uid and gid 0, user and group names empty, mtime 0 (reproducible).
 * A size of 8 GiB or more (past the 11 octal digits) is written in GNU's
 * base-256 form, which GNU tar and Python's tarfile read.
 * @return : 0, or -ENAMETOOLONG when name is empty or longer than 100 bytes. */
int rfi_tar_header(uint8_t h[RF_TAR_BLOCK], const char *name, uint64_t size, char type);

/* Bytes of the padding member to write at archive offset off (a multiple of
 * 512) so that the data of the member written after it, which follows its
 * own 512-byte header, starts at a multiple of align (a power of two).
 * @return : 0 when it already does (always when align <= 512); otherwise a
 *           multiple of 512, at least 1024 (a header and one data block)
 *           and less than align + 1024. */
uint64_t rfi_tar_pad_bytes(uint64_t off, uint64_t align);

/* Fills buf[len] (len a result of rfi_tar_pad_bytes(), > 0) with the padding
 * member for the member named name: a pax extended header ('x', named
 * "PaxHeaders/<name>") whose data is one "comment" record that fills its
 * blocks exactly. Readers ignore comments, so the archive lists and
 * extracts the same files with or without it.
 * @return : 0, or -ENAMETOOLONG (name longer than 89 bytes), -EINVAL (len). */
int rfi_tar_pad_member(uint8_t *buf, uint64_t len, const char *name);

#endif
