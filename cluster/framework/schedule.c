/* SPDX-License-Identifier: Apache-2.0 */
/* The extension points run: the queue's order (QueueSort), a scheduling
 * cycle (PreFilter to Permit) and a binding cycle (PreBind to PostBind),
 * with Unreserve where they fail (framework.h). */
#define CL_FW_PRIV_ALLOW
#include "cluster/framework/framework-priv.h"

#include <stdio.h>
#include <string.h>

static void status_start(struct cl_fw_status *st, const char *plugin)
{
	st->code = CL_FW_SUCCESS;
	snprintf(st->plugin, sizeof(st->plugin), "%s", plugin);
	st->msg[0] = 0;
}

void cl_fw_queue_sort(struct cl_fw *fw, struct cl_fw_queued *q, size_t n)
{
	struct slot *s;

	if (!fw->n_points[CL_FW_QUEUE_SORT])
		return;
	s = &fw->points[CL_FW_QUEUE_SORT][0];
	/* Insertion sort: stable, and the queue is short. */
	for (size_t i = 1; i < n; i++) {
		struct cl_fw_queued x = q[i];
		size_t j = i;

		while (j > 0 && s->inst->ops->less(s->inst->state, &x, &q[j - 1])) {
			q[j] = q[j - 1];
			j--;
		}
		q[j] = x;
	}
}

/* ---- the scheduling cycle ---- */

void cl_fw_unreserve(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		     const char *host)
{
	/* All of them, not only those that reserved: the Kubernetes framework's
	 * RunUnreservePlugins runs "the set of configured unreserve
	 * plugins". */
	for (size_t i = fw->n_points[CL_FW_RESERVE]; i-- > 0;) {
		struct slot *s = &fw->points[CL_FW_RESERVE][i];

		if (s->inst->ops->unreserve)
			s->inst->ops->unreserve(s->inst->state, cs, vm, host);
	}
}

/* Runs the filter plugins on one host; Success when all passed. */
static void run_filters(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const struct cl_fw_host *host, struct cl_fw_status *st)
{
	status_start(st, "");
	for (size_t i = 0; i < fw->n_points[CL_FW_FILTER]; i++) {
		struct slot *s = &fw->points[CL_FW_FILTER][i];

		status_start(st, s->inst->ops->name);
		s->inst->ops->filter(s->inst->state, cs, vm, host, st);
		if (st->code != CL_FW_SUCCESS)
			return;
	}
	status_start(st, "");
}

static void post_filter(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const struct cl_fw_host *hosts, size_t n, struct cl_fw_result *res)
{
	struct cl_fw_status statuses[CL_FW_MAX_HOSTS];

	for (size_t i = 0; i < n; i++)
		statuses[i] = res->hosts[i].filter;
	for (size_t i = 0; i < fw->n_points[CL_FW_POST_FILTER]; i++) {
		struct slot *s = &fw->points[CL_FW_POST_FILTER][i];
		struct cl_fw_status st;
		char nominated[CL_FW_NAME_MAX] = "";

		status_start(&st, s->inst->ops->name);
		s->inst->ops->post_filter(s->inst->state, cs, vm, hosts, n, statuses, nominated,
					  &st);
		if (st.code == CL_FW_SUCCESS && nominated[0]) {
			snprintf(res->nominated, sizeof(res->nominated), "%s", nominated);
			snprintf(res->status.msg + strlen(res->status.msg),
				 sizeof(res->status.msg) - strlen(res->status.msg), "; %s: %s",
				 s->inst->ops->name, st.msg);
			return;
		}
		if (st.code == CL_FW_ERROR) {
			res->status = st;
			return;
		}
	}
}

/* Every score plugin over the feasible hosts, normalised and weighted;
 * the index of the chosen host, or -1 with res->status set. */
static int score_hosts(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		       const struct cl_fw_host *hosts, const size_t *feasible, size_t nf,
		       struct cl_fw_result *res)
{
	int64_t total[CL_FW_MAX_HOSTS] = { 0 };
	int best = -1;

