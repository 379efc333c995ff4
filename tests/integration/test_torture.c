/* SPDX-License-Identifier: Apache-2.0 */
/* make torture (and its fast version in make check): vmactd SIGKILLed at a
 * random moment of a resize, round after round, each time followed by a new
 * vmactd that must take the VMs over as they are (doc/running.md).
 *
 * Three persistent TCG guests (tests/guest), each with its own Node
 * vm-monitor stand-in (tests/peers/vm-monitor.js, approving every
 * downscale; it serves one connection at a time):
 *   U  virtio-mem, <vmact:policy shrink='unplug'/>: vCPU plug and unplug;
 *      after an unplug its vCPUs are lost for good on TCG (doc/actuation.md,
 *      "vCPU hotplug"), so it is restarted (a fresh boot, one vCPU) after each;
 *   V  virtio-mem, kept at 2 vCPUs: the CFS quota alone goes up and down,
 *      and virtio-mem grows and shrinks;
 *   D  memory in DIMMs: one plugged and unplugged (a DIMM unplug has
 *      crashed QEMU 7.2 here: the round is counted apart and the domain
 *      restarted); in two more kinds QEMU dies during the unplug, killed
 *      by the test: with vmactd (dimm-lost: the new vmactd finds the
 *      domain gone) and alone (dimm-crash: vmactd, alive, must see it).
 * Resizes are driven as an operator would: `vmactl set` pins the bounds of
 * one VM (min = max) to its next size, which forces the resize. The round's
 * kinds come in a fixed order (vcpu-up, quota-down, vmem-up, dimm-up,
 * vcpu-down, quota-up, vmem-down, dimm-down, dimm-lost, dimm-crash), so
 * ten rounds have them all.
 *
 * A round: vmactl set; the daemon's log says "NAME: resizing from"; after a
 * random delay within the kind's window (RNG seeded by VMACT_TORTURE_SEED,
 * else by the clock; printed, so a round can be replayed) vmactd gets
 * SIGKILL; the CFS quota it left must not exceed what the vCPUs QEMU runs
 * can use; a new vmactd starts, and the time until its view (vmactl show
 * --json) equals what QEMU says (QMP query-cpus-fast and
 * query-memory-devices through virsh qemu-monitor-command; libvirt's own
 * vCPU count lags after an unplug) and what the cgroup says is the round's
 * recovery. Then it must bring the VM to its pinned bounds, and the VM
 * must be within them and within the scheduler's last permit, with its
 * quota within its vCPUs and the view still equal to reality.
 *
 * A VM that dies (QEMU crashed or killed): vmactd must say so in its log
 * (`NAME: no longer managed`) if it was managing it, list it no more (a
 * new vmactd that finds it gone comes up without it), and once the domain
 * is restarted manage it again (`NAME: managing (`), its view equal to
 * QEMU and the cgroup, the VM at its bounds within its permit.
 *
 * A kill is "inside the operation" when the log has not yet shown the
 * resize's end: a step started and not ended, or the last step ended
 * short of the pinned size (a shrink goes one compute unit at a time).
 *
 * VMACT_TORTURE_ROUNDS (default 10), VMACT_TORTURE_SEED. Prints every round
 * and at the end: rounds (per kind), kills inside the operation,
 * violations (each described; the test fails on any), rounds that lost
 * the VM, the recovery's p50, p90 and slowest, how long a lost VM took to
 * be managed again. Waits have safety limits only; nothing is timed as an
 * assertion. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/quantity.h"
#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/samples.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX "vmact-tt"
#define MiB    ((uint64_t)1 << 20)
/* Safety limits (a sanitized vmactd on a shared 2-CPU host). */
#define LIMIT_BOOT_S   240.0
#define LIMIT_START_S  90.0  /* vmactl set -> "resizing from" */
#define LIMIT_VIEW_S   120.0 /* new vmactd -> its view equals reality */
#define LIMIT_SETTLE_S 180.0 /* -> the VM at its pinned bounds */

enum { VM_U, VM_V, VM_D, VM_N };
static const char *const vm_role[VM_N] = { "U", "V", "D" };

struct tt_vm {
	struct tg_guest g;
	char mon[128];       /* its vm-monitor's socket */
	struct th_peer peer; /* the vm-monitor: one connection at a time */
	unsigned cpu_milli;  /* its pinned CPU bound (min = max) */
	unsigned mem_mib;    /* its pinned memory bound */
	uint64_t base;       /* QEMU's base memory, bytes */
};

/* What the round's kill takes: vmactd alone; QEMU and vmactd together (a
 * crash of QEMU mid-unplug at the moment vmactd dies: the new vmactd finds
 * the domain gone); QEMU alone (vmactd, alive, must notice it itself). */
enum tt_kill { K_VMACTD, K_QEMU_VMACTD, K_QEMU };

/* One kind of resize: which VM, which bound to which value, the window
 * after "resizing from" in which the kill lands (about the operation's
 * length here, a little more: some kills land after it), what is killed. */
