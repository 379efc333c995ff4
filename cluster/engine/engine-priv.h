/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's insides, shared by its files only, which call each other
 * one way (tests/checks/check-cycles.sh):
 *   engine.c   groups, the API's operations, the loop's tick
 *     -> place.c    placement and binding through the framework
 *     -> life.c     a VM's life after its bind: boot wait, tiers, claims,
 *                   failures, removal
 *     -> recover.c  finding the VMs again at start-up; leases
 *     -> nodes.c    the groups' Nodes in the API server: registered? what
 *                   their kubelets report
 *     -> relief.c   which VMs leave a full or drained host
 *       -> move.c   live migrations of running VMs between hosts
 *   all of them -> vm.c  the VMs' records, events, waiting requests, and
 *                   recording their metadata */
#pragma once

#ifndef CL_ENGINE_PRIV_ALLOW
#error "engine-priv.h is private to the files of cluster/engine/: include cluster/engine/engine.h"
#endif

#include <libvirt/libvirt.h>

#include "base/list.h"
#include "cluster/engine/engine.h"
#include "cluster/engine/jobs.h"
#include "cluster/engine/node-api.h"
#include "cluster/host/host.h"
#include "cluster/host/migrate.h"
#include "cluster/host/virt.h"
#include "cluster/plugins/plugins.h"

struct cl_op;
struct cl_place_job;

/* An API request waiting for what it changed to be recorded. */
struct cl_op {
	struct cl_engine *e;
	struct cl_group *g;
	unsigned pending; /* recordings not yet done */
	unsigned failed;
	char first_error[VMACT_ERR_MSG_MAX];
	cl_engine_answer_fn *fn;
	void *ud;
};

/* A VM's link to an op it must report to once its intent is recorded. */
struct cl_vm_op {
	VMACT_LIST_FIELDS(struct cl_vm_op, ops);
	struct cl_op *op;
};

struct cl_vm {
	VMACT_LIST_FIELDS(struct cl_vm, vms);
	struct cl_group *g; /* NULL: a group no longer configured */
	char group_id[CL_NAME_MAX];
	char name[CL_NAME_MAX];
	char uuid[VIR_UUID_STRING_BUFLEN];
	char host[CL_NAME_MAX]; /* where it is defined; "" before its bind */
	struct cl_meta meta;    /* as recorded (or being recorded) */
	bool persisted;         /* defined somewhere */
	bool busy;              /* a job that changes it is in flight */
	bool probing;           /* a health probe is in flight */
	bool placing;           /* in a scheduling or binding cycle */
	bool leased;            /* holds a lease at its host's arbiter */
	bool found_running;     /* found running by a scan: not leased by us yet */
	bool found_paused;      /* found paused by a scan */
	bool found_move_paused; /* ... by a migration: recover.c settles it */
	uint64_t next_settle_usec;
	bool healthy;                  /* this boot or wake-up passed a probe */
	bool want_delete, want_return; /* intents, applied when not busy */
	bool evict_wait;               /* pending until standby VMs made room */
	bool gone;                     /* removed; freed once no probe runs */
	bool moving;                   /* move.c: a live migration of it in flight (busy too) */
	uint64_t next_try_usec;        /* pending: the next placement */
	uint64_t remove_retry_usec;    /* a failed removal's next try */
	uint64_t boot_deadline_usec;
	uint64_t next_probe_usec;
	uint64_t last_healthy_usec;
	uint64_t requested_usec; /* the increase, for the histogram */
	/* nodes.c: its Node seen registered; a question about it in flight;
	 * the next one */
	bool node_registered, node_asking;
	uint64_t next_node_usec;
	struct cl_vm_op *ops;
	/* While placing: the host where its Reserve took a lease (from the
	 * end of its scheduling cycle until it is bound or un-placed), which
	 * the renewal keeps alive while a Permit plugin holds it. */
	char reserved_host[CL_NAME_MAX];
	struct cl_fw_cycle *cs;    /* while placing */
	struct cl_place_job *pjob; /* while its Permit waits */
	struct cl_place_job *sjob; /* while placing */
	struct cl_bind_spec spec;  /* what Bind builds, while placing */
	const char *hosts_list[CL_MAX_HOSTS];
};

