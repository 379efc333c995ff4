/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/engine/node-api.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/quantity.h"
#include "shared/http-call.h"
#include "shared/keyfile.h"

#define CALL_USEC  (10ULL * 1000000ULL)
#define ANSWER_MAX (1u << 20)
#define TOKEN_MAX  4096

DEFINE_PTR_CLEANUP(node_jsonp, json_t, json_decref)

/* A page of the Nodes: LIST_PAGE of them at most, each well under
 * LIST_ANSWER_MAX / LIST_PAGE even with a long list of images. */
#define LIST_PAGE       50
#define LIST_ANSWER_MAX (8u << 20)

static int call_max(const struct cl_kube *k, const char *token, const char *method,
		    const char *path, const char *body, size_t answer_max,
		    struct vmact_http_answer *a, struct vmact_err *err)
{
	char url[1024];
	struct vmact_http_req q = { .url = url,
				    .method = method,
				    .body = body,
				    .timeout_usec = CALL_USEC,
				    .answer_max = answer_max,
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

static int call(const struct cl_kube *k, const char *token, const char *method, const char *path,
		const char *body, struct vmact_http_answer *a, struct vmact_err *err)
{
	return call_max(k, token, method, path, body, ANSWER_MAX, a, err);
}

/* The Node name as the API server has it: 1 and *node when it is the
 * VM's; 0 when there is none or it is another's. */
static int get_node(const struct cl_kube *k, const char *token, const char *name,
		    const char *provider_id, json_t **node, struct vmact_err *err)
{
	_cleanup_free_ char *esc = vmact_http_escape(name);
	struct vmact_http_answer a = { 0 };
	char path[512];
	const char *pid;
	json_t *doc = NULL;
	int r;

	*node = NULL;
	if (!esc)
		return vmact_err_set(err, ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", esc);
	r = call(k, token, "GET", path, NULL, &a, err);
	if (r >= 0 && a.status == 404)
		r = 0;
	else if (r >= 0 && a.status != 200)
		r = vmact_err_set(err, EIO, "kubernetes: GET Node %s: status %ld", name, a.status);
	else if (r >= 0) {
		doc = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, NULL);
		if (!json_is_object(doc))
			r = vmact_err_set(err, EPROTO, "kubernetes: GET Node %s: not a JSON object",
					  name);
		else {
			pid = json_string_value(
				json_object_get(json_object_get(doc, "spec"), "providerID"));
			/* Only a Node of this VM: another one of the name is
			 * left alone. */
			r = pid && !strcmp(pid, provider_id) ? 1 : 0;
		}
	}
	vmact_http_answer_free(&a);
	if (r == 1)
		*node = doc;
	else
		json_decref(doc);
	return r;
}

static int load_token(const struct cl_kube *k, uint8_t **token, size_t *len, struct vmact_err *err)
{
	int r = vmact_keyfile_load_max(k->token_file, TOKEN_MAX, token, len, err);

	return r < 0 ? vmact_err_prefix(err, "kubernetes.token_file") : 0;
}

static void drop_token(uint8_t *token, size_t len)
{
	if (token)
		explicit_bzero(token, len);
	free(token);
}

static int quantity(const json_t *map, const char *what, const char *key, bool milli, uint64_t *out,
		    struct vmact_err *err)
{
	const json_t *v = json_object_get(map, key);
	struct vmact_err why = { 0 };
	int r;

	if (!v)
		return 0;
	if (!json_is_string(v))
		return vmact_err_set(err, EPROTO, "kubernetes: Node's %s.%s: not a quantity", what,
				     key);
	r = milli ? vmact_quantity_parse_milli(json_string_value(v), out, &why)
		  : vmact_quantity_parse_value(json_string_value(v), out, &why);
	if (r < 0)
		return vmact_err_set(err, EPROTO, "kubernetes: Node's %s.%s: %s", what, key,
				     why.msg);
	return 1;
}

int cl_node_api_resources(const json_t *map, const char *what, struct cl_node_resources *out,
			  struct vmact_err *err)
{
	int have = 0, r;

