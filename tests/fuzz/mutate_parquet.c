/* mutate_parquet.c - the mutation harness for Parquet sources (mutate.c's
 * for tar shards): damages real Parquet files (byte flips, cuts, splices
 * over, in and out) where their structure is (the footer and its tail,
 * page headers, page bodies, dictionary pages, the page index) or anywhere, and checks the
 * loader's promise on every mutant, over the folder of them:
 *   - create refuses, naming a damaged file; or
 *   - the epoch runs to its end and every row is delivered or reported as
 *     the bad sample "FILE:row N" (rows delivered again: no more than the
 *     batches' replacements of bad samples, on_error = skip); rows a
 *     damaged footer that still parses no longer has are not owed (the file
 *     says it is shorter: no reader can know);
 *   - raw, a row's bytes are the original's wherever the mutant left its
 *     page and its chunk's dictionary as they were, whatever it did to the
 *     page index and the footer: one that lies about where rows are makes
 *     them bad samples, never another row's bytes under their names (and
 *     every row of a file not damaged: its bytes and its label);
 *   - no single allocation larger than the files justify (malloc, calloc,
 *     realloc are wrapped: -Wl,--wrap; the largest is printed): 1024 x the
 *     largest file (the decoder's bound on a page's expansion) + 16 MiB.
 * A crash (run it under ASan: the asan build's fast suite does), a hang
 * (alarm), or a row unaccounted for stops the run, the mutant kept in
 * --keep's folder.
 *
 *   mutate_parquet --files DIR [--mutants N | --seconds S] [--seed X] [--keep DIR]
 *
 * DIR holds the undamaged *.parquet files (tests/mutate_parquet.sh writes
 * them with pyarrow, datasets, DuckDB and Polars). Output: a line a 1,000
 * mutants, the totals, and "N passed, N failed"; MUTATE_VERBOSE=1 in the
 * environment prints each refusal at create and its mutant too. */
#define _GNU_SOURCE
#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringfeed.h"
#include "source/parquet_meta.h"
#include "testutil.h"
#include "util/util.h"

#define MAX_FILES 8
#define MAX_ROWS 4096
#define MAX_REGIONS 4096

/* ---- allocations: the largest single one asked for ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
static _Atomic size_t largest_alloc;

static void note(size_t n)
{
	size_t was = atomic_load(&largest_alloc);
	while (n > was && !atomic_compare_exchange_weak(&largest_alloc, &was, n))
		;
}
void *__wrap_malloc(size_t n)
{
	note(n);
	return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size)
{
	note(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
	return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n)
{
	note(n);
	return __real_realloc(p, n);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "mutate_parquet: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* ---- the undamaged files ---- */

enum { R_FOOTER, R_HEADER, R_BODY, R_DICT, R_INDEX, R_KINDS };
static const char *const region_name[R_KINDS] = { "footer", "page header", "page body",
						  "dictionary page", "page index" };

typedef struct region {
	int kind;
	uint64_t lo, hi;
} region;

typedef struct row_truth {
	uint64_t page_lo, page_hi; /* its image page: header + body */
	uint64_t dict_lo, dict_hi; /* its chunk's dictionary page (empty: none) */
	uint8_t *bytes;            /* what a clean raw run delivered */
	size_t len;
	int32_t label;
} row_truth;

typedef struct pq_file {
	char name[64];
	uint8_t *p;
	size_t len;
	uint64_t meta_lo; /* where the page index and the footer start: past every chunk */
	region *reg;
	int nreg;
	row_truth *rows;
	int64_t nrows;
} pq_file;

static pq_file files[MAX_FILES];
static int nfiles;

static void add_region(pq_file *f, int kind, uint64_t lo, uint64_t hi)
{
	if (hi <= lo || f->nreg == MAX_REGIONS)
		return;
	f->reg[f->nreg++] = (region){ kind, lo, hi };
}

