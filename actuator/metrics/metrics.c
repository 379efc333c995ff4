/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's metrics families (metrics.h); their names, labels and meaning
 * are doc/metrics.md's. */
#include "actuator/metrics/metrics.h"

#include <math.h>
#include <stdio.h>

#include "base/macro.h"

/* Seconds. Resizes on a TCG guest take up to seconds, plugin and monitor
 * answers milliseconds: the bounds cover both with a few per decade. */
static const double latency_bounds[ACT_LATENCY_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60,
};

static const char *const decision_kinds[ACT_DECISION_N] = {
	"cpu_up",
	"cpu_down",
	"memory_up",
	"memory_down",
};
static const char *const resize_kinds[ACT_RESIZE_N] = {
	"cpu_up",
	"cpu_down",
	"memory_up",
	"memory_down",
};
static const char *const failure_kinds[ACT_FAILURE_N] = {
	"plugin",
	"hotplug",
	"monitor",
	"guest_metrics",
};
static const char *const directions[ACT_DIR_N] = { "inc", "dec", "both", "none" };

enum act_metric_direction act_metrics_direction(struct vmact_resources cur,
						struct vmact_resources target)
{
	bool up = target.milli_cpu > cur.milli_cpu || target.mem_bytes > cur.mem_bytes;
	bool down = target.milli_cpu < cur.milli_cpu || target.mem_bytes < cur.mem_bytes;

	return up && down ? ACT_DIR_BOTH : up ? ACT_DIR_INC : down ? ACT_DIR_DEC : ACT_DIR_NONE;
}

void act_metrics_decision(struct act_metrics *m, enum act_metric_decision kind)
{
	if (m && kind < ACT_DECISION_N)
		m->decisions[kind]++;
}

void act_metrics_resize(struct act_metrics *m, enum act_metric_resize kind)
{
	if (m && kind < ACT_RESIZE_N)
		m->resizes[kind]++;
}

void act_metrics_failure(struct act_metrics *m, enum act_metric_failure kind)
{
	if (m && kind < ACT_FAILURE_N)
		m->failures[kind]++;
}

void act_metrics_observe(struct act_metrics *m, enum act_metric_latency which,
			 enum act_metric_direction dir, double seconds)
{
	struct act_histogram *h;
	size_t i;

	if (!m || which >= ACT_LATENCY_N || dir >= ACT_DIR_N)
		return;
	if (!(seconds > 0)) /* also NaN */
		seconds = 0;
	h = &m->latency[which][dir];
	for (i = 0; i < ACT_LATENCY_BUCKETS && seconds > latency_bounds[i]; i++)
		;
	if (i < ACT_LATENCY_BUCKETS)
		h->counts[i]++;
	else
		h->above++;
	h->sum += seconds;
}

/* ---- writing ---- */

static void kind_counter(struct net_prom_writer *w, const char *name, const char *help,
			 const uint64_t *v, const char *const *kinds, size_t n)
{
	net_prom_w_family(w, name, NET_PROM_COUNTER, help);
	for (size_t i = 0; i < n; i++) {
		struct net_prom_wlabel l = { "kind", kinds[i] };

		net_prom_w_sample(w, &l, 1, (double)v[i]);
	}
}

static void latency(struct net_prom_writer *w, const struct act_metrics *m,
		    enum act_metric_latency which, const char *name, const char *help)
{
	net_prom_w_family(w, name, NET_PROM_HISTOGRAM, help);
	for (size_t d = 0; d < ACT_DIR_N; d++) {
		const struct act_histogram *h = &m->latency[which][d];
		struct net_prom_wlabel l = { "direction", directions[d] };

		net_prom_w_histogram(w, &l, 1, latency_bounds, h->counts, ACT_LATENCY_BUCKETS,
				     h->above, h->sum);
	}
}

