/* credentials.c - keys from one source, fetched at set-up and again before
 * they expire on a thread of their own, handed to signers by a generation
 * number and a copy (credentials.h). Each kind is one fetch function in
 * one table; the refresh thread knows none of them. */
#define _GNU_SOURCE
#include "io/credentials.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io/fetch.h"
#include "util/util.h"

extern char **environ;

/* Keys are fetched again this long before they expire, or at half their
 * life when that is shorter (a set that lives 15 minutes is refreshed
 * after 7.5). IMDS offers new keys at least 5 minutes before the old ones
 * expire; the AWS SDKs refresh 10 to 15 minutes before. */
#define REFRESH_MARGIN_MS (10 * 60 * 1000ll)
/* No refresh sooner than this after the last try; a failed one is tried
 * again after at most RETRY_MAX_MS. */
#define REFRESH_MIN_MS 1000ll
#define RETRY_MAX_MS (60 * 1000ll)
/* credential_process: its output at most, and its time at most. */
#define PROCESS_MAX_OUT (64 * 1024)
#define PROCESS_TIMEOUT_MS (60 * 1000)
/* A web identity or container token file, at most. */
#define TOKEN_FILE_MAX (64 * 1024)

struct rf_creds {
	/* the source, copied at create; read-only after */
	rf_creds_kind kind;
	char *from, *url, *auth, *auth_file, *token_file, *role_arn, *session_name, *command;
	/* lock guards cur and stop, and is held only to swap or copy them
	 * (never during a fetch): a signer never waits for a refresh */
	pthread_mutex_t lock;
	pthread_cond_t wake;   /* the refresh thread's timer; destroy signals it */
	rf_creds_set cur;
	int stop;
	_Atomic uint64_t gen;  /* moves (under lock) when cur gets other keys */
	_Atomic int log_level; /* rf_log_level: the most verbose asked */
	int refs;              /* under lock: the owner's, and the refresh thread's while
	                        * it runs (detached: destroy never waits for a fetch) */
	int64_t next_ns;       /* the refresh thread's: CLOCK_MONOTONIC of its next try */
};

static void release(rf_creds *c);

static int64_t real_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *dup_or_null(const char *s, int *oom)
{
	char *d = s ? strdup(s) : NULL;
	if (s && !d)
		*oom = 1;
	return d;
}

void rf_creds_set_free(rf_creds_set *s)
{
	free(s->key_id);
	rf_free_secret(s->secret);
	rf_free_secret(s->token);
	*s = (rf_creds_set){ 0 };
}

/* ---- what the sources answer ---- */

/* The string value of "key" in a flat JSON object, into out (escapes
 * taken as the character they escape: keys and tokens are ASCII).
 * @return : 1 found, 0 not (or too long). */
