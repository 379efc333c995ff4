/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd end to end: the real daemon (build[/san]/vmactd, next to this
 * binary's directory) with its embedded arbiter on 127.0.0.1:0, the BPF
 * sampler on its own pin root, against real TCG guests (tests/guest) and
 * the independent vm-monitor peer (tests/peers/vm-monitor.js, on a unix
 * socket, approving every downscale with --no-cgroup).
 *
 *   guest A: the test guest as a new user would set it up: 1 of 4 vCPUs,
 *            bounds 1..4 CPUs / 512Mi..1536Mi, compute unit 250m/256Mi,
 *            monitor at the peer's socket; vmactd with its defaults (the
 *            reactive CPU policy, shrinking by the quota with the vCPUs
 *            kept plugged, the embedded arbiter: 1.8 CPUs on this 2-CPU
 *            host);
 *   guest B: broken metadata (a missing element, then an unknown one).
 *
 * Busy loop in A -> vmactd asks the arbiter, gets a permit and starts to
 * plug a vCPU, and is SIGKILLed the moment it logs that; a new vmactd takes
 * A over from what it finds (size read back, within bounds, quota no more
 * than the vCPUs can use) and finishes the job (the guest sees 2 CPUs and
 * its quota rises above 1 CPU); idle -> the monitor approves the
 * downscale and A is back at 1 CPU (its quota; never less), its vCPUs
 * kept, as vmactl's control API reports it; busy again -> it grows again. B is logged once
 * per broken version of its metadata and never managed, while A is. Every
 * "resized to" line the daemon logs is checked against A's bounds. The
 * daemon then stops on SIGTERM with exit status 0 (ASan leak check
 * included) and its pins are gone. The VM's CFS quota follows its size
 * (1000m, 1500m or more, 1000m) and goes when autoscaling is disabled.
 *
 * Then daemon_remote_plugin_dimm: the plugin as a separate process and
 * memory in DIMMs, and daemon_informant: a guest with the legacy VM
 * informant (tests/peers/informant.js) instead of a vm-monitor (below).
 *
 * And daemon_guest_metrics: a guest whose own exporter
 * (<vmact:metrics>, tests/peers/guest-metrics.js) reports load 3 (below).
 *
 * VMACT_TEST_ONLY=NAME runs one test (cmocka's filter).
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent-glue/codec/quantity.h"
#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/ctl.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX "vmactd-it"
/* Safety limits, far above what a passing run needs (about a minute to
 * scale up: the 1-minute load average has to rise; seconds to come back). */
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 300.0
/* The guest's vmact metadata as a new user writes it (issue 9's guest). */
#define META_BOUNDS TG_META_BOUNDS

#define MiB (1024ULL * 1024ULL)

static const char *const verbose[] = { "--verbose", NULL };

struct fixture {
	virConnectPtr vc;
	/* vmactd, A's vm-monitor and the guests; the files below are in its
	 * scratch directory. */
	struct th_vmactd vd;
	struct tg_guest a, b;
	char tpl[128], log1[136], notify[108];
	int notify_fd;    /* the daemon's sd_notify socket (NOTIFY_SOCKET) */
	char notes[4096]; /* what it sent so far */
	struct th_proc arbiter;
	char arb_log[128];
	/* daemon_informant */
	struct tg_guest c;
	struct th_peer inf_peer;
	char inf_log[128];
	/* daemon_guest_metrics */
	struct tg_guest d;
	struct th_peer gm_peer;
	char gm_log[128];
};

static struct fixture fx;

/* A daemon that was started and has exited since. */
static bool daemon_died(void)
{
	return fx.vd.proc.pid > 0 && th_proc_exited(&fx.vd.proc);
}

/* Waits until pred() or the limit; false at the limit, or at once if the
 * daemon exits meanwhile, its log's tail then printed. */
static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.vd, pred, arg, limit_s);
}

