/* SPDX-License-Identifier: Apache-2.0 */
/* A group's section of groupd.json (its hosts, labels, taints, template,
 * health check, claim channel, pool, autoscaling options and lifecycle),
 * and the lifecycle every group inherits from the top. */
#define CL_CONFIG_PRIV_ALLOW
#include "cluster/config/config-priv.h"

#include <errno.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/endpoint.h"
#include "base/macro.h"

int cl_group_cfg_lifecycle(struct cl_read_ctx *c, const json_t *o, struct cl_lifecycle *l)
{
	static const char *const keys[] = { "boot_timeout_s",    "healthy_timeout_s",
					    "health_interval_s", "max_boots_per_iteration",
					    "lease_s",           "retry_backoff_s",
					    "refill_interval_s", NULL };
	int r;

	if ((r = cl_read_keys(c, o, keys)) < 0 ||
	    (r = cl_read_seconds(c, o, "boot_timeout_s", 1, 86400, &l->boot_timeout_usec)) < 0 ||
	    (r = cl_read_seconds(c, o, "healthy_timeout_s", 1, 86400, &l->healthy_timeout_usec)) <
		    0 ||
	    (r = cl_read_seconds(c, o, "health_interval_s", 0.1, 3600, &l->health_interval_usec)) <
		    0 ||
	    (r = cl_read_unsigned(c, o, "max_boots_per_iteration", false, 1, 1000,
				  &l->max_boots_per_iteration)) < 0 ||
	    (r = cl_read_seconds(c, o, "lease_s", 2, 86400, &l->lease_usec)) < 0 ||
	    (r = cl_read_seconds(c, o, "retry_backoff_s", 0, 86400, &l->retry_backoff_usec)) < 0 ||
	    (r = cl_read_seconds(c, o, "refill_interval_s", 0.1, 3600, &l->refill_interval_usec)) <
		    0)
		return r;
	if (l->health_interval_usec > l->healthy_timeout_usec)
		return cl_read_bad(c, "health_interval_s",
				   "longer than healthy_timeout_s: a standby VM would "
				   "time out between two checks");
	return 0;
}

static int parse_health(struct cl_read_ctx *c, const json_t *o, struct cl_health *h)
{
	static const char *const keys[] = { "kind",         "pattern", "address", "probe_timeout_s",
					    "on_unhealthy", NULL };
	char kind[16] = "serial", on[16] = "report";
	int r;

	if ((r = cl_read_keys(c, o, keys)) < 0 ||
	    (r = cl_read_str(c, o, "on_unhealthy", false, false, on, sizeof(on))) < 0 ||
	    (r = cl_read_str(c, o, "kind", false, false, kind, sizeof(kind))) < 0 ||
	    (r = cl_read_str(c, o, "pattern", false, false, h->pattern, sizeof(h->pattern))) < 0 ||
	    (r = cl_read_str(c, o, "address", false, false, h->address, sizeof(h->address))) < 0 ||
	    (r = cl_read_seconds(c, o, "probe_timeout_s", 0.1, 600, &h->probe_timeout_usec)) < 0)
		return r;
	if (strcmp(on, "report") && strcmp(on, "replace"))
		return cl_read_bad(c, "on_unhealthy", "'%s': report or replace", on);
	h->replace_unhealthy = strcmp(on, "replace") == 0;
	if (strcmp(kind, "serial") == 0) {
		h->kind = CL_HEALTH_SERIAL;
		if (json_object_get(o, "address"))
			return cl_read_bad(c, "address", "only for kind \"tcp\"");
	} else if (strcmp(kind, "agent") == 0) {
		h->kind = CL_HEALTH_AGENT;
		if (json_object_get(o, "address") || json_object_get(o, "pattern"))
			return cl_read_bad(c, json_object_get(o, "address") ? "address" : "pattern",
					   "not for kind \"agent\"");
	} else if (strcmp(kind, "tcp") == 0) {
		struct vmact_listen l;
		struct vmact_err e = { 0 };

		h->kind = CL_HEALTH_TCP;
		if (json_object_get(o, "pattern"))
			return cl_read_bad(c, "pattern", "only for kind \"serial\"");
		if (!h->address[0])
			return cl_read_bad(c, "address", "required for kind \"tcp\" (ADDR:PORT)");
		if (vmact_listen_parse(h->address, false, &l, &e) < 0 || !l.port)
			return cl_read_bad(c, "address", "'%s': a numeric ADDR:PORT with a port",
					   h->address);
	} else {
		return cl_read_bad(c, "kind", "'%s': serial, agent or tcp", kind);
	}
	return 0;
}

