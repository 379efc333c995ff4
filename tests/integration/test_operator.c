/* SPDX-License-Identifier: Apache-2.0 */
/* An operator's features on a real vmactd (build[/san]/vmactd and vmactl,
 * next to this binary's directory) and real libvirt (issue 26): one TCG
 * guest (tests/guest) put under vmact in recommend mode, a user and a
 * group made for the test, and a second domain, defined and never started,
 * whose layout vmactl check --fix repairs. In order:
 *
 *   op_recommend  mode='recommend': the guest busy on its CPU and filling
 *                 its memory (a balloon with statistics): its recommendation
 *                 rises (show, recommendation events, decisions marked so)
 *                 while it keeps its size: libvirt's vCPUs and memory, no
 *                 quota written, no resize event, the arbiter's permit that
 *                 size (asked for no more); vmactl set --mode active:
 *                 it grows, through the arbiter's permit, and its quota is
 *                 written. CPU or memory, whichever the policies recommend:
 *                 on a loaded host the CPU policy holds a contended VM
 *   op_readonly   control.read_group: a member (by a supplementary group,
 *                 run with setpriv) runs status, show, events, top and check;
 *                 set, pause, enable and disable are refused with the
 *                 read-only message and the metadata does not change; a
 *                 user outside the group is refused the socket
 *   op_fix        a domain without NUMA, <maxMemory>, virtio-mem, vCPUs to
 *                 plug or balloon statistics: check fails (exit 1); the
 *                 commands check --fix prints are run as they are (sh -e,
 *                 virt-xml and virsh); check then passes, its memory
 *                 figures from the balloon, and --fix has nothing left
 *   op_hook       vmactl status says when libvirtd must be restarted for
 *                 vmact-hook: that domain started with no hook installed:
 *                 "not installed"; the hook installed, libvirtd not
 *                 restarted, started again: no notice came, "restart
 *                 libvirtd" (as the log's notices agree); libvirtd
 *                 restarted: the notice comes and the line goes. The hook
 *                 is removed and libvirtd restarted again at the end
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <errno.h>
#include <grp.h>
#include <libgen.h>
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"
#include "shared/hook-msg.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX        "op-it"
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 120.0
#define LIMIT_S       60.0

static struct {
	struct th_vmactd d;
	struct tg_guest g;
	char out[128], script[128], tpl[128];
	char group[32], user[32], fixdom[96];
	bool made_group, made_user, hook_installed;
} fx;

static void dump_log(void)
{
	th_print_log_tail(fx.d.log, "vmactd log", 5000);
}

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.d, pred, arg, limit_s);
}

/* Runs argv (NULL-terminated) with its stdout and stderr in fx.out;
 * returns its exit status. */
static int run(const char *const *argv)
{
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = fx.out };
	struct th_proc p = { 0 };

	assert_int_equal(th_spawn(&p, argv, &o), 0);
	return th_proc_wait(&p);
}

/* vmactl as root (as = NULL) or, through setpriv, as the user `as` with
 * the groups /etc/group gives it. */
