/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd under faults and time (doc/cluster.md), on real libvirt,
 * real guests and a real arbiter:
 *
 *   h  the vmact-cluster user's qemu:///session, its arbiter a standalone
 *      vmact-arbiter with room for one VM: 1500m CPU / 384 MiB, its
 *      watermark (0.9) 1350m / 345.6 MiB, a VM 1000m / 256 MiB
 *
 * vmact-groupd runs as vmact-cluster with leases of 3 s (renewed every
 * second) and groups on h: `gated`, whose members wait for
 * ManualApproval, `rival`, placed at once and tried again every 2 s,
 * `watch` and `fix` (health in service), and, in a second configuration,
 * `slow` (the boot limit).
 *
 *   lease_wait_outlasts  a gated member waits four lease lengths while a
 *                        rival member tries for the same room again and
 *                        again: the rival never gets it, the ledger never
 *                        passes the watermark, the waiting VM's lease is
 *                        there at every sample; allowed, it is bound (its
 *                        PreBind takes the lease again) and goes into
 *                        service, the ledger still under the watermark
 *   lease_lost_unplaces  the waiting VM's lease taken away behind its
 *                        back and the room given to another holder: it is
 *                        un-placed (HOST_CAPACITY), never bound, the
 *                        ledger never over
 *   session_domain_100   the host's channel_dir (doc/cluster.md,
 *                        "Health"): once the session's domain IDs reach
 *                        100 (libvirt's own socket path under the user's
 *                        long home would pass 107 bytes), a VM still
 *                        starts, is told its claim over the channel and
 *                        goes into service
 *   health_in_service_reported  a member in service whose guest falls
 *                        silent past the healthy timeout: its node's
 *                        error UNHEALTHY, left in service; healthy again,
 *                        the error goes
 *   health_in_service_replaced  the same with on_unhealthy replace: its
 *                        VM destroyed, the member booted again
 *   boot_limit           max_boots_per_iteration 1: of an increase of
 *                        two, one boots, the other waits (pending, no
 *                        error) for the next iteration
 *   host_unreachable     a second host: a libvirtd of its own (the
 *                        cluster user's, in a home of its own) with its
 *                        own vmact-arbiter. Its libvirtd killed: its
 *                        member stays on the books (reported, its guest
 *                        still running), a new member goes to the other
 *                        host; its libvirtd back: the member healthy
 *                        again, the same guest, nothing lost or doubled
 *   standby_bind_cut_off h2's libvirtd killed (by a hook of the test's)
 *                        while it starts a standby VM: the definition is
 *                        left there and the start's undo cannot reach it;
 *                        vmact-groupd keeps the VM as a removal while h2
 *                        is away, and once it is back the half-made
 *                        domain goes and the pool is refilled: every
 *                        domain is one vmact-groupd knows
 *
 * Every wait is for a state with a generous safety limit; the only
 * duration in the test is how long the VM waits, read from the API's
 * waited_s. */
#include <errno.h>
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
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "cluster/host/host.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-cll-"
#define LEASE_S      3
#define LIMIT_BOOT_S 240.0
#define LIMIT_S      60.0

static struct {
	struct th_cluster_stack s;
	char chdir[72], home2[96], uri2[256], arb2[108], alog2[128], llog2[128];
	char cfg_b[128], cfg_c[128], cfg_d[128], arb[108];
	char img[128];
	char pool[64], uri[384];
	struct th_proc ad, ad2, lv2;
	virConnectPtr c, c2;
	struct cl_host *h;
} fx;

static void own(const char *path, bool user, mode_t mode)
{
	if (th_cluster_stack_own(&fx.s, path, user, mode) < 0)
		fail_msg("%s: %s", path, strerror(errno));
}

/* ---- the API ---- */

/* How many of the group's nodes have field (state, vm_state) at value
 * (NULL: all of them). */
static unsigned nodes_in(const char *group, const char *field, const char *value)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, group), *it;
	unsigned k = 0;
	size_t i;

	json_array_foreach(n, i, it)
		k += !value || !strcmp(json_string_value(json_object_get(it, field)) ?: "", value);
	json_decref(n);
	return k;
}

static json_t *waiting(void)
{
	json_t *j = th_cluster_stack_api(&fx.s, "GET", "/v1/waiting", NULL, NULL),
	       *w = json_incref(json_object_get(j, "waiting"));

	json_decref(j);
	return w ? w : json_array();
}

static bool n_wait(void *arg)
{
	json_t *w = waiting();
	bool ok = json_array_size(w) == (size_t)(uintptr_t)arg;

	json_decref(w);
	return ok;
}

/* The one waiting VM has waited at least *arg seconds. */
static bool waited(void *arg)
{
	json_t *w = waiting();
	double s = json_number_value(json_object_get(json_array_get(w, 0), "waited_s"));
	bool ok = json_array_size(w) == 1 && s >= *(const double *)arg;

	json_decref(w);
	return ok;
}

static bool group_empty(void *arg)
{
	return nodes_in(arg, "state", NULL) == 0;
}

static bool one_running(void *arg)
{
	return nodes_in(arg, "state", "running") == 1;
}

static bool group_all_running(void *arg)
{
	unsigned n = nodes_in(arg, "state", NULL);

	return n > 0 && nodes_in(arg, "state", "running") == n;
}

