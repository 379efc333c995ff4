/* SPDX-License-Identifier: Apache-2.0 */
/* Measured CPU use for the cgroup integration tests: utime+stime of a
 * process or thread from /proc, over monotonic wall time. Ratios, not
 * timings: a test compares them with a quota or a control run. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CPU seconds from a /proc/<pid>[/task/<tid>]/stat file; false if it is
 * gone or unreadable. */
static inline bool cpu_use_read(const char *stat_path, double *secs)
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
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return false;
	*secs = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	return true;
}

static inline double cpu_use_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits out a measuring window (not a synchronisation sleep). */
static inline void cpu_use_window(double secs)
{
	struct timespec d = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
	while (nanosleep(&d, &d) < 0 && errno == EINTR)
		;
}