static int vmactl_as(const char *as, const char *first, ...)
{
	char reuid[64];
	const char *argv[24];
	size_t n = 0;
	va_list ap;

	if (as) {
		snprintf(reuid, sizeof(reuid), "--reuid=%s", as);
		argv[n++] = "setpriv";
		argv[n++] = reuid;
		argv[n++] = "--regid=nogroup";
		argv[n++] = "--init-groups";
	}
	argv[n++] = fx.d.vmactl;
	argv[n++] = "--socket";
	argv[n++] = fx.d.sock;
	va_start(ap, first);
	for (const char *a = first; a && n < 23; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return run(argv);
}

#define vmactl(...) vmactl_as(NULL, __VA_ARGS__)

static bool out_has(const char *needle)
{
	return th_count_in_file(fx.out, needle) > 0;
}

static void expect_out(const char *needle)
{
	if (!out_has(needle)) {
		static char msg[4096];
		char *text = th_read_file(fx.out);

		snprintf(msg, sizeof(msg), "%s", text ? text : "");
		free(text);
		fail_msg("expected '%s' in: %s", needle, msg);
	}
}

static json_t *show(void)
{
	json_error_t je;
	json_t *doc;
	char *text;

	if (vmactl("show", fx.g.name, "--json", NULL) != 0) {
		text = th_read_file(fx.out);
		fail_msg("vmactl show: %s", text ? text : "");
	}
	text = th_read_file(fx.out);
	doc = json_loads(text, 0, &je);
	if (!doc)
		fail_msg("vmactl show --json: not JSON (%s): %s", je.text, text);
	free(text);
	return doc;
}

static double num(const json_t *doc, const char *a, const char *b)
{
	const json_t *v = json_object_get(doc, a);

	if (b)
		v = json_object_get(v, b);
	return json_is_number(v) ? json_number_value(v) : -1;
}

static void live_state(struct hp_state *st)
{
	char *xml = virDomainGetXMLDesc(fx.g.dom, 0);
	struct vmact_err err = { 0 };

	assert_non_null(xml);
	assert_int_equal(hp_state_parse(xml, st, &err), 0);
	free(xml);
}

/* The size libvirt has: vCPUs and memory. */
static unsigned live_vcpus(void)
{
	struct hp_state st;

	live_state(&st);
	return hp_state_vcpus(&st);
}

static uint64_t live_mem(void)
{
	struct hp_state st;

	live_state(&st);
	return hp_state_mem_kib(&st) * 1024u;
}

#define MIB (1024.0 * 1024.0)

static void live_meta(struct hp_meta *m)
{
	char *xml = virDomainGetMetadata(fx.g.dom, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI,
					 VIR_DOMAIN_AFFECT_LIVE);
	struct vmact_err err = { 0 };

	assert_non_null(xml);
	if (hp_meta_parse(xml, m, &err) < 0)
		fail_msg("metadata: %s", err.msg);
	free(xml);
}

/* The VM group's CFS quota in milli-CPUs (-1 unlimited). */
static long quota_milli(void)
{
	return TH_VMACTD_QUOTA_OR_FAIL(&fx.d);
}

/* ---- fixture ---- */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st == -1 ? -1 : WEXITSTATUS(st);
}

static int setup(void **state)
{
	char msg[512], meta[1024], text[256], prefix[64];
	int pid = (int)getpid();
	virConnectPtr vc;

	(void)state;
	if (th_vmactd_init(&fx.d, PREFIX, &fx.g) < 0)
		return -1;
	snprintf(fx.out, sizeof(fx.out), "%s/out", fx.d.dir);
	snprintf(fx.script, sizeof(fx.script), "%s/fix.sh", fx.d.dir);
	snprintf(fx.tpl, sizeof(fx.tpl), "%s/domain.xml", fx.d.dir);
	/* Balloon statistics: the memory policy's evidence. */
	if (tg_balloon_template(fx.tpl) < 0)
		return -1;
	snprintf(fx.group, sizeof(fx.group), "vmop-r%d", pid);
	snprintf(fx.user, sizeof(fx.user), "vmop-u%d", pid);
	/* The reader: primary group nogroup, the read group a supplementary
	 * one (SO_PEERGROUPS). */
	if (sh("groupadd --system %s", fx.group) != 0) {
		print_error("groupadd %s failed\n", fx.group);
		return -1;
	}
	fx.made_group = true;
	if (sh("useradd --system --no-create-home --home-dir /nonexistent --shell "
	       "/usr/sbin/nologin -g nogroup -G %s %s",
	       fx.group, fx.user) != 0) {
		print_error("useradd %s failed\n", fx.user);
		return -1;
	}
	fx.made_user = true;
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI
		 "' enabled='true' mode='recommend'>" TG_META_BOUNDS "</vmact:autoscaling>");
	vc = virConnectOpen("qemu:///system");
	if (!vc || tg_start_template(vc, PREFIX, meta, fx.tpl, "vmact.report=1", &fx.g, msg,
				     sizeof(msg)) < 0) {
		print_error("guest: %s\n", vc ? msg : "no libvirt");
		return -1;
	}
	virConnectClose(vc);
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, pid);
	snprintf(text, sizeof(text),
		 "{\"control\":{\"read_group\":\"%s\"},\"metrics\":{\"listen\":\"\"}}", fx.group);
	if (th_vmactd_config(&fx.d, prefix, text) < 0)
		return -1;
	return th_vmactd_start(&fx.d, NULL, 1, LIMIT_BOOT_S, LIMIT_S) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	th_vmactd_stop(&fx.d);
	if (fx.fixdom[0]) {
		/* Defined by op_fix, started by op_hook, which may have failed
		 * with it running; its serial log goes too. */
		struct tg_guest fix, *const one[] = { &fix };

		tg_guest_named(&fix, fx.fixdom);
		tg_destroy_all(one, 1, true);
	}
	/* op_hook restarts libvirtd: the fixture finds the guest again by its
	 * name. */
	th_vmactd_teardown(&fx.d);
	if (fx.hook_installed) {
		unlink(VMACT_HOOK_PATH);
		rmdir("/etc/libvirt/hooks/qemu.d");
		if (th_restart_libvirtd() < 0)
			print_error("libvirtd did not restart\n");
	}
	if (fx.made_user && sh("userdel %s", fx.user) != 0)
		print_error("userdel %s failed\n", fx.user);
	if (fx.made_group && sh("groupdel %s", fx.group) != 0)
		print_error("groupdel %s failed\n", fx.group);
	return 0;
}

