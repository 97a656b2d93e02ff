/* files_walk.c - the files kind's walk (files.h): builds the index of an
 * ImageFolder tree: class = first-level subfolder (labels in sorted
 * class-name order), samples = *.jpg / *.jpeg in any case anywhere below a
 * class folder, in sorted path order (as torchvision's ImageFolder orders
 * them). Sizes come from fstatat() here so that the read path never stats
 * a file. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "source/files.h"
#include "source/source.h"
#include "ringfeed.h"
#include "util/util.h"

/* "." and "..", and hidden names unless asked for: .DS_Store, AppleDouble
 * ._x.jpg files (a JPEG name, not a JPEG), .nfs* files, .git folders. */
static int skipped(const char *name, int mode)
{
	if (name[0] != '.')
		return 0;
	if (!name[1] || (name[1] == '.' && !name[2]))
		return 1;
	return !(mode & RF_INDEX_HIDDEN);
}

static int is_image_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	return dot && rfi_index_image_ext(dot + 1);
}

/* Notes what the walk saw that is not a loose sample of its own: the
 * shards of a kind it watches for (a shard source's, or a stray one) and
 * what a pack writes beside its shards (its zstd dictionary, its index
 * object). */
static void saw(rf_files_seen *seen, const char *rel, const char *name)
{
	size_t n = strlen(name);
	for (size_t k = 0; k < seen->nkinds; k++) {
		rf_source_seen *w = &seen->kinds[k];
		if (rfi_shard_named(w->ops->shard_names, name, n)) {
			if (!w->n++)
				rfi_fmt(w->first, sizeof(w->first), "%s", rel);
			return;
		}
	}
	if (!strcmp(name, "zstd.dict") || !strcmp(name, RF_INDEX_OBJECT_NAME))
		seen->pack_files++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_entry_path(const void *a, const void *b, void *arena)
{
	const rf_index_entry *x = a, *y = b;
	return strcmp((const char *)arena + x->path_off, (const char *)arena + y->path_off);
}

/* Is the entry a directory (following symlinks, as ImageFolder does)? */
static int entry_is_dir(int dfd, const struct dirent *de)
{
	if (de->d_type == DT_DIR)
		return 1;
	if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
		return 0;
	struct stat st;
	return fstatat(dfd, de->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

/* The folders from the root down to the one being walked, on the walkers'
 * stacks: a folder reached again through a symlink is a loop, reported as one
 * (following it would recurse until the path is too long). Its path is the
 * first rel_len bytes of the walk's rel buffer (0: the root). */
struct dir_chain {
	dev_t dev;
	ino_t ino;
	size_t rel_len;
	const struct dir_chain *up;
};

/* 0, or -ELOOP with the message when the folder open as dfd is one of its
 * own ancestors. Fills *self for the walk below it. */
static int check_loop(int dfd, const char *rel, size_t rel_len, const struct dir_chain *up,
		      struct dir_chain *self, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(dfd, &st) != 0) {
		int e = errno;
		rfi_fmt(err, errlen, "'%s': %s", rel, strerror(e));
		return -e;
	}
	*self = (struct dir_chain){ st.st_dev, st.st_ino, rel_len, up };
	for (const struct dir_chain *a = up; a; a = a->up) {
		if (a->dev == st.st_dev && a->ino == st.st_ino) {
			if (a->rel_len == 0)
				rfi_fmt(err, errlen, "'%s': symlink loop (it leads back to the root)",
				       rel);
			else
				rfi_fmt(err, errlen, "'%s': symlink loop (it leads back to '%.*s')",
				       rel, (int)a->rel_len, rel);
			return -ELOOP;
		}
	}
	return 0;
}

/* A folder's files that are not images, kept while it is walked so that
 * each image gets the files beside it with its key (img2dataset's "files"
 * layout: 000000123.jpg, 000000123.txt, 000000123.json) as its extras. */
typedef struct dir_others {
	char *names;            /* NUL-terminated base names, one after another */
	size_t len, cap;
	size_t *offs;           /* each name's offset in names */
	size_t n, ncap;
	size_t *images;         /* the records of the folder's images */
	size_t nimages, icap;
} dir_others;

static int push_size(size_t **v, size_t *n, size_t *cap, size_t x)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		size_t *p = realloc(*v, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static int others_add(dir_others *o, const char *name, size_t nlen)
{
	if (o->len + nlen + 1 > o->cap) {
		size_t c = o->cap ? o->cap * 2 : 4096;
		while (c < o->len + nlen + 1)
			c *= 2;
		char *p = realloc(o->names, c);
		if (!p)
			return -ENOMEM;
		o->names = p;
		o->cap = c;
	}
	memcpy(o->names + o->len, name, nlen + 1);
	int ret = push_size(&o->offs, &o->n, &o->ncap, o->len);
	o->len += nlen + 1;
	return ret;
}

static int cmp_name_off(const void *a, const void *b, void *names)
{
	return strcmp((const char *)names + *(const size_t *)a, (const char *)names + *(const size_t *)b);
}

/* The key of a base name: up to its first dot (webdataset's keysplit). */
static size_t key_len(const char *name)
{
	return strcspn(name, ".");
}

/* Gives each image of the folder (open as dfd, path rel[rel_len]) the
 * folder's other files that share its key. */
static int attach_others(rf_index *idx, dir_others *o, int dfd, char *rel, size_t rel_len)
{
	if (!o->n || !o->nimages)
		return 0;
	qsort_r(o->offs, o->n, sizeof(size_t), cmp_name_off, o->names);
	for (size_t i = 0; i < o->nimages; i++) {
		size_t e = o->images[i];
		const char *path = rfi_index_path(idx, e);
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		size_t k = key_len(base);
		/* the first name >= "KEY." */
		size_t lo = 0, hi = o->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			const char *x = o->names + o->offs[mid];
			int c = strncmp(x, base, k);
			if (c == 0)
				c = x[k] < '.' ? -1 : x[k] > '.';
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < o->n; lo++) {
			const char *x = o->names + o->offs[lo];
			if (strncmp(x, base, k) || x[k] != '.')
				break;
			struct stat st;
			if (fstatat(dfd, x, &st, 0) != 0 || !S_ISREG(st.st_mode))
				continue;
			size_t xlen = strlen(x);
			if (rel_len + 1 + xlen + 1 > PATH_MAX)
				continue;
			rel[rel_len] = '/';
			memcpy(rel + rel_len + 1, x, xlen + 1);
			int ret = rfi_index_add_extra_file(idx, e, rel, rel_len + 1 + xlen,
							  (int64_t)st.st_size);
			rel[rel_len] = '\0';
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void others_free(dir_others *o)
{
	free(o->names);
	free(o->offs);
	free(o->images);
}

/* Adds every JPEG below the folder open as dfd, whose path relative to the
 * root is rel[rel_len] (without trailing '/'), below the folders in up.
 * Takes ownership of dfd. */
static int walk_dir(rf_index *idx, rf_files_seen *seen, int dfd, char *rel, size_t rel_len,
		    int32_t label, int any_name, const struct dir_chain *up, char *err,
		    size_t errlen)
{
	struct dir_chain self;
	int ret = check_loop(dfd, rel, rel_len, up, &self, err, errlen);
	if (ret) {
		close(dfd);
		return ret;
	}
	ret = rfi_index_stamp_add(idx, dfd, rel, "");
	if (ret) {
		close(dfd);
		return ret;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		int e = errno;
		close(dfd);
		rfi_fmt(err, errlen, "'%s': %s", rel, strerror(e));
		return -e;
	}
	struct dirent *de;
	dir_others others = { 0 };
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		if (skipped(name, any_name))
			continue;
		size_t nlen = strlen(name);
		if (rel_len + 1 + nlen + 1 > PATH_MAX) {
			rfi_fmt(err, errlen, "'%s/%s': path too long", rel, name);
			ret = -ENAMETOOLONG;
			break;
		}
		rel[rel_len] = '/';
		memcpy(rel + rel_len + 1, name, nlen + 1);
		size_t len = rel_len + 1 + nlen;

		if (entry_is_dir(dirfd(d), de)) {
			int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sub < 0) {
				int e = errno;
				rfi_fmt(err, errlen, "'%s': %s", rel, strerror(e));
				ret = -e;
				break;
			}
			ret = walk_dir(idx, seen, sub, rel, len, label, any_name, &self, err, errlen);
			if (ret)
				break;
		} else if (!(any_name & RF_INDEX_RAW) && !is_image_name(name)) {
			saw(seen, rel, name);
			ret = others_add(&others, name, nlen);
			if (ret)
				break;
		} else {
			struct stat st;
			int64_t size = fstatat(dirfd(d), name, &st, 0) == 0 ? (int64_t)st.st_size
									   : -(int64_t)errno;
			if (size >= 0 && !S_ISREG(st.st_mode))
				continue;
			saw(seen, rel, name);
			ret = rfi_index_add(idx, rel, len, size, label);
			if (!ret && !(any_name & RF_INDEX_RAW))
				ret = push_size(&others.images, &others.nimages, &others.icap,
						idx->count - 1);
			if (ret)
				break;
		}
	}
	rel[rel_len] = '\0';
	if (!ret)
		ret = attach_others(idx, &others, dirfd(d), rel, rel_len);
	others_free(&others);
	closedir(d);
	return ret;
}

int rfi_files_walk(rf_index *idx, const char *dir, int any_name, rf_files_seen *seen, char *err,
		   size_t errlen)
{
	int ret = rfi_index_set_root(idx, dir, err, errlen);
	if (ret)
		return ret;
	int rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0) {
		int e = errno;
		rfi_fmt(err, errlen, "'%s': %s", dir, strerror(e));
		return -e;
	}
	struct dir_chain root;
	ret = check_loop(rfd, dir, 0, NULL, &root, err, errlen);
	if (!ret)
		ret = rfi_index_stamp_add(idx, rfd, "", "");
	if (ret) {
		close(rfd);
		return ret;
	}
	DIR *d = fdopendir(rfd);
	if (!d) {
		close(rfd);
		return -ENOMEM;
	}
	/* Classes: the first-level folders, in sorted name order. */
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (skipped(de->d_name, any_name))
			continue;
		if (!entry_is_dir(dirfd(d), de)) {
			/* raw mode: files beside the class folders, label -1 */
			struct stat st;
			if (!(any_name & RF_INDEX_RAW))
				saw(seen, de->d_name, de->d_name);
			if ((any_name & RF_INDEX_RAW) && fstatat(dirfd(d), de->d_name, &st, 0) == 0 &&
			    S_ISREG(st.st_mode)) {
				saw(seen, de->d_name, de->d_name);
				ret = rfi_index_add(idx, de->d_name, strlen(de->d_name),
						   (int64_t)st.st_size, -1);
				if (ret)
					goto out;
			}
			continue;
		}
		if ((size_t)idx->nclasses == cap) {
			cap = cap ? cap * 2 : 64;
			char **c = realloc(idx->classes, cap * sizeof(*c));
			if (!c) {
				ret = -ENOMEM;
				goto out;
			}
			idx->classes = c;
		}
		idx->classes[idx->nclasses] = strdup(de->d_name);
		if (!idx->classes[idx->nclasses]) {
			ret = -ENOMEM;
			goto out;
		}
		idx->nclasses++;
	}
	if (idx->nclasses > 1)
		qsort(idx->classes, (size_t)idx->nclasses, sizeof(char *), cmp_str);

	if (idx->count > 1) /* root files (raw mode) in name order */
		qsort_r(idx->entries, idx->count, sizeof(rf_index_entry), cmp_entry_path, idx->paths);
	char rel[PATH_MAX];
	for (int c = 0; c < idx->nclasses; c++) {
		size_t first = idx->count;
		size_t len = strlen(idx->classes[c]);
		if (len + 1 > sizeof(rel)) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		memcpy(rel, idx->classes[c], len + 1);
		int cfd = openat(dirfd(d), rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cfd < 0) {
			int e = errno;
			rfi_fmt(err, errlen, "'%s/%s': %s", dir, rel, strerror(e));
			ret = -e;
			goto out;
		}
		ret = walk_dir(idx, seen, cfd, rel, len, c, any_name, &root, err, errlen);
		if (ret)
			goto out;
		if (idx->count - first > 1)
			qsort_r(idx->entries + first, idx->count - first, sizeof(rf_index_entry),
				cmp_entry_path, idx->paths);
	}
out:
	closedir(d);
	return ret;
}