/* Collects the daemon's sd_notify datagrams. */
static void read_notes(void)
{
	char buf[512];
	ssize_t n;

	while ((n = recv(fx.notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
		buf[n] = 0;
		strncat(fx.notes, buf, sizeof(fx.notes) - strlen(fx.notes) - 2);
		strcat(fx.notes, "\n");
	}
}

static bool notes_have(void *needle)
{
	read_notes();
	return strstr(fx.notes, needle) != NULL;
}

/* The guest's status lines so far: none may show more than max or fewer
 * than min CPUs. */
static void check_guest_cpus_within(const struct tg_guest *g, unsigned min, unsigned max)
{
	char *buf = th_read_file(g->log), *p;

	assert_non_null(buf);
	for (p = buf; (p = strstr(p, "VMACT seq=")); p++) {
		struct tg_report r;

		if (sscanf(p, "VMACT seq=%lu cpus=%u memtotal_kb=%lu busy=%u", &r.seq, &r.cpus,
			   &r.memtotal_kb, &r.busy) != 4)
			continue;
		if (r.cpus < min || r.cpus > max)
			fail_msg("guest reported %u CPUs at seq %lu, bounds %u..%u", r.cpus, r.seq,
				 min, max);
	}
	free(buf);
}

/* Every size the daemon reports having reached lies within the bounds. */
static unsigned check_resizes_within(const char *log, uint64_t min_milli, uint64_t max_milli,
				     uint64_t min_mem, uint64_t max_mem)
{
	char *buf = th_read_file(log), *p;
	unsigned n = 0;

	assert_non_null(buf);
	for (p = buf; (p = strstr(p, "resized to ")); p++) {
		char cpu[32], mem[32];
		uint64_t milli, bytes;

		if (sscanf(p, "resized to %31s CPU / %31s", cpu, mem) != 2)
			fail_msg("unparsable line: %.80s", p);
		assert_int_equal(vmact_quantity_parse_milli(cpu, &milli, NULL), 0);
		assert_int_equal(vmact_quantity_parse_value(mem, &bytes, NULL), 0);
		if (milli < min_milli || milli > max_milli || bytes < min_mem || bytes > max_mem)
			fail_msg("vmactd resized to %s CPU / %s, outside the bounds", cpu, mem);
		n++;
	}
	free(buf);
	return n;
}

static int setup(void **state)
{
	char msg[512];
	char meta_a[2048];
	const char *meta_b = "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
			     "<vmact:cpu min='1' max='2'/></vmact:autoscaling>";

	(void)state;
	fx.notify_fd = -1;
	if (th_vmactd_init(&fx.vd, PREFIX, &fx.a) < 0 || th_vmactd_add_guest(&fx.vd, &fx.b) < 0)
		return -1;
	snprintf(fx.tpl, sizeof(fx.tpl), "%s/domain.xml", fx.vd.dir);
	snprintf(fx.log1, sizeof(fx.log1), "%s.1", fx.vd.log);
	snprintf(fx.arb_log, sizeof(fx.arb_log), "%s/arbiter.log", fx.vd.dir);
	snprintf(fx.notify, sizeof(fx.notify), "%s/notify", fx.vd.dir);

	/* What systemd would receive (Type=notify). */
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		fx.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		strcpy(sa.sun_path, fx.notify);
		if (fx.notify_fd < 0 || bind(fx.notify_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return -1;
	}

	/* A's vm-monitor peer, and A's metadata as a new user writes it
	 * (issue 9's guest). */
	if (th_vmactd_monitor(&fx.vd, meta_a, sizeof(meta_a)) < 0)
		return -1;

	/* The test guest with a virtio balloon reporting memory statistics
	 * every second: the daemon's source of guest memory usage. */
	if (tg_balloon_template(fx.tpl) < 0)
		return -1;
	setenv("VMACT_GUEST_TEMPLATE", fx.tpl, 1);
	/* One status line a second: on TCG the 200 ms reporter alone keeps
	 * the vCPU runnable for a good part of the time (measured here: load
	 * about 0.5 on a busy host), which is the idle load vmactd sees. */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);

	fx.vc = virConnectOpen("qemu:///system");
	if (!fx.vc)
		return -1;
	if (tg_start(fx.vc, PREFIX, meta_a, &fx.a, msg, sizeof(msg)) < 0 ||
	    tg_start(fx.vc, PREFIX, meta_b, &fx.b, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		return -1;
	}
	return 0;
}

/* Sets a domain's vmact metadata live, on a fresh connection (other tests
 * on the host restart libvirtd, which kills older handles). */
static int set_meta(const struct tg_guest *g, const char *xml)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, g->name) : NULL;
	int r = d ? virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, xml, "vmact", HP_NS_URI,
					 VIR_DOMAIN_AFFECT_LIVE)
		  : -1;

	if (d)
		virDomainFree(d);
	if (vc)
		virConnectClose(vc);
	return r;
}

/* Sets g's vmact metadata live and waits until vmactd acted on it
 * (taken); failing says what. */
static void change_meta(const struct tg_guest *g, const char *xml, bool (*taken)(void *),
			const char *what)
{
	assert_int_equal(set_meta(g, xml), 0);
	if (!wait_until(taken, NULL, 60))
		fail_msg("%s", what);
}

