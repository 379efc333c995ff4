/* SPDX-License-Identifier: Apache-2.0 */
/* VMs without any agent (issue 17, doc/policy.md "Without an agent"): the
 * real daemon (build[/san]/vmactd) with its defaults (but the arbiter's
 * declared capacity: the three guests' minima exceed this 2-CPU host's),
 * real TCG guests (tests/guest) that run no vm-monitor and no informant,
 * and no monitor peer anywhere. vmactd scales them both ways on the
 * host's own evidence:
 *
 *   agentless_cpu     guest N (no balloon, 768Mi plugged, bounds 1-4 CPUs /
 *                     512Mi-1536Mi): busy 2 -> it grows as with a monitor;
 *                     idle -> back at its 1-CPU minimum (its quota; vCPUs
 *                     kept), a shrink decided on BPF's figures and approved
 *                     by the host, as vmactd's control API reports it;
 *                     busy 2 again -> it grows again. Without balloon
 *                     statistics its memory stays at 768Mi through all of
 *                     it, and vmactd says so once, with the fix.
 *   agentless_memory  guest M (balloon, stats every second, 512Mi) allocates
 *                     in four steps of 300 MiB at 64 MiB/s up to 1200 MiB,
 *                     78 % of its 1536Mi maximum: memory is added before the
 *                     guest has used what it had, and its OOM killer never
 *                     fires (the guest's console: its status line counts
 *                     the kernel's oom_kill, and the kernel's own OOM lines
 *                     would be there); freed, it goes back to its minimum,
 *                     within the headroom of what it uses. Beside it guest
 *                     U, whose virtio-mem driver keeps its online memory
 *                     ("mem-hold on", as a guest whose memory cannot be
 *                     offlined): grown by an allocation, then freed, it is
 *                     left at its size, with one warning and the back-off.
 *
 * Every resize stays within the bounds. VMACT_TEST_ONLY=NAME runs one
 * test. Conditions are awaited with generous safety limits; nothing is
 * timed. */
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
#include <jansson.h>

#include "base/quantity.h"
#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/ctl.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX        "vmact-noagent"
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 300.0
#define MiB           (1024ULL * 1024ULL)
#define META_BOUNDS                                                    \
	"<vmact:cpu min='1' max='4'/>"                                 \
	"<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>" \
	"<vmact:compute-unit cpu='250m' memory='256Mi'/>"
/* The allocation: 4 steps of STEP_MIB at RATE MiB/s, 78 % of the max. */
#define STEPS    4
#define STEP_MIB 300
#define RATE     "64"

enum { G_N, G_M, G_U, N_GUESTS };
static const char *const label[N_GUESTS] = { "N", "M", "U" };

static struct {
	virConnectPtr vc;
	struct tg_guest g[N_GUESTS];
	/* vmactd with guest N, M and U; its scratch directory holds the
	 * guests' domain templates too. */
	struct th_vmactd d;
	char tpl_n[128], tpl_b[128];
} fx;

/* pred(arg) within limit_s, or (vmactd exits meanwhile) false, the log's
 * tail then printed. */
static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.d, pred, arg, limit_s);
}

/* Run beside the other guests' starts (tg_start_each). */
static int start_guest(unsigned gi)
{
	char meta[1024], msg[512];

	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" META_BOUNDS
		 "</vmact:autoscaling>");
	/* One status line a second where the CPU is measured (the reporter's
	 * own load is the idle load vmactd sees), twice a second where the
	 * memory is followed. */
	if (tg_start_template(fx.vc, PREFIX, meta, gi == G_N ? fx.tpl_n : fx.tpl_b,
			      gi == G_M ? "vmact.report=0.5" : "vmact.report=1", &fx.g[gi], msg,
			      sizeof(msg)) < 0) {
		print_error("guest %s: %s\n", label[gi], msg);
		return -1;
	}
	return 0;
}

/* N's 256 MiB of virtio-mem plugged at boot, as libvirt has it (its live
 * <current> follows QEMU's size-change events, after the guest). */
static bool n_boot_memory(void *unused)
{
	char *xml = virDomainGetXMLDesc(fx.g[G_N].dom, 0);
	bool ok = xml && strstr(xml, "<current unit='KiB'>262144</current>");

	free(xml);
	return ok;
}

