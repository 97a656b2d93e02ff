/* parquet_opened.c - opened pages shared by the compute threads (see
 * parquet_opened.h): a fixed table of entries under one mutex, the least
 * recently used page nobody holds given up for a new one. */
#include "source/parquet_opened.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct opened_page {
	rf_pq_page pg;    /* valid while used */
	uint64_t key;
	uint64_t used_at; /* the set's clock when last handed out */
	size_t bytes;     /* its decompressed bytes */
	uint32_t holders;
	int used;
} opened_page;

struct rf_pq_opened {
	pthread_mutex_t lock; /* guards everything below */
	opened_page pages[RF_PQ_OPENED_PAGES];
	size_t bytes;
	uint64_t clock;
};

rf_pq_opened *rfi_pq_opened_new(void)
{
	rf_pq_opened *o = calloc(1, sizeof(*o));
	if (o && pthread_mutex_init(&o->lock, NULL)) {
		free(o);
		return NULL;
	}
	return o;
}

void rfi_pq_opened_free(rf_pq_opened *o)
{
	if (!o)
		return;
	for (uint32_t k = 0; k < RF_PQ_OPENED_PAGES; k++)
		if (o->pages[k].used)
			rfi_pq_page_close(&o->pages[k].pg);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/* Under the lock. */
static opened_page *find(rf_pq_opened *o, uint64_t key)
{
	for (uint32_t k = 0; k < RF_PQ_OPENED_PAGES; k++)
		if (o->pages[k].used && o->pages[k].key == key)
			return &o->pages[k];
	return NULL;
}

static const rf_pq_page *hold(rf_pq_opened *o, opened_page *e)
{
	e->holders++;
	e->used_at = ++o->clock;
	return &e->pg;
}

/* Under the lock: the least recently used page nobody holds, given up. */
static int evict_one(rf_pq_opened *o)
{
	opened_page *best = NULL;
	for (uint32_t k = 0; k < RF_PQ_OPENED_PAGES; k++) {
		opened_page *e = &o->pages[k];
		if (e->used && !e->holders && (!best || e->used_at < best->used_at))
			best = e;
	}
	if (!best)
		return 0;
	rfi_pq_page_close(&best->pg);
	o->bytes -= best->bytes;
	memset(best, 0, sizeof(*best));
	return 1;
}

/* Under the lock: a free entry, with room for bytes more, or NULL. */
static opened_page *room_for(rf_pq_opened *o, size_t bytes)
{
	if (bytes > RF_PQ_OPENED_BYTES)
		return NULL;
	while (o->bytes + bytes > RF_PQ_OPENED_BYTES)
		if (!evict_one(o))
			return NULL;
	for (;;) {
		for (uint32_t k = 0; k < RF_PQ_OPENED_PAGES; k++)
			if (!o->pages[k].used)
				return &o->pages[k];
		if (!evict_one(o))
			return NULL;
	}
}

const rf_pq_page *rfi_pq_opened_get(rf_pq_opened *o, uint64_t key)
{
	pthread_mutex_lock(&o->lock);
	opened_page *e = find(o, key);
	const rf_pq_page *pg = e ? hold(o, e) : NULL;
	pthread_mutex_unlock(&o->lock);
	return pg;
}

const rf_pq_page *rfi_pq_opened_put(rf_pq_opened *o, uint64_t key, rf_pq_page *pg)
{
	size_t bytes = pg->h.uncompressed_size > 0 ? (size_t)pg->h.uncompressed_size : 0;
	pthread_mutex_lock(&o->lock);
	opened_page *e = find(o, key); /* another thread opened it meanwhile */
	const rf_pq_page *out = NULL;
	if (e) {
		out = hold(o, e);
	} else if ((e = room_for(o, bytes))) {
		*e = (opened_page){ .pg = *pg, .key = key, .bytes = bytes, .used = 1 };
		memset(pg, 0, sizeof(*pg));
		o->bytes += bytes;
		out = hold(o, e);
	}
	pthread_mutex_unlock(&o->lock);
	return out;
}

void rfi_pq_opened_release(rf_pq_opened *o, const rf_pq_page *pg)
{
	pthread_mutex_lock(&o->lock);
	opened_page *e = (opened_page *)((const char *)pg - offsetof(opened_page, pg));
	e->holders--;
	pthread_mutex_unlock(&o->lock);
}

size_t rfi_pq_opened_bytes(rf_pq_opened *o)
{
	pthread_mutex_lock(&o->lock);
	size_t n = o->bytes;
	pthread_mutex_unlock(&o->lock);
	return n;
}
