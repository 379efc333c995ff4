/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the cgroup integration tests that run a libvirt guest: one
 * transient domain per test program (vmact-cg-<pid>), its cgroup found
 * through act_cg_domain_group(), CPU use of its QEMU measured from /proc,
 * libvirt calls that survive libvirtd restarts by other tests on the same
 * machine, and reaping of domains left by test processes that died. */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "actuator/cgroup-domain.h"
#include "actuator/cgroup.h"
#include "tests/integration/cpu-use.h"

#define CGVM_UNUSED __attribute__((unused))

static struct act_cg cg;
static virConnectPtr conn;
static virDomainPtr dom;
static char name[64], *vm;
static pid_t qemu;
static bool usable, vm_env_failed;

static CGVM_UNUSED void quiet(void *ud, virErrorPtr e)
{
}

/* Other tests on this machine restart libvirtd; a transient domain
 * survives that, our connection does not. Reconnects (waiting up to ~10 s
 * for the daemon to answer again) and finds the domain again by name. */
static CGVM_UNUSED bool relink(void)
{
	if (conn && virConnectIsAlive(conn) == 1)
		return true;
	virConnectPtr c = NULL;
	for (int i = 0; i < 50 && !c; i++) {
		c = virConnectOpen("qemu:///system");
		if (!c)
			usleep(200 * 1000);
	}
	if (!c)
		return false;
	virDomainPtr d = virDomainLookupByName(c, name);
	if (!d) {
		virConnectClose(c);
		return false;
	}
	printf("(libvirtd restarted under the test: reconnected)\n");
	if (dom)
		virDomainFree(dom);
	if (conn)
		virConnectClose(conn);
	conn = c;
	dom = d;
	return true;
}

/* A libvirt call, retried once on a fresh connection if the daemon went
 * away during it; lv_msg keeps the call's error message (later calls such
 * as virConnectIsAlive() reset libvirt's). */
static char lv_msg[512];
#define LV(call)                                                                           \
	({                                                                                 \
		int lv_r_ = -1;                                                            \
		snprintf(lv_msg, sizeof(lv_msg), "no connection to libvirtd");            \
		for (int lv_i_ = 0; lv_i_ < 2; lv_i_++) {                                  \
			if (!relink())                                                     \
				break;                                                     \
			lv_r_ = (call);                                                    \
			if (lv_r_ < 0)                                                     \
				snprintf(lv_msg, sizeof(lv_msg), "%s", virGetLastErrorMessage()); \
			if (lv_r_ >= 0 || virConnectIsAlive(conn) == 1)                    \
				break;                                                     \
		}                                                                          \
		lv_r_;                                                                     \
	})

/* Domains of earlier runs whose test process died before its teardown
 * (e.g. killed while libvirtd restarted under it): destroy them. */
static CGVM_UNUSED void reap_stale(void)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(conn, &doms, VIR_CONNECT_LIST_DOMAINS_TRANSIENT);
	for (int i = 0; i < n; i++) {
		const char *nm = virDomainGetName(doms[i]);
		/* "vmact-cg-<pid>" or tests/guest's "vmact-cg-<pid>-<n>" */
		int owner = 0, end = 0;
		if (nm && sscanf(nm, "vmact-cg-%d%n", &owner, &end) == 1 &&
		    (nm[end] == '\0' || nm[end] == '-') && owner > 0 && kill(owner, 0) < 0 &&
		    errno == ESRCH) {
			printf("destroying %s left by a dead test process\n", nm);
			virDomainDestroy(doms[i]);
			char f[160];
			snprintf(f, sizeof(f), "/tmp/%s.img", nm);
			unlink(f);
			snprintf(f, sizeof(f), "/run/vmact-test/%s.log", nm);
			unlink(f);
			snprintf(f, sizeof(f), "/run/vmact-test/%s.ctl", nm);
			unlink(f);
		}
		virDomainFree(doms[i]);
	}
	free(doms);
}

/* Opens cgroups and libvirt and names the domain. 1 when usable, 0 when
 * the tests must skip (not root), -1 on failure (vm_env_failed set). */
