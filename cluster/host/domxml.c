/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/host/domxml.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

DEFINE_PTR_CLEANUP(xml_free_docp, xmlDoc, xmlFreeDoc)

const char *cl_domxml_tier_name(enum cl_tier t)
{
	static const char *const names[] = { "running", "paused", "saved", "cold" };

	return (unsigned)t < ARRAY_SIZE(names) ? names[t] : "?";
}

int cl_domxml_tier_parse(const char *s, enum cl_tier *out)
{
	for (int t = 0; t < CL_N_TIERS; t++)
		if (strcmp(s, cl_domxml_tier_name(t)) == 0) {
			*out = t;
			return 0;
		}
	return -EINVAL;
}

const char *cl_domxml_state_name(enum cl_state s)
{
	static const char *const names[] = {
		[CL_ST_PENDING] = "pending",   [CL_ST_CREATING] = "creating",
		[CL_ST_BOOTING] = "booting",   [CL_ST_READY] = "ready",
		[CL_ST_CLAIMING] = "claiming", [CL_ST_CLAIMED] = "claimed",
		[CL_ST_DELETING] = "deleting",
	};

	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

const char *cl_domxml_role_name(enum cl_role r)
{
	return r == CL_ROLE_MEMBER ? "member" : "pool";
}

/* ---- a growing text buffer; XML-escaped values ---- */

struct buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = (b->cap + (size_t)n + 256) * 2;
			char *ns = realloc(b->s, cap);

			if (!ns) {
				b->oom = true;
				return;
			}
			b->s = ns;
			b->cap = cap;
		}
	}
}

/* Escaped for an attribute value or text. */
static void put_esc(struct buf *b, const char *v)
{
	for (; *v; v++) {
		switch (*v) {
		case '<':
			put(b, "&lt;");
			break;
		case '>':
			put(b, "&gt;");
			break;
		case '&':
			put(b, "&amp;");
			break;
		case '\'':
			put(b, "&apos;");
			break;
		case '"':
			put(b, "&quot;");
			break;
		case '\n':
			put(b, "&#10;");
			break;
		default:
			if ((unsigned char)*v < 0x20 && *v != '\t')
				put(b, "?");
			else
				put(b, "%c", *v);
		}
	}
}

static char *finish(struct buf *b)
{
	if (b->oom) {
		free(b->s);
		return NULL;
	}
	return b->s;
}

/* ---- metadata ---- */

static void put_time(struct buf *b, const char *attr, double t)
{
	if (t > 0)
		put(b, " %s='%.3f'", attr, t);
}

char *cl_domxml_meta_format(const struct cl_meta *m, bool in_domain)
{
	const char *p = in_domain ? CL_DOMXML_KEY ":" : "";
	struct buf b = { 0 };

	if (in_domain)
		put(&b, "<%snode xmlns:" CL_DOMXML_KEY "='" CL_DOMXML_NS "' group='", p);
	else
		put(&b, "<node group='");
	put_esc(&b, m->group);
	put(&b, "' role='%s' tier='%s' state='%s'", cl_domxml_role_name(m->role),
	    cl_domxml_tier_name(m->tier), cl_domxml_state_name(m->state));
	put_time(&b, "created", m->created);
	put_time(&b, "booted", m->booted);
	put_time(&b, "requested", m->requested);
	put_time(&b, "in-service", m->in_service);
	put(&b, " attempts='%u'", m->attempts);
	if (m->provider_host[0]) {
		put(&b, " provider-host='");
		put_esc(&b, m->provider_host);
		put(&b, "'");
	}
	if (!m->has_error) {
		put(&b, "/>");
		return finish(&b);
	}
	put(&b, "><%serror class='", p);
	put_esc(&b, m->err_class);
	put(&b, "' code='");
	put_esc(&b, m->err_code);
	put(&b, "'");
	put_time(&b, "at", m->err_at);
	put(&b, " message='");
	put_esc(&b, m->err_msg);
	put(&b, "'/></%snode>", p);
	return finish(&b);
}

static int attr(xmlNodePtr n, const char *name, bool required, char *buf, size_t len,
		struct vmact_err *err)
{
	xmlChar *v = xmlGetProp(n, BAD_CAST name);

