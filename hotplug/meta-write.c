/* SPDX-License-Identifier: Apache-2.0 */
/* Operators' changes to a domain's vmact metadata (hotplug.h,
 * hp_meta_edit/hp_meta_write): the element is edited in place with
 * libxml2, so that whatever else the operator wrote stays as written, and
 * the result goes through the reader (meta.c) before libvirt sees it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/macro.h"
#include "base/quantity.h"
#include "hotplug/conn.h"
#include "hotplug/domain.h"
#include "hotplug/hotplug.h"
#include "hotplug/virt-error.h"
#include "hotplug/xml.h"

static int set_q(xmlNodePtr n, const char *el, const char *attr, bool milli, uint64_t v,
		 struct vmact_err *err)
{
	char buf[64];

	if (!n)
		return vmact_err_set(err, EINVAL,
				     "<" HP_NS_PREFIX
				     ":autoscaling>: missing element <" HP_NS_PREFIX ":%s>",
				     el);
	if ((milli ? vmact_quantity_format_milli(v, buf, sizeof(buf))
		   : vmact_quantity_format_bytes(v, buf, sizeof(buf))) < 0)
		return vmact_err_set(err, ERANGE, "<" HP_NS_PREFIX ":%s> %s: value out of range",
				     el, attr);
	if (!xmlSetProp(n, BAD_CAST attr, BAD_CAST buf))
		return vmact_err_set(err, ENOMEM, "out of memory");
	return 0;
}

/* The element in root's namespace, as the operator's other children are
 * written (prefixed in a domain definition, bare from virDomainGetMetadata). */
static int set_migration(xmlNodePtr root, bool on, struct vmact_err *err)
{
	xmlNodePtr n = hpx_child(root, "migration");

	if (!on) {
		if (n) {
			xmlUnlinkNode(n);
			xmlFreeNode(n);
		}
		return 0;
	}
	if (!n)
		n = xmlNewChild(root, root->ns, BAD_CAST "migration", NULL);
	if (!n || !xmlSetProp(n, BAD_CAST "enabled", BAD_CAST "true"))
		return vmact_err_set(err, ENOMEM, "out of memory");
	return 0;
}

int hp_meta_edit(const char *xml, const struct hp_meta_change *ch, char **out,
		 struct hp_meta *parsed, struct vmact_err *err)
{
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	xmlBufferPtr buf;
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	xmlNodePtr root, cpu, mem;
	int r;

	*out = NULL;
	/* The reader first: a change is applied to valid metadata only. */
	if ((r = hp_meta_parse(xml, &m, err)) < 0)
		return r;
	doc = xmlReadMemory(xml, (int)strlen(xml), "metadata.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc || !(root = xmlDocGetRootElement(doc)))
		return vmact_err_set(err, EINVAL, "vmact metadata is not well-formed XML");
	cpu = hpx_child(root, "cpu");
	mem = hpx_child(root, "memory");
	if ((ch->set_min_cpu && (r = set_q(cpu, "cpu", "min", true, ch->min_milli_cpu, err)) < 0) ||
	    (ch->set_max_cpu && (r = set_q(cpu, "cpu", "max", true, ch->max_milli_cpu, err)) < 0) ||
	    (ch->set_min_mem &&
	     (r = set_q(mem, "memory", "min", false, ch->min_mem_bytes, err)) < 0) ||
	    (ch->set_max_mem &&
	     (r = set_q(mem, "memory", "max", false, ch->max_mem_bytes, err)) < 0))
		return r;
	if (ch->set_enabled &&
	    !xmlSetProp(root, BAD_CAST "enabled", BAD_CAST(ch->enabled ? "true" : "false")))
		return vmact_err_set(err, ENOMEM, "out of memory");
	/* Active is the default: the attribute goes, as paused's does. */
	if (ch->set_mode) {
		if (ch->recommend) {
			if (!xmlSetProp(root, BAD_CAST "mode", BAD_CAST "recommend"))
				return vmact_err_set(err, ENOMEM, "out of memory");
		} else {
			xmlUnsetProp(root, BAD_CAST "mode");
		}
	}
	if (ch->set_migration && (r = set_migration(root, ch->migration, err)) < 0)
		return r;
	if (ch->set_paused) {
		if (ch->paused) {
			if (!xmlSetProp(root, BAD_CAST "paused", BAD_CAST "true"))
				return vmact_err_set(err, ENOMEM, "out of memory");
		} else {
			xmlUnsetProp(root, BAD_CAST "paused");
		}
	}
	buf = xmlBufferCreate();
	if (!buf)
		return vmact_err_set(err, ENOMEM, "out of memory");
	if (xmlNodeDump(buf, doc, root, 0, 0) < 0) {
		xmlBufferFree(buf);
		return vmact_err_set(err, EIO, "cannot serialise the vmact metadata");
	}
	*out = strdup((const char *)xmlBufferContent(buf));
	xmlBufferFree(buf);
	if (!*out)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = hp_meta_parse(*out, parsed ? parsed : &m, err);
	if (r < 0) {
		free(*out);
		*out = NULL;
	}
	return r;
}

static int get_meta(virDomainPtr dom, unsigned flags, char **out, struct vmact_err *err)
{
	*out = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, HP_NS_URI, flags);
	if (!*out)
		return hp_virt_err(err, flags & VIR_DOMAIN_AFFECT_CONFIG
						? "the definition's vmact metadata"
						: "the live vmact metadata");
	return 0;
}

