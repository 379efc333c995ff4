/* SPDX-License-Identifier: Apache-2.0 */
/* Live migration under kill -9 (make torture-cluster; doc/cluster.md,
 * "Live migration"): two libvirt daemons on this machine (A and B,
 * tests/host/host2.sh), a vmactd on each with its arbiter on a fixed port,
 * vmact-groupd over both with short leases (lease_s 10), and one test
 * guest, persistent, opted in, busy on one thread.
 *
 * Each round asks vmact-groupd to move the guest to the other host and,
 * a random 0-4 s later, does one of: nothing, SIGKILL vmact-groupd,
 * SIGKILL the source's or the target's vmactd, abort the move on the
 * source (virDomainAbortJob, as libvirt failing it), lose vmact-groupd's
 * connections the moment the source pauses the guest (it reaches both
 * daemons through relays, tests/lib/relay.h: frozen, vmact-groupd killed,
 * cut 3 s later; the guest is left paused by libvirt), SIGKILL the
 * guest's QEMU on the source or on the target (0-1 s after libvirt's
 * migration job began: mid-move, or just after it), abort the move the
 * moment the source pauses the guest for its switch-over,
 * or, with VMACT_MIGRATE_TORTURE_LIBVIRTD set (make torture-cluster),
 * SIGKILL either libvirtd (A's started again as tests/host/setup-host.sh
 * starts it, B's by host2.sh restart: their QEMUs run on). The dead
 * process is started again. Once settled, each invariant that does not
 * hold is a violation:
 *
 *   - the guest runs on exactly one host and is defined there only;
 *     after a QEMU kill it may run nowhere (a guest whose QEMU died is
 *     not started again by anyone, as on a single host): then it is
 *     defined on exactly one host, no job is left, neither arbiter holds
 *     an entry for it, and the test starts it again there (a fresh boot);
 *   - it did not reboot: its status lines went on (seq rose);
 *   - its vmact metadata is what it was (layout aside);
 *   - its host's arbiter holds one entry for it, spoken for by that
 *     host's vmactd and not marked moving; the other arbiter holds none;
 *   - neither arbiter's reservations ever passed its watermark (sampled
 *     every 100 ms all along).
 *
 * The rounds run twice: migrate_torture_vm on an operator's VM (the test
 * guest, opted in), then migrate_torture_node on a group's member
 * (doc/cluster.md, "Moving a group's VMs"): each host a storage
 * pool of its own, a group `mt` with migration.enabled, its member (the
 * test guest booted from an overlay of the node image, claimed, idle) the
 * one moved, its disk with it. Its invariants differ where a member
 * differs: its entry at its host's arbiter is vmact-groupd's lease (no
 * vmactd speaks for it) and stays there while its QEMU is dead (a member
 * in service keeps its room); its overlay is in its host's pool and in no
 * other; its cluster metadata is kept (provider-host aside, which its
 * first move adds).
 *
 * Prints a line per round and a summary: rounds by fault, moves that
 * succeeded, violations (the goal is 0). VMACT_MIGRATE_TORTURE_ROUNDS
 * (default 3: make check's short run; make torture-cluster runs 50),
 * VMACT_MIGRATE_TORTURE_SEED (replays a run's choices) and
 * VMACT_MIGRATE_TORTURE_FAULT (one fault, by its name, in every round). Root, under the
 * shared lock. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "base/time.h"
#include "cluster/host/domxml.h"
#include "hotplug/hotplug.h"
#include "shared/lease.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/host2.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/proc.h"
#include "tests/lib/relay.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-mtt"
#define LIMIT_BOOT_S 180.0
#define SETTLE_S     240.0
#define KILL_MAX_MS  4000
#define LEASE_S      10

#define META                                                                            \
	"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS \
	"<vmact:migration enabled='true'/></vmact:autoscaling>"

/* The libvirtd kills last: only they are left out of make check's run. */
enum fault {
	F_NONE,
	F_GROUPD,
	F_VMACTD_SRC,
	F_VMACTD_DST,
	F_ABORT,
	F_CUT,
	F_QEMU_SRC,
	F_QEMU_DST,
	F_ABORT_PAUSE,
	F_LIBVIRTD_A,
	F_LIBVIRTD_B,
	N_FAULTS
};
static const char *const fault_names[] = {
	"none",           "kill groupd",          "kill source vmactd", "kill target vmactd",
	"abort",          "groupd lost at pause", "kill source qemu",   "kill target qemu",
	"abort at pause", "kill libvirtd a",      "kill libvirtd b"
};