static int teardown(void **state)
{
	(void)state;
	/* vmactd first (SIGTERM: it hands the VMs back to the peers still
	 * there), A's monitor, the pins a killed vmactd left, the guests and
	 * the files; then the other peers and the remote arbiter. */
	th_vmactd_teardown(&fx.vd);
	th_peer_stop(&fx.gm_peer);
	th_peer_stop(&fx.inf_peer);
	th_proc_stop(&fx.arbiter, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	if (fx.vc)
		virConnectClose(fx.vc);
	if (fx.notify_fd >= 0)
		close(fx.notify_fd);
	return 0;
}

/* Predicates on a guest (struct tg_guest *) for wait_until(). */
static bool guest_cpus_at_least_2(void *g)
{
	struct tg_report r;

	return tg_report(g, &r) && r.cpus >= 2;
}

/* The VM group's CPU limit in milli-CPUs (-1: unlimited), from the cgroup
 * vmactd logged for it. */
static long quota_milli(void)
{
	return TH_VMACTD_QUOTA_OR_FAIL(&fx.vd);
}

static bool quota_removed(void *unused)
{
	return th_vmactd_log_has(&fx.vd, "autoscaling disabled: CPU quota removed") &&
	       quota_milli() == -1;
}

/* A line of the daemon's log seen more often than before. */
struct log_count {
	const char *needle;
	unsigned before;
};

static bool log_count_grew(void *arg)
{
	const struct log_count *c = arg;

	return th_count_in_file(fx.vd.log, c->needle) > c->before;
}

/* A guest back at its 1-CPU minimum, as vmactd's control API reports it:
 * the size the core works from, the quota and the CPU policy's goal all at
 * 1 CPU, no resize in progress, the last completed resize one to 1 CPU; and
 * the guest itself idle. A state, not a count of log lines: a resize logged
 * before the wait began (or one logged in other words) cannot make the
 * wait miss it or pass early. */
struct at_min {
	const struct tg_guest *g;
	char state[1024];
};

static bool back_at_min(void *arg)
{
	struct at_min *m = arg;
	json_t *doc = th_ctl_vm(fx.vd.sock, m->g->name, m->state, sizeof(m->state));
	const char *last = json_string_value(
		json_object_get(json_object_get(doc, "last_change"), "reason"));
	double using_, quota, goal;
	struct tg_report r;
	bool ok;

	if (!doc)
		return false;
	ok = th_ctl_number(doc, "using.milli_cpu", &using_) && using_ == 1000 &&
	     th_ctl_number(doc, "quota_milli_cpu", &quota) && quota == 1000 &&
	     th_ctl_number(doc, "demand.goal_milli_cpu", &goal) && goal == 1000 &&
	     json_is_false(json_object_get(doc, "resizing")) && last &&
	     !strncmp(last, "to 1 CPU / ", 11) && tg_report(m->g, &r) && r.busy == 0;
	{
		char *text = json_dumps(doc, JSON_COMPACT);

		snprintf(m->state, sizeof(m->state), "%s", text ? text : "?");
		free(text);
	}
	json_decref(doc);
	return ok;
}

/* Guest g goes idle: vmactd must bring it back to its 1-CPU minimum (its
 * quota; by default the vCPUs stay plugged), never below. */
static void idle_back_to_min(const struct tg_guest *g, const char *label)
{
	struct at_min m = { .g = g };

	assert_int_equal(tg_cmd(g, "idle"), 0);
	if (!wait_until(back_at_min, &m, LIMIT_SCALE_S))
		fail_msg("guest %s never came back to its minimum; vmactd reports %s", label,
			 m.state);
	assert_int_equal(quota_milli(), 1000);
}

static bool broken_twice(void *unused)
{
	return th_count_in_file(fx.vd.log, fx.b.name) >= 2 &&
	       th_count_in_file(fx.vd.log, "unknown element <vmact:bogus>") >= 1;
}

/* The live vCPU count of a guest as libvirt has it (fresh connection). */
static int live_vcpus(const struct tg_guest *g)
{
	return tg_live_vcpus(g->name);
}

static bool scaled_up(void *unused)
{
	return guest_cpus_at_least_2(&fx.a) && quota_milli() > 1000;
}

/* SIGKILLs the daemon the moment it logs that it starts resizing A, polling
 * every millisecond: a vCPU plug takes tens of ms here, so the kill lands
 * inside the operation (or just after it), not at a quiet moment. */
static void kill_when_resizing(unsigned before)
{
	double end = th_now_s() + LIMIT_SCALE_S;
	char needle[256];

	snprintf(needle, sizeof(needle), "%s: resizing from ", fx.a.name);
	while (th_count_in_file(fx.vd.log, needle) <= before) {
		if (th_now_s() > end || th_proc_exited(&fx.vd.proc)) {
			th_vmactd_dump_log(&fx.vd);
			fail_msg("vmactd never started resizing guest A");
		}
		usleep(1000);
	}
	th_proc_stop(&fx.vd.proc, SIGKILL, 0);
}

/* Writes vmactd's configuration: the fixture's (control socket, pins),
 * the VMs named name_prefix..., the control API's state_dir the scratch
 * directory, and more (JSON members, "": none). */
static void config_vmactd(const char *name_prefix, const char *more)
{
	char text[512];

	snprintf(text, sizeof(text), "{\"control\":{\"state_dir\":\"%s\"}%s%s}", fx.vd.dir,
		 more[0] ? "," : "", more);
	assert_int_equal(th_vmactd_config(&fx.vd, name_prefix, text), 0);
}

/* Starts vmactd --verbose on the configuration written last, its sd_notify
 * datagrams to notify (NULL: none), and waits until it manages one VM
 * (what names it in the failure). */
static void start_vmactd(const char *notify, const char *what)
{
	int r;

	if (notify)
		setenv("NOTIFY_SOCKET", notify, 1);
	r = th_vmactd_spawn(&fx.vd, verbose);
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(r, 0);
	if (!th_vmactd_wait_log(&fx.vd, "ready: managing 1 VM", 120))
		fail_msg("vmactd did not become ready managing %s", what);
	/* The kernel's watch by default, the poll under make check-poll
	 * (doc/policy.md, "Saturation found in the kernel"). */
	if (!th_vmactd_on_detection_path(&fx.vd))
		fail_msg("vmactd finds load on the wrong path");
}

/* What daemon_informant and daemon_guest_metrics run on: a guest of
 * their own, served by a peer on loopback. */
struct beside {
	const char *label;  /* the guest's letter */
	const char *bounds; /* its <vmact:cpu>, <vmact:memory>, <vmact:compute-unit> */
	/* <vmact:ELEMENT endpoint='http://127.0.0.1:PORT'/> names the peer */
	const char *element;
	const char *script;      /* the peer: tests/peers/SCRIPT */
	const char *const *args; /* and its options */
	const char *config;      /* vmactd's beyond config_vmactd's (JSON members) */
};

/* Kills a vmactd a failed test before left running, starts the peer (its
 * output in log) and the guest g (destroyed with the fixture) and, once g
 * booted, vmactd managing g alone. The peer's port. */
static unsigned start_beside(const struct beside *b, struct th_peer *p, char *log, size_t len,
			     struct tg_guest *g)
{
	char meta[1024], msg[512], what[32];

	th_proc_stop(&fx.vd.proc, SIGKILL, 0);
	snprintf(log, len, "%s/%s.log", fx.vd.dir, b->script);
	if (th_peer_start(p, b->script, b->args, log, msg, sizeof(msg)) < 0)
		fail_msg("%s: %s", b->script, msg);
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>%s"
		 "<vmact:%s endpoint='http://127.0.0.1:%u'/></vmact:autoscaling>",
		 b->bounds, b->element, p->port);
	assert_int_equal(th_vmactd_add_guest(&fx.vd, g), 0);
	if (tg_start(fx.vc, PREFIX, meta, g, msg, sizeof(msg)) < 0)
		fail_msg("guest %s: %s", b->label, msg);
	if (!wait_until(tg_booted, g, LIMIT_BOOT_S))
		fail_msg("guest %s did not boot", b->label);
	config_vmactd(g->name, b->config);
	snprintf(what, sizeof(what), "guest %s", b->label);
	start_vmactd(NULL, what);
	return p->port;
}

