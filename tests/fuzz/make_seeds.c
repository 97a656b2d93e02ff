/* make_seeds.c - writes the seed corpora of the fuzz targets into
 * OUT/{state,cache,manifest,jpeg}/: real saved states, index caches of a
 * folder tree and of a weighted manifest, manifests, and JPEGs of several
 * sizes and qualities behind the jpeg target's 4 setting bytes.
 * Usage: make_seeds OUT (scripts/fuzz.sh runs it). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/synth.h"
#include "ringfeed.h"

static const char *out;

static void put(const char *kind, const char *name, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", out, kind);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", out, kind, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void put_file(const char *kind, const char *name, const char *from)
{
	FILE *f = fopen(from, "rb");
	if (!f) {
		perror(from);
		exit(1);
	}
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	put(kind, name, buf, n);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds OUT\n");
		return 2;
	}
	out = argv[1];
	mkdir(out, 0755);
	char err[512], data[4096], path[4096], man[4096];
	snprintf(data, sizeof(data), "%s/data", out);
	rf_synth_tree t = { .out = data, .count = 12, .classes = 3, .seed = 7, .quality = 80,
			    .threads = 1 };
	if (rf_synth_imagefolder(&t, err, sizeof(err))) {
		fprintf(stderr, "make_seeds: %s\n", err);
		return 1;
	}

	/* manifests: plain, weighted, with comments and odd lines */
	const char *mans[] = {
		"class_000/img_00000000.jpg\t0\nclass_001/img_00000001.jpg\t1\n",
		"# weights\nclass_000/img_00000000.jpg\t0\t0.5\nclass_001/img_00000001.jpg\t1\t2\n",
		"\n  \nclass_002/img_00000002.jpg\t7\n# c\nmissing.jpg\t3\n",
		"a\tb\tc.jpg\t1\t1e-310\n",
	};
	for (size_t i = 0; i < sizeof(mans) / sizeof(mans[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "seed%zu.tsv", i);
		put("manifest", name, mans[i], strlen(mans[i]));
	}

	/* caches: of the tree, of a weighted manifest, of the tree in raw mode */
	snprintf(path, sizeof(path), "%s/tree.cache", out);
	if (rf_index_write(data, 0, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "tree", path);
	snprintf(man, sizeof(man), "%s/w.tsv", data);
	FILE *f = fopen(man, "w");
	fputs(mans[1], f);
	fclose(f);
	if (rf_index_write(man, 0, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "weighted", path);
	if (rf_index_write(data, 1, path, NULL, NULL, NULL, err, sizeof(err)))
		return fprintf(stderr, "make_seeds: %s\n", err), 1;
	put_file("cache", "raw", path);
	remove(path);

	/* states: at a few positions of a shuffled and a weighted run */
	for (int kind = 0; kind < 2; kind++) {
		rf_config cfg;
		rf_config_default(&cfg);
		cfg.source = kind ? man : data;
		cfg.batch_size = 2;
		cfg.resize = 32;
		cfg.crop = 24;
		cfg.threads = 1;
		cfg.io_depth = 8;
		cfg.read_pool_bytes = 1 << 20;
		cfg.rank = 0;
		cfg.world_size = 1;
		cfg.epochs = 3;
		if (kind)
			cfg.sampler = RF_SAMPLER_WEIGHTED;
		rf_loader *l;
		if (rf_loader_create(&l, &cfg, err, sizeof(err)))
			return fprintf(stderr, "make_seeds: %s\n", err), 1;
		for (int b = 0; b < 5; b++) {
			rf_batch *bt;
			if (rf_loader_next(l, &bt))
				break;
			rf_batch_release(l, bt);
			uint8_t st[4096];
			int n = rf_loader_state_save(l, st, sizeof(st));
			if (n > 0) {
				char name[32];
				snprintf(name, sizeof(name), "k%d_b%d", kind, b);
				put("state", name, st, (size_t)n);
			}
		}
		rf_loader_destroy(l);
	}

	/* JPEGs: sizes around the MCU, qualities, behind setting bytes */
	int sizes[][2] = { { 1, 1 }, { 8, 8 }, { 17, 9 }, { 64, 48 }, { 33, 200 }, { 250, 70 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *j;
		size_t n;
		if (rf_synth_jpeg(sizes[i][0], sizes[i][1], i + 1, i % 2 ? 95 : 40, &j, &n, err,
				  sizeof(err)))
			return fprintf(stderr, "make_seeds: %s\n", err), 1;
		uint8_t *s = malloc(n + 4);
		memcpy(s + 4, j, n);
		for (int v = 0; v < 3; v++) {
			s[0] = (uint8_t)(i * 7 + (size_t)v);
			s[1] = (uint8_t)(v * 0x15 + i);
			s[2] = (uint8_t)(v * 5);
			s[3] = (uint8_t)(i * 31);
			char name[32];
			snprintf(name, sizeof(name), "img%zu_%d", i, v);
			put("jpeg", name, s, n + 4);
		}
		free(s);
		free(j);
	}
	return 0;
}
