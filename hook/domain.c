/* SPDX-License-Identifier: Apache-2.0 */
/* The parts of the domain XML libvirt gives the hook on stdin that the
 * hook needs: <name>, <uuid> and <metadata><vmact:autoscaling>. */
#include "hook/hook.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"

static inline void hk_xmlfreep(xmlChar **p)
{
	if (*p)
		xmlFree(*p);
}
#define _cleanup_xmlfree_ _cleanup_(hk_xmlfreep)
DEFINE_PTR_CLEANUP(hk_xmldocp, xmlDoc, xmlFreeDoc)
#define _cleanup_xmldoc_ _cleanup_(hk_xmldocp)

static xmlNodePtr child(xmlNodePtr parent, const char *name)
{
	for (xmlNodePtr n = parent->children; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && !n->ns && xmlStrcmp(n->name, BAD_CAST name) == 0)
			return n;
	return NULL;
}

static int text_of(xmlNodePtr parent, const char *name, char *dst, size_t cap,
		   struct vmact_err *err)
{
	xmlNodePtr n = child(parent, name);
	_cleanup_xmlfree_ xmlChar *t = n ? xmlNodeGetContent(n) : NULL;

	if (!t || !t[0])
		return vmact_err_set(err, EINVAL, "domain XML: no <%s>", name);
	if (strlen((const char *)t) >= cap)
		return vmact_err_set(err, EINVAL, "domain XML: <%s> longer than %zu bytes", name,
				     cap - 1);
	strcpy(dst, (const char *)t);
	return 0;
}

/* The element copied into a document of its own, its namespace declared
 * on it, serialised. */
static int dump_element(xmlNodePtr el, char **out, struct vmact_err *err)
{
	_cleanup_xmldoc_ xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
	xmlNodePtr copy;
	xmlChar *buf = NULL;
	int len = 0;

	copy = doc ? xmlDocCopyNode(el, doc, 1) : NULL;
	if (!copy)
		return vmact_err_set(err, ENOMEM, "out of memory");
	xmlDocSetRootElement(doc, copy);
	xmlReconciliateNs(doc, copy);
	xmlDocDumpMemory(doc, &buf, &len);
	if (!buf)
		return vmact_err_set(err, ENOMEM, "out of memory");
	*out = strdup((const char *)buf);
	xmlFree(buf);
	return *out ? 0 : vmact_err_set(err, ENOMEM, "out of memory");
}

int hk_domain_parse(const char *xml, size_t len, struct hk_domain *d, struct vmact_err *err)
{
	_cleanup_xmldoc_ xmlDocPtr doc = NULL;
	xmlNodePtr root, md;
	int r;

	memset(d, 0, sizeof(*d));
	if (len > INT_MAX)
		return vmact_err_set(err, EINVAL, "domain XML too large");
	doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc)
		return vmact_err_set(err, EINVAL, "domain XML: not well-formed");
	root = xmlDocGetRootElement(doc);
	if (!root || root->ns || xmlStrcmp(root->name, BAD_CAST "domain") != 0)
		return vmact_err_set(err, EINVAL, "domain XML: root is not <domain>");
	if ((r = text_of(root, "name", d->name, sizeof(d->name), err)) < 0 ||
	    (r = text_of(root, "uuid", d->uuid, sizeof(d->uuid), err)) < 0)
		return r;
	md = child(root, "metadata");
	for (xmlNodePtr n = md ? md->children : NULL; n; n = n->next) {
		_cleanup_xmlfree_ xmlChar *refuse = NULL;

		if (n->type != XML_ELEMENT_NODE || !n->ns || !n->ns->href ||
		    xmlStrcmp(n->ns->href, BAD_CAST HP_NS_URI) != 0)
			continue;
		/* libvirt keeps one element per namespace; hp_meta_parse
		 * names it if it is not <vmact:autoscaling>. */
		if ((r = dump_element(n, &d->meta, err)) < 0)
			return r;
		refuse = xmlGetNoNsProp(n, BAD_CAST "refuse-invalid");
		d->refuse_invalid = refuse && xmlStrcmp(refuse, BAD_CAST "true") == 0;
		break;
	}
	return 0;
}

void hk_domain_free(struct hk_domain *d)
{
	free(d->meta);
	d->meta = NULL;
}

int hk_domain_check(const struct hk_domain *d, struct vmact_err *err)
{
	_cleanup_(hp_meta_done) struct hp_meta meta = { 0 };

	if (!d->meta)
		return 0;
	return hp_meta_parse(d->meta, &meta, err);
}