static struct {
	struct th_cluster_stack s;
	struct tg_guest g;
	struct th_vmactd d[2]; /* A, B */
	unsigned port[2];
	char b_pid[16], cfg[160];
	virConnectPtr vc[2];
	/* vmact-groupd reaches each libvirtd through one (tests/lib/relay.h) */
	struct th_relay *relay[2];
	char relay_uri[2][300];
	char *meta;
	/* VMACT_MIGRATE_TORTURE_NODE: a group's member; each host's pool */
	bool node;
	char pool[2][64], pool_dir[2][160];
	/* the watermark sampler */
	pthread_t sampler;
	bool sampling;
	unsigned over; /* samples above a watermark */
	char over_what[256];
	unsigned seed, seed0; /* rand_r's state; the run's seed */
} fx;

static unsigned rnd(unsigned n)
{
	return (unsigned)(rand_r(&fx.seed) % n);
}

static bool runs_on(virConnectPtr c)
{
	return th_host2_runs_on(c, fx.g.name);
}

static bool defined_on(virConnectPtr c)
{
	return th_host2_defined_on(c, fx.g.name);
}

/* The guest's state on host h as libvirt says it, for a violation. */
static const char *dom_state(int h)
{
	static char buf[64];
	virDomainPtr d = virDomainLookupByName(fx.vc[h], fx.g.name);
	int state = -1, reason = -1;

	if (d) {
		virDomainGetState(d, &state, &reason, 0);
		virDomainFree(d);
	}
	virResetLastError();
	snprintf(buf, sizeof(buf), "state %d reason %d", state, reason);
	return buf;
}

static bool has_job(virConnectPtr c)
{
	virDomainPtr d = virDomainLookupByName(c, fx.g.name);
	virDomainJobInfo info;
	bool yes;

	if (!d) {
		virResetLastError();
		return false;
	}
	yes = virDomainGetJobInfo(d, &info) == 0 && info.type != VIR_DOMAIN_JOB_NONE;
	virResetLastError();
	virDomainFree(d);
	return yes;
}

/* Where the guest runs: 0 (A), 1 (B), -1 neither or both. */
static int host_of_guest(void)
{
	bool a = runs_on(fx.vc[0]), b = runs_on(fx.vc[1]);

	return a == b ? -1 : a ? 0 : 1;
}

static char *meta_now(int h)
{
	virDomainPtr d = virDomainLookupByName(fx.vc[h], fx.g.name);
	char *m = NULL, *w;

	if (!d) {
		virResetLastError();
		return NULL;
	}
	m = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, fx.node ? CL_DOMXML_NS : HP_NS_URI,
				 VIR_DOMAIN_AFFECT_CONFIG);
	virDomainFree(d);
	/* A member's provider-host comes with its first move. */
	if (m && fx.node) {
		char *a = strstr(m, " provider-host="), *e;

		/* (libvirt writes it back with either quote) */
		if (a && (e = strchr(a + 16, a[15])))
			memmove(a, e + 1, strlen(e + 1) + 1);
	}
	/* Layout aside: a move re-indents it. */
	w = m;
	for (char *r = m; r && *r; r++) {
		*w++ = *r;
		if (*r == '>')
			while (r[1] == ' ' || r[1] == '\n' || r[1] == '\t')
				r++;
	}
	if (w)
		*w = 0;
	return m;
}

/* Its metadata on host h is what it was; else says so in what. */
static bool meta_kept(int h, char *what, size_t len)
{
	char *meta = meta_now(h);
	bool same = meta && !strcmp(meta, fx.meta);

	if (!same)
		snprintf(what + strlen(what), len - strlen(what), "%sits metadata changed",
			 what[0] ? "; " : "");
	free(meta);
	return same;
}

/* ---- the watermark, sampled ---- */

static void *sample(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&fx.sampling, __ATOMIC_ACQUIRE)) {
		for (int h = 0; h < 2; h++) {
			struct vmact_lease_ledger l;

			if (th_host2_arbiter_ledger(fx.s.key, fx.port[h], &l) == 200 &&
			    (l.reserved.milli_cpu > l.watermark.milli_cpu ||
			     l.reserved.mem_bytes > l.watermark.mem_bytes)) {
				__atomic_add_fetch(&fx.over, 1, __ATOMIC_RELAXED);
				snprintf(fx.over_what, sizeof(fx.over_what),
					 "host %c: %u m reserved against %u m", 'a' + h,
					 l.reserved.milli_cpu, l.watermark.milli_cpu);
			}
		}
		usleep(100 * 1000);
	}
	return NULL;
}

/* The test's own connection to host h again, after its libvirtd died. */
static void reconnect(int h)
{
	if (fx.vc[h])
		virConnectClose(fx.vc[h]);
	fx.vc[h] = virConnectOpen(h ? TH_HOST2_URI : "qemu:///system");
	if (!fx.vc[h])
		fail_msg("cannot connect to host %c's libvirt again", 'a' + h);
	virResetLastError();
}

/* ---- settling and the invariants ---- */

struct settle {
	int host;
	bool dead; /* its QEMU killed: it runs nowhere (settled_dead) */
	char why[512];
};

