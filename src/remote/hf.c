/* hf.c - the Hugging Face Hub (hf.h): locations parsed, the token found,
 * the tree listed page by page, resolve URLs made, and the signer whose
 * keys are the bearer token's header line and whose redirects to the CDN
 * are kept (presigned.h). The requests themselves are fetch.c's (set-up)
 * and http.c's (the run's reads). */
#define _GNU_SOURCE
#include "remote/hf.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/fetch.h"
#include "remote/hf_tree.h"
#include "remote/http.h" /* rfi_http_hint */
#include "remote/presigned.h"
#include "util/util.h"

#define PREFIX "hf://datasets/"
#define PARQUET_REVISION "refs/convert/parquet"
#define TOKEN_MAX 4096
/* Pages of one listing at most (the Hub's are 1,000 entries or more). */
#define PAGES_MAX 100000

/* A location, parsed. */
typedef struct hf_loc {
	char repo[256];  /* "ORG/NAME" */
	char rev[256];   /* decoded: "main", "refs/convert/parquet" */
	char path[RF_HF_PATH_MAX]; /* in the repository, no leading '/'; may be "" */
	int bare;        /* the dataset alone: its Parquet conversion, every file */
} hf_loc;

int rfi_hf_matches(const char *location)
{
	return !strncmp(location, "hf://", 5);
}

static int name_ok(const char *s, size_t n)
{
	return n > 0 && n < 100 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				       "0123456789._-") >= n && s[0] != '.';
}

/* %XX decoded from s[0..n) into out[len]. @return : 0, or -1 (a bad
 * escape, a NUL, or too long). */
static int pct_decode(const char *s, size_t n, char *out, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned v = (unsigned char)s[i];
		if (s[i] == '%') {
			char hex[3] = { i + 1 < n ? s[i + 1] : 0, i + 2 < n ? s[i + 2] : 0, 0 };
			char *end;
			v = (unsigned)strtoul(hex, &end, 16);
			if (end != hex + 2 || !v)
				return -1;
			i += 2;
		}
		if (k + 1 >= len)
			return -1;
		out[k++] = (char)v;
	}
	out[k] = '\0';
	return 0;
}

/* The revision after '@' at s: up to the next '/', or three segments for
 * refs/convert/X and refs/pr/N written with their slashes. *end: past it. */
static int parse_rev(const char *s, hf_loc *l, const char **end)
{
	size_t n = strcspn(s, "/");
	if (!strncmp(s, "refs/convert/", 13) || !strncmp(s, "refs/pr/", 8)) {
		const char *third = strchr(s, '/') + 1;
		third = strchr(third, '/') + 1;
		n = (size_t)(third - s) + strcspn(third, "/");
	}
	*end = s + n;
	return n == 0 || pct_decode(s, n, l->rev, sizeof(l->rev)) ? -1 : 0;
}

static int parse(const char *location, hf_loc *l, char *err, size_t errlen)
{
	*l = (hf_loc){ .rev = "main" };
	const char *p = location + strlen(PREFIX), *why = NULL;
	if (strncmp(location, PREFIX, strlen(PREFIX))) {
		/* huggingface_hub's hf:// names models (bare ORG/NAME too) and
		 * Spaces as well: say which was named and that it is not read */
		why = !strncmp(location, "hf://models/", 12)   ? "a model repository: "
		      : !strncmp(location, "hf://spaces/", 12) ? "a Space: "
		      : !strncmp(location, "hf://datasets", 13) ? ""
								: "a model repository (no "
								  "datasets/ prefix): ";
		rfi_fmt(err, errlen, "'%s': %sringfeed reads only datasets from the Hub: "
				     "hf://datasets/ORG/NAME[@REVISION][/PATH]", location, why);
		return -EINVAL;
	}
	size_t org = strcspn(p, "/"), name = p[org] ? strcspn(p + org + 1, "/@") : 0;
	if (!name_ok(p, org) || !name_ok(p + org + 1, name)) {
		why = "ORG/NAME is not a dataset's name (letters, digits, '.', '_', '-')";
		goto bad;
	}
	rfi_fmt(l->repo, sizeof(l->repo), "%.*s", (int)(org + 1 + name), p);
	p += org + 1 + name;
	int has_rev = *p == '@';
	if (has_rev && parse_rev(p + 1, l, &p)) {
		why = "@REVISION is empty or not url-encoded right";
		goto bad;
	}
	if (*p == '/')
		p++;
	if (strlen(p) >= sizeof(l->path) || strstr(p, "//") || !strcmp(p, "..") ||
	    !strncmp(p, "../", 3) || strstr(p, "/../")) {
		why = "the path in the dataset is not one (too long, '//' or '..')";
		goto bad;
	}
	memcpy(l->path, p, strlen(p) + 1);
	if (!has_rev && !l->path[0]) { /* the dataset alone: its Parquet conversion */
		l->bare = 1;
		rfi_fmt(l->rev, sizeof(l->rev), "%s", PARQUET_REVISION);
	}
	return 0;
bad:
	rfi_fmt(err, errlen, "'%s': %s", location, why);
	return -EINVAL;
}

