/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's own metrics (doc/metrics.md): the daemon-wide counters and
 * latency histograms the runners feed, the per-VM figures each runner
 * gives at scrape time, and writing both as Prometheus text
 * (net/prom-write.h). Pure: no I/O, no clock; everything runs on
 * the daemon's loop, so nothing is locked.
 *
 * Every act_metrics_* function takes a NULL act_metrics (a runner without
 * one, e.g. in unit tests) and then does nothing. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuator/policy/cpu-demand.h"
#include "base/resources.h"
#include "net/prom-write.h"

/* Counters with a kind label: vmact_<family>_total{kind="..."}. */
enum act_metric_decision {
	ACT_DECISION_CPU_UP, /* the desired size's CPU went up */
	ACT_DECISION_CPU_DOWN,
	ACT_DECISION_MEMORY_UP,
	ACT_DECISION_MEMORY_DOWN,
	ACT_DECISION_N,
};

enum act_metric_resize {
	ACT_RESIZE_CPU_UP, /* a finished resize changed the VM's CPU up */
	ACT_RESIZE_CPU_DOWN,
	ACT_RESIZE_MEMORY_UP,
	ACT_RESIZE_MEMORY_DOWN,
	ACT_RESIZE_N,
};

enum act_metric_failure {
	ACT_FAILURE_PLUGIN,        /* scheduler request failed or its permit refused */
	ACT_FAILURE_HOTPLUG,       /* a resize failed (wholly or partly) or was refused */
	ACT_FAILURE_MONITOR,       /* a vm-monitor / informant request failed */
	ACT_FAILURE_GUEST_METRICS, /* a scrape of the guest's exporter failed */
	ACT_FAILURE_N,
};

/* Latency histograms with a direction label (inc, dec, both, none), as the
 * Neon agent's. */
enum act_metric_latency {
	ACT_LATENCY_PLUGIN,  /* scheduler request to its answer */
	ACT_LATENCY_MONITOR, /* approver request to its answer */
	ACT_LATENCY_HOTPLUG, /* resize start to its last step's end */
	ACT_LATENCY_N,
};

enum act_metric_direction {
	ACT_DIR_INC,
	ACT_DIR_DEC,
	ACT_DIR_BOTH,
	ACT_DIR_NONE,
	ACT_DIR_N,
};

#define ACT_LATENCY_BUCKETS 14

struct act_histogram {
	uint64_t counts[ACT_LATENCY_BUCKETS]; /* per bucket, not cumulative */
	uint64_t above;                       /* beyond the last bound */
	double sum;
};

struct act_metrics {
	uint64_t decisions[ACT_DECISION_N];
	uint64_t resizes[ACT_RESIZE_N];
	uint64_t failures[ACT_FAILURE_N];
	/* Guest workers spawned again after they died (the daemon sets it
	 * at scrape time from its workers' count). */
	uint64_t worker_restarts;
	struct act_histogram latency[ACT_LATENCY_N][ACT_DIR_N];
};

/* The direction of a change from cur to target. */
enum act_metric_direction act_metrics_direction(struct vmact_resources cur,
						struct vmact_resources target);

void act_metrics_decision(struct act_metrics *m, enum act_metric_decision kind);
void act_metrics_resize(struct act_metrics *m, enum act_metric_resize kind);
void act_metrics_failure(struct act_metrics *m, enum act_metric_failure kind);
/* seconds < 0 (a clock that went back) counts as 0. */
void act_metrics_observe(struct act_metrics *m, enum act_metric_latency which,
			 enum act_metric_direction dir, double seconds);

/* What one VM shows, taken by its runner at scrape time. The has_* flags
 * say which families the VM has series in. */
struct act_vm_metrics {
	const char *name; /* the libvirt domain name: labels vm and domain */
	const char *uuid; /* label uuid (the libvirt exporter's domain and uuid labels) */
	bool paused;      /* vmactl pause */
	bool recommend;   /* mode="recommend": desired is a recommendation */
	/* This VM's own counts of act_metrics_resize and act_metrics_failure. */
	uint64_t resizes[ACT_RESIZE_N];
	uint64_t failures[ACT_FAILURE_N];
	struct vmact_resources current, min, max;
	bool has_desired;
	struct vmact_resources desired;
	bool has_permit;
	struct vmact_resources permit;
	uint32_t quota_milli; /* 0: no quota written */
	unsigned vcpus;       /* vCPUs libvirt reported at the last read */

	bool has_load;
	double load1, load5;
	bool has_memory_usage;
	double memory_usage_bytes;

	bool has_demand; /* the reactive policy's last decision */
	struct act_cpu_decision demand;

	bool has_threads; /* the vCPU threads' totals */
	double run_delay_seconds, cpu_seconds;

	bool has_cpu_stat; /* the VM cgroup's cpu.stat */
	uint64_t nr_periods, nr_throttled;
	double throttled_seconds;
};

/* The embedded arbiter's figures (vmact_arbiter_*), when vmactd runs one. */
struct act_arbiter_metrics {
	struct vmact_resources capacity;  /* what it grants from, after reserve and overcommit */
	struct vmact_resources watermark; /* growth stops here */
	struct vmact_resources reserved;  /* the sum of its VMs' reservations */
	struct vmact_resources pressure;  /* asked but not granted */
	unsigned vms;
	uint64_t requests, partial, refused;
};

/* Writes vmact_build_info and the daemon's families (the arbiter's when
 * arb is not NULL), then the per-VM families over vms[0..n) (each family's
 * series of every VM together; a VM absent from vms has no series).
 * managed is the number of runners. */
void act_metrics_write(const struct act_metrics *m, unsigned managed,
		       const struct act_arbiter_metrics *arb, const struct act_vm_metrics *vms,
		       size_t n, struct net_prom_writer *w);
