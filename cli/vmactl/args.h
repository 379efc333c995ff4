/* SPDX-License-Identifier: Apache-2.0 */
/* vmactl's command line (doc/control-api.md, "vmactl"): the command, its
 * VM and options, parsed without side effects so the unit tests see every
 * usage error. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

enum ctl_command {
	CTL_NONE = 0, /* no command: --help or --version alone */
	CTL_STATUS,
	CTL_SHOW,
	CTL_SET,
	CTL_PAUSE,
	CTL_RESUME,
	CTL_EVENTS,
	CTL_TOP,
	CTL_CHECK,
	CTL_ENABLE,
	CTL_DISABLE,
};

#define CTL_SOCKET_DEFAULT "/run/vmact/vmactd.sock"

struct ctl_args {
	enum ctl_command cmd;
	const char *socket; /* --socket, else $VMACT_SOCKET, else the default */
	const char *vm;     /* show, set, pause, resume, check, enable, disable (a name or
			       * UUID); events --vm */
	bool json, help, version, follow;
	bool all; /* status --all */
	/* set --mode recommend|active (NULL: not given); enable --recommend */
	const char *mode;
	bool recommend;
	bool fix; /* check --fix */
	/* set, enable: --migration (migration on) or --no-migration (off) */
	bool set_migration, migration;
	/* set, check, enable: quantities as given, checked ("2", "500m";
	 * "512Mi", "2Gi") */
	const char *min_cpu, *max_cpu, *min_mem, *max_mem;
	bool has_since;
	uint64_t since;      /* events --since SEQ */
	unsigned iterations; /* top --iterations N (0 = until q) */
};

const char *ctl_command_name(enum ctl_command c);

/* 0, or -EINVAL with the reason in err (a usage error: exit status 2).
 * env_socket is $VMACT_SOCKET (NULL when unset). */
int ctl_args_parse(int argc, char **argv, const char *env_socket, struct ctl_args *out,
		   struct vmact_err *err);

/* The help of one command (CTL_NONE: the overview). */
void ctl_usage(FILE *f, enum ctl_command c);
