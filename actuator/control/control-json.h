/* SPDX-License-Identifier: Apache-2.0 */
/* The control API's JSON documents (doc/control-api.md): one VM in the
 * list (`vmactl status`), one VM in detail (`vmactl show`), one event.
 * The field names are the API's contract: documented, never renamed. Pure:
 * built from plain views, so the unit tests check them without a daemon. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "actuator/control/events.h"
#include "base/resources.h"
#include "hotplug/hotplug.h"
#include "hotplug/layout.h"

enum act_vm_state {
	ACT_VM_MANAGED = 0,
	ACT_VM_PAUSED,    /* managed, autoscaling paused by its operator */
	ACT_VM_UNMANAGED, /* has vmact metadata but is not managed: reason */
	ACT_VM_IGNORED,   /* does not ask to be managed (status --all): reason */
	ACT_VM_FROZEN,    /* managed, frozen while it is moved away: frozen_why */
};

const char *act_vm_state_name(enum act_vm_state s); /* "managed", "paused", "not-managed",
						      "ignored", "frozen" */

/* Whether libvirtd runs vmact-hook (GET /v1/vms "hook", vmactl status):
 * vmactd notes each notice, and each domain start libvirt reports that no
 * notice announced (the hook sends one at "prepare", before QEMU starts).
 * libvirtd reads its hooks when it starts: a hook installed since does
 * not run until libvirtd restarts. */
struct act_hook_status {
	bool installed;            /* VMACT_HOOK_PATH exists */
	uint64_t notices;          /* since vmactd started */
	uint64_t last_notice_usec; /* CLOCK_REALTIME; 0 = none */
	/* The last start without a notice, when none came since. */
	uint64_t unhooked_usec;
	char unhooked[256];
};

/* {"installed", "notices", "last_notice", "unannounced_start":
 * {"vm", "time"} or null, "restart_libvirtd"}: restart_libvirtd when the
 * hook is installed and a start came without its notice and no notice
 * since. */
json_t *act_json_hook(const struct act_hook_status *h);

/* How vmactd finds a VM's load (GET /v1/vms "detection", vmactl status):
 * in the kernel (the sampler's watch: doc/policy.md, "Saturation found in
 * the kernel"), or by reading every VM every tick, and why. */
struct act_detection {
	const char *sampler; /* "bpf", "taskstats" or "none" */
	bool kernel;         /* the watch judges the windows */
	unsigned tick_ms;    /* policy.tick_ms */
	unsigned slow_ms;    /* an idle VM's reading, with the watch */
	char reason[256];    /* why the poll, when it is */
};
json_t *act_json_detection(const struct act_detection *d);

struct act_vm_view {
	char name[256];
	char uuid[37];
	enum act_vm_state state;
	char reason[640]; /* not-managed: why */

	/* The rest only for managed and paused VMs. */
	unsigned vcpus;       /* vCPUs the VM runs */
	uint32_t quota_milli; /* CFS quota as milli-CPU, 0 = none */
	uint64_t mem_bytes;   /* memory the guest can use */
	struct vmact_resources using_, min, max, cu;
	bool has_load;
	double load1, load5;
	bool has_demand;
	const char *demand_class; /* actuator/policy/cpu-demand.h: ok, saturated, ... */
	double demand_cpus, busy; /* CPUs wanted; share of the allowance */
	bool has_goal;
	uint32_t goal_milli; /* the CPU policy's goal */
	bool has_permit;
	struct vmact_resources permit;
	bool has_desired;
	struct vmact_resources desired;
	/* mode="recommend": desired is its recommendation, never applied */
	bool recommend;
	/* <vmact:migration enabled="true"/>: vmact may move it to another host */
	bool migration;
	/* Frozen for a move (state ACT_VM_FROZEN): why, since when
	 * (CLOCK_REALTIME), and whether a resize still runs (the freeze waits
	 * for it). */
	char frozen_why[640];
	uint64_t frozen_since_usec;
	bool frozen_idle;
	/* Why it does not get closer to desired ("" when nothing holds it):
	 * a permit below what was asked (the scheduler's reason), a shrink
	 * it cannot make (no approver, approver away or denying, memory the
	 * guest kept). */
	char permit_short[320];
	char cannot_shrink[320];
	uint64_t last_change_usec; /* CLOCK_REALTIME; 0 = none */
	char last_change[320];

