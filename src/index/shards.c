/* shards.c - the shards of a shard source (tar shards, token shards),
 * whatever their kind: finds them (a folder of them, a folder of class
 * folders of them (tar), a list file of shard paths or URLs, a brace
 * pattern such as train-{000000..000146}.tar, a glob, or an object-store
 * folder listed through its transport) and records each one's path (and
 * URL, for remote ones) and class-folder label, in sorted path order (or
 * list order), so that a pack of a tree numbers its samples as the tree
 * does. Reading what a shard holds is its kind's (src/source/: tar_scan.c,
 * token_windows.c); so are the names its shards have, which its row gives
 * (rf_shard_names: suffixes, whether class folders hold them).
 *
 * Also the check of remote shards an index was loaded for
 * (rfi_index_check_remote): a byte of each, through the read engine, its
 * size and ETag compared with what was indexed. Remote requests take
 * remote_timeout_ms at most, all their tries; a create called off
 * (util/cancel.h) ends the check. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "io/engine.h"
#include "ringfeed.h"
#include "util/cancel.h"
#include "util/util.h"

#define SCAN_SLICE_NS 100000000ull /* a check's waits: a create called off is seen this soon */
#define PROBE_AGAIN (1u << 31) /* a check's tag: the second probe of a shard */
#define PROBE_ROUNDS 2         /* a shard whose two probes disagree: asked anew this often */

/* ---- finding the shards -------------------------------------------------- */

static int ends_with(const char *name, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n > k && !memcmp(name + n - k, suffix, k);
}

int rfi_shard_named(const rf_shard_names *names, const char *name, size_t n)
{
	for (const char *const *x = names->suffixes; *x; x++)
		if (ends_with(name, n, *x))
			return 1;
	return 0;
}

