/* shards.c - the shards of a shard source (tar shards, token shards),
 * whatever their kind: finds them (a folder of them, a folder of class
 * folders of them (tar), a list file of shard paths or URLs, a brace
 * pattern such as train-{000000..000146}.tar, a glob, or an object-store
 * folder listed through its transport) and records each one's path (and
 * URL, for remote ones) and class-folder label, in sorted path order (or
 * list order), so that a pack of a tree numbers its samples as the tree
 * does. Reading what a shard holds is its kind's (src/source/: tar_scan.c,
 * token_windows.c); so is the name a shard of the kind has (rf_shard_kind
 * says which, until issue 37's remainder makes it a row of the kind).
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

/* Is name (n bytes) a shard of this kind: .tar, or .bin / .bin.zst? */
static int is_kind(const char *name, size_t n, rf_shard_kind kind)
{
	if (kind == RF_SHARDS_TAR)
		return ends_with(name, n, ".tar");
	return ends_with(name, n, ".bin") || ends_with(name, n, ".bin.zst");
}

static int is_shard_name(const char *name, rf_shard_kind kind)
{
	return name[0] != '.' && is_kind(name, strlen(name), kind);
}

static const char *kind_name(rf_shard_kind kind)
{
	return kind == RF_SHARDS_TAR ? ".tar" : ".bin or .bin.zst";
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

/* The shard names of this kind in folder rel (relative to the root fd),
 * sorted; *n of them. NULL with *n = 0 when there are none or the folder
 * cannot be read. */
static char **shard_names(int rootfd, const char *rel, rf_shard_kind kind, size_t *n)
{
	*n = 0;
	int fd = openat(rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	char **names = NULL;
	size_t cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!is_shard_name(de->d_name, kind))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			char **x = realloc(names, cap * sizeof(*x));
			if (!x)
				break;
			names = x;
		}
		names[*n] = strdup(de->d_name);
		if (names[*n])
			(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(names, *n, sizeof(*names), cmp_str);
	return names;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* A folder: its shards (tar: labels from cls members), or else, for tar, its
 * class folders' *.tar (labels from the folder, in sorted class order,
 * where a sample has no cls). Returns 1 when it holds shards, 0 when not
 * (an ImageFolder). */
int rfi_index_shard_folder(rf_index *idx, const char *dir, rf_shard_kind kind, char *err,
			  size_t errlen)
{
	int ret = rfi_index_set_root(idx, dir, err, errlen);
	if (ret)
		return ret;
	size_t n;
	char **names = shard_names(idx->root_fd, ".", kind, &n);
	if (n || kind != RF_SHARDS_TAR) {
		for (size_t i = 0; i < n && !ret; i++)
			ret = add_shard(idx, names[i], -1);
		free_names(names, n);
		if (!ret)
			ret = rfi_index_stamp_add(idx, idx->root_fd, "", "");
		return ret ? ret : n ? 1 : 0;
	}
	/* class folders with shards inside */
	int fd = openat(idx->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	char **classes = NULL;
	size_t nc = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		size_t k;
		char **t = shard_names(idx->root_fd, de->d_name, kind, &k);
		free_names(t, k);
		if (!k)
			continue;
		if (nc == cap) {
			cap = cap ? cap * 2 : 64;
			char **x = realloc(classes, cap * sizeof(*x));
			if (!x)
				break;
			classes = x;
		}
		classes[nc] = strdup(de->d_name);
		if (classes[nc])
			nc++;
	}
	closedir(d);
	if (!nc) {
		free(classes);
		return 0;
	}
	qsort(classes, nc, sizeof(*classes), cmp_str);
	idx->classes = classes;
	idx->nclasses = (int)nc;
	ret = rfi_index_stamp_add(idx, idx->root_fd, "", "");
	for (size_t c = 0; c < nc && !ret; c++) {
		names = shard_names(idx->root_fd, classes[c], kind, &n);
		char rel[PATH_MAX];
		for (size_t i = 0; i < n && !ret; i++) {
			rfi_fmt(rel, sizeof(rel), "%s/%s", classes[c], names[i]);
			ret = add_shard(idx, rel, (int32_t)c);
		}
		free_names(names, n);
		if (!ret)
			ret = rfi_index_stamp_add(idx, idx->root_fd, classes[c], classes[c]);
	}
	return ret ? ret : 1;
}

/* A glob (shell wildcards * ? [...]): the matching shards of this kind, in
 * sorted order, relative to the pattern's folder when it has no wildcard
 * (else to "." or "/"). Returns 1 when source is one, with its shards
 * added; RF_EEMPTY when nothing matches. */
static int shard_glob(rf_index *idx, const char *source, rf_shard_kind kind, char *err,
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
		if (!is_shard_name(base ? base + 1 : path, kind)) {
			rfi_fmt(err, errlen, "source '%s': '%s' is not a %s shard", source, path,
			       kind_name(kind));
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
	rf_shard_kind kind;
	char **names;  /* the shards' names, relative to the folder */
	size_t n, cap;
} listing;

static int listed(void *user, const char *name, uint64_t size)
{
	(void)size;
	listing *l = user;
	if (!is_kind(name, strlen(name), l->kind))
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

static int add_listed(rf_index *idx, const char *source, listing *l, char *err, size_t errlen)
{
	size_t top = 0, deep = 0;
	const char *odd = NULL;
	for (size_t i = 0; i < l->n; i++) {
		size_t len;
		int deeper;
		if (!class_of(l->names[i], &len, &deeper))
			top++;
		else if (deeper || l->kind != RF_SHARDS_TAR)
			deep++, odd = odd ? odd : l->names[i];
	}
	if (top && top < l->n) {
		for (size_t i = 0; i < l->n && !odd; i++)
			if (strchr(l->names[i], '/'))
				odd = l->names[i];
		deep = l->n - top;
	}
	if (deep && l->kind == RF_SHARDS_TAR) {
		rfi_fmt(err, errlen, "source '%s': %zu of its %zu .tar objects (such as '%s') are not "
		       "where shards go (in the folder itself, or else in its class folders, one "
		       "level down)", source, deep, l->n, odd);
		return RF_EINDEX;
	}
	if (top || l->kind != RF_SHARDS_TAR) { /* the folder's own (token shards: only those) */
		for (size_t i = 0; i < l->n; i++)
			if (!strchr(l->names[i], '/')) {
				int ret = add_shard(idx, l->names[i], -1);
				if (ret)
					return ret;
			}
		return 0;
	}
	/* class folders: classes in name order, each one's shards in key order */
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

int rfi_index_shard_bucket(rf_index *idx, const char *source, rf_shard_kind kind, char *err,
			  size_t errlen)
{
	size_t n = strlen(source);
	if (!rfi_transport_of(source)->list || !n || source[n - 1] != '/')
		return 0;
	int ret = rfi_transport_open(&idx->transport, source, err, errlen);
	if (ret)
		return ret;
	if (!(idx->root = strndup(source, n - 1)))
		return -ENOMEM;
	listing l = { .kind = kind };
	ret = rfi_transport_list(idx->transport, source, listed, &l, idx->remote_timeout_ms, err,
				errlen);
	if (!ret && l.n == 0) {
		rfi_fmt(err, errlen, "source '%s': no %s shards in it", source, kind_name(kind));
		ret = RF_EEMPTY;
	}
	if (!ret)
		ret = add_listed(idx, source, &l, err, errlen);
	free_names(l.names, l.n);
	if (!ret && idx->nshards == 0) {
		rfi_fmt(err, errlen, "source '%s': no %s shards in it (in the folder itself)", source,
		       kind_name(kind));
		ret = RF_EEMPTY;
	}
	if (!ret)
		ret = make_urls(idx, err, errlen);
	return ret ? ret : 1;
}

int rfi_index_shard_pattern(rf_index *idx, const char *source, rf_shard_kind kind, char *err,
			   size_t errlen)
{
	if (!rfi_index_is_url(source) && strpbrk(source, "*?[")) /* a URL's '?' starts its query */
		return shard_glob(idx, source, kind, err, errlen);
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
int rfi_index_is_shard_list(const char *file, rf_shard_kind kind)
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
		yes = !strchr(line, '\t') && is_kind(line, name, kind);
		break;
	}
	fclose(f);
	return yes;
}

/* A list file: one shard path per line (relative to the list's folder). */
int rfi_index_shard_list(rf_index *idx, const char *file, rf_shard_kind kind, char *err,
			size_t errlen)
{
	char *copy = strdup(file);
	if (!copy)
		return -ENOMEM;
	char *slash = strrchr(copy, '/');
	const char *root = slash ? (slash == copy ? "/" : (*slash = '\0', copy)) : ".";
	int ret = rfi_index_set_root(idx, root, err, errlen);
	free(copy);
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
	unsigned lineno = 0;
	int urls = 0, paths = 0; /* a list is of URLs (remote) or of paths, not both */
	/* URLs as the list has them, their queries (a presigned URL's signature)
	 * included: what is read; the shards' names, for messages, have none */
	char **whole = NULL;
	while (!ret && fgets(line, sizeof(line), f)) {
		lineno++;
		size_t n = strcspn(line, "\r\n");
		line[n] = '\0';
		if (!n || line[0] == '#')
			continue;
		int url = rfi_index_is_url(line);
		urls += url;
		paths += !url;
		if (urls && paths) {
			rfi_fmt(err, errlen, "%s:%u: '%s': a list of shards holds URLs or paths, not both",
			       file, lineno, line);
			ret = RF_EINDEX;
			break;
		}
		if (!is_kind(line, url ? strcspn(line, "?#") : n, kind)) { /* a URL's query aside */
			rfi_fmt(err, errlen, "%s:%u: '%s' is not a %s shard", file, lineno, line,
			       kind_name(kind));
			ret = RF_EINDEX;
			break;
		}
		if (url) {
			char **w = idx->nshards % 64 ? whole : realloc(whole, (idx->nshards + 64) *
								       sizeof(char *));
			if (!w || !(w[idx->nshards] = strdup(line))) {
				whole = w ? w : whole;
				ret = -ENOMEM;
				break;
			}
			whole = w;
			line[strcspn(line, "?#")] = '\0';
		}
		ret = add_shard(idx, line, -1);
		if (ret && url)
			free(whole[idx->nshards]);
	}
	fclose(f);
	if (!ret && urls) { /* remote shards: each line is its whole URL */
		idx->urls = calloc(RF_MAX(idx->nshards, 1), sizeof(char *));
		idx->etags = calloc(RF_MAX(idx->nshards, 1), sizeof(*idx->etags));
		for (size_t i = 0; idx->urls && idx->etags && i < idx->nshards && !ret; i++)
			ret = rfi_index_read_url(idx, whole[i], &idx->urls[i], err, errlen);
		if (!idx->urls || !idx->etags)
			ret = -ENOMEM;
	}
	for (size_t i = 0; urls && whole && i < idx->nshards; i++)
		free(whole[i]);
	free(whole);
	char *abs = ret ? NULL : realpath(file, NULL); /* stamps outside the root are absolute */
	if (!ret)
		ret = abs ? rfi_index_stamp_add(idx, AT_FDCWD, abs, abs) : -errno;
	free(abs);
	return ret;
}

/* ---- remote shards: the check of what was indexed ----------------------- */

int rfi_index_check_remote(rf_index *idx, rf_log_level log_level, char *err, size_t errlen)
{
	uint32_t n = 0;
	for (size_t i = 0; i < idx->nshards; i++)
		n += !idx->etags[i][0];
	idx->etags_seen = n == idx->nshards; /* once this check succeeds */
	if (!n)
		return 0;
	uint32_t width = RF_MIN(n, 256u);
	uint8_t *mem = NULL;
	rf_io *io = NULL;
	rf_io_done *done = malloc(width * sizeof(*done));
	int wake = eventfd(0, EFD_CLOEXEC);
	int ret = !done || posix_memalign((void **)&mem, 4096, 4096 * (size_t)width) ? -ENOMEM
		: wake < 0 ? -errno : 0;
	if (!ret)
		ret = rfi_io_create(&io, &(rf_io_params){ .path = RF_IO_AUTO, .depth = width,
							 .max_read = 4096, .wake_fd = wake,
							 .name = idx->root, .log_level = log_level,
							 .url_reader = rfi_transport_reader(idx->transport),
							 .sign = rfi_transport_sign(idx->transport),
							 .url_budget_ms = idx->remote_timeout_ms },
				   err, errlen);
	/* a byte of each (the response says the size and the ETag), then a
	 * byte again asking for that ETag (If-Match): an ETag is believed when
	 * two answers agree (one answer may be a proxy's lie, and every read
	 * of the shard would then be refused, 412). 256 at once; read number
	 * k's buffer is mem + 4096 k. todo: shards to ask (PROBE_AGAIN: the
	 * second time), popped from its end. */
	size_t ntodo = 0;
	uint32_t active = 0, nfree = width, *free_slots = malloc(width * sizeof(uint32_t));
	uint32_t *todo = malloc(2 * (size_t)n * sizeof(uint32_t));
	uint8_t *rounds = calloc(idx->nshards, 1);
	if (!ret && (!free_slots || !todo || !rounds))
		ret = -ENOMEM;
	for (uint32_t k = 0; !ret && k < width; k++)
		free_slots[k] = k;
	for (size_t i = idx->nshards; !ret && i-- > 0;)
		if (!idx->etags[i][0])
			todo[ntodo++] = (uint32_t)i;
	while (!ret && (ntodo || active)) {
		while (ntodo && nfree) {
			uint32_t i = todo[--ntodo], again = i & PROBE_AGAIN;
			i &= ~PROBE_AGAIN;
			uint32_t k = free_slots[--nfree];
			rfi_io_submit(io, &(rf_io_read){ .file = -1, .url = idx->urls[i], .len = 1,
							.buf = mem + 4096 * (size_t)k,
							.tag = (uint64_t)k << 32 | again | i,
							.etag = again ? idx->etags[i] : NULL,
							.etag_out = again ? NULL : idx->etags[i] });
			active++;
		}
		if (!active)
			break;
		ret = rfi_io_wait_until(io, rfi_now_ns() + SCAN_SLICE_NS);
		if (!ret && rfi_cancelled()) {
			rfi_fmt(err, errlen, "%s: checking the shards: cancelled", idx->root);
			ret = -ECANCELED;
		}
		uint32_t got = ret ? 0 : rfi_io_reap(io, done, width);
		for (uint32_t j = 0; j < got && !ret; j++) {
			uint32_t i = (uint32_t)done[j].tag & ~PROBE_AGAIN;
			int again = !!((uint32_t)done[j].tag & PROBE_AGAIN);
			free_slots[nfree++] = (uint32_t)(done[j].tag >> 32);
			active--;
			char name[PATH_MAX + 8];
			rfi_index_shard_shown(idx, i, name, sizeof(name));
			if (again && done[j].res == -ESTALE && rounds[i] < PROBE_ROUNDS) {
				/* the two answers disagree: both forgotten, asked anew */
				rounds[i]++;
				idx->etags[i][0] = '\0';
				todo[ntodo++] = i;
			} else if (done[j].res < 0) {
				char what[256];
				rfi_io_describe(&done[j], what, sizeof(what));
				rfi_fmt(err, errlen, "shard %s: %s%s", name, what, again ? " (its ETag "
				       "asked again, after one answer gave it)" : "");
				ret = done[j].res;
			} else if (done[j].size != idx->shard_sizes[i]) {
				rfi_fmt(err, errlen, "shard %s: %llu bytes on the server, %llu when it was "
				       "indexed: the index is of other shards", name,
				       (unsigned long long)done[j].size,
				       (unsigned long long)idx->shard_sizes[i]);
				ret = -ESTALE;
			} else if (!again) {
				todo[ntodo++] = i | PROBE_AGAIN;
			}
		}
	}
	free(todo);
	free(rounds);
	rfi_io_destroy(io);
	if (wake >= 0)
		close(wake);
	free(mem);
	free(done);
	free(free_slots);
	return ret;
}
