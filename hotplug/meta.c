/* SPDX-License-Identifier: Apache-2.0 */
/* Per-VM autoscaling config in the domain's <metadata>, namespace
 * HP_NS_URI. Example (all quantities are Kubernetes quantities):
 *
 *   <vmact:autoscaling xmlns:vmact="https://vmact.dev/xmlns/vmact/1" enabled="true"
 *                      refuse-invalid="false">
 *     (paused="true": managed, but not resized: `vmactl pause`)
 *     (mode="recommend": decided and reported as recommendations, never
 *      applied; mode="active", the default, applies them)
 *     <vmact:cpu min="1" max="4"/>
 *     <vmact:memory min="512Mi" max="1536Mi" method="virtio-mem"/>
 *     <vmact:compute-unit cpu="250m" memory="256Mi"/>
 *     <vmact:scaling loadAverageFractionTarget="0.9" memoryUsageFractionTarget="0.75"/>
 *     <vmact:monitor endpoint="ws://127.0.0.1:10301/monitor"/>
 *     (or, for guests running the retired VM informant instead of a
 *      vm-monitor: <vmact:informant endpoint="http://10.0.3.9:10301"/>)
 *     <vmact:pod namespace="default" name="db-1" uid="..."/>
 *     <vmact:metrics endpoint="http://10.0.3.9:9100" lfc="http://10.0.3.9:9499"/>
 *     <vmact:policy cpu="reactive" shrink="quota"/>
 *     <vmact:migration enabled="true"/>  (vmact may live-migrate it; default off)
 *   </vmact:autoscaling>
 *
 * A VM sized elsewhere (a NeonVM controller calling the runner's CPU API)
 * names where that API listens instead of a monitor, metrics, scaling and
 * CPU policy (doc/runner-api.md):
 *
 *     <vmact:runner listen="10.0.3.1:25183"/>
 *
 * Operators set it with
 *   virsh metadata DOM https://vmact.dev/xmlns/vmact/1 --key vmact --live --config \
 *         --set '<autoscaling enabled="true"><cpu min="1" max="4"/>...</autoscaling>'
 * (without xmlns: libvirt adds it), or write the prefixed form above in the
 * domain definition.
 *
 * refuse-invalid="true" (optional, default false) asks vmact-hook to refuse
 * the domain's start when this metadata is invalid (doc/hook.md).
 *
 * Strict on purpose: an operator's typo must not silently fall back to a
 * default, so unknown elements/attributes are errors naming them. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/endpoint.h"
#include "base/quantity.h"
#include "hotplug/hotplug.h"
#include "hotplug/xml.h"

/* Every error names the element as an operator writes it. */
#define EL "<" HP_NS_PREFIX ":%s>"

/* virDomainGetMetadata returns our element with the namespace stripped
 * (it selected it by namespace already), while the domain XML carries it
 * prefixed: accept both, reject any other namespace. */
static bool in_ns(xmlNodePtr n)
{
	return !n->ns || (n->ns->href && xmlStrcmp(n->ns->href, BAD_CAST HP_NS_URI) == 0);
}

static int check_attrs(xmlNodePtr n, const char *const *allowed, struct vmact_err *err)
{
	for (xmlAttrPtr a = n->properties; a; a = a->next) {
		bool ok = false;

		for (size_t i = 0; allowed[i]; i++)
			if (xmlStrcmp(a->name, BAD_CAST allowed[i]) == 0 && !a->ns)
				ok = true;
		if (!ok)
			return vmact_err_set(err, EINVAL, EL ": unknown attribute '%s'",
					     (const char *)n->name, (const char *)a->name);
	}
	return 0;
}

/* Returns a malloc'd copy of the attribute, NULL if absent (-EINVAL when
 * required). */
static int get_attr(xmlNodePtr n, const char *name, bool required, char **out,
		    struct vmact_err *err)
{
	_cleanup_xmlfree_ xmlChar *v = xmlGetNoNsProp(n, BAD_CAST name);

	*out = NULL;
	if (!v) {
		if (required)
			return vmact_err_set(err, EINVAL, EL ": missing attribute '%s'",
					     (const char *)n->name, name);
		return 0;
	}
	if (!v[0])
		return vmact_err_set(err, EINVAL, EL ": attribute '%s' is empty",
				     (const char *)n->name, name);
	*out = strdup((const char *)v);
	return *out ? 0 : -ENOMEM;
}

