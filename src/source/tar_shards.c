/* tar_shards.c - the tar shards kind (WebDataset): a sample is the members
 * of one key (KEY.jpg or, raw, KEY.bin; KEY.cls its label); its record says
 * where its image member lies in which shard. The shards are a brace
 * pattern or glob, a list file of .tar paths, or a folder of them (or of
 * class folders of them), listed by src/index/shards.c; each is scanned once
 * (tar_scan.c) and
 * damaged spans become records of their own (lost: reported, counted). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "index/index_build.h"
#include "source/source.h"
#include "source/tar_scan.h"
#include "util/util.h"

/* Its shards' names: NAME.tar, in a folder or in its class folders. */
static const char *const tar_suffixes[] = { ".tar", NULL };
static const rf_shard_names tar_names = { .suffixes = tar_suffixes, .shown = ".tar",
					  .class_folders = 1 };

/* A single shard named as the source: "train-000000.tar". */
static int is_tar_name(const char *source)
{
	size_t n = strlen(source);
	return n > 4 && !strcmp(source + n - 4, ".tar");
}

static int claims(const char *source, const struct stat *st, const rf_source_params *p)
{
	if (!st) /* no such path: a pattern, or nothing (build says which) */
		return 1;
	if (S_ISDIR(st->st_mode))
		return (p->mode & RF_INDEX_TAR) != 0;
	return S_ISREG(st->st_mode) &&
	       (is_tar_name(source) || rfi_index_is_shard_list(source, &tar_names));
}

static int scan(rf_source *s, const rf_source_params *p, char *err, size_t errlen)
{
	/* a local folder's index object beside its shards, when it still
	 * describes them (src/index/shards_beside.c) */
	if (!rfi_index_adopt_beside(&s->index, p->mode, p->log_level)) {
		s->cached = 1;
		return 0;
	}
	return rfi_tar_scan_shards(&s->index, s->raw, p->log_level, err, errlen);
}

/* (rf_source_ops.take_folder) A folder the walk found holding .tar files
 * and nothing else: every one of them must be where shards go. */
static int take_folder(rf_source *s, const char *source, const rf_source_seen *seen,
		       const rf_source_params *p, char *err, size_t errlen)
{
	rf_index *idx = &s->index;
	int ret = rfi_index_shard_folder(idx, source, &tar_names, err, errlen);
	if (ret < 0)
		return ret;
	if (ret == 0 || idx->nshards != seen->n) {
		rfi_fmt(err, errlen, "source '%s': %llu of its %llu .tar files (such as '%s') are not "
		       "where shards go (in the folder itself, or else in its class folders): move "
		       "them, or say what the source is with source_kind = tar or files "
		       "(--source-kind tar|files)", source,
		       (unsigned long long)(seen->n - (ret ? idx->nshards : 0)),
		       (unsigned long long)seen->n, seen->first);
		return RF_EINDEX;
	}
	ret = scan(s, p, err, errlen);
	return ret ? ret : rfi_records_finish(s, source, NULL, err, errlen);
}

