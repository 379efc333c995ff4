/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/vmactl/client.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "shared/http-call.h"

/* Answers are small (a few hundred VMs at most); a bound keeps a broken
 * peer from filling memory. */
#define ANSWER_MAX (16u << 20)

char *ctl_escape(const char *name)
{
	return vmact_http_escape(name);
}

static volatile sig_atomic_t *cancel_flag;
static const char *const peer = "vmactd", *const peer_hint = " (is vmactd running? are you root?)";

void ctl_set_cancel(volatile sig_atomic_t *flag)
{
	cancel_flag = flag;
}

int ctl_call(const char *socket, const char *method, const char *path, const char *body,
	     long timeout_s, long *status, json_t **out, struct vmact_err *err)
{
	_cleanup_(vmact_http_answer_free) struct vmact_http_answer a = { 0 };
	struct vmact_err e = { 0 };
	json_error_t je;
	json_t *doc;
	int r;

	*out = NULL;
	*status = 0;
	r = vmact_http_call(&(struct vmact_http_req){ .unix_socket = socket,
						      .url = path,
						      .method = method,
						      .body = body,
						      .timeout_usec = (uint64_t)timeout_s * 1000000,
						      .answer_max = ANSWER_MAX,
						      .cancel = cancel_flag },
			    &a, &e);
	if (r == -EINTR)
		return vmact_err_set(err, EINTR, "interrupted");
	/* The socket's mode: say so rather than "is it running?". */
	if (r == -EACCES)
		return vmact_err_set(err, EACCES,
				     "cannot reach %s at %s: Permission denied (the socket's "
				     "owner and group decide who may)",
				     peer, socket);
	if (r < 0)
		return vmact_err_set(err, r == -ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
				     "cannot reach %s at %s: %s%s", peer, socket, e.msg,
				     r == -ECONNREFUSED ? peer_hint : "");
	*status = a.status;
	doc = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, &je);
	if (*status < 200 || *status > 299) {
		const char *msg = doc ? json_string_value(json_object_get(doc, "error")) : NULL;

		r = vmact_err_set(err, EPROTO, "%s: %s", peer,
				  msg           ? msg
				  : a.body.data ? a.body.data
						: "(no reason)");
		json_decref(doc);
		return r;
	}
	if (!doc)
		return vmact_err_set(err, EPROTO, "%s answered with something other than JSON: %s",
				     peer, je.text);
	*out = doc;
	return 0;
}
