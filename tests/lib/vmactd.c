/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/vmactd.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/macro.h"
#include "base/time.h"
#include "hotplug/hotplug.h"
#include "tests/lib/file.h"

DEFINE_PTR_CLEANUP(th_vmactd_json_decrefp, json_t, json_decref)

/* vmactd's log is a few hundred lines a minute: the tail is the story
 * of the failure. */
#define TH_VMACTD_LOG_TAIL 6000

/* A SIGTERMed vmactd hands its VMs back (quotas, pins) before it exits. */
#define TH_VMACTD_STOP_USEC (30 * VMACT_USEC_PER_SEC)

int th_vmactd_init(struct th_vmactd *d, const char *prefix, struct tg_guest *guest)
{
	return th_vmactd_init_at(d, "/tmp", prefix, guest);
}

int th_vmactd_init_at(struct th_vmactd *d, const char *parent, const char *prefix,
		      struct tg_guest *guest)
{
	int r = th_scratch_dir_at(parent, prefix, d->dir, sizeof(d->dir));

	d->guest = guest;
	if (r < 0)
		return r;
	snprintf(d->cfg, sizeof(d->cfg), "%s/vmactd.json", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/vmactd.log", d->dir);
	snprintf(d->sock, sizeof(d->sock), "%s/vmactd.sock", d->dir);
	snprintf(d->pins, sizeof(d->pins), "/sys/fs/bpf/%s-%d", prefix, (int)getpid());
	if ((r = th_prog("vmactd", d->prog, sizeof(d->prog))) < 0)
		return r;
	return th_prog("vmactl", d->vmactl, sizeof(d->vmactl));
}

bool th_vmactd_poll_forced(void)
{
	const char *e = getenv("VMACT_TEST_EVENTS");

	return e && !strcmp(e, "off");
}

/* A figure of vmactd's main thread in /proc/PID/sched ("se.slice": its
 * scheduler slice in ns, shown only while it is in SCHED_OTHER; "policy":
 * 0 SCHED_OTHER, 1 SCHED_FIFO), 0 when it is not there. */
static unsigned long long main_sched(pid_t pid, const char *key)
{
	char path[64], line[256];
	unsigned long long v = 0;
	size_t n = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/sched", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && (line[n] == ' ' || line[n] == ':') &&
		    strchr(line, ':'))
			v = strtoull(strchr(line, ':') + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Whether the loop is seen waiting in SCHED_FIFO: it is there whenever it
 * has nothing to do, which is nearly always; up to 5 s of looks. */
static bool main_waits_fifo(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (main_sched(pid, "policy") == 1)
			return true;
		usleep(10000);
	}
	return false;
}

bool th_vmactd_on_detection_path(const struct th_vmactd *d)
{
	const char *want = th_vmactd_poll_forced() ? "policy.events is off"
						   : "saturation watched in the kernel";
	unsigned long long slice;

	if (!th_vmactd_log_has(d, want)) {
		fprintf(stderr, "vmactd did not say \"%s\" at start (%s)\n", want, d->log);
		th_print_log_tail(d->log, "vmactd log", 2000);
		return false;
	}
	if (th_vmactd_poll_forced())
		return true;
	/* On the watch, the loop that reads its windows waits in SCHED_FIFO
	 * (policy.events_priority 1), unless vmactd said the kernel does not
	 * allow it; it then waits in SCHED_OTHER with a 0.1 ms slice
	 * (base/sched.h), unless vmactd said the kernel has none (before
	 * 6.12). The slice is not shown while the thread is real-time, which
	 * is nearly always. */
	if (!th_vmactd_log_has(d, "the loop waits in SCHED_OTHER")) {
		if (!th_vmactd_log_has(d, "the loop waits for the watch's windows in SCHED_FIFO") ||
		    !main_waits_fifo(d->proc.pid)) {
			fprintf(stderr,
				"vmactd's loop was not seen waiting in SCHED_FIFO (policy %llu)\n",
				main_sched(d->proc.pid, "policy"));
			return false;
		}
		return true;
	}
	slice = main_sched(d->proc.pid, "se.slice");
	if (slice != 100000 &&
	    !th_vmactd_log_has(d, "the loop keeps the kernel's scheduler slice")) {
		fprintf(stderr,
			"vmactd's loop runs with a scheduler slice of %llu ns, not 100000\n",
			slice);
		return false;
	}
	return true;
}

int th_vmactd_monitor(struct th_vmactd *d, char *meta, size_t len)
{
	char sock[sizeof(d->monitor.path)], out[sizeof(d->dir) + 16], msg[512];
	const char *args[] = { "--unix", sock, "--no-cgroup", NULL };
	int r;

	snprintf(sock, sizeof(sock), "%s/monitor.sock", d->dir);
	snprintf(out, sizeof(out), "%s/monitor.log", d->dir);
	r = th_peer_start(&d->monitor, "vm-monitor.js", args, out, msg, sizeof(msg));
	if (r < 0) {
		fprintf(stderr, "vm-monitor: %s\n", msg);
		return r;
	}
	if ((size_t)snprintf(meta, len,
			     "<vmact:autoscaling xmlns:vmact='" HP_NS_URI
			     "' enabled='true'>" TG_META_BOUNDS
			     "<vmact:monitor endpoint='unix:%s'/>"
			     "</vmact:autoscaling>",
			     sock) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int th_vmactd_config(struct th_vmactd *d, const char *name_prefix, const char *extra)
{
	_cleanup_(th_vmactd_json_decrefp) json_t *cfg =
		json_pack("{s:{s:s},s:{s:s},s:{s:s}}", "libvirt", "name_prefix", name_prefix,
			  "control", "socket", d->sock, "sampler", "pin_root", d->pins);
	_cleanup_(th_vmactd_json_decrefp) json_t *more = extra ? json_loads(extra, 0, NULL) : NULL;

	if (!cfg)
		return -ENOMEM;
	/* make check-poll: the poll the policy falls back to without the
	 * kernel's watch (doc/policy.md, "Saturation found in the kernel"). */
	if (th_vmactd_poll_forced() &&
	    json_object_set_new(cfg, "policy", json_pack("{s:b}", "events", 0)) < 0)
		return -ENOMEM;
	if (extra && (!json_is_object(more) || json_object_update_recursive(cfg, more) < 0))
		return -EINVAL;
	return json_dump_file(cfg, d->cfg, JSON_COMPACT) < 0 ? -EIO : 0;
}

int th_vmactd_spawn(struct th_vmactd *d, const char *const *args)
{
	return th_vmactd_spawn_under(d, NULL, args);
}

int th_vmactd_spawn_under(struct th_vmactd *d, const char *const *wrapper, const char *const *args)
{
	const char *argv[64];
	const char *const self[] = { d->prog, "--config", d->cfg, NULL };
	const char *const *const parts[] = { wrapper, self, args };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = d->log };
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
		for (const char *const *a = parts[i]; a && *a; a++) {
			if (n + 1 >= ARRAY_SIZE(argv))
				return -E2BIG;
			argv[n++] = *a;
		}
	argv[n] = NULL;
	return th_spawn(&d->proc, argv, &o);
}

bool th_vmactd_log_has(const struct th_vmactd *d, const char *needle)
{
	return th_count_in_file(d->log, needle) > 0;
}

void th_vmactd_dump_log(const struct th_vmactd *d)
{
	th_print_log_tail(d->log, "vmactd log", TH_VMACTD_LOG_TAIL);
}

bool th_vmactd_wait(struct th_vmactd *d, bool (*pred)(void *), void *arg, double limit_s)
{
	if (th_wait_daemon(&d->proc, pred, arg, limit_s))
		return true;
	th_vmactd_dump_log(d);
	return false;
}

struct log_wait {
	const struct th_vmactd *d;
	const char *needle;
};

static bool log_wait_has(void *arg)
{
	const struct log_wait *w = arg;

	return th_vmactd_log_has(w->d, w->needle);
}

bool th_vmactd_wait_log(struct th_vmactd *d, const char *needle, double limit_s)
{
	struct log_wait w = { d, needle };

	return th_vmactd_wait(d, log_wait_has, &w, limit_s);
}

int th_vmactd_start(struct th_vmactd *d, const char *const *args, unsigned vms, double boot_s,
		    double ready_s)
{
	char ready[64];
	int r;

	for (size_t i = 0; d->guest && i <= d->n_more; i++) {
		struct tg_guest *g = i ? d->more[i - 1] : d->guest;

		if (!th_vmactd_wait(d, tg_booted, g, boot_s)) {
			fprintf(stderr, "the guest %s did not boot\n", g->name);
			return -ETIMEDOUT;
		}
	}
	r = th_vmactd_spawn(d, args);
	if (r < 0)
		return r;
	/* "1 VM", "2 VMs": the count and the word. */
	snprintf(ready, sizeof(ready), "ready: managing %u VM", vms);
	if (!th_vmactd_wait_log(d, ready, ready_s)) {
		fprintf(stderr, "vmactd did not become ready\n");
		return -ETIMEDOUT;
	}
	return 0;
}

int th_vmactd_stop(struct th_vmactd *d)
{
	return th_proc_stop(&d->proc, SIGTERM, TH_VMACTD_STOP_USEC);
}

void th_vmactd_teardown(struct th_vmactd *d)
{
	th_vmactd_stop(d);
	th_peer_stop(&d->monitor);
	if (d->pins[0])
		th_remove_pins(d->pins);
	if (d->guest) {
		struct tg_guest *all[TH_VMACTD_GUESTS] = { d->guest };

		for (size_t i = 0; i < d->n_more; i++)
			all[i + 1] = d->more[i];
		/* All at once: libvirt takes seconds to stop each QEMU. */
		tg_destroy_all(all, d->n_more + 1, d->persistent);
	}
	if (d->dir[0] && !d->keep && !getenv("VMACT_TEST_KEEP_LOG"))
		th_rm_rf(d->dir);
}

int th_vmactd_add_guest(struct th_vmactd *d, struct tg_guest *g)
{
	if (!d->guest) {
		d->guest = g;
		return 0;
	}
	if (d->n_more >= TH_VMACTD_GUESTS - 1)
		return -E2BIG;
	d->more[d->n_more++] = g;
	return 0;
}

int th_vmactd_respawn(struct th_vmactd *d, const char *const *args)
{
	th_proc_stop(&d->proc, SIGKILL, 0);
	d->spawns++;
	snprintf(d->log, sizeof(d->log), "%s/vmactd.%u.log", d->dir, d->spawns);
	return th_vmactd_spawn(d, args);
}

static void vmark(const struct th_vmactd *d, struct th_vmactd_mark *m, const char *fmt, va_list ap)
{
	vsnprintf(m->needle, sizeof(m->needle), fmt, ap);
	m->before = th_count_in_file(d->log, m->needle);
}

unsigned th_vmactd_log_count(const struct th_vmactd *d, const char *fmt, ...)
{
	struct th_vmactd_mark m;
	va_list ap;

	va_start(ap, fmt);
	vmark(d, &m, fmt, ap);
	va_end(ap);
	return m.before;
}

void th_vmactd_mark(const struct th_vmactd *d, struct th_vmactd_mark *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmark(d, m, fmt, ap);
	va_end(ap);
}

bool th_vmactd_mark_grew(const struct th_vmactd *d, const struct th_vmactd_mark *m)
{
	return th_count_in_file(d->log, m->needle) > m->before;
}

struct mark_wait {
	const struct th_vmactd *d;
	const struct th_vmactd_mark *m;
};

static bool mark_grew(void *arg)
{
	const struct mark_wait *w = arg;

	return th_vmactd_mark_grew(w->d, w->m);
}

bool th_vmactd_wait_mark(struct th_vmactd *d, const struct th_vmactd_mark *m, double limit_s)
{
	struct mark_wait w = { d, m };

	return th_vmactd_wait(d, mark_grew, &w, limit_s);
}

long th_vmactd_vm_quota(const struct th_vmactd *d, const char *vm)
{
	char group[256];

	if (th_log_named_vm_cgroup(d->log, vm, group, sizeof(group)) < 0)
		return TH_CG_UNKNOWN;
	return th_cg_limit_milli(group);
}
