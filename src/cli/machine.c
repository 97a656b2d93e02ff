/* machine.c - what the command line says of the machine it runs on: the
 * cores this process may use (the library's own count: affinity mask and
 * cgroup quota) and a one-line description for reports, from uname(2),
 * with no shell. */
#include <stdio.h>
#include <sys/utsname.h>

#include "cli/cli.h"
#include "util/util.h"

int cli_cores(void)
{
	return rf_cpu_count();
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
