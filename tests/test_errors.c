/* test_errors.c - bad input never crashes or hangs: missing, unreadable,
 * empty, truncated, not-a-JPEG and corrupt files are skipped, reported
 * (path and reason, through the callback and in the stats) and replaced,
 * batches stay full; on_error = fail names the file; a dataset with nothing
 * good ends in RF_ETOOMANYBAD instead of spinning. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/index.h"
#include "source/source.h"
#include "testutil.h"

typedef struct reports {
	pthread_mutex_t mu;
	int n;
	char paths[64][128];
	char reasons[64][192];
} reports;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	reports *r = user;
	cr_assert_lt(err, 0);
	pthread_mutex_lock(&r->mu);
	if (r->n < 64) {
		snprintf(r->paths[r->n], sizeof(r->paths[0]), "%s", path);
		snprintf(r->reasons[r->n], sizeof(r->reasons[0]), "%s", reason);
	}
	r->n++;
	pthread_mutex_unlock(&r->mu);
}

static const char *reason_for(const reports *r, const char *path)
{
	for (int i = 0; i < r->n && i < 64; i++)
		if (strstr(r->paths[i], path))
			return r->reasons[i];
	return NULL;
}

/* Corrupt, as a damaged transfer leaves a file: valid headers, then from a
 * third of the way in the entropy-coded data overwritten, starting with a
 * stray restart marker. The decoder meets it inside the rows any crop needs.
 * (Garbage that still parses as Huffman codes cannot be told from an image;
 * only the part of an image a transform needs is decoded.) */
static void corrupt(uint8_t *c, size_t len)
{
	for (size_t k = len / 3; k < len - 2; k++)
		c[k] = (uint8_t)(k * 131 % 251);
	c[len / 3] = 0xff;
	c[len / 3 + 1] = 0xd0;
}

/* A tree with 12 good images and one bad file of each kind in a manifest. */
static char *bad_dataset(char **manifest)
{
	char *d = tu_tmpdir("bad");
	char rel[64];
	FILE *m;
	cr_assert(asprintf(manifest, "%s/list.tsv", d) > 0);
	m = fopen(*manifest, "w");
	for (int i = 0; i < 12; i++) {
		snprintf(rel, sizeof(rel), "good/g%02d.jpg", i);
		tu_jpeg(d, rel, 64 + i, 60, 500 + (uint64_t)i);
		fprintf(m, "%s\t%d\n", rel, i % 3);
	}
	size_t len;
	uint8_t *j = tu_read(d, "good/g00.jpg", &len);
	tu_write(d, "bad/truncated.jpg", j, len / 2);
	tu_write(d, "bad/empty.jpg", "", 0);
	tu_write(d, "bad/text.jpg", "this is not a jpeg at all, just text\n", 37);
	uint8_t *c = malloc(len);
	memcpy(c, j, len);
	corrupt(c, len);
	tu_write(d, "bad/corrupt.jpg", c, len);
	free(c);
	free(j);
	/* unreadable: a directory where a file should be (root reads anything
	 * with mode 000, so permissions alone cannot make it unreadable) */
	tu_mkdirs(d, "bad/folder.jpg");
	fprintf(m, "bad/truncated.jpg\t0\nbad/empty.jpg\t0\nbad/text.jpg\t0\n"
		   "bad/corrupt.jpg\t0\nbad/folder.jpg\t0\nbad/missing.jpg\t0\n");
	fclose(m);
	return d;
}

static const char *bad_names[] = { "truncated.jpg", "empty.jpg", "text.jpg",
				   "corrupt.jpg", "folder.jpg", "missing.jpg" };

Test(errors, each_kind_skipped_reported_replaced)
{
	char *man;
	char *d = bad_dataset(&man);
	reports rep = { .mu = PTHREAD_MUTEX_INITIALIZER };
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.batch_size = 6;
	cfg.epochs = 2;
	cfg.on_sample_error = on_bad;
	cfg.user = &rep;
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 18);

	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r, batches = 0;
	uint32_t replaced = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq(b->count, 6, "batches stay full");
		for (uint32_t i = 0; i < b->count; i++)
			cr_assert(strncmp(rfi_index_path(&idx, b->ids[i]), "good/", 5) == 0,
				  "delivered a bad file: %s", rfi_index_path(&idx, b->ids[i]));
		replaced += b->replaced;
		batches++;
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(batches, 6);
	cr_assert_eq(replaced, 12, "six bad places per epoch, each replaced");
	rf_stats st;
	rf_loader_stats(l, &st);
	/* replacements are drawn from the whole index, so a replacement may be
	 * bad too: at least 12 reports, each counted */
	cr_assert_geq(st.bad_samples, 12);
	cr_assert_eq((int)st.bad_samples, rep.n);
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
		cr_assert(reason_for(&rep, bad_names[i]), "%s was not reported", bad_names[i]);
	cr_assert(strstr(reason_for(&rep, "empty.jpg"), "empty"), "%s", reason_for(&rep, "empty.jpg"));
	cr_assert(strstr(reason_for(&rep, "missing.jpg"), "No such file"), "%s", reason_for(&rep, "missing.jpg"));
	cr_assert(strstr(reason_for(&rep, "text.jpg"), "JPEG"), "%s", reason_for(&rep, "text.jpg"));
	rf_loader_destroy(l);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
	free(man);
	tu_assert_no_leaks();
}

