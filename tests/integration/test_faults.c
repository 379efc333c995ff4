/* SPDX-License-Identifier: Apache-2.0 */
/* Faults around a real vmactd (build[/san]/vmactd, its defaults) managing
 * real TCG guests (tests/guest) through the real libvirtd, with the Node
 * vm-monitor peer (tests/peers/vm-monitor.js, one per guest on a unix
 * socket, approving every downscale with --no-cgroup). doc/reliability.md
 *  lists what each shows:
 *
 *   late_monitor_answer: the vm-monitor answers 8 s after a downscale
 *       request, past vmactd's 5 s deadline: the request fails with a log
 *       line, the VM keeps its size, the late answer is refused cleanly,
 *       and once the monitor answers in time the downscale happens;
 *   libvirtd_restarts: libvirtd killed and started again at a random
 *       moment (0-400 ms) after vmactd starts a vCPU plug, a virtio-mem
 *       resize or a quota change (VMACT_FAULT_ROUNDS rounds, 3 by default;
 *       VMACT_FAULT_SEED repeats a run);
 *   qemu_killed_mid_unplug: QEMU SIGKILLed while vmactd unplugs a vCPU
 *       (and, from the second round on, shrinks virtio-mem): vmactd says
 *       the VM is gone, keeps running, and manages it again when the
 *       domain starts again;
 *   guest_refuses_shrink: the guest's virtio-mem driver keeps its online
 *       memory (guest command "mem-hold on"): vmactd sees that the guest
 *       kept it (requested vs plugged), says so, does not ask again at
 *       once, and its view stays QEMU's;
 *   guest_never_onlines_vcpu: the guest leaves a plugged vCPU offline
 *       ("cpu-online off"): QEMU counts it, the guest does not use it,
 *       vmactd never plugs beyond the maximum.
 *
 * The last three touch only their own VM: they run beside
 * late_monitor_answer, each in a child process of its own (its output is
 * printed when it is done), and libvirtd_restarts, which disturbs every
 * VM, runs alone after them. With VMACT_TEST_ONLY they run one at a time.
 *
 * After each fault the VM must be consistent: vmactd's view (vmactl show)
 * equals what QEMU says (QMP through virsh qemu-monitor-command) and what
 * the cgroup says, within its bounds and its last permit, with a quota its
 * vCPUs can use. Conditions are awaited with generous safety limits;
 * nothing is timed. VMACT_TEST_ONLY=NAME runs one test. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX         "vmact-fault"
#define LIMIT_BOOT_S   180.0
#define LIMIT_SETTLE_S 120.0
#define MiB            ((uint64_t)1024 * 1024)
#define BASE_MEM       (512 * MiB)

enum { G_RESTART, G_KILL, G_HOLD, G_OFFLINE, N_GUESTS };

static const char *const guest_label[N_GUESTS] = { "restart", "kill", "hold", "offline" };

static struct {
	/* vmactd, its scratch directory (the monitors' sockets and logs too)
	 * and the guests */
	struct th_vmactd d;
	virConnectPtr vc;
	struct tg_guest g[N_GUESTS];
	char *xml[N_GUESTS]; /* each guest's definition, to start it again */
	struct th_peer peer[N_GUESTS];
	char sock[N_GUESTS][108], peer_log[N_GUESTS][128];
	char tpl[128];
	unsigned seed;
} fx;

/* ---- the daemon's log --------------------------------------------------- */

/* Set in a child process running a case beside the others. */
static bool in_child;

static bool daemon_alive(void)
{
	char path[64], *stat, *p;
	bool alive;

	if (!in_child)
		return fx.d.proc.pid > 0 && !th_proc_exited(&fx.d.proc);
	/* vmactd is this process's sibling: alive while it is not a zombie. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)fx.d.proc.pid);
	stat = th_read_file(path);
	p = stat ? strrchr(stat, ')') : NULL;
	alive = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	free(stat);
	return alive;
}

/* Waits until the log has one more line with w's needle than marked. */
static void wait_log(const struct th_vmactd_mark *w, double limit_s, const char *what)
{
	if (!th_vmactd_wait_mark(&fx.d, w, limit_s))
		fail_msg("%s: no new \"%s\" in vmactd's log", what, w->needle);
}

/* The same as a predicate, for waits that must end without it (no log
 * printed then). */
static bool log_grew(void *w)
{
	return th_vmactd_mark_grew(&fx.d, w);
}

/* ---- commands ----------------------------------------------------------- */

/* Runs argv with its output in out (may be NULL); its exit status. */
static int run(const char *const argv[], char *out, size_t cap)
{
	const struct th_spawn_opts o = { .out = TH_OUT_PIPE, .err = TH_OUT_PIPE };
	struct th_proc p;
	char sink[4096];

	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	if (!out) {
		out = sink;
		cap = sizeof(sink);
	}
	th_read_fd_all(p.out_fd, out, cap);
	return th_proc_wait(&p);
}

/* vmactl set NAME OPTION VALUE */
static void set_bound(int gi, const char *opt, const char *value)
{
	const char *argv[] = { fx.d.vmactl,   "--socket", fx.d.sock, "set",
			       fx.g[gi].name, opt,        value,     NULL };
	char out[2048] = "";

	if (run(argv, out, sizeof(out)) != 0)
		fail_msg("vmactl set %s %s %s: %s", fx.g[gi].name, opt, value, out);
	printf("# %s: %s %s\n", guest_label[gi], opt, value);
}

/* Sends a command to guest gi's monitor peer and waits for its ack. */
#define ACK_DELAY "\"event\":\"ack\",\"cmd\":\"delay\""

struct peer_ack {
	int gi;
	unsigned before;
};

static bool peer_acked(void *arg)
{
	struct peer_ack *a = arg;

	return th_count_in_file(fx.peer_log[a->gi], ACK_DELAY) > a->before;
}

static bool peer_got_invalid(void *arg)
{
	int gi = *(int *)arg;

	return th_count_in_file(fx.peer_log[gi], "\"type\":\"InvalidMessage\"") > 0;
}

static void peer_delay(int gi, unsigned ms)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "delay %u\n", ms);
	struct peer_ack a = { .gi = gi, .before = th_count_in_file(fx.peer_log[gi], ACK_DELAY) };

	assert_int_equal(write(fx.peer[gi].proc.in_fd, line, (size_t)n), n);
	assert_true(th_vmactd_wait(&fx.d, peer_acked, &a, 30));
}

