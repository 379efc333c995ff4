/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/startup.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#ifndef VMACT_VERSION
#define VMACT_VERSION "dev"
#endif

int vmact_startup_parse(int argc, char **argv, const char *name, const char *usage,
			const char *short_opts, const struct option *long_opts,
			vmact_startup_option_fn *option, void *ud)
{
	int opt, r;

	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(usage, stdout);
			return 0;
		case VMACT_STARTUP_OPT_VERSION:
			printf("%s %s\n", name, VMACT_VERSION);
			return 0;
		case '?':
		case ':':
			/* getopt_long has said what was wrong */
			fprintf(stderr, "Try '%s --help'.\n", name);
			return 2;
		default:
			r = option(ud, opt, optarg);
			if (r)
				return r;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument %s\nTry '%s --help'.\n", name,
			argv[optind], name);
		return 2;
	}
	return VMACT_STARTUP_RUN;
}

int vmact_startup_refuse_root(const char *advice, struct vmact_err *err)
{
	if (geteuid() == 0)
		return vmact_err_set(err, EPERM, "refusing to run as root: %s", advice);
	return 0;
}

int vmact_startup_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	sd_notify(0, "STOPPING=1");
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

int vmact_startup_loop(sd_event **ret, sd_event_signal_handler_t on_stop, void *stop_ud,
		       sd_event_signal_handler_t on_reload, void *reload_ud, struct vmact_err *err)
{
	sigset_t mask;
	int r;

	*ret = NULL;
	if (!on_stop)
		on_stop = vmact_startup_stop;
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (on_reload)
		sigaddset(&mask, SIGHUP);
	r = -pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (r >= 0)
		r = sd_event_default(ret);
	if (r >= 0)
		r = sd_event_add_signal(*ret, NULL, SIGTERM, on_stop, stop_ud);
	if (r >= 0)
		r = sd_event_add_signal(*ret, NULL, SIGINT, on_stop, stop_ud);
	if (r >= 0 && on_reload)
		r = sd_event_add_signal(*ret, NULL, SIGHUP, on_reload, reload_ud);
	if (r < 0)
		return vmact_err_set(err, -r, "event loop: %s", strerror(-r));
	return 0;
}
