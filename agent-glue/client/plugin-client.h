/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's side of the scheduler-plugin protocol (doc/protocols.md,
 * "Plugin transport" and "Permit checks"): POST an AgentRequest, get a
 * validated permit or a failure, without blocking the event loop.
 *
 * Version negotiation: the client starts at the configured version
 * (default 5.0). When the plugin answers 400 "protocol version mismatch:
 * need vX but got vY" (HEAD) or "Protocol version mismatch: Need vA to vB
 * but got vY" (legacy), the client switches to a version the plugin wants,
 * resends once, and keeps that version for later requests; the caller is
 * told through the version callback so it can log once. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "agent-glue/codec/plugin.h"
#include "base/error.h"
#include "net/http-client.h"
#include "net/http-server.h"

struct ag_plugin_client;

#define AG_PLUGIN_DEFAULT_TIMEOUT_USEC (10ULL * 1000000ULL) /* neonvm.requestTimeoutSeconds */

struct ag_plugin_client_config {
	const char *url;                /* "http://10.0.0.5:10299/" */
	enum ag_plugin_version version; /* 0 = 5.0 */
	uint64_t timeout_usec;          /* 0 = 10 s */
	uint64_t slot_bytes;            /* needed only if the plugin speaks < 4.0 */
};

/* Builds "http://HOST:PORT/" (IPv6 literals are bracketed); port 0 means
 * the default 10299. Returns -ENOSPC when buf is too small. */
int ag_plugin_url(const char *host, unsigned port, char *buf, size_t len);

struct ag_plugin_result {
	/* 0: permit accepted. Otherwise the request failed (and counts as a
	 * failure for the scaling core's backoff):
	 *   -ETIMEDOUT / -ECONNREFUSED / -ECONNRESET / -EPROTO ... transport,
	 *   -EREMOTEIO  the plugin answered a non-200 status (see status, text),
	 *   -EBADMSG    200 with a body that does not decode,
	 *   -ERANGE     the permit failed validation (zero, above request,
	 *               below usage). */
	int error;
	const char *message;                /* human-readable, names the cause */
	long status;                        /* HTTP status, 0 if none */
	enum ag_plugin_version version;     /* version the answer was in */
	struct ag_plugin_response response; /* valid when error == 0 */
};

typedef void ag_plugin_done_fn(void *userdata, const struct ag_plugin_result *res);
typedef void ag_plugin_version_changed_fn(void *userdata, enum ag_plugin_version from,
					  enum ag_plugin_version to, const char *plugin_text);

/* The client uses (does not own) an http client on the caller's loop. */
int ag_plugin_client_new(struct net_http_client *http, const struct ag_plugin_client_config *cfg,
			 struct ag_plugin_client **out, struct vmact_err *err);
/* In-process transport: the plugin's side is called directly (vmactd's
 * embedded arbiter) with the request body and answers as it would over
 * HTTP, so version negotiation, decoding and permit checks are the same;
 * the answer is taken from the event loop (a defer source), never inside
 * the request call. Nothing depends on a socket another local user could
 * fill. */
typedef void ag_plugin_local_fn(void *userdata, const char *body, size_t len,
				struct net_http_server_reply *reply);
int ag_plugin_client_new_local(sd_event *ev, ag_plugin_local_fn *fn, void *fn_userdata,
			       const struct ag_plugin_client_config *cfg,
			       struct ag_plugin_client **out, struct vmact_err *err);

/* Cancels pending requests without calling their callbacks. */
void ag_plugin_client_free(struct ag_plugin_client *pc);

void ag_plugin_client_on_version_change(struct ag_plugin_client *pc,
					ag_plugin_version_changed_fn *fn, void *userdata);
enum ag_plugin_version ag_plugin_client_version(const struct ag_plugin_client *pc);
/* True once the client had to switch away from its configured version. */
bool ag_plugin_client_version_switched(const struct ag_plugin_client *pc);

/* Sends req (req->version is ignored: the client's current version is
 * used). current is the VM's current usage, for permit validation (may be
 * NULL). Errors detected before sending (encoding, a body of 1 KiB or
 * more) are returned here and the callback is not called; otherwise the
 * callback runs exactly once, from the event loop. */
int ag_plugin_client_request(struct ag_plugin_client *pc, const struct ag_agent_request *req,
			     const struct vmact_resources *current, ag_plugin_done_fn *cb,
			     void *userdata, struct vmact_err *err);

/* Parses a mismatch text; on success *want is the version to switch to
 * given that `have` was refused. -ENOENT if the text is not a mismatch. */
int ag_plugin_parse_mismatch(const char *text, size_t len, enum ag_plugin_version have,
			     enum ag_plugin_version *want);
