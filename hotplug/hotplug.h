/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug/: everything vmact does through libvirt (prefix hp_).
 *
 * Files, each one concern, each depending only on those listed before it:
 * virt-error.c (libvirt errors as errnos), evloop.c (the libvirt event
 * thread), conn.c (connection, reconnect, the queue to the sd-event loop,
 * watches for workers), state.c and meta.c (parsing the live XML and the
 * metadata), refusal.c (the "vCPU changes refused" rule), read.c (reading
 * live state, QEMU's vCPU threads and metadata), domain.c (domain handle,
 * memory statistics), op.c (the operations framework and its one wait),
 * op-vcpu.c and op-memory.c (the operations), op-start.c (hp_op_start),
 * layout.c (a domain's layout against vmact's needs, layout.h).
 *
 * Threads and the event loop
 * --------------------------
 * libvirt's default event implementation runs in ONE dedicated thread
 * (virEventRunDefaultImpl in a loop, started with the first hp_conn and
 * joined with the last). Every libvirt callback (domain events, the close
 * callback) only copies what it needs into a queue and writes an eventfd;
 * the daemon's sd-event loop watches that eventfd and hands each event to
 * the user's callback, so all policy runs on the daemon thread and needs no
 * locks. We chose this over virEventRegisterImpl on sd-event because
 * libvirt calls the event-impl hooks from any thread that makes an API call
 * (worker threads included), and the default impl is the one libvirt tests.
 *
 * Actuation that waits (vCPU unplug: libvirt blocks up to 5 s; memory:
 * seconds until the guest follows) runs in one worker thread per
 * operation; at most one operation per VM is in flight. The worker always
 * re-reads live state before it reports, and its completion is delivered
 * through the same eventfd queue, on the daemon thread. Short libvirt RPCs
 * (listing domains, reading XML, metadata) are made directly on the caller's
 * thread: they are local unix-socket round trips. The one call that comes
 * back every second whatever happens, every VM's balloon statistics, is
 * made on the event thread itself (hp_mem_stats_read_async, through
 * hp_conn_run) and its answer handed back through the queue: a call from
 * another thread wakes the event thread twice and meets it on the
 * connection's locks (hotplug/evloop.h).
 *
 * Persistent configuration: NOT touched
 * -------------------------------------
 * Every change uses VIR_DOMAIN_AFFECT_LIVE only. The autoscaled size is a
 * function of the current load, not part of the VM's definition: after a
 * restart the VM boots at the size its operator defined and vmact scales it
 * again from fresh measurements. Writing CONFIG on every step would race
 * with operators editing the domain (virsh edit), would be rejected for
 * transient domains, and would persist half-done states (a vCPU unplug
 * that timed out, a virtio-mem resize the guest never finished). The
 * operator's own definition is the single source of the boot-time size.
 * The one write to the definition is an operator's own change of the vmact
 * metadata through the control API (hp_meta_write: bounds, pause), which
 * must survive restarts as `virsh metadata --config` would.
 *
 * Truth: every operation reports the state re-read after it, never the
 * API's return code alone. For vCPUs the truth is QEMU's own vCPU threads
 * (/proc/<qemu pid>/task/<tid>/comm "CPU n/TCG|KVM"), because libvirt 9.0
 * with QEMU 7.2 keeps counting a vCPU that the guest and QEMU already
 * unplugged when the unplug outlived libvirt's 5 s wait (QEMU emits
 * DEVICE_DELETED for the vCPU's lapic only, never for the vCPU itself).
 *
 * vCPU changes refused
 * --------------------
 * After such a lost unplug, re-plugging a vCPU crashed QEMU 7.2 (seen here
 * with libvirt 9.0), even once a libvirtd restart made libvirt's count
 * right again. So hotplug/ refuses every further vCPU change on that VM
 * until it restarts, and says so in ONE place, hp_state.vcpus_refused, set
 * by every read of live state (hp_state_read, hp_list_running, the state in
 * an hp_op_result) when
 *   - libvirt and QEMU disagree on the vCPU count now (HP_VCPUS_DESYNC), or
 *   - a vCPU unplug on this domain (uuid + libvirt id, so a restarted VM
 *     starts clean) was lost earlier: libvirt's wait timed out, libvirtd
 *     went away during it, or a disagreement was read
 *     (HP_VCPUS_LOST_UNPLUG).
 * An HP_OP_SET_VCPUS that would change the count of a VM whose state says
 * vcpus_refused fails with -EIO and changes nothing; the daemon's planner
 * reads the same field and plans no vCPU step for it (CPU quota only). An
 * operation already unplugging when its unplug gets lost finishes its
 * target one named vCPU at a time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "base/error.h"
