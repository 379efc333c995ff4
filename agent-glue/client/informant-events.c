/* SPDX-License-Identifier: Apache-2.0 */
/* What the informant agent tells its owner (struct ag_inf_agent_events):
 * its notices and the current server's mode changes; and the modes'
 * names. Every file of the agent reports through these
 * (informant-priv.h). */
#define AG_INF_PRIV_ALLOW
#include "agent-glue/client/informant-priv.h"

const char *ag_inf_mode_name(enum ag_inf_mode m)
{
	switch (m) {
	case AG_INF_NONE:
		return "none";
	case AG_INF_UNCONFIRMED:
		return "unconfirmed";
	case AG_INF_SUSPENDED:
		return "suspended";
	case AG_INF_RUNNING:
		return "running";
	}
	return "?";
}

void ag_inf_notice(struct ag_inf_agent *a, const struct vmact_err *err)
{
	if (a->events.notice)
		a->events.notice(a->ud, err);
}

void ag_inf_set_mode(struct ag_inf_agent *a, struct ag_inf_server *srv, enum ag_inf_mode m)
{
	if (srv->mode == m)
		return;
	srv->mode = m;
	if (a->events.mode_changed && a->srv == srv)
		a->events.mode_changed(a->ud, m, srv->desc.agent_id);
}
