/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's configuration file (JSON, default /etc/vmact/vmactd.json).
 * Every key is optional and has a documented default; unknown keys and
 * ill-typed values are errors naming the key, so a typo never silently
 * falls back to a default. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent-glue/codec/quantity.h"
#include "agent-glue/codec/scaling.h"
#include "base/error.h"

#define ACT_CONFIG_DEFAULT_PATH    "/etc/vmact/vmactd.json"
#define ACT_METRICS_LISTEN_DEFAULT "127.0.0.1:9848"

enum act_plugin_mode {
	ACT_PLUGIN_ARBITER, /* embedded node-local arbiter (default) */
	ACT_PLUGIN_REMOTE,  /* a Neon scheduler plugin at plugin.url */
};

/* Who sizes a VM's CPU (doc/policy.md). */
enum act_cpu_policy_mode {
	ACT_CPU_POLICY_REACTIVE = 0, /* vmact's: the vCPU threads' exact figures */
	ACT_CPU_POLICY_NEON,         /* the Neon agent's goal CUs from the load average */
};

/* How a VM's CPU shrinks. */
enum act_cpu_shrink_mode {
	ACT_CPU_SHRINK_QUOTA = 0, /* lower the quota, keep the vCPUs plugged */
	ACT_CPU_SHRINK_UNPLUG,    /* lower the quota, then unplug vCPUs */
};

enum act_sampler_mode {
	ACT_SAMPLER_AUTO, /* BPF, falling back to taskstats with the reason logged */
	ACT_SAMPLER_BPF,
	ACT_SAMPLER_TASKSTATS,
};

struct act_config {
	char *libvirt_uri;
	/* Only domains whose name starts with this are considered ("" = all):
	 * lets several vmactd instances (or tests) share a host. */
	char *libvirt_name_prefix;
	char *control_socket;
	/* Members of this group may read the control API (status, show,
	 * events, top, check) but change nothing; "" = root only. */
	char *control_read_group;
	char *state_dir;

	enum act_plugin_mode plugin_mode;
	char *plugin_url;     /* remote mode */
	char *plugin_version; /* "1.0".."5.0" */
	unsigned plugin_timeout_ms;

	char *arbiter_listen; /* ADDR:PORT */
	double arbiter_watermark;
	uint32_t arbiter_reserve_milli_cpu;
	uint64_t arbiter_reserve_mem_bytes;
	double arbiter_overcommit_cpu;
	double arbiter_overcommit_mem;
	/* The lease key's file (doc/cluster.md): "" = no lease interface. */
	char *arbiter_lease_key;

	/* The agent's HTTP server per VM with a legacy informant
	 * (<vmact:informant>): where it listens, "ADDR:PORT" (port 0 =
	 * ephemeral, a fresh one per registration as the Neon agent did), and
	 * the host it advertises to the informant (NULL = listen's host, which
	 * must then not be a wildcard). */
	char *informant_listen;
	char *informant_advertise_host;

	double cpu_quota_overcommit; /* milli-CPU → CFS quota factor */

	/* The Prometheus endpoint (doc/metrics.md): "ADDR:PORT", "unix:PATH",
	 * "" = none. */
	char *metrics_listen;

	enum act_sampler_mode sampler_mode;
	bool sampler_keep_pins;
	unsigned taskstats_interval_ms;
	char *sampler_pin_root;       /* bpffs directory for the maps */
	unsigned sampler_interval_ms; /* metrics tick of every VM (load, memory) */
	unsigned sampler_max_vms;     /* BPF map sizes: VMs, threads of all VMs */
	unsigned sampler_max_threads;

	enum act_cpu_policy_mode cpu_policy;
	enum act_cpu_shrink_mode cpu_shrink;
	unsigned policy_tick_ms; /* the reactive policy's readout period */
	/* The reactive policy's windows closed in the kernel (the sampler's
	 * watch, doc/policy.md "Saturation found in the kernel"): vmactd
	 * reads an idle VM on its slow clock only. false, or where the watch
	 * does not load: every VM read every tick. */
	bool policy_events;
	/* The SCHED_FIFO priority vmactd's loop waits at on the watch, to
	 * decide on a hot VM's window the moment it comes (0: it waits in
	 * SCHED_OTHER; doc/policy.md "Saturation found in the kernel"). */
	unsigned policy_events_priority;

	/* The guest workers (doc/privsep.md): each VM's vm-monitor or
	 * informant, and its exporters, are spoken to by an unprivileged,
	 * sandboxed vmact-guestd, always. */
	char *guest_worker_user;    /* "vmact"; "nobody" if it does not exist */
	char *guest_worker_program; /* "" = act_worker_default_program() */

	/* ScalingConfig every VM starts from: the Neon agent's defaults with
	 * the file's "scaling" object (camelCase keys, as in the Neon agent's
	 * config map) applied, validated as a whole. */
	struct ag_scaling_config scaling;
	/* Default compute unit for VMs whose metadata names none
	 * ("compute_unit": {"vCPUs": 0.25, "mem": "1Gi"}). */
	struct vmact_resources compute_unit;
};

void act_config_defaults(struct act_config *cfg);
/* Loads path over the defaults: 0. A missing file is an error only when
 * must_exist is set (an explicit --config); otherwise it returns 1 and
 * cfg keeps the defaults (vmactd --check-config says so). */
int act_config_load(const char *path, bool must_exist, struct act_config *cfg,
		    struct vmact_err *err);
int act_config_load_string(const char *text, struct act_config *cfg, struct vmact_err *err);
void act_config_free(struct act_config *cfg);

/* SIGHUP: takes the keys of next that a running vmactd can change
 * (policy.cpu, policy.cpu_shrink, scaling) into cfg and leaves every
 * other key as it is. fn(key, applied) is called for each key whose value
 * differs: applied true when it was taken, false when it needs a restart.
 * Returns how many were taken. */
unsigned act_config_reload(struct act_config *cfg, const struct act_config *next,
			   void (*fn)(void *ud, const char *key, bool applied), void *ud);
