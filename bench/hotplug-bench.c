/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug-bench: latency from request to guest-observed completion of vCPU
 * plug/unplug and virtio-mem grow/shrink, driven by vmact (hotplug/) and,
 * in the same run on identical guests, by virsh commands as an operator
 * would script them (virsh setvcpus --live, virsh update-memory-device
 * --live, then poll the guest's report).
 *
 * "Guest-observed" = the guest's own status line (tests/guest/init, every
 * 20 ms here) shows the new CPU count / MemTotal. Both sides are measured
 * with the same poller, so the quantisation is the same for both.
 *
 * vCPU unplug on libvirt 9.0 + QEMU 7.2 TCG leaves libvirt unable to touch
 * that VM's vCPUs again (see hotplug/hotplug.h), so every vCPU iteration
 * uses a fresh pair of guests: plug 1->2, then unplug 2->1.
 *
 * Usage: hotplug-bench [ITERATIONS]   (default 10; needs root, make guest)
 * Prints a table and ends with "ratio: X" = vmact vCPU-plug p50 / virsh p50. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/samples.h"
#include "tests/lib/wait.h"

#define MIB_KIB 1024UL

enum { OP_VCPU_PLUG, OP_VCPU_UNPLUG, OP_MEM_GROW, OP_MEM_SHRINK, N_OPS };
static const char *const op_names[N_OPS] = { "vcpu-plug 1->2", "vcpu-unplug 2->1",
					     "virtio-mem grow 0->512Mi",
					     "virtio-mem shrink 512Mi->0" };

static struct th_samples vmact_s[N_OPS], virsh_s[N_OPS];
static sd_event *ev;
static struct hp_conn *hp;
static bool op_finished;
static int op_rc;

static void on_event(struct hp_conn *c, const struct hp_event *e, void *ud)
{
}

static void on_op(struct hp_conn *c, const char *uuid, const struct hp_op_result *res, void *ud)
{
	op_finished = true;
	op_rc = res->rc;
}

struct want {
	bool cpus;
	unsigned long value;
};

static bool report_matches(const struct tg_report *r, const void *arg)
{
	const struct want *w = arg;

	return w->cpus ? r->cpus == w->value : r->memtotal_kb == w->value;
}

/* Polls the guest until it reports `w`, running the sd-event loop so vmact's
 * completions are processed meanwhile. Returns seconds since t0, or -1. */
static double wait_guest(const struct tg_guest *g, double t0, const struct want *w)
{
	for (;;) {
		struct tg_report r;

		if (tg_report(g, &r) && report_matches(&r, w))
			return th_now_s() - t0;
		if (th_now_s() - t0 > 60)
			return -1;
		sd_event_run(ev, 2000);
	}
}

/* Lets a still-running vmact op finish (vCPU unplug: libvirt's 5 s wait). */
static void drain_op(void)
{
	TH_WAIT(ev, op_finished, 120 * VMACT_USEC_PER_SEC);
}

static double vmact_op(const struct tg_guest *g, const struct hp_op_req *req, const struct want *w)
{
	struct vmact_err err = { 0 };
	double t0 = th_now_s(), dt;

	op_finished = false;
	if (hp_op_start(hp, g->uuid, req, on_op, NULL, &err) < 0) {
		fprintf(stderr, "hotplug-bench: %s\n", err.msg);
		return -1;
	}
	dt = wait_guest(g, t0, w);
	drain_op();
	return dt;
}

static double virsh_op(const struct tg_guest *g, const char *const argv[], const struct want *w)
{
	/* The unplug's "timed out" error is expected; keep the table clean. */
	static const struct th_spawn_opts quiet = { .out = TH_OUT_NULL, .err = TH_OUT_NULL };
	double t0 = th_now_s(), dt;
	struct th_proc virsh;
	int r = th_spawn(&virsh, argv, &quiet);

	if (r < 0) {
		fprintf(stderr, "hotplug-bench: virsh: %s\n", strerror(-r));
		return -1;
	}
	dt = wait_guest(g, t0, w);
	/* setvcpus blocks for libvirt's 5 s unplug wait: let it end before
	 * the next step, as a script would. */
	th_proc_wait(&virsh);
	return dt;
}