/* ---- recommend mode ---- */

/* What rose of the recommendation: CPU, memory. */
static bool rec_cpu, rec_mem;

static bool recommends_more(void *unused)
{
	json_t *doc = show();

	rec_cpu = num(doc, "recommended", "milli_cpu") > 1000;
	rec_mem = num(doc, "recommended", "mem_bytes") > 512 * MIB;
	json_decref(doc);
	return rec_cpu || rec_mem;
}

static bool permit_is_size(void *unused)
{
	json_t *doc = show();
	bool ok = num(doc, "permit", "milli_cpu") == 1000 &&
		  num(doc, "permit", "mem_bytes") == 512 * MIB;

	json_decref(doc);
	return ok;
}

static bool grew(void *unused)
{
	json_t *doc = show();
	bool ok = json_is_false(json_object_get(doc, "resizing")) &&
		  (rec_mem ? num(doc, "using", "mem_bytes") > 512 * MIB
			   : num(doc, "using", "milli_cpu") > 1000);

	json_decref(doc);
	return ok && (rec_mem ? live_mem() > 512 * MIB : live_vcpus() >= 2);
}

static void op_recommend(void **state)
{
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	json_t *doc;

	(void)state;
	live_meta(&m);
	assert_true(m.recommend);
	/* Managed in recommend mode: vmactd wrote no quota. */
	doc = show();
	assert_string_equal(json_string_value(json_object_get(doc, "mode")), "recommend");
	json_decref(doc);
	assert_int_equal(quota_milli(), -1);
	assert_int_equal(vmactl("status", NULL), 0);
	expect_out(" recommend ");

	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	assert_int_equal(tg_cmd(&fx.g, "alloc 300"), 0);
	if (!wait_until(recommends_more, NULL, LIMIT_SCALE_S))
		fail_msg("the busy guest's recommendation never rose above 1 CPU / 512Mi");
	/* It kept its size: libvirt, the core, the cgroup, the events. */
	assert_int_equal(live_vcpus(), 1);
	assert_true(live_mem() == 512 * MIB);
	doc = show();
	assert_true(num(doc, "using", "milli_cpu") == 1000);
	assert_true(num(doc, "using", "mem_bytes") == 512 * MIB);
	json_decref(doc);
	/* The arbiter holds what it has, and was asked for nothing more. */
	if (!wait_until(permit_is_size, NULL, LIMIT_S))
		fail_msg("the arbiter never permitted the size it has");
	assert_int_equal(quota_milli(), -1);
	assert_int_equal(vmactl("events", "--vm", fx.g.name, "--json", NULL), 0);
	expect_out("\"kind\":\"recommendation\"");
	expect_out(rec_mem ? "\"text\":\"recommendation: grow memory to "
			   : "\"text\":\"recommendation: grow to ");
	expect_out("\"recommendation\":true");
	if (out_has("\"kind\":\"resize\""))
		fail_msg("a resize in recommend mode");
	assert_int_equal(vmactl("show", fx.g.name, NULL), 0);
	expect_out("Mode:        recommend");
	expect_out("Recommended: ");

	/* Active: the recommendation is applied the normal way. */
	assert_int_equal(vmactl("set", fx.g.name, "--mode", "active", NULL), 0);
	live_meta(&m);
	assert_false(m.recommend);
	if (!wait_until(grew, NULL, LIMIT_SCALE_S))
		fail_msg("switched to active, the busy guest never grew (%s)",
			 rec_mem ? "memory" : "CPU");
	/* Its quota written: what it is granted. */
	assert_true(quota_milli() >= 1000);
	assert_int_equal(vmactl("events", "--vm", fx.g.name, "--json", NULL), 0);
	expect_out("\"text\":\"mode active set by the operator\"");
	expect_out("\"text\":\"resized to ");
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);
	assert_int_equal(tg_cmd(&fx.g, "free"), 0);
}