/* One chunk's pages as regions; for the image leaf, each row's page. */
static void chunk_regions(pq_file *f, const rf_pq_meta *m, uint32_t g, uint32_t leaf, int image)
{
	const rf_pq_chunk *c = &m->groups[g].chunks[leaf];
	rf_pq_page_loc *locs = NULL;
	uint32_t count = 0;
	int64_t dict = -1;
	char why[512];
	if (rfi_pq_chunk_scan(f->p + c->start, f->len - (size_t)c->start, c, m->groups[g].num_rows,
			      &locs, &count, &dict, why, sizeof(why)))
		die("%s: %s", f->name, why);
	uint64_t first = count ? (uint64_t)locs[0].offset : (uint64_t)c->start;
	if (dict >= 0) {
		add_region(f, R_DICT, (uint64_t)dict, first);
	}
	for (uint32_t i = 0; i < count; i++) {
		rf_pq_page_header h;
		size_t hlen;
		uint64_t lo = (uint64_t)locs[i].offset, hi = lo + (uint64_t)locs[i].size;
		if (rfi_pq_page_header_parse(f->p + lo, hi - lo, hi - lo, &h, &hlen, why, sizeof(why)))
			die("%s: page at %" PRIu64 ": %s", f->name, lo, why);
		add_region(f, R_HEADER, lo, lo + hlen);
		add_region(f, R_BODY, lo + hlen, hi);
		if (!image)
			continue;
		int64_t end = i + 1 < count ? locs[i + 1].first_row : m->groups[g].num_rows;
		for (int64_t r = locs[i].first_row; r < end; r++) {
			row_truth *t = &f->rows[m->groups[g].first_row + r];
			t->page_lo = lo;
			t->page_hi = hi;
			t->dict_lo = dict >= 0 ? (uint64_t)dict : 0;
			t->dict_hi = dict >= 0 ? first : 0;
		}
	}
	free(locs);
}

/* The file's regions and rows' pages, by the decoder (trusted on whole
 * files: tests/test_parquet.c checks it against pyarrow's). */
static void map_file(pq_file *f)
{
	char why[512];
	uint32_t flen;
	if (f->len < 12 || rfi_pq_tail_check(f->name, f->p + f->len - 8, f->len, &flen, why,
					      sizeof(why)))
		die("%s: %s", f->name, f->len < 12 ? "too short" : why);
	rf_pq_meta *m;
	uint64_t foot = f->len - 8 - flen;
	if (rfi_pq_meta_parse(f->name, f->p + foot, flen, f->len, &m, why, sizeof(why)))
		die("%s", why);
	int image = rfi_pq_leaf_find(m, "image.bytes");
	if (image < 0)
		image = rfi_pq_leaf_find(m, "image");
	if (image < 0 || m->num_rows <= 0 || m->num_rows > MAX_ROWS)
		die("%s: no image column, or rows not in 1..%d", f->name, MAX_ROWS);
	f->nrows = m->num_rows;
	f->rows = calloc((size_t)f->nrows, sizeof(*f->rows));
	f->reg = calloc(MAX_REGIONS, sizeof(*f->reg));
	add_region(f, R_FOOTER, foot, f->len);
	f->meta_lo = 4;
	for (uint32_t g = 0; g < m->ngroups; g++)
		for (uint32_t c = 0; c < m->nleaves; c++) {
			const rf_pq_chunk *ch = &m->groups[g].chunks[c];
			f->meta_lo = RF_MAX(f->meta_lo, (uint64_t)(ch->start + ch->compressed_size));
			chunk_regions(f, m, g, c, (int)c == image);
		}
	add_region(f, R_INDEX, f->meta_lo, foot); /* ColumnIndex, OffsetIndex: empty without */
	rfi_pq_meta_free(m);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const pq_file *)a)->name, ((const pq_file *)b)->name);
}

