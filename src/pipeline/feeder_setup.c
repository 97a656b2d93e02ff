/* feeder_setup.c - the ring thread's set-up and teardown (its loop is
 * feeder.c): the read engine, the shards kept open, the node cache, the
 * read pool, the chunk table and the request lists, made on the ring
 * thread (SINGLE_ISSUER ties the ring to the thread that creates it) and
 * let go when it leaves; the read pool outlives it (rfi_feeder_free). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "io/bufpool.h"
#include "io/engine.h"
#include "pipeline/feeder.h"
#include "pipeline/feeder_state.h"
#include "pipeline/loader_state.h"
#include "sample/shard_order.h"
#include "util/util.h"

/* Sequential access reads a shard in chunks (chunks.c), held in half the
 * read pool. The block shuffle hands out a block's samples in any order,
 * so the chunks a block spans must all fit there at once: else a chunk is
 * dropped before its last sample comes and read again (1,024-sample blocks
 * of 60 KB samples span 60 chunks, and a 64 MiB pool holds 32: each chunk
 * was read about 9 times an epoch, 4.3 GB fetched for a 480 MB pack over
 * http). The pool this takes: twice (the block's span in chunks, plus two
 * for the edges and a few being read), at most 1 GiB; 0 for random access
 * or token windows (read in llm.c's order, without a block shuffle). A
 * shard order is only ever made for a kind whose samples lie in shards (its
 * sequential_shards capability: plan.c refuses shard_access = sequential
 * to the rest): the bytes per sample are the shards' (shard_bytes, Parquet)
 * where the kind knows them, else the records' (tar members). */
static size_t sequential_pool(const rf_loader *l)
{
	const rf_index *idx = &l->src.index;
	uint64_t n = rfi_source_samples(&l->src);
	if (!l->shard_order || !n || l->shard_order->block <= 1)
		return 0;
	uint64_t bytes = 0;
	for (size_t s = 0; s < idx->nshards; s++)
		bytes += l->src.ops->shard_bytes(&l->src, (uint32_t)s);
	int shards_known = bytes > 0;
	for (size_t i = 0; !shards_known && i < idx->count; i++)
		bytes += idx->entries[i].size > 0 ? (uint64_t)idx->entries[i].size : 0;
	uint64_t span = bytes / n * l->shard_order->block;
	uint64_t chunks = span / RF_CHUNK_BYTES + 2 + 8;
	/* a chunk's read runs on by up to the largest read (a Parquet page
	 * starting in it, the kind's tile) */
	uint64_t unit = RF_CHUNK_BYTES + l->src.ops->largest_read(&l->src);
	return (size_t)RF_MIN(2 * chunks * unit, (uint64_t)1 << 30);
}

/* Shards are kept open (a ranged read per sample, no open or close) while
 * they take at most a quarter of the descriptor limit; beyond, each read
 * opens its shard, as a loose file's read does. */
static int keep_shards(const rf_loader *l, const struct rf_feeder *f)
{
	struct rlimit lim = { 0 };
	getrlimit(RLIMIT_NOFILE, &lim);
	return l->src.index.nshards && f->shard_way != SHARD_BY_URL &&
	       l->src.index.nshards <= lim.rlim_cur / 4;
}

/* Whether shards are fetched: their transport row says, asked once here
 * (the hot path branches on f->shard_way). The row is the one the source
 * opened (every remote source opens one), else the one a shard's read
 * location names (a local source opens none). @return : 0, or -EINVAL with
 * err set when the row and the index disagree. */
static int choose_shard_way(const rf_loader *l, struct rf_feeder *f, char *err, size_t errlen)
{
	const rf_index *idx = &l->src.index;
	f->shard_way = SHARD_BY_PATH; /* a handle once opened */
	if (!idx->nshards)
		return 0; /* no shards: each sample's own file */
	const rf_transport_ops *row = idx->transport ? rfi_transport_ops_of(idx->transport)
				      : rfi_transport_of(idx->urls ? idx->urls[0] : idx->shards[0]);
	if (row->remote != (idx->urls != NULL)) {
		rfi_fmt(err, errlen, "shards of a %s source %s URLs", row->name,
		       row->remote ? "without" : "with");
		return -EINVAL;
	}
	if (row->remote)
		f->shard_way = SHARD_BY_URL;
	return 0;
}