int hp_meta_read_any(struct hp_conn *c, const char *uuid, struct hp_meta *meta,
		     struct vmact_err *err)
{
	_cleanup_free_ char *xml = NULL;
	virDomainPtr dom;
	int r;

	hp_meta_done(meta);
	dom = hp_domain_lookup(c, uuid, err);
	if (!dom)
		return -(err->code ? err->code : ENODEV);
	r = get_meta(dom,
		     virDomainIsActive(dom) == 1 ? VIR_DOMAIN_AFFECT_LIVE
						 : VIR_DOMAIN_AFFECT_CONFIG,
		     &xml, err);
	virDomainFree(dom);
	return r < 0 ? r : hp_meta_parse(xml, meta, err);
}

int hp_meta_write(struct hp_conn *c, const char *uuid, const struct hp_meta_change *ch,
		  struct hp_meta *out, struct vmact_err *err)
{
	_cleanup_free_ char *live = NULL, *conf = NULL, *live_new = NULL, *conf_new = NULL;
	virDomainPtr dom;
	int persistent, active, r = 0;

	if (out)
		hp_meta_done(out);
	dom = hp_domain_lookup(c, uuid, err);
	if (!dom)
		return -(err->code ? err->code : ENODEV);
	persistent = virDomainIsPersistent(dom);
	/* A domain that is not running has its definition only (vmactl
	 * enable and disable before it starts). */
	active = virDomainIsActive(dom);
	if (active == 1) {
		r = get_meta(dom, VIR_DOMAIN_AFFECT_LIVE, &live, err);
		if (r >= 0)
			r = hp_meta_edit(live, ch, &live_new, out, err);
	}
	if (r >= 0 && persistent == 1) {
		/* The definition may differ from the live metadata (an edit
		 * with --live only): the change goes into each as written
		 * there; a definition without any takes the live result. */
		r = get_meta(dom, VIR_DOMAIN_AFFECT_CONFIG, &conf, err);
		if (r == -ENOENT && live_new) {
			vmact_err_reset(err);
			r = 0;
		} else if (r >= 0) {
			r = hp_meta_edit(conf, ch, &conf_new, live_new ? NULL : out, err);
			if (r < 0)
				vmact_err_prefix(err, "in the persistent definition");
		}
	}
	if (r >= 0 && !live_new && !conf_new)
		r = vmact_err_set(err, ENOENT, "the domain has no vmact metadata");
	if (r >= 0 && live_new &&
	    virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, live_new, HP_NS_PREFIX,
				 HP_NS_URI, VIR_DOMAIN_AFFECT_LIVE) < 0)
		r = hp_virt_err(err, "virDomainSetMetadata (live)");
	if (r >= 0 && persistent == 1 &&
	    virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, conf_new ? conf_new : live_new,
				 HP_NS_PREFIX, HP_NS_URI, VIR_DOMAIN_AFFECT_CONFIG) < 0)
		r = hp_virt_err(err, "virDomainSetMetadata (definition)");
	virDomainFree(dom);
	return r;
}

int hp_meta_put(struct hp_conn *c, const char *uuid, const char *element, struct vmact_err *err)
{
	virDomainPtr dom = hp_domain_lookup(c, uuid, err);
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	int r;

	if (!dom)
		return -(err->code ? err->code : ENODEV);
	r = hp_meta_parse(element, &m, err);
	if (r >= 0 && virDomainIsActive(dom) == 1 &&
	    virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, element, HP_NS_PREFIX, HP_NS_URI,
				 VIR_DOMAIN_AFFECT_LIVE) < 0)
		r = hp_virt_err(err, "virDomainSetMetadata (live)");
	if (r >= 0 && virDomainIsPersistent(dom) == 1 &&
	    virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, element, HP_NS_PREFIX, HP_NS_URI,
				 VIR_DOMAIN_AFFECT_CONFIG) < 0)
		r = hp_virt_err(err, "virDomainSetMetadata (definition)");
	virDomainFree(dom);
	return r;
}