static int parse_taints(struct cl_read_ctx *c, const json_t *a, struct cl_group_cfg *g)
{
	static const char *const keys[] = { "key", "value", "effect", NULL };
	size_t len = strlen(c->path), i;
	json_t *t;
	int r;

	if (!json_is_array(a))
		return cl_read_bad(c, "taints", "must be an array");
	g->taints = calloc(json_array_size(a) + 1, sizeof(*g->taints));
	if (!g->taints)
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	json_array_foreach(a, i, t) {
		struct cl_taint *x = &g->taints[i];

		cl_read_pop(c, len);
		cl_read_push(c, "taints[%zu]", i);
		if ((r = cl_read_keys(c, t, keys)) < 0 ||
		    (r = cl_read_str(c, t, "key", true, false, x->key, sizeof(x->key))) < 0 ||
		    (r = cl_read_str(c, t, "value", false, true, x->value, sizeof(x->value))) < 0 ||
		    (r = cl_read_str(c, t, "effect", true, false, x->effect, sizeof(x->effect))) <
			    0)
			return r;
		if (strcmp(x->effect, "NoSchedule") && strcmp(x->effect, "PreferNoSchedule") &&
		    strcmp(x->effect, "NoExecute"))
			return cl_read_bad(c, "effect",
					   "'%s': NoSchedule, PreferNoSchedule or NoExecute",
					   x->effect);
		g->n_taints++;
	}
	cl_read_pop(c, len);
	return 0;
}

/* claim.secret: {"kind": "kubeconfig" | "bootstrap_kubeconfig", "file":
 * PATH}. The file is read at each claim, not here: it may be rotated. */
static int parse_claim_secret(struct cl_read_ctx *c, const json_t *v, struct cl_claim *cl)
{
	static const char *const keys[] = { "kind", "file", NULL };
	size_t len = strlen(c->path);
	int r;

	if (!v)
		return 0;
	cl_read_push(c, "secret");
	if ((r = cl_read_keys(c, v, keys)) < 0 ||
	    (r = cl_read_str(c, v, "kind", true, false, cl->secret_kind, sizeof(cl->secret_kind))) <
		    0 ||
	    (r = cl_read_str(c, v, "file", true, false, cl->secret_file, sizeof(cl->secret_file))) <
		    0)
		return r;
	if (strcmp(cl->secret_kind, "kubeconfig") &&
	    strcmp(cl->secret_kind, "bootstrap_kubeconfig") && strcmp(cl->secret_kind, "kubeadm"))
		return cl_read_bad(c, "kind", "'%s': kubeconfig, bootstrap_kubeconfig or kubeadm",
				   cl->secret_kind);
	if (cl->secret_file[0] != '/')
		return cl_read_bad(c, "file", "'%s': an absolute path", cl->secret_file);
	cl_read_pop(c, len);
	return 0;
}

static int check_metadata_xml(struct cl_read_ctx *c, const char *xml)
{
	/* A wrapper makes a list of elements one document. */
	_cleanup_free_ char *doc = NULL;
	xmlDocPtr d;

	if (asprintf(&doc, "<metadata>%s</metadata>", xml) < 0)
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	d = xmlReadMemory(doc, (int)strlen(doc), NULL, NULL,
			  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!d)
		return cl_read_bad(c, "metadata_xml", "not well-formed XML");
	xmlFreeDoc(d);
	return 0;
}

