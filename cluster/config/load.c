/* SPDX-License-Identifier: Apache-2.0 */
/* groupd.json read: the document's top (api, metrics, libvirt,
 * lifecycle, hosts, scheduler, groups); a group's section is group.c's,
 * the typed readers are read.c's (config-priv.h). */
#define CL_CONFIG_PRIV_ALLOW
#include "cluster/config/config-priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/endpoint.h"
#include "base/macro.h"

static int parse_host(struct cl_read_ctx *c, const json_t *o, struct cl_host_cfg *h)
{
	static const char *const keys[] = { "name",        "uri",     "storage_pool",
					    "channel_dir", "arbiter", "migration",
					    NULL };
	static const char *const akeys[] = { "url", "secret_file", NULL };
	static const char *const mkeys[] = { "address", "bandwidth_mib_s", NULL };
	struct vmact_endpoint ep;
	struct vmact_err e = { 0 };
	const json_t *a;
	unsigned long long bw = 0;
	size_t len;
	int r;

	snprintf(h->storage_pool, sizeof(h->storage_pool), "default");
	if ((r = cl_read_keys(c, o, keys)) < 0 ||
	    (r = cl_read_str(c, o, "name", true, false, h->name, sizeof(h->name))) < 0 ||
	    (r = cl_read_str(c, o, "uri", true, false, h->uri, sizeof(h->uri))) < 0 ||
	    (r = cl_read_str(c, o, "storage_pool", false, false, h->storage_pool,
			     sizeof(h->storage_pool))) < 0)
		return r;
	if (!cl_read_name_ok(h->name))
		return cl_read_bad(c, "name", "'%s': lower-case letters, digits and '-' only",
				   h->name);
	if (json_object_get(o, "channel_dir")) {
		const char *d = json_string_value(json_object_get(o, "channel_dir"));

		if (!d || d[0] != '/' || strlen(d) >= sizeof(h->channel_dir) || strchr(d, '\'') ||
		    strstr(d, "//") || (strlen(d) > 1 && d[strlen(d) - 1] == '/'))
			return cl_read_bad(
				c, "channel_dir",
				"an absolute directory of at most %zu bytes (the sockets' "
				"paths must stay within 107 bytes)",
				sizeof(h->channel_dir) - 1);
		snprintf(h->channel_dir, sizeof(h->channel_dir), "%s", d);
	}
	a = json_object_get(o, "arbiter");
	if (!a)
		return cl_read_bad(c, "arbiter",
				   "required: the host's arbiter keeps its capacity ledger");
	len = strlen(c->path);
	cl_read_push(c, "arbiter");
	if ((r = cl_read_keys(c, a, akeys)) < 0 ||
	    (r = cl_read_str(c, a, "url", true, false, h->arbiter_url, sizeof(h->arbiter_url))) <
		    0 ||
	    (r = cl_read_str(c, a, "secret_file", true, false, h->arbiter_secret,
			     sizeof(h->arbiter_secret))) < 0)
		return r;
	if (vmact_endpoint_parse(h->arbiter_url, VMACT_EP_HTTP | VMACT_EP_UNIX | VMACT_EP_NO_PATH,
				 &ep, &e) < 0)
		return cl_read_bad(c, "url", "%s (http://HOST:PORT or unix:PATH)", e.msg);
	if (h->arbiter_secret[0] != '/')
		return cl_read_bad(c, "secret_file", "must be an absolute path");
	cl_read_pop(c, len);
	a = json_object_get(o, "migration");
	if (!a)
		return 0;
	cl_read_push(c, "migration");
	if ((r = cl_read_keys(c, a, mkeys)) < 0 ||
	    (r = cl_read_str(c, a, "address", true, false, h->migration_address,
			     sizeof(h->migration_address))) < 0 ||
	    (r = cl_read_uint(c, a, "bandwidth_mib_s", false, 0, 1 << 20, &bw)) < 0)
		return r;
	h->migration_bandwidth_mib_s = bw;
	/* It goes into a URI (tcp://ADDRESS) and QEMU's listen address: a
	 * host name or an IP literal, nothing a URI would read otherwise. */
	if (!h->migration_address[0] ||
	    strspn(h->migration_address,
		   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") !=
		    strlen(h->migration_address))
		return cl_read_bad(c, "address",
				   "'%s': a host name or an IP address (the host's QEMU listens "
				   "there for a VM moving in)",
				   h->migration_address);
	cl_read_pop(c, len);
	return 0;
}

static int parse_scheduler(struct cl_read_ctx *c, const json_t *o, struct cl_config *cfg)
{
	static const char *const keys[] = { "profiles", NULL };
	const json_t *p;
	size_t i;
	json_t *it;
	int r;

	if ((r = cl_read_keys(c, o, keys)) < 0)
		return r;
	p = json_object_get(o, "profiles");
	if (!p)
		return 0;
	if (!json_is_array(p) || !json_array_size(p))
		return cl_read_bad(c, "profiles", "a non-empty list of profiles");
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
	static const char *const keys[] = { "api",       "metrics", "libvirt",   "lifecycle",
					    "hosts",     "groups",  "scheduler", "kubernetes",
					    "migration", NULL };
	static const char *const migration_keys[] = { "relief", "min_residence_s", NULL };
	static const char *const kube_keys[] = { "server", "ca_file", "token_file", NULL };
	static const char *const api_keys[] = { "socket", NULL };
	static const char *const metrics_keys[] = { "listen", NULL };
	static const char *const libvirt_keys[] = { "name_prefix", NULL };
	struct cl_read_ctx c = { .err = err };
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
	cfg->relief = true;
	cfg->min_residence_usec = 300 * 1000000ULL;
	if ((r = cl_read_keys(&c, doc, keys)) < 0)
		return r;
	if ((v = json_object_get(doc, "migration"))) {
		const json_t *rl;

		cl_read_push(&c, "migration");
		if ((r = cl_read_keys(&c, v, migration_keys)) < 0 ||
		    (r = cl_read_seconds(&c, v, "min_residence_s", 0, 86400,
					 &cfg->min_residence_usec)) < 0)
			return r;
		rl = json_object_get(v, "relief");
		if (rl && !json_is_boolean(rl))
			return cl_read_bad(&c, "relief", "true or false");
		if (rl)
			cfg->relief = json_is_true(rl);
		cl_read_pop(&c, 0);
	}
	if ((v = json_object_get(doc, "api"))) {
		cl_read_push(&c, "api");
		if ((r = cl_read_keys(&c, v, api_keys)) < 0 ||
		    (r = cl_read_str(&c, v, "socket", false, false, cfg->api_socket,
				     sizeof(cfg->api_socket))) < 0)
			return r;
		if (cfg->api_socket[0] != '/')
			return cl_read_bad(&c, "socket", "must be an absolute path");
		cl_read_pop(&c, 0);
	}
	if ((v = json_object_get(doc, "metrics"))) {
		struct vmact_listen l;
		struct vmact_err e = { 0 };

		cl_read_push(&c, "metrics");
		if ((r = cl_read_keys(&c, v, metrics_keys)) < 0 ||
		    (r = cl_read_str(&c, v, "listen", false, true, cfg->metrics_listen,
				     sizeof(cfg->metrics_listen))) < 0)
			return r;
		if (cfg->metrics_listen[0] &&
		    vmact_listen_parse(cfg->metrics_listen, true, &l, &e) < 0)
			return cl_read_bad(&c, "listen", "%s", e.msg);
		cl_read_pop(&c, 0);
	}
	if ((v = json_object_get(doc, "libvirt"))) {
		cl_read_push(&c, "libvirt");
		if ((r = cl_read_keys(&c, v, libvirt_keys)) < 0 ||
		    (r = cl_read_str(&c, v, "name_prefix", false, true, cfg->name_prefix,
				     sizeof(cfg->name_prefix))) < 0)
			return r;
		cl_read_pop(&c, 0);
	}
	if ((v = json_object_get(doc, "kubernetes"))) {
		struct cl_kube *k = &cfg->kube;

		cl_read_push(&c, "kubernetes");
		if ((r = cl_read_keys(&c, v, kube_keys)) < 0 ||
		    (r = cl_read_str(&c, v, "server", true, false, k->server, sizeof(k->server))) <
			    0 ||
		    (r = cl_read_str(&c, v, "ca_file", true, false, k->ca_file,
				     sizeof(k->ca_file))) < 0 ||
		    (r = cl_read_str(&c, v, "token_file", true, false, k->token_file,
				     sizeof(k->token_file))) < 0)
			return r;
		if (strncmp(k->server, "https://", 8))
			return cl_read_bad(&c, "server", "'%s': https://HOST:PORT", k->server);
		if (k->ca_file[0] != '/')
			return cl_read_bad(&c, "ca_file", "must be an absolute path");
		if (k->token_file[0] != '/')
			return cl_read_bad(&c, "token_file", "must be an absolute path");
		cl_read_pop(&c, 0);
	}
	if ((v = json_object_get(doc, "lifecycle"))) {
		cl_read_push(&c, "lifecycle");
		if ((r = cl_group_cfg_lifecycle(&c, v, &cfg->life)) < 0)
			return r;
		cl_read_pop(&c, 0);
	}
	v = json_object_get(doc, "hosts");
	if (!v || !json_is_array(v) || !json_array_size(v) || json_array_size(v) > CL_MAX_HOSTS)
		return cl_read_bad(&c, "hosts", "a list of 1 to %d hosts", CL_MAX_HOSTS);
	cfg->hosts = calloc(json_array_size(v), sizeof(*cfg->hosts));
	if (!cfg->hosts)
		return vmact_err_set(err, ENOMEM, "out of memory");
	json_array_foreach(v, i, it) {
		cl_read_push(&c, "hosts[%zu]", i);
		if ((r = parse_host(&c, it, &cfg->hosts[i])) < 0)
			return r;
		if (cl_config_host(cfg, cfg->hosts[i].name))
			return cl_read_bad(&c, "name", "'%s' is another host's name",
					   cfg->hosts[i].name);
		cfg->n_hosts++;
		cl_read_pop(&c, 0);
	}
	if ((v = json_object_get(doc, "scheduler"))) {
		cl_read_push(&c, "scheduler");
		if ((r = parse_scheduler(&c, v, cfg)) < 0)
			return r;
		cl_read_pop(&c, 0);
	}
	v = json_object_get(doc, "groups");
	if (!v)
		v = json_array();
	else
		json_incref((json_t *)v);
	if (!json_is_array(v) || json_array_size(v) > CL_MAX_GROUPS) {
		json_decref((json_t *)v);
		return cl_read_bad(&c, "groups", "a list of up to %d groups", CL_MAX_GROUPS);
	}
	cfg->groups = calloc(json_array_size(v) + 1, sizeof(*cfg->groups));
	if (!cfg->groups) {
		json_decref((json_t *)v);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	json_array_foreach(v, i, it) {
		struct cl_group_cfg *g = &cfg->groups[i];

		cl_read_push(&c, "groups[%zu]", i);
		/* Counted first: a failed group is freed with the rest. */
		cfg->n_groups++;
		if ((r = cl_group_cfg_parse(&c, it, cfg, g)) < 0)
			break;
		for (size_t k = 0; k < i; k++)
			if (strcmp(cfg->groups[k].id, g->id) == 0)
				r = cl_read_bad(&c, "id", "'%s' is also groups[%zu]'s", g->id, k);
		if (r >= 0 && !has_profile(cfg, g->scheduler_name))
			r = cl_read_bad(&c, "scheduler_name", "no scheduler profile called '%s'",
					g->scheduler_name);
		if (r >= 0 && strlen(cfg->name_prefix) + strlen(g->id) + 10 > CL_NAME_MAX - 1)
			r = cl_read_bad(&c, "id",
					"with libvirt.name_prefix, domain names would be too long");
		if (r < 0)
			break;
		cl_read_pop(&c, 0);
	}
	json_decref((json_t *)v);
	return r < 0 ? r : 0;
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
