/* SPDX-License-Identifier: Apache-2.0 */
/* vmactl against a real vmactd (build[/san]/vmactd and vmactl, next to
 * this binary's directory) managing one real TCG guest (tests/guest), with
 * the defaults a user gets (the reactive policy, the embedded arbiter);
 * the guest has no vm-monitor (the host's own evidence shrinks it). It is made
 * persistent (its definition saved while it runs), so that vmactl's
 * changes must reach both its live metadata and its definition. One guest
 * serves every case, in order:
 *
 *   vmactl_status   status --json against libvirt (vCPUs, memory) and the
 *                   cgroup (quota); the documented fields; the text table
 *   vmactl_events   busy guest: events --follow --json sees the decision
 *                   with its reason and the resize; show --json has them,
 *                   and the vCPUs libvirt reports
 *   vmactl_why      the guest idle again, without a vm-monitor: it comes
 *                   back to 1 CPU on the host's approval, no "cannot
 *                   shrink" on the way, and show says who approved and on
 *                   what evidence (doc/policy.md, "Without an agent")
 *   vmactl_set      set --max-cpu/--min-memory: the live metadata and the
 *                   definition say so, show follows; a bound the metadata
 *                   reader refuses is refused (exit 1), a usage error is 2
 *   vmactl_pause    pause: the state and the metadata (live and definition)
 *                   say paused, a busy guest is not resized; resume
 *   vmactl_restart  a new vmactd reads the bounds and the pause back
 *   vmactl_held     at a 1-CPU maximum, busy: a "hold" event says the class
 *                   changed and the goal did not; no decision, no resize.
 *                   A 2-CPU minimum above the arbiter's watermark: a
 *                   partial permit event with the arbiter's reason
 *   vmactl_enroll   check (by name and UUID): ready with its metadata's
 *                   bounds, a memory maximum out of reach is a cold-restart
 *                   blocker (exit 1); disable by UUID: enabled="false"
 *                   live and in the definition, vmactd lets it go, status
 *                   --all says why; with the metadata removed, check takes
 *                   the layout's defaults, enable refuses bounds out of
 *                   reach and writes the defaults, and vmactd manages it
 *   vmactl_top      `vmactl top` in tmux: its screen read back with
 *                   capture-pane shows the VM as libvirt has it; q quits
 *   vmactl_refused  an unprivileged user is refused (exit 1)
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX        "vmactl-it"
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 120.0
#define LIMIT_S       60.0

static struct {
	struct tg_guest g;
	struct th_vmactd d;
	char out[128], follow[128], tmux[64];
	struct th_proc follower;
} fx;

static bool daemon_died(void)
{
	return fx.d.proc.pid > 0 && th_proc_exited(&fx.d.proc);
}

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.d, pred, arg, limit_s);
}

/* Runs vmactl with args (NULL-terminated); its stdout and stderr go to
 * fx.out; returns its exit status. */
static int vmactl(const char *first, ...)
{
	const char *argv[16] = { fx.d.vmactl, "--socket", fx.d.sock };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = fx.out };
	struct th_proc p = { 0 };
	size_t n = 3;
	va_list ap;

	va_start(ap, first);
	for (const char *a = first; a && n < 15; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	return th_proc_wait(&p);
}

/* vmactl ... --json, which must succeed; its document. */
static json_t *vmactl_json(const char *cmd, const char *vm)
{
	json_error_t je;
	json_t *doc;
	char *text;
	int st = vm ? vmactl(cmd, vm, "--json", NULL) : vmactl(cmd, "--json", NULL);

	text = th_read_file(fx.out);
	if (st != 0)
		fail_msg("vmactl %s: exit %d: %s", cmd, st, text ? text : "");
	doc = json_loads(text, 0, &je);
	if (!doc)
		fail_msg("vmactl %s --json: not JSON (%s): %s", cmd, je.text, text);
	free(text);
	return doc;
}

static json_t *show(void)
{
	return vmactl_json("show", fx.g.name);
}

/* ---- libvirt's and the cgroup's view ---- */

static virConnectPtr conn(void)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");

	assert_non_null(vc);
	return vc;
}