#include "base/resources.h"

#define HP_URI_DEFAULT "qemu:///system"
#define HP_NS_URI      "https://vmact.dev/xmlns/vmact/1"
#define HP_NS_PREFIX   "vmact"
#define HP_MAX_MEMDEVS 16
#define HP_UUID_LEN    37 /* VIR_UUID_STRING_BUFLEN */
#define HP_NAME_MAX    256
#define HP_ALIAS_MAX   64

/* ---- live state -------------------------------------------------------- */

enum hp_mem_model { HP_MEM_DIMM, HP_MEM_VIRTIO_MEM };

struct hp_memdev {
	enum hp_mem_model model;
	char alias[HP_ALIAS_MAX];
	int node;
	int slot; /* DIMM slot, -1 unknown / virtio-mem */
	uint64_t size_kib;
	uint64_t block_kib;     /* virtio-mem only */
	uint64_t requested_kib; /* virtio-mem only */
	uint64_t current_kib;   /* virtio-mem only: what the guest plugged */
};

enum hp_vcpus_refusal {
	HP_VCPUS_ALLOWED = 0,
	HP_VCPUS_DESYNC,      /* libvirt and QEMU disagree on the count now */
	HP_VCPUS_LOST_UNPLUG, /* an earlier unplug was lost; counts agree again */
};

enum hp_migration {
	HP_MIGRATION_NONE,
	HP_MIGRATION_ARRIVING,
	HP_MIGRATION_LEAVING,
};

struct hp_state {
	char name[HP_NAME_MAX];
	char uuid[HP_UUID_LEN];
	int id; /* libvirt domain id */
	/* libvirt's view of vCPUs (live XML). */
	unsigned vcpus_max;
	unsigned vcpus_current;
	unsigned vcpus_hotpluggable; /* <vcpus> entries marked hotpluggable */
	uint64_t vcpus_enabled_mask; /* bit i = <vcpu id='i' enabled='yes'> */
	/* QEMU's view: number of vCPU threads; -1 when it could not be read. */
	int qemu_vcpus;
	uint64_t qemu_vcpu_mask; /* bit n = QEMU runs "CPU n/..." (n < 64) */
	/* vCPU changes refused, and why (see "vCPU changes refused" above).
	 * Set by the reads; hp_state_parse leaves it false. */
	bool vcpus_refused;
	enum hp_vcpus_refusal vcpus_refusal;
	/* A live migration of the domain under way on this host (libvirt's
	 * job): arriving (the destination's paused QEMU, not this host's to
	 * manage until libvirt resumes it) or leaving (the source: no
	 * hot-plug until it is over, libvirt's job lock would hold it). Set
	 * by the reads; hp_state_parse leaves it HP_MIGRATION_NONE. */
	enum hp_migration migration;
	/* Memory, KiB. base = sum of NUMA cells (boot memory). */
	uint64_t memory_kib; /* <memory>: base + devices */
	uint64_t base_kib;
	uint64_t max_memory_kib; /* <maxMemory>, 0 when absent */
	unsigned slots;          /* <maxMemory slots=...> */
	size_t n_memdevs;
	struct hp_memdev memdevs[HP_MAX_MEMDEVS];
};

/* vCPUs actually running: QEMU's count when known, else libvirt's. */
unsigned hp_state_vcpus(const struct hp_state *st);
/* Memory the guest can use now: base + DIMMs + virtio-mem <current>. */
uint64_t hp_state_mem_kib(const struct hp_state *st);
unsigned hp_state_dimms(const struct hp_state *st);
const struct hp_memdev *hp_state_memdev(const struct hp_state *st, const char *alias,
					enum hp_mem_model model);

