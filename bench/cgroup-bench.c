/* SPDX-License-Identifier: Apache-2.0 */
/* Cost of applying a VM's CPU limit, measured in one run on one guest:
 *   vmact:   act_cg_cpu_set() on the VM's cgroup (its files written),
 *   ensure:  act_cg_cpu_ensure() with nothing to do (the drift check),
 *   libvirt: virDomainSetSchedulerParametersFlags(global_quota, LIVE),
 *            which writes the same file through libvirtd's RPC.
 * Each alternates 250m/500m so every call really changes the limit; the
 * result is printed as mean µs per call and as ratios to vmact's.
 * Usage: cgroup-bench [ITERATIONS]. Needs root, libvirtd, TCG. */
#include <errno.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actuator/cgroup/cgroup-domain.h"
#include "actuator/cgroup/cgroup.h"
#include "tests/lib/guest.h"
#include "tests/lib/wait.h"

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 10;
	if (iters <= 0) {
		fprintf(stderr, "cgroup-bench: ITERATIONS must be a positive number\n");
		return 2;
	}
	iters *= 20; /* each call is sub-millisecond: more samples per iteration */

	struct act_cg cg;
	struct vmact_err err = { 0 };
	if (act_cg_open(&cg, NULL, &err) < 0) {
		fprintf(stderr, "cgroup-bench: %s\n", err.msg);
		return 1;
	}
	tg_quiet_libvirt();
	virConnectPtr conn = virConnectOpen("qemu:///system");
	if (!conn) {
		fprintf(stderr, "cgroup-bench: qemu:///system: %s\n", virGetLastErrorMessage());
		return 1;
	}
	char name[64], xml[1024];
	snprintf(name, sizeof(name), "vmact-cg-bench-%d", (int)getpid());
	/* No disk: the guest sits in firmware; only its cgroup matters here. */
	snprintf(xml, sizeof(xml),
		 "<domain type='qemu'><name>%s</name><memory unit='MiB'>64</memory>"
		 "<vcpu>1</vcpu><os><type arch='x86_64' machine='pc'>hvm</type></os>"
		 "<cpu mode='custom' match='exact'><model fallback='forbid'>qemu64</model></cpu>"
		 "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator></devices></domain>",
		 name);
	virDomainPtr dom = virDomainCreateXML(conn, xml, 0);
	if (!dom) {
		fprintf(stderr, "cgroup-bench: starting %s: %s\n", name, virGetLastErrorMessage());
		virConnectClose(conn);
		return 1;
	}

	int rc = 1;
	char *vm = NULL;
	if (act_cg_domain_group(&cg, dom, NULL, &vm, NULL, &err) < 0) {
		fprintf(stderr, "cgroup-bench: %s\n", err.msg);
		goto out;
	}
	const struct act_cpu_bw lim[2] = { { 25000, 100000 }, { 50000, 100000 } };

	double t0 = th_now_s();
	for (int i = 0; i < iters; i++)
		if (act_cg_cpu_set(&cg, vm, &lim[i & 1], &err) < 0) {
			fprintf(stderr, "cgroup-bench: %s\n", err.msg);
			goto out;
		}
	double vmact = (th_now_s() - t0) / iters * 1e6;

	bool drifted;
	t0 = th_now_s();
	for (int i = 0; i < iters; i++)
		if (act_cg_cpu_ensure(&cg, vm, &lim[(iters - 1) & 1], &drifted, NULL, &err) < 0 ||
		    drifted) {
			fprintf(stderr, "cgroup-bench: ensure: %s\n", drifted ? "drift" : err.msg);
			goto out;
		}
	double ensure = (th_now_s() - t0) / iters * 1e6;

	t0 = th_now_s();
	for (int i = 0; i < iters; i++) {
		virTypedParameter p;
		memset(&p, 0, sizeof(p));
		snprintf(p.field, sizeof(p.field), "%s", VIR_DOMAIN_SCHEDULER_GLOBAL_QUOTA);
		p.type = VIR_TYPED_PARAM_LLONG;
		p.value.l = (long long)lim[i & 1].quota_us;
		if (virDomainSetSchedulerParametersFlags(dom, &p, 1, VIR_DOMAIN_AFFECT_LIVE) < 0) {
			fprintf(stderr, "cgroup-bench: global_quota: %s\n",
				virGetLastErrorMessage());
			goto out;
		}
	}
	double libvirt = (th_now_s() - t0) / iters * 1e6;

	printf("apply a CPU limit, mean of %d calls on %s (cpu v%d):\n", iters, vm, cg.cpu_version);
	printf("  vmact act_cg_cpu_set        %8.1f us  (1.00)\n", vmact);
	printf("  vmact act_cg_cpu_ensure     %8.1f us  (%.2f)  read-back, no change\n", ensure,
	       ensure / vmact);
	printf("  libvirt global_quota (RPC)  %8.1f us  (%.2f)\n", libvirt, libvirt / vmact);
	rc = 0;
out:
	free(vm);
	if (virDomainDestroy(dom) < 0) {
		/* libvirtd restarted under us (other tests do that): reconnect */
		virConnectPtr c2 = NULL;
		for (int i = 0; i < 50 && !c2; i++)
			if (!(c2 = virConnectOpen("qemu:///system")))
				usleep(200 * 1000);
		virDomainPtr d2 = c2 ? virDomainLookupByName(c2, name) : NULL;
		if (!d2 || virDomainDestroy(d2) < 0)
			fprintf(stderr, "cgroup-bench: could not destroy %s: %s\n", name,
				virGetLastErrorMessage());
		if (d2)
			virDomainFree(d2);
		if (c2)
			virConnectClose(c2);
	}
	virDomainFree(dom);
	virConnectClose(conn);
	return rc;
}