struct tt_kind {
	const char *name;
	int vm;
	bool mem;
	unsigned to;
	unsigned window_ms;
	enum tt_kill kill;
};

static const struct tt_kind kinds[] = {
	{ "vcpu-up", VM_U, false, 2000, 150, K_VMACTD },
	{ "quota-down", VM_V, false, 1000, 20, K_VMACTD },
	{ "vmem-up", VM_V, true, 1024, 1500, K_VMACTD },
	{ "dimm-up", VM_D, true, 768, 120, K_VMACTD },
	{ "vcpu-down", VM_U, false, 1000, 5500, K_VMACTD },
	{ "quota-up", VM_V, false, 2000, 20, K_VMACTD },
	{ "vmem-down", VM_V, true, 512, 1500, K_VMACTD },
	{ "dimm-down", VM_D, true, 512, 2500, K_VMACTD },
	/* A DIMM unplug (D grown by one first) during which QEMU dies: the
	 * unplug ends some tens of ms after the test sees it start here. */
	{ "dimm-lost", VM_D, true, 512, 30, K_QEMU_VMACTD },
	{ "dimm-crash", VM_D, true, 512, 30, K_QEMU },
};
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* What vmactd shows of a VM (vmactl show --json). */
struct tt_view {
	bool ok;
	char state[24];
	long vcpus;
	uint64_t mem;
	long quota; /* TH_CG_UNLIMITED for null */
	bool resizing;
	bool has_permit;
	uint64_t permit_cpu, permit_mem;
};

/* What QEMU and the cgroup say. */
struct tt_real {
	bool alive;
	long vcpus;
	uint64_t mem;
	long quota;
};

static struct {
	/* vmactd (one after the other), its scratch directory (the monitors'
	 * sockets and logs too) and the guests, persistent */
	struct th_vmactd d;
	struct tt_vm vm[VM_N];
	uint64_t rng;
	unsigned violations;
	char summary[8192]; /* the violations, described */
} tt;

/* splitmix64: one seed, the same delays (VMACT_TORTURE_SEED replays). */
static uint64_t rnd(void)
{
	uint64_t z = (tt.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void violation(unsigned round, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = snprintf(line, sizeof(line), "round %u: ", round);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	printf("VIOLATION %s\n", line);
	fflush(stdout);
	tt.violations++;
	if (strlen(tt.summary) + strlen(line) + 4 < sizeof(tt.summary)) {
		strcat(tt.summary, "  ");
		strcat(tt.summary, line);
		strcat(tt.summary, "\n");
	}
}

/* Runs argv with stdout captured (stderr dropped); its exit status. */
static int capture(const char *const argv[], char *buf, size_t cap)
{
	const struct th_spawn_opts o = { .out = TH_OUT_PIPE, .err = TH_OUT_NULL };
	struct th_proc p = { 0 };
	size_t n;

	buf[0] = 0;
	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	n = th_read_fd_all(p.out_fd, buf, cap - 1);
	buf[n] = 0;
	return th_proc_wait(&p);
}

/* QMP through virsh, as an operator would ask QEMU; the "return" member. */
static json_t *qmp(const char *name, const char *cmd)
{
	char buf[16384], req[128];
	const char *argv[] = { "virsh", "-q", "-c", "qemu:///system", "qemu-monitor-command",
			       name,    req,  NULL };
	json_t *doc, *ret;

	snprintf(req, sizeof(req), "{\"execute\":\"%s\"}", cmd);
	if (capture(argv, buf, sizeof(buf)) != 0)
		return NULL;
	doc = json_loads(buf, 0, NULL);
	ret = json_incref(json_object_get(doc, "return"));
	json_decref(doc);
	return ret;
}

static bool dom_active(const char *name)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, name) : NULL;
	bool on = d && virDomainIsActive(d) == 1;

	if (d)
		virDomainFree(d);
	if (vc)
		virConnectClose(vc);
	return on;
}

static void read_real(struct tt_vm *v, struct tt_real *r)
{
	json_t *cpus, *devs, *e;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->vcpus = -1;
	r->quota = TH_CG_UNKNOWN;
	r->alive = dom_active(v->g.name);
	if (!r->alive)
		return;
	if (!v->base) {
		json_t *sum = qmp(v->g.name, "query-memory-size-summary");

		v->base = (uint64_t)json_integer_value(json_object_get(sum, "base-memory"));
		json_decref(sum);
	}
	cpus = qmp(v->g.name, "query-cpus-fast");
	if (json_is_array(cpus))
		r->vcpus = (long)json_array_size(cpus);
	json_decref(cpus);
	devs = qmp(v->g.name, "query-memory-devices");
	r->mem = v->base;
	json_array_foreach(devs, i, e) {
		json_t *d = json_object_get(e, "data");

		/* dimm: its size; virtio-mem: "size" is what is plugged */
		r->mem += (uint64_t)json_integer_value(json_object_get(d, "size"));
	}
	json_decref(devs);
	r->quota = th_vmactd_vm_quota(&tt.d, v->g.name);
	r->alive = dom_active(v->g.name); /* it may have died meanwhile */
}

