/* parquet_file.c - a Parquet file as set-up reads it (parquet_file.h):
 * local files by pread(), remote ones by ranged GETs through the source's
 * transport (remote/transport.h: signed as its reads are, an hf:// file's
 * redirect to the CDN kept), every answer checked against what was asked
 * (fetch.c: Content-Range, lengths) and against what the first answer
 * said of the file (its size, its ETag: asked for with If-Match). */
#define _GNU_SOURCE
#include "source/parquet_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/fetch.h"
#include "remote/transport.h"
#include "util/util.h"

/* Room for an error body past the bytes asked (S3 says why in XML). */
#define ERROR_BODY 65536

/* fetch's message starts with the URL, which the caller's names: without it. */
static void fetch_why(const char *url, const char *ferr, char *why, size_t len)
{
	size_t n = strlen(url);
	const char *say = !strncmp(ferr, url, n) && !strncmp(ferr + n, ": ", 2) ? ferr + n + 2 : ferr;
	rfi_fmt(why, len, "%s", say);
}

/* The code of a refusal, as the read engine gives it for a read. */
static int status_code(long status)
{
	return status == 404 || status == 410 ? -ENOENT
	     : status == 401 || status == 403 ? -EACCES
	     : status == 412 ? -ESTALE /* If-Match: the file changed */
	     : -EIO;
}

/* One ranged GET of pf's URL: [off, off + n), or its last n bytes (tail).
 * A status other than 206 (or a 200 of the whole file) is refused. */
static int remote_get(rf_pq_file *pf, uint64_t off, size_t n, int tail, rf_fetch_result *res,
		      char *why, size_t len)
{
	rf_index *idx = pf->idx;
	const char *url = idx->urls[pf->f];
	const char *etag = idx->etags[pf->f];
	char if_match[16 + RF_IO_ETAG_MAX];
	const char *headers[2] = { NULL, NULL };
	if (!tail && etag[0]) {
		rfi_fmt(if_match, sizeof(if_match), "If-Match: %s", etag);
		headers[0] = if_match;
	}
	char ferr[512];
	pf->requests++;
	int ret = rfi_transport_fetch(idx->transport,
				     &(rf_fetch){ .url = url, .headers = headers, .offset = off,
						  .len = n, .tail = tail, .max_body = n + ERROR_BODY,
						  .budget_ms = idx->remote_timeout_ms },
				     res, ferr, sizeof(ferr));
	if (ret == -EFBIG) {
		rfi_fmt(why, len, "the server answered a range of %zu bytes with more than that: it "
			"must serve byte ranges (a 206 to a Range request)", n);
		return ret;
	}
	if (ret) {
		fetch_why(url, ferr, why, len);
		return ret;
	}
	if (res->status == 206 || (res->status == 200 && (tail || (off == 0 && n == res->body_len))))
		return 0;
	rfi_fetch_why(res, why, len);
	if (res->status == 200)
		rfi_fmt(why, len, "HTTP 200 to a range from byte %llu: the server must serve byte "
			"ranges (a 206 to a Range request)", (unsigned long long)off);
	if (res->status == 416 && tail)
		rfi_fmt(why, len, "HTTP 416 to its last %zu bytes: the server serves no end of it", n);
	else if (res->status == 416)
		rfi_fmt(why, len, "HTTP 416 to bytes %llu-%llu: the server says the file ends before "
			"them, though it said it is %llu bytes", (unsigned long long)off,
			(unsigned long long)(off + n - 1), (unsigned long long)pf->size);
	if (res->status == 412)
		rfi_fmt(why, len, "it changed on the server while ringfeed read it (another ETag "
			"than %s)", etag);
	ret = res->status == 200 ? -EPROTO : res->status == 416 ? -ESTALE : status_code(res->status);
	rfi_fetch_result_free(res);
	return ret;
}

/* n bytes at off of a remote file into buf: exactly those, of the file
 * the first answer described (its size; its ETag, asked for). */