static int attr_bool(xmlNodePtr n, const char *name, bool required, bool *has, bool *out,
		     struct vmact_err *err)
{
	_cleanup_free_ char *v = NULL;
	int r = get_attr(n, name, required, &v, err);

	if (r < 0 || !v)
		return r;
	if (strcmp(v, "true") == 0)
		*out = true;
	else if (strcmp(v, "false") == 0)
		*out = false;
	else
		return vmact_err_set(err, EINVAL, EL ": attribute '%s': '%s' is not true or false",
				     (const char *)n->name, name, v);
	if (has)
		*has = true;
	return 0;
}

static int attr_milli(xmlNodePtr n, const char *name, uint32_t *out, struct vmact_err *err)
{
	_cleanup_free_ char *v = NULL;
	uint64_t milli;
	int r = get_attr(n, name, true, &v, err);

	if (r < 0)
		return r;
	if ((r = vmact_quantity_parse_milli(v, &milli, err)) < 0)
		return vmact_err_prefix(err, EL " attribute '%s'", (const char *)n->name, name);
	if (milli == 0 || milli > UINT32_MAX)
		return vmact_err_set(err, ERANGE, EL ": attribute '%s': '%s' out of range",
				     (const char *)n->name, name, v);
	*out = (uint32_t)milli;
	return 0;
}

static int attr_bytes(xmlNodePtr n, const char *name, uint64_t *out, struct vmact_err *err)
{
	_cleanup_free_ char *v = NULL;
	int r = get_attr(n, name, true, &v, err);

	if (r < 0)
		return r;
	if ((r = vmact_quantity_parse_value(v, out, err)) < 0)
		return vmact_err_prefix(err, EL " attribute '%s'", (const char *)n->name, name);
	if (*out == 0)
		return vmact_err_set(err, ERANGE, EL ": attribute '%s' must be non-zero",
				     (const char *)n->name, name);
	return 0;
}

static int attr_double(xmlNodePtr n, const char *name, double lo, double hi, bool *has, double *out,
		       struct vmact_err *err)
{
	_cleanup_free_ char *v = NULL;
	char *end;
	int r = get_attr(n, name, false, &v, err);

	if (r < 0 || !v)
		return r;
	errno = 0;
	*out = strtod(v, &end);
	if (errno || *end || !isfinite(*out))
		return vmact_err_set(err, EINVAL, EL ": attribute '%s': '%s' is not a number",
				     (const char *)n->name, name, v);
	if (*out < lo || *out >= hi)
		return vmact_err_set(err, ERANGE, EL ": attribute '%s': %s not in [%g, %g)",
				     (const char *)n->name, name, v, lo, hi);
	*has = true;
	return 0;
}

static int copy_attr(xmlNodePtr n, const char *name, bool required, char *dst, size_t len,
		     struct vmact_err *err)
{
	_cleanup_free_ char *v = NULL;
	int r = get_attr(n, name, required, &v, err);