/* Parses a live domain XML (virDomainGetXMLDesc). Does not fill qemu_vcpus
 * (set to -1). Errors name the element. */
int hp_state_parse(const char *xml, struct hp_state *st, struct vmact_err *err);
/* Counts "CPU n/..." threads of the QEMU process whose pid file is
 * <rundir>/<name>.pid. Returns the count or a negative errno. */
int hp_qemu_vcpu_threads(const char *rundir, const char *name, uint64_t *mask,
			 struct vmact_err *err);

/* ---- per-VM autoscaling config (<metadata>) ---------------------------- */

enum hp_mem_method { HP_METHOD_VIRTIO_MEM, HP_METHOD_DIMM };

/* Scaling config overrides (neon ScalingConfig); has_* says which were set. */
struct hp_scaling {
	bool has_load_avg_target, has_mem_usage_target, has_mem_total_target;
	bool has_enable_lfc, has_cpu_stable_zone, has_cpu_mixed_zone;
	double load_avg_target;  /* 0 <= x < 2 */
	double mem_usage_target; /* 0 <= x < 1 */
	double mem_total_target; /* 0 <= x < 1 */
	bool enable_lfc;
	double cpu_stable_zone;
	double cpu_mixed_zone;
};

/* <vmact:policy>: the VM's choice over the host's policy.cpu and
 * policy.cpu_shrink (doc/policy.md); HOST: not given, the host's applies. */
enum hp_policy_cpu { HP_POLICY_CPU_HOST = 0, HP_POLICY_CPU_REACTIVE, HP_POLICY_CPU_NEON };
enum hp_policy_shrink {
	HP_POLICY_SHRINK_HOST = 0,
	HP_POLICY_SHRINK_QUOTA,
	HP_POLICY_SHRINK_UNPLUG
};

struct hp_meta {
	bool enabled;
	bool paused; /* paused="true": keep the size */
	/* mode="recommend" (default "active"): vmactd decides as usual and
	 * reports each decision as a recommendation, and changes nothing
	 * (doc/control-api.md, "Recommend mode"). */
	bool recommend;
	/* refuse-invalid="true": vmact-hook refuses the domain's start while
	 * this metadata is invalid (doc/hook.md). */
	bool refuse_invalid;
	struct vmact_resources min, max; /* bounds, both required */
	bool has_compute_unit;
	struct vmact_resources compute_unit;
	enum hp_mem_method method;
	const char *mem_alias; /* optional virtio-mem device alias (< HP_ALIAS_MAX) */
	struct hp_scaling scaling;
	const char *monitor; /* vm-monitor endpoint, "" if none */
	/* Legacy VM informant, "http://HOST:PORT" (no path), "" if none;
	 * never set together with monitor. */
	const char *informant;
	const char *pod_namespace;
	const char *pod_name;
	const char *pod_uid;
	/* <vmact:metrics>: the guest's Prometheus endpoints, "http://HOST:PORT"
	 * with an optional path (none: /metrics), "" if none. metrics is the
	 * system exporter (Neon: port 9100), metrics_lfc the LFC exporter
	 * (Neon: port 9499); metrics_lfc only together with metrics. */
	const char *metrics;
	const char *metrics_lfc;
	enum hp_policy_cpu policy_cpu;
	enum hp_policy_shrink policy_shrink;
	/* <vmact:runner listen="ADDR:PORT"/>: the VM is sized elsewhere and
	 * gets the neonvm-runner's CPU API there (doc/runner-api.md); "" if
	 * none. A numeric TCP address with a non-zero port; never set together
	 * with monitor, informant, metrics, scaling or a CPU policy. */
	const char *runner_listen;
	/* <vmact:migration enabled="true"/>: vmact may live-migrate the VM to
	 * another host of its cluster (doc/domain.md, "The metadata"); off
	 * unless said. */
	bool migration;
	/* The texts above that are not "", one allocation (hp_meta_done frees
	 * it; NULL: none): a VM's runner keeps its metadata for its life, and
	 * buffers of the texts' greatest lengths cost every VM 2.9 KiB
	 * (doc/actuation.md, "vmactd's own footprint"). */
	char *text;
};

