/* SPDX-License-Identifier: Apache-2.0 */
/* libxml2 helpers private to hotplug/. */
#pragma once

#include <stdint.h>

#include <libxml/tree.h>

#include "base/error.h"
#include "base/macro.h"

static inline void hpx_xmlfreep(xmlChar **p)
{
	if (*p)
		xmlFree(*p);
}
#define _cleanup_xmlfree_ _cleanup_(hpx_xmlfreep)
DEFINE_PTR_CLEANUP(hpx_xmldocp, xmlDoc, xmlFreeDoc)
#define _cleanup_xmldoc_ _cleanup_(hpx_xmldocp)

/* The first child element of n (NULL-safe) named name, or NULL. */
static inline xmlNodePtr hpx_child(xmlNodePtr n, const char *name)
{
	for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0)
			return c;
	return NULL;
}

/* Reads a libvirt memory element (<size unit='KiB'>N</size>) in KiB. */
int hpx_read_kib(xmlNodePtr n, const char *what, uint64_t *out, struct vmact_err *err);
