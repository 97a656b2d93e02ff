/* test_fields.c - fields (cfg.fields) through the C API: a loose tree in
 * img2dataset's "files" layout (KEY.jpg beside KEY.txt and KEY.json) and
 * the same samples as a tar shard give each sample its own members' bytes
 * through rf_batch.fields and rf_batch_field(); an optional field a sample
 * lacks is empty and marked absent; a required one is a bad sample naming
 * the member; the index cache keeps the members; a field file that changed
 * since the index is a bad sample; the config is checked. The img2dataset
 * shards of every format, samplers, ranks and resume:
 * python/tests/test_fields.py. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringfeed.h"
#include "testutil.h"

enum { N = 6 };

/* Sample k's caption, or NULL for the one without (k == 3). */
static const char *caption(int k)
{
	static const char *const caps[N] = { "a cat", "", "café 東京 🙂", NULL, "x", "last one" };
	return caps[k];
}

/* The tree: cls/00000k.jpg, .txt (but 3's) and .json; and beside it a
 * stray file with no image of its key. */
static char *make_tree(const char *tag)
{
	char *dir = tu_tmpdir(tag);
	tu_mkdirs(dir, "cls");
	for (int k = 0; k < N; k++) {
		char rel[64], json[64];
		snprintf(rel, sizeof(rel), "cls/%06d.jpg", k);
		tu_jpeg(dir, rel, 40 + k, 32, (uint64_t)k);
		if (caption(k)) {
			snprintf(rel, sizeof(rel), "cls/%06d.txt", k);
			tu_write(dir, rel, caption(k), strlen(caption(k)));
		}
		snprintf(rel, sizeof(rel), "cls/%06d.json", k);
		int n = snprintf(json, sizeof(json), "{\"key\": \"%06d\"}", k);
		tu_write(dir, rel, json, (size_t)n);
	}
	tu_write(dir, "cls/999999.txt", "no image", 8);
	return dir;
}

static void config(rf_config *cfg, const char *source, const char *fields)
{
	tu_config(cfg, source);
	cfg->fields = fields;
	cfg->shuffle = 0;
	cfg->batch_size = 4;
}

/* Field f's value of sample i of b, as a string (its bytes and a NUL). */
static char *value(const rf_field *f, uint32_t i)
{
	size_t n = (size_t)(f->offsets[i + 1] - f->offsets[i]);
	char *s = malloc(n + 1);
	memcpy(s, f->bytes + f->offsets[i], n);
	s[n] = '\0';
	return s;
}