/* ---- views -------------------------------------------------------------- */

struct view {
	/* vmactd (vmactl show --json) */
	int vcpus;
	long quota; /* milli-CPU, -1 none */
	uint64_t mem;
	uint64_t using_milli, using_mem;
	bool resizing, has_permit;
	uint64_t permit_milli, permit_mem;
	uint64_t min_milli, max_milli, min_mem, max_mem;
	/* QEMU (QMP) */
	int qemu_vcpus;
	uint64_t vm_size, vm_requested; /* virtio-mem plugged and requested */
	/* the cgroup */
	long cg_quota;
};

static json_t *run_json(const char *const argv[], char *err, size_t errlen)
{
	static char out[1 << 16];
	json_error_t je;
	json_t *j;

	out[0] = 0;
	if (run(argv, out, sizeof(out)) != 0) {
		snprintf(err, errlen, "%.40s: %.180s", argv[0], out);
		return NULL;
	}
	j = json_loads(out, 0, &je);
	if (!j)
		snprintf(err, errlen, "%s: not JSON: %.60s: %.80s", argv[0], je.text, out);
	return j;
}

static json_t *qmp(int gi, const char *cmd, char *err, size_t errlen)
{
	char text[128];
	const char *argv[] = {
		"virsh", "-c", "qemu:///system", "qemu-monitor-command", fx.g[gi].name, text, NULL
	};
	json_t *j, *ret;

	snprintf(text, sizeof(text), "{\"execute\":\"%s\"}", cmd);
	j = run_json(argv, err, errlen);
	if (!j)
		return NULL;
	ret = json_incref(json_object_get(j, "return"));
	json_decref(j);
	if (!ret)
		snprintf(err, errlen, "%s: no return", cmd);
	return ret;
}

static uint64_t jnum(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	if (path2)
		v = json_object_get(v, path2);
	return json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
}

static bool read_view(int gi, struct view *v, char *err, size_t errlen)
{
	const char *argv[] = { fx.d.vmactl, "--socket",    fx.d.sock, "--json",
			       "show",      fx.g[gi].name, NULL };
	json_t *j, *cpus, *mem, *x;
	size_t i;

	memset(v, 0, sizeof(*v));
	if (!(j = run_json(argv, err, errlen)))
		return false;
	if (strcmp(json_string_value(json_object_get(j, "state")) ?: "", "managed")) {
		snprintf(err, errlen, "vmactd: state %s",
			 json_string_value(json_object_get(j, "state")) ?: "?");
		json_decref(j);
		return false;
	}
	v->vcpus = (int)jnum(j, "vcpus", NULL);
	x = json_object_get(j, "quota_milli_cpu");
	v->quota = json_is_integer(x) ? (long)json_integer_value(x) : -1;
	v->mem = jnum(j, "mem_bytes", NULL);
	v->using_milli = jnum(j, "using", "milli_cpu");
	v->using_mem = jnum(j, "using", "mem_bytes");
	v->resizing = json_is_true(json_object_get(j, "resizing"));
	x = json_object_get(j, "permit");
	v->has_permit = json_is_object(x);
	v->permit_milli = jnum(x, "milli_cpu", NULL);
	v->permit_mem = jnum(x, "mem_bytes", NULL);
	x = json_object_get(j, "bounds");
	v->min_milli = jnum(json_object_get(x, "min"), "milli_cpu", NULL);
	v->max_milli = jnum(json_object_get(x, "max"), "milli_cpu", NULL);
	v->min_mem = jnum(json_object_get(x, "min"), "mem_bytes", NULL);
	v->max_mem = jnum(json_object_get(x, "max"), "mem_bytes", NULL);
	json_decref(j);

	if (!(cpus = qmp(gi, "query-cpus-fast", err, errlen)))
		return false;
	v->qemu_vcpus = (int)json_array_size(cpus);
	json_decref(cpus);
	if (!(mem = qmp(gi, "query-memory-devices", err, errlen)))
		return false;
	json_array_foreach(mem, i, x) {
		json_t *d = json_object_get(x, "data");

		if (!strcmp(json_string_value(json_object_get(x, "type")) ?: "", "virtio-mem")) {
			v->vm_size = jnum(d, "size", NULL);
			v->vm_requested = jnum(d, "requested-size", NULL);
		}
	}
	json_decref(mem);
	/* The VM's cgroup: the group vmactd logged for its latest managing
	 * line. */
	v->cg_quota = th_vmactd_vm_quota(&fx.d, fx.g[gi].name);
	return true;
}