static int json_string(const char *doc, const char *key, char *out, size_t len)
{
	char pat[64];
	rf_fmt(pat, sizeof(pat), "\"%s\"", key);
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

/* Fills out from copies of the strings. @return : 0 or -ENOMEM. */
static int set_of(rf_creds_set *out, const char *id, const char *secret, const char *token,
		  int64_t expires_ms, char *err, size_t errlen)
{
	int oom = 0;
	out->key_id = dup_or_null(id, &oom);
	out->secret = dup_or_null(secret, &oom);
	out->token = token && token[0] ? dup_or_null(token, &oom) : NULL;
	out->expires_ms = expires_ms;
	if (oom) {
		rf_creds_set_free(out);
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
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
		rf_fmt(err, errlen, "credentials from %s: the answer has no AccessKeyId and "
		       "SecretAccessKey", from);
		ret = -EPROTO;
		goto out;
	}
	if (!json_string(doc, token_name, token, sizeof(token)))
		token[0] = '\0';
	int64_t expires = 0;
	if (json_string(doc, "Expiration", exp, sizeof(exp)) && (expires = parse_time(exp)) < 0) {
		rf_fmt(err, errlen, "credentials from %s: Expiration '%s' is not an ISO 8601 time",
		       from, exp);
		ret = -EPROTO;
		goto out;
	}
	ret = set_of(out, id, secret, token, expires, err, errlen);
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
	if (!rf_xml_text(doc, len, &p1, "AccessKeyId", id, sizeof(id)) ||
	    !rf_xml_text(doc, len, &p2, "SecretAccessKey", secret, sizeof(secret)) ||
	    !rf_xml_text(doc, len, &p3, "SessionToken", token, sizeof(token))) {
		rf_fmt(err, errlen, "credentials from %s: AssumeRoleWithWebIdentity's answer has no "
		       "AccessKeyId, SecretAccessKey and SessionToken", from);
		ret = -EPROTO;
	} else {
		int64_t expires = rf_xml_text(doc, len, &p4, "Expiration", exp, sizeof(exp))
				  ? parse_time(exp) : 0;
		if (expires < 0) {
			rf_fmt(err, errlen, "credentials from %s: Expiration '%s' is not an ISO 8601 "
			       "time", from, exp);
			ret = -EPROTO;
		} else {
			ret = set_of(out, id, secret, token, expires, err, errlen);
		}
	}
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(token, sizeof(token));
	return ret;
}

int rf_creds_parse(rf_creds_kind kind, const char *doc, size_t len, const char *from,
		   rf_creds_set *out, char *err, size_t errlen)
{
	*out = (rf_creds_set){ 0 };
	if (strlen(doc) != len) {
		rf_fmt(err, errlen, "credentials from %s: the answer holds a NUL byte", from);
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
			rf_fmt(err, errlen, "credentials from %s: the command's output is not JSON with "
			       "\"Version\": 1", from);
			return -EPROTO;
		}
		return from_json(from, doc, "SessionToken", out, err, errlen);
	}
	case RF_CREDS_STATIC:
		break;
	}
	rf_fmt(err, errlen, "credentials from %s: nothing to parse", from);
	return -EINVAL;
}

/* A token file's text, trailing white space cut, into a malloc'd string
 * (a secret). @return : 0, or a negative errno with err naming the file. */
