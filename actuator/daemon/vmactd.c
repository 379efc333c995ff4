/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd: the vmact daemon. One sd-event loop drives everything; every
 * component hands its sources to that loop, so the daemon never blocks and
 * never needs locks around its VM registry. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "actuator/config/config.h"
#include "actuator/control/control.h"
#include "actuator/control/events.h"
#include "actuator/daemon/enroll.h"
#include "actuator/daemon/hook-listener.h"
#include "actuator/daemon/registry.h"
#include "actuator/metrics/server.h"
#include "actuator/worker/worker.h"
#include "agent-glue/arbiter/arbiter.h"
#include "agent-glue/client/plugin-client.h"
#include "base/endpoint.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/sched.h"
#include "base/time.h"
#include "bpf/sampler.h"
#include "shared/keyfile.h"
#include "shared/startup.h"

static const char usage[] =
	"Usage: vmactd [OPTION]...\n"
	"Vertically autoscale the running QEMU VMs of this host.\n\n"
	"  -c, --config FILE   configuration file (default " ACT_CONFIG_DEFAULT_PATH ")\n"
	"      --check-config  validate the configuration and exit\n"
	"  -v, --verbose       log debug messages\n"
	"  -h, --help          show this help and exit\n"
	"      --version       show the version and exit\n";

/* The command line's values, as on_option reads them. */
struct args {
	const char *config_path;
	bool explicit_config, check_only, verbose;
};