static void live_state(struct hp_state *st)
{
	virConnectPtr vc = conn();
	virDomainPtr d = virDomainLookupByName(vc, fx.g.name);
	char *xml = d ? virDomainGetXMLDesc(d, 0) : NULL;
	struct vmact_err err = { 0 };

	assert_non_null(xml);
	assert_int_equal(hp_state_parse(xml, st, &err), 0);
	free(xml);
	virDomainFree(d);
	virConnectClose(vc);
}

/* The domain's vmact metadata, live or as defined. */
static void meta_of(unsigned flags, struct hp_meta *m)
{
	virConnectPtr vc = conn();
	virDomainPtr d = virDomainLookupByName(vc, fx.g.name);
	char *xml = d ? virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI, flags)
		      : NULL;
	struct vmact_err err = { 0 };

	if (!xml)
		fail_msg("no vmact metadata (flags %u)", flags);
	if (hp_meta_parse(xml, m, &err) < 0)
		fail_msg("metadata: %s", err.msg);
	free(xml);
	virDomainFree(d);
	virConnectClose(vc);
}

/* The VM group's CFS quota in milli-CPUs (-1 unlimited). */
static long quota_milli(void)
{
	return TH_VMACTD_QUOTA_OR_FAIL(&fx.d);
}

static json_int_t jint(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_integer(v))
		fail_msg("field %s is not an integer", k);
	return json_integer_value(v);
}

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	if (!s)
		fail_msg("field %s is not a string", k);
	return s;
}

static json_t *find_vm(json_t *status)
{
	size_t i;
	json_t *vm;

	json_array_foreach(json_object_get(status, "vms"), i, vm)
		if (strcmp(jstr(vm, "name"), fx.g.name) == 0)
			return vm;
	fail_msg("vmactl status does not list %s", fx.g.name);
	return NULL;
}

/* ---- fixture ---- */

static int setup(void **state)
{
	char msg[512], meta[1024], prefix[64];
	virConnectPtr vc;

	(void)state;
	if (th_vmactd_init(&fx.d, PREFIX, &fx.g) < 0)
		return -1;
	snprintf(fx.out, sizeof(fx.out), "%s/out", fx.d.dir);
	snprintf(fx.follow, sizeof(fx.follow), "%s/follow", fx.d.dir);
	snprintf(fx.tmux, sizeof(fx.tmux), "vmactl-it-%d", (int)getpid());
	/* One status line a second: the reporter's own work stays small. */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>" TG_META_BOUNDS
		 "</vmact:autoscaling>");
	vc = virConnectOpen("qemu:///system");
	if (!vc || tg_start(vc, PREFIX, meta, &fx.g, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", vc ? msg : "no libvirt");
		return -1;
	}
	/* Persistent from now on: its definition is saved while it runs. */
	fx.d.persistent = true;
	{
		char *xml = virDomainGetXMLDesc(fx.g.dom, VIR_DOMAIN_XML_INACTIVE);
		virDomainPtr d = xml ? virDomainDefineXML(vc, xml) : NULL;

		free(xml);
		if (!d || virDomainIsPersistent(fx.g.dom) != 1) {
			print_error("cannot make the guest persistent\n");
			return -1;
		}
		virDomainFree(d);
	}
	virConnectClose(vc);
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	if (th_vmactd_config(&fx.d, prefix, NULL) < 0)
		return -1;
	return th_vmactd_start(&fx.d, NULL, 1, LIMIT_BOOT_S, LIMIT_S) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "tmux kill-session -t %s 2>/dev/null", fx.tmux);
	if (system(cmd) < 0)
		print_error("tmux kill-session failed\n");
	th_proc_stop(&fx.follower, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	th_vmactd_teardown(&fx.d);
	return 0;
}

/* ---- the cases ---- */