static uint64_t jint(json_t *o, const char *k)
{
	return (uint64_t)json_integer_value(json_object_get(o, k));
}

static void read_view(const struct tt_vm *v, struct tt_view *w)
{
	char buf[32768];
	const char *argv[] = {
		tt.d.vmactl, "--socket", tt.d.sock, "--json", "show", v->g.name, NULL
	};
	json_t *doc, *q, *p;

	memset(w, 0, sizeof(*w));
	if (capture(argv, buf, sizeof(buf)) != 0 || !(doc = json_loads(buf, 0, NULL)))
		return;
	snprintf(w->state, sizeof(w->state), "%s",
		 json_string_value(json_object_get(doc, "state")) ?: "");
	w->vcpus = (long)json_integer_value(json_object_get(doc, "vcpus"));
	w->mem = jint(doc, "mem_bytes");
	q = json_object_get(doc, "quota_milli_cpu");
	w->quota = json_is_integer(q) ? (long)json_integer_value(q) : TH_CG_UNLIMITED;
	w->resizing = json_is_true(json_object_get(doc, "resizing"));
	p = json_object_get(doc, "permit");
	w->has_permit = json_is_object(p);
	w->permit_cpu = jint(p, "milli_cpu");
	w->permit_mem = jint(p, "mem_bytes");
	w->ok = !strcmp(w->state, "managed") && json_is_integer(json_object_get(doc, "vcpus"));
	json_decref(doc);
}

static bool view_matches(const struct tt_view *w, const struct tt_real *r)
{
	return w->ok && r->alive && w->vcpus == r->vcpus && w->mem == r->mem &&
	       w->quota == r->quota;
}

static void describe(char *buf, size_t len, const struct tt_view *w, const struct tt_real *r)
{
	snprintf(buf, len,
		 "vmactd %s: %ld vCPUs, %" PRIu64 " MiB, quota %ldm; QEMU/cgroup: %ld vCPUs, "
		 "%" PRIu64 " MiB, quota %ldm",
		 w->ok ? w->state : "(no view)", w->vcpus, w->mem / MiB, w->quota, r->vcpus,
		 r->mem / MiB, r->quota);
}

/* The size the VM has: its vCPUs held to its quota. */
static long size_milli(const struct tt_real *r)
{
	long v = r->vcpus * 1000;

	return r->quota >= 0 && r->quota < v ? r->quota : v;
}

/* ---- the daemon ---- */

/* How often needle is in the daemon's log from byte `from` on; *last:
 * where the last one is (-1: none). */
static unsigned log_scan(const char *needle, long from, long *last)
{
	FILE *f = fopen(tt.d.log, "re");
	static char buf[1 << 20];
	unsigned n = 0;
	size_t len;

	*last = -1;
	if (!f)
		return 0;
	if (fseek(f, from, SEEK_SET) < 0) {
		fclose(f);
		return 0;
	}
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = 0;
	for (char *p = buf; (p = strstr(p, needle)); p++) {
		*last = from + (p - buf);
		n++;
	}
	return n;
}

static unsigned log_count_from(const char *needle, long from)
{
	long last;

	return log_scan(needle, from, &last);
}

static bool log_has_from(const char *needle, long from)
{
	return log_count_from(needle, from) > 0;
}

/* A resize started and not ended: a shrink goes one compute unit at a
 * time, each step its own "resizing from". */
static bool op_running(const char *start, const char *done1, const char *done2, long from)
{
	return log_count_from(start, from) >
	       log_count_from(done1, from) + log_count_from(done2, from);
}

static long log_size(void)
{
	struct stat sb;

	return stat(tt.d.log, &sb) == 0 ? (long)sb.st_size : 0;
}

static bool log_has(void *needle)
{
	return log_has_from(needle, 0);
}

/* A line awaited in the running daemon's log from byte `from` on. */
struct tt_mark {
	char needle[160];
	long from;
};

static bool log_after(void *mark)
{
	const struct tt_mark *m = mark;

	return log_has_from(m->needle, m->from);
}

static void start_daemon(void)
{
	const char *args[] = { "--verbose", NULL };

	/* One log per daemon: the last ones stay for a failing round. */
	assert_int_equal(th_vmactd_respawn(&tt.d, args), 0);
	if (tt.d.spawns > 3) {
		char old[192];

		snprintf(old, sizeof(old), "%s/vmactd.%u.log", tt.d.dir, tt.d.spawns - 3);
		unlink(old);
	}
}

static bool managed(void *vmp)
{
	struct tt_view w;

	read_view(vmp, &w);
	return w.ok;
}

/* The VM as the pinned bounds want it, vmactd's view equal to it, no
 * resize running. */
static bool settled(void *vmp)
{
	struct tt_vm *v = vmp;
	struct tt_view w;
	struct tt_real r;

	read_view(v, &w);
	read_real(v, &r);
	return view_matches(&w, &r) && !w.resizing && size_milli(&r) == (long)v->cpu_milli &&
	       r.mem == (uint64_t)v->mem_mib * MiB;
}