static void load_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		die("%s: cannot open", dir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);
		if (n < 9 || strcmp(de->d_name + n - 8, ".parquet") || de->d_name[0] == '.')
			continue;
		if (nfiles == MAX_FILES || n >= sizeof(files[0].name))
			die("%s: more than %d files, or a name too long", dir, MAX_FILES);
		memcpy(files[nfiles++].name, de->d_name, n + 1);
	}
	closedir(d);
	if (!nfiles)
		die("%s: no .parquet files", dir);
	qsort(files, (size_t)nfiles, sizeof(files[0]), cmp_name);
	for (int i = 0; i < nfiles; i++) {
		files[i].p = tu_read(dir, files[i].name, &files[i].len);
		map_file(&files[i]);
	}
}

/* ---- mutations ---- */

typedef struct mutant {
	uint8_t *p;
	size_t len;
	uint64_t lo[8], hi[8]; /* original bytes changed in place */
	int ntouched;
	int moved; /* bytes inserted or deleted: every offset after may lie */
	uint64_t cut;
} mutant;

static uint64_t rnd_state;
static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void touch(mutant *m, uint64_t lo, uint64_t hi)
{
	if (m->ntouched < 8) {
		m->lo[m->ntouched] = lo;
		m->hi[m->ntouched++] = hi;
	} else {
		m->lo[7] = RF_MIN(m->lo[7], lo);
		m->hi[7] = RF_MAX(m->hi[7], hi);
	}
}

static int touched(const mutant *m, uint64_t lo, uint64_t hi)
{
	if (m->moved || hi > m->cut)
		return 1;
	for (int i = 0; i < m->ntouched; i++)
		if (m->lo[i] < hi && lo < m->hi[i])
			return 1;
	return 0;
}

/* An offset in a region of a kind picked at random (its first bytes more
 * often: a header's sizes, a footer's tail), or anywhere; *kind says which. */
static uint64_t pick_offset(const pq_file *f, size_t len, int *kind)
{
	int k = (int)below(R_KINDS + 1);
	*kind = -1;
	if (k < R_KINDS) {
		int n = 0, pick = -1;
		for (int i = 0; i < f->nreg; i++)
			if (f->reg[i].kind == k && below((uint64_t)++n) == 0)
				pick = i;
		if (pick >= 0) {
			const region *r = &f->reg[pick];
			uint64_t span = r->hi - r->lo;
			*kind = k;
			if (k == R_FOOTER && rnd() % 3 == 0)
				return RF_MIN(f->len - 1 - below(8), len ? len - 1 : 0); /* the tail */
			return RF_MIN(r->lo + below(rnd() & 1 ? RF_MIN(span, 16) : span), len ? len - 1 : 0);
		}
	}
	return below(len);
}

static void describe(char *what, size_t cap, const char *op, int kind, uint64_t at, uint64_t n)
{
	size_t w = strlen(what);
	snprintf(what + w, cap - w, " %s@%" PRIu64 "+%" PRIu64 "(%s)", op, at, n,
		 kind >= 0 ? region_name[kind] : "anywhere");
}

static void splice(mutant *m, const pq_file *f, char *what, size_t cap)
{
	int kind;
	uint64_t at = pick_offset(f, m->len, &kind);
	uint64_t del = rnd() & 1 ? below(512) : 0, ins = del ? 0 : 1 + below(512);
	if (at > m->len || m->cut != UINT64_MAX)
		return;
	del = RF_MIN(del, m->len - at);
	const pq_file *src = &files[below((uint64_t)nfiles)];
	ins = RF_MIN(ins, src->len);
	uint64_t from = below(src->len - ins + 1);
	uint8_t *q = malloc(m->len - del + ins + 1);
	memcpy(q, m->p, at);
	memcpy(q + at, src->p + from, ins);
	memcpy(q + at + ins, m->p + at + del, m->len - at - del);
	free(m->p);
	m->p = q;
	m->len = m->len - del + ins;
	m->moved = 1;
	describe(what, cap, del ? "delete" : "insert", kind, at, del ? del : ins);
}

