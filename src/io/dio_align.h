/* dio_align.h - the alignment O_DIRECT needs for one file, asked of the file
 * system (statx STATX_DIOALIGN, Linux 6.1+) rather than assumed. Private. */
#ifndef RF_DIO_ALIGN_H
#define RF_DIO_ALIGN_H

#include <stddef.h>

/* The larger of the memory and the offset/length alignment O_DIRECT needs
 * for path (relative to dirfd), or 0 when the kernel or the file system does
 * not say (the caller then assumes 4096, which every Linux block size
 * divides), or 1 when the file system does not support O_DIRECT at all. */
size_t rfi_dio_alignment(int dirfd, const char *path);

#endif