/* ---- read-only access ---- */

static void op_readonly(void **state)
{
	struct stat st;
	struct group *g = getgrnam(fx.group);
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };

	(void)state;
	assert_non_null(g);
	assert_int_equal(stat(fx.d.sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0660);
	assert_int_equal(st.st_gid, g->gr_gid);
	/* Reads. */
	assert_int_equal(vmactl_as(fx.user, "status", NULL), 0);
	expect_out(fx.g.name);
	assert_int_equal(vmactl_as(fx.user, "show", fx.g.name, NULL), 0);
	expect_out("Bounds:");
	assert_int_equal(vmactl_as(fx.user, "events", "--vm", fx.g.name, NULL), 0);
	expect_out("mode active set by the operator");
	assert_int_equal(vmactl_as(fx.user, "top", "--iterations", "1", "--json", NULL), 0);
	expect_out(fx.g.name);
	assert_int_equal(vmactl_as(fx.user, "check", fx.g.name, NULL), 0);
	expect_out("Verdict:     ready");
	/* Writes: refused, with the reason; nothing changed. */
	assert_int_equal(vmactl_as(fx.user, "pause", fx.g.name, NULL), 1);
	expect_out("permission denied: read-only access (group '");
	expect_out("changes what vmactd does");
	assert_int_equal(vmactl_as(fx.user, "set", fx.g.name, "--max-cpu", "2", NULL), 1);
	expect_out("read-only access");
	assert_int_equal(vmactl_as(fx.user, "set", fx.g.name, "--mode", "recommend", NULL), 1);
	expect_out("read-only access");
	assert_int_equal(vmactl_as(fx.user, "disable", fx.g.name, NULL), 1);
	expect_out("read-only access");
	assert_int_equal(vmactl_as(fx.user, "enable", fx.g.name, NULL), 1);
	expect_out("read-only access");
	live_meta(&m);
	assert_false(m.paused);
	assert_false(m.recommend);
	assert_true(m.enabled);
	assert_int_equal(m.max.milli_cpu, 4000);
	/* Someone outside the group: the socket's mode keeps it out. */
	{
		const char *argv[] = { "setpriv",        "--reuid=nobody", "--regid=nogroup",
				       "--clear-groups", fx.d.vmactl,      "--socket",
				       fx.d.sock,        "status",         NULL };

		assert_int_equal(run(argv), 1);
		expect_out("Permission denied");
	}
	/* Root as ever. */
	assert_int_equal(vmactl("pause", fx.g.name, NULL), 0);
	assert_int_equal(vmactl("resume", fx.g.name, NULL), 0);
}

/* ---- check --fix ---- */

/* The test guest's domain without what vmact needs: one vCPU and no more,
 * no NUMA cell, no <maxMemory>, no virtio-mem device, no balloon. */
static void define_bare(void)
{
	char *tpl = th_read_file("tests/guest/domain.xml.in"), *xml, meta[512], guestdir[PATH_MAX];
	static const char *const cut[][2] = {
		{ "<maxMemory", "</maxMemory>" },
		{ "<vcpus>", "</vcpus>" },
		{ "<numa>", "</numa>" },
		{ "<memory model='virtio-mem'>", "</memory>" },
	};
	virConnectPtr vc;
	virDomainPtr d;

	assert_non_null(tpl);
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		char *a = strstr(tpl, cut[i][0]), *b = a ? strstr(a, cut[i][1]) : NULL;

		if (!b)
			fail_msg("template: no %s", cut[i][0]);
		b += strlen(cut[i][1]);
		memmove(a, b, strlen(b) + 1);
	}
	{
		char *v = strstr(tpl, "<vcpu placement='static' current='1'>4</vcpu>");

		assert_non_null(v);
		memcpy(v, "<vcpu placement='static'>1</vcpu>            ",
		       strlen("<vcpu placement='static' current='1'>4</vcpu>"));
	}
	snprintf(fx.fixdom, sizeof(fx.fixdom), "%s-%d-fix", PREFIX, (int)getpid());
	snprintf(meta, sizeof(meta),
		 "<metadata><vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='1' max='2'/>"
		 "<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"
		 "</vmact:autoscaling></metadata>");
	assert_non_null(realpath(tg_guest_dir(), guestdir));
	{
		const char *kv[] = { "NAME",     fx.fixdom, "GUEST",   guestdir, "RUN", TG_RUNDIR,
				     "METADATA", meta,      "CMDLINE", "",       NULL };

		xml = tg_subst(tpl, kv);
	}
	free(tpl);
	vc = virConnectOpen("qemu:///system");
	assert_non_null(vc);
	d = virDomainDefineXML(vc, xml);
	free(xml);
	if (!d)
		fail_msg("cannot define %s: %s", fx.fixdom, virGetLastErrorMessage());
	virDomainFree(d);
	virConnectClose(vc);
}