	for (size_t p = 0; p < fw->n_points[CL_FW_SCORE]; p++) {
		struct slot *s = &fw->points[CL_FW_SCORE][p];
		int64_t scores[CL_FW_MAX_HOSTS];
		struct cl_fw_status st;

		for (size_t k = 0; k < nf; k++) {
			status_start(&st, s->inst->ops->name);
			scores[k] = 0;
			s->inst->ops->score(s->inst->state, cs, vm, &hosts[feasible[k]], &scores[k],
					    &st);
			if (st.code != CL_FW_SUCCESS) {
				/* Score must succeed: a failure is the cycle's error. */
				res->status = st;
				res->status.code = CL_FW_ERROR;
				return -1;
			}
		}
		if (s->inst->ops->normalize) {
			status_start(&st, s->inst->ops->name);
			s->inst->ops->normalize(s->inst->state, cs, vm, scores, nf, &st);
			if (st.code != CL_FW_SUCCESS) {
				res->status = st;
				res->status.code = CL_FW_ERROR;
				return -1;
			}
		}
		for (size_t k = 0; k < nf; k++) {
			if (scores[k] < CL_FW_MIN_SCORE || scores[k] > CL_FW_MAX_SCORE) {
				res->status.code = CL_FW_ERROR;
				snprintf(res->status.plugin, sizeof(res->status.plugin), "%s",
					 s->inst->ops->name);
				snprintf(res->status.msg, sizeof(res->status.msg),
					 "score %lld for host %s outside [%d, %d] after normalizing",
					 (long long)scores[k], hosts[feasible[k]].name,
					 CL_FW_MIN_SCORE, CL_FW_MAX_SCORE);
				return -1;
			}
			total[k] += scores[k] * s->weight;
		}
	}
	for (size_t k = 0; k < nf; k++) {
		res->hosts[feasible[k]].score = total[k];
		if (best < 0 || total[k] > total[best])
			best = (int)k;
	}
	if (best >= 0) {
		/* One of the best at random (reservoir sampling over the ties). */
		size_t ties = 0;

		for (size_t k = 0; k < nf; k++)
			if (total[k] == total[best] && cl_fw_random(fw) % ++ties == 0)
				best = (int)k;
	}
	return best < 0 ? -1 : (int)feasible[best];
}

