/* test_index.c - the index: ImageFolder walk (labels in sorted class order,
 * any-case extensions, nested folders, other files ignored), manifests
 * (relative and absolute paths, labels, malformed lines, the optional weight
 * column), an image given as the source (refused, not read as a manifest),
 * bytes per file. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "source/source.h"
#include "testutil.h"

static int find(const rf_index *idx, const char *path)
{
	for (size_t i = 0; i < idx->count; i++)
		if (!strcmp(rfi_index_path(idx, i), path))
			return (int)i;
	return -1;
}

Test(index, imagefolder_labels_and_names)
{
	char *d = tu_tmpdir("idx");
	tu_write(d, "zebra/a.jpg", "x", 1);
	tu_write(d, "apple/b.JPG", "xy", 2);
	tu_write(d, "apple/nested/deeper/c.JpEg", "xyz", 3);
	tu_write(d, "apple/notes.txt", "no", 2);     /* not a JPEG name */
	tu_write(d, "apple/d.jpg.bak", "no", 2);
	tu_write(d, "loose.jpg", "no", 2);            /* not in a class folder */
	tu_mkdirs(d, "mango");                        /* empty class: still a label */
	tu_write(d, "mango2/e.jpeg", "wxyz1", 5);

	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, d, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 4);
	cr_assert_eq(idx.nclasses, 4);
	cr_assert_str_eq(idx.classes[0], "apple");
	cr_assert_str_eq(idx.classes[1], "mango");
	cr_assert_str_eq(idx.classes[2], "mango2");
	cr_assert_str_eq(idx.classes[3], "zebra");

	int i = find(&idx, "apple/b.JPG");
	cr_assert(i >= 0);
	cr_assert_eq(idx.entries[i].label, 0);
	cr_assert_eq(idx.entries[i].size, 2);
	i = find(&idx, "apple/nested/deeper/c.JpEg");
	cr_assert(i >= 0);
	cr_assert_eq(idx.entries[i].label, 0);
	cr_assert_eq(idx.entries[i].size, 3);
	i = find(&idx, "mango2/e.jpeg");
	cr_assert(i >= 0);
	cr_assert_eq(idx.entries[i].label, 2);
	i = find(&idx, "zebra/a.jpg");
	cr_assert(i >= 0);
	cr_assert_eq(idx.entries[i].label, 3);
	/* sorted path order, class by class */
	for (size_t k = 1; k < idx.count; k++)
		cr_assert(strcmp(rfi_index_path(&idx, k - 1), rfi_index_path(&idx, k)) < 0);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
}

Test(index, bytes_per_file)
{
	/* The stated cost: a 24-byte record plus the path and its NUL. */
	cr_assert_eq(sizeof(rf_index_entry), 24);
	char *d = tu_tmpdir("idxmem");
	size_t path_bytes = 0;
	char rel[64];
	for (int i = 0; i < 300; i++) {
		snprintf(rel, sizeof(rel), "k%d/file_%d.jpg", i % 3, i);
		tu_write(d, rel, "x", 1);
		path_bytes += strlen(rel) + 1;
	}
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, d, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 300);
	size_t classes = 3 * (3 + sizeof(char *));
	/* plus one stamp per directory (the root and 3 classes), for the cache */
	size_t stamps = 4 * sizeof(rf_index_stamp) + 1 + 3 * 3;
	cr_assert_eq(idx.nstamps, 4);
	cr_assert_eq(rfi_index_memory(&idx), 300 * 24 + path_bytes + classes + stamps);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
}

Test(index, manifest_relative_absolute_labels)
{
	char *d = tu_tmpdir("man");
	tu_write(d, "data/one.bin", "1", 1);
	tu_write(d, "data/two.bin", "22", 2);
	char *abs;
	cr_assert(asprintf(&abs, "%s/data/two.bin", d) > 0);
	char *text;
	cr_assert(asprintf(&text, "# comment\ndata/one.bin\t7\n\n%s\t3\ndata/missing.jpg\t1\n", abs) > 0);
	tu_write(d, "list.tsv", text, strlen(text));
	char *man;
	cr_assert(asprintf(&man, "%s/list.tsv", d) > 0);

	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 3);
	cr_assert_str_eq(rfi_index_path(&idx, 0), "data/one.bin");
	cr_assert_eq(idx.entries[0].label, 7);
	cr_assert_eq(idx.entries[0].size, 1);
	cr_assert_str_eq(rfi_index_path(&idx, 1), abs);
	cr_assert_eq(idx.entries[1].label, 3);
	cr_assert_eq(idx.entries[1].size, 2);
	/* a missing file is kept, with its error, to be reported when read */
	cr_assert_eq(idx.entries[2].size, -ENOENT);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
	free(abs);
	free(text);
	free(man);
}

Test(index, manifest_malformed)
{
	char *d = tu_tmpdir("manbad");
	const char *cases[] = { "a.jpg 3\n", "a.jpg\tthree\n", "a.jpg\t-1\n", "\t4\n", "a.jpg\t5x\n" };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tu_write(d, "m.tsv", cases[i], strlen(cases[i]));
		char *man;
		cr_assert(asprintf(&man, "%s/m.tsv", d) > 0);
		rf_index idx;
		char err[256] = "";
		cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), RF_EINDEX, "case %zu", i);
		cr_assert(strstr(err, "line 1"), "message names the line: %s", err);
		free(man);
	}
	tu_rmrf(d);
	free(d);
}

/* An image given as the source (a first try: --source photo.jpg) is told
 * by its bytes and refused as not a dataset, naming the folder to give; it
 * used to be read as a manifest and fail as a malformed first line. */