static int remote_read(rf_pq_file *pf, uint64_t off, size_t n, uint8_t *buf, char *why,
		       size_t len)
{
	rf_fetch_result res;
	int ret = remote_get(pf, off, n, 0, &res, why, len);
	if (ret)
		return ret;
	const char *etag = pf->idx->etags[pf->f];
	if (res.size && res.size != pf->size) {
		rfi_fmt(why, len, "it changed on the server while ringfeed read it (%llu bytes, "
			"then %llu)", (unsigned long long)pf->size, (unsigned long long)res.size);
		ret = -ESTALE;
	} else if (etag[0] && res.etag[0] && strcmp(etag, res.etag)) {
		rfi_fmt(why, len, "it changed on the server while ringfeed read it (ETag %s, then "
			"%s)", etag, res.etag);
		ret = -ESTALE;
	} else if (res.body_len != n) {
		rfi_fmt(why, len, "asked %zu bytes at offset %llu, the server sent %zu (the file is "
			"%llu bytes)", n, (unsigned long long)off, res.body_len,
			(unsigned long long)pf->size);
		ret = RF_EINDEX;
	} else if (n) {
		memcpy(buf, res.body, n);
	}
	rfi_fetch_result_free(&res);
	return ret;
}

/* A remote file's first request: its tail, its size and its ETag. */
static int remote_open(rf_pq_file *pf, char *err, size_t errlen)
{
	rf_fetch_result res;
	char why[512];
	int ret = remote_get(pf, 0, RF_PQ_TAIL_FETCH, 1, &res, why, sizeof(why));
	if (ret) {
		rfi_fmt(err, errlen, "%s: %s%s", pf->name, why,
			rfi_transport_hint(pf->idx->transport, ret));
		return ret;
	}
	if (res.size < 4 + RF_PQ_TAIL_BYTES || res.offset + res.body_len != res.size) {
		rfi_fmt(err, errlen, "%s: not a Parquet file (%llu bytes: too short)", pf->name,
			(unsigned long long)res.size);
		rfi_fetch_result_free(&res);
		return RF_EINDEX;
	}
	pf->size = res.size;
	pf->tail_off = res.offset;
	pf->tail = res.body; /* the result's body, kept */
	res.body = NULL;
	memcpy(pf->idx->etags[pf->f], res.etag, RF_IO_ETAG_MAX); /* the run's reads ask for it */
	rfi_fetch_result_free(&res);
	return 0;
}

static int local_open(rf_pq_file *pf, char *err, size_t errlen)
{
	const rf_index *idx = pf->idx;
	int fd = rfi_open_regular(idx->root_fd, idx->shards[pf->f], "Parquet file", err, errlen);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st)) {
		int ret = -errno;
		rfi_fmt(err, errlen, "%s: %s", pf->name, strerror(-ret));
		close(fd);
		return ret;
	}
	if (st.st_size < 4 + RF_PQ_TAIL_BYTES) {
		rfi_fmt(err, errlen, "%s: not a Parquet file (%lld bytes: too short)", pf->name,
			(long long)st.st_size);
		close(fd);
		return RF_EINDEX;
	}
	pf->fd = fd;
	pf->size = (uint64_t)st.st_size;
	pf->mtime_sec = st.st_mtim.tv_sec;
	pf->mtime_nsec = st.st_mtim.tv_nsec;
	pf->ino = (uint64_t)st.st_ino;
	return 0;
}

int rfi_pq_file_open(rf_index *idx, uint32_t f, rf_pq_file *pf, char *err, size_t errlen)
{
	memset(pf, 0, sizeof(*pf));
	pf->fd = -1;
	pf->idx = idx;
	pf->f = f;
	rfi_index_shard_shown(idx, f, pf->name, sizeof(pf->name));
	return idx->urls ? remote_open(pf, err, errlen) : local_open(pf, err, errlen);
}

void rfi_pq_file_close(rf_pq_file *pf)
{
	if (pf->fd >= 0)
		close(pf->fd);
	pf->fd = -1;
	free(pf->win);
	free(pf->tail);
	pf->win = pf->tail = NULL;
}

static int local_read(rf_pq_file *pf, uint64_t off, size_t n, uint8_t *buf, char *why,
		      size_t len)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(pf->fd, buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			rfi_fmt(why, len, "reading %zu bytes at offset %llu: %s", n,
				(unsigned long long)off, strerror(e));
			return -e;
		}
		if (r == 0) {
			rfi_fmt(why, len, "%zu bytes at offset %llu: the file ends at %llu, it was %llu "
				"bytes when opened (truncated or rewritten while ringfeed read it)", n,
				(unsigned long long)off, (unsigned long long)(off + got),
				(unsigned long long)pf->size);
			return RF_EINDEX;
		}
		got += (size_t)r;
	}
	return 0;
}