/* A latency in s, kept in ms; a failed operation (< 0) is dropped. */
static void add(struct th_samples *s, double v)
{
	th_samples_add(s, v < 0 ? v : v * 1000.0);
}

static virConnectPtr vc;

/* Other users of this host may restart libvirtd: tg_boot_first reopens
 * the bench's own connection when it died (hp_conn reconnects by itself). */
static int boot(const char *prefix, struct tg_guest *g, struct tg_report *r)
{
	char msg[512];

	if (tg_boot_first(&vc, prefix, NULL, getenv("VMACT_GUEST_TEMPLATE"),
			  getenv("VMACT_GUEST_CMDLINE"), g, r, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "hotplug-bench: %s\n", msg);
		return -1;
	}
	return 0;
}

/* Both guests of a pair boot back to back; let the second one's boot tail
 * pass (one second of reports from each) so that neither side measures
 * while the other guest still competes for the host's CPUs. */
static void settle(const struct tg_guest *a, struct tg_report *ra, const struct tg_guest *b,
		   struct tg_report *rb)
{
	tg_wait(a, ra->seq + 50, NULL, NULL, 30, ra);
	tg_wait(b, rb->seq + 50, NULL, NULL, 30, rb);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 10;
	struct vmact_err err = { 0 };
	int rc = 1;

	if (iters < 1 || iters > 200) {
		fprintf(stderr, "usage: hotplug-bench [ITERATIONS 1..200]\n");
		return 2;
	}
	/* 20 ms guest report interval for resolution. */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=0.02", 0);
	if (sd_event_new(&ev) < 0 || hp_conn_new(ev, NULL, on_event, NULL, &hp, &err) < 0) {
		fprintf(stderr, "hotplug-bench: %s\n", err.msg);
		return 1;
	}

	printf("hotplug-bench: %d iterations per operation, TCG guests, guest-observed latency\n",
	       iters);
	for (int i = 0; i < iters; i++) {
		struct tg_guest a = { 0 }, b = { 0 };
		struct tg_report ra, rb;
		struct hp_op_req req = { .kind = HP_OP_SET_VCPUS, .timeout_ms = 30000 };
		struct want w = { .cpus = true };
		char two[] = "2", one[] = "1";

		if (boot("vmact-hpb", &a, &ra) < 0 || boot("vmact-hpb", &b, &rb) < 0)
			goto out_guests_vcpu;
		settle(&a, &ra, &b, &rb);
		{
			const char *plug[] = { "virsh",    "-q",   "-c", HP_URI_DEFAULT,
					       "setvcpus", b.name, two,  "--live",
					       NULL };
			const char *unplug[] = { "virsh",    "-q",   "-c", HP_URI_DEFAULT,
						 "setvcpus", b.name, one,  "--live",
						 NULL };

			/* Alternate who goes first so drift hits both sides. */
			for (int side = 0; side < 2; side++) {
				if ((side ^ (i & 1)) == 0) {
					req.vcpus = 2;
					w.value = 2;
					add(&vmact_s[OP_VCPU_PLUG], vmact_op(&a, &req, &w));
					req.vcpus = 1;
					w.value = 1;
					add(&vmact_s[OP_VCPU_UNPLUG], vmact_op(&a, &req, &w));
				} else {
					w.value = 2;
					add(&virsh_s[OP_VCPU_PLUG], virsh_op(&b, plug, &w));
					w.value = 1;
					add(&virsh_s[OP_VCPU_UNPLUG], virsh_op(&b, unplug, &w));
				}
			}
		}
		tg_destroy(&a);
		tg_destroy(&b);
		fprintf(stderr, "  vcpu iteration %d/%d done\n", i + 1, iters);
		continue;
out_guests_vcpu:
		tg_destroy(&a);
		tg_destroy(&b);
		goto table;
	}

