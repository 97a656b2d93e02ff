/* fields.c - a sample's fields (fields.h): the list parsed and resolved,
 * one sample's located when its read is issued (the ring thread), its
 * values stored into the slot as it lands (any thread) and packed in batch
 * order when the batch is published (the thread that lands its last place). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "pipeline/fields.h"
#include "source/source.h"
#include "util/util.h"

int rfi_fields_parse(rf_fields *f, const char *list, uint32_t max, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->max = max ? max : RF_FIELD_MAX_DEFAULT;
	if (!list)
		return 0;
	if (!list[0])
		return 0; /* "": none */
	for (const char *p = list; p;) {
		size_t n = strcspn(p, ",");
		const char *next = p[n] ? p + n + 1 : NULL; /* "txt," has an empty last name */
		while (n && isspace((unsigned char)*p)) {
			p++;
			n--;
		}
		while (n && isspace((unsigned char)p[n - 1]))
			n--;
		int optional = n && p[n - 1] == '?';
		size_t len = n - (size_t)optional;
		if (!len) {
			rfi_fmt(err, errlen, "config: fields '%s': an empty name (fields are member "
			       "extensions such as txt,json)", list);
			return RF_ECONFIG;
		}
		if (f->n == RF_MAX_FIELDS) {
			rfi_fmt(err, errlen, "config: fields '%s': more than %d fields", list,
			       RF_MAX_FIELDS);
			return RF_ECONFIG;
		}
		if (len >= sizeof(f->spec[0].name) || memchr(p, '/', len)) {
			rfi_fmt(err, errlen, "config: fields '%s': '%.*s' is not a member extension "
			       "(at most %zu bytes, no '/')", list, (int)len, p,
			       sizeof(f->spec[0].name) - 1);
			return RF_ECONFIG;
		}
		rf_field_spec *s = &f->spec[f->n];
		for (size_t i = 0; i < len; i++)
			s->name[i] = (char)tolower((unsigned char)p[i]);
		s->name[len] = '\0';
		s->optional = optional;
		s->id = -1;
		for (uint32_t i = 0; i < f->n; i++)
			if (!strcmp(f->spec[i].name, s->name)) {
				rfi_fmt(err, errlen, "config: fields '%s': '%s' named twice", list, s->name);
				return RF_ECONFIG;
			}
		f->n++;
		p = next;
	}
	return 0;
}

/* The extension of a sample's own name (after the first dot of its base
 * name), or "" when it has none. */
static const char *own_ext(const char *name)
{
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	const char *dot = strchr(base, '.');
	return dot ? dot + 1 : "";
}

