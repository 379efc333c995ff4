/* SPDX-License-Identifier: Apache-2.0 */
/* A VM's legacy informant as vmactd holds it: the approver of the
 * informant's agent (guestd/approver.h), run in the VM's own guest
 * worker (through its proxy: vmactd never speaks to the informant itself,
 * doc/privsep.md), wrapped so that freeing it lets the agent unregister first
 * (DELETE /unregister), as Neon's agent does when it lets a VM go. The
 * agents still unregistering wait on the env's draining list, bounded by
 * the register timeout; the registry's shutdown waits for that list. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "actuator/runner/runner.h"
#include "actuator/worker/approver-proxy.h"
#include "actuator/worker/worker.h"
#include "agent-glue/client/informant-client.h"
#include "base/list.h"
#include "guestd/approver.h"

struct act_inf_drain {
	struct act_approver head;
	struct act_approver *inner; /* the worker's proxy */
	struct act_runner_env *env;
	VMACT_LIST_FIELDS(struct act_inf_drain, draining); /* in env->inf_draining */
};

static int request(struct act_approver *a, bool up, const struct vmact_resources *target,
		   act_approval_fn *done, void *userdata, struct vmact_err *err)
{
	struct act_inf_drain *d = (struct act_inf_drain *)a;

	return d->inner->ops->request(d->inner, up, target, done, userdata, err);
}

static bool may_resize(const struct act_approver *a)
{
	return act_approver_may_resize(((const struct act_inf_drain *)a)->inner);
}

static bool approves(const struct act_approver *a)
{
	return act_approver_approves(((const struct act_inf_drain *)a)->inner);
}

static void drained(void *ud)
{
	struct act_inf_drain *d = ud;
	struct act_runner_env *env = d->env;

	VMACT_LIST_REMOVE(draining, env->inf_draining, d);
	act_approver_free(d->inner);
	free(d);
	if (!env->inf_draining && env->inf_drained)
		env->inf_drained(env->inf_drained_ud);
}

/* The owner goes: the agent unregisters on its own, from the env. A
 * pending request completes now through its own callback, while the owner
 * is still there. */
static void drain_free(struct act_approver *a)
{
	struct act_inf_drain *d = (struct act_inf_drain *)a;
	int ret;

	VMACT_LIST_PREPEND(draining, d->env->inf_draining, d);
	/* The worker unregisters within the register timeout; a second more
	 * for its loop and vmactd's DIAL, then it is killed. */
	ret = act_approver_proxy_stop(d->inner, AG_INF_DEFAULT_REGISTER_TIMEOUT_USEC + 1000000ULL,
				      drained, d);
	if (ret < 0)
		drained(d);
}

static const struct act_approver_ops drain_ops = {
	.name = "informant",
	.request = request,
	.may_resize = may_resize,
	.approves = approves,
	.free = drain_free,
};

int act_runner_informant_new(struct act_runner_env *env, const char *name, const char *endpoint,
			     const struct act_approver_events *events, void *userdata,
			     struct act_approver **out, struct vmact_err *err)
{
	const struct act_config *cfg = env->cfg;
	const char *p = cfg->guest_worker_program;
	char prog[PATH_MAX];
	struct act_inf_drain *d;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return vmact_err_set(err, ENOMEM, "out of memory");
	d->head.ops = &drain_ops;
	d->env = env;
	ret = 0;
	if (!p[0]) {
		ret = act_worker_default_program(prog, sizeof(prog), err);
		if (ret < 0)
			vmact_err_prefix(err, "guest worker");
		p = prog;
	}
	if (ret == 0)
		ret = act_approver_proxy_new_informant(env->event, name, endpoint,
						       cfg->informant_listen,
						       cfg->informant_advertise_host, p,
						       cfg->guest_worker_user, events, userdata,
						       &d->inner, err);
	if (ret < 0) {
		free(d);
		return ret;
	}
	*out = &d->head;
	return 0;
}

void act_runner_informant_drain_free(struct act_runner_env *env)
{
	while (env->inf_draining) {
		struct act_inf_drain *d = env->inf_draining;

		VMACT_LIST_REMOVE(draining, env->inf_draining, d);
		act_approver_free(d->inner);
		free(d);
	}
}
