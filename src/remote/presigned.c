/* presigned.c - redirects remembered until they expire (presigned.h): a
 * chained hash table of from -> (to, expiry on the monotonic clock) under
 * one lock, and the expiry read from a signed URL's query. */
#define _GNU_SOURCE
#include "remote/presigned.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/util.h"

#define BUCKETS 1024u

typedef struct entry {
	struct entry *next;
	char *from, *to;   /* malloc'd; to is a credential while it lives */
	uint64_t good_until; /* CLOCK_MONOTONIC ns: used before this, forgotten after */
} entry;

struct rf_presigned {
	pthread_mutex_t lock;
	entry *bucket[BUCKETS]; /* under lock */
};

static void entry_free(entry *e)
{
	free(e->from);
	rfi_free_secret(e->to);
	free(e);
}

rf_presigned *rfi_presigned_new(void)
{
	rf_presigned *p = calloc(1, sizeof(*p));
	if (p && pthread_mutex_init(&p->lock, NULL)) {
		free(p);
		p = NULL;
	}
	return p;
}

void rfi_presigned_free(rf_presigned *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < BUCKETS; i++)
		for (entry *e = p->bucket[i], *next; e; e = next) {
			next = e->next;
			entry_free(e);
		}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static entry **slot_of(rf_presigned *p, const char *from)
{
	entry **at = &p->bucket[rfi_hash_bytes(0, from, strlen(from)) % BUCKETS];
	while (*at && strcmp((*at)->from, from))
		at = &(*at)->next;
	return at; /* the entry, or the NULL at its chain's end */
}

/* Unlinks and frees *at's entry (under lock). */
static void drop(entry **at)
{
	entry *e = *at;
	*at = e->next;
	entry_free(e);
}

int rfi_presigned_get(rf_presigned *p, const char *from, char *out, size_t len)
{
	int found = 0;
	pthread_mutex_lock(&p->lock);
	entry **at = slot_of(p, from);
	if (*at && rfi_now_ns() >= (*at)->good_until)
		drop(at);
	else if (*at && strlen((*at)->to) < len)
		memcpy(out, (*at)->to, strlen((*at)->to) + 1), found = 1;
	pthread_mutex_unlock(&p->lock);
	return found;
}

void rfi_presigned_put(rf_presigned *p, const char *from, const char *to)
{
	int64_t life = rfi_presigned_lifetime(to, time(NULL), RF_PRESIGNED_DEFAULT_S) -
		       RF_PRESIGNED_MARGIN_S;
	pthread_mutex_lock(&p->lock);
	entry **at = slot_of(p, from);
	if (*at)
		drop(at);
	entry *e = life > 0 ? calloc(1, sizeof(*e)) : NULL;
	if (e && (e->from = strdup(from)) && (e->to = strdup(to))) {
		e->good_until = rfi_now_ns() + (uint64_t)life * 1000000000ull;
		entry **head = &p->bucket[rfi_hash_bytes(0, from, strlen(from)) % BUCKETS];
		e->next = *head;
		*head = e;
	} else if (e) {
		entry_free(e);
	}
	pthread_mutex_unlock(&p->lock);
}

void rfi_presigned_forget(rf_presigned *p, const char *from)
{
	pthread_mutex_lock(&p->lock);
	entry **at = slot_of(p, from);
	if (*at)
		drop(at);
	pthread_mutex_unlock(&p->lock);
}

/* The value of query parameter name (exact) in url's query, or NULL. */
static const char *param(const char *url, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = strchr(url, '?'); p && *p; p = strchr(p + 1, '&'))
		if (!strncmp(p + 1, name, nl) && p[1 + nl] == '=')
			return p + 2 + nl;
	return NULL;
}

/* v as a count of seconds (1 to 19 digits, then the parameter's end).
 * @return : 1, or 0 when it is not one. */
static int seconds(const char *v, int64_t *out)
{
	size_t digits = v ? strspn(v, "0123456789") : 0;
	if (!digits || digits > 18 || (v[digits] && v[digits] != '&' && v[digits] != '#'))
		return 0;
	*out = strtoll(v, NULL, 10);
	return 1;
}

/* X-Amz-Date's YYYYMMDDTHHMMSSZ as a UNIX time. @return : 1, or 0 when it
 * is not one. */
static int amz_date(const char *v, time_t *out)
{
	struct tm tm = { 0 };
	const char *end = v ? strptime(v, "%Y%m%dT%H%M%SZ", &tm) : NULL;
	if (!end || (*end && *end != '&' && *end != '#'))
		return 0;
	*out = timegm(&tm);
	return 1;
}

int64_t rfi_presigned_lifetime(const char *url, time_t now, int64_t deflt)
{
	int64_t v;
	time_t t;
	if (seconds(param(url, "X-Amz-Expires"), &v) && amz_date(param(url, "X-Amz-Date"), &t))
		return (int64_t)t + v - (int64_t)now;
	if (seconds(param(url, "Expires"), &v))
		return v - (int64_t)now;
	return deflt;
}
