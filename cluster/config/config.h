/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's configuration file (prefix cl_config_; doc/cluster.md,
 * "Configuration"): JSON, every key checked, an error naming the key.
 *
 *   {"api": {"socket": "/run/vmact-groupd/api.sock"},
 *    "metrics": {"listen": "127.0.0.1:9849"},
 *    "libvirt": {"name_prefix": "vmact-"},
 *    "lifecycle": {"boot_timeout_s": 300, "healthy_timeout_s": 90,
 *                  "health_interval_s": 5, "max_boots_per_iteration": 10,
 *                  "lease_s": 60, "retry_backoff_s": 30, "refill_interval_s": 5},
 *    "hosts": [{"name": "h1", "uri": "qemu:///system", "storage_pool": "vmact",
 *               "arbiter": {"url": "http://127.0.0.1:10299", "secret_file": "/etc/vmact/lease.key"}}],
 *    "groups": [{"id": "workers", "min": 0, "max": 10, "hosts": ["h1"], ...}],
 *    "scheduler": {"profiles": [{"schedulerName": "default", "plugins": {...},
 *                               "pluginConfig": [...]}]}}
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/error.h"
#include "base/resources.h"

#define CL_NAME_MAX   64
#define CL_MAX_HOSTS  64
#define CL_MAX_GROUPS 256

enum cl_tier { CL_TIER_RUNNING, CL_TIER_PAUSED, CL_TIER_SAVED, CL_TIER_COLD, CL_N_TIERS };

enum cl_health_kind { CL_HEALTH_SERIAL, CL_HEALTH_AGENT, CL_HEALTH_TCP };

struct cl_lifecycle {
	/* The pool's timings and their defaults (doc/cluster.md, "Pool lifecycle"). */
	uint64_t boot_timeout_usec;       /* started -> healthy; 300 s */
	uint64_t healthy_timeout_usec;    /* a standby VM without a good check; 90 s */
	uint64_t health_interval_usec;    /* 5 s */
	unsigned max_boots_per_iteration; /* 10 */
	uint64_t lease_usec;              /* arbiter leases; 60 s */
	uint64_t retry_backoff_usec;      /* a member's next placement or boot; 30 s */
	uint64_t refill_interval_usec;    /* the pool loop; 5 s */
};

struct cl_health {
	enum cl_health_kind kind;
	/* serial: a console line starting with pattern, read for at most
	 * probe_timeout; tcp: address "HOST:PORT" (connect succeeds). */
	char pattern[128];
	char address[256];
	uint64_t probe_timeout_usec; /* one probe; 3 s */
	/* A member in service without a good check for the healthy timeout:
	 * reported (its node's error, for the autoscaler) and, with
	 * replace_unhealthy ("on_unhealthy": "replace"), destroyed and booted
	 * again; by default only reported ("report"): the autoscaler
	 * decides. */
	bool replace_unhealthy;
};

struct cl_claim {
	/* Where the claim goes, as one line "claim <json>\n": "virtio:NAME"
	 * (default "virtio:org.vmact.claim.0"), a virtio-serial channel the
	 * domain gets, the answer read back on it; or "serialN" (N >= 1), a
	 * serial port, the answer read on the console (serial0). With ack, a
	 * line starting with it must answer within ack_timeout_usec. */
	char channel[80];
	char ack[128];
	/* With ack: a line starting with refuse instead fails the claim at
	 * once, with the rest of the line as the guest's reason (default
	 * "VMACT-NODE refused", vmact-node(8)); "" = none. */
	char refuse[128];
	/* claim.secret: sent with every claim as its "secret" (vmact-node's
	 * credentials for the API server), read from secret_file at each
	 * claim by the key file's rules; "" = none. secret_kind is
	 * "kubeconfig", "bootstrap_kubeconfig" or "kubeadm" (a kubeadm
	 * JoinConfiguration in JSON: the node joins by kubeadm join). Only
	 * over a virtio channel, never a serial port (a pty can be logged). */
	char secret_kind[32];
	char secret_file[512];
	/* How long the answer may take (claim.ack_timeout_s; 30 s): longer
	 * than a health probe's, since a healthy standby that is slow to
	 * answer on a busy host is worth more than the cold boot that would
	 * replace it. */
	uint64_t ack_timeout_usec;
};
/* The largest secret a claim carries (vmact-node's own limit). */
#define CL_CLAIM_SECRET_MAX 32768
/* The virtio-serial channel's name, or NULL for a serial port. */
static inline const char *cl_config_claim_virtio(const struct cl_claim *c)
{
	return strncmp(c->channel, "virtio:", 7) == 0 ? c->channel + 7 : NULL;
}

struct cl_taint {
	char key[128], value[128], effect[32];
};

