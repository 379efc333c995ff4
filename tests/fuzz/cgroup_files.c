/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes what act_cg_* read from the kernel and what they compute:
 *  byte 0 = 0/1: the rest is /proc/<pid>/cgroup, parsed for the cgroup v1
 *                / v2 cpu hierarchy (act_cg_vm_group); a result must be a
 *                non-root absolute path, a failure must carry a message;
 *  byte 0 = 2:   the rest is milli, overcommit, period and two limits:
 *                act_cpu_bw_from_milli() results must be within the kernel's
 *                bounds and never below the request; act_cpu_v1_plan() must
 *                end at the new limit in at most ACT_CPU_V1_PLAN_MAX steps. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuator/cgroup/cgroup.h"
#include "actuator/cgroup/cpu-quota.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static void cleanup(void)
{
	char p[96];
	snprintf(p, sizeof(p), "%s/1/cgroup", root);
	unlink(p);
	snprintf(p, sizeof(p), "%s/1", root);
	rmdir(p);
	rmdir(root);
}

static void pid_file(const uint8_t *data, size_t size, int version)
{
	if (!root[0]) {
		snprintf(root, sizeof(root), "/tmp/vmact-fuzz-cg-%d", (int)getpid());
		mkdir(root, 0700);
		char d[96];
		snprintf(d, sizeof(d), "%s/1", root);
		mkdir(d, 0700);
		atexit(cleanup);
	}
	char p[96];
	snprintf(p, sizeof(p), "%s/1/cgroup", root);
	FILE *f = fopen(p, "we");
	if (!f)
		return;
	fwrite(data, 1, size, f);
	fclose(f);

	struct act_cg cg;
	memset(&cg, 0, sizeof(cg));
	cg.cpu_version = version;
	snprintf(cg.proc, sizeof(cg.proc), "%s", root);
	struct vmact_err err = { 0 };
	char *g = NULL;
	if (act_cg_vm_group(&cg, 1, &g, &err) == 0) {
		/* "/emulator" alone is refused, so something is left */
		if (g[0] != '/' || strlen(g) < 2)
			abort();
		free(g);
	} else if (g || err.code == 0 || !err.msg[0]) {
		abort(); /* a failure must say why and hand nothing out */
	}
}

static uint64_t take(const uint8_t **d, size_t *n, size_t bytes)
{
	uint64_t v = 0;
	for (size_t i = 0; i < bytes && *n; i++, (*d)++, (*n)--)
		v = v << 8 | **d;
	return v;
}

static void math(const uint8_t *d, size_t n)
{
	uint32_t milli = (uint32_t)take(&d, &n, 4), oc = (uint32_t)take(&d, &n, 4);
	uint64_t period = take(&d, &n, 3);
	struct act_cpu_bw bw;
	struct act_cpu_bw_info info;
	if (act_cpu_bw_from_milli(milli, oc, period, &bw, &info, NULL) == 0) {
		if (act_cpu_bw_check(&bw, NULL) != 0 ||
		    (bw.period_us < period && !info.period_clamped))
			abort();
		unsigned __int128 want = (unsigned __int128)milli * oc * bw.period_us;
		unsigned __int128 got = (unsigned __int128)bw.quota_us * 1000000;
		if (got < want || got - want >= 1000000)
			abort();
	}
	struct act_cpu_bw old = { take(&d, &n, 6), take(&d, &n, 3) };
	struct act_cpu_bw new = { take(&d, &n, 6), take(&d, &n, 3) };
	if (old.quota_us == 0xFFFFFFFFFFFF)
		old.quota_us = ACT_CPU_QUOTA_UNLIMITED;
	if (new.quota_us == 0xFFFFFFFFFFFF)
		new.quota_us = ACT_CPU_QUOTA_UNLIMITED;
	if (act_cpu_bw_check(&old, NULL) || act_cpu_bw_check(&new, NULL))
		return;
	struct act_cpu_v1_step s[ACT_CPU_V1_PLAN_MAX];
	int k = act_cpu_v1_plan(&old, &new, s);
	if (k < 0 || k > ACT_CPU_V1_PLAN_MAX)
		abort();
	struct act_cpu_bw cur = old;
	for (int i = 0; i < k; i++)
		*(s[i].kind == ACT_CPU_V1_QUOTA ? &cur.quota_us : &cur.period_us) = s[i].value;
	if (cur.quota_us != new.quota_us || cur.period_us != new.period_us)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		pid_file(data + 1, size - 1, 1);
		break;
	case 1:
		pid_file(data + 1, size - 1, 2);
		break;
	default:
		math(data + 1, size - 1);
		break;
	}
	return 0;
}