/* s url-encoded onto out[len] at *k: unreserved bytes as they are, '/'
 * too when keep_slash. @return : 0, or -1 (no room). */
static int pct_encode(const char *s, int keep_slash, char *out, size_t len, size_t *k)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			    strchr("-._~", c) || (keep_slash && c == '/');
		if (*k + (plain ? 1 : 3) >= len)
			return -1;
		if (plain) {
			out[(*k)++] = (char)c;
		} else {
			out[(*k)++] = '%';
			out[(*k)++] = hex[c >> 4];
			out[(*k)++] = hex[c & 15];
		}
	}
	out[*k] = '\0';
	return 0;
}

/* "{a}{b url-encoded}{c}{d url-encoded, '/' kept}{e}", malloc'd, or NULL. */
static char *url_of(const char *a, const char *b, const char *c, const char *d, const char *e)
{
	size_t len = strlen(a) + 3 * strlen(b) + strlen(c) + 3 * strlen(d) + strlen(e) + 1, k = 0;
	char *out = malloc(len);
	if (!out)
		return NULL;
	k = (size_t)snprintf(out, len, "%s", a);
	pct_encode(b, 0, out, len, &k);
	k += (size_t)snprintf(out + k, len - k, "%s", c);
	pct_encode(d, 1, out, len, &k);
	snprintf(out + k, len - k, "%s", e);
	return out;
}

/* ---- the token ---- */

/* The token file huggingface_hub writes: $HF_TOKEN_PATH, $HF_HOME/token,
 * $XDG_CACHE_HOME/huggingface/token, ~/.cache/huggingface/token. */
static int token_path(char *out, size_t len)
{
	const char *tp = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME");
	const char *xdg = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	if (tp && tp[0])
		rfi_fmt(out, len, "%s", tp);
	else if (home && home[0])
		rfi_fmt(out, len, "%s/token", home);
	else if (xdg && xdg[0])
		rfi_fmt(out, len, "%s/huggingface/token", xdg);
	else if (h && h[0])
		rfi_fmt(out, len, "%s/.cache/huggingface/token", h);
	else
		return 0;
	return 1;
}

/* A token fit for a header line: printable ASCII, no blank. */
static int token_ok(const char *t)
{
	for (; *t; t++)
		if (*t <= ' ' || *t > '~')
			return 0;
	return 1;
}

/* The token file's text into hf->token, as credential files are opened:
 * not through a symbolic link, a regular file, the user's own, writable by
 * no one else. None there: no token. */
