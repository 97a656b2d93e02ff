/* source.c - the probe table and the one way a source is opened: its kind
 * picked by asking each kind in turn whether the source string is its own,
 * then its index loaded from the cache or built. */
#define _GNU_SOURCE
#include "source/source.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "remote/transport.h"
#include "source/token_windows.h"
#include "util/util.h"

/* Probe order: a token source is said by the config (seq_len); a .parquet
 * file, a pattern or list of them is Parquet files; a pattern,
 * a list of .tar paths or source_kind = tar is tar shards; anything else is
 * loose files (a folder walk, or a manifest). A walked folder that holds
 * only the shards of a kind with take_folder (tar, Parquet) is handed to that kind
 * (rfi_source_hand_over), the kinds asked in this order; one that holds the
 * shards of two of them is refused (files.c: a source is one kind). A
 * remote folder whose name says no kind (s3://BUCKET/PREFIX/, a dataset on
 * the Hub) that holds none of the probed kind's shards goes the same way to
 * the next kind with take_folder that finds its own there (build_listed). */
static const rf_source_ops *const probe_table[] = {
	&rf_source_tokens,
	&rf_source_parquet,
	&rf_source_tar,
	&rf_source_files,
};

#define NKINDS (sizeof(probe_table) / sizeof(probe_table[0]))

const rf_source_ops *rfi_source_kind_ops(rf_kind kind)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (kind != RF_KIND_NONE && probe_table[i]->kind == kind)
			return probe_table[i];
	return NULL;
}

int rfi_source_kind_mode(rf_source_kind k)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (k != RF_SOURCE_AUTO && probe_table[i]->source_kind == k)
			return probe_table[i]->mode_flag;
	return 0;
}

int rfi_source_kind_modes(void)
{
	int modes = 0;
	for (size_t i = 0; i < NKINDS; i++)
		modes |= probe_table[i]->mode_flag;
	return modes;
}

rf_source_kind rfi_source_kind_last(void)
{
	rf_source_kind last = RF_SOURCE_AUTO;
	for (size_t i = 0; i < NKINDS; i++)
		last = RF_MAX(last, probe_table[i]->source_kind);
	return last;
}

size_t rfi_source_watched(rf_source_seen *seen, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < NKINDS && n < max; i++)
		if (probe_table[i]->take_folder)
			seen[n++] = (rf_source_seen){ .ops = probe_table[i] };
	return n;
}

int rfi_source_hand_over(rf_source *s, const char *source, const rf_source_seen *seen,
			 const rf_source_params *p, char *err, size_t errlen)
{
	rf_index *idx = &s->index;
	rf_progress_fn progress = idx->progress;
	void *user = idx->progress_user;
	rfi_index_free(idx); /* the walk's records: shards, not samples */
	idx->progress = progress;
	idx->progress_user = user;
	idx->any_name = p->mode;
	s->ops = seen->ops;
	s->kind = s->ops->kind;
	idx->kind = s->kind;
	return s->ops->take_folder(s, source, seen, p, err, errlen);
}

static void source_init(rf_source *s, const rf_source_params *p)
{
	memset(s, 0, sizeof(*s));
	s->index.root_fd = -1;
	s->index.progress = p->progress;
	s->index.progress_user = p->progress_user;
	s->index.any_name = p->mode;
	s->index.remote_timeout_ms = p->remote_timeout_ms;
	s->index.scan_cache_dir = p->cache_dir;
	s->index.scan_cache_group = p->cache_group;
	s->index.scan_cache_bytes = p->cache_bytes;
	s->raw = (p->mode & RF_INDEX_RAW) != 0;
	s->columns = p->columns;
}

/* The kind of source (stat'ed as st, or NULL when no such path exists). */
static const rf_source_ops *probe(const char *source, const struct stat *st,
				  const rf_source_params *p)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (probe_table[i]->claims(source, st, p))
			return probe_table[i];
	return &rf_source_files; /* unreachable: files claims anything */
}

/* A remote folder whose listing held none of the probed kind's shards
 * (s3://BUCKET/PREFIX/, a dataset on the Hub: its name says no kind): the
 * other kinds with take_folder build it in turn, each listing it as its
 * own, the first that finds its shards keeping it (a local folder's walk
 * hands over the same way). None: the first kind's refusal (ret, err). */