/* ---- guests ---- */

static void guest_meta(int i, char *buf, size_t len)
{
	snprintf(buf, len,
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='%s' max='%s'/>"
		 "<vmact:memory min='512Mi' max='512Mi' method='%s'/>"
		 "<vmact:compute-unit cpu='250m' memory='256Mi'/>"
		 "<vmact:monitor endpoint='unix:%.127s'/>%s"
		 "</vmact:autoscaling>",
		 i == VM_V ? "2" : "1", i == VM_V ? "2" : "1", i == VM_D ? "dimm" : "virtio-mem",
		 tt.vm[i].mon, i == VM_U ? "<vmact:policy shrink='unplug'/>" : "");
}

/* Run beside the other guests' starts (tg_start_each). */
static int start_guest(unsigned i)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	struct tt_vm *v = &tt.vm[i];
	char meta[1024], msg[512];
	char *xml;
	virDomainPtr d;

	guest_meta(i, meta, sizeof(meta));
	if (!vc || tg_start(vc, PREFIX, meta, &v->g, msg, sizeof(msg)) < 0) {
		print_error("guest %s: %s\n", vm_role[i], vc ? msg : "no libvirt");
		return -1;
	}
	/* Persistent: a crashed or refreshed guest restarts as itself. */
	xml = virDomainGetXMLDesc(v->g.dom, VIR_DOMAIN_XML_INACTIVE);
	d = xml ? virDomainDefineXML(vc, xml) : NULL;
	free(xml);
	if (!d)
		return -1;
	virDomainFree(d);
	virConnectClose(vc);
	v->cpu_milli = i == VM_V ? 2000 : 1000;
	v->mem_mib = 512;
	return 0;
}

/* Destroys (if running) and starts the domain again from its definition:
 * a fresh boot at the size it was defined with, its vmact metadata as
 * vmactl last set it. */
static int restart_guest(struct tt_vm *v)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, v->g.name) : NULL;
	int r = -1;

	if (d) {
		if (virDomainIsActive(d) == 1)
			virDomainDestroy(d);
		unlink(v->g.log);
		r = virDomainCreate(d);
		virDomainFree(d);
	}
	if (vc)
		virConnectClose(vc);
	/* It boots with one vCPU and no hot-plugged memory; vmactd brings it
	 * to the bounds it keeps in its metadata. */
	v->base = 0;
	return r;
}

/* A guest's fresh boot in the background: after vcpu-down, U is not used
 * again before the next vcpu-up (a cycle of kinds later), so its restart
 * (about 2 s of libvirt destroying and starting it) runs beside the next
 * rounds, as its boot already did, instead of before them. Joined before
 * U's next round, before the VMs that run are counted (dimm-lost), and at
 * the end. */
static struct {
	pthread_t thread;
	bool running;
	struct tt_vm *vm;
	int r;
} bg;

static void *bg_restart_run(void *arg)
{
	(void)arg;
	bg.r = restart_guest(bg.vm);
	return NULL;
}

static int bg_join(void)
{
	if (!bg.running)
		return 0;
	pthread_join(bg.thread, NULL);
	bg.running = false;
	return bg.r;
}

static int bg_restart(struct tt_vm *v)
{
	bg.vm = v;
	bg.running = pthread_create(&bg.thread, NULL, bg_restart_run, NULL) == 0;
	return bg.running ? 0 : restart_guest(v);
}

/* vmactl set NAME: both bounds of one resource to `to`. */
static int pin(struct tt_vm *v, bool mem, unsigned to)
{
	char q[32], out[1024];
	const char *argv[] = { tt.d.vmactl, "--socket",
			       tt.d.sock,   "set",
			       v->g.name,   mem ? "--min-memory" : "--min-cpu",
			       q,           mem ? "--max-memory" : "--max-cpu",
			       q,           NULL };

	if (mem)
		snprintf(q, sizeof(q), "%uMi", to);
	else
		snprintf(q, sizeof(q), "%um", to);
	/* Lowering: max first would be refused below min; one request sets both. */
	return capture(argv, out, sizeof(out));
}

/* ---- set-up ---- */

/* Domains a killed run of this test left defined (its pid is gone). */
static void remove_stale(void)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr *doms = NULL;
	int n = vc ? virConnectListAllDomains(vc, &doms, 0) : 0;

	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);
		int pid;

		if (name && sscanf(name, PREFIX "-%d-", &pid) == 1 && kill(pid, 0) < 0 &&
		    errno == ESRCH) {
			if (virDomainIsActive(doms[i]) == 1)
				virDomainDestroy(doms[i]);
			virDomainUndefine(doms[i]);
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	if (vc)
		virConnectClose(vc);
}

