/* SPDX-License-Identifier: Apache-2.0 */
/* vmact follows a live migration it did not start: an operator's
 * `virsh migrate --live` between two real libvirt daemons on this machine
 * (A, the system one, and B, tests/host/host2.sh: its own host UUID, run
 * directories and cgroup tree), a vmactd on each, and the project's TCG
 * test guest (doc/actuation.md, "Live migration"):
 *
 *   - vmactd A manages the guest (bounds 1..4 CPUs, virtio-mem);
 *   - the guest moves A -> B live (libvirt's virDomainMigrate3, as virsh
 *     does, migration data over 127.0.0.1, at most 8 MiB/s so that the
 *     move lasts), its serial log opened in append mode so both QEMUs
 *     write it in turn;
 *   - the guest busy on two threads, vmactd A stopped until the move is
 *     under way: its resize is refused at once (not left to wait on
 *     libvirt's job lock), and vmactd B does not manage the paused QEMU
 *     that is arriving;
 *   - vmactd B manages it once it runs there, from the size it had (1 CPU,
 *     512Mi), with its vmact metadata as on A; vmactd A no longer does;
 *   - the guest went on reporting through the move;
 *   - vmactd B grows the busy guest: a vCPU plugged through B's libvirt,
 *     seen by the guest.
 *
 * Root; B is stopped at the end (host2.sh down) unless VMACT_TEST_HOST2_KEEP
 * is set (the next run's host2.sh up then finds it running). Conditions are awaited with generous
 * safety limits; nothing is timed. */
#include <errno.h>
#include <pthread.h>
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
#include <curl/curl.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"
#include "tests/lib/ctl.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/host2.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-mig"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S      120.0

DEFINE_PTR_CLEANUP(jsonp, json_t, json_decref)

static struct {
	struct tg_guest g;
	struct th_vmactd a, b;
	char b_pid[16];
	virConnectPtr vca, vcb;
} fx;

