/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/config/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent-glue/codec/plugin.h"
#include "agent-glue/codec/quantity.h"
#include "base/endpoint.h"
#include "base/macro.h"

static int set_string(char **dst, const char *value)
{
	char *s = strdup(value);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

void act_config_defaults(struct act_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->libvirt_uri = strdup("qemu:///system");
	cfg->libvirt_name_prefix = strdup("");
	cfg->control_socket = strdup("/run/vmact/vmactd.sock");
	/* Read-only access is opt-in: the API shows every tenant's VM names,
	 * sizes and events, which a host's users need not see. */
	cfg->control_read_group = strdup("");
	cfg->state_dir = strdup("/var/lib/vmact");
	cfg->plugin_mode = ACT_PLUGIN_ARBITER;
	cfg->plugin_url = strdup("http://127.0.0.1:10299/");
	cfg->plugin_version = strdup("5.0");
	cfg->plugin_timeout_ms = 10000;
	/* Opt-in (issue: a local user filling a loopback listener stopped
	 * all scaling): vmactd's own VMs reach the arbiter in-process. */
	cfg->arbiter_listen = strdup("");
	cfg->arbiter_watermark = 0.9;
	cfg->arbiter_reserve_milli_cpu = 0;
	cfg->arbiter_reserve_mem_bytes = 0;
	cfg->arbiter_overcommit_cpu = 1.0;
	cfg->arbiter_overcommit_mem = 1.0;
	cfg->arbiter_lease_key = strdup("");
	/* Loopback: safe by default; guests on a bridge need the host's
	 * address on it (listen + advertise_host). */
	cfg->informant_listen = strdup("127.0.0.1:0");
	cfg->informant_advertise_host = NULL;
	cfg->cpu_quota_overcommit = 1.0;
	/* Loopback: the page names every VM. 9848: away from the common
	 * exporters' ports (doc/metrics.md, "Endpoint"). */
	cfg->metrics_listen = strdup(ACT_METRICS_LISTEN_DEFAULT);
	cfg->sampler_mode = ACT_SAMPLER_AUTO;
	cfg->sampler_keep_pins = false;
	cfg->taskstats_interval_ms = 1000;
	cfg->sampler_pin_root = strdup("/sys/fs/bpf/vmact");
	/* The Neon agent scrapes system metrics every 5 s (doc/protocols.md,
	 * "Metrics inputs"). */
	cfg->sampler_interval_ms = 5000;
	cfg->sampler_max_vms = 1024;
	cfg->sampler_max_threads = 32768;
	/* doc/policy.md: the reactive policy by default; vCPUs stay plugged
	 * when a VM shrinks, since an unplug can lose the way back up
	 * (doc/notes/vcpu-unplug.md). */
	cfg->cpu_policy = ACT_CPU_POLICY_REACTIVE;
	cfg->cpu_shrink = ACT_CPU_SHRINK_QUOTA;
	cfg->policy_tick_ms = 50;
	cfg->policy_events = true;
	cfg->policy_events_priority = 1;
	cfg->guest_worker_user = strdup("vmact");
	cfg->guest_worker_program = strdup("");
	ag_scaling_config_defaults(&cfg->scaling);
	cfg->compute_unit.milli_cpu = 250;
	cfg->compute_unit.mem_bytes = 1ULL << 30;
}

void act_config_free(struct act_config *cfg)
{
	free(cfg->libvirt_uri);
	free(cfg->libvirt_name_prefix);
	free(cfg->control_socket);
	free(cfg->control_read_group);
	free(cfg->state_dir);
	free(cfg->plugin_url);
	free(cfg->plugin_version);
	free(cfg->arbiter_listen);
	free(cfg->arbiter_lease_key);
	free(cfg->informant_listen);
	free(cfg->informant_advertise_host);
	free(cfg->sampler_pin_root);
	free(cfg->metrics_listen);
	free(cfg->guest_worker_user);
	free(cfg->guest_worker_program);
	memset(cfg, 0, sizeof(*cfg));
}

/* One known key of a section: its type and where it goes. */
enum key_type {
	K_STRING,
	K_STRING0 /* "" allowed */,
	K_DOUBLE,
	K_UINT,
	K_BOOL,
	K_TRUE /* a key kept for files written for earlier versions: true only */,
	K_MILLI_CPU,
	K_BYTES,
	K_ENUM,
	K_SECTION
};

struct key {
	const char *name;
	enum key_type type;
	size_t offset;
	double min, max;            /* K_DOUBLE / K_UINT range, inclusive */
	const char *const *choices; /* K_ENUM, NULL-terminated, value = index */
	const struct key *section;  /* K_SECTION, terminated by name == NULL */
};

#define OFF(f) offsetof(struct act_config, f)

static const char *const plugin_modes[] = { "arbiter", "remote", NULL };
static const char *const sampler_modes[] = { "auto", "bpf", "taskstats", NULL };
static const char *const cpu_policies[] = { "reactive", "neon", NULL };
static const char *const cpu_shrinks[] = { "quota", "unplug", NULL };

static const struct key libvirt_keys[] = {
	{ "uri", K_STRING, OFF(libvirt_uri), 0, 0, NULL, NULL },
	{ "name_prefix", K_STRING, OFF(libvirt_name_prefix), 0, 0, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key control_keys[] = {
	{ "socket", K_STRING, OFF(control_socket), 0, 0, NULL, NULL },
	{ "read_group", K_STRING0, OFF(control_read_group), 0, 0, NULL, NULL },
	{ "state_dir", K_STRING, OFF(state_dir), 0, 0, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key plugin_keys[] = {
	{ "mode", K_ENUM, OFF(plugin_mode), 0, 0, plugin_modes, NULL },
	{ "url", K_STRING, OFF(plugin_url), 0, 0, NULL, NULL },
	{ "version", K_STRING, OFF(plugin_version), 0, 0, NULL, NULL },
	{ "timeout_ms", K_UINT, OFF(plugin_timeout_ms), 1, 600000, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key arbiter_keys[] = {
	{ "listen", K_STRING, OFF(arbiter_listen), 0, 0, NULL, NULL },
	{ "lease_key", K_STRING0, OFF(arbiter_lease_key), 0, 0, NULL, NULL },
	{ "watermark", K_DOUBLE, OFF(arbiter_watermark), 0.01, 1.0, NULL, NULL },
	{ "reserve_cpu", K_MILLI_CPU, OFF(arbiter_reserve_milli_cpu), 0, 0, NULL, NULL },
	{ "reserve_memory", K_BYTES, OFF(arbiter_reserve_mem_bytes), 0, 0, NULL, NULL },
	{ "overcommit_cpu", K_DOUBLE, OFF(arbiter_overcommit_cpu), 0.1, 100, NULL, NULL },
	{ "overcommit_memory", K_DOUBLE, OFF(arbiter_overcommit_mem), 0.1, 100, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key informant_keys[] = {
	{ "listen", K_STRING, OFF(informant_listen), 0, 0, NULL, NULL },
	{ "advertise_host", K_STRING, OFF(informant_advertise_host), 0, 0, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key cgroup_keys[] = {
	{ "cpu_quota_overcommit", K_DOUBLE, OFF(cpu_quota_overcommit), 0.01, 100, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key sampler_keys[] = {
	{ "mode", K_ENUM, OFF(sampler_mode), 0, 0, sampler_modes, NULL },
	{ "keep_pins", K_BOOL, OFF(sampler_keep_pins), 0, 0, NULL, NULL },
	{ "taskstats_interval_ms", K_UINT, OFF(taskstats_interval_ms), 10, 60000, NULL, NULL },
	{ "pin_root", K_STRING, OFF(sampler_pin_root), 0, 0, NULL, NULL },
	{ "interval_ms", K_UINT, OFF(sampler_interval_ms), 100, 600000, NULL, NULL },
	/* BPF map sizes (doc/reliability.md). */
	{ "max_vms", K_UINT, OFF(sampler_max_vms), 1, 65536, NULL, NULL },
	{ "max_threads", K_UINT, OFF(sampler_max_threads), 1, 4194304, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key policy_keys[] = {
	{ "cpu", K_ENUM, OFF(cpu_policy), 0, 0, cpu_policies, NULL },
	{ "cpu_shrink", K_ENUM, OFF(cpu_shrink), 0, 0, cpu_shrinks, NULL },
	{ "tick_ms", K_UINT, OFF(policy_tick_ms), 50, 10000, NULL, NULL },
	{ "events", K_BOOL, OFF(policy_events), 0, 0, NULL, NULL },
	{ "events_priority", K_UINT, OFF(policy_events_priority), 0, 99, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key metrics_keys[] = {
	{ "listen", K_STRING0, OFF(metrics_listen), 0, 0, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key guest_worker_keys[] = {
	/* Always on: vmactd speaks no guest protocol itself (doc/privsep.md). */
	{ "enabled", K_TRUE, 0, 0, 0, NULL, NULL },
	{ "user", K_STRING, OFF(guest_worker_user), 0, 0, NULL, NULL },
	{ "program", K_STRING0, OFF(guest_worker_program), 0, 0, NULL, NULL },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};
static const struct key top_keys[] = {
	{ "libvirt", K_SECTION, 0, 0, 0, NULL, libvirt_keys },
	{ "control", K_SECTION, 0, 0, 0, NULL, control_keys },
	{ "plugin", K_SECTION, 0, 0, 0, NULL, plugin_keys },
	{ "arbiter", K_SECTION, 0, 0, 0, NULL, arbiter_keys },
	{ "informant", K_SECTION, 0, 0, 0, NULL, informant_keys },
	{ "cgroup", K_SECTION, 0, 0, 0, NULL, cgroup_keys },
	{ "sampler", K_SECTION, 0, 0, 0, NULL, sampler_keys },
	{ "policy", K_SECTION, 0, 0, 0, NULL, policy_keys },
	{ "metrics", K_SECTION, 0, 0, 0, NULL, metrics_keys },
	{ "guest_worker", K_SECTION, 0, 0, 0, NULL, guest_worker_keys },
	{ NULL, 0, 0, 0, 0, NULL, NULL },
};

static int apply_key(const struct key *k, const json_t *v, struct act_config *cfg,
		     struct vmact_err *err)
{
	void *dst = (char *)cfg + k->offset;

	switch (k->type) {
	case K_STRING:
		if (!json_is_string(v) || json_string_length(v) == 0)
			return vmact_err_set(err, EINVAL, "expected a non-empty string");
		return set_string(dst, json_string_value(v));
	case K_STRING0:
		if (!json_is_string(v))
			return vmact_err_set(err, EINVAL, "expected a string");
		return set_string(dst, json_string_value(v));
	case K_DOUBLE:
		if (!json_is_number(v))
			return vmact_err_set(err, EINVAL, "expected a number");
		if (json_number_value(v) < k->min || json_number_value(v) > k->max)
			return vmact_err_set(err, ERANGE, "%g out of range [%g, %g]",
					     json_number_value(v), k->min, k->max);
		*(double *)dst = json_number_value(v);
		return 0;
	case K_UINT:
		if (!json_is_integer(v))
			return vmact_err_set(err, EINVAL, "expected an integer");
		if (json_integer_value(v) < k->min || json_integer_value(v) > k->max)
			return vmact_err_set(err, ERANGE, "%lld out of range [%g, %g]",
					     (long long)json_integer_value(v), k->min, k->max);
		*(unsigned *)dst = (unsigned)json_integer_value(v);
		return 0;
	case K_BOOL:
		if (!json_is_boolean(v))
			return vmact_err_set(err, EINVAL, "expected true or false");
		*(bool *)dst = json_is_true(v);
		return 0;
	case K_TRUE:
		if (json_is_true(v))
			return 0;
		return vmact_err_set(err, EINVAL,
				     "only true: the vm-monitors, informants and guest exporters "
				     "are always spoken to by vmact-guestd, never by vmactd "
				     "(doc/privsep.md)");
	case K_MILLI_CPU:
		return ag_milli_cpu_decode(v, dst, err);
	case K_BYTES:
		return ag_bytes_decode(v, dst, err);
	case K_ENUM:
		if (json_is_string(v)) {
			for (int i = 0; k->choices[i]; i++) {
				if (strcmp(k->choices[i], json_string_value(v)) == 0) {
					*(int *)dst = i;
					return 0;
				}
			}
		}
		return vmact_err_set(err, EINVAL, "expected one of \"%s\", \"%s\"%s", k->choices[0],
				     k->choices[1], k->choices[2] ? ", ..." : "");
	case K_SECTION:
		break;
	}
	return vmact_err_set(err, EINVAL, "internal: bad key type");
}

static int apply_section(const struct key *keys, const json_t *obj, const char *path,
			 struct act_config *cfg, struct vmact_err *err)
{
	const char *name;
	json_t *v;

	if (!json_is_object(obj))
		return vmact_err_set(err, EINVAL, "%s: expected an object", path);
	json_object_foreach((json_t *)obj, name, v) {
		const struct key *k = keys;
		int r;

		while (k->name && strcmp(k->name, name) != 0)
			k++;
		if (!k->name)
			return vmact_err_set(err, EINVAL, "%s%s%s: unknown key", path,
					     *path ? "." : "", name);
		if (k->type == K_SECTION)
			r = apply_section(k->section, v, name, cfg, err);
		else
			r = apply_key(k, v, cfg, err);
		if (r < 0) {
			if (k->type == K_SECTION)
				return r;
			return vmact_err_prefix(err, "%s%s%s", path, *path ? "." : "", name);
		}
	}
	return 0;
}

/* ADDR:PORT with a numeric port; a wildcard ADDR is fine only with an
 * advertise_host, as the informant must be told where to call back. */
static int check_informant_listen(const struct act_config *cfg, struct vmact_err *err)
{
	struct vmact_listen l;

	if (vmact_listen_parse(cfg->informant_listen, false, &l, err) < 0)
		return vmact_err_prefix(err, "informant.listen");
	if (!cfg->informant_advertise_host && l.wildcard)
		return vmact_err_set(err, EINVAL,
				     "informant.advertise_host: needed when "
				     "informant.listen is a wildcard address");
	return 0;
}

static int apply_document(json_t *doc, struct act_config *cfg, struct vmact_err *err)
{
	json_t *scaling, *cu;
	int r;

	if (!json_is_object(doc))
		return vmact_err_set(err, EINVAL, "top level: expected an object");
	scaling = json_object_get(doc, "scaling");
	if (scaling) {
		struct ag_scaling_overrides o;
		struct ag_scaling_config base = cfg->scaling;

		if (!json_is_object(scaling))
			return vmact_err_set(err, EINVAL, "scaling: expected an object");
		/* Both name their own path ("scaling config: <field>: ..."). */
		r = ag_scaling_overrides_decode(scaling, AG_SCALING_REJECT_UNKNOWN, &o, err);
		if (r >= 0)
			r = ag_scaling_config_effective(&base, &o, &cfg->scaling, err);
		if (r < 0)
			return r;
		json_object_del(doc, "scaling");
	}
	cu = json_object_get(doc, "compute_unit");
	if (cu) {
		r = ag_resources_decode(cu, &cfg->compute_unit, err);
		if (r < 0)
			return vmact_err_prefix(err, "compute_unit");
		if (cfg->compute_unit.milli_cpu == 0 || cfg->compute_unit.mem_bytes == 0)
			return vmact_err_set(err, EINVAL,
					     "compute_unit: both fields must be non-zero");
		json_object_del(doc, "compute_unit");
	}
	r = apply_section(top_keys, doc, "", cfg, err);
	if (r < 0)
		return r;
	if (cfg->plugin_mode == ACT_PLUGIN_REMOTE) {
		struct vmact_endpoint ep;

		if (vmact_endpoint_parse(cfg->plugin_url, VMACT_EP_HTTP, &ep, err) < 0)
			return vmact_err_prefix(err, "plugin.url");
	}
	{
		enum ag_plugin_version v;

		if (ag_plugin_version_parse(cfg->plugin_version, &v, err) < 0)
			return vmact_err_prefix(err, "plugin.version");
	}
	/* Only other Neon agents use the listener (vmactd's own VMs call the
	 * arbiter in-process): any address the operator chooses, or none. */
	if (cfg->arbiter_listen[0]) {
		struct vmact_listen l;

		if (vmact_listen_parse(cfg->arbiter_listen, true, &l, err) < 0)
			return vmact_err_prefix(err, "arbiter.listen");
	}
	if (cfg->metrics_listen[0]) {
		struct vmact_listen l;

		if (vmact_listen_parse(cfg->metrics_listen, true, &l, err) < 0)
			return vmact_err_prefix(err, "metrics.listen");
	}
	r = check_informant_listen(cfg, err);
	if (r < 0)
		return r;
	if (cfg->sampler_pin_root[0] != '/')
		return vmact_err_set(err, EINVAL, "sampler.pin_root: must be an absolute path");
	return 0;
}

int act_config_load_string(const char *text, struct act_config *cfg, struct vmact_err *err)
{
	json_error_t jerr;
	json_t *doc = json_loads(text, 0, &jerr);
	int r;

	if (!doc)
		return vmact_err_set(err, EINVAL, "line %d: %s", jerr.line, jerr.text);
	r = apply_document(doc, cfg, err);
	json_decref(doc);
	return r;
}

int act_config_load(const char *path, bool must_exist, struct act_config *cfg,
		    struct vmact_err *err)
{
	json_error_t jerr;
	json_t *doc;
	int r;

	if (access(path, F_OK) < 0 && errno == ENOENT && !must_exist)
		return 1;
	doc = json_load_file(path, 0, &jerr);
	if (!doc) {
		if (access(path, R_OK) < 0)
			return vmact_err_set(err, errno, "%s: %m", path);
		return vmact_err_set(err, EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
	}
	r = apply_document(doc, cfg, err);
	json_decref(doc);
	if (r < 0)
		return vmact_err_prefix(err, "%s", path);
	return 0;
}

/* ---- reload (SIGHUP) ----------------------------------------------------- */

/* Keys whose new value a running vmactd takes: read on every policy tick
 * (policy.*) or applied to each VM by the resync that follows a reload
 * (scaling). Every other key is read once at start. */
static const char *const live_keys[] = { "policy.cpu", "policy.cpu_shrink", NULL };

static bool key_eq(const struct key *k, const struct act_config *a, const struct act_config *b)
{
	const void *x = (const char *)a + k->offset, *y = (const char *)b + k->offset;

	switch (k->type) {
	case K_STRING:
	case K_STRING0: {
		const char *s = *(char *const *)x, *t = *(char *const *)y;

		return (!s && !t) || (s && t && strcmp(s, t) == 0);
	}
	case K_DOUBLE:
		return *(const double *)x == *(const double *)y;
	case K_UINT:
		return *(const unsigned *)x == *(const unsigned *)y;
	case K_BOOL:
		return *(const bool *)x == *(const bool *)y;
	case K_MILLI_CPU:
		return *(const uint32_t *)x == *(const uint32_t *)y;
	case K_BYTES:
		return *(const uint64_t *)x == *(const uint64_t *)y;
	case K_ENUM:
		return *(const int *)x == *(const int *)y;
	case K_TRUE: /* holds nothing */
	case K_SECTION:
		break;
	}
	return true;
}

static bool scaling_eq(const struct ag_scaling_config *a, const struct ag_scaling_config *b)
{
	return a->load_average_fraction_target == b->load_average_fraction_target &&
	       a->memory_usage_fraction_target == b->memory_usage_fraction_target &&
	       a->memory_total_fraction_target == b->memory_total_fraction_target &&
	       a->enable_lfc_metrics == b->enable_lfc_metrics &&
	       a->lfc_use_largest_window == b->lfc_use_largest_window &&
	       a->lfc_to_memory_ratio == b->lfc_to_memory_ratio &&
	       a->lfc_min_wait_before_downscale_minutes ==
		       b->lfc_min_wait_before_downscale_minutes &&
	       a->lfc_window_size_minutes == b->lfc_window_size_minutes &&
	       a->cpu_stable_zone_ratio == b->cpu_stable_zone_ratio &&
	       a->cpu_mixed_zone_ratio == b->cpu_mixed_zone_ratio;
}

static bool is_live(const char *name)
{
	for (size_t i = 0; live_keys[i]; i++)
		if (strcmp(live_keys[i], name) == 0)
			return true;
	return false;
}

unsigned act_config_reload(struct act_config *cfg, const struct act_config *next,
			   void (*fn)(void *ud, const char *key, bool applied), void *ud)
{
	unsigned changed = 0;
	char name[128];

	for (const struct key *sec = top_keys; sec->name; sec++) {
		for (const struct key *k = sec->section; k->name; k++) {
			if (key_eq(k, cfg, next))
				continue;
			snprintf(name, sizeof(name), "%s.%s", sec->name, k->name);
			if (is_live(name)) {
				/* Scalars only: nothing of the running
				 * configuration is freed under a reader. */
				memcpy((char *)cfg + k->offset, (const char *)next + k->offset,
				       k->type == K_ENUM ? sizeof(int) : sizeof(unsigned));
				changed++;
			}
			fn(ud, name, is_live(name));
		}
	}
	if (!scaling_eq(&cfg->scaling, &next->scaling)) {
		cfg->scaling = next->scaling;
		changed++;
		fn(ud, "scaling", true);
	}
	if (!vmact_res_eq(cfg->compute_unit, next->compute_unit))
		fn(ud, "compute_unit", false);
	return changed;
}