static void fmt_view(const struct view *v, char *buf, size_t len)
{
	snprintf(buf, len,
		 "vmactd: %d vCPUs, quota %ldm, %" PRIu64 " MiB, using %" PRIu64 "m / %" PRIu64
		 " MiB%s, permit %s%" PRIu64 "m / %" PRIu64 " MiB, bounds %" PRIu64 "m..%" PRIu64
		 "m / %" PRIu64 "..%" PRIu64 " MiB; QEMU: %d vCPUs, virtio-mem %" PRIu64
		 " MiB plugged of %" PRIu64 " MiB requested; cgroup: %ldm",
		 v->vcpus, v->quota, v->mem / MiB, v->using_milli, v->using_mem / MiB,
		 v->resizing ? " (resizing)" : "", v->has_permit ? "" : "none ", v->permit_milli,
		 v->permit_mem / MiB, v->min_milli, v->max_milli, v->min_mem / MiB,
		 v->max_mem / MiB, v->qemu_vcpus, v->vm_size / MiB, v->vm_requested / MiB,
		 v->cg_quota);
}

/* The VM is consistent: vmactd's view = QEMU's = the cgroup's, within the
 * bounds and the last permit, the quota no more than its vCPUs can use. */
static bool consistent(const struct view *v, char *why, size_t len)
{
	const char *bad = NULL;

	if (v->resizing)
		bad = "a resize is in progress";
	else if (v->vcpus != v->qemu_vcpus)
		bad = "vmactd's vCPUs differ from QEMU's";
	else if (v->mem != BASE_MEM + v->vm_size)
		bad = "vmactd's memory differs from QEMU's";
	else if (v->quota != v->cg_quota)
		bad = "vmactd's quota differs from the cgroup's";
	else if (v->quota < 0 || v->quota > 1000L * v->vcpus)
		bad = "the quota is more than the vCPUs can use";
	else if (v->using_mem != v->mem || v->using_milli != (uint64_t)v->quota)
		bad = "the scaling core works from another size";
	else if (v->using_milli < v->min_milli || v->using_milli > v->max_milli ||
		 v->using_mem < v->min_mem || v->using_mem > v->max_mem)
		bad = "outside the bounds";
	else if (v->has_permit &&
		 (v->using_milli > v->permit_milli && v->using_milli > v->min_milli))
		bad = "above the last permit";
	if (!bad)
		return true;
	snprintf(why, len, "%s", bad);
	return false;
}

struct settle {
	int gi;
	bool (*goal)(const struct view *v, const void *arg);
	const void *arg;
	struct view v;
	char why[256];
};

static bool settled(void *arg)
{
	struct settle *s = arg;

	if (!read_view(s->gi, &s->v, s->why, sizeof(s->why)) ||
	    !consistent(&s->v, s->why, sizeof(s->why)))
		return false;
	if (s->goal && !s->goal(&s->v, s->arg)) {
		snprintf(s->why, sizeof(s->why), "consistent, but not at the goal yet");
		return false;
	}
	return true;
}

/* Waits until guest gi is consistent (and at goal, when given); fails
 * with both views at the limit. */
static struct view settle(int gi, bool (*goal)(const struct view *, const void *), const void *arg,
			  const char *what)
{
	struct settle s = { .gi = gi, .goal = goal, .arg = arg };
	char text[1024];

	if (!th_vmactd_wait(&fx.d, settled, &s, LIMIT_SETTLE_S)) {
		fmt_view(&s.v, text, sizeof(text));
		fail_msg("%s (%s): %s: %s", what, guest_label[gi], s.why, text);
	}
	fmt_view(&s.v, text, sizeof(text));
	printf("# %s: %s: consistent: %s\n", guest_label[gi], what, text);
	return s.v;
}

static bool vcpus_eq(const struct view *v, const void *arg)
{
	return v->vcpus == *(const int *)arg;
}

static bool vcpus_at_least_2(const struct view *v, const void *arg)
{
	return v->vcpus >= 2 && v->quota == 2000;
}

static bool quota_eq(const struct view *v, const void *arg)
{
	return v->quota == *(const long *)arg;
}

static bool mem_eq(const struct view *v, const void *arg)
{
	return v->mem == *(const uint64_t *)arg;
}

/* ---- fixture ------------------------------------------------------------ */

