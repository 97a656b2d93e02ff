/* pack.c - `ringfeed pack`'s set-up and tear-down: checks the options,
 * prepares the output folder, builds the index, sets up zstd (and trains
 * and writes the dictionary), marks the folder as an unfinished pack
 * (index/pack_marker.h), runs the loop (pack_loop.c), removes the mark, and
 * on failure removes everything it wrote. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/pack_marker.h"
#include "source/source.h"
#include "pack/pack_impl.h"
#include "pack/tar_write.h"
#include "util/util.h"

#define DICT_NAME "zstd.dict"

static int check_opts(const rf_pack_opts *o, char *err, size_t errlen)
{
	if (!o->source || !o->out)
		rfi_fmt(err, errlen, "source and output folder must be set");
	else if (o->shard_size == 0)
		rfi_fmt(err, errlen, "shard size 0");
	else if (o->align && (o->align < RF_TAR_BLOCK || o->align > RF_PACK_ALIGN_MAX ||
			      (o->align & (o->align - 1))))
		rfi_fmt(err, errlen, "--align %" PRIu64 ": not a power of two from 512 to %u", o->align,
		       RF_PACK_ALIGN_MAX);
	else if (o->compress && (o->level < ZSTD_minCLevel() || o->level > ZSTD_maxCLevel()))
		rfi_fmt(err, errlen, "zstd level %d: not in [%d, %d]", o->level, ZSTD_minCLevel(),
		       ZSTD_maxCLevel());
	else if (o->dict_size && !o->compress)
		rfi_fmt(err, errlen, "--dict-size needs --compress zstd");
	else if (o->dict_size && (o->dict_size < RF_PACK_DICT_MIN || o->dict_size > RF_PACK_DICT_MAX))
		rfi_fmt(err, errlen, "--dict-size %zu: a zstd dictionary is %u bytes to %u (16M); "
		       "16K to 112K suit most sources", o->dict_size, RF_PACK_DICT_MIN, RF_PACK_DICT_MAX);
	else
		return 0;
	return RF_ECONFIG;
}

/* A tree source (a folder: ImageFolder or --raw) and an output folder that
 * is it or lies below it: the shards would land among the files they are
 * packed from, and the next walk of the tree would find them (SRC -o SRC
 * makes SRC a folder of shards, -o SRC/packed a class folder of shards).
 * The other way round is harmless (the tree is walked before anything is
 * written, and a folder holding shards is read as its shards), and so is a
 * manifest beside or above the output: it names its files, it is not walked. */
static int check_apart(const rf_pack_opts *o, char *err, size_t errlen)
{
	struct stat st;
	if (stat(o->source, &st) != 0 || !S_ISDIR(st.st_mode))
		return 0; /* a manifest, or missing (the index says why) */
	rf_out_place where = rfi_out_dir_place(o->out, o->source);
	if (where == RF_OUT_APART)
		return 0;
	rfi_fmt(err, errlen, "output folder '%s' is %s source '%s': the shards would mix with "
	       "the files they are packed from, and a later read of '%s' would find the shards "
	       "instead of them; choose a folder outside it", o->out,
	       where == RF_OUT_SAME ? "the" : "inside the", o->source, o->source);
	return RF_ECONFIG;
}

/* The names a pack writes (and their temporary forms): a folder holding
 * one already holds a pack, which a second pack must not mix with. */
static const char *const pack_names[] = { "shard-*.tar", ".shard-*.tar.tmp", DICT_NAME,
					  "." DICT_NAME ".tmp", NULL };

static void index_progress(void *user, uint64_t files)
{
	rf_packer *p = user;
	p->prog.done = files;
	rfi_pack_tell(p);
}

/* The zstd context every member is compressed with, and the dictionary
 * (trained now, from reads only; written later, in the write phase). */