	if (r < 0 || !v)
		return r;
	if (strlen(v) >= len)
		return vmact_err_set(err, ENAMETOOLONG, EL ": attribute '%s' longer than %zu",
				     (const char *)n->name, name, len - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

/* A parse: the texts are read into these buffers, the longest the
 * metadata may hold, and packed into the meta's one allocation at the
 * end (meta_pack). */
struct parse {
	struct hp_meta *m;
	char mem_alias[HP_ALIAS_MAX];
	char monitor[HP_META_ENDPOINT_MAX + 1];
	char informant[HP_META_ENDPOINT_MAX + 1];
	char pod_namespace[HP_META_POD_MAX + 1];
	char pod_name[HP_META_POD_MAX + 1];
	char pod_uid[HP_META_UID_MAX + 1];
	char metrics[HP_META_ENDPOINT_MAX + 1];
	char metrics_lfc[HP_META_ENDPOINT_MAX + 1];
	char runner_listen[HP_META_LISTEN_MAX + 1];
};

/* The texts of struct hp_meta, in one order for packing. */
static const size_t text_fields[] = {
	offsetof(struct hp_meta, mem_alias),     offsetof(struct hp_meta, monitor),
	offsetof(struct hp_meta, informant),     offsetof(struct hp_meta, pod_namespace),
	offsetof(struct hp_meta, pod_name),      offsetof(struct hp_meta, pod_uid),
	offsetof(struct hp_meta, metrics),       offsetof(struct hp_meta, metrics_lfc),
	offsetof(struct hp_meta, runner_listen),
};

/* hp_meta_parse hands meta_pack struct parse's buffers in this order. */
_Static_assert(ARRAY_SIZE(text_fields) == 9, "struct parse's texts and text_fields differ");

static const char **text_field(struct hp_meta *m, size_t i)
{
	return (const char **)(void *)((char *)m + text_fields[i]);
}

/* Points m's texts at copies of src[] (NULL or "": ""), in one allocation. */
static int meta_pack(struct hp_meta *m, const char *const src[ARRAY_SIZE(text_fields)],
		     struct vmact_err *err)
{
	size_t len = 0;
	char *p;

	m->text = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(text_fields); i++)
		len += src[i] && src[i][0] ? strlen(src[i]) + 1 : 0;
	if (len && !(m->text = malloc(len))) {
		for (size_t i = 0; i < ARRAY_SIZE(text_fields); i++)
			*text_field(m, i) = "";
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	p = m->text;
	for (size_t i = 0; i < ARRAY_SIZE(text_fields); i++) {
		if (src[i] && src[i][0]) {
			size_t l = strlen(src[i]) + 1;

			memcpy(p, src[i], l);
			*text_field(m, i) = p;
			p += l;
		} else {
			*text_field(m, i) = "";
		}
	}
	return 0;
}

void hp_meta_done(struct hp_meta *meta)
{
	free(meta->text);
	meta->text = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(text_fields); i++)
		*text_field(meta, i) = "";
}

int hp_meta_copy(struct hp_meta *dst, const struct hp_meta *src, struct vmact_err *err)
{
	const char *texts[ARRAY_SIZE(text_fields)];

	for (size_t i = 0; i < ARRAY_SIZE(text_fields); i++)
		texts[i] = *text_field((struct hp_meta *)src, i);
	hp_meta_done(dst);
	*dst = *src;
	return meta_pack(dst, texts, err);
}

static int parse_cpu(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	static const char *const a[] = { "min", "max", NULL };
	struct hp_meta *m = p->m;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = attr_milli(n, "min", &m->min.milli_cpu, err)) < 0 ||
	    (r = attr_milli(n, "max", &m->max.milli_cpu, err)) < 0)
		return r;
	if (m->min.milli_cpu > m->max.milli_cpu)
		return vmact_err_set(err, ERANGE, EL ": min %u m above max %u m", "cpu",
				     m->min.milli_cpu, m->max.milli_cpu);
	return 0;
}

static int parse_memory(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	static const char *const a[] = { "min", "max", "method", "alias", NULL };
	_cleanup_free_ char *method = NULL;
	struct hp_meta *m = p->m;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = attr_bytes(n, "min", &m->min.mem_bytes, err)) < 0 ||
	    (r = attr_bytes(n, "max", &m->max.mem_bytes, err)) < 0 ||
	    (r = get_attr(n, "method", true, &method, err)) < 0 ||
	    (r = copy_attr(n, "alias", false, p->mem_alias, sizeof(p->mem_alias), err)) < 0)
		return r;
	if (m->min.mem_bytes > m->max.mem_bytes)
		return vmact_err_set(err, ERANGE, EL ": min above max", "memory");
	if (strcmp(method, "virtio-mem") == 0)
		m->method = HP_METHOD_VIRTIO_MEM;
	else if (strcmp(method, "dimm") == 0)
		m->method = HP_METHOD_DIMM;
	else
		return vmact_err_set(err, EINVAL,
				     EL ": attribute 'method': '%s' is not virtio-mem or dimm",
				     "memory", method);
	return 0;
}

static int parse_cu(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	static const char *const a[] = { "cpu", "memory", NULL };
	struct hp_meta *m = p->m;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = attr_milli(n, "cpu", &m->compute_unit.milli_cpu, err)) < 0 ||
	    (r = attr_bytes(n, "memory", &m->compute_unit.mem_bytes, err)) < 0)
		return r;
	m->has_compute_unit = true;
	return 0;
}