static void vmactl_status(void **state)
{
	static const char *const fields[] = {
		"name",  "uuid",   "state",  "vcpus",   "quota_milli_cpu", "mem_bytes", "using",
		"load1", "demand", "permit", "desired", "last_change",     NULL
	};
	json_t *doc, *vm;
	struct hp_state st;
	char *text;

	(void)state;
	doc = vmactl_json("status", NULL);
	vm = find_vm(doc);
	for (size_t i = 0; fields[i]; i++)
		if (!json_object_get(vm, fields[i]))
			fail_msg("status: no field %s", fields[i]);
	assert_string_equal(jstr(vm, "state"), "managed");
	assert_string_equal(jstr(vm, "uuid"), fx.g.uuid);
	live_state(&st);
	assert_int_equal(jint(vm, "vcpus"), hp_state_vcpus(&st));
	assert_int_equal(jint(vm, "mem_bytes"), (json_int_t)hp_state_mem_kib(&st) * 1024);
	assert_int_equal(jint(vm, "quota_milli_cpu"), quota_milli());
	json_decref(doc);

	/* The table: a header and the VM's row. */
	assert_int_equal(vmactl("status", NULL), 0);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "VM "));
	assert_non_null(strstr(text, "LAST CHANGE"));
	assert_non_null(strstr(text, fx.g.name));
	free(text);
	/* Usage errors are 2, an unknown VM 1. */
	assert_int_equal(vmactl("status", "--bogus", NULL), 2);
	assert_int_equal(vmactl("show", "no-such-vm", NULL), 1);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "no VM named 'no-such-vm'"));
	free(text);
}

static bool follow_has_resize(void *unused)
{
	return th_count_in_file(fx.follow, "\"kind\":\"decision\"") > 0 &&
	       th_count_in_file(fx.follow, "\"text\":\"grow to ") > 0 &&
	       th_count_in_file(fx.follow, "\"text\":\"resized to ") > 0;
}

static void vmactl_events(void **state)
{
	const char *argv[] = { fx.d.vmactl, "--socket", fx.d.sock, "events",
			       "--follow",  "--json",   NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = fx.follow };
	json_t *doc, *dec, *lc;
	struct hp_state st;
	char *text, *line;
	bool grow = false;
	size_t i;

	(void)state;
	assert_int_equal(th_spawn(&fx.follower, argv, &o), 0);
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	if (!wait_until(follow_has_resize, NULL, LIMIT_SCALE_S)) {
		text = th_read_file(fx.follow);
		fail_msg("events --follow never showed a decision and a resize: %s", text);
	}
	/* Ctrl-C ends the follower cleanly. */
	assert_int_equal(th_proc_stop(&fx.follower, SIGINT, 10 * VMACT_USEC_PER_SEC), 0);
	/* Every line is one JSON event with the documented fields. */
	text = th_read_file(fx.follow);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *ev = json_loads(line, 0, NULL);

		if (!ev)
			fail_msg("not a JSON line: %s", line);
		assert_true(jint(ev, "seq") > 0);
		assert_true(json_is_number(json_object_get(ev, "time")));
		jstr(ev, "vm");
		jstr(ev, "kind");
		jstr(ev, "text");
		assert_true(json_is_object(json_object_get(ev, "fields")));
		json_decref(ev);
	}
	free(text);
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);

	doc = show();
	dec = json_object_get(doc, "decisions");
	assert_true(json_array_size(dec) >= 1);
	json_array_foreach(dec, i, lc)
		grow |= strncmp(jstr(lc, "text"), "grow to ", 8) == 0 &&
			strstr(jstr(lc, "text"), "% busy for") != NULL;
	if (!grow)
		fail_msg("show: no decision reads \"grow to N vCPUs: vCPUs N %% busy for S s\"");
	lc = json_object_get(doc, "last_change");
	assert_true(json_is_object(lc));
	assert_non_null(strstr(jstr(lc, "reason"), ": grow to "));
	live_state(&st);
	assert_true(hp_state_vcpus(&st) >= 2);
	assert_int_equal(jint(doc, "vcpus"), hp_state_vcpus(&st));
	assert_string_equal(jstr(json_object_get(doc, "scheduler"), "kind"), "arbiter");
	assert_string_equal(jstr(json_object_get(doc, "monitor"), "kind"), "none");
	assert_string_equal(jstr(json_object_get(doc, "policy"), "cpu"), "reactive");
	json_decref(doc);
	/* The text view says the same. */
	assert_int_equal(vmactl("show", fx.g.name, NULL), 0);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "Decisions:"));
	assert_non_null(strstr(text, "decision: grow to "));
	if (getenv("VMACT_TEST_VERBOSE"))
		printf("---- vmactl show ----\n%s", text);
	free(text);
}

/* Back at 1 CPU by its quota, as the control API has it, never held by a
 * "cannot shrink" on the way. */
