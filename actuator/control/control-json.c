/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/control/control-json.h"

#include <errno.h>
#include <string.h>

#include "base/macro.h"
#include "base/quantity.h"

const char *act_vm_state_name(enum act_vm_state s)
{
	switch (s) {
	case ACT_VM_MANAGED:
		return "managed";
	case ACT_VM_PAUSED:
		return "paused";
	case ACT_VM_IGNORED:
		return "ignored";
	case ACT_VM_FROZEN:
		return "frozen";
	case ACT_VM_UNMANAGED:
	default:
		return "not-managed";
	}
}

static json_t *res(struct vmact_resources r)
{
	return json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)r.milli_cpu, "mem_bytes",
			 (json_int_t)r.mem_bytes);
}

/* Absent figures are null, never 0: a 0 would read as a measurement. */
static json_t *opt_res(bool has, struct vmact_resources r)
{
	return has ? res(r) : json_null();
}

static json_t *opt_real(bool has, double v)
{
	return has ? json_real(v) : json_null();
}

static json_t *opt_u64(bool has, uint64_t v)
{
	return has ? json_integer((json_int_t)v) : json_null();
}

/* Where the policies' figures come from, and the memory's figures. */
static json_t *evidence(const struct act_vm_view *v)
{
	json_t *bal = json_null(), *dec = json_null(), *mem;

	if (v->has_balloon)
		bal = json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o}", "total_bytes",
				(json_int_t)v->balloon.total, "available_bytes",
				(json_int_t)v->balloon.available, "unused_bytes",
				opt_u64(v->balloon.has_unused, v->balloon.unused),
				"disk_caches_bytes",
				opt_u64(v->balloon.has_caches, v->balloon.caches), "swap_in_bytes",
				opt_u64(v->balloon.has_swap, v->balloon.swap_in), "swap_out_bytes",
				opt_u64(v->balloon.has_swap, v->balloon.swap_out), "major_faults",
				opt_u64(v->balloon.has_faults, v->balloon.major_faults),
				"last_update",
				opt_u64(v->balloon.last_update != 0, v->balloon.last_update));
	if (v->has_mem_dec)
		dec = json_pack("{s:s,s:I,s:I,s:I,s:f,s:f,s:f}", "class", v->mem_class,
				"goal_bytes", (json_int_t)v->mem_goal, "used_bytes",
				(json_int_t)v->mem_used, "headroom_bytes",
				(json_int_t)v->mem_headroom, "growth_bytes_per_s", v->mem_growth,
				"major_faults_per_s", v->mem_fault_rate, "swap_in_bytes_per_s",
				v->mem_swap_in_rate);
	mem = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o}", "policy",
			v->mem_policy ? v->mem_policy : "neon", "source",
			v->mem_source ? v->mem_source : "none", "reason",
			v->mem_why[0] ? json_string(v->mem_why) : json_null(), "balloon", bal,
			"decision", dec, "kept_by_guest_s",
			opt_u64(v->mem_kept_s != 0, v->mem_kept_s));
	return json_pack("{s:s,s:{s:o},s:o}", "approval", v->approval ? v->approval : "host", "cpu",
			 "source", v->cpu_source ? json_string(v->cpu_source) : json_null(),
			 "memory", mem);
}

json_t *act_json_hook(const struct act_hook_status *h)
{
	bool unhooked = h->unhooked_usec && h->unhooked_usec > h->last_notice_usec;

	return json_pack("{s:b,s:I,s:o,s:o,s:b}", "installed", h->installed, "notices",
			 (json_int_t)h->notices, "last_notice",
			 h->last_notice_usec ? json_real(h->last_notice_usec / 1e6) : json_null(),
			 "unannounced_start",
			 unhooked ? json_pack("{s:s,s:f}", "vm", h->unhooked, "time",
					      h->unhooked_usec / 1e6)
				  : json_null(),
			 "restart_libvirtd", unhooked && h->installed);
}

json_t *act_json_detection(const struct act_detection *d)
{
	return json_pack("{s:s,s:s,s:i,s:i,s:s?}", "sampler", d->sampler, "mode",
			 d->kernel ? "kernel" : "poll", "tick_ms", (int)d->tick_ms, "idle_read_ms",
			 (int)(d->kernel ? d->slow_ms : d->tick_ms), "reason",
			 d->kernel ? NULL : d->reason);
}