static void daemon_autoscales(void **state)
{
	char prefix[64], needle[256];
	unsigned resizes_before_idle;
	struct stat sb;
	int status;

	(void)state;
	if (!wait_until(tg_booted, &fx.a, LIMIT_BOOT_S) ||
	    !wait_until(tg_booted, &fx.b, LIMIT_BOOT_S))
		fail_msg("the guests did not boot");

	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	config_vmactd(prefix, "");
	/* First sync: A managed, B skipped with one line naming it and the
	 * missing element. */
	start_vmactd(fx.notify, "guest A");
	/* READY=1 only after the first sync, with the count in STATUS=. */
	if (!wait_until(notes_have, "READY=1", 30) ||
	    !wait_until(notes_have, "STATUS=Managing 1 VM\n", 30))
		fail_msg("sd_notify: got \"%s\"", fx.notes);
	snprintf(needle, sizeof(needle), "%s: not managed: vmact metadata: ", fx.b.name);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);
	assert_int_equal(th_count_in_file(fx.vd.log, "missing element <vmact:memory>"), 1);
	snprintf(needle, sizeof(needle), "%s: managing (", fx.a.name);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);

	/* A metadata change on B is re-read (and still broken, differently). */
	change_meta(&fx.b,
		    "<autoscaling enabled='true'><cpu min='1' max='2'/>"
		    "<memory min='512Mi' max='1Gi' method='virtio-mem'/><bogus/></autoscaling>",
		    broken_twice, "the metadata change on guest B was not re-read");

	/* The embedded arbiter answers vmactd's own VMs in-process: no
	 * listener unless the configuration asks for one. */
	assert_int_equal(th_count_in_file(fx.vd.log, "arbiter: in-process, capacity "), 1);
	assert_int_equal(th_count_in_file(fx.vd.log, "listening on"), 0);

	/* From the start the VM is held to its size by the CFS quota. */
	assert_int_equal(quota_milli(), 1000);

	/* Load: vmactd asks the arbiter and starts plugging, and is killed
	 * (SIGKILL) right then. */
	snprintf(needle, sizeof(needle), "%s: resizing from ", fx.a.name);
	resizes_before_idle = th_count_in_file(fx.vd.log, needle);
	assert_int_equal(tg_cmd(&fx.a, "busy 2"), 0);
	kill_when_resizing(resizes_before_idle);
	assert_true(th_count_in_file(fx.vd.log, "scheduler permits") > 0);
	check_guest_cpus_within(&fx.a, 1, 2);

	/* A new vmactd takes the VM over from what it finds: its size is
	 * read back (vCPUs held to the quota the killed one left), nothing
	 * is outside the bounds, and the quota never grants more than the
	 * vCPUs can use. Stale pins and the old monitor connection are the
	 * killed daemon's leftovers it must cope with. */
	assert_int_equal(rename(fx.vd.log, fx.log1), 0);
	start_vmactd(fx.notify, "guest A after its restart");
	snprintf(needle, sizeof(needle), "%s: managing (", fx.a.name);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);
	assert_int_equal(th_count_in_file(fx.vd.log, "outside its bounds"), 0);
	{
		long q = quota_milli();
		int v = live_vcpus(&fx.a);

		assert_true(v >= 1 && v <= 4);
		if (q < 1000 || q > 4000 || q > 1000L * v)
			fail_msg("after the restart: quota %ldm with %d vCPUs", q, v);
	}

	/* Still busy: the new daemon gets it to a second vCPU and more than
	 * one CPU of quota (or finds it there already), saying why. */
	if (!wait_until(scaled_up, NULL, LIMIT_SCALE_S))
		fail_msg("guest A never got a second vCPU and its quota");
	assert_true(th_count_in_file(fx.vd.log, ": cpu saturated: vCPUs ") +
			    th_count_in_file(fx.log1, ": cpu saturated: vCPUs ") >
		    0);
	check_guest_cpus_within(&fx.a, 1, 4);
	{
		long q = quota_milli();
		int v = live_vcpus(&fx.a);

		/* the arbiter's 1.8 CPUs on this host, in 250m units */
		if (q < 1250 || q > 1750 || q > 1000L * v)
			fail_msg("grown to quota %ldm with %d vCPUs", q, v);
	}

	/* Idle: the monitor approves, the quota goes back to the minimum;
	 * never below it. */
	idle_back_to_min(&fx.a, "A");
	assert_true(th_count_in_file(fx.vd.log, "vm-monitor approved the downscale") > 0);
	check_guest_cpus_within(&fx.a, 1, 4);

	/* Busy again: the way back up is still there. */
	assert_int_equal(tg_cmd(&fx.a, "busy 2"), 0);
	if (!wait_until(scaled_up, NULL, LIMIT_SCALE_S))
		fail_msg("guest A did not grow again after scaling down");
	idle_back_to_min(&fx.a, "A");
	/* B was never managed. */
	snprintf(needle, sizeof(needle), "%s: managing (", fx.b.name);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 0);
	/* The killed daemon may not have got to report its last resize. A's
	 * memory stays at its 512Mi minimum throughout: the guest uses about
	 * 30 MiB of it, and only the CPU is loaded. (A restarted vmactd used
	 * to size a reactive VM by the Neon formula on the pinned load
	 * average until the policy's first decision: memory to its maximum
	 * and back, and a resize to 1 CPU while the guest was still busy.) */
	check_resizes_within(fx.log1, 1000, 4000, 512 * MiB, 512 * MiB);
	assert_true(check_resizes_within(fx.vd.log, 1000, 4000, 512 * MiB, 512 * MiB) >= 2);
	assert_int_equal(quota_milli(), 1000);

	/* Autoscaling switched off: the quota goes, the VM stays managed by
	 * nobody. */
	change_meta(&fx.a,
		    "<autoscaling enabled='false'><cpu min='1' max='2'/>"
		    "<memory min='512Mi' max='1Gi' method='virtio-mem'/></autoscaling>",
		    quota_removed, "disabling autoscaling did not remove the CPU quota");
	if (!wait_until(notes_have, "STATUS=Managing 0 VMs", 30))
		fail_msg("sd_notify: got \"%s\"", fx.notes);

	/* Clean shutdown: exit 0 (the sanitizer build fails it on a leak) and
	 * the pins removed. */
	status = th_proc_stop(&fx.vd.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	if (status != 0) {
		th_vmactd_dump_log(&fx.vd);
		fail_msg("vmactd exited with status %d", status);
	}
	assert_int_equal(stat(fx.vd.pins, &sb), -1);
	if (getenv("VMACT_TEST_VERBOSE"))
		th_vmactd_dump_log(&fx.vd);
}