static bool shrunk_by_host(void *blocked)
{
	json_t *doc = show();
	bool ok = jint(json_object_get(doc, "using"), "milli_cpu") == 1000 &&
		  json_is_false(json_object_get(doc, "resizing"));

	if (json_is_string(json_object_get(doc, "cannot_shrink")))
		*(bool *)blocked = true;
	json_decref(doc);
	return ok;
}

static void vmactl_why(void **state)
{
	bool blocked = false;
	json_t *doc, *e;

	(void)state;
	/* vmactl_events left the guest idle at its grown size. */
	if (!wait_until(shrunk_by_host, &blocked, LIMIT_SCALE_S))
		fail_msg("the idle guest without a vm-monitor never came back to 1 CPU");
	assert_false(blocked);
	doc = show();
	e = json_object_get(doc, "evidence");
	assert_true(json_is_null(json_object_get(doc, "cannot_shrink")));
	assert_string_equal(jstr(e, "approval"), "host");
	assert_string_equal(jstr(json_object_get(e, "cpu"), "source"), "BPF");
	assert_non_null(strstr(jstr(json_object_get(doc, "last_change"), "reason"), "shrink to "));
	assert_non_null(strstr(jstr(json_object_get(doc, "last_change"), "reason"), "(BPF)"));
	json_decref(doc);
}

static bool bounds_shown(void *unused)
{
	json_t *doc = show(), *b = json_object_get(doc, "bounds");
	bool ok = jint(json_object_get(b, "max"), "milli_cpu") == 2000 &&
		  jint(json_object_get(b, "min"), "mem_bytes") == 768ll << 20;

	json_decref(doc);
	return ok;
}

static bool migration_shown(void *want)
{
	json_t *doc = show();
	bool ok = json_is_true(json_object_get(json_object_get(doc, "migration"), "enabled")) ==
		  (want != NULL);

	json_decref(doc);
	return ok;
}

static void vmactl_set(void **state)
{
	_cleanup_(hp_meta_done) struct hp_meta live = { 0 };
	_cleanup_(hp_meta_done) struct hp_meta conf = { 0 };
	char *text;

	(void)state;
	assert_int_equal(vmactl("set", fx.g.name, "--max-cpu", "2", "--min-memory", "768Mi", NULL),
			 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_int_equal(live.max.milli_cpu, 2000);
	assert_int_equal(live.min.mem_bytes, 768ull << 20);
	assert_int_equal(live.min.milli_cpu, 1000);
	assert_int_equal(live.max.mem_bytes, 1536ull << 20);
	assert_int_equal(conf.max.milli_cpu, 2000);
	assert_int_equal(conf.min.mem_bytes, 768ull << 20);
	if (!wait_until(bounds_shown, NULL, LIMIT_S))
		fail_msg("show never had the new bounds");

	/* Refused as the metadata reader refuses it; nothing changes. */
	assert_int_equal(vmactl("set", fx.g.name, "--min-cpu", "3", NULL), 1);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "min 3000 m above max 2000 m"));
	free(text);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	assert_int_equal(live.min.milli_cpu, 1000);
	assert_int_equal(vmactl("set", fx.g.name, NULL), 2);
	assert_int_equal(vmactl("set", fx.g.name, "--max-cpu", "two", NULL), 2);

	/* The migration opt-in: into the metadata, live and defined, and
	 * back out; vmactd shows what libvirt has. */
	assert_false(live.migration);
	assert_int_equal(vmactl("set", fx.g.name, "--migration", NULL), 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_true(live.migration);
	assert_true(conf.migration);
	assert_int_equal(live.max.milli_cpu, 2000);
	if (!wait_until(migration_shown, "on", LIMIT_S))
		fail_msg("show never had migration on");
	assert_int_equal(vmactl("show", fx.g.name, NULL), 0);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "Migration:   on"));
	free(text);
	assert_int_equal(vmactl("set", fx.g.name, "--no-migration", NULL), 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_false(live.migration);
	assert_false(conf.migration);
	if (!wait_until(migration_shown, NULL, LIMIT_S))
		fail_msg("show never had migration off");
}

static bool state_is(void *want)
{
	json_t *doc = show();
	bool ok = strcmp(jstr(doc, "state"), want) == 0;

	json_decref(doc);
	return ok;
}

