/* s3.c - an S3 bucket's endpoint, region and source of credentials, found
 * as the AWS tools find them (s3.h; the keys are fetched and kept fresh by
 * credentials.c), its objects' URLs, and its listing (ListObjectsV2). The
 * listing's requests are set-up's, through fetch.c; the reads of a run are
 * the engine's. */
#define _GNU_SOURCE
#include "remote/s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "remote/credential_sources.h" /* rfi_creds_fetch */
#include "remote/credentials.h"
#include "remote/fetch.h"
#include "util/hash.h"
#include "util/util.h"

#define IMDS_DEFAULT "http://169.254.169.254"

const char *rfi_s3_key_of(const char *url)
{
	const char *slash = strchr(url + 5, '/');
	return slash ? slash + 1 : "";
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && v[0] ? v : NULL;
}

/* ---- the shared files: ~/.aws/credentials and ~/.aws/config ---- */

/* The value of key in section (a line "[section]"; in the config file
 * "[profile NAME]", or "[default]") of an INI file, into out; nested
 * settings ("s3 =" then indented "addressing_style = path") are asked as
 * "s3.addressing_style". @return : 1 found, 0 not (or no such file). */
static int ini_get(const char *path, const char *section, const char *key, char *out, size_t len)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	char line[1024], parent[64] = "";
	int in = 0, found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		int indented = line[0] == ' ' || line[0] == '\t';
		char *s = line + strspn(line, " \t");
		s[strcspn(s, "\r\n")] = '\0';
		if (!s[0] || s[0] == '#' || s[0] == ';')
			continue;
		if (s[0] == '[') {
			char *end = strchr(s, ']');
			if (end)
				*end = '\0';
			char *name = s + 1 + strspn(s + 1, " \t");
			in = !strcmp(name, section);
			parent[0] = '\0';
			continue;
		}
		char *eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		char *k = s, *v = eq + 1;
		for (char *e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		*eq = '\0';
		v += strspn(v, " \t");
		for (size_t n = strlen(v); n && (v[n - 1] == ' ' || v[n - 1] == '\t'); n--)
			v[n - 1] = '\0';
		char full[160];
		if (!indented) {
			if (!v[0]) { /* "s3 =": its settings follow, indented */
				rfi_fmt(parent, sizeof(parent), "%s", k);
				continue;
			}
			parent[0] = '\0';
			rfi_fmt(full, sizeof(full), "%s", k);
		} else {
			rfi_fmt(full, sizeof(full), "%s.%s", parent, k);
		}
		if (!strcmp(full, key)) {
			rfi_fmt(out, len, "%s", v);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* The shared files' paths, and the profile's sections in each. */
typedef struct profile {
	char creds[1024], config[1024];
	char creds_section[160], config_section[168];
	const char *name;
	int named; /* AWS_PROFILE says it (else "default", which may be absent) */
} profile;

static void find_profile(profile *p)
{
	const char *home = env("HOME");
	p->named = env("AWS_PROFILE") != NULL;
	p->name = p->named ? env("AWS_PROFILE") : "default";
	const char *c = env("AWS_SHARED_CREDENTIALS_FILE"), *g = env("AWS_CONFIG_FILE");
	rfi_fmt(p->creds, sizeof(p->creds), "%s%s", c ? c : home ? home : "",
	       c ? "" : home ? "/.aws/credentials" : "");
	rfi_fmt(p->config, sizeof(p->config), "%s%s", g ? g : home ? home : "",
	       g ? "" : home ? "/.aws/config" : "");
	rfi_fmt(p->creds_section, sizeof(p->creds_section), "%s", p->name);
	if (!strcmp(p->name, "default"))
		rfi_fmt(p->config_section, sizeof(p->config_section), "default");
	else
		rfi_fmt(p->config_section, sizeof(p->config_section), "profile %s", p->name);
}

/* A setting of the profile: the credentials file first, then the config. */
static int profile_get(const profile *p, const char *key, char *out, size_t len)
{
	return (p->creds[0] && ini_get(p->creds, p->creds_section, key, out, len)) ||
	       (p->config[0] && ini_get(p->config, p->config_section, key, out, len));
}

/* 1 when the INI file at path has a line "[section]". */
static int ini_has_section(const char *path, const char *section)
{
	FILE *f = path[0] ? fopen(path, "re") : NULL;
	if (!f)
		return 0;
	char line[1024];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		char *end = s[0] == '[' ? strchr(s, ']') : NULL;
		if (!end)
			continue;
		*end = '\0';
		found = !strcmp(s + 1 + strspn(s + 1, " \t"), section);
	}
	fclose(f);
	return found;
}

/* ---- the credentials, in the AWS SDKs' order ---- */

/* 1 when an http URL's host may serve container credentials in the clear:
 * this machine, or the ECS / EKS Pod Identity agent's link-local address. */
static int container_host_ok(const char *url)
{
	static const char *const hosts[] = { "localhost", "[::1]", "169.254.170.2",
					     "169.254.170.23", "[fd00:ec2::23]" };
	if (strncasecmp(url, "http://", 7))
		return 0;
	const char *h = url + 7;
	size_t n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
	if (h[0] == '[' && h[n - 1] != ']')
		return 0;
	if (n > 4 && !strncmp(h, "127.", 4) && strspn(h, "0123456789.") == n)
		return 1;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (strlen(hosts[i]) == n && !strncasecmp(h, hosts[i], n))
			return 1;
	return 0;
}

/* Where the strings of a source of credentials live while it is made. */
typedef struct creds_bufs {
	char from[200], kid[256], ksecret[256], ktoken[4096], cmd[2048], file[1024], role[512];
	char session[128], sts[1024], url[1024];
} creds_bufs;

/* A web identity exchanged with STS: STS where the environment or the
 * profile puts it, else AWS's regional endpoint (the global one where
 * asked: legacy); the session named as asked, else ringfeed-TIME. */
static void web_identity(const rf_s3 *s3, const profile *p, creds_bufs *b,
			 const char *token_file, const char *role_arn, rf_creds_source *src)
{
	const char *ep = env("AWS_ENDPOINT_URL_STS") ? env("AWS_ENDPOINT_URL_STS")
						     : env("AWS_ENDPOINT_URL");
	const char *legacy = env("AWS_STS_REGIONAL_ENDPOINTS");
	if (ep)
		rfi_fmt(b->sts, sizeof(b->sts), "%s", ep);
	else if (!profile_get(p, "sts.endpoint_url", b->sts, sizeof(b->sts)) &&
		 !profile_get(p, "endpoint_url", b->sts, sizeof(b->sts)))
		rfi_fmt(b->sts, sizeof(b->sts), legacy && !strcmp(legacy, "legacy")
		       ? "https://sts.amazonaws.com" : "https://sts.%s.amazonaws.com", s3->region);
	const char *name = env("AWS_ROLE_SESSION_NAME");
	if (!name && profile_get(p, "role_session_name", b->session, sizeof(b->session)))
		name = b->session;
	if (!name) {
		rfi_fmt(b->session, sizeof(b->session), "ringfeed-%lld", (long long)time(NULL));
		name = b->session;
	}
	*src = (rf_creds_source){ .kind = RF_CREDS_WEB_IDENTITY, .url = b->sts,
				  .token_file = token_file, .role_arn = role_arn,
				  .session_name = name };
}

/* Keys in section of the INI file at path (a key id and a secret, and
 * maybe a session token). @return : 1 with *src set, 0 none there. */
static int ini_keys(const char *path, const char *section, creds_bufs *b, rf_creds_source *src)
{
	if (!path[0] || !ini_get(path, section, "aws_access_key_id", b->kid, sizeof(b->kid)) ||
	    !ini_get(path, section, "aws_secret_access_key", b->ksecret, sizeof(b->ksecret)))
		return 0;
	int has_token = ini_get(path, section, "aws_session_token", b->ktoken, sizeof(b->ktoken));
	*src = (rf_creds_source){ .kind = RF_CREDS_STATIC, .from = b->from, .key_id = b->kid,
				  .secret = b->ksecret, .token = has_token ? b->ktoken : NULL };
	return 1;
}

/* A container's endpoint: a relative URI is ECS's agent's; a full one must
 * be https, or http to this machine or to ECS's and EKS's agents'
 * addresses, as the SDKs require (the keys come back in the clear).
 * @return : 1 with *src set, or -EINVAL with err set. */
static int container(const char *relative, const char *full, creds_bufs *b,
		     rf_creds_source *src, char *err, size_t errlen)
{
	if (relative)
		rfi_fmt(b->url, sizeof(b->url), "http://169.254.170.2%s%s",
		       relative[0] == '/' ? "" : "/", relative);
	else
		rfi_fmt(b->url, sizeof(b->url), "%s", full);
	if (!relative && strncasecmp(full, "https://", 8) && !container_host_ok(full)) {
		rfi_fmt(err, errlen, "AWS_CONTAINER_CREDENTIALS_FULL_URI '%s': not https, nor http "
		       "to this machine (127.0.0.0/8, [::1], localhost) or to the ECS/EKS agent "
		       "(169.254.170.2, 169.254.170.23, [fd00:ec2::23])", full);
		return -EINVAL;
	}
	*src = (rf_creds_source){ .kind = RF_CREDS_CONTAINER, .url = b->url,
				  .auth = env("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
				  .auth_file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") };
	return 1;
}

/* The first source of credentials set up, in the AWS SDKs' order, into
 * *src (its strings in b). @return : 1 set, 0 none (instance metadata is
 * left to ask), or -EINVAL with err set. */
static int pick_source(const rf_s3 *s3, const profile *p, creds_bufs *b, rf_creds_source *src,
		       char *err, size_t errlen)
{
	const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
	const char *token_file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *role_arn = env("AWS_ROLE_ARN");
	if (!token_file && profile_get(p, "web_identity_token_file", b->file, sizeof(b->file)) &&
	    profile_get(p, "role_arn", b->role, sizeof(b->role)))
		token_file = b->file, role_arn = b->role;
	const char *relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	if (id && secret) {
		*src = (rf_creds_source){ .kind = RF_CREDS_STATIC, .from = "the environment",
					  .key_id = id, .secret = secret,
					  .token = env("AWS_SESSION_TOKEN") };
		return 1;
	}
	if (token_file && role_arn) {
		web_identity(s3, p, b, token_file, role_arn, src);
		return 1;
	}
	if (ini_keys(p->creds, p->creds_section, b, src))
		return 1;
	if (profile_get(p, "credential_process", b->cmd, sizeof(b->cmd))) {
		*src = (rf_creds_source){ .kind = RF_CREDS_PROCESS, .from = b->from,
					  .command = b->cmd };
		return 1;
	}
	if (ini_keys(p->config, p->config_section, b, src))
		return 1;
	if (relative || full)
		return container(relative, full, b, src, err, errlen);
	return 0;
}

/* EC2 instance metadata (IMDSv2), unless AWS_EC2_METADATA_DISABLED: none
 * there (not an instance, or no role) is no error. */
static int instance_metadata(rf_s3 *s3, char *err, size_t errlen)
{
	const char *off = env("AWS_EC2_METADATA_DISABLED");
	if (off && !strcasecmp(off, "true"))
		return 0;
	const char *base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	rf_creds_source src = { .kind = RF_CREDS_IMDS, .url = base ? base : IMDS_DEFAULT,
				.fetch = rfi_creds_fetch };
	char why[512];
	int ret = rfi_creds_create(&s3->creds, &src, why, sizeof(why));
	if (ret == -ENOENT)
		return 0; /* not an EC2 instance (or no role): unsigned requests */
	if (ret)
		rfi_fmt(err, errlen, "%s", why);
	return ret;
}

/* The first source of credentials set up here, made (and its first keys
 * fetched) into s3->creds, or none (unsigned requests). A source that is
 * set up and fails fails the open, naming it; only instance metadata may
 * be absent in silence. @return : 0 or a negative errno (err says why). */
static int credentials(rf_s3 *s3, const profile *p, char *err, size_t errlen)
{
	creds_bufs b;
	rf_creds_source src = { .kind = RF_CREDS_STATIC };
	rfi_fmt(b.from, sizeof(b.from), "profile %s", p->name);
	int ret = pick_source(s3, p, &b, &src, err, errlen);
	if (ret == 0)
		return instance_metadata(s3, err, errlen);
	if (ret == 1) {
		src.fetch = rfi_creds_fetch; /* the kinds that are fetched */
		ret = rfi_creds_create(&s3->creds, &src, err, errlen);
	}
	explicit_bzero(b.ksecret, sizeof(b.ksecret));
	explicit_bzero(b.ktoken, sizeof(b.ktoken));
	return ret;
}

/* A profile named and found nowhere is a typo: refused (-EINVAL, err
 * set), as the AWS CLI and boto3 refuse it, rather than requests going
 * unsigned. @return : 0 when it is found, or not named. */
static int profile_missing(const profile *p, char *err, size_t errlen)
{
	if (!p->named || (p->creds[0] && ini_has_section(p->creds, p->creds_section)) ||
	    (p->config[0] && ini_has_section(p->config, p->config_section)))
		return 0;
	rfi_fmt(err, errlen, "The config profile (%s) could not be found (AWS_PROFILE; "
	       "neither %s nor %s has it)", p->name, p->creds[0] ? p->creds : "(no credentials file)",
	       p->config[0] ? p->config : "(no config file)");
	return -EINVAL;
}

/* The bucket's region and endpoint, and how it is addressed: a store of
 * its own (MinIO, Ceph) path-style; AWS by the bucket's host name, unless
 * the name has dots (its certificate would not match) or the profile says
 * otherwise. @return : 0 or -ENOMEM. */
static int place(rf_s3 *s3, const profile *p)
{
	char value[1024];
	const char *region = env("AWS_REGION") ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
	if (!region && profile_get(p, "region", value, sizeof(value)))
		region = value;
	if (!(s3->region = strdup(region ? region : "us-east-1")))
		return -ENOMEM;
	const char *endpoint = env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3")
							  : env("AWS_ENDPOINT_URL");
	if (!endpoint && (profile_get(p, "s3.endpoint_url", value, sizeof(value)) ||
			  profile_get(p, "endpoint_url", value, sizeof(value))))
		endpoint = value;
	s3->path_style = endpoint != NULL || strchr(s3->bucket, '.') != NULL;
	s3->endpoint = endpoint ? strdup(endpoint)
				: rfi_strprintf("https://s3.%s.amazonaws.com", s3->region);
	if (!s3->endpoint)
		return -ENOMEM;
	for (size_t n = strlen(s3->endpoint); n && s3->endpoint[n - 1] == '/'; n--)
		s3->endpoint[n - 1] = '\0';
	if (profile_get(p, "s3.addressing_style", value, sizeof(value))) {
		if (!strcmp(value, "path"))
			s3->path_style = 1;
		else if (!strcmp(value, "virtual"))
			s3->path_style = 0;
	}
	return 0;
}

int rfi_s3_open(rf_s3 **out, const char *url, char *err, size_t errlen)
{
	*out = NULL;
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t blen = slash ? (size_t)(slash - b) : strlen(b);
	/* the s3 row of the transport table chose url by its scheme; this is
	 * the check of the form the bucket's name is parsed from */
	if (strncasecmp(url, "s3://", 5) || blen == 0 || blen > 63) {
		rfi_fmt(err, errlen, "'%s': not s3://BUCKET/KEY", url);
		return -EINVAL;
	}
	rf_s3 *s3 = calloc(1, sizeof(*s3));
	if (!s3 || !(s3->bucket = strndup(b, blen)))
		goto oom;
	profile p;
	find_profile(&p);
	int ret = profile_missing(&p, err, errlen);
	if (!ret && place(s3, &p))
		goto oom;
	if (!ret)
		ret = credentials(s3, &p, err, errlen);
	if (ret) {
		rfi_s3_free(s3);
		return ret;
	}
	if (s3->creds && rfi_s3_sign_init(&s3->sign, s3->creds, s3->region))
		goto oom;
	*out = s3;
	return 0;
oom:
	rfi_s3_free(s3);
	rfi_fmt(err, errlen, "out of memory");
	return -ENOMEM;
}

void rfi_s3_free(rf_s3 *s3)
{
	if (!s3)
		return;
	free(s3->bucket);
	free(s3->endpoint);
	free(s3->region);
	rfi_s3_sign_free(&s3->sign);
	rfi_creds_destroy(s3->creds);
	free(s3);
}

/* ---- the bucket's signer (sign.h): SigV4 with its keys ---- */

/* S3 wants the body's hash signed; a GET has none */
static const char *const empty_body_hash[] = {
	"x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	NULL,
};

static uint64_t keys_generation(void *keys)
{
	return rfi_creds_generation(keys);
}

/* The keys as curl signs with them ("KEY_ID:SECRET") and the session
 * token's header, copied from the store's current set. */
static int keys_take(void *keys, rf_sign_keys *out, uint64_t *gen)
{
	rf_creds_set s;
	if (rfi_creds_copy(keys, &s, gen))
		return -ENOMEM;
	out->userpwd = rfi_strprintf("%s:%s", s.key_id, s.secret);
	out->header = s.token ? rfi_strprintf("x-amz-security-token: %s", s.token) : NULL;
	int want_token = s.token != NULL;
	rfi_creds_set_free(&s);
	if (!out->userpwd || (want_token && !out->header)) {
		rfi_free_secret(out->userpwd);
		rfi_free_secret(out->header);
		*out = (rf_sign_keys){ 0 };
		return -ENOMEM;
	}
	return 0;
}

static void keys_log_at(void *keys, rf_log_level level)
{
	rfi_creds_log_at(keys, level);
}

int rfi_s3_sign_init(rf_io_sign *out, rf_creds *creds, const char *region)
{
	*out = (rf_io_sign){ .headers = empty_body_hash, .keys = creds,
			     .generation = keys_generation, .take = keys_take,
			     .log_at = keys_log_at };
	out->sigv4 = rfi_strprintf("aws:amz:%s:s3", region ? region : "us-east-1");
	return out->sigv4 ? 0 : -ENOMEM;
}

void rfi_s3_sign_free(rf_io_sign *s)
{
	free(s->sigv4);
	s->sigv4 = NULL;
}

const rf_io_sign *rfi_s3_sign(const rf_s3 *s3)
{
	return s3->creds ? &s3->sign : NULL;
}

/* Appends s percent-encoded (RFC 3986 unreserved kept; '/' kept when
 * keep_slash) to out[len] at *n. @return : 0, or -1 when it did not fit. */
static int encode(char *out, size_t len, size_t *n, const char *s, int keep_slash)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
			if (*n + 1 >= len)
				return -1;
			out[(*n)++] = (char)c;
		} else {
			if (*n + 3 >= len)
				return -1;
			*n += (size_t)snprintf(out + *n, 4, "%%%02X", c);
		}
	}
	out[*n] = '\0';
	return 0;
}