/* Guest gi's vmact metadata. The guest that refuses a shrink starts with
 * 1Gi as its minimum: vmactd grows it as soon as it takes it over, so its
 * case (the longest of those beside each other) starts from there. */
static void guest_meta(int gi, const char *min_cpu, const char *extra, char *meta, size_t len)
{
	snprintf(meta, len,
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='%s' max='4'/>"
		 "<vmact:memory min='%s' max='1536Mi' method='virtio-mem'/>"
		 "<vmact:compute-unit cpu='250m' memory='256Mi'/>"
		 "<vmact:monitor endpoint='unix:%s'/>%s"
		 "</vmact:autoscaling>",
		 min_cpu, gi == G_HOLD ? "1Gi" : "512Mi", fx.sock[gi], extra);
}

/* Replaces guest gi's metadata live, as README shows (virsh metadata). */
static void set_meta(int gi, const char *min_cpu, const char *extra)
{
	char meta[2048], out[1024] = "";
	const char *argv[] = { "virsh",   "-c",    "qemu:///system", "metadata", fx.g[gi].name,
			       HP_NS_URI, "--key", HP_NS_PREFIX,     "--live",   "--set",
			       meta,      NULL };

	char full[2048], *w = meta;

	/* virsh takes the element without its namespace prefix (it adds the
	 * namespace itself). */
	guest_meta(gi, min_cpu, extra, full, sizeof(full));
	for (const char *r = full; *r;) {
		if (!strncmp(r, " xmlns:vmact='" HP_NS_URI "'",
			     strlen(" xmlns:vmact='" HP_NS_URI "'")))
			r += strlen(" xmlns:vmact='" HP_NS_URI "'");
		else if (!strncmp(r, "vmact:", 6))
			r += 6;
		else
			*w++ = *r++;
	}
	*w = 0;
	if (run(argv, out, sizeof(out)) != 0)
		fail_msg("virsh metadata: %s", out);
	printf("# %s: metadata: cpu min %s%s\n", guest_label[gi], min_cpu, extra);
}

/* Guest gi's vm-monitor (listening before vmactd starts). */
static int start_peer(int gi)
{
	const char *args[] = { "--unix", fx.sock[gi], "--no-cgroup", NULL };
	char msg[512];

	if (th_peer_start(&fx.peer[gi], "vm-monitor.js", args, fx.peer_log[gi], msg, sizeof(msg)) <
	    0) {
		print_error("monitor peer: %s\n", msg);
		return -1;
	}
	return 0;
}

/* Run beside the other guests' starts (tg_start_each). */
static int start_guest(unsigned gi)
{
	char meta[2048], msg[512], dir[sizeof(fx.d.dir)];

	/* A copy: the paths are written into the same fx. */
	memcpy(dir, fx.d.dir, sizeof(dir));
	snprintf(fx.sock[gi], sizeof(fx.sock[gi]), "%s/monitor-%s.sock", dir, guest_label[gi]);
	snprintf(fx.peer_log[gi], sizeof(fx.peer_log[gi]), "%s/monitor-%s.log", dir,
		 guest_label[gi]);
	guest_meta(gi, "1", "", meta, sizeof(meta));
	/* The offline guest never onlines a hot-plugged vCPU, from boot on
	 * (before vmactd could plug one). */
	if (tg_start_cmdline(fx.vc, PREFIX, meta,
			     gi == G_OFFLINE ? "vmact.report=1 vmact.cpu_online=0"
					     : "vmact.report=1",
			     &fx.g[gi], msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		return -1;
	}
	fx.xml[gi] = virDomainGetXMLDesc(fx.g[gi].dom, VIR_DOMAIN_XML_INACTIVE);
	return fx.xml[gi] ? 0 : -1;
}

static int setup(void **state)
{
	const char *args[] = { "--verbose", NULL };
	const char *s = getenv("VMACT_FAULT_SEED");
	char prefix[64];

	(void)state;
	fx.seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
	srand(fx.seed);
	printf("# VMACT_FAULT_SEED=%u\n", fx.seed);
	if (th_vmactd_init(&fx.d, PREFIX, NULL) < 0)
		return -1;
	for (int gi = 0; gi < N_GUESTS; gi++)
		if (th_vmactd_add_guest(&fx.d, &fx.g[gi]) < 0)
			return -1;
	snprintf(fx.tpl, sizeof(fx.tpl), "%s/domain.xml", fx.d.dir);
	if (tg_balloon_template(fx.tpl) < 0)
		return -1;
	setenv("VMACT_GUEST_TEMPLATE", fx.tpl, 1);
	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc)
		return -1;
	/* Each guest reports one status line a second (as in test_daemon:
	 * the reporter's own load). */
	if (tg_start_each(N_GUESTS, start_guest) < 0)
		return -1;
	/* The monitors while the guests boot (vmactd, which connects to
	 * them, starts once the guests run). */
	for (int gi = 0; gi < N_GUESTS; gi++)
		if (start_peer(gi) < 0)
			return -1;
	/* Four guests on a 2-CPU host: beyond the arbiter's default capacity
	 * (0.9 of the host) none could grow; with the cases beside each
	 * other, up to 8 vCPUs are plugged at once. */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_vmactd_config(&fx.d, prefix,
			     "{\"arbiter\":{\"overcommit_cpu\":5,\"overcommit_memory\":4}}") < 0)
		return -1;
	/* vmactd once they run: a guest busy booting would be grown and
	 * shrunk again first. */
	return th_vmactd_start(&fx.d, args, N_GUESTS, LIMIT_BOOT_S, 120) < 0 ? -1 : 0;
}