static int parse_template(struct cl_read_ctx *c, const json_t *o, struct cl_template *t)
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
					    "network",
					    "nic",
					    NULL };
	char dtype[8] = "kvm", nic[16] = "";
	static const char *const rkeys[] = { "cpu", "memory", NULL };
	const json_t *v;
	int r;

	t->vcpus = 1;
	t->pods = 110;
	snprintf(t->arch, sizeof(t->arch), "amd64");
	snprintf(t->os, sizeof(t->os), "linux");
	snprintf(t->disk_bus, sizeof(t->disk_bus), "virtio");
	if ((r = cl_read_keys(c, o, keys)) < 0 ||
	    (r = cl_read_unsigned(c, o, "vcpus", false, 1, 1024, &t->vcpus)) < 0 ||
	    (r = cl_read_unsigned(c, o, "max_vcpus", false, 1, 1024, &t->max_vcpus)) < 0 ||
	    (r = cl_read_bytes(c, o, "memory", true, &t->memory)) < 0 ||
	    (r = cl_read_bytes(c, o, "max_memory", false, &t->max_memory)) < 0 ||
	    (r = cl_read_bytes(c, o, "ephemeral_storage", false, &t->ephemeral_storage)) < 0 ||
	    (r = cl_read_unsigned(c, o, "pods", false, 0, 100000, &t->pods)) < 0 ||
	    (r = cl_read_str(c, o, "arch", false, false, t->arch, sizeof(t->arch))) < 0 ||
	    (r = cl_read_str(c, o, "os", false, false, t->os, sizeof(t->os))) < 0 ||
	    (r = cl_read_str(c, o, "kernel", false, false, t->kernel, sizeof(t->kernel))) < 0 ||
	    (r = cl_read_str(c, o, "initrd", false, false, t->initrd, sizeof(t->initrd))) < 0 ||
	    (r = cl_read_str(c, o, "cmdline", false, true, t->cmdline, sizeof(t->cmdline))) < 0 ||
	    (r = cl_read_str(c, o, "base_volume", true, false, t->base_volume,
			     sizeof(t->base_volume))) < 0 ||
	    (r = cl_read_str(c, o, "disk_bus", false, false, t->disk_bus, sizeof(t->disk_bus))) <
		    0 ||
	    (r = cl_read_str(c, o, "serial_log_dir", false, false, t->serial_log_dir,
			     sizeof(t->serial_log_dir))) < 0 ||
	    (r = cl_read_str(c, o, "domain_type", false, false, dtype, sizeof(dtype))) < 0 ||
	    (r = cl_read_str(c, o, "network", false, false, t->network, sizeof(t->network))) < 0 ||
	    (r = cl_read_str(c, o, "nic", false, false, nic, sizeof(nic))) < 0)
		return r;
	if (nic[0] && strcmp(nic, "user") && strcmp(nic, "network"))
		return cl_read_bad(c, "nic", "'%s': network (with template.network) or user", nic);
	if (!strcmp(nic, "network") && !t->network[0])
		return cl_read_bad(c, "nic", "network: needs template.network");
	if (!strcmp(nic, "user") && t->network[0])
		return cl_read_bad(c, "nic", "user: not with template.network");
	t->user_nic = !strcmp(nic, "user");
	if (strcmp(dtype, "kvm") && strcmp(dtype, "qemu"))
		return cl_read_bad(c, "domain_type",
				   "'%s': kvm or qemu (TCG, no hardware acceleration)", dtype);
	t->kvm = strcmp(dtype, "kvm") == 0;
	if (strcmp(t->arch, "amd64") && strcmp(t->arch, "arm64"))
		return cl_read_bad(c, "arch", "'%s': amd64 or arm64", t->arch);
	if (!t->max_vcpus)
		t->max_vcpus = t->vcpus;
	if (!t->max_memory)
		t->max_memory = t->memory;
	if (t->max_vcpus < t->vcpus)
		return cl_read_bad(c, "max_vcpus", "below vcpus (%u)", t->vcpus);
	if (t->max_memory < t->memory)
		return cl_read_bad(c, "max_memory", "below memory");
	if (t->memory % (1 << 20) || t->max_memory % (2 << 20))
		return cl_read_bad(c, t->memory % (1 << 20) ? "memory" : "max_memory",
				   "must be whole MiB (max_memory: whole 2 MiB blocks)");
	if ((t->max_memory - t->memory) % (2 << 20))
		return cl_read_bad(c, "max_memory",
				   "must exceed memory by whole 2 MiB blocks (virtio-mem)");
	if (t->initrd[0] && !t->kernel[0])
		return cl_read_bad(c, "initrd", "needs kernel");
	if (t->kernel[0] && t->kernel[0] != '/')
		return cl_read_bad(c, "kernel", "must be an absolute path");
	if (t->initrd[0] && t->initrd[0] != '/')
		return cl_read_bad(c, "initrd", "must be an absolute path");
	if (t->serial_log_dir[0] && t->serial_log_dir[0] != '/')
		return cl_read_bad(c, "serial_log_dir", "must be an absolute path");
	if (strcmp(t->disk_bus, "virtio") && strcmp(t->disk_bus, "sata") &&
	    strcmp(t->disk_bus, "scsi"))
		return cl_read_bad(c, "disk_bus", "'%s': virtio, sata or scsi", t->disk_bus);
	if (strchr(t->base_volume, '/'))
		return cl_read_bad(c, "base_volume",
				   "a volume name in the host's storage_pool, not a path");
	if (strchr(t->cmdline, '<') || strchr(t->cmdline, '&'))
		return cl_read_bad(c, "cmdline", "'<' and '&' are not allowed");
	v = json_object_get(o, "metadata_xml");
	if (v) {
		if (!json_is_string(v))
			return cl_read_bad(c, "metadata_xml", "must be a string");
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

		cl_read_push(c, "reserve");
		if ((r = cl_read_keys(c, v, rkeys)) < 0 ||
		    (r = cl_read_milli(c, v, "cpu", &t->reserve.milli_cpu)) < 0 ||
		    (r = cl_read_bytes(c, v, "memory", false, &t->reserve.mem_bytes)) < 0)
			return r;
		cl_read_pop(c, len);
	}
	return 0;
}