static void vmactl_pause(void **state)
{
	_cleanup_(hp_meta_done) struct hp_meta live = { 0 };
	_cleanup_(hp_meta_done) struct hp_meta conf = { 0 };
	struct hp_state before, after;
	unsigned resizes;
	json_t *doc;

	(void)state;
	assert_int_equal(vmactl("pause", fx.g.name, "--json", NULL), 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_true(live.paused);
	assert_true(conf.paused);
	if (!wait_until(state_is, "paused", LIMIT_S))
		fail_msg("show never said paused");
	/* Paused: a busy guest keeps its size. */
	live_state(&before);
	resizes = th_count_in_file(fx.d.log, "resizing from");
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	sleep(3);
	live_state(&after);
	assert_int_equal(hp_state_vcpus(&after), hp_state_vcpus(&before));
	assert_int_equal(th_count_in_file(fx.d.log, "resizing from"), resizes);
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);
	doc = vmactl_json("status", NULL);
	assert_string_equal(jstr(find_vm(doc), "state"), "paused");
	json_decref(doc);

	assert_int_equal(vmactl("resume", fx.g.name, NULL), 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_false(live.paused);
	assert_false(conf.paused);
	if (!wait_until(state_is, "managed", LIMIT_S))
		fail_msg("show never said managed again");
	/* Paused again for the restart case. */
	assert_int_equal(vmactl("pause", fx.g.name, NULL), 0);
}

static void vmactl_restart(void **state)
{
	json_t *doc, *b;

	(void)state;
	assert_int_equal(th_vmactd_stop(&fx.d), 0);
	unlink(fx.d.log);
	if (th_vmactd_start(&fx.d, NULL, 1, LIMIT_BOOT_S, LIMIT_S) < 0)
		fail_msg("the new vmactd did not become ready");
	doc = show();
	b = json_object_get(doc, "bounds");
	assert_int_equal(jint(json_object_get(b, "max"), "milli_cpu"), 2000);
	assert_int_equal(jint(json_object_get(b, "min"), "mem_bytes"), 768ll << 20);
	assert_string_equal(jstr(doc, "state"), "paused");
	json_decref(doc);
	assert_int_equal(vmactl("resume", fx.g.name, NULL), 0);
	if (!wait_until(state_is, "managed", LIMIT_S))
		fail_msg("show never said managed after resume");
}

/* tmux's screen of the session. */
/* vmactl status [--all] --json: the guest's entry, or NULL. */
static json_t *status_entry(bool all)
{
	json_t *doc = vmactl_json("status", all ? "--all" : NULL), *vm, *copy = NULL;
	size_t i;

	json_array_foreach(json_object_get(doc, "vms"), i, vm)
		if (strcmp(jstr(vm, "name"), fx.g.name) == 0)
			copy = json_deep_copy(vm);
	json_decref(doc);
	return copy;
}

/* The guest's events (vmactl events --vm --json) after seq `after`: is
 * there one that match() accepts? */
struct event_match {
	json_int_t after;
	bool (*match)(json_t *ev, json_t *fields);
};

static bool event_seen(void *arg)
{
	const struct event_match *m = arg;
	bool found = false;
	char *text, *line;

	if (vmactl("events", "--vm", fx.g.name, "--json", NULL) != 0)
		return false;
	text = th_read_file(fx.out);
	for (line = text ? strtok(text, "\n") : NULL; line && !found; line = strtok(NULL, "\n")) {
		json_t *ev = json_loads(line, 0, NULL);

		found = ev && jint(ev, "seq") > m->after &&
			m->match(ev, json_object_get(ev, "fields"));
		json_decref(ev);
	}
	free(text);
	return found;
}

/* The newest event's seq (0 when none). */
static json_int_t last_seq(void)
{
	json_int_t seq = 0;
	char *text, *line;

	if (vmactl("events", "--vm", fx.g.name, "--json", NULL) != 0)
		fail_msg("vmactl events failed");
	text = th_read_file(fx.out);
	for (line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
		json_t *ev = json_loads(line, 0, NULL);

		if (ev && jint(ev, "seq") > seq)
			seq = jint(ev, "seq");
		json_decref(ev);
	}
	free(text);
	return seq;
}

/* The idle guest at 1 CPU, its CPU goal 1 CPU and its class "ok", as the
 * control API has them. */
static bool idle_at_one(void *unused)
{
	json_t *doc = show(), *d = json_object_get(doc, "demand");
	bool ok = jint(json_object_get(doc, "using"), "milli_cpu") == 1000 && json_is_object(d) &&
		  json_integer_value(json_object_get(d, "goal_milli_cpu")) == 1000 &&
		  strcmp(jstr(d, "class"), "ok") == 0;

	json_decref(doc);
	return ok;
}

/* The class left "ok", the goal stayed at the 1-CPU maximum. */
static bool held_at_max(json_t *ev, json_t *f)
{
	return strcmp(jstr(ev, "kind"), "hold") == 0 && jint(f, "goal_milli_cpu") == 1000 &&
	       strcmp(jstr(f, "was"), "ok") == 0 && strcmp(jstr(f, "class"), "ok") != 0 &&
	       strncmp(jstr(ev, "text"), "held at 1 CPU: now ", 19) == 0;
}

/* A CPU decision (the goal changed). */
static bool cpu_decision(json_t *ev, json_t *f)
{
	return strcmp(jstr(ev, "kind"), "decision") == 0 && strcmp(jstr(f, "resource"), "cpu") == 0;
}

/* A permit short of the 2 CPUs asked, with the embedded arbiter's reason. */
static bool partial_permit(json_t *ev, json_t *f)
{
	return strcmp(jstr(ev, "kind"), "permit") == 0 &&
	       json_is_true(json_object_get(f, "partial")) && jint(f, "asked_milli_cpu") == 2000 &&
	       jint(f, "milli_cpu") < 2000 &&
	       strstr(jstr(f, "reason"), "reached its watermark") != NULL;
}

static void vmactl_held(void **state)
{
	struct event_match m, decided;

	(void)state;
	/* At its maximum, a busy guest cannot grow: the policy says why it
	 * holds (one "hold" event as its class changes) and makes no
	 * decision for a goal its bounds cut back to what it has. First the
	 * idle guest's goal at the new maximum. */
	assert_int_equal(vmactl("set", fx.g.name, "--max-cpu", "1", NULL), 0);
	if (!wait_until(idle_at_one, NULL, LIMIT_SCALE_S))
		fail_msg("the idle guest never had its CPU goal at its 1-CPU maximum");
	m = (struct event_match){ .after = last_seq(), .match = held_at_max };
	decided = (struct event_match){ .after = m.after, .match = cpu_decision };
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	if (!wait_until(event_seen, &m, LIMIT_SCALE_S))
		fail_msg("no hold event at the 1-CPU maximum");
	assert_false(event_seen(&decided));
	assert_int_equal(quota_milli(), 1000);
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);

	/* A minimum above what the host's arbiter promises (its watermark,
	 * 0.9 of this 2-CPU host's capacity): the permit falls short, and
	 * its event says so and why. */
	m = (struct event_match){ .after = last_seq(), .match = partial_permit };
	assert_int_equal(vmactl("set", fx.g.name, "--max-cpu", "2", "--min-cpu", "2", NULL), 0);
	if (!wait_until(event_seen, &m, LIMIT_S))
		fail_msg("no partial permit event with the arbiter's reason");
	assert_int_equal(vmactl("set", fx.g.name, "--min-cpu", "1", NULL), 0);
	if (!wait_until(bounds_shown, NULL, LIMIT_S))
		fail_msg("show never had the maximum of 2 CPUs back");
}

