/* SPDX-License-Identifier: Apache-2.0 */
/* vmactl check, enable and disable (enroll.h, doc/domain.md). */
#include "actuator/daemon/enroll.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "hotplug/domain.h"
#include "hotplug/layout.h"

/* Bounds: the request's fields over base. */
static void merge(const struct hp_meta_change *b, struct vmact_resources *min,
		  struct vmact_resources *max)
{
	if (!b)
		return;
	if (b->set_min_cpu)
		min->milli_cpu = b->min_milli_cpu;
	if (b->set_max_cpu)
		max->milli_cpu = b->max_milli_cpu;
	if (b->set_min_mem)
		min->mem_bytes = b->min_mem_bytes;
	if (b->set_max_mem)
		max->mem_bytes = b->max_mem_bytes;
}

static bool any_bound(const struct hp_meta_change *b)
{
	return b && (b->set_min_cpu || b->set_max_cpu || b->set_min_mem || b->set_max_mem);
}

/* One layout: the XML (live or the definition) against the bounds. */
static int read_layout(struct hp_conn *c, struct act_domain_check *out, bool inactive,
		       uint64_t dimm_bytes, struct hp_layout *l, struct vmact_err *err)
{
	_cleanup_free_ char *xml = NULL;
	int r = hp_domain_xml(c, out->uuid, inactive, &xml, NULL, NULL, err);

	if (r < 0)
		return r;
	return hp_layout_check(xml, &out->min, &out->max, &out->method, dimm_bytes,
			       out->meta_metrics, l, err);
}

int act_enroll_check(struct hp_conn *c, const char *dom, const struct hp_meta_change *bounds,
		     uint64_t dimm_bytes, struct act_domain_check *out, struct vmact_err *err)
{
	_cleanup_free_ char *xml = NULL;
	_cleanup_(hp_meta_done) struct hp_meta meta = { 0 };
	struct vmact_err merr = { 0 };
	struct hp_layout own;
	struct vmact_resources dmin, dmax;
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = hp_domain_resolve(c, dom, out->uuid, out->name, err)) < 0)
		return r;
	/* The defaults come from how the domain boots: its definition when
	 * it has one (a running VM may have grown since), else what runs. */
	if ((r = hp_domain_xml(c, out->uuid, false, &xml, &out->active, &out->persistent, err)) < 0)
		return r;
	if (out->persistent) {
		free(xml);
		xml = NULL;
		if ((r = hp_domain_xml(c, out->uuid, true, &xml, NULL, NULL, err)) < 0)
			return r;
	}
	if ((r = hp_layout_check(xml, NULL, NULL, NULL, dimm_bytes, false, &own, err)) < 0)
		return r;
	r = hp_meta_read_any(c, out->uuid, &meta, &merr);
	if (r == -ENOENT) {
		out->meta_state = "none";
	} else if (r < 0) {
		out->meta_state = "invalid";
		snprintf(out->meta_error, sizeof(out->meta_error), "%s", merr.msg);
	} else {
		out->meta_state = "valid";
		out->meta_metrics = meta.metrics[0] != 0;
	}
	hp_layout_default_bounds(&own, &dmin, &dmax);
	out->method = own.method;
	if (!strcmp(out->meta_state, "valid")) {
		out->min = meta.min;
		out->max = meta.max;
		out->method = meta.method;
		if (meta.has_compute_unit)
			dimm_bytes = meta.compute_unit.mem_bytes;
		out->bounds_from = "metadata";
	} else {
		out->min = dmin;
		out->max = dmax;
		out->bounds_from = "defaults";
	}
	if (any_bound(bounds))
		out->bounds_from = "request";
	out->migration = bounds && bounds->set_migration
				 ? bounds->migration
				 : !strcmp(out->meta_state, "valid") && meta.migration;
	merge(bounds, &out->min, &out->max);

	if (out->active) {
		if ((r = read_layout(c, out, false, dimm_bytes, &out->live, err)) < 0)
			return r;
		out->has_live = true;
	}
	if (out->persistent) {
		if ((r = read_layout(c, out, true, dimm_bytes, &out->config, err)) < 0)
			return r;
		out->has_config = true;
	}
	out->ready = out->has_live ? out->live.ready : out->config.ready;
	if (out->min.milli_cpu > out->max.milli_cpu || out->min.mem_bytes > out->max.mem_bytes)
		out->ready = false;
	return 0;
}

/* The first blocker of the verdict's layout, for the refusal's message. */
static const char *first_blocker(const struct act_domain_check *o)
{
	const struct hp_layout *l = o->has_live ? &o->live : &o->config;

	for (size_t i = 0; i < l->n; i++)
		if (l->items[i].level == HP_LAYOUT_BLOCKER)
			return l->items[i].text;
	return "min above max";
}

int act_enroll_enable(struct hp_conn *c, const char *dom, const struct hp_meta_change *bounds,
		      uint64_t dimm_bytes, struct act_domain_check *out, struct vmact_err *err)
{
	_cleanup_free_ char *element = NULL;
	struct hp_meta_change ch = { 0 };
	int r = act_enroll_check(c, dom, bounds, dimm_bytes, out, err);

	if (r < 0)
		return r;
	if (!strcmp(out->meta_state, "invalid"))
		return vmact_err_set(err, EINVAL,
				     "%s: its vmact metadata is invalid (%s): fix it "
				     "with virsh edit, or remove it (virsh metadata %s %s --remove "
				     "--live --config) and enable again",
				     out->name, out->meta_error, out->name, HP_NS_URI);
	if (!out->ready)
		return vmact_err_set(err, EINVAL, "%s: refused: %s (vmactl check %s)", out->name,
				     first_blocker(out), out->name);
	if (!strcmp(out->meta_state, "none")) {
		r = hp_layout_meta_build(&out->min, &out->max, out->method, bounds, &element, err);
		if (r >= 0)
			r = hp_meta_put(c, out->uuid, element, err);
		return r < 0 ? vmact_err_prefix(err, "%s", out->name) : 0;
	}
	if (bounds)
		ch = *bounds;
	ch.set_paused = false;
	ch.set_enabled = true;
	ch.enabled = true;
	if ((r = hp_meta_write(c, out->uuid, &ch, NULL, err)) < 0)
		return vmact_err_prefix(err, "%s", out->name);
	return 0;
}

int act_enroll_disable(struct hp_conn *c, const char *dom, char name[HP_NAME_MAX],
		       struct vmact_err *err)
{
	struct hp_meta_change ch = { .set_enabled = true, .enabled = false };
	char uuid[HP_UUID_LEN];
	int r;

	if ((r = hp_domain_resolve(c, dom, uuid, name, err)) < 0)
		return r;
	r = hp_meta_write(c, uuid, &ch, NULL, err);
	if (r == -ENOENT)
		return vmact_err_set(err, ENOENT, "%s has no vmact metadata: nothing to disable",
				     name);
	return r < 0 ? vmact_err_prefix(err, "%s", name) : 0;
}
