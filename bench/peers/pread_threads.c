/* pread_threads.c - the small-file loader a C programmer writes first: T
 * threads take files from a shared counter and open / read / close each one
 * (buffered reads, one syscall each). The peer of `ringfeed bench --raw` in
 * bench/small_files.sh.
 *
 *   build/bench/pread_threads LIST --threads T [--json]
 *
 * LIST holds one path per line (as `find DIR -type f` prints). The list is
 * read before the clock starts; the time covers reading every file once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char **paths;
static size_t npaths;
static atomic_size_t next;
static atomic_ullong bytes, failures;

static void *worker(void *arg)
{
	(void)arg;
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	for (;;) {
		size_t i = atomic_fetch_add(&next, 1);
		if (i >= npaths)
			break;
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			atomic_fetch_add(&failures, 1);
			continue;
		}
		ssize_t n, total = 0;
		while ((n = read(fd, buf, cap)) > 0)
			total += n;
		if (n < 0)
			atomic_fetch_add(&failures, 1);
		atomic_fetch_add(&bytes, (unsigned long long)total);
		close(fd);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *list = NULL;
	int threads = 16, json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help")) {
			printf("usage: pread_threads LIST --threads T [--json]\n");
			return 0;
		} else
			list = argv[i];
	}
	FILE *f = list ? fopen(list, "r") : NULL;
	if (!f || threads < 1 || threads > 4096) {
		fprintf(stderr, "usage: pread_threads LIST --threads T [--json]\n");
		return 2;
	}
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (npaths == cap)
			paths = realloc(paths, (cap = cap ? cap * 2 : 4096) * sizeof(*paths));
		paths[npaths++] = strdup(line);
	}
	fclose(f);
	free(line);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	if (json)
		printf("{\"loader\":\"pread_threads\",\"threads\":%d,\"files\":%zu,\"seconds\":%.6f,"
		       "\"files_per_s\":%.1f,\"mb_per_s\":%.2f,\"failures\":%llu}\n", threads, npaths,
		       secs, npaths / secs, (double)bytes / secs / 1e6, (unsigned long long)failures);
	else
		printf("pread_threads T=%d: %zu files in %.3f s: %.1f files/s, %.1f MB/s\n", threads,
		       npaths, secs, npaths / secs, (double)bytes / secs / 1e6);
	return failures ? 1 : 0;
}
