/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's Prometheus endpoint (server.h). */
#include "actuator/metrics/server.h"

#include <errno.h>
#include <stdlib.h>

#include "base/macro.h"
#include "net/prom-serve.h"

struct act_metrics_server {
	const struct act_metrics *m;
	struct act_metrics_source src;
	struct net_prom_server *prom;
};

static int write_page(void *ud, struct net_prom_writer *w)
{
	struct act_metrics_server *s = ud;
	_cleanup_free_ struct act_vm_metrics *vms = NULL;
	struct act_arbiter_metrics arb;
	struct act_metrics m = *s->m;
	size_t n = 0;
	bool has_arb;
	int r;

	r = s->src.collect(s->src.ud, &vms, &n);
	if (r < 0)
		return r;
	has_arb = s->src.arbiter && s->src.arbiter(s->src.ud, &arb);
	if (s->src.worker_restarts)
		m.worker_restarts = s->src.worker_restarts(s->src.ud);
	act_metrics_write(&m, n, has_arb ? &arb : NULL, vms, n, w);
	return 0;
}

int act_metrics_server_new(sd_event *ev, const char *listen, const struct act_metrics *m,
			   const struct act_metrics_source *src, struct act_metrics_server **out,
			   struct vmact_err *err)
{
	struct act_metrics_server *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	s->m = m;
	s->src = *src;
	ret = net_prom_server_new(ev, listen, write_page, s, &s->prom, err);
	if (ret < 0) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void act_metrics_server_free(struct act_metrics_server *s)
{
	if (!s)
		return;
	net_prom_server_free(s->prom);
	free(s);
}

unsigned act_metrics_server_port(const struct act_metrics_server *s)
{
	return net_prom_server_port(s->prom);
}