static int setup(void **state)
{
	static const char *const args[] = { "--verbose", NULL };
	char text[256], prefix[64];

	(void)state;
	if (th_vmactd_init(&fx.d, PREFIX, &fx.g[G_N]) < 0 ||
	    th_vmactd_add_guest(&fx.d, &fx.g[G_M]) < 0 ||
	    th_vmactd_add_guest(&fx.d, &fx.g[G_U]) < 0)
		return -1;
	snprintf(fx.tpl_n, sizeof(fx.tpl_n), "%s/n.xml", fx.d.dir);
	snprintf(fx.tpl_b, sizeof(fx.tpl_b), "%s/b.xml", fx.d.dir);
	/* N: no balloon, 256 MiB of its virtio-mem device plugged at boot
	 * (768Mi, above its minimum); M and U: a balloon with statistics
	 * every second, 512Mi. */
	if (tg_template_edit("<requested unit='KiB'>0</requested>",
			     "<requested unit='KiB'>262144</requested>", fx.tpl_n) < 0 ||
	    tg_balloon_template(fx.tpl_b) < 0)
		return -1;
	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc || tg_start_each(N_GUESTS, start_guest) < 0)
		return -1;
	/* vmactd reads N's size from libvirt when it takes the VM over (the
	 * guest has booted by then). */
	if (!wait_until(n_boot_memory, NULL, LIMIT_BOOT_S)) {
		print_error("guest N never booted or never onlined its boot virtio-mem memory\n");
		return -1;
	}
	/* vmactd's defaults; only what keeps it to this test's guests, and
	 * the arbiter's declared capacity: three guests of at least 1 CPU
	 * each are more than this 2-CPU host's 1.8 (as in the demo and
	 * test_daemon's guest metrics, arbiter.overcommit_cpu declares it). */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"overcommit_cpu\":3},\"control\":{\"state_dir\":\"%s\"}}",
		 fx.d.dir);
	if (th_vmactd_config(&fx.d, prefix, text) < 0)
		return -1;
	/* Each guest booted, and all three managed. */
	if (th_vmactd_start(&fx.d, args, N_GUESTS, LIMIT_BOOT_S, 120) < 0)
		return -1;
	/* The kernel's watch by default, the poll under make check-poll. */
	return th_vmactd_on_detection_path(&fx.d) ? 0 : -1;
}

static int teardown(void **state)
{
	int status;

	(void)state;
	status = th_vmactd_stop(&fx.d);
	th_vmactd_teardown(&fx.d);
	if (fx.vc)
		virConnectClose(fx.vc);
	/* The sanitizer build fails a leak with a non-zero status. */
	if (status != 0) {
		print_error("vmactd exited with status %d\n", status);
		return -1;
	}
	return 0;
}

/* ---- what vmactd and the guests report ---- */

/* The VM's document from the control API; fails the test when there is
 * none. */
static json_t *show(int gi)
{
	char msg[512];
	json_t *doc = th_ctl_vm(fx.d.sock, fx.g[gi].name, msg, sizeof(msg));

	if (!doc) {
		th_vmactd_dump_log(&fx.d);
		fail_msg("vmactl show %s: %s", label[gi], msg);
	}
	return doc;
}

static double num(const json_t *doc, const char *path)
{
	double v = -1;

	th_ctl_number(doc, path, &v);
	return v;
}

static const char *text(const json_t *doc, const char *a, const char *b, const char *c)
{
	const json_t *o = json_object_get(doc, a);

	if (b)
		o = json_object_get(o, b);
	if (c)
		o = json_object_get(o, c);
	return json_is_string(o) ? json_string_value(o) : "";
}

static long quota(int gi)
{
	char group[256];

	if (th_log_named_vm_cgroup(fx.d.log, fx.g[gi].name, group, sizeof(group)) < 0)
		return TH_CG_UNKNOWN;
	return th_cg_limit_milli(group);
}

static struct tg_report report(int gi)
{
	struct tg_report r;

	if (!tg_report(&fx.g[gi], &r))
		fail_msg("guest %s reports nothing", label[gi]);
	return r;
}

/* Lines of the daemon's log with needle after "NAME: " of guest gi. */
static unsigned lines(int gi, const char *needle)
{
	char n[512];

	snprintf(n, sizeof(n), "%s: %s", fx.g[gi].name, needle);
	return th_count_in_file(fx.d.log, n);
}

/* Every size vmactd reports having reached for guest gi lies within
 * [min_cpu, max_cpu] x [min_mem, max_mem]; the number of them. */