/* Capacity, watermark, reservations and pressure, one family per resource. */
static void arbiter(struct net_prom_writer *w, const struct act_arbiter_metrics *a)
{
	static const char *const what[] = { "capacity", "watermark", "reserved", "pressure" };
	const struct vmact_resources *v[] = { &a->capacity, &a->watermark, &a->reserved,
					      &a->pressure };
	static const char *const counts[] = { "requests", "partial", "refused" };
	const uint64_t c[] = { a->requests, a->partial, a->refused };

	net_prom_w_family(
		w, "vmact_arbiter_cpu_cores", NET_PROM_GAUGE,
		"The embedded arbiter's CPU: capacity (after arbiter.reserve_cpu and "
		"arbiter.overcommit_cpu), watermark, reserved (its VMs' permits), pressure "
		"(asked, not granted)");
	for (size_t i = 0; i < ARRAY_SIZE(what); i++) {
		struct net_prom_wlabel l = { "value", what[i] };

		net_prom_w_sample(w, &l, 1, v[i]->milli_cpu / 1000.0);
	}
	net_prom_w_family(w, "vmact_arbiter_memory_bytes", NET_PROM_GAUGE,
			  "The embedded arbiter's memory: capacity, watermark, reserved, pressure");
	for (size_t i = 0; i < ARRAY_SIZE(what); i++) {
		struct net_prom_wlabel l = { "value", what[i] };

		net_prom_w_sample(w, &l, 1, (double)v[i]->mem_bytes);
	}
	net_prom_w_family(w, "vmact_arbiter_vms", NET_PROM_GAUGE,
			  "VMs (pods) holding a reservation with the embedded arbiter");
	net_prom_w_sample(w, NULL, 0, a->vms);
	net_prom_w_family(w, "vmact_arbiter_requests_total", NET_PROM_COUNTER,
			  "Requests the embedded arbiter answered: all, granted in part, refused");
	for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
		struct net_prom_wlabel l = { "result", counts[i] };

		net_prom_w_sample(w, &l, 1, (double)c[i]);
	}
}

static void write_daemon(const struct act_metrics *m, unsigned managed,
			 const struct act_arbiter_metrics *arb, struct net_prom_writer *w)
{
	struct net_prom_wlabel version = { "version", VMACT_VERSION };

	net_prom_w_family(w, "vmact_build_info", NET_PROM_GAUGE,
			  "vmactd's version, as a label; always 1");
	net_prom_w_sample(w, &version, 1, 1);
	if (arb)
		arbiter(w, arb);
	net_prom_w_family(w, "vmact_managed_vms", NET_PROM_GAUGE,
			  "Number of VMs vmactd manages (one runner each)");
	net_prom_w_sample(w, NULL, 0, managed);
	kind_counter(w, "vmact_decisions_total",
		     "Changes of a VM's desired size, by resource and direction", m->decisions,
		     decision_kinds, ACT_DECISION_N);
	kind_counter(w, "vmact_resizes_total",
		     "Finished resizes that changed a VM's size, by resource and direction",
		     m->resizes, resize_kinds, ACT_RESIZE_N);
	kind_counter(w, "vmact_failures_total", "Failed operations, by kind", m->failures,
		     failure_kinds, ACT_FAILURE_N);
	net_prom_w_family(w, "vmact_guest_worker_restarts_total", NET_PROM_COUNTER,
			  "Guest workers spawned again after they died or were killed");
	net_prom_w_sample(w, NULL, 0, (double)m->worker_restarts);
	latency(w, m, ACT_LATENCY_PLUGIN, "vmact_plugin_latency_seconds",
		"Scheduler (plugin or embedded arbiter) request latency");
	latency(w, m, ACT_LATENCY_MONITOR, "vmact_monitor_latency_seconds",
		"vm-monitor or informant request latency");
	latency(w, m, ACT_LATENCY_HOTPLUG, "vmact_hotplug_latency_seconds",
		"Resize latency: first step (quota, vCPUs, memory) to the last one's end");
}

/* ---- per VM ---- */

typedef void vm_fn(struct net_prom_writer *w, const struct act_vm_metrics *vm);

/* vm as before; domain and uuid as the libvirt exporter names them, so
 * that its series and vmact's join on either. */
