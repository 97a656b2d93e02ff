/* machine.c - what the command line says of the machine it runs on: the
 * cores this process may use (the library's own count: affinity mask and
 * cgroup quota), a one-line description for reports, from uname(2), with
 * no shell, and whether other work kept it busy while we measured
 * (/proc/loadavg, /proc/stat). */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/run.h"
#include "util/util.h"

int cli_cores(void)
{
	return rfi_cpu_count();
}

const char *cli_machine_line(char *buf, size_t len)
{
	struct utsname u;
	int cores = cli_cores();
	if (uname(&u) == 0)
		snprintf(buf, len, "%d core%s available, %s %s (%s)", cores, cores == 1 ? "" : "s",
			 u.sysname, u.release, u.machine);
	else
		snprintf(buf, len, "%d core%s available", cores, cores == 1 ? "" : "s");
	return buf;
}

/* All CPUs' busy time so far, in seconds (the "cpu" line of /proc/stat:
 * everything but idle and iowait), and how many CPUs it counts.
 * @return : 0, or -1 when /proc/stat could not be read. */
static int proc_busy(double *busy_s, int *cpus)
{
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -1;
	char line[512];
	unsigned long long v[10] = { 0 };
	int n = 0, ok = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "cpu ", 4))
			ok = sscanf(line + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
				    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 5;
		else if (!strncmp(line, "cpu", 3) && line[3] >= '0' && line[3] <= '9')
			n++;
	}
	fclose(f);
	if (!ok || n < 1)
		return -1;
	/* user nice system idle iowait irq softirq steal (guest is inside user) */
	unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	*busy_s = (double)busy / (double)sysconf(_SC_CLK_TCK);
	*cpus = n;
	return 0;
}

static double self_cpu_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

void cli_load_start(cli_load *ld)
{
	memset(ld, 0, sizeof(*ld));
	ld->loadavg = -1;
	ld->others_cores = -1;
	double la;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &la) == 1)
			ld->loadavg = la;
		fclose(f);
	}
	if (proc_busy(&ld->busy0_s, &ld->cpus))
		ld->cpus = 0;
	ld->self0_s = self_cpu_s();
	ld->t0 = now_s();
}

int cli_load_end(cli_load *ld, char *msg, size_t len)
{
	double busy, wall = now_s() - ld->t0;
	int cpus;
	if (ld->cpus && wall > 0.05 && !proc_busy(&busy, &cpus)) {
		double others = (busy - ld->busy0_s) - (self_cpu_s() - ld->self0_s);
		ld->others_cores = others > 0 ? others / wall : 0;
	}
	/* Busy: other processes kept more than a tenth of the CPUs (at least a
	 * quarter of one) working while we measured, or the load when we
	 * started was at or above the CPUs. Measurements on an idle machine
	 * see a few hundredths of a core of others. */
	int cores = ld->cpus ? ld->cpus : cli_cores();
	double limit = 0.1 * cores > 0.25 ? 0.1 * cores : 0.25;
	ld->busy = (ld->others_cores >= 0 && ld->others_cores > limit) ||
		   (ld->loadavg >= 0 && ld->loadavg >= cores);
	if (msg && len) {
		msg[0] = '\0';
		if (ld->busy) {
			char others[96] = "";
			if (ld->others_cores >= 0)
				snprintf(others, sizeof(others), ", other processes used %.1f of them "
					 "meanwhile", ld->others_cores);
			snprintf(msg, len, "the machine is busy (load %.1f on %s%s): figures are noisy",
				 ld->loadavg >= 0 ? ld->loadavg : 0.0, cli_count((unsigned)cores, "CPU", 3),
				 others);
		}
	}
	return ld->busy;
}
