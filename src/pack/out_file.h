/* out_file.h - output files that appear whole or not at all: written under
 * a hidden temporary name in the output folder, flushed to disk, then
 * renamed to their name. A crash or a kill never leaves a cut-short file
 * under a final name (at worst a ".NAME.tmp"). Private to src/pack/. */
#ifndef RF_PACK_OUT_FILE_H
#define RF_PACK_OUT_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct rf_out_file {
	int dirfd;       /* the output folder (not owned) */
	const char *dir; /* its path, for messages (not owned) */
	int fd;          /* the temporary file; -1 when none is open */
	uint64_t bytes;  /* written so far */
	char name[NAME_MAX + 1]; /* the final name in dir */
	char tmp[NAME_MAX + 1];  /* ".<name>.tmp" in dir */
} rf_out_file;

/* A file not opened yet (rfi_out_abort() on it does nothing). */
#define RF_OUT_FILE_NONE { .fd = -1 }

/* Creates dir/.<name>.tmp (exclusively: a leftover or a concurrent writer
 * is an error, never overwritten).
 * @return : 0, or a negative errno with err naming the file
 *           (-ENAMETOOLONG: name + 5 is longer than a file name may be). */
int rfi_out_open(rf_out_file *f, int dirfd, const char *dir, const char *name, char *err,
		size_t errlen);

/* Writes the n buffers of iov in order, all of them (iov is consumed: its
 * entries are advanced past what was written).
 * @return : 0, or a negative errno (-ENOSPC: disk full) with err naming the
 *           file; the caller then calls rfi_out_abort(). */
int rfi_out_writev(rf_out_file *f, struct iovec *iov, int n, char *err, size_t errlen);

/* Writes len bytes at offset off (a part reserved earlier, such as a table
 * that comes before what it describes); the file's end does not move.
 * @return : 0, or a negative errno with err naming the file. */
int rfi_out_pwrite(rf_out_file *f, const void *buf, size_t len, uint64_t off, char *err,
		  size_t errlen);

/* Flushes the file to disk, renames it to its name (replacing nothing: the
 * caller made sure dir holds no such file) and flushes the folder.
 * @return : 0, or a negative errno with err set; the temporary file is
 *           removed either way. */
int rfi_out_commit(rf_out_file *f, char *err, size_t errlen);

/* Closes and removes the temporary file; nothing when none is open. */
void rfi_out_abort(rf_out_file *f);

/* Opens the output folder dir into *dirfd, creating it (*made = 1) if
 * absent, and checks that it takes files, holds no file whose name
 * matches one of names (shell patterns, NULL-terminated: what this writer
 * writes, and their temporary forms; what names it in the message) and no
 * RF_PACK_MARKER (an interrupted pack, named so in the message).
 * @return : 0, or a negative errno (-EEXIST: such a file is there) with err
 *           set. */
int rfi_out_dir_open(const char *dir, const char *const *names, const char *what, int *dirfd,
		    int *made, char *err, size_t errlen);

/* A pack's first and last steps (index/pack_marker.h): rfi_out_mark_begin()
 * creates RF_PACK_MARKER in the output folder (exclusively) and flushes it
 * and the folder, before the first output file; rfi_out_mark_end() removes
 * it and flushes the folder, after the last one is committed. A pack that
 * fails or is stopped removes its files, then the marker (unlinkat): a kill
 * during that clean-up still leaves the marker.
 * @return : 0, or a negative errno with err naming the folder. */
int rfi_out_mark_begin(int dirfd, const char *dir, char *err, size_t errlen);
int rfi_out_mark_end(int dirfd, const char *dir, char *err, size_t errlen);

typedef enum rf_out_place {
	RF_OUT_APART = 0,  /* neither is the other nor below it, or out is above in */
	RF_OUT_SAME = 1,   /* one folder */
	RF_OUT_INSIDE = 2, /* out is below in */
} rf_out_place;

/* Where the output folder out lies against the folder in, both resolved
 * with realpath (symbolic links, "..", relative paths): out, which may not
 * exist yet, through its nearest existing parent, the rest of its path
 * appended as written. Reads nothing but the paths; creates nothing.
 * @return : RF_OUT_SAME, RF_OUT_INSIDE or RF_OUT_APART (also when in or out's
 *           parents cannot be resolved: the caller's own opening of them
 *           says why). */
rf_out_place rfi_out_dir_place(const char *out, const char *in);

#endif