static void sample(struct net_prom_writer *w, const struct act_vm_metrics *vm, const char *label,
		   const char *value, double v)
{
	struct net_prom_wlabel l[] = { { "vm", vm->name },
				       { "domain", vm->name },
				       { "uuid", vm->uuid ? vm->uuid : "" },
				       { label, value } };

	net_prom_w_sample(w, l, label ? 4 : 3, v);
}

static void sizes(struct net_prom_writer *w, const struct act_vm_metrics *vm, bool cpu)
{
	const struct vmact_resources *r[] = { &vm->current, vm->has_desired ? &vm->desired : NULL,
					      vm->has_permit ? &vm->permit : NULL, &vm->min,
					      &vm->max };
	static const char *const names[] = { "current", "desired", "permit", "min", "max" };

	for (size_t i = 0; i < ARRAY_SIZE(r); i++)
		if (r[i])
			sample(w, vm, "value", names[i],
			       cpu ? r[i]->milli_cpu / 1000.0 : (double)r[i]->mem_bytes);
	if (cpu && vm->quota_milli)
		sample(w, vm, "value", "quota", vm->quota_milli / 1000.0);
}

static void cpu_cores(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	sizes(w, vm, true);
}

static void memory_bytes(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	sizes(w, vm, false);
}

static void vcpus(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	sample(w, vm, NULL, NULL, vm->vcpus);
}

static void load(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (!vm->has_load)
		return;
	sample(w, vm, "window", "1m", vm->load1);
	sample(w, vm, "window", "5m", vm->load5);
}

static void memory_usage(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_memory_usage)
		sample(w, vm, NULL, NULL, vm->memory_usage_bytes);
}

static void demand(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_demand)
		sample(w, vm, NULL, NULL, vm->demand.demand);
}

static void busy(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_demand)
		sample(w, vm, NULL, NULL, vm->demand.busy);
}

static void goal(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_demand)
		sample(w, vm, NULL, NULL, vm->demand.goal_milli / 1000.0);
}

static void cls(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	static const enum act_cpu_class all[] = { ACT_CPU_OK, ACT_CPU_SATURATED, ACT_CPU_THROTTLED,
						  ACT_CPU_CONTENDED };

	if (!vm->has_demand)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		sample(w, vm, "class", act_cpu_class_name(all[i]), vm->demand.cls == all[i]);
}

static void run_delay(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_threads)
		sample(w, vm, NULL, NULL, vm->run_delay_seconds);
}

static void cpu_seconds(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_threads)
		sample(w, vm, NULL, NULL, vm->cpu_seconds);
}

static void throttled_seconds(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_cpu_stat)
		sample(w, vm, NULL, NULL, vm->throttled_seconds);
}

static void throttled_periods(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_cpu_stat)
		sample(w, vm, NULL, NULL, (double)vm->nr_throttled);
}

static void periods(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->has_cpu_stat)
		sample(w, vm, NULL, NULL, (double)vm->nr_periods);
}

static void paused(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	sample(w, vm, NULL, NULL, vm->paused);
}

/* Recommend mode only: what vmactd would size the VM to (its desired
 * size, which it does not apply). */
static void recommended_cpu(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->recommend && vm->has_desired)
		sample(w, vm, NULL, NULL, vm->desired.milli_cpu / 1000.0);
}

static void recommended_memory(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	if (vm->recommend && vm->has_desired)
		sample(w, vm, NULL, NULL, (double)vm->desired.mem_bytes);
}

static void vm_resizes(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	for (size_t i = 0; i < ACT_RESIZE_N; i++)
		sample(w, vm, "kind", resize_kinds[i], (double)vm->resizes[i]);
}

static void vm_failures(struct net_prom_writer *w, const struct act_vm_metrics *vm)
{
	for (size_t i = 0; i < ACT_FAILURE_N; i++)
		sample(w, vm, "kind", failure_kinds[i], (double)vm->failures[i]);
}