static void stop_beside(void);

static int teardown(void **state)
{
	int status;

	(void)state;
	stop_beside();
	status = th_vmactd_stop(&fx.d);
	for (int gi = 0; gi < N_GUESTS; gi++) {
		free(fx.xml[gi]);
		th_peer_stop(&fx.peer[gi]);
	}
	if (fx.vc)
		virConnectClose(fx.vc);
	th_vmactd_teardown(&fx.d);
	/* vmactd survived every fault and stops cleanly (ASan's leak check
	 * included in the sanitized build). */
	if (status != 0) {
		print_error("vmactd exited with status %d\n", status);
		return -1;
	}
	return 0;
}

/* Every size vmactd reports having reached for guest gi is within its
 * bounds (cpu in milli, memory in bytes). */
static unsigned check_resizes_within(int gi, uint64_t max_milli)
{
	char *buf = th_read_file(fx.d.log), *p, needle[160];
	unsigned n = 0;

	assert_non_null(buf);
	snprintf(needle, sizeof(needle), "%s: resized to ", fx.g[gi].name);
	for (p = buf; (p = strstr(p, needle)); p++) {
		double cpu;
		char unit[8] = "";
		uint64_t milli;

		if (sscanf(p + strlen(needle), "%lf%7[m ]", &cpu, unit) < 1)
			fail_msg("unparsable line: %.80s", p);
		milli = unit[0] == 'm' ? (uint64_t)cpu : (uint64_t)(cpu * 1000 + 0.5);
		if (milli < 1000 || milli > max_milli)
			fail_msg("vmactd resized %s to %.40s, outside the bounds", guest_label[gi],
				 p + strlen(needle));
		n++;
	}
	free(buf);
	return n;
}

static unsigned rounds(unsigned def)
{
	const char *s = getenv("VMACT_FAULT_ROUNDS");

	return s && atoi(s) > 0 ? (unsigned)atoi(s) : def;
}

/* ---- the faults --------------------------------------------------------- */

/* The vm-monitor answers after vmactd's deadline. */
static void late_monitor_answer(void **state)
{
	int gi = G_RESTART;
	const char *name = fx.g[gi].name;
	int two = 2;
	long q1000 = 1000;
	struct th_vmactd_mark failed, invalid, approved;
	struct view v;

	(void)state;
	set_bound(gi, "--min-cpu", "2");
	settle(gi, vcpus_eq, &two, "grown to 2 vCPUs");
	peer_delay(gi, 8000);
	th_vmactd_mark(&fx.d, &failed, "%s: vm-monitor downscale request failed: timed out waiting",
		       name);
	th_vmactd_mark(&fx.d, &invalid, "%s: vm-monitor: ignoring a late DownscaleResult", name);
	set_bound(gi, "--min-cpu", "1");
	wait_log(&failed, 60, "the late downscale answer");
	/* Nothing shrank without the approval. */
	v = settle(gi, NULL, NULL, "after the timeout");
	assert_int_equal(v.quota, 2000);
	assert_int_equal(th_vmactd_log_count(&fx.d, "%s: resized to 1 CPU", name), 0);
	/* The late answer comes: refused as unknown (the monitor is told with
	 * InvalidMessage, as the Go agent does), nothing else. */
	wait_log(&invalid, 60, "the late answer");
	if (!th_vmactd_wait(&fx.d, peer_got_invalid, &gi, 30)) {
		th_print_log_tail(fx.peer_log[gi], "monitor peer", 4000);
		fail_msg("vmactd did not answer the late DownscaleResult with InvalidMessage");
	}
	v = settle(gi, NULL, NULL, "after the late answer");
	assert_int_equal(v.quota, 2000);
	/* In time again: the next request is approved and carried out. */
	th_vmactd_mark(&fx.d, &approved, "%s: vm-monitor approved the downscale", name);
	peer_delay(gi, 0);
	wait_log(&approved, 60, "downscale approved once the monitor answers in time");
	settle(gi, quota_eq, &q1000, "shrunk by the quota");
	check_resizes_within(gi, 4000);
}