static bool ignored_because(void *why)
{
	json_t *vm = status_entry(true);
	bool ok = vm && strcmp(jstr(vm, "state"), "ignored") == 0 &&
		  strstr(jstr(vm, "reason"), why);

	json_decref(vm);
	return ok;
}

/* vmactl check ... --json (exit status in *st); its document. */
static json_t *check_json(int *st, const char *dom, const char *opt, const char *val)
{
	json_error_t je;
	json_t *doc;
	char *text;

	*st = opt ? vmactl("check", dom, opt, val, "--json", NULL)
		  : vmactl("check", dom, "--json", NULL);
	text = th_read_file(fx.out);
	doc = json_loads(text ? text : "", 0, &je);
	if (!doc)
		fail_msg("vmactl check --json: not JSON (%s): %s", je.text, text ? text : "");
	free(text);
	return doc;
}

static bool has_item(const json_t *layout, const char *part, const char *level)
{
	const json_t *it;
	size_t i;

	json_array_foreach(json_object_get(layout, "items"), i, it)
		if (!strcmp(jstr(it, "part"), part) && !strcmp(jstr(it, "level"), level))
			return true;
	return false;
}

static void vmactl_enroll(void **state)
{
	char uuid[VIR_UUID_STRING_BUFLEN], *text;
	_cleanup_(hp_meta_done) struct hp_meta live = { 0 };
	_cleanup_(hp_meta_done) struct hp_meta conf = { 0 };
	virConnectPtr vc;
	json_t *doc, *vm;
	int st;

	(void)state;
	assert_int_equal(virDomainGetUUIDString(fx.g.dom, uuid), 0);
	/* Ready, by name and by UUID, against its metadata's bounds. */
	doc = check_json(&st, fx.g.name, NULL, NULL);
	assert_int_equal(st, 0);
	assert_true(json_is_true(json_object_get(doc, "ready")));
	assert_string_equal(jstr(doc, "metadata"), "valid");
	assert_string_equal(jstr(doc, "bounds_from"), "metadata");
	assert_true(json_is_true(json_object_get(doc, "active")));
	assert_true(json_is_true(json_object_get(doc, "persistent")));
	assert_true(has_item(json_object_get(doc, "live"), "virtio-mem", "ok"));
	assert_true(has_item(json_object_get(doc, "definition"), "numa", "ok"));
	json_decref(doc);
	doc = check_json(&st, uuid, "--max-memory", "2Gi");
	assert_int_equal(st, 1);
	assert_string_equal(jstr(doc, "name"), fx.g.name);
	assert_false(json_is_true(json_object_get(doc, "ready")));
	assert_true(has_item(json_object_get(doc, "live"), "memory-bound", "blocker"));
	json_decref(doc);
	/* The text report says what takes a cold restart. */
	assert_int_equal(vmactl("check", fx.g.name, "--max-memory", "2Gi", NULL), 1);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "BLOCKER  memory-bound"));
	assert_non_null(strstr(text, "[cold restart]"));
	free(text);

	/* Disabled by UUID: the metadata says so, vmactd lets it go. */
	assert_int_equal(vmactl("disable", uuid, NULL), 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_false(live.enabled);
	assert_false(conf.enabled);
	if (!wait_until(ignored_because, "enabled=\"false\"", LIMIT_S))
		fail_msg("status --all never said the VM is disabled");
	vm = status_entry(false);
	assert_null(vm);

	/* No metadata at all: check and enable take the layout's defaults. */
	vc = conn();
	{
		virDomainPtr d = virDomainLookupByUUIDString(vc, uuid);

		assert_non_null(d);
		assert_int_equal(virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL,
						      HP_NS_URI, VIR_DOMAIN_AFFECT_LIVE),
				 0);
		assert_int_equal(virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL,
						      HP_NS_URI, VIR_DOMAIN_AFFECT_CONFIG),
				 0);
		virDomainFree(d);
	}
	virConnectClose(vc);
	if (!wait_until(ignored_because, "no vmact metadata", LIMIT_S))
		fail_msg("status --all never said the VM has no metadata");
	doc = check_json(&st, fx.g.name, NULL, NULL);
	assert_int_equal(st, 0);
	assert_string_equal(jstr(doc, "metadata"), "none");
	assert_string_equal(jstr(doc, "bounds_from"), "defaults");
	assert_int_equal(jint(json_object_get(doc, "min"), "milli_cpu"), 1000);
	assert_int_equal(jint(json_object_get(doc, "max"), "milli_cpu"), 4000);
	assert_int_equal(jint(json_object_get(doc, "min"), "mem_bytes"), 512ll << 20);
	assert_int_equal(jint(json_object_get(doc, "max"), "mem_bytes"), 1536ll << 20);
	json_decref(doc);
	assert_int_equal(vmactl("enable", fx.g.name, "--max-memory", "2Gi", NULL), 1);
	text = th_read_file(fx.out);
	assert_non_null(strstr(text, "max memory 2Gi is above the 1536Mi"));
	free(text);
	assert_int_equal(vmactl("enable", fx.g.name, NULL), 0);
	meta_of(VIR_DOMAIN_AFFECT_LIVE, &live);
	meta_of(VIR_DOMAIN_AFFECT_CONFIG, &conf);
	assert_true(live.enabled && conf.enabled);
	assert_int_equal(live.min.milli_cpu, 1000);
	assert_int_equal(live.max.milli_cpu, 4000);
	assert_int_equal(conf.max.mem_bytes, 1536ull << 20);
	assert_int_equal(live.method, HP_METHOD_VIRTIO_MEM);
	if (!wait_until(state_is, "managed", LIMIT_S))
		fail_msg("vmactd did not manage the VM again after vmactl enable");
}