static int token_file(rf_hf *hf, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return 0;
	struct stat st;
	const char *why = fd < 0 ? (errno == ELOOP ? "is a symbolic link (not followed for a "
				    "credential)" : strerror(errno))
			: fstat(fd, &st) ? strerror(errno)
			: !S_ISREG(st.st_mode) ? "is not a regular file"
			: st.st_uid != geteuid() ? "is not the user's own"
			: (st.st_mode & 022) ? "is writable by others than its owner (chmod go-w)"
			: NULL;
	char *buf = why ? NULL : calloc(1, TOKEN_MAX + 1);
	ssize_t n = buf ? read(fd, buf, TOKEN_MAX) : -1;
	if (!why && n < 0)
		why = buf ? strerror(errno) : "out of memory";
	if (fd >= 0)
		close(fd);
	if (why) {
		rfi_free_secret(buf);
		rfi_fmt(err, errlen, "the Hugging Face token file '%s' %s%s", path,
		       why[0] == 'i' ? "" : ": ", why);
		return -EACCES;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (!n) {
		rfi_free_secret(buf);
		return 0;
	}
	hf->token = buf;
	hf->token_from = strdup(path);
	return hf->token_from ? 0 : -ENOMEM;
}

static int find_token(rf_hf *hf, char *err, size_t errlen)
{
	const char *env = getenv("HF_TOKEN");
	char path[PATH_MAX];
	int ret = 0;
	if (env && env[0]) {
		if (!(hf->token = strdup(env)) || !(hf->token_from = strdup("HF_TOKEN")))
			return -ENOMEM;
	} else if (token_path(path, sizeof(path)) && (ret = token_file(hf, path, err, errlen))) {
		return ret;
	}
	if (hf->token && (strlen(hf->token) > TOKEN_MAX || !token_ok(hf->token))) {
		rfi_fmt(err, errlen, "the Hugging Face token from %s is not one (a token is printable "
		       "ASCII without blanks)", hf->token_from);
		return -EINVAL;
	}
	return 0;
}

/* ---- the signer: the token's header line, and the kept redirects ---- */

static uint64_t sign_generation(void *keys)
{
	(void)keys;
	return 1; /* one token for the run */
}

static int sign_take(void *keys, rf_sign_keys *out, uint64_t *gen)
{
	const rf_hf *hf = keys;
	*out = (rf_sign_keys){ 0 };
	*gen = 1;
	if (hf->token && !(out->header = rfi_strprintf("Authorization: Bearer %s", hf->token)))
		return -ENOMEM;
	return 0;
}

/* ---- set-up's requests to the Hub ---- */

/* What the Hub's refusal status means for repo, in err. @return : the errno. */
static int refused(const rf_hf *hf, const rf_fetch_result *r, const char *rev, char *err,
		   size_t errlen)
{
	char why[256];
	rfi_fetch_why(r, why, sizeof(why));
	if (r->status == 401 || r->status == 403) {
		rfi_fmt(err, errlen, "hf://datasets/%s: the Hub refuses it (%s): a private or gated "
		       "dataset; %s", hf->repo, why, hf->token ? "the token sent has no access to "
		       "it (accept its conditions on its page, or use a token that may read it)"
		       : "no token was sent (set HF_TOKEN, or log in with `hf auth login`)");
		return -EACCES;
	}
	if (r->status == 404) {
		rfi_fmt(err, errlen, "hf://datasets/%s: no such dataset, revision '%s' or folder at "
		       "%s (%s)", hf->repo, rev, hf->endpoint, why);
		return -ENOENT;
	}
	rfi_fmt(err, errlen, "hf://datasets/%s: the Hub answered %s", hf->repo, why);
	return -EIO;
}

/* The Hub asked once whether the revision is there and readable. */
static int check_revision(rf_hf *hf, const hf_loc *l, char *err, size_t errlen)
{
	char *pre = rfi_strprintf("%s/api/datasets/%s/revision/", hf->endpoint, hf->repo);
	char *url = pre ? url_of(pre, l->rev, "", "", "") : NULL;
	free(pre);
	if (!url)
		return -ENOMEM;
	rf_fetch_result r;
	int ret = rfi_fetch_run(&(rf_fetch){ .url = url, .sign = &hf->sign, .max_body = 16u << 20 },
				&r, err, errlen);
	if (!ret && r.status != 200)
		ret = refused(hf, &r, l->rev, err, errlen);
	rfi_fetch_result_free(&r);
	free(url);
	return ret;
}

int rfi_hf_open(rf_hf **out, const char *location, char *err, size_t errlen)
{
	*out = NULL;
	hf_loc l;
	int ret = parse(location, &l, err, errlen);
	if (ret)
		return ret;
	rf_hf *hf = calloc(1, sizeof(*hf));
	const char *ep = getenv("HF_ENDPOINT");
	if (!hf || !(hf->endpoint = strdup(ep && ep[0] ? ep : RF_HF_ENDPOINT)) ||
	    !(hf->repo = strdup(l.repo)) || !(hf->presigned = rfi_presigned_new())) {
		rfi_hf_free(hf);
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	size_t n = strlen(hf->endpoint);
	while (n && hf->endpoint[n - 1] == '/')
		hf->endpoint[--n] = '\0';
	hf->sign = (rf_io_sign){ .keys = hf, .generation = sign_generation, .take = sign_take,
				 .presigned = hf->presigned };
	ret = find_token(hf, err, errlen);
	if (!ret)
		ret = check_revision(hf, &l, err, errlen);
	if (ret) {
		rfi_hf_free(hf);
		return ret;
	}
	*out = hf;
	return 0;
}

void rfi_hf_free(rf_hf *hf)
{
	if (!hf)
		return;
	free(hf->endpoint);
	free(hf->repo);
	rfi_free_secret(hf->token);
	free(hf->token_from);
	rfi_presigned_free(hf->presigned);
	free(hf);
}

int rfi_hf_read_url(const rf_hf *hf, const char *location, char **out, char *err,
		    size_t errlen)
{
	*out = NULL;
	hf_loc l;
	int ret = parse(location, &l, err, errlen);
	if (ret)
		return ret;
	if (strcmp(l.repo, hf->repo)) {
		rfi_fmt(err, errlen, "'%s': not in dataset %s, as the source's first file is (one "
		       "source, one dataset)", location, hf->repo);
		return 1;
	}
	if (!l.path[0] || l.path[strlen(l.path) - 1] == '/') {
		rfi_fmt(err, errlen, "'%s': names no file", location);
		return -EINVAL;
	}
	char *pre = rfi_strprintf("%s/datasets/%s/resolve/", hf->endpoint, hf->repo);
	*out = pre ? url_of(pre, l.rev, "/", l.path, "") : NULL;
	free(pre);
	return *out ? 0 : -ENOMEM;
}

/* The folder of l's files (its path before the first glob character, up to
 * a '/') into base[len] ("" or "a/b/"), and the pattern the rest is (NULL:
 * every file below). */
static const char *split_glob(const hf_loc *l, char *base, size_t len)
{
	size_t g = strcspn(l->path, "*?[");
	const char *slash = memrchr(l->path, '/', g);
	size_t b = l->path[g] ? (slash ? (size_t)(slash - l->path) + 1 : 0) : strlen(l->path);
	rfi_fmt(base, len, "%.*s", (int)b, l->path);
	return l->path[g] ? l->path + b : NULL;
}

int rfi_hf_folder_of(const char *location, char **folder)
{
	*folder = NULL;
	hf_loc l;
	char err[8], base[RF_HF_PATH_MAX];
	if (parse(location, &l, err, sizeof(err))) /* a listing to open: open says */
		return (*folder = strdup(location)) ? 1 : -ENOMEM; /* what is wrong */
	size_t n = strlen(l.path);
	if (!l.bare && n && l.path[n - 1] != '/' && !strpbrk(l.path, "*?["))
		return 0; /* one file */
	split_glob(&l, base, sizeof(base));
	*folder = url_of(PREFIX, "", "", l.repo, "@");
	char *with_rev = *folder ? url_of(*folder, l.rev, "/", base, "") : NULL;
	free(*folder);
	*folder = with_rev;
	if (*folder && (*folder)[strlen(*folder) - 1] != '/') { /* base "" or "a/b/" */
		char *slashed = rfi_strprintf("%s/", *folder);
		free(*folder);
		*folder = slashed;
	}
	return *folder ? 1 : -ENOMEM;
}

/* ---- the listing ---- */

typedef struct file_of {
	char *name; /* relative to the folder */
	uint64_t size;
} file_of;

/* The files one listing gathers: those under base matching pattern. */
typedef struct gathered {
	const char *base;    /* "" or "a/b/" */
	const char *pattern; /* relative to base, or NULL: every file */
	file_of *files;
	size_t n, cap;
} gathered;

static int gather_file(void *user, const char *path, uint64_t size)
{
	gathered *g = user;
	size_t bl = strlen(g->base);
	if (strncmp(path, g->base, bl))
		return 0; /* not below the folder asked (a Hub that lists more) */
	const char *rel = path + bl;
	/* '*' and '?' stay within a name, as a shell's; "**" crosses folders */
	if (g->pattern && fnmatch(g->pattern, rel, strstr(g->pattern, "**") ? 0 : FNM_PATHNAME))
		return 0;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 256;
		file_of *x = realloc(g->files, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		g->files = x;
		g->cap = cap;
	}
	if (!(g->files[g->n].name = strdup(rel)))
		return -ENOMEM;
	g->files[g->n++].size = size;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const file_of *)a)->name, ((const file_of *)b)->name);
}

