/* SPDX-License-Identifier: Apache-2.0 */
/* Memory operations: resize a virtio-mem device, plug or unplug a DIMM. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/macro.h"
#include "hotplug/op.h"
#include "hotplug/virt-error.h"
#include "hotplug/xml.h"

/* MEMORY_DEVICE_SIZE_CHANGE and DEVICE_REMOVED wake the wait; the poll is
 * a fallback. */
#define MEM_POLL_US 100000ULL

static int update_device(virDomainPtr dom, const void *arg)
{
	return virDomainUpdateDeviceFlags(dom, arg, VIR_DOMAIN_AFFECT_LIVE);
}

static int attach_device(virDomainPtr dom, const void *arg)
{
	return virDomainAttachDeviceFlags(dom, arg, VIR_DOMAIN_AFFECT_LIVE);
}

static int detach_alias(virDomainPtr dom, const void *arg)
{
	return virDomainDetachDeviceAlias(dom, arg, VIR_DOMAIN_AFFECT_LIVE);
}

/* ---- virtio-mem ---------------------------------------------------------- */

/* The live <memory> element of a virtio-mem device with <requested>
 * replaced; libvirt matches update XML against the device definition, so
 * start from what it reported. */
static int virtio_mem_xml(struct hp_op *op, uint64_t requested_kib, const char *alias, char **out,
			  struct vmact_err *err)
{
	virConnectPtr vc = hp_conn_get(op->conn);
	_cleanup_free_ char *xml = NULL;
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	xmlNodePtr devs = NULL, found = NULL, root;
	xmlBufferPtr buf;
	virDomainPtr dom;
	char num[32];

	if (!vc)
		return vmact_err_set(err, ECONNRESET, "not connected to libvirtd");
	dom = virDomainLookupByUUIDString(vc, op->uuid);
	if (dom) {
		xml = virDomainGetXMLDesc(dom, 0);
		virDomainFree(dom);
	}
	if (!xml) {
		int r = hp_virt_err(err, "virDomainGetXMLDesc");

		virConnectClose(vc);
		return r;
	}
	virConnectClose(vc);
	doc = xmlReadMemory(xml, (int)strlen(xml), "domain.xml", NULL, XML_PARSE_NONET);
	if (!doc || !(root = xmlDocGetRootElement(doc)))
		return vmact_err_set(err, EIO, "live domain XML is not well-formed");
	for (xmlNodePtr n = root->children; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && !xmlStrcmp(n->name, BAD_CAST "devices"))
			devs = n;
	for (xmlNodePtr n = devs ? devs->children : NULL; n && !found; n = n->next) {
		_cleanup_xmlfree_ xmlChar *model = NULL;

		if (n->type != XML_ELEMENT_NODE || xmlStrcmp(n->name, BAD_CAST "memory"))
			continue;
		model = xmlGetProp(n, BAD_CAST "model");
		if (!model || xmlStrcmp(model, BAD_CAST "virtio-mem"))
			continue;
		for (xmlNodePtr a = n->children; a; a = a->next) {
			_cleanup_xmlfree_ xmlChar *name = NULL;

			if (a->type != XML_ELEMENT_NODE || xmlStrcmp(a->name, BAD_CAST "alias"))
				continue;
			name = xmlGetProp(a, BAD_CAST "name");
			if (name && !xmlStrcmp(name, BAD_CAST alias))
				found = n;
		}
	}
	if (!found)
		return vmact_err_set(err, ENODEV, "virtio-mem device '%s' not in live XML", alias);
	snprintf(num, sizeof(num), "%" PRIu64, requested_kib);
	for (xmlNodePtr t = found->children; t; t = t->next) {
		if (t->type != XML_ELEMENT_NODE || xmlStrcmp(t->name, BAD_CAST "target"))
			continue;
		for (xmlNodePtr x = t->children, next; x; x = next) {
			next = x->next;
			if (x->type != XML_ELEMENT_NODE)
				continue;
			if (!xmlStrcmp(x->name, BAD_CAST "requested")) {
				xmlNodeSetContent(x, BAD_CAST num);
				xmlSetProp(x, BAD_CAST "unit", BAD_CAST "KiB");
			} else if (!xmlStrcmp(x->name, BAD_CAST "current")) {
				/* output-only */
				xmlUnlinkNode(x);
				xmlFreeNode(x);
			}
		}
	}
	buf = xmlBufferCreate();
	if (!buf)
		return -ENOMEM;
	xmlNodeDump(buf, doc, found, 0, 0);
	*out = strdup((const char *)xmlBufferContent(buf));
	xmlBufferFree(buf);
	return *out ? 0 : -ENOMEM;
}