static char *screen(void)
{
	char cmd[256];
	FILE *p;
	char *buf = calloc(1, 65536);
	size_t n;

	snprintf(cmd, sizeof(cmd), "tmux capture-pane -p -t %s 2>/dev/null", fx.tmux);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, 65535, p);
	buf[n] = 0;
	pclose(p);
	return buf;
}

static bool top_shows_vm(void *unused)
{
	char *s = screen();
	bool ok = strstr(s, "vmactl top") && strstr(s, fx.g.name) && strstr(s, " managed ");

	free(s);
	return ok;
}

static bool tmux_gone(void *unused)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "tmux has-session -t %s 2>/dev/null", fx.tmux);
	return system(cmd) != 0;
}

static void vmactl_top(void **state)
{
	char cmd[PATH_MAX + 512], *s, *row;
	struct hp_state st;
	unsigned vcpus = 0;

	(void)state;
	snprintf(cmd, sizeof(cmd), "tmux new-session -d -s %s -x 200 -y 40 '%s --socket %s top'",
		 fx.tmux, fx.d.vmactl, fx.d.sock);
	assert_int_equal(system(cmd), 0);
	if (!wait_until(top_shows_vm, NULL, LIMIT_S)) {
		s = screen();
		fail_msg("vmactl top never showed the VM; screen:\n%s", s);
	}
	s = screen();
	if (getenv("VMACT_TEST_VERBOSE"))
		printf("---- vmactl top (tmux capture-pane) ----\n%s", s);
	row = strstr(s, fx.g.name);
	assert_non_null(row);
	live_state(&st);
	/* The row: NAME STATE MODE VCPUS ...; the vCPUs column is libvirt's. */
	assert_int_equal(sscanf(row + strlen(fx.g.name), " managed active %u", &vcpus), 1);
	assert_int_equal(vcpus, hp_state_vcpus(&st));
	assert_non_null(strstr(s, "LAST CHANGE"));
	free(s);
	/* q quits. */
	snprintf(cmd, sizeof(cmd), "tmux send-keys -t %s q", fx.tmux);
	assert_int_equal(system(cmd), 0);
	if (!wait_until(tmux_gone, NULL, LIMIT_S))
		fail_msg("vmactl top did not quit on q");
}

static void vmactl_refused(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(fx.out, O_WRONLY | O_TRUNC | O_CREAT, 0666);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(100);
		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(101);
		execl(fx.d.vmactl, fx.d.vmactl, "--socket", fx.d.sock, "status", (char *)NULL);
		_exit(102);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	{
		char *text = th_read_file(fx.out);

		assert_non_null(strstr(text, "cannot reach vmactd"));
		free(text);
	}
	assert_false(daemon_died());
	/* The daemon stops cleanly (under ASan: no leak) with its API. */
	assert_int_equal(th_vmactd_stop(&fx.d), 0);
	assert_int_equal(access(fx.d.sock, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vmactl_status), cmocka_unit_test(vmactl_events),
		cmocka_unit_test(vmactl_why),    cmocka_unit_test(vmactl_set),
		cmocka_unit_test(vmactl_pause),  cmocka_unit_test(vmactl_restart),
		cmocka_unit_test(vmactl_held),   cmocka_unit_test(vmactl_enroll),
		cmocka_unit_test(vmactl_top),    cmocka_unit_test(vmactl_refused),
	};

	if (!th_root_test("test_vmactl", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	return cmocka_run_group_tests_name("vmactl", tests, setup, teardown);
}