/* The bucket's base URL: ENDPOINT/BUCKET or SCHEME://BUCKET.HOST. */
static char *bucket_url(const rf_s3 *s3)
{
	if (s3->path_style)
		return rfi_strprintf("%s/%s", s3->endpoint, s3->bucket);
	const char *host = strstr(s3->endpoint, "://");
	host = host ? host + 3 : s3->endpoint;
	return rfi_strprintf("%.*s%s.%s", (int)(host - s3->endpoint), s3->endpoint, s3->bucket, host);
}

char *rfi_s3_object_url(const rf_s3 *s3, const char *key)
{
	char *base = bucket_url(s3);
	size_t len = 3 * strlen(key) + 1, n = 0;
	char *enc = malloc(len);
	char *url = NULL;
	if (base && enc && !encode(enc, len, &n, key, 1))
		url = rfi_strprintf("%s/%s", base, enc);
	free(base);
	free(enc);
	return url;
}

void rfi_s3_listing_free(rf_s3_listing *ls)
{
	free(ls->tokens);
	ls->tokens = NULL;
	ls->ntokens = ls->cap = 0;
}

/* A key of the page: after every key before it (S3 lists each key once, in
 * ascending UTF-8 byte order, across pages), then given to fn. */
static int page_key(rf_s3_listing *ls, const char *key, uint64_t size,
		    int (*fn)(void *, const char *, uint64_t), void *user, char *why, size_t wl)
{
	int c = ls->keys ? strcmp(key, ls->last) : 1;
	if (c == 0) {
		rfi_fmt(why, wl, "page %u lists key '%s' again (a store lists each key once)",
		       ls->pages + 1, key);
		return -EPROTO;
	}
	if (c < 0) {
		rfi_fmt(why, wl, "page %u lists key '%s' after '%s' (a store lists its keys in "
		       "ascending order; keys out of order may be repeated or missed)",
		       ls->pages + 1, key, ls->last);
		return -EPROTO;
	}
	rfi_fmt(ls->last, sizeof(ls->last), "%s", key);
	ls->keys++;
	return fn(user, key, size);
}