static unsigned resizes_within(int gi, uint64_t min_cpu, uint64_t max_cpu, uint64_t min_mem,
			       uint64_t max_mem)
{
	char *buf = th_read_file(fx.d.log), *p, needle[256];
	unsigned n = 0;

	assert_non_null(buf);
	snprintf(needle, sizeof(needle), "%s: resized to ", fx.g[gi].name);
	for (p = buf; (p = strstr(p, needle)); p++) {
		char cpu[32], mem[32];
		uint64_t milli, bytes;

		if (sscanf(p + strlen(needle), "%31s CPU / %31s", cpu, mem) != 2 ||
		    vmact_quantity_parse_milli(cpu, &milli, NULL) < 0 ||
		    vmact_quantity_parse_value(mem, &bytes, NULL) < 0) {
			free(buf);
			fail_msg("unparsable line: %.80s", p);
		}
		if (milli < min_cpu || milli > max_cpu || bytes < min_mem || bytes > max_mem) {
			free(buf);
			fail_msg(
				"guest %s resized to %s CPU / %s, outside %llu-%llu m / %llu-%llu MiB",
				label[gi], cpu, mem, (unsigned long long)min_cpu,
				(unsigned long long)max_cpu, (unsigned long long)(min_mem / MiB),
				(unsigned long long)(max_mem / MiB));
		}
		n++;
	}
	free(buf);
	return n;
}

/* ---- agentless_cpu ---- */

static bool n_grown(void *unused)
{
	struct tg_report r;

	return tg_report(&fx.g[G_N], &r) && r.cpus >= 2 && quota(G_N) > 1000;
}

/* Back at the 1-CPU minimum as the control API has it: size, quota and
 * goal at 1 CPU, no resize running, the last change one to 1 CPU for a
 * decision on BPF's figures, the guest idle. */
struct at_min {
	char state[1024];
};

static bool n_at_min(void *arg)
{
	struct at_min *m = arg;
	json_t *doc = th_ctl_vm(fx.d.sock, fx.g[G_N].name, m->state, sizeof(m->state));
	const char *last;
	struct tg_report r;
	bool ok;

	if (!doc)
		return false;
	last = text(doc, "last_change", "reason", NULL);
	ok = num(doc, "using.milli_cpu") == 1000 && num(doc, "quota_milli_cpu") == 1000 &&
	     num(doc, "demand.goal_milli_cpu") == 1000 &&
	     json_is_false(json_object_get(doc, "resizing")) && !strncmp(last, "to 1 CPU / ", 11) &&
	     strstr(last, "(BPF)") && tg_report(&fx.g[G_N], &r) && r.busy == 0;
	{
		char *t = json_dumps(doc, JSON_COMPACT);

		snprintf(m->state, sizeof(m->state), "%s", t ? t : "?");
		free(t);
	}
	json_decref(doc);
	return ok;
}

static void agentless_cpu(void **state)
{
	struct at_min m = { { 0 } };
	json_t *doc;

	(void)state;
	/* Managed with no monitor, both ways on the host's evidence. */
	assert_int_equal(lines(G_N, "no vm-monitor or informant: scaled both ways"), 1);
	assert_int_equal(quota(G_N), 1000);

	assert_int_equal(tg_cmd(&fx.g[G_N], "busy 2"), 0);
	if (!wait_until(n_grown, NULL, LIMIT_SCALE_S))
		fail_msg("guest N never got a second vCPU and more than 1 CPU of quota");
	assert_true(lines(G_N, "cpu saturated: ") + lines(G_N, "cpu throttled: ") > 0);

	assert_int_equal(tg_cmd(&fx.g[G_N], "idle"), 0);
	if (!wait_until(n_at_min, &m, LIMIT_SCALE_S))
		fail_msg("guest N never came back to its minimum; vmactd reports %s", m.state);
	doc = show(G_N);
	assert_string_equal(text(doc, "evidence", "approval", NULL), "host");
	assert_string_equal(text(doc, "evidence", "cpu", "source"), "BPF");
	assert_string_equal(text(doc, "monitor", "kind", NULL), "none");
	assert_string_equal(text(doc, "policy", "shrink", NULL), "quota");
	/* the vCPUs stay plugged: the quota alone went down */
	assert_true(num(doc, "vcpus") >= 2);
	print_message("guest N back at 1 CPU with %.0f vCPUs: %s\n", num(doc, "vcpus"),
		      text(doc, "last_change", "reason", NULL));
	json_decref(doc);

	/* The way back up is still there. */
	assert_int_equal(tg_cmd(&fx.g[G_N], "busy 2"), 0);
	if (!wait_until(n_grown, NULL, LIMIT_SCALE_S))
		fail_msg("guest N did not grow again after its shrink");
	assert_int_equal(tg_cmd(&fx.g[G_N], "idle"), 0);

	/* No balloon statistics: its memory stayed at 768Mi, said once with
	 * the fix, and shown by the control API. */
	assert_true(resizes_within(G_N, 1000, 4000, 768 * MiB, 768 * MiB) >= 2);
	assert_int_equal(lines(G_N, "no guest memory statistics ("), 1);
	assert_int_equal(th_count_in_file(fx.d.log,
					  "its memory stays at 768Mi and does not drive "
					  "scaling; to scale it, add <memballoon "
					  "model='virtio'><stats period='1'/></memballoon>"),
			 1);
	assert_int_equal(report(G_N).memtotal_kb > 0, 1);
	doc = show(G_N);
	assert_string_equal(text(doc, "evidence", "memory", "source"), "none");
	assert_true(strlen(text(doc, "evidence", "memory", "reason")) > 0);
	assert_int_equal(num(doc, "using.mem_bytes"), 768 * MiB);
	json_decref(doc);
}

