/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/vmactl/render.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "base/quantity.h"

void ctl_fmt_cpu(const json_t *milli, char *buf, size_t len)
{
	if (!json_is_integer(milli) || json_integer_value(milli) < 0 ||
	    vmact_quantity_format_milli((uint64_t)json_integer_value(milli), buf, len) < 0)
		snprintf(buf, len, "-");
}

void ctl_fmt_mem(const json_t *bytes, char *buf, size_t len)
{
	if (!json_is_integer(bytes) || json_integer_value(bytes) < 0 ||
	    vmact_quantity_format_bytes((uint64_t)json_integer_value(bytes), buf, len) < 0)
		snprintf(buf, len, "-");
}

void ctl_fmt_res(const json_t *res, char *buf, size_t len)
{
	char c[32], m[32];

	if (!json_is_object(res)) {
		snprintf(buf, len, "-");
		return;
	}
	ctl_fmt_cpu(json_object_get(res, "milli_cpu"), c, sizeof(c));
	ctl_fmt_mem(json_object_get(res, "mem_bytes"), m, sizeof(m));
	snprintf(buf, len, "%s/%s", c, m);
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "-";
}

static void fmt_time(double t, bool ms, char *buf, size_t len)
{
	time_t s = (time_t)t;
	struct tm tm;

	if (t <= 0 || !localtime_r(&s, &tm)) {
		snprintf(buf, len, "-");
		return;
	}
	if (ms)
		snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
			 (int)((t - (double)s) * 1000));
	else
		snprintf(buf, len, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Prints line cut at width (0: whole). */
static void put_line(FILE *f, const char *line, unsigned width)
{
	if (width && strlen(line) > width)
		fprintf(f, "%.*s\n", (int)width, line);
	else
		fprintf(f, "%s\n", line);
}

#define ROW_FMT "%-20s %-11s %-9s %5s %6s %7s %5s %-14s %-12s %-12s %s"

void ctl_render_status_header(FILE *f, unsigned width)
{
	char line[512];

	snprintf(line, sizeof(line), ROW_FMT, "VM", "STATE", "MODE", "VCPUS", "QUOTA", "MEMORY",
		 "LOAD", "DEMAND", "PERMIT", "DESIRED", "LAST CHANGE");
	put_line(f, line, width);
}

void ctl_render_status_row(FILE *f, const json_t *vm, unsigned width)
{
	char line[1024], vcpus[16] = "-", quota[32], mem[32], load[16] = "-", demand[48] = "-",
			 permit[48], desired[48], when[16], change[400] = "-";
	const json_t *d = json_object_get(vm, "demand"), *lc = json_object_get(vm, "last_change");
	const char *state = str(vm, "state");

	if (strcmp(state, "not-managed") == 0 || strcmp(state, "ignored") == 0) {
		snprintf(line, sizeof(line), "%-20s %-11s %s", str(vm, "name"), state,
			 str(vm, "reason"));
		put_line(f, line, width);
		return;
	}
	if (json_is_integer(json_object_get(vm, "vcpus")))
		snprintf(vcpus, sizeof(vcpus), "%lld",
			 (long long)json_integer_value(json_object_get(vm, "vcpus")));
	ctl_fmt_cpu(json_object_get(vm, "quota_milli_cpu"), quota, sizeof(quota));
	ctl_fmt_mem(json_object_get(vm, "mem_bytes"), mem, sizeof(mem));
	if (json_is_number(json_object_get(vm, "load1")))
		snprintf(load, sizeof(load), "%.2f",
			 json_number_value(json_object_get(vm, "load1")));
	if (json_is_object(d))
		snprintf(demand, sizeof(demand), "%s %.0f%%", str(d, "class"),
			 json_number_value(json_object_get(d, "busy")) * 100);
	ctl_fmt_res(json_object_get(vm, "permit"), permit, sizeof(permit));
	ctl_fmt_res(json_object_get(vm, "desired"), desired, sizeof(desired));
	if (json_is_object(lc)) {
		fmt_time(json_number_value(json_object_get(lc, "time")), false, when, sizeof(when));
		snprintf(change, sizeof(change), "%s %s", when, str(lc, "reason"));
	}
	/* In recommend mode DESIRED is the recommendation, never applied. */
	snprintf(line, sizeof(line), ROW_FMT, str(vm, "name"), state, str(vm, "mode"), vcpus, quota,
		 mem, load, demand, permit, desired, change);
	put_line(f, line, width);
}

void ctl_render_status(FILE *f, const json_t *vms, unsigned width)
{
	size_t i;
	const json_t *vm;

	ctl_render_status_header(f, width);
	json_array_foreach(vms, i, vm)
		ctl_render_status_row(f, vm, width);
}

void ctl_render_hook(FILE *f, const json_t *hook)
{
	const json_t *u = json_object_get(hook, "unannounced_start");

	if (!json_is_object(u))
		return;
	if (json_is_true(json_object_get(hook, "restart_libvirtd")))
		fprintf(f,
			"Hook: libvirtd started %s without running vmact's hook: it reads its hooks "
			"when it starts, and this one came later; restart libvirtd (systemctl "
			"restart libvirtd) for it to take effect\n",
			str(u, "vm"));
	else if (json_is_false(json_object_get(hook, "installed")))
		fprintf(f,
			"Hook: vmact's libvirt hook is not installed (vmactd learned of %s's start "
			"from libvirt's events only; doc/hook.md)\n",
			str(u, "vm"));
}

void ctl_render_detection(FILE *f, const json_t *d)
{
	/* Said when it costs: the poll's reason, so that a dense host's
	 * operator knows why vmactd wakes 20 times a second per VM. */
	if (!json_is_object(d) || strcmp(str(d, "mode"), "poll") != 0)
		return;
	fprintf(f,
		"Detection: every VM read every %lld ms (%s sampler): %s; saturation is found "
		"in the kernel where the BPF watch loads (Linux 5.17; doc/policy.md)\n",
		(long long)json_integer_value(json_object_get(d, "tick_ms")), str(d, "sampler"),
		str(d, "reason"));
}

void ctl_render_event(FILE *f, const json_t *ev, unsigned width)
{
	char when[32], line[1024];
	const char *vm = str(ev, "vm");

	fmt_time(json_number_value(json_object_get(ev, "time")), true, when, sizeof(when));
	snprintf(line, sizeof(line), "%s #%lld %s%s%s: %s", when,
		 (long long)json_integer_value(json_object_get(ev, "seq")), vm[0] ? vm : "vmactd",
		 " ", str(ev, "kind"), str(ev, "text"));
	put_line(f, line, width);
}

static double num(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/* Where the CPU and memory figures come from, with the memory's. */
static void render_evidence(FILE *f, const json_t *e)
{
	const json_t *m = json_object_get(e, "memory"), *b = json_object_get(m, "balloon"),
		     *d = json_object_get(m, "decision"), *cpu = json_object_get(e, "cpu");
	const double MiB = 1024.0 * 1024.0;

	if (!json_is_object(e))
		return;
	fprintf(f, "Evidence:    CPU from %s; memory (%s policy) from %s; shrinks approved by %s\n",
		json_is_string(json_object_get(cpu, "source")) ? str(cpu, "source") : "nothing",
		str(m, "policy"), str(m, "source"),
		strcmp(str(e, "approval"), "host") ? str(e, "approval") : "the host");
	if (json_is_string(json_object_get(m, "reason")))
		fprintf(f, "  memory:    none: %s\n", str(m, "reason"));
	if (json_is_object(b)) {
		fprintf(f, "  balloon:   MemTotal %.0f MiB, available %.0f MiB",
			num(b, "total_bytes") / MiB, num(b, "available_bytes") / MiB);
		if (json_is_number(json_object_get(b, "disk_caches_bytes")))
			fprintf(f, ", caches %.0f MiB", num(b, "disk_caches_bytes") / MiB);
		if (json_is_number(json_object_get(b, "major_faults")))
			fprintf(f, ", %.0f major faults", num(b, "major_faults"));
		if (json_is_number(json_object_get(b, "swap_in_bytes")))
			fprintf(f, ", swap in/out %.0f/%.0f MiB", num(b, "swap_in_bytes") / MiB,
				num(b, "swap_out_bytes") / MiB);
		fprintf(f, "\n");
	}
	if (json_is_object(d))
		fprintf(f,
			"  decision:  %s, uses %.0f MiB, growing %.0f MiB/s, %.0f major faults/s, "
			"headroom %.0f MiB, goal %.0f MiB\n",
			str(d, "class"), num(d, "used_bytes") / MiB,
			num(d, "growth_bytes_per_s") / MiB, num(d, "major_faults_per_s"),
			num(d, "headroom_bytes") / MiB, num(d, "goal_bytes") / MiB);
	if (json_is_number(json_object_get(m, "kept_by_guest_s")))
		fprintf(f, "  memory:    kept by the guest; asked again in %.0f s\n",
			num(m, "kept_by_guest_s"));
}

/* The VM's migration setting; nothing from a vmactd that has none. */
static void render_migration(FILE *f, const json_t *m)
{
	if (!json_is_object(m))
		return;
	fprintf(f, "Migration:   %s\n",
		json_is_true(json_object_get(m, "enabled"))
			? "on (vmact may move it to another host)"
			: "off (it stays on this host)");
}

void ctl_render_show(FILE *f, const json_t *vm)
{
	const json_t *b = json_object_get(vm, "bounds"), *p = json_object_get(vm, "policy"),
		     *s = json_object_get(vm, "scheduler"), *m = json_object_get(vm, "monitor"),
		     *d = json_object_get(vm, "demand"), *lc = json_object_get(vm, "last_change");
	char x[64], y[64], when[16];
	const json_t *ev;
	size_t i;

	fprintf(f, "VM:          %s (%s)\n", str(vm, "name"), str(vm, "uuid"));
	if (json_is_object(json_object_get(vm, "frozen"))) {
		const json_t *fz = json_object_get(vm, "frozen");

		fprintf(f, "State:       frozen for migration: %s\n", str(fz, "reason"));
		fprintf(f, "             no resize starts until the move ends or is given up%s\n",
			json_is_true(json_object_get(fz, "idle"))
				? ""
				: " (one in flight finishes first)");
	} else {
		fprintf(f, "State:       %s\n", str(vm, "state"));
	}
	if (strcmp(str(vm, "mode"), "recommend") == 0)
		fprintf(f,
			"Mode:        recommend (decisions are reported, nothing is applied; "
			"vmactl set %s --mode active applies them)\n",
			str(vm, "name"));
	else if (json_is_string(json_object_get(vm, "mode")))
		fprintf(f, "Mode:        %s\n", str(vm, "mode"));
	if (strcmp(str(vm, "state"), "not-managed") == 0 ||
	    strcmp(str(vm, "state"), "ignored") == 0) {
		fprintf(f, "Reason:      %s\n", str(vm, "reason"));
		return;
	}
	ctl_fmt_cpu(json_object_get(vm, "quota_milli_cpu"), x, sizeof(x));
	ctl_fmt_mem(json_object_get(vm, "mem_bytes"), y, sizeof(y));
	fprintf(f, "Size:        %lld vCPUs, quota %s, memory %s%s\n",
		(long long)json_integer_value(json_object_get(vm, "vcpus")), x, y,
		json_is_true(json_object_get(vm, "resizing")) ? " (resizing)" : "");
	ctl_fmt_res(json_object_get(b, "min"), x, sizeof(x));
	ctl_fmt_res(json_object_get(b, "max"), y, sizeof(y));
	fprintf(f, "Bounds:      min %s, max %s\n", x, y);
	ctl_fmt_res(json_object_get(vm, "compute_unit"), x, sizeof(x));
	fprintf(f, "Compute unit: %s\n", x);
	render_migration(f, json_object_get(vm, "migration"));
	fprintf(f,
		"Policy:      cpu %s, shrink %s (from the %s), load target %.2f, "
		"memory target %.2f\n",
		str(p, "cpu"), str(p, "shrink"),
		str(p, "source")[0] == 'v' ? "VM's metadata" : "host's configuration",
		json_number_value(json_object_get(p, "load_target")),
		json_number_value(json_object_get(p, "mem_usage_target")));
	if (json_is_number(json_object_get(p, "load1")))
		fprintf(f, "Load:        %.2f (1 min), %.2f (5 min)\n",
			json_number_value(json_object_get(p, "load1")),
			json_number_value(json_object_get(p, "load5")));
	else
		fprintf(f, "Load:        not measured yet\n");
	if (json_is_object(d)) {
		ctl_fmt_cpu(json_object_get(d, "goal_milli_cpu"), x, sizeof(x));
		fprintf(f, "Demand:      %s, vCPUs %.0f %% busy, %.2f CPUs wanted, goal %s\n",
			str(d, "class"), json_number_value(json_object_get(d, "busy")) * 100,
			json_number_value(json_object_get(d, "cpus")), x);
	}
	ctl_fmt_res(json_object_get(vm, "permit"), x, sizeof(x));
	ctl_fmt_res(json_object_get(vm, "desired"), y, sizeof(y));
	fprintf(f, "Permit:      %s\nDesired:     %s\n", x, y);
	if (json_is_object(json_object_get(vm, "recommended"))) {
		ctl_fmt_res(json_object_get(vm, "recommended"), x, sizeof(x));
		ctl_fmt_res(json_object_get(vm, "using"), y, sizeof(y));
		fprintf(f, "Recommended: %s (runs with %s; not applied)\n", x, y);
	}
	if (json_is_string(json_object_get(vm, "permit_short")))
		fprintf(f, "Permit short: %s\n", str(vm, "permit_short"));
	if (json_is_string(json_object_get(vm, "cannot_shrink")))
		fprintf(f, "Cannot shrink: %s\n", str(vm, "cannot_shrink"));
	fprintf(f, "Scheduler:   %s%s%s%s\n", str(s, "kind"),
		json_is_string(json_object_get(s, "url")) ? " at " : "",
		json_is_string(json_object_get(s, "url")) ? str(s, "url") : "",
		json_is_true(json_object_get(s, "request_pending")) ? " (request pending)" : "");
	if (strcmp(str(m, "kind"), "none") == 0)
		fprintf(f, "Monitor:     none (the host's own evidence approves its shrinks)\n");
	else
		fprintf(f, "Monitor:     %s at %s, %s\n", str(m, "kind"), str(m, "endpoint"),
			json_is_true(json_object_get(m, "connected")) ? "connected"
								      : "not connected");
	render_evidence(f, json_object_get(vm, "evidence"));
	if (json_is_object(lc)) {
		fmt_time(json_number_value(json_object_get(lc, "time")), false, when, sizeof(when));
		fprintf(f, "Last change: %s %s\n", when, str(lc, "reason"));
	} else {
		fprintf(f, "Last change: none since vmactd started\n");
	}
	fprintf(f, "Decisions:%s\n",
		json_array_size(json_object_get(vm, "decisions")) ? "" : " none yet");
	json_array_foreach(json_object_get(vm, "decisions"), i, ev) {
		fprintf(f, "  ");
		ctl_render_event(f, ev, 0);
	}
}

static void render_layout(FILE *f, const char *title, const json_t *l)
{
	const json_t *it;
	size_t i;

	if (!json_is_object(l))
		return;
	fprintf(f, "%s: %s\n", title,
		json_is_true(json_object_get(l, "ready")) ? "ready" : "NOT READY");
	json_array_foreach(json_object_get(l, "items"), i, it) {
		const char *level = str(it, "level");

		fprintf(f, "  %-8s %-13s %s%s\n", strcmp(level, "blocker") == 0 ? "BLOCKER" : level,
			str(it, "part"), str(it, "text"),
			json_is_true(json_object_get(it, "cold_restart")) &&
					strcmp(level, "ok") != 0
				? " [cold restart]"
				: "");
	}
}

void ctl_render_check(FILE *f, const json_t *c)
{
	char min[64], max[64];
	const char *meta = str(c, "metadata");

	ctl_fmt_res(json_object_get(c, "min"), min, sizeof(min));
	ctl_fmt_res(json_object_get(c, "max"), max, sizeof(max));
	fprintf(f, "Domain:      %s (%s), %s, %s\n", str(c, "name"), str(c, "uuid"),
		json_is_true(json_object_get(c, "active")) ? "running" : "not running",
		json_is_true(json_object_get(c, "persistent")) ? "persistent" : "transient");
	fprintf(f, "Metadata:    %s%s%s\n", meta, json_object_get(c, "metadata_error") ? ": " : "",
		json_object_get(c, "metadata_error") ? str(c, "metadata_error") : "");
	fprintf(f, "Bounds:      %s to %s, memory by %s (%s)\n", min, max, str(c, "method"),
		str(c, "bounds_from"));
	render_migration(f, json_object_get(c, "migration"));
	render_layout(f, "As it runs", json_object_get(c, "live"));
	render_layout(f, "As defined (its next cold start)", json_object_get(c, "definition"));
	fprintf(f, "Verdict:     %s\n",
		json_is_true(json_object_get(c, "ready"))
			? "ready: vmact can take it between these bounds"
			: "not ready: fix the BLOCKER lines ([cold restart]: shut it down, virsh edit, "
			  "start), or ask for bounds within reach");
	if (ctl_render_fixes(NULL, c))
		fprintf(f, "Fixes:       vmactl check %s --fix prints the commands\n",
			str(c, "name"));
}

/* One layout's fixes, each command once over both layouts (seen). */
static unsigned layout_fixes(FILE *f, const json_t *l, json_t *seen, bool *cold)
{
	const json_t *it;
	unsigned n = 0;
	size_t i;

	json_array_foreach(json_object_get(l, "items"), i, it) {
		const json_t *fx = json_object_get(it, "fix");
		const char *cmd = json_string_value(json_object_get(fx, "command"));
		bool c = json_is_true(json_object_get(fx, "cold_restart"));

		if (!cmd || json_object_get(seen, cmd))
			continue;
		json_object_set_new(seen, cmd, json_true());
		n++;
		*cold |= c;
		if (f)
			fprintf(f, "# [%s] %s: %s\n%s\n", c ? "cold restart" : "live",
				str(it, "part"), str(it, "text"), cmd);
	}
	return n;
}

unsigned ctl_render_fixes(FILE *f, const json_t *c)
{
	json_t *seen = json_object();
	bool cold = false;
	unsigned n;

	if (f)
		fprintf(f,
			"# vmactl check %s --fix: the commands that fix its layout and memory "
			"statistics\n# ([live]: at once; [cold restart]: into its definition, "
			"in effect from its next cold start)\n",
			str(c, "name"));
	n = layout_fixes(f, json_object_get(c, "live"), seen, &cold);
	n += layout_fixes(f, json_object_get(c, "definition"), seen, &cold);
	json_decref(seen);
	if (!f)
		return n;
	if (!n)
		fprintf(f, "# nothing to fix\n");
	else if (cold && json_is_true(json_object_get(c, "active")))
		fprintf(f,
			"# then a cold restart: virsh shutdown %s, wait until virsh domstate "
			"says shut off, virsh start %s\n",
			str(c, "name"), str(c, "name"));
	return n;
}