/* Fields that are columns of the source's rows: the kind finds them. */
static int resolve_columns(rf_fields *f, const rf_source *src, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < f->n; i++) {
		int ret = src->ops->field_column(src, f->spec[i].name, f->spec[i].optional,
						 &f->spec[i].id, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int rfi_fields_resolve(rf_fields *f, const rf_source *src, char *err, size_t errlen)
{
	const rf_index *idx = &src->index;
	if (f->n && src->ops->field_column)
		return resolve_columns(f, src, err, errlen);
	if (f->n && !idx->entries) { /* samples kept in a kind's own table, no columns */
		rfi_fmt(err, errlen, "config: fields: a source of %s gives no fields yet",
			src->ops->name);
		return RF_ECONFIG;
	}
	for (uint32_t i = 0; i < f->n; i++) {
		rf_field_spec *s = &f->spec[i];
		s->id = rfi_index_extra_find(idx, s->name);
		if (s->id >= 0 || s->optional)
			continue;
		/* a sample's own member (--raw --fields txt on text samples) */
		int own = 0;
		for (size_t k = 0; k < idx->count && !own; k++)
			own = idx->entries[k].size >= 0 &&
			      !strcasecmp(own_ext(rfi_index_path(idx, k)), s->name);
		if (own)
			continue;
		char seen[512] = "";
		size_t used = 0;
		for (uint32_t k = 0; k < idx->nextra_names && used + 40 < sizeof(seen); k++)
			used += (size_t)snprintf(seen + used, sizeof(seen) - used, "%s%s",
						 k ? ", " : "", idx->extra_names[k]);
		rfi_fmt(err, errlen, "config: fields: no sample of '%s' has a member '%s' (%s%s); "
		       "name it '%s?' if it is optional", src->index.root, s->name,
		       idx->nextra_names ? "their other members: " : "they have no member besides "
		       "the image and its label", seen, s->name);
		return RF_ECONFIG;
	}
	return 0;
}

/* Fields that are columns: each a value the kind keeps, or the sample's
 * page of its column, a read of its own (absent when the column is not in
 * the sample's file). A null, or no column, in a field that is not
 * optional: a bad sample, as a member a sample lacks. */
static int locate_columns(const rf_fields *f, const rf_source *src, uint64_t sample,
			  rf_req_field *fld, char *reason, size_t len)
{
	for (uint32_t i = 0; i < f->n; i++) {
		const rf_field_spec *s = &f->spec[i];
		rf_source_read r = { .len = 0 };
		const uint8_t *value = NULL;
		uint32_t n = 0;
		int how = s->id >= 0 ? src->ops->field_read(src, sample, s->id, &r, &value, &n)
				     : RF_FIELD_READ;
		if (how == RF_FIELD_KEPT)
			fld[i] = (rf_req_field){ .where = RF_FIELD_INLINE, .data = value, .len = n };
		else
			fld[i] = (rf_req_field){ .where = r.len ? RF_FIELD_KIND_PART : RF_FIELD_ABSENT,
						 .from = r.offset, .len = r.len, .shard = r.shard };
		if (fld[i].where == RF_FIELD_ABSENT && !s->optional) {
			rfi_fmt(reason, len, "its '%s' field is %s (fields asks for it; '%s?' would "
			       "make it optional)", s->name, how == RF_FIELD_NULL ? "null"
			       : "a column its file lacks", s->name);
			return RF_EBADSAMPLE;
		}
		if (how == RF_FIELD_KEPT && n > f->max) {
			rfi_fmt(reason, len, "its '%s' field is %u bytes, more than field_max "
			       "(--field-max: %u bytes)", s->name, n, f->max);
			return RF_EBADSAMPLE;
		}
	}
	return 0;
}

int rfi_fields_locate(const rf_fields *f, const rf_source *src, uint64_t sample,
		     const rf_source_read *r, rf_req_field *fld, char *reason, size_t len)
{
	const rf_index *idx = &src->index;
	if (src->ops->field_read)
		return locate_columns(f, src, sample, fld, reason, len);
	uint32_t nx;
	const rf_index_extra *x = rfi_index_extras_of(idx, sample, &nx);
	const char *own = NULL;
	for (uint32_t i = 0; i < f->n; i++) {
		const rf_field_spec *s = &f->spec[i];
		rf_req_field *d = &fld[i];
		*d = (rf_req_field){ .where = RF_FIELD_ABSENT };
		const rf_index_extra *hit = NULL;
		for (uint32_t k = 0; k < nx && s->id >= 0 && !hit; k++)
			if (x[k].name == (uint16_t)s->id)
				hit = &x[k];
		uint64_t size;
		if (hit) {
			size = hit->size;
			if (hit->how == RF_EXTRA_MEMBER) {
				d->where = RF_FIELD_IN_READ;
				d->at = hit->at;
			} else if (hit->how == RF_EXTRA_INLINE) {
				d->where = RF_FIELD_INLINE;
				d->data = (const uint8_t *)idx->paths + hit->at;
			} else {
				d->where = RF_FIELD_OWN_FILE;
				d->path = idx->paths + hit->at;
			}
		} else {
			if (!own)
				own = own_ext(rfi_index_path(idx, sample));
			if (strcasecmp(own, s->name)) {
				if (s->optional)
					continue;
				rfi_fmt(reason, len, "no '%s' member (fields asks for it; '%s?' "
				       "would make it optional)", s->name, s->name);
				return RF_EBADSAMPLE;
			}
			d->where = RF_FIELD_IN_READ; /* its own bytes */
			d->at = r->offset;
			size = r->expect;
		}
		if (size > f->max) {
			rfi_fmt(reason, len, "its '%s' member is %llu bytes, more than field_max "
			       "(--field-max: %u bytes)", s->name, (unsigned long long)size, f->max);
			return RF_EBADSAMPLE;
		}
		d->len = (uint32_t)size;
	}
	return 0;
}

int rfi_slot_fields_alloc(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size)
{
	memset(sf, 0, sizeof(*sf));
	if (!f->n)
		return 0;
	size_t B = batch_size, n = f->n;
	sf->cap = B * n * f->max;
	/* address space only: pages are touched as values are written */
	void *stage = mmap(NULL, sf->cap, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	void *packed = mmap(NULL, sf->cap, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	sf->stage = stage == MAP_FAILED ? NULL : stage;
	sf->packed = packed == MAP_FAILED ? NULL : packed;
	sf->stage_off = malloc(B * n * sizeof(uint64_t));
	sf->stage_len = malloc(B * n * sizeof(uint32_t));
	sf->present = calloc(B * n, 1);
	sf->offsets = calloc((B + 1) * n, sizeof(uint64_t));
	if (!sf->stage || !sf->packed || !sf->stage_off || !sf->stage_len || !sf->present ||
	    !sf->offsets)
		return -ENOMEM;
	for (uint32_t i = 0; i < f->n; i++)
		sf->views[i] = (rf_field){ .name = f->spec[i].name, .bytes = sf->packed,
					   .offsets = sf->offsets + i * (B + 1),
					   .present = sf->present + i * B };
	return 0;
}

void rfi_slot_fields_free(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size)
{
	(void)f;
	(void)batch_size;
	if (sf->stage)
		munmap(sf->stage, sf->cap);
	if (sf->packed)
		munmap(sf->packed, sf->cap);
	free(sf->stage_off);
	free(sf->stage_len);
	free(sf->present);
	free(sf->offsets);
	memset(sf, 0, sizeof(*sf));
}

void rfi_slot_fields_reset(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size,
			  uint32_t count)
{
	if (!f->n)
		return;
	atomic_store_explicit(&sf->used, 0, memory_order_relaxed);
	for (uint32_t i = 0; i < f->n; i++)
		memset(sf->present + (size_t)i * batch_size, 0, count);
}

void rfi_slot_fields_store(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size,
			  uint32_t index, const rf_req_field *fld)
{
	size_t total = 0;
	/* a column's page its kind did not cut a value out of (fetch_only
	 * reads it, nothing decodes it): delivered absent */
#define STORED(x) ((x).where != RF_FIELD_ABSENT && (x).where != RF_FIELD_KIND_PART)
	for (uint32_t i = 0; i < f->n; i++)
		total += STORED(fld[i]) ? fld[i].len : 0;
	/* each place lands once and takes at most n * max: never past cap */
	size_t at = atomic_fetch_add_explicit(&sf->used, total, memory_order_relaxed);
	for (uint32_t i = 0; i < f->n; i++) {
		size_t k = (size_t)i * batch_size + index;
		if (!STORED(fld[i])) {
			sf->stage_len[k] = 0;
			sf->present[k] = 0;
			continue;
		}
		memcpy(sf->stage + at, fld[i].data, fld[i].len);
		sf->stage_off[k] = at;
		sf->stage_len[k] = fld[i].len;
		sf->present[k] = 1;
		at += fld[i].len;
	}
#undef STORED
}

void rfi_slot_fields_pack(rf_slot_fields *sf, const rf_fields *f, uint32_t batch_size,
			 rf_batch *b)
{
	size_t out = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		uint64_t *off = sf->offsets + (size_t)i * (batch_size + 1);
		size_t first = out; /* the field's values follow the previous field's */
		sf->views[i].bytes = sf->packed + first;
		for (uint32_t j = 0; j < b->count; j++) {
			size_t k = (size_t)i * batch_size + j;
			off[j] = out - first;
			if (!sf->present[k])
				continue;
			memcpy(sf->packed + out, sf->stage + sf->stage_off[k], sf->stage_len[k]);
			out += sf->stage_len[k];
		}
		off[b->count] = out - first;
	}
	b->nfields = f->n;
	b->fields = sf->views;
}
