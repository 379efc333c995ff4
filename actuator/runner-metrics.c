/* SPDX-License-Identifier: Apache-2.0 */
/* The runner's readings: every metrics interval, the VM's load from the
 * sampler (bpf/) and its memory from libvirt's guest statistics, fed to
 * the core as system metrics. */
#include <string.h>
#include <time.h>

#include "actuator/runner-internal.h"
#include "base/log.h"
#include "bpf/sampler.h"
#include "hotplug/domain.h"

#define MiB (1024ULL * 1024ULL)
/* MemoryUsageBytes = total - available + 100 MiB, as the Neon agent. */
#define MEM_USAGE_PAD (100ULL * MiB)

static int on_metrics(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_runner *r = ud;
	struct act_system_metrics m = { 0 };
	struct smp_reading rd;
	struct hp_mem_stats ms;
	struct vmact_err err = { 0 };

	sd_event_source_set_time(s, usec + r->env->metrics_interval_usec);
	if (!r->sampler_registered ||
	    smp_read(r->env->sampler, r->uuid, &rd, &err) < 0) {
		if (!r->load_error_logged && r->sampler_registered)
			log_warning("%s: cannot read the VM's load: %s", r->name, err.msg);
		r->load_error_logged = true;
		return 0;
	}
	m.load1 = rd.loadavg[0];
	m.load5 = rd.loadavg[1];
	vmact_err_reset(&err);
	if (hp_mem_stats_read(r->env->hp, r->uuid, &ms, &err) == 0 &&
	    ms.total_kib >= ms.available_kib) {
		m.memory_usage_bytes = (double)(ms.total_kib - ms.available_kib) * 1024.0 +
				       (double)MEM_USAGE_PAD;
		m.memory_cached_bytes = ms.has_caches ? (double)ms.caches_kib * 1024.0 : 0.0;
		if (r->mem_absent_logged)
			log_info("%s: guest memory statistics available again", r->name);
		r->mem_absent_logged = false;
	} else {
		m.memory_absent = true;
		if (!r->mem_absent_logged)
			log_warning("%s: no guest memory statistics (%s): memory does not drive "
				    "scaling and the VM is never scaled down",
				    r->name, err.msg[0] ? err.msg : "implausible figures");
		r->mem_absent_logged = true;
	}
	vmact_err_reset(&err);
	if (act_state_update_system_metrics(&r->st, &m, &err) < 0) {
		log_warning("%s: %s", r->name, err.msg);
		return 0;
	}
	log_debug("%s: load1 %.2f load5 %.2f memory %s", r->name, m.load1, m.load5,
		  m.memory_absent ? "unknown" : "known");
	act_runner_evaluate(r);
	return 0;
}

int act_runner_metrics_start(struct act_runner *r, struct vmact_err *err)
{
	int ret;

	ret = sd_event_add_time_relative(r->env->event, &r->metrics, CLOCK_MONOTONIC,
					 r->env->metrics_interval_usec, 10000, on_metrics, r);
	if (ret >= 0)
		ret = sd_event_source_set_enabled(r->metrics, SD_EVENT_ON);
	if (ret < 0)
		return vmact_err_set(err, -ret, "cannot add the metrics timer: %s", strerror(-ret));
	return 0;
}
