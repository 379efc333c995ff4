/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/template.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quantity.h"
#include "cloudprovider/k8s-node.pb-c.h"

/* capacity and allocatable are both map<string, Quantity>: their entry
 * messages have one layout and differ only in their descriptors. */
typedef Vmact__K8s__NodeStatus__CapacityEntry ResourceEntry;

/* The labels every kubelet puts on its node; the group's own labels may
 * override arch and os (a group that says so knows better), never the
 * hostname, which is the node's name. */
static const char *const WELL_KNOWN_ARCH = "kubernetes.io/arch";
static const char *const WELL_KNOWN_OS = "kubernetes.io/os";
static const char *const WELL_KNOWN_HOST = "kubernetes.io/hostname";

static int label_cmp(const void *a, const void *b)
{
	const Vmact__K8s__ObjectMeta__LabelsEntry *const *x = a, *const *y = b;

	return strcmp((*x)->key, (*y)->key);
}

static Vmact__K8s__ObjectMeta__LabelsEntry *label(struct cp_arena *a, const char *k, const char *v)
{
	Vmact__K8s__ObjectMeta__LabelsEntry *e = cp_arena_alloc(a, sizeof(*e));

	if (!e)
		return NULL;
	vmact__k8s__object_meta__labels_entry__init(e);
	e->key = cp_arena_strdup(a, k);
	e->value = cp_arena_strdup(a, v);
	return e->key && e->value ? e : NULL;
}

static int fill_labels(const struct vmact_gapi_group *g, const char *name, struct cp_arena *a,
		       Vmact__K8s__ObjectMeta *meta)
{
	size_t n = 0, cap = g->nlabels + 3;
	Vmact__K8s__ObjectMeta__LabelsEntry **l = cp_arena_array(a, cap, sizeof(*l));
	bool have_arch = false, have_os = false;

	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < g->nlabels; i++) {
		if (!strcmp(g->labels[i].key, WELL_KNOWN_HOST))
			continue;
		have_arch |= !strcmp(g->labels[i].key, WELL_KNOWN_ARCH);
		have_os |= !strcmp(g->labels[i].key, WELL_KNOWN_OS);
		if (!(l[n++] = label(a, g->labels[i].key, g->labels[i].value)))
			return -ENOMEM;
	}
	if (!have_arch && !(l[n++] = label(a, WELL_KNOWN_ARCH, cp_group_goarch(g->tmpl.arch))))
		return -ENOMEM;
	if (!have_os && !(l[n++] = label(a, WELL_KNOWN_OS, g->tmpl.os)))
		return -ENOMEM;
	if (!(l[n++] = label(a, WELL_KNOWN_HOST, name)))
		return -ENOMEM;
	/* Kubernetes writes map entries in key order; so do we, so that
	 * the same node always has the same bytes */
	qsort(l, n, sizeof(*l), label_cmp);
	meta->labels = l;
	meta->n_labels = n;
	return 0;
}

static int fill_taints(const struct vmact_gapi_group *g, struct cp_arena *a,
		       Vmact__K8s__NodeSpec *spec)
{
	Vmact__K8s__Taint **t;

	if (!g->ntaints)
		return 0;
	t = cp_arena_array(a, g->ntaints, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < g->ntaints; i++) {
		t[i] = cp_arena_alloc(a, sizeof(**t));
		if (!t[i])
			return -ENOMEM;
		vmact__k8s__taint__init(t[i]);
		t[i]->key = cp_arena_strdup(a, g->taints[i].key);
		t[i]->value = cp_arena_strdup(a, g->taints[i].value);
		t[i]->effect = cp_arena_strdup(a, g->taints[i].effect);
		if (!t[i]->key || !t[i]->value || !t[i]->effect)
			return -ENOMEM;
	}
	spec->taints = t;
	spec->n_taints = g->ntaints;
	return 0;
}

static ResourceEntry *resource(struct cp_arena *a, const ProtobufCMessageDescriptor *d,
			       const char *name, const char *text)
{
	ResourceEntry *e = cp_arena_alloc(a, sizeof(*e));
	Vmact__K8s__Quantity *q = cp_arena_alloc(a, sizeof(*q));

	if (!e || !q)
		return NULL;
	protobuf_c_message_init(d, e);
	vmact__k8s__quantity__init(q);
	e->key = cp_arena_strdup(a, name);
	q->string = cp_arena_strdup(a, text);
	e->value = q;
	return e->key && q->string ? e : NULL;
}

/* The four resources of one side of a node's status. */
struct res {
	uint64_t milli_cpu, memory, ephemeral, pods;
};

/* What the node's kubelet reports, as vmact-groupd says (doc/cluster-api.md):
 * measured from a registered Node of the group, or estimated from its
 * template. A kubelet reads its capacity once, at start: vmactd may grow
 * the VM later, the node's capacity stays what it booted with. An older
 * vmact-groupd says only the boot shape: capacity and allocatable both. */
