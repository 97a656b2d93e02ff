/* credentials.c - the credentials' refresh under ThreadSanitizer: a
 * credential_process (a script written here) hands out keys that expire
 * 2 s after each run; a signer thread (the ring thread's part:
 * rfi_http_client_update before each "request", reading the keys it took)
 * runs while the refresh thread swaps two new sets in, then the
 * credentials are destroyed while a refresh is under way (the script's
 * third run waits for a file), which the detached thread finishes and
 * frees. Exit 0, or 1 with a line saying what did not happen (a TSan
 * report fails the run by itself: halt_on_error).
 *
 *     tsan_credentials TMPDIR */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "remote/credential_sources.h"
#include "remote/credentials.h"
#include "remote/http.h"
#include "remote/s3.h" /* the signer of creds */

static rf_creds *creds;
static atomic_int stop;
static atomic_int taken; /* new sets the signer took */

static void *signer(void *arg)
{
	(void)arg;
	rf_http_client hc;
	rf_io_sign sign;
	if (rfi_s3_sign_init(&sign, creds, NULL))
		return NULL;
	if (rfi_http_client_init(&hc, &sign)) {
		rfi_s3_sign_free(&sign);
		return NULL;
	}
	size_t sum = 0;
	while (!atomic_load(&stop)) { /* stopped by main, within its deadline */
		if (rfi_http_client_update(&hc) == 1)
			atomic_fetch_add(&taken, 1);
		sum += strlen(hc.userpwd) + (hc.token_header ? strlen(hc.token_header) : 0);
		usleep(100);
	}
	rfi_http_client_free(&hc);
	rfi_s3_sign_free(&sign);
	return (void *)(uintptr_t)(sum != 0);
}

static int exists(const char *dir, const char *name)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* Polls for cond up to 30 s (every 10 ms). */
#define WAIT(cond) do { for (int i_ = 0; i_ < 3000 && !(cond); i_++) usleep(10000); } while (0)

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: tsan_credentials TMPDIR\n");
		return 2;
	}
	const char *dir = argv[1];
	char path[4200], cmd[4300];
	snprintf(path, sizeof(path), "%s/creds.sh", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	/* run N prints AKIA<N>; run 2 first waits (30 s at most) for "go" */
	fprintf(f, "d=%s; n=$(cat $d/n 2>/dev/null || echo 0); echo $((n + 1)) > $d/n\n"
		"if [ $n = 2 ]; then touch $d/running; i=0; while [ ! -e $d/go ] && "
		"[ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done; fi\n"
		"exp=$(date -u -d \"@$(( $(date +%%s) + 2 ))\" +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
		"printf '{\"Version\": 1, \"AccessKeyId\": \"AKIA%%s\", \"SecretAccessKey\": "
		"\"S%%s\", \"SessionToken\": \"T%%s\", \"Expiration\": \"%%s\"}\\n' $n $n $n $exp\n",
		dir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "/bin/sh %s", path);
	char err[512];
	if (rfi_creds_create(&creds, &(rf_creds_source){ .kind = RF_CREDS_PROCESS,
							 .fetch = rfi_creds_fetch, .from = "tsan",
							 .command = cmd }, err, sizeof(err))) {
		fprintf(stderr, "tsan_credentials: %s\n", err);
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, signer, NULL);
	WAIT(atomic_load(&taken) >= 1 && exists(dir, "running"));
	atomic_store(&stop, 1);
	void *ok;
	pthread_join(t, &ok);
	int fine = atomic_load(&taken) >= 1 && exists(dir, "running") && ok;
	rfi_creds_destroy(creds); /* while run 2 waits: the thread frees them later */
	snprintf(path, sizeof(path), "%s/go", dir);
	if ((f = fopen(path, "w")))
		fclose(f);
	if (!fine) {
		fprintf(stderr, "tsan_credentials: the signer took %d new sets, the third run %s\n",
			atomic_load(&taken), exists(dir, "running") ? "began" : "never began");
		return 1;
	}
	printf("tsan_credentials: ok\n");
	return 0;
}
