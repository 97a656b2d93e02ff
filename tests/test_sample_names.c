/* test_sample_names.c - what a loader's samples are called (issue 38):
 * rf_loader_class_count/class_name give a folder of class folders' names
 * in label order (sorted, as ImageFolder), loose files and tar shards in
 * class folders alike, and none for sources that name no class (tar shards
 * labelled by cls members, a manifest, token shards);
 * rf_loader_sample_name gives each delivered id the name messages and
 * on_sample_error give it (the file under the source's folder, the shard's
 * member "SHARD.tar:MEMBER", a token window), cuts it to a small buffer
 * the way snprintf does and refuses ids past the index. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char *tmp;

static void setup(void)
{
	tmp = tu_tmpdir("sample-names");
}

static void teardown(void)
{
	tu_rmrf(tmp);
	free(tmp);
}

static rf_loader *create(const rf_config *cfg)
{
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, cfg, err, sizeof(err)), 0, "%s", err);
	return l;
}

/* Sample id's name, asserted to fit. */
static const char *name_of(const rf_loader *l, uint64_t id, char *buf, size_t len)
{
	int n = rf_loader_sample_name(l, id, buf, len);
	cr_assert(n >= 0 && (size_t)n < len, "sample %llu: %d", (unsigned long long)id, n);
	cr_assert_eq(strlen(buf), (size_t)n);
	return buf;
}

/* Every sample of one epoch: its name holds its label's class folder,
 * "/cLABEL/", and ends with suffix. */
static void names_follow_labels(rf_loader *l, const char *suffix)
{
	rf_batch *b;
	int r, seen = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		for (uint32_t i = 0; i < b->count; i++) {
			char name[1024], folder[32];
			name_of(l, b->ids[i], name, sizeof(name));
			const char *cls = rf_loader_class_name(l, b->labels[i]);
			cr_assert_not_null(cls, "label %d", b->labels[i]);
			snprintf(folder, sizeof(folder), "/%s/", cls);
			cr_assert(strstr(name, folder), "sample %llu, label %d: %s",
				  (unsigned long long)b->ids[i], b->labels[i], name);
			size_t n = strlen(name), k = strlen(suffix);
			cr_assert(n > k && !strcmp(name + n - k, suffix), "%s", name);
			seen++;
		}
		rf_batch_release(l, b);
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_gt(seen, 0);
}

Test(sample_names, a_class_folder_tree, .init = setup, .fini = teardown, .timeout = 60)
{
	char *tree = tu_tree("names-tree", 3, 4);
	/* a fourth class whose name sorts first: labels follow the sorted names */
	tu_mkdirs(tree, "a_first");
	tu_jpeg(tree, "a_first/img_0.jpg", 48, 48, 7);
	rf_config cfg;
	tu_config(&cfg, tree);
	cfg.epochs = 1;
	rf_loader *l = create(&cfg);
	cr_assert_eq(rf_loader_class_count(l), 4);
	const char *want[] = { "a_first", "c0", "c1", "c2" };
	for (int i = 0; i < 4; i++)
		cr_assert_str_eq(rf_loader_class_name(l, i), want[i]);
	cr_assert_null(rf_loader_class_name(l, -1));
	cr_assert_null(rf_loader_class_name(l, 4));

	/* each id: the file under the source's folder */
	rf_stats st;
	cr_assert_eq(rf_loader_stats(l, &st), 0);
	cr_assert_eq(st.samples_total, 13);
	char name[1024], want_name[1024];
	for (uint64_t id = 0; id < st.samples_total; id++) {
		name_of(l, id, name, sizeof(name));
		cr_assert(!strncmp(name, tree, strlen(tree)) && name[strlen(tree)] == '/', "%s", name);
	}
	snprintf(want_name, sizeof(want_name), "%s/a_first/img_0.jpg", tree);
	cr_assert_str_eq(name_of(l, 0, name, sizeof(name)), want_name);

	/* cut to fit, as snprintf: the whole length, a NUL at the end */
	char small[8];
	int n = rf_loader_sample_name(l, 0, small, sizeof(small));
	cr_assert_eq(n, (int)strlen(want_name));
	cr_assert_eq(strlen(small), sizeof(small) - 1);
	cr_assert(!strncmp(small, want_name, sizeof(small) - 1));
	cr_assert_eq(rf_loader_sample_name(l, 0, NULL, 0), (int)strlen(want_name));
	/* refusals */
	cr_assert_eq(rf_loader_sample_name(l, st.samples_total, name, sizeof(name)), -ERANGE);
	cr_assert_eq(rf_loader_sample_name(l, UINT64_MAX, name, sizeof(name)), -ERANGE);
	cr_assert_eq(rf_loader_sample_name(l, 0, NULL, 4), -EINVAL);
	cr_assert_eq(rf_loader_sample_name(NULL, 0, name, sizeof(name)), -EINVAL);
	cr_assert_eq(rf_loader_class_count(NULL), -EINVAL);
	cr_assert_null(rf_loader_class_name(NULL, 0));

	names_follow_labels(l, ".jpg");
	rf_loader_destroy(l);
	tu_rmrf(tree);
	free(tree);
}

