/* SPDX-License-Identifier: Apache-2.0 */
/* The start-up the server programs' main()s share (prefix vmact_startup_;
 * vmactd, vmact-arbiter, vmact-groupd, vmact-cloudprovider), as systemd's
 * mains share src/shared/main-func.h: the command line's --help, --version
 * and usage errors around each program's own options; the refusal of
 * root; and the event loop with its stop (and reload) signals, whose
 * default stop tells systemd STOPPING=1. The programs' own options, their
 * logging and their READY=1 (each is ready at a different moment) stay in
 * their mains. Never logs: it prints only what a command line answers. */
#pragma once

#include <getopt.h>
#include <systemd/sd-event.h>

#include "base/error.h"

/* --version's value in a program's long options; out of the range of
 * characters and of the programs' own OPT_* values (256 and up). */
#define VMACT_STARTUP_OPT_VERSION 0x7f00

/* The end of every program's long options: --help (short 'h', which its
 * short options must list), --version and the terminator. */
/* clang-format off */
#define VMACT_STARTUP_OPTIONS_END \
	{ "help", no_argument, NULL, 'h' }, \
	{ "version", no_argument, NULL, VMACT_STARTUP_OPT_VERSION }, \
	{ NULL, 0, NULL, 0 }
/* clang-format on */

/* vmact_startup_parse's answer when main() should go on. */
#define VMACT_STARTUP_RUN (-1)

/* One of a program's own options (any but -h and --version), arg its
 * value or NULL: 0 to go on, or the status main() exits with, the reason
 * printed on stderr ("NAME: --OPT VALUE: why", status 2). */
typedef int vmact_startup_option_fn(void *ud, int opt, char *arg);

/* Reads argv with getopt_long(short_opts, long_opts), the long ones
 * ending with VMACT_STARTUP_OPTIONS_END, and hands the program's own
 * options to option. --help prints usage on stdout, --version "NAME
 * VERSION"; an unknown option (after getopt's own complaint) or an
 * argument that is not an option prints "Try 'NAME --help'." on stderr.
 * Returns VMACT_STARTUP_RUN when main() should go on, else the status it
 * exits with: 0 after --help or --version, 2 after a usage error, or what
 * option returned (which ends the reading at once). */
int vmact_startup_parse(int argc, char **argv, const char *name, const char *usage,
			const char *short_opts, const struct option *long_opts,
			vmact_startup_option_fn *option, void *ud);

/* 0, or -EPERM with "refusing to run as root: ADVICE" when the effective
 * user is root: for programs that act for a network's clients and need
 * none of root's rights (vmact-groupd, vmact-cloudprovider). */
int vmact_startup_refuse_root(const char *advice, struct vmact_err *err);

/* The program's event loop (this thread's default one), with SIGTERM and
 * SIGINT calling on_stop and, when on_reload is not NULL, SIGHUP calling
 * it. Blocks those signals in this thread (so in every thread it starts
 * afterwards: call this before the first one) so that only the loop's
 * signalfd sees them, and ignores SIGPIPE (a peer that hung up is the
 * write's error, not the program's end). on_stop NULL is
 * vmact_startup_stop. Returns 0, or a negative errno with "event loop:
 * ..."; *ret is the caller's to unref either way. */
int vmact_startup_loop(sd_event **ret, sd_event_signal_handler_t on_stop, void *stop_ud,
		       sd_event_signal_handler_t on_reload, void *reload_ud, struct vmact_err *err);

/* The default stop: tells systemd STOPPING=1 and leaves the loop with 0.
 * A program's own stop may end with it. */
int vmact_startup_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *ud);
