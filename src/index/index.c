/* index.c - index storage (records + path arena) and the entry point that
 * picks the directory walk or the manifest parser. */
#define _GNU_SOURCE
#include "index/index.h"
#include "index/index_build.h"
#include "index/tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringfeed.h"
#include "util/util.h"

int rf_index_add(rf_index *idx, const char *path, size_t len, int64_t size, int32_t label)
{
	if (idx->count == idx->cap) {
		size_t cap = idx->cap ? idx->cap * 2 : 1024;
		rf_index_entry *e = realloc(idx->entries, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		idx->entries = e;
		idx->cap = cap;
	}
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
	rf_index_entry *e = &idx->entries[idx->count++];
	e->path_off = idx->paths_len;
	e->path_len = (uint32_t)len;
	e->size = size;
	e->label = label;
	if (idx->progress && idx->count % 4096 == 0)
		idx->progress(idx->progress_user, idx->count);
	memcpy(idx->paths + idx->paths_len, path, len);
	idx->paths[idx->paths_len + len] = '\0';
	idx->paths_len += len + 1;
	return 0;
}

static int finish(rf_index *idx, const char *source, const struct stat *st, char *err,
		  size_t errlen);

int rf_index_add_member(rf_index *idx, uint64_t offset, uint32_t shard, uint32_t flags)
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

const char *rf_index_name(const rf_index *idx, uint64_t i, char *buf, size_t len)
{
	if (idx->tokens) {
		uint32_t shard;
		uint64_t token;
		rf_tokens_locate(idx->tokens, i, &shard, &token);
		rf_fmt(buf, len, "%s:tokens %llu..%llu (window %llu)", idx->shards[shard],
		       (unsigned long long)token,
		       (unsigned long long)(token + idx->tokens->seq_len), (unsigned long long)i);
	} else if (idx->members)
		rf_fmt(buf, len, "%s:%s", idx->shards[idx->members[i].shard], rf_index_path(idx, i));
	else
		rf_fmt(buf, len, "%s", rf_index_path(idx, i));
	return buf;
}

const char *rf_index_bad_reason(int64_t size, char *buf, size_t len)
{
	switch (size) {
	case RF_INDEX_NO_IMAGE: return "no image member (jpg, jpeg)";
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
		rf_fmt(buf, len, "cannot stat: %s", strerror((int)-size));
		return buf;
	}
}

/* The first entry of a walk that is a loose sample of its own (not a
 * .tar or a zstd.dict taken in raw mode). */
static const char *first_loose(const rf_index *idx)
{
	for (size_t i = 0; i < idx->count; i++) {
		const char *p = rf_index_path(idx, i), *base = strrchr(p, '/');
		size_t n = strlen(p);
		base = base ? base + 1 : p;
		if (!(n > 4 && !strcmp(p + n - 4, ".tar")) && strcmp(base, "zstd.dict"))
			return p;
	}
	return "";
}

/* A folder: tar shards or loose files, as any_name's kind bits say, or
 * (neither bit) as what it holds says. Loose files are walked first (an
 * ImageFolder is walked once, as before); only when the walk saw .tar
 * files is the folder looked at as shards. A folder that holds both, or
 * .tar files where shards do not go, is refused with what was found:
 * deciding the kind must never drop the files of the other. */
static int build_folder(rf_index *idx, const char *source, int any_name, rf_log_level log_level,
			char *err, size_t errlen)
{
	int raw = any_name & RF_INDEX_RAW;
	int ret;
	if (any_name & RF_INDEX_TAR) {
		ret = rf_index_shard_folder(idx, source, RF_SHARDS_TAR, err, errlen);
		if (ret == 0) {
			rf_fmt(err, errlen, "source '%s': no .tar shards in it or in its class folders "
			       "(source_kind = tar)", source);
			return RF_EEMPTY;
		}
		return ret == 1 ? rf_index_scan_shards(idx, raw, log_level, err, errlen) : ret;
	}
	ret = rf_index_walk_imagefolder(idx, source, any_name, err, errlen);
	if (ret || (any_name & RF_INDEX_FILES) || !idx->walk_tars)
		return ret;
	uint64_t tars = idx->walk_tars;
	uint64_t loose = idx->count - (raw ? tars + idx->walk_dicts : 0);
	char tar[256], file[256];
	rf_fmt(tar, sizeof(tar), "%s", idx->walk_first_tar);
	rf_fmt(file, sizeof(file), "%s", first_loose(idx));
	if (loose) {
		rf_fmt(err, errlen, "source '%s' holds both .tar files (%llu, such as '%s') and "
		       "loose %s (%llu, such as '%s'): say which it is with source_kind = tar or "
		       "files (--source-kind tar|files)", source, (unsigned long long)tars, tar,
		       raw ? "files" : "images", (unsigned long long)loose, file);
		return RF_EINDEX;
	}
	/* only .tar files: a shard source, if they are where shards go */
	rf_progress_fn progress = idx->progress;
	void *user = idx->progress_user;
	rf_index_free(idx);
	idx->progress = progress;
	idx->progress_user = user;
	idx->any_name = any_name;
	ret = rf_index_shard_folder(idx, source, RF_SHARDS_TAR, err, errlen);
	if (ret < 0)
		return ret;
	if (ret == 0 || idx->nshards != tars) {
		rf_fmt(err, errlen, "source '%s': %llu of its %llu .tar files (such as '%s') are not "
		       "where shards go (in the folder itself, or else in its class folders): move "
		       "them, or say what the source is with source_kind = tar or files "
		       "(--source-kind tar|files)", source,
		       (unsigned long long)(tars - (ret ? idx->nshards : 0)), (unsigned long long)tars,
		       tar);
		return RF_EINDEX;
	}
	return rf_index_scan_shards(idx, raw, log_level, err, errlen);
}

int rf_index_build(rf_index *idx, const char *source, int any_name, char *err, size_t errlen)
{
	return rf_index_build_progress(idx, source, any_name, NULL, NULL, RF_LOG_WARN, err, errlen);
}

int rf_index_build_progress(rf_index *idx, const char *source, int any_name, rf_progress_fn progress,
			    void *user, rf_log_level log_level, char *err, size_t errlen)
{
	memset(idx, 0, sizeof(*idx));
	idx->root_fd = -1;
	idx->progress = progress;
	idx->progress_user = user;
	if (!source || !*source) {
		rf_fmt(err, errlen, "source: not set");
		return -EINVAL;
	}
	struct stat st;
	memset(&st, 0, sizeof(st));
	int ret;
	idx->any_name = any_name;
	if (stat(source, &st) != 0) {
		int e = errno;
		/* not a path: a brace pattern of shard names, or missing */
		ret = e == ENOENT ? rf_index_shard_pattern(idx, source, RF_SHARDS_TAR, err, errlen) : 0;
		if (ret == 0) {
			rf_fmt(err, errlen, "source '%s': %s", source, strerror(e));
			ret = -e;
		} else if (ret == 1) {
			ret = rf_index_scan_shards(idx, any_name & RF_INDEX_RAW, log_level, err, errlen);
		}
		if (ret) {
			rf_index_free(idx);
			return ret;
		}
		return finish(idx, source, &st, err, errlen);
	}
	if (S_ISDIR(st.st_mode)) {
		ret = build_folder(idx, source, any_name, log_level, err, errlen);
	} else if (S_ISREG(st.st_mode) && rf_index_is_shard_list(source, RF_SHARDS_TAR)) {
		ret = rf_index_shard_list(idx, source, RF_SHARDS_TAR, err, errlen);
		if (!ret)
			ret = rf_index_scan_shards(idx, any_name & RF_INDEX_RAW, log_level, err, errlen);
	} else if (S_ISREG(st.st_mode)) {
		ret = rf_index_parse_manifest(idx, source, err, errlen);
	} else {
		rf_fmt(err, errlen, "source '%s': neither a directory nor a manifest file", source);
		ret = RF_EINDEX;
	}
	if (ret != 0) {
		rf_index_free(idx);
		return ret;
	}
	return finish(idx, source, &st, err, errlen);
}

/* Refuses an empty index, and trims the growth slack: the index lives as
 * long as the loader. */
static int finish(rf_index *idx, const char *source, const struct stat *st, char *err,
		  size_t errlen)
{
	if (idx->count == 0) {
		rf_fmt(err, errlen, "source '%s': no samples found%s", source,
		       idx->nshards ? " in its shards"
		       : S_ISDIR(st->st_mode) ? " (ImageFolder layout: CLASS/.../*.jpg)" : "");
		rf_index_free(idx);
		return RF_EEMPTY;
	}
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
	return 0;
}

void rf_index_lost(const rf_index *idx, uint64_t *spans, uint64_t *bytes)
{
	*spans = *bytes = 0;
	if (!idx->members)
		return;
	for (size_t i = 0; i < idx->count; i++) {
		if (!RF_INDEX_IS_LOST(idx->entries[i].size))
			continue;
		unsigned long long a, b;
		(*spans)++;
		if (sscanf(rf_index_path(idx, i), "bytes %llu..%llu", &a, &b) == 2 && b >= a)
			*bytes += b - a;
	}
}

void rf_index_free(rf_index *idx)
{
	if (!idx)
		return;
	free(idx->entries);
	free(idx->paths);
	free(idx->weights);
	free(idx->members);
	for (size_t i = 0; i < idx->nshards; i++)
		free(idx->shards[i]);
	free(idx->shards);
	free(idx->shard_labels);
	rf_tokens_free(idx->tokens);
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

size_t rf_index_memory(const rf_index *idx)
{
	size_t n = idx->cap * sizeof(rf_index_entry) + idx->paths_cap;
	for (size_t i = 0; i < idx->nstamps; i++)
		n += sizeof(rf_index_stamp) + strlen(idx->stamps[i].path) + 1;
	if (idx->weights)
		n += idx->count * sizeof(double);
	n += idx->members_cap * sizeof(rf_index_member);
	for (size_t i = 0; i < idx->nshards; i++)
		n += strlen(idx->shards[i]) + 1 + sizeof(char *) + sizeof(int32_t);
	for (int i = 0; i < idx->nclasses; i++)
		n += strlen(idx->classes[i]) + 1 + sizeof(char *);
	if (idx->tokens)
		n += rf_tokens_memory(idx->tokens);
	return n;
}

uint64_t rf_index_samples(const rf_index *idx)
{
	return idx->tokens ? idx->tokens->windows : idx->count;
}

int rf_index_stamp_add(rf_index *idx, int dirfd, const char *rel, const char *name)
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
int rf_index_set_root(rf_index *idx, const char *root, char *err, size_t errlen)
{
	idx->root = strdup(root);
	if (!idx->root)
		return -ENOMEM;
	idx->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (idx->root_fd < 0) {
		int e = errno;
		rf_fmt(err, errlen, "'%s': %s", root, strerror(e));
		return -e;
	}
	return 0;
}