static int build(rf_source *s, const char *source, const struct stat *st,
		 const rf_source_params *p, char *err, size_t errlen)
{
	rf_index *idx = &s->index;
	int ret;
	if (!st) {
		ret = rfi_index_shard_pattern(idx, source, &tar_names, err, errlen);
		if (ret == 0)
			ret = rfi_index_shard_bucket(idx, source, &tar_names, err, errlen);
		if (ret == 0 && rfi_index_is_url(source)) { /* one remote shard */
			size_t name = strcspn(source, "?#");
			if (name < 4 || strncmp(source + name - 4, ".tar", 4)) {
				rfi_fmt(err, errlen, "source '%s': a URL names one .tar shard, a brace "
				       "pattern of them (shard-{000..009}.tar), or an S3 folder, which "
				       "ends with '/' (s3://BUCKET/PREFIX/: listed); an http(s) folder "
				       "has no listing to read: name its shards in a list file, one URL "
				       "a line", source);
				return RF_EINDEX;
			}
			ret = rfi_index_shard_file(idx, source, err, errlen);
		}
		if (ret == 0) {
			rfi_fmt(err, errlen, "source '%s': %s", source, strerror(ENOENT));
			ret = -ENOENT;
		}
	} else if (S_ISDIR(st->st_mode)) {
		ret = rfi_index_shard_folder(idx, source, &tar_names, err, errlen);
		if (ret == 0) {
			rfi_fmt(err, errlen, "source '%s': no .tar shards in it or in its class folders "
			       "(source_kind = tar)", source);
			ret = RF_EEMPTY;
		}
	} else if (is_tar_name(source)) {
		ret = rfi_index_shard_file(idx, source, err, errlen);
	} else {
		ret = rfi_index_shard_list(idx, source, &tar_names, err, errlen);
	}
	if (ret < 0)
		return ret;
	ret = 1;
	/* remote: an index object rather than a scan; the one named, else the
	 * one beside the shards (DIR/ringfeed.index, as `ringfeed pack` writes
	 * it), if there is one */
	char beside[PATH_MAX];
	const char *object = p->cache;
	if (idx->urls && !object && rfi_index_is_url(idx->root)) {
		rfi_fmt(beside, sizeof(beside), "%s/%s", idx->root, RF_INDEX_OBJECT_NAME);
		object = beside;
	}
	if (idx->urls && object) {
		char why[512];
		ret = rfi_index_cache_adopt(idx, p->mode, object, why, sizeof(why));
		if (ret < 0 && object == p->cache) {
			rfi_fmt(err, errlen, "config: index_cache: %s", why);
			return ret;
		}
		if (ret)
			rfi_log(p->log_level, RF_LOG_INFO, "%s: scanning the shards", why);
		s->cached = ret == 0;
		ret = ret != 0;
	}
	if (ret == 1)
		ret = scan(s, p, err, errlen);
	return ret ? ret : rfi_records_finish(s, source, st, err, errlen);
}

static const char *name(const rf_source *s, uint64_t i, char *buf, size_t len)
{
	return rfi_index_name(&s->index, i, buf, len);
}

/* A sample the scan found unusable (its reason is its size), or a lost
 * span of a damaged shard. */
static int check(const rf_source *s, uint64_t i, char *reason, size_t len)
{
	int64_t size = s->index.entries[i].size;
	if (size < 0) {
		char why[RF_SOURCE_REASON_LEN];
		rfi_fmt(reason, len, "%s", rfi_index_bad_reason(size, why, sizeof(why)));
		return RF_INDEX_IS_LOST(size) ? RF_ELOST : RF_EBADSAMPLE;
	}
	if (size == 0) {
		rfi_fmt(reason, len, "empty file");
		return RF_EBADSAMPLE;
	}
	return 0;
}

static void read_of(const rf_source *s, uint64_t i, rf_source_read *r)
{
	const rf_index_member *m = &s->index.members[i];
	uint32_t size = (uint32_t)s->index.entries[i].size;
	*r = (rf_source_read){ .shard = m->shard, .offset = m->offset, .len = size,
			       .expect = size };
}

/* (rf_source_ops.shard_of) Its member's shard. */
static uint32_t shard_of(const rf_source *s, uint64_t i)
{
	return s->index.members[i].shard;
}

static rf_stage stage(const rf_source *s, uint64_t i)
{
	if (s->index.members[i].flags & RF_MEMBER_ZSTD)
		return s->raw ? RF_STAGE_ZSTD_RAW : RF_STAGE_ZSTD_IMAGE;
	return s->raw ? RF_STAGE_RAW : RF_STAGE_IMAGE;
}

/* A range: only shorter can show. */
static void cut_short(const rf_source *s, const rf_source_read *r, int got, char *reason,
		      size_t len)
{
	(void)s;
	rfi_fmt(reason, len, "member cut short: the shard shrank since it was indexed (%lld bytes, "
	       "read %d)", (long long)r->expect, got);
}

const rf_source_ops rf_source_tar = {
	.kind = RF_KIND_TAR,
	.name = "tar shards",
	.claims = claims,
	.build = build,
	.name_of = name,
	.label = rfi_records_label,
	.check = check,
	.read_of = read_of,
	.stage = stage,
	.cut_short = cut_short,
	.fingerprint = rfi_records_fingerprint,
	.samples = rfi_records_samples,
	.largest_read = rfi_records_no_largest,
	.shard_bytes = rfi_records_no_shard_bytes,
	.memory = rfi_records_memory,
	.shard_names = &tar_names,
	.source_kind = RF_SOURCE_TAR,
	.mode_flag = RF_INDEX_TAR,
	.take_folder = take_folder,
	.cached = 1,
	.sequential_shards = 1,
	.shard_of = shard_of,
	.zstd_dict = 1,
};