/* A folder entry that is a shard: not hidden, and of these names. */
static int is_shard_name(const char *name, const rf_shard_names *names)
{
	return name[0] != '.' && rfi_shard_named(names, name, strlen(name));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_shard(rf_index *idx, const char *path, int32_t folder_label)
{
	if (idx->nshards % 64 == 0) {
		size_t cap = idx->nshards + 64;
		char **s = realloc(idx->shards, cap * sizeof(*s));
		int32_t *l = realloc(idx->shard_labels, cap * sizeof(*l));
		if (s)
			idx->shards = s;
		if (l)
			idx->shard_labels = l;
		if (!s || !l)
			return -ENOMEM;
	}
	idx->shards[idx->nshards] = strdup(path);
	if (!idx->shards[idx->nshards])
		return -ENOMEM;
	idx->shard_labels[idx->nshards++] = folder_label;
	return 0;
}

/* The shards (of these names) in folder rel (relative to the root fd),
 * sorted; *n of them. NULL with *n = 0 when there are none or the folder
 * cannot be read. */
static char **shard_names(int rootfd, const char *rel, const rf_shard_names *names, size_t *n)
{
	*n = 0;
	int fd = openat(rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char **found = NULL;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!is_shard_name(de->d_name, names))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			char **x = realloc(found, cap * sizeof(*x));
			if (!x)
				break;
			found = x;
		}
		found[*n] = strdup(de->d_name);
		if (found[*n])
			(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(found, *n, sizeof(*found), cmp_str);
	return found;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The root's class folders that hold shards (of these names), sorted;
 * *nc of them (NULL, 0: none, or the root cannot be read). */
static char **shard_classes(int rootfd, const rf_shard_names *names, size_t *nc)
{
	*nc = 0;
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char **classes = NULL;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		size_t k;
		char **inside = shard_names(rootfd, de->d_name, names, &k);
		free_names(inside, k);
		if (!k)
			continue;
		if (*nc == cap) {
			cap = cap ? cap * 2 : 64;
			char **x = realloc(classes, cap * sizeof(*x));
			if (!x)
				break;
			classes = x;
		}
		classes[*nc] = strdup(de->d_name);
		if (classes[*nc])
			(*nc)++;
	}
	closedir(d);
	if (*nc > 1)
		qsort(classes, *nc, sizeof(*classes), cmp_str);
	return classes;
}

/* The shards in the root itself, labels -1; *n of them. */
static int add_own_shards(rf_index *idx, const rf_shard_names *names, size_t *n)
{
	char **found = shard_names(idx->root_fd, ".", names, n);
	int ret = 0;
	for (size_t i = 0; i < *n && !ret; i++)
		ret = add_shard(idx, found[i], -1);
	free_names(found, *n);
	return ret;
}

/* The shards of the class folders (idx->classes), each labelled by its
 * folder's place in sorted class order. */
static int add_class_shards(rf_index *idx, const rf_shard_names *names)
{
	int ret = rfi_index_stamp_add(idx, idx->root_fd, "", "");
	char rel[PATH_MAX];
	for (int c = 0; c < idx->nclasses && !ret; c++) {
		size_t n;
		char **found = shard_names(idx->root_fd, idx->classes[c], names, &n);
		for (size_t i = 0; i < n && !ret; i++) {
			rfi_fmt(rel, sizeof(rel), "%s/%s", idx->classes[c], found[i]);
			ret = add_shard(idx, rel, (int32_t)c);
		}
		free_names(found, n);
		if (!ret)
			ret = rfi_index_stamp_add(idx, idx->root_fd, idx->classes[c], idx->classes[c]);
	}
	return ret;
}

/* A folder: its shards (labels from the shards, where the kind has them),
 * or else, for a kind whose shards class folders may hold, its class
 * folders' shards (labels from the folder, in sorted class order, where a
 * sample has none of its own). Returns 1 when it holds shards, 0 when not
 * (an ImageFolder). */
int rfi_index_shard_folder(rf_index *idx, const char *dir, const rf_shard_names *names, char *err,
			  size_t errlen)
{
	int ret = rfi_index_set_root(idx, dir, err, errlen);
	if (ret)
		return ret;
	size_t n;
	ret = add_own_shards(idx, names, &n);
	if (!ret && (n || !names->class_folders)) {
		ret = rfi_index_stamp_add(idx, idx->root_fd, "", "");
		return ret ? ret : n ? 1 : 0;
	}
	if (ret)
		return ret;
	/* none of its own: class folders with shards inside */
	size_t nc;
	char **classes = shard_classes(idx->root_fd, names, &nc);
	if (!nc) {
		free(classes);
		return 0;
	}
	idx->classes = classes;
	idx->nclasses = (int)nc;
	ret = add_class_shards(idx, names);
	return ret ? ret : 1;
}

/* A glob (shell wildcards * ? [...]): the matching shards of this kind, in
 * sorted order, relative to the pattern's folder when it has no wildcard
 * (else to "." or "/"). Returns 1 when source is one, with its shards
 * added; RF_EEMPTY when nothing matches. */
static int shard_glob(rf_index *idx, const char *source, const rf_shard_names *names, char *err,
		      size_t errlen)
{
	const char *slash = strrchr(source, '/');
	size_t dir_len = slash ? (size_t)(slash - source) : 0;
	int wild_dir = memchr(source, '*', dir_len) || memchr(source, '?', dir_len) ||
		       memchr(source, '[', dir_len);
	char root[PATH_MAX];
	if (!slash || wild_dir)
		rfi_fmt(root, sizeof(root), "%s", source[0] == '/' ? "/" : ".");
	else
		rfi_fmt(root, sizeof(root), "%.*s", (int)(dir_len ? dir_len : 1), source);
	size_t skip = !slash || wild_dir ? (source[0] == '/' ? 1 : 0) : dir_len + 1;
	glob_t g;
	int r = glob(source, GLOB_ERR, NULL, &g);
	if (r == GLOB_NOMATCH) {
		rfi_fmt(err, errlen, "source '%s': no file matches", source);
		return RF_EEMPTY;
	}
	if (r) {
		rfi_fmt(err, errlen, "source '%s': %s", source,
		       r == GLOB_NOSPACE ? "out of memory" : "a folder of the pattern cannot be read");
		return r == GLOB_NOSPACE ? -ENOMEM : -EACCES;
	}
	int ret = rfi_index_set_root(idx, root, err, errlen);
	for (size_t i = 0; i < g.gl_pathc && !ret; i++) {
		const char *path = g.gl_pathv[i];
		const char *base = strrchr(path, '/');
		if (!is_shard_name(base ? base + 1 : path, names)) {
			rfi_fmt(err, errlen, "source '%s': '%s' is not a %s shard", source, path,
			       names->shown);
			ret = RF_EINDEX;
			break;
		}
		ret = add_shard(idx, path + skip, -1);
	}
	globfree(&g);
	if (!ret)
		ret = rfi_index_stamp_add(idx, idx->root_fd, "", "");
	return ret ? ret : 1;
}

/* A brace pattern PREFIX{A..B}SUFFIX (A and B decimal, the width of A kept
 * with zeros, as WebDataset writes shard names), or a glob. Returns 1 when
 * source is one, with its shards added (relative to the pattern's folder,
 * the root). */
/* The root of a path's name: the folder before its last '/' among its
 * first n bytes ("." when there is none); *name gets what follows it. */
static int set_root_of(rf_index *idx, const char *path, size_t n, const char **name, char *err,
		       size_t errlen)
{
	const char *slash = memrchr(path, '/', n);
	char root[PATH_MAX];
	if (slash)
		rfi_fmt(root, sizeof(root), "%.*s", (int)(slash == path ? 1 : slash - path), path);
	else
		rfi_fmt(root, sizeof(root), ".");
	*name = slash ? slash + 1 : path;
	if (rfi_index_is_url(path)) { /* a remote folder: nothing to open */
		idx->root = strdup(root);
		return idx->root ? 0 : -ENOMEM;
	}
	return rfi_index_set_root(idx, root, err, errlen);
}

/* (index.h) The transport is opened at the first URL that needs one (an
 * s3:// bucket: its endpoint and credentials); every s3:// URL of a source
 * is in that bucket. */
int rfi_index_read_url(rf_index *idx, const char *url, char **out, char *err, size_t errlen)
{
	int ret = rfi_transport_read_url(&idx->transport, url, out, err, errlen);
	return ret == 1 ? RF_EINDEX : ret;
}

/* Remote shards: each one's URL, from the root and its name. */
static int make_urls(rf_index *idx, char *err, size_t errlen)
{
	idx->urls = calloc(RF_MAX(idx->nshards, 1), sizeof(char *));
	idx->etags = calloc(RF_MAX(idx->nshards, 1), sizeof(*idx->etags));
	if (!idx->urls || !idx->etags)
		return -ENOMEM;
	int ret = 0;
	for (size_t i = 0; i < idx->nshards && !ret; i++) {
		char *whole = rfi_strprintf("%s/%s", idx->root, idx->shards[i]);
		ret = whole ? rfi_index_read_url(idx, whole, &idx->urls[i], err, errlen) : -ENOMEM;
		free(whole);
	}
	return ret;
}

/* The shards an s3:// folder holds ("s3://bucket/prefix/"), as a local
 * folder's are found: its objects of this kind in the folder itself, or
 * else (tar shards) in its class folders, one level down, labelled by
 * class in name order; shards in both places, or deeper, are refused. The
 * listing (every key under the prefix, in key order) is gathered first. */
typedef struct listing {
	const rf_shard_names *shard_names;
	char **names;  /* the shards' names, relative to the folder */
	size_t n, cap;
} listing;

static int listed(void *user, const char *name, uint64_t size)
{
	(void)size;
	listing *l = user;
	if (!rfi_shard_named(l->shard_names, name, strlen(name)))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		char **x = realloc(l->names, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		l->names = x;
		l->cap = cap;
	}
	return (l->names[l->n] = strdup(name)) ? (l->n++, 0) : -ENOMEM;
}

/* The class of name ("cat/a.tar": "cat", its length in *len), or NULL
 * when it has no folder; *deeper when it is more than one level down. */
static const char *class_of(const char *name, size_t *len, int *deeper)
{
	const char *slash = strchr(name, '/');
	*len = slash ? (size_t)(slash - name) : 0;
	*deeper = slash && strchr(slash + 1, '/');
	return slash ? name : NULL;
}

static int cmp_class(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strcspn(x, "/"), ly = strcspn(y, "/");
	int c = strncmp(x, y, RF_MIN(lx, ly));
	return c ? c : lx != ly ? (lx < ly ? -1 : 1) : strcmp(x + lx, y + ly);
}

/* How many listed shards lie in the folder itself (*top) and how many
 * where the kind's shards do not go (*deep: below a class folder, or in
 * one at all for a kind without class folders, or in class folders beside
 * shards of the folder's own), the first of those in *odd. */
static void placement(const listing *l, size_t *top, size_t *deep, const char **odd)
{
	*top = *deep = 0;
	*odd = NULL;
	for (size_t i = 0; i < l->n; i++) {
		size_t len;
		int deeper;
		if (!class_of(l->names[i], &len, &deeper))
			(*top)++;
		else if (deeper || !l->shard_names->class_folders)
			(*deep)++, *odd = *odd ? *odd : l->names[i];
	}
	if (*top && *top < l->n) {
		for (size_t i = 0; i < l->n && !*odd; i++)
			if (strchr(l->names[i], '/'))
				*odd = l->names[i];
		*deep = l->n - *top;
	}
}

/* Class folders: classes in name order, each one's shards in key order. */
static int add_listed_classes(rf_index *idx, listing *l)
{
	qsort(l->names, l->n, sizeof(*l->names), cmp_class);
	for (size_t i = 0; i < l->n; i++) {
		size_t len, plen;
		int deeper;
		class_of(l->names[i], &len, &deeper);
		const char *prev = i ? l->names[i - 1] : NULL;
		if (!prev || (class_of(prev, &plen, &deeper), plen != len) ||
		    strncmp(prev, l->names[i], len)) {
			char **c = realloc(idx->classes, (size_t)(idx->nclasses + 1) * sizeof(*c));
			if (!c)
				return -ENOMEM;
			idx->classes = c;
			if (!(c[idx->nclasses] = strndup(l->names[i], len)))
				return -ENOMEM;
			idx->nclasses++;
		}
		int ret = add_shard(idx, l->names[i], idx->nclasses - 1);
		if (ret)
			return ret;
	}
	return 0;
}

static int add_listed(rf_index *idx, const char *source, listing *l, char *err, size_t errlen)
{
	size_t top, deep;
	const char *odd;
	placement(l, &top, &deep, &odd);
	int classes = l->shard_names->class_folders;
	if (deep && classes) {
		rfi_fmt(err, errlen, "source '%s': %zu of its %zu %s objects (such as '%s') are not "
		       "where shards go (in the folder itself, or else in its class folders, one "
		       "level down)", source, deep, l->n, l->shard_names->shown, odd);
		return RF_EINDEX;
	}
	if (top || !classes) { /* the folder's own (a kind without class folders: only those) */
		for (size_t i = 0; i < l->n; i++)
			if (l->shard_names->any_depth || !strchr(l->names[i], '/')) {
				int ret = add_shard(idx, l->names[i], -1);
				if (ret)
					return ret;
			}
		return 0;
	}
	return add_listed_classes(idx, l);
}

int rfi_index_shard_bucket(rf_index *idx, const char *source, const rf_shard_names *names, char *err,
			  size_t errlen)
{
	char *folder;
	int ret = rfi_transport_listed_folder(source, &folder);
	if (ret <= 0)
		return ret;
	ret = rfi_transport_open(&idx->transport, source, err, errlen);
	if (!ret && !(idx->root = strndup(folder, strlen(folder) - 1)))
		ret = -ENOMEM;
	free(folder);
	if (ret)
		return ret;
	listing l = { .shard_names = names };
	ret = rfi_transport_list(idx->transport, source, listed, &l, idx->remote_timeout_ms, err,
				errlen);
	if (!ret && l.n == 0) {
		rfi_fmt(err, errlen, "source '%s': no %s shards in it", source, names->shown);
		ret = RF_EEMPTY;
	}
	if (!ret)
		ret = add_listed(idx, source, &l, err, errlen);
	free_names(l.names, l.n);
	if (!ret && idx->nshards == 0) {
		rfi_fmt(err, errlen, "source '%s': no %s shards in it (in the folder itself)", source,
		       names->shown);
		ret = RF_EEMPTY;
	}
	if (!ret)
		ret = make_urls(idx, err, errlen);
	return ret ? ret : 1;
}

int rfi_index_shard_pattern(rf_index *idx, const char *source, const rf_shard_names *names, char *err,
			   size_t errlen)
{
	if (!rfi_index_is_url(source) && strpbrk(source, "*?[")) /* a URL's '?' starts its query */
		return shard_glob(idx, source, names, err, errlen);
	const char *open = strchr(source, '{'), *dots = open ? strstr(open, "..") : NULL;
	const char *close_ = dots ? strchr(dots, '}') : NULL;
	if (!close_ || strchr(close_ + 1, '{'))
		return 0;
	char *end;
	unsigned long long a = strtoull(open + 1, &end, 10);
	if (end != dots || end == open + 1)
		return 0;
	unsigned long long b = strtoull(dots + 2, &end, 10);
	if (end != close_ || end == dots + 2 || b < a || b - a > 10000000ull)
		return 0;
	int width = (int)(dots - open - 1);
	/* the folder of the prefix is the root */
	const char *prefix;
	int ret = set_root_of(idx, source, (size_t)(open - source), &prefix, err, errlen);
	if (ret)
		return ret;
	char name[PATH_MAX];
	for (unsigned long long i = a; i <= b && !ret; i++) {
		rfi_fmt(name, sizeof(name), "%.*s%0*llu%s", (int)(open - prefix), prefix, width, i,
		       close_ + 1);
		ret = add_shard(idx, name, -1);
	}
	if (!ret)
		ret = rfi_index_is_url(source) ? make_urls(idx, err, errlen)
					      : rfi_index_stamp_add(idx, idx->root_fd, "", "");
	return ret ? ret : 1;
}

int rfi_index_shard_file(rf_index *idx, const char *file, char *err, size_t errlen)
{
	const char *name;
	int ret = set_root_of(idx, file, strlen(file), &name, err, errlen);
	if (!ret)
		ret = add_shard(idx, name, -1);
	if (!ret)
		ret = rfi_index_is_url(file) ? make_urls(idx, err, errlen)
					    : rfi_index_stamp_add(idx, idx->root_fd, "", "");
	return ret ? ret : 1;
}

/* Is file a list of shards (its first line that is not blank or a comment
 * names a shard of this kind and has no tab)? */
int rfi_index_is_shard_list(const char *file, const rf_shard_names *names)
{
	int fd = rfi_open_regular(AT_FDCWD, file, "list", NULL, 0);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	char line[PATH_MAX + 2];
	int yes = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\r\n");
		line[n] = '\0';
		if (!n || line[0] == '#')
			continue;
		size_t name = rfi_index_is_url(line) ? strcspn(line, "?#") : n; /* a URL's query aside */
		yes = !strchr(line, '\t') && rfi_shard_named(names, line, name);
		break;
	}
	fclose(f);
	return yes;
}