static int parse_options(struct cl_read_ctx *c, const json_t *o, json_t **out)
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
		return cl_read_bad(c, NULL, "must be an object");
	json_object_foreach((json_t *)o, key, v) {
		bool known = false;

		for (size_t i = 0; dbl[i]; i++)
			if (strcmp(key, dbl[i]) == 0) {
				known = true;
				if (!json_is_number(v) || json_number_value(v) < 0 ||
				    json_number_value(v) > 1)
					return cl_read_bad(c, key, "a fraction from 0 to 1");
			}
		for (size_t i = 0; secs[i]; i++)
			if (strcmp(key, secs[i]) == 0) {
				known = true;
				/* vmact-groupd's API carries at most 1e9 s
				 * (shared/group-api.h) */
				if (!json_is_number(v) ||
				    !(json_number_value(v) >= 0 && json_number_value(v) <= 1e9))
					return cl_read_bad(c, key,
							   "a number of seconds from 0 to 1e9");
			}
		for (size_t i = 0; bools[i]; i++)
			if (strcmp(key, bools[i]) == 0) {
				known = true;
				if (!json_is_boolean(v))
					return cl_read_bad(c, key, "must be true or false");
			}
		if (!known)
			return cl_read_bad(c, key,
					   "unknown key (a NodeGroupAutoscalingOptions field)");
	}
	*out = json_deep_copy(o);
	return *out ? 0 : vmact_err_set(c->err, ENOMEM, "out of memory");
}