static int on_option(void *ud, int c, char *arg)
{
	struct args *o = ud;

	switch (c) {
	case 'c':
		o->config_path = arg;
		o->explicit_config = true;
		return 0;
	case 'C':
		o->check_only = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return 2;
}

/* The registry, once there is one: the arbiter starts before it. */
static struct act_registry **arbiter_registry;
/* The arbiter's reservations after its last lease event. */
static struct vmact_resources arbiter_reserved;

/* A lease released, lapsed or shrunk (a VM moved away, a reservation the
 * cluster layer gave back) frees room: the growth the arbiter refused is
 * asked for again now, not after the denial's backoff (doc/policy.md). */
static void after_lease(const struct ag_arbiter *a)
{
	struct ag_arbiter_totals t;
	bool freed;

	ag_arbiter_totals(a, &t);
	freed = t.reserved.milli_cpu < arbiter_reserved.milli_cpu ||
		t.reserved.mem_bytes < arbiter_reserved.mem_bytes;
	arbiter_reserved = t.reserved;
	if (freed && arbiter_registry && *arbiter_registry)
		act_registry_room_freed(*arbiter_registry);
}

static void on_arbiter_event(void *userdata, const struct ag_arbiter_event *ev)
{
	char want[64], got[64];

	if (ev->lease && ev->status == 200)
		after_lease(userdata);
	if (ev->status != 200) {
		/* The cluster layer polls an entry until it exists, or asks
		 * after one that went: nothing an operator must hear of. */
		vmact_log(ev->lease && ev->status == 404 ? LOG_DEBUG : LOG_WARNING,
			  "arbiter: answered %u \"%s\"%s%s", ev->status, ev->text,
			  ev->pod_name ? " to pod " : "", ev->pod_name ? ev->pod_name : "");
		return;
	}
	/* The cluster layer is moving the VM away (or gave it up): its
	 * runner freezes or thaws at once (registry.h). */
	if (ev->lease && ev->moving_changed && ev->pod_name) {
		if (arbiter_registry && *arbiter_registry)
			act_registry_pod_moving(*arbiter_registry, ev->pod_namespace, ev->pod_name,
						ev->moving);
		return;
	}
	if (ev->lease)
		return;
	if (!ev->pressure.milli_cpu && !ev->pressure.mem_bytes && !ev->candidate && !ev->new_pod)
		return;
	vmact_quantity_format_milli(ev->requested.milli_cpu, want, 32);
	vmact_quantity_format_bytes(ev->requested.mem_bytes, want + 32, 32);
	vmact_quantity_format_milli(ev->permit.milli_cpu, got, 32);
	vmact_quantity_format_bytes(ev->permit.mem_bytes, got + 32, 32);
	log_info("arbiter: %s/%s%s asked %s CPU / %s, permitted %s CPU / %s%s", ev->pod_namespace,
		 ev->pod_name, ev->new_pod ? " (new)" : "", want, want + 32, got, got + 32,
		 ev->candidate ? ", above the watermark: a migration candidate" : "");
}

/* The node-local arbiter answers this host's agents when no Kubernetes
 * scheduler plugin is in charge: vmactd's own runners in-process (no
 * socket another local user could fill), other Neon agents over HTTP
 * only where arbiter.listen says (opt-in). */
static int start_arbiter(const struct act_config *cfg, sd_event *loop, struct ag_arbiter **out,
			 struct vmact_err *err)
{
	struct ag_arbiter_config acfg = {
		.reserve = { cfg->arbiter_reserve_milli_cpu, cfg->arbiter_reserve_mem_bytes },
		.overcommit_cpu_milli = (uint32_t)llround(cfg->arbiter_overcommit_cpu * 1000),
		.overcommit_mem_milli = (uint32_t)llround(cfg->arbiter_overcommit_mem * 1000),
		.watermark = cfg->arbiter_watermark,
		/* The runners freeze the VMs being moved, and say when. */
		.owner_freezes = true,
	};
	struct ag_arbiter_totals t;
	struct ag_arbiter *a = NULL;
	_cleanup_free_ uint8_t *key = NULL;
	char c[32], m[32];
	int r;

	r = ag_host_capacity(&acfg.capacity, err);
	if (r >= 0 && cfg->arbiter_lease_key[0]) {
		r = vmact_keyfile_load(cfg->arbiter_lease_key, &key, &acfg.lease_key_len, err);
		acfg.lease_key = key;
		if (r < 0)
			vmact_err_prefix(err, "arbiter.lease_key");
	}
	if (r >= 0)
		r = ag_arbiter_new(&acfg, &a, err);
	if (r < 0)
		return r;
	ag_arbiter_on_event(a, on_arbiter_event, a);
	r = ag_arbiter_attach(a, loop, err);
	if (r >= 0 && cfg->arbiter_listen[0])
		r = ag_arbiter_listen(a, loop, cfg->arbiter_listen, err);
	if (r < 0) {
		ag_arbiter_free(a);
		return r;
	}
	ag_arbiter_totals(a, &t);
	vmact_quantity_format_milli(t.total.milli_cpu, c, sizeof(c));
	vmact_quantity_format_bytes(t.total.mem_bytes, m, sizeof(m));
	if (cfg->arbiter_listen[0])
		log_info(
			"arbiter: in-process, and listening on %s (port %u), capacity %s CPU / %s%s",
			cfg->arbiter_listen, ag_arbiter_port(a), c, m,
			key ? "; leases for the cluster layer (arbiter.lease_key)" : "");
	else
		log_info("arbiter: in-process, capacity %s CPU / %s", c, m);
	*out = a;
	return 0;
}

/* The watch's windows are read on this thread, the loop's (doc/policy.md,
 * "Saturation found in the kernel"). It waits in SCHED_FIFO at
 * policy.events_priority and stays there while it decides on the windows,
 * so that the ring buffer's wake-up runs it at once, ahead of the busy
 * VMs' vCPU threads; all else it does (libvirt, the control API, the
 * arbiter, guests' messages through the workers) runs in SCHED_OTHER, where
 * a burst of work cannot take a CPU from the guests (run_loop()). Measured
 * with 1000 VMs, a tenth busy, on two CPUs: the decision's p99 0.1 ms, where
 * it was 2.4-9 ms in SCHED_OTHER with a 0.1 ms slice and 4.5-15 ms with the
 * default one. In SCHED_OTHER the loop has the shortest slice, 0.1 ms,
 * which wakes it before threads with the default slice (Linux 6.12); its
 * share of the CPUs is what it was either way. */
#define LOOP_SLICE_USEC VMACT_SLICE_MIN_USEC
static bool loop_sched_setup(const struct act_config *cfg, struct vmact_sched *ls)
{
	int r = -EPERM;
	int64_t got;

	if (cfg->policy_events_priority) {
		r = vmact_sched_init(ls, cfg->policy_events_priority, LOOP_SLICE_USEC);
		if (r == 0) {
			log_info("sampler: the loop waits for the watch's windows in SCHED_FIFO at "
				 "priority %u and does everything else in SCHED_OTHER",
				 cfg->policy_events_priority);
			return true;
		}
		if (r == -EPERM)
			log_info(
				"sampler: the loop waits in SCHED_OTHER (the real-time class is not "
				"allowed: no CAP_SYS_NICE and RLIMIT_RTPRIO below %u, a system-call "
				"filter, or a CPU cgroup without real-time time): a window is "
				"decided on once the CPU it wakes on is free",
				cfg->policy_events_priority);
		else
			log_info("sampler: the loop waits in SCHED_OTHER (SCHED_FIFO: %s): a window "
				 "is decided on once the CPU it wakes on is free",
				 strerror(-r));
	}
	r = vmact_slice_set(LOOP_SLICE_USEC);
	got = vmact_slice_get();
	if (r < 0 || got != LOOP_SLICE_USEC)
		log_info("sampler: the loop keeps the kernel's scheduler slice (%s): a window is "
			 "decided on once the busy VMs' threads yield the CPU",
			 r < 0 ? strerror(-r) : "custom slices need Linux 6.12");
	else
		log_debug("sampler: the loop's scheduler slice is %u us", LOOP_SLICE_USEC);
	return false;
}

/* sd_event_loop(), with the loop in SCHED_FIFO only while it waits and
 * while it dispatches the watch's windows (loop_sched_setup()). sd-event
 * dispatches one source per call, the most important pending first, and
 * the watch's source is the most important there is (bpf/sampler.c): so
 * the class is chosen before each dispatch by whether that source is
 * pending. A failed switch leaves the loop in SCHED_OTHER for good. */
static int run_loop(sd_event *e, const struct smp_sampler *sampler, struct vmact_sched *ls, bool rt)
{
	int r, code = 0;

	while (sd_event_get_state(e) != SD_EVENT_FINISHED) {
		r = sd_event_prepare(e);
		if (r == 0) {
			if (rt && (r = vmact_sched_wait(ls)) < 0) {
				log_warning("sampler: the loop stays in SCHED_OTHER from now on: %s",
					    strerror(-r));
				vmact_sched_work(ls);
				rt = false;
			}
			r = sd_event_wait(e, UINT64_MAX);
		}
		if (r > 0) {
			if (rt && !smp_watch_pending(sampler) && (r = vmact_sched_work(ls)) < 0) {
				/* Still real-time: stop rather than run everything
				 * else in that class. */
				log_error("sampler: the loop cannot leave SCHED_FIFO: %s",
					  strerror(-r));
				return r;
			}
			r = sd_event_dispatch(e);
		}
		if (r < 0)
			return r;
	}
	if (rt)
		vmact_sched_work(ls);
	sd_event_get_exit_code(e, &code);
	return code;
}

static struct smp_sampler *open_sampler(const struct act_config *cfg, sd_event *loop)
{
	static const enum smp_backend backends[] = {
		[ACT_SAMPLER_AUTO] = SMP_BACKEND_AUTO,
		[ACT_SAMPLER_BPF] = SMP_BACKEND_BPF,
		[ACT_SAMPLER_TASKSTATS] = SMP_BACKEND_TASKSTATS,
	};
	struct smp_config sc = {
		.backend = backends[cfg->sampler_mode],
		.pin_root = cfg->sampler_pin_root,
		.keep_pins = cfg->sampler_keep_pins,
		.poll_ms = cfg->taskstats_interval_ms,
		.max_vms = cfg->sampler_max_vms,
		.max_threads = cfg->sampler_max_threads,
		.watch_tick_ms = cfg->policy_events ? cfg->policy_tick_ms : 0,
	};
	struct vmact_err err = { 0 };
	struct smp_sampler *s = NULL;

	if (smp_open(&sc, &s, &err) < 0) {
		log_error("sampler: %s: VM load is not measured, nothing scales on CPU load",
			  err.msg);
		return NULL;
	}
	if (smp_attach_event(s, loop, &err) < 0) {
		log_error("sampler: %s: VM load is not measured", err.msg);
		smp_close(s);
		return NULL;
	}
	if (smp_fallback_reason(s))
		log_warning("sampler: using taskstats: %s", smp_fallback_reason(s));
	else
		log_info("sampler: BPF, maps pinned under %s", smp_pin_root(s));
	/* doc/policy.md, "Saturation found in the kernel". */
	if (!smp_watch_reason(s)) {
		log_info("sampler: saturation watched in the kernel (every %u ms); idle VMs are "
			 "read every %u ms",
			 cfg->policy_tick_ms, cfg->sampler_interval_ms);
	} else if (cfg->policy_events)
		log_warning("sampler: no watch in the kernel (%s): every VM is read every %u ms",
			    smp_watch_reason(s), cfg->policy_tick_ms);
	else
		log_info("sampler: policy.events is off: every VM is read every %u ms",
			 cfg->policy_tick_ms);
	return s;
}

static int metrics_collect(void *ud, struct act_vm_metrics **vms, size_t *n)
{
	return act_registry_metrics(ud, vms, n);
}

/* The embedded arbiter's figures for /metrics (none with plugin.mode
 * remote). */
static struct ag_arbiter *metrics_arbiter;

static bool metrics_arbiter_figures(void *ud, struct act_arbiter_metrics *out)
{
	struct ag_arbiter_totals t;

	(void)ud;
	if (!metrics_arbiter)
		return false;
	ag_arbiter_totals(metrics_arbiter, &t);
	*out = (struct act_arbiter_metrics){
		.capacity = t.total,
		.watermark = t.watermark,
		.reserved = t.reserved,
		.pressure = t.pressure,
		.vms = t.pods,
		.requests = t.requests,
		.partial = t.grants_partial,
		.refused = t.refused,
	};
	return true;
}

static uint64_t metrics_worker_restarts(void *ud)
{
	(void)ud;
	return act_worker_restarts_total();
}

/* The Prometheus endpoint is an operator's view, not part of scaling: a
 * listener that cannot be opened (the port taken) is logged and vmactd
 * scales without it (doc/metrics.md). */
static struct act_metrics_server *start_metrics(const struct act_config *cfg, sd_event *loop,
						const struct act_metrics *m,
						struct act_registry *reg)
{
	const struct act_metrics_source src = { .collect = metrics_collect,
						.arbiter = metrics_arbiter_figures,
						.worker_restarts = metrics_worker_restarts,
						.ud = reg };
	struct act_metrics_server *s = NULL;
	struct vmact_err err = { 0 };

	if (!cfg->metrics_listen[0])
		return NULL;
	if (act_metrics_server_new(loop, cfg->metrics_listen, m, &src, &s, &err) < 0) {
		log_error("metrics: %s: no metrics endpoint", err.msg);
		return NULL;
	}
	log_info("metrics: serving /metrics on %s (port %u)", cfg->metrics_listen,
		 act_metrics_server_port(s));
	return s;
}

static int backend_views(void *ud, bool all, struct act_vm_view **out, size_t *n)
{
	return act_registry_views(ud, all, out, n);
}

static int backend_view(void *ud, const char *name, struct act_vm_view *out)
{
	return act_registry_view(ud, name, out);
}

static void backend_hook(void *ud, struct act_hook_status *out)
{
	act_registry_hook_status(ud, out);
}

static void backend_detection(void *ud, struct act_detection *out)
{
	act_registry_detection(ud, out);
}

static int backend_change(void *ud, const char *name, const struct hp_meta_change *ch,
			  struct vmact_err *err)
{
	return act_registry_change(ud, name, ch, err);
}

/* vmactl check, enable, disable: DIMMs of a VM without its own compute
 * unit are the host's. */
static uint64_t backend_dimm_bytes;

static int backend_check(void *ud, const char *dom, const struct hp_meta_change *bounds,
			 struct act_domain_check *out, struct vmact_err *err)
{
	return act_enroll_check(act_registry_hp(ud), dom, bounds, backend_dimm_bytes, out, err);
}

static int backend_enable(void *ud, const char *dom, const struct hp_meta_change *bounds,
			  struct act_domain_check *out, struct vmact_err *err)
{
	int r = act_enroll_enable(act_registry_hp(ud), dom, bounds, backend_dimm_bytes, out, err);

	if (r == 0)
		log_info("%s: enabled by the operator (bounds %s)", out->name, out->bounds_from);
	else if (out->name[0])
		log_warning("enable: %s", err->msg);
	return r;
}

static int backend_disable(void *ud, const char *dom, char *name, struct vmact_err *err)
{
	int r = act_enroll_disable(act_registry_hp(ud), dom, name, err);

	if (r == 0)
		log_info("%s: disabled by the operator", name);
	return r;
}

/* A control socket that could not be created (its directory full or
 * read-only, doc/reliability.md) is tried again this often,
 * so that vmactl reaches vmactd once the space is back. */
#define CONTROL_RETRY_SEC 10u

/* The control API (doc/control-api.md). Without it vmactd still scales
 * its VMs: a socket it cannot serve is an error in the log, not a reason
 * to leave the VMs unmanaged. quiet: a retry, whose failure was said. */
static struct act_control *start_control(const struct act_config *cfg, sd_event *loop,
					 struct act_events *events, struct act_registry *registry,
					 bool quiet)
{
	backend_dimm_bytes = cfg->compute_unit.mem_bytes;
	struct act_control_opts co = {
		.event = loop,
		.socket = cfg->control_socket,
		.events = events,
		.backend = { .views = backend_views,
			     .view = backend_view,
			     .change = backend_change,
			     .check = backend_check,
			     .enable = backend_enable,
			     .disable = backend_disable,
			     .hook = backend_hook,
			     .detection = backend_detection,
			     .ud = registry },
		.allowed_uid = 0,
	};
	struct vmact_err err = { 0 };
	struct act_control *c = NULL;
	struct group grp, *g = NULL;
	char buf[4096];

	/* control.read_group names a group that must exist now: an unknown
	 * one leaves the API to root, said once. */
	if (cfg->control_read_group[0]) {
		int gr = getgrnam_r(cfg->control_read_group, &grp, buf, sizeof(buf), &g);

		if (g) {
			co.read_group = cfg->control_read_group;
			co.read_gid = (unsigned)g->gr_gid;
		} else if (!quiet) {
			log_error("control.read_group '%s': %s: the control API is for root only",
				  cfg->control_read_group, gr ? strerror(gr) : "no such group");
		}
	}

	if (act_control_new(&co, &c, &err) < 0) {
		if (!quiet)
			log_error("%s: vmactl cannot reach this vmactd (retried every %u s)",
				  err.msg, CONTROL_RETRY_SEC);
		else
			log_debug("%s (retrying)", err.msg);
		return NULL;
	}
	if (co.read_group)
		log_info("control: serving vmactl on %s (read-only for group %s, gid %u)",
			 cfg->control_socket, co.read_group, co.read_gid);
	else
		log_info("control: serving vmactl on %s", cfg->control_socket);
	return c;
}

struct control_slot {
	struct act_control *control;
	const struct act_config *cfg;
	struct act_events *events;
	struct act_registry *registry;
	sd_event_source *retry;
};

static int on_control_retry(sd_event_source *s, uint64_t usec, void *ud)
{
	struct control_slot *cs = ud;

	(void)usec;
	cs->control = start_control(cs->cfg, sd_event_source_get_event(s), cs->events, cs->registry,
				    true);
	if (cs->control) {
		cs->retry = sd_event_source_disable_unref(cs->retry);
		return 0;
	}
	sd_event_source_set_time_relative(s, CONTROL_RETRY_SEC * VMACT_USEC_PER_SEC);
	return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static void on_registry_changed(void *ud, unsigned managed, bool first_sync)
{
	if (first_sync) {
		/* Start-up freed what loading the BPF objects and libvirt's
		 * first listing took; the free pages between the heap's live
		 * chunks go back to the kernel once (doc/actuation.md,
		 * "vmactd's own footprint"). */
		malloc_trim(0);
		sd_notify(0, "READY=1");
		log_info("ready: managing %u VM%s", managed, managed == 1 ? "" : "s");
	}
	sd_notifyf(0, "STATUS=Managing %u VM%s", managed, managed == 1 ? "" : "s");
}

/* ---- vmact-hook's notices (doc/hook.md) ---- */

static void on_hook_notice(void *ud, const struct vmact_hook_msg *m)
{
	struct act_registry **registry = ud;

	if (!*registry)
		return;
	log_info("hook: %s: %s %s: %s", m->name, vmact_hook_op_name(m->op),
		 vmact_hook_subop_name(m->subop), act_registry_hook_notice(*registry, m));
}

static void on_hook_bad(void *ud, const char *why)
{
	log_warning("hook: %s", why);
}

/* The notices only make vmactd learn of a start or stop sooner than
 * libvirt's events tell it: without the socket vmactd still works. */
static struct act_hook_listener *open_hook_listener(sd_event *loop, struct act_registry **registry)
{
	const struct act_hook_listener_ops ops = { on_hook_notice, on_hook_bad, registry };
	struct act_hook_listener *l = NULL;
	struct vmact_err err = { 0 };

	if (act_hook_listener_new(loop, VMACT_HOOK_SOCKET, &ops, &l, &err) < 0) {
		log_warning(
			"hook: not receiving notices: %s (vmactd learns of domain starts and stops "
			"from libvirt's events only)",
			err.msg);
		return NULL;
	}
	log_info("hook: receiving notices on %s", VMACT_HOOK_SOCKET);
	return l;
}

/* ---- SIGHUP: reload the configuration file ---- */

struct reload_ctx {
	const char *path;
	bool explicit_config;
	struct act_config *cfg;
	struct act_registry **registry;
};

static void on_reload_key(void *ud, const char *key, bool applied)
{
	if (applied)
		log_info("reload: %s changed: applied", key);
	else
		log_warning("reload: %s changed: needs a restart; the running value is kept", key);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct reload_ctx *rc = userdata;
	struct vmact_err err = { 0 };
	struct act_config next;
	unsigned applied;

	sd_notify(0, "RELOADING=1");
	act_config_defaults(&next);
	if (act_config_load(rc->path, rc->explicit_config, &next, &err) < 0) {
		log_error("reload: configuration: %s; the running configuration is kept", err.msg);
	} else {
		applied = act_config_reload(rc->cfg, &next, on_reload_key, NULL);
		log_info("reload: %s: %u change%s applied", rc->path, applied,
			 applied == 1 ? "" : "s");
		/* scaling reaches each managed VM through its metadata's
		 * resync; VMs keep their size. */
		if (applied && *rc->registry)
			act_registry_resync(*rc->registry);
	}
	act_config_free(&next);
	sd_notify(0, "READY=1");
	return 0;
}

static void exit_loop(void *ud)
{
	sd_event_exit(ud, 0);
}

/* Runners go first, so that informant agents can unregister while the
 * loop still runs; a second signal exits at once. */
static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct act_registry **registry = userdata;
	sd_event *ev = sd_event_source_get_event(s);
	static bool stopping;

	log_info("received %s, shutting down", strsignal((int)si->ssi_signo));
	if (stopping || !registry || !*registry)
		return sd_event_exit(ev, 0);
	stopping = true;
	sd_notify(0, "STOPPING=1");
	act_registry_shutdown(*registry, exit_loop, ev);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		VMACT_STARTUP_OPTIONS_END,
	};
	struct args o = { .config_path = ACT_CONFIG_DEFAULT_PATH };
	_cleanup_(sd_event_unrefp) sd_event *loop = NULL;
	struct ag_arbiter *arbiter = NULL;
	struct act_registry *registry = NULL;
	struct smp_sampler *sampler = NULL;
	struct act_metrics_server *metrics_server = NULL;
	static struct act_metrics metrics;
	struct act_events *events = NULL;
	struct control_slot control_slot = { 0 };
	struct act_hook_listener *hook = NULL;
	struct reload_ctx reload;
	struct vmact_err err = { 0 };
	struct act_config cfg;
	struct vmact_sched ls = { 0 };
	bool rt;
	int r;

	/* The kernel's BTF (5.5 MiB, parsed for each BPF object at start)
	 * would raise glibc's dynamic mmap threshold past its size and then
	 * stay in the heap once freed: a fixed threshold keeps big buffers
	 * mmap()ed and given back. One arena for the daemon's two threads
	 * (doc/actuation.md, "vmactd's own footprint"). */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_ARENA_MAX, 1);
	r = vmact_startup_parse(argc, argv, "vmactd", usage, "c:vh", opts, on_option, &o);
	if (r != VMACT_STARTUP_RUN)
		return r;
	vmact_log_init("vmactd", o.verbose ? LOG_DEBUG : LOG_INFO);

	act_config_defaults(&cfg);
	r = act_config_load(o.config_path, o.explicit_config, &cfg, &err);
	if (r < 0) {
		log_error("configuration: %s", err.msg);
		act_config_free(&cfg);
		return 1;
	}
	if (o.check_only) {
		/* Only the default path may be absent (an explicit one was an
		 * error above): say so rather than call a file valid that is
		 * not there. vmactd starts on the defaults then, hence 0. */
		if (r == 1)
			printf("%s does not exist: vmactd runs with the built-in defaults "
			       "(vmactd.json(5))\n",
			       o.config_path);
		else
			printf("%s: configuration is valid\n", o.config_path);
		act_config_free(&cfg);
		return 0;
	}

	reload = (struct reload_ctx){ o.config_path, o.explicit_config, &cfg, &registry };
	r = vmact_startup_loop(&loop, on_signal, &registry, on_sighup, &reload, &err);
	if (r < 0) {
		log_error("cannot set up the event loop: %s", strerror(-r));
		act_config_free(&cfg);
		return 1;
	}

	if (cfg.plugin_mode == ACT_PLUGIN_ARBITER) {
		arbiter_registry = &registry;
		r = start_arbiter(&cfg, loop, &arbiter, &err);
		if (r < 0) {
			log_error("arbiter: %s", err.msg);
			act_config_free(&cfg);
			return 1;
		}
		metrics_arbiter = arbiter;
	}

	sampler = open_sampler(&cfg, loop);
	if (act_events_new(0, &events) < 0) {
		log_error("out of memory");
		return 1;
	}
	{
		struct act_registry_opts ro = {
			.event = loop,
			.cfg = &cfg,
			.plugin_url = cfg.plugin_mode == ACT_PLUGIN_REMOTE ? cfg.plugin_url : NULL,
			.arbiter = arbiter,
			.sampler = sampler,
			.metrics = &metrics,
			.events = events,
			.changed = on_registry_changed,
		};

		r = act_registry_new(&ro, &registry, &err);
	}
	if (r < 0) {
		log_error("libvirt: %s", err.msg);
		act_events_free(events);
		smp_close(sampler);
		ag_arbiter_free(arbiter);
		act_config_free(&cfg);
		return 1;
	}
	metrics_server = start_metrics(&cfg, loop, &metrics, registry);
	hook = open_hook_listener(loop, &registry);
	log_info("started (libvirt %s, scheduler %s)", cfg.libvirt_uri,
		 cfg.plugin_mode == ACT_PLUGIN_REMOTE ? cfg.plugin_url : "the embedded arbiter");
	control_slot = (struct control_slot){ NULL, &cfg, events, registry, NULL };
	control_slot.control = start_control(&cfg, loop, events, registry, false);
	if (!control_slot.control)
		sd_event_add_time_relative(loop, &control_slot.retry, CLOCK_MONOTONIC,
					   CONTROL_RETRY_SEC * VMACT_USEC_PER_SEC, 0,
					   on_control_retry, &control_slot);
	/* READY=1 follows the registry's first sync (on_registry_changed). */
	rt = sampler && !smp_watch_reason(sampler) && loop_sched_setup(&cfg, &ls);
	r = run_loop(loop, sampler, &ls, rt);
	act_metrics_server_free(metrics_server);
	sd_event_source_disable_unref(control_slot.retry);
	act_control_free(control_slot.control);
	act_hook_listener_free(hook);
	act_registry_free(registry);
	act_events_free(events);
	smp_close(sampler);
	ag_arbiter_free(arbiter);
	act_config_free(&cfg);
	if (r < 0) {
		log_error("event loop failed: %s", strerror(-r));
		return 1;
	}
	return 0;
}
