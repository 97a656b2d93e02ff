/* test_hf.c - the hf transport's pure parts (issue 39): the Hub's tree
 * listing page and Link header (hf_tree.h), the expiry of a presigned URL
 * and the kept redirects (presigned.h), and what a location names (hf.h:
 * its folder, its resolve URL). The requests themselves are tested against
 * a stand-in Hub in tests/cli_hf.sh. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote/hf.h"
#include "remote/hf_tree.h"
#include "remote/presigned.h"

typedef struct got {
	char names[8][64];
	uint64_t sizes[8];
	int n;
} got;

static int on_file(void *user, const char *path, uint64_t size)
{
	got *g = user;
	if (g->n == 8)
		return 9;
	snprintf(g->names[g->n], sizeof(g->names[0]), "%s", path);
	g->sizes[g->n++] = size;
	return 0;
}

Test(hf, tree_page_files_only)
{
	const char *page =
		"[{\"type\":\"directory\",\"oid\":\"ab\",\"size\":0,\"path\":\"data\"},\n"
		" {\"type\":\"file\",\"oid\":\"cd\",\"size\":1234,\"path\":\"data/a\\u00e9.tar\","
		"\"lfs\":{\"oid\":\"sha256:00\",\"size\":1234,\"pointerSize\":134},"
		"\"lastCommit\":{\"id\":\"x\",\"title\":\"a \\\"quoted\\\" [title]\",\"date\":null}},"
		" {\"path\":\"b.tar\",\"size\":5,\"type\":\"file\",\"xet\":[1,2,{\"k\":true}]}]";
	got g = { 0 };
	char err[256];
	cr_assert_eq(rfi_hf_tree_parse(page, strlen(page), on_file, &g, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(g.n, 2);
	cr_assert_str_eq(g.names[0], "data/a\xc3\xa9.tar");
	cr_assert_eq(g.sizes[0], 1234);
	cr_assert_str_eq(g.names[1], "b.tar");
	cr_assert_eq(g.sizes[1], 5);
	cr_assert_eq(rfi_hf_tree_parse("[]", 2, on_file, &g, err, sizeof(err)), 0);
}

Test(hf, tree_page_refused)
{
	const char *bad[] = {
		"{}", "[", "[{\"type\":\"file\",\"path\":\"a\"}]", "[{\"type\":\"file\",\"size\":1}]",
		"[{\"type\":\"file\",\"path\":\"a\\u0000b\",\"size\":1}]",
		"[{\"type\":\"file\",\"path\":\"a\",\"size\":-1}]",
		"[{\"type\":\"file\",\"path\":\"a\",\"size\":1.5}]",
		"[{\"type\":\"file\",\"path\":\"a\",\"size\":1}", "[1]",
		"[{\"type\":\"file\",\"path\":\"\\ud800\",\"size\":1}]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		got g = { 0 };
		char err[256] = "";
		cr_assert_eq(rfi_hf_tree_parse(bad[i], strlen(bad[i]), on_file, &g, err, sizeof(err)),
			     -EPROTO, "%s", bad[i]);
		cr_assert(strstr(err, "not as the Hub writes it"), "%s", err);
	}
	/* nesting past the bound */
	char deep[200] = "[{\"type\":\"file\",\"x\":";
	for (int i = 0; i < 40; i++)
		strcat(deep, "[");
	got g = { 0 };
	char err[256];
	cr_assert_eq(rfi_hf_tree_parse(deep, strlen(deep), on_file, &g, err, sizeof(err)), -EPROTO);
}

Test(hf, link_next)
{
	char out[256];
	cr_assert(rfi_hf_link_next("<https://h/api/x?cursor=2>; rel=\"next\"", out, sizeof(out)));
	cr_assert_str_eq(out, "https://h/api/x?cursor=2");
	cr_assert(rfi_hf_link_next("<https://h/p1>; rel=\"prev\", <https://h/p3>; rel=\"next\"", out,
				   sizeof(out)));
	cr_assert_str_eq(out, "https://h/p3");
	cr_assert(!rfi_hf_link_next("<https://h/p1>; rel=\"prev\"", out, sizeof(out)));
	cr_assert(!rfi_hf_link_next("", out, sizeof(out)));
}