static int parse_scaling(xmlNodePtr n, struct hp_scaling *s, struct vmact_err *err)
{
	static const char *const a[] = { "loadAverageFractionTarget",
					 "memoryUsageFractionTarget",
					 "memoryTotalFractionTarget",
					 "enableLFCMetrics",
					 "cpuStableZoneRatio",
					 "cpuMixedZoneRatio",
					 NULL };
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = attr_double(n, "loadAverageFractionTarget", 0, 2, &s->has_load_avg_target,
			     &s->load_avg_target, err)) < 0 ||
	    (r = attr_double(n, "memoryUsageFractionTarget", 0, 1, &s->has_mem_usage_target,
			     &s->mem_usage_target, err)) < 0 ||
	    (r = attr_double(n, "memoryTotalFractionTarget", 0, 1, &s->has_mem_total_target,
			     &s->mem_total_target, err)) < 0 ||
	    (r = attr_bool(n, "enableLFCMetrics", false, &s->has_enable_lfc, &s->enable_lfc, err)) <
		    0 ||
	    (r = attr_double(n, "cpuStableZoneRatio", 0, 1e9, &s->has_cpu_stable_zone,
			     &s->cpu_stable_zone, err)) < 0 ||
	    (r = attr_double(n, "cpuMixedZoneRatio", 0, 1e9, &s->has_cpu_mixed_zone,
			     &s->cpu_mixed_zone, err)) < 0)
		return r;
	return 0;
}

/* Endpoints as base/endpoint.h parses them. The monitor: ws://, http://
 * or unix:, refusing TLS (wss://) here rather than at the runner. The
 * informant: http://HOST:PORT exactly, because the informant protocol has
 * fixed paths under the base URL, so a path here would be an operator's
 * mistake, and the port is spelled out because the informant's default
 * (10301) is not HTTP's. */
static int parse_endpoint(xmlNodePtr n, const char *el, unsigned flags, char *buf, size_t len,
			  struct vmact_err *err)
{
	static const char *const a[] = { "endpoint", NULL };
	struct vmact_endpoint ep;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = copy_attr(n, "endpoint", true, buf, len, err)) < 0)
		return r;
	if (vmact_endpoint_parse(buf, flags, &ep, err) < 0)
		return vmact_err_prefix(err, EL ": attribute 'endpoint'", el);
	return 0;
}

static int parse_monitor(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	return parse_endpoint(n, "monitor", VMACT_EP_WS | VMACT_EP_HTTP | VMACT_EP_UNIX, p->monitor,
			      sizeof(p->monitor), err);
}

static int parse_informant(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	return parse_endpoint(n, "informant", VMACT_EP_HTTP | VMACT_EP_NEED_PORT | VMACT_EP_NO_PATH,
			      p->informant, sizeof(p->informant), err);
}

/* The guest's Prometheus endpoints: http://HOST:PORT, the port spelled out
 * (the exporters' ports, 9100 and 9499, are not HTTP's), a path allowed
 * (none means /metrics). */
#define METRICS_EP (VMACT_EP_HTTP | VMACT_EP_NEED_PORT)

static int parse_metrics(xmlNodePtr n, struct parse *m, struct vmact_err *err)
{
	static const char *const a[] = { "endpoint", "lfc", NULL };
	struct vmact_endpoint ep;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = copy_attr(n, "endpoint", true, m->metrics, sizeof(m->metrics), err)) < 0 ||
	    (r = copy_attr(n, "lfc", false, m->metrics_lfc, sizeof(m->metrics_lfc), err)) < 0)
		return r;
	if (vmact_endpoint_parse(m->metrics, METRICS_EP, &ep, err) < 0)
		return vmact_err_prefix(err, EL ": attribute 'endpoint'", "metrics");
	if (m->metrics_lfc[0] && vmact_endpoint_parse(m->metrics_lfc, METRICS_EP, &ep, err) < 0)
		return vmact_err_prefix(err, EL ": attribute 'lfc'", "metrics");
	return 0;
}

static int parse_policy(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	static const char *const a[] = { "cpu", "shrink", NULL };
	_cleanup_free_ char *cpu = NULL, *shrink = NULL;
	struct hp_meta *m = p->m;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 || (r = get_attr(n, "cpu", false, &cpu, err)) < 0 ||
	    (r = get_attr(n, "shrink", false, &shrink, err)) < 0)
		return r;
	if (!cpu)
		m->policy_cpu = HP_POLICY_CPU_HOST;
	else if (strcmp(cpu, "reactive") == 0)
		m->policy_cpu = HP_POLICY_CPU_REACTIVE;
	else if (strcmp(cpu, "neon") == 0)
		m->policy_cpu = HP_POLICY_CPU_NEON;
	else
		return vmact_err_set(err, EINVAL,
				     EL ": attribute 'cpu': '%s' is not reactive or neon", "policy",
				     cpu);
	if (!shrink)
		m->policy_shrink = HP_POLICY_SHRINK_HOST;
	else if (strcmp(shrink, "quota") == 0)
		m->policy_shrink = HP_POLICY_SHRINK_QUOTA;
	else if (strcmp(shrink, "unplug") == 0)
		m->policy_shrink = HP_POLICY_SHRINK_UNPLUG;
	else
		return vmact_err_set(err, EINVAL,
				     EL ": attribute 'shrink': '%s' is not quota or unplug",
				     "policy", shrink);
	return 0;
}

