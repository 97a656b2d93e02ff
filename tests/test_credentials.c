/* test_credentials.c - credentials.c through its interface, with a
 * credential_process (a shell script the test writes) as the source: its
 * Expiration read in the forms the SDKs write (Z, fractions, an offset);
 * keys that expire fetched again on the refresh thread and handed to a
 * signer (rfi_http_client_update) once per new set, a copy the signer owns;
 * and each way a process fails (exit status, a command not found, another
 * Version, no keys, a bad Expiration, too much output) refused naming the source and never
 * the secret. The refreshes during a read of a bucket, from every source,
 * are python/tests/test_s3.py's. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote/credential_sources.h"
#include "remote/credentials.h"
#include "remote/http.h"
#include "remote/s3.h" /* rfi_s3_sign_init */
#include "testutil.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYSECRETKEY"

static char *dir;

static void setup(void)
{
	dir = tu_tmpdir("credentials");
}

static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

/* dir/p.sh prints body (a printf format line for the shell) and exits rc. */
static void script(const char *body, int rc)
{
	char text[4096];
	snprintf(text, sizeof(text), "#!/bin/sh\n%s\nexit %d\n", body, rc);
	tu_write(dir, "p.sh", text, strlen(text));
}

/* rfi_creds_create from dir/p.sh as profile test's credential_process. */
static int from_process(rf_creds **c, char *err, size_t len)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "/bin/sh %s/p.sh", dir);
	return rfi_creds_create(c, &(rf_creds_source){ .kind = RF_CREDS_PROCESS,
						       .fetch = rfi_creds_fetch, .from = "profile test",
						       .command = cmd }, err, len);
}

static void expires_as(const char *expiration, int64_t want_ms)
{
	char body[512], err[512] = "";
	snprintf(body, sizeof(body), "printf '{\"Version\": 1, \"AccessKeyId\": \"AKIA1\", "
		 "\"SecretAccessKey\": \"%s\", \"SessionToken\": \"T1\", \"Expiration\": \"%s\"}\\n'",
		 SECRET, expiration);
	script(body, 0);
	rf_creds *c;
	cr_assert_eq(from_process(&c, err, sizeof(err)), 0, "%s: %s", expiration, err);
	rf_creds_set s;
	uint64_t gen;
	cr_assert_eq(rfi_creds_copy(c, &s, &gen), 0);
	cr_expect_str_eq(s.key_id, "AKIA1");
	cr_expect_str_eq(s.secret, SECRET);
	cr_expect_str_eq(s.token, "T1");
	cr_expect_eq(s.expires_ms, want_ms, "%s: %lld, not %lld", expiration,
		     (long long)s.expires_ms, (long long)want_ms);
	cr_expect_eq(gen, 1);
	rfi_creds_set_free(&s);
	rfi_creds_destroy(c);
}

/* 2100-01-01T00:00:00Z is 4102444800 s after the epoch. */
Test(credentials, expiration_in_each_form_the_sdks_write, .init = setup, .fini = teardown)
{
	expires_as("2100-01-01T00:00:00Z", 4102444800000ll);
	expires_as("2100-01-01T00:00:00.250Z", 4102444800250ll);
	expires_as("2100-01-01T02:00:00+02:00", 4102444800000ll);
	expires_as("2099-12-31T19:00:00-05:00", 4102444800000ll);
}

Test(credentials, keys_without_expiration_are_kept_as_given, .init = setup, .fini = teardown)
{
	char err[512];
	script("printf '{\"Version\": 1, \"AccessKeyId\": \"AKIA2\", \"SecretAccessKey\": "
	       "\"S2\"}\\n'", 0);
	rf_creds *c;
	cr_assert_eq(from_process(&c, err, sizeof(err)), 0, "%s", err);
	rf_creds_set s;
	uint64_t gen;
	cr_assert_eq(rfi_creds_copy(c, &s, &gen), 0);
	cr_expect_null(s.token);
	cr_expect_eq(s.expires_ms, 0);
	cr_expect_str_eq(rfi_creds_from(c), "profile test's credential_process");
	rfi_creds_set_free(&s);
	rfi_creds_destroy(c);
}

/* The script: the N-th run (N from dir/n) prints keys AKIA<N> / S<N> /
 * T<N> that expire 3 s later. */
