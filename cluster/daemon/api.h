/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's API (prefix cl_api_; doc/cluster-api.md): HTTP+JSON on
 * a unix socket (net/http-server), for vmact-cloudprovider and
 * vmact-groupctl. Served to root and to vmact-groupd's own user only (the
 * socket's mode 0600 and the peer's credentials). */
#pragma once

#include <systemd/sd-event.h>

#include "base/error.h"
#include "cluster/engine/engine.h"

struct cl_api;

/* Creates the socket's directory when missing, refuses a socket another
 * process still serves, replaces a stale one. */
int cl_api_new(sd_event *ev, const char *socket, struct cl_engine *e, struct cl_api **out,
	       struct vmact_err *err);
/* Answers what is pending (503) and removes the socket. */
void cl_api_free(struct cl_api *a);
