/* SPDX-License-Identifier: Apache-2.0 */
/* act_cg_* on a fake cgroupfs tree in a temporary directory, the way
 * libvirt's vircgroupmock does it: act_cg_open() reads the fake mount
 * table, and this executable defines open(), which takes precedence over
 * libc's (symbol interposition), so that writes into the fake tree
 * truncate like kernel files and are logged.
 * Covers the v2 (unified) logic this host cannot run for real, plus v1
 * write order and the parsers. The real v1 paths are tested in
 * tests/integration/test_cgroup_*.c. */
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "actuator/cgroup/cgroup.h"
#include "base/macro.h"
#include "tests/lib/file.h"

static char fake_root[256]; /* "" = interposers pass through */
static char fake_mounts[PATH_MAX];
static char write_log[16][PATH_MAX]; /* basenames of files opened for writing */
static int write_count;

int open(const char *path, int flags, ...)
{
	static int (*real)(const char *, int, ...);
	mode_t mode = 0;
	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	if (!real)
		real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	size_t rl = strlen(fake_root);
	if (rl && strncmp(path, fake_root, rl) == 0 && (flags & O_ACCMODE) != O_RDONLY) {
		flags |= O_TRUNC;
		if (write_count < 16) {
			const char *b = strrchr(path, '/');
			snprintf(write_log[write_count], PATH_MAX, "%s", b ? b + 1 : path);
		}
		write_count++;
	}
	return real(path, flags, mode);
}

