/* files_manifest.c - the files kind's manifest parser (files.h): builds
 * the index from a manifest file: one "path<TAB>label" or
 * "path<TAB>label<TAB>weight" per line, label a non-negative integer,
 * weight a finite number >= 0 (for the weighted sampler), relative paths
 * resolved against the manifest's folder. The first line decides whether
 * the manifest has weights; then every line has them, or none does. The
 * label and weight are split at the last tabs, so a path may contain a tab.
 * Or, after a first line "#columns: path label [weight] NAME...", exactly
 * that many tab-separated columns per line, each NAME column a field of its
 * sample (a caption: "#columns: path label txt"), its text with \t, \n, \r
 * and \\ escapes undone. Blank lines and lines starting with '#' are
 * skipped. A path that cannot be stat'ed is kept with its error: it becomes
 * a bad sample when read, so that one missing file never stops a run. */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index_build.h"
#include "source/files.h"
#include "ringfeed.h"
#include "util/util.h"

static int parse_label(const char *s, int32_t *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > INT32_MAX)
		return -1;
	*out = (int32_t)v;
	return 0;
}

static int parse_weight(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* ERANGE on underflow (a subnormal such as 1e-310) is a valid tiny weight */
	if ((errno && !(errno == ERANGE && fabs(v) <= DBL_MIN)) || end == s || *end ||
	    !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* The two last tab-separated fields of line, as label and weight, when
 * both parse; the line is cut before them. */
static int split_weighted(char *line, int32_t *label, double *weight)
{
	char *t2 = strrchr(line, '\t');
	if (!t2 || t2 == line)
		return -1;
	*t2 = '\0';
	char *t1 = strrchr(line, '\t');
	if (t1 && t1 != line && !parse_label(t1 + 1, label) && !parse_weight(t2 + 1, weight)) {
		*t1 = '\0';
		return 0;
	}
	*t2 = '\t';
	return -1;
}

/* A "#columns:" header: which column is what. */
#define COLUMNS_MAX 24
typedef struct columns {
	int n;                 /* 0: no header (the classic format) */
	int path, label, weight; /* their column, or -1 (weight) */
	int field[COLUMNS_MAX];  /* per column: its extra name id, or -1 */
} columns;

/* Parses "#columns: path label [weight] NAME..." into c. */
static int parse_columns(rf_index *idx, const char *line, columns *c, const char *file,
			 char *err, size_t errlen)
{
	*c = (columns){ .path = -1, .label = -1, .weight = -1 };
	const char *p = line + strlen("#columns:");
	while (*p) {
		p += strspn(p, " \t");
		size_t n = strcspn(p, " \t");
		if (!n)
			break;
		if (c->n == COLUMNS_MAX) {
			rfi_fmt(err, errlen, "manifest '%s': more than %d columns", file, COLUMNS_MAX);
			return RF_EINDEX;
		}
		int *slot = n == 4 && !strncmp(p, "path", 4) ? &c->path
			  : n == 5 && !strncmp(p, "label", 5) ? &c->label
			  : n == 6 && !strncmp(p, "weight", 6) ? &c->weight : NULL;
		c->field[c->n] = -1;
		if (slot) {
			if (*slot >= 0) {
				rfi_fmt(err, errlen, "manifest '%s': column '%.*s' named twice", file,
				       (int)n, p);
				return RF_EINDEX;
			}
			*slot = c->n;
		} else {
			int id = rfi_index_extra_name(idx, p, n);
			if (id < 0)
				return id == -E2BIG ? RF_EINDEX : id;
			c->field[c->n] = id;
		}
		c->n++;
		p += n;
	}
	if (c->path < 0 || c->label < 0) {
		rfi_fmt(err, errlen, "manifest '%s': its #columns line names no path or no label "
		       "column (#columns: path label [weight] NAME...)", file);
		return RF_EINDEX;
	}
	return 0;
}

/* A field column's text with its escapes (\t \n \r \\) undone, in place. */
static size_t unescape(char *s)
{
	size_t o = 0;
	for (size_t i = 0; s[i]; i++) {
		char ch = s[i];
		if (ch == '\\' && s[i + 1]) {
			char e = s[++i];
			ch = e == 't' ? '\t' : e == 'n' ? '\n' : e == 'r' ? '\r' : e;
			if (e != 't' && e != 'n' && e != 'r' && e != '\\')
				s[o++] = '\\'; /* not an escape: kept as it is */
		}
		s[o++] = ch;
	}
	s[o] = '\0';
	return o;
}

/* A line of a manifest with a #columns header: exactly c->n columns. */
static int columns_line(rf_index *idx, char *line, const columns *c, size_t *weights_cap,
			const char *file, unsigned long lineno, char *err, size_t errlen);

/* Keeps idx->weights as long as idx->entries. */
static int grow_weights(rf_index *idx, size_t *cap)
{
	if (*cap >= idx->cap)
		return 0;
	double *w = realloc(idx->weights, idx->cap * sizeof(*w));
	if (!w)
		return -ENOMEM;
	idx->weights = w;
	*cap = idx->cap;
	return 0;
}

/* Adds the sample at path (stat'ed now: a missing file is kept with its
 * error, a bad sample when drawn). */
static int add_sample(rf_index *idx, const char *path, int32_t label, int weighted,
		      double weight, size_t *weights_cap, const char *file, unsigned long lineno,
		      char *err, size_t errlen)
{
	size_t len = strlen(path);
	if (len >= PATH_MAX) {
		rfi_fmt(err, errlen, "manifest '%s' line %lu: path too long", file, lineno);
		return RF_EINDEX;
	}
	struct stat st;
	int64_t size;
	if (fstatat(idx->root_fd, path, &st, 0) != 0)
		size = -(int64_t)errno;
	else if (!S_ISREG(st.st_mode))
		size = S_ISDIR(st.st_mode) ? -(int64_t)EISDIR : -(int64_t)EINVAL;
	else
		size = (int64_t)st.st_size;
	int ret = rfi_index_add(idx, path, len, size, label);
	if (!ret && weighted)
		ret = grow_weights(idx, weights_cap);
	if (!ret && weighted)
		idx->weights[idx->count - 1] = weight;
	return ret;
}

static int columns_line(rf_index *idx, char *line, const columns *c, size_t *weights_cap,
			const char *file, unsigned long lineno, char *err, size_t errlen)
{
	char *col[COLUMNS_MAX];
	int n = 0;
	for (char *p = line;; n++) {
		if (n == c->n) {
			n++; /* one too many */
			break;
		}
		col[n] = p;
		char *tab = strchr(p, '\t');
		if (!tab) {
			n++;
			break;
		}
		*tab = '\0';
		p = tab + 1;
	}
	if (n != c->n) {
		rfi_fmt(err, errlen, "manifest '%s' line %lu: expected %d tab-separated columns, as its "
		       "#columns line names", file, lineno, c->n);
		return RF_EINDEX;
	}
	int32_t label;
	double weight = 0;
	if (parse_label(col[c->label], &label)) {
		rfi_fmt(err, errlen, "manifest '%s' line %lu: label '%s' is not an integer in [0, 2^31)",
		       file, lineno, col[c->label]);
		return RF_EINDEX;
	}
	if (c->weight >= 0 && parse_weight(col[c->weight], &weight)) {
		rfi_fmt(err, errlen, "manifest '%s' line %lu: weight '%s' is not a finite number >= 0",
		       file, lineno, col[c->weight]);
		return RF_EINDEX;
	}
	int ret = add_sample(idx, col[c->path], label, c->weight >= 0, weight, weights_cap, file,
			     lineno, err, errlen);
	for (int k = 0; k < c->n && !ret; k++) {
		if (c->field[k] < 0)
			continue;
		size_t len = unescape(col[k]);
		ret = rfi_index_add_extra_inline(idx, (uint32_t)c->field[k], col[k], len);
	}
	return ret;
}

/* A line of the classic format: path<TAB>label, or path<TAB>label<TAB>weight
 * when the manifest has weights (*weighted: -1 until the first line says). */
static int classic_line(rf_index *idx, char *line, int *weighted, size_t *weights_cap,
			const char *file, unsigned long lineno, char *err, size_t errlen)
{
	int32_t label;
	double weight = 0;
	if (*weighted != 0) {
		int ok = split_weighted(line, &label, &weight) == 0;
		if (*weighted == -1)
			*weighted = ok;
		else if (!ok) {
			rfi_fmt(err, errlen, "manifest '%s' line %lu: expected 'path<TAB>label"
			       "<TAB>weight' (the first line has a weight, so every line needs "
			       "one: a finite number >= 0)", file, lineno);
			return RF_EINDEX;
		}
	}
	if (!*weighted) {
		char *tab = strrchr(line, '\t');
		if (!tab || tab == line) {
			rfi_fmt(err, errlen, "manifest '%s' line %lu: expected 'path<TAB>label'",
			       file, lineno);
			return RF_EINDEX;
		}
		*tab = '\0';
		if (parse_label(tab + 1, &label)) {
			rfi_fmt(err, errlen, "manifest '%s' line %lu: label '%s' is not an "
			       "integer in [0, 2^31)", file, lineno, tab + 1);
			return RF_EINDEX;
		}
	}
	return add_sample(idx, line, label, *weighted, weight, weights_cap, file, lineno, err,
			  errlen);
}

/* The manifest's folder as the root, the manifest itself stamped (its
 * absolute path), and the file opened into *f. */
static int open_manifest(rf_index *idx, const char *file, FILE **f, char *err, size_t errlen)
{
	*f = NULL;
	char *copy = strdup(file);
	if (!copy)
		return -ENOMEM;
	int ret = rfi_index_set_root(idx, dirname(copy), err, errlen);
	free(copy);
	if (ret)
		return ret;
	char *real = realpath(file, NULL);
	ret = real ? rfi_index_stamp_add(idx, AT_FDCWD, real, real) : -errno;
	free(real);
	if (ret)
		return ret;
	int fd = rfi_open_regular(AT_FDCWD, file, "manifest", err, errlen);
	*f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!*f) {
		if (fd >= 0) {
			close(fd);
			return -ENOMEM;
		}
		return fd;
	}
	return 0;
}

int rfi_files_manifest(rf_index *idx, const char *file, char *err, size_t errlen)
{
	FILE *f;
	int ret = open_manifest(idx, file, &f, err, errlen);
	if (ret)
		return ret;
	char *line = NULL;
	size_t cap = 0, weights_cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	int weighted = -1; /* unknown until the first line */
	columns cols = { 0 };
	while (!ret && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (weighted == -1 && !cols.n && !strncmp(line, "#columns:", 9)) {
			ret = parse_columns(idx, line, &cols, file, err, errlen);
			weighted = cols.weight >= 0;
		} else if (line[strspn(line, " \t")] == '\0' || line[0] == '#') {
			continue; /* blank (or only spaces and tabs), or a comment */
		} else if (cols.n) {
			ret = columns_line(idx, line, &cols, &weights_cap, file, lineno, err, errlen);
		} else {
			ret = classic_line(idx, line, &weighted, &weights_cap, file, lineno, err,
					   errlen);
		}
	}
	free(line);
	fclose(f);
	return ret;
}
