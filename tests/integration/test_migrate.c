/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd moves a running VM to another host (doc/cluster.md, "Live
 * migration"): two real libvirt daemons on this machine (A, the system
 * one, and B, tests/host/host2.sh: its own host UUID, run directories and
 * cgroup tree), a vmactd on each with its arbiter's lease interface (A's
 * arbiter the defaults' 1.8 CPUs of this 2-CPU host, B's with CPU
 * overcommitted twice: 3.6), vmact-groupd over both as its own user, and
 * the project's TCG test guest, persistent (its definition moves too),
 * reporting on its serial log (opened in append mode: both QEMUs write it
 * in turn). The cases run in order on the one guest:
 *
 *   refused_until_opted_in  a VM without <vmact:migration enabled='true'/>
 *                           is not moved (409, the reason named); an
 *                           unknown VM is not found; with A full (a lease
 *                           of the test's own, the ballast, takes its
 *                           room) and the guest busy, relief says it has
 *                           not opted in and moves nothing;
 *   relief_moves_it         opted in, refused at A: vmact-groupd moves it
 *                           to B on its own (reason pressure, the figures
 *                           in the event), A's vmactd stopped resizing it
 *                           first (frozen); on B it runs with its
 *                           definition and vmact metadata, B's vmactd
 *                           manages it and grows it; A's arbiter holds
 *                           nothing of it, B's does; its lines go on;
 *   moves_by_command        `vmact-groupctl migrate VM --to a --wait`
 *                           brings it back (a command is not held by the
 *                           rest after a move); refused at A again, it
 *                           moved just now: relief says so instead;
 *                           listed, counted in vmact_migrations_total;
 *   drain_undrain           `vmact-groupctl drain a`: the guest leaves A
 *                           (reason drain), A is out of placement (a
 *                           command to move it there is refused), and
 *                           back after `undrain a`;
 *   moves_back_to_best      moved without a target: the host with room
 *                           (A) is chosen, and it runs there;
 *   failed_move_retried     vmact-groupd restarted (moves to B slowed),
 *                           A full, the guest refused: relief moves it and
 *                           the move is aborted on A; undone (on A only,
 *                           B holds nothing of it, A's mark gone, vmactd A
 *                           manages it), the reason listed, relief says it
 *                           rests, and after the backoff the move succeeds.
 *
 * After each move the guest's control socket is bound again in the QEMU it
 * runs in (th_host2_rebind_ctl: the source's QEMU unlinked it as it
 * exited). Root; B is stopped at the end unless VMACT_TEST_HOST2_KEEP is set.
 * Conditions are awaited with generous safety limits; nothing is timed. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "base/time.h"
#include "hotplug/hotplug.h"
#include "shared/lease.h"
#include "tests/lib/cluster.h"
#include "tests/lib/ctl.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/host2.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/relay.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-mgr"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      180.0
/* What vmactd logs as it stops resizing a VM being moved away. */
#define VMACTD_FROZEN_LINE "frozen for migration"

#define META_HEAD "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS
/* The same opted in, as virDomainSetMetadata takes it (libvirt adds the
 * namespace and its prefix). */
#define META_OPTED_IN                                            \
	"<autoscaling enabled='true'><cpu min='1' max='4'/>"     \
	"<memory min='512Mi' max='1536Mi' method='virtio-mem'/>" \
	"<compute-unit cpu='250m' memory='256Mi'/><migration enabled='true'/></autoscaling>"

static struct {
	struct th_cluster_stack s;
	struct tg_guest g;
	struct th_vmactd a, b;
	unsigned port_a, port_b; /* their arbiters */
	char b_pid[16];
	char cfg[160];
	virConnectPtr vca, vcb;
} fx;

/* ---- vmactd on each host, with its arbiter's lease interface ---- */

static unsigned start_vmactd(struct th_vmactd *d, const char *b_pid, double overcommit)
{
	char prefix[64];
	unsigned arb = 0;

	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_host2_vmactd(d, prefix, fx.s.key, b_pid, overcommit, &arb) < 0)
		fail_msg("vmactd did not start with its arbiter");
	return arb;
}