#define CL_SHAPE_KEY_MAX 17

/* nodes.c: what the group's nodes report to Kubernetes, for the template
 * it was seen for (key: cl_shape_key). */
struct cl_shape {
	char key[CL_SHAPE_KEY_MAX];
	uint64_t disk_bytes; /* the node image's virtual size; 0: not read */
	bool reported;       /* rep: what a registered Node's kubelet said */
	char node[CL_NAME_MAX];
	double at; /* CLOCK_REALTIME s */
	struct cl_node_report rep;
	char last_error[VMACT_ERR_MSG_MAX];
};

struct cl_group {
	struct cl_engine *e;
	size_t idx;
	const struct cl_group_cfg *cfg;
	struct cl_fw *fw;
	struct cl_vm *vms;
	uint64_t next_refill_usec;
	struct cl_engine_group_counters c;
	struct cl_shape shape;
	bool shape_busy;
	uint64_t next_shape_usec;
};

#define CL_ORPHANS_MAX 4

struct cl_ehost {
	struct cl_host *h;
	/* relief.c: drained by its operator; what its last round said (a
	 * host needing relief or drained, "" otherwise) and which VMs
	 * stay. */
	bool draining;
	char relief[1536];
	char unmovable[1024];
	/* relief.c: the VMs its last round found left paused by a move
	 * nobody finished (seen twice, they are resumed or removed). */
	char orphans[CL_ORPHANS_MAX][CL_NAME_MAX];
	size_t n_orphans;
	char orphan_said[512]; /* the last "not decided yet", said once */
	bool scanned, scanning;
	uint64_t next_scan_usec;
	struct cl_engine_host_counters c;
};

/* move.c: a live migration (doc/cluster.md, "Live migration"). */
struct cl_move;

struct cl_engine {
	sd_event *ev;
	const struct cl_config *cfg;
	struct cl_jobs *jobs;  /* libvirt and arbiter work, side by side */
	struct cl_jobs *sched; /* scheduling cycles, one at a time */
	struct cl_ehost *hosts;
	size_t n_hosts;
	struct cl_group *groups;
	size_t n_groups;
	struct cl_fw **fws; /* one per profile */
	size_t n_fws;
	struct cl_vm *orphans;   /* VMs of groups not configured (left alone) */
	struct cl_vm *graveyard; /* removed, waiting for their probe to end */
	struct cl_fw_handle handle;
	sd_event_source *tick, *permit_timer;
	uint64_t next_renew_usec;
	bool ready, stopping;
	unsigned boots_this_iteration;
	char state_dir[512];    /* "" = node shapes are not kept */
	unsigned nodes_asking;  /* nodes.c's questions in flight */
	bool nodes_reconciling; /* nodes.c's check for Nodes left behind */
	uint64_t next_reconcile_usec;
	cl_engine_event_fn *event_fn;
	void *event_ud;
	/* move.c: the moves, in flight and the last ended (oldest first),
	 * on a pool of their own (a move holds its thread for its length). */
	struct cl_jobs *movers;
	struct cl_move *moves;
	bool relief_busy;
	uint64_t next_relief_usec;
	size_t n_moves_ended;
	uint64_t next_move_id;
	struct cl_engine_move_counters mc;
};

