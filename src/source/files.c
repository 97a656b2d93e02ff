/* files.c - the loose-files kind: one file, one sample. A folder is walked
 * (an ImageFolder: class folders of images; raw mode: every file), a
 * regular file is a manifest (path<TAB>label[<TAB>weight] lines), and an
 * image given there is refused as not a dataset. A folder whose walk saw
 * only the shards of a kind that takes a folder by its look is a folder of
 * shards: the table hands it to that kind; a folder of both is refused,
 * naming both, since taking either would drop the files of the other. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decode/image.h"
#include "index/index_build.h"
#include "source/files.h"
#include "source/source.h"
#include "util/util.h"

static int claims(const char *source, const struct stat *st, const rf_source_params *p)
{
	(void)source, (void)st, (void)p;
	return 1; /* the last row of the table: what no other kind claims */
}

/* The first entry of a walk that is a loose sample of its own (not one of
 * the shards seen, nor a zstd.dict taken in raw mode). */
static const char *first_loose(const rf_index *idx, const rf_shard_names *shards)
{
	for (size_t i = 0; i < idx->count; i++) {
		const char *p = rfi_index_path(idx, i), *base = strrchr(p, '/');
		base = base ? base + 1 : p;
		if (!rfi_shard_named(shards, p, strlen(p)) && strcmp(base, "zstd.dict"))
			return p;
	}
	return "";
}

/* The walk saw another kind's shards (w): a folder of only those is that
 * kind's (the table hands it over); beside loose files they are refused,
 * naming both, since taking either would drop the files of the other. */
static int shards_seen(rf_source *s, const char *source, const rf_files_seen *seen,
		       const rf_source_seen *w, const rf_source_params *p, char *err,
		       size_t errlen)
{
	const rf_index *idx = &s->index;
	uint64_t loose = idx->count - (s->raw ? w->n + seen->pack_files : 0);
	if (loose) {
		const char *kind = rfi_enum_name(RF_ENUM_SOURCE_KIND, w->ops->source_kind);
		rfi_fmt(err, errlen, "source '%s' holds both %s files (%llu, such as '%s') and "
		       "loose %s (%llu, such as '%s'): say which it is with source_kind = %s or "
		       "files (--source-kind %s|files)", source, w->ops->shard_names->shown,
		       (unsigned long long)w->n, w->first, s->raw ? "files" : "images",
		       (unsigned long long)loose, first_loose(idx, w->ops->shard_names), kind,
		       kind);
		return RF_EINDEX;
	}
	return rfi_source_hand_over(s, source, w, p, err, errlen);
}

/* How a refusal says to pick kind w in folder source: a pattern of its
 * shards, and its source_kind where it has one. */
static void how_to_pick(char *buf, size_t len, const char *source, const rf_source_seen *w)
{
	const char *kind = rfi_enum_name(RF_ENUM_SOURCE_KIND, w->ops->source_kind);
	if (w->ops->source_kind != RF_SOURCE_AUTO)
		rfi_fmt(buf, len, "'%s/*%s' or source_kind = %s (--source-kind %s) for the %s files",
			source, w->ops->shard_names->suffixes[0], kind, kind, w->ops->shard_names->shown);
	else
		rfi_fmt(buf, len, "'%s/*%s' for the %s files", source, w->ops->shard_names->suffixes[0],
			w->ops->shard_names->shown);
}

/* The walk saw the shards of two kinds (a, b) in one folder: a source is
 * one kind, and taking either would drop the other's files: refused,
 * naming both and how to pick one. */
static int kinds_mixed(const char *source, const rf_source_seen *a, const rf_source_seen *b,
		       char *err, size_t errlen)
{
	char pick_a[PATH_MAX + 64], pick_b[PATH_MAX + 64];
	how_to_pick(pick_a, sizeof(pick_a), source, a);
	how_to_pick(pick_b, sizeof(pick_b), source, b);
	rfi_fmt(err, errlen, "source '%s' holds both %s files (%llu, such as '%s') and %s files "
		"(%llu, such as '%s'), and a source is one kind: say which, %s; %s",
		source, a->ops->shard_names->shown, (unsigned long long)a->n, a->first,
		b->ops->shard_names->shown, (unsigned long long)b->n, b->first, pick_a, pick_b);
	return RF_EINDEX;
}

/* A folder: walked once, watching for the shards of the kinds that take a
 * folder by its look (unless source_kind says loose files). */
static int build_folder(rf_source *s, const char *source, const rf_source_params *p, char *err,
			size_t errlen)
{
	rf_source_seen kinds[RF_KIND_COUNT];
	rf_files_seen seen = { .kinds = kinds };
	if (!(p->mode & RF_INDEX_FILES))
		seen.nkinds = rfi_source_watched(kinds, RF_KIND_COUNT);
	int ret = rfi_files_walk(&s->index, source, p->mode, &seen, err, errlen);
	const rf_source_seen *found = NULL;
	for (size_t k = 0; !ret && k < seen.nkinds; k++) {
		if (kinds[k].n && found)
			return kinds_mixed(source, found, &kinds[k], err, errlen);
		if (kinds[k].n)
			found = &kinds[k];
	}
	return found ? shards_seen(s, source, &seen, found, p, err, errlen) : ret;
}