/* A member's overlay is in host h's pool and in no other; else why. */
static bool volume_in(int h)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(fx.vc[h], fx.pool[h]);
	virStorageVolPtr v = NULL;
	char vol[160];

	if (p) {
		virStoragePoolRefresh(p, 0);
		snprintf(vol, sizeof(vol), "%s.qcow2", fx.g.name);
		v = virStorageVolLookupByName(p, vol);
		virStoragePoolFree(p);
	}
	virResetLastError();
	if (v)
		virStorageVolFree(v);
	return v != NULL;
}

static bool disk_only_on(int h, char *why, size_t len)
{
	if (!volume_in(h))
		return snprintf(why, len, "its disk is not in host %c's pool", 'a' + h), false;
	if (volume_in(!h))
		return snprintf(why, len, "its disk is in host %c's pool too", 'a' + !h), false;
	return true;
}

/* vmact-groupd lists a move it has not ended (a restarted one lists none
 * from before). */
static bool move_in_flight(void)
{
	/* Not answering yet: not settled either. */
	return th_host2_move_under_way(NULL, NULL, NULL) != 0;
}

/* The round is over: the guest on one host with no job, its entry there
 * spoken for and not moving, none at the other, no move listed in flight. */
static bool settled(void *arg)
{
	struct settle *st = arg;
	struct vmact_lease_pod pod;
	long other;
	int h = host_of_guest();

	if (move_in_flight())
		return snprintf(st->why, sizeof(st->why), "a move is in flight"), false;
	if (h < 0)
		return snprintf(st->why, sizeof(st->why), "runs on %s",
				runs_on(fx.vc[0]) ? "both hosts" : "no host"),
		       false;
	st->host = h;
	if (has_job(fx.vc[0]) || has_job(fx.vc[1]))
		return snprintf(st->why, sizeof(st->why), "a libvirt job is under way"), false;
	if (defined_on(fx.vc[!h]))
		return snprintf(st->why, sizeof(st->why), "defined on host %c too", 'a' + !h),
		       false;
	if (th_host2_arbiter_pod(fx.s.key, fx.port[h], "default", fx.g.name, &pod) != 200)
		return snprintf(st->why, sizeof(st->why), "host %c's arbiter has no entry",
				'a' + h),
		       false;
	if (fx.node && !disk_only_on(h, st->why, sizeof(st->why)))
		return false;
	if (fx.node ? !pod.leased || pod.moving : !pod.agent || pod.moving)
		return snprintf(st->why, sizeof(st->why),
				"host %c's entry: agent %d, moving %d (leased %d)", 'a' + h,
				pod.agent, pod.moving, pod.leased),
		       false;
	other = th_host2_arbiter_pod(fx.s.key, fx.port[!h], "default", fx.g.name, NULL);
	if (other != 404)
		return snprintf(st->why, sizeof(st->why), "host %c's arbiter answers %ld for it",
				'a' + !h, other),
		       false;
	return true;
}

/* After a QEMU kill: the guest runs nowhere, no job and no move is left,
 * it is defined on exactly one host (st->host), neither arbiter holds an
 * entry for it (the leases released or lapsed, vmactd forgot it). */
static bool settled_dead(struct settle *st)
{
	bool on[2];

	if (move_in_flight())
		return snprintf(st->why, sizeof(st->why), "a move is in flight"), false;
	if (runs_on(fx.vc[0]) || runs_on(fx.vc[1]))
		return snprintf(st->why, sizeof(st->why), "runs on both hosts"), false;
	if (has_job(fx.vc[0]) || has_job(fx.vc[1]))
		return snprintf(st->why, sizeof(st->why), "a libvirt job is under way"), false;
	on[0] = defined_on(fx.vc[0]);
	on[1] = defined_on(fx.vc[1]);
	if (on[0] == on[1])
		return snprintf(st->why, sizeof(st->why), "its QEMU died; defined on %s",
				on[0] ? "both hosts" : "no host"),
		       false;
	st->host = on[1];
	if (fx.node && !disk_only_on(st->host, st->why, sizeof(st->why)))
		return false;
	for (int h = 0; h < 2; h++) {
		long r = th_host2_arbiter_pod(fx.s.key, fx.port[h], "default", fx.g.name, NULL);

		/* A member in service keeps its lease where it is defined. */
		if (fx.node && h == st->host)
			continue;
		if (r != 404)
			return snprintf(st->why, sizeof(st->why),
					"its QEMU died; host %c's arbiter answers %ld for it",
					'a' + h, r),
			       false;
	}
	return true;
}

/* Whether the running vmact-groupd's log has text. */
static bool groupd_said(const char *text)
{
	_cleanup_free_ char *log = th_read_file(fx.s.glog);

	return log && strstr(log, text);
}

/* settled, or (after a QEMU kill) settled_dead. */
static bool settled_any(void *arg)
{
	struct settle *st = arg;

	st->dead = false;
	if (settled(st))
		return true;
	if (!runs_on(fx.vc[0]) && !runs_on(fx.vc[1]) && settled_dead(st))
		return st->dead = true;
	return false;
}

