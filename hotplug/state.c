/* SPDX-License-Identifier: Apache-2.0 */
/* Live domain state parsed from libvirt's live XML, and what follows from
 * it. Pure: the reads that fetch the XML and QEMU's vCPU count are read.c. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"
#include "hotplug/xml.h"

unsigned hp_state_vcpus(const struct hp_state *st)
{
	return st->qemu_vcpus >= 0 ? (unsigned)st->qemu_vcpus : st->vcpus_current;
}

uint64_t hp_state_mem_kib(const struct hp_state *st)
{
	uint64_t kib = st->base_kib;

	for (size_t i = 0; i < st->n_memdevs; i++)
		kib += st->memdevs[i].model == HP_MEM_DIMM ? st->memdevs[i].size_kib
							   : st->memdevs[i].current_kib;
	return kib;
}

unsigned hp_state_dimms(const struct hp_state *st)
{
	unsigned n = 0;

	for (size_t i = 0; i < st->n_memdevs; i++)
		n += st->memdevs[i].model == HP_MEM_DIMM;
	return n;
}

const struct hp_memdev *hp_state_memdev(const struct hp_state *st, const char *alias,
					enum hp_mem_model model)
{
	const struct hp_memdev *last = NULL;

	for (size_t i = 0; i < st->n_memdevs; i++) {
		const struct hp_memdev *m = &st->memdevs[i];

		if (m->model != model)
			continue;
		if (alias && alias[0]) {
			if (strcmp(m->alias, alias) == 0)
				return m;
			continue;
		}
		/* No alias: the first virtio-mem device, the last DIMM (the
		 * one most recently plugged, the natural one to remove). */
		if (model == HP_MEM_VIRTIO_MEM)
			return m;
		last = m;
	}
	return last;
}

/* <size unit='KiB'>N</size> and friends, in KiB; absent unit means KiB for
 * memory elements (formatdomain "Memory Allocation"). */
int hpx_read_kib(xmlNodePtr n, const char *what, uint64_t *out, struct vmact_err *err)
{
	_cleanup_xmlfree_ xmlChar *txt = xmlNodeGetContent(n);
	_cleanup_xmlfree_ xmlChar *unit = xmlGetProp(n, BAD_CAST "unit");
	static const struct {
		const char *name;
		uint64_t bytes;
	} units[] = {
		{ "b", 1 },          { "bytes", 1 },        { "KB", 1000 },
		{ "k", 1024 },       { "KiB", 1024 },       { "MB", 1000000 },
		{ "M", 1ULL << 20 }, { "MiB", 1ULL << 20 }, { "GB", 1000000000 },
		{ "G", 1ULL << 30 }, { "GiB", 1ULL << 30 }, { "TB", 1000000000000ULL },
		{ "T", 1ULL << 40 }, { "TiB", 1ULL << 40 },
	};
	uint64_t mul = 1024, v;
	char *end;

	if (!txt || !txt[0] || !isdigit((unsigned char)txt[0]))
		return vmact_err_set(err, EINVAL, "<%s>: not a number: '%s'", what,
				     txt ? (const char *)txt : "");
	if (unit) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(units); i++)
			if (strcmp((const char *)unit, units[i].name) == 0)
				break;
		if (i == ARRAY_SIZE(units))
			return vmact_err_set(err, EINVAL, "<%s>: unknown unit '%s'", what,
					     (const char *)unit);
		mul = units[i].bytes;
	}
	errno = 0;
	v = strtoull((const char *)txt, &end, 10);
	if (errno || *end)
		return vmact_err_set(err, EINVAL, "<%s>: not a number: '%s'", what,
				     (const char *)txt);
	if (v > UINT64_MAX / mul)
		return vmact_err_set(err, ERANGE, "<%s>: %s too large", what, (const char *)txt);
	*out = v * mul / 1024;
	return 0;
}

static int read_uint(xmlNodePtr n, const char *attr, const char *what, unsigned *out,
		     struct vmact_err *err)
{
	_cleanup_xmlfree_ xmlChar *v = attr ? xmlGetProp(n, BAD_CAST attr) : xmlNodeGetContent(n);
	unsigned long x;
	char *end;