int rfi_pq_file_read(rf_pq_file *pf, uint64_t off, size_t n, uint8_t *buf, char *why,
		     size_t len)
{
	if (off > pf->size || n > pf->size - off) {
		rfi_fmt(why, len, "%zu bytes at offset %llu: past the file's end (%llu bytes)", n,
			(unsigned long long)off, (unsigned long long)pf->size);
		pf->read_failed = 1;
		return RF_EINDEX;
	}
	if (pf->tail && off >= pf->tail_off) { /* the first answer holds them */
		memcpy(buf, pf->tail + (off - pf->tail_off), n);
		return 0;
	}
	if (pf->win && off >= (uint64_t)pf->win_off && off - (uint64_t)pf->win_off <= pf->win_len &&
	    n <= pf->win_len - (size_t)(off - (uint64_t)pf->win_off)) { /* a window holds them */
		memcpy(buf, pf->win + (off - (uint64_t)pf->win_off), n);
		return 0;
	}
	int ret = pf->fd >= 0 ? local_read(pf, off, n, buf, why, len)
			      : remote_read(pf, off, n, buf, why, len);
	if (ret)
		pf->read_failed = 1;
	return ret;
}

/* win holds [off, off + n): read into it (grown to n) unless it does. */
static int window_fill(rf_pq_file *pf, uint64_t off, size_t n, char *why, size_t len)
{
	if (pf->win && off >= (uint64_t)pf->win_off && off - (uint64_t)pf->win_off <= pf->win_len &&
	    n <= pf->win_len - (size_t)(off - (uint64_t)pf->win_off))
		return 0;
	if (n > pf->win_cap) {
		uint8_t *w = realloc(pf->win, n);
		if (!w) {
			rfi_fmt(why, len, "out of memory");
			return -ENOMEM;
		}
		pf->win = w;
		pf->win_cap = n;
	}
	pf->win_len = 0;
	int ret = rfi_pq_file_read(pf, off, n, pf->win, why, len);
	if (ret)
		return ret;
	pf->win_off = (int64_t)off;
	pf->win_len = n;
	return 0;
}

int rfi_pq_file_hold(rf_pq_file *pf, uint64_t off, uint64_t n, char *why, size_t len)
{
	if (pf->fd >= 0 || n > RF_PQ_HOLD_MAX || !n)
		return 0;
	if (pf->tail && off >= pf->tail_off)
		return 0; /* the first answer holds them */
	return window_fill(pf, off, (size_t)n, why, len);
}

int rfi_pq_file_scan_read(void *ctx, int64_t offset, size_t n, const uint8_t **p, char *why,
			  size_t len)
{
	rf_pq_file *pf = ctx;
	uint64_t off = (uint64_t)offset;
	if (offset != pf->scan_prev) { /* the next header: the last page's size is known */
		pf->scan_small = pf->scan_prev >= 0 && offset > pf->scan_prev &&
				 (uint64_t)(offset - pf->scan_prev) < RF_PQ_SMALL_PAGE;
		pf->scan_prev = offset;
	}
	if (pf->tail && off >= pf->tail_off && off <= pf->size && n <= pf->size - off) {
		*p = pf->tail + (off - pf->tail_off);
		return 0;
	}
	if (pf->win && offset >= pf->win_off && (uint64_t)(offset - pf->win_off) <= pf->win_len &&
	    n <= pf->win_len - (size_t)(offset - pf->win_off)) {
		*p = pf->win + (offset - pf->win_off);
		return 0;
	}
	/* a window from offset, never past the chunk: for a remote file, the
	 * rest of the chunk when it is at most RF_PQ_REMOTE_WINDOW (one request
	 * for its headers and its dictionary page), a window that large when
	 * its pages are small (the last one under RF_PQ_SMALL_PAGE: many
	 * headers a request); else what the scan asks (a header's: a request a
	 * page, its body not read) */
	uint64_t rest = pf->scan_end > off ? pf->scan_end - off : 0;
	size_t want = n;
	if (pf->fd < 0 && (pf->scan_small || rest <= RF_PQ_REMOTE_WINDOW))
		want = RF_MAX(n, RF_PQ_REMOTE_WINDOW);
	if (pf->scan_end > off && want > pf->scan_end - off)
		want = RF_MAX(n, (size_t)(pf->scan_end - off));
	if (window_fill(pf, off, want, why, len))
		return -1;
	*p = pf->win + (off - (uint64_t)pf->win_off);
	return 0;
}