static void libvirtd_restarts(void **state)
{
	const int gi = G_RESTART;
	const char *name = fx.g[gi].name;
	unsigned n = rounds(3);

	(void)state;
	for (unsigned k = 0; k < n; k++) {
		struct view v = settle(gi, NULL, NULL, "before the round");
		struct th_vmactd_mark resizing, lost, back;
		unsigned delay_ms = (unsigned)rand() % 400;
		const char *kind;
		char value[32];
		long quota;
		int vcpus;
		uint64_t mem;

		th_vmactd_mark(&fx.d, &resizing, "%s: resizing from ", name);
		th_vmactd_mark(&fx.d, &lost, "libvirt: connection lost");
		th_vmactd_mark(&fx.d, &back, "libvirt: reconnected, resynchronising");
		if (k % 3 == 0 && v.vcpus < 4) {
			/* Half a CPU short of the new vCPU count (vmactd plugs
			 * the vCPU the quota needs): the quota change of the
			 * round after next has half a CPU to grow into, and a
			 * growth starts at once, where a shrink would first
			 * wait for the policy's hold (15 s). */
			kind = "vCPU plug";
			vcpus = v.vcpus + 1;
			snprintf(value, sizeof(value), "%dm", vcpus * 1000 - 500);
			set_bound(gi, "--min-cpu", value);
		} else if (k % 3 == 1) {
			kind = "virtio-mem resize";
			mem = v.mem > BASE_MEM ? BASE_MEM : 1024 * MiB;
			set_bound(gi, "--min-memory", mem > BASE_MEM ? "1Gi" : "512Mi");
		} else {
			/* Up by half a CPU within the vCPUs plugged (a shrink
			 * would wait for the policy's hold first), or down to 1
			 * CPU when at the vCPUs' limit. */
			kind = "quota change";
			quota = v.quota + 500 <= 1000L * v.vcpus ? v.quota + 500 : 1000;
			snprintf(value, sizeof(value), "%ldm", quota);
			set_bound(gi, "--min-cpu", value);
		}
		wait_log(&resizing, 120, kind);
		usleep(delay_ms * 1000);
		/* Killed and started again without the test's descriptors. */
		if (th_restart_libvirtd() < 0)
			fail_msg("libvirtd did not restart");
		printf("# round %u: libvirtd restarted %u ms into a %s\n", k + 1, delay_ms, kind);
		wait_log(&lost, 60, "libvirtd restarted");
		wait_log(&back, 60, "libvirtd back");
		if (!strcmp(kind, "vCPU plug"))
			settle(gi, vcpus_eq, &vcpus, "after the restart");
		else if (!strcmp(kind, "virtio-mem resize"))
			settle(gi, mem_eq, &mem, "after the restart");
		else
			settle(gi, quota_eq, &quota, "after the restart");
		assert_true(daemon_alive());
	}
	check_resizes_within(gi, 4000);
}

/* SIGKILLs guest gi's QEMU (its pid file) and waits for vmactd to drop it. */
static void kill_qemu(int gi)
{
	pid_t pid = tg_qemu_pid(fx.g[gi].name);
	struct th_vmactd_mark gone;

	assert_true(pid > 1);
	th_vmactd_mark(&fx.d, &gone, "%s: no longer managed (stopped)", fx.g[gi].name);
	assert_int_equal(kill(pid, SIGKILL), 0);
	wait_log(&gone, 60, "QEMU killed");
}

static void start_again(int gi)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	struct th_vmactd_mark managed;

	assert_non_null(vc);
	if (fx.g[gi].dom)
		virDomainFree(fx.g[gi].dom);
	/* The dead QEMU's serial log and control socket. */
	unlink(fx.g[gi].log);
	unlink(fx.g[gi].ctl);
	th_vmactd_mark(&fx.d, &managed, "%s: managing (", fx.g[gi].name);
	fx.g[gi].dom = virDomainCreateXML(vc, fx.xml[gi], 0);
	virConnectClose(vc);
	assert_non_null(fx.g[gi].dom);
	if (!th_vmactd_wait(&fx.d, tg_booted, &fx.g[gi], LIMIT_BOOT_S))
		fail_msg("guest %s did not boot again", guest_label[gi]);
	wait_log(&managed, 60, "the domain started again");
}