/* The guest's entry at the arbiter on port. */
static long arbiter_pod(unsigned port, struct vmact_lease_pod *pod)
{
	return th_host2_arbiter_pod(fx.s.key, port, "default", fx.g.name, pod);
}

/* ---- the cluster layer ---- */

/* b_bandwidth 0: libvirt's own speed and the default scheduler profile;
 * else moves to B slowed to that and a profile that reserves nothing (no
 * Reserve plugin: the move holds the target's room with a lease of its
 * own, doc/cluster.md, "Live migration"). */
static void write_groupd_cfg(unsigned b_bandwidth)
{
	snprintf(fx.cfg, sizeof(fx.cfg), "%s/groupd.json", fx.s.dir);
	assert_int_equal(th_host2_groupd_cfg(fx.cfg, fx.s.sock, fx.s.key, fx.port_a, fx.port_b,
					     b_bandwidth,
					     b_bandwidth
						     ? ",\"scheduler\":{\"profiles\":[{\"plugins\":"
						       "{\"reserve\":{\"disabled\":[{\"name\":"
						       "\"*\"}]}}}]}"
						     : ""),
			 0);
	assert_int_equal(th_cluster_stack_own(&fx.s, fx.cfg, false, 0644), 0);
}

/* ---- what runs where ---- */

static bool runs_on(virConnectPtr c)
{
	return th_host2_runs_on(c, fx.g.name);
}

static bool leaving_a_now(void)
{
	return th_host2_leaving(fx.vca, fx.g.name);
}

static bool defined_on(virConnectPtr c)
{
	return th_host2_defined_on(c, fx.g.name);
}

static bool managed_by(void *arg)
{
	const struct th_vmactd *d = arg;
	char msg[256];
	json_t *doc = th_ctl_vm(d->sock, fx.g.name, msg, sizeof(msg));
	bool yes = doc != NULL;

	json_decref(doc);
	return yes;
}

static bool no_entry_at(void *arg)
{
	return arbiter_pod(*(unsigned *)arg, NULL) == 404;
}

static char *meta_of(virConnectPtr c)
{
	virDomainPtr d = virDomainLookupByName(c, fx.g.name);
	char *m;

	assert_non_null(d);
	m = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI,
				 VIR_DOMAIN_AFFECT_CONFIG);
	virDomainFree(d);
	assert_non_null(m);
	return m;
}

/* ---- set-up ---- */