/* Every sample of one epoch has its own caption and JSON. */
static void check_epoch(const rf_config *cfg, int expect_samples)
{
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int seen = 0, rc;
	while ((rc = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq(b->nfields, 2);
		rf_field txt, json;
		cr_assert_eq(rf_batch_field(b, "TXT", &txt), 0); /* any case */
		cr_assert_eq(rf_batch_field(b, "json", &json), 0);
		cr_assert_eq(rf_batch_field(b, "cls", NULL), -ENOENT);
		cr_assert_str_eq(txt.name, "txt");
		cr_assert_eq(txt.offsets[0], 0);
		cr_assert_eq(json.offsets[0], 0);
		for (uint32_t i = 0; i < b->count; i++) {
			int k = (int)b->ids[i];
			char *t = value(&txt, i), *j = value(&json, i), want[64];
			cr_assert_eq(txt.present[i], caption(k) != NULL, "sample %d", k);
			cr_assert_str_eq(t, caption(k) ? caption(k) : "", "sample %d", k);
			snprintf(want, sizeof(want), "{\"key\": \"%06d\"}", k);
			cr_assert_eq(json.present[i], 1);
			cr_assert_str_eq(j, want);
			free(t);
			free(j);
		}
		seen += (int)b->count;
		rf_batch_release(l, b);
	}
	cr_assert_eq(rc, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(seen, expect_samples);
	rf_loader_destroy(l);
}

Test(fields, a_loose_image_gets_the_files_beside_it_with_its_key)
{
	char *dir = make_tree("fields-loose");
	rf_config cfg;
	config(&cfg, dir, "txt?, json");
	cfg.epochs = 1;
	check_epoch(&cfg, N);
	tu_rmrf(dir);
	free(dir);
}

Test(fields, a_shard_sample_gets_its_members_and_the_cache_keeps_them)
{
	char *dir = make_tree("fields-shard");
	/* the shell's sorted glob: each key's members together, as a shard has them */
	tu_run("mkdir '%s/shards' && cd '%s/cls' && tar --format=ustar -cf ../shards/s.tar 000*",
	       dir, dir);
	char shards[4096], cache[4096];
	snprintf(shards, sizeof(shards), "%s/shards/s.tar", dir);
	snprintf(cache, sizeof(cache), "%s/cache.idx", dir);
	rf_config cfg;
	config(&cfg, shards, "txt?,json");
	cfg.epochs = 1;
	cfg.index_cache = cache;
	check_epoch(&cfg, N); /* writes the cache */
	check_epoch(&cfg, N); /* loads it */
	rf_stats st;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rf_loader_stats(l, &st), 0);
	cr_assert_eq(st.index_cached, 1, "the second run loads the index cache");
	rf_loader_destroy(l);
	tu_rmrf(dir);
	free(dir);
}

Test(fields, a_sample_without_a_required_field_is_bad_and_names_it)
{
	char *dir = make_tree("fields-missing");
	rf_config cfg;
	config(&cfg, dir, "txt");
	cfg.on_error = RF_ON_ERROR_FAIL;
	cfg.epochs = 1;
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int rc = rf_loader_next(l, &b); /* samples 0..3: 3 has no txt */
	cr_assert_eq(rc, RF_EBADSAMPLE, "%d", rc);
	cr_assert(strstr(rf_loader_error(l), "000003.jpg"), "%s", rf_loader_error(l));
	cr_assert(strstr(rf_loader_error(l), "no 'txt' member"), "%s", rf_loader_error(l));
	rf_loader_destroy(l);

	cfg.on_error = RF_ON_ERROR_SKIP; /* replaced: every delivered sample has one */
	size_t n;
	uint64_t *ids = tu_drain_ids(&cfg, &n);
	cr_assert_eq(n, N);
	for (size_t i = 0; i < n; i++)
		cr_assert_neq(ids[i], 3);
	free(ids);
	tu_rmrf(dir);
	free(dir);
}

Test(fields, a_field_file_that_changed_since_the_index_is_a_bad_sample)
{
	char *dir = make_tree("fields-changed");
	char cache[4096];
	snprintf(cache, sizeof(cache), "%s.idx", dir);
	rf_config cfg;
	config(&cfg, dir, "txt?");
	cfg.index_cache = cache;
	cfg.on_error = RF_ON_ERROR_FAIL;
	cfg.epochs = 1;
	size_t n;
	free(tu_drain_ids(&cfg, &n)); /* writes the cache */
	/* rewritten in place, longer: its folder does not change, so the cache
	 * stays valid, and the read sees the new size */
	tu_write(dir, "cls/000000.txt", "a longer caption", 16);
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_stats st;
	rf_loader_stats(l, &st);
	cr_assert_eq(st.index_cached, 1);
	rf_batch *b;
	int rc = rf_loader_next(l, &b);
	cr_assert_eq(rc, RF_EBADSAMPLE, "%d", rc);
	cr_assert(strstr(rf_loader_error(l), "000000.txt"), "%s", rf_loader_error(l));
	cr_assert(strstr(rf_loader_error(l), "changed"), "%s", rf_loader_error(l));
	rf_loader_destroy(l);
	unlink(cache);
	tu_rmrf(dir);
	free(dir);
}

/* A sample with 20 other members (KEY.m00 .. KEY.m19) in a shard: every
 * one is a field, the last ones too, required or optional. */
Test(fields, every_other_member_of_a_sample_is_a_field_however_many)
{
	char *dir = tu_tmpdir("fields-many");
	tu_mkdirs(dir, "cls");
	for (int k = 0; k < N; k++) {
		char rel[64], text[64];
		snprintf(rel, sizeof(rel), "cls/%06d.jpg", k);
		tu_jpeg(dir, rel, 40, 32, (uint64_t)k);
		for (int m = 0; m < 20; m++) {
			snprintf(rel, sizeof(rel), "cls/%06d.m%02d", k, m);
			int n = snprintf(text, sizeof(text), "%d:m%02d", k, m);
			tu_write(dir, rel, text, (size_t)n);
		}
	}
	tu_run("mkdir '%s/shards' && cd '%s/cls' && tar --format=ustar -cf ../shards/s.tar 000*",
	       dir, dir);
	char shards[4096];
	snprintf(shards, sizeof(shards), "%s/shards/s.tar", dir);
	rf_config cfg;
	config(&cfg, shards, "m19, m17?, m00");
	cfg.epochs = 1;
	char err[512];
	rf_loader *l;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int seen = 0, rc;
	while ((rc = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq(b->nfields, 3);
		for (uint32_t f = 0; f < 3; f++)
			for (uint32_t i = 0; i < b->count; i++) {
				static const int m[] = { 19, 17, 0 };
				char *v = value(&b->fields[f], i), want[64];
				snprintf(want, sizeof(want), "%d:m%02d", (int)b->ids[i], m[f]);
				cr_assert_eq(b->fields[f].present[i], 1, "field %u sample %u", f, i);
				cr_assert_str_eq(v, want);
				free(v);
			}
		seen += (int)b->count;
		rf_batch_release(l, b);
	}
	cr_assert_eq(rc, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(seen, N);
	rf_loader_destroy(l);
	tu_rmrf(dir);
	free(dir);
}

Test(fields, the_config_is_checked)
{
	char *dir = make_tree("fields-config");
	static const char *const bad[] = { "txt,txt", "txt,", ",json", "a/b", "a,b,c,d,e,f,g,h,i",
					   "nosuch", "0123456789012345678901234567890123456789" };
	char err[512];
	rf_loader *l;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rf_config cfg;
		config(&cfg, dir, bad[i]);
		cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG, "%s", bad[i]);
		cr_assert(strstr(err, "fields"), "%s: %s", bad[i], err);
	}
	rf_config cfg;
	config(&cfg, dir, "txt");
	cfg.field_max = (1u << 26) + 1;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert(strstr(err, "field_max"), "%s", err);
	config(&cfg, dir, "");
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err); /* none */
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), 0);
	cr_assert_eq(b->nfields, 0);
	cr_assert_null(b->fields);
	cr_assert_eq(rf_batch_field(b, "txt", NULL), -ENOENT);
	rf_batch_release(l, b);
	rf_loader_destroy(l);
	tu_rmrf(dir);
	free(dir);
}