static void qemu_killed_mid_unplug(void **state)
{
	const int gi = G_KILL;
	const char *name = fx.g[gi].name;
	unsigned n = rounds(1);

	(void)state;
	for (unsigned k = 0; k < n; k++) {
		struct th_vmactd_mark resizing;
		unsigned done;
		bool vcpu = k % 2 == 0;
		unsigned delay_ms = (unsigned)rand() % (vcpu ? 1000 : 200);
		uint64_t big = 1024 * MiB;

		/* Grow first (no approval needed), then shrink: the unplug.
		 * The VM shrinks by unplugging vCPUs from now on only: had it
		 * unplugged one before (after its boot, say), vCPU changes
		 * would be refused on it (doc/actuation.md,
		 * "vCPU hotplug"). */
		if (vcpu) {
			struct view v;
			char mem[32];

			set_meta(gi, "2", "<vmact:policy shrink='unplug'/>");
			v = settle(gi, vcpus_at_least_2, NULL, "grown to 2 CPUs");
			/* The shrink goes one compute unit (250m) at a time,
			 * by the quota alone until the last step, which
			 * unplugs the vCPU: the kill aims at that one. */
			if (v.mem % (1024 * MiB))
				snprintf(mem, sizeof(mem), "%" PRIu64 "Mi", v.mem / MiB);
			else
				snprintf(mem, sizeof(mem), "%" PRIu64 "Gi", v.mem / (1024 * MiB));
			th_vmactd_mark(&fx.d, &resizing,
				       "%s: resizing from 1250m CPU / %s to 1 CPU / %s", name, mem,
				       mem);
		} else {
			set_bound(gi, "--min-memory", "1Gi");
			settle(gi, mem_eq, &big, "grown to 1Gi");
			th_vmactd_mark(&fx.d, &resizing, "%s: resizing from ", name);
		}
		done = th_vmactd_log_count(&fx.d, "%s: resized to", name);
		set_bound(gi, vcpu ? "--min-cpu" : "--min-memory", vcpu ? "1" : "512Mi");
		wait_log(&resizing, 120, "the shrink");
		/* A vCPU unplug lasts at least libvirt's 5 s wait here. */
		usleep(delay_ms * 1000);
		kill_qemu(gi);
		printf("# round %u: QEMU killed %u ms into a %s (%u resize steps completed "
		       "meanwhile)\n",
		       k + 1, delay_ms, vcpu ? "vCPU unplug" : "virtio-mem shrink",
		       th_vmactd_log_count(&fx.d, "%s: resized to", name) - done);
		assert_true(daemon_alive());
		assert_int_not_equal(virDomainIsActive(fx.g[gi].dom), 1);
		start_again(gi);
		/* (Busy booting, it may be grown, and shrunk by the quota.) */
		settle(gi, NULL, NULL, "started again");
		/* Managed again, from scratch: vCPU changes are allowed on the
		 * new QEMU (the lost unplug belonged to the old one). */
		set_bound(gi, "--min-cpu", "2");
		settle(gi, vcpus_at_least_2, NULL, "grown again");
	}
	check_resizes_within(gi, 4000);
}

static void guest_refuses_shrink(void **state)
{
	const int gi = G_HOLD;
	const char *name = fx.g[gi].name;
	uint64_t big = 1024 * MiB;
	struct th_vmactd_mark kept;
	struct view v;
	unsigned resizes;

	(void)state;
	/* Grown to its minimum, 1Gi (guest_meta), since vmactd took it over. */
	settle(gi, mem_eq, &big, "grown to 1Gi");
	assert_int_equal(tg_cmd(&fx.g[gi], "mem-hold on"), 0);
	th_vmactd_mark(&fx.d, &kept, "%s: the guest kept its memory", name);
	set_bound(gi, "--min-memory", "512Mi");
	wait_log(&kept, 180, "the refused shrink");
	resizes = th_vmactd_log_count(&fx.d, "%s: resizing from ", name);
	v = settle(gi, mem_eq, &big, "after the refused shrink");
	/* The request is back at what the guest kept (QEMU's request and the
	 * guest agree again); vmactd's view is that. */
	assert_int_equal(v.vm_requested, v.vm_size);
	/* One warning says it all (what was asked, what it kept, when it is
	 * asked again); the failed resize behind it is a debug line. */
	assert_int_equal(th_vmactd_log_count(
				 &fx.d, "warning: %s: the guest kept its memory (asked to go to ",
				 name),
			 1);
	assert_int_equal(th_vmactd_log_count(&fx.d, "asked again in 60 s, the wait doubling to "),
			 1);
	assert_int_equal(th_vmactd_log_count(&fx.d, "warning: %s: resize to ", name), 0);
	assert_int_equal(th_vmactd_log_count(&fx.d,
					     "failed: virtio-mem virtiomem0: the guest kept "),
			 1);
	/* No new attempt right away: vmactd waits (README) instead of asking
	 * the guest again and again. */
	{
		struct th_vmactd_mark again = { .before = resizes };

		snprintf(again.needle, sizeof(again.needle), "%s: resizing from ", name);
		assert_false(th_wait_daemon(&fx.d.proc, log_grew, &again, 10));
	}
	assert_true(daemon_alive());
	settle(gi, mem_eq, &big, "still consistent");
}

static void guest_never_onlines_vcpu(void **state)
{
	const int gi = G_OFFLINE;
	const char *name = fx.g[gi].name;
	struct th_vmactd_mark more;
	struct tg_report r;
	int two = 2;
	struct view v;

	(void)state;
	/* A second vCPU: QEMU counts it, the guest leaves it offline. */
	set_bound(gi, "--min-cpu", "2");
	v = settle(gi, vcpus_eq, &two, "a vCPU plugged");
	assert_int_equal(v.qemu_vcpus, 2);
	assert_true(tg_report(&fx.g[gi], &r));
	assert_true(tg_wait(&fx.g[gi], r.seq, NULL, NULL, 30, &r));
	assert_int_equal(r.cpus, 1);
	/* Busy on its one online vCPU: from the host an offline vCPU looks
	 * like an idle one, so the VM does not fill what it has and vmactd
	 * plugs no more (it would up to the maximum, 4, were it saturated). */
	th_vmactd_mark(&fx.d, &more, "%s: resizing from ", name);
	assert_int_equal(tg_cmd(&fx.g[gi], "busy 2"), 0);
	assert_false(th_wait_daemon(&fx.d.proc, log_grew, &more, 15));
	v = settle(gi, vcpus_eq, &two, "busy with an offline vCPU");
	assert_true(tg_wait(&fx.g[gi], r.seq, NULL, NULL, 30, &r));
	assert_int_equal(r.cpus, 1);
	assert_true(r.busy == 2);
	assert_int_equal(th_vmactd_log_count(&fx.d, "%s: cpu saturated", name), 0);
	check_resizes_within(gi, 4000);
	assert_int_equal(tg_cmd(&fx.g[gi], "idle"), 0);
}