static bool arbiter_listening(void *unused)
{
	return th_count_in_file(fx.arb_log, "listening on") > 0;
}

static bool b_grown(void *mem0)
{
	struct tg_report r;

	return tg_report(&fx.b, &r) && r.cpus >= 2 &&
	       r.memtotal_kb >= *(unsigned long *)mem0 + 200 * 1024;
}

/* The other two ways of running: the scheduler plugin is a separate
 * process (plugin.mode remote, here the standalone vmact-arbiter, as a
 * real Neon plugin would be) and memory comes in DIMMs. Guest B, broken
 * until now, gets valid metadata with method='dimm' and no vm-monitor (so
 * it only grows: a DIMM unplug has crashed QEMU 7.2 here, which
 * test_hotplug covers). B's memory minimum is above what it booted with and
 * it is busy -> the remote arbiter is asked and grants more CPU and 768Mi,
 * a vCPU and one 256Mi DIMM go in, the guest sees both, nothing passes the
 * bounds. */
static void daemon_remote_plugin_dimm(void **state)
{
	char text[256], arb_path[PATH_MAX], needle[256];
	unsigned port;
	unsigned long mem0;
	struct tg_report r;
	int status;

	(void)state;
	th_proc_stop(&fx.vd.proc, SIGKILL, 0); /* left by a failed test before */
	assert_int_equal(th_build_prog("vmact-arbiter", arb_path, sizeof(arb_path)), 0);
	{
		const char *aargv[] = { arb_path,   "--listen", "127.0.0.1:0", "--cpu", "2",
					"--memory", "4Gi",      "--verbose",   NULL };
		const struct th_spawn_opts o = { .out = TH_OUT_FILE,
						 .err = TH_OUT_FILE,
						 .out_path = fx.arb_log };

		assert_int_equal(th_spawn(&fx.arbiter, aargv, &o), 0);
	}
	if (!wait_until(arbiter_listening, NULL, 30))
		fail_msg("vmact-arbiter did not start");
	port = th_log_port(fx.arb_log, "listening on");
	if (!port)
		fail_msg("no port in the arbiter's log %s", fx.arb_log);

	assert_int_equal(set_meta(&fx.b, "<autoscaling enabled='true'><cpu min='1' max='2'/>"
					 "<memory min='768Mi' max='1Gi' method='dimm'/>"
					 "<compute-unit cpu='250m' memory='256Mi'/>"
					 "</autoscaling>"),
			 0);
	snprintf(text, sizeof(text),
		 "\"plugin\":{\"mode\":\"remote\",\"url\":\"http://127.0.0.1:%u/\"}", port);
	config_vmactd(fx.b.name, text);
	start_vmactd(NULL, "guest B");
	snprintf(needle, sizeof(needle), "scheduler http://127.0.0.1:%u/", port);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);
	assert_int_equal(th_count_in_file(fx.vd.log, "arbiter: listening"), 0);
	assert_true(tg_report(&fx.b, &r));
	mem0 = r.memtotal_kb;

	assert_int_equal(tg_cmd(&fx.b, "busy 2"), 0);
	if (!wait_until(b_grown, &mem0, LIMIT_SCALE_S))
		fail_msg("guest B never got a second vCPU and a DIMM");
	snprintf(needle, sizeof(needle), "%s: resized to ", fx.b.name);
	if (!th_vmactd_wait_log(&fx.vd, needle, LIMIT_SCALE_S))
		fail_msg("vmactd never reported B's resize");
	/* The remote arbiter made the decision, for B by name. */
	snprintf(needle, sizeof(needle), "default/%s", fx.b.name);
	assert_true(th_count_in_file(fx.arb_log, needle) > 0);
	assert_true(th_count_in_file(fx.arb_log, "/768Mi") > 0);
	check_guest_cpus_within(&fx.b, 1, 2);
	assert_true(check_resizes_within(fx.vd.log, 1000, 2000, 512 * MiB, 1024 * MiB) >= 1);
	assert_true(tg_report(&fx.b, &r));
	if (r.memtotal_kb > mem0 + 512 * 1024)
		fail_msg("guest B has %lu kB, more than the 1Gi max allows", r.memtotal_kb);

	assert_int_equal(tg_cmd(&fx.b, "idle"), 0);
	status = th_proc_stop(&fx.vd.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	if (status != 0) {
		th_vmactd_dump_log(&fx.vd);
		fail_msg("vmactd exited with status %d", status);
	}
}