static void delete_all(const char *group)
{
	th_cluster_stack_delete_all(&fx.s, group);
	if (!th_wait_daemon(&fx.s.gd, group_empty, (void *)group, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "group %s was not emptied", group);
}

/* ---- the ledger, sampled all along ---- */

struct sampler {
	pthread_t t;
	volatile bool stop;
	/* Set while a VM waits: its lease must be in the ledger. */
	volatile bool must_hold;
	unsigned samples, over, unheld;
	uint64_t max_cpu, max_mem;
	struct vmact_lease_ledger last;
};

static void *sample(void *arg)
{
	struct sampler *s = arg;

	while (!s->stop) {
		struct vmact_lease_ledger l;
		struct vmact_err err = { 0 };

		if (cl_host_ledger(fx.h, &l, &err) == 0) {
			s->samples++;
			s->last = l;
			if (l.reserved.milli_cpu > s->max_cpu)
				s->max_cpu = l.reserved.milli_cpu;
			if (l.reserved.mem_bytes > s->max_mem)
				s->max_mem = l.reserved.mem_bytes;
			s->over += l.reserved.milli_cpu > l.watermark.milli_cpu ||
				   l.reserved.mem_bytes > l.watermark.mem_bytes;
			s->unheld += s->must_hold && l.leases == 0;
		}
		usleep(50000);
	}
	return NULL;
}

static void sampler_end(struct sampler *s, const char *what, unsigned min_samples)
{
	s->stop = true;
	pthread_join(s->t, NULL);
	fprintf(stderr,
		"%s: %u samples, ledger peak %llum CPU / %llu MiB against a watermark of %um / "
		"%llu MiB, %u over, %u without the waiting VM's lease\n",
		what, s->samples, (unsigned long long)s->max_cpu,
		(unsigned long long)(s->max_mem >> 20), s->last.watermark.milli_cpu,
		(unsigned long long)(s->last.watermark.mem_bytes >> 20), s->over, s->unheld);
	assert_true(s->samples >= min_samples);
	assert_int_equal(s->over, 0);
}

/* ---- set-up ---- */

/* The configuration: boot_limit true writes the second one (cfg_b); the
 * third (cfg_c) is written by host_unreachable. */
static void write_config(bool boot_limit)
{
	char kernel[PATH_MAX + 16], initrd[PATH_MAX + 16], real[PATH_MAX], arb_url[160];
	json_t *tpl, *doc;
	char *text;

	if (!realpath(tg_guest_dir(), real))
		fail_msg("guest dir: %s", strerror(errno));
	snprintf(kernel, sizeof(kernel), "%s/vmlinuz", real);
	snprintf(initrd, sizeof(initrd), "%s/initrd.img", real);
	snprintf(arb_url, sizeof(arb_url), "unix:%s", fx.arb);
	tpl = json_pack("{s:s,s:i,s:s,s:s,s:s,s:s,s:s,s:s}", "domain_type", "qemu", "vcpus", 1,
			"memory", "256Mi", "kernel", kernel, "initrd", initrd, "cmdline",
			"console=ttyS0 loglevel=1 panic=-1", "base_volume", "node-base.qcow2",
			"serial_log_dir", fx.s.logs);
	doc = json_pack("{s:{s:s},s:{s:s},s:{s:s},s:{s:i},"
			"s:[{s:s,s:s,s:s,s:s,s:{s:s,s:s}}],"
			"s:[{s:s,s:i,s:[s],s:O,s:{s:s}},{s:s,s:i,s:[s],s:O,s:{s:i}}],"
			"s:{s:[{s:{s:{s:[{s:s}]}},s:[{s:s,s:{s:[s],s:i}}]}]}}",
			"api", "socket", fx.s.sock, "metrics", "listen", "", "libvirt",
			"name_prefix", PREFIX, "lifecycle", "lease_s", LEASE_S, "hosts", "name",
			"h", "uri", "qemu:///session", "storage_pool", fx.pool, "channel_dir",
			fx.chdir, "arbiter", "url", arb_url, "secret_file", fx.s.key, "groups",
			"id", "gated", "max", 2, "hosts", "h", "template", tpl, "claim", "ack",
			"VMACT claimed", "id", "rival", "max", 1, "hosts", "h", "template", tpl,
			"lifecycle", "retry_backoff_s", 2, "scheduler", "profiles", "plugins",
			"permit", "enabled", "name", "ManualApproval", "pluginConfig", "name",
			"ManualApproval", "args", "groups", "gated", "timeoutSeconds", 120);
	if (!doc)
		fail_msg("the configuration does not pack");
	{
		json_t *groups = json_object_get(doc, "groups");

		/* watch, fix: members in service checked every second, unhealthy
		 * after 4 s without a good check; watch's reported (the
		 * default), fix's replaced. */
		json_array_append_new(groups,
				      json_pack("{s:s,s:i,s:[s],s:O,s:{s:s},s:{s:i,s:i}}", "id",
						"watch", "max", 1, "hosts", "h", "template", tpl,
						"claim", "ack", "VMACT claimed", "lifecycle",
						"healthy_timeout_s", 4, "health_interval_s", 1));
		json_array_append_new(groups,
				      json_pack("{s:s,s:i,s:[s],s:O,s:{s:s},s:{s:s},s:{s:i,s:i}}",
						"id", "fix", "max", 1, "hosts", "h", "template",
						tpl, "claim", "ack", "VMACT claimed", "health",
						"on_unhealthy", "replace", "lifecycle",
						"healthy_timeout_s", 4, "health_interval_s", 1));
		if (boot_limit) {
			json_t *small = json_deep_copy(tpl);

			/* slow: one boot per iteration, and an iteration of ten
			 * minutes: the second member of an increase waits for the
			 * next one (here: the next start-up's first). Half a VM
			 * each, so that two fit. */
			json_object_set_new(small, "reserve",
					    json_pack("{s:s,s:s}", "cpu", "500m", "memory",
						      "128Mi"));
			json_array_append_new(groups,
					      json_pack("{s:s,s:i,s:[s],s:o,s:{s:s},s:{s:i}}", "id",
							"slow", "max", 2, "hosts", "h", "template",
							small, "claim", "ack", "VMACT claimed",
							"lifecycle", "max_boots_per_iteration", 1));
			json_object_set_new(json_object_get(doc, "lifecycle"), "refill_interval_s",
					    json_integer(600));
		}
	}
	json_decref(tpl);
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	assert_int_equal(th_write_file(boot_limit ? fx.cfg_b : fx.s.cfg, text), 0);
	free(text);
	own(boot_limit ? fx.cfg_b : fx.s.cfg, false, 0644);
}

/* vmact-groupd as the cluster user with cfg, a log of its own per start;
 * 0 once it found its VMs. */
static int start_groupd(const char *cfg)
{
	return th_cluster_stack_start_groupd(&fx.s, cfg, LIMIT_S);
}

static int setup(void **state)
{
	char path[PATH_MAX + 64], listen[PATH_MAX + 8];

	tg_quiet_libvirt();
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (th_cluster_stack_init(&fx.s, "vmact-cll") < 0) {
		fprintf(stderr, "no user " TH_CLUSTER_USER " (run tests/host/setup-host.sh), "
				"a program not built, or no scratch directory\n");
		return -1;
	}
#define P(f, name) snprintf(fx.f, sizeof(fx.f), "%s/" name, fx.s.dir)
	P(cfg_b, "groupd-boot-limit.json");
	P(cfg_c, "groupd-two-hosts.json");
	P(cfg_d, "groupd-cut.json");
	P(home2, "home2");
	P(arb2, "arb/arb2.sock");
	P(alog2, "arbiter2.log");
	P(llog2, "libvirtd2.log");
	P(arb, "arb/arb.sock");
	P(img, "img");
#undef P
	/* The channels' sockets: made by the session's QEMU, the user's. */
	if (th_cluster_stack_user_dir(&fx.s, "arb", path, sizeof(path)) < 0 ||
	    th_cluster_stack_user_dir(&fx.s, "ch", fx.chdir, sizeof(fx.chdir)) < 0)
		return -1;
	snprintf(fx.pool, sizeof(fx.pool), "vmact-cll-%d", (int)getpid());
	if (th_cluster_pool(NULL, &fx.s.u, fx.pool, fx.img) < 0)
		return -1;
	th_cluster_session_uri(&fx.s.u, fx.uri, sizeof(fx.uri));
	fx.c = virConnectOpen(fx.uri);
	if (!fx.c)
		return -1;
	{
		/* Room for one VM under the watermark, not two. */
		const char *args[] = { fx.s.arbiter, "--listen", listen,  "--cpu",
				       "1500m",      "--memory", "384Mi", "--lease-key",
				       fx.s.key,     "-v",       NULL };
		struct cl_host_cfg hc = { .name = "h" };
		struct vmact_err err = { 0 };

		snprintf(listen, sizeof(listen), "unix:%s", fx.arb);
		if (th_cluster_spawn(&fx.ad, &fx.s.u, args, fx.s.alog) < 0)
			return -1;
		snprintf(hc.arbiter_url, sizeof(hc.arbiter_url), "unix:%s", fx.arb);
		snprintf(hc.arbiter_secret, sizeof(hc.arbiter_secret), "%s", fx.s.key);
		if (cl_host_new(&hc, &fx.h, &err) < 0) {
			fprintf(stderr, "%s\n", err.msg);
			return -1;
		}
	}
	write_config(false);
	write_config(true);
	return start_groupd(fx.s.cfg);
}

static void start_lv2(void);

static void hook_remove(void);

static int teardown(void **state)
{
	hook_remove();
	th_cluster_stack_stop(&fx.s);
	th_proc_stop(&fx.ad, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_proc_stop(&fx.ad2, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	if (fx.home2[0] && !fx.lv2.pid && fx.c2) {
		/* Left down by a failure: up again to clean up. */
		virConnectClose(fx.c2);
		fx.c2 = NULL;
		start_lv2();
		fx.c2 = virConnectOpen(fx.uri2);
	}
	if (fx.c2) {
		th_cluster_remove_domains(fx.c2, PREFIX);
		th_cluster_pool_remove(fx.c2, fx.pool);
		virConnectClose(fx.c2);
	}
	th_proc_stop(&fx.lv2, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	if (getenv("VMACT_TEST_VERBOSE")) {
		th_print_log_tail(fx.s.alog, "vmact-arbiter", 200000);
	}
	if (fx.c) {
		th_cluster_remove_domains(fx.c, PREFIX);
		th_cluster_pool_remove(fx.c, fx.pool);
		virConnectClose(fx.c);
	}
	cl_host_free(fx.h);
	th_cluster_stack_teardown(&fx.s);
	return 0;
}

/* ---- the cases ---- */

static const char *first_uid(void)
{
	static char uid[64];
	json_t *w = waiting();

	snprintf(uid, sizeof(uid), "%s",
		 json_string_value(json_object_get(json_array_get(w, 0), "uid")) ?: "");
	json_decref(w);
	return uid;
}

static void lease_wait_outlasts(void **state)
{
	struct th_cluster_node_error no_room = { &fx.s, "rival", "HOST_CAPACITY" };
	struct sampler s = { 0 };
	double four_leases = 4 * LEASE_S;
	char path[256];
	long st;

	assert_int_equal(th_cluster_stack_change(&fx.s, "gated", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, n_wait, (void *)1, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "nothing waited for ManualApproval");
	/* Reserved while it waits: the one VM's room is taken. */
	assert_int_equal(cl_host_ledger(fx.h, &s.last, &(struct vmact_err){ 0 }), 0);
	assert_int_equal(s.last.leases, 1);
	assert_int_equal(s.last.reserved.milli_cpu, 1000);
	s.must_hold = true;
	assert_int_equal(pthread_create(&s.t, NULL, sample, &s), 0);

	/* A rival for the same room, tried again every 2 s. */
	assert_int_equal(th_cluster_stack_change(&fx.s, "rival", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, th_cluster_stack_node_error, &no_room, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the rival was not refused for room");
	/* The wait outlasts the lease four times over. */
	if (!th_wait_daemon(&fx.s.gd, waited, &four_leases, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the gated VM did not wait %.0f s", four_leases);
	/* The rival never got the room. */
	assert_int_equal(nodes_in("rival", "vm_state", "pending"), 1);
	assert_true(th_cluster_stack_node_error(&no_room));
	assert_int_equal(s.unheld, 0);

	/* Allowed: bound where it reserved, into service. */
	snprintf(path, sizeof(path), "/v1/waiting/%s/allow", first_uid());
	json_decref(th_cluster_stack_api(&fx.s, "POST", path, NULL, &st));
	assert_int_equal(st, 200);
	s.must_hold = false;
	if (!th_wait_daemon(&fx.s.gd, one_running, "gated", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the allowed VM never went into service");
	/* The rival still has no room, and the ledger holds one VM. */
	assert_int_equal(nodes_in("rival", "vm_state", "pending"), 1);
	assert_true(th_cluster_stack_node_error(&no_room));
	sampler_end(&s, "wait outlasting the lease", 100);
	assert_int_equal(s.last.leases, 1);
	assert_int_equal(s.last.reserved.milli_cpu, 1000);
	assert_true(s.max_cpu <= 1000);
	delete_all("rival");
	delete_all("gated");
}

static bool no_leases(void *arg)
{
	struct vmact_lease_ledger l;

	return cl_host_ledger(fx.h, &l, &(struct vmact_err){ 0 }) == 0 && l.leases == 0;
}

static void lease_lost_unplaces(void **state)
{
	struct th_cluster_node_error no_room = { &fx.s, "gated", "HOST_CAPACITY" };
	struct vmact_err err = { 0 };
	struct sampler s = { 0 };
	struct vmact_lease_ledger l;
	json_t *w;
	char name[128];

	if (!th_wait_daemon(&fx.s.gd, no_leases, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "leases left from the case before");
	assert_int_equal(th_cluster_stack_change(&fx.s, "gated", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, n_wait, (void *)1, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "nothing waited for ManualApproval");
	w = waiting();
	snprintf(name, sizeof(name), "%s",
		 json_string_value(json_object_get(json_array_get(w, 0), "name")) ?: "");
	json_decref(w);
	assert_int_equal(pthread_create(&s.t, NULL, sample, &s), 0);
	/* Its lease taken away and the room promised to another holder
	 * (what a lapse while another placement took the room amounts to).
	 * Its renewal may come between the two and take the room back (it
	 * is free then): the filler is then refused, and tried again. */
	for (int tries = 0;; tries++) {
		int r;

		assert_int_equal(cl_host_release(fx.h, "default", name, &err), 0);
		assert_int_equal(cl_host_ledger(fx.h, &l, &err), 0);
		r = cl_host_lease(fx.h, "default", "filler", l.watermark, 600 * VMACT_USEC_PER_SEC,
				  false, &err);
		if (r == 0)
			break;
		assert_int_equal(r, -EBUSY);
		if (tries > 20)
			fail_msg("the filler never got the room: %s", err.msg);
	}
	/* Its renewal is refused: rejected, un-placed, never bound. */
	if (!th_wait_daemon(&fx.s.gd, th_cluster_stack_node_error, &no_room, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the VM that lost its reservation was not un-placed");
	assert_true(n_wait((void *)0));
	assert_int_equal(nodes_in("gated", "vm_state", "pending"), 1);
	assert_int_equal(nodes_in("gated", "state", "running"), 0);
	sampler_end(&s, "reservation lost", 1);
	/* Only the filler holds room. */
	assert_int_equal(s.last.leases, 1);
	assert_int_equal(cl_host_release(fx.h, "default", "filler", &err), 0);
	delete_all("gated");
}

/* Moves the session's next domain ID to at least want; the last ID a
 * started domain had. libvirt hands a transient domain its ID before it
 * checks the domain's disks, and does not take the ID back when that check
 * fails: a start refused for a missing disk costs a millisecond, a QEMU
 * started and destroyed about two seconds (about 170 s for 100 IDs on this
 * suite's hosts). A real start reads where the IDs are, so a libvirt that
 * stops spending IDs on refused starts only makes this slower, never
 * wrong: the caller asserts the ID its VM got. */
static int bump_ids(int want)
{
#define IDBUMP(name, disk)                                                               \
	"<domain type='qemu'><name>" PREFIX name "</name><memory unit='MiB'>16</memory>" \
	"<vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os><devices>" disk            \
	"<memballoon model='none'/></devices></domain>"
	static const char real[] = IDBUMP("idbump", "");
	static const char refused[] =
		IDBUMP("idbump-refused",
		       "<disk type='file' device='disk'><source file='/nonexistent/" PREFIX
		       "idbump.qcow2'/><target dev='vda' bus='virtio'/></disk>");
#undef IDBUMP
	int id = 0;

	for (int i = 0; i < 200 && id + 1 < want; i++) {
		virDomainPtr d = virDomainCreateXML(fx.c, real, VIR_DOMAIN_START_PAUSED);

		if (!d)
			fail_msg("a domain to move the IDs on: %s", virGetLastErrorMessage());
		id = (int)virDomainGetID(d);
		virDomainDestroy(d);
		virDomainFree(d);
		for (int k = id + 2; k < want; k++) {
			d = virDomainCreateXML(fx.c, refused, VIR_DOMAIN_START_PAUSED);
			if (d) {
				virDomainDestroy(d);
				virDomainFree(d);
				fail_msg("a domain with a missing disk started");
			}
		}
	}
	return id;
}

static bool rival_running(void *arg)
{
	return nodes_in("rival", "state", "running") == 1;
}

static void session_domain_100(void **state)
{
	json_t *n;
	const char *uuid;
	virDomainPtr d;
	char *xml, want[PATH_MAX];
	int last = bump_ids(100);

	fprintf(stderr, "session domain IDs moved on to %d\n", last);
	assert_int_equal(th_cluster_stack_change(&fx.s, "rival", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, rival_running, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s,
				      "the VM with a domain ID past 99 never went into service");
	n = th_cluster_stack_nodes(&fx.s, "rival");
	uuid = json_string_value(json_object_get(json_array_get(n, 0), "provider_id"));
	assert_non_null(uuid);
	uuid = strrchr(uuid, '/') + 1;
	d = virDomainLookupByUUIDString(fx.c, uuid);
	assert_non_null(d);
	fprintf(stderr, "in service with domain ID %u\n", virDomainGetID(d));
	assert_true(virDomainGetID(d) >= 100);
	/* Its claim's socket where the host's channel_dir says. */
	xml = virDomainGetXMLDesc(d, 0);
	snprintf(want, sizeof(want), "path='%s/%s.claim'", fx.chdir, uuid);
	assert_non_null(xml);
	if (!strstr(xml, want))
		fail_msg("no %s in its XML", want);
	free(xml);
	virDomainFree(d);
	json_decref(n);
	delete_all("rival");
}

/* The UUID of the group's first node (static), "" when none. */
static const char *node_uuid(const char *group)
{
	static char uuid[64];
	json_t *n = th_cluster_stack_nodes(&fx.s, group);
	const char *pid = json_string_value(json_object_get(json_array_get(n, 0), "provider_id"));

	snprintf(uuid, sizeof(uuid), "%s", pid && strrchr(pid, '/') ? strrchr(pid, '/') + 1 : "");
	json_decref(n);
	return uuid;
}

/* ---- a second host: a libvirtd of the cluster user's own ---- */

/* The pid of the QEMU running domain name (found in /proc), 0 if none. */
static pid_t qemu_of(const char *name)
{
	char want[160];

	snprintf(want, sizeof(want), "guest=%s,", name);
	return th_proc_find("qemu-system", want);
}

static bool lv2_answers(void *arg)
{
	virConnectPtr c = virConnectOpen(fx.uri2);

	if (!c)
		return false;
	virConnectClose(c);
	return true;
}

/* The cluster user's libvirtd in a home of its own (its socket, its
 * domains' state and logs there): a host vmact-groupd reaches like any
 * other, that the test can stop and start again. */
static void start_lv2(void)
{
	struct th_cluster_user u2 = fx.s.u;
	const char *args[] = { "/usr/sbin/libvirtd", NULL };

	snprintf(u2.home, sizeof(u2.home), "%s", fx.home2);
	assert_int_equal(th_cluster_spawn(&fx.lv2, &u2, args, fx.llog2), 0);
	if (!th_wait_daemon(&fx.lv2, lv2_answers, NULL, LIMIT_S)) {
		th_print_log_tail(fx.llog2, "libvirtd (h2)", 4000);
		fail_msg("the second libvirtd did not answer");
	}
}

static void set_paused(const char *uuid, bool paused)
{
	virDomainPtr d = virDomainLookupByUUIDString(fx.c, uuid);

	assert_non_null(d);
	assert_int_equal(paused ? virDomainSuspend(d) : virDomainResume(d), 0);
	virDomainFree(d);
}

static bool no_error(void *arg)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, arg);
	bool ok = json_array_size(n) == 1 && !json_object_get(json_array_get(n, 0), "error");

	json_decref(n);
	return ok;
}

/* A member in service whose guest falls silent (paused: no status line
 * on its console) past the healthy timeout is reported — its node's
 * error, what vmact-cloudprovider passes on as the instance's errorInfo —
 * and left in service; back to health, the error goes. */
static void health_in_service_reported(void **state)
{
	struct th_cluster_node_error sick = { &fx.s, "watch", "UNHEALTHY" };
	char uuid[64];
	virDomainPtr d;
	int st, reason;

	assert_int_equal(th_cluster_stack_change(&fx.s, "watch", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, one_running, "watch", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the member never went into service");
	snprintf(uuid, sizeof(uuid), "%s", node_uuid("watch"));
	/* In service and checked: no error while it answers. */
	assert_true(no_error("watch"));
	set_paused(uuid, true);
	if (!th_wait_daemon(&fx.s.gd, th_cluster_stack_node_error, &sick, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the silent member was not reported");
	/* Reported, not deleted: still in service, the same domain. */
	assert_int_equal(nodes_in("watch", "state", "running"), 1);
	assert_string_equal(node_uuid("watch"), uuid);
	d = virDomainLookupByUUIDString(fx.c, uuid);
	assert_non_null(d);
	assert_int_equal(virDomainGetState(d, &st, &reason, 0), 0);
	assert_int_equal(st, VIR_DOMAIN_PAUSED);
	virDomainFree(d);
	set_paused(uuid, false);
	if (!th_wait_daemon(&fx.s.gd, no_error, "watch", LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the member healthy again kept its error");
	assert_string_equal(node_uuid("watch"), uuid);
	delete_all("watch");
}

static bool booted_again(void *arg)
{
	json_t *j = th_cluster_stack_api(&fx.s, "GET", "/v1/vms", NULL, NULL), *it;
	size_t i;
	bool ok = false;

	json_array_foreach(json_object_get(j, "vms"), i, it)
		ok |= !strcmp(json_string_value(json_object_get(it, "group")), "fix") &&
		      json_integer_value(json_object_get(it, "attempts")) >= 2 &&
		      !strcmp(json_string_value(json_object_get(it, "state")), "claimed");
	json_decref(j);
	return ok;
}

/* A group whose policy is to replace: the silent member's VM is
 * destroyed and the member booted again (the same member, attempts 2). */
static void health_in_service_replaced(void **state)
{
	char uuid[64];

	assert_int_equal(th_cluster_stack_change(&fx.s, "fix", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, one_running, "fix", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the member never went into service");
	snprintf(uuid, sizeof(uuid), "%s", node_uuid("fix"));
	set_paused(uuid, true);
	if (!th_wait_daemon(&fx.s.gd, booted_again, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the silent member was not replaced");
	/* The member kept (its UUID), its VM a new boot that runs. */
	assert_string_equal(node_uuid("fix"), uuid);
	assert_int_equal(nodes_in("fix", "state", "running"), 1);
	assert_true(no_error("fix"));
	delete_all("fix");
}

static bool one_pending_one_running(void *arg)
{
	return nodes_in("slow", "state", "running") == 1 &&
	       nodes_in("slow", "vm_state", "pending") == 1;
}

/* max_boots_per_iteration caps cold boots too: with one per iteration
 * (and an iteration of ten minutes), an increase of two boots one; the
 * other member waits, pending and without an error (room there is), until
 * the next iteration — here the first of the next start-up. */
static void boot_limit(void **state)
{
	json_t *n, *it;
	size_t i;

	th_proc_stop(&fx.s.gd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	assert_int_equal(start_groupd(fx.cfg_b), 0);
	assert_int_equal(th_cluster_stack_change(&fx.s, "slow", "increase", "{\"delta\":2}"), 2);
	if (!th_wait_daemon(&fx.s.gd, one_pending_one_running, NULL, LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "not one member in service and one held back");
	n = th_cluster_stack_nodes(&fx.s, "slow");
	json_array_foreach(n, i, it)
		assert_null(json_object_get(it, "error"));
	json_decref(n);
	th_proc_stop(&fx.s.gd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	assert_int_equal(start_groupd(fx.cfg_b), 0);
	if (!th_wait_daemon(&fx.s.gd, group_all_running, "slow", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s,
				      "the held-back member did not boot in the next iteration");
	delete_all("slow");
}

static json_t *host_doc(const char *name)
{
	json_t *j = th_cluster_stack_api(&fx.s, "GET", "/v1/hosts", NULL, NULL), *h, *out = NULL;
	size_t i;

	json_array_foreach(json_object_get(j, "hosts"), i, h)
		if (!strcmp(json_string_value(json_object_get(h, "name")) ?: "", name))
			out = json_incref(h);
	json_decref(j);
	return out;
}

static bool h2_libvirt(void *want_ok)
{
	json_t *h = host_doc("h2");
	bool ok = h && json_is_true(json_object_get(json_object_get(h, "libvirt"), "ok")) ==
			       (want_ok != NULL);

	json_decref(h);
	return ok;
}

/* The member on host (its name, static), "" when none. */
static const char *member_on(const char *group, const char *host)
{
	static char name[128];
	json_t *n = th_cluster_stack_nodes(&fx.s, group), *it;
	size_t i;

	name[0] = 0;
	json_array_foreach(n, i, it)
		if (!strcmp(json_string_value(json_object_get(it, "host")) ?: "", host))
			snprintf(name, sizeof(name), "%s",
				 json_string_value(json_object_get(it, "name")));
	json_decref(n);
	return name;
}

static bool running_on(void *host)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, "two"), *it;
	size_t i;
	bool ok = false;

	json_array_foreach(n, i, it)
		ok |= !strcmp(json_string_value(json_object_get(it, "host")) ?: "", host) &&
		      !strcmp(json_string_value(json_object_get(it, "state")), "running");
	json_decref(n);
	return ok;
}

/* The h2 member's node error is code (NULL: none). */
static bool h2_member_error(void *code)
{
	json_t *n = th_cluster_stack_nodes(&fx.s, "two"), *it;
	size_t i;
	bool ok = false;

	json_array_foreach(n, i, it) {
		const char *c = json_string_value(
			json_object_get(json_object_get(it, "error"), "code"));

		if (strcmp(json_string_value(json_object_get(it, "host")) ?: "", "h2"))
			continue;
		ok = code ? c && !strcmp(c, code) : !c;
	}
	json_decref(n);
	return ok;
}

/* Our domains on a connection (a count). */
static int ours_on(virConnectPtr c)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(c, &doms, 0), k = 0;

	for (int i = 0; i < n; i++) {
		k += !strncmp(virDomainGetName(doms[i]), PREFIX "two-", strlen(PREFIX "two-"));
		virDomainFree(doms[i]);
	}
	free(doms);
	return k;
}

static void write_config_c(void)
{
	char *text = th_read_file(fx.s.cfg);
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL, *groups, *tpl;
	char arb_url[160], img2[PATH_MAX];

	free(text);
	assert_non_null(doc);
	snprintf(arb_url, sizeof(arb_url), "unix:%s", fx.arb2);
	snprintf(img2, sizeof(img2), "%s/img2", fx.s.dir);
	json_array_append_new(json_object_get(doc, "hosts"),
			      json_pack("{s:s,s:s,s:s,s:s,s:{s:s,s:s}}", "name", "h2", "uri",
					fx.uri2, "storage_pool", fx.pool, "channel_dir", fx.chdir,
					"arbiter", "url", arb_url, "secret_file", fx.s.key));
	groups = json_object_get(doc, "groups");
	tpl = json_deep_copy(json_object_get(json_array_get(groups, 0), "template"));
	/* two: on either host, checked every second, unhealthy after 4 s. */
	json_array_append_new(groups, json_pack("{s:s,s:i,s:[s,s],s:o,s:{s:s},s:{s:i,s:i}}", "id",
						"two", "max", 2, "hosts", "h2", "h", "template",
						tpl, "claim", "ack", "VMACT claimed", "lifecycle",
						"healthy_timeout_s", 4, "health_interval_s", 1));
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	assert_int_equal(th_write_file(fx.cfg_c, text), 0);
	free(text);
	own(fx.cfg_c, false, 0644);
}

/* h2: its libvirtd, its pool, its arbiter (room for many); made once. */
static void h2_up(void)
{
	char img2[PATH_MAX], listen[PATH_MAX + 8];

	if (fx.c2)
		return;
	mkdir(fx.home2, 0700);
	own(fx.home2, true, 0700);
	snprintf(fx.uri2, sizeof(fx.uri2),
		 "qemu+unix:///session?socket=%s/.cache/libvirt/libvirt-sock", fx.home2);
	start_lv2();
	fx.c2 = virConnectOpen(fx.uri2);
	assert_non_null(fx.c2);
	snprintf(img2, sizeof(img2), "%s/img2", fx.s.dir);
	assert_int_equal(th_cluster_pool(fx.c2, NULL, fx.pool, img2), 0);
	{
		char base[PATH_MAX + 32];

		snprintf(base, sizeof(base), "%s/node-base.qcow2", img2);
		own(img2, true, 0755);
		own(base, true, 0644);
		virStoragePoolPtr p = virStoragePoolLookupByName(fx.c2, fx.pool);

		assert_non_null(p);
		virStoragePoolRefresh(p, 0);
		virStoragePoolFree(p);
	}
	{
		const char *args[] = { fx.s.arbiter, "--listen", listen,        "--cpu",  "8",
				       "--memory",   "8Gi",      "--lease-key", fx.s.key, NULL };

		snprintf(listen, sizeof(listen), "unix:%s", fx.arb2);
		assert_int_equal(th_cluster_spawn(&fx.ad2, &fx.s.u, args, fx.alog2), 0);
	}
	write_config_c();
}

static void host_unreachable(void **state)
{
	char name2[128];
	pid_t qemu2;
	json_t *n;

	h2_up();
	th_proc_stop(&fx.s.gd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	assert_int_equal(start_groupd(fx.cfg_c), 0);

	/* A member where the room is: h2. */
	assert_int_equal(th_cluster_stack_change(&fx.s, "two", "increase", "{\"delta\":1}"), 1);
	if (!th_wait_daemon(&fx.s.gd, running_on, "h2", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the first member did not go into service on h2");
	snprintf(name2, sizeof(name2), "%s", member_on("two", "h2"));
	qemu2 = qemu_of(name2);
	assert_true(qemu2 > 0);

	/* h2's libvirtd dies (its guest runs on). */
	assert_int_equal(th_proc_stop(&fx.lv2, SIGKILL, 10 * VMACT_USEC_PER_SEC), 128 + SIGKILL);
	if (!th_wait_daemon(&fx.s.gd, h2_libvirt, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "h2 never counted as unreachable");
	/* Placement goes elsewhere. */
	assert_int_equal(th_cluster_stack_change(&fx.s, "two", "increase", "{\"delta\":1}"), 2);
	if (!th_wait_daemon(&fx.s.gd, running_on, "h", LIMIT_BOOT_S))
		th_cluster_stack_fail(&fx.s, "the second member did not go to h");
	/* The unreachable member: on the books, reported, not deleted. */
	if (!th_wait_daemon(&fx.s.gd, h2_member_error, "UNHEALTHY", LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the member on the unreachable host was not reported");
	assert_string_equal(member_on("two", "h2"), name2);
	assert_int_equal(nodes_in("two", "state", NULL), 2);
	assert_int_equal(qemu_of(name2), qemu2);

	/* h2 back: the same guest, healthy again; nothing lost or doubled. */
	virConnectClose(fx.c2);
	start_lv2();
	fx.c2 = virConnectOpen(fx.uri2);
	assert_non_null(fx.c2);
	if (!th_wait_daemon(&fx.s.gd, h2_libvirt, (void *)1, LIMIT_S) ||
	    !th_wait_daemon(&fx.s.gd, h2_member_error, NULL, LIMIT_S))
		th_cluster_stack_fail(&fx.s, "the member on h2 did not come back healthy");
	assert_int_equal(qemu_of(name2), qemu2);
	n = th_cluster_stack_nodes(&fx.s, "two");
	assert_int_equal(json_array_size(n), 2);
	assert_string_not_equal(json_string_value(json_object_get(json_array_get(n, 0), "name")),
				json_string_value(json_object_get(json_array_get(n, 1), "name")));
	json_decref(n);
	assert_int_equal(ours_on(fx.c2), 1);
	assert_int_equal(ours_on(fx.c), 1);
	delete_all("two");
	assert_int_equal(ours_on(fx.c2), 0);
	assert_int_equal(ours_on(fx.c), 0);
}

/* ---- a standby VM's bind cut off by its host's libvirtd dying ---- */

/* A hook of the test's, in libvirt's hook directory (every libvirtd
 * started after it exists runs it, the session's too): on the first
 * start of one of the group "cut"'s VMs after the marker appears, it
 * takes the marker and kills its libvirtd, which is its parent. Any other
 * call, or with no marker: nothing. */
#define HOOK_DIR "/etc/libvirt/hooks/qemu.d"
static char hook_path[96], marker[160];
static bool hook_dir_made;

static void hook_install(void)
{
	char text[1024], mdir[128];

	snprintf(mdir, sizeof(mdir), "%s/cut", fx.s.dir);
	mkdir(mdir, 0700);
	own(mdir, true, 0700);
	snprintf(marker, sizeof(marker), "%s/once", mdir);
	snprintf(hook_path, sizeof(hook_path), HOOK_DIR "/vmact-test-cut-%d", (int)getpid());
	hook_dir_made = mkdir(HOOK_DIR, 0755) == 0;
	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "[ \"$2\" = prepare ] && [ \"$3\" = begin ] || exit 0\n"
		 "case \"$1\" in " PREFIX "cut-*) ;; *) exit 0 ;; esac\n"
		 "rm '%s' 2>/dev/null || exit 0\n"
		 "kill -KILL $PPID\n"
		 "exit 1\n",
		 marker);
	assert_int_equal(th_write_file(hook_path, text), 0);
	assert_int_equal(chmod(hook_path, 0755), 0);
}

static void hook_remove(void)
{
	if (hook_path[0])
		unlink(hook_path);
	if (hook_dir_made)
		rmdir(HOOK_DIR);
	hook_path[0] = 0;
	hook_dir_made = false;
}

/* cfg_c with a group "cut" on h2: one standby VM in the running tier. */
static void write_config_d(void)
{
	char *text = th_read_file(fx.cfg_c);
	json_t *doc = text ? json_loads(text, 0, NULL) : NULL, *groups, *tpl;

	free(text);
	assert_non_null(doc);
	groups = json_object_get(doc, "groups");
	tpl = json_deep_copy(json_object_get(json_array_get(groups, 0), "template"));
	json_array_append_new(groups, json_pack("{s:s,s:i,s:[s],s:o,s:{s:s},s:{s:i},s:{s:i}}", "id",
						"cut", "max", 1, "hosts", "h2", "template", tpl,
						"claim", "ack", "VMACT claimed", "pool", "running",
						1, "lifecycle", "retry_backoff_s", 2));
	text = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	assert_int_equal(th_write_file(fx.cfg_d, text), 0);
	free(text);
	own(fx.cfg_d, false, 0644);
}

/* vmact-groupd's VMs of group cut: how many, and the first's name and
 * state (static). */
static unsigned cut_vms(const char **name, const char **state)
{
	static char n[128], st[32];
	json_t *j = th_cluster_stack_api(&fx.s, "GET", "/v1/vms", NULL, NULL), *it;
	unsigned k = 0;
	size_t i;

	n[0] = st[0] = 0;
	json_array_foreach(json_object_get(j, "vms"), i, it) {
		if (strcmp(json_string_value(json_object_get(it, "group")) ?: "", "cut"))
			continue;
		if (!k++) {
			snprintf(n, sizeof(n), "%s",
				 json_string_value(json_object_get(it, "name")) ?: "");
			snprintf(st, sizeof(st), "%s",
				 json_string_value(json_object_get(it, "state")) ?: "");
		}
	}
	json_decref(j);
	if (name)
		*name = n;
	if (state)
		*state = st;
	return k;
}

static bool cut_deleting(void *arg)
{
	const char *st;

	return cut_vms(NULL, &st) == 1 && !strcmp(st, "deleting");
}

/* h2's domains of group cut (a count; the first's name in name). */
static int cut_domains(char *name, size_t len)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(fx.c2, &doms, 0), k = 0;

	for (int i = 0; i < n; i++) {
		const char *dn = virDomainGetName(doms[i]);

		if (!strncmp(dn, PREFIX "cut-", strlen(PREFIX "cut-")) && !k++ && name)
			snprintf(name, len, "%s", dn);
		virDomainFree(doms[i]);
	}
	free(doms);
	return n < 0 ? -1 : k;
}

/* One domain of cut on h2, the VM vmact-groupd knows, booted and ready. */
static bool cut_settled(void *arg)
{
	char dom[128] = "";
	const char *name, *st;

	return cut_domains(dom, sizeof(dom)) == 1 && cut_vms(&name, &st) == 1 &&
	       !strcmp(name, dom) && !strcmp(st, "ready");
}

static void standby_bind_cut_off(void **state)
{
	const char *st;

	h2_up();
	hook_install();
	/* h2's libvirtd again, to read the hook; vmact-groupd with cut. */
	th_proc_stop(&fx.s.gd, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	virConnectClose(fx.c2);
	fx.c2 = NULL;
	th_proc_stop(&fx.lv2, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	start_lv2();
	fx.c2 = virConnectOpen(fx.uri2);
	assert_non_null(fx.c2);
	assert_int_equal(th_write_file(marker, ""), 0);
	own(marker, true, 0600);
	write_config_d();
	assert_int_equal(start_groupd(fx.cfg_d), 0);

	/* The refill's start of the standby VM kills h2's libvirtd: the
	 * definition is there, the start's undo cannot reach it. */
	if (!TH_WAIT(NULL, th_proc_exited(&fx.lv2), (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		th_cluster_stack_fail(&fx.s, "the hook never cut h2's libvirtd off");
	th_proc_wait(&fx.lv2);
	assert_int_equal(access(marker, F_OK), -1);
	/* vmact-groupd keeps the VM, to be removed, while h2 is away. */
	if (!th_wait_daemon(&fx.s.gd, cut_deleting, NULL, LIMIT_S)) {
		cut_vms(NULL, &st);
		th_cluster_stack_fail(
			&fx.s,
			"the standby VM whose bind was cut off is not kept as a removal "
			"(%u VM(s) of cut, the first '%s')",
			cut_vms(NULL, NULL), st);
	}
	assert_int_equal(cut_vms(NULL, NULL), 1);

	/* h2 back: the half-made domain goes, a new standby VM is made; every
	 * domain of cut is the one vmact-groupd knows. */
	virConnectClose(fx.c2);
	fx.c2 = NULL;
	start_lv2();
	fx.c2 = virConnectOpen(fx.uri2);
	assert_non_null(fx.c2);
	if (!th_wait_daemon(&fx.s.gd, cut_settled, NULL, LIMIT_BOOT_S)) {
		char dom[128] = "";
		const char *name;
		int n = cut_domains(dom, sizeof(dom));

		cut_vms(&name, &st);
		th_cluster_stack_fail(&fx.s,
				      "cut did not settle: %d domain(s) on h2 (the first %s), "
				      "vmact-groupd's %s is %s",
				      n, dom, name, st);
	}
	hook_remove();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lease_wait_outlasts),
		cmocka_unit_test(lease_lost_unplaces),
		cmocka_unit_test(session_domain_100),
		cmocka_unit_test(health_in_service_reported),
		cmocka_unit_test(health_in_service_replaced),
		cmocka_unit_test(boot_limit),
		cmocka_unit_test(host_unreachable),
		cmocka_unit_test(standby_bind_cut_off),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
