/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/config/config.h"

#include <errno.h>
#include <libxml/parser.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/endpoint.h"
#include "base/macro.h"
#include "base/quantity.h"

/* ---- typed members; every error names its key ---- */

struct ctx {
	char path[256];
	struct vmact_err *err;
};

static int bad(struct ctx *c, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct ctx *c, const char *key, const char *fmt, ...)
{
	char msg[VMACT_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return vmact_err_set(c->err, EINVAL, "%s%s%s: %s", c->path, c->path[0] && key ? "." : "",
			     key ? key : "", msg);
}

/* Refuses members not in `known` (NULL-terminated). */
static int only(struct ctx *c, const json_t *obj, const char *const *known)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return bad(c, NULL, "must be an object");
	json_object_foreach((json_t *)obj, key, v) {
		bool ok = false;

		for (size_t i = 0; known[i]; i++)
			ok |= strcmp(key, known[i]) == 0;
		if (!ok)
			return bad(c, key, "unknown key");
	}
	return 0;
}

static int get_str(struct ctx *c, const json_t *obj, const char *key, bool required, bool empty_ok,
		   char *buf, size_t size)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? bad(c, key, "required") : 0;
	if (!json_is_string(v))
		return bad(c, key, "must be a string");
	if (!empty_ok && !json_string_length(v))
		return bad(c, key, "must not be empty");
	if (json_string_length(v) >= size)
		return bad(c, key, "longer than %zu characters", size - 1);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(c, key, "contains a NUL character");
	memcpy(buf, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int get_uint(struct ctx *c, const json_t *obj, const char *key, bool required,
		    unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? bad(c, key, "required") : 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) < lo ||
	    (unsigned long long)json_integer_value(v) > hi)
		return bad(c, key, "an integer from %llu to %llu", lo, hi);
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

static int get_unsigned(struct ctx *c, const json_t *obj, const char *key, bool required,
			unsigned lo, unsigned hi, unsigned *out)
{
	unsigned long long v = *out;
	int r = get_uint(c, obj, key, required, lo, hi, &v);

	*out = (unsigned)v;
	return r;
}

static int get_seconds(struct ctx *c, const json_t *obj, const char *key, double lo, double hi,
		       uint64_t *usec)
{
	const json_t *v = json_object_get(obj, key);
	double d;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return bad(c, key, "a number of seconds from %g to %g", lo, hi);
	d = json_number_value(v);
	if (!(d >= lo && d <= hi))
		return bad(c, key, "a number of seconds from %g to %g", lo, hi);
	*usec = (uint64_t)(d * 1e6);
	return 0;
}

/* A Kubernetes quantity as a string ("512Mi"), or a plain integer. */
static int get_bytes(struct ctx *c, const json_t *obj, const char *key, bool required,
		     uint64_t *out)
{
	const json_t *v = json_object_get(obj, key);
	struct vmact_err e = { 0 };

	if (!v)
		return required ? bad(c, key, "required") : 0;
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || vmact_quantity_parse_value(json_string_value(v), out, &e) < 0)
		return bad(c, key, "a size (\"512Mi\", \"2Gi\" or bytes)%s%s", e.msg[0] ? ": " : "",
			   e.msg);
	if (!*out)
		return bad(c, key, "must be positive");
	return 0;
}

static int get_milli(struct ctx *c, const json_t *obj, const char *key, uint32_t *out)
{
	const json_t *v = json_object_get(obj, key);
	struct vmact_err e = { 0 };
	uint64_t m;

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 1000000) {
		*out = (uint32_t)json_integer_value(v) * 1000;
		return 0;
	}
	if (!json_is_string(v) || vmact_quantity_parse_milli(json_string_value(v), &m, &e) < 0 ||
	    !m || m > UINT32_MAX)
		return bad(c, key, "a CPU quantity (\"1\", \"500m\")%s%s", e.msg[0] ? ": " : "",
			   e.msg);
	*out = (uint32_t)m;
	return 0;
}

