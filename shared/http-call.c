/* SPDX-License-Identifier: Apache-2.0 */
/* One blocking HTTP request to another vmact program (shared/http-call.h). */
#include "shared/http-call.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

DEFINE_PTR_CLEANUP(http_curlp, CURL, curl_easy_cleanup)
DEFINE_PTR_CLEANUP(http_slistp, struct curl_slist, curl_slist_free_all)

char *vmact_http_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	char *copy = e ? strdup(e) : NULL;

	curl_free(e);
	return copy;
}

/* libcurl asks this every second at least, and as data moves. */
static int on_progress(void *ud, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
	volatile sig_atomic_t *cancel = ud;

	(void)dlt, (void)dln, (void)ult, (void)uln;
	return *cancel != 0;
}

static long ms(uint64_t usec)
{
	/* at least 1 ms: 0 would mean "no limit" to libcurl */
	return usec / 1000 ? (long)(usec / 1000) : 1;
}

int vmact_http_call(const struct vmact_http_req *q, struct vmact_http_answer *a,
		    struct vmact_err *err)
{
	_cleanup_(http_curlp) CURL *c = NULL;
	_cleanup_(http_slistp) struct curl_slist *hdrs = NULL;
	char url[2048];
	CURLcode cc;

	*a = (struct vmact_http_answer){ .body = { .max = q->answer_max } };
	/* The host part is ignored on a unix socket; "localhost" keeps the
	 * Host header well-formed. */
	if (snprintf(url, sizeof(url), "%s%s", q->unix_socket ? "http://localhost" : "", q->url) >=
	    (int)sizeof(url))
		return vmact_err_set(err, EINVAL, "request URL too long");
	c = curl_easy_init();
	if (!c)
		return vmact_err_set(err, ENOMEM, "cannot initialise libcurl");
	if (q->unix_socket)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, q->unix_socket);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, q->ca_file ? "http,https" : "http");
	if (q->ca_file) {
		curl_easy_setopt(c, CURLOPT_CAINFO, q->ca_file);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	}
	if (q->bearer) {
		_cleanup_free_ char *h = NULL;

		if (asprintf(&h, "Authorization: Bearer %s", q->bearer) < 0 ||
		    !(hdrs = curl_slist_append(hdrs, h)))
			return vmact_err_set(err, ENOMEM, "out of memory");
		explicit_bzero(h, strlen(h));
	}
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms(q->timeout_usec));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 ms(q->connect_timeout_usec ? q->connect_timeout_usec : 5000000));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, vmact_buf_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a->body);
	if (q->cancel) {
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)q->cancel);
	}
	if (q->body) {
		struct curl_slist *h = curl_slist_append(hdrs, "Content-Type: application/json");

		if (!h)
			return vmact_err_set(err, ENOMEM, "out of memory");
		hdrs = h;
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
	}
	if (hdrs)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	cc = curl_easy_perform(c);
	if (a->body.too_big)
		return vmact_err_set(err, EMSGSIZE, "answer too large");
	switch (cc) {
	case CURLE_OK:
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
		return 0;
	case CURLE_ABORTED_BY_CALLBACK:
		return vmact_err_set(err, EINTR, "interrupted");
	case CURLE_OPERATION_TIMEDOUT:
		return vmact_err_set(err, ETIMEDOUT, "%s", curl_easy_strerror(cc));
	case CURLE_COULDNT_CONNECT: {
		long os_errno = 0;

		/* A socket whose mode refuses us is not a peer that is down. */
		curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
		if (os_errno == EACCES)
			return vmact_err_set(err, EACCES, "Permission denied");
		return vmact_err_set(err, ECONNREFUSED, "%s", curl_easy_strerror(cc));
	}
	case CURLE_OUT_OF_MEMORY:
		return vmact_err_set(err, ENOMEM, "%s", curl_easy_strerror(cc));
	default:
		return vmact_err_set(err, EIO, "%s", curl_easy_strerror(cc));
	}
}

void vmact_http_answer_free(struct vmact_http_answer *a)
{
	vmact_buf_free(&a->body);
}