/* One page at *url (the next one's URL replaces it, or NULL: the last).
 * The next page's URL must be on the endpoint: the token goes with it. */
static int list_page(const rf_hf *hf, const hf_loc *l, char **url, gathered *g,
		     uint32_t budget_ms, char *err, size_t errlen)
{
	rf_fetch_result r;
	int ret = rfi_fetch_run(&(rf_fetch){ .url = *url, .sign = &hf->sign, .keep_header = "Link",
					     .budget_ms = budget_ms }, &r, err, errlen);
	if (!ret && r.status != 200)
		ret = refused(hf, &r, l->rev, err, errlen);
	if (!ret)
		ret = rfi_hf_tree_parse((const char *)r.body, r.body_len, gather_file, g, err, errlen);
	if (ret == -EPROTO) {
		char was[512];
		rfi_fmt(was, sizeof(was), "%s", err);
		rfi_fmt(err, errlen, "hf://datasets/%s: %s", hf->repo, was);
	}
	char next[4096];
	int more = !ret && r.kept && rfi_hf_link_next(r.kept, next, sizeof(next));
	size_t el = strlen(hf->endpoint);
	if (more && (strncmp(next, hf->endpoint, el) || next[el] != '/')) {
		rfi_fmt(err, errlen, "hf://datasets/%s: the listing's next page is not on %s (not "
		       "followed: the token goes with it)", hf->repo, hf->endpoint);
		ret = -EPROTO;
	}
	rfi_fetch_result_free(&r);
	free(*url);
	*url = !ret && more ? strdup(next) : NULL;
	return !ret && more && !*url ? -ENOMEM : ret;
}