static int open_shards(rf_loader *l, struct rf_feeder *f, char *err, size_t errlen)
{
	const rf_index *idx = &l->src.index;
	f->shard_files = malloc(idx->nshards * sizeof(int));
	if (!f->shard_files) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < idx->nshards; i++) {
		f->shard_files[i] = rfi_io_file_open(f->io, idx->root_fd, idx->shards[i]);
		if (f->shard_files[i] < 0) {
			int e = f->shard_files[i];
			rfi_fmt(err, errlen, "shard %s/%s: %s", idx->root, idx->shards[i], strerror(-e));
			free(f->shard_files);
			f->shard_files = NULL;
			return e;
		}
	}
	return 0;
}

/* The read engine, the shards kept open and the node cache. */
static int setup_engine(rf_loader *l, struct rf_feeder *f, char *err, size_t errlen)
{
	int ret = choose_shard_way(l, f, err, errlen);
	if (ret)
		return ret;
	rf_io_params p = {
		.path = l->cfg.io_path, .depth = (uint32_t)l->cfg.io_depth,
		.max_read = RF_ALIGN_UP(f->max_file + 1, 4096) + 4096,
		.direct = !l->cfg.no_direct_io,
		.probe_dirfd = l->src.index.root_fd,
		.probe_path = l->src.index.nshards ? l->src.index.shards[0]
						   : rfi_index_path(&l->src.index, 0),
		.max_files = keep_shards(l, f) ? (uint32_t)l->src.index.nshards
			     : l->cfg.cache_dir && l->cfg.cache_dir[0] && f->shard_way == SHARD_BY_URL
			     ? RF_CACHE_MAX_FILES : 0,
		.pread_threads = l->cfg.pread_threads, .wake_fd = l->wake_fd,
		.name = l->src.index.root, .log_level = l->cfg.log_level,
		.url_reader = rfi_transport_reader(l->src.index.transport),
		.sign = rfi_transport_sign(l->src.index.transport),
		.url_budget_ms = l->cfg.remote_timeout_ms,
	};
	ret = rfi_io_create(&f->io, &p, err, errlen);
	if (ret)
		return ret;
	if (keep_shards(l, f)) {
		ret = open_shards(l, f, err, errlen);
		if (ret)
			return ret;
		f->shard_way = SHARD_BY_HANDLE;
	}
	if (rfi_feeder_cache_open(l, f)) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The read pool, and the memory the engine reads into registered with it
 * (the pool; raw mode: the batch slots too). */
static int setup_pool(rf_loader *l, struct rf_feeder *f, const rf_io_info *info, char *err,
		      size_t errlen)
{
	/* raw mode reads into the batch slots: the pool stays a token one,
	 * unless zstd members (or reads a kind's extract cuts samples out of,
	 * Parquet pages) are read into it for the compute threads, or
	 * chunks of shards read front to back (then a member larger than a
	 * quarter of the pool must still fit) */
	l->raw_align = (uint32_t)info->align;
	size_t pool_bytes = !l->cfg.raw ? l->cfg.read_pool_bytes
			    : !l->src.any_zstd && !l->src.ops->extract && !l->shard_order ? info->align
			    : RF_MAX(l->cfg.read_pool_bytes, 4 * RF_ALIGN_UP(f->max_file + 1, info->align));
	pool_bytes = RF_MAX(pool_bytes, sequential_pool(l));
	int ret = rfi_bufpool_init(&f->pool, pool_bytes, info->align, (uint32_t)l->cfg.io_depth);
	if (ret) {
		rfi_fmt(err, errlen, "read pool of %zu bytes: out of memory", l->cfg.read_pool_bytes);
		return ret;
	}
	rf_io_region regions[2] = { { f->pool.base, f->pool.cap }, { l->slot_mem, l->slot_mem_len } };
	int fixed = rfi_io_register_regions(f->io, regions, l->cfg.raw ? 2 : 1);
	atomic_store(&l->st.fixed_buffers, (unsigned)fixed);
	return 0;
}

/* The chunk table (when reads go by chunks), the requests and the lists
 * that hold their ids. */
static int setup_requests(rf_loader *l, struct rf_feeder *f, char *err, size_t errlen)
{
	uint32_t depth = (uint32_t)l->cfg.io_depth;
	/* chunks: shards read front to back (shard_access), or token windows
	 * in llm.c's order, which tile the shards */
	int chunked = l->shard_order ||
		      (l->src.ops->in_order_tiles && l->order.kind == RF_SAMPLER_SEQUENTIAL);
	/* else, random access to a kind whose samples share reads (Parquet's
	 * rows a page): the table keyed by the reads themselves */
	f->page_units = !chunked && l->src.ops->shared_reads;
	f->overlap_bytes = (uint32_t)RF_ALIGN_UP(l->src.ops->largest_read(&l->src), 4096);
	if ((chunked || f->page_units) && rfi_chunks_init(f)) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	f->free_reqs = malloc(depth * sizeof(uint32_t));
	f->drain = malloc(depth * sizeof(uint32_t));
	f->done = malloc(depth * sizeof(rf_io_done));
	rfi_fifo_init(&f->retry_q, depth + 2);
	f->retry = malloc(f->retry_q.cap * sizeof(rf_place));
	if (!f->free_reqs || !f->drain || !f->done || !f->retry) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < depth; i++)
		f->free_reqs[i] = depth - 1 - i;
	f->nfree = depth;
	return 0;
}

