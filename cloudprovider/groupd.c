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

/* A listing of a large group is tens of KiB; the bound keeps a broken
 * groupd from filling this process. */
#define ANSWER_MAX (8u << 20)

DEFINE_PTR_CLEANUP(cp_groupd_curlp, CURL, curl_easy_cleanup)
DEFINE_PTR_CLEANUP(cp_groupd_slistp, struct curl_slist, curl_slist_free_all)
DEFINE_PTR_CLEANUP(cp_groupd_jsonp, json_t, json_decref)

int cp_groupd_global_init(struct vmact_err *err)
{
	CURLcode cc = curl_global_init(CURL_GLOBAL_DEFAULT);

	return cc == CURLE_OK ? 0 : vmact_err_set(err, EIO, "libcurl: %s", curl_easy_strerror(cc));
}

char *cp_groupd_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *copy = e ? strdup(e) : NULL;

	curl_free(e);
	return copy;
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
	_cleanup_(cp_groupd_curlp) CURL *c = NULL;
	_cleanup_(cp_groupd_slistp) struct curl_slist *hdrs = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_(vmact_buf_free) struct vmact_buf a = { .max = ANSWER_MAX };
	char url[2048];
	long status = 0;
	json_error_t je;
	CURLcode cc;
	int r = 0;

	*out = NULL;
	if (snprintf(url, sizeof(url), "http://localhost%s", path) >= (int)sizeof(url))
		return vmact_err_set(err, EINVAL, "request path too long");
	c = curl_easy_init();
	if (!c)
		return vmact_err_set(err, ENOMEM, "cannot initialise libcurl");
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text)
			return vmact_err_set(err, ENOMEM, "out of memory");
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		if (!hdrs)
			return vmact_err_set(err, ENOMEM, "out of memory");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	}
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	/* at least 1 ms: 0 would mean "no limit" to libcurl */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			 (long)(timeout_usec / 1000 ? timeout_usec / 1000 : 1));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vmact_buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		r = vmact_err_set(err, ETIMEDOUT, "vmact-groupd at %s did not answer %s %s in time",
				  socket, method, path);
		goto out;
	}
	if (cc != CURLE_OK) {
		r = vmact_err_set(err, a.too_big ? EIO : EAGAIN,
				  "cannot reach vmact-groupd at %s: %s", socket,
				  a.too_big ? "answer too large" : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		r = answer_error(status, &a, err);
		goto out;
	}
	*out = json_loadb(a.data ? a.data : "", a.len, 0, &je);
	if (!*out)
		r = vmact_err_set(err, EIO,
				  "vmact-groupd answered %s %s with something other than JSON: %s",
				  method, path, je.text);
out:
	return r;
}