int cl_group_cfg_parse(struct cl_read_ctx *c, const json_t *o, const struct cl_config *cfg,
		       struct cl_group_cfg *g)
{
	static const char *const keys[] = { "id",        "min",       "max",      "hosts",
					    "labels",    "taints",    "template", "health",
					    "claim",     "pool",      "options",  "scheduler_name",
					    "lifecycle", "migration", NULL };
	static const char *const mkeys[] = { "enabled", NULL };
	static const char *const pkeys[] = { "running", "paused", "saved", NULL };
	static const char *const ckeys[] = { "channel", "ack",    "ack_timeout_s",
					     "refuse",  "secret", NULL };
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
	snprintf(g->claim.refuse, sizeof(g->claim.refuse), "VMACT-NODE refused");
	g->claim.ack_timeout_usec = 30 * 1000000ULL;
	if ((r = cl_read_keys(c, o, keys)) < 0 ||
	    (r = cl_read_str(c, o, "id", true, false, g->id, sizeof(g->id))) < 0 ||
	    (r = cl_read_unsigned(c, o, "min", false, 0, 100000, &g->min)) < 0 ||
	    (r = cl_read_unsigned(c, o, "max", true, 0, 100000, &g->max)) < 0 ||
	    (r = cl_read_str(c, o, "scheduler_name", false, false, g->scheduler_name,
			     sizeof(g->scheduler_name))) < 0)
		return r;
	if (!cl_read_name_ok(g->id) || strlen(g->id) > 40)
		return cl_read_bad(c, "id", "'%s': up to 40 lower-case letters, digits and '-'",
				   g->id);
	if (g->min > g->max)
		return cl_read_bad(c, "min", "above max (%u)", g->max);
	v = json_object_get(o, "hosts");
	if (!v)
		return cl_read_bad(c, "hosts", "required: the hosts the group may use");
	if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > CL_MAX_HOSTS)
		return cl_read_bad(c, "hosts", "a list of 1 to %d host names", CL_MAX_HOSTS);
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
			return cl_read_bad(c, "labels", "must be an object of strings");
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
		return cl_read_bad(c, "template", "required");
	cl_read_push(c, "template");
	if ((r = parse_template(c, v, &g->tpl)) < 0)
		return r;
	cl_read_pop(c, len);
	if ((v = json_object_get(o, "health"))) {
		cl_read_push(c, "health");
		if ((r = parse_health(c, v, &g->health)) < 0)
			return r;
		cl_read_pop(c, len);
	}
	if ((v = json_object_get(o, "claim"))) {
		cl_read_push(c, "claim");
		if ((r = cl_read_keys(c, v, ckeys)) < 0 ||
		    (r = cl_read_str(c, v, "channel", false, false, g->claim.channel,
				     sizeof(g->claim.channel))) < 0 ||
		    (r = cl_read_str(c, v, "ack", false, true, g->claim.ack,
				     sizeof(g->claim.ack))) < 0 ||
		    (r = cl_read_str(c, v, "refuse", false, true, g->claim.refuse,
				     sizeof(g->claim.refuse))) < 0 ||
		    (r = cl_read_seconds(c, v, "ack_timeout_s", 0.1, 600,
					 &g->claim.ack_timeout_usec)) < 0)
			return r;
		if (strncmp(g->claim.channel, "virtio:", 7) == 0) {
			const char *n = g->claim.channel + 7;

			if (!*n ||
			    strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(n))
				return cl_read_bad(c, "channel",
						   "'%s': virtio:NAME, NAME of [a-z0-9._-]",
						   g->claim.channel);
			if ((r = parse_claim_secret(c, json_object_get(v, "secret"), &g->claim)) <
			    0)
				return r;
		} else if (json_object_get(v, "secret")) {
			return cl_read_bad(
				c, "secret",
				"only over a virtio channel (claim.channel virtio:NAME): a "
				"serial port's pty can be logged");
		} else if (strncmp(g->claim.channel, "serial", 6) || !g->claim.channel[6] ||
			   strspn(g->claim.channel + 6, "0123456789") !=
				   strlen(g->claim.channel + 6) ||
			   strcmp(g->claim.channel, "serial0") == 0 ||
			   atoi(g->claim.channel + 6) > 3) {
			return cl_read_bad(
				c, "channel",
				"'%s': virtio:NAME, or a serial port other than the console "
				"(serial1 to serial3)",
				g->claim.channel);
		}
		cl_read_pop(c, len);
	}
	if ((v = json_object_get(o, "pool"))) {
		cl_read_push(c, "pool");
		if ((r = cl_read_keys(c, v, pkeys)) < 0 ||
		    (r = cl_read_unsigned(c, v, "running", false, 0, 1000, &g->pool[0])) < 0 ||
		    (r = cl_read_unsigned(c, v, "paused", false, 0, 1000, &g->pool[1])) < 0 ||
		    (r = cl_read_unsigned(c, v, "saved", false, 0, 1000, &g->pool[2])) < 0)
			return r;
		cl_read_pop(c, len);
	}
	if ((v = json_object_get(o, "migration"))) {
		const json_t *en;

		cl_read_push(c, "migration");
		if ((r = cl_read_keys(c, v, mkeys)) < 0)
			return r;
		en = json_object_get(v, "enabled");
		if (en && !json_is_boolean(en))
			return cl_read_bad(c, "enabled", "true or false");
		g->migration = json_is_true(en);
		cl_read_pop(c, len);
	}
	if ((v = json_object_get(o, "options"))) {
		cl_read_push(c, "options");
		if ((r = parse_options(c, v, &g->options)) < 0)
			return r;
		cl_read_pop(c, len);
	} else if (!(g->options = json_object())) {
		return vmact_err_set(c->err, ENOMEM, "out of memory");
	}
	if ((v = json_object_get(o, "lifecycle"))) {
		cl_read_push(c, "lifecycle");
		if ((r = cl_group_cfg_lifecycle(c, v, &g->life)) < 0)
			return r;
		cl_read_pop(c, len);
	}
	return 0;
}
