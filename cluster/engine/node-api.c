/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/engine/node-api.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "shared/http-call.h"
#include "shared/keyfile.h"

#define CALL_USEC  (10ULL * 1000000ULL)
#define ANSWER_MAX (1u << 20)
#define TOKEN_MAX  4096

DEFINE_PTR_CLEANUP(node_jsonp, json_t, json_decref)

static int call(const struct cl_kube *k, const char *token, const char *method, const char *path,
		const char *body, struct vmact_http_answer *a, struct vmact_err *err)
{
	char url[768];
	struct vmact_http_req q = { .url = url,
				    .method = method,
				    .body = body,
				    .timeout_usec = CALL_USEC,
				    .answer_max = ANSWER_MAX,
				    .ca_file = k->ca_file,
				    .bearer = token };
	int r;

	if ((size_t)snprintf(url, sizeof(url), "%s%s", k->server, path) >= sizeof(url))
		return vmact_err_set(err, EINVAL, "kubernetes: URL too long");
	r = vmact_http_call(&q, a, err);
	if (r < 0)
		vmact_err_prefix(err, "kubernetes: %s %s", method, k->server);
	return r;
}

int cl_node_api_delete(const struct cl_kube *k, const char *name, const char *provider_id,
		       struct vmact_err *err)
{
	_cleanup_free_ char *esc = vmact_http_escape(name), *body = NULL;
	_cleanup_(node_jsonp) json_t *node = NULL;
	struct vmact_http_answer a = { 0 };
	uint8_t *token = NULL;
	size_t tlen = 0;
	char path[512];
	const char *pid, *uid = NULL;
	int r;

	if (!esc)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if ((r = vmact_keyfile_load_max(k->token_file, TOKEN_MAX, &token, &tlen, err)) < 0)
		return vmact_err_prefix(err, "kubernetes.token_file");
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", esc);
	r = call(k, (const char *)token, "GET", path, NULL, &a, err);
	if (r >= 0 && a.status == 404)
		r = 0;
	else if (r >= 0 && a.status != 200)
		r = vmact_err_set(err, EIO, "kubernetes: GET Node %s: status %ld", name, a.status);
	else if (r >= 0) {
		node = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, NULL);
		pid = json_string_value(
			json_object_get(json_object_get(node, "spec"), "providerID"));
		uid = json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
		/* Only a Node of this VM: another one of the name is left
		 * alone. */
		r = pid && uid && !strcmp(pid, provider_id) ? 1 : 0;
	}
	vmact_http_answer_free(&a);
	if (r == 1) {
		/* The Node as it was read, not one that replaced it since. */
		if (asprintf(&body,
			     "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
			     "\"preconditions\":{\"uid\":\"%s\"}}",
			     uid) < 0)
			r = vmact_err_set(err, ENOMEM, "out of memory");
		else
			r = call(k, (const char *)token, "DELETE", path, body, &a, err);
		if (r >= 0 && (a.status == 200 || a.status == 202))
			r = 1;
		else if (r >= 0 && (a.status == 404 || a.status == 409))
			r = 0;
		else if (r >= 0)
			r = vmact_err_set(err, EIO, "kubernetes: DELETE Node %s: status %ld", name,
					  a.status);
		vmact_http_answer_free(&a);
	}
	explicit_bzero(token, tlen);
	free(token);
	return r;
}