static void mutate(mutant *m, const pq_file *f, char *what, size_t cap)
{
	m->len = f->len;
	m->p = malloc(f->len + 1);
	memcpy(m->p, f->p, f->len);
	m->ntouched = m->moved = 0;
	m->cut = UINT64_MAX;
	int n = 1 + (int)below(3), kind;
	for (int k = 0; k < n; k++) {
		switch (below(6)) {
		case 0: case 1: case 2: { /* a byte flipped */
			uint64_t at = pick_offset(f, m->len, &kind);
			if (at >= m->len || m->moved)
				break;
			m->p[at] ^= (uint8_t)(1 + below(255));
			touch(m, at, at + 1);
			describe(what, cap, "flip", kind, at, 1);
			break;
		}
		case 3: { /* cut: in a region, or at a region's start */
			uint64_t at = pick_offset(f, m->len, &kind);
			if (m->moved || at >= m->len)
				break;
			m->len = at;
			m->cut = RF_MIN(m->cut, at);
			describe(what, cap, "cut", kind, at, 0);
			break;
		}
		case 4: { /* bytes of a file (this one or another) copied over */
			const pq_file *src = &files[below((uint64_t)nfiles)];
			uint64_t len = 1 + below(rnd() & 1 ? 16 : 2048), from = below(src->len);
			uint64_t at = pick_offset(f, m->len, &kind);
			if (m->moved || at >= m->len)
				break;
			len = RF_MIN(len, RF_MIN(src->len - from, m->len - at));
			memmove(m->p + at, src->p + from, len);
			touch(m, at, at + len);
			describe(what, cap, "over", kind, at, len);
			break;
		}
		case 5:
			if (!m->moved)
				splice(m, f, what, cap);
			break;
		}
	}
}

/* ---- one run of the loader ---- */

typedef struct run_log {
	uint8_t *seen[MAX_FILES];     /* times each row was delivered */
	uint8_t *reported[MAX_FILES]; /* rows named as bad samples */
	int stray;                    /* a report that names no row of ours */
	uint64_t again, replaced;     /* rows delivered more than once; replacements */
	char first_stray[512];
} run_log;

/* "DIR/NAME.parquet:row N" -> file index, row; -1 when not one of ours. */
static int parse_name(const char *name, int64_t *row)
{
	const char *at = strstr(name, ":row ");
	if (!at)
		return -1;
	const char *base = memrchr(name, '/', (size_t)(at - name));
	base = base ? base + 1 : name;
	for (int i = 0; i < nfiles; i++)
		if (strlen(files[i].name) == (size_t)(at - base) &&
		    !strncmp(base, files[i].name, (size_t)(at - base))) {
			*row = strtoll(at + 5, NULL, 10);
			return i;
		}
	return -1;
}

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	(void)err;
	run_log *log = user;
	int64_t row;
	int f = parse_name(path, &row);
	if (f >= 0 && row >= 0 && row < files[f].nrows) {
		log->reported[f][row] = 1;
		return;
	}
	if (!log->stray++)
		snprintf(log->first_stray, sizeof(log->first_stray), "%s: %s", path, reason);
}

typedef struct totals {
	uint64_t mutants, refused, rows, delivered, reported, dropped_by_footer, compared;
} totals;

/* Rows past what the mutant's footer says, when it still parses. */
static int64_t rows_said(const mutant *m, const pq_file *f)
{
	char why[256];
	uint32_t flen;
	rf_pq_meta *meta;
	if (m->len < 12 || rfi_pq_tail_check(f->name, m->p + m->len - 8, m->len, &flen, why,
					      sizeof(why)) ||
	    rfi_pq_meta_parse(f->name, m->p + m->len - 8 - flen, flen, m->len, &meta, why,
			      sizeof(why)))
		return -1;
	int64_t n = meta->num_rows;
	rfi_pq_meta_free(meta);
	return n;
}