static int setup(void **state)
{
	char msg[512], peer_log[128], prefix[64], dir[sizeof(tt.d.dir)];

	(void)state;
	remove_stale();
	if (th_vmactd_init(&tt.d, PREFIX, NULL) < 0)
		return -1;
	tt.d.persistent = true;
	/* A copy: the paths are written into the same tt. */
	memcpy(dir, tt.d.dir, sizeof(dir));
	for (int i = 0; i < VM_N; i++) {
		if (th_vmactd_add_guest(&tt.d, &tt.vm[i].g) < 0)
			return -1;
		snprintf(tt.vm[i].mon, sizeof(tt.vm[i].mon), "%s/monitor-%s.sock", dir, vm_role[i]);
	}
	/* One status line a second: an idle guest stays idle. */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	if (tg_start_each(VM_N, start_guest) < 0)
		return -1;
	/* The monitors while the guests boot (vmactd, which connects to
	 * them, starts once the guests run). */
	for (int i = 0; i < VM_N; i++) {
		const char *peer_args[] = { "--unix", tt.vm[i].mon, "--no-cgroup", NULL };

		snprintf(peer_log, sizeof(peer_log), "%s/monitor-%s.log", dir, vm_role[i]);
		if (th_peer_start(&tt.vm[i].peer, "vm-monitor.js", peer_args, peer_log, msg,
				  sizeof(msg)) < 0) {
			print_error("%s\n", msg);
			return -1;
		}
	}
	/* The arbiter's capacity covers the three VMs' largest sizes (5 CPUs
	 * on this 2-CPU host); no metrics listener to collide with others. */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	return th_vmactd_config(
		&tt.d, prefix,
		"{\"arbiter\":{\"overcommit_cpu\":4},\"metrics\":{\"listen\":\"\"}}");
}

static int teardown(void **state)
{
	(void)state;
	bg_join(); /* a failed test's */
	th_vmactd_stop(&tt.d);
	for (int i = 0; i < VM_N; i++)
		th_peer_stop(&tt.vm[i].peer);
	tt.d.keep = tt.violations > 0;
	if (tt.d.keep || getenv("VMACT_TEST_KEEP_LOG"))
		printf("torture: logs kept in %s\n", tt.d.dir);
	/* The guests destroyed and undefined all at once. */
	th_vmactd_teardown(&tt.d);
	return 0;
}

/* ---- a round ---- */

struct tt_stats {
	unsigned rounds, lost, lost_killed, inside, per_kind[N_KINDS];
	struct th_samples rec; /* new vmactd -> its view equal to reality */
	double slowest;
	unsigned slowest_round;
	const char *slowest_kind;
	struct th_samples back; /* a lost VM restarted -> managed, view equal */
};

/* The checks that hold whatever happens: the quota within the vCPUs. */
static void check_quota(unsigned round, const struct tt_real *r, const char *when)
{
	if (r->alive && r->quota >= 0 && r->vcpus > 0 && r->quota > 1000 * r->vcpus)
		violation(round, "%s: quota %ldm with %ld vCPUs", when, r->quota, r->vcpus);
}

/* The VM once settled: within its pinned bounds and its last permit, its
 * quota within its vCPUs. */
static void check_settled(unsigned round, struct tt_vm *v)
{
	struct tt_view w;
	struct tt_real r;

	read_view(v, &w);
	read_real(v, &r);
	check_quota(round, &r, "settled");
	if (r.alive &&
	    (size_milli(&r) != (long)v->cpu_milli || r.mem != (uint64_t)v->mem_mib * MiB))
		violation(round, "%s outside its bounds %um / %u MiB: %ldm / %" PRIu64 " MiB",
			  v->g.name, v->cpu_milli, v->mem_mib, size_milli(&r), r.mem / MiB);
	if (w.has_permit && r.alive &&
	    ((uint64_t)size_milli(&r) > w.permit_cpu || r.mem > w.permit_mem))
		violation(round,
			  "%s above its permit %" PRIu64 "m / %" PRIu64 " MiB: %ldm / %" PRIu64
			  " MiB",
			  v->g.name, w.permit_cpu, w.permit_mem / MiB, size_milli(&r), r.mem / MiB);
}

/* The VM died: vmactd reports it (the running daemon's log says `NAME: no
 * longer managed` from byte log_from of its log on, 0: after its last
 * `NAME: managing (`; log_from < 0: this daemon never managed it) and no
 * longer lists it; the domain is restarted; vmactd logs `NAME: managing (`
 * again, its view equals QEMU's and the cgroup's, and the VM reaches its
 * bounds within its permit. */