json_t *act_json_vm(const struct act_vm_view *v, bool detail)
{
	json_t *o = json_pack("{s:s,s:s,s:s}", "name", v->name, "uuid", v->uuid, "state",
			      act_vm_state_name(v->state));

	if (!o)
		return NULL;
	if (v->state == ACT_VM_UNMANAGED || v->state == ACT_VM_IGNORED) {
		json_object_set_new(o, "reason", json_string(v->reason));
		return o;
	}
	json_object_set_new(o, "vcpus", json_integer(v->vcpus));
	json_object_set_new(o, "quota_milli_cpu",
			    v->quota_milli ? json_integer(v->quota_milli) : json_null());
	json_object_set_new(o, "mem_bytes", json_integer((json_int_t)v->mem_bytes));
	json_object_set_new(o, "using", res(v->using_));
	json_object_set_new(o, "load1", opt_real(v->has_load, v->load1));
	json_object_set_new(o, "demand",
			    v->has_demand ? json_pack("{s:s,s:f,s:f,s:o}", "class", v->demand_class,
						      "cpus", v->demand_cpus, "busy", v->busy,
						      "goal_milli_cpu",
						      v->has_goal ? json_integer(v->goal_milli)
								  : json_null())
					  : json_null());
	json_object_set_new(o, "permit", opt_res(v->has_permit, v->permit));
	json_object_set_new(o, "desired", opt_res(v->has_desired, v->desired));
	json_object_set_new(o, "mode", json_string(v->recommend ? "recommend" : "active"));
	json_object_set_new(o, "recommended", opt_res(v->recommend && v->has_desired, v->desired));
	json_object_set_new(o, "migration", json_pack("{s:b}", "enabled", v->migration));
	json_object_set_new(o, "frozen",
			    v->state == ACT_VM_FROZEN
				    ? json_pack("{s:s,s:f,s:b}", "reason", v->frozen_why, "since",
						v->frozen_since_usec / 1e6, "idle", v->frozen_idle)
				    : json_null());
	json_object_set_new(o, "permit_short",
			    v->permit_short[0] ? json_string(v->permit_short) : json_null());
	json_object_set_new(o, "cannot_shrink",
			    v->cannot_shrink[0] ? json_string(v->cannot_shrink) : json_null());
	json_object_set_new(o, "last_change",
			    v->last_change_usec
				    ? json_pack("{s:f,s:s}", "time", v->last_change_usec / 1e6,
						"reason", v->last_change)
				    : json_null());
	if (!detail)
		return o;
	json_object_set_new(o, "bounds",
			    json_pack("{s:o,s:o}", "min", res(v->min), "max", res(v->max)));
	json_object_set_new(o, "compute_unit", res(v->cu));
	json_object_set_new(o, "policy",
			    json_pack("{s:s,s:s,s:s,s:f,s:f,s:o,s:o}", "cpu", v->policy_cpu,
				      "shrink", v->policy_shrink, "source", v->policy_source,
				      "load_target", v->load_target, "mem_usage_target",
				      v->mem_usage_target, "load1", opt_real(v->has_load, v->load1),
				      "load5", opt_real(v->has_load, v->load5)));
	json_object_set_new(o, "scheduler",
			    json_pack("{s:s,s:o,s:b}", "kind", v->scheduler, "url",
				      v->scheduler_url[0] ? json_string(v->scheduler_url)
							  : json_null(),
				      "request_pending", v->scheduler_busy));
	json_object_set_new(o, "monitor",
			    json_pack("{s:s,s:o,s:b}", "kind", v->monitor_kind, "endpoint",
				      v->monitor_endpoint[0] ? json_string(v->monitor_endpoint)
							     : json_null(),
				      "connected", v->monitor_connected));
	json_object_set_new(o, "resizing", json_boolean(v->resizing));
	json_object_set_new(o, "evidence", evidence(v));
	return o;
}

json_t *act_json_event(const struct act_event *ev)
{
	return json_pack("{s:I,s:f,s:s,s:s,s:s,s:O}", "seq", (json_int_t)ev->seq, "time",
			 ev->time_usec / 1e6, "vm", ev->vm, "kind", act_event_kind_name(ev->kind),
			 "text", ev->text, "fields", ev->fields);
}

json_t *act_json_error(const char *msg)
{
	return json_pack("{s:s}", "error", msg);
}

/* ---- requests ---- */

/* A bound from the body: a Kubernetes quantity string, as in the
 * metadata ("500m", "2", "512Mi"). */
static int body_quantity(json_t *body, const char *key, bool milli, bool *set, uint64_t *out,
			 struct vmact_err *err)
{
	json_t *v = json_object_get(body, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return vmact_err_set(err, EINVAL, "%s: must be a quantity string such as \"%s\"",
				     key, milli ? "500m" : "1Gi");
	if ((milli ? vmact_quantity_parse_milli(json_string_value(v), out, err)
		   : vmact_quantity_parse_value(json_string_value(v), out, err)) < 0)
		return vmact_err_prefix(err, "%s", key);
	if (*out == 0 || (milli && *out > UINT32_MAX))
		return vmact_err_set(err, ERANGE, "%s: '%s' out of range", key,
				     json_string_value(v));
	*set = true;
	return 0;
}

int act_control_bounds_decode(const char *text, size_t len, struct hp_meta_change *ch,
			      struct vmact_err *err)
{
	static const char *const keys[] = { "min_cpu",    "max_cpu", "min_memory",
					    "max_memory", "mode",    "migration" };
	_cleanup_(json_decrefp) json_t *body = NULL;
	json_error_t je;
	const char *key;
	json_t *v;
	uint64_t q[4] = { 0 };
	int r;