static bool inf_peer_has(void *needle)
{
	return th_count_in_file(fx.inf_log, needle) > 0;
}

static void inf_cmd(const char *line)
{
	size_t n = strlen(line);

	assert_true(write(fx.inf_peer.proc.in_fd, line, n) == (ssize_t)n &&
		    write(fx.inf_peer.proc.in_fd, "\n", 1) == 1);
}

/* The legacy informant in place of the vm-monitor (doc/protocols.md, "Informant protocol"),
 * against the independent Node informant (tests/peers/informant.js) on
 * loopback: guest C's metadata names it with <vmact:informant>. vmactd's
 * agent registers (the informant calls GET /id back, then POST /resume);
 * the informant suspends it -> a busy guest is held at its size (vmactd
 * says so) until POST /resume; then it grows to two vCPUs and the informant
 * gets PUT /upscale; POST /try-upscale is taken; idle -> PUT /downscale is
 * approved and the guest is back at one vCPU; bounds never passed, no
 * protocol error seen by the peer, and SIGTERM unregisters the agent
 * (DELETE /unregister) before vmactd exits 0. */
/* The agent runs in guest C's own worker (doc/privsep.md), sandboxed as
 * the vm-monitor's: the workers' user, no capability, no_new_privs, its
 * system-call filter; the informant's server is the worker's. */
static void inf_worker_sandboxed(void)
{
	static const char *const want[][2] = {
		{ "CapEff", "0000000000000000" },
		{ "CapPrm", "0000000000000000" },
		{ "NoNewPrivs", "1" },
		{ "Seccomp", "2" },
	};
	pid_t pid = th_log_guest_worker(fx.vd.log, fx.c.name);
	struct passwd *pw = getpwnam("vmact");
	char v[64], uid[64], needle[256];

	if (pid <= 0) {
		th_vmactd_dump_log(&fx.vd);
		fail_msg("guest C's informant has no guest worker");
	}
	if (!pw)
		pw = getpwnam("nobody");
	assert_non_null(pw);
	snprintf(uid, sizeof(uid), "%u\t%u\t%u\t%u", (unsigned)pw->pw_uid, (unsigned)pw->pw_uid,
		 (unsigned)pw->pw_uid, (unsigned)pw->pw_uid);
	if (!th_proc_status(pid, "Uid", v, sizeof(v)) || strcmp(v, uid))
		fail_msg("informant worker %d: Uid %s, not %s", (int)pid, v, uid);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!th_proc_status(pid, want[i][0], v, sizeof(v)) || strcmp(v, want[i][1]))
			fail_msg("informant worker %d: %s %s, not %s", (int)pid, want[i][0], v,
				 want[i][1]);
	/* The lines of the agent are the worker's. */
	snprintf(needle, sizeof(needle), "vmact-guestd: %s: informant: agent ", fx.c.name);
	assert_true(th_count_in_file(fx.vd.log, needle) >= 1);
	print_message("informant worker %d: uid %s, CapEff 0, NoNewPrivs 1, Seccomp 2\n", (int)pid,
		      pw->pw_name);
}