/* The root of a list's shard paths: the list's folder. */
static int set_list_root(rf_index *idx, const char *file, char *err, size_t errlen)
{
	char *copy = strdup(file);
	if (!copy)
		return -ENOMEM;
	char *slash = strrchr(copy, '/');
	const char *root = slash ? (slash == copy ? "/" : (*slash = '\0', copy)) : ".";
	int ret = rfi_index_set_root(idx, root, err, errlen);
	free(copy);
	return ret;
}

/* A list being read, line by line. */
typedef struct list_read {
	const char *file;
	const rf_shard_names *names;
	unsigned lineno;
	int urls, paths; /* a list is of URLs (remote) or of paths, not both */
	/* URLs as the list has them, their queries (a presigned URL's signature)
	 * included: what is read; the shards' names, for messages, have none */
	char **whole;
} list_read;

/* One line of the list that is not blank or a comment: its shard added
 * (a URL's whole text kept in lr->whole). */
static int list_line(rf_index *idx, list_read *lr, char *line, size_t n, char *err,
		     size_t errlen)
{
	int url = rfi_index_is_url(line);
	lr->urls += url;
	lr->paths += !url;
	if (lr->urls && lr->paths) {
		rfi_fmt(err, errlen, "%s:%u: '%s': a list of shards holds URLs or paths, not both",
		       lr->file, lr->lineno, line);
		return RF_EINDEX;
	}
	if (!rfi_shard_named(lr->names, line, url ? strcspn(line, "?#") : n)) { /* a URL's query aside */
		rfi_fmt(err, errlen, "%s:%u: '%s' is not a %s shard", lr->file, lr->lineno, line,
		       lr->names->shown);
		return RF_EINDEX;
	}
	if (url) {
		char **w = idx->nshards % 64 ? lr->whole
					     : realloc(lr->whole, (idx->nshards + 64) * sizeof(char *));
		if (!w || !(w[idx->nshards] = strdup(line))) {
			lr->whole = w ? w : lr->whole;
			return -ENOMEM;
		}
		lr->whole = w;
		line[strcspn(line, "?#")] = '\0';
	}
	int ret = add_shard(idx, line, -1);
	if (ret && url)
		free(lr->whole[idx->nshards]);
	return ret;
}