	*out = (struct cl_node_resources){ 0 };
	if (!map)
		return 0;
	if (!json_is_object(map))
		return vmact_err_set(err, EPROTO, "kubernetes: Node's %s: not an object", what);
	if ((r = quantity(map, what, "cpu", true, &out->milli_cpu, err)) < 0)
		return r;
	have += r;
	if ((r = quantity(map, what, "memory", false, &out->memory, err)) < 0)
		return r;
	have += r;
	if ((r = quantity(map, what, "pods", false, &out->pods, err)) < 0)
		return r;
	have += r;
	if ((r = quantity(map, what, "ephemeral-storage", false, &out->ephemeral, err)) < 0)
		return r;
	return have == 3 ? 1 : 0;
}

int cl_node_api_report(const struct cl_kube *k, const char *name, const char *provider_id,
		       struct cl_node_report *out, struct vmact_err *err)
{
	_cleanup_(node_jsonp) json_t *node = NULL;
	const json_t *status;
	uint8_t *token = NULL;
	size_t tlen = 0;
	int r;

	if ((r = load_token(k, &token, &tlen, err)) < 0)
		return r;
	r = get_node(k, (const char *)token, name, provider_id, &node, err);
	drop_token(token, tlen);
	if (r <= 0)
		return r;
	status = json_object_get(node, "status");
	if ((r = cl_node_api_resources(json_object_get(status, "capacity"), "capacity",
				       &out->capacity, err)) <= 0)
		return r;
	return cl_node_api_resources(json_object_get(status, "allocatable"), "allocatable",
				     &out->allocatable, err);
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
	const char *uid = NULL;
	int r;

	if (!esc)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if ((r = load_token(k, &token, &tlen, err)) < 0)
		return r;
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", esc);
	r = get_node(k, (const char *)token, name, provider_id, &node, err);
	if (r == 1) {
		uid = json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
		r = uid ? 1 : 0;
	}
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
	drop_token(token, tlen);
	return r;
}

int cl_node_api_list(const struct cl_kube *k, cl_node_api_list_fn *fn, void *ud,
		     struct vmact_err *err)
{
	_cleanup_free_ char *cont = NULL;
	uint8_t *token = NULL;
	size_t tlen = 0;
	int r;

	if ((r = load_token(k, &token, &tlen, err)) < 0)
		return r;
	do {
		_cleanup_(node_jsonp) json_t *doc = NULL;
		_cleanup_free_ char *esc = cont ? vmact_http_escape(cont) : NULL;
		struct vmact_http_answer a = { 0 };
		const json_t *item;
		const char *next;
		char path[768];
		size_t i;

		if (cont && !esc) {
			r = vmact_err_set(err, ENOMEM, "out of memory");
			break;
		}
		if ((size_t)snprintf(path, sizeof(path), "/api/v1/nodes?limit=%d%s%s", LIST_PAGE,
				     esc ? "&continue=" : "", esc ? esc : "") >= sizeof(path)) {
			r = vmact_err_set(err, EPROTO, "kubernetes: LIST Nodes: continue too long");
			break;
		}
		r = call_max(k, (const char *)token, "GET", path, NULL, LIST_ANSWER_MAX, &a, err);
		if (r >= 0 && a.status != 200)
			r = vmact_err_set(err, EIO, "kubernetes: LIST Nodes: status %ld", a.status);
		if (r >= 0) {
			doc = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, NULL);
			if (!json_is_array(json_object_get(doc, "items")))
				r = vmact_err_set(err, EPROTO, "kubernetes: LIST Nodes: no items");
		}
		vmact_http_answer_free(&a);
		if (r < 0)
			break;
		json_array_foreach(json_object_get(doc, "items"), i, item) {
			const char *name = json_string_value(
				json_object_get(json_object_get(item, "metadata"), "name"));
			const char *pid = json_string_value(
				json_object_get(json_object_get(item, "spec"), "providerID"));

			if (name && pid)
				fn(ud, name, pid);
		}
		next = json_string_value(
			json_object_get(json_object_get(doc, "metadata"), "continue"));
		free(cont);
		cont = next && *next ? strdup(next) : NULL;
		if (next && *next && !cont)
			r = vmact_err_set(err, ENOMEM, "out of memory");
	} while (r >= 0 && cont);
	drop_token(token, tlen);
	return r < 0 ? r : 0;
}
