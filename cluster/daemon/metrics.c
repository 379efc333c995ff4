/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/daemon/metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

struct members {
	struct net_prom_writer *w;
	const char *group;
	unsigned by_state[CL_N_STATES];
};

static void count_member(void *ud, const struct cl_engine_vm_view *v)
{
	struct members *m = ud;

	if (v->meta->role == CL_ROLE_MEMBER && !v->want_return)
		m->by_state[v->want_delete ? CL_ST_DELETING : v->meta->state]++;
}

static void count_waiting(void *ud, const struct cl_fw_waiting *w)
{
	(*(unsigned *)ud)++;
}

void cl_metrics_write(struct cl_engine *e, struct net_prom_writer *w)
{
	size_t ng = cl_engine_n_groups(e), nh = cl_engine_n_hosts(e);
	unsigned waiting = 0;

	net_prom_w_family(w, "vmact_cluster_ready", NET_PROM_GAUGE,
			  "1 once the VMs of every reachable host were found after the start");
	net_prom_w_sample(w, NULL, 0, cl_engine_ready(e));

	net_prom_w_family(w, "vmact_cluster_group_target", NET_PROM_GAUGE,
			  "Target size of each node group: its members not being deleted");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "group", v.cfg->id } }, 1,
				  v.target);
	}

	net_prom_w_family(w, "vmact_cluster_group_members", NET_PROM_GAUGE,
			  "Members of each node group by the state of their VM");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;
		struct members m = { .w = w };

		cl_engine_group_at(e, i, &v);
		cl_engine_each_vm(e, v.cfg->id, count_member, &m);
		for (int s = 0; s < CL_N_STATES; s++) {
			if (s == CL_ST_READY)
				continue;
			net_prom_w_sample(w,
					  (struct net_prom_wlabel[]){
						  { "group", v.cfg->id },
						  { "state", cl_domxml_state_name(s) } },
					  2, m.by_state[s]);
		}
	}

	net_prom_w_family(w, "vmact_cluster_pool_size", NET_PROM_GAUGE,
			  "Configured size of each standby pool tier");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		for (int t = 0; t < 3; t++)
			net_prom_w_sample(w,
					  (struct net_prom_wlabel[]){
						  { "group", v.cfg->id },
						  { "tier", cl_domxml_tier_name(t) } },
					  2, v.tiers[t].size);
	}
	net_prom_w_family(w, "vmact_cluster_pool_vms", NET_PROM_GAUGE,
			  "Standby VMs of each tier: ready (healthy, in the tier) or starting");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		for (int t = 0; t < 3; t++) {
			net_prom_w_sample(w,
					  (struct net_prom_wlabel[]){
						  { "group", v.cfg->id },
						  { "tier", cl_domxml_tier_name(t) },
						  { "state", "ready" } },
					  3, v.tiers[t].ready);
			net_prom_w_sample(w,
					  (struct net_prom_wlabel[]){
						  { "group", v.cfg->id },
						  { "tier", cl_domxml_tier_name(t) },
						  { "state", "starting" } },
					  3, v.tiers[t].starting);
		}
	}

	net_prom_w_family(w, "vmact_cluster_provision_seconds", NET_PROM_HISTOGRAM,
			  "From an increase to its VM in service, by the tier it came from (cold: "
			  "booted for it)");
	for (size_t i = 0; i < ng; i++) {
		const struct cl_engine_group_counters *c = cl_engine_group_counters(e, i);
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		for (int t = 0; t < CL_N_TIERS; t++)
			net_prom_w_histogram(w,
					     (struct net_prom_wlabel[]){
						     { "group", v.cfg->id },
						     { "tier", cl_domxml_tier_name(t) } },
					     2, cl_engine_hist_bounds, c->hist[t],
					     CL_ENGINE_HIST_BUCKETS,
					     c->hist[t][CL_ENGINE_HIST_BUCKETS], c->hist_sum[t]);
	}

	net_prom_w_family(w, "vmact_cluster_boots_total", NET_PROM_COUNTER,
			  "VMs defined and started (members and standby)");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "group", v.cfg->id } }, 1,
				  (double)cl_engine_group_counters(e, i)->boots);
	}
	net_prom_w_family(w, "vmact_cluster_returned_total", NET_PROM_COUNTER,
			  "Members deleted before they were ever in service, given back to the pool "
			  "(ReturnNode unused)");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "group", v.cfg->id } }, 1,
				  (double)cl_engine_group_counters(e, i)->returned);
	}
	net_prom_w_family(w, "vmact_cluster_failures_total", NET_PROM_COUNTER,
			  "VMs that failed, by reason (each destroyed and replaced)");
	for (size_t i = 0; i < ng; i++) {
		struct cl_engine_group_view v;

		cl_engine_group_at(e, i, &v);
		for (int f = 0; f < CL_N_FAILURES; f++)
			net_prom_w_sample(w,
					  (struct net_prom_wlabel[]){
						  { "group", v.cfg->id },
						  { "reason", cl_engine_failure_name(f) } },
					  2, (double)cl_engine_group_counters(e, i)->failures[f]);
	}

	net_prom_w_family(
		w, "vmact_cluster_reservations_total", NET_PROM_COUNTER,
		"Reserve at each host's arbiter by result (granted, refused: no room, error)");
	for (size_t i = 0; i < nh; i++) {
		const struct cl_engine_host_counters *c = cl_engine_host_counters(e, i);
		struct cl_engine_host_view v;

		cl_engine_host_at(e, i, &v);
		net_prom_w_sample(w,
				  (struct net_prom_wlabel[]){ { "host", v.name },
							      { "result", "granted" } },
				  2, (double)c->granted);
		net_prom_w_sample(w,
				  (struct net_prom_wlabel[]){ { "host", v.name },
							      { "result", "refused" } },
				  2, (double)c->refused);
		net_prom_w_sample(w,
				  (struct net_prom_wlabel[]){ { "host", v.name },
							      { "result", "error" } },
				  2, (double)c->errors);
	}
	net_prom_w_family(w, "vmact_cluster_leases", NET_PROM_GAUGE,
			  "VMs of ours holding a lease at each host's arbiter");
	for (size_t i = 0; i < nh; i++) {
		struct cl_engine_host_view v;

		cl_engine_host_at(e, i, &v);
		net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "host", v.name } }, 1, v.leases);
	}
	net_prom_w_family(w, "vmact_cluster_host_reachable", NET_PROM_GAUGE,
			  "1 when the host's libvirt and arbiter answered last time");
	for (size_t i = 0; i < nh; i++) {
		struct cl_engine_host_view v;

		cl_engine_host_at(e, i, &v);
		net_prom_w_sample(w, (struct net_prom_wlabel[]){ { "host", v.name } }, 1,
				  v.st.libvirt_ok && v.st.arbiter_ok);
	}
	{
		const struct cl_engine_move_counters *c = cl_engine_move_counters(e);

		net_prom_w_family(w, "vmact_migrations_total", NET_PROM_COUNTER,
				  "Live migrations of running VMs between hosts, by reason and "
				  "result");
		for (int k = 0; k < CL_N_MOVE_REASONS; k++)
			for (int r = 0; r < CL_N_MOVE_RESULTS; r++)
				net_prom_w_sample(
					w,
					(struct net_prom_wlabel[]){
						{ "reason", cl_engine_move_reason_name(k) },
						{ "result", cl_engine_move_result_name(r) } },
					2, (double)c->total[k][r]);
		net_prom_w_family(w, "vmact_migration_duration_seconds", NET_PROM_HISTOGRAM,
				  "From the decision to move a VM to it running on the target "
				  "(moves that succeeded)");
		for (int k = 0; k < CL_N_MOVE_REASONS; k++)
			net_prom_w_histogram(w,
					     (struct net_prom_wlabel[]){
						     { "reason", cl_engine_move_reason_name(k) } },
					     1, cl_engine_hist_bounds, c->hist[k],
					     CL_ENGINE_HIST_BUCKETS,
					     c->hist[k][CL_ENGINE_HIST_BUCKETS], c->hist_sum[k]);
		net_prom_w_family(w, "vmact_migration_downtime_seconds", NET_PROM_HISTOGRAM,
				  "How long a moved VM was paused, as libvirt measured it");
		net_prom_w_histogram(w, NULL, 0, cl_engine_downtime_bounds, c->downtime,
				     CL_ENGINE_DOWNTIME_BUCKETS,
				     c->downtime[CL_ENGINE_DOWNTIME_BUCKETS], c->downtime_sum);
	}
	cl_engine_each_waiting(e, count_waiting, &waiting);
	net_prom_w_family(w, "vmact_cluster_waiting_vms", NET_PROM_GAUGE,
			  "VMs waiting for Permit (listed by GET /v1/waiting)");
	net_prom_w_sample(w, NULL, 0, waiting);
}

int cl_metrics_page(void *engine, struct net_prom_writer *w)
{
	cl_metrics_write(engine, w);
	return 0;
}