/* Remote shards: each line is its whole URL, read where its transport says. */
static int list_urls(rf_index *idx, char **whole, char *err, size_t errlen)
{
	int ret = 0;
	idx->urls = calloc(RF_MAX(idx->nshards, 1), sizeof(char *));
	idx->etags = calloc(RF_MAX(idx->nshards, 1), sizeof(*idx->etags));
	for (size_t i = 0; idx->urls && idx->etags && i < idx->nshards && !ret; i++)
		ret = rfi_index_read_url(idx, whole[i], &idx->urls[i], err, errlen);
	if (!idx->urls || !idx->etags)
		ret = -ENOMEM;
	return ret;
}

/* A list file: one shard path per line (relative to the list's folder). */
int rfi_index_shard_list(rf_index *idx, const char *file, const rf_shard_names *names, char *err,
			size_t errlen)
{
	int ret = set_list_root(idx, file, err, errlen);
	if (ret)
		return ret;
	int fd = rfi_open_regular(AT_FDCWD, file, "shard list", err, errlen);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0) {
			close(fd);
			return -ENOMEM;
		}
		return fd;
	}
	char line[PATH_MAX + 2];
	list_read lr = { .file = file, .names = names };
	while (!ret && fgets(line, sizeof(line), f)) {
		lr.lineno++;
		size_t n = strcspn(line, "\r\n");
		line[n] = '\0';
		if (n && line[0] != '#')
			ret = list_line(idx, &lr, line, n, err, errlen);
	}
	fclose(f);
	if (!ret && lr.urls)
		ret = list_urls(idx, lr.whole, err, errlen);
	for (size_t i = 0; lr.urls && lr.whole && i < idx->nshards; i++)
		free(lr.whole[i]);
	free(lr.whole);
	char *abs = ret ? NULL : realpath(file, NULL); /* stamps outside the root are absolute */
	if (!ret)
		ret = abs ? rfi_index_stamp_add(idx, AT_FDCWD, abs, abs) : -errno;
	free(abs);
	return ret;
}