/* The name rf_loader_sample_name gives is the one on_sample_error gives. */
typedef struct reported {
	char path[1024];
	int n;
} reported;

static void on_bad(void *user, const char *path, int err, const char *reason)
{
	(void)err, (void)reason;
	reported *r = user;
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->n++;
}

Test(sample_names, the_name_a_bad_sample_is_reported_by, .init = setup, .fini = teardown,
     .timeout = 60)
{
	tu_mkdirs(tmp, "tree/only");
	tu_write(tmp, "tree/only/broken.jpg", "not a jpeg", 10);
	tu_jpeg(tmp, "tree/only/good.jpg", 48, 48, 3);
	char src[1024];
	snprintf(src, sizeof(src), "%s/tree", tmp);
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.epochs = 1;
	cfg.batch_size = 2;
	cfg.shuffle = 0;
	cfg.on_error = RF_ON_ERROR_FAIL;
	reported r = { "", 0 };
	cfg.on_sample_error = on_bad;
	cfg.user = &r;
	rf_loader *l = create(&cfg);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), RF_EBADSAMPLE);
	cr_assert_eq(r.n, 1);
	char name[1024];
	cr_assert_str_eq(name_of(l, 0, name, sizeof(name)), r.path); /* broken.jpg sorts first */
	rf_loader_destroy(l);
}

/* Tar shards written by Python's tarfile: KEY.jpg, with a KEY.cls label
 * member (cls = 1) or in class folders (cls = 0). */
static void write_shards(const char *tree, const char *out, int cls)
{
	tu_run("python3 - '%s' '%s' %d <<'EOF'\n"
	    "import io, os, sys, tarfile\n"
	    "src, out, cls = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
	    "for ci, c in enumerate(sorted(os.listdir(src))):\n"
	    "    d = out if cls else os.path.join(out, c)\n"
	    "    os.makedirs(d, exist_ok=True)\n"
	    "    with tarfile.open(os.path.join(d, 'shard-%%06d.tar' %% ci), 'w') as t:\n"
	    "        for i, f in enumerate(sorted(os.listdir(os.path.join(src, c)))):\n"
	    "            key = '%%s-%%04d' %% (c, i)\n"
	    "            t.add(os.path.join(src, c, f), arcname=key + '.jpg')\n"
	    "            if cls:\n"
	    "                b = str(ci).encode()\n"
	    "                ti = tarfile.TarInfo(key + '.cls'); ti.size = len(b)\n"
	    "                t.addfile(ti, io.BytesIO(b))\n"
	    "EOF",
	    tree, out, cls);
}