/* vm.c: the bottom; calls none of the files below it. */
void cl_vm_emit(struct cl_engine *e, int prio, const struct cl_vm *vm, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
struct cl_vm *cl_vm_new(struct cl_group *g, const char *uuid, const char *name);
void cl_vm_free(struct cl_engine *e, struct cl_vm *vm);
struct cl_ehost *cl_vm_ehost(struct cl_engine *e, const char *name);
double cl_vm_now_real(void);
/* A pass over the VMs at the loop's next iteration. */
void cl_vm_kick(struct cl_engine *e);
/* A member not being deleted nor given back: what the target counts. */
bool cl_vm_is_member(const struct cl_vm *vm);
/* The VM of a configured group with that UUID (in any case), NULL. */
struct cl_vm *cl_vm_by_uuid(struct cl_engine *e, const char *uuid);
/* Its provider ID, "libvirt://HOST/UUID": the host it was first defined on
 * for good (its Node's spec.providerID never changes, even after a move:
 * meta.provider_host), else the one it is on. */
void cl_vm_provider_id(const struct cl_vm *vm, char *buf, size_t len);
unsigned cl_vm_group_target(const struct cl_group *g);
/* An API request (one pending count for its caller: cl_vm_op_done it once
 * everything is queued); a VM's recording reports to it; once nothing is
 * pending it answers. */
struct cl_op *cl_vm_op_new(struct cl_engine *e, struct cl_group *g, cl_engine_answer_fn *fn,
			   void *ud);
int cl_vm_op_attach(struct cl_op *op, struct cl_vm *vm);
void cl_vm_op_done(struct cl_op *op, int r, const char *err);
/* Reports to the VM's waiting ops that its intent was recorded (r < 0: it
 * failed, err says why). */
void cl_vm_ops_done(struct cl_vm *vm, int r, const char *err);
/* Records vm->meta as it is now (a job); then done(vm, r, err). */
void cl_vm_record(struct cl_vm *vm, void (*done)(struct cl_vm *vm, int r, const char *err));
/* Defines a member's placeholder on vm->host (a job); the same done. */
void cl_vm_define_placeholder(struct cl_vm *vm,
			      void (*done)(struct cl_vm *vm, int r, const char *err));
/* Removal of a leased VM ended: members waiting for standby VMs to give
 * back room try again. */
void cl_vm_evictions_done(struct cl_engine *e);
/* An increase served after secs, by a VM of tier t: the histogram. */
void cl_vm_observe(struct cl_group *g, enum cl_tier t, double secs);

/* place.c: placement and binding. */
void cl_place_submit(struct cl_vm *vm);
/* The hosts' half of a host's snapshot for a scheduling cycle, in a job:
 * drained, libvirt reachable, the arbiter's ledger (h->name set, the rest
 * zero; scanned: its VMs were found, else it takes nothing yet). */
void cl_place_snapshot_host(struct cl_engine *e, struct cl_fw_host *h, bool scanned);
void cl_place_waiting_expire(struct cl_engine *e);
int cl_place_allow(struct cl_engine *e, const char *uid, const char *plugin);
int cl_place_reject(struct cl_engine *e, const char *uid, const char *why);
/* A waiting VM's reservation lapsed and the room went elsewhere (its
 * renewal was refused): it is rejected, un-placed. */
void cl_place_lost(struct cl_engine *e, struct cl_vm *vm, const char *why);
/* Binds or un-places the VMs the frameworks allowed or rejected (by an
 * operator, a plugin, a loss). */
void cl_place_take_resolved(struct cl_engine *e);

/* life.c: the next step of a VM that is not busy (called by the tick and
 * whenever a job of it ends), but its placement (engine.c's tick). */
void cl_life_next(struct cl_vm *vm);
void cl_life_remove(struct cl_vm *vm, enum cl_engine_failure *why, const char *text);
void cl_life_member_failed(struct cl_vm *vm, enum cl_engine_failure why, const char *code,
			   const char *text, bool retry_now);

/* nodes.c: under engine.c, over vm.c. */
void cl_shape_key(const struct cl_template *t, char *buf, size_t len);
/* The group's next questions about its Nodes and its image, when due. */
void cl_nodes_tick(struct cl_engine *e, struct cl_group *g, uint64_t now);
/* The check for Nodes whose VM is gone, when due (the engine's tick). */
void cl_nodes_engine_tick(struct cl_engine *e, uint64_t now);
/* v->node and v->node_reported_by: reported or estimated. */
void cl_nodes_view(const struct cl_group *g, struct cl_engine_group_view *v);

/* move.c: under engine.c and relief.c, over vm.c. */
/* A group's VM as its move needs it, read on the loop (a move's jobs
 * never touch the engine's records). */
struct cl_move_member {
	bool known; /* a VM of a configured group */
	char name[CL_NAME_MAX];
	char uuid[VIR_UUID_STRING_BUFLEN];
	char host[CL_NAME_MAX];
	const struct cl_group_cfg *g;
	struct cl_meta meta;
	char stays[160]; /* why it cannot move now, "" when it can */
};
/* The group VM called name (out->known false: none). */
void cl_move_member_find(struct cl_engine *e, const char *name, struct cl_move_member *out);
void cl_move_member_read(const struct cl_vm *vm, struct cl_move_member *out);
/* A group's VM: what the plan checks and the move copies (its disk). */
void cl_move_set_member(struct cl_move *m, const struct cl_move_member *mem);
/* Whether a move in flight holds the overlay volume on host (the target's
 * copy before its domain is there, the source's until it went): a scan
 * must not take it for one whose domain is gone. */
bool cl_move_holds_volume(const struct cl_engine *e, const char *host, const char *volume);
void cl_move_request(struct cl_engine *e, const char *vm, const char *to, bool force,
		     cl_engine_answer_fn *fn, void *ud);
/* A move of vm (to NULL: the best host), not started. */
struct cl_move *cl_move_new(struct cl_engine *e, const char *vm, const char *to, bool force,
			    enum cl_engine_move_reason reason);
/* What chose it, for its events and its listing. */
void cl_move_set_why(struct cl_move *m, const char *why);
/* Plans it (a job thread): the VM found on its host (or, with from, the
 * one given: dom as read there), checked, its target chosen; false with
 * cl_move_error when it cannot move. */
bool cl_move_plan(struct cl_move *m, const char *from, const struct cl_migrate_dom *dom);
const char *cl_move_error(const struct cl_move *m);
const char *cl_move_target(const struct cl_move *m);
/* Starts a planned move (on the loop): the engine owns it from then on;
 * -errno (the move is the caller's to discard). */
int cl_move_start(struct cl_move *m);
void cl_move_discard(struct cl_move *m);
/* Moves in flight (from that host; NULL: all). */
unsigned cl_move_count(const struct cl_engine *e, const char *from);
/* Keeps the leases of the moves in flight alive (the engine's tick). */
void cl_move_tick(struct cl_engine *e, uint64_t now);
void cl_move_free_all(struct cl_engine *e);

/* Moves at once: each is a live migration, the hosts' network and CPUs
 * its bottleneck. */
#define CL_MOVE_THREADS 2
/* fn for each VM's last move listed: in flight (end 0), or ended at end
 * (CLOCK_MONOTONIC µs), successfully or not. */
void cl_move_each_last(const struct cl_engine *e,
		       void (*fn)(void *ud, const char *vm, uint64_t end, bool success), void *ud);

/* relief.c: under engine.c, over move.c. */
/* A domain left paused on host (reached by here) by a move nobody
 * finished, settled against every other host (cl_migrate_recover: 1 the
 * copy here went, *ran_at where it runs; 0 resumed here; -errno, nothing
 * done). Blocking, from a job. */
int cl_relief_settle_paused(struct cl_engine *e, const char *host, virConnectPtr here,
			    const char *name, const char **ran_at, struct vmact_err *err);
/* A round of relief and drain, when due (the engine's tick). */
void cl_relief_tick(struct cl_engine *e, uint64_t now);
/* Drains or undrains the host (kept in the state directory's
 * drained.json); -ENOENT. */
int cl_relief_drain(struct cl_engine *e, const char *host, bool drain, struct vmact_err *err);
/* The drained hosts, from the state directory (after it is set). */
int cl_relief_load_drained(struct cl_engine *e, struct vmact_err *err);

/* recover.c */
void cl_recover_scan(struct cl_engine *e, struct cl_ehost *h);
/* Members in service a scan found paused by a move nobody finished, once
 * every host was scanned: where another host runs it, the copy goes;
 * where none does, it is resumed (the engine's tick). */
void cl_recover_paused(struct cl_engine *e, uint64_t now);
void cl_recover_renew(struct cl_engine *e);