	if (!v) {
		buf[0] = 0;
		return required ? vmact_err_set(err, EINVAL, "cluster metadata: no %s", name) : 0;
	}
	if (strlen((const char *)v) >= len) {
		xmlFree(v);
		return vmact_err_set(err, EINVAL, "cluster metadata: %s too long", name);
	}
	strcpy(buf, (const char *)v);
	xmlFree(v);
	return 0;
}

static int attr_time(xmlNodePtr n, const char *name, double *out, struct vmact_err *err)
{
	char buf[64], *end;
	int r = attr(n, name, false, buf, sizeof(buf), err);

	*out = 0;
	if (r < 0 || !buf[0])
		return r;
	*out = strtod(buf, &end);
	if (*end || !isfinite(*out) || *out < 0)
		return vmact_err_set(err, EINVAL, "cluster metadata: %s '%s' is not a time", name,
				     buf);
	return 0;
}

static bool ours(xmlNodePtr n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, BAD_CAST name) == 0 &&
	       (!n->ns || (n->ns->href && xmlStrcmp(n->ns->href, BAD_CAST CL_DOMXML_NS) == 0));
}

int cl_domxml_meta_parse(const char *xml, struct cl_meta *m, struct vmact_err *err)
{
	_cleanup_(xml_free_docp) xmlDoc *doc = NULL;
	xmlNodePtr root, c;
	char buf[64];
	int r;

	memset(m, 0, sizeof(*m));
	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc)
		return vmact_err_set(err, EINVAL, "cluster metadata: not XML");
	root = xmlDocGetRootElement(doc);
	if (!root || !ours(root, "node"))
		return vmact_err_set(err, EINVAL, "cluster metadata: no <node> in %s",
				     CL_DOMXML_NS);
	if ((r = attr(root, "group", true, m->group, sizeof(m->group), err)) < 0)
		return r;
	if ((r = attr(root, "role", true, buf, sizeof(buf), err)) < 0)
		return r;
	if (strcmp(buf, "member") == 0)
		m->role = CL_ROLE_MEMBER;
	else if (strcmp(buf, "pool") == 0)
		m->role = CL_ROLE_POOL;
	else
		return vmact_err_set(err, EINVAL, "cluster metadata: role '%s'", buf);
	if ((r = attr(root, "tier", true, buf, sizeof(buf), err)) < 0)
		return r;
	if (cl_domxml_tier_parse(buf, &m->tier) < 0)
		return vmact_err_set(err, EINVAL, "cluster metadata: tier '%s'", buf);
	if ((r = attr(root, "state", true, buf, sizeof(buf), err)) < 0)
		return r;
	m->state = CL_N_STATES;
	for (int s = 0; s < CL_N_STATES; s++)
		if (strcmp(buf, cl_domxml_state_name(s)) == 0)
			m->state = s;
	if (m->state == CL_N_STATES)
		return vmact_err_set(err, EINVAL, "cluster metadata: state '%s'", buf);
	if ((r = attr_time(root, "created", &m->created, err)) < 0 ||
	    (r = attr_time(root, "booted", &m->booted, err)) < 0 ||
	    (r = attr_time(root, "requested", &m->requested, err)) < 0 ||
	    (r = attr_time(root, "in-service", &m->in_service, err)) < 0)
		return r;
	if ((r = attr(root, "attempts", false, buf, sizeof(buf), err)) < 0)
		return r;
	m->attempts = (unsigned)strtoul(buf, NULL, 10);
	if ((r = attr(root, "provider-host", false, m->provider_host, sizeof(m->provider_host),
		      err)) < 0)
		return r;
	for (c = root->children; c; c = c->next) {
		if (!ours(c, "error"))
			continue;
		m->has_error = true;
		if ((r = attr(c, "class", true, m->err_class, sizeof(m->err_class), err)) < 0 ||
		    (r = attr(c, "code", true, m->err_code, sizeof(m->err_code), err)) < 0 ||
		    (r = attr(c, "message", false, m->err_msg, sizeof(m->err_msg), err)) < 0 ||
		    (r = attr_time(c, "at", &m->err_at, err)) < 0)
			return r;
	}
	return 0;
}