struct virtio_mem_goal {
	const char *alias;
	uint64_t want;
};

static int virtio_mem_reached(struct hp_op *op, const struct hp_state *st,
			      const struct hp_seen *seen, void *arg, struct vmact_err *e)
{
	const struct virtio_mem_goal *g = arg;
	const struct hp_memdev *d = hp_state_memdev(st, g->alias, HP_MEM_VIRTIO_MEM);

	if (!d)
		return vmact_err_set(e, ENODEV, "virtio-mem %s vanished", g->alias);
	if (d->current_kib == g->want)
		return 1;
	vmact_err_set(e, ETIMEDOUT,
		      "virtio-mem %s: requested %" PRIu64 " KiB, guest has %" PRIu64
		      " KiB at the deadline",
		      g->alias, g->want, d->current_kib);
	return 0;
}

/* A shrink the guest did not follow by the deadline (its memory could not
 * be unplugged, or its driver declines to unplug online memory): the
 * request goes back to what the guest has, so that QEMU's request and the
 * guest agree again and the guest's driver, which keeps retrying on its
 * own, does not shrink the VM later behind vmact's back. -EBUSY, as for a
 * DIMM the guest refused (doc/reliability.md). */
static void virtio_mem_refused(struct hp_op *op, uint64_t deadline, const char *alias,
			       uint64_t want)
{
	const struct hp_memdev *d = hp_state_memdev(&op->res.state, alias, HP_MEM_VIRTIO_MEM);
	_cleanup_free_ char *xml = NULL;
	struct vmact_err e = { 0 };
	uint64_t kept;
	int r;

	if (!op->res.state_valid || !d || d->current_kib <= want)
		return;
	kept = d->current_kib;
	if ((r = virtio_mem_xml(op, kept, alias, &xml, &e)) < 0 ||
	    (r = hp_op_call(op, "virDomainUpdateDeviceFlags", update_device, xml, &e)) < 0) {
		hp_op_settle(op, deadline, r, &e);
		return;
	}
	vmact_err_set(&e, EBUSY,
		      "virtio-mem %s: the guest kept %" PRIu64 " KiB it was asked to give back "
		      "(requested %" PRIu64 " KiB, plugged %" PRIu64 " KiB at the deadline); "
		      "request set back to %" PRIu64 " KiB",
		      alias, kept - want, want, kept, kept);
	hp_op_settle(op, deadline, -EBUSY, &e);
}

void hp_op_virtio_mem(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	const struct hp_memdev *d;
	_cleanup_free_ char *xml = NULL;
	char alias[HP_ALIAS_MAX];
	uint64_t want = op->req.requested_kib;
	int r;

	if (!hp_op_begin(op, deadline))
		return;
	d = hp_state_memdev(st, op->req.alias, HP_MEM_VIRTIO_MEM);
	if (!d || !d->alias[0]) {
		vmact_err_set(&e, EINVAL, "no virtio-mem device%s%s in the domain",
			      op->req.alias[0] ? " " : "", op->req.alias);
		hp_op_finish(op, -EINVAL, &e);
		return;
	}
	snprintf(alias, sizeof(alias), "%s", d->alias);
	if (want > d->size_kib || (d->block_kib && want % d->block_kib)) {
		vmact_err_set(&e, ERANGE,
			      "virtio-mem %s: requested %" PRIu64 " KiB must be a multiple of "
			      "the %" PRIu64 " KiB block and at most the %" PRIu64 " KiB size",
			      alias, want, d->block_kib, d->size_kib);
		hp_op_finish(op, -ERANGE, &e);
		return;
	}
	if (d->requested_kib != want) {
		if ((r = virtio_mem_xml(op, want, alias, &xml, &e)) < 0 ||
		    (r = hp_op_call(op, "virDomainUpdateDeviceFlags", update_device, xml, &e)) <
			    0) {
			hp_op_settle(op, deadline, r, &e);
			return;
		}
	}
	if (hp_op_wait(op, deadline, MEM_POLL_US, virtio_mem_reached,
		       &(struct virtio_mem_goal){ .alias = alias, .want = want }) < 0) {
		if (op->res.rc == -ETIMEDOUT)
			virtio_mem_refused(op, deadline, alias, want);
		return;
	}
	hp_op_finish(op, 0, NULL);
}