/* The guest's QEMU on host h: its pid from that libvirtd's pid file (B's
 * /run/libvirt is H2's run directory), the process checked to be that
 * guest's; 0 when none runs there. */
static long qemu_pid(int h)
{
	char path[256], cmd[64], arg[128], args[8192], *text;
	ssize_t n;
	long pid;
	bool ours;
	int fd;

	snprintf(path, sizeof(path), "%s/qemu/%s.pid", h ? "/run/vmact-mig/h2/run" : "/run/libvirt",
		 fx.g.name);
	text = th_read_file(path);
	pid = text ? atol(text) : 0;
	free(text);
	if (pid <= 1)
		return false;
	/* Its arguments, NUL-separated: -name guest=NAME,... */
	snprintf(cmd, sizeof(cmd), "/proc/%ld/cmdline", pid);
	snprintf(arg, sizeof(arg), "guest=%s,", fx.g.name);
	fd = open(cmd, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, args, sizeof(args)) : -1;
	if (fd >= 0)
		close(fd);
	ours = n > 0 && memmem(args, (size_t)n, arg, strlen(arg));
	return ours ? pid : 0;
}

/* SIGKILLs the guest's QEMU on host h, as a crash would. false when none
 * runs there. */
static bool kill_qemu(int h)
{
	long pid = qemu_pid(h);

	return pid > 1 && kill((pid_t)pid, SIGKILL) == 0;
}

/* The guest whose QEMU died started again on host h (where it is defined):
 * a fresh boot, its serial log emptied first (its status lines start
 * over), busy again. 0, or -1 with the reason in why. */
static int restart_guest(int h, char *why, size_t len)
{
	virDomainPtr d = virDomainLookupByName(fx.vc[h], fx.g.name);
	int r = -1;

	if (!d) {
		snprintf(why, len, "not defined on host %c to start", 'a' + h);
		virResetLastError();
		return -1;
	}
	if (truncate(fx.g.log, 0) < 0)
		snprintf(why, len, "its serial log: %s", strerror(errno));
	else if (virDomainCreate(d) < 0)
		snprintf(why, len, "start on host %c: %s", 'a' + h, virGetLastErrorMessage());
	else if (!th_wait_until(NULL, tg_booted, &fx.g,
				(uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		snprintf(why, len, "started again on host %c, never booted", 'a' + h);
	else if (!fx.node && tg_cmd(&fx.g, "busy 1") < 0)
		snprintf(why, len, "started again on host %c, its control port does not answer",
			 'a' + h);
	else
		r = 0;
	virResetLastError();
	virDomainFree(d);
	return r;
}

/* Waits (1 ms steps, 30 s at most) for libvirt's migration job of the
 * guest on host h: the move's memory copy began. */
static bool leaving(int h)
{
	double end = th_now_s() + 30.0;

	while (th_now_s() < end) {
		if (th_host2_leaving(fx.vc[h], fx.g.name))
			return true;
		usleep(1000);
	}
	return false;
}

/* ---- set-up ---- */

/* A member's group: the test guest from an overlay of the node image,
 * on either host, moved with its disk. */
static void write_node_cfg(void)
{
	char guest[PATH_MAX], kernel[PATH_MAX + 16], initrd[PATH_MAX + 16], url[2][64];
	json_t *tpl, *doc;
	char *text;

	if (!realpath(tg_guest_dir(), guest))
		fail_msg("guest dir: %s", strerror(errno));
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", guest);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", guest);
	for (int h = 0; h < 2; h++)
		snprintf(url[h], sizeof(url[h]), "http://127.0.0.1:%u", fx.port[h]);
	tpl = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s}", "domain_type", "qemu", "vcpus", 1,
			"memory", "256Mi", "kernel", kernel, "initrd", initrd, "cmdline",
			"console=ttyS0 loglevel=1 panic=-1 vmact.report=1", "base_volume",
			"node-base.qcow2", "serial_log_dir", fx.s.logs);
	doc = json_pack("{s:{s:s},s:{s:s},s:{s:s},s:{s:i},"
			"s:[{s:s,s:s,s:s,s:{s:s,s:s},s:{s:s}},{s:s,s:s,s:s,s:{s:s,s:s},s:{s:s}}],"
			"s:[{s:s,s:i,s:[s,s],s:o,s:{s:s},s:{s:b}}]}",
			"api", "socket", fx.s.sock, "metrics", "listen", "127.0.0.1:0", "libvirt",
			"name_prefix", PREFIX, "lifecycle", "lease_s", LEASE_S, "hosts", "name",
			"a", "uri", fx.relay_uri[0], "storage_pool", fx.pool[0], "arbiter", "url",
			url[0], "secret_file", fx.s.key, "migration", "address", "127.0.0.1",
			"name", "b", "uri", fx.relay_uri[1], "storage_pool", fx.pool[1], "arbiter",
			"url", url[1], "secret_file", fx.s.key, "migration", "address", "127.0.0.1",
			"groups", "id", "mt", "max", 1, "hosts", "a", "b", "template", tpl, "claim",
			"ack", "VMACT claimed", "migration", "enabled", 1);
	if (!doc)
		fail_msg("vmact-groupd's configuration does not pack");
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	snprintf(fx.cfg, sizeof(fx.cfg), "%s/groupd.json", fx.s.dir);
	if (!text || th_write_file(fx.cfg, text) < 0 ||
	    th_cluster_stack_own(&fx.s, fx.cfg, false, 0644) < 0)
		fail_msg("vmact-groupd's configuration");
	free(text);
}