int rfi_hf_list(const rf_hf *hf, const char *location,
		int (*fn)(void *user, const char *name, uint64_t size), void *user,
		uint32_t budget_ms, char *err, size_t errlen)
{
	hf_loc l;
	char base[RF_HF_PATH_MAX], dir[RF_HF_PATH_MAX];
	int ret = parse(location, &l, err, errlen);
	if (ret)
		return ret;
	gathered g = { .base = base, .pattern = split_glob(&l, base, sizeof(base)) };
	rfi_fmt(dir, sizeof(dir), "%.*s", (int)strlen(base) - (base[0] ? 1 : 0), base);
	char *pre = rfi_strprintf("%s/api/datasets/%s/tree/", hf->endpoint, hf->repo);
	char *url = pre ? url_of(pre, l.rev, dir[0] ? "/" : "", dir, "?recursive=true") : NULL;
	free(pre);
	ret = url ? 0 : -ENOMEM;
	for (unsigned page = 0; !ret && url; page++) {
		if (page == PAGES_MAX) {
			rfi_fmt(err, errlen, "hf://datasets/%s: the listing runs past %u pages",
			       hf->repo, PAGES_MAX);
			ret = -EPROTO;
			break;
		}
		ret = list_page(hf, &l, &url, &g, budget_ms, err, errlen);
	}
	free(url);
	if (ret == -ENOMEM)
		rfi_fmt(err, errlen, "out of memory");
	if (!ret)
		qsort(g.files, g.n, sizeof(*g.files), by_name);
	for (size_t i = 0; !ret && i < g.n; i++)
		ret = fn(user, g.files[i].name, g.files[i].size);
	for (size_t i = 0; i < g.n; i++)
		free(g.files[i].name);
	free(g.files);
	return ret;
}

const char *rfi_hf_hint(int res)
{
	if (res == -EACCES)
		return " (the Hub refuses it: a private or gated dataset needs HF_TOKEN, or the "
		       "token file `hf auth login` writes, with access to it)";
	return rfi_http_hint(res);
}
