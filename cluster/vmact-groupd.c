/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd: node groups across libvirt hosts, their warm pools and
 * their placement (doc/cluster.md). An unprivileged program: it refuses to
 * run as root (its own user, in libvirt's group, reaches each host's
 * libvirt by URI and each host's arbiter by its lease key). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

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

#ifndef VMACT_VERSION
#define VMACT_VERSION "dev"
#endif

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

enum { OPT_CHECK = 256, OPT_VERSION };

static const struct option options[] = {
	{ "config", required_argument, NULL, 'c' },    { "check", no_argument, NULL, OPT_CHECK },
	{ "verbose", no_argument, NULL, 'v' },         { "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION }, { NULL, 0, NULL, 0 },
};

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
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(sd_event_source_get_event(s), 0);
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
	const char *config = DEFAULT_CONFIG;
	bool check = false, verbose = false;
	struct cl_config cfg = { 0 };
	struct vmact_err err = { 0 };
	struct cl_engine *e = NULL;
	struct cl_api *api = NULL;
	struct net_prom_server *metrics = NULL;
	sd_event *ev = NULL;
	sigset_t mask;
	int opt, r, status = 1;

	while ((opt = getopt_long(argc, argv, "c:vh", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case OPT_VERSION:
			printf("vmact-groupd %s\n", VMACT_VERSION);
			return 0;
		default:
			fputs("Try 'vmact-groupd --help'.\n", stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmact-groupd: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	vmact_log_init("vmact-groupd", verbose ? LOG_DEBUG : LOG_INFO);
	if (cl_config_load(config, &cfg, &err) < 0 ||
	    cl_plugins_check_profiles(cfg.profiles, &err) < 0) {
		log_error("%s", err.msg);
		cl_config_free(&cfg);
		return 2;
	}
	if (check) {
		printf("%s: %zu host(s), %zu group(s): valid\n", config, cfg.n_hosts, cfg.n_groups);
		cl_config_free(&cfg);
		return 0;
	}
	/* vmactd is the host's one root process; this one creates VMs on
	 * behalf of an API and must hold no more than libvirt's group. */
	if (geteuid() == 0) {
		log_error(
			"refusing to run as root: run vmact-groupd as its own user (vmact-cluster, "
			"in libvirt's group; doc/cluster.md)");
		cl_config_free(&cfg);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	virSetErrorFunc(NULL, quiet_libvirt);
	if ((r = cl_host_event_loop_start(&err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	if ((r = sd_event_default(&ev)) < 0 ||
	    (r = sd_event_add_signal(ev, NULL, SIGTERM, on_stop, NULL)) < 0 ||
	    (r = sd_event_add_signal(ev, NULL, SIGINT, on_stop, NULL)) < 0) {
		log_error("event loop: %s", strerror(-r));
		goto out;
	}
	if ((r = cl_engine_new(ev, &cfg, &e, &err)) < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	cl_engine_on_event(e, on_event, NULL);
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