struct cl_template {
	bool kvm; /* domain_type "kvm" (default) or "qemu" (TCG) */
	unsigned vcpus, max_vcpus;
	uint64_t memory, max_memory; /* bytes */
	/* What the node's kubelet reports as ephemeral-storage: its root
	 * filesystem on the overlay of base_volume (0 = not said). */
	uint64_t ephemeral_storage;
	unsigned pods;
	char arch[16], os[16];
	/* Direct kernel boot (a node image with its own boot loader leaves
	 * kernel empty and boots the disk). */
	char kernel[512], initrd[512], cmdline[1024];
	/* The disk: a qcow2 overlay of base_volume, a volume of the host's
	 * storage_pool, created through libvirt's storage API. */
	char base_volume[256];
	char disk_bus[16];
	/* A libvirt network for one virtio NIC ("" = none). */
	char network[CL_NAME_MAX];
	/* nic "user": one virtio NIC on QEMU's user network instead (the
	 * guest 10.0.2.15, the host's loopback reached as 10.0.2.2): no
	 * bridge, no DHCP server, nothing reaches the guest. */
	bool user_nic;
	/* Serial console log files, for operators and tests ("" = none). */
	char serial_log_dir[512];
	/* Extra <metadata> children, as XML (the VM's vmact autoscaling
	 * element for vmactd); "" = none. */
	char *metadata_xml;
	struct vmact_resources reserve; /* what a VM holds at the arbiter */
};

struct cl_group_cfg {
	char id[CL_NAME_MAX];
	unsigned min, max;
	size_t n_hosts;
	char hosts[CL_MAX_HOSTS][CL_NAME_MAX];
	json_t *labels; /* object of strings */
	size_t n_taints;
	struct cl_taint *taints;
	struct cl_template tpl;
	struct cl_health health;
	struct cl_claim claim;
	unsigned pool[3]; /* running, paused, saved */
	json_t *options;  /* NodeGroupAutoscalingOptions, as given */
	char scheduler_name[CL_NAME_MAX];
	struct cl_lifecycle life;
	/* migration.enabled: its VMs may be moved live to another of its
	 * hosts (relief, drain, a command), their disks copied with them;
	 * off by default, as a VM's own <vmact:migration> is
	 * (doc/cluster.md, "Moving a group's VMs"). */
	bool migration;
};

/* A unix socket's path holds 107 bytes; DIR "/" UUID ".claim" must fit. */
#define CL_CHANNEL_DIR_MAX (107 - 1 - 36 - 6 + 1)

struct cl_host_cfg {
	char name[CL_NAME_MAX];
	char uri[512];
	char storage_pool[CL_NAME_MAX];
	/* Where the host's QEMU puts the VMs' channel sockets (the claim's,
	 * the agent's), "" for libvirt's own place: a short directory, so
	 * that DIR/UUID.claim stays within the 107 bytes of a unix socket's
	 * path whatever the domain's ID (doc/cluster.md, "Health"). */
	char channel_dir[CL_CHANNEL_DIR_MAX];
	char arbiter_url[512];    /* http://HOST:PORT or unix:PATH */
	char arbiter_secret[512]; /* the lease key's file */
	/* migration.address: where a VM moving here sends its memory (the
	 * host's QEMU listens there for the move, tcp://ADDRESS); "" = the
	 * host takes no moved VMs (doc/cluster.md, "Live migration").
	 * migration.bandwidth_mib_s: at most that many MiB/s per move to
	 * this host, 0 = libvirt's own limit. */
	char migration_address[256];
	uint64_t migration_bandwidth_mib_s;
};

/* "kubernetes": the cluster's API server, where vmact-groupd deletes the
 * Node of a VM it removed (its providerID ours): what a cloud's
 * controller manager does for its instances. server "" = none. The token
 * is read at each use, by the key file's rules. */
struct cl_kube {
	char server[256];     /* https://HOST:PORT */
	char ca_file[256];    /* the CA the server's certificate chains to */
	char token_file[256]; /* a bearer token that may get and delete Nodes */
};

struct cl_config {
	char api_socket[108];
	char metrics_listen[128]; /* "" = no metrics endpoint */
	char name_prefix[32];
	struct cl_lifecycle life;
	size_t n_hosts;
	struct cl_host_cfg *hosts;
	size_t n_groups;
	struct cl_group_cfg *groups;
	json_t *profiles; /* scheduler.profiles, as given (NULL: default) */
	struct cl_kube kube;
	/* "migration" (doc/cluster.md, "Live migration"): relief on or off;
	 * how long a VM that moved stays before relief moves it again. */
	bool relief;
	uint64_t min_residence_usec;
};

void cl_config_free(struct cl_config *cfg);
/* Parses and checks a whole document; errors name the key
 * ("groups[1].template.memory: ..."). Of the scheduler's profiles it
 * checks the shape and the names only: their plugins and arguments are
 * checked by cl_plugins_check_profiles (cluster/plugins/plugins.h), above
 * this layer, which vmact-groupd calls next. */
int cl_config_load_string(const char *text, struct cl_config *cfg, struct vmact_err *err);
int cl_config_load(const char *path, struct cl_config *cfg, struct vmact_err *err);

const struct cl_group_cfg *cl_config_group(const struct cl_config *cfg, const char *id);
const struct cl_host_cfg *cl_config_host(const struct cl_config *cfg, const char *name);