/* Is the delivery of row r of file f, raw, owed its original bytes? */
static int owed_bytes(const mutant *m, const pq_file *f, const row_truth *t)
{
	if (!m)
		return 1;
	(void)f; /* a footer or page index that lies about where rows are must not move
		  * another row's bytes under this one's name */
	return !touched(m, t->page_lo, t->page_hi) && !touched(m, t->dict_lo, t->dict_hi);
}

static int check_delivery(const rf_batch *b, uint32_t i, int f, int64_t row, int raw,
			  const mutant *m, run_log *log, totals *t, char *why, size_t whylen)
{
	if (f < 0 || row < 0 || row >= files[f].nrows)
		return 0; /* a row a damaged footer made up: nothing to compare */
	if (log->seen[f][row]++) /* again: a replacement for a bad sample, or a bug */
		log->again++;
	const row_truth *tr = &files[f].rows[row];
	if (!raw || !owed_bytes(m, &files[f], tr))
		return 0;
	t->compared++;
	if (b->sizes[i] != tr->len || memcmp(b->data + b->offsets[i], tr->bytes, tr->len) ||
	    (!m && b->labels[i] != tr->label)) {
		snprintf(why, whylen, "%s:row %" PRId64 ": delivered %s differ from the original's "
			 "(its page, dictionary, index and footer untouched)", files[f].name, row,
			 b->labels[i] != tr->label ? "label" : "bytes");
		return -1;
	}
	return 0;
}

static int open_loader(const char *dir, int raw, int shuffle, run_log *log, rf_loader **l,
		       char *err, size_t errlen)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.shuffle = shuffle;
	cfg.epochs = 1;
	cfg.threads = 1;
	cfg.raw = raw;
	cfg.raw_max_bytes = 1 << 20;
	cfg.on_sample_error = on_bad;
	cfg.user = log;
	return rf_loader_create(l, &cfg, err, errlen);
}

/* One epoch over dir; m[f] the mutant of file f (NULL: the clean run,
 * which records the truth). 0, 1 refused at create (fine), -1 with why. */
static int epoch(const char *dir, mutant *const *m, int raw, int shuffle, run_log *log,
		 totals *t, char *why, size_t whylen)
{
	rf_loader *l;
	char err[1024], name[4096];
	int ret = open_loader(dir, raw, shuffle, log, &l, err, sizeof(err));
	if (ret) {
		for (int f = 0; f < nfiles; f++)
			if (m && m[f] && strstr(err, files[f].name)) {
				if (getenv("MUTATE_VERBOSE"))
					printf("  refused: %s\n", err);
				return 1;
			}
		snprintf(why, whylen, "create failed, naming no damaged file: %s (%s)", err,
			 rf_strerror(ret));
		return -1;
	}
	rf_batch *b;
	int failed = 0;
	while (!failed && (ret = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count && !failed; i++) {
			int64_t row = -1;
			int f = rf_loader_sample_name(l, b->ids[i], name, sizeof(name)) > 0
					? parse_name(name, &row) : -1;
			if (!m && f >= 0 && row >= 0 && row < files[f].nrows && raw) { /* the truth */
				row_truth *tr = &files[f].rows[row];
				tr->len = b->sizes[i];
				tr->bytes = malloc(tr->len + 1);
				memcpy(tr->bytes, b->data + b->offsets[i], tr->len);
				tr->label = b->labels[i];
			}
			failed = check_delivery(b, i, f, row, raw, m ? m[f] : NULL, log, t, why,
						whylen);
		}
		log->replaced += b->replaced;
		rf_batch_release(l, b);
	}
	if (!failed && log->again > log->replaced) { /* each bad sample's place is refilled */
		snprintf(why, whylen, "%llu rows delivered again, %llu replacements",
			 (unsigned long long)log->again, (unsigned long long)log->replaced);
		failed = -1;
	}
	if (!failed && ret != RF_EOF) {
		snprintf(why, whylen, "next: %s: %s", rf_strerror(ret), rf_loader_error(l));
		failed = -1;
	}
	rf_loader_destroy(l);
	return failed ? -1 : 0;
}