/* ---- remote shards: the check of what was indexed ----------------------- */

/* The check under way: a byte of each shard (the response says the size
 * and the ETag), then a byte again asking for that ETag (If-Match): an ETag
 * is believed when two answers agree (one answer may be a proxy's lie, and
 * every read of the shard would then be refused, 412). `width` at once;
 * read number k's buffer is mem + 4096 k. todo: shards to ask
 * (PROBE_AGAIN: the second time), popped from its end. */
typedef struct probe {
	rf_index *idx;
	uint32_t width;
	uint8_t *mem;
	rf_io *io;
	rf_io_done *done;
	int wake;
	uint32_t active, nfree, *free_slots;
	uint32_t *todo;
	size_t ntodo;
	uint8_t *rounds; /* each shard's second probes that disagreed */
} probe;

/* The engine, the buffers and the first round of asks (n shards without
 * an ETag, the last asked first). */
static int probe_open(probe *pr, rf_index *idx, uint32_t n, rf_log_level log_level, char *err,
		      size_t errlen)
{
	uint32_t width = RF_MIN(n, 256u);
	*pr = (probe){ .idx = idx, .width = width, .nfree = width };
	pr->done = malloc(width * sizeof(*pr->done));
	pr->wake = eventfd(0, EFD_CLOEXEC);
	int ret = !pr->done || posix_memalign((void **)&pr->mem, 4096, 4096 * (size_t)width)
		? -ENOMEM : pr->wake < 0 ? -errno : 0;
	if (!ret)
		ret = rfi_io_create(&pr->io, &(rf_io_params){ .path = RF_IO_AUTO, .depth = width,
							     .max_read = 4096, .wake_fd = pr->wake,
							     .name = idx->root, .log_level = log_level,
							     .url_reader = rfi_transport_reader(idx->transport),
							     .sign = rfi_transport_sign(idx->transport),
							     .url_budget_ms = idx->remote_timeout_ms },
				   err, errlen);
	pr->free_slots = malloc(width * sizeof(uint32_t));
	pr->todo = malloc(2 * (size_t)n * sizeof(uint32_t));
	pr->rounds = calloc(idx->nshards, 1);
	if (!ret && (!pr->free_slots || !pr->todo || !pr->rounds))
		ret = -ENOMEM;
	for (uint32_t k = 0; !ret && k < width; k++)
		pr->free_slots[k] = k;
	for (size_t i = idx->nshards; !ret && i-- > 0;)
		if (!idx->etags[i][0])
			pr->todo[pr->ntodo++] = (uint32_t)i;
	return ret;
}