Test(hf, presigned_lifetime)
{
	time_t now = 1700000000;
	cr_assert_eq(rfi_presigned_lifetime("https://cdn/x?Expires=1700000600&Signature=s", now, 7),
		     600);
	cr_assert_eq(rfi_presigned_lifetime("https://cdn/x?X-Amz-Expires=3600&X-Amz-Date="
					    "20231114T221320Z&X-Amz-Signature=s", now, 7),
		     3600 + 1700000000 - 1700000000); /* 22:13:20 on 2023-11-14 is 1700000000 */
	cr_assert_eq(rfi_presigned_lifetime("https://cdn/x?X-Amz-Expires=60", now, 7), 7);
	cr_assert_eq(rfi_presigned_lifetime("https://cdn/x?NotExpires=5", now, 7), 7);
	cr_assert_eq(rfi_presigned_lifetime("https://cdn/x", now, 7), 7);
	cr_assert_eq(rfi_presigned_lifetime("https://cdn/x?Expires=1699999990", now, 7), -10);
}

Test(hf, presigned_kept_until_expiry)
{
	rf_presigned *p = rfi_presigned_new();
	char out[256], url[128];
	snprintf(url, sizeof(url), "https://cdn/a?Expires=%lld", (long long)time(NULL) + 3600);
	rfi_presigned_put(p, "https://hub/a", url);
	cr_assert(rfi_presigned_get(p, "https://hub/a", out, sizeof(out)));
	cr_assert_str_eq(out, url);
	cr_assert(!rfi_presigned_get(p, "https://hub/b", out, sizeof(out)));
	rfi_presigned_forget(p, "https://hub/a");
	cr_assert(!rfi_presigned_get(p, "https://hub/a", out, sizeof(out)));
	/* within the margin of its expiry: not kept */
	snprintf(url, sizeof(url), "https://cdn/a?Expires=%lld",
		 (long long)time(NULL) + RF_PRESIGNED_MARGIN_S - 1);
	rfi_presigned_put(p, "https://hub/a", url);
	cr_assert(!rfi_presigned_get(p, "https://hub/a", out, sizeof(out)));
	rfi_presigned_free(p);
}

Test(hf, folders)
{
	char *f;
	cr_assert_eq(rfi_hf_folder_of("hf://datasets/o/n", &f), 1);
	cr_assert_str_eq(f, "hf://datasets/o/n@refs%2Fconvert%2Fparquet/");
	free(f);
	cr_assert_eq(rfi_hf_folder_of("hf://datasets/o/n/data/train-*.tar", &f), 1);
	cr_assert_str_eq(f, "hf://datasets/o/n@main/data/");
	free(f);
	cr_assert_eq(rfi_hf_folder_of("hf://datasets/o/n@refs/pr/3/x/", &f), 1);
	cr_assert_str_eq(f, "hf://datasets/o/n@refs%2Fpr%2F3/x/");
	free(f);
	cr_assert_eq(rfi_hf_folder_of("hf://datasets/o/n@v1", &f), 1);
	cr_assert_str_eq(f, "hf://datasets/o/n@v1/");
	free(f);
	cr_assert_eq(rfi_hf_folder_of("hf://datasets/o/n/data/a.tar", &f), 0);
	cr_assert_null(f);
}

Test(hf, resolve_urls)
{
	rf_hf hf = { .endpoint = "https://hub.example", .repo = "o/n" };
	char *u, err[256];
	cr_assert_eq(rfi_hf_read_url(&hf, "hf://datasets/o/n@refs%2Fconvert%2Fparquet/a b.tar", &u,
				     err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(u, "https://hub.example/datasets/o/n/resolve/refs%2Fconvert%2Fparquet/"
			    "a%20b.tar");
	free(u);
	cr_assert_eq(rfi_hf_read_url(&hf, "hf://datasets/o/n/d/x.tar", &u, err, sizeof(err)), 0);
	cr_assert_str_eq(u, "https://hub.example/datasets/o/n/resolve/main/d/x.tar");
	free(u);
	cr_assert_eq(rfi_hf_read_url(&hf, "hf://datasets/o/other/x.tar", &u, err, sizeof(err)), 1);
	cr_assert(strstr(err, "not in dataset o/n"), "%s", err);
	cr_assert_eq(rfi_hf_read_url(&hf, "hf://models/o/n/x", &u, err, sizeof(err)), -EINVAL);
	cr_assert_eq(rfi_hf_read_url(&hf, "hf://datasets/o/n/../x", &u, err, sizeof(err)), -EINVAL);
}
