/* extras.c - a sample's other members (rf_index_extra): the KEY.txt and
 * KEY.json beside KEY.jpg, recorded while an index is built and tied to
 * their samples once the records are in their final order. The builders
 * (the shard scan, the walk) add a sample's extras right after the sample;
 * a walk then sorts its records, so each extra carries its sample's path
 * offset (unique, and moved with the record) until rfi_index_extras_settle()
 * turns that into extra_first. Read-only and shared after the build. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "index/index.h"
#include "index/index_build.h"
#include "util/util.h"

int rfi_index_extra_name(rf_index *idx, const char *ext, size_t len)
{
	for (uint32_t i = 0; i < idx->nextra_names; i++)
		if (!strncasecmp(idx->extra_names[i], ext, len) && !idx->extra_names[i][len])
			return (int)i;
	if (idx->nextra_names == RF_EXTRA_NAMES_MAX)
		return -E2BIG;
	if ((idx->nextra_names & (idx->nextra_names - 1)) == 0) { /* 0, 1, 2, 4, ...: grow */
		uint32_t cap = idx->nextra_names ? idx->nextra_names * 2 : 8;
		char **n = realloc(idx->extra_names, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		idx->extra_names = n;
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		copy[i] = (char)tolower((unsigned char)ext[i]);
	copy[len] = '\0';
	idx->extra_names[idx->nextra_names] = copy;
	return (int)idx->nextra_names++;
}

int rfi_index_extra_find(const rf_index *idx, const char *ext)
{
	for (uint32_t i = 0; i < idx->nextra_names; i++)
		if (!strcasecmp(idx->extra_names[i], ext))
			return (int)i;
	return -1;
}

void rfi_index_unkept(rf_index *idx, int why, const char *fmt, ...)
{
	if (idx->unkept[why]++)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(idx->unkept_first[why], sizeof(idx->unkept_first[why]), fmt, ap);
	va_end(ap);
}

void rfi_index_warn_unkept(const rf_index *idx, const char *source, rf_log_level log_level)
{
	if (idx->unkept[RF_UNKEPT_NAMES])
		rfi_log(log_level, RF_LOG_WARN, "source '%s': %llu member%s not indexed, such as %s: "
		       "their extensions come after the %d distinct ones an index keeps "
		       "(RF_EXTRA_NAMES_MAX), so no field can name them and `ringfeed pack` "
		       "refuses the source", source, (unsigned long long)idx->unkept[RF_UNKEPT_NAMES],
		       idx->unkept[RF_UNKEPT_NAMES] == 1 ? "" : "s", idx->unkept_first[RF_UNKEPT_NAMES],
		       RF_EXTRA_NAMES_MAX);
	if (idx->unkept[RF_UNKEPT_LONG])
		rfi_log(log_level, RF_LOG_WARN, "source '%s': %llu member%s not indexed, such as %s: "
		       "their extensions are %d bytes or longer, longer than a field's name can be "
		       "(RF_EXTRA_EXT), so no field could ask for them",
		       source, (unsigned long long)idx->unkept[RF_UNKEPT_LONG],
		       idx->unkept[RF_UNKEPT_LONG] == 1 ? "" : "s", idx->unkept_first[RF_UNKEPT_LONG],
		       RF_EXTRA_EXT);
}

int rfi_index_add_extra(rf_index *idx, uint32_t name, uint64_t at, uint64_t size, int how)
{
	return rfi_index_add_extra_of(idx, idx->count - 1, name, at, size, how);
}

