/* transport.c - the transport table (transport.h): a row per way to a
 * source's objects, the one place a location's scheme is tested, and
 * set-up's requests through the row a source opened. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strncasecmp */
#include <sys/mman.h> /* memfd_create */
#include <unistd.h>

#include "remote/http.h" /* rf_http_reader, rfi_http_hint */
#include "remote/s3.h"
#include "remote/transport.h"
#include "util/util.h"

struct rf_transport {
	const rf_transport_ops *ops;
	void *state;
};

/* ---- file: a path on this machine (what no other row takes) ---- */

static int file_matches(const char *location)
{
	(void)location;
	return 1;
}

static int same_url(void *state, const char *location, char **out, char *err, size_t errlen)
{
	(void)state, (void)err, (void)errlen;
	return (*out = strdup(location)) ? 0 : -ENOMEM;
}

static const rf_transport_ops file_ops = {
	.name = "file", .matches = file_matches, .read_url = same_url,
};

/* ---- http: http(s):// URLs, read as they are, unsigned ---- */

static int http_matches(const char *location)
{
	return !strncasecmp(location, "http://", 7) || !strncasecmp(location, "https://", 8);
}

static const rf_transport_ops http_ops = {
	.name = "http", .matches = http_matches, .read_url = same_url, .reader = &rf_http_reader,
	.hint = rfi_http_hint, .remote = 1,
};

/* ---- s3: s3://BUCKET/KEY, read at the bucket's endpoint over http, signed ---- */

static int s3_matches(const char *location)
{
	return !strncasecmp(location, "s3://", 5);
}

static int s3_open(void **state, const char *location, char *err, size_t errlen)
{
	return rfi_s3_open((rf_s3 **)state, location, err, errlen);
}

/* Every s3:// URL of a source is in the bucket its first one opened. */
static int s3_read_url(void *state, const char *location, char **out, char *err, size_t errlen)
{
	const rf_s3 *s3 = state;
	size_t blen = strlen(s3->bucket);
	if (strncmp(location + 5, s3->bucket, blen) || location[5 + blen] != '/') {
		rfi_fmt(err, errlen, "'%s': not in bucket %s, as the source's first shard is (one "
		       "source, one bucket)", location, s3->bucket);
		return 1;
	}
	return (*out = rfi_s3_object_url(s3, rfi_s3_key_of(location))) ? 0 : -ENOMEM;
}

static const rf_io_sign *s3_sign(void *state)
{
	return rfi_s3_sign(state);
}

typedef struct s3_names {
	int (*fn)(void *user, const char *name, uint64_t size);
	void *user;
	size_t skip; /* the folder's key prefix, taken off each key */
} s3_names;

static int s3_name(void *user, const char *key, uint64_t size)
{
	s3_names *n = user;
	return n->fn(n->user, key + n->skip, size);
}

static int s3_list(void *state, const char *folder,
		   int (*fn)(void *user, const char *name, uint64_t size), void *user,
		   uint32_t budget_ms, char *err, size_t errlen)
{
	const char *prefix = rfi_s3_key_of(folder);
	s3_names n = { .fn = fn, .user = user, .skip = strlen(prefix) };
	return rfi_s3_list(state, prefix, s3_name, &n, budget_ms, err, errlen);
}

static void s3_free(void *state)
{
	rfi_s3_free(state);
}

static const rf_transport_ops s3_ops = {
	.name = "s3", .matches = s3_matches, .open = s3_open, .read_url = s3_read_url,
	.sign = s3_sign, .reader = &rf_http_reader, .hint = rfi_http_hint, .list = s3_list,
	.free = s3_free, .remote = 1, .read_elsewhere = 1,
};

/* ---- the table: asked in order, the file row last (it takes the rest) ---- */

static const rf_transport_ops *const rows[] = { &http_ops, &s3_ops, &file_ops };

const rf_transport_ops *rfi_transport_of(const char *location)
{
	size_t i = 0;
	while (!rows[i]->matches(location))
		i++;
	return rows[i];
}

int rfi_transport_is_remote(const char *location)
{
	return rfi_transport_of(location)->remote;
}

int rfi_transport_open(rf_transport **out, const char *location, char *err, size_t errlen)
{
	rf_transport *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ops = rfi_transport_of(location);
	int ret = t->ops->open ? t->ops->open(&t->state, location, err, errlen) : 0;
	if (ret) {
		free(t);
		t = NULL;
	}
	*out = t;
	return ret;
}

void rfi_transport_free(rf_transport *t)
{
	if (t && t->ops->free)
		t->ops->free(t->state);
	free(t);
}

