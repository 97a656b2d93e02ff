/* test_abi.c - what a binding can rely on: RF_ABI_CHECK() detects structs
 * of another layout; reserved bytes of rf_config other than zero are
 * refused; batch data is page-aligned; a loader does not survive fork():
 * in the child every call returns RF_EFORKED at once (no hang), destroy
 * frees nothing there, and the parent goes on unharmed. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char *dir;
static void setup(void) { dir = tu_tree("abi", 2, 6); }
static void teardown(void)
{
	tu_rmrf(dir);
	free(dir);
}

Test(abi, struct_sizes_are_checked)
{
	cr_assert_eq(RF_ABI_CHECK(), 0);
	cr_assert_eq(rf_abi_check(sizeof(rf_config) - 8, sizeof(rf_batch), sizeof(rf_stats),
				  sizeof(rf_order_info), sizeof(rf_state_info)), RF_EABI);
	cr_assert_eq(rf_abi_check(sizeof(rf_config), sizeof(rf_batch), sizeof(rf_stats) + 8,
				  sizeof(rf_order_info), sizeof(rf_state_info)), RF_EABI);
	cr_assert_str_neq(rf_strerror(RF_EABI), "unknown error");
	cr_assert_str_neq(rf_strerror(RF_EFORKED), "unknown error");
}

Test(abi, reserved_bytes_must_be_zero, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.reserved[sizeof(cfg.reserved) - 1] = 1;
	rf_loader *l = NULL;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), RF_ECONFIG);
	cr_assert_null(l);
	cr_assert(strstr(err, "reserved"), "the message says what: %s", err);
}

Test(abi, batch_data_is_page_aligned, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.batch_size = 3; /* odd sizes too */
	cfg.prefetch = 3;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	int r, n = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		cr_assert_eq((uintptr_t)b->data % 4096, 0, "batch %llu at %p",
			     (unsigned long long)b->index, (void *)b->data);
		rf_batch_release(l, b);
		n++;
	}
	cr_assert_eq(r, RF_EOF);
	cr_assert_eq(n, 4);
	rf_loader_destroy(l);
}

Test(abi, a_forked_child_gets_rf_eforked, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.epochs = 3;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	rf_batch *b;
	cr_assert_eq(rf_loader_next(l, &b), 0);
	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		/* the child: every call answers at once; exit codes say which failed */
		rf_batch *c;
		rf_stats st;
		unsigned char state[RF_STATE_MAX_BYTES];
		int code = 0;
		if (rf_loader_next(l, &c) != RF_EFORKED)
			code |= 1;
		if (rf_loader_stats(l, &st) != RF_EFORKED)
			code |= 2;
		if (rf_loader_state_save(l, state, sizeof(state)) != RF_EFORKED)
			code |= 4;
		char name[64];
		if (rf_loader_class_count(l) != RF_EFORKED || rf_loader_class_name(l, 0) ||
		    rf_loader_sample_name(l, 0, name, sizeof(name)) != RF_EFORKED)
			code |= 8;
		rf_batch_release(l, b); /* does nothing */
		rf_loader_destroy(l);   /* frees nothing, joins nothing */
		_exit(code);
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the child ended by signal %d", WTERMSIG(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "child's failed calls: %d", WEXITSTATUS(status));
	/* the parent goes on */
	rf_batch_release(l, b);
	int r, n = 1;
	while ((r = rf_loader_next(l, &b)) == 0) {
		rf_batch_release(l, b);
		n++;
	}
	cr_assert_eq(r, RF_EOF, "%s", rf_loader_error(l));
	cr_assert_eq(n, 3 * 2);
	rf_loader_destroy(l);
}

/* The names of this process's threads that start with prefix. */
static int threads_named(const char *prefix)
{
	char path[300], comm[32];
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
			FILE *f = fopen(path, "r");
			if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, prefix, strlen(prefix)))
				n++;
			if (f)
				fclose(f);
		}
	closedir(d);
	return n;
}

/* Waits (5 s at most) until count(prefix) threads carry that name: a
 * thread names itself when it starts. */
typedef struct named_want {
	const char *prefix;
	int count;
} named_want;

static int enough_named(void *ctx)
{
	named_want *w = ctx;
	return threads_named(w->prefix) == w->count;
}

static void assert_named(const char *prefix, int count)
{
	named_want w = { prefix, count };
	cr_assert(tu_wait_until(enough_named, &w, 5.0), "%d threads named %s*, not %d",
		  threads_named(prefix), prefix, count);
}

Test(abi, threads_are_named, .init = setup, .fini = teardown)
{
	rf_config cfg;
	tu_config(&cfg, dir);
	cfg.threads = 3;
	rf_loader *l;
	char err[512];
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	assert_named("rf-ring", 1);
	assert_named("rf-compute-", 3);
	rf_loader_destroy(l);
	cfg.io_path = RF_IO_PREAD;
	cfg.pread_threads = 2;
	cr_assert_eq(rf_loader_create(&l, &cfg, err, sizeof(err)), 0, "%s", err);
	assert_named("rf-pread-", 2);
	rf_loader_destroy(l);
	cr_assert_eq(threads_named("rf-"), 0, "every thread joined");
}