static void sides(const struct vmact_gapi_template *t, struct res *cap, struct res *alloc)
{
	cap->milli_cpu = t->capacity_milli_cpu ? t->capacity_milli_cpu : (uint64_t)t->vcpus * 1000;
	cap->memory = t->capacity_memory_bytes ? t->capacity_memory_bytes : t->memory_bytes;
	cap->ephemeral = t->ephemeral_bytes;
	cap->pods = t->capacity_pods ? t->capacity_pods : t->pods;
	alloc->milli_cpu = t->alloc_milli_cpu ? t->alloc_milli_cpu : cap->milli_cpu;
	alloc->memory = t->alloc_memory_bytes ? t->alloc_memory_bytes : cap->memory;
	alloc->ephemeral = t->alloc_ephemeral_bytes ? t->alloc_ephemeral_bytes : cap->ephemeral;
	alloc->pods = t->alloc_pods ? t->alloc_pods : cap->pods;
}

/* cpu, ephemeral-storage, memory, pods: key order, as Kubernetes writes
 * the map. ephemeral-storage is there when known: without it the
 * autoscaler's scheduler finds no room on the template for a pod that
 * requests any. */
static void *resources(const struct res *v, const ProtobufCMessageDescriptor *d, struct cp_arena *a,
		       size_t *n)
{
	ResourceEntry **r = cp_arena_array(a, 4, sizeof(*r));
	char cpu[32], eph[32], mem[32], pods[32];
	bool have_eph = v->ephemeral > 0;

	if (!r || vmact_quantity_format_milli(v->milli_cpu, cpu, sizeof(cpu)) < 0 ||
	    vmact_quantity_format_bytes(v->memory, mem, sizeof(mem)) < 0 ||
	    (have_eph && vmact_quantity_format_bytes(v->ephemeral, eph, sizeof(eph)) < 0))
		return NULL;
	snprintf(pods, sizeof(pods), "%llu", (unsigned long long)v->pods);
	*n = 0;
	if (!(r[(*n)++] = resource(a, d, "cpu", cpu)))
		return NULL;
	if (have_eph && !(r[(*n)++] = resource(a, d, "ephemeral-storage", eph)))
		return NULL;
	if (!(r[(*n)++] = resource(a, d, "memory", mem)) ||
	    !(r[(*n)++] = resource(a, d, "pods", pods)))
		return NULL;
	return r;
}

int cp_template_node(const struct vmact_gapi_group *g, struct cp_arena *a, ProtobufCBinaryData *out,
		     struct vmact_err *err)
{
	Vmact__K8s__Node node = VMACT__K8S__NODE__INIT;
	Vmact__K8s__ObjectMeta meta = VMACT__K8S__OBJECT_META__INIT;
	Vmact__K8s__NodeSpec spec = VMACT__K8S__NODE_SPEC__INIT;
	Vmact__K8s__NodeStatus status = VMACT__K8S__NODE_STATUS__INIT;
	Vmact__K8s__NodeSystemInfo info = VMACT__K8S__NODE_SYSTEM_INFO__INIT;
	Vmact__K8s__NodeCondition ready = VMACT__K8S__NODE_CONDITION__INIT;
	Vmact__K8s__NodeCondition *conditions[] = { &ready };
	struct res cap, alloc;
	size_t len;

	meta.name = cp_arena_printf(a, "%s-template", g->id);
	if (!meta.name || fill_labels(g, meta.name, a, &meta) < 0 || fill_taints(g, a, &spec) < 0)
		goto nomem;
	sides(&g->tmpl, &cap, &alloc);
	status.capacity = resources(&cap, &vmact__k8s__node_status__capacity_entry__descriptor, a,
				    &status.n_capacity);
	status.allocatable = resources(&alloc,
				       &vmact__k8s__node_status__allocatable_entry__descriptor, a,
				       &status.n_allocatable);
	if (!status.capacity || !status.allocatable)
		goto nomem;
	/* the node it stands for is one the scheduler may use */
	ready.type = "Ready";
	ready.status = "True";
	ready.reason = "KubeletReady";
	status.conditions = conditions;
	status.n_conditions = 1;
	info.operatingsystem = (char *)g->tmpl.os;
	info.architecture = (char *)cp_group_goarch(g->tmpl.arch);
	status.nodeinfo = &info;
	node.metadata = &meta;
	node.spec = &spec;
	node.status = &status;
	len = vmact__k8s__node__get_packed_size(&node);
	out->data = cp_arena_alloc(a, len);
	if (!out->data)
		goto nomem;
	out->len = vmact__k8s__node__pack(&node, out->data);
	return 0;
nomem:
	return vmact_err_set(err, ENOMEM, "template node of group %s: out of memory", g->id);
}