static void daemon_informant(void **state)
{
	/* The sanitized daemon on a shared host: stretch the informant's own
	 * 100-400 ms timeouts so that slowness is not taken for death. */
	static const char *const peer_args[] = { "--port", "0", "--timeout-factor", "10", NULL };
	static const struct beside c = {
		.label = "C",
		.bounds = "<vmact:cpu min='1' max='2'/>"
			  "<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"
			  "<vmact:compute-unit cpu='250m' memory='256Mi'/>",
		.element = "informant",
		.script = "informant.js",
		.args = peer_args,
		.config = "\"informant\":{\"listen\":\"127.0.0.1:0\"}",
	};
	char needle[256];
	unsigned port;
	int status;

	(void)state;
	port = start_beside(&c, &fx.inf_peer, fx.inf_log, sizeof(fx.inf_log), &fx.c);
	snprintf(needle, sizeof(needle), "informant http://127.0.0.1:%u)", port);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);

	/* Registered (the peer checked GET /id first) and resumed. */
	if (!wait_until(inf_peer_has, "\"event\":\"register\"", 60) ||
	    !th_vmactd_wait_log(&fx.vd, ": informant: agent ", 60) ||
	    !th_vmactd_wait_log(&fx.vd, " running (protocol v2.0)", 60))
		fail_msg("vmactd's agent never got to running with the informant");
	assert_true(th_count_in_file(fx.inf_log, "\"event\":\"id-check\"") >= 1);
	inf_worker_sandboxed();

	/* Suspended: load makes the core want more, and the runner holds it. */
	inf_cmd("{\"cmd\":\"suspend\"}");
	if (!wait_until(inf_peer_has, "\"event\":\"suspend\"", 60) ||
	    !th_vmactd_wait_log(&fx.vd,
				"suspended by the informant: no resizing until it is resumed", 60))
		fail_msg("the agent never reported its suspension");
	assert_int_equal(tg_cmd(&fx.c, "busy 2"), 0);
	if (!th_vmactd_wait_log(&fx.vd, "holding a resize while the agent is suspended",
				LIMIT_SCALE_S))
		fail_msg("vmactd never wanted to grow the busy guest C");
	snprintf(needle, sizeof(needle), "%s: resizing from ", fx.c.name);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 0);
	check_guest_cpus_within(&fx.c, 1, 1);

	/* Resumed: it grows, and tells the informant afterwards. */
	inf_cmd("{\"cmd\":\"resume\"}");
	if (!wait_until(guest_cpus_at_least_2, &fx.c, LIMIT_SCALE_S))
		fail_msg("guest C never got a second vCPU");
	if (!wait_until(inf_peer_has, "\"event\":\"upscale\"", LIMIT_SCALE_S))
		fail_msg("the informant never got PUT /upscale");
	check_guest_cpus_within(&fx.c, 1, 2);

	/* POST /try-upscale is answered and taken as the monitor's request. */
	inf_cmd("{\"cmd\":\"try-upscale\",\"cpu\":false,\"memory\":true}");
	if (!wait_until(inf_peer_has, "\"event\":\"try-upscale\",\"agentID\"", 60) ||
	    !th_vmactd_wait_log(&fx.vd, "informant asks for more memory", 60))
		fail_msg("POST /try-upscale was not handled");
	assert_int_equal(th_count_in_file(fx.inf_log, "\"event\":\"try-upscale\",\"error\""), 0);

	/* Idle: the informant approves the downscale, back to 1 CPU. */
	idle_back_to_min(&fx.c, "C");
	assert_true(th_count_in_file(fx.inf_log, "\"event\":\"downscale\"") >= 1);
	assert_true(th_count_in_file(fx.vd.log, "informant approved the downscale") >= 1);
	check_guest_cpus_within(&fx.c, 1, 2);
	assert_true(check_resizes_within(fx.vd.log, 1000, 2000, 512 * MiB, 1024 * MiB) >= 1);
	/* The peer checks sequence numbers, identity and one request at a time. */
	assert_int_equal(th_count_in_file(fx.inf_log, "protocol-error"), 0);

	/* SIGTERM: the agent unregisters, then vmactd exits 0 (no leak). */
	status = th_proc_stop(&fx.vd.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	if (status != 0) {
		th_vmactd_dump_log(&fx.vd);
		fail_msg("vmactd exited with status %d", status);
	}
	if (!wait_until(inf_peer_has, "\"event\":\"unregister\"", 30))
		fail_msg("the agent did not unregister on shutdown");
	if (getenv("VMACT_TEST_VERBOSE"))
		th_vmactd_dump_log(&fx.vd);
}