int rfi_s3_list_page(rf_s3_listing *ls, const char *doc, size_t len,
		    int (*fn)(void *user, const char *key, uint64_t size), void *user, char *why,
		    size_t whylen)
{
	size_t pos = 0;
	char key[sizeof(ls->last)], size[32];
	const char *c;
	while ((c = memmem(doc + pos, len - pos, "<Contents>", 10))) {
		const char *end = memmem(c, (size_t)(doc + len - c), "</Contents>", 11);
		if (!end)
			break;
		size_t blen = (size_t)(end - c), p = 0, q = 0;
		if (rfi_xml_text(c, blen, &p, "Key", key, sizeof(key)) &&
		    rfi_xml_text(c, blen, &q, "Size", size, sizeof(size))) {
			int ret = page_key(ls, key, strtoull(size, NULL, 10), fn, user, why, whylen);
			if (ret)
				return ret;
		}
		pos = (size_t)(end - doc) + 11;
	}
	ls->pages++;
	char flag[16] = "";
	size_t p = 0;
	rfi_xml_text(doc, len, &p, "IsTruncated", flag, sizeof(flag));
	ls->truncated = !strcmp(flag, "true");
	p = 0;
	ls->next[0] = '\0';
	if (!ls->truncated)
		return 0;
	if (!rfi_xml_text(doc, len, &p, "NextContinuationToken", ls->next, sizeof(ls->next)) ||
	    !ls->next[0]) {
		rfi_fmt(why, whylen, "page %u is truncated without its NextContinuationToken",
		       ls->pages);
		return -EPROTO;
	}
	/* a token given before would list the same pages again, forever (a
	 * known bug of some S3-compatible stores) */
	uint64_t h = rfi_hash_bytes(0x5335u, ls->next, strlen(ls->next));
	for (size_t i = 0; i < ls->ntokens; i++)
		if (ls->tokens[i] == h) {
			rfi_fmt(why, whylen, "page %u gives the NextContinuationToken '%.64s%s' %s: "
			       "the listing would never end", ls->pages, ls->next,
			       strlen(ls->next) > 64 ? "..." : "",
			       i + 1 == ls->ntokens ? "of the page before" : "of an earlier page");
			return -EPROTO;
		}
	if (ls->ntokens == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 64;
		uint64_t *t = realloc(ls->tokens, cap * sizeof(*t));
		if (!t) {
			rfi_fmt(why, whylen, "out of memory");
			return -ENOMEM;
		}
		ls->tokens = t;
		ls->cap = cap;
	}
	ls->tokens[ls->ntokens++] = h;
	return 0;
}

