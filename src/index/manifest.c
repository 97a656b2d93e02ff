/* manifest.c - builds the index from a manifest file: one "path<TAB>label"
 * or "path<TAB>label<TAB>weight" per line, label a non-negative integer,
 * weight a finite number >= 0 (for the weighted sampler), relative paths
 * resolved against the manifest's folder. The first line decides whether the
 * manifest has weights; then every line has them, or none does. Fields are
 * split at the last tabs, so a path may contain a tab. Blank lines and lines
 * starting with '#' are skipped. A path that cannot be stat'ed is kept with
 * its error: it becomes a bad sample when read, so that one missing file
 * never stops a run. */
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

int rf_index_parse_manifest(rf_index *idx, const char *file, char *err, size_t errlen)
{
	char *copy = strdup(file);
	if (!copy)
		return -ENOMEM;
	int ret = rf_index_set_root(idx, dirname(copy), err, errlen);
	free(copy);
	if (ret)
		return ret;

	char *real = realpath(file, NULL);
	ret = real ? rf_index_stamp_add(idx, AT_FDCWD, real, real) : -errno;
	free(real);
	if (ret)
		return ret;
	int fd = rf_open_regular(AT_FDCWD, file, "manifest", err, errlen);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0) {
			close(fd);
			return -ENOMEM;
		}
		return fd;
	}
	char *line = NULL;
	size_t cap = 0, weights_cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	int weighted = -1; /* unknown until the first line */
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (line[strspn(line, " \t")] == '\0' || line[0] == '#')
			continue; /* blank (or only spaces and tabs), or a comment */
		int32_t label;
		double weight = 0;
		if (weighted != 0) {
			int ok = split_weighted(line, &label, &weight) == 0;
			if (weighted == -1)
				weighted = ok;
			else if (!ok) {
				rf_fmt(err, errlen, "manifest '%s' line %lu: expected 'path<TAB>label"
				       "<TAB>weight' (the first line has a weight, so every line needs "
				       "one: a finite number >= 0)", file, lineno);
				ret = RF_EINDEX;
				break;
			}
		}
		if (!weighted) {
			char *tab = strrchr(line, '\t');
			if (!tab || tab == line) {
				rf_fmt(err, errlen, "manifest '%s' line %lu: expected 'path<TAB>label'",
				       file, lineno);
				ret = RF_EINDEX;
				break;
			}
			*tab = '\0';
			if (parse_label(tab + 1, &label)) {
				rf_fmt(err, errlen, "manifest '%s' line %lu: label '%s' is not an "
				       "integer in [0, 2^31)", file, lineno, tab + 1);
				ret = RF_EINDEX;
				break;
			}
		}
		size_t len = strlen(line);
		if (len >= PATH_MAX) {
			rf_fmt(err, errlen, "manifest '%s' line %lu: path too long", file, lineno);
			ret = RF_EINDEX;
			break;
		}
		struct stat st;
		int64_t size;
		if (fstatat(idx->root_fd, line, &st, 0) != 0)
			size = -(int64_t)errno;
		else if (!S_ISREG(st.st_mode))
			size = S_ISDIR(st.st_mode) ? -(int64_t)EISDIR : -(int64_t)EINVAL;
		else
			size = (int64_t)st.st_size;
		ret = rf_index_add(idx, line, len, size, label);
		if (!ret && weighted)
			ret = grow_weights(idx, &weights_cap);
		if (ret)
			break;
		if (weighted)
			idx->weights[idx->count - 1] = weight;
	}
	free(line);
	fclose(f);
	return ret;
}