static void lost_vm(unsigned round, struct tt_vm *v, struct tt_stats *s, long log_from)
{
	struct tt_mark gone, back;
	struct tt_view w;
	double t0;

	s->lost++;
	printf("round %u: %s lost (QEMU gone)\n", round, v->g.name);
	fflush(stdout);
	snprintf(gone.needle, sizeof(gone.needle), "%s: managing (", v->g.name);
	if (log_from == 0) {
		long last;

		log_scan(gone.needle, 0, &last);
		log_from = last > 0 ? last : 0;
	}
	snprintf(gone.needle, sizeof(gone.needle), "%s: no longer managed", v->g.name);
	gone.from = log_from;
	if (log_from >= 0 && !th_wait_daemon(&tt.d.proc, log_after, &gone, 60))
		violation(round, "vmactd never reported that %s stopped", v->g.name);
	if (th_proc_exited(&tt.d.proc)) {
		violation(round, "vmactd exited (status %d) when %s's QEMU died", tt.d.proc.status,
			  v->g.name);
		th_print_log_tail(tt.d.log, "vmactd log", 3000);
		start_daemon();
	}
	read_view(v, &w);
	if (w.ok)
		violation(round, "vmactd still lists %s as managed with its QEMU gone", v->g.name);
	snprintf(back.needle, sizeof(back.needle), "%s: managing (", v->g.name);
	back.from = log_size();
	if (restart_guest(v) < 0) {
		violation(round, "cannot restart %s", v->g.name);
		return;
	}
	t0 = th_now_s();
	if (!th_wait_daemon(&tt.d.proc, tg_booted, &v->g, LIMIT_BOOT_S) ||
	    !th_wait_daemon(&tt.d.proc, log_after, &back, LIMIT_VIEW_S) ||
	    !th_wait_daemon(&tt.d.proc, settled, v, LIMIT_VIEW_S + LIMIT_SETTLE_S)) {
		struct tt_real r;
		char what[400];

		read_view(v, &w);
		read_real(v, &r);
		describe(what, sizeof(what), &w, &r);
		violation(round, "%s restarted: vmactd does not manage it as QEMU has it: %s",
			  v->g.name, what);
		th_print_log_tail(tt.d.log, "vmactd log", 3000);
		return;
	}
	th_samples_add(&s->back, th_now_s() - t0);
	printf("round %u: %s restarted, managed again and at its bounds after %.2f s\n", round,
	       v->g.name, th_now_s() - t0);
	fflush(stdout);
	check_settled(round, v);
}

static bool dom_gone(void *vmp)
{
	return !dom_active(((struct tt_vm *)vmp)->g.name);
}

/* The new vmactd, QEMU having died with the old one: it comes up managing
 * the VMs that run, without the lost one. */
static void start_daemon_without(unsigned round, struct tt_vm *v)
{
	char needle[64];
	unsigned running = 0;
	struct tt_view w;

	if (!th_wait_daemon(&tt.d.proc, dom_gone, v, 60))
		violation(round, "%s: libvirt still runs the domain after its QEMU was killed",
			  v->g.name);
	if (bg_join() < 0)
		violation(round, "cannot restart %s", bg.vm->g.name);
	for (int i = 0; i < VM_N; i++)
		running += dom_active(tt.vm[i].g.name);
	start_daemon();
	if (!th_wait_daemon(&tt.d.proc, log_has, "ready: managing", LIMIT_VIEW_S)) {
		violation(round, "the new vmactd did not become ready");
		th_print_log_tail(tt.d.log, "vmactd log", 3000);
		return;
	}
	snprintf(needle, sizeof(needle), "ready: managing %u VM%s\n", running,
		 running == 1 ? "" : "s");
	if (!log_has(needle))
		violation(round, "the new vmactd does not say \"%.*s\"", (int)strlen(needle) - 1,
			  needle);
	read_view(v, &w);
	if (w.ok)
		violation(round, "the new vmactd lists %s as managed with its QEMU gone",
			  v->g.name);
}

/* The log says the operation ended: no step running, and the last one
 * brought the VM to its pinned size (a shrink goes one compute unit at a
 * time, each step its own "resizing from"; between two steps the
 * operation is still under way). */
static bool op_ended(const struct tt_vm *v, long from)
{
	char start[160], done1[160], done2[160], reached[200], c[32], m[32];

	snprintf(start, sizeof(start), "%s: resizing from ", v->g.name);
	snprintf(done1, sizeof(done1), "%s: resized to ", v->g.name);
	snprintf(done2, sizeof(done2), "%s: resize to ", v->g.name);
	vmact_quantity_format_milli(v->cpu_milli, c, sizeof(c));
	vmact_quantity_format_bytes((uint64_t)v->mem_mib * MiB, m, sizeof(m));
	snprintf(reached, sizeof(reached), "%s: resized to %s CPU / %s\n", v->g.name, c, m);
	return !op_running(start, done1, done2, from) && log_has_from(reached, from);
}

static void print_kill(unsigned round, const struct tt_kind *k, const struct tt_vm *v,
		       unsigned delay, bool inside, long op_ms)
{
	static const char *const what[] = { "kill", "QEMU+vmactd kill", "QEMU kill" };

	printf("round %u: %-10s %s %s %u ms after the start (", round, k->name, v->g.name,
	       what[k->kill], delay);
	if (inside)
		printf("inside the operation)");
	else if (op_ms >= 0)
		printf("after the operation, which ended after %ld ms)", op_ms);
	else
		printf("after the operation)");
}