static void push(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void push(struct ctx *c, const char *fmt, ...)
{
	size_t n = strlen(c->path);
	va_list ap;

	if (n && n + 1 < sizeof(c->path))
		c->path[n++] = '.';
	va_start(ap, fmt);
	vsnprintf(c->path + n, sizeof(c->path) - n, fmt, ap);
	va_end(ap);
}

/* Back to the path before the last push (a '.' or a '['). */
static void pop(struct ctx *c, size_t len)
{
	c->path[len] = 0;
}

static bool name_ok(const char *s)
{
	/* Names end up in domain names, URLs and metric labels. */
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

/* ---- sections ---- */

static int parse_lifecycle(struct ctx *c, const json_t *o, struct cl_lifecycle *l)
{
	static const char *const keys[] = { "boot_timeout_s",    "healthy_timeout_s",
					    "health_interval_s", "max_boots_per_iteration",
					    "lease_s",           "retry_backoff_s",
					    "refill_interval_s", NULL };
	int r;

	if ((r = only(c, o, keys)) < 0 ||
	    (r = get_seconds(c, o, "boot_timeout_s", 1, 86400, &l->boot_timeout_usec)) < 0 ||
	    (r = get_seconds(c, o, "healthy_timeout_s", 1, 86400, &l->healthy_timeout_usec)) < 0 ||
	    (r = get_seconds(c, o, "health_interval_s", 0.1, 3600, &l->health_interval_usec)) < 0 ||
	    (r = get_unsigned(c, o, "max_boots_per_iteration", false, 1, 1000,
			      &l->max_boots_per_iteration)) < 0 ||
	    (r = get_seconds(c, o, "lease_s", 2, 86400, &l->lease_usec)) < 0 ||
	    (r = get_seconds(c, o, "retry_backoff_s", 0, 86400, &l->retry_backoff_usec)) < 0 ||
	    (r = get_seconds(c, o, "refill_interval_s", 0.1, 3600, &l->refill_interval_usec)) < 0)
		return r;
	if (l->health_interval_usec > l->healthy_timeout_usec)
		return bad(c, "health_interval_s",
			   "longer than healthy_timeout_s: a standby VM would "
			   "time out between two checks");
	return 0;
}

static int parse_host(struct ctx *c, const json_t *o, struct cl_host_cfg *h)
{
	static const char *const keys[] = { "name",        "uri",     "storage_pool",
					    "channel_dir", "arbiter", NULL };
	static const char *const akeys[] = { "url", "secret_file", NULL };
	struct vmact_endpoint ep;
	struct vmact_err e = { 0 };
	const json_t *a;
	size_t len;
	int r;

	snprintf(h->storage_pool, sizeof(h->storage_pool), "default");
	if ((r = only(c, o, keys)) < 0 ||
	    (r = get_str(c, o, "name", true, false, h->name, sizeof(h->name))) < 0 ||
	    (r = get_str(c, o, "uri", true, false, h->uri, sizeof(h->uri))) < 0 ||
	    (r = get_str(c, o, "storage_pool", false, false, h->storage_pool,
			 sizeof(h->storage_pool))) < 0)
		return r;
	if (!name_ok(h->name))
		return bad(c, "name", "'%s': lower-case letters, digits and '-' only", h->name);
	if (json_object_get(o, "channel_dir")) {
		const char *d = json_string_value(json_object_get(o, "channel_dir"));

		if (!d || d[0] != '/' || strlen(d) >= sizeof(h->channel_dir) || strchr(d, '\'') ||
		    strstr(d, "//") || (strlen(d) > 1 && d[strlen(d) - 1] == '/'))
			return bad(c, "channel_dir",
				   "an absolute directory of at most %zu bytes (the sockets' "
				   "paths must stay within 107 bytes)",
				   sizeof(h->channel_dir) - 1);
		snprintf(h->channel_dir, sizeof(h->channel_dir), "%s", d);
	}
	a = json_object_get(o, "arbiter");
	if (!a)
		return bad(c, "arbiter", "required: the host's arbiter keeps its capacity ledger");
	len = strlen(c->path);
	push(c, "arbiter");
	if ((r = only(c, a, akeys)) < 0 ||
	    (r = get_str(c, a, "url", true, false, h->arbiter_url, sizeof(h->arbiter_url))) < 0 ||
	    (r = get_str(c, a, "secret_file", true, false, h->arbiter_secret,
			 sizeof(h->arbiter_secret))) < 0)
		return r;
	if (vmact_endpoint_parse(h->arbiter_url, VMACT_EP_HTTP | VMACT_EP_UNIX | VMACT_EP_NO_PATH,
				 &ep, &e) < 0)
		return bad(c, "url", "%s (http://HOST:PORT or unix:PATH)", e.msg);
	if (h->arbiter_secret[0] != '/')
		return bad(c, "secret_file", "must be an absolute path");
	pop(c, len);
	return 0;
}

static int parse_health(struct ctx *c, const json_t *o, struct cl_health *h)
{
	static const char *const keys[] = { "kind",         "pattern", "address", "probe_timeout_s",
					    "on_unhealthy", NULL };
	char kind[16] = "serial", on[16] = "report";
	int r;

	if ((r = only(c, o, keys)) < 0 ||
	    (r = get_str(c, o, "on_unhealthy", false, false, on, sizeof(on))) < 0 ||
	    (r = get_str(c, o, "kind", false, false, kind, sizeof(kind))) < 0 ||
	    (r = get_str(c, o, "pattern", false, false, h->pattern, sizeof(h->pattern))) < 0 ||
	    (r = get_str(c, o, "address", false, false, h->address, sizeof(h->address))) < 0 ||
	    (r = get_seconds(c, o, "probe_timeout_s", 0.1, 600, &h->probe_timeout_usec)) < 0)
		return r;
	if (strcmp(on, "report") && strcmp(on, "replace"))
		return bad(c, "on_unhealthy", "'%s': report or replace", on);
	h->replace_unhealthy = strcmp(on, "replace") == 0;
	if (strcmp(kind, "serial") == 0) {
		h->kind = CL_HEALTH_SERIAL;
		if (json_object_get(o, "address"))
			return bad(c, "address", "only for kind \"tcp\"");
	} else if (strcmp(kind, "agent") == 0) {
		h->kind = CL_HEALTH_AGENT;
		if (json_object_get(o, "address") || json_object_get(o, "pattern"))
			return bad(c, json_object_get(o, "address") ? "address" : "pattern",
				   "not for kind \"agent\"");
	} else if (strcmp(kind, "tcp") == 0) {
		struct vmact_listen l;
		struct vmact_err e = { 0 };

		h->kind = CL_HEALTH_TCP;
		if (json_object_get(o, "pattern"))
			return bad(c, "pattern", "only for kind \"serial\"");
		if (!h->address[0])
			return bad(c, "address", "required for kind \"tcp\" (ADDR:PORT)");
		if (vmact_listen_parse(h->address, false, &l, &e) < 0 || !l.port)
			return bad(c, "address", "'%s': a numeric ADDR:PORT with a port",
				   h->address);
	} else {
		return bad(c, "kind", "'%s': serial, agent or tcp", kind);
	}
	return 0;
}

static int parse_taints(struct ctx *c, const json_t *a, struct cl_group_cfg *g)
{
	static const char *const keys[] = { "key", "value", "effect", NULL };
	size_t len = strlen(c->path), i;
	json_t *t;
	int r;

	if (!json_is_array(a))
		return bad(c, "taints", "must be an array");
	g->taints = calloc(json_array_size(a) + 1, sizeof(*g->taints));
	if (!g->taints)
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	json_array_foreach(a, i, t) {
		struct cl_taint *x = &g->taints[i];

		pop(c, len);
		push(c, "taints[%zu]", i);
		if ((r = only(c, t, keys)) < 0 ||
		    (r = get_str(c, t, "key", true, false, x->key, sizeof(x->key))) < 0 ||
		    (r = get_str(c, t, "value", false, true, x->value, sizeof(x->value))) < 0 ||
		    (r = get_str(c, t, "effect", true, false, x->effect, sizeof(x->effect))) < 0)
			return r;
		if (strcmp(x->effect, "NoSchedule") && strcmp(x->effect, "PreferNoSchedule") &&
		    strcmp(x->effect, "NoExecute"))
			return bad(c, "effect", "'%s': NoSchedule, PreferNoSchedule or NoExecute",
				   x->effect);
		g->n_taints++;
	}
	pop(c, len);
	return 0;
}

static int check_metadata_xml(struct ctx *c, const char *xml)
{
	/* A wrapper makes a list of elements one document. */
	_cleanup_free_ char *doc = NULL;
	xmlDocPtr d;

	if (asprintf(&doc, "<metadata>%s</metadata>", xml) < 0)
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	d = xmlReadMemory(doc, (int)strlen(doc), NULL, NULL,
			  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!d)
		return bad(c, "metadata_xml", "not well-formed XML");
	xmlFreeDoc(d);
	return 0;
}

static int parse_template(struct ctx *c, const json_t *o, struct cl_template *t)
{
	static const char *const keys[] = { "vcpus",
					    "max_vcpus",
					    "memory",
					    "max_memory",
					    "pods",
					    "arch",
					    "os",
					    "kernel",
					    "initrd",
					    "cmdline",
					    "base_volume",
					    "disk_bus",
					    "serial_log_dir",
					    "metadata_xml",
					    "reserve",
					    "domain_type",
					    "ephemeral_storage",
					    NULL };
	char dtype[8] = "kvm";
	static const char *const rkeys[] = { "cpu", "memory", NULL };
	const json_t *v;
	int r;

	t->vcpus = 1;
	t->pods = 110;
	snprintf(t->arch, sizeof(t->arch), "amd64");
	snprintf(t->os, sizeof(t->os), "linux");
	snprintf(t->disk_bus, sizeof(t->disk_bus), "virtio");
	if ((r = only(c, o, keys)) < 0 ||
	    (r = get_unsigned(c, o, "vcpus", false, 1, 1024, &t->vcpus)) < 0 ||
	    (r = get_unsigned(c, o, "max_vcpus", false, 1, 1024, &t->max_vcpus)) < 0 ||
	    (r = get_bytes(c, o, "memory", true, &t->memory)) < 0 ||
	    (r = get_bytes(c, o, "max_memory", false, &t->max_memory)) < 0 ||
	    (r = get_bytes(c, o, "ephemeral_storage", false, &t->ephemeral_storage)) < 0 ||
	    (r = get_unsigned(c, o, "pods", false, 0, 100000, &t->pods)) < 0 ||
	    (r = get_str(c, o, "arch", false, false, t->arch, sizeof(t->arch))) < 0 ||
	    (r = get_str(c, o, "os", false, false, t->os, sizeof(t->os))) < 0 ||
	    (r = get_str(c, o, "kernel", false, false, t->kernel, sizeof(t->kernel))) < 0 ||
	    (r = get_str(c, o, "initrd", false, false, t->initrd, sizeof(t->initrd))) < 0 ||
	    (r = get_str(c, o, "cmdline", false, true, t->cmdline, sizeof(t->cmdline))) < 0 ||
	    (r = get_str(c, o, "base_volume", true, false, t->base_volume,
			 sizeof(t->base_volume))) < 0 ||
	    (r = get_str(c, o, "disk_bus", false, false, t->disk_bus, sizeof(t->disk_bus))) < 0 ||
	    (r = get_str(c, o, "serial_log_dir", false, false, t->serial_log_dir,
			 sizeof(t->serial_log_dir))) < 0 ||
	    (r = get_str(c, o, "domain_type", false, false, dtype, sizeof(dtype))) < 0 ||
	    (r = get_str(c, o, "network", false, false, t->network, sizeof(t->network))) < 0)
		return r;
	if (strcmp(dtype, "kvm") && strcmp(dtype, "qemu"))
		return bad(c, "domain_type", "'%s': kvm or qemu (TCG, no hardware acceleration)",
			   dtype);
	t->kvm = strcmp(dtype, "kvm") == 0;
	if (strcmp(t->arch, "amd64") && strcmp(t->arch, "arm64"))
		return bad(c, "arch", "'%s': amd64 or arm64", t->arch);
	if (!t->max_vcpus)
		t->max_vcpus = t->vcpus;
	if (!t->max_memory)
		t->max_memory = t->memory;
	if (t->max_vcpus < t->vcpus)
		return bad(c, "max_vcpus", "below vcpus (%u)", t->vcpus);
	if (t->max_memory < t->memory)
		return bad(c, "max_memory", "below memory");
	if (t->memory % (1 << 20) || t->max_memory % (2 << 20))
		return bad(c, t->memory % (1 << 20) ? "memory" : "max_memory",
			   "must be whole MiB (max_memory: whole 2 MiB blocks)");
	if ((t->max_memory - t->memory) % (2 << 20))
		return bad(c, "max_memory",
			   "must exceed memory by whole 2 MiB blocks (virtio-mem)");
	if (t->initrd[0] && !t->kernel[0])
		return bad(c, "initrd", "needs kernel");
	if (t->kernel[0] && t->kernel[0] != '/')
		return bad(c, "kernel", "must be an absolute path");
	if (t->initrd[0] && t->initrd[0] != '/')
		return bad(c, "initrd", "must be an absolute path");
	if (t->serial_log_dir[0] && t->serial_log_dir[0] != '/')
		return bad(c, "serial_log_dir", "must be an absolute path");
	if (strcmp(t->disk_bus, "virtio") && strcmp(t->disk_bus, "sata") &&
	    strcmp(t->disk_bus, "scsi"))
		return bad(c, "disk_bus", "'%s': virtio, sata or scsi", t->disk_bus);
	if (strchr(t->base_volume, '/'))
		return bad(c, "base_volume",
			   "a volume name in the host's storage_pool, not a path");
	if (strchr(t->cmdline, '<') || strchr(t->cmdline, '&'))
		return bad(c, "cmdline", "'<' and '&' are not allowed");
	v = json_object_get(o, "metadata_xml");
	if (v) {
		if (!json_is_string(v))
			return bad(c, "metadata_xml", "must be a string");
		if ((r = check_metadata_xml(c, json_string_value(v))) < 0)
			return r;
		t->metadata_xml = strdup(json_string_value(v));
		if (!t->metadata_xml)
			return vmact_err_set(c->err, ENOMEM, "out of memory");
	}
	t->reserve.milli_cpu = t->vcpus * 1000;
	t->reserve.mem_bytes = t->memory;
	v = json_object_get(o, "reserve");
	if (v) {
		size_t len = strlen(c->path);

		push(c, "reserve");
		if ((r = only(c, v, rkeys)) < 0 ||
		    (r = get_milli(c, v, "cpu", &t->reserve.milli_cpu)) < 0 ||
		    (r = get_bytes(c, v, "memory", false, &t->reserve.mem_bytes)) < 0)
			return r;
		pop(c, len);
	}
	return 0;
}

static int parse_options(struct ctx *c, const json_t *o, json_t **out)
{
	static const char *const dbl[] = { "scale_down_utilization_threshold",
					   "scale_down_gpu_utilization_threshold", NULL };
	static const char *const secs[] = { "scale_down_unneeded_time_s",
					    "scale_down_unready_time_s",
					    "max_node_provision_time_s", "max_node_startup_time_s",
					    NULL };
	static const char *const bools[] = { "zero_or_max_node_scaling",
					     "ignore_daemonsets_utilization",
					     "allow_non_atomic_scale_up_to_max", NULL };
	const char *key;
	json_t *v;

	if (!json_is_object(o))
		return bad(c, NULL, "must be an object");
	json_object_foreach((json_t *)o, key, v) {
		bool known = false;

		for (size_t i = 0; dbl[i]; i++)
			if (strcmp(key, dbl[i]) == 0) {
				known = true;
				if (!json_is_number(v) || json_number_value(v) < 0 ||
				    json_number_value(v) > 1)
					return bad(c, key, "a fraction from 0 to 1");
			}
		for (size_t i = 0; secs[i]; i++)
			if (strcmp(key, secs[i]) == 0) {
				known = true;
				/* vmact-groupd's API carries at most 1e9 s
				 * (shared/group-api.h) */
				if (!json_is_number(v) ||
				    !(json_number_value(v) >= 0 && json_number_value(v) <= 1e9))
					return bad(c, key, "a number of seconds from 0 to 1e9");
			}
		for (size_t i = 0; bools[i]; i++)
			if (strcmp(key, bools[i]) == 0) {
				known = true;
				if (!json_is_boolean(v))
					return bad(c, key, "must be true or false");
			}
		if (!known)
			return bad(c, key, "unknown key (a NodeGroupAutoscalingOptions field)");
	}
	*out = json_deep_copy(o);
	return *out ? 0 : vmact_err_set(c->err, ENOMEM, "out of memory");
}

static int parse_group(struct ctx *c, const json_t *o, const struct cl_config *cfg,
		       struct cl_group_cfg *g)
{
	static const char *const keys[] = { "id",        "min",    "max",      "hosts",
					    "labels",    "taints", "template", "health",
					    "claim",     "pool",   "options",  "scheduler_name",
					    "lifecycle", NULL };
	static const char *const pkeys[] = { "running", "paused", "saved", NULL };
	static const char *const ckeys[] = { "channel", "ack", NULL };
	size_t len = strlen(c->path), i;
	const json_t *v;
	json_t *it;
	const char *key;
	int r;

	g->life = cfg->life;
	snprintf(g->scheduler_name, sizeof(g->scheduler_name), "default");
	snprintf(g->health.pattern, sizeof(g->health.pattern), "VMACT ");
	g->health.probe_timeout_usec = 3 * 1000000ULL;
	snprintf(g->claim.channel, sizeof(g->claim.channel), "virtio:org.vmact.claim.0");
	if ((r = only(c, o, keys)) < 0 ||
	    (r = get_str(c, o, "id", true, false, g->id, sizeof(g->id))) < 0 ||
	    (r = get_unsigned(c, o, "min", false, 0, 100000, &g->min)) < 0 ||
	    (r = get_unsigned(c, o, "max", true, 0, 100000, &g->max)) < 0 ||
	    (r = get_str(c, o, "scheduler_name", false, false, g->scheduler_name,
			 sizeof(g->scheduler_name))) < 0)
		return r;
	if (!name_ok(g->id) || strlen(g->id) > 40)
		return bad(c, "id", "'%s': up to 40 lower-case letters, digits and '-'", g->id);
	if (g->min > g->max)
		return bad(c, "min", "above max (%u)", g->max);
	v = json_object_get(o, "hosts");
	if (!v)
		return bad(c, "hosts", "required: the hosts the group may use");
	if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > CL_MAX_HOSTS)
		return bad(c, "hosts", "a list of 1 to %d host names", CL_MAX_HOSTS);
	json_array_foreach(v, i, it) {
		const char *h = json_string_value(it);

		if (!h || !cl_config_host(cfg, h))
			return vmact_err_set(c->err, EINVAL, "%s.hosts[%zu]: %s%s%s", c->path, i,
					     h ? "no host called '" : "must be a host name",
					     h ? h : "", h ? "' in hosts" : "");
		for (size_t k = 0; k < g->n_hosts; k++)
			if (strcmp(g->hosts[k], h) == 0)
				return vmact_err_set(c->err, EINVAL,
						     "%s.hosts[%zu]: '%s' listed twice", c->path, i,
						     h);
		snprintf(g->hosts[g->n_hosts++], CL_NAME_MAX, "%s", h);
	}
	v = json_object_get(o, "labels");
	if (v) {
		if (!json_is_object(v))
			return bad(c, "labels", "must be an object of strings");
		json_object_foreach((json_t *)v, key, it)
			if (!json_is_string(it))
				return vmact_err_set(c->err, EINVAL,
						     "%s.labels.%s: must be a string", c->path,
						     key);
		g->labels = json_deep_copy(v);
	} else {
		g->labels = json_object();
	}
	if (!g->labels)
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	if ((v = json_object_get(o, "taints")) && (r = parse_taints(c, v, g)) < 0)
		return r;
	v = json_object_get(o, "template");
	if (!v)
		return bad(c, "template", "required");
	push(c, "template");
	if ((r = parse_template(c, v, &g->tpl)) < 0)
		return r;
	pop(c, len);
	if ((v = json_object_get(o, "health"))) {
		push(c, "health");
		if ((r = parse_health(c, v, &g->health)) < 0)
			return r;
		pop(c, len);
	}
	if ((v = json_object_get(o, "claim"))) {
		push(c, "claim");
		if ((r = only(c, v, ckeys)) < 0 ||
		    (r = get_str(c, v, "channel", false, false, g->claim.channel,
				 sizeof(g->claim.channel))) < 0 ||
		    (r = get_str(c, v, "ack", false, true, g->claim.ack, sizeof(g->claim.ack))) < 0)
			return r;
		if (strncmp(g->claim.channel, "virtio:", 7) == 0) {
			const char *n = g->claim.channel + 7;

			if (!*n ||
			    strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(n))
				return bad(c, "channel", "'%s': virtio:NAME, NAME of [a-z0-9._-]",
					   g->claim.channel);
		} else if (strncmp(g->claim.channel, "serial", 6) || !g->claim.channel[6] ||
			   strspn(g->claim.channel + 6, "0123456789") !=
				   strlen(g->claim.channel + 6) ||
			   strcmp(g->claim.channel, "serial0") == 0 ||
			   atoi(g->claim.channel + 6) > 3) {
			return bad(c, "channel",
				   "'%s': virtio:NAME, or a serial port other than the console "
				   "(serial1 to serial3)",
				   g->claim.channel);
		}
		pop(c, len);
	}
	if ((v = json_object_get(o, "pool"))) {
		push(c, "pool");
		if ((r = only(c, v, pkeys)) < 0 ||
		    (r = get_unsigned(c, v, "running", false, 0, 1000, &g->pool[0])) < 0 ||
		    (r = get_unsigned(c, v, "paused", false, 0, 1000, &g->pool[1])) < 0 ||
		    (r = get_unsigned(c, v, "saved", false, 0, 1000, &g->pool[2])) < 0)
			return r;
		pop(c, len);
	}
	if ((v = json_object_get(o, "options"))) {
		push(c, "options");
		if ((r = parse_options(c, v, &g->options)) < 0)
			return r;
		pop(c, len);
	} else if (!(g->options = json_object())) {
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	}
	if ((v = json_object_get(o, "lifecycle"))) {
		push(c, "lifecycle");
		if ((r = parse_lifecycle(c, v, &g->life)) < 0)
			return r;
		pop(c, len);
	}
	return 0;
}

static int parse_scheduler(struct ctx *c, const json_t *o, struct cl_config *cfg)
{
	static const char *const keys[] = { "profiles", NULL };
	const json_t *p;
	size_t i;
	json_t *it;
	int r;

	if ((r = only(c, o, keys)) < 0)
		return r;
	p = json_object_get(o, "profiles");
	if (!p)
		return 0;
	if (!json_is_array(p) || !json_array_size(p))
		return bad(c, "profiles", "a non-empty list of profiles");
	/* Only what the document itself says: each profile an object with a
	 * name of its own. What its plugins are and take is the plugins'
	 * layer's to check (cl_plugins_check_profiles, cluster/plugins/plugins.h). */
	json_array_foreach(p, i, it) {
		const json_t *sn = json_object_get(it, "schedulerName");
		const char *name;
		char path[300];

		snprintf(path, sizeof(path), "%s.profiles[%zu]", c->path, i);
		if (!json_is_object(it))
			return vmact_err_set(c->err, EINVAL, "%s: must be an object", path);
		if (sn && (!json_is_string(sn) || !json_string_length(sn) ||
			   json_string_length(sn) >= CL_NAME_MAX))
			return vmact_err_set(c->err, EINVAL,
					     "%s.schedulerName: a name of 1 to %d characters", path,
					     CL_NAME_MAX - 1);
		name = sn ? json_string_value(sn) : "default";
		for (size_t k = 0; k < i; k++) {
			const char *other = json_string_value(
				json_object_get(json_array_get(p, k), "schedulerName"));

			if (strcmp(other ? other : "default", name) == 0)
				return vmact_err_set(
					c->err, EINVAL,
					"%s.schedulerName: '%s' is also profiles[%zu]'s", path,
					name, k);
		}
	}
	cfg->profiles = json_deep_copy(p);
	return cfg->profiles ? 0 : vmact_err_set(c->err, ENOMEM, "out of memory");
}

static bool has_profile(const struct cl_config *cfg, const char *name)
{
	size_t i;
	json_t *it;

	if (!cfg->profiles)
		return strcmp(name, "default") == 0;
	json_array_foreach(cfg->profiles, i, it) {
		const char *n = json_string_value(json_object_get(it, "schedulerName"));

		if (strcmp(n ? n : "default", name) == 0)
			return true;
	}
	return false;
}

static int parse_document(const json_t *doc, struct cl_config *cfg, struct vmact_err *err)
{
	static const char *const keys[] = { "api",   "metrics", "libvirt",   "lifecycle",
					    "hosts", "groups",  "scheduler", NULL };
	static const char *const api_keys[] = { "socket", NULL };
	static const char *const metrics_keys[] = { "listen", NULL };
	static const char *const libvirt_keys[] = { "name_prefix", NULL };
	struct ctx c = { .err = err };
	const json_t *v;
	size_t i;
	json_t *it;
	int r;

	snprintf(cfg->api_socket, sizeof(cfg->api_socket), "/run/vmact-groupd/api.sock");
	/* Loopback, beside vmactd's 9848 (doc/metrics.md). */
	snprintf(cfg->metrics_listen, sizeof(cfg->metrics_listen), "127.0.0.1:9849");
	snprintf(cfg->name_prefix, sizeof(cfg->name_prefix), "vmact-");
	cfg->life = (struct cl_lifecycle){
		.boot_timeout_usec = 300 * 1000000ULL,
		.healthy_timeout_usec = 90 * 1000000ULL,
		.health_interval_usec = 5 * 1000000ULL,
		.max_boots_per_iteration = 10,
		.lease_usec = 60 * 1000000ULL,
		.retry_backoff_usec = 30 * 1000000ULL,
		.refill_interval_usec = 5 * 1000000ULL,
	};
	if ((r = only(&c, doc, keys)) < 0)
		return r;
	if ((v = json_object_get(doc, "api"))) {
		push(&c, "api");
		if ((r = only(&c, v, api_keys)) < 0 ||
		    (r = get_str(&c, v, "socket", false, false, cfg->api_socket,
				 sizeof(cfg->api_socket))) < 0)
			return r;
		if (cfg->api_socket[0] != '/')
			return bad(&c, "socket", "must be an absolute path");
		pop(&c, 0);
	}
	if ((v = json_object_get(doc, "metrics"))) {
		struct vmact_listen l;
		struct vmact_err e = { 0 };

		push(&c, "metrics");
		if ((r = only(&c, v, metrics_keys)) < 0 ||
		    (r = get_str(&c, v, "listen", false, true, cfg->metrics_listen,
				 sizeof(cfg->metrics_listen))) < 0)
			return r;
		if (cfg->metrics_listen[0] &&
		    vmact_listen_parse(cfg->metrics_listen, true, &l, &e) < 0)
			return bad(&c, "listen", "%s", e.msg);
		pop(&c, 0);
	}
	if ((v = json_object_get(doc, "libvirt"))) {
		push(&c, "libvirt");
		if ((r = only(&c, v, libvirt_keys)) < 0 ||
		    (r = get_str(&c, v, "name_prefix", false, true, cfg->name_prefix,
				 sizeof(cfg->name_prefix))) < 0)
			return r;
		pop(&c, 0);
	}
	if ((v = json_object_get(doc, "lifecycle"))) {
		push(&c, "lifecycle");
		if ((r = parse_lifecycle(&c, v, &cfg->life)) < 0)
			return r;
		pop(&c, 0);
	}
	v = json_object_get(doc, "hosts");
	if (!v || !json_is_array(v) || !json_array_size(v) || json_array_size(v) > CL_MAX_HOSTS)
		return bad(&c, "hosts", "a list of 1 to %d hosts", CL_MAX_HOSTS);
	cfg->hosts = calloc(json_array_size(v), sizeof(*cfg->hosts));
	if (!cfg->hosts)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_array_foreach(v, i, it) {
		push(&c, "hosts[%zu]", i);
		if ((r = parse_host(&c, it, &cfg->hosts[i])) < 0)
			return r;
		if (cl_config_host(cfg, cfg->hosts[i].name))
			return bad(&c, "name", "'%s' is another host's name", cfg->hosts[i].name);
		cfg->n_hosts++;
		pop(&c, 0);
	}
	if ((v = json_object_get(doc, "scheduler"))) {
		push(&c, "scheduler");
		if ((r = parse_scheduler(&c, v, cfg)) < 0)
			return r;
		pop(&c, 0);
	}
	v = json_object_get(doc, "groups");
	if (!v)
		v = json_array();
	else
		json_incref((json_t *)v);
	if (!json_is_array(v) || json_array_size(v) > CL_MAX_GROUPS) {
		json_decref((json_t *)v);
		return bad(&c, "groups", "a list of up to %d groups", CL_MAX_GROUPS);
	}
	cfg->groups = calloc(json_array_size(v) + 1, sizeof(*cfg->groups));
	if (!cfg->groups) {
		json_decref((json_t *)v);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	json_array_foreach(v, i, it) {
		struct cl_group_cfg *g = &cfg->groups[i];

		push(&c, "groups[%zu]", i);
		/* Counted first: a failed group is freed with the rest. */
		cfg->n_groups++;
		if ((r = parse_group(&c, it, cfg, g)) < 0)
			break;
		for (size_t k = 0; k < i; k++)
			if (strcmp(cfg->groups[k].id, g->id) == 0)
				r = bad(&c, "id", "'%s' is also groups[%zu]'s", g->id, k);
		if (r >= 0 && !has_profile(cfg, g->scheduler_name))
			r = bad(&c, "scheduler_name", "no scheduler profile called '%s'",
				g->scheduler_name);
		if (r >= 0 && strlen(cfg->name_prefix) + strlen(g->id) + 10 > CL_NAME_MAX - 1)
			r = bad(&c, "id",
				"with libvirt.name_prefix, domain names would be too long");
		if (r < 0)
			break;
		pop(&c, 0);
	}
	json_decref((json_t *)v);
	return r < 0 ? r : 0;
}

void cl_config_free(struct cl_config *cfg)
{
	for (size_t i = 0; i < cfg->n_groups; i++) {
		json_decref(cfg->groups[i].labels);
		json_decref(cfg->groups[i].options);
		free(cfg->groups[i].taints);
		free(cfg->groups[i].tpl.metadata_xml);
	}
	free(cfg->groups);
	free(cfg->hosts);
	json_decref(cfg->profiles);
	memset(cfg, 0, sizeof(*cfg));
}

int cl_config_load_string(const char *text, struct cl_config *cfg, struct vmact_err *err)
{
	json_error_t je;
	json_t *doc;
	int r;

	memset(cfg, 0, sizeof(*cfg));
	doc = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return vmact_err_set(err, EINVAL, "line %d column %d: %s", je.line, je.column,
				     je.text);
	r = parse_document(doc, cfg, err);
	json_decref(doc);
	if (r < 0)
		cl_config_free(cfg);
	return r;
}

int cl_config_load(const char *path, struct cl_config *cfg, struct vmact_err *err)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	size_t len = 0;
	int r;

	memset(cfg, 0, sizeof(*cfg));
	if (!f)
		return vmact_err_set(err, errno, "%s: %m", path);
	if (getdelim(&text, &len, '\0', f) < 0 && !feof(f))
		return vmact_err_set(err, errno, "%s: %m", path);
	if (!text)
		return vmact_err_set(err, EINVAL, "%s: empty", path);
	r = cl_config_load_string(text, cfg, err);
	if (r < 0)
		return vmact_err_prefix(err, "%s", path);
	return 0;
}

const struct cl_group_cfg *cl_config_group(const struct cl_config *cfg, const char *id)
{
	for (size_t i = 0; i < cfg->n_groups; i++)
		if (strcmp(cfg->groups[i].id, id) == 0)
			return &cfg->groups[i];
	return NULL;
}

const struct cl_host_cfg *cl_config_host(const struct cl_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_hosts; i++)
		if (strcmp(cfg->hosts[i].name, name) == 0)
			return &cfg->hosts[i];
	return NULL;
}
