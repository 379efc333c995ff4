/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/groupd.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/macro.h"
#include "shared/http-call.h"

/* A listing of a large group is tens of KiB; the bound keeps a broken
 * groupd from filling this process. */
#define ANSWER_MAX (8u << 20)

DEFINE_PTR_CLEANUP(cp_groupd_jsonp, json_t, json_decref)

int cp_groupd_global_init(struct vmact_err *err)
{
	CURLcode cc = curl_global_init(CURL_GLOBAL_DEFAULT);

	return cc == CURLE_OK ? 0 : vmact_err_set(err, EIO, "libcurl: %s", curl_easy_strerror(cc));
}

char *cp_groupd_escape(const char *s)
{
	return vmact_http_escape(s);
}

/* doc/cluster-api.md's reasons; an unknown reason falls back on the
 * HTTP status, so a groupd newer than this file still maps sensibly. */
static int reason_errno(const char *reason, long status)
{
	static const struct {
		const char *reason;
		int err;
	} map[] = {
		{ "not-found", ENOENT },   { "invalid", EINVAL },     { "out-of-range", ERANGE },
		{ "precondition", EBUSY }, { "unavailable", EAGAIN }, { "internal", EIO },
	};

	for (size_t i = 0; reason && i < ARRAY_SIZE(map); i++)
		if (!strcmp(reason, map[i].reason))
			return map[i].err;
	switch (status) {
	case 404:
		return ENOENT;
	case 400:
		return EINVAL;
	case 409:
		return EBUSY;
	case 503:
		return EAGAIN;
	default:
		return EIO;
	}
}

static int answer_error(long status, const struct vmact_buf *a, struct vmact_err *err)
{
	_cleanup_(cp_groupd_jsonp) json_t *doc = NULL;
	const char *msg = NULL, *reason = NULL;

	if (a->data)
		doc = json_loadb(a->data, a->len, 0, NULL);
	if (json_is_object(doc)) {
		msg = json_string_value(json_object_get(doc, "error"));
		reason = json_string_value(json_object_get(doc, "reason"));
	}
	return vmact_err_set(err, reason_errno(reason, status), "vmact-groupd: %s",
			     msg ? msg : "HTTP error without a reason");
}

int cp_groupd_call(const char *socket, const char *method, const char *path, const json_t *body,
		   uint64_t timeout_usec, json_t **out, struct vmact_err *err)
{
	_cleanup_(vmact_http_answer_free) struct vmact_http_answer a = { 0 };
	_cleanup_free_ char *text = NULL;
	struct vmact_err e = { 0 };
	json_error_t je;
	int r;

	*out = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	r = vmact_http_call(&(struct vmact_http_req){ .unix_socket = socket,
						      .url = path,
						      .method = method,
						      .body = text,
						      .timeout_usec = timeout_usec,
						      .answer_max = ANSWER_MAX },
			    &a, &e);
	if (r == -ETIMEDOUT)
		return vmact_err_set(err, ETIMEDOUT,
				     "vmact-groupd at %s did not answer %s %s in time", socket,
				     method, path);
	if (r == -ENOMEM || r == -EINVAL)
		return vmact_err_set(err, -r, "%s", e.msg);
	if (r < 0)
		return vmact_err_set(err, r == -EMSGSIZE ? EIO : EAGAIN,
				     "cannot reach vmact-groupd at %s: %s", socket, e.msg);
	if (a.status < 200 || a.status > 299)
		return answer_error(a.status, &a.body, err);
	*out = json_loadb(a.body.data ? a.body.data : "", a.body.len, 0, &je);
	if (!*out)
		return vmact_err_set(
			err, EIO, "vmact-groupd answered %s %s with something other than JSON: %s",
			method, path, je.text);
	return 0;
}
