/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's control API (doc/control-api.md): HTTP+JSON on a unix socket,
 * root only, on the daemon's loop (agent-glue/http-server). What it shows
 * and changes comes through a backend: the registry in vmactd. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "actuator/control/control-json.h"
#include "actuator/control/events.h"
#include "base/error.h"
#include "hotplug/hotplug.h"

struct act_control_backend {
	/* all: also the domains vmactd ignores (vmactl status --all). */
	int (*views)(void *ud, bool all, struct act_vm_view **out, size_t *n);
	/* name: a domain name or UUID, as everywhere in the API. */
	int (*view)(void *ud, const char *name, struct act_vm_view *out); /* -ENOENT */
	int (*change)(void *ud, const char *name, const struct hp_meta_change *ch,
		      struct vmact_err *err);
	/* vmactl check / enable / disable (actuator/daemon/enroll.h); any
	 * domain libvirt knows. NULL: answered 501. bounds may be NULL. */
	int (*check)(void *ud, const char *dom, const struct hp_meta_change *bounds,
		     struct act_domain_check *out, struct vmact_err *err);
	int (*enable)(void *ud, const char *dom, const struct hp_meta_change *bounds,
		      struct act_domain_check *out, struct vmact_err *err);
	int (*disable)(void *ud, const char *dom, char *name, struct vmact_err *err);
	/* GET /v1/vms's "hook" (NULL: none). */
	void (*hook)(void *ud, struct act_hook_status *out);
	/* GET /v1/vms's "detection" (NULL: none). */
	void (*detection)(void *ud, struct act_detection *out);
	void *ud;
};

struct act_control_opts {
	sd_event *event;
	const char *socket; /* control.socket */
	struct act_events *events;
	struct act_control_backend backend;
	/* Only peers of this uid are served (0 in vmactd; tests run it as
	 * themselves)... */
	unsigned long long allowed_uid;
	/* ...and, read-only, members of this group (control.read_group: the
	 * socket is then group-owned by it, mode 0660). read_group: its name,
	 * for messages; NULL = nobody else. */
	const char *read_group;
	unsigned read_gid;
};

#define ACT_CONTROL_MAX_WAIT_S 30  /* GET /v1/events?wait= upper bound */
#define ACT_CONTROL_MAX_EVENTS 256 /* events per answer */
#define ACT_CONTROL_DECISIONS  10  /* last decisions in GET /v1/vms/NAME */

struct act_control;

/* Creates the socket's directory (0755) when missing, refuses a socket
 * another process still answers on, replaces a stale one, serves with
 * mode 0600. */
int act_control_new(const struct act_control_opts *o, struct act_control **out,
		    struct vmact_err *err);
/* Answers the pending long polls (503) and removes the socket. */
void act_control_free(struct act_control *c);