static int build_listed(rf_source *s, const char *source, const rf_source_params *p, int ret,
			char *err, size_t errlen)
{
	char *folder = NULL;
	const rf_source_ops *first = s->ops;
	if ((p->mode & rfi_source_kind_modes()) || p->seq_len || !rfi_transport_is_remote(source) ||
	    rfi_transport_listed_folder(source, &folder) != 1) {
		free(folder);
		return ret;
	}
	free(folder);
	char *said = strdup(err);
	for (size_t i = 0; said && i < NKINDS && ret == RF_EEMPTY; i++) {
		const rf_source_ops *ops = probe_table[i];
		if (ops == first || !ops->take_folder)
			continue;
		rfi_source_free(s);
		source_init(s, p);
		s->ops = ops;
		s->kind = ops->kind;
		s->index.kind = s->kind;
		ret = ops->build(s, source, NULL, p, err, errlen);
	}
	if (said && ret == RF_EEMPTY) /* none of them: the probed kind's words */
		rfi_fmt(err, errlen, "%s", said);
	free(said);
	return ret;
}

static int build(rf_source *s, const char *source, const rf_source_params *p, char *err,
		 size_t errlen)
{
	if (!source || !*source) {
		rfi_fmt(err, errlen, "source: not set");
		return -EINVAL;
	}
	struct stat st;
	int exists = stat(source, &st) == 0;
	if (!exists && errno != ENOENT) {
		int e = errno;
		rfi_fmt(err, errlen, "source '%s': %s", source, strerror(e));
		return -e;
	}
	s->ops = probe(source, exists ? &st : NULL, p);
	s->kind = s->ops->kind; /* a walked folder may still go to another kind */
	s->index.kind = s->kind; /* an index object adopted must be of it */
	int ret = s->ops->build(s, source, exists ? &st : NULL, p, err, errlen);
	if (ret == RF_EEMPTY && !exists)
		ret = build_listed(s, source, p, ret, err, errlen);
	s->index.kind = s->kind; /* what the cache keeps */
	return ret;
}

/* Loads the cache into s when it matches source. @return : 0 loaded, 1 not
 * (stale, missing: logged), negative: the path is not a cache (err set). */
static int load_cache(rf_source *s, const char *source, const rf_source_params *p, char *err,
		      size_t errlen)
{
	char why[512];
	/* before the walk: a cache path that names a file of the user's fails
	 * open, rather than the walk and then the write */
	int bad = rfi_index_cache_check_target(p->cache, why, sizeof(why));
	if (bad) {
		rfi_fmt(err, errlen, "config: index_cache: %s", why);
		return bad;
	}
	if (rfi_index_cache_load(&s->index, source, p->mode, p->cache, why, sizeof(why))) {
		rfi_log(p->log_level, RF_LOG_INFO, "%s: walking the source", why);
		return 1;
	}
	/* the kind that built it, as the cache says (a folder may have turned
	 * out to hold tar shards) */
	const rf_source_ops *ops = rfi_source_kind_ops((rf_kind)s->index.kind);
	if (!ops || !ops->cached) {
		rfi_log(p->log_level, RF_LOG_INFO, "index cache '%s': of no kind kept in a cache "
		       "(%u): walking the source", p->cache, (unsigned)s->index.kind);
		rfi_index_free(&s->index);
		source_init(s, p);
		return 1;
	}
	s->kind = ops->kind;
	s->ops = ops;
	s->cached = 1;
	int ret = ops->restore ? ops->restore(s, why, sizeof(why)) : 0;
	if (ret == 1) { /* a file changed: built again */
		rfi_log(p->log_level, RF_LOG_INFO, "index cache '%s': %s: reading the source",
			p->cache, why);
		rfi_source_free(s);
		source_init(s, p);
	} else if (ret < 0) {
		rfi_fmt(err, errlen, "index cache '%s': %s", p->cache, why);
		rfi_source_free(s);
		source_init(s, p);
	}
	return ret;
}

/* The kind's own part of the cache (its save), into s->index. */
static int save_kind(rf_source *s, char *err, size_t errlen)
{
	return s->ops->save && !s->index.kind_blob ? s->ops->save(s, err, errlen) : 0;
}