int rfi_s3_list(const rf_s3 *s3, const char *prefix,
	       int (*fn)(void *user, const char *key, uint64_t size), void *user,
	       uint32_t budget_ms, char *err, size_t errlen)
{
	char *base = bucket_url(s3);
	if (!base) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rf_s3_listing ls = { 0 };
	char url[4096];
	const char *token = ls.next;
	int ret = 0;
	for (ls.truncated = 1; ls.truncated && !ret;) {
		/* the query's parameters in name order, each value encoded: as
		 * SigV4's canonical request has them */
		size_t n = 0;
		n = (size_t)snprintf(url, sizeof(url), "%s/?", base);
		if (token[0]) {
			n += (size_t)snprintf(url + n, sizeof(url) - n, "continuation-token=");
			if (encode(url, sizeof(url), &n, token, 0) ||
			    n + 1 >= sizeof(url))
				goto too_long;
			url[n++] = '&';
		}
		n += (size_t)snprintf(url + n, sizeof(url) - n, "list-type=2&prefix=");
		if (n >= sizeof(url) || encode(url, sizeof(url), &n, prefix, 0))
			goto too_long;
		rf_fetch_result r;
		ret = rfi_fetch_run(&(rf_fetch){ .url = url, .sign = rfi_s3_sign(s3),
						   .budget_ms = budget_ms },
				   &r, err, errlen);
		if (ret)
			break;
		if (r.status != 200) {
			char why[256];
			rfi_fetch_why(&r, why, sizeof(why));
			rfi_fmt(err, errlen, "listing s3://%s/%s: %s", s3->bucket, prefix, why);
			ret = r.status == 404 ? -ENOENT : r.status == 403 || r.status == 401 ? -EACCES
											      : -EIO;
		} else {
			char why[1400];
			ret = rfi_s3_list_page(&ls, (const char *)r.body, r.body_len, fn, user, why,
					      sizeof(why));
			if (ret == -EPROTO || ret == -ENOMEM)
				rfi_fmt(err, errlen, "listing s3://%s/%s: %s%s", s3->bucket, prefix, why,
				       ret == -EPROTO ? ": the store's listing is broken, refused" : "");
		}
		rfi_fetch_result_free(&r);
	}
	rfi_s3_listing_free(&ls);
	free(base);
	return ret;
too_long:
	rfi_s3_listing_free(&ls);
	free(base);
	rfi_fmt(err, errlen, "listing s3://%s/%s: the request is too long", s3->bucket, prefix);
	return -ENAMETOOLONG;
}