/* The runner API's listen address: numeric ADDR:PORT or [V6]:PORT, the
 * port spelled out and not 0 (the controller calls a known port). */
static int parse_runner(xmlNodePtr n, struct parse *m, struct vmact_err *err)
{
	static const char *const a[] = { "listen", NULL };
	struct vmact_listen l;
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = copy_attr(n, "listen", true, m->runner_listen, sizeof(m->runner_listen), err)) < 0)
		return r;
	if (vmact_listen_parse(m->runner_listen, false, &l, err) < 0)
		return vmact_err_prefix(err, EL ": attribute 'listen'", "runner");
	if (l.port == 0)
		return vmact_err_set(err, EINVAL,
				     EL ": attribute 'listen': '%s' needs a port "
					"other than 0",
				     "runner", m->runner_listen);
	return 0;
}

/* <vmact:migration enabled="true|false"/>: whether vmact may move the VM
 * to another host. Off unless said: a VM's network or storage may not
 * survive a move, and only its operator knows. */
static int parse_migration(xmlNodePtr n, struct parse *p, struct vmact_err *err)
{
	static const char *const a[] = { "enabled", NULL };
	int r;

	if ((r = check_attrs(n, a, err)) < 0)
		return r;
	return attr_bool(n, "enabled", true, NULL, &p->m->migration, err);
}

static int parse_pod(xmlNodePtr n, struct parse *m, struct vmact_err *err)
{
	static const char *const a[] = { "namespace", "name", "uid", NULL };
	int r;

	if ((r = check_attrs(n, a, err)) < 0 ||
	    (r = copy_attr(n, "namespace", true, m->pod_namespace, sizeof(m->pod_namespace), err)) <
		    0 ||
	    (r = copy_attr(n, "name", true, m->pod_name, sizeof(m->pod_name), err)) < 0 ||
	    (r = copy_attr(n, "uid", false, m->pod_uid, sizeof(m->pod_uid), err)) < 0)
		return r;
	return 0;
}