	{
		struct tg_guest a = { 0 }, b = { 0 };
		struct tg_report ra, rb;
		struct hp_op_req req = { .kind = HP_OP_VIRTIO_MEM, .timeout_ms = 60000 };
		struct want wa = { .cpus = false }, wb = { .cpus = false };

		if (boot("vmact-hpb", &a, &ra) < 0 || boot("vmact-hpb", &b, &rb) < 0) {
			tg_destroy(&a);
			tg_destroy(&b);
			goto table;
		}
		settle(&a, &ra, &b, &rb);
		for (int i = 0; i < iters; i++) {
			const char *grow[] = { "virsh",
					       "-q",
					       "-c",
					       HP_URI_DEFAULT,
					       "update-memory-device",
					       b.name,
					       "--requested-size",
					       "512MiB",
					       "--live",
					       NULL };
			const char *shrink[] = { "virsh",
						 "-q",
						 "-c",
						 HP_URI_DEFAULT,
						 "update-memory-device",
						 b.name,
						 "--requested-size",
						 "0",
						 "--live",
						 NULL };

			for (int side = 0; side < 2; side++) {
				if ((side ^ (i & 1)) == 0) {
					req.requested_kib = 512 * MIB_KIB;
					wa.value = ra.memtotal_kb + 512 * MIB_KIB;
					add(&vmact_s[OP_MEM_GROW], vmact_op(&a, &req, &wa));
					req.requested_kib = 0;
					wa.value = ra.memtotal_kb;
					add(&vmact_s[OP_MEM_SHRINK], vmact_op(&a, &req, &wa));
				} else {
					wb.value = rb.memtotal_kb + 512 * MIB_KIB;
					add(&virsh_s[OP_MEM_GROW], virsh_op(&b, grow, &wb));
					wb.value = rb.memtotal_kb;
					add(&virsh_s[OP_MEM_SHRINK], virsh_op(&b, shrink, &wb));
				}
			}
		}
		tg_destroy(&a);
		tg_destroy(&b);
	}

table:
	printf("\n%-28s %10s %10s %10s %10s %6s\n", "operation (ms)", "vmact p50", "vmact p99",
	       "virsh p50", "virsh p99", "n");
	for (int o = 0; o < N_OPS; o++) {
		size_t n = vmact_s[o].n < virsh_s[o].n ? vmact_s[o].n : virsh_s[o].n;

		printf("%-28s %10.1f %10.1f %10.1f %10.1f %3zu/%zu\n", op_names[o],
		       th_samples_pct(&vmact_s[o], 50), th_samples_pct(&vmact_s[o], 99),
		       th_samples_pct(&virsh_s[o], 50), th_samples_pct(&virsh_s[o], 99), n,
		       (size_t)iters);
	}
	for (int o = 0; o < N_OPS; o++)
		if (vmact_s[o].n < (size_t)iters || virsh_s[o].n < (size_t)iters)
			fprintf(stderr,
				"hotplug-bench: %s: only %zu/%zu samples (see errors above)\n",
				op_names[o], vmact_s[o].n, virsh_s[o].n);
	if (vmact_s[OP_VCPU_PLUG].n && virsh_s[OP_VCPU_PLUG].n) {
		printf("ratio: %.2f\n", th_samples_pct(&vmact_s[OP_VCPU_PLUG], 50) /
						th_samples_pct(&virsh_s[OP_VCPU_PLUG], 50));
		rc = 0;
	} else {
		printf("ratio: n/a (no vCPU plug completed)\n");
	}
	if (vc)
		virConnectClose(vc);
	hp_conn_free(hp);
	sd_event_unref(ev);
	return rc;
}
