/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/cg-limit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/file.h"

/* The group named by the first ", cgroup " after the first (name NULL)
 * or the last "NAME: managing (" line of the log. */
static int log_cgroup(const char *log, const char *name, char *group, size_t len)
{
	char *buf = th_read_file(log), *p = NULL, *q, needle[256], g[256] = "";

	if (!buf)
		return -ENOENT;
	if (name) {
		snprintf(needle, sizeof(needle), "%s: managing (", name);
		for (q = buf; (q = strstr(q, needle)); q++)
			p = q;
	} else {
		p = buf;
	}
	if (p && (p = strstr(p, ", cgroup ")) && sscanf(p, ", cgroup %255[^,]", g) != 1)
		g[0] = 0;
	free(buf);
	if (!g[0] || strlen(g) >= len)
		return -ENOENT;
	memcpy(group, g, strlen(g) + 1);
	return 0;
}

int th_log_vm_cgroup(const char *log, char *group, size_t len)
{
	return log_cgroup(log, NULL, group, len);
}

int th_log_named_vm_cgroup(const char *log, const char *name, char *group, size_t len)
{
	return log_cgroup(log, name, group, len);
}

static long read_long(const char *path, long fallback)
{
	FILE *f = fopen(path, "re");
	long v;

	if (!f)
		return fallback;
	if (fscanf(f, "%ld", &v) != 1)
		v = fallback;
	fclose(f);
	return v;
}

int th_cg_limit(const char *group, long *quota_us, long *period_us)
{
	char path[512], q[32] = "";
	long quota, period = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu%s/cpu.cfs_quota_us", group);
	quota = read_long(path, TH_CG_UNKNOWN - 1);
	if (quota != TH_CG_UNKNOWN - 1) {
		snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu%s/cpu.cfs_period_us", group);
		period = read_long(path, 0);
	} else {
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max", group);
		if (!(f = fopen(path, "re")))
			return -ENOENT;
		if (fscanf(f, "%31s %ld", q, &period) == 2)
			quota = strcmp(q, "max") == 0 ? -1 : atol(q);
		fclose(f);
	}
	*quota_us = quota;
	*period_us = period;
	return 0;
}

long th_cg_limit_milli(const char *group)
{
	long quota, period;

	if (th_cg_limit(group, &quota, &period) < 0)
		return TH_CG_UNKNOWN;
	if (quota == -1)
		return TH_CG_UNLIMITED;
	if (quota < 0 || period <= 0)
		return TH_CG_UNKNOWN;
	return quota * 1000 / period;
}

long th_vmactd_quota_milli(const char *log)
{
	char group[256];

	if (th_log_vm_cgroup(log, group, sizeof(group)) < 0)
		return TH_CG_UNKNOWN;
	return th_cg_limit_milli(group);
}