Test(sample_names, tar_shards, .init = setup, .fini = teardown, .timeout = 60)
{
	if (system("python3 -c 'import tarfile' 2>/dev/null") != 0)
		cr_skip_test("python3 is missing (it writes the shards)");
	char *tree = tu_tree("names-shards", 2, 3);
	char by_cls[1024], by_folder[1024];
	snprintf(by_cls, sizeof(by_cls), "%s/cls", tmp);
	snprintf(by_folder, sizeof(by_folder), "%s/folders", tmp);
	write_shards(tree, by_cls, 1);
	write_shards(tree, by_folder, 0);

	/* labelled by cls members: no class names; a member is SHARD.tar:MEMBER */
	rf_config cfg;
	tu_config(&cfg, by_cls);
	cfg.epochs = 1;
	rf_loader *l = create(&cfg);
	cr_assert_eq(rf_loader_class_count(l), 0);
	cr_assert_null(rf_loader_class_name(l, 0));
	char name[1024], want[1100];
	snprintf(want, sizeof(want), "%s/shard-000001.tar:c1-0002.jpg", by_cls);
	int found = 0;
	for (uint64_t id = 0; id < 6; id++)
		found += !strcmp(name_of(l, id, name, sizeof(name)), want);
	cr_assert_eq(found, 1, "no sample named %s", want);
	rf_loader_destroy(l);

	/* class folders of shards: their names, and each member inside its own */
	tu_config(&cfg, by_folder);
	cfg.epochs = 1;
	l = create(&cfg);
	cr_assert_eq(rf_loader_class_count(l), 2);
	cr_assert_str_eq(rf_loader_class_name(l, 0), "c0");
	cr_assert_str_eq(rf_loader_class_name(l, 1), "c1");
	names_follow_labels(l, ".jpg");
	rf_loader_destroy(l);
	tu_rmrf(tree);
	free(tree);
}

Test(sample_names, a_manifest_names_no_class, .init = setup, .fini = teardown, .timeout = 60)
{
	tu_jpeg(tmp, "a.jpg", 48, 48, 1);
	tu_jpeg(tmp, "b.jpg", 48, 48, 2);
	const char list[] = "a.jpg\t5\nb.jpg\t0\n";
	tu_write(tmp, "list.tsv", list, sizeof(list) - 1);
	char src[1024], want[1100], name[1024];
	snprintf(src, sizeof(src), "%s/list.tsv", tmp);
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.batch_size = 2;
	rf_loader *l = create(&cfg);
	cr_assert_eq(rf_loader_class_count(l), 0);
	cr_assert_null(rf_loader_class_name(l, 5));
	snprintf(want, sizeof(want), "%s/b.jpg", tmp);
	cr_assert_str_eq(name_of(l, 1, name, sizeof(name)), want);
	rf_loader_destroy(l);
}

Test(sample_names, token_windows, .init = setup, .fini = teardown, .timeout = 60)
{
	if (system("python3 -c 'import struct' 2>/dev/null") != 0)
		cr_skip_test("python3 is missing (it writes the shards)");
	/* an llm.c shard of 100 uint16 tokens (GPT-2 header) */
	tu_run("python3 -c \"import struct; f = open('%s/train_000000.bin', 'wb'); "
	    "h = [0] * 256; h[0], h[1], h[2] = 20240520, 1, 100; "
	    "f.write(struct.pack('<256i', *h)); f.write(struct.pack('<100H', *range(100)))\"", tmp);
	char src[1024], name[1024], want[1100];
	snprintf(src, sizeof(src), "%s/train_000000.bin", tmp);
	rf_config cfg;
	tu_config(&cfg, src);
	cfg.seq_len = 10;
	cfg.batch_size = 2;
	rf_loader *l = create(&cfg);
	cr_assert_eq(rf_loader_class_count(l), 0);
	name_of(l, 3, name, sizeof(name));
	snprintf(want, sizeof(want), ":tokens 30..40 (window 3)");
	cr_assert(strstr(name, "train_000000.bin") && strstr(name, want), "%s", name);
	rf_loader_destroy(l);
}
