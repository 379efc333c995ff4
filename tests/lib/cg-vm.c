/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/lib/cg-vm.h"
#include "tests/lib/cpu-use.h"
#include "tests/lib/wait.h"

struct th_vm th_vm;

static void quiet(void *ud, virErrorPtr e)
{
}

/* Other tests on this machine restart libvirtd; a transient domain
 * survives that, our connection does not. Reconnects (waiting up to ~10 s
 * for the daemon to answer again) and finds the domain again by name. */
bool th_vm_relink(void)
{
	if (th_vm.conn && virConnectIsAlive(th_vm.conn) == 1)
		return true;
	virConnectPtr c = NULL;
	for (int i = 0; i < 50 && !c; i++) {
		c = virConnectOpen("qemu:///system");
		if (!c)
			usleep(200 * 1000);
	}
	if (!c)
		return false;
	virDomainPtr d = virDomainLookupByName(c, th_vm.name);
	if (!d) {
		virConnectClose(c);
		return false;
	}
	printf("(libvirtd restarted under the test: reconnected)\n");
	if (th_vm.dom)
		virDomainFree(th_vm.dom);
	if (th_vm.conn)
		virConnectClose(th_vm.conn);
	th_vm.conn = c;
	th_vm.dom = d;
	return true;
}

/* Domains of earlier runs whose test process died before its teardown
 * (e.g. killed while libvirtd restarted under it): destroy them. */
static void reap_stale(void)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(th_vm.conn, &doms, VIR_CONNECT_LIST_DOMAINS_TRANSIENT);
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
 * the tests must skip (not root), -1 on failure (th_vm.env_failed set). */
int th_vm_open(void)
{
	struct vmact_err err = { 0 };
	if (geteuid() != 0) {
		printf("needs root; tests skip\n");
		return 0;
	}
	th_vm.env_failed = true;
	if (act_cg_open(&th_vm.cg, NULL, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	virSetErrorFunc(NULL, quiet);
	th_vm.conn = virConnectOpen("qemu:///system");
	if (!th_vm.conn) {
		fprintf(stderr, "cannot connect to qemu:///system: %s\n", virGetLastErrorMessage());
		return -1;
	}
	/* libvirt's client writes to a socket a restarting libvirtd may close */
	signal(SIGPIPE, SIG_IGN);
	reap_stale();
	snprintf(th_vm.name, sizeof(th_vm.name), "vmact-cg-%d", (int)getpid());
	th_vm.env_failed = false;
	return 1;
}

/* Adopts a started domain: finds its cgroup and QEMU pid. */
int th_vm_adopt(virDomainPtr d)
{
	struct vmact_err err = { 0 };
	th_vm.dom = d;
	snprintf(th_vm.name, sizeof(th_vm.name), "%s", virDomainGetName(d));
	if (act_cg_domain_group(&th_vm.cg, th_vm.dom, NULL, &th_vm.group, &th_vm.qemu, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return -1;
	}
	printf("domain %s: QEMU pid %d, cgroup %s (cpu v%d, %s)\n", th_vm.name, (int)th_vm.qemu,
	       th_vm.group, th_vm.cg.cpu_version, act_cg_layout_name(th_vm.cg.layout));
	th_vm.usable = true;
	return 0;
}

int th_vm_start(const char *xml)
{
	virDomainPtr d = virDomainCreateXML(th_vm.conn, xml, 0);
	if (!d) {
		fprintf(stderr, "starting %s: %s\n", th_vm.name, virGetLastErrorMessage());
		return -1;
	}
	return th_vm_adopt(d);
}

void th_vm_stop(void)
{
	if (th_vm.dom) {
		if (TH_VM_LV(virDomainDestroy(th_vm.dom)) < 0)
			fprintf(stderr, "destroying %s: %s\n", th_vm.name, th_vm.lv_msg);
		virDomainFree(th_vm.dom);
		th_vm.dom = NULL;
	}
	if (th_vm.conn)
		virConnectClose(th_vm.conn);
	th_vm.conn = NULL;
	free(th_vm.group);
	th_vm.group = NULL;
}

/* ---- measuring ---------------------------------------------------------- */

/* CPU seconds of the whole process and of its vCPU threads (threads whose
 * cpu cgroup ends in /vcpuN). Exited threads (idle thread-pool workers)
 * stay counted in the process total, so emulator = total - vcpus. */
static void sample(double *total, double *vcpus)
{
	char p[128];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)th_vm.qemu);
	assert_true(cpu_use_read(p, total));
	*vcpus = 0;
	snprintf(p, sizeof(p), "/proc/%d/task", (int)th_vm.qemu);
	DIR *d = opendir(p);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		pid_t tid = (pid_t)atoi(e->d_name);
		char g[64];
		snprintf(g, sizeof(g), "%d/task/%d", (int)th_vm.qemu, (int)tid);
		/* act_cg_pid_group on "<pid>/task/<tid>" through the proc root */
		char *grp = NULL;
		struct act_cg tcg = th_vm.cg;
		snprintf(tcg.proc, sizeof(tcg.proc), "/proc/%d/task", (int)th_vm.qemu);
		if (act_cg_pid_group(&tcg, tid, &grp, NULL) < 0)
			continue;
		const char *last = strrchr(grp, '/');
		bool is_vcpu = last && strncmp(last, "/vcpu", 5) == 0;
		free(grp);
		double s;
		char sp[128];
		snprintf(sp, sizeof(sp), "/proc/%d/task/%d/stat", (int)th_vm.qemu, (int)tid);
		if (is_vcpu && cpu_use_read(sp, &s))
			*vcpus += s;
	}
	closedir(d);
}

struct th_vm_use th_vm_measure(double secs)
{
	double t0, v0, t1, v1, w0 = th_now_s();
	sample(&t0, &v0);
	cpu_use_window(secs);
	sample(&t1, &v1);
	double w = th_now_s() - w0;
	struct th_vm_use u = { (t1 - t0) / w, (v1 - v0) / w, 0 };
	u.emulator = u.total - u.vcpus;
	return u;
}

void th_vm_set_or_fail(const char *group, const struct act_cpu_bw *bw)
{
	struct vmact_err err = { 0 };
	if (act_cg_cpu_set(&th_vm.cg, group, bw, &err) < 0)
		fail_msg("%s", err.msg);
}

char *th_vm_child(const char *sub)
{
	static char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s/%s", th_vm.group, sub);
	return buf;
}