static void op_fix(void **state)
{
	char *script, *check;
	json_t *doc, *it;
	bool stats_ok = false;
	size_t i;

	(void)state;
	define_bare();
	/* Not ready: blockers against its metadata's bounds. */
	assert_int_equal(vmactl("check", fx.fixdom, NULL), 1);
	expect_out("NOT READY");
	expect_out("memory: stays at its size");
	expect_out("--fix prints the commands");
	assert_int_equal(vmactl("check", fx.fixdom, "--fix", NULL), 1);
	expect_out("# [cold restart] numa: ");
	expect_out("virt-xml ");
	expect_out("memballoon virtio,stats.period=1");
	/* The script as printed, run as it is. */
	script = th_read_file(fx.out);
	assert_non_null(script);
	if (getenv("VMACT_TEST_VERBOSE"))
		printf("---- vmactl check --fix ----\n%s", script);
	assert_int_equal(th_write_file(fx.script, script), 0);
	free(script);
	{
		const char *argv[] = { "sh", "-e", fx.script, NULL };

		if (run(argv) != 0) {
			char *text = th_read_file(fx.out);

			fail_msg("the fixes failed: %s", text ? text : "");
		}
	}
	/* Ready now, the memory sized on the balloon's statistics. */
	if (vmactl("check", fx.fixdom, NULL) != 0) {
		check = th_read_file(fx.out);
		fail_msg("check after the fixes: %s", check ? check : "");
	}
	expect_out("Verdict:     ready");
	assert_int_equal(vmactl("check", fx.fixdom, "--json", NULL), 0);
	check = th_read_file(fx.out);
	doc = json_loads(check, 0, NULL);
	free(check);
	assert_non_null(doc);
	assert_true(json_is_null(json_object_get(doc, "live")));
	json_array_foreach(json_object_get(json_object_get(doc, "definition"), "items"), i, it) {
		const char *part = json_string_value(json_object_get(it, "part"));

		if (strcmp(json_string_value(json_object_get(it, "level")), "blocker") == 0)
			fail_msg("still a blocker: %s", part);
		stats_ok |= strcmp(part, "memory-stats") == 0 &&
			    strcmp(json_string_value(json_object_get(it, "level")), "ok") == 0;
	}
	assert_true(stats_ok);
	json_decref(doc);
	assert_int_equal(vmactl("check", fx.fixdom, "--fix", NULL), 0);
	expect_out("# nothing to fix");
}

/* ---- the hook and libvirtd ---- */

static json_t *status_doc(void)
{
	json_t *doc;
	char *text;

	assert_int_equal(vmactl("status", "--json", NULL), 0);
	text = th_read_file(fx.out);
	doc = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(doc);
	return doc;
}

/* The hook's record names the fix domain's last start without a notice
 * (want true), or no such start (want false). */
static bool unannounced(void *want)
{
	json_t *doc = status_doc();
	const char *vm = json_string_value(
		json_object_get(json_object_get(json_object_get(doc, "hook"), "unannounced_start"),
				"vm"));
	bool ok = (vm && strcmp(vm, fx.fixdom) == 0) == *(bool *)want;

	json_decref(doc);
	return ok;
}