const rf_transport_ops *rfi_transport_ops_of(const rf_transport *t)
{
	return t ? t->ops : &file_ops;
}

const rf_io_sign *rfi_transport_sign(const rf_transport *t)
{
	return t && t->ops->sign ? t->ops->sign(t->state) : NULL;
}

const rf_io_url_ops *rfi_transport_reader(const rf_transport *t)
{
	return t ? t->ops->reader : NULL;
}

const char *rfi_transport_hint(const rf_transport *t, int res)
{
	return t && t->ops->hint ? t->ops->hint(res) : "";
}

int rfi_transport_fetch(const rf_transport *t, const rf_fetch *f, rf_fetch_result *out,
		       char *err, size_t errlen)
{
	rf_fetch signed_f = *f;
	signed_f.sign = rfi_transport_sign(t);
	return rfi_fetch_run(&signed_f, out, err, errlen);
}

int rfi_transport_list(const rf_transport *t, const char *folder,
		      int (*fn)(void *user, const char *name, uint64_t size), void *user,
		      uint32_t budget_ms, char *err, size_t errlen)
{
	const rf_transport_ops *ops = rfi_transport_ops_of(t);
	if (!ops->list) {
		rfi_fmt(err, errlen, "'%s': a %s source lists no folder", folder, ops->name);
		return -ENOTSUP;
	}
	return ops->list(t->state, folder, fn, user, budget_ms, err, errlen);
}

int rfi_transport_read_url(rf_transport **t, const char *location, char **out, char *err,
			  size_t errlen)
{
	*out = NULL;
	const rf_transport_ops *ops = rfi_transport_of(location);
	if (!ops->remote) /* a path: read where it is */
		return ops->read_url(NULL, location, out, err, errlen);
	/* the source's transport: what its reads are read and signed with */
	if (!*t || (!(*t)->ops->open && ops->open)) {
		rf_transport *opened;
		int ret = rfi_transport_open(&opened, location, err, errlen);
		if (ret)
			return ret;
		rfi_transport_free(*t);
		*t = opened;
	}
	if (!ops->open) /* a row with no state: nothing to check */
		return ops->read_url(NULL, location, out, err, errlen);
	return (*t)->ops->read_url((*t)->state, location, out, err, errlen);
}

int rfi_transport_fetch_file(rf_transport **t, const char *location, const char *what,
			    const char *memname, size_t max_body, uint32_t budget_ms, char *err,
			    size_t errlen)
{
	char *at = NULL;
	int ret = rfi_transport_read_url(t, location, &at, err, errlen);
	if (ret)
		return ret < 0 ? ret : -EINVAL;
	rf_fetch_result r = { 0 };
	ret = rfi_transport_fetch(*t, &(rf_fetch){ .url = at, .max_body = max_body,
						  .budget_ms = budget_ms }, &r, err, errlen);
	int fd = -1;
	if (!ret && r.status != 200) {
		char why[256];
		rfi_fetch_why(&r, why, sizeof(why));
		rfi_fmt(err, errlen, "%s%s%s: %s", what ? what : "", what ? " " : "", location, why);
		ret = r.status == 404 ? -ENOENT : r.status == 403 ? -EACCES : -EIO;
	}
	if (!ret && ((fd = memfd_create(memname, MFD_CLOEXEC)) < 0 ||
		     (r.body_len && write(fd, r.body, r.body_len) != (ssize_t)r.body_len))) {
		ret = -errno;
		rfi_fmt(err, errlen, "%s%s%s: %s", what ? what : "", what ? " " : "", location,
		       strerror(errno));
	}
	rfi_fetch_result_free(&r);
	free(at);
	if (ret && fd >= 0)
		close(fd);
	return ret ? ret : fd;
}

int rfi_transport_beside(rf_transport **t, const char *root, const char *name,
			size_t max_body, uint32_t budget_ms, char *path, size_t plen, int *fd,
			char *err, size_t errlen)
{
	*fd = -1;
	rfi_fmt(path, plen, "%s/%s", root, name);
	if (!rfi_transport_is_remote(root)) {
		if (access(path, F_OK))
			path[0] = '\0';
		return 0;
	}
	int ret = rfi_transport_fetch_file(t, path, NULL, "ringfeed-beside", max_body, budget_ms,
					  err, errlen);
	if (ret == -ENOENT) { /* the server has none */
		path[0] = '\0';
		return 0;
	}
	if (ret < 0)
		return ret == -EACCES ? -EIO : ret; /* a refusal fails set-up as any status does */
	*fd = ret;
	rfi_fmt(path, plen, "/proc/self/fd/%d", *fd);
	return 0;
}