Test(errors, replacement_is_deterministic)
{
	char *man;
	char *d = bad_dataset(&man);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.batch_size = 6;
	cfg.epochs = 3;
	size_t n1, n2;
	uint64_t *a = tu_drain_ids(&cfg, &n1);
	cfg.threads = 1;
	cfg.io_depth = 2;
	uint64_t *b = tu_drain_ids(&cfg, &n2);
	cr_assert_eq(n1, n2);
	cr_assert_eq(memcmp(a, b, n1 * sizeof(*a)), 0);
	free(a);
	free(b);
	tu_rmrf(d);
	free(d);
	free(man);
}

Test(errors, fail_mode_names_the_file)
{
	for (size_t k = 0; k < sizeof(bad_names) / sizeof(bad_names[0]); k++) {
		char *d = tu_tmpdir("fail");
		tu_jpeg(d, "good.jpg", 50, 50, 1);
		char *text, *man;
		cr_assert(asprintf(&text, "good.jpg\t0\nbad/%s\t1\n", bad_names[k]) > 0);
		tu_write(d, "m.tsv", text, strlen(text));
		/* the kinds of bad_dataset(), one at a time; missing.jpg is not written */
		if (!strcmp(bad_names[k], "folder.jpg"))
			tu_mkdirs(d, "bad/folder.jpg");
		size_t len;
		uint8_t *j = tu_read(d, "good.jpg", &len);
		if (!strcmp(bad_names[k], "truncated.jpg"))
			tu_write(d, "bad/truncated.jpg", j, len / 2);
		if (!strcmp(bad_names[k], "empty.jpg"))
			tu_write(d, "bad/empty.jpg", "", 0);
		if (!strcmp(bad_names[k], "text.jpg"))
			tu_write(d, "bad/text.jpg", "plain text", 10);
		if (!strcmp(bad_names[k], "corrupt.jpg")) {
			corrupt(j, len);
			tu_write(d, "bad/corrupt.jpg", j, len);
		}
		free(j);
		cr_assert(asprintf(&man, "%s/m.tsv", d) > 0);
		rf_config cfg;
		tu_config(&cfg, man);
		cfg.batch_size = 2;
		cfg.on_error = RF_ON_ERROR_FAIL;
		rf_loader *l;
		char err[256];
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
		rf_batch *b;
		int r = rf_loader_next(l, &b);
		cr_assert_lt(r, 0, "%s: next returned %d", bad_names[k], r);
		cr_assert_eq(r, RF_EBADSAMPLE);
		cr_assert(strstr(rf_loader_error(l), bad_names[k]), "message names the file: %s",
			  rf_loader_error(l));
		cr_assert_eq(rf_loader_next(l, &b), r, "the error is sticky");
		rf_loader_destroy(l);
		tu_rmrf(d);
		free(d);
		free(text);
		free(man);
	}
	tu_assert_no_leaks();
}

Test(errors, nothing_good_ends_instead_of_spinning)
{
	char *d = tu_tmpdir("allbad");
	tu_write(d, "c/a.jpg", "nope", 4);
	tu_write(d, "c/b.jpg", "nope", 4);
	rf_config cfg;
	tu_config(&cfg, d);
	rf_loader *l;
	char err[256];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), RF_ETOOMANYBAD);
	cr_assert(strstr(rf_loader_error(l), "bad samples in a row"), "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	tu_rmrf(d);
	free(d);
	tu_assert_no_leaks();
}

/* A photo truncated below the rows its center crop needs: a region decode
 * never reads there and delivers it (as the header says); verify_full
 * decodes to the end and makes it a bad sample. */
Test(errors, damage_below_the_crop_needs_verify_full)
{
	char *d = tu_tmpdir("verify");
	for (int i = 0; i < 7; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "c/ok_%d.jpg", i);
		tu_jpeg(d, rel, 64, 60, (uint64_t)i + 1);
	}
	/* tall: resize 48 + crop 40 need rows of about its middle fifth */
	tu_jpeg(d, "c/tall.jpg", 64, 800, 42);
	size_t len;
	uint8_t *whole = tu_read(d, "c/tall.jpg", &len);
	tu_write(d, "c/tall.jpg", whole, len * 3 / 4);
	free(whole);
	for (int verify = 0; verify <= 1; verify++) {
		rf_config cfg;
		tu_config(&cfg, d);
		cfg.verify_full = verify;
		tu_bad_log bad = { 0 };
		cfg.on_sample_error = tu_on_bad;
		cfg.user = &bad;
		rf_stats st;
		size_t n;
		free(tu_drain_bytes(&cfg, &n, &st));
		cr_assert_eq(st.bad_samples, (uint64_t)verify, "verify_full %d: %llu bad", verify,
			     (unsigned long long)st.bad_samples);
		if (verify)
			cr_assert(strstr(bad.reason, "corrupt JPEG"), "%s", bad.reason);
	}
	tu_rmrf(d);
	free(d);
}