/* The group's member in service: the one the rounds move. */
static bool member_in_service(void *arg)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, "mt"), *it = json_array_get(n, 0);
	const char *state = json_string_value(json_object_get(it, "state"));
	bool yes = state && !strcmp(state, "running");

	if (yes) {
		snprintf(fx.g.name, sizeof(fx.g.name), "%s",
			 json_string_value(json_object_get(it, "name")) ?: "");
		snprintf(fx.g.log, sizeof(fx.g.log), "%s/%s.log", fx.s.logs, fx.g.name);
	}
	(void)arg;
	json_decref(n);
	return yes;
}

static void write_cfg(void)
{
	char extra[64];

	snprintf(extra, sizeof(extra), ",\"lifecycle\":{\"lease_s\":%d}", LEASE_S);
	snprintf(fx.cfg, sizeof(fx.cfg), "%s/groupd.json", fx.s.dir);
	if (th_host2_groupd_cfg_uri(fx.cfg, fx.s.sock, fx.s.key, fx.relay_uri[0], fx.relay_uri[1],
				    fx.port[0], fx.port[1], 0, extra) < 0 ||
	    th_cluster_stack_own(&fx.s, fx.cfg, false, 0644) < 0)
		fail_msg("vmact-groupd's configuration");
}

static int setup(void **state)
{
	char msg[512], prefix[64];
	const char *seed = getenv("VMACT_MIGRATE_TORTURE_SEED");

	(void)state;
	if (seed)
		fx.seed = (unsigned)strtoul(seed, NULL, 10);
	else if (getrandom(&fx.seed, sizeof(fx.seed), 0) != sizeof(fx.seed))
		fx.seed = (unsigned)time(NULL);
	fx.seed0 = fx.seed;
	print_message("seed %u (VMACT_MIGRATE_TORTURE_SEED replays it)\n", fx.seed);
	if (th_host2_fixture(fx.b_pid, sizeof(fx.b_pid), &fx.vc[0], &fx.vc[1], &fx.s, PREFIX,
			     &fx.d[0], &fx.d[1]) < 0)
		return -1;
	if (fx.node) {
		/* Each host a pool of its own; the member comes from
		 * vmact-groupd (migrate_torture). */
		for (int h = 0; h < 2; h++) {
			snprintf(fx.pool[h], sizeof(fx.pool[h]), "vmact-mtt-%c-%d", 'a' + h,
				 (int)getpid());
			snprintf(fx.pool_dir[h], sizeof(fx.pool_dir[h]), "%s/pool-%c", fx.s.dir,
				 'a' + h);
			if (th_cluster_pool(fx.vc[h], NULL, fx.pool[h], fx.pool_dir[h]) < 0)
				return -1;
		}
	} else {
		if (th_host2_guest(fx.vc[0], PREFIX, META, fx.d[0].dir, true, &fx.g, msg,
				   sizeof(msg)) < 0) {
			print_error("guest: %s\n", msg);
			return -1;
		}
		if (!th_wait_until(NULL, tg_booted, &fx.g,
				   (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
			return -1;
		if (tg_cmd(&fx.g, "busy 1") < 0)
			return -1;
	}
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_host2_vmactd(&fx.d[0], prefix, fx.s.key, NULL, 2, &fx.port[0]) < 0 ||
	    th_host2_vmactd(&fx.d[1], prefix, fx.s.key, fx.b_pid, 2, &fx.port[1]) < 0)
		return -1;
	for (int h = 0; h < 2; h++) {
		static const char *const daemon[] = { "/run/libvirt/libvirt-sock",
						      TH_HOST2_SOCKET };
		char dir[128], path[256];

		if (th_cluster_stack_user_dir(&fx.s, h ? "relay-b" : "relay-a", dir, sizeof(dir)) <
		    0)
			return -1;
		snprintf(path, sizeof(path), "%s/sock", dir);
		if (th_relay_start(path, daemon[h], &fx.relay[h]) < 0)
			return -1;
		snprintf(fx.relay_uri[h], sizeof(fx.relay_uri[h]), "qemu+unix:///system?socket=%s",
			 path);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (fx.sampling) {
		__atomic_store_n(&fx.sampling, false, __ATOMIC_RELEASE);
		pthread_join(fx.sampler, NULL);
	}
	th_cluster_stack_teardown(&fx.s);
	th_relay_stop(fx.relay[0]);
	th_relay_stop(fx.relay[1]);
	th_vmactd_teardown(&fx.d[0]);
	th_vmactd_teardown(&fx.d[1]);
	th_host2_guest_remove(fx.vc, 2, &fx.g);
	for (int h = 0; fx.node && h < 2; h++)
		th_cluster_pool_remove(fx.vc[h], fx.pool[h]);
	for (int i = 0; i < 2; i++)
		if (fx.vc[i])
			virConnectClose(fx.vc[i]);
	free(fx.meta);
	th_host2_down();
	/* The next test's fixture starts from nothing. */
	memset(&fx, 0, sizeof(fx));
	return 0;
}

static int setup_vm(void **state)
{
	fx.node = false;
	return setup(state);
}

static int setup_node(void **state)
{
	fx.node = true;
	return setup(state);
}

/* ---- the rounds ---- */

/* Waits (1 ms steps, the move's time at most) for the guest paused by the
 * move on host h: QEMU has sent the last of it. false when the move ended
 * first. */
static bool paused_by_move(int h)
{
	double end = th_now_s() + SETTLE_S;
	bool left = false; /* its migration job was seen */

	for (unsigned i = 0; th_now_s() < end; i++) {
		virDomainPtr d = virDomainLookupByName(fx.vc[h], fx.g.name);
		int state = 0, reason = 0;
		bool paused;

		if (!d) {
			virResetLastError();
			return false;
		}
		paused = virDomainGetState(d, &state, &reason, 0) == 0 &&
			 state == VIR_DOMAIN_PAUSED && reason == VIR_DOMAIN_PAUSED_MIGRATION;
		virDomainFree(d);
		if (paused)
			return true;
		if (th_host2_leaving(fx.vc[h], fx.g.name))
			left = true;
		else if (left ||
			 (i % 200 == 199 && th_host2_move_under_way(fx.g.name, NULL, NULL) != 1))
			return false; /* the job ended, or the move before it */
		usleep(1000);
	}
	return false;
}

static void migrate_torture(void **state)
{
	const char *env = getenv("VMACT_MIGRATE_TORTURE_ROUNDS");
	unsigned rounds = env ? (unsigned)atoi(env) : 3, violations = 0, moved = 0, dead = 0,
		 wedged = 0;
	/* The libvirtd kills only when asked (make torture-cluster: they
	 * restart the host's own libvirtd). Killing B's lost the guest twice
	 * on 2026-11-29 until host2.sh's restart kept B's state. */
	bool libvirtd_kills = getenv("VMACT_MIGRATE_TORTURE_LIBVIRTD") != NULL;
	unsigned by_fault[N_FAULTS] = { 0 };
	/* VMACT_MIGRATE_TORTURE_FAULT: that fault (its name) in every round. */
	const char *only_env = getenv("VMACT_MIGRATE_TORTURE_FAULT");
	int only = -1;
	struct tg_report rep;
	unsigned long seq;
	int host;

	(void)state;
	if (!rounds)
		rounds = 3;
	for (int f = 0; only_env && f < N_FAULTS; f++)
		if (!strcmp(only_env, fault_names[f]))
			only = f;
	if (only_env && only < 0)
		fail_msg("VMACT_MIGRATE_TORTURE_FAULT: no fault called \"%s\"", only_env);
	if (fx.node)
		write_node_cfg();
	else
		write_cfg();
	if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, SETTLE_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start");
	th_host2_move_socket(fx.s.sock);
	if (fx.node) {
		assert_int_equal(th_cluster_stack_change(&fx.s, "mt", "increase", "{\"delta\":1}"),
				 1);
		if (!th_wait_daemon(&fx.s.gd, member_in_service, NULL, SETTLE_S) ||
		    !th_wait_until(NULL, tg_booted, &fx.g,
				   (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
			th_cluster_stack_fail(&fx.s, "the group's member never went into service");
		print_message("the member: %s\n", fx.g.name);
	}
	{
		struct settle st = { 0 };

		if (!th_wait_until(NULL, settled, &st, (uint64_t)(SETTLE_S * VMACT_USEC_PER_SEC)))
			th_cluster_stack_fail(&fx.s, "not settled before the first round: %s",
					      st.why);
		host = st.host;
	}
	fx.meta = meta_now(host);
	assert_non_null(fx.meta);
	assert_true(tg_report(&fx.g, &rep));
	seq = rep.seq;
	fx.sampling = true;
	assert_int_equal(pthread_create(&fx.sampler, NULL, sample, NULL), 0);

	for (unsigned r = 1; r <= rounds; r++) {
		enum fault f = only >= 0
				       ? (enum fault)only
				       : (enum fault)rnd(libvirtd_kills ? N_FAULTS : F_LIBVIRTD_A);
		unsigned delay_ms = rnd(KILL_MAX_MS + 1);
		int to = !host;
		char path[256], body[64], what[640] = "";
		struct settle st = { 0 };
		long status = 0;
		json_t *doc;
		double t0 = th_now_s();
		long pid0 = qemu_pid(host);
		bool ok = true, may_die;

		by_fault[f]++;
		snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.g.name);
		snprintf(body, sizeof(body), "{\"to\":\"%c\"}", 'a' + to);
		doc = th_cluster_stack_api(&fx.s, "POST", path, body, &status);
		json_decref(doc);
		if (status != 202) {
			snprintf(what, sizeof(what), "the move was refused (%ld)", status);
			ok = false;
		}
		if (f == F_QEMU_SRC || f == F_QEMU_DST) {
			/* Mostly mid-move: once the memory copy began. */
			if (!leaving(host))
				snprintf(what, sizeof(what), "(no migration job seen) ");
			/* A move of the test guest copies for 1-2 s here. */
			delay_ms = delay_ms * 1000 / (KILL_MAX_MS + 1);
		}
		if (f != F_CUT && f != F_ABORT_PAUSE)
			usleep(delay_ms * 1000);
		switch (f) {
		case F_NONE:
			break;
		case F_GROUPD:
			th_proc_stop(&fx.s.gd, SIGKILL, 0);
			if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, SETTLE_S) < 0)
				th_cluster_stack_fail(&fx.s, "vmact-groupd did not start again");
			break;
		case F_VMACTD_SRC:
		case F_VMACTD_DST: {
			int h = f == F_VMACTD_SRC ? host : to;

			if (th_host2_vmactd_respawn(&fx.d[h], h ? fx.b_pid : NULL) < 0)
				fail_msg("vmactd %c did not start again", 'a' + h);
			break;
		}
		case F_LIBVIRTD_A:
			/* SIGKILL, then started as setup-host.sh starts it. */
			system("kill -9 $(pgrep -x -u root libvirtd) 2>/dev/null");
			if (th_restart_libvirtd() < 0)
				fail_msg("libvirtd a did not start again");
			reconnect(0);
			break;
		case F_LIBVIRTD_B:
			if (th_host2_restart(fx.b_pid, sizeof(fx.b_pid)) < 0)
				fail_msg("libvirtd b did not start again");
			reconnect(1);
			break;
		case F_CUT:
			/* The connections of vmact-groupd lost the moment the
			 * source pauses the guest (test_migrate's
			 * orphan_recovered, at this round's pace): relays
			 * frozen, vmact-groupd killed, QEMU given 3 s, the
			 * daemons see the connections go. */
			if (!paused_by_move(host)) {
				snprintf(what, sizeof(what), "(the move never paused the guest) ");
				break;
			}
			th_relay_freeze(fx.relay[0], true);
			th_relay_freeze(fx.relay[1], true);
			th_proc_stop(&fx.s.gd, SIGKILL, 0);
			sleep(3);
			th_relay_cut(fx.relay[0]);
			th_relay_cut(fx.relay[1]);
			th_relay_freeze(fx.relay[0], false);
			th_relay_freeze(fx.relay[1], false);
			if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, SETTLE_S) < 0)
				th_cluster_stack_fail(&fx.s, "vmact-groupd did not start again");
			break;
		case F_QEMU_SRC:
		case F_QEMU_DST: {
			int h = f == F_QEMU_SRC ? host : to;

			if (!kill_qemu(h))
				snprintf(what + strlen(what), sizeof(what) - strlen(what),
					 "(no QEMU of it on %c) ", 'a' + h);
			break;
		}
		case F_ABORT_PAUSE:
			/* The operator's abort the moment the guest pauses for
			 * its switch-over (a group's VM: libvirt pauses before it
			 * to finish the disks' copy): libvirt 9.0 can then wait
			 * for a pause that never comes (doc/cluster.md, "Moving a
			 * group's VMs"). */
			if (!paused_by_move(host)) {
				snprintf(what, sizeof(what), "(the move never paused the guest) ");
				break;
			}
			/* fall through */
		case F_ABORT: {
			virDomainPtr d = virDomainLookupByName(fx.vc[host], fx.g.name);

			if (d) {
				virDomainAbortJob(d); /* no job (ended, not begun): nothing */
				virDomainFree(d);
			}
			virResetLastError();
			break;
		}
		default:
			break;
		}
		/* A group's VM whose move was aborted as it paused for the
		 * switch-over may end stopped: QEMU 7.2 never ends that
		 * migration, and vmact-groupd stops the VM it owns
		 * (cl_migrate_live); the only other way to die is its QEMU's
		 * kill. */
		may_die = f == F_QEMU_SRC || f == F_QEMU_DST ||
			  (fx.node && (f == F_ABORT || f == F_ABORT_PAUSE));
		if (!th_wait_until(NULL, may_die ? settled_any : settled, &st,
				   (uint64_t)(SETTLE_S * VMACT_USEC_PER_SEC))) {
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 "%snot settled: %s", what[0] ? "; " : "", st.why);
			ok = false;
		} else if (st.dead) {
			/* Its metadata kept where it is defined; then a fresh
			 * boot there, which its host's vmactd takes on. */
			char why[256];

			dead++;
			host = st.host;
			ok &= meta_kept(host, what, sizeof(what));
			if (f == F_ABORT || f == F_ABORT_PAUSE) {
				if (groupd_said("the move stuck")) {
					wedged++;
				} else {
					snprintf(what + strlen(what), sizeof(what) - strlen(what),
						 "%sstopped after an abort, vmact-groupd saying "
						 "nothing of a stuck move",
						 what[0] ? "; " : "");
					ok = false;
				}
			}
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 "%sdied, defined on %c; started again", what[0] ? "; " : "",
				 'a' + host);
			if (restart_guest(host, why, sizeof(why)) < 0) {
				snprintf(what + strlen(what), sizeof(what) - strlen(what), ": %s",
					 why);
				ok = false;
			} else if (!th_wait_until(NULL, settled, &st,
						  (uint64_t)(SETTLE_S * VMACT_USEC_PER_SEC)) ||
				   st.host != host) {
				snprintf(what + strlen(what), sizeof(what) - strlen(what),
					 "; not settled after: %s", st.why);
				ok = false;
			} else if (!tg_report(&fx.g, &rep)) {
				snprintf(what + strlen(what), sizeof(what) - strlen(what),
					 "; no status line after");
				ok = false;
			} else {
				seq = rep.seq;
			}
		} else {
			bool stayed = st.host == host;

			moved += !stayed;
			host = st.host;
			ok &= meta_kept(host, what, sizeof(what));
			if (fx.node && stayed) {
				/* A member's console log is the file a QEMU's start
				 * on the other host replaced (its host's virtlogd,
				 * append off; one path for both hosts here): that it
				 * runs on is told by its QEMU, the one it ran in
				 * before the round. */
				long pid = qemu_pid(host);

				if (pid != pid0) {
					snprintf(what + strlen(what), sizeof(what) - strlen(what),
						 "%sits QEMU on %c is another (%ld, was %ld)",
						 what[0] ? "; " : "", 'a' + host, pid, pid0);
					ok = false;
				}
			} else if (!tg_wait(&fx.g, seq, NULL, NULL, SETTLE_S, &rep)) {
				struct stat sb;
				bool any = tg_report(&fx.g, &rep);

				snprintf(what + strlen(what), sizeof(what) - strlen(what),
					 "%sthe guest stopped reporting (its last line: %s%lu, "
					 "before: %lu; its log %lld bytes; state on %c: %s)",
					 what[0] ? "; " : "", any ? "seq " : "none ",
					 any ? rep.seq : 0, seq,
					 stat(fx.g.log, &sb) == 0 ? (long long)sb.st_size : -1LL,
					 'a' + host, dom_state(host));
				ok = false;
			} else {
				seq = rep.seq;
			}
		}
		if (!ok)
			violations++;
		print_message("round %u: %-20s at %4u ms: on %c after %.1f s%s%s\n", r,
			      fault_names[f], delay_ms, 'a' + host, th_now_s() - t0,
			      ok ? (what[0] ? "; " : "") : "; VIOLATION: ", what);
	}
	__atomic_store_n(&fx.sampling, false, __ATOMIC_RELEASE);
	pthread_join(fx.sampler, NULL);
	if (fx.over) {
		violations++;
		print_message("VIOLATION: a watermark passed %u times (%s)\n", fx.over,
			      fx.over_what);
	}
	print_message("summary: %u rounds (", rounds);
	for (int f = 0; f < N_FAULTS; f++)
		print_message("%s%s %u", f ? ", " : "", fault_names[f], by_fault[f]);
	print_message("), %u moved, %u died with their QEMU (%u of them stopped by vmact-groupd: "
		      "the move stuck), violations %u\n",
		      moved, dead, wedged, violations);
	if (violations)
		th_cluster_stack_fail(&fx.s, "%u violations (seed %u)", violations, fx.seed0);
}

static void migrate_torture_vm(void **state)
{
	migrate_torture(state);
}

static void migrate_torture_node(void **state)
{
	migrate_torture(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(migrate_torture_vm, setup_vm, teardown),
		cmocka_unit_test_setup_teardown(migrate_torture_node, setup_node, teardown),
	};

	if (!th_root_test("test_migrate_torture", "two libvirt daemons, vmactd, vmact-groupd"))
		return 1;
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("migrate_torture", tests, NULL, NULL);
}