	if (!v)
		return vmact_err_set(err, EINVAL, "<%s>: missing %s", what, attr ? attr : "value");
	errno = 0;
	x = strtoul((const char *)v, &end, 10);
	if (errno || end == (char *)v || *end || x > 1U << 20)
		return vmact_err_set(err, EINVAL, "<%s>: bad number '%s'", what, (const char *)v);
	*out = (unsigned)x;
	return 0;
}

static int parse_memdev(xmlNodePtr n, struct hp_memdev *m, struct vmact_err *err)
{
	_cleanup_xmlfree_ xmlChar *model = xmlGetProp(n, BAD_CAST "model");
	xmlNodePtr target = hpx_child(n, "target"), alias = hpx_child(n, "alias"), x;
	int r;

	memset(m, 0, sizeof(*m));
	m->slot = -1;
	if (model && xmlStrcmp(model, BAD_CAST "dimm") == 0)
		m->model = HP_MEM_DIMM;
	else if (model && xmlStrcmp(model, BAD_CAST "virtio-mem") == 0)
		m->model = HP_MEM_VIRTIO_MEM;
	else
		return 1; /* nvdimm, virtio-pmem, ...: not ours to scale */
	if (alias) {
		_cleanup_xmlfree_ xmlChar *a = xmlGetProp(alias, BAD_CAST "name");

		if (a)
			snprintf(m->alias, sizeof(m->alias), "%s", (const char *)a);
	}
	if (!target || !(x = hpx_child(target, "size")))
		return vmact_err_set(err, EINVAL, "<memory model='%s'>: missing <target><size>",
				     (const char *)model);
	if ((r = hpx_read_kib(x, "memory/target/size", &m->size_kib, err)) < 0)
		return r;
	if ((x = hpx_child(target, "node"))) {
		unsigned node;

		if ((r = read_uint(x, NULL, "memory/target/node", &node, err)) < 0)
			return r;
		m->node = (int)node;
	}
	if (m->model == HP_MEM_VIRTIO_MEM) {
		if ((x = hpx_child(target, "block")) &&
		    (r = hpx_read_kib(x, "memory/target/block", &m->block_kib, err)) < 0)
			return r;
		if ((x = hpx_child(target, "requested")) &&
		    (r = hpx_read_kib(x, "memory/target/requested", &m->requested_kib, err)) < 0)
			return r;
		if ((x = hpx_child(target, "current")) &&
		    (r = hpx_read_kib(x, "memory/target/current", &m->current_kib, err)) < 0)
			return r;
	} else if ((x = hpx_child(n, "address"))) {
		_cleanup_xmlfree_ xmlChar *slot = xmlGetProp(x, BAD_CAST "slot");

		if (slot)
			m->slot = atoi((const char *)slot);
	}
	return 0;
}

