/* index.c - index storage: records, the path arena, stamps, and the names
 * and reasons of records. What fills an index (the walk, the manifest
 * parser, the shard scan) calls in here; nothing here calls out (the kinds
 * that pick one are src/source/). */
#define _GNU_SOURCE
#include "index/index.h"
#include "index/index_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringfeed.h"
#include "util/util.h"

int rfi_index_add_path(rf_index *idx, const char *path, size_t len, uint64_t *off)
{
	if (idx->paths_len + len + 1 > idx->paths_cap) {
		size_t cap = idx->paths_cap ? idx->paths_cap : 64 * 1024;
		while (cap < idx->paths_len + len + 1)
			cap *= 2;
		char *p = realloc(idx->paths, cap);
		if (!p)
			return -ENOMEM;
		idx->paths = p;
		idx->paths_cap = cap;
	}
	*off = idx->paths_len;
	memcpy(idx->paths + idx->paths_len, path, len);
	idx->paths[idx->paths_len + len] = '\0';
	idx->paths_len += len + 1;
	return 0;
}

int rfi_index_add(rf_index *idx, const char *path, size_t len, int64_t size, int32_t label)
{
	if (idx->count == idx->cap) {
		size_t cap = idx->cap ? idx->cap * 2 : 1024;
		rf_index_entry *e = realloc(idx->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		idx->entries = e;
		idx->cap = cap;
	}
	uint64_t off;
	int ret = rfi_index_add_path(idx, path, len, &off);
	if (ret)
		return ret;
	rf_index_entry *e = &idx->entries[idx->count++];
	e->path_off = off;
	e->path_len = (uint32_t)len;
	e->size = size;
	e->label = label;
	if (idx->progress && idx->count % 4096 == 0)
		idx->progress(idx->progress_user, idx->count);
	return 0;
}

int rfi_index_add_member(rf_index *idx, uint64_t offset, uint32_t shard, uint32_t flags)
{
	/* entries were added first: one member beside each */
	if (idx->members_cap < idx->cap) {
		rf_index_member *m = realloc(idx->members, idx->cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		idx->members = m;
		idx->members_cap = idx->cap;
	}
	idx->members[idx->count - 1] = (rf_index_member){ offset, shard, flags };
	return 0;
}

const char *rfi_index_name(const rf_index *idx, uint64_t i, char *buf, size_t len)
{
	if (idx->members)
		rfi_fmt(buf, len, "%s:%s", idx->shards[idx->members[i].shard], rfi_index_path(idx, i));
	else
		rfi_fmt(buf, len, "%s", rfi_index_path(idx, i));
	return buf;
}

const char *rfi_index_shard_shown(const rf_index *idx, size_t i, char *buf, size_t len)
{
	const char *sh = idx->shards[i];
	if (rfi_index_is_url(sh) || !strcmp(idx->root, ".")) /* a list's line: whole */
		rfi_fmt(buf, len, "%s", sh);
	else
		rfi_fmt(buf, len, "%s/%s", idx->root, sh);
	return buf;
}

int rfi_index_is_url(const char *source)
{
	return rfi_transport_is_remote(source);
}

int rfi_index_image_ext(const char *ext)
{
	static const char *const exts[] = { "jpg", "jpeg", "png", "webp" };
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++)
		if (!strcasecmp(ext, exts[i]))
			return 1;
	return 0;
}

const char *rfi_index_bad_reason(int64_t size, char *buf, size_t len)
{
	switch (size) {
	case RF_INDEX_NO_IMAGE: return "no image member (jpg, jpeg, png, webp)";
	case RF_INDEX_BAD_LABEL: return "its cls member is not a label (decimal text, 0 to 2147483647)";
	case RF_INDEX_TRUNCATED: return "the member runs past the end of the shard (truncated)";
	case RF_INDEX_TWO_LABELS: return "two cls members";
	case RF_INDEX_TWO_IMAGES: return "two members of its image's extension (webdataset refuses "
					"such a sample)";
	case RF_INDEX_NO_MEMBER: return "no member besides cls";
	case RF_INDEX_NO_LABEL: return "no cls member, in a source whose other samples have one";
	case RF_INDEX_DAMAGED: return "damaged: these bytes of the shard are not tar members (a "
				      "corrupt header and what follows it up to the next valid one); "
				      "the samples in them are lost";
	case RF_INDEX_UNENDED: return "the shard ends without its end-of-archive blocks: cut "
				      "there, the samples after it are lost";
	default:
		rfi_fmt(buf, len, "cannot stat: %s", strerror((int)-size));
		return buf;
	}
}

void rfi_index_trim(rf_index *idx)
{
	rf_index_entry *e = realloc(idx->entries, idx->count * sizeof(*e));
	char *p = realloc(idx->paths, idx->paths_len);
	if (e) {
		idx->entries = e;
		idx->cap = idx->count;
	}
	if (p) {
		idx->paths = p;
		idx->paths_cap = idx->paths_len;
	}
	if (idx->weights) {
		double *w = realloc(idx->weights, idx->count * sizeof(*w));
		if (w)
			idx->weights = w;
	}
	if (idx->members) {
		rf_index_member *m = realloc(idx->members, idx->count * sizeof(*m));
		if (m) {
			idx->members = m;
			idx->members_cap = idx->count;
		}
	}
}

void rfi_index_lost(const rf_index *idx, uint64_t *spans, uint64_t *bytes)
{
	*spans = *bytes = 0;
	if (!idx->members)
		return;
	for (size_t i = 0; i < idx->count; i++) {
		if (!RF_INDEX_IS_LOST(idx->entries[i].size))
			continue;
		unsigned long long a, b;
		(*spans)++;
		if (sscanf(rfi_index_path(idx, i), "bytes %llu..%llu", &a, &b) == 2 && b >= a)
			*bytes += b - a;
	}
}

void rfi_index_free(rf_index *idx)
{
	if (!idx)
		return;
	free(idx->entries);
	free(idx->paths);
	free(idx->weights);
	free(idx->members);
	rfi_index_extras_free(idx);
	for (size_t i = 0; i < idx->nshards; i++)
		free(idx->shards[i]);
	free(idx->shards);
	free(idx->shard_labels);
	for (size_t i = 0; idx->urls && i < idx->nshards; i++)
		free(idx->urls[i]);
	free(idx->urls);
	free(idx->etags);
	free(idx->shard_sizes);
	free(idx->kind_blob);
	rfi_transport_free(idx->transport);
	free(idx->root);
	if (idx->root_fd >= 0)
		close(idx->root_fd);
	for (int i = 0; i < idx->nclasses; i++)
		free(idx->classes[i]);
	free(idx->classes);
	for (size_t i = 0; i < idx->nstamps; i++)
		free(idx->stamps[i].path);
	free(idx->stamps);
	memset(idx, 0, sizeof(*idx));
	idx->root_fd = -1;
}

size_t rfi_index_memory(const rf_index *idx)
{
	size_t n = idx->cap * sizeof(rf_index_entry) + idx->paths_cap;
	for (size_t i = 0; i < idx->nstamps; i++)
		n += sizeof(rf_index_stamp) + strlen(idx->stamps[i].path) + 1;
	if (idx->weights)
		n += idx->count * sizeof(double);
	n += idx->members_cap * sizeof(rf_index_member);
	n += rfi_index_extras_memory(idx);
	for (size_t i = 0; i < idx->nshards; i++)
		n += strlen(idx->shards[i]) + 1 + sizeof(char *) + sizeof(int32_t);
	for (int i = 0; i < idx->nclasses; i++)
		n += strlen(idx->classes[i]) + 1 + sizeof(char *);
	return n;
}

int rfi_index_stamp_add(rf_index *idx, int dirfd, const char *rel, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, name[0] ? 0 : AT_EMPTY_PATH) != 0)
		return -errno;
	if (idx->nstamps == idx->cap_stamps) {
		size_t cap = idx->cap_stamps ? idx->cap_stamps * 2 : 64;
		rf_index_stamp *s = realloc(idx->stamps, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		idx->stamps = s;
		idx->cap_stamps = cap;
	}
	char *p = strdup(rel);
	if (!p)
		return -ENOMEM;
	idx->stamps[idx->nstamps++] = (rf_index_stamp){ .path = p, .mtime_sec = st.st_mtim.tv_sec,
						       .mtime_nsec = st.st_mtim.tv_nsec,
						       .ino = (uint64_t)st.st_ino };
	return 0;
}

/* Opens root as the folder relative paths start from. */
int rfi_index_set_root(rf_index *idx, const char *root, char *err, size_t errlen)
{
	idx->root = strdup(root);
	if (!idx->root)
		return -ENOMEM;
	idx->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (idx->root_fd < 0) {
		int e = errno;
		rfi_fmt(err, errlen, "'%s': %s", root, strerror(e));
		return -e;
	}
	return 0;
}