/* A regular file given as the source is read as a manifest; an image there
 * (a first try: --source photo.jpg) failed on its first line as a
 * malformed manifest. Told by its first bytes, as the decoder tells formats.
 * @return : 1 with err set when the file is an image, else 0 (an unreadable
 * file is left to the manifest's open to report). */
static int image_as_source(const char *source, char *err, size_t errlen)
{
	static const char *const what[] = {
		[RF_FORMAT_JPEG] = "a JPEG image",
		[RF_FORMAT_PNG] = "a PNG image",
		[RF_FORMAT_WEBP] = "a WebP image",
	};
	uint8_t head[16];
	ssize_t n = -1;
	int fd = open(source, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		n = pread(fd, head, sizeof(head), 0);
		close(fd);
	}
	rf_image_format f = n > 0 ? rfi_image_sniff(head, (size_t)n) : RF_FORMAT_UNKNOWN;
	if (f == RF_FORMAT_UNKNOWN)
		return 0;
	/* an ImageFolder is ROOT/CLASS/IMAGE: the root is two folders up */
	char *real = realpath(source, NULL), *root = real;
	for (int up = 0; root && up < 2; up++) {
		char *slash = strrchr(root, '/');
		if (slash && slash != root)
			*slash = '\0';
		else
			root = NULL;
	}
	rfi_fmt(err, errlen, "source '%s' is %s, not a dataset: give the dataset's folder, whose "
	       "subfolders (one per class) hold the images%s%s%s, or a manifest of "
	       "path<TAB>label lines", source, what[f], root ? " (for this image: '" : "",
	       root ? root : "", root ? "')" : "");
	free(real);
	return 1;
}

static int build(rf_source *s, const char *source, const struct stat *st,
		 const rf_source_params *p, char *err, size_t errlen)
{
	int ret;
	if (S_ISDIR(st->st_mode)) {
		ret = build_folder(s, source, p, err, errlen);
	} else if (S_ISREG(st->st_mode)) {
		ret = image_as_source(source, err, errlen)
			      ? RF_EINDEX
			      : rfi_files_manifest(&s->index, source, err, errlen);
	} else {
		rfi_fmt(err, errlen, "source '%s': neither a directory nor a manifest file", source);
		ret = RF_EINDEX;
	}
	if (!ret && s->ops != &rf_source_files)
		return 0; /* a folder handed over: the kind that took it finished it */
	return ret ? ret : rfi_records_finish(s, source, st, err, errlen);
}

static const char *name(const rf_source *s, uint64_t i, char *buf, size_t len)
{
	rfi_fmt(buf, len, "%s", rfi_index_path(&s->index, i));
	return buf;
}

static int check(const rf_source *s, uint64_t i, char *reason, size_t len)
{
	int64_t size = s->index.entries[i].size;
	if (size < 0) { /* an errno: the walk and the cache check it */
		char why[RF_SOURCE_REASON_LEN];
		if (!rfi_source_not_regular(s, i, reason, len))
			rfi_fmt(reason, len, "%s", rfi_index_bad_reason(size, why, sizeof(why)));
		return (int)size;
	}
	if (size == 0) {
		rfi_fmt(reason, len, "empty file");
		return RF_EBADSAMPLE;
	}
	return 0;
}

/* The whole file, and one byte more than the index says, so that a file
 * that grew shows. */
static void read_of(const rf_source *s, uint64_t i, rf_source_read *r)
{
	uint32_t size = (uint32_t)s->index.entries[i].size;
	*r = (rf_source_read){ .path = rfi_index_path(&s->index, i), .shard = RF_NO_SHARD,
			       .len = size + 1, .expect = size };
}

static rf_stage stage(const rf_source *s, uint64_t i)
{
	(void)i;
	return s->raw ? RF_STAGE_RAW : RF_STAGE_IMAGE;
}

static void cut_short(const rf_source *s, const rf_source_read *r, int got, char *reason,
		      size_t len)
{
	(void)s;
	rfi_fmt(reason, len, "file %s since it was indexed (%lld bytes then, read %d)",
	       (int64_t)got < (int64_t)r->expect ? "shrank" : "grew", (long long)r->expect, got);
}

const rf_source_ops rf_source_files = {
	.kind = RF_KIND_FILES,
	.name = "loose files",
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
	.source_kind = RF_SOURCE_FILES,
	.mode_flag = RF_INDEX_FILES,
	.cached = 1,
};