Test(index, an_image_as_the_source_is_not_a_dataset)
{
	char *d = tu_tmpdir("imgsrc");
	tu_jpeg(d, "cats/a.jpg", 16, 16, 1);
	static const uint8_t png[] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13 };
	static const uint8_t webp[] = { 'R', 'I', 'F', 'F', 40, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P' };
	tu_write(d, "cats/b.png", png, sizeof(png));
	tu_write(d, "cats/c.webp", webp, sizeof(webp));
	tu_write(d, "cats/list.jpg", "a.jpg\t0\n", 8); /* a manifest by its bytes, whatever its name */
	const char *rel[] = { "cats/a.jpg", "cats/b.png", "cats/c.webp" };
	const char *what[] = { "a JPEG image", "a PNG image", "a WebP image" };
	char *root = realpath(d, NULL);
	for (int i = 0; i < 3; i++) {
		char *src;
		cr_assert(asprintf(&src, "%s/%s", d, rel[i]) > 0);
		rf_index idx;
		char err[512] = "";
		cr_assert_eq(rfi_index_build(&idx, src, 0, err, sizeof(err)), RF_EINDEX, "%s", rel[i]);
		cr_assert(strstr(err, what[i]) && strstr(err, "not a dataset"), "%s", err);
		cr_assert(strstr(err, root), "names the dataset's folder %s: %s", root, err);
		cr_assert_null(strstr(err, "line 1"), "not read as a manifest: %s", err);
		/* the loader says the same */
		rf_config cfg;
		tu_config(&cfg, src);
		rf_loader *l;
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_EINDEX);
		cr_assert(strstr(err, "not a dataset"), "%s", err);
		free(src);
	}
	char *man;
	cr_assert(asprintf(&man, "%s/cats/list.jpg", d) > 0);
	rf_index idx;
	char err[512] = "";
	cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 1);
	rfi_index_free(&idx);
	free(man);
	free(root);
	tu_rmrf(d);
	free(d);
}

Test(index, manifest_weights)
{
	char *d = tu_tmpdir("manw");
	tu_write(d, "a.bin", "1", 1);
	tu_write(d, "b\tc.bin", "22", 2); /* a tab in a path stays possible */
	const char *text = "# path, label, weight\na.bin\t1\t0.25\nb\tc.bin\t2\t3\na.bin\t0\t0\n";
	tu_write(d, "w.tsv", text, strlen(text));
	char *man;
	cr_assert(asprintf(&man, "%s/w.tsv", d) > 0);
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 3);
	cr_assert_not_null(idx.weights);
	cr_assert_str_eq(rfi_index_path(&idx, 1), "b\tc.bin");
	cr_assert_eq(idx.entries[1].label, 2);
	cr_assert_eq(idx.entries[1].size, 2);
	cr_assert_eq(idx.weights[0], 0.25);
	cr_assert_eq(idx.weights[1], 3.0);
	cr_assert_eq(idx.weights[2], 0.0);
	/* the weights cost 8 bytes per file on top of the rest of the index */
	size_t with = rfi_index_memory(&idx);
	double *w = idx.weights;
	idx.weights = NULL;
	cr_assert_eq(with - rfi_index_memory(&idx), 3 * sizeof(double));
	idx.weights = w;
	rfi_index_free(&idx);

	/* two columns: no weights, and a path with a tab still parses */
	text = "b\tc.bin\t4\n";
	tu_write(d, "w.tsv", text, strlen(text));
	cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_null(idx.weights);
	cr_assert_str_eq(rfi_index_path(&idx, 0), "b\tc.bin");
	cr_assert_eq(idx.entries[0].label, 4);
	rfi_index_free(&idx);

	/* once the first line has a weight, every line needs a valid one */
	const char *bad[] = { "a.bin\t1\t1\na.bin\t1\n", "a.bin\t1\t1\na.bin\t1\t-2\n",
			      "a.bin\t1\t1\na.bin\t1\tnan\n", "a.bin\t1\t1\na.bin\t1\tinf\n",
			      "a.bin\t1\t1\na.bin\t1\t2kg\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tu_write(d, "w.tsv", bad[i], strlen(bad[i]));
		err[0] = '\0';
		cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), RF_EINDEX, "case %zu", i);
		cr_assert(strstr(err, "line 2") && strstr(err, "weight"), "case %zu: %s", i, err);
	}
	tu_rmrf(d);
	free(d);
	free(man);
}

Test(index, missing_and_empty_sources)
{
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, "/nonexistent/ringfeed/dir", 0, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "/nonexistent/ringfeed/dir"));
	char *d = tu_tmpdir("empty");
	tu_mkdirs(d, "classA");
	cr_assert_eq(rfi_index_build(&idx, d, 0, err, sizeof(err)), RF_EEMPTY);
	cr_assert(strstr(err, "no samples"), "%s", err);
	tu_rmrf(d);
	free(d);
}

/* A subnormal weight is a (tiny) weight, not a malformed label; a line of
 * spaces and tabs is blank, like an empty one. */
Test(index, manifest_subnormal_weight_and_blank_lines)
{
	char *d = tu_tmpdir("manb");
	tu_write(d, "a.bin", "1", 1);
	const char *text = "a.bin\t1\t1e-310\n \t \n\na.bin\t0\t2\n   \n";
	tu_write(d, "w.tsv", text, strlen(text));
	char *man;
	cr_assert(asprintf(&man, "%s/w.tsv", d) > 0);
	rf_index idx;
	char err[256];
	cr_assert_eq(rfi_index_build(&idx, man, 0, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(idx.count, 2);
	cr_assert_not_null(idx.weights);
	cr_assert(idx.weights[0] > 0 && idx.weights[0] < 1e-300, "%g", idx.weights[0]);
	cr_assert_eq(idx.weights[1], 2.0);
	rfi_index_free(&idx);
	tu_rmrf(d);
	free(d);
	free(man);
}