static bool gm_peer_has(void *needle)
{
	return th_count_in_file(fx.gm_log, needle) > 0;
}

static bool d_cpus_at_least_3(void *unused)
{
	struct tg_report r;

	return tg_report(&fx.d, &r) && r.cpus >= 3;
}

/* Waits for n more metrics ticks on the host-side figures (the runner's
 * debug line per sampler.interval_ms), so at least one more scrape of
 * the guest's endpoint has happened and failed in between. */
static void wait_host_ticks(unsigned n, const char *what)
{
	/* "load1 ... memory [un]known (host)": the host's figures fed */
	struct log_count c = { .needle = "known (host)" };

	c.before = th_count_in_file(fx.vd.log, c.needle) + n - 1;
	if (!wait_until(log_count_grew, &c, LIMIT_SCALE_S))
		fail_msg("vmactd stopped managing guest D on the host-side figures (%s)", what);
}

/* The guest's own metrics (<vmact:metrics>, the Neon system exporter on
 * port 9100; here tests/peers/guest-metrics.js on loopback) say load 3 on
 * an idle 1-vCPU guest: more demand than the host can see (its vCPU
 * threads are idle). vmactd with its defaults (the reactive policy) but
 * an arbiter large enough for 3.5 CPUs on this 2-CPU host grows it to at
 * least 3 vCPUs. Then the exporter serves garbage, then is gone: each is
 * logged once, naming the endpoint, and the VM stays managed on the
 * host-side figures. */
static void daemon_guest_metrics(void **state)
{
	static const char *const peer_args[] = { "--load", "3", NULL };
	static const struct beside d = {
		.label = "D",
		.bounds = META_BOUNDS,
		.element = "metrics",
		.script = "guest-metrics.js",
		.args = peer_args,
		.config = "\"arbiter\":{\"listen\":\"127.0.0.1:0\",\"overcommit_cpu\":4}",
	};
	char needle[512], url[128];
	struct log_count c2;
	int status;

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u",
		 start_beside(&d, &fx.gm_peer, fx.gm_log, sizeof(fx.gm_log), &fx.d));
	snprintf(needle, sizeof(needle), "%s: guest metrics from %s/metrics", fx.d.name, url);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);

	/* The guest's load 3 on 1 vCPU: at least 3 vCPUs. */
	if (!wait_until(d_cpus_at_least_3, NULL, LIMIT_SCALE_S))
		fail_msg("guest D never got 3 vCPUs from its reported load");
	assert_true(th_count_in_file(fx.vd.log, "guest load1 3.00") >= 1);
	check_guest_cpus_within(&fx.d, 1, 4);
	assert_true(check_resizes_within(fx.vd.log, 1000, 4000, 512 * MiB, 1536 * MiB) >= 1);

	/* Garbage: logged once, the host's figures carry on. */
	snprintf(needle, sizeof(needle), "%s: guest metrics %s/metrics: ", fx.d.name, url);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 0);
	assert_true(write(fx.gm_peer.proc.in_fd, "mode garbage\n", 13) == 13);
	if (!wait_until(gm_peer_has, "\"command\":\"mode garbage\"", 30))
		fail_msg("the metrics peer did not take the command");
	if (!th_vmactd_wait_log(&fx.vd, "expected a metric name", LIMIT_SCALE_S))
		fail_msg("vmactd never reported the garbage");
	wait_host_ticks(2, "garbage");
	assert_int_equal(th_count_in_file(fx.vd.log, "expected a metric name"), 1);
	assert_int_equal(th_count_in_file(fx.vd.log, "; using the host-side figures"), 1);
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 1);

	/* Gone: logged once more (another failure), still managed. */
	th_peer_stop(&fx.gm_peer);
	c2.needle = needle;
	c2.before = 1;
	if (!wait_until(log_count_grew, &c2, LIMIT_SCALE_S))
		fail_msg("vmactd never reported the endpoint gone");
	wait_host_ticks(2, "endpoint gone");
	assert_int_equal(th_count_in_file(fx.vd.log, needle), 2);
	assert_int_equal(th_count_in_file(fx.vd.log, "; using the host-side figures"), 2);
	assert_false(daemon_died());
	check_guest_cpus_within(&fx.d, 1, 4);

	status = th_proc_stop(&fx.vd.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	if (status != 0) {
		th_vmactd_dump_log(&fx.vd);
		fail_msg("vmactd exited with status %d", status);
	}
	if (getenv("VMACT_TEST_VERBOSE"))
		th_vmactd_dump_log(&fx.vd);
	tg_destroy_by_name(&fx.d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(daemon_autoscales),
		cmocka_unit_test(daemon_remote_plugin_dimm),
		cmocka_unit_test(daemon_informant),
		cmocka_unit_test(daemon_guest_metrics),
	};

	if (!th_root_test("test_daemon", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("vmactd", tests, setup, teardown);
}