int rfi_source_open(rf_source *s, const char *source, const rf_source_params *p, char *err,
		   size_t errlen)
{
	source_init(s, p);
	int ret = 1;
	/* token sources are not cached (a few headers); a remote source's index
	 * is taken once its shards are listed (tar_shards.c) */
	if (p->cache && !p->seq_len && !rfi_index_is_url(source))
		ret = load_cache(s, source, p, err, errlen);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		ret = build(s, source, p, err, errlen);
		if (ret) {
			rfi_source_free(s);
			return ret;
		}
		rfi_index_warn_unkept(&s->index, source, p->log_level);
		char why[512];
		/* kept for the next run, unless it came from there (a remote
		 * source's index object) or is a URL (read-only) */
		if (p->cache && s->ops->cached && !s->cached && !rfi_index_is_url(p->cache) &&
		    (save_kind(s, why, sizeof(why)) ||
		     rfi_index_cache_write(&s->index, source, p->cache, why, sizeof(why))))
			rfi_log(p->log_level, RF_LOG_WARN, "%s", why);
		free(s->index.kind_blob); /* written: not kept for the run */
		s->index.kind_blob = NULL;
		s->index.kind_blob_len = 0;
	}
	if (p->columns && p->columns[0] && !s->ops->columns) {
		rfi_fmt(err, errlen, "config: columns '%s': source '%s' is %s, which have no "
			"columns (columns name a source's columns: image=NAME,label=NAME)", p->columns,
			source, s->ops->name);
		rfi_source_free(s);
		return RF_ECONFIG;
	}
	if (!s->ops->zstd_dict)
		return 0;
	for (size_t i = 0; s->index.members && i < s->index.count && !s->any_zstd; i++)
		s->any_zstd = (s->index.members[i].flags & RF_MEMBER_ZSTD) != 0;
	return 0;
}

void rfi_source_free(rf_source *s)
{
	if (!s)
		return;
	if (s->ops && s->ops->free)
		s->ops->free(s);
	rfi_index_free(&s->index);
	memset(s, 0, sizeof(*s));
	s->index.root_fd = -1;
}

int rfi_index_build_progress(rf_index *idx, const char *source, int any_name, rf_progress_fn progress,
			    void *user, rf_log_level log_level, char *err, size_t errlen)
{
	rf_source s;
	rf_source_params p = { .mode = any_name, .progress = progress, .progress_user = user,
			       .log_level = log_level };
	int ret = rfi_source_open(&s, source, &p, err, errlen);
	memset(idx, 0, sizeof(*idx));
	idx->root_fd = -1;
	if (ret)
		return ret;
	if (!s.ops->cached) { /* its samples are in its own state, not in records */
		rfi_fmt(err, errlen, "source '%s': %s keep their samples in a table of their own, "
			"not in an index of records to write or pack", source, s.ops->name);
		rfi_source_free(&s);
		return -ENOTSUP;
	}
	ret = save_kind(&s, err, errlen); /* a table kind's own part goes with them */
	if (ret) {
		rfi_source_free(&s);
		return ret;
	}
	if (s.ops->save && s.ops->free) /* its state is in the blob now */
		s.ops->free(&s);
	*idx = s.index; /* the records move out; a records kind holds nothing else */
	return 0;
}

int rfi_index_build(rf_index *idx, const char *source, int any_name, char *err, size_t errlen)
{
	return rfi_index_build_progress(idx, source, any_name, NULL, NULL, RF_LOG_WARN, err, errlen);
}

int rfi_index_write(const char *source, int raw, const char *path, uint64_t *files,
		    rf_progress_fn progress, void *user, char *err, size_t errlen)
{
	rf_index idx;
	int ret = rfi_index_build_progress(&idx, source, raw, progress, user, RF_LOG_WARN, err, errlen);
	if (ret) {
		rfi_redact(err, err, errlen); /* a URL's password stays in the process */
		return ret;
	}
	ret = rfi_index_cache_write(&idx, source, path, err, errlen);
	if (ret)
		rfi_redact(err, err, errlen);
	if (files) /* records; a table kind's (Parquet: no records), its files */
		*files = idx.count ? idx.count : idx.nshards;
	rfi_index_free(&idx);
	return ret;
}