/* ---- agentless_memory ---- */

/* What the test follows of guest M while it allocates. */
struct ramp {
	unsigned long memtotal0; /* kB before */
	double avail0_mib;       /* MemAvailable before, from the balloon */
	long first_growth_at;    /* MiB held when MemTotal first grew; -1: not yet */
	unsigned long min_avail_kb, max_oom, held;
	unsigned long target; /* MiB to hold */
};

static void follow(struct ramp *rp)
{
	struct tg_report r;

	if (!tg_report(&fx.g[G_M], &r) || !r.has_mem)
		return;
	if (rp->first_growth_at < 0 && r.memtotal_kb > rp->memtotal0)
		rp->first_growth_at = (long)r.alloc_mb;
	if (!rp->min_avail_kb || r.avail_kb < rp->min_avail_kb)
		rp->min_avail_kb = r.avail_kb;
	if (r.oom > rp->max_oom)
		rp->max_oom = r.oom;
	rp->held = r.alloc_mb;
}

static bool ramp_step_held(void *arg)
{
	struct ramp *rp = arg;

	follow(rp);
	return rp->held >= rp->target || rp->max_oom > 0;
}

static bool u_grown(void *mem0)
{
	struct tg_report r;

	return tg_report(&fx.g[G_U], &r) && r.has_mem && r.alloc_mb >= STEP_MIB &&
	       r.memtotal_kb > *(unsigned long *)mem0;
}

/* M back at its 512Mi minimum (vmactd's size and the guest's MemTotal) and
 * no resize running. */
static bool m_at_min(void *mem0)
{
	char msg[256];
	json_t *doc = th_ctl_vm(fx.d.sock, fx.g[G_M].name, msg, sizeof(msg));
	struct tg_report r;
	bool ok = doc && num(doc, "using.mem_bytes") == 512 * MiB &&
		  json_is_false(json_object_get(doc, "resizing")) && tg_report(&fx.g[G_M], &r) &&
		  r.memtotal_kb == *(unsigned long *)mem0;

	json_decref(doc);
	return ok;
}

static bool u_kept(void *unused)
{
	char msg[256];
	json_t *doc;
	bool ok;

	if (!lines(G_U, "the guest kept its memory ("))
		return false;
	doc = th_ctl_vm(fx.d.sock, fx.g[G_U].name, msg, sizeof(msg));
	ok = doc && num(doc, "evidence.memory.kept_by_guest_s") > 0;
	json_decref(doc);
	return ok;
}