/* ---- the domain ---- */

static const char *qemu_arch(const char *k8s)
{
	return strcmp(k8s, "arm64") == 0 ? "aarch64" : "x86_64";
}

char *cl_domxml_domain(const struct cl_domxml_spec *s, struct vmact_err *err)
{
	const struct cl_group_cfg *g = s->group;
	const struct cl_template *t = &g->tpl;
	bool arm = strcmp(qemu_arch(t->arch), "aarch64") == 0;
	bool mem_hotplug = t->max_memory > t->memory;
	unsigned serials = 1;
	_cleanup_free_ char *meta = cl_domxml_meta_format(s->meta, true);
	struct buf b = { 0 };
	char *out;

	if (!meta) {
		vmact_err_set(err, ENOMEM, "out of memory");
		return NULL;
	}
	if (!cl_config_claim_virtio(&g->claim) && !strncmp(g->claim.channel, "serial", 6))
		serials = (unsigned)strtoul(g->claim.channel + 6, NULL, 10) + 1;
	put(&b, "<domain type='%s'>\n  <name>%s</name>\n  <uuid>%s</uuid>\n",
	    t->kvm ? "kvm" : "qemu", s->name, s->uuid);
	put(&b, "  <metadata>\n    %s\n", meta);
	if (t->metadata_xml)
		put(&b, "    %s\n", t->metadata_xml);
	put(&b, "  </metadata>\n");
	put(&b,
	    "  <memory unit='KiB'>%llu</memory>\n  <currentMemory unit='KiB'>%llu</currentMemory>\n",
	    (unsigned long long)(t->memory >> 10), (unsigned long long)(t->memory >> 10));
	if (mem_hotplug)
		/* vmactd's virtio-mem layout (doc/actuation.md): slots for DIMMs,
		 * the device on NUMA cell 0. */
		put(&b, "  <maxMemory slots='4' unit='KiB'>%llu</maxMemory>\n",
		    (unsigned long long)((t->max_memory + t->memory) >> 10));
	if (t->max_vcpus > t->vcpus) {
		put(&b, "  <vcpu placement='static' current='%u'>%u</vcpu>\n  <vcpus>\n", t->vcpus,
		    t->max_vcpus);
		for (unsigned i = 0; i < t->max_vcpus; i++)
			put(&b, "    <vcpu id='%u' enabled='%s' hotpluggable='%s'%s/>\n", i,
			    i < t->vcpus ? "yes" : "no", i == 0 ? "no" : "yes",
			    i < t->vcpus ? (i == 0 ? " order='1'" : "") : "");
		put(&b, "  </vcpus>\n");
	} else {
		put(&b, "  <vcpu placement='static'>%u</vcpu>\n", t->vcpus);
	}
	put(&b, "  <os>\n    <type arch='%s' machine='%s'>hvm</type>\n", qemu_arch(t->arch),
	    arm ? "virt" : "pc");
	if (t->kernel[0]) {
		put(&b, "    <kernel>");
		put_esc(&b, t->kernel);
		put(&b, "</kernel>\n");
		if (t->initrd[0]) {
			put(&b, "    <initrd>");
			put_esc(&b, t->initrd);
			put(&b, "</initrd>\n");
		}
		put(&b, "    <cmdline>");
		put_esc(&b, t->cmdline);
		put(&b, "</cmdline>\n");
	} else {
		put(&b, "    <boot dev='hd'/>\n");
	}
	put(&b, "  </os>\n  <features><acpi/>%s</features>\n", arm ? "" : "<apic/>");
	if (t->kvm)
		put(&b, "  <cpu mode='host-model'>\n");
	else
		put(&b,
		    "  <cpu mode='custom' match='exact' check='none'>\n"
		    "    <model fallback='forbid'>%s</model>\n",
		    arm ? "cortex-a57" : "qemu64");
	if (mem_hotplug)
		put(&b, "    <numa><cell id='0' cpus='0-%u' memory='%llu' unit='KiB'/></numa>\n",
		    t->max_vcpus - 1, (unsigned long long)(t->memory >> 10));
	put(&b, "  </cpu>\n  <clock offset='utc'/>\n"
		"  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>restart</on_reboot>\n"
		"  <on_crash>destroy</on_crash>\n  <devices>\n");
	if (!arm)
		put(&b, "    <controller type='usb' model='none'/>\n");
	if (s->pool && s->volume) {
		put(&b, "    <disk type='volume' device='disk'>\n"
			"      <driver name='qemu' type='qcow2'/>\n      <source pool='");
		put_esc(&b, s->pool);
		put(&b, "' volume='");
		put_esc(&b, s->volume);
		put(&b, "'/>\n      <target dev='%s' bus='%s'/>\n    </disk>\n",
		    strcmp(t->disk_bus, "virtio") == 0 ? "vda" : "sda", t->disk_bus);
	}
	if (t->network[0]) {
		put(&b, "    <interface type='network'>\n      <source network='");
		put_esc(&b, t->network);
		put(&b, "'/>\n      <model type='virtio'/>\n    </interface>\n");
	} else if (t->user_nic) {
		put(&b, "    <interface type='user'>\n      <model type='virtio'/>\n"
			"    </interface>\n");
	}
	for (unsigned i = 0; i < serials; i++) {
		put(&b, "    <serial type='pty'>\n");
		if (i == 0 && t->serial_log_dir[0]) {
			put(&b, "      <log file='");
			put_esc(&b, t->serial_log_dir);
			put(&b, "/%s.log' append='off'/>\n", s->name);
		}
		put(&b, "      <target port='%u'/>\n    </serial>\n", i);
	}
	if (cl_config_claim_virtio(&g->claim)) {
		/* libvirt picks the socket's path unless the host names a
		 * directory; it reaches it for virDomainOpenChannel either way,
		 * on a remote host too. */
		put(&b, "    <channel type='unix'>\n      <source mode='bind'");
		if (s->channel_dir && s->channel_dir[0]) {
			put(&b, " path='");
			put_esc(&b, s->channel_dir);
			put(&b, "/%s.claim'", s->uuid);
		}
		put(&b, "/>\n      <target type='virtio' name='");
		put_esc(&b, cl_config_claim_virtio(&g->claim));
		put(&b, "'/>\n    </channel>\n");
	}
	if (g->health.kind == CL_HEALTH_AGENT) {
		put(&b, "    <channel type='unix'>\n");
		if (s->channel_dir && s->channel_dir[0]) {
			put(&b, "      <source mode='bind' path='");
			put_esc(&b, s->channel_dir);
			put(&b, "/%s.agent'/>\n", s->uuid);
		}
		put(&b,
		    "      <target type='virtio' name='org.qemu.guest_agent.0'/>\n    </channel>\n");
	}
	if (mem_hotplug)
		put(&b,
		    "    <memory model='virtio-mem'>\n      <target>\n"
		    "        <size unit='KiB'>%llu</size>\n        <node>0</node>\n"
		    "        <block unit='KiB'>2048</block>\n"
		    "        <requested unit='KiB'>0</requested>\n      </target>\n    </memory>\n",
		    (unsigned long long)((t->max_memory - t->memory) >> 10));
	put(&b, "    <memballoon model='none'/>\n  </devices>\n</domain>\n");
	out = finish(&b);
	if (!out)
		vmact_err_set(err, ENOMEM, "out of memory");
	return out;
}

char *cl_domxml_overlay(const char *volume, const char *backing_path,
			unsigned long long backing_capacity, const char *backing_format)
{
	struct buf b = { 0 };

	put(&b, "<volume>\n  <name>");
	put_esc(&b, volume);
	put(&b,
	    "</name>\n  <capacity unit='bytes'>%llu</capacity>\n"
	    "  <target><format type='qcow2'/><permissions><mode>0600</mode></permissions></target>\n"
	    "  <backingStore>\n    <path>",
	    backing_capacity);
	put_esc(&b, backing_path);
	put(&b, "</path>\n    <format type='");
	put_esc(&b, backing_format);
	put(&b, "'/>\n  </backingStore>\n</volume>\n");
	return finish(&b);
}

int cl_domxml_volume_name(const char *domain, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.qcow2", domain);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