static int setup(void **state)
{
	char meta[1024], msg[512];

	(void)state;
	if (th_host2_fixture(fx.b_pid, sizeof(fx.b_pid), &fx.vca, &fx.vcb, &fx.s, PREFIX, &fx.a,
			     &fx.b) < 0)
		return -1;
	/* Not opted in yet (the first case); persistent, as an operator's
	 * VMs are: its definition moves too. */
	snprintf(meta, sizeof(meta), META_HEAD "</vmact:autoscaling>");
	if (th_host2_guest(fx.vca, PREFIX, meta, fx.a.dir, true, &fx.g, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		return -1;
	}
	fx.port_a = 0;
	return 0;
}

static int teardown(void **state)
{
	virConnectPtr c[2] = { fx.vca, fx.vcb };

	(void)state;
	th_cluster_stack_teardown(&fx.s);
	th_vmactd_teardown(&fx.a);
	th_vmactd_teardown(&fx.b);
	th_host2_guest_remove(c, 2, &fx.g);
	if (fx.vca)
		virConnectClose(fx.vca);
	if (fx.vcb)
		virConnectClose(fx.vcb);
	th_host2_down();
	return 0;
}

/* Everything up: the guest booted (idle), both vmactds, groupd. */
static void stack_up(void)
{
	if (fx.port_a)
		return;
	if (!th_wait_until(NULL, tg_booted, &fx.g, (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		fail_msg("the guest did not boot");
	fx.port_a = start_vmactd(&fx.a, NULL, 1);
	fx.port_b = start_vmactd(&fx.b, fx.b_pid, 2);
	if (!th_vmactd_wait(&fx.a, managed_by, &fx.a, LIMIT_S))
		fail_msg("vmactd A does not manage %s", fx.g.name);
	write_groupd_cfg(0);
	if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start, or never found its VMs");
	th_host2_move_socket(fx.s.sock);
}

/* ---- the cases ---- */

/* On the host it runs on (A until a case moved it). */
static void opt_in(void)
{
	virDomainPtr d = virDomainLookupByName(runs_on(fx.vcb) ? fx.vcb : fx.vca, fx.g.name);

	assert_non_null(d);
	assert_int_equal(virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, META_OPTED_IN,
					      HP_NS_PREFIX, HP_NS_URI,
					      VIR_DOMAIN_AFFECT_LIVE | VIR_DOMAIN_AFFECT_CONFIG),
			 0);
	virDomainFree(d);
}

#define ended th_host2_move

static struct th_host2_move wait_move(const char *reason, uint64_t after_id)
{
	struct th_host2_move e = { .vm = fx.g.name, .reason = reason, .after_id = after_id };

	if (!th_wait_until(NULL, th_host2_move_ended, &e,
			   (uint64_t)(LIMIT_S * 2 * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "no move of %s (%s) ended", fx.g.name,
				      reason ? reason : "any reason");
	print_message("move %llu (%s): %s -> %s %s, downtime %lld ms%s%s%s%s\n",
		      (unsigned long long)e.id, reason ? reason : "?", e.from, e.to, e.result,
		      (long long)e.downtime_ms, e.why[0] ? "; " : "", e.why, e.error[0] ? "; " : "",
		      e.error);
	if (strcmp(e.result, "success"))
		th_cluster_stack_fail(&fx.s, "the move failed: %s", e.error);
	return e;
}

/* The host's document from GET /v1/hosts (the caller's). */
static json_t *host_doc(const char *name)
{
	long status = 0;
	json_t *doc = th_cluster_stack_api(&fx.s, "GET", "/v1/hosts", NULL, &status), *h, *r = NULL;
	size_t i;

	json_array_foreach(json_object_get(doc, "hosts"), i, h)
		if (!strcmp(json_string_value(json_object_get(h, "name")) ?: "", name))
			r = json_incref(h);
	json_decref(doc);
	return r;
}

struct relief_says {
	const char *host, *what;
};

/* vmact-groupd's log (the running one's) has the text arg. */
static bool groupd_said(void *arg)
{
	return th_count_in_file(fx.s.glog, arg) >= 1;
}

static bool relief_says(void *arg)
{
	const struct relief_says *rs = arg;
	json_t *h = host_doc(rs->host);
	const char *t = json_string_value(json_object_get(h, "relief"));
	bool yes = t && strstr(t, rs->what);

	json_decref(h);
	return yes;
}

/* The guest runs on c only, defined there only (awaited: the source's
 * domain goes a moment after the move's end). */
static bool only_on_now(void *c)
{
	virConnectPtr other = c == fx.vca ? fx.vcb : fx.vca;

	return runs_on(c) && !runs_on(other) && !defined_on(other);
}

static void only_on(virConnectPtr c, const char *what)
{
	if (!th_wait_until(NULL, only_on_now, c, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "%s: not running on one host only", what);
}

/* vmactd B resized the guest (grew it: it arrived at A's size, refused
 * more there). */
static bool grown_on_b(void *arg)
{
	char needle[256];

	(void)arg;
	snprintf(needle, sizeof(needle), "%s: resized to ", fx.g.name);
	return th_vmactd_log_has(&fx.b, needle);
}

static bool fits_a(void *arg)
{
	struct vmact_lease_pod pod;

	(void)arg;
	return arbiter_pod(fx.port_b, &pod) == 200 && pod.size.milli_cpu <= 1500;
}

static bool metric_is(const char *line)
{
	char url[128], *page;
	bool yes;

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", fx.s.metrics_port);
	page = th_cluster_http_get(url);
	yes = page && strstr(page, line);
	free(page);
	return yes;
}

/* The guest told line, wherever it runs; its report with busy == n. */
static void busy(unsigned n)
{
	char line[16];
	struct tg_report r;

	snprintf(line, sizeof(line), n ? "busy %u" : "idle", n);
	assert_int_equal(tg_cmd(&fx.g, line), 0);
	if (!tg_wait(&fx.g, 0, tg_busy_eq, &n, LIMIT_S, &r))
		fail_msg("the guest did not run %u busy loops", n);
}

/* After a move: the guest's control socket in the QEMU it runs in now. */
static void rebind(virConnectPtr c)
{
	if (th_host2_rebind_ctl(c == fx.vca ? "qemu:///system" : TH_HOST2_URI, &fx.g) < 0)
		fail_msg("cannot bind the guest's control socket again");
}

/* A's room taken by a lease of the test's own (the ballast), leaving the
 * guest only what it holds now: its next step up is refused. */
static void ballast_on(void)
{
	struct vmact_lease_pod pod;
	uint32_t take;

	assert_int_equal(arbiter_pod(fx.port_a, &pod), 200);
	take = 1800 - pod.size.milli_cpu;
	print_message("ballast: %u m at A beside the guest's %u m\n", take, pod.size.milli_cpu);
	assert_int_equal(th_host2_arbiter_lease(fx.s.key, fx.port_a, "test", "ballast", take, 3600),
			 200);
}

static void ballast_off(void)
{
	assert_int_equal(th_host2_arbiter_lease(fx.s.key, fx.port_a, "test", "ballast", 0, 0), 200);
}

static void run_groupctl(const char *const *args, char *out, size_t len, int *rc)
{
	char groupctl[PATH_MAX];
	const char *argv[16] = { groupctl, "-s", fx.s.sock };
	const struct th_spawn_opts o = { .out = TH_OUT_PIPE, .err = TH_OUT_PIPE };
	struct th_proc p = { 0 };
	size_t n = 3;

	snprintf(groupctl, sizeof(groupctl), "%s", fx.s.groupd);
	*strrchr(groupctl, '/') = 0;
	strncat(groupctl, "/vmact-groupctl", sizeof(groupctl) - strlen(groupctl) - 1);
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	out[0] = 0;
	th_read_fd_all(p.out_fd, out, len);
	*rc = th_proc_wait(&p);
	print_message("vmact-groupctl %s: exit %d\n%s", argv[3], *rc, out);
}

/* Metadata as libvirt keeps it, its layout aside (a move re-indents it). */
static void squeeze(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (*r == '>') {
			*w++ = *r;
			while (r[1] == ' ' || r[1] == '\n' || r[1] == '\t')
				r++;
			continue;
		}
		*w++ = *r;
	}
	*w = 0;
}

static void refused_until_opted_in(void **state)
{
	struct relief_says rs = { "a", "not opted in" };
	char path[256];
	long status = 0;
	json_t *doc;
	const char *text;

	(void)state;
	stack_up();
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.g.name);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{\"to\":\"b\"}", &status);
	text = json_string_value(json_object_get(doc, "error"));
	print_message("not opted in: %ld %s\n", status, text ? text : "(no error)");
	assert_int_equal(status, 409);
	assert_non_null(text);
	assert_non_null(strstr(text, "has not opted in"));
	assert_string_equal(json_string_value(json_object_get(doc, "reason")), "precondition");
	json_decref(doc);
	/* An unknown VM is not found. */
	doc = th_cluster_stack_api(&fx.s, "POST", "/v1/vms/no-such-vm-here/migrate", "{}", &status);
	json_decref(doc);
	assert_int_equal(status, 404);
	/* A full: relief says why nothing moves, and moves nothing. */
	ballast_on();
	busy(1);
	if (!th_wait_until(NULL, relief_says, &rs, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s,
				      "host a's relief never said the guest has not opted in");
	only_on(fx.vca, "not opted in");
}

static void relief_moves_it(void **state)
{
	struct tg_report before, after;
	struct vmact_lease_pod pod;
	struct th_host2_move e;
	char *meta_before, *meta_after;
	unsigned pa;

	(void)state;
	stack_up();
	meta_before = meta_of(fx.vca);
	assert_true(tg_report(&fx.g, &before));
	/* Opted in, refused at A: relief moves it. */
	opt_in();
	free(meta_before);
	meta_before = meta_of(fx.vca);
	assert_non_null(strstr(meta_before, "migration"));
	e = wait_move("pressure", 0);
	assert_string_equal(e.from, "a");
	assert_string_equal(e.to, "b");
	assert_non_null(strstr(e.why, "over its watermark"));
	assert_true(e.downtime_ms >= 0);
	only_on(fx.vcb, "after relief");
	meta_after = meta_of(fx.vcb);
	squeeze(meta_before);
	squeeze(meta_after);
	assert_string_equal(meta_before, meta_after);
	free(meta_before);
	free(meta_after);
	/* A stopped resizing it before libvirt moved it. */
	assert_true(th_vmactd_log_has(&fx.a, VMACTD_FROZEN_LINE));
	/* B manages it and gives it what A could not. */
	if (!th_vmactd_wait(&fx.b, managed_by, &fx.b, LIMIT_S))
		fail_msg("vmactd B does not manage %s after the move", fx.g.name);
	if (!th_vmactd_wait(&fx.b, grown_on_b, NULL, LIMIT_S))
		fail_msg("vmactd B never grew %s, refused at A", fx.g.name);
	assert_int_equal(arbiter_pod(fx.port_b, &pod), 200);
	assert_false(pod.moving);
	print_message("on B: %u m CPU\n", pod.size.milli_cpu);
	pa = fx.port_a;
	if (!th_wait_until(NULL, no_entry_at, &pa, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("A's arbiter still holds an entry for %s", fx.g.name);
	if (!tg_wait(&fx.g, before.seq, NULL, NULL, LIMIT_S, &after))
		fail_msg("the guest stopped reporting after the move");
	print_message("guest lines: seq %lu before, %lu after\n", before.seq, after.seq);
	assert_true(metric_is("vmact_migrations_total{reason=\"pressure\",result=\"success\"} 1"));
	ballast_off();
	rebind(fx.vcb);
}

static void moves_by_command(void **state)
{
	const char *args[] = { "migrate", fx.g.name, "--to", "a", "--wait", NULL };
	/* (A round that began while the move was under way says "moving".) */
	struct relief_says rs = { "a", "moved less than" };
	char out[4096];
	json_t *h;
	int rc;

	(void)state;
	stack_up();
	if (!runs_on(fx.vcb))
		skip();
	run_groupctl(args, out, sizeof(out), &rc);
	if (rc != 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupctl migrate failed (exit %d)", rc);
	assert_non_null(strstr(out, "success"));
	only_on(fx.vca, "after the command");
	rebind(fx.vca);
	if (!th_vmactd_wait(&fx.a, managed_by, &fx.a, LIMIT_S))
		fail_msg("vmactd A does not manage %s after the move back", fx.g.name);
	assert_true(metric_is("vmact_migrations_total{reason=\"command\",result=\"success\"} 1"));
	assert_true(metric_is("vmact_migration_downtime_seconds_count 2"));
	/* Refused at A again, but it moved just now: relief says why it
	 * stays. */
	ballast_on();
	busy(2);
	if (!th_wait_until(NULL, relief_says, &rs, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "host a's relief never said why nothing moves");
	h = host_doc("a");
	print_message("host a: %s\n", json_string_value(json_object_get(h, "relief")));
	assert_non_null(
		strstr(json_string_value(json_object_get(h, "relief")), "nothing can move"));
	json_decref(h);
	only_on(fx.vca, "resting");
	ballast_off();
	busy(1);
}

static void drain_undrain(void **state)
{
	const char *drain[] = { "drain", "a", NULL }, *undrain[] = { "undrain", "a", NULL };
	char out[4096], path[256];
	struct th_host2_move e;
	long status = 0;
	json_t *doc;
	int rc;

	(void)state;
	stack_up();
	if (!runs_on(fx.vca))
		skip();
	run_groupctl(drain, out, sizeof(out), &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "drained"));
	e = wait_move("drain", 0);
	assert_string_equal(e.from, "a");
	only_on(fx.vcb, "after the drain");
	rebind(fx.vcb);
	doc = host_doc("a");
	assert_true(json_is_true(json_object_get(doc, "draining")));
	json_decref(doc);
	/* Nothing is moved to a drained host. */
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.g.name);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{\"to\":\"a\"}", &status);
	print_message("to the drained host: %ld %s\n", status,
		      json_string_value(json_object_get(doc, "error")));
	assert_int_equal(status, 409);
	assert_non_null(strstr(json_string_value(json_object_get(doc, "error")), "drained"));
	/* Judged by the placement framework's filter. */
	assert_non_null(
		strstr(json_string_value(json_object_get(doc, "error")), "(HostReachable)"));
	json_decref(doc);
	run_groupctl(undrain, out, sizeof(out), &rc);
	assert_int_equal(rc, 0);
	doc = host_doc("a");
	assert_false(json_is_true(json_object_get(doc, "draining")));
	json_decref(doc);
	assert_true(metric_is("vmact_migrations_total{reason=\"drain\",result=\"success\"} 1"));
}

static void moves_back_to_best(void **state)
{
	char path[256];
	long status = 0;
	json_t *doc;
	struct th_host2_move e;
	uint64_t id;

	(void)state;
	stack_up();
	if (!runs_on(fx.vcb))
		skip();
	/* Idle, back within what A takes (its watermark). */
	busy(0);
	if (!th_wait_until(NULL, fits_a, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("the idle guest never shrank to what A takes");
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.g.name);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{}", &status);
	print_message("to the best host: %ld %s\n", status,
		      json_string_value(json_object_get(doc, "error")) ?: "");
	assert_int_equal(status, 202);
	assert_string_equal(json_string_value(json_object_get(doc, "from")), "b");
	assert_string_equal(json_string_value(json_object_get(doc, "to")), "a");
	id = (uint64_t)json_integer_value(json_object_get(doc, "id"));
	json_decref(doc);
	e = wait_move("command", id - 1);
	assert_true(e.id == id);
	only_on(fx.vca, "moved back");
	rebind(fx.vca);
	if (!th_vmactd_wait(&fx.a, managed_by, &fx.a, LIMIT_S))
		fail_msg("vmactd A does not manage %s after the move back", fx.g.name);
}

/* A move libvirt fails: vmact-groupd restarted with moves to B slowed to
 * 8 MiB/s and a scheduler profile without a Reserve plugin (the move's
 * own lease at B, released with the rest when the move is undone: B's
 * arbiter has no entry at once) (its memory of moves gone with it:
 * nothing rests), A full again
 * and the guest refused there: relief moves it, and the test aborts the
 * move on A (virDomainAbortJob, as `virsh domjobabort`). */
static bool migrating_now(void *arg)
{
	return th_host2_move_under_way(fx.g.name, "migrating", arg) == 1 && leaving_a_now();
}

static void failed_move_retried(void **state)
{
	struct relief_says rs = { "a", "its last move failed" };
	struct vmact_lease_pod pod;
	struct th_host2_move e = { .vm = fx.g.name, .reason = "pressure" };
	uint64_t id = 0;
	virDomainPtr d;

	(void)state;
	stack_up();
	if (!runs_on(fx.vca))
		skip();
	th_cluster_stack_stop(&fx.s);
	write_groupd_cfg(8);
	if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start again");
	ballast_on();
	busy(2);
	if (!th_wait_until(NULL, migrating_now, &id, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "relief never started moving the guest again");
	d = virDomainLookupByName(fx.vca, fx.g.name);
	assert_non_null(d);
	assert_int_equal(virDomainAbortJob(d), 0);
	virDomainFree(d);
	e.after_id = id - 1;
	if (!th_wait_until(NULL, th_host2_move_ended, &e, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "the aborted move never ended");
	print_message("aborted: %s: %s\n", e.result, e.error);
	assert_true(e.id == id);
	assert_string_equal(e.result, "failed");
	assert_true(e.error[0] != 0);
	/* Undone: on A only, nothing of it at B, A's mark gone, managed. */
	only_on(fx.vca, "after the abort");
	assert_int_equal(arbiter_pod(fx.port_b, NULL), 404);
	assert_int_equal(arbiter_pod(fx.port_a, &pod), 200);
	assert_false(pod.moving);
	if (!th_vmactd_wait(&fx.a, managed_by, &fx.a, LIMIT_S))
		fail_msg("vmactd A does not manage %s after the failed move", fx.g.name);
	if (!th_wait_until(NULL, relief_says, &rs, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "host a's relief never said the move failed");
	assert_true(metric_is("vmact_migrations_total{reason=\"pressure\",result=\"failed\"} 1"));
	/* Retried after the backoff, successfully. */
	e = wait_move("pressure", id);
	only_on(fx.vcb, "after the retry");
	ballast_off();
}

/* On A, paused by a move: QEMU has sent everything and stopped the guest,
 * the source's confirmation has not come. */
static bool paused_by_move_on_a(void)
{
	virDomainPtr d = virDomainLookupByName(fx.vca, fx.g.name);
	int state = 0, reason = 0;
	bool yes;

	if (!d) {
		virResetLastError();
		return false;
	}
	yes = virDomainGetState(d, &state, &reason, 0) == 0 && state == VIR_DOMAIN_PAUSED &&
	      reason == VIR_DOMAIN_PAUSED_MIGRATION;
	virDomainFree(d);
	return yes;
}

static bool only_on_one_now(void *arg)
{
	(void)arg;
	return only_on_now(fx.vca) || only_on_now(fx.vcb);
}

/* libvirt's own corner of a move: the connection that drove it is lost
 * after QEMU sent the last of the memory and before the source confirmed
 * it. libvirt then ends the source's job and leaves the guest paused
 * there ("we don't know if the domain was successfully started on
 * destination"); the target's half, never finished, is destroyed. Nobody
 * resumes the guest. vmact-groupd reaches both daemons through relays the
 * test freezes the moment A pauses the guest; vmact-groupd is SIGKILLed,
 * QEMU given 3 s to finish sending, then the daemons see the connections
 * go: what a crash of vmact-groupd or a network lost at that instant
 * leaves. Started again, vmact-groupd finds the paused copy and resumes
 * it on A (or, had B's half finished, removes A's copy); the guest runs on
 * one host only and its lines go on. */
static void orphan_recovered(void **state)
{
	const char *args[] = { "migrate", fx.g.name, "--to", "a", "--wait", NULL };
	struct th_relay *ra = NULL, *rb = NULL;
	char path[256], dir[128], ua[300], ub[300], out[4096];
	struct tg_report r0, r;
	double end;
	json_t *doc;
	long status = 0;
	int rc;
	virConnectPtr at;

	(void)state;
	stack_up();
	opt_in();
	if (runs_on(fx.vcb)) {
		/* Idle, back within what A takes (its watermark). */
		busy(0);
		if (!th_wait_until(NULL, fits_a, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
			fail_msg("the idle guest never shrank to what A takes");
		run_groupctl(args, out, sizeof(out), &rc);
		if (rc != 0)
			th_cluster_stack_fail(&fx.s, "vmact-groupctl migrate failed (exit %d)", rc);
		only_on(fx.vca, "back on A");
		rebind(fx.vca);
	}
	if (!runs_on(fx.vca))
		skip();
	/* The move to B is slowed (8 MiB/s) so that it is under way long
	 * enough to be watched. */
	assert_int_equal(th_cluster_stack_user_dir(&fx.s, "relay", dir, sizeof(dir)), 0);
	snprintf(path, sizeof(path), "%s/a-sock", dir);
	assert_int_equal(th_relay_start(path, "/run/libvirt/libvirt-sock", &ra), 0);
	snprintf(ua, sizeof(ua), "qemu+unix:///system?socket=%s", path);
	snprintf(path, sizeof(path), "%s/b-sock", dir);
	assert_int_equal(th_relay_start(path, TH_HOST2_SOCKET, &rb), 0);
	snprintf(ub, sizeof(ub), "qemu+unix:///system?socket=%s", path);
	th_cluster_stack_stop(&fx.s);
	/* Relief off: the test's move is the only one (the guest may be
	 * refused growth on A by now); the sweep runs all the same. */
	assert_int_equal(th_host2_groupd_cfg_uri(fx.cfg, fx.s.sock, fx.s.key, ua, ub, fx.port_a,
						 fx.port_b, 8, ",\"migration\":{\"relief\":false}"),
			 0);
	if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start behind the relays");
	snprintf(path, sizeof(path), "/v1/vms/%s/migrate", fx.g.name);
	doc = th_cluster_stack_api(&fx.s, "POST", path, "{\"to\":\"b\"}", &status);
	if (status != 202)
		th_cluster_stack_fail(&fx.s, "the move to B was refused: %ld %s", status,
				      json_string_value(json_object_get(doc, "error")) ?: "");
	json_decref(doc);
	/* A 1 ms watch: the relays must be frozen before the source's answer
	 * passes (the guest stays paused for the move's last 100 ms or so). */
	end = th_now_s() + LIMIT_S;
	while (!paused_by_move_on_a() && th_now_s() < end)
		usleep(1000);
	th_relay_freeze(ra, true);
	th_relay_freeze(rb, true);
	if (!paused_by_move_on_a())
		th_cluster_stack_fail(&fx.s, "the move never paused the guest on A");
	th_proc_stop(&fx.s.gd, SIGKILL, 0);
	sleep(3);
	th_relay_cut(ra);
	th_relay_cut(rb);
	print_message("relays frozen, vmact-groupd killed with the guest paused on A, "
		      "connections cut 3 s later\n");
	/* Left as libvirt leaves it: paused on A, nobody resumes it. */
	sleep(2);
	assert_true(paused_by_move_on_a());
	assert_false(runs_on(fx.vcb));
	th_relay_freeze(ra, false);
	th_relay_freeze(rb, false);
	if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start again");
	if (!th_wait_until(NULL, only_on_one_now, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "the paused guest was never resumed or removed");
	at = runs_on(fx.vca) ? fx.vca : fx.vcb;
	print_message("the guest runs on %s only\n", at == fx.vca ? "A (resumed)" : "B");
	/* Said once the round that did it ends, a moment after libvirt's
	 * answer (awaited: on a busy host the guest is seen running first). */
	assert_true(th_wait_until(NULL, groupd_said, "by a move nobody finished",
				  (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)));
	assert_true(th_wait_until(NULL, groupd_said,
				  at == fx.vca ? "resumed on a" : "the copy on a is removed",
				  (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)));
	if (at == fx.vcb)
		rebind(fx.vcb);
	/* Its lines go on. */
	assert_true(tg_wait(&fx.g, 0, NULL, NULL, LIMIT_S, &r0));
	assert_true(tg_wait(&fx.g, r0.seq, NULL, NULL, LIMIT_S, &r));
	/* Back to the plain configuration. */
	th_cluster_stack_stop(&fx.s);
	th_relay_stop(ra);
	th_relay_stop(rb);
	write_groupd_cfg(0);
	if (th_cluster_stack_start_groupd(&fx.s, fx.cfg, LIMIT_S) < 0)
		th_cluster_stack_fail(&fx.s, "vmact-groupd did not start again");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(refused_until_opted_in), cmocka_unit_test(relief_moves_it),
		cmocka_unit_test(moves_by_command),       cmocka_unit_test(drain_undrain),
		cmocka_unit_test(moves_back_to_best),     cmocka_unit_test(orphan_recovered),
		cmocka_unit_test(failed_move_retried),
	};

	if (!th_root_test("test_migrate", "two libvirt daemons, vmactd, vmact-groupd"))
		return 1;
	if (getenv("VMACT_TEST_ONLY"))
		cmocka_set_test_filter(getenv("VMACT_TEST_ONLY"));
	return cmocka_run_group_tests_name("migrate", tests, setup, teardown);
}