static void agentless_memory(void **state)
{
	struct ramp rp = { .first_growth_at = -1 };
	unsigned long u_mem0 = report(G_U).memtotal_kb, u_grown_kb;
	double faults0, faults1;
	json_t *doc;
	char *console;

	(void)state;
	/* U keeps whatever it has onlined, and is grown by an allocation. */
	assert_int_equal(tg_cmd(&fx.g[G_U], "mem-hold on"), 0);
	assert_int_equal(tg_cmd(&fx.g[G_U], "alloc 300"), 0);

	/* M: what it has before. */
	rp.memtotal0 = report(G_M).memtotal_kb;
	doc = show(G_M);
	assert_string_equal(text(doc, "evidence", "memory", "source"), "balloon stats");
	assert_string_equal(text(doc, "evidence", "memory", "policy"), "host");
	rp.avail0_mib = num(doc, "evidence.memory.balloon.available_bytes") / (double)MiB;
	faults0 = num(doc, "evidence.memory.balloon.major_faults");
	assert_true(rp.avail0_mib > 0);
	json_decref(doc);

	/* Four steps, each allocated at 64 MiB/s and held. */
	for (unsigned i = 1; i <= STEPS; i++) {
		assert_int_equal(tg_cmd(&fx.g[G_M], "alloc 300 " RATE), 0);
		rp.target = (unsigned long)i * STEP_MIB;
		if (!wait_until(ramp_step_held, &rp, LIMIT_SCALE_S))
			fail_msg("guest M never held %lu MiB (holds %lu)", rp.target, rp.held);
		if (rp.max_oom) {
			th_vmactd_dump_log(&fx.d);
			fail_msg("guest M's OOM killer fired at step %u", i);
		}
	}
	/* Memory came before the guest had used what it had, and the OOM
	 * killer never fired (nor said anything on the console). */
	console = th_read_file(fx.g[G_M].log);
	assert_non_null(console);
	if (rp.first_growth_at < 0 || (double)rp.first_growth_at >= rp.avail0_mib ||
	    strstr(console, "Out of memory") || strstr(console, "oom-kill")) {
		free(console);
		th_vmactd_dump_log(&fx.d);
		fail_msg("guest M: first growth with %ld MiB held of %.0f MiB available, OOM kills "
			 "%lu",
			 rp.first_growth_at, rp.avail0_mib, rp.max_oom);
	}
	free(console);
	doc = show(G_M);
	faults1 = num(doc, "evidence.memory.balloon.major_faults");
	print_message("guest M: %u x %u MiB at %s MiB/s; memory grew first with %ld MiB held of "
		      "%.0f MiB available; least MemAvailable %lu MiB; now %.0f MiB; major faults "
		      "%.0f; OOM kills %lu\n",
		      STEPS, STEP_MIB, RATE, rp.first_growth_at, rp.avail0_mib,
		      rp.min_avail_kb / 1024, num(doc, "using.mem_bytes") / (double)MiB,
		      faults1 - faults0, rp.max_oom);
	json_decref(doc);

	/* U grew meanwhile. */
	if (!wait_until(u_grown, &u_mem0, LIMIT_SCALE_S))
		fail_msg("guest U never grew for its allocation");
	u_grown_kb = report(G_U).memtotal_kb;

	/* Freed: M back to its minimum, within the headroom of what it uses
	 * (26 MiB + 128 MiB of headroom is less than its 512Mi minimum). */
	assert_int_equal(tg_cmd(&fx.g[G_M], "free"), 0);
	assert_int_equal(tg_cmd(&fx.g[G_U], "free"), 0);
	if (!wait_until(m_at_min, &rp.memtotal0, LIMIT_SCALE_S))
		fail_msg("guest M did not go back to its minimum after freeing its memory");
	assert_int_equal(report(G_M).oom, 0);
	assert_true(lines(G_M, "memory filling: ") >= 1);
	assert_true(resizes_within(G_M, 1000, 4000, 512 * MiB, 1536 * MiB) >= 2);

	/* U kept it: left at its size, one warning, the back-off. */
	if (!wait_until(u_kept, NULL, LIMIT_SCALE_S))
		fail_msg("vmactd never reported that guest U kept its memory");
	{
		char needle[256];

		snprintf(needle, sizeof(needle), "warning: %s: the guest kept its memory",
			 fx.g[G_U].name);
		assert_int_equal(th_count_in_file(fx.d.log, needle), 1);
	}
	assert_int_equal(report(G_U).memtotal_kb, u_grown_kb);
	assert_int_equal(report(G_U).oom, 0);
	assert_true(resizes_within(G_U, 1000, 4000, 512 * MiB, 1536 * MiB) >= 1);
	doc = show(G_U);
	print_message("guest U kept its memory: %.0f MiB, asked again in %.0f s\n",
		      num(doc, "using.mem_bytes") / (double)MiB,
		      num(doc, "evidence.memory.kept_by_guest_s"));
	json_decref(doc);
	assert_int_equal(tg_cmd(&fx.g[G_U], "mem-hold off"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(agentless_cpu),
		cmocka_unit_test(agentless_memory),
	};

	if (!th_root_test("test_agentless", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("agentless", tests, setup, teardown);
}
