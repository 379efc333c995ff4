/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/macro.h"

/* Answers are small (a few hundred VMs at most); a bound keeps a broken
 * peer from filling memory. */
#define ANSWER_MAX (16u << 20)

char *ctl_escape(const char *name)
{
	char *e = curl_easy_escape(NULL, name, 0);
	char *copy = e ? strdup(e) : NULL;

	curl_free(e);
	return copy;
}

static volatile sig_atomic_t *cancel_flag;
static const char *peer = "vmactd", *peer_hint = " (is vmactd running? are you root?)";

void ctl_set_peer(const char *name, const char *hint)
{
	peer = name;
	peer_hint = hint;
}

void ctl_set_cancel(volatile sig_atomic_t *flag)
{
	cancel_flag = flag;
}

/* libcurl asks this every second at least, and as data moves. */
static int on_progress(void *ud, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
	(void)ud, (void)dlt, (void)dln, (void)ult, (void)uln;
	return cancel_flag && *cancel_flag;
}

int ctl_call(const char *socket, const char *method, const char *path, const char *body,
	     long timeout_s, long *status, json_t **out, struct vmact_err *err)
{
	_cleanup_(vmact_buf_free) struct vmact_buf b = { .max = ANSWER_MAX };
	struct curl_slist *hdrs = NULL;
	char url[2048];
	json_error_t je;
	json_t *doc;
	CURLcode cc;
	CURL *c;
	int r = 0;

	*out = NULL;
	*status = 0;
	c = curl_easy_init();
	if (!c)
		return vmact_err_set(err, ENOMEM, "cannot initialise libcurl");
	/* The host part is ignored on a unix socket; "localhost" keeps the
	 * Host header well-formed. */
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vmact_buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (cancel_flag) {
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	}
	if (body) {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	cc = curl_easy_perform(c);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		r = vmact_err_set(err, EINTR, "interrupted");
		goto out;
	}
	if (cc == CURLE_COULDNT_CONNECT) {
		long os_errno = 0;

		/* The socket's mode: say so rather than "is it running?". */
		curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
		if (os_errno == EACCES) {
			r = vmact_err_set(err, EACCES,
					  "cannot reach %s at %s: Permission denied (the socket's "
					  "owner and group decide who may)",
					  peer, socket);
			goto out;
		}
	}
	if (cc != CURLE_OK) {
		r = vmact_err_set(err, cc == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
				  "cannot reach %s at %s: %s%s", peer, socket,
				  b.too_big ? "answer too large" : curl_easy_strerror(cc),
				  cc == CURLE_COULDNT_CONNECT ? peer_hint : "");
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	doc = json_loadb(b.data ? b.data : "", b.len, 0, &je);
	if (*status < 200 || *status > 299) {
		const char *msg = doc ? json_string_value(json_object_get(doc, "error")) : NULL;

		r = vmact_err_set(err, EPROTO, "%s: %s", peer,
				  msg      ? msg
				  : b.data ? b.data
					   : "(no reason)");
		json_decref(doc);
		goto out;
	}
	if (!doc) {
		r = vmact_err_set(err, EPROTO, "%s answered with something other than JSON: %s",
				  peer, je.text);
		goto out;
	}
	*out = doc;
out:
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
	return r;
}