	/* show */
	const char *policy_cpu;    /* "reactive" or "neon" */
	const char *policy_shrink; /* "quota" or "unplug" */
	char policy_source[8];     /* "vm" or "host" */
	double load_target;        /* loadAverageFractionTarget */
	double mem_usage_target;   /* memoryUsageFractionTarget */
	const char *scheduler;     /* "arbiter" or "plugin" */
	char scheduler_url[512];   /* plugin: its URL */
	bool scheduler_busy;
	const char *monitor_kind; /* "vm-monitor", "informant" or "none" */
	char monitor_endpoint[512];
	bool monitor_connected;
	bool resizing;

	/* The evidence (show): who approves a shrink, where the CPU and the
	 * memory figures come from, and the memory policy's last decision. */
	const char *approval;   /* "vm-monitor", "informant" or "host" */
	const char *cpu_source; /* "BPF", "BPF, guest metrics"; NULL: none */
	const char *mem_policy; /* "host" (actuator/policy/mem-demand.h) or "neon" */
	const char *mem_source; /* "balloon stats", "guest metrics" or "none" */
	char mem_why[320];      /* mem_source "none": why */
	bool has_balloon;
	struct {
		uint64_t total, available, unused, caches, swap_in, swap_out;
		uint64_t major_faults, last_update;
		bool has_unused, has_caches, has_swap, has_faults;
	} balloon; /* bytes, except the counts and last_update */
	bool has_mem_dec;
	const char *mem_class; /* "ok", "filling", "short" */
	uint64_t mem_goal, mem_used, mem_headroom;
	double mem_growth, mem_fault_rate, mem_swap_in_rate; /* per second */
	uint64_t mem_kept_s; /* the guest kept its memory: no shrink for this long */
};

json_t *act_json_vm(const struct act_vm_view *v, bool detail);
json_t *act_json_event(const struct act_event *ev);
/* {"error": msg} — every refusal of the API has this shape. */
json_t *act_json_error(const char *msg);

/* vmactl check and enable (POST /v1/domains/DOM/check, /enable): the
 * domain's layout against the bounds, as it runs and as it is defined
 * (the next cold start), and what its metadata says. */
struct act_domain_check {
	char name[HP_NAME_MAX];
	char uuid[HP_UUID_LEN];
	bool active, persistent;
	/* "none", "valid" (meta), "invalid" (meta_error) */
	const char *meta_state;
	/* Its metadata names the guest's exporters (<vmact:metrics>). */
	bool meta_metrics;
	char meta_error[VMACT_ERR_MSG_MAX];
	/* The bounds checked: given, else the metadata's, else the layout's
	 * defaults (bounds_from: "request", "metadata", "defaults"). */
	const char *bounds_from;
	struct vmact_resources min, max;
	enum hp_mem_method method;
	bool has_live, has_config;
	struct hp_layout live, config;
	/* The verdict: the running layout's when it runs, else the
	 * definition's. */
	bool ready;
	/* Whether vmact may move it to another host: the request's, else the
	 * metadata's (off without). */
	bool migration;
};
json_t *act_json_domain_check(const struct act_domain_check *c);

/* The body of POST /v1/vms/NAME/bounds: an object of min_cpu, max_cpu,
 * min_memory, max_memory (quantity strings), mode ("recommend" or
 * "active") and migration (true or false), at least one, into the set_* fields of ch. -EINVAL / -ERANGE naming the field. The body comes
 * from a client: any bytes. */
int act_control_bounds_decode(const char *text, size_t len, struct hp_meta_change *ch,
			      struct vmact_err *err);