/* Parses the single <vmact:autoscaling> element (as returned by
 * virDomainGetMetadata for HP_NS_URI). Strict: unknown elements or
 * attributes, missing required ones and malformed values are -EINVAL with a
 * message naming the element and attribute. */
int hp_meta_parse(const char *xml, struct hp_meta *meta, struct vmact_err *err);
/* The longest texts hp_meta_parse takes, NUL excluded (longer ones are
 * -ENAMETOOLONG). */
#define HP_META_ENDPOINT_MAX 511 /* monitor, informant, metrics, metrics_lfc */
#define HP_META_POD_MAX      253 /* pod_namespace, pod_name */
#define HP_META_UID_MAX      63
#define HP_META_LISTEN_MAX   79
/* Frees what meta holds (its texts); its texts read "" after. The meta
 * given to hp_meta_parse, hp_meta_read, hp_meta_read_any, hp_meta_write,
 * hp_meta_edit or hp_meta_copy is zeroed or was filled by one of them
 * before (what it held is given back first), and is given back with
 * this once filled, on failure too. */
void hp_meta_done(struct hp_meta *meta);
/* *dst = *src with its own texts (a NULL text of src is ""); dst is not
 * src. -ENOMEM. */
int hp_meta_copy(struct hp_meta *dst, const struct hp_meta *src, struct vmact_err *err);

/* Operators' changes to the metadata (the control API, hotplug/meta-write.c):
 * new bounds, the pause flag; everything else is kept as written. */
struct hp_meta_change {
	bool set_min_cpu, set_max_cpu, set_min_mem, set_max_mem, set_paused;
	uint32_t min_milli_cpu, max_milli_cpu;
	uint64_t min_mem_bytes, max_mem_bytes;
	bool paused;
	/* enabled="true"/"false": vmactl enable and disable */
	bool set_enabled, enabled;
	/* mode="recommend", or no mode attribute (active): vmactl set --mode,
	 * vmactl enable --recommend */
	bool set_mode, recommend;
	/* <vmact:migration enabled=...>: vmactl set --migration, vmactl
	 * enable --migration. Off removes the element (off is the default). */
	bool set_migration, migration;
};

/* Applies ch to a <vmact:autoscaling> element (text as virDomainGetMetadata
 * returns it) and validates the result with hp_meta_parse, so that a
 * change is refused exactly as the reader would refuse it. *out is
 * malloc'd; parsed (may be NULL) gets the result, to be given back with
 * hp_meta_done. */
int hp_meta_edit(const char *xml, const struct hp_meta_change *ch, char **out,
		 struct hp_meta *parsed, struct vmact_err *err);

/* ---- connection ------------------------------------------------------- */

struct hp_conn;

enum hp_event_kind {
	HP_EV_CONNECTED,    /* (re)connected: resync every domain now */
	HP_EV_DISCONNECTED, /* connection lost; reconnect is scheduled */
	HP_EV_DOMAIN_STARTED,
	HP_EV_DOMAIN_STOPPED,   /* destroyed, shut down, crashed */
	HP_EV_METADATA_CHANGED, /* re-read the config with hp_meta_read */
	HP_EV_DEVICE_REMOVED,
	HP_EV_DEVICE_REMOVAL_FAILED,
	HP_EV_MEMDEV_SIZE, /* virtio-mem <current> changed: size_kib */
};

struct hp_event {
	enum hp_event_kind kind;
	char uuid[HP_UUID_LEN];
	char name[HP_NAME_MAX];
	char alias[HP_ALIAS_MAX];
	uint64_t size_kib;
	unsigned reconnects; /* HP_EV_CONNECTED: 0 first time */
};

typedef void (*hp_event_fn)(struct hp_conn *c, const struct hp_event *ev, void *userdata);

struct hp_conn_opts {
	const char *uri;          /* NULL: HP_URI_DEFAULT */
	const char *qemu_rundir;  /* NULL: /run/libvirt/qemu (pid files) */
	int keepalive_interval;   /* s, 0: 5 */
	unsigned keepalive_count; /* 0: 3 */
	uint64_t backoff_min_us;  /* 0: 100 ms */
	uint64_t backoff_max_us;  /* 0: 5 s */
};