static void counting_script(void)
{
	char body[1024];
	snprintf(body, sizeof(body),
		 "d=%s; n=$(cat $d/n 2>/dev/null || echo 0); echo $((n + 1)) > $d/n.new; "
		 "mv $d/n.new $d/n\n"
		 "exp=$(date -u -d \"@$(( $(date +%%s) + 3 ))\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
		 "printf '{\"Version\": 1, \"AccessKeyId\": \"AKIA%%s\", \"SecretAccessKey\": "
		 "\"S%%s\", \"SessionToken\": \"T%%s\", \"Expiration\": \"%%s\"}\\n' $n $n $n $exp",
		 dir);
	script(body, 0);
}

typedef struct moved {
	rf_creds *c;
	uint64_t from;
} moved;

static int generation_moved(void *p)
{
	moved *m = p;
	return rfi_creds_generation(m->c) != m->from;
}

Test(credentials, keys_that_expire_are_fetched_again_and_a_signer_takes_them_once,
     .init = setup, .fini = teardown)
{
	char err[512];
	counting_script();
	rf_creds *c;
	cr_assert_eq(from_process(&c, err, sizeof(err)), 0, "%s", err);
	rf_http_client hc;
	rf_io_sign sign; /* S3's: SigV4 with c's keys */
	cr_assert_eq(rfi_s3_sign_init(&sign, c, "eu-west-1"), 0);
	cr_assert_eq(rfi_http_client_init(&hc, &sign), 0);
	cr_expect_str_eq(hc.sigv4, "aws:amz:eu-west-1:s3");
	cr_expect_str_eq(hc.userpwd, "AKIA0:S0");
	cr_expect_str_eq(hc.token_header, "x-amz-security-token: T0");
	cr_expect_eq(rfi_http_client_update(&hc), 0, "no new keys yet");
	for (int k = 1; k <= 2; k++) {
		moved m = { c, hc.gen };
		/* refreshed at half their life (1.5 s); 30 s: a loaded machine */
		cr_assert(tu_wait_until(generation_moved, &m, 30), "set %d never came", k);
		cr_assert_eq(rfi_http_client_update(&hc), 1);
		char want[64];
		snprintf(want, sizeof(want), "AKIA%d:S%d", k, k);
		cr_expect_str_eq(hc.userpwd, want);
		snprintf(want, sizeof(want), "x-amz-security-token: T%d", k);
		cr_expect_str_eq(hc.token_header, want);
		cr_expect_eq(rfi_http_client_update(&hc), 0, "taken twice");
	}
	rfi_creds_destroy(c); /* the client's copy outlives it */
	cr_expect_str_eq(hc.userpwd, "AKIA2:S2");
	rfi_http_client_free(&hc);
	rfi_s3_sign_free(&sign);
}

static void refused(const char *body, int rc, int want, const char *why)
{
	char err[512] = "";
	script(body, rc);
	rf_creds *c = NULL;
	cr_expect_eq(from_process(&c, err, sizeof(err)), want, "%s: %s", why, err);
	cr_expect_null(c);
	cr_expect(strstr(err, "credentials from profile test's credential_process: ") == err,
		  "%s", err);
	cr_expect(strstr(err, why), "'%s' not in: %s", why, err);
	cr_expect(!strstr(err, SECRET), "the secret is in the message: %s", err);
	rfi_creds_destroy(c);
}

Test(credentials, a_process_that_fails_is_refused_naming_it_never_the_secret, .init = setup,
     .fini = teardown)
{
	refused("printf '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
		"\"}'", 3, -EIO, "the command exited with status 3");
	refused("printf '{\"Version\": 2, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
		"\"}'", 0, -EPROTO, "not JSON with \"Version\": 1");
	refused("printf '{\"Version\": 1, \"SecretAccessKey\": \"" SECRET "\"}'", 0, -EPROTO,
		"no AccessKeyId and SecretAccessKey");
	refused("printf '{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
		"\", \"Expiration\": \"tomorrow\"}'", 0, -EPROTO,
		"Expiration 'tomorrow' is not an ISO 8601 time");
	refused("yes x | head -c 100000", 0, -EFBIG, "output is over 65535 bytes");
	refused("no-such-credential-helper --profile test; exit $?", 0, -EIO,
		"the command exited with status 127");
}