int rfi_index_add_extra_of(rf_index *idx, size_t entry, uint32_t name, uint64_t at,
			  uint64_t size, int how)
{
	if (idx->nextras == UINT32_MAX - 1)
		return -EOVERFLOW; /* extra_first is 32-bit */
	if (idx->nextras == idx->extras_cap) {
		size_t cap = idx->extras_cap ? idx->extras_cap * 2 : 1024;
		rf_index_extra *x = realloc(idx->extras, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		idx->extras = x;
		uint64_t *o = realloc(idx->extra_owner, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		idx->extra_owner = o;
		idx->extras_cap = cap;
	}
	idx->extra_owner[idx->nextras] = idx->entries[entry].path_off;
	idx->extras[idx->nextras++] = (rf_index_extra){
		.at = at, .size = size >= UINT32_MAX ? UINT32_MAX : (uint32_t)size,
		.name = (uint16_t)name, .how = (uint16_t)how };
	return 0;
}

int rfi_index_add_extra_file(rf_index *idx, size_t entry, const char *path, size_t len,
			    int64_t size)
{
	const char *base = memrchr(path, '/', len);
	base = base ? base + 1 : path;
	const char *dot = memchr(base, '.', len - (size_t)(base - path));
	if (!dot || size < 0)
		return 0; /* no extension, or gone since it was listed: nothing to deliver */
	int name = rfi_index_extra_name(idx, dot + 1, len - (size_t)(dot + 1 - path));
	if (name == -E2BIG) { /* past the names kept: said once the index is built */
		rfi_index_unkept(idx, RF_UNKEPT_NAMES, "%.*s", (int)len, path);
		return 0;
	}
	if (name < 0)
		return name;
	uint64_t at;
	int ret = rfi_index_add_path(idx, path, len, &at);
	return ret ? ret : rfi_index_add_extra_of(idx, entry, (uint32_t)name, at, (uint64_t)size,
						 RF_EXTRA_FILE);
}

int rfi_index_add_extra_inline(rf_index *idx, uint32_t name, const char *bytes, size_t len)
{
	uint64_t at;
	int ret = rfi_index_add_path(idx, bytes, len, &at);
	return ret ? ret : rfi_index_add_extra(idx, name, at, len, RF_EXTRA_INLINE);
}

/* A record's position by its path offset: the records sorted by it. */
typedef struct owner_pos {
	uint64_t path_off;
	uint32_t pos;
} owner_pos;

static int cmp_owner(const void *a, const void *b)
{
	const owner_pos *x = a, *y = b;
	return x->path_off < y->path_off ? -1 : x->path_off > y->path_off;
}

int rfi_index_extras_settle(rf_index *idx)
{
	if (!idx->extra_owner)
		return 0;
	int ret = -ENOMEM;
	owner_pos *by_off = malloc(idx->count * sizeof(*by_off));
	uint32_t *first = calloc(idx->count + 1, sizeof(*first));
	uint32_t *pos = malloc(idx->nextras * sizeof(*pos) + 1);
	rf_index_extra *sorted = malloc(idx->nextras * sizeof(*sorted) + 1);
	if (!by_off || !first || !pos || !sorted)
		goto out;
	for (size_t i = 0; i < idx->count; i++)
		by_off[i] = (owner_pos){ idx->entries[i].path_off, (uint32_t)i };
	qsort(by_off, idx->count, sizeof(*by_off), cmp_owner);
	/* each extra's record, then a counting sort by record (stable: a
	 * sample's extras keep the order they were found in) */
	for (size_t k = 0; k < idx->nextras; k++) {
		owner_pos key = { idx->extra_owner[k], 0 };
		owner_pos *hit = bsearch(&key, by_off, idx->count, sizeof(*by_off), cmp_owner);
		pos[k] = hit ? hit->pos : 0; /* always found: added after its record */
		first[pos[k] + 1]++;
	}
	for (size_t i = 0; i < idx->count; i++)
		first[i + 1] += first[i];
	for (size_t k = 0; k < idx->nextras; k++)
		sorted[first[pos[k]]++] = idx->extras[k];
	memmove(first + 1, first, idx->count * sizeof(*first)); /* back to each start */
	first[0] = 0;
	free(idx->extras);
	idx->extras = sorted;
	idx->extras_cap = idx->nextras;
	sorted = NULL;
	free(idx->extra_first);
	idx->extra_first = first; /* count + 1 entries: the last is not read */
	first = NULL;
	free(idx->extra_owner);
	idx->extra_owner = NULL;
	ret = 0;
out:
	free(by_off);
	free(first);
	free(pos);
	free(sorted);
	return ret;
}

void rfi_index_extras_free(rf_index *idx)
{
	free(idx->extras);
	free(idx->extra_first);
	free(idx->extra_owner);
	for (uint32_t i = 0; i < idx->nextra_names; i++)
		free(idx->extra_names[i]);
	free(idx->extra_names);
	idx->extras = NULL;
	idx->extra_first = NULL;
	idx->extra_owner = NULL;
	idx->extra_names = NULL;
	idx->nextras = idx->extras_cap = 0;
	idx->nextra_names = 0;
}

size_t rfi_index_extras_memory(const rf_index *idx)
{
	size_t n = idx->extras_cap * sizeof(rf_index_extra);
	if (idx->extra_first)
		n += idx->count * sizeof(uint32_t);
	if (idx->extra_owner)
		n += idx->extras_cap * sizeof(uint64_t);
	for (uint32_t i = 0; i < idx->nextra_names; i++)
		n += strlen(idx->extra_names[i]) + 1 + sizeof(char *);
	return n;
}
