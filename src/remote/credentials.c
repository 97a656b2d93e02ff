/* credentials.c - keys from one source, fetched at set-up and again before
 * they expire on a thread of their own, handed to signers by a generation
 * number and a copy (credentials.h). The fetch is the source's (its fetch
 * function, credential_sources.c's rfi_creds_fetch): the store knows none
 * of them, and nothing of HTTP. */
#define _GNU_SOURCE
#include "remote/credentials.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

/* Keys are fetched again this long before they expire, or at half their
 * life when that is shorter (a set that lives 15 minutes is refreshed
 * after 7.5). IMDS offers new keys at least 5 minutes before the old ones
 * expire; the AWS SDKs refresh 10 to 15 minutes before. */
#define REFRESH_MARGIN_MS (10 * 60 * 1000ll)
/* No refresh sooner than this after the last try; a failed one is tried
 * again after at most RETRY_MAX_MS. */
#define REFRESH_MIN_MS 1000ll
#define RETRY_MAX_MS (60 * 1000ll)

struct rf_creds {
	/* the source, copied at create; read-only after */
	rf_creds_kind kind;
	rf_creds_fetch_fn fetch; /* the kind's (NULL: static keys) */
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

void rfi_creds_set_free(rf_creds_set *s)
{
	free(s->key_id);
	rfi_free_secret(s->secret);
	rfi_free_secret(s->token);
	*s = (rf_creds_set){ 0 };
}

int rfi_creds_set_make(rf_creds_set *out, const char *id, const char *secret, const char *token,
		  int64_t expires_ms, char *err, size_t errlen)
{
	int oom = 0;
	out->key_id = dup_or_null(id, &oom);
	out->secret = dup_or_null(secret, &oom);
	out->token = token && token[0] ? dup_or_null(token, &oom) : NULL;
	out->expires_ms = expires_ms;
	if (oom) {
		rfi_creds_set_free(out);
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The source as the fetch reads it: c's copies (from as messages name it). */
static rf_creds_source source_of(const rf_creds *c)
{
	return (rf_creds_source){ .kind = c->kind, .from = c->from, .url = c->url,
				  .auth = c->auth, .auth_file = c->auth_file,
				  .token_file = c->token_file, .role_arn = c->role_arn,
				  .session_name = c->session_name, .command = c->command };
}

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
		rfi_fmt(buf, len, "%lld ms", (long long)ms);
}

/* The refresh thread: sleeps until the next try (or destroy), fetches
 * without the lock, swaps the new set in under it. */
static void *refresher(void *arg)
{
	rf_creds *c = arg;
	uint32_t fails = 0;
	assert(c->fetch); /* started only for keys that expire: fetched ones */
	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		if (rfi_now_ns() < (uint64_t)c->next_ns) {
			struct timespec ts = { .tv_sec = c->next_ns / 1000000000,
					       .tv_nsec = c->next_ns % 1000000000 };
			pthread_cond_timedwait(&c->wake, &c->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		rf_creds_set s = { 0 };
		char err[512];
		rf_creds_source src = source_of(c);
		int ret = c->fetch(&src, &s, err, sizeof(err));
		int64_t now = real_ms(), wait_ms;
		char when[64] = "";
		pthread_mutex_lock(&c->lock);
		if (c->stop) { /* destroyed during the fetch: nothing to swap or say */
			rfi_creds_set_free(&s);
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
			rfi_creds_set_free(&old);
			wait_ms = refresh_in(now, c->cur.expires_ms);
		} else {
			fails++;
			wait_ms = retry_in(now, c->cur.expires_ms, fails);
			utc_text(c->cur.expires_ms, when, sizeof(when));
		}
		c->next_ns = wait_ms < 0 ? INT64_MAX : (int64_t)rfi_now_ns() + wait_ms * 1000000;
		pthread_mutex_unlock(&c->lock);
		rf_log_level level = (rf_log_level)atomic_load(&c->log_level);
		if (expired_already) {
			rfi_creds_set_free(&s);
			rfi_fmt(err, sizeof(err), "credentials from %s: the new keys had expired already "
			       "(is this machine's clock right?)", c->from);
		}
		if ((ret || expired_already) && fails == 1)
			rfi_log(level, RF_LOG_WARN, "%s; refreshing them failed: the current keys are kept "
			       "until they expire (%s), and tried again", err, when);
		else if (!ret && !expired_already && fails) {
			rfi_log(level, RF_LOG_INFO, "credentials from %s: refreshed after %u failed tries",
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

int rfi_creds_create(rf_creds **out, const rf_creds_source *src, char *err, size_t errlen)
{
	*out = NULL;
	rf_creds *c = calloc(1, sizeof(*c));
	if (!c) {
		rfi_fmt(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int oom = 0, ret;
	c->refs = 1;
	c->kind = src->kind;
	c->fetch = src->fetch;
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
	case RF_CREDS_IMDS: c->from = rfi_strprintf("instance metadata at %s", src->url); break;
	case RF_CREDS_CONTAINER: c->from = rfi_strprintf("the container endpoint %s", src->url); break;
	case RF_CREDS_WEB_IDENTITY:
		c->from = rfi_strprintf("web identity (role %s, STS at %s)", src->role_arn, src->url);
		break;
	case RF_CREDS_PROCESS: c->from = rfi_strprintf("%s's credential_process", src->from); break;
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
		rfi_fmt(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	if (c->kind == RF_CREDS_STATIC) {
		ret = rfi_creds_set_make(&c->cur, src->key_id, src->secret, src->token, 0, err,
					errlen);
	} else if (!c->fetch) {
		rfi_fmt(err, errlen, "credentials from %s: no fetch for them", c->from);
		ret = -EINVAL;
	} else {
		rf_creds_source view = source_of(c);
		ret = c->fetch(&view, &c->cur, err, errlen);
	}
	if (ret)
		goto fail;
	int64_t wait_ms = refresh_in(real_ms(), c->cur.expires_ms);
	if (wait_ms >= 0) {
		c->next_ns = (int64_t)rfi_now_ns() + wait_ms * 1000000;
		c->refs = 2;
		pthread_t t;
		if ((ret = rfi_thread_start(&t, refresher, c, "rf-credentials"))) {
			c->refs = 1;
			rfi_fmt(err, errlen, "credentials from %s: the refresh thread: %s", c->from,
			       strerror(-ret));
			goto fail;
		}
		pthread_detach(t);
	}
	*out = c;
	return 0;
fail:
	rfi_creds_destroy(c);
	return ret;
}

/* Frees c: its last reference is gone. */
static void release(rf_creds *c)
{
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	rfi_creds_set_free(&c->cur);
	free(c->from);
	free(c->url);
	rfi_free_secret(c->auth);
	free(c->auth_file);
	free(c->token_file);
	free(c->role_arn);
	free(c->session_name);
	free(c->command);
	free(c);
}

void rfi_creds_destroy(rf_creds *c)
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

const char *rfi_creds_from(const rf_creds *c)
{
	return c->from;
}

void rfi_creds_log_at(rf_creds *c, rf_log_level level)
{
	int cur = atomic_load(&c->log_level);
	while ((int)level > cur && !atomic_compare_exchange_weak(&c->log_level, &cur, (int)level))
		;
}

uint64_t rfi_creds_generation(const rf_creds *c)
{
	return atomic_load_explicit(&c->gen, memory_order_acquire);
}

int rfi_creds_copy(rf_creds *c, rf_creds_set *out, uint64_t *gen)
{
	char err[32];
	pthread_mutex_lock(&c->lock);
	int ret = rfi_creds_set_make(out, c->cur.key_id, c->cur.secret, c->cur.token,
				    c->cur.expires_ms, err, sizeof(err));
	*gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
	pthread_mutex_unlock(&c->lock);
	return ret;
}