/* Starts the fix domain, and waits until vmactd manages it. */
static void start_fixdom(void)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, fx.fixdom) : NULL;
	char needle[160];
	unsigned before;

	assert_non_null(d);
	snprintf(needle, sizeof(needle), "%s: managing", fx.fixdom);
	before = th_count_in_file(fx.d.log, needle);
	if (virDomainCreate(d) < 0)
		fail_msg("cannot start %s: %s", fx.fixdom, virGetLastErrorMessage());
	virDomainFree(d);
	virConnectClose(vc);
	if (!TH_WAIT(NULL, th_count_in_file(fx.d.log, needle) > before,
		     (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC))) {
		dump_log();
		fail_msg("vmactd never managed %s", fx.fixdom);
	}
}

static void stop_fixdom(void)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, fx.fixdom) : NULL;

	assert_non_null(d);
	assert_int_equal(virDomainDestroy(d), 0);
	virDomainFree(d);
	virConnectClose(vc);
}

static void op_hook(void **state)
{
	char hook[PATH_MAX + 32], needle[160];
	bool yes = true, no = false, ran;
	json_t *doc;
	unsigned n;

	(void)state;
	if (access(VMACT_HOOK_PATH, F_OK) == 0)
		skip(); /* someone's installed hook: not this test's to replace */
	/* No hook: a start without a notice, and nothing to restart for. */
	start_fixdom();
	if (!wait_until(unannounced, &yes, LIMIT_S))
		fail_msg("vmactd did not note the start without a hook notice");
	doc = status_doc();
	assert_false(json_is_true(json_object_get(json_object_get(doc, "hook"), "installed")));
	assert_false(
		json_is_true(json_object_get(json_object_get(doc, "hook"), "restart_libvirtd")));
	json_decref(doc);
	assert_int_equal(vmactl("status", NULL), 0);
	expect_out("Hook: vmact's libvirt hook is not installed");
	stop_fixdom();

	/* Installed, libvirtd not restarted: it read its hooks before. */
	snprintf(hook, sizeof(hook), "install -D -m 755 '%s/vmact-hook' " VMACT_HOOK_PATH,
		 dirname(strdupa(fx.d.prog)));
	assert_int_equal(sh("%s", hook), 0);
	fx.hook_installed = true;
	snprintf(needle, sizeof(needle), "hook: %s: prepare", fx.fixdom);
	n = th_count_in_file(fx.d.log, needle);
	start_fixdom();
	ran = th_count_in_file(fx.d.log, needle) > n;
	doc = status_doc();
	/* What vmactl says agrees with what the hook did. */
	assert_true(json_is_true(json_object_get(json_object_get(doc, "hook"), "installed")));
	assert_int_equal(json_is_true(
				 json_object_get(json_object_get(doc, "hook"), "restart_libvirtd")),
			 !ran);
	json_decref(doc);
	assert_int_equal(vmactl("status", NULL), 0);
	if (!ran) {
		expect_out("restart libvirtd (systemctl restart libvirtd)");
		if (!th_vmactd_log_has(&fx.d, "started without a notice from vmact-hook"))
			fail_msg("vmactd did not log the start without a hook notice");
	} else
		print_message("libvirtd already ran hooks from qemu.d: no restart needed\n");
	stop_fixdom();

	/* libvirtd restarted: it runs the hook, the line goes. */
	n = th_count_in_file(fx.d.log, "libvirt: reconnected");
	if (th_restart_libvirtd() < 0)
		fail_msg("libvirtd did not restart");
	if (!TH_WAIT(NULL, th_count_in_file(fx.d.log, "libvirt: reconnected") > n,
		     (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC))) {
		dump_log();
		fail_msg("vmactd did not reconnect to the restarted libvirtd");
	}
	n = th_count_in_file(fx.d.log, needle);
	start_fixdom();
	if (!TH_WAIT(NULL, th_count_in_file(fx.d.log, needle) > n,
		     (uint64_t)(LIMIT_S * VMACT_USEC_PER_SEC))) {
		dump_log();
		fail_msg("the restarted libvirtd did not run the hook");
	}
	if (!wait_until(unannounced, &no, LIMIT_S))
		fail_msg("status still names an unannounced start");
	assert_int_equal(vmactl("status", NULL), 0);
	if (out_has("Hook: "))
		fail_msg("vmactl status still has a hook line");
	stop_fixdom();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(op_recommend),
		cmocka_unit_test(op_readonly),
		cmocka_unit_test(op_fix),
		cmocka_unit_test(op_hook),
	};

	if (!th_root_test("test_operator", "libvirt qemu:///system, BPF, cgroups, useradd"))
		return 1;
	return cmocka_run_group_tests_name("operator", tests, setup, teardown);
}
