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
#include "remote/http.h"
#include "remote/http_check.h"
#include "remote/http_date.h"
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
	cr_assert(strstr(err, "a model repository: ringfeed reads only datasets"), "%s", err);
	cr_assert_eq(rfi_hf_read_url(&hf, "hf://datasets/o/n/../x", &u, err, sizeof(err)), -EINVAL);
}

/* hf://models/, hf://spaces/ and huggingface_hub's bare hf://ORG/NAME (a
 * model) are refused when the source is opened, saying only datasets are
 * read */
Test(hf, only_datasets)
{
	const char *refused[][2] = {
		{ "hf://models/o/n", "a model repository: " },
		{ "hf://spaces/o/n/app.py", "a Space: " },
		{ "hf://o/n/x.tar", "a model repository (no datasets/ prefix): " },
		{ "hf://datasets", "'hf://datasets': ringfeed" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		rf_hf *hf = NULL;
		char err[512] = "";
		cr_assert_eq(rfi_hf_open(&hf, refused[i][0], err, sizeof(err)), -EINVAL, "%s",
			     refused[i][0]);
		cr_assert_null(hf);
		cr_assert(strstr(err, refused[i][1]), "%s", err);
		cr_assert(strstr(err, "ringfeed reads only datasets from the Hub: "
				      "hf://datasets/ORG/NAME"), "%s", err);
	}
}

Test(hf, http_dates)
{
	int64_t t;
	/* RFC 9110's own examples: one instant in the three forms */
	const char *forms[] = { "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
				"Sun Nov  6 08:49:37 1994" };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(rfi_http_date_parse(forms[i], strlen(forms[i]), &t), 0, "%s", forms[i]);
		cr_assert_eq(t, 784111777, "%s: %lld", forms[i], (long long)t);
	}
	const char *y2k = "Fri, 31 Dec 1999 23:59:59 GMT";
	cr_assert_eq(rfi_http_date_parse(y2k, strlen(y2k), &t), 0);
	cr_assert_eq(t, 946684799);
	const char *leap = "Thu, 29 Feb 2024 00:00:00 GMT";
	cr_assert_eq(rfi_http_date_parse(leap, strlen(leap), &t), 0);
	cr_assert_eq(t, 1709164800);
	const char *bad[] = { "", "120", "Fri, 31 Dec 1999 23:59:59", "Fri, 31 Dec 1999 23:59:59 UTC",
			      "Fri, 30 Feb 2000 00:00:00 GMT", "Fri, 31 Dex 1999 23:59:59 GMT",
			      "Fri, 31 Dec 1969 23:59:59 GMT", "Fri, 31 Dec 1999 24:00:00 GMT",
			      "Fri, 31 Dec 1999 23:59:59 GMT ", "Fri,31 Dec 1999 23:59:59 GMT",
			      "Fri, 1 Dec 1999 23:59:59 GMT" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(rfi_http_date_parse(bad[i], strlen(bad[i]), &t), -1, "%s", bad[i]);
	/* a value cut short is read within its length only */
	cr_assert_eq(rfi_http_date_parse(y2k, strlen(y2k) - 4, &t), -1);
}

static void seen_lines(rf_http_seen *s, const char **lines)
{
	*s = (rf_http_seen){ 0 };
	for (; *lines; lines++)
		rfi_http_seen_line(s, *lines, strlen(*lines));
}

/* Retry-After's date form is a wait like its seconds form: measured
 * against the response's Date, whichever line comes first */
Test(hf, retry_after_date)
{
	rf_http_seen s;
	const char *after[] = { "HTTP/1.1 429 Too Many Requests\r\n", "Date: Fri, 31 Dec 1999 23:59:00 GMT\r\n",
				"Retry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n", "\r\n", NULL };
	seen_lines(&s, after);
	cr_assert(s.has_retry_after);
	cr_assert_eq(s.retry_after_s, 59);
	const char *before[] = { "HTTP/1.1 503 Service Unavailable\r\n",
				 "retry-after: Sat, 01 Jan 2000 00:02:00 GMT\r\n",
				 "date: Fri, 31 Dec 1999 23:59:59 GMT\r\n", "\r\n", NULL };
	seen_lines(&s, before);
	cr_assert(s.has_retry_after);
	cr_assert_eq(s.retry_after_s, 121);
	const char *past[] = { "HTTP/1.1 429 x\r\n", "Date: Sat, 01 Jan 2000 00:00:00 GMT\r\n",
			       "Retry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n", "\r\n", NULL };
	seen_lines(&s, past);
	cr_assert(s.has_retry_after);
	cr_assert_eq(s.retry_after_s, 0);
	const char *secs[] = { "HTTP/1.1 429 x\r\n", "Retry-After: 7\r\n", "\r\n", NULL };
	seen_lines(&s, secs);
	cr_assert(s.has_retry_after);
	cr_assert_eq(s.retry_after_s, 7);
	const char *junk[] = { "HTTP/1.1 429 x\r\n", "Retry-After: soon\r\n", "\r\n", NULL };
	seen_lines(&s, junk);
	cr_assert_not(s.has_retry_after);
	/* a year on: kept at a day, as the seconds form is */
	const char *far[] = { "HTTP/1.1 429 x\r\n", "Date: Fri, 31 Dec 1999 23:59:59 GMT\r\n",
			      "Retry-After: Sun, 31 Dec 2000 23:59:59 GMT\r\n", "\r\n", NULL };
	seen_lines(&s, far);
	cr_assert_eq(s.retry_after_s, 86400);
	/* no Date line: measured against this machine's clock once the
	 * headers end */
	char line[64];
	time_t soon = time(NULL) + 30;
	strftime(line, sizeof(line), "Retry-After: %a, %d %b %Y %H:%M:%S GMT\r\n", gmtime(&soon));
	const char *nodate[] = { "HTTP/1.1 429 x\r\n", line, NULL };
	seen_lines(&s, nodate);
	cr_assert_not(s.has_retry_after, "not measured before the headers end");
	rfi_http_seen_line(&s, "\r\n", 2);
	cr_assert(s.has_retry_after);
	cr_assert(s.retry_after_s >= 28 && s.retry_after_s <= 30, "%u", s.retry_after_s);
	/* a status line after a redirect forgets the one before's */
	rfi_http_seen_line(&s, "HTTP/1.1 200 OK\r\n", 17);
	cr_assert_not(s.has_retry_after);
}

/* however long a server says, the process waits at most
 * RF_HTTP_RETRY_AFTER_MAX_S */
Test(hf, retry_after_bounded)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	rfi_http_throttle_note(86400);
	uint64_t until = rfi_http_throttle_until();
	cr_assert(until > now + (RF_HTTP_RETRY_AFTER_MAX_S - 5) * 1000000000ull);
	cr_assert(until <= now + (RF_HTTP_RETRY_AFTER_MAX_S + 5) * 1000000000ull);
}
