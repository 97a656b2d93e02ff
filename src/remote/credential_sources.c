/* credential_sources.c - each kind of source's fetch (credentials.h):
 * instance metadata (IMDSv2), a container's endpoint, a web identity
 * exchanged with STS, a credential_process, one function each in one
 * table, and the one parser of their answers. Here, not in credentials.c:
 * the fetches go over HTTP (fetch.c), whose signer takes its keys from
 * credentials.c, so the store of keys knows no fetch (s3.c hands it
 * rfi_creds_fetch). */
#define _GNU_SOURCE
#include "remote/credential_sources.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote/fetch.h"
#include "util/util.h"

extern char **environ;

/* credential_process: its output at most, and its time at most. */
#define PROCESS_MAX_OUT (64 * 1024)
#define PROCESS_TIMEOUT_MS (60 * 1000)
/* A web identity or container token file, at most. */
#define TOKEN_FILE_MAX (64 * 1024)

/* ---- what the sources answer ---- */

/* The string value of "key" in a flat JSON object, into out (escapes
 * taken as the character they escape: keys and tokens are ASCII).
 * @return : 1 found, 0 not (or too long). */
static int json_string(const char *doc, const char *key, char *out, size_t len)
{
	char pat[64];
	rfi_fmt(pat, sizeof(pat), "\"%s\"", key);
	const char *p = strstr(doc, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	p += strspn(p, " \t\r\n");
	if (*p++ != ':')
		return 0;
	p += strspn(p, " \t\r\n");
	if (*p++ != '"')
		return 0;
	size_t n = 0;
	for (; *p && *p != '"'; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (n + 1 >= len)
			return 0;
		out[n++] = *p;
	}
	out[n] = '\0';
	return *p == '"';
}

/* An ISO 8601 UTC time ("2024-05-01T12:00:00Z", with fractions of a
 * second or an offset "+00:00") as Unix ms. @return : -1 when it is none. */
static int64_t parse_time(const char *s)
{
	struct tm tm = { 0 };
	int n = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	int64_t ms = 0;
	const char *p = s + n;
	if (*p == '.') {
		int64_t scale = 100;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			ms += (*p - '0') * scale;
	}
	int64_t off_s = 0;
	if (*p == '+' || *p == '-') {
		int hh, mm;
		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return -1;
		off_s = (*p == '+' ? 1 : -1) * (hh * 3600 + mm * 60);
	} else if (*p != 'Z' && *p != 'z' && *p != '\0') {
		return -1;
	}
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	return ((int64_t)t - off_s) * 1000 + ms;
}

/* The keys of a JSON answer (IMDS's, a container endpoint's, a
 * credential_process's): AccessKeyId, SecretAccessKey, the token under
 * token_name, Expiration. @return : 0, -EPROTO (err says what is wrong),
 * -ENOMEM. */
static int from_json(const char *from, const char *doc, const char *token_name,
		     rf_creds_set *out, char *err, size_t errlen)
{
	char id[256], secret[256], token[8192], exp[64];
	int ret = 0;
	if (!json_string(doc, "AccessKeyId", id, sizeof(id)) ||
	    !json_string(doc, "SecretAccessKey", secret, sizeof(secret))) {
		rfi_fmt(err, errlen, "credentials from %s: the answer has no AccessKeyId and "
		       "SecretAccessKey", from);
		ret = -EPROTO;
		goto out;
	}
	if (!json_string(doc, token_name, token, sizeof(token)))
		token[0] = '\0';
	int64_t expires = 0;
	if (json_string(doc, "Expiration", exp, sizeof(exp)) && (expires = parse_time(exp)) < 0) {
		rfi_fmt(err, errlen, "credentials from %s: Expiration '%s' is not an ISO 8601 time",
		       from, exp);
		ret = -EPROTO;
		goto out;
	}
	ret = rfi_creds_set_make(out, id, secret, token, expires, err, errlen);
out:
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(token, sizeof(token));
	return ret;
}

/* STS's AssumeRoleWithWebIdentity answer (XML): its Credentials. */
static int from_sts(const char *from, const char *doc, size_t len, rf_creds_set *out,
		    char *err, size_t errlen)
{
	char id[256], secret[256], token[8192], exp[64];
	size_t p1 = 0, p2 = 0, p3 = 0, p4 = 0;
	int ret;
	if (!rfi_xml_text(doc, len, &p1, "AccessKeyId", id, sizeof(id)) ||
	    !rfi_xml_text(doc, len, &p2, "SecretAccessKey", secret, sizeof(secret)) ||
	    !rfi_xml_text(doc, len, &p3, "SessionToken", token, sizeof(token))) {
		rfi_fmt(err, errlen, "credentials from %s: AssumeRoleWithWebIdentity's answer has no "
		       "AccessKeyId, SecretAccessKey and SessionToken", from);
		ret = -EPROTO;
	} else {
		int64_t expires = rfi_xml_text(doc, len, &p4, "Expiration", exp, sizeof(exp))
				  ? parse_time(exp) : 0;
		if (expires < 0) {
			rfi_fmt(err, errlen, "credentials from %s: Expiration '%s' is not an ISO 8601 "
			       "time", from, exp);
			ret = -EPROTO;
		} else {
			ret = rfi_creds_set_make(out, id, secret, token, expires, err, errlen);
		}
	}
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(token, sizeof(token));
	return ret;
}

int rfi_creds_parse(rf_creds_kind kind, const char *doc, size_t len, const char *from,
		   rf_creds_set *out, char *err, size_t errlen)
{
	*out = (rf_creds_set){ 0 };
	if (strlen(doc) != len) {
		rfi_fmt(err, errlen, "credentials from %s: the answer holds a NUL byte", from);
		return -EPROTO;
	}
	switch (kind) {
	case RF_CREDS_IMDS:
	case RF_CREDS_CONTAINER:
		return from_json(from, doc, "Token", out, err, errlen);
	case RF_CREDS_WEB_IDENTITY:
		return from_sts(from, doc, len, out, err, errlen);
	case RF_CREDS_PROCESS: {
		/* "Version": 1, a number */
		const char *v = strstr(doc, "\"Version\"");
		v = v ? v + 9 + strspn(v + 9, " \t\r\n") : NULL;
		v = v && *v == ':' ? v + 1 + strspn(v + 1, " \t\r\n") : NULL;
		if (!v || *v != '1' || strtol(v, NULL, 10) != 1) {
			rfi_fmt(err, errlen, "credentials from %s: the command's output is not JSON with "
			       "\"Version\": 1", from);
			return -EPROTO;
		}
		return from_json(from, doc, "SessionToken", out, err, errlen);
	}
	case RF_CREDS_STATIC:
		break;
	}
	rfi_fmt(err, errlen, "credentials from %s: nothing to parse", from);
	return -EINVAL;
}

/* A token file's text, trailing white space cut, into a malloc'd string
 * (a secret). @return : 0, or a negative errno with err naming the file. */
static int read_token_file(const rf_creds_source *c, const char *path, char **out, char *err,
			   size_t errlen)
{
	*out = NULL;
	char why[512];
	int fd = rfi_open_regular(AT_FDCWD, path, "token file", why, sizeof(why));
	if (fd < 0) {
		rfi_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		return fd;
	}
	char *buf = malloc(TOKEN_FILE_MAX + 1);
	size_t n = 0;
	ssize_t r = 0;
	while (buf && n < TOKEN_FILE_MAX && (r = read(fd, buf + n, TOKEN_FILE_MAX - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	int e = errno;
	close(fd);
	if (!buf) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (r < 0 || n == TOKEN_FILE_MAX) {
		rfi_free_secret(buf);
		rfi_fmt(err, errlen, "credentials from %s: token file '%s': %s", c->from, path,
		       r < 0 ? strerror(e) : "over 64 KiB");
		return r < 0 ? -e : -EFBIG;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	if (!n || strpbrk(buf, "\r\n")) {
		rfi_free_secret(buf);
		rfi_fmt(err, errlen, "credentials from %s: token file '%s' %s", c->from, path,
		       n ? "holds more than one line" : "is empty");
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

/* ---- the sources, one fetch each ---- */

typedef int (*fetch_fn)(const rf_creds_source *c, rf_creds_set *out, char *err, size_t errlen);

/* EC2 instance metadata, IMDSv2: a session token (PUT), the role's name,
 * then its keys, each asked with the token. */
static int fetch_imds(const rf_creds_source *c, rf_creds_set *out, char *err, size_t errlen)
{
	char url[600], hdr[600], why[256];
	rf_fetch_result r;
	rfi_fmt(url, sizeof(url), "%s/latest/api/token", c->url);
	const char *ttl[] = { "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL };
	int ret = rfi_fetch_run(&(rf_fetch){ .url = url, .method = "PUT", .headers = ttl,
					   .timeout_ms = 1000, .tries = 2, .max_body = 4096 },
			       &r, why, sizeof(why));
	if (ret || r.status != 200 || !r.body) {
		if (!ret)
			rfi_fetch_why(&r, why, sizeof(why));
		rfi_fmt(err, errlen, "credentials from %s: a session token: %s", c->from, why);
		rfi_fetch_result_free(&r);
		return -ENOENT;
	}
	rfi_fmt(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %.*s",
	       (int)strcspn((char *)r.body, "\r\n"), (char *)r.body);
	explicit_bzero(r.body, r.body_len);
	rfi_fetch_result_free(&r);
	const char *auth[] = { hdr, NULL };
	rfi_fmt(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", c->url);
	ret = rfi_fetch_run(&(rf_fetch){ .url = url, .headers = auth, .timeout_ms = 1000, .tries = 2,
					.max_body = 4096 }, &r, why, sizeof(why));
	if (ret || r.status != 200 || !r.body || !r.body[0]) {
		if (!ret)
			rfi_fetch_why(&r, why, sizeof(why));
		rfi_fmt(err, errlen, "credentials from %s: the role's name: %s", c->from, why);
		rfi_fetch_result_free(&r);
		explicit_bzero(hdr, sizeof(hdr));
		return -ENOENT;
	}
	char role[256];
	rfi_fmt(role, sizeof(role), "%.*s", (int)strcspn((char *)r.body, "\r\n"), (char *)r.body);
	rfi_fetch_result_free(&r);
	rfi_fmt(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s", c->url, role);
	ret = rfi_fetch_run(&(rf_fetch){ .url = url, .headers = auth, .timeout_ms = 1000,
					.tries = 2, .max_body = 16384 }, &r, why, sizeof(why));
	explicit_bzero(hdr, sizeof(hdr));
	if (ret || r.status != 200 || !r.body) {
		if (!ret)
			rfi_fetch_why(&r, why, sizeof(why));
		rfi_fmt(err, errlen, "credentials from %s: role %s: %s", c->from, role, why);
		rfi_fetch_result_free(&r);
		return -ENOENT;
	}
	ret = rfi_creds_parse(c->kind, (char *)r.body, r.body_len, c->from, out, err, errlen);
	explicit_bzero(r.body, r.body_len);
	rfi_fetch_result_free(&r);
	return ret == -EPROTO ? -ENOENT : ret;
}

/* A container's endpoint (ECS task role, EKS Pod Identity): one GET, with
 * the Authorization the environment gives (its file read each time: the
 * agent rotates it). */
static int fetch_container(const rf_creds_source *c, rf_creds_set *out, char *err, size_t errlen)
{
	char *token = NULL, *hdr = NULL, why[256];
	int ret = 0;
	if (c->auth_file && (ret = read_token_file(c, c->auth_file, &token, err, errlen)))
		return ret;
	const char *value = token ? token : c->auth;
	if (value && strpbrk(value, "\r\n")) {
		rfi_fmt(err, errlen, "credentials from %s: the authorization token holds a line "
		       "break", c->from);
		ret = -EINVAL;
		goto out;
	}
	if (value && !(hdr = rfi_strprintf("Authorization: %s", value))) {
		rfi_fmt(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	const char *headers[] = { hdr, NULL };
	rf_fetch_result r;
	ret = rfi_fetch_run(&(rf_fetch){ .url = c->url, .headers = hdr ? headers : NULL,
					.timeout_ms = 5000, .tries = 3, .max_body = 16384 },
			   &r, why, sizeof(why));
	if (ret) {
		rfi_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		goto out;
	}
	if (r.status != 200 || !r.body) {
		rfi_fetch_why(&r, why, sizeof(why));
		rfi_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		ret = r.status == 401 || r.status == 403 ? -EACCES : -EIO;
	} else {
		ret = rfi_creds_parse(c->kind, (char *)r.body, r.body_len, c->from, out, err, errlen);
		explicit_bzero(r.body, r.body_len);
	}
	rfi_fetch_result_free(&r);
out:
	rfi_free_secret(token);
	rfi_free_secret(hdr);
	return ret;
}

/* Appends s form-encoded (RFC 3986 unreserved kept) at *n of out[len].
 * @return : 0, or -1 when it did not fit. */
static int form_encode(char *out, size_t len, size_t *n, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		int plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';
		if (*n + (plain ? 1 : 3) >= len)
			return -1;
		if (plain) {
			out[(*n)++] = (char)ch;
		} else {
			out[(*n)++] = '%';
			out[(*n)++] = hex[ch >> 4];
			out[(*n)++] = hex[ch & 15];
		}
	}
	out[*n] = '\0';
	return 0;
}

/* A web identity token (its file read each time: Kubernetes rotates it)
 * exchanged for the role's keys: STS AssumeRoleWithWebIdentity, an
 * unsigned POST (the token is the proof), the token in the body and never
 * in a URL or a message. */
static int fetch_web_identity(const rf_creds_source *c, rf_creds_set *out, char *err, size_t errlen)
{
	char *token = NULL, why[256];
	int ret = read_token_file(c, c->token_file, &token, err, errlen);
	if (ret)
		return ret;
	size_t cap = 3 * (strlen(token) + strlen(c->role_arn) + strlen(c->session_name)) + 256, n = 0;
	char *body = malloc(cap);
	if (!body) {
		rfi_free_secret(token);
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = (size_t)snprintf(body, cap, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=");
	form_encode(body, cap, &n, c->role_arn);
	n += (size_t)snprintf(body + n, cap - n, "&RoleSessionName=");
	form_encode(body, cap, &n, c->session_name);
	n += (size_t)snprintf(body + n, cap - n, "&WebIdentityToken=");
	form_encode(body, cap, &n, token); /* cap is 3 x every part: it fits */
	rfi_free_secret(token);
	const char *headers[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
				  "Accept: application/xml", NULL };
	rf_fetch_result r;
	ret = rfi_fetch_run(&(rf_fetch){ .url = c->url, .body = body, .headers = headers,
					.timeout_ms = 10000, .tries = 3, .max_body = 65536 },
			   &r, why, sizeof(why));
	rfi_free_secret(body);
	if (ret) {
		rfi_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		return ret;
	}
	if (r.status != 200 || !r.body) {
		rfi_fetch_why(&r, why, sizeof(why));
		rfi_fmt(err, errlen, "credentials from %s: AssumeRoleWithWebIdentity: %s", c->from, why);
		ret = r.status == 401 || r.status == 403 ? -EACCES : -EIO;
	} else {
		ret = rfi_creds_parse(c->kind, (char *)r.body, r.body_len, c->from, out, err, errlen);
	}
	if (r.body)
		explicit_bzero(r.body, r.body_len);
	rfi_fetch_result_free(&r);
	return ret;
}

/* Runs command (/bin/sh -c, stdin /dev/null, stderr the caller's) and
 * gathers its output into out[len] (NUL-terminated, *got bytes),
 * PROCESS_TIMEOUT_MS at most: past it the process is killed. @return : 0 (it exited 0), or a
 * negative errno with err saying why (never the output: it holds keys). */
static int run_process(const rf_creds_source *c, char *out, size_t len, size_t *got, char *err,
		       size_t errlen)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC)) {
		int e = errno;
		rfi_fmt(err, errlen, "credentials from %s: a pipe: %s", c->from, strerror(e));
		return -e;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	/* the command gets no signal blocked and SIGPIPE as a shell expects it
	 * (this thread blocks every signal; Python ignores SIGPIPE) */
	posix_spawnattr_init(&attr);
	sigset_t none, pipe_only;
	sigemptyset(&none);
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &pipe_only);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	char *argv[] = { "sh", "-c", (char *)c->command, NULL }; /* posix_spawn's type; not written */
	pid_t pid;
	int e = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (e) {
		close(fds[0]);
		rfi_fmt(err, errlen, "credentials from %s: /bin/sh: %s", c->from, strerror(e));
		return -e;
	}
	size_t n = 0;
	int ret = 0;
	uint64_t deadline = rfi_now_ns() + PROCESS_TIMEOUT_MS * 1000000ull;
	for (;;) { /* ends at EOF, an error, the deadline or a full buffer */
		uint64_t now = rfi_now_ns();
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int ready = now < deadline ? poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) : 0;
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0) {
			kill(pid, SIGKILL);
			rfi_fmt(err, errlen, "credentials from %s: the command gave no answer in %d s "
			       "(killed)", c->from, PROCESS_TIMEOUT_MS / 1000);
			ret = -ETIMEDOUT;
			break;
		}
		ssize_t r = ready < 0 ? -1 : read(fds[0], out + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			e = errno;
			kill(pid, SIGKILL);
			rfi_fmt(err, errlen, "credentials from %s: reading its output: %s", c->from,
			       strerror(e));
			ret = -e;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == len - 1) {
			kill(pid, SIGKILL);
			rfi_fmt(err, errlen, "credentials from %s: the command's output is over %zu "
			       "bytes", c->from, len - 1);
			ret = -EFBIG;
			break;
		}
	}
	out[n] = '\0';
	*got = n;
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!ret && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		if (WIFEXITED(status))
			rfi_fmt(err, errlen, "credentials from %s: the command exited with status %d",
			       c->from, WEXITSTATUS(status));
		else
			rfi_fmt(err, errlen, "credentials from %s: the command was killed by signal %d",
			       c->from, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		ret = -EIO;
	}
	return ret;
}

/* A profile's credential_process: its JSON (Version 1, AccessKeyId,
 * SecretAccessKey [, SessionToken] [, Expiration]). */
static int fetch_process(const rf_creds_source *c, rf_creds_set *out, char *err, size_t errlen)
{
	char *doc = malloc(PROCESS_MAX_OUT);
	if (!doc) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	size_t got;
	int ret = run_process(c, doc, PROCESS_MAX_OUT, &got, err, errlen);
	if (!ret)
		ret = rfi_creds_parse(c->kind, doc, got, c->from, out, err, errlen);
	explicit_bzero(doc, PROCESS_MAX_OUT);
	free(doc);
	return ret;
}

/* The fetch of each kind that has one (static keys are given). */
static const fetch_fn fetchers[] = {
	[RF_CREDS_STATIC] = NULL,
	[RF_CREDS_IMDS] = fetch_imds,
	[RF_CREDS_CONTAINER] = fetch_container,
	[RF_CREDS_WEB_IDENTITY] = fetch_web_identity,
	[RF_CREDS_PROCESS] = fetch_process,
};

int rfi_creds_fetch(const rf_creds_source *src, rf_creds_set *out, char *err, size_t errlen)
{
	*out = (rf_creds_set){ 0 };
	if ((size_t)src->kind >= sizeof(fetchers) / sizeof(fetchers[0]) || !fetchers[src->kind]) {
		rfi_fmt(err, errlen, "credentials from %s: not a kind that is fetched", src->from);
		return -EINVAL;
	}
	return fetchers[src->kind](src, out, err, errlen);
}