/* ---- DIMM ---------------------------------------------------------------- */

void hp_op_dimm_attach(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	_cleanup_free_ char *xml = NULL;
	unsigned before;
	int r;

	if (!hp_op_begin(op, deadline))
		return;
	before = hp_state_dimms(st);
	if (!op->req.dimm_kib || before >= st->slots ||
	    st->memory_kib + op->req.dimm_kib > st->max_memory_kib) {
		vmact_err_set(&e, ERANGE,
			      "DIMM of %" PRIu64 " KiB does not fit: %u of %u slots used, %" PRIu64
			      " of %" PRIu64 " KiB <maxMemory>",
			      op->req.dimm_kib, before, st->slots, st->memory_kib,
			      st->max_memory_kib);
		hp_op_finish(op, -ERANGE, &e);
		return;
	}
	if (asprintf(&xml,
		     "<memory model='dimm'><target><size unit='KiB'>%" PRIu64
		     "</size><node>0</node></target></memory>",
		     op->req.dimm_kib) < 0) {
		hp_op_finish(op, -ENOMEM, NULL);
		return;
	}
	r = hp_op_call(op, "virDomainAttachDeviceFlags", attach_device, xml, &e);
	hp_op_settle(op, deadline, r, &e);
	if (op->res.rc == 0 && op->res.state_valid && hp_state_dimms(st) != before + 1) {
		vmact_err_set(&e, EIO, "DIMM attach returned success but the domain has %u DIMMs",
			      hp_state_dimms(st));
		hp_op_finish(op, -EIO, &e);
	}
}

static int dimm_removed(struct hp_op *op, const struct hp_state *st, const struct hp_seen *seen,
			void *arg, struct vmact_err *e)
{
	const char *alias = arg;

	/* QEMU 7.2 has crashed on DIMM unplug here. */
	if (seen->stopped)
		return -ENODEV;
	if (!strcmp(seen->removed_alias, alias) || !hp_state_memdev(st, alias, HP_MEM_DIMM))
		return 1;
	if (!strcmp(seen->removal_failed_alias, alias))
		return vmact_err_set(e, EBUSY,
				     "guest refused to release DIMM %s "
				     "(DEVICE_REMOVAL_FAILED)",
				     alias);
	vmact_err_set(e, ETIMEDOUT, "DIMM %s still present at the deadline", alias);
	return 0;
}

void hp_op_dimm_detach(struct hp_op *op, uint64_t deadline)
{
	struct hp_state *st = &op->res.state;
	struct vmact_err e = { 0 };
	const struct hp_memdev *d;
	char alias[HP_ALIAS_MAX];
	int r;

	if (!hp_op_begin(op, deadline))
		return;
	d = hp_state_memdev(st, op->req.alias, HP_MEM_DIMM);
	if (!d || !d->alias[0]) {
		vmact_err_set(&e, EINVAL, "no DIMM%s%s to remove", op->req.alias[0] ? " " : "",
			      op->req.alias);
		hp_op_finish(op, -EINVAL, &e);
		return;
	}
	snprintf(alias, sizeof(alias), "%s", d->alias);
	/* Purely asynchronous: completion is DEVICE_REMOVED (or the device
	 * missing from the live XML), refusal DEVICE_REMOVAL_FAILED. */
	if ((r = hp_op_call(op, "virDomainDetachDeviceAlias", detach_alias, alias, &e)) < 0) {
		hp_op_settle(op, deadline, r, &e);
		return;
	}
	if (hp_op_wait(op, deadline, MEM_POLL_US, dimm_removed, alias) < 0)
		return;
	/* DEVICE_REMOVED can precede the XML update by a moment. */
	hp_op_settle(op, deadline, 0, NULL);
	if (op->res.rc == 0 && op->res.state_valid && hp_state_memdev(st, alias, HP_MEM_DIMM)) {
		vmact_err_set(&e, EIO, "DIMM %s reported removed but still in the live XML", alias);
		hp_op_finish(op, -EIO, &e);
	}
}
