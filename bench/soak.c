/* soak.c - a long life in one process: CYCLES create / destroy cycles (each
 * takes a batch or two, leaving reads in flight), then a run of EPOCHS
 * epochs cut every CUT batches (state saved, loader destroyed, a new one
 * resumed), its ids checked against an uncut run. Samples the resident
 * memory and the open descriptors as it goes and prints them; growth is
 * what it looks for. Usage: soak DATA [CYCLES] [EPOCHS] [CUT] (bench/soak.sh). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringfeed.h"

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n - 1; /* the directory stream itself */
}

static void config(rf_config *c, const char *data)
{
	rf_config_default(c);
	c->source = data;
	c->batch_size = 16;
	c->resize = 64;
	c->crop = 56;
	c->threads = 2;
	c->io_depth = 64;
	c->prefetch = 4;
	c->rank = 0;
	c->world_size = 1;
}

static rf_loader *create(const rf_config *c)
{
	rf_loader *l;
	char err[256];
	int r = rf_loader_create(&l, c, err, sizeof(err));
	if (r) {
		fprintf(stderr, "soak: create: %s (%s)\n", err, rf_strerror(r));
		exit(1);
	}
	return l;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: soak DATA [CYCLES] [EPOCHS] [CUT]\n");
		return 2;
	}
	const char *data = argv[1];
	int cycles = argc > 2 ? atoi(argv[2]) : 1000;
	int epochs = argc > 3 ? atoi(argv[3]) : 50;
	int cut = argc > 4 ? atoi(argv[4]) : 37;
	rf_config c;
	config(&c, data);
	c.epochs = 0;
	printf("phase     step   rss_kib  fds\n");
	printf("start     %5d  %8ld  %3d\n", 0, rss_kib(), open_fds());
	for (int i = 1; i <= cycles; i++) {
		rf_loader *l = create(&c);
		rf_batch *b;
		for (int k = 0; k < i % 3; k++)
			if (rf_loader_next(l, &b) == 0)
				rf_batch_release(l, b);
		rf_loader_destroy(l);
		if (i % (cycles / 10 ? cycles / 10 : 1) == 0)
			printf("cycles    %5d  %8ld  %3d\n", i, rss_kib(), open_fds());
	}

	/* the uncut run's ids, then the same run cut and resumed */
	c.epochs = epochs;
	rf_loader *l = create(&c);
	rf_order_info o;
	rf_loader_order(l, &o);
	size_t total = (size_t)o.total_batches * (size_t)c.batch_size, n = 0, m = 0;
	uint64_t *whole = malloc(total * sizeof(uint64_t)), *cutids = malloc(total * sizeof(uint64_t));
	rf_batch *b;
	while (rf_loader_next(l, &b) == 0) {
		memcpy(whole + n, b->ids, b->count * sizeof(uint64_t));
		n += b->count;
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
	uint8_t state[4096];
	int slen = 0, cuts = 0;
	uint64_t batches = 0;
	for (;;) {
		rf_config r = c;
		if (slen > 0) {
			r.resume_state = state;
			r.resume_state_len = (size_t)slen;
		}
		l = create(&r);
		int got = 0, ret = 0;
		while (got < cut && (ret = rf_loader_next(l, &b)) == 0) {
			memcpy(cutids + m, b->ids, b->count * sizeof(uint64_t));
			m += b->count;
			rf_batch_release(l, b);
			got++;
			if (++batches % o.batches_per_epoch == 0 &&
			    (batches / o.batches_per_epoch) % (uint64_t)(epochs / 10 ? epochs / 10 : 1) == 0)
				printf("epoch     %5llu  %8ld  %3d\n",
				       (unsigned long long)(batches / o.batches_per_epoch), rss_kib(),
				       open_fds());
		}
		slen = rf_loader_state_save(l, state, sizeof(state));
		rf_loader_destroy(l);
		if (ret)
			break;
		cuts++;
	}
	int same = m == n && !memcmp(whole, cutids, n * sizeof(uint64_t));
	printf("end       %5d  %8ld  %3d\n", cuts, rss_kib(), open_fds());
	printf("soak: %d create/destroy cycles; %d epochs (%zu samples) in %d resumed pieces: %s\n",
	       cycles, epochs, n, cuts + 1, same ? "ids identical to the uncut run" : "IDS DIFFER");
	free(whole);
	free(cutids);
	return same ? 0 : 1;
}