int rfi_feeder_setup(rf_loader *l, struct rf_feeder *f, char *err, size_t errlen)
{
#if RF_TEST_HOOKS
	/* Test-only: every read is judged this many microseconds late, by this
	 * thread, so reads complete at most 1e6 / delay per second: a slow
	 * device, planted (the slow suite's storage-bound diagnosis). */
	const char *delay = getenv("RINGFEED_TEST_READ_DELAY_US");
	f->test_delay_us = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
#endif
	/* A resumed loader issues from its saved position on, on every path:
	 * each place is a pure function of (batch, index, attempt), nothing
	 * before it is needed. */
	f->next_batch = l->start_batch;
	/* Pool: a quarter of it is the largest file, so a big file never waits
	 * for the whole pool to drain. */
	f->max_file = l->plan.max_read;
	int ret = setup_engine(l, f, err, errlen);
	if (ret)
		return ret;
	rf_io_info info;
	rfi_io_get_info(f->io, &info);
	atomic_store(&l->st.io_path, (unsigned)info.path);
	atomic_store(&l->st.dio_align, (unsigned)info.align);
	ret = setup_pool(l, f, &info, err, errlen);
	if (ret)
		return ret;
	return setup_requests(l, f, err, errlen);
}

void rfi_feeder_close(struct rf_feeder *f)
{
	/* cancels the reads in flight: nothing lands after this */
	if (f->cache) /* what was fetched is kept: its writes finish first (2 s at most) */
		rfi_cache_flush(f->cache, rfi_now_ns() + 2000000000ull);
	rfi_io_destroy(f->io); /* and the cache's writes in flight */
	f->io = NULL;
	rfi_cache_free(f->cache); /* its claims and segment let go */
	f->cache = NULL;
	free(f->objects);
	free(f->req_cache);
	free(f->free_reqs);
	free(f->drain);
	free(f->done);
	free(f->retry);
	free(f->shard_files);
	rfi_chunks_free(f);
}

void rfi_feeder_free(struct rf_feeder *f)
{
	if (!f)
		return;
	rfi_bufpool_destroy(&f->pool); /* the decoders no longer read it */
	free(f);
}