/* A DIMM to unplug: the VM grown by one compute unit (no kill). */
static bool grow_first(unsigned round, struct tt_vm *v, const struct tt_kind *k)
{
	if (v->mem_mib > k->to)
		return true;
	if (pin(v, true, k->to + 256) != 0) {
		violation(round, "vmactl set %s refused", v->g.name);
		return false;
	}
	v->mem_mib = k->to + 256;
	if (!th_wait_daemon(&tt.d.proc, settled, v, LIMIT_SETTLE_S)) {
		violation(round, "%s not grown to %u MiB before the round", v->g.name, v->mem_mib);
		return false;
	}
	return true;
}

static void round_run(unsigned round, struct tt_stats *s)
{
	const struct tt_kind *k = &kinds[(round - 1) % N_KINDS];
	struct tt_vm *v = &tt.vm[k->vm];
	unsigned delay = (unsigned)(rnd() % (k->window_ms + 1));
	char needle[160], what[400];
	struct tt_view w;
	struct tt_real r;
	long from, op_ms;
	double t0, rec;
	bool inside, knew;
	pid_t qemu = 0;

	if (bg.running && bg.vm == v && bg_join() < 0)
		violation(round, "cannot restart %s", v->g.name);
	/* The VM is where the last round left it (a fresh boot may still be
	 * under way). */
	if (!th_wait_daemon(&tt.d.proc, tg_booted, &v->g, LIMIT_BOOT_S) ||
	    !th_wait_daemon(&tt.d.proc, settled, v, LIMIT_SETTLE_S)) {
		read_view(v, &w);
		read_real(v, &r);
		describe(what, sizeof(what), &w, &r);
		violation(round, "%s not settled before the round: %s", v->g.name, what);
		if (!r.alive)
			lost_vm(round, v, s, 0);
		return;
	}
	if (k->kill != K_VMACTD) {
		if (!grow_first(round, v, k))
			return;
		qemu = tg_qemu_pid(v->g.name);
		if (qemu <= 0) {
			violation(round, "%s: no QEMU pid: %s", v->g.name, strerror(-qemu));
			return;
		}
	}
	snprintf(needle, sizeof(needle), "%s: resizing from ", v->g.name);
	from = log_size();
	if (pin(v, k->mem, k->to) != 0) {
		violation(round, "vmactl set %s refused", v->g.name);
		return;
	}
	if (k->mem)
		v->mem_mib = k->to;
	else
		v->cpu_milli = k->to;
	/* Polled every millisecond: the kill lands `delay` after the start. */
	t0 = th_now_s() + LIMIT_START_S;
	while (!log_has_from(needle, from)) {
		if (th_now_s() > t0 || th_proc_exited(&tt.d.proc)) {
			violation(round, "%s: vmactd never started the %s resize", v->g.name,
				  k->name);
			th_print_log_tail(tt.d.log, "vmactd log", 3000);
			th_proc_stop(&tt.d.proc, SIGKILL, 0);
			start_daemon();
			return;
		}
		usleep(1000);
	}
	/* Meanwhile: when the operation ended, if it did (the daemon's log). */
	t0 = th_now_s();
	op_ms = -1;
	while (th_now_s() - t0 < delay / 1000.0) {
		bool ended = op_ended(v, from);

		if (op_ms < 0 && ended)
			op_ms = (long)((th_now_s() - t0) * 1000);
		else if (op_ms >= 0 && !ended)
			op_ms = -1; /* the next step started */
		usleep(1000);
	}
	if (k->kill != K_VMACTD && kill(qemu, SIGKILL) < 0)
		violation(round, "%s: cannot kill its QEMU (pid %d): %s", v->g.name, (int)qemu,
			  strerror(errno));
	if (k->kill != K_QEMU)
		th_proc_stop(&tt.d.proc, SIGKILL, 0);
	inside = !op_ended(v, from);
	s->inside += inside;
	s->per_kind[(round - 1) % N_KINDS]++;
	if (k->kill != K_VMACTD) {
		s->lost_killed++;
		print_kill(round, k, v, delay, inside, op_ms);
		printf("\n");
		fflush(stdout);
		if (k->kill == K_QEMU_VMACTD) {
			start_daemon_without(round, v);
			lost_vm(round, v, s, -1);
		} else {
			/* The daemon that managed it is alive: it says so. */
			lost_vm(round, v, s, from);
		}
		return;
	}
	read_real(v, &r);
	check_quota(round, &r, "left by the killed vmactd");

	start_daemon();
	t0 = th_now_s();
	rec = -1;
	knew = false;
	while (th_now_s() - t0 < LIMIT_VIEW_S && !th_proc_exited(&tt.d.proc)) {
		read_view(v, &w);
		read_real(v, &r);
		knew = knew || w.ok;
		if (!r.alive)
			break;
		check_quota(round, &r, "after the restart");
		if (view_matches(&w, &r)) {
			rec = th_now_s() - t0;
			break;
		}
		usleep(100000);
	}
	print_kill(round, k, v, delay, inside, op_ms);
	if (!r.alive) {
		printf(", VM lost\n");
		fflush(stdout);
		lost_vm(round, v, s, knew ? 0 : -1);
		return;
	}
	if (rec < 0) {
		printf("\n");
		if (th_proc_exited(&tt.d.proc))
			violation(round, "the new vmactd exited with status %d", tt.d.proc.status);
		describe(what, sizeof(what), &w, &r);
		violation(round, "%s: the new vmactd's view never matched: %s", v->g.name, what);
		th_print_log_tail(tt.d.log, "vmactd log", 3000);
		return;
	}
	printf(", recovered in %.2f s\n", rec);
	fflush(stdout);
	th_samples_add(&s->rec, rec);
	if (rec > s->slowest) {
		s->slowest = rec;
		s->slowest_round = round;
		s->slowest_kind = k->name;
	}

	/* The new vmactd finishes the job: the VM at its bounds. */
	if (!th_wait_daemon(&tt.d.proc, settled, v, LIMIT_SETTLE_S)) {
		read_view(v, &w);
		read_real(v, &r);
		if (!r.alive) {
			lost_vm(round, v, s, 0);
			return;
		}
		describe(what, sizeof(what), &w, &r);
		violation(round, "%s not brought to %um CPU / %u MiB: %s", v->g.name, v->cpu_milli,
			  v->mem_mib, what);
	}
	check_settled(round, v);
	/* After an unplug the guest's vCPUs cannot come back: a fresh boot. */
	if (!strcmp(k->name, "vcpu-down") && bg_restart(v) < 0)
		violation(round, "cannot restart %s", v->g.name);
}