/* Every row of every file: delivered, reported, or past what its damaged
 * footer says. */
static int account(mutant *const *m, const run_log *log, totals *t, char *why, size_t whylen)
{
	for (int f = 0; f < nfiles; f++) {
		int64_t said = m[f] ? rows_said(m[f], &files[f]) : -1;
		for (int64_t r = 0; r < files[f].nrows; r++) {
			t->rows++;
			if (log->seen[f][r])
				t->delivered++;
			else if (log->reported[f][r])
				t->reported++;
			else if (said >= 0 && r >= said)
				t->dropped_by_footer++;
			else {
				snprintf(why, whylen, "%s:row %" PRId64 " was neither delivered nor reported "
					 "(%s file%s)", files[f].name, r, m[f] ? "a damaged" : "an undamaged",
					 log->stray ? "; a stray report" : "");
				if (log->stray)
					fprintf(stderr, "  stray report: %s\n", log->first_stray);
				return -1;
			}
		}
	}
	return 0;
}

static void keep_mutant(const char *keep, const char *dir)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s' '%s'", keep, dir, keep);
	if (system(cmd) != 0)
		fprintf(stderr, "mutate_parquet: could not keep the mutant in %s\n", keep);
	else
		printf("mutate_parquet: the mutant's files are in %s\n", keep);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "mutate_parquet: a mutant ran past 60 s: a hang\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static void log_reset(run_log *log)
{
	for (int f = 0; f < nfiles; f++) {
		memset(log->seen[f], 0, (size_t)files[f].nrows);
		memset(log->reported[f], 0, (size_t)files[f].nrows);
	}
	log->stray = 0;
	log->again = log->replaced = 0;
}

/* The undamaged files, raw in order: every row delivered, none bad; their
 * bytes and labels are the truth the mutants are compared with. */
static void clean_run(const char *dir, run_log *log)
{
	totals t = { 0 };
	char why[1024];
	for (int f = 0; f < nfiles; f++)
		tu_write(dir, files[f].name, files[f].p, files[f].len);
	if (epoch(dir, NULL, 1, 0, log, &t, why, sizeof(why)))
		die("the undamaged files: %s", why);
	for (int f = 0; f < nfiles; f++)
		for (int64_t r = 0; r < files[f].nrows; r++)
			if (!log->seen[f][r] || log->reported[f][r])
				die("the undamaged %s: row %" PRId64 " not delivered", files[f].name, r);
	if (log->stray)
		die("the undamaged files: a bad sample: %s", log->first_stray);
}