/* ---- cases beside each other --------------------------------------------- */

/* A case on a VM of its own, run in a child process while this one goes
 * on: its cmocka run's output goes to a file, printed when it is reaped. */
struct beside {
	const char *name;
	CMUnitTestFunction fn;
	pid_t pid;
	char out[128];
};

static struct beside beside[] = {
	{ "qemu_killed_mid_unplug", qemu_killed_mid_unplug, 0, "" },
	{ "guest_refuses_shrink", guest_refuses_shrink, 0, "" },
	{ "guest_never_onlines_vcpu", guest_never_onlines_vcpu, 0, "" },
};

#define N_BESIDE (sizeof(beside) / sizeof(beside[0]))

static _Noreturn void beside_child(struct beside *b)
{
	const struct CMUnitTest t[] = { { b->name, b->fn, NULL, NULL, NULL } };
	int fd = open(b->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), r;

	if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
		_exit(2);
	close(fd);
	in_child = true;
	/* The parent's libvirt connection is not this process's to use. */
	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc)
		_exit(2);
	for (int gi = 0; gi < N_GUESTS; gi++)
		fx.g[gi].dom = virDomainLookupByName(fx.vc, fx.g[gi].name);
	cmocka_set_test_filter(NULL);
	r = _cmocka_run_group_tests(b->name, t, 1, NULL, NULL);
	fflush(stdout);
	fflush(stderr);
	/* _exit: the parent's fixture (vmactd, guests, peers) is not ours to
	 * tear down. */
	_exit(r == 0 ? 0 : 1);
}

/* A case still running beside (its reaping test did not run). */
static void stop_beside(void)
{
	for (size_t i = 0; i < N_BESIDE; i++)
		if (beside[i].pid > 0) {
			kill(beside[i].pid, SIGKILL);
			waitpid(beside[i].pid, NULL, 0);
			beside[i].pid = 0;
			unlink(beside[i].out);
		}
}

/* Starts the cases of beside[] in child processes. */
static void start_beside(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_BESIDE; i++) {
		struct beside *b = &beside[i];

		snprintf(b->out, sizeof(b->out), "%s/%s.out", fx.d.dir, b->name);
		fflush(stdout);
		fflush(stderr);
		b->pid = fork();
		assert_true(b->pid >= 0);
		if (b->pid == 0)
			beside_child(b);
		printf("# %s: started beside the others (pid %d)\n", b->name, (int)b->pid);
	}
}

/* Waits for b's child and prints its output, or runs the case here when
 * it was not started (VMACT_TEST_ONLY). Its cmocka summary lines are left
 * out: the parent's own line for the case is the one counted. */
static void reap_beside(struct beside *b, void **state)
{
	int status = 0;
	char *out, *line, *next;

	if (b->pid <= 0) {
		b->fn(state);
		return;
	}
	while (waitpid(b->pid, &status, 0) < 0 && errno == EINTR)
		;
	b->pid = 0;
	out = th_read_file(b->out);
	for (line = out; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		else
			next = line + strlen(line);
		if (!strstr(line, "[  PASSED  ]") && !strstr(line, "[  FAILED  ]") &&
		    !strstr(line, "[==========]") && !strstr(line, "FAILED TEST(S)") && line[0])
			printf("%s%s\n", line[0] == '#' ? "" : "# | ", line);
	}
	free(out);
	if (!getenv("VMACT_TEST_KEEP_LOG"))
		unlink(b->out);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("%s failed beside the others (status 0x%x; its output above)", b->name,
			 (unsigned)status);
}

static void reap_kill(void **state)
{
	reap_beside(&beside[0], state);
}

static void reap_hold(void **state)
{
	reap_beside(&beside[1], state);
}

static void reap_offline(void **state)
{
	reap_beside(&beside[2], state);
}

int main(int argc, char **argv)
{
	/* libvirtd_restarts last and alone: a restart disturbs every VM. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(start_beside),
		cmocka_unit_test(late_monitor_answer),
		{ "qemu_killed_mid_unplug", reap_kill, NULL, NULL, NULL },
		{ "guest_refuses_shrink", reap_hold, NULL, NULL, NULL },
		{ "guest_never_onlines_vcpu", reap_offline, NULL, NULL, NULL },
		cmocka_unit_test(libvirtd_restarts),
	};
	const char *only = getenv("VMACT_TEST_ONLY");

	(void)argc;
	(void)argv;
	/* SIGPIPE ignored: the test's own libvirt connection dies with each
	 * libvirtd restart, and closing it writes to a dead socket. */
	if (!th_root_test("test_faults", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (only)
		cmocka_set_test_filter(only);
	/* Progress lines as they come, also through a pipe (make check's log). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, setup, teardown);
}