static void put(const char *rel, const char *content)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", fake_root, rel);
	/* mkdir -p of the parent */
	for (char *s = p + strlen(fake_root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	FILE *f = fopen(p, "we");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static char *get(const char *rel)
{
	static char buf[256];
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/%s", fake_root, rel);
	FILE *f = fopen(p, "re");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Writes the fake mount table; every '@' in text is the fake root. */
static void mounts(const char *text)
{
	char m[4096];
	size_t n = 0;
	for (const char *p = text; *p && n + sizeof(fake_root) < sizeof(m); p++) {
		if (*p == '@')
			n += (size_t)snprintf(m + n, sizeof(m) - n, "%s", fake_root);
		else
			m[n++] = *p;
	}
	m[n] = '\0';
	put("mounts", m);
}

static int setup(void **state)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/vmact-cgfake-XXXXXX");
	if (!mkdtemp(fake_root))
		return -1;
	snprintf(fake_mounts, sizeof(fake_mounts), "%s/mounts", fake_root);
	write_count = 0;
	return 0;
}

static int teardown(void **state)
{
	int r = th_rm_rf(fake_root);
	fake_root[0] = '\0';
	return r == 0 ? 0 : -1;
}

#define V2_VM "machine.slice/machine-qemu\\x2d3\\x2dvm1.scope/libvirt"

static void v2_tree(void)
{
	mounts("proc /proc proc rw 0 0\ncgroup2 @/cg2 cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n");
	put("cg2/cgroup.controllers", "cpuset cpu io memory pids\n");
	put("cg2/" V2_VM "/cpu.max", "max 100000\n");
	put("cg2/" V2_VM "/cpu.stat", "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\n"
				      "nr_periods 10\nnr_throttled 4\nthrottled_usec 1234\n"
				      "nr_bursts 0\nburst_usec 0\n");
	put("cg2/" V2_VM "/emulator/cpu.max", "max 100000\n");
	put("cg2/" V2_VM "/vcpu0/cpu.max", "max 100000\n");
	put("proc/4242/cgroup", "0::/" V2_VM "/emulator\n");
}

static void open_fake(struct act_cg *cg)
{
	char proc[PATH_MAX + 8];
	snprintf(proc, sizeof(proc), "%s/proc", fake_root);
	struct act_cg_opts o = { .mounts = fake_mounts, .proc = proc };
	struct vmact_err err = { 0 };
	int r = act_cg_open(cg, &o, &err);
	if (r < 0)
		fail_msg("act_cg_open: %s", err.msg);
}

static void test_v2_detect_and_find(void **state)
{
	struct act_cg cg;
	v2_tree();
	open_fake(&cg);
	assert_int_equal(cg.layout, ACT_CG_UNIFIED);
	assert_int_equal(cg.cpu_version, 2);
	char want[PATH_MAX + 8];
	snprintf(want, sizeof(want), "%s/cg2", fake_root);
	assert_string_equal(cg.cpu_mount, want);

	_cleanup_free_ char *g = NULL;
	assert_int_equal(act_cg_vm_group(&cg, 4242, &g, NULL), 0);
	assert_string_equal(g, "/" V2_VM);
}

static void test_v2_set_get_one_write(void **state)
{
	struct act_cg cg;
	struct vmact_err err = { 0 };
	struct act_cpu_bw bw, got;
	v2_tree();
	open_fake(&cg);

	assert_int_equal(act_cg_cpu_get(&cg, "/" V2_VM, &got, NULL), 0);
	assert_true(got.quota_us == ACT_CPU_QUOTA_UNLIMITED && got.period_us == 100000);

	assert_int_equal(act_cpu_bw_from_milli(250, 1000, 100000, &bw, NULL, NULL), 0);
	write_count = 0;
	int r = act_cg_cpu_set(&cg, "/" V2_VM, &bw, &err);
	if (r < 0)
		fail_msg("%s", err.msg);
	/* quota and period in one write of cpu.max */
	assert_int_equal(write_count, 1);
	assert_string_equal(write_log[0], "cpu.max");
	assert_string_equal(get("cg2/" V2_VM "/cpu.max"), "25000 100000");
	assert_int_equal(act_cg_cpu_get(&cg, "/" V2_VM, &got, NULL), 0);
	assert_true(got.quota_us == 25000 && got.period_us == 100000);

	/* a clamped limit carries its own period */
	assert_int_equal(act_cpu_bw_from_milli(5, 1000, 100000, &bw, NULL, NULL), 0);
	assert_int_equal(act_cg_cpu_set(&cg, "/" V2_VM, &bw, NULL), 0);
	assert_string_equal(get("cg2/" V2_VM "/cpu.max"), "1000 200000");

	struct act_cpu_bw unl = act_cpu_bw_unlimited(100000);
	assert_int_equal(act_cg_cpu_set(&cg, "/" V2_VM, &unl, NULL), 0);
	assert_string_equal(get("cg2/" V2_VM "/cpu.max"), "max 100000");

	/* invalid limits never reach the file */
	struct act_cpu_bw bad = { 10, 100000 };
	write_count = 0;
	assert_int_equal(act_cg_cpu_set(&cg, "/" V2_VM, &bad, NULL), -EINVAL);
	assert_int_equal(write_count, 0);

	/* missing group: error names the file */
	vmact_err_reset(&err);
	assert_int_equal(act_cg_cpu_set(&cg, "/machine.slice/nope", &bw, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "cpu.max"));
}

static void test_v2_get_malformed(void **state)
{
	static const char *bad[] = { "25000\n",     "abc 100000\n",     "25000 x\n",
				     "-5 100000\n", "25000 100000 7\n", "\n" };
	struct act_cg cg;
	v2_tree();
	open_fake(&cg);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct act_cpu_bw got = { 1, 1 };
		struct vmact_err err = { 0 };
		put("cg2/" V2_VM "/cpu.max", bad[i]);
		int r = act_cg_cpu_get(&cg, "/" V2_VM, &got, &err);
		if (r != -EPROTO)
			fail_msg("\"%s\": ret %d", bad[i], r);
		assert_non_null(strstr(err.msg, "cpu.max"));
		assert_true(got.quota_us == 1 && got.period_us == 1);
	}
}

static void test_v2_ensure_drift(void **state)
{
	struct act_cg cg;
	struct act_cpu_bw want = { 50000, 100000 }, found;
	bool drifted;
	v2_tree();
	open_fake(&cg);
	assert_int_equal(act_cg_cpu_set(&cg, "/" V2_VM, &want, NULL), 0);
	assert_int_equal(act_cg_cpu_ensure(&cg, "/" V2_VM, &want, &drifted, &found, NULL), 0);
	assert_false(drifted);
	/* someone (libvirt global_quota) rewrote it */
	put("cg2/" V2_VM "/cpu.max", "200000 100000\n");
	assert_int_equal(act_cg_cpu_ensure(&cg, "/" V2_VM, &want, &drifted, &found, NULL), 0);
	assert_true(drifted);
	assert_true(found.quota_us == 200000);
	assert_string_equal(get("cg2/" V2_VM "/cpu.max"), "50000 100000");
}

static void test_v2_stat(void **state)
{
	struct act_cg cg;
	struct vmact_cpustat st;
	struct vmact_err err = { 0 };
	v2_tree();
	open_fake(&cg);
	assert_int_equal(act_cg_cpu_stat(&cg, "/" V2_VM, &st, NULL), 0);
	assert_int_equal(st.nr_periods, 10);
	assert_int_equal(st.nr_throttled, 4);
	assert_int_equal(st.throttled_ns, 1234000);
	assert_true(st.has_usage);
	assert_int_equal(st.usage_ns, 5000000);

	/* cpu controller not enabled for the group: only usage fields */
	put("cg2/" V2_VM "/cpu.stat", "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\n");
	assert_int_equal(act_cg_cpu_stat(&cg, "/" V2_VM, &st, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "nr_periods"));

	vmact_err_reset(&err);
	put("cg2/" V2_VM "/cpu.stat", "usage_usec 5000\nnr_periods 1x\nnr_throttled 0\n");
	assert_int_equal(act_cg_cpu_stat(&cg, "/" V2_VM, &st, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "nr_periods"));

	vmact_err_reset(&err);
	assert_int_equal(act_cg_cpu_stat(&cg, "/machine.slice/none", &st, &err), -ENOENT);
}

#define V1_VM "machine/qemu-3-vm1.libvirt-qemu"

static void v1_tree(void)
{
	mounts("cgroup @/cpu cgroup rw,nosuid,relatime,cpu 0 0\n"
	       "cgroup @/cpuacct cgroup rw,relatime,cpuacct 0 0\n"
	       "cgroup @/memory cgroup rw,relatime,memory 0 0\n"
	       "cgroup2 @/unified cgroup2 rw,relatime 0 0\n");
	put("unified/cgroup.controllers", "");
	put("cpu/" V1_VM "/cpu.cfs_quota_us", "-1\n");
	put("cpu/" V1_VM "/cpu.cfs_period_us", "100000\n");
	put("cpu/" V1_VM "/cpu.stat", "nr_periods 7\nnr_throttled 3\nthrottled_time 2500000\n"
				      "nr_bursts 1\nburst_time 4000\n");
	put("cpu/" V1_VM "/emulator/cpu.cfs_quota_us", "-1\n");
	put("proc/4242/cgroup", "9:name=systemd:/\n4:memory:/" V1_VM "\n2:cpuacct:/\n"
				"1:cpu:/" V1_VM "/emulator\n0::/" V1_VM "/emulator\n");
}

static void test_v1_hybrid_detect_and_order(void **state)
{
	struct act_cg cg;
	struct vmact_err err = { 0 };
	v1_tree();
	open_fake(&cg);
	assert_int_equal(cg.layout, ACT_CG_HYBRID);
	assert_int_equal(cg.cpu_version, 1);
	{
		char want[PATH_MAX];
		snprintf(want, sizeof(want), "%s/cpuacct", fake_root);
		assert_string_equal(cg.cpuacct_mount, want);
	}
	_cleanup_free_ char *g = NULL;
	assert_int_equal(act_cg_vm_group(&cg, 4242, &g, NULL), 0);
	assert_string_equal(g, "/" V1_VM);

	/* unlimited → 250m: quota only */
	struct act_cpu_bw bw = { 25000, 100000 };
	write_count = 0;
	if (act_cg_cpu_set(&cg, g, &bw, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(write_count, 1);
	assert_string_equal(write_log[0], "cpu.cfs_quota_us");
	assert_string_equal(get("cpu/" V1_VM "/cpu.cfs_quota_us"), "25000");

	/* 0.25 → 1 m with its clamped 1 s period: quota first keeps the ratio
	 * between the two (1000/100000 = 0.01 ≥ 0.001) */
	struct act_cpu_bw tiny = { 1000, 1000000 };
	write_count = 0;
	assert_int_equal(act_cg_cpu_set(&cg, g, &tiny, NULL), 0);
	assert_int_equal(write_count, 2);
	assert_string_equal(write_log[0], "cpu.cfs_quota_us");
	assert_string_equal(write_log[1], "cpu.cfs_period_us");
	assert_string_equal(get("cpu/" V1_VM "/cpu.cfs_period_us"), "1000000");

	/* same ratio 0.01, other period: either order leaves [old, new], so
	 * it goes through unlimited */
	struct act_cpu_bw mid = { 2000, 200000 }, same = { 1000, 100000 };
	assert_int_equal(act_cg_cpu_set(&cg, g, &mid, NULL), 0);
	write_count = 0;
	assert_int_equal(act_cg_cpu_set(&cg, g, &same, NULL), 0);
	assert_int_equal(write_count, 3);
	assert_string_equal(write_log[0], "cpu.cfs_quota_us");
	assert_string_equal(write_log[1], "cpu.cfs_period_us");
	assert_string_equal(write_log[2], "cpu.cfs_quota_us");
	struct act_cpu_bw got;
	assert_int_equal(act_cg_cpu_get(&cg, g, &got, NULL), 0);
	assert_true(got.quota_us == same.quota_us && got.period_us == same.period_us);
}

static void test_v1_stat_and_usage(void **state)
{
	struct act_cg cg;
	struct vmact_cpustat st;
	v1_tree();
	open_fake(&cg);
	/* the VM is not in the cpuacct hierarchy: no usage */
	assert_int_equal(act_cg_cpu_stat(&cg, "/" V1_VM, &st, NULL), 0);
	assert_int_equal(st.nr_periods, 7);
	assert_int_equal(st.nr_throttled, 3);
	assert_int_equal(st.throttled_ns, 2500000);
	assert_int_equal(st.nr_bursts, 1);
	assert_int_equal(st.burst_ns, 4000);
	assert_false(st.has_usage);
	/* co-located group in cpuacct: usage in µs */
	put("cpuacct/" V1_VM "/cpuacct.usage", "987654321\n");
	assert_int_equal(act_cg_cpu_stat(&cg, "/" V1_VM, &st, NULL), 0);
	assert_true(st.has_usage);
	assert_int_equal(st.usage_ns, 987654321);
}

static void test_pid_group_errors(void **state)
{
	struct act_cg cg;
	struct vmact_err err = { 0 };
	char *g = NULL;
	v1_tree();
	open_fake(&cg);
	put("proc/1/cgroup", "1:cpu:/machine/other\n");
	assert_int_equal(act_cg_vm_group(&cg, 1, &g, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "emulator"));
	put("proc/2/cgroup", "garbage\n");
	assert_int_equal(act_cg_pid_group(&cg, 2, &g, NULL), -EPROTO);
	put("proc/3/cgroup", "2:cpuacct:/\n");
	assert_int_equal(act_cg_pid_group(&cg, 3, &g, NULL), -ENOENT);
	put("proc/4/cgroup", "1:cpu:/a\n5:cpu,cpuacct:/b\n");
	assert_int_equal(act_cg_pid_group(&cg, 4, &g, NULL), -EPROTO);
	put("proc/7/cgroup", "1:cpu://emulator\n"); /* found by fuzzing: would be the root */
	assert_int_equal(act_cg_vm_group(&cg, 7, &g, NULL), -EPROTO);
	put("proc/5/cgroup", "1:cpu:relative\n");
	assert_int_equal(act_cg_pid_group(&cg, 5, &g, NULL), -EPROTO);
	/* co-mounted cpu,cpuacct and a ':' inside the path */
	put("proc/6/cgroup", "3:cpu,cpuacct:/x:y/emulator\n");
	assert_int_equal(act_cg_vm_group(&cg, 6, &g, NULL), 0);
	assert_string_equal(g, "/x:y");
	free(g);
	assert_int_equal(act_cg_pid_group(&cg, 0, &g, NULL), -EINVAL);
	assert_int_equal(act_cg_pid_group(&cg, 99999, &g, NULL), -ENOENT);
}

static void test_classify(void **state)
{
	enum act_cg_layout l;
	const struct act_cg_mount *cpu;
	struct act_cg_mount legacy[] = { { .dir = "/c/cpu", .has_cpu = true },
					 { .dir = "/c/mem" } };
	struct act_cg_mount hybrid[] = { { .dir = "/c/cpu", .has_cpu = true },
					 { .v2 = true, .dir = "/c/unified" } };
	struct act_cg_mount unified[] = { { .v2 = true, .has_cpu = true, .dir = "/c" } };
	struct act_cg_mount v2_nocpu[] = { { .v2 = true, .dir = "/c" } };
	/* hybrid with cpu moved to v2 (nothing on v1 claims it) */
	struct act_cg_mount hybrid_v2cpu[] = {
		{ .dir = "/c/memory" }, { .v2 = true, .has_cpu = true, .dir = "/c/unified" }
	};
	struct vmact_err err = { 0 };

	assert_int_equal(act_cg_classify(legacy, 2, &l, &cpu, NULL), 0);
	assert_int_equal(l, ACT_CG_LEGACY);
	assert_string_equal(cpu->dir, "/c/cpu");
	assert_int_equal(act_cg_classify(hybrid, 2, &l, &cpu, NULL), 0);
	assert_int_equal(l, ACT_CG_HYBRID);
	assert_false(cpu->v2);
	assert_int_equal(act_cg_classify(unified, 1, &l, &cpu, NULL), 0);
	assert_int_equal(l, ACT_CG_UNIFIED);
	assert_true(cpu->v2);
	assert_int_equal(act_cg_classify(hybrid_v2cpu, 2, &l, &cpu, NULL), 0);
	assert_int_equal(l, ACT_CG_HYBRID);
	assert_true(cpu->v2);
	assert_int_equal(act_cg_classify(v2_nocpu, 1, &l, &cpu, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "cpu controller"));
	assert_int_equal(act_cg_classify(NULL, 0, &l, &cpu, NULL), -ENODEV);
}

static void test_open_no_cpu(void **state)
{
	struct act_cg cg;
	struct vmact_err err = { 0 };
	char proc[PATH_MAX + 8];
	mounts("cgroup2 @/cg2 cgroup2 rw 0 0\n");
	put("cg2/cgroup.controllers", "memory pids\n");
	snprintf(proc, sizeof(proc), "%s/proc", fake_root);
	struct act_cg_opts o = { .mounts = fake_mounts, .proc = proc };
	assert_int_equal(act_cg_open(&cg, &o, &err), -ENODEV);
	assert_non_null(strstr(err.msg, "cpu"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_v2_detect_and_find),
		T(test_v2_set_get_one_write),
		T(test_v2_get_malformed),
		T(test_v2_ensure_drift),
		T(test_v2_stat),
		T(test_v1_hybrid_detect_and_order),
		T(test_v1_stat_and_usage),
		T(test_pid_group_errors),
		T(test_classify),
		T(test_open_no_cpu),
	};
	return cmocka_run_group_tests_name("cgroup-fake", tests, NULL, NULL);
}
