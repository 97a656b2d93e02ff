/* records.c - what the kinds whose samples are index records (loose files,
 * tar members) share: a record's label, its samples count, fingerprint and
 * memory, and the check that a path is still a regular file. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/stat.h>

#include "source/source.h"
#include "util/hash.h"
#include "util/util.h"

int32_t rfi_records_label(const rf_source *s, uint64_t i)
{
	return s->index.entries[i].label;
}

uint64_t rfi_records_samples(const rf_source *s)
{
	return s->index.count;
}

uint64_t rfi_records_no_largest(const rf_source *s)
{
	(void)s;
	return 0;
}

uint64_t rfi_records_no_shard_bytes(const rf_source *s, uint32_t shard)
{
	(void)s, (void)shard;
	return 0;
}

size_t rfi_records_memory(const rf_source *s)
{
	return rfi_index_memory(&s->index);
}

/* Every record's name, size and label (and weight): another tree, another
 * list or other shards give another value. */
uint64_t rfi_records_fingerprint(const rf_source *s, int with_weights)
{
	const rf_index *idx = &s->index;
	uint64_t h = rfi_hash_u64(0x6461746173657421ull, idx->count);
	for (size_t i = 0; i < idx->count; i++) {
		const rf_index_entry *e = &idx->entries[i];
		h = rfi_hash_bytes(h, idx->paths + e->path_off, e->path_len);
		h = rfi_hash_u64(h, (uint64_t)e->size);
		h = rfi_hash_u64(h, (uint64_t)(uint32_t)e->label);
		if (with_weights && idx->weights) {
			uint64_t bits;
			memcpy(&bits, &idx->weights[i], sizeof(bits));
			h = rfi_hash_u64(h, bits);
		}
	}
	return h;
}

int rfi_source_not_regular(const rf_source *s, uint64_t i, char *reason, size_t len)
{
	rf_source_read r;
	rfi_source_read_of(s, i, &r);
	struct stat st;
	if (fstatat(s->index.root_fd, rfi_source_file(s, &r), &st, 0) || S_ISREG(st.st_mode))
		return 0;
	rfi_fmt(reason, len, "not a regular file (%s)", rfi_file_kind(st.st_mode));
	return 1;
}

int rfi_records_finish(rf_source *s, const char *source, const struct stat *st, char *err,
		      size_t errlen)
{
	rf_index *idx = &s->index;
	if (idx->count == 0) {
		rfi_fmt(err, errlen, "source '%s': no samples found%s", source,
		       idx->nshards ? " in its shards"
		       : st && S_ISDIR(st->st_mode) ? " (ImageFolder layout: CLASS/.../*.jpg)" : "");
		return RF_EEMPTY;
	}
	int ret = rfi_index_extras_settle(idx); /* the records are in their order now */
	if (ret)
		return ret;
	rfi_index_trim(idx);
	return 0;
}

const char *rfi_source_path(const rf_source *s, uint64_t i, char *buf, size_t len)
{
	char name[1024];
	rfi_source_name(s, i, name, sizeof(name));
	if (name[0] == '/' || !s->index.root || rfi_index_is_url(name)) /* a list's URL: as it is */
		rfi_fmt(buf, len, "%s", name);
	else
		rfi_fmt(buf, len, "%s/%s", s->index.root, name);
	return buf;
}