/* One mutant: one to three files damaged, the others as they were. */
static int one(const char *dir, uint64_t k, run_log *log, totals *t, char *what, size_t cap,
	       char *why, size_t whylen)
{
	mutant ms[MAX_FILES], *m[MAX_FILES];
	int damaged = 0;
	for (int f = 0; f < nfiles; f++) {
		m[f] = NULL;
		if (rnd() % 3 == 0 || (f == nfiles - 1 && !damaged)) {
			size_t w = strlen(what);
			snprintf(what + w, cap - w, " %s:", files[f].name);
			mutate(&ms[f], &files[f], what, cap);
			m[f] = &ms[f];
			damaged++;
			tu_write(dir, files[f].name, ms[f].p, ms[f].len);
		} else {
			tu_write(dir, files[f].name, files[f].p, files[f].len);
		}
	}
	log_reset(log);
	alarm(60);
	int r = epoch(dir, m, (int)(k & 1), (int)((k >> 1) & 1), log, t, why, whylen);
	alarm(0);
	if (r == 1 && getenv("MUTATE_VERBOSE"))
		printf("  (mutant%s)\n", what);
	if (r == 1)
		t->refused++;
	else if (r == 0)
		r = account(m, log, t, why, whylen);
	for (int f = 0; f < nfiles; f++)
		if (m[f])
			free(ms[f].p);
	return r < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t mutants = 200, seed = (uint64_t)time(NULL);
	double seconds = 0;
	const char *keep = NULL, *src = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mutants") && i + 1 < argc)
			mutants = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtod(argv[++i], NULL), mutants = UINT64_MAX;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--files") && i + 1 < argc)
			src = argv[++i];
		else
			die("usage: mutate_parquet --files DIR [--mutants N | --seconds S] [--seed X] "
			    "[--keep DIR]");
	}
	if (!src)
		die("--files DIR: the undamaged .parquet files");
	signal(SIGALRM, on_alarm);
	load_files(src);
	char *dir = tu_tmpdir("mutate-parquet");
	run_log log = { 0 };
	size_t biggest = 0;
	for (int f = 0; f < nfiles; f++) {
		log.seen[f] = calloc((size_t)files[f].nrows, 1);
		log.reported[f] = calloc((size_t)files[f].nrows, 1);
		biggest = RF_MAX(biggest, files[f].len);
	}
	size_t limit = 1024 * biggest + (16u << 20);
	atomic_store(&largest_alloc, 0); /* the loader's from here on, not the files read here */
	clean_run(dir, &log);
	printf("mutate_parquet: seed %llu, %d files (%s):", (unsigned long long)seed, nfiles, src);
	for (int f = 0; f < nfiles; f++)
		printf(" %s %" PRId64 " rows %zu bytes %d regions,", files[f].name, files[f].nrows,
		       files[f].len, files[f].nreg);
	printf(" the largest allocation of the clean run %zu bytes\n", atomic_load(&largest_alloc));
	fflush(stdout);
	rnd_state = seed;
	totals t = { 0 };
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int failed = 0;
	for (uint64_t k = 0; k < mutants && !failed; k++) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (seconds > 0 && (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9 > seconds)
			break;
		char what[2048] = "", why[2048] = "";
		failed = one(dir, k, &log, &t, what, sizeof(what), why, sizeof(why)) != 0;
		t.mutants++;
		if (!failed && atomic_load(&largest_alloc) > limit) {
			snprintf(why, sizeof(why), "an allocation of %zu bytes, files of at most %zu",
				 atomic_load(&largest_alloc), biggest);
			failed = 1;
		}
		if (failed) {
			printf("mutate_parquet: mutant %llu (%s, %s;%s): %s\n", (unsigned long long)k,
			       k & 1 ? "raw" : "decoded", k & 2 ? "shuffled" : "in order", what, why);
			if (keep)
				keep_mutant(keep, dir);
		}
		if ((k + 1) % 1000 == 0) {
			printf("mutate_parquet: %llu mutants, %llu refused at create\n",
			       (unsigned long long)t.mutants, (unsigned long long)t.refused);
			fflush(stdout);
		}
	}
	printf("mutate_parquet: %llu mutants: %llu refused at create naming the file; %llu rows "
	       "checked: %llu delivered, %llu reported as bad samples, %llu past what a damaged "
	       "footer says; %llu raw deliveries compared byte for byte; the largest allocation "
	       "%zu bytes (limit %zu); %s\n",
	       (unsigned long long)t.mutants, (unsigned long long)t.refused,
	       (unsigned long long)t.rows, (unsigned long long)t.delivered,
	       (unsigned long long)t.reported, (unsigned long long)t.dropped_by_footer,
	       (unsigned long long)t.compared, atomic_load(&largest_alloc), limit,
	       failed ? "an invariant broke" : "no row lost in silence");
	printf("%d passed, %d failed\n", !failed, failed);
	tu_rmrf(dir);
	free(dir);
	for (int f = 0; f < nfiles; f++) {
		for (int64_t r = 0; r < files[f].nrows; r++)
			free(files[f].rows[r].bytes);
		free(files[f].rows);
		free(files[f].reg);
		free(files[f].p);
		free(log.seen[f]);
		free(log.reported[f]);
	}
	return failed;
}