static int setup_zstd(rf_packer *p, rf_buf *dict, size_t *dict_len, char *err, size_t errlen)
{
	const rf_pack_opts *o = p->o;
	p->cctx = ZSTD_createCCtx();
	if (!p->cctx)
		return -ENOMEM;
	size_t r = ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_compressionLevel, o->level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_contentSizeFlag, 1);
	if (ZSTD_isError(r)) {
		rfi_fmt(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
		return RF_ECONFIG;
	}
	if (!o->dict_size)
		return 0;
	int ret = rfi_pack_train(p, dict, dict_len, err, errlen);
	if (ret)
		return ret;
	/* digested once, referenced by every frame */
	p->cdict = ZSTD_createCDict(dict->p, *dict_len, o->level);
	if (!p->cdict)
		return -ENOMEM;
	r = ZSTD_CCtx_refCDict(p->cctx, p->cdict);
	if (ZSTD_isError(r)) {
		rfi_fmt(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
		return RF_ECONFIG;
	}
	return 0;
}

static int write_dict(rf_packer *p, const rf_buf *dict, size_t len, char *err, size_t errlen)
{
	rf_out_file f = RF_OUT_FILE_NONE;
	int ret = rfi_out_open(&f, p->dirfd, p->o->out, DICT_NAME, err, errlen);
	struct iovec iov = { dict->p, len };
	if (!ret)
		ret = rfi_out_writev(&f, &iov, 1, err, errlen);
	if (!ret)
		return rfi_out_commit(&f, err, errlen);
	rfi_out_abort(&f);
	return ret;
}

/* After a failure or a stop: the shards and dictionary this pack wrote go,
 * so that no partial pack is taken for a whole one (the loop has already
 * removed the shard it was writing), then the marker, last: a kill before
 * that leaves the folder refused as an interrupted pack. */
static void remove_written(rf_packer *p, int dict_written, int marked)
{
	for (uint32_t s = 0; s < p->res->shards; s++) {
		char name[32];
		snprintf(name, sizeof(name), "shard-%06" PRIu32 ".tar", s);
		unlinkat(p->dirfd, name, 0);
	}
	if (dict_written)
		unlinkat(p->dirfd, DICT_NAME, 0);
	if (marked)
		unlinkat(p->dirfd, RF_PACK_MARKER, 0);
}

/* The index object beside the shards (DIR/ringfeed.index: the index cache
 * of the folder's shards, src/index/index_file.c): a remote source of these
 * shards fetches it instead of scanning their headers. It names no source,
 * root or stamps (the copy that is read is elsewhere), so two packs of one
 * source write the same bytes. The shards are what the pack is; an index
 * that cannot be written is said, and the pack stands without it. */
static void write_index_object(const rf_pack_opts *o)
{
	char path[PATH_MAX], err[512];
	rfi_fmt(path, sizeof(path), "%s/%s", o->out, RF_INDEX_OBJECT_NAME);
	rf_index idx;
	int ret = rfi_index_build_progress(&idx, o->out, (o->index_flags & RF_INDEX_RAW) | RF_INDEX_TAR,
					  NULL, NULL, RF_LOG_WARN, err, sizeof(err));
	if (!ret) {
		for (size_t i = 0; i < idx.nstamps; i++)
			free(idx.stamps[i].path);
		idx.nstamps = 0;
		free(idx.root);
		idx.root = strdup(".");
		ret = idx.root ? rfi_index_cache_write(&idx, "", path, err, sizeof(err)) : -ENOMEM;
		rfi_index_free(&idx);
	}
	if (ret)
		rfi_log(RF_LOG_WARN, RF_LOG_WARN, "pack: no %s beside the shards: %s",
		       RF_INDEX_OBJECT_NAME, ret == -ENOMEM ? "out of memory" : err);
}

int rfi_pack_run(const rf_pack_opts *o, rf_pack_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	int ret = check_opts(o, err, errlen);
	if (ret)
		return ret;
	rf_packer p = { .o = o, .res = res, .dirfd = -1, .shard = RF_OUT_FILE_NONE };
	rf_buf dict = { 0 };
	size_t dict_len = 0;
	int made = 0, dict_written = 0, have_index = 0, marked = 0;

	ret = check_apart(o, err, errlen);
	if (ret)
		goto out;
	ret = rfi_out_dir_open(o->out, pack_names, "a pack", &p.dirfd, &made, err, errlen);
	if (ret)
		goto out;
	p.prog.phase = RF_PACK_INDEX;
	rfi_pack_tell(&p);
	rf_source src;
	rf_source_params sp = { .mode = o->index_flags, .progress = index_progress,
				.progress_user = &p, .log_level = RF_LOG_WARN };
	ret = rfi_source_open(&src, o->source, &sp, err, errlen);
	if (ret)
		goto out;
	if (src.kind != RF_KIND_FILES) {
		rfi_fmt(err, errlen, "'%s' is already a set of shards: pack takes an ImageFolder, a "
		       "manifest or (--raw) a tree of files", o->source);
		rfi_source_free(&src);
		ret = -EINVAL;
		goto out;
	}
	if (src.index.unkept[RF_UNKEPT_NAMES]) {
		/* "keeps every member": a pack without some is no copy */
		uint64_t more = src.index.unkept[RF_UNKEPT_NAMES] - 1;
		char also[64] = "";
		if (more)
			rfi_fmt(also, sizeof(also), " (and %llu more)", (unsigned long long)more);
		rfi_fmt(err, errlen, "'%s': member %s%s: its extension comes after the %d distinct "
		       "ones an index keeps (RF_EXTRA_NAMES_MAX): the pack would lose it", o->source,
		       src.index.unkept_first[RF_UNKEPT_NAMES], also, RF_EXTRA_NAMES_MAX);
		rfi_source_free(&src);
		ret = -ENOTSUP;
		goto out;
	}
	p.idx = src.index; /* the records move to the packer: a files source holds nothing else */
	have_index = 1;
	/* every key the same width, so that names sort in id order */
	p.key_width = 9;
	for (uint64_t n = p.idx.count - 1; n >= 1000000000ull; n /= 10)
		p.key_width++;
	if (o->align && !(p.pad = malloc(o->align + 2 * RF_TAR_BLOCK))) {
		ret = -ENOMEM;
		goto out;
	}
	if (o->compress && (ret = setup_zstd(&p, &dict, &dict_len, err, errlen)))
		goto out;

	/* files are written from here on (a caller may now want to clean up
	 * after a signal, not just die), the marker first: until it goes, the
	 * folder is no pack to a reader */
	p.prog = (rf_pack_progress){ .phase = RF_PACK_WRITE, .total = p.idx.count };
	rfi_pack_tell(&p);
	ret = rfi_out_mark_begin(p.dirfd, o->out, err, errlen);
	if (ret)
		goto out;
	marked = 1;
	if (dict_len) {
		ret = write_dict(&p, &dict, dict_len, err, errlen);
		if (ret)
			goto out;
		dict_written = 1;
		res->dict_bytes = dict_len;
	}
	ret = rfi_pack_write_all(&p, err, errlen);
	if (!ret) /* every shard and the dictionary are on disk: the pack is whole */
		ret = rfi_out_mark_end(p.dirfd, o->out, err, errlen);
	if (!ret)
		write_index_object(o);
out:
	if (ret && p.dirfd >= 0)
		remove_written(&p, dict_written, marked);
	if (ret && made)
		rmdir(o->out); /* only if empty: what was there before stays */
	if (p.dirfd >= 0)
		close(p.dirfd);
	if (have_index)
		rfi_index_free(&p.idx);
	ZSTD_freeCCtx(p.cctx);
	ZSTD_freeCDict(p.cdict);
	free(p.in.p);
	free(p.z.p);
	free(p.xs.p);
	free(p.iov.p);
	free(p.pad);
	free(dict.p);
	return ret;
}
