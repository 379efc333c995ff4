/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/host/host.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/virterror.h>

#include "base/endpoint.h"
#include "base/macro.h"
#include "shared/http-call.h"
#include "shared/keyfile.h"

/* One arbiter request; the answer's body is kept to this much. */
#define ANSWER_MAX     (256 * 1024)
#define HTTP_TIMEOUT_S 10

struct cl_host {
	struct cl_host_cfg cfg;
	struct vmact_endpoint ep;
	uint8_t *key;
	size_t key_len;
	pthread_mutex_t lock; /* conn and the status */
	virConnectPtr conn;
	struct cl_host_status st;
	bool draining; /* atomically: read by job threads */
};

int cl_host_new(const struct cl_host_cfg *cfg, struct cl_host **out, struct vmact_err *err)
{
	struct cl_host *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return vmact_err_set(err, ENOMEM, "out of memory");
	h->cfg = *cfg;
	pthread_mutex_init(&h->lock, NULL);
	r = vmact_endpoint_parse(cfg->arbiter_url, VMACT_EP_HTTP | VMACT_EP_UNIX | VMACT_EP_NO_PATH,
				 &h->ep, err);
	if (r >= 0)
		r = vmact_keyfile_load(cfg->arbiter_secret, &h->key, &h->key_len, err);
	if (r < 0) {
		cl_host_free(h);
		return vmact_err_prefix(err, "host %s: arbiter", cfg->name);
	}
	snprintf(h->st.libvirt_err, sizeof(h->st.libvirt_err), "not connected yet");
	snprintf(h->st.arbiter_err, sizeof(h->st.arbiter_err), "not asked yet");
	*out = h;
	return 0;
}