void cl_fw_schedule(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		    const struct cl_fw_host *hosts, size_t n, struct cl_fw_result *res)
{
	size_t feasible[CL_FW_MAX_HOSTS], nf = 0, nres;
	const struct cl_fw_host *host;
	int chosen;

	memset(res, 0, sizeof(*res));
	status_start(&res->status, "");
	if (n > CL_FW_MAX_HOSTS)
		n = CL_FW_MAX_HOSTS;
	res->n_hosts = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(res->hosts[i].name, sizeof(res->hosts[i].name), "%s", hosts[i].name);
		status_start(&res->hosts[i].filter, "");
	}

	for (size_t i = 0; i < fw->n_points[CL_FW_PRE_FILTER]; i++) {
		struct slot *s = &fw->points[CL_FW_PRE_FILTER][i];

		status_start(&res->status, s->inst->ops->name);
		s->inst->ops->pre_filter(s->inst->state, cs, vm, &res->status);
		if (res->status.code != CL_FW_SUCCESS)
			return;
	}

	for (size_t i = 0; i < n; i++) {
		run_filters(fw, cs, vm, &hosts[i], &res->hosts[i].filter);
		if (res->hosts[i].filter.code == CL_FW_SUCCESS)
			feasible[nf++] = i;
		else if (res->hosts[i].filter.code == CL_FW_ERROR) {
			res->status = res->hosts[i].filter;
			return;
		}
	}
	res->feasible = nf;
	if (!nf) {
		bool resolvable = false;
		size_t off = 0;

		/* Unschedulable when PostFilter could change anything on some
		 * host, UnschedulableAndUnresolvable when no host could. */
		for (size_t i = 0; i < n; i++)
			resolvable |= res->hosts[i].filter.code == CL_FW_UNSCHEDULABLE;
		res->status.code = resolvable ? CL_FW_UNSCHEDULABLE : CL_FW_UNRESOLVABLE;
		res->status.plugin[0] = 0;
		off = (size_t)snprintf(res->status.msg, sizeof(res->status.msg), "0/%zu hosts fit",
				       n);
		for (size_t i = 0; i < n && off < sizeof(res->status.msg); i++)
			off += (size_t)snprintf(res->status.msg + off,
						sizeof(res->status.msg) - off, "%s %s: %s",
						i ? ";" : ":", hosts[i].name,
						res->hosts[i].filter.msg);
		if (resolvable)
			post_filter(fw, cs, vm, hosts, n, res);
		return;
	}

	chosen = score_hosts(fw, cs, vm, hosts, feasible, nf, res);
	if (chosen < 0)
		return;
	host = &hosts[chosen];
	snprintf(res->host, sizeof(res->host), "%s", host->name);

	for (nres = 0; nres < fw->n_points[CL_FW_RESERVE]; nres++) {
		struct slot *s = &fw->points[CL_FW_RESERVE][nres];

		status_start(&res->status, s->inst->ops->name);
		s->inst->ops->reserve(s->inst->state, cs, vm, host, &res->status);
		if (res->status.code != CL_FW_SUCCESS) {
			/* Every Reserve plugin's Unreserve, those that did not
			 * reserve too (framework.h). */
			cl_fw_unreserve(fw, cs, vm, host->name);
			if (res->status.code == CL_FW_SUCCESS)
				res->status.code = CL_FW_ERROR;
			return;
		}
	}

	status_start(&res->status, "");
	for (size_t i = 0; i < fw->n_points[CL_FW_PERMIT]; i++) {
		struct slot *s = &fw->points[CL_FW_PERMIT][i];
		struct cl_fw_status st;
		uint64_t timeout = 0;

		status_start(&st, s->inst->ops->name);
		s->inst->ops->permit(s->inst->state, cs, vm, host->name, &timeout, &st);
		if (st.code == CL_FW_WAIT) {
			if (!res->n_waiting || timeout < res->wait_usec)
				res->wait_usec = timeout;
			snprintf(res->waiting[res->n_waiting++], CL_FW_NAME_MAX, "%s",
				 s->inst->ops->name);
			if (res->status.code != CL_FW_WAIT)
				res->status = st;
		} else if (st.code != CL_FW_SUCCESS) {
			/* Denied: "rejected" for the framework, whatever the code. */
			res->status = st;
			if (res->status.code == CL_FW_SKIP)
				res->status.code = CL_FW_UNSCHEDULABLE;
			res->n_waiting = 0;
			cl_fw_unreserve(fw, cs, vm, host->name);
			return;
		}
	}
}

void cl_fw_bind(struct cl_fw *fw, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		const char *host, struct cl_fw_status *st)
{
	for (size_t i = 0; i < fw->n_points[CL_FW_PRE_BIND]; i++) {
		struct slot *s = &fw->points[CL_FW_PRE_BIND][i];

		status_start(st, s->inst->ops->name);
		s->inst->ops->pre_bind(s->inst->state, cs, vm, host, st);
		if (st->code != CL_FW_SUCCESS) {
			/* Skip and Wait mean nothing here: a failure. */
			if (st->code == CL_FW_SKIP || st->code == CL_FW_WAIT)
				st->code = CL_FW_ERROR;
			return;
		}
	}
	for (size_t i = 0; i < fw->n_points[CL_FW_BIND]; i++) {
		struct slot *s = &fw->points[CL_FW_BIND][i];

		status_start(st, s->inst->ops->name);
		s->inst->ops->bind(s->inst->state, cs, vm, host, st);
		if (st->code == CL_FW_SKIP)
			continue;
		if (st->code != CL_FW_SUCCESS)
			return;
		for (size_t k = 0; k < fw->n_points[CL_FW_POST_BIND]; k++) {
			struct slot *pb = &fw->points[CL_FW_POST_BIND][k];

			pb->inst->ops->post_bind(pb->inst->state, cs, vm, host);
		}
		return;
	}
	status_start(st, "");
	cl_fw_status_set(st, CL_FW_ERROR, "no bind plugin handled %s", vm->name);
}