static CGVM_UNUSED int vm_env_open(void)
{
	struct vmact_err err = { 0 };
	if (geteuid() != 0) {
		printf("needs root; tests skip\n");
		return 0;
	}
	vm_env_failed = true;
	if (act_cg_open(&cg, NULL, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	virSetErrorFunc(NULL, quiet);
	conn = virConnectOpen("qemu:///system");
	if (!conn) {
		fprintf(stderr, "cannot connect to qemu:///system: %s\n", virGetLastErrorMessage());
		return -1;
	}
	/* libvirt's client writes to a socket a restarting libvirtd may close */
	signal(SIGPIPE, SIG_IGN);
	reap_stale();
	snprintf(name, sizeof(name), "vmact-cg-%d", (int)getpid());
	vm_env_failed = false;
	return 1;
}

/* Adopts a started domain: finds its cgroup and QEMU pid. */
static CGVM_UNUSED int vm_adopt(virDomainPtr d)
{
	struct vmact_err err = { 0 };
	dom = d;
	snprintf(name, sizeof(name), "%s", virDomainGetName(d));
	if (act_cg_domain_group(&cg, dom, NULL, &vm, &qemu, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	printf("domain %s: QEMU pid %d, cgroup %s (cpu v%d, %s)\n", name, (int)qemu, vm,
	       cg.cpu_version, act_cg_layout_name(cg.layout));
	usable = true;
	return 0;
}

static CGVM_UNUSED int vm_start(const char *xml)
{
	virDomainPtr d = virDomainCreateXML(conn, xml, 0);
	if (!d) {
		fprintf(stderr, "starting %s: %s\n", name, virGetLastErrorMessage());
		return -1;
	}
	return vm_adopt(d);
}

static CGVM_UNUSED void vm_stop(void)
{
	if (dom) {
		if (LV(virDomainDestroy(dom)) < 0)
			fprintf(stderr, "destroying %s: %s\n", name, lv_msg);
		virDomainFree(dom);
		dom = NULL;
	}
	if (conn)
		virConnectClose(conn);
	conn = NULL;
	free(vm);
	vm = NULL;
}

#define NEED_VM()                                               \
	do {                                                    \
		if (!usable) {                                  \
			printf("skipped: no guest (needs root)\n"); \
			skip();                                 \
		}                                               \
	} while (0)

/* ---- measuring ---------------------------------------------------------- */

/* CPU seconds of the whole process and of its vCPU threads (threads whose
 * cpu cgroup ends in /vcpuN). Exited threads (idle thread-pool workers)
 * stay counted in the process total, so emulator = total - vcpus. */
static CGVM_UNUSED void sample(double *total, double *vcpus)
{
	char p[128];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)qemu);
	assert_true(cpu_use_read(p, total));
	*vcpus = 0;
	snprintf(p, sizeof(p), "/proc/%d/task", (int)qemu);
	DIR *d = opendir(p);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		pid_t tid = (pid_t)atoi(e->d_name);
		char g[64];
		snprintf(g, sizeof(g), "%d/task/%d", (int)qemu, (int)tid);
		/* act_cg_pid_group on "<pid>/task/<tid>" through the proc root */
		char *grp = NULL;
		struct act_cg tcg = cg;
		snprintf(tcg.proc, sizeof(tcg.proc), "/proc/%d/task", (int)qemu);
		if (act_cg_pid_group(&tcg, tid, &grp, NULL) < 0)
			continue;
		const char *last = strrchr(grp, '/');
		bool is_vcpu = last && strncmp(last, "/vcpu", 5) == 0;
		free(grp);
		double s;
		char sp[128];
		snprintf(sp, sizeof(sp), "/proc/%d/task/%d/stat", (int)qemu, (int)tid);
		if (is_vcpu && cpu_use_read(sp, &s))
			*vcpus += s;
	}
	closedir(d);
}

struct use {
	double total, vcpus, emulator; /* CPUs */
};

static CGVM_UNUSED struct use measure(double secs)
{
	double t0, v0, t1, v1, w0 = cpu_use_now();
	sample(&t0, &v0);
	cpu_use_window(secs);
	sample(&t1, &v1);
	double w = cpu_use_now() - w0;
	struct use u = { (t1 - t0) / w, (v1 - v0) / w, 0 };
	u.emulator = u.total - u.vcpus;
	return u;
}

static CGVM_UNUSED void set_or_fail(const char *group, const struct act_cpu_bw *bw)
{
	struct vmact_err err = { 0 };
	if (act_cg_cpu_set(&cg, group, bw, &err) < 0)
		fail_msg("%s", err.msg);
}

static CGVM_UNUSED char *child(const char *sub)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s/%s", vm, sub);
	return buf;
}