static void probe_close(probe *pr)
{
	free(pr->todo);
	free(pr->rounds);
	rfi_io_destroy(pr->io);
	if (pr->wake >= 0)
		close(pr->wake);
	free(pr->mem);
	free(pr->done);
	free(pr->free_slots);
}

/* Asks what it can: a shard of todo into each free read. */
static void probe_submit(probe *pr)
{
	rf_index *idx = pr->idx;
	while (pr->ntodo && pr->nfree) {
		uint32_t i = pr->todo[--pr->ntodo], again = i & PROBE_AGAIN;
		i &= ~PROBE_AGAIN;
		uint32_t k = pr->free_slots[--pr->nfree];
		rfi_io_submit(pr->io, &(rf_io_read){ .file = -1, .url = idx->urls[i], .len = 1,
						    .buf = pr->mem + 4096 * (size_t)k,
						    .tag = (uint64_t)k << 32 | again | i,
						    .etag = again ? idx->etags[i] : NULL,
						    .etag_out = again ? NULL : idx->etags[i] });
		pr->active++;
	}
}

/* One answer: a first one asks again, two that disagree are asked anew
 * (PROBE_ROUNDS at most), a failure or another size ends the check. */
static int probe_answer(probe *pr, const rf_io_done *d, char *err, size_t errlen)
{
	rf_index *idx = pr->idx;
	uint32_t i = (uint32_t)d->tag & ~PROBE_AGAIN;
	int again = !!((uint32_t)d->tag & PROBE_AGAIN);
	pr->free_slots[pr->nfree++] = (uint32_t)(d->tag >> 32);
	pr->active--;
	char name[PATH_MAX + 8];
	rfi_index_shard_shown(idx, i, name, sizeof(name));
	if (again && d->res == -ESTALE && pr->rounds[i] < PROBE_ROUNDS) {
		/* the two answers disagree: both forgotten, asked anew */
		pr->rounds[i]++;
		idx->etags[i][0] = '\0';
		pr->todo[pr->ntodo++] = i;
	} else if (d->res < 0) {
		char what[256];
		rfi_io_describe(d, what, sizeof(what));
		rfi_fmt(err, errlen, "shard %s: %s%s", name, what, again ? " (its ETag "
		       "asked again, after one answer gave it)" : "");
		return d->res;
	} else if (d->size != idx->shard_sizes[i]) {
		rfi_fmt(err, errlen, "shard %s: %llu bytes on the server, %llu when it was "
		       "indexed: the index is of other shards", name, (unsigned long long)d->size,
		       (unsigned long long)idx->shard_sizes[i]);
		return -ESTALE;
	} else if (!again) {
		pr->todo[pr->ntodo++] = i | PROBE_AGAIN;
	}
	return 0;
}

int rfi_index_check_remote(rf_index *idx, rf_log_level log_level, char *err, size_t errlen)
{
	uint32_t n = 0;
	for (size_t i = 0; i < idx->nshards; i++)
		n += !idx->etags[i][0];
	idx->etags_seen = n == idx->nshards; /* once this check succeeds */
	if (!n)
		return 0;
	probe pr;
	int ret = probe_open(&pr, idx, n, log_level, err, errlen);
	while (!ret && (pr.ntodo || pr.active)) {
		probe_submit(&pr);
		if (!pr.active)
			break;
		ret = rfi_io_wait_until(pr.io, rfi_now_ns() + SCAN_SLICE_NS);
		if (!ret && rfi_cancelled()) {
			rfi_fmt(err, errlen, "%s: checking the shards: cancelled", idx->root);
			ret = -ECANCELED;
		}
		uint32_t got = ret ? 0 : rfi_io_reap(pr.io, pr.done, pr.width);
		for (uint32_t j = 0; j < got && !ret; j++)
			ret = probe_answer(&pr, &pr.done[j], err, errlen);
	}
	probe_close(&pr);
	return ret;
}