/* Opens the connection (the first attempt is synchronous so a bad URI fails
 * here), registers the domain event callbacks and watches the connection
 * from the sd-event loop. Later losses are handled by reconnecting with
 * backoff; HP_EV_CONNECTED is delivered (from the loop) after the first
 * connection and after each reconnect. */
int hp_conn_new(sd_event *ev, const struct hp_conn_opts *opts, hp_event_fn fn, void *userdata,
		struct hp_conn **out, struct vmact_err *err);
/* Waits for in-flight operations (their callbacks are not called), then
 * closes. */
void hp_conn_free(struct hp_conn *c);
bool hp_conn_is_up(struct hp_conn *c);

/* Running QEMU domains with their live state. *out is malloc'd. */
int hp_list_running(struct hp_conn *c, struct hp_state **out, size_t *n, struct vmact_err *err);
int hp_state_read(struct hp_conn *c, const char *uuid, struct hp_state *st, struct vmact_err *err);
/* -ENOENT when the domain has no vmact metadata. */
int hp_meta_read(struct hp_conn *c, const char *uuid, struct hp_meta *meta, struct vmact_err *err);
/* The metadata of a running domain (live) or of one that is not running
 * (its definition): what vmactl check reads. -ENOENT when it has none. */
int hp_meta_read_any(struct hp_conn *c, const char *uuid, struct hp_meta *meta,
		     struct vmact_err *err);
/* Writes a change into the domain's live metadata (when it runs) and, when
 * the domain is persistent, into its definition too (so it survives a restart of the VM
 * and of vmactd). Both edits are validated before either is written.
 * -ENOENT when the domain has no vmact metadata; -EINVAL/-ERANGE with the
 * reader's message when the result would be invalid. libvirt then
 * reports HP_EV_METADATA_CHANGED as for any other edit. */
int hp_meta_write(struct hp_conn *c, const char *uuid, const struct hp_meta_change *ch,
		  struct hp_meta *out, struct vmact_err *err);
/* Writes a whole <vmact:autoscaling> element (checked by hp_meta_parse
 * first; without a namespace declaration, as virDomainGetMetadata returns
 * it: libvirt adds HP_NS_URI and refuses an element that declares it)
 * into the running domain and into its definition, replacing what either
 * had: vmactl enable on a domain without metadata. */
int hp_meta_put(struct hp_conn *c, const char *uuid, const char *element, struct vmact_err *err);

/* ---- actuation -------------------------------------------------------- */

enum hp_op_kind {
	HP_OP_SET_VCPUS,   /* vcpus */
	HP_OP_VIRTIO_MEM,  /* requested_kib on device alias ("" = first) */
	HP_OP_DIMM_ATTACH, /* dimm_kib on NUMA node 0 */
	HP_OP_DIMM_DETACH, /* alias ("" = the last DIMM) */
};

struct hp_op_req {
	enum hp_op_kind kind;
	unsigned vcpus;
	uint64_t requested_kib;
	uint64_t dimm_kib;
	char alias[HP_ALIAS_MAX];
	unsigned timeout_ms; /* intent deadline; 0: 30 s */
};

struct hp_op_result {
	/* 0: the target was reached. -ETIMEDOUT: partial (state says how far).
	 * -ENODEV: the VM went away. -ECONNRESET: libvirtd went away and did
	 * not come back before the deadline. -EBUSY: the guest refused a DIMM
	 * removal, or kept virtio-mem memory it was asked to give back (the
	 * request is then set back to what it has). -EIO: vCPU changes refused (hp_state.vcpus_refused).
	 * -ERANGE/-EINVAL: request outside the VM's layout (nothing was
	 * changed). */
	int rc;
	struct vmact_err err;
	bool state_valid;
	struct hp_state state; /* re-read after the operation */
	uint64_t elapsed_us;
};

typedef void (*hp_op_fn)(struct hp_conn *c, const char *uuid, const struct hp_op_result *res,
			 void *userdata);

/* Starts an operation; fn runs later on the sd-event loop thread. -EBUSY if
 * an operation on that VM is still in flight. */
int hp_op_start(struct hp_conn *c, const char *uuid, const struct hp_op_req *req, hp_op_fn fn,
		void *userdata, struct vmact_err *err);
bool hp_op_in_flight(struct hp_conn *c, const char *uuid);