static int setup(void **state)
{
	char meta[1024], msg[512];

	(void)state;
	if (th_host2_up(fx.b_pid, sizeof(fx.b_pid)) < 0) {
		print_error("the second libvirtd (tests/host/host2.sh up) did not start\n");
		return -1;
	}
	fx.vca = virConnectOpen("qemu:///system");
	fx.vcb = virConnectOpen(TH_HOST2_URI);
	if (!fx.vca || !fx.vcb) {
		print_error("cannot connect to both libvirt daemons\n");
		return -1;
	}
	if (th_vmactd_init(&fx.a, PREFIX "a", NULL) < 0 ||
	    th_vmactd_init(&fx.b, PREFIX "b", NULL) < 0)
		return -1;
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS
		 "</vmact:autoscaling>");
	if (th_host2_guest(fx.vca, PREFIX, meta, fx.a.dir, false, &fx.g, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	virDomainPtr d;

	(void)state;
	th_vmactd_teardown(&fx.a);
	th_vmactd_teardown(&fx.b);
	/* Wherever it runs now. */
	if (fx.vcb && fx.g.name[0] && (d = virDomainLookupByName(fx.vcb, fx.g.name))) {
		virDomainDestroy(d);
		virDomainFree(d);
	}
	tg_destroy(&fx.g);
	if (fx.vca)
		virConnectClose(fx.vca);
	if (fx.vcb)
		virConnectClose(fx.vcb);
	th_host2_down();
	return 0;
}

/* ---- what each vmactd reports ---- */

static json_t *vm_doc(const struct th_vmactd *d)
{
	char msg[256];

	return th_ctl_vm(d->sock, fx.g.name, msg, sizeof(msg));
}

static bool managed_by(void *arg)
{
	json_t *doc = vm_doc(arg);
	bool yes = doc != NULL;

	json_decref(doc);
	return yes;
}

static bool not_managed_by(void *arg)
{
	return !managed_by(arg);
}

/* The move, on a thread of its own (virDomainMigrate3 returns at its
 * end). */
struct move {
	pthread_t thread;
	virDomainPtr moved;
	char error[512];
	bool done;
};

static void *move_thread(void *arg)
{
	struct move *m = arg;
	virTypedParameterPtr params = NULL;
	int n = 0, max = 0;

	/* Over 127.0.0.1 (both daemons are on this machine; in qemu.conf a
	 * loopback migration_address is refused, so it comes with the call,
	 * as virsh's --listen-address). */
	if (virTypedParamsAddString(&params, &n, &max, VIR_MIGRATE_PARAM_URI, "tcp://127.0.0.1") <
		    0 ||
	    virTypedParamsAddString(&params, &n, &max, VIR_MIGRATE_PARAM_LISTEN_ADDRESS,
				    "127.0.0.1") < 0 ||
	    virTypedParamsAddULLong(&params, &n, &max, VIR_MIGRATE_PARAM_BANDWIDTH, 8) < 0) {
		snprintf(m->error, sizeof(m->error), "cannot build the parameters");
	} else {
		m->moved = virDomainMigrate3(fx.g.dom, fx.vcb, params, (unsigned)n,
					     VIR_MIGRATE_LIVE);
		if (!m->moved) {
			virErrorPtr e = virGetLastError();

			snprintf(m->error, sizeof(m->error), "virDomainMigrate3: %s",
				 e && e->message ? e->message : "?");
		}
	}
	virTypedParamsFree(params, n);
	__atomic_store_n(&m->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* libvirt on A has the move under way. */
static bool leaving_a(void *arg)
{
	(void)arg;
	return th_host2_leaving(fx.vca, fx.g.name);
}

static bool move_done(void *arg)
{
	return __atomic_load_n(&((struct move *)arg)->done, __ATOMIC_ACQUIRE);
}

static void start_vmactd(struct th_vmactd *d, const char *const *wrapper)
{
	static const char *const args[] = { "--verbose", NULL };
	char prefix[64], text[512];
	unsigned port = th_dead_port();

	/* Each its own state directory and metrics port. */
	assert_true(port > 0);
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text),
		 "{\"control\":{\"state_dir\":\"%s\"},\"metrics\":{\"listen\":\"127.0.0.1:%u\"}}",
		 d->dir, port);
	assert_int_equal(th_vmactd_config(d, prefix, text), 0);
	assert_int_equal(th_vmactd_spawn_under(d, wrapper, args), 0);
}

static void follows_a_live_migration(void **state)
{
	const char *const in_b[] = { "nsenter", "-t", fx.b_pid, "-m", "-C", NULL };
	const unsigned two = 2;
	struct move mv = { 0 };
	virDomainPtr d;
	struct tg_report before, after;
	char needle[256], *meta;

	(void)state;
	if (!th_wait_until(NULL, tg_booted, &fx.g, (uint64_t)(LIMIT_BOOT_S * VMACT_USEC_PER_SEC)))
		fail_msg("the guest did not boot");
	start_vmactd(&fx.a, NULL);
	start_vmactd(&fx.b, in_b);
	if (!th_vmactd_wait(&fx.a, managed_by, &fx.a, LIMIT_S))
		fail_msg("vmactd A does not manage %s", fx.g.name);
	print_message("vmactd A manages %s\n", fx.g.name);

	/* The guest busy, and vmactd A stopped meanwhile (SIGSTOP) so that
	 * its wish to grow the guest comes while the move is under way: the
	 * guest cannot be told anything once the move has begun (the
	 * destination's QEMU binds its control socket at the start). */
	assert_int_equal(kill(fx.a.proc.pid, SIGSTOP), 0);
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	if (!tg_wait(&fx.g, 0, tg_busy_eq, &two, LIMIT_S, &before))
		fail_msg("the guest did not start its busy loops");
	/* The operator's move. */
	assert_int_equal(pthread_create(&mv.thread, NULL, move_thread, &mv), 0);
	if (!th_wait_until(NULL, leaving_a, NULL, (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC)))
		fail_msg("libvirt A never had the move under way");
	assert_int_equal(kill(fx.a.proc.pid, SIGCONT), 0);
	/* A's resize is refused at once, the move under way; B does not
	 * manage the paused QEMU that is arriving. */
	if (!th_vmactd_wait_log(&fx.a, "a live migration of the domain is under way (leaving)",
				LIMIT_S))
		fail_msg("vmactd A did not try to grow the busy guest during its move");
	if (move_done(&mv))
		fail_msg("the move ended before vmactd A's refusal could be checked against it");
	assert_true(not_managed_by(&fx.b));
	print_message("during the move: A's resize refused at once, B not managing it yet\n");
	if (!th_wait_until(NULL, move_done, &mv, (uint64_t)(LIMIT_S * 3 * VMACT_USEC_PER_SEC)))
		fail_msg("the move did not end");
	pthread_join(mv.thread, NULL);
	if (!mv.moved)
		fail_msg("%s", mv.error);
	virDomainFree(mv.moved);
	/* g.dom was A's; the guest is B's now (the teardown finds it there). */
	virDomainFree(fx.g.dom);
	fx.g.dom = NULL;
	print_message("%s moved to B\n", fx.g.name);

	/* B's vmactd manages it, from the size it had (its first line on
	 * it); A's no longer does. */
	if (!th_vmactd_wait(&fx.b, managed_by, &fx.b, LIMIT_S))
		fail_msg("vmactd B does not manage %s after the move", fx.g.name);
	if (!th_vmactd_wait(&fx.a, not_managed_by, &fx.a, LIMIT_S))
		fail_msg("vmactd A still manages %s, which runs on B", fx.g.name);
	snprintf(needle, sizeof(needle),
		 "%s: managing (1 CPU / 512Mi, bounds [1 CPU / 512Mi, 4 CPU", fx.g.name);
	assert_true(th_vmactd_log_has(&fx.b, needle));
	/* Its vmact metadata came with it. */
	d = virDomainLookupByName(fx.vcb, fx.g.name);
	assert_non_null(d);
	meta = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI,
				    VIR_DOMAIN_AFFECT_LIVE);
	virDomainFree(d);
	assert_non_null(meta);
	assert_non_null(strstr(meta, "max=\"4\""));
	free(meta);
	/* The guest went on: its status lines continue in the same log. */
	if (!tg_wait(&fx.g, before.seq, NULL, NULL, LIMIT_S, &after))
		fail_msg("the guest stopped reporting after the move");
	print_message("guest status lines: seq %lu before the move, %lu after\n", before.seq,
		      after.seq);

	/* B grows the busy guest: a vCPU plugged through B's libvirt. */
	if (!th_vmactd_wait(&fx.b, tg_two_cpus, &fx.g, LIMIT_S))
		fail_msg("vmactd B did not give the moved busy guest a second vCPU");
	d = virDomainLookupByName(fx.vcb, fx.g.name);
	assert_non_null(d);
	assert_true(virDomainGetVcpusFlags(d, VIR_DOMAIN_AFFECT_LIVE) >= 2);
	virDomainFree(d);
	/* Nothing of it was left to A, which waited on no job lock. */
	assert_null(virDomainLookupByName(fx.vca, fx.g.name));
	virResetLastError();
	assert_false(th_vmactd_log_has(&fx.a, "cannot acquire state change lock"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(follows_a_live_migration),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, setup, teardown);
}