static int read_token_file(const rf_creds *c, const char *path, char **out, char *err,
			   size_t errlen)
{
	*out = NULL;
	char why[512];
	int fd = rf_open_regular(AT_FDCWD, path, "token file", why, sizeof(why));
	if (fd < 0) {
		rf_fmt(err, errlen, "credentials from %s: %s", c->from, why);
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
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (r < 0 || n == TOKEN_FILE_MAX) {
		rf_free_secret(buf);
		rf_fmt(err, errlen, "credentials from %s: token file '%s': %s", c->from, path,
		       r < 0 ? strerror(e) : "over 64 KiB");
		return r < 0 ? -e : -EFBIG;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	if (!n || strpbrk(buf, "\r\n")) {
		rf_free_secret(buf);
		rf_fmt(err, errlen, "credentials from %s: token file '%s' %s", c->from, path,
		       n ? "holds more than one line" : "is empty");
		return -EINVAL;
	}
	*out = buf;
	return 0;
}

/* ---- the sources, one fetch each ---- */

typedef int (*fetch_fn)(const rf_creds *c, rf_creds_set *out, char *err, size_t errlen);

/* EC2 instance metadata, IMDSv2: a session token (PUT), the role's name,
 * then its keys, each asked with the token. */
static int fetch_imds(const rf_creds *c, rf_creds_set *out, char *err, size_t errlen)
{
	char url[600], hdr[600], why[256];
	rf_fetch_result r;
	rf_fmt(url, sizeof(url), "%s/latest/api/token", c->url);
	const char *ttl[] = { "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL };
	int ret = rf_fetch_run(&(rf_fetch){ .url = url, .method = "PUT", .headers = ttl,
					   .timeout_ms = 1000, .tries = 2, .max_body = 4096 },
			       &r, why, sizeof(why));
	if (ret || r.status != 200 || !r.body) {
		if (!ret)
			rf_fetch_why(&r, why, sizeof(why));
		rf_fmt(err, errlen, "credentials from %s: a session token: %s", c->from, why);
		rf_fetch_result_free(&r);
		return -ENOENT;
	}
	rf_fmt(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %.*s",
	       (int)strcspn((char *)r.body, "\r\n"), (char *)r.body);
	explicit_bzero(r.body, r.body_len);
	rf_fetch_result_free(&r);
	const char *auth[] = { hdr, NULL };
	rf_fmt(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/", c->url);
	ret = rf_fetch_run(&(rf_fetch){ .url = url, .headers = auth, .timeout_ms = 1000, .tries = 2,
					.max_body = 4096 }, &r, why, sizeof(why));
	if (ret || r.status != 200 || !r.body || !r.body[0]) {
		if (!ret)
			rf_fetch_why(&r, why, sizeof(why));
		rf_fmt(err, errlen, "credentials from %s: the role's name: %s", c->from, why);
		rf_fetch_result_free(&r);
		explicit_bzero(hdr, sizeof(hdr));
		return -ENOENT;
	}
	char role[256];
	rf_fmt(role, sizeof(role), "%.*s", (int)strcspn((char *)r.body, "\r\n"), (char *)r.body);
	rf_fetch_result_free(&r);
	rf_fmt(url, sizeof(url), "%s/latest/meta-data/iam/security-credentials/%s", c->url, role);
	ret = rf_fetch_run(&(rf_fetch){ .url = url, .headers = auth, .timeout_ms = 1000,
					.tries = 2, .max_body = 16384 }, &r, why, sizeof(why));
	explicit_bzero(hdr, sizeof(hdr));
	if (ret || r.status != 200 || !r.body) {
		if (!ret)
			rf_fetch_why(&r, why, sizeof(why));
		rf_fmt(err, errlen, "credentials from %s: role %s: %s", c->from, role, why);
		rf_fetch_result_free(&r);
		return -ENOENT;
	}
	ret = rf_creds_parse(c->kind, (char *)r.body, r.body_len, c->from, out, err, errlen);
	explicit_bzero(r.body, r.body_len);
	rf_fetch_result_free(&r);
	return ret == -EPROTO ? -ENOENT : ret;
}

/* A container's endpoint (ECS task role, EKS Pod Identity): one GET, with
 * the Authorization the environment gives (its file read each time: the
 * agent rotates it). */
static int fetch_container(const rf_creds *c, rf_creds_set *out, char *err, size_t errlen)
{
	char *token = NULL, *hdr = NULL, why[256];
	int ret = 0;
	if (c->auth_file && (ret = read_token_file(c, c->auth_file, &token, err, errlen)))
		return ret;
	const char *value = token ? token : c->auth;
	if (value && strpbrk(value, "\r\n")) {
		rf_fmt(err, errlen, "credentials from %s: the authorization token holds a line "
		       "break", c->from);
		ret = -EINVAL;
		goto out;
	}
	if (value && !(hdr = rf_strprintf("Authorization: %s", value))) {
		rf_fmt(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	const char *headers[] = { hdr, NULL };
	rf_fetch_result r;
	ret = rf_fetch_run(&(rf_fetch){ .url = c->url, .headers = hdr ? headers : NULL,
					.timeout_ms = 5000, .tries = 3, .max_body = 16384 },
			   &r, why, sizeof(why));
	if (ret) {
		rf_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		goto out;
	}
	if (r.status != 200 || !r.body) {
		rf_fetch_why(&r, why, sizeof(why));
		rf_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		ret = r.status == 401 || r.status == 403 ? -EACCES : -EIO;
	} else {
		ret = rf_creds_parse(c->kind, (char *)r.body, r.body_len, c->from, out, err, errlen);
		explicit_bzero(r.body, r.body_len);
	}
	rf_fetch_result_free(&r);
out:
	rf_free_secret(token);
	rf_free_secret(hdr);
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
static int fetch_web_identity(const rf_creds *c, rf_creds_set *out, char *err, size_t errlen)
{
	char *token = NULL, why[256];
	int ret = read_token_file(c, c->token_file, &token, err, errlen);
	if (ret)
		return ret;
	size_t cap = 3 * (strlen(token) + strlen(c->role_arn) + strlen(c->session_name)) + 256, n = 0;
	char *body = malloc(cap);
	if (!body) {
		rf_free_secret(token);
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = (size_t)snprintf(body, cap, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=");
	form_encode(body, cap, &n, c->role_arn);
	n += (size_t)snprintf(body + n, cap - n, "&RoleSessionName=");
	form_encode(body, cap, &n, c->session_name);
	n += (size_t)snprintf(body + n, cap - n, "&WebIdentityToken=");
	form_encode(body, cap, &n, token); /* cap is 3 x every part: it fits */
	rf_free_secret(token);
	const char *headers[] = { "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
				  "Accept: application/xml", NULL };
	rf_fetch_result r;
	ret = rf_fetch_run(&(rf_fetch){ .url = c->url, .body = body, .headers = headers,
					.timeout_ms = 10000, .tries = 3, .max_body = 65536 },
			   &r, why, sizeof(why));
	rf_free_secret(body);
	if (ret) {
		rf_fmt(err, errlen, "credentials from %s: %s", c->from, why);
		return ret;
	}
	if (r.status != 200 || !r.body) {
		rf_fetch_why(&r, why, sizeof(why));
		rf_fmt(err, errlen, "credentials from %s: AssumeRoleWithWebIdentity: %s", c->from, why);
		ret = r.status == 401 || r.status == 403 ? -EACCES : -EIO;
	} else {
		ret = rf_creds_parse(c->kind, (char *)r.body, r.body_len, c->from, out, err, errlen);
	}
	if (r.body)
		explicit_bzero(r.body, r.body_len);
	rf_fetch_result_free(&r);
	return ret;
}

/* Runs command (/bin/sh -c, stdin /dev/null, stderr the caller's) and
 * gathers its output into out[len] (NUL-terminated, *got bytes),
 * PROCESS_TIMEOUT_MS at most: past it the process is killed. @return : 0 (it exited 0), or a
 * negative errno with err saying why (never the output: it holds keys). */
static int run_process(const rf_creds *c, char *out, size_t len, size_t *got, char *err,
		       size_t errlen)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC)) {
		int e = errno;
		rf_fmt(err, errlen, "credentials from %s: a pipe: %s", c->from, strerror(e));
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
	char *argv[] = { "sh", "-c", c->command, NULL };
	pid_t pid;
	int e = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (e) {
		close(fds[0]);
		rf_fmt(err, errlen, "credentials from %s: /bin/sh: %s", c->from, strerror(e));
		return -e;
	}
	size_t n = 0;
	int ret = 0;
	uint64_t deadline = rf_now_ns() + PROCESS_TIMEOUT_MS * 1000000ull;
	for (;;) { /* ends at EOF, an error, the deadline or a full buffer */
		uint64_t now = rf_now_ns();
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int ready = now < deadline ? poll(&p, 1, (int)((deadline - now) / 1000000 + 1)) : 0;
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0) {
			kill(pid, SIGKILL);
			rf_fmt(err, errlen, "credentials from %s: the command gave no answer in %d s "
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
			rf_fmt(err, errlen, "credentials from %s: reading its output: %s", c->from,
			       strerror(e));
			ret = -e;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == len - 1) {
			kill(pid, SIGKILL);
			rf_fmt(err, errlen, "credentials from %s: the command's output is over %zu "
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
			rf_fmt(err, errlen, "credentials from %s: the command exited with status %d",
			       c->from, WEXITSTATUS(status));
		else
			rf_fmt(err, errlen, "credentials from %s: the command was killed by signal %d",
			       c->from, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		ret = -EIO;
	}
	return ret;
}

/* A profile's credential_process: its JSON (Version 1, AccessKeyId,
 * SecretAccessKey [, SessionToken] [, Expiration]). */
static int fetch_process(const rf_creds *c, rf_creds_set *out, char *err, size_t errlen)
{
	char *doc = malloc(PROCESS_MAX_OUT);
	if (!doc) {
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	size_t got;
	int ret = run_process(c, doc, PROCESS_MAX_OUT, &got, err, errlen);
	if (!ret)
		ret = rf_creds_parse(c->kind, doc, got, c->from, out, err, errlen);
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

/* ---- keeping them fresh ---- */

/* How long after now (Unix ms) to fetch a set that expires at expires:
 * REFRESH_MARGIN_MS before, or at half its life when shorter, never sooner
 * than REFRESH_MIN_MS. -1: never (it does not expire). */
static int64_t refresh_in(int64_t now, int64_t expires)
{
	if (!expires)
		return -1;
	int64_t life = expires - now;
	return RF_MAX(life - RF_MIN(REFRESH_MARGIN_MS, life / 2), REFRESH_MIN_MS);
}

/* After fails failed tries in a row with the current set expiring at
 * expires: half the time left (at least 1 s, at most a minute), or once
 * expired a backoff from 1 s doubling to a minute. */
static int64_t retry_in(int64_t now, int64_t expires, uint32_t fails)
{
	if (expires > now)
		return RF_MAX(RF_MIN((expires - now) / 2, RETRY_MAX_MS), REFRESH_MIN_MS);
	return RF_MIN(REFRESH_MIN_MS << RF_MIN(fails - 1, 6u), RETRY_MAX_MS);
}

/* "2024-05-01 12:00:00 UTC" */
static void utc_text(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		rf_fmt(buf, len, "%lld ms", (long long)ms);
}

/* The refresh thread: sleeps until the next try (or destroy), fetches
 * without the lock, swaps the new set in under it. */
static void *refresher(void *arg)
{
	rf_creds *c = arg;
	uint32_t fails = 0;
	assert(fetchers[c->kind]); /* started only for keys that expire: fetched ones */
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		if (rf_now_ns() < (uint64_t)c->next_ns) {
			struct timespec ts = { .tv_sec = c->next_ns / 1000000000,
					       .tv_nsec = c->next_ns % 1000000000 };
			pthread_cond_timedwait(&c->wake, &c->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		rf_creds_set s = { 0 };
		char err[512];
		int ret = fetchers[c->kind](c, &s, err, sizeof(err));
		int64_t now = real_ms(), wait_ms;
		char when[64] = "";
		pthread_mutex_lock(&c->lock);
		if (c->stop) { /* destroyed during the fetch: nothing to swap or say */
			rf_creds_set_free(&s);
			break;
		}
		int expired_already = !ret && s.expires_ms && s.expires_ms <= now;
		if (!ret && !expired_already) {
			int other = strcmp(s.key_id, c->cur.key_id) || strcmp(s.secret, c->cur.secret) ||
				    !s.token != !c->cur.token ||
				    (s.token && strcmp(s.token, c->cur.token));
			rf_creds_set old = c->cur;
			c->cur = s;
			if (other)
				atomic_fetch_add_explicit(&c->gen, 1, memory_order_release);
			rf_creds_set_free(&old);
			wait_ms = refresh_in(now, c->cur.expires_ms);
		} else {
			fails++;
			wait_ms = retry_in(now, c->cur.expires_ms, fails);
			utc_text(c->cur.expires_ms, when, sizeof(when));
		}
		c->next_ns = wait_ms < 0 ? INT64_MAX : (int64_t)rf_now_ns() + wait_ms * 1000000;
		pthread_mutex_unlock(&c->lock);
		rf_log_level level = (rf_log_level)atomic_load(&c->log_level);
		if (expired_already) {
			rf_creds_set_free(&s);
			rf_fmt(err, sizeof(err), "credentials from %s: the new keys had expired already "
			       "(is this machine's clock right?)", c->from);
		}
		if ((ret || expired_already) && fails == 1)
			rf_log(level, RF_LOG_WARN, "%s; refreshing them failed: the current keys are kept "
			       "until they expire (%s), and tried again", err, when);
		else if (!ret && !expired_already && fails) {
			rf_log(level, RF_LOG_INFO, "credentials from %s: refreshed after %u failed tries",
			       c->from, fails);
			fails = 0;
		}
		pthread_mutex_lock(&c->lock);
	}
	int last = --c->refs == 0;
	assert(c->refs >= 0);
	pthread_mutex_unlock(&c->lock);
	if (last) /* destroyed while a fetch was under way: ours to free */
		release(c);
	return NULL;
}

/* ---- the object ---- */

int rf_creds_create(rf_creds **out, const rf_creds_source *src, char *err, size_t errlen)
{
	*out = NULL;
	rf_creds *c = calloc(1, sizeof(*c));
	if (!c) {
		rf_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int oom = 0, ret;
	c->refs = 1;
	c->kind = src->kind;
	c->url = dup_or_null(src->url, &oom);
	/* IMDS's base without its trailing '/' (its paths are appended) */
	if (c->kind == RF_CREDS_IMDS && c->url)
		for (size_t n = strlen(c->url); n && c->url[n - 1] == '/'; n--)
			c->url[n - 1] = '\0';
	c->auth = dup_or_null(src->auth, &oom);
	c->auth_file = dup_or_null(src->auth_file, &oom);
	c->token_file = dup_or_null(src->token_file, &oom);
	c->role_arn = dup_or_null(src->role_arn, &oom);
	c->session_name = dup_or_null(src->session_name, &oom);
	c->command = dup_or_null(src->command, &oom);
	switch (c->kind) {
	case RF_CREDS_STATIC: c->from = dup_or_null(src->from, &oom); break;
	case RF_CREDS_IMDS: c->from = rf_strprintf("instance metadata at %s", src->url); break;
	case RF_CREDS_CONTAINER: c->from = rf_strprintf("the container endpoint %s", src->url); break;
	case RF_CREDS_WEB_IDENTITY:
		c->from = rf_strprintf("web identity (role %s, STS at %s)", src->role_arn, src->url);
		break;
	case RF_CREDS_PROCESS: c->from = rf_strprintf("%s's credential_process", src->from); break;
	}
	atomic_init(&c->gen, 1);
	atomic_init(&c->log_level, RF_LOG_NONE);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->lock, NULL);
	if (oom || !c->from) {
		rf_fmt(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	if (c->kind == RF_CREDS_STATIC)
		ret = set_of(&c->cur, src->key_id, src->secret, src->token, 0, err, errlen);
	else
		ret = fetchers[c->kind](c, &c->cur, err, errlen);
	if (ret)
		goto fail;
	int64_t wait_ms = refresh_in(real_ms(), c->cur.expires_ms);
	if (wait_ms >= 0) {
		c->next_ns = (int64_t)rf_now_ns() + wait_ms * 1000000;
		c->refs = 2;
		pthread_t t;
		if ((ret = rf_thread_start(&t, refresher, c, "rf-credentials"))) {
			c->refs = 1;
			rf_fmt(err, errlen, "credentials from %s: the refresh thread: %s", c->from,
			       strerror(-ret));
			goto fail;
		}
		pthread_detach(t);
	}
	*out = c;
	return 0;
fail:
	rf_creds_destroy(c);
	return ret;
}

/* Frees c: its last reference is gone. */
static void release(rf_creds *c)
{
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	rf_creds_set_free(&c->cur);
	free(c->from);
	free(c->url);
	rf_free_secret(c->auth);
	free(c->auth_file);
	free(c->token_file);
	free(c->role_arn);
	free(c->session_name);
	free(c->command);
	free(c);
}

void rf_creds_destroy(rf_creds *c)
{
	if (!c)
		return;
	/* the refresh thread, if any, stops at its next wake-up: at once when
	 * it sleeps, else when its fetch ends (within the fetch's timeouts),
	 * and frees c if it holds the last reference */
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_signal(&c->wake);
	int last = --c->refs == 0;
	assert(c->refs >= 0); /* one destroy per create */
	pthread_mutex_unlock(&c->lock);
	if (last)
		release(c);
}

const char *rf_creds_from(const rf_creds *c)
{
	return c->from;
}

void rf_creds_log_at(rf_creds *c, rf_log_level level)
{
	int cur = atomic_load(&c->log_level);
	while ((int)level > cur && !atomic_compare_exchange_weak(&c->log_level, &cur, (int)level))
		;
}

uint64_t rf_creds_generation(const rf_creds *c)
{
	return atomic_load_explicit(&c->gen, memory_order_acquire);
}

int rf_creds_copy(rf_creds *c, rf_creds_set *out, uint64_t *gen)
{
	char err[32];
	pthread_mutex_lock(&c->lock);
	int ret = set_of(out, c->cur.key_id, c->cur.secret, c->cur.token, c->cur.expires_ms, err,
			 sizeof(err));
	*gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
	pthread_mutex_unlock(&c->lock);
	return ret;
}
