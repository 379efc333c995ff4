/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd: node groups across libvirt hosts, their warm pools and
 * their placement (doc/cluster.md). An unprivileged program: it refuses to
 * run as root (its own user, in libvirt's group, reaches each host's
 * libvirt by URI and each host's arbiter by its lease key). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <curl/curl.h>
#include <libvirt/virterror.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "base/log.h"
#include "cluster/config/config.h"
#include "cluster/daemon/api.h"
#include "cluster/daemon/metrics.h"
#include "cluster/engine/engine.h"
#include "cluster/host/host.h"
#include "cluster/plugins/plugins.h"
#include "net/prom-serve.h"
#include "shared/startup.h"

#define DEFAULT_CONFIG "/etc/vmact/groupd.json"

static const char usage[] =
	"Usage: vmact-groupd [OPTIONS]\n"
	"Node groups of VMs across libvirt hosts: warm pools and placement (doc/cluster.md).\n"
	"\n"
	"  -c, --config FILE   configuration (default " DEFAULT_CONFIG ")\n"
	"      --check         check the configuration and exit\n"
	"  -v, --verbose       log debug messages too\n"
	"  -h, --help          this text\n"
	"      --version       print the version\n";

enum { OPT_CHECK = 256 };

static const struct option options[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "check", no_argument, NULL, OPT_CHECK },
	{ "verbose", no_argument, NULL, 'v' },
	VMACT_STARTUP_OPTIONS_END,
};

/* The command line's values, as on_option reads them. */
struct args {
	const char *config;
	bool check, verbose;
};

static int on_option(void *ud, int opt, char *arg)
{
	struct args *o = ud;

	switch (opt) {
	case 'c':
		o->config = arg;
		return 0;
	case OPT_CHECK:
		o->check = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return 2;
}

/* libvirt prints every error by default; ours are reported where they
 * happen, with what they mean. */
static void quiet_libvirt(void *ud, virErrorPtr e)
{
}

static void on_event(void *ud, const struct cl_engine_event *ev)
{
	if (ev->vm)
		vmact_log(ev->priority, "%s: %s", ev->vm, ev->text);
	else
		vmact_log(ev->priority, "%s", ev->text);
}

static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	log_info("signal %d: stopping (VMs stay as recorded)", (int)si->ssi_signo);
	return vmact_startup_stop(s, si, ud);
}

static int on_ready_check(sd_event_source *s, uint64_t usec, void *ud)
{
	struct cl_engine *e = ud;

	if (!cl_engine_ready(e)) {
		sd_event_source_set_time_relative(s, 100000);
		return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	}
	sd_notify(0, "READY=1\nSTATUS=serving");
	return 0;
}

int main(int argc, char **argv)
{
	struct args o = { .config = DEFAULT_CONFIG };
	struct cl_config cfg = { 0 };
	struct vmact_err err = { 0 };
	struct cl_engine *e = NULL;
	struct cl_api *api = NULL;
	struct net_prom_server *metrics = NULL;
	sd_event *ev = NULL;
	const char *state;
	int r, status = 1;

	r = vmact_startup_parse(argc, argv, "vmact-groupd", usage, "c:vh", options, on_option, &o);
	if (r != VMACT_STARTUP_RUN)
		return r;
	vmact_log_init("vmact-groupd", o.verbose ? LOG_DEBUG : LOG_INFO);
	if (cl_config_load(o.config, &cfg, &err) < 0 ||
	    cl_plugins_check_profiles(cfg.profiles, &err) < 0) {
		log_error("%s", err.msg);
		cl_config_free(&cfg);
		return 2;
	}
	if (o.check) {
		printf("%s: %zu host(s), %zu group(s): valid\n", o.config, cfg.n_hosts,
		       cfg.n_groups);
		cl_config_free(&cfg);
		return 0;
	}
	/* vmactd is the host's one root process; this one creates VMs on
	 * behalf of an API and must hold no more than libvirt's group. */
	if (vmact_startup_refuse_root("run vmact-groupd as its own user (vmact-cluster, in "
				      "libvirt's group; doc/cluster.md)",
				      &err) < 0) {
		log_error("%s", err.msg);
		cl_config_free(&cfg);
		return 1;
	}
	/* before libvirt's event thread starts, which must not see the
	 * signals */
	if ((r = vmact_startup_loop(&ev, on_stop, NULL, NULL, NULL, &err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	virSetErrorFunc(NULL, quiet_libvirt);
	if ((r = cl_host_event_loop_start(&err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	if ((r = cl_engine_new(ev, &cfg, &e, &err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	cl_engine_on_event(e, on_event, NULL);
	/* systemd's StateDirectory= (the first, should there be several):
	 * the groups' node shapes are kept there; run by hand, not kept. */
	state = getenv("STATE_DIRECTORY");
	if (state) {
		state = strndupa(state, strcspn(state, ":"));
		if (cl_engine_load_shapes(e, state, &err) < 0)
			log_warning("%s; the node shapes it held are measured again", err.msg);
		err = (struct vmact_err){ 0 };
		if (cl_engine_load_drained(e, &err) < 0)
			log_warning("%s; no host is drained", err.msg);
	}
	if ((r = cl_api_new(ev, cfg.api_socket, e, &api, &err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	if (cfg.metrics_listen[0] &&
	    (r = net_prom_server_new(ev, cfg.metrics_listen, cl_metrics_page, e, &metrics, &err)) <
		    0) {
		log_error("metrics: %s", err.msg);
		goto out;
	}
	if ((r = cl_engine_start(e, &err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	sd_event_add_time_relative(ev, NULL, CLOCK_MONOTONIC, 0, 0, on_ready_check, e);
	if (metrics)
		log_info("serving on %s, metrics on %s (port %u); %zu host(s), %zu group(s)",
			 cfg.api_socket, cfg.metrics_listen, net_prom_server_port(metrics),
			 cfg.n_hosts, cfg.n_groups);
	else
		log_info("serving on %s; %zu host(s), %zu group(s)", cfg.api_socket, cfg.n_hosts,
			 cfg.n_groups);
	r = sd_event_loop(ev);
	if (r < 0) {
		log_error("event loop: %s", strerror(-r));
		goto out;
	}
	status = 0;
out:
	/* The engine's jobs end first: their answers go to pending API
	 * requests, which the server then still holds. */
	cl_engine_stop(e);
	net_prom_server_free(metrics);
	cl_engine_free(e);
	cl_api_free(api);
	sd_event_unref(ev);
	cl_config_free(&cfg);
	curl_global_cleanup();
	if (!status)
		log_info("stopped");
	return status;
}