static int parse_meta(const char *xml, struct parse *p, struct vmact_err *err)
{
	static const struct {
		const char *name;
		int (*parse)(xmlNodePtr, struct parse *, struct vmact_err *);
		bool required;
	} elems[] = {
		{ "cpu", parse_cpu, true },
		{ "memory", parse_memory, true },
		{ "compute-unit", parse_cu, false },
		{ "scaling", NULL, false },
		{ "monitor", parse_monitor, false },
		{ "informant", parse_informant, false },
		{ "pod", parse_pod, false },
		{ "metrics", parse_metrics, false },
		{ "policy", parse_policy, false },
		{ "runner", parse_runner, false },
		{ "migration", parse_migration, false },
	};
	static const char *const root_attrs[] = { "enabled", "paused", "mode", "refuse-invalid",
						  NULL };
	_cleanup_free_ char *mode = NULL;
	bool seen[ARRAY_SIZE(elems)] = { false };
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	struct hp_meta *meta = p->m;
	xmlNodePtr root;
	int r;

	doc = xmlReadMemory(xml, (int)strlen(xml), "metadata.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc) {
		const xmlError *e = xmlGetLastError();

		return vmact_err_set(err, EINVAL, "vmact metadata is not well-formed XML%s%s",
				     e && e->message ? ": " : "",
				     e && e->message ? e->message : "");
	}
	root = xmlDocGetRootElement(doc);
	if (!root || !in_ns(root) || xmlStrcmp(root->name, BAD_CAST "autoscaling"))
		return vmact_err_set(err, EINVAL,
				     "vmact metadata: root must be " EL
				     " in namespace %s, got <%s>",
				     "autoscaling", HP_NS_URI,
				     root ? (const char *)root->name : "");
	if ((r = check_attrs(root, root_attrs, err)) < 0 ||
	    (r = attr_bool(root, "enabled", true, NULL, &meta->enabled, err)) < 0 ||
	    (r = attr_bool(root, "paused", false, NULL, &meta->paused, err)) < 0 ||
	    (r = attr_bool(root, "refuse-invalid", false, NULL, &meta->refuse_invalid, err)) < 0 ||
	    (r = get_attr(root, "mode", false, &mode, err)) < 0)
		return r;
	if (mode && strcmp(mode, "recommend") == 0)
		meta->recommend = true;
	else if (mode && strcmp(mode, "active") != 0)
		return vmact_err_set(err, EINVAL,
				     EL ": attribute 'mode': '%s' is not active or recommend",
				     "autoscaling", mode);

	for (xmlNodePtr n = root->children; n; n = n->next) {
		size_t i;

		if (n->type == XML_TEXT_NODE && xmlIsBlankNode(n))
			continue;
		if (n->type == XML_COMMENT_NODE)
			continue;
		if (n->type != XML_ELEMENT_NODE)
			return vmact_err_set(err, EINVAL, EL ": unexpected text", "autoscaling");
		if (!in_ns(n))
			return vmact_err_set(err, EINVAL, EL ": child <%s> is not in namespace %s",
					     "autoscaling", (const char *)n->name, HP_NS_URI);
		for (i = 0; i < ARRAY_SIZE(elems); i++)
			if (xmlStrcmp(n->name, BAD_CAST elems[i].name) == 0)
				break;
		if (i == ARRAY_SIZE(elems))
			return vmact_err_set(err, EINVAL, EL ": unknown element " EL, "autoscaling",
					     (const char *)n->name);
		if (seen[i])
			return vmact_err_set(err, EINVAL, EL ": duplicate element", elems[i].name);
		seen[i] = true;
		if (n->children) {
			for (xmlNodePtr c = n->children; c; c = c->next)
				if (!(c->type == XML_TEXT_NODE && xmlIsBlankNode(c)) &&
				    c->type != XML_COMMENT_NODE)
					return vmact_err_set(err, EINVAL, EL ": must be empty",
							     elems[i].name);
		}
		r = elems[i].parse ? elems[i].parse(n, p, err)
				   : parse_scaling(n, &meta->scaling, err);
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(elems); i++)
		if (elems[i].required && !seen[i])
			return vmact_err_set(err, EINVAL, EL ": missing element " EL, "autoscaling",
					     elems[i].name);
	/* A guest runs one or the other; vmactd must not guess whose
	 * approval a downscale needs. */
	if (p->monitor[0] && p->informant[0])
		return vmact_err_set(err, EINVAL, EL ": " EL " and " EL " are mutually exclusive",
				     "autoscaling", "monitor", "informant");
	/* A runner VM's CPU is decided by whoever calls its API: the elements
	 * that feed or steer vmact's own policy would be silently ignored. */
	if (p->runner_listen[0]) {
		static const char *const off[] = { "monitor", "informant", "metrics", "scaling" };

		for (size_t i = 0; i < ARRAY_SIZE(elems); i++)
			for (size_t j = 0; j < ARRAY_SIZE(off); j++)
				if (seen[i] && strcmp(elems[i].name, off[j]) == 0)
					return vmact_err_set(err, EINVAL,
							     EL
							     ": " EL " and " EL " are mutually "
							     "exclusive (the runner API's caller "
							     "sizes the CPU)",
							     "autoscaling", "runner", off[j]);
		if (meta->policy_cpu != HP_POLICY_CPU_HOST)
			return vmact_err_set(err, EINVAL,
					     EL ": " EL " and " EL " attribute 'cpu' are mutually "
						"exclusive (the runner API's caller sizes the CPU)",
					     "autoscaling", "runner", "policy");
		if (meta->recommend)
			return vmact_err_set(err, EINVAL,
					     EL ": mode='recommend' and " EL " are mutually "
						"exclusive (the runner API's caller sizes the CPU)",
					     "autoscaling", "runner");
	}
	return 0;
}

int hp_meta_parse(const char *xml, struct hp_meta *meta, struct vmact_err *err)
{
	struct parse p = { .m = meta };
	int r;

	hp_meta_done(meta);
	memset(meta, 0, sizeof(*meta));
	r = parse_meta(xml, &p, err);
	if (r < 0) {
		hp_meta_done(meta);
		return r;
	}
	/* text_fields' order. */
	return meta_pack(meta,
			 (const char *const[]){ p.mem_alias, p.monitor, p.informant,
						p.pod_namespace, p.pod_name, p.pod_uid, p.metrics,
						p.metrics_lfc, p.runner_listen },
			 err);
}