static const struct {
	const char *name;
	enum net_prom_type type;
	const char *help;
	vm_fn *fn;
} vm_families[] = {
	{ "vmact_vm_paused", NET_PROM_GAUGE,
	  "1 while the VM's autoscaling is paused by its operator (vmactl pause)", paused },
	{ "vmact_vm_recommended_cpu_cores", NET_PROM_GAUGE,
	  "Recommend mode (mode=\"recommend\"): the CPU in cores vmactd recommends and does "
	  "not apply",
	  recommended_cpu },
	{ "vmact_vm_recommended_memory_bytes", NET_PROM_GAUGE,
	  "Recommend mode (mode=\"recommend\"): the memory in bytes vmactd recommends and "
	  "does not apply",
	  recommended_memory },
	{ "vmact_vm_resizes_total", NET_PROM_COUNTER,
	  "The VM's finished resizes that changed its size, by resource and direction",
	  vm_resizes },
	{ "vmact_vm_failures_total", NET_PROM_COUNTER, "The VM's failed operations, by kind",
	  vm_failures },
	{ "vmact_vm_cpu_cores", NET_PROM_GAUGE,
	  "A VM's CPU in cores: current (what it is granted), desired, permit (the "
	  "scheduler's), min, max, quota (its CFS quota)",
	  cpu_cores },
	{ "vmact_vm_memory_bytes", NET_PROM_GAUGE,
	  "A VM's memory in bytes: current, desired, permit, min, max", memory_bytes },
	{ "vmact_vm_vcpus", NET_PROM_GAUGE, "vCPUs plugged, as libvirt last reported them", vcpus },
	{ "vmact_vm_load_average", NET_PROM_GAUGE,
	  "The load average the policy reads (the guest's, else the host-side one)", load },
	{ "vmact_vm_memory_usage_bytes", NET_PROM_GAUGE,
	  "Guest memory in use as the policy reads it (total - available + 100 MiB)",
	  memory_usage },
	{ "vmact_vm_cpu_demand_cores", NET_PROM_GAUGE,
	  "Reactive policy: CPUs the vCPU threads wanted over the last up window", demand },
	{ "vmact_vm_cpu_busy_ratio", NET_PROM_GAUGE,
	  "Reactive policy: demand over allowance (min of vCPUs and quota)", busy },
	{ "vmact_vm_cpu_goal_cores", NET_PROM_GAUGE, "Reactive policy: the CPU goal in cores",
	  goal },
	{ "vmact_vm_cpu_class", NET_PROM_GAUGE,
	  "Reactive policy: 1 for the VM's current class (ok, saturated, throttled, "
	  "contended), 0 for the others",
	  cls },
	{ "vmact_vm_vcpu_run_delay_seconds_total", NET_PROM_COUNTER,
	  "Time the VM's vCPU threads were runnable but waited for a host CPU", run_delay },
	{ "vmact_vm_vcpu_cpu_seconds_total", NET_PROM_COUNTER,
	  "Time the VM's vCPU threads ran on a host CPU", cpu_seconds },
	{ "vmact_vm_cpu_throttled_seconds_total", NET_PROM_COUNTER,
	  "Time the VM's cgroup was throttled by its CFS quota (cpu.stat)", throttled_seconds },
	{ "vmact_vm_cpu_throttled_periods_total", NET_PROM_COUNTER,
	  "CFS periods in which the VM's cgroup was throttled (cpu.stat nr_throttled)",
	  throttled_periods },
	{ "vmact_vm_cpu_periods_total", NET_PROM_COUNTER,
	  "CFS periods the VM's cgroup had runnable tasks in (cpu.stat nr_periods)", periods },
};

void act_metrics_write(const struct act_metrics *m, unsigned managed,
		       const struct act_arbiter_metrics *arb, const struct act_vm_metrics *vms,
		       size_t n, struct net_prom_writer *w)
{
	write_daemon(m, managed, arb, w);
	for (size_t f = 0; f < ARRAY_SIZE(vm_families); f++) {
		net_prom_w_family(w, vm_families[f].name, vm_families[f].type, vm_families[f].help);
		for (size_t i = 0; i < n; i++)
			vm_families[f].fn(w, &vms[i]);
	}
}