void cl_host_free(struct cl_host *h)
{
	if (!h)
		return;
	if (h->conn)
		virConnectClose(h->conn);
	free(h->key);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

const char *cl_host_name(const struct cl_host *h)
{
	return h->cfg.name;
}

const struct cl_host_cfg *cl_host_cfg(const struct cl_host *h)
{
	return &h->cfg;
}

static const char *virt_msg(void)
{
	virErrorPtr e = virGetLastError();

	return e && e->message ? e->message : "unknown libvirt error";
}

virConnectPtr cl_host_conn(struct cl_host *h, struct vmact_err *err)
{
	virConnectPtr c;

	pthread_mutex_lock(&h->lock);
	if (h->conn && virConnectIsAlive(h->conn) != 1) {
		virConnectClose(h->conn);
		h->conn = NULL;
	}
	if (!h->conn) {
		/* Opened outside the lock would be nicer for a slow remote host,
		 * but two threads would then open two connections. */
		h->conn = virConnectOpen(h->cfg.uri);
		if (h->conn)
			/* Needs the event loop (cl_host_event_loop_start); a dead
			 * remote host is then noticed within 15 s. */
			virConnectSetKeepAlive(h->conn, 5, 3);
	}
	c = h->conn;
	if (c) {
		virConnectRef(c);
		h->st.libvirt_ok = true;
		h->st.libvirt_err[0] = 0;
	} else {
		h->st.libvirt_ok = false;
		snprintf(h->st.libvirt_err, sizeof(h->st.libvirt_err), "%s", virt_msg());
		vmact_err_set(err, EHOSTUNREACH, "host %s: libvirt %s: %s", h->cfg.name, h->cfg.uri,
			      h->st.libvirt_err);
	}
	pthread_mutex_unlock(&h->lock);
	return c;
}

/* ---- the arbiter ---- */

static void arbiter_status(struct cl_host *h, bool ok, const char *why)
{
	pthread_mutex_lock(&h->lock);
	h->st.arbiter_ok = ok;
	snprintf(h->st.arbiter_err, sizeof(h->st.arbiter_err), "%s", ok ? "" : why);
	pthread_mutex_unlock(&h->lock);
}

/* One signed request; *status the HTTP status, *body its JSON (NULL when
 * none). -EIO when it did not get an answer. */
static int call(struct cl_host *h, const char *method, const char *path, const char *body,
		long *status, json_t **out, struct vmact_err *err)
{
	char sig[VMACT_LEASE_SIG_HEX + 1], url[1024];
	_cleanup_(vmact_http_answer_free) struct vmact_http_answer a = { 0 };
	long long ts = (long long)time(NULL);
	struct vmact_err e = { 0 };
	int r = 0;

	*out = NULL;
	vmact_lease_sign(h->key, h->key_len, method, path, ts, body ? body : "",
			 body ? strlen(body) : 0, sig);
	if (h->ep.kind == VMACT_EP_UNIX)
		snprintf(url, sizeof(url), "%s?ts=%lld&sig=%s", path, ts, sig);
	else
		snprintf(url, sizeof(url), "http://%s%s%s:%u%s?ts=%lld&sig=%s",
			 h->ep.host_v6 ? "[" : "", h->ep.host, h->ep.host_v6 ? "]" : "",
			 h->ep.port ? h->ep.port : 80, path, ts, sig);
	if (vmact_http_call(&(struct vmact_http_req){ .unix_socket = h->ep.kind == VMACT_EP_UNIX
									     ? h->ep.path
									     : NULL,
						      .url = url,
						      .method = method,
						      .body = body,
						      .timeout_usec = HTTP_TIMEOUT_S * 1000000ULL,
						      .answer_max = ANSWER_MAX },
			    &a, &e) < 0) {
		r = vmact_err_set(err, EIO, "arbiter %s: %s", h->cfg.arbiter_url, e.msg);
		arbiter_status(h, false, err ? err->msg : "unreachable");
		return r;
	}
	*status = a.status;
	if (a.body.data)
		*out = json_loads(a.body.data, 0, NULL);
	if (*status == 401 || *status == 403) {
		const char *why = json_string_value(json_object_get(*out, "error"));

		r = vmact_err_set(err, EACCES, "arbiter %s refused the lease key: %s",
				  h->cfg.arbiter_url, why ? why : "(no reason)");
		arbiter_status(h, false, err ? err->msg : "refused");
	} else if (*status == 404 && strcmp(path, "/v1/leases") == 0) {
		/* (A 404 for one entry only says the arbiter has none.) */
		r = vmact_err_set(err, EIO,
				  "arbiter %s has no lease interface (an older "
				  "arbiter, or leases not configured)",
				  h->cfg.arbiter_url);
		arbiter_status(h, false, err ? err->msg : "no leases");
	} else {
		arbiter_status(h, true, NULL);
	}
	if (r < 0) {
		json_decref(*out);
		*out = NULL;
	}
	return r;
}

static int lease(struct cl_host *h, const char *ns, const char *name, struct vmact_resources size,
		 uint64_t ttl_usec, bool existing, bool moving, struct vmact_err *err)
{
	struct vmact_lease_request req = { .size = size, .existing = existing, .moving = moving };
	_cleanup_free_ char *body = NULL;
	json_t *out = NULL;
	long status = 0;
	int r;

	snprintf(req.ns, sizeof(req.ns), "%s", ns);
	snprintf(req.name, sizeof(req.name), "%s", name);
	req.ttl_s = (uint32_t)((ttl_usec + 999999) / 1000000);
	body = vmact_lease_request_encode(&req);
	if (!body)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = call(h, "POST", "/v1/leases", body, &status, &out, err);
	if (r < 0)
		return r;
	if (status == 200)
		r = 0;
	else if (status == 409)
		r = vmact_err_set(err, EBUSY, "%s",
				  json_string_value(json_object_get(out, "error"))
					  ?: "no room at the arbiter");
	else
		r = vmact_err_set(err, EIO, "arbiter %s answered %ld: %s", h->cfg.arbiter_url,
				  status, json_string_value(json_object_get(out, "error")) ?: "");
	json_decref(out);
	return r;
}

int cl_host_lease(struct cl_host *h, const char *ns, const char *name, struct vmact_resources size,
		  uint64_t ttl_usec, bool existing, struct vmact_err *err)
{
	return lease(h, ns, name, size, ttl_usec, existing, false, err);
}

int cl_host_mark_moving(struct cl_host *h, const char *ns, const char *name,
			struct vmact_resources size, uint64_t ttl_usec, bool moving,
			struct vmact_err *err)
{
	return lease(h, ns, name, size, ttl_usec, true, moving, err);
}

int cl_host_pod(struct cl_host *h, const char *ns, const char *name, struct vmact_lease_pod *out,
		struct vmact_err *err)
{
	char path[256];
	json_t *doc = NULL;
	long status = 0;
	int r;

	snprintf(path, sizeof(path), "/v1/leases/%s/%s", ns, name);
	r = call(h, "GET", path, NULL, &status, &doc, err);
	if (r < 0)
		return r;
	if (status == 200)
		r = vmact_lease_pod_decode(doc, out, err);
	else if (status == 404)
		r = vmact_err_set(err, ENOENT, "arbiter %s has no entry %s/%s", h->cfg.arbiter_url,
				  ns, name);
	else
		r = vmact_err_set(err, EIO, "arbiter %s answered %ld for %s/%s%s%s",
				  h->cfg.arbiter_url, status, ns, name,
				  json_string_value(json_object_get(doc, "error")) ? ": " : "",
				  json_string_value(json_object_get(doc, "error")) ?: "");
	json_decref(doc);
	return r;
}

int cl_host_release(struct cl_host *h, const char *ns, const char *name, struct vmact_err *err)
{
	char path[256];
	json_t *out = NULL;
	long status = 0;
	int r;

	snprintf(path, sizeof(path), "/v1/leases/%s/%s", ns, name);
	r = call(h, "DELETE", path, NULL, &status, &out, err);
	json_decref(out);
	if (r < 0)
		return r;
	if (status != 200 && status != 404)
		return vmact_err_set(err, EIO, "arbiter %s answered %ld to a release",
				     h->cfg.arbiter_url, status);
	return 0;
}

int cl_host_ledger(struct cl_host *h, struct vmact_lease_ledger *l, struct vmact_err *err)
{
	json_t *out = NULL;
	long status = 0;
	int r;

	r = call(h, "GET", "/v1/leases", NULL, &status, &out, err);
	if (r < 0)
		return r;
	if (status != 200)
		r = vmact_err_set(err, EIO, "arbiter %s answered %ld", h->cfg.arbiter_url, status);
	else
		r = vmact_lease_ledger_decode(out, l, err);
	json_decref(out);
	if (r < 0) {
		arbiter_status(h, false, err ? err->msg : "bad ledger");
		return r;
	}
	pthread_mutex_lock(&h->lock);
	h->st.have_ledger = true;
	h->st.ledger = *l;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

void cl_host_set_draining(struct cl_host *h, bool draining)
{
	__atomic_store_n(&h->draining, draining, __ATOMIC_RELEASE);
}

bool cl_host_draining(struct cl_host *h)
{
	return __atomic_load_n(&h->draining, __ATOMIC_ACQUIRE);
}

void cl_host_status(struct cl_host *h, struct cl_host_status *out)
{
	pthread_mutex_lock(&h->lock);
	*out = h->st;
	pthread_mutex_unlock(&h->lock);
}

/* ---- libvirt's event loop ---- */

static void *event_thread(void *arg)
{
	for (;;)
		if (virEventRunDefaultImpl() < 0)
			break;
	return NULL;
}

int cl_host_event_loop_start(struct vmact_err *err)
{
	pthread_t t;
	int r;

	if (virEventRegisterDefaultImpl() < 0)
		return vmact_err_set(err, EIO, "libvirt event loop: %s", virt_msg());
	r = pthread_create(&t, NULL, event_thread, NULL);
	if (r)
		return vmact_err_set(err, r, "libvirt event loop: %s", strerror(r));
	pthread_detach(t);
	return 0;
}
