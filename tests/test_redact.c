/* test_redact.c - rfi_redact(), the one redaction of URLs that leave the
 * process (issue 36: a password in a URL is shown as user:***@ wherever it
 * is shown, never stored): a password is replaced whatever it holds
 * (percent-encoded bytes, a raw '@', nothing), a user without one, an '@'
 * in a path or query, a local path with ':' and '@' and text with no
 * scheme are left as they are; every URL of a text is redacted; a cut
 * output (any length) and an in-place call never show a byte of the
 * password. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* rfi_redact(in) into a roomy buffer equals want; the same in place, and
 * rfi_redact_dup(). */
static void shown_as(const char *in, const char *want)
{
	char out[1024];
	cr_assert_eq(rfi_redact(in, out, sizeof(out)), out);
	cr_assert_str_eq(out, want, "'%s'", in);
	char same[1024];
	snprintf(same, sizeof(same), "%s", in);
	rfi_redact(same, same, sizeof(same));
	cr_assert_str_eq(same, want, "in place: '%s'", in);
	char *dup = rfi_redact_dup(in);
	cr_assert_not_null(dup);
	cr_assert_str_eq(dup, want, "dup: '%s'", in);
	free(dup);
}

Test(redact, a_password_is_shown_as_stars)
{
	shown_as("http://user:secret@host/path/a.tar", "http://user:***@host/path/a.tar");
	shown_as("https://user:secret@host:8443/x", "https://user:***@host:8443/x");
	shown_as("s3://key:secret@bucket/prefix", "s3://key:***@bucket/prefix");
	shown_as("HTTP://user:secret@host", "HTTP://user:***@host"); /* any case, to the end */
	shown_as("git+ssh://user:secret@host/r", "git+ssh://user:***@host/r");
	/* an IPv6 host's colons are after the '@': the password is the first ':''s */
	shown_as("http://user:secret@[::1]:8080/a", "http://user:***@[::1]:8080/a");
}

Test(redact, a_user_without_a_password_and_urls_without_userinfo_stay)
{
	shown_as("http://user@host/a.tar", "http://user@host/a.tar");
	shown_as("http://host/a.tar", "http://host/a.tar");
	shown_as("https://host:8443/a.tar?X-Amz-Signature=abc", "https://host:8443/a.tar?X-Amz-Signature=abc");
	shown_as("", "");
}

Test(redact, an_at_sign_in_the_path_query_or_fragment_is_no_userinfo)
{
	shown_as("http://host/a@b/c:d@e.tar", "http://host/a@b/c:d@e.tar");
	shown_as("http://host?u=a:b@c", "http://host?u=a:b@c");
	shown_as("http://host#a:b@c", "http://host#a:b@c");
	/* with userinfo too: only the authority's is redacted */
	shown_as("http://u:pw@host/a:b@c?q=x:y@z", "http://u:***@host/a:b@c?q=x:y@z");
}

Test(redact, whatever_the_password_holds_none_of_it_shows)
{
	/* percent-encoded: the user as it is, the password gone whole */
	shown_as("http://us%40er:p%3Ass%40w0rd@host/x", "http://us%40er:***@host/x");
	/* a raw '@' or ':' in it (curl takes the last '@'): all of it hidden */
	shown_as("http://user:p@ss:w@rd@host/x", "http://user:***@host/x");
	/* empty: stars too (no telling an empty password from another) */
	shown_as("http://user:@host/x", "http://user:***@host/x");
	/* an empty user */
	shown_as("http://:secret@host/x", "http://:***@host/x");
}

Test(redact, every_url_of_a_text)
{
	shown_as("shard http://a:one@h1/x.tar: HTTP 403; then s3://b:two@h2/y and https://h3/z, "
		 "'http://c:three@h4/w' \"https://d:four@h5\" (http://e:five@h6)",
		 "shard http://a:***@h1/x.tar: HTTP 403; then s3://b:***@h2/y and https://h3/z, "
		 "'http://c:***@h4/w' \"https://d:***@h5\" (http://e:***@h6)");
	/* one after another with no space: the first authority ends at its '/' */
	shown_as("http://a:one@h1/http://b:two@h2/", "http://a:***@h1/http://b:***@h2/");
	/* a URL at the very end of the text */
	shown_as("GET http://a:one@h1", "GET http://a:***@h1");
}

Test(redact, text_without_a_scheme_and_local_paths_stay)
{
	/* a local path may hold ':' and '@': no "scheme://", no URL */
	shown_as("/data/a:b@c/img.jpg", "/data/a:b@c/img.jpg");
	shown_as("user:secret@host/path", "user:secret@host/path");
	/* "://" with no scheme before it is no URL either */
	shown_as("see ://user:x@host", "see ://user:x@host");
	shown_as("1http://u:p@h", "1http://u:***@h"); /* the scheme starts at a letter: "http" */
}

/* Cut to every length: always NUL-terminated, a prefix of the whole
 * redaction, and never a byte of the password. */
Test(redact, a_cut_output_shows_no_byte_of_the_password)
{
	const char *in = "open http://user:Zq9xK@host/a.tar, then http://v:Yw8@h2/b";
	char whole[256];
	rfi_redact(in, whole, sizeof(whole));
	cr_assert_str_eq(whole, "open http://user:***@host/a.tar, then http://v:***@h2/b");
	for (size_t len = 1; len <= strlen(in) + 8; len++) {
		char out[256];
		memset(out, 'Z', sizeof(out));
		rfi_redact(in, out, len);
		cr_assert_lt(strlen(out), len, "len %zu: NUL-terminated within it", len);
		cr_assert(!strncmp(out, whole, strlen(out)), "len %zu: '%s' is no prefix", len, out);
		cr_assert(!strstr(out, "Zq") && !strstr(out, "Yw"), "len %zu: '%s'", len, out);
		/* in place, the same */
		char same[256];
		snprintf(same, sizeof(same), "%s", in);
		rfi_redact(same, same, len);
		cr_assert_str_eq(same, out, "in place, len %zu", len);
	}
	char one[1] = { 'x' };
	rfi_redact(in, one, 1);
	cr_assert_eq(one[0], '\0');
	cr_assert_null(rfi_redact(in, NULL, 8));
	char none[4] = "abc";
	rfi_redact(NULL, none, sizeof(none));
	cr_assert_str_eq(none, "");
}
