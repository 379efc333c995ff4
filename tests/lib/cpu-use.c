/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/cpu-use.h"

/* CPU seconds from a /proc/<pid>[/task/<tid>]/stat file; false if it is
 * gone or unreadable. */
bool cpu_use_read(const char *stat_path, double *secs)
{
	char buf[1024];
	int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* after "(comm)": state is field 3, utime 14, stime 15 */
	char *p = strrchr(buf, ')');
	unsigned long long ut, st;
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return false;
	*secs = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return true;
}

/* Waits out a measuring window (not a synchronisation sleep). */
void cpu_use_window(double secs)
{
	struct timespec d = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
	while (nanosleep(&d, &d) < 0 && errno == EINTR)
		;
}

void cpu_use_judge(const char *what, double q, double control, double limited, uint64_t throttled,
		   uint64_t periods)
{
	if (limited > 1.1 * q)
		fail_msg("%s: %.3f CPUs used under a %.3f limit", what, limited, q);
	if (control < 1.1 * q) {
		printf("CONTENTION (%s): the unlimited run got %.3f CPUs, not clearly more than "
		       "the %.3f limit (> %.3f needed): enforcement cannot be observed here; "
		       "reported, not asserted\n",
		       what, control, q, 1.1 * q);
		skip();
	}
	if ((double)throttled < 0.9 * (double)periods) {
		/* within the band: fine; below it: the box was busy elsewhere */
		if (limited >= 0.9 * q)
			return;
		printf("CONTENTION (%s): %.3f CPUs under a %.3f limit, throttled in only %llu of "
		       "%llu periods: the box did not give the group its quota; reported, not "
		       "asserted\n",
		       what, limited, q, (unsigned long long)throttled,
		       (unsigned long long)periods);
		skip();
	}
	if (limited >= 0.9 * q)
		return;
	fail_msg("%s: %.3f CPUs under a %.3f limit although throttled in %llu of %llu periods",
		 what, limited, q, (unsigned long long)throttled, (unsigned long long)periods);
}