int hp_state_parse(const char *xml, struct hp_state *st, struct vmact_err *err)
{
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	xmlNodePtr root, n, devs;
	int r;

	memset(st, 0, sizeof(*st));
	st->qemu_vcpus = -1;
	st->id = -1;
	doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc)
		return vmact_err_set(err, EINVAL, "domain XML is not well-formed");
	root = xmlDocGetRootElement(doc);
	if (!root || xmlStrcmp(root->name, BAD_CAST "domain") != 0)
		return vmact_err_set(err, EINVAL, "domain XML: root is not <domain>");
	{
		_cleanup_xmlfree_ xmlChar *id = xmlGetProp(root, BAD_CAST "id");

		if (id)
			st->id = atoi((const char *)id);
	}
	if ((n = hpx_child(root, "name"))) {
		_cleanup_xmlfree_ xmlChar *v = xmlNodeGetContent(n);

		snprintf(st->name, sizeof(st->name), "%s", v ? (const char *)v : "");
	}
	if ((n = hpx_child(root, "uuid"))) {
		_cleanup_xmlfree_ xmlChar *v = xmlNodeGetContent(n);

		snprintf(st->uuid, sizeof(st->uuid), "%s", v ? (const char *)v : "");
	}

	if (!(n = hpx_child(root, "vcpu")))
		return vmact_err_set(err, EINVAL, "domain XML: missing <vcpu>");
	if ((r = read_uint(n, NULL, "vcpu", &st->vcpus_max, err)) < 0)
		return r;
	st->vcpus_current = st->vcpus_max;
	{
		_cleanup_xmlfree_ xmlChar *cur = xmlGetProp(n, BAD_CAST "current");

		if (cur && (r = read_uint(n, "current", "vcpu", &st->vcpus_current, err)) < 0)
			return r;
	}
	if ((n = hpx_child(root, "vcpus"))) {
		for (xmlNodePtr v = n->children; v; v = v->next) {
			_cleanup_xmlfree_ xmlChar *en = NULL, *hp = NULL;
			unsigned id;

			if (v->type != XML_ELEMENT_NODE || xmlStrcmp(v->name, BAD_CAST "vcpu"))
				continue;
			if ((r = read_uint(v, "id", "vcpus/vcpu", &id, err)) < 0)
				return r;
			en = xmlGetProp(v, BAD_CAST "enabled");
			hp = xmlGetProp(v, BAD_CAST "hotpluggable");
			if (en && xmlStrcmp(en, BAD_CAST "yes") == 0 && id < 64)
				st->vcpus_enabled_mask |= 1ULL << id;
			if (hp && xmlStrcmp(hp, BAD_CAST "yes") == 0)
				st->vcpus_hotpluggable++;
		}
	}

	if ((n = hpx_child(root, "memory")) &&
	    (r = hpx_read_kib(n, "memory", &st->memory_kib, err)) < 0)
		return r;
	if ((n = hpx_child(root, "maxMemory"))) {
		if ((r = hpx_read_kib(n, "maxMemory", &st->max_memory_kib, err)) < 0)
			return r;
		if ((r = read_uint(n, "slots", "maxMemory", &st->slots, err)) < 0)
			return r;
	}

	devs = hpx_child(root, "devices");
	for (n = devs ? devs->children : NULL; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE || xmlStrcmp(n->name, BAD_CAST "memory"))
			continue;
		if (st->n_memdevs == HP_MAX_MEMDEVS)
			return vmact_err_set(err, E2BIG, "domain has more than %d memory devices",
					     HP_MAX_MEMDEVS);
		r = parse_memdev(n, &st->memdevs[st->n_memdevs], err);
		if (r < 0)
			return r;
		if (r == 0)
			st->n_memdevs++;
	}

	/* Boot memory: the NUMA cells; without NUMA (no hotplug possible)
	 * <memory> minus the devices. */
	{
		xmlNodePtr numa = hpx_child(hpx_child(root, "cpu"), "numa");

		for (n = numa ? numa->children : NULL; n; n = n->next) {
			uint64_t kib;

			if (n->type != XML_ELEMENT_NODE || xmlStrcmp(n->name, BAD_CAST "cell"))
				continue;
			{
				_cleanup_xmlfree_ xmlChar *mem = xmlGetProp(n, BAD_CAST "memory");
				_cleanup_xmlfree_ xmlChar *unit = xmlGetProp(n, BAD_CAST "unit");
				char *end;

				if (!mem)
					return vmact_err_set(err, EINVAL,
							     "<cpu><numa><cell>: missing memory");
				errno = 0;
				kib = strtoull((const char *)mem, &end, 10);
				if (errno || *end)
					return vmact_err_set(err, EINVAL,
							     "<cpu><numa><cell>: bad memory '%s'",
							     (const char *)mem);
				if (unit && xmlStrcmp(unit, BAD_CAST "KiB") &&
				    xmlStrcmp(unit, BAD_CAST "k"))
					return vmact_err_set(err, EINVAL,
							     "<cpu><numa><cell>: unit '%s' (libvirt "
							     "reports KiB)",
							     (const char *)unit);
			}
			st->base_kib += kib;
		}
		if (!numa) {
			uint64_t dev = 0;

			for (size_t i = 0; i < st->n_memdevs; i++)
				dev += st->memdevs[i].size_kib;
			st->base_kib = st->memory_kib > dev ? st->memory_kib - dev : 0;
		}
	}
	return 0;
}