	body = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!body)
		return vmact_err_set(err, EINVAL, "body is not JSON: %s", je.text);
	if (!json_is_object(body))
		return vmact_err_set(err, EINVAL, "body must be a JSON object");
	json_object_foreach(body, key, v) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(keys); i++)
			if (strcmp(key, keys[i]) == 0)
				break;
		if (i == ARRAY_SIZE(keys))
			return vmact_err_set(err, EINVAL,
					     "unknown field '%s' (min_cpu, max_cpu, "
					     "min_memory, max_memory, mode, migration)",
					     key);
	}
	if ((r = body_quantity(body, "min_cpu", true, &ch->set_min_cpu, &q[0], err)) < 0 ||
	    (r = body_quantity(body, "max_cpu", true, &ch->set_max_cpu, &q[1], err)) < 0 ||
	    (r = body_quantity(body, "min_memory", false, &ch->set_min_mem, &q[2], err)) < 0 ||
	    (r = body_quantity(body, "max_memory", false, &ch->set_max_mem, &q[3], err)) < 0)
		return r;
	if ((v = json_object_get(body, "mode")) && !json_is_null(v)) {
		const char *m = json_string_value(v);

		if (!m || (strcmp(m, "recommend") && strcmp(m, "active")))
			return vmact_err_set(err, EINVAL,
					     "mode: must be \"recommend\" or \"active\"");
		ch->set_mode = true;
		ch->recommend = m[0] == 'r';
	}
	if ((v = json_object_get(body, "migration")) && !json_is_null(v)) {
		if (!json_is_boolean(v))
			return vmact_err_set(err, EINVAL, "migration: must be true or false");
		ch->set_migration = true;
		ch->migration = json_is_true(v);
	}
	if (!ch->set_min_cpu && !ch->set_max_cpu && !ch->set_min_mem && !ch->set_max_mem &&
	    !ch->set_mode && !ch->set_migration)
		return vmact_err_set(err, EINVAL,
				     "nothing to set (min_cpu, max_cpu, min_memory, "
				     "max_memory, mode, migration)");
	ch->min_milli_cpu = (uint32_t)q[0];
	ch->max_milli_cpu = (uint32_t)q[1];
	ch->min_mem_bytes = q[2];
	ch->max_mem_bytes = q[3];
	return 0;
}

static const char *level_name(enum hp_layout_level l)
{
	return l == HP_LAYOUT_OK ? "ok" : l == HP_LAYOUT_NOTE ? "note" : "blocker";
}

static json_t *layout(const struct hp_layout *l)
{
	json_t *items = json_array();

	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(items,
				      json_pack("{s:s,s:s,s:b,s:s,s:o}", "part", l->items[i].part,
						"level", level_name(l->items[i].level),
						"cold_restart", l->items[i].cold, "text",
						l->items[i].text, "fix",
						l->items[i].fix[0]
							? json_pack("{s:s,s:b}", "command",
								    l->items[i].fix, "cold_restart",
								    l->items[i].fix_cold)
							: json_null()));
	return json_pack("{s:b,s:i,s:i,s:I,s:I,s:b,s:s,s:o}", "ready", l->ready, "vcpus",
			 (int)l->vcpus_now, "vcpus_max", (int)l->vcpus_max, "mem_base_bytes",
			 (json_int_t)l->mem_base_bytes, "mem_max_bytes",
			 (json_int_t)l->mem_max_bytes, "mem_hotplug", l->mem_hotplug, "method",
			 l->method == HP_METHOD_DIMM ? "dimm" : "virtio-mem", "items", items);
}

json_t *act_json_domain_check(const struct act_domain_check *c)
{
	json_t *o = json_pack("{s:s,s:s,s:b,s:b,s:s,s:s,s:o,s:o,s:s,s:b}", "name", c->name, "uuid",
			      c->uuid, "active", c->active, "persistent", c->persistent, "metadata",
			      c->meta_state, "bounds_from", c->bounds_from, "min", res(c->min),
			      "max", res(c->max), "method",
			      c->method == HP_METHOD_DIMM ? "dimm" : "virtio-mem", "ready",
			      c->ready);

	if (!o)
		return NULL;
	if (c->meta_error[0])
		json_object_set_new(o, "metadata_error", json_string(c->meta_error));
	json_object_set_new(o, "live", c->has_live ? layout(&c->live) : json_null());
	json_object_set_new(o, "definition", c->has_config ? layout(&c->config) : json_null());
	json_object_set_new(o, "migration", json_pack("{s:b}", "enabled", c->migration));
	return o;
}