/* A JPEG this build cannot decode (here: 12-bit precision in its frame
 * header) is named as such, not as "not a JPEG". */
Test(errors, twelve_bit_jpeg_is_not_called_not_a_jpeg)
{
	char *d = tu_tmpdir("prec");
	for (int i = 0; i < 3; i++) {
		char rel[32];
		snprintf(rel, sizeof(rel), "c/ok_%d.jpg", i);
		tu_jpeg(d, rel, 40, 40, (uint64_t)i + 1);
	}
	tu_jpeg(d, "c/p12.jpg", 40, 40, 9);
	size_t len;
	uint8_t *j = tu_read(d, "c/p12.jpg", &len);
	size_t sof = 2;
	while (sof + 4 < len && !(j[sof] == 0xFF && (j[sof + 1] == 0xC0 || j[sof + 1] == 0xC1 ||
						    j[sof + 1] == 0xC2)))
		sof++;
	cr_assert_lt(sof + 4, len, "no SOF marker");
	j[sof + 4] = 12; /* the sample precision */
	tu_write(d, "c/p12.jpg", j, len);
	free(j);
	rf_config cfg;
	tu_config(&cfg, d);
	tu_bad_log bad = { 0 };
	cfg.on_sample_error = tu_on_bad;
	cfg.user = &bad;
	rf_stats st;
	size_t n;
	free(tu_drain_bytes(&cfg, &n, &st));
	cr_assert_eq(st.bad_samples, 1);
	cr_assert(!strstr(bad.reason, "not a JPEG"), "%s", bad.reason);
	cr_assert(strstr(bad.reason, "unsupported or corrupt JPEG"), "%s", bad.reason);
	cr_assert(strstr(bad.reason, "12"), "%s", bad.reason);
	tu_rmrf(d);
	free(d);
}

Test(errors, a_bad_file_is_reported_once_an_epoch)
{
	/* 6 files, 4 of them bad: with so few good ones, the replacement
	 * sequences draw the bad files again and again, and each is still
	 * reported (and counted) once per epoch */
	char *d = tu_tmpdir("once");
	char rel[32];
	for (int i = 0; i < 6; i++) {
		snprintf(rel, sizeof(rel), "c/p%d.jpg", i);
		if (i < 4)
			tu_write(d, rel, "not a jpeg at all", 17);
		else
			tu_jpeg(d, rel, 40, 40, (uint64_t)i + 1);
	}
	for (int epochs = 1; epochs <= 3; epochs += 2) {
		rf_config cfg;
		tu_config(&cfg, d);
		cfg.batch_size = 3;
		cfg.epochs = epochs;
		tu_bad_log bad = { 0 };
		cfg.on_sample_error = tu_on_bad;
		cfg.user = &bad;
		rf_stats st;
		size_t n;
		free(tu_drain_bytes(&cfg, &n, &st));
		cr_assert_eq(bad.n, 4 * epochs, "%d reports for 4 bad files in %d epochs", bad.n, epochs);
		cr_assert_eq(st.bad_samples, 4 * (uint64_t)epochs);
	}
	tu_rmrf(d);
	free(d);
}

/* A manifest's absolute path is named as it is in messages (it read
 * "ROOT//abs/path": the root put before a path that needed none). */
Test(errors, an_absolute_manifest_path_is_named_as_it_is)
{
	char *d = tu_tmpdir("abs");
	tu_write(d, "bad.jpg", "not a jpeg at all, not at all", 29);
	char line[1024], *man;
	int n = snprintf(line, sizeof(line), "%s/bad.jpg\t0\n", d);
	tu_write(d, "list.txt", line, (size_t)n);
	cr_assert(asprintf(&man, "%s/list.txt", d) > 0);
	rf_config cfg;
	tu_config(&cfg, man);
	cfg.batch_size = 1;
	cfg.on_error = RF_ON_ERROR_FAIL;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), RF_EBADSAMPLE);
	char want[1024];
	snprintf(want, sizeof(want), "%s/bad.jpg: ", d);
	cr_assert(!strncmp(rf_loader_error(l), want, strlen(want)), "%s", rf_loader_error(l));
	cr_assert_null(strstr(rf_loader_error(l), "//"), "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	tu_rmrf(d);
	free(d);
	free(man);
}