static void torture(void **state)
{
	const char *e = getenv("VMACT_TORTURE_ROUNDS");
	unsigned rounds = e && atoi(e) > 0 ? (unsigned)atoi(e) : N_KINDS;
	uint64_t seed;
	struct tt_stats s = { 0 };
	double t_start = th_now_s();

	(void)state;
	e = getenv("VMACT_TORTURE_SEED");
	seed = e && e[0] ? strtoull(e, NULL, 0)
			 : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	tt.rng = seed;
	printf("torture: %u rounds, VMACT_TORTURE_SEED=%" PRIu64 " (%s vmactd)\n", rounds, seed,
	       strstr(tt.d.prog, "/san/") ? "sanitized" : "plain");
	fflush(stdout);

	for (int i = 0; i < VM_N; i++)
		if (!th_wait_daemon(&tt.d.proc, tg_booted, &tt.vm[i].g, LIMIT_BOOT_S))
			fail_msg("guest %s did not boot", vm_role[i]);
	start_daemon();
	if (!th_wait_daemon(&tt.d.proc, log_has, "ready: managing", LIMIT_VIEW_S)) {
		th_print_log_tail(tt.d.log, "vmactd log", 4000);
		fail_msg("vmactd did not become ready");
	}
	for (int i = 0; i < VM_N; i++)
		if (!th_wait_daemon(&tt.d.proc, managed, &tt.vm[i], LIMIT_VIEW_S) ||
		    !th_wait_daemon(&tt.d.proc, settled, &tt.vm[i], LIMIT_SETTLE_S)) {
			th_print_log_tail(tt.d.log, "vmactd log", 4000);
			fail_msg("guest %s never settled at its bounds", vm_role[i]);
		}

	for (unsigned round = 1; round <= rounds; round++) {
		round_run(round, &s);
		s.rounds++;
	}
	if (bg_join() < 0)
		violation(rounds, "cannot restart %s", bg.vm->g.name);

	printf("torture: rounds %u (", s.rounds);
	for (size_t i = 0; i < N_KINDS; i++)
		printf("%s%s %u", i ? ", " : "", kinds[i].name, s.per_kind[i]);
	printf("), kills inside the operation %u, violations %u, rounds that lost the VM %u "
	       "(QEMU killed by the test in %u), recovery p50 %.2f s, p90 %.2f s, slowest %.2f s "
	       "(round %u, %s)",
	       s.inside, tt.violations, s.lost, s.lost_killed, th_samples_pct(&s.rec, 50),
	       th_samples_pct(&s.rec, 90), s.slowest, s.slowest_round,
	       s.slowest_kind ? s.slowest_kind : "-");
	if (s.back.n)
		printf(", a lost VM restarted -> managed at its bounds p50 %.1f s, slowest %.1f s",
		       th_samples_pct(&s.back, 50), th_samples_pct(&s.back, 100));
	printf(", %.0f s in all, seed %" PRIu64 "\n", th_now_s() - t_start, seed);
	if (tt.violations)
		fail_msg("%u violation(s):\n%s", tt.violations, tt.summary);
	/* The last daemon stops cleanly (the sanitized build checks leaks). */
	if (th_proc_stop(&tt.d.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC) != 0)
		fail_msg("the last vmactd did not exit 0 on SIGTERM");
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(torture) };

	/* SIGPIPE ignored: a libvirtd gone mid-call is an error, not a signal. */
	if (!th_root_test("test_torture", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	/* Progress lines as they come, also through a pipe (make check's log). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests_name("torture", tests, setup, teardown);
}
