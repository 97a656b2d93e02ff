/* fuzz_parquet.c - libFuzzer target: the Parquet decoder
 * (src/source/parquet_*.c) on a whole file held in memory: the tail and
 * footer, then for every readable column of every row group its pages
 * found from the OffsetIndex when there is one and from the page headers
 * either way, its dictionary loaded, and every data page opened and its
 * rows decoded, whole and a slice. The input is also given as is to the
 * page header and OffsetIndex parsers. Whatever the bytes, each step gives
 * a result or a refusal that says why; what a step accepts must hold what
 * it promises (pages inside their chunk, values inside the page, the
 * dictionary or the page's arena). The input is the "huggingface" JSON of
 * a made-up file too, and each column's ClassLabel names are asked of a
 * parsed one. Seeds: pyarrow's files (scripts/fuzz.sh
 * writes them with tests/parquet_fixtures.py where the writers' venv is). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/parquet_hf.h"
#include "source/parquet_meta.h"
#include "source/parquet_page.h"

#define must(c)                                                                       \
	do {                                                                          \
		if (!(c)) {                                                           \
			fprintf(stderr, "fuzz_parquet: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                      \
		}                                                                     \
	} while (0)

static char why[512];

/* Every value of a decoded range lies in the file, the page's own buffer,
 * the dictionary's, or the range's arena. */
static int inside(const uint8_t *p, uint32_t n, const uint8_t *b, size_t bn)
{
	return b && p >= b && (size_t)(p - b) <= bn && n <= bn - (size_t)(p - b);
}

static void check_values(const rf_pq_values *v, const rf_pq_page *pg, const rf_pq_dict *d,
			 const uint8_t *file, size_t size)
{
	for (uint32_t i = 0; v->ptr && i < v->count; i++) {
		if (!v->present[i]) {
			must(v->ptr[i] == NULL);
			continue;
		}
		const uint8_t *p = v->ptr[i];
		uint32_t n = v->len[i];
		must(inside(p, n, file, size) ||
		     inside(p, n, pg->owned, (size_t)pg->h.uncompressed_size) ||
		     inside(p, n, d->data, d->data_len) || inside(p, n, v->arena, v->arena_len));
	}
}

static void pages_of(const rf_pq_meta *m, uint32_t g, uint32_t leaf, const uint8_t *file,
		     size_t size, const rf_pq_page_loc *locs, uint32_t np, int64_t dict_at)
{
	rf_pq_dict dict = {0};
	int have_dict = dict_at >= 0 && (uint64_t)dict_at < size &&
			rfi_pq_dict_load(m, g, leaf, file + dict_at, size - (size_t)dict_at, &dict,
					 why, sizeof(why)) == 0;
	for (uint32_t p = 0; p < np; p++) {
		rf_pq_page pg;
		rf_pq_values v = {0};
		must(locs[p].offset >= 0 && (uint64_t)locs[p].offset + (uint64_t)locs[p].size <= size);
		int rc = rfi_pq_page_open(m, g, leaf, file + locs[p].offset, (size_t)locs[p].size, &pg,
					  why, sizeof(why));
		must(rc == 0 || rc == 1 || why[0]);
		if (rc != 0)
			continue;
		must(pg.header_len + (size_t)pg.h.compressed_size <= (size_t)locs[p].size);
		if (rfi_pq_page_rows(&pg, have_dict ? &dict : NULL, 0, pg.rows, &v, why,
				     sizeof(why)) == 0) {
			must(v.count == pg.rows);
			check_values(&v, &pg, &dict, file, size);
		}
		if (rfi_pq_page_rows(&pg, have_dict ? &dict : NULL, pg.rows / 2, pg.rows, &v, why,
				     sizeof(why)) == 0)
			check_values(&v, &pg, &dict, file, size);
		rfi_pq_values_free(&v);
		rfi_pq_page_close(&pg);
	}
	rfi_pq_dict_free(&dict);
}

static void column(const rf_pq_meta *m, uint32_t leaf, const uint8_t *file, size_t size)
{
	if (rfi_pq_column_check(m, leaf, why, sizeof(why)) < 0)
		return;
	for (uint32_t g = 0; g < m->ngroups; g++) {
		const rf_pq_chunk *c = &m->groups[g].chunks[leaf];
		int64_t rows = m->groups[g].num_rows, dict_at;
		rf_pq_page_loc *locs;
		uint32_t np;
		/* the footer's checks put the chunk and its OffsetIndex in the file */
		must((uint64_t)c->start + (uint64_t)c->compressed_size <= size);
		if (rfi_pq_chunk_scan(file + c->start, (size_t)c->compressed_size, c, rows, &locs, &np,
				      &dict_at, why, sizeof(why)) == 0) {
			pages_of(m, g, leaf, file, size, locs, np, dict_at);
			free(locs);
		}
		if (c->offset_index_offset >= 0 &&
		    rfi_pq_offset_index_parse(file + c->offset_index_offset,
					      (size_t)c->offset_index_length, c, rows, &locs, &np, why,
					      sizeof(why)) == 0) {
			must(np > 0);
			pages_of(m, g, leaf, file, size, locs, np, c->dictionary_page_offset);
			free(locs);
		}
	}
}

static void class_names(const rf_pq_meta *m, const char *column)
{
	char **names;
	uint32_t n;
	int rc = rfi_pq_hf_class_names(m, column, &names, &n, why, sizeof(why));
	must(rc == 1 || (names == NULL && n == 0));
	for (uint32_t i = 0; rc == 1 && i < n; i++)
		must(names[i] && strlen(names[i]) < m->footer_len + 1);
	if (rc == 1)
		rfi_pq_hf_names_free(names, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rf_pq_kv kv = {{"huggingface", 11}, {(const char *)data, (uint32_t)size}};
	rf_pq_meta fake = {.file = "hf.parquet", .kv = &kv, .nkv = 1, .footer_len = size};
	class_names(&fake, "label");
	rf_pq_page_header h;
	size_t hl;
	if (rfi_pq_page_header_parse(data, size, size, &h, &hl, why, sizeof(why)) == 0)
		must(hl + (size_t)h.compressed_size <= size);
	if (size < RF_PQ_TAIL_BYTES)
		return 0;
	uint32_t fl;
	rf_pq_meta *m = NULL;
	if (rfi_pq_tail_check("f.parquet", data + size - RF_PQ_TAIL_BYTES, size, &fl, why,
			      sizeof(why)) < 0)
		return 0;
	must(fl + RF_PQ_TAIL_BYTES + 4 <= size);
	if (rfi_pq_meta_parse("f.parquet", data + size - RF_PQ_TAIL_BYTES - fl, fl, size, &m, why,
			      sizeof(why)) < 0) {
		must(m == NULL && strncmp(why, "f.parquet: ", 11) == 0);
		return 0;
	}
	for (uint32_t leaf = 0; leaf < m->nleaves; leaf++) {
		column(m, leaf, data, size);
		class_names(m, m->leaves[leaf].path);
	}
	rfi_pq_meta_free(m);
	return 0;
}
