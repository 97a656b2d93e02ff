/* manifest.c - builds the index from a manifest file: one "path<TAB>label"
 * per line, label a non-negative integer, relative paths resolved against the
 * manifest's folder. Blank lines and lines starting with '#' are skipped.
 * A path that cannot be stat'ed is kept with its error: it becomes a bad
 * sample when read, so that one missing file never stops a run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index_build.h"
#include "ringfeed.h"
#include "util/util.h"

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
	FILE *f = fopen(file, "re");
	if (!f) {
		int e = errno;
		rf_fmt(err, errlen, "manifest '%s': %s", file, strerror(e));
		return -e;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	while ((n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		char *tab = strrchr(line, '\t');
		if (!tab || tab == line) {
			rf_fmt(err, errlen, "manifest '%s' line %lu: expected 'path<TAB>label'",
			       file, lineno);
			ret = RF_EINDEX;
			break;
		}
		*tab = '\0';
		char *end;
		errno = 0;
		long label = strtol(tab + 1, &end, 10);
		if (errno || end == tab + 1 || *end || label < 0 || label > INT32_MAX) {
			rf_fmt(err, errlen, "manifest '%s' line %lu: label '%s' is not an integer in [0, 2^31)",
			       file, lineno, tab + 1);
			ret = RF_EINDEX;
			break;
		}
		size_t len = (size_t)(tab - line);
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
		ret = rf_index_add(idx, line, len, size, (int32_t)label);
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}
