/* dio_align.c - O_DIRECT alignment from statx (see dio_align.h). Uses the
 * kernel's struct statx directly: glibc 2.36's copy lacks the stx_dio_*
 * fields. */
#define _GNU_SOURCE
#include "io/dio_align.h"

#include <fcntl.h>
#include <linux/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

size_t rfi_dio_alignment(int dirfd, const char *path)
{
	struct statx stx = { 0 };
	if (syscall(SYS_statx, dirfd, path, 0, STATX_DIOALIGN, &stx) != 0)
		return 0;
	if (!(stx.stx_mask & STATX_DIOALIGN))
		return 0;
	if (stx.stx_dio_mem_align == 0 || stx.stx_dio_offset_align == 0)
		return 1; /* the file system says: no O_DIRECT here */
	size_t a = stx.stx_dio_mem_align > stx.stx_dio_offset_align ? stx.stx_dio_mem_align
								      : stx.stx_dio_offset_align;
	return a;
}
