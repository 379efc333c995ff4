/* SPDX-License-Identifier: Apache-2.0 */
/* A node VM's cluster metadata and domain definition (cluster/host/domxml.c):
 * the metadata read back as written (escaping included, prefixed or
 * bare), refused when it is not ours, and the domain XML well-formed with
 * vmactd's hotplug layout when the template grows, no disk for a
 * placeholder. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "cluster/host/domxml.h"
#include "cluster/host/migrate.h"

static void test_meta_round_trip(void **state)
{
	struct cl_meta m = { .role = CL_ROLE_MEMBER,
			     .tier = CL_TIER_SAVED,
			     .state = CL_ST_PENDING,
			     .created = 1700000000.25,
			     .requested = 1700000001.5,
			     .attempts = 3,
			     .has_error = true,
			     .err_at = 1700000002 };
	struct cl_meta back;
	struct vmact_err err = { 0 };

	snprintf(m.group, sizeof(m.group), "workers");
	snprintf(m.err_class, sizeof(m.err_class), "out-of-resources");
	snprintf(m.err_code, sizeof(m.err_code), "HOST_CAPACITY");
	snprintf(m.err_msg, sizeof(m.err_msg), "0/2 hosts fit: h1: <full> & 'busy' \"now\"\nnext");
	snprintf(m.provider_host, sizeof(m.provider_host), "h1");
	for (int in_domain = 0; in_domain < 2; in_domain++) {
		char *xml = cl_domxml_meta_format(&m, in_domain);

		assert_non_null(xml);
		/* Bare for virDomainSetMetadata, declared for a definition. */
		assert_int_equal(strstr(xml, "xmlns:cl=") != NULL, in_domain);
		if (cl_domxml_meta_parse(xml, &back, &err) < 0)
			fail_msg("%s: %s", xml, err.msg);
		assert_string_equal(back.group, "workers");
		assert_int_equal(back.role, CL_ROLE_MEMBER);
		assert_int_equal(back.tier, CL_TIER_SAVED);
		assert_int_equal(back.state, CL_ST_PENDING);
		assert_true(back.created == 1700000000.25);
		assert_true(back.requested == 1700000001.5);
		assert_true(back.booted == 0);
		assert_int_equal(back.attempts, 3);
		assert_string_equal(back.provider_host, "h1");
		assert_true(back.has_error);
		assert_string_equal(back.err_code, "HOST_CAPACITY");
		assert_string_equal(back.err_msg, m.err_msg);
		free(xml);
	}
	/* Every state and tier by name. */
	for (int s = 0; s < CL_N_STATES; s++) {
		char *xml;

		m.state = s;
		m.has_error = false;
		m.provider_host[0] = 0;
		xml = cl_domxml_meta_format(&m, false);
		assert_int_equal(cl_domxml_meta_parse(xml, &back, &err), 0);
		assert_int_equal(back.state, s);
		assert_false(back.has_error);
		/* Not moved: no provider-host at all. */
		assert_null(strstr(xml, "provider-host"));
		assert_string_equal(back.provider_host, "");
		free(xml);
	}
}

static void test_meta_refused(void **state)
{
	static const char *const bad[] = {
		"not xml",
		"<node xmlns='urn:other' group='g' role='pool' tier='running' state='ready'/>",
		"<other group='g' role='pool' tier='running' state='ready'/>",
		"<node role='pool' tier='running' state='ready'/>",
		"<node group='g' role='king' tier='running' state='ready'/>",
		"<node group='g' role='pool' tier='lukewarm' state='ready'/>",
		"<node group='g' role='pool' tier='running' state='sleeping'/>",
		"<node group='g' role='pool' tier='running' state='ready' booted='yesterday'/>",
	};
	struct cl_meta m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vmact_err err = { 0 };

		if (cl_domxml_meta_parse(bad[i], &m, &err) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_non_null(strstr(err.msg, "cluster metadata"));
	}
}

static const char *xpath(xmlDocPtr doc, const char *expr, char *buf, size_t len)
{
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr o;

	xmlXPathRegisterNs(ctx, BAD_CAST "cl", BAD_CAST CL_DOMXML_NS);
	o = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	snprintf(buf, len, "%s", o && o->stringval ? (const char *)o->stringval : "");
	xmlXPathFreeObject(o);
	xmlXPathFreeContext(ctx);
	return buf;
}

static void test_domain(void **state)
{
	struct cl_group_cfg g = { 0 };
	struct cl_meta m = { .role = CL_ROLE_POOL,
			     .tier = CL_TIER_RUNNING,
			     .state = CL_ST_CREATING };
	struct cl_domxml_spec s = { .group = &g,
				    .name = "vmact-g-0a1b2c3d",
				    .uuid = "0a1b2c3d-0000-4000-8000-000000000001",
				    .meta = &m };
	struct vmact_err err = { 0 };
	char buf[256];
	char *xml;
	xmlDocPtr doc;

	snprintf(g.id, sizeof(g.id), "g");
	snprintf(m.group, sizeof(m.group), "g");
	g.tpl.vcpus = 1;
	g.tpl.max_vcpus = 4;
	g.tpl.memory = 512ULL << 20;
	g.tpl.max_memory = 2ULL << 30;
	snprintf(g.tpl.arch, sizeof(g.tpl.arch), "amd64");
	snprintf(g.tpl.kernel, sizeof(g.tpl.kernel), "/boot/vmlinuz");
	snprintf(g.tpl.cmdline, sizeof(g.tpl.cmdline), "console=ttyS0 a=\"b\"");
	snprintf(g.tpl.disk_bus, sizeof(g.tpl.disk_bus), "virtio");
	snprintf(g.tpl.serial_log_dir, sizeof(g.tpl.serial_log_dir), "/var/log/n");
	snprintf(g.claim.channel, sizeof(g.claim.channel), "serial2");
	g.tpl.metadata_xml = "<vmact:autoscaling xmlns:vmact='https://vmact.dev/xmlns/vmact/1' "
			     "enabled='true'/>";
	s.pool = "images";
	s.volume = "vmact-g-0a1b2c3d.qcow2";
	xml = cl_domxml_domain(&s, &err);
	assert_non_null(xml);
	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	if (!doc)
		fail_msg("not XML:\n%s", xml);
	assert_string_equal(xpath(doc, "string(/domain/@type)", buf, sizeof(buf)), "qemu");
	assert_string_equal(xpath(doc, "string(/domain/uuid)", buf, sizeof(buf)), s.uuid);
	assert_string_equal(xpath(doc, "string(/domain/metadata/cl:node/@state)", buf, sizeof(buf)),
			    "creating");
	assert_string_equal(xpath(doc, "string(count(/domain/metadata/*))", buf, sizeof(buf)), "2");
	/* vmactd's layout: hotpluggable vCPUs, NUMA cell, virtio-mem device. */
	assert_string_equal(xpath(doc, "string(/domain/vcpu/@current)", buf, sizeof(buf)), "1");
	assert_string_equal(xpath(doc, "string(/domain/vcpu)", buf, sizeof(buf)), "4");
	assert_string_equal(xpath(doc, "string(count(/domain/vcpus/vcpu[@hotpluggable='yes']))",
				  buf, sizeof(buf)),
			    "3");
	assert_string_equal(xpath(doc, "string(/domain/cpu/numa/cell/@memory)", buf, sizeof(buf)),
			    "524288");
	assert_string_equal(xpath(doc,
				  "string(/domain/devices/memory[@model='virtio-mem']/target/size)",
				  buf, sizeof(buf)),
			    "1572864");
	assert_string_equal(xpath(doc, "string(/domain/os/cmdline)", buf, sizeof(buf)),
			    "console=ttyS0 a=\"b\"");
	assert_string_equal(xpath(doc, "string(/domain/devices/disk/source/@volume)", buf,
				  sizeof(buf)),
			    s.volume);
	/* Console with its log, and ports up to the claim's (serial2). */
	assert_string_equal(xpath(doc, "string(count(/domain/devices/serial))", buf, sizeof(buf)),
			    "3");
	assert_string_equal(xpath(doc, "string(/domain/devices/serial/log/@file)", buf,
				  sizeof(buf)),
			    "/var/log/n/vmact-g-0a1b2c3d.log");
	/* No NIC unless the template names one. */
	assert_string_equal(xpath(doc, "string(count(/domain/devices/interface))", buf,
				  sizeof(buf)),
			    "0");
	/* Health by serial console: no guest agent channel. */
	assert_string_equal(xpath(doc, "string(count(/domain/devices/channel))", buf, sizeof(buf)),
			    "0");
	xmlFreeDoc(doc);
	free(xml);

	/* A placeholder: no disk; a fixed-size template: no hotplug layout. */
	s.pool = s.volume = NULL;
	g.tpl.max_vcpus = 1;
	g.tpl.max_memory = g.tpl.memory;
	g.tpl.kvm = true;
	snprintf(g.claim.channel, sizeof(g.claim.channel), "virtio:org.vmact.claim.0");
	g.health.kind = CL_HEALTH_AGENT;
	xml = cl_domxml_domain(&s, &err);
	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_string_equal(xpath(doc, "string(count(/domain/devices/disk))", buf, sizeof(buf)),
			    "0");
	assert_string_equal(xpath(doc, "string(count(/domain/vcpus))", buf, sizeof(buf)), "0");
	xmlFreeDoc(doc);
	free(xml);
	/* QEMU's user network: one virtio NIC, nothing else to set up. */
	g.tpl.user_nic = true;
	xml = cl_domxml_domain(&s, &err);
	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_string_equal(xpath(doc, "string(/domain/devices/interface/@type)", buf, sizeof(buf)),
			    "user");
	assert_string_equal(xpath(doc, "string(/domain/devices/interface/model/@type)", buf,
				  sizeof(buf)),
			    "virtio");
	g.tpl.user_nic = false;
	assert_string_equal(xpath(doc, "string(count(/domain/devices/memory))", buf, sizeof(buf)),
			    "0");
	assert_string_equal(xpath(doc, "string(/domain/@type)", buf, sizeof(buf)), "kvm");
	/* The claim's virtio-serial channel; the console alone as a serial
	 * port. */
	assert_string_equal(xpath(doc, "string(/domain/devices/channel[@type='unix']/target/@name)",
				  buf, sizeof(buf)),
			    "org.vmact.claim.0");
	/* Health by agent: qemu-guest-agent's channel beside it, its path
	 * left to libvirt (which then knows it as the domain's agent). */
	assert_string_equal(
		xpath(doc,
		      "string(count(/domain/devices/channel[@type='unix']/target[@type='virtio' and "
		      "@name='org.qemu.guest_agent.0']))",
		      buf, sizeof(buf)),
		"1");
	assert_string_equal(xpath(doc, "string(count(/domain/devices/channel))", buf, sizeof(buf)),
			    "2");
	assert_string_equal(xpath(doc, "string(count(/domain/devices/serial))", buf, sizeof(buf)),
			    "1");
	assert_string_equal(xpath(doc, "string(count(/domain/devices/channel/source/@path))", buf,
				  sizeof(buf)),
			    "0");
	xmlFreeDoc(doc);
	free(xml);

	/* A host with a channel_dir: both sockets there, named by the UUID,
	 * whatever the domain's ID (a session's libvirt puts them under the
	 * user's home, its ID in the path). The longest directory the
	 * configuration takes keeps them within a unix socket's 107 bytes. */
	{
		char dir[CL_CHANNEL_DIR_MAX];

		memset(dir, 'd', sizeof(dir) - 1);
		dir[0] = '/';
		dir[sizeof(dir) - 1] = 0;
		s.channel_dir = dir;
		xml = cl_domxml_domain(&s, &err);
		doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
		assert_non_null(doc);
		xpath(doc,
		      "string(/domain/devices/channel[target/@name='org.vmact.claim.0']/source/@path)",
		      buf, sizeof(buf));
		assert_int_equal(strncmp(buf, dir, strlen(dir)), 0);
		assert_string_equal(buf + strlen(dir),
				    "/0a1b2c3d-0000-4000-8000-000000000001.claim");
		assert_true(strlen(buf) <= 107);
		xpath(doc,
		      "string(/domain/devices/channel[target/@name='org.qemu.guest_agent.0']/source/"
		      "@path)",
		      buf, sizeof(buf));
		assert_string_equal(buf + strlen(dir),
				    "/0a1b2c3d-0000-4000-8000-000000000001.agent");
		assert_true(strlen(buf) <= 107);
		assert_string_equal(
			xpath(doc,
			      "string(/domain/devices/channel[target/@name='org.qemu.guest_agent.0']/"
			      "source/@mode)",
			      buf, sizeof(buf)),
			"bind");
		xmlFreeDoc(doc);
		free(xml);
		s.channel_dir = NULL;
	}

	xml = cl_domxml_overlay("v.qcow2", "/images/base <1>.qcow2", 64ULL << 20, "qcow2");
	doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_string_equal(xpath(doc, "string(/volume/backingStore/path)", buf, sizeof(buf)),
			    "/images/base <1>.qcow2");
	assert_string_equal(xpath(doc, "string(/volume/capacity)", buf, sizeof(buf)), "67108864");
	xmlFreeDoc(doc);
	free(xml);
	assert_int_equal(cl_domxml_volume_name("d", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "d.qcow2");
}

/* A group's VM moving to a host with another pool name and channel
 * directory: its volume disk and its channel sockets named as the target
 * has them; nothing else changes (a file disk, another pool's volume, a
 * socket elsewhere). */
static void test_migrate_rewrite(void **state)
{
	static const char xml[] =
		"<domain type='qemu'><name>n-1</name><devices>"
		"<disk type='volume' device='disk'><source pool='pa' volume='n-1.qcow2'/></disk>"
		"<disk type='volume' device='disk'><source pool='other' volume='x'/></disk>"
		"<disk type='file' device='disk'><source file='/var/lib/pa/f.img'/></disk>"
		"<channel type='unix'><source mode='bind' path='/run/ca/u.claim'/>"
		"<target type='virtio' name='org.vmact.claim.0'/></channel>"
		"<channel type='unix'><source mode='bind' path='/elsewhere/u.agent'/>"
		"<target type='virtio' name='org.qemu.guest_agent.0'/></channel>"
		"</devices></domain>";
	struct cl_migrate_disks k = { .from_pool = "pa",
				      .to_pool = "pb",
				      .volume = "n-1.qcow2",
				      .volume_path = "/var/lib/pb/n-1.qcow2",
				      .from_volume_path = "/var/lib/pa/n-1.qcow2",
				      .from_channel_dir = "/run/ca",
				      .to_channel_dir = "/run/cb" };
	struct vmact_err err = { 0 };
	char *out;

	(void)state;
	out = cl_migrate_rewrite_xml(xml, &k, false, &err);
	if (!out)
		fail_msg("%s", err.msg);
	assert_non_null(strstr(out, "<source pool=\"pb\" volume=\"n-1.qcow2\"/>"));
	assert_null(strstr(out, "pool=\"pa\""));
	assert_non_null(strstr(out, "pool=\"other\""));
	assert_non_null(strstr(out, "file=\"/var/lib/pa/f.img\""));
	assert_non_null(strstr(out, "path=\"/run/cb/u.claim\""));
	assert_non_null(strstr(out, "path=\"/elsewhere/u.agent\""));
	free(out);
	/* Live: the moved disk as its file on the target (libvirt's target
	 * checks that a copied disk's file is there before it starts). */
	out = cl_migrate_rewrite_xml(xml, &k, true, &err);
	assert_non_null(out);
	assert_non_null(strstr(out, "<disk type=\"file\" device=\"disk\">"
				    "<source file=\"/var/lib/pb/n-1.qcow2\"/>"));
	assert_null(strstr(out, "volume=\"n-1.qcow2\""));
	assert_non_null(strstr(out, "pool=\"other\""));
	free(out);
	/* A VM that moved before runs from the file (its live definition
	 * came that way): the same, either way. */
	{
		char *as_file = strdup(xml), *p = strstr(as_file, "<disk type='volume'");
		static const char file_src[] = "<disk type='file'   device='disk'>"
					       "<source file='/var/lib/pa/n-1.qcow2'/></disk>";

		/* (the first disk, replaced in place by one as long) */
		assert_non_null(p);
		memset(p, ' ',
		       strlen("<disk type='volume' device='disk'><source pool='pa' "
			      "volume='n-1.qcow2'/></disk>"));
		memcpy(p, file_src, strlen(file_src));
		out = cl_migrate_rewrite_xml(as_file, &k, false, &err);
		assert_non_null(out);
		assert_non_null(strstr(out, "<disk type=\"volume\" device=\"disk\">"
					    "<source pool=\"pb\" volume=\"n-1.qcow2\"/>"));
		free(out);
		out = cl_migrate_rewrite_xml(as_file, &k, true, &err);
		assert_non_null(out);
		assert_non_null(strstr(out, "<source file=\"/var/lib/pb/n-1.qcow2\"/>"));
		assert_null(strstr(out, "/var/lib/pa/n-1.qcow2"));
		free(out);
		free(as_file);
	}
	/* To libvirt's own place: the path goes, libvirt names one there. */
	k.to_channel_dir = "";
	out = cl_migrate_rewrite_xml(xml, &k, false, &err);
	assert_non_null(out);
	assert_null(strstr(out, "u.claim"));
	assert_non_null(strstr(out, "/elsewhere/u.agent"));
	free(out);
	/* Not XML: refused, said. */
	assert_null(cl_migrate_rewrite_xml("<domain", &k, false, &err));
	assert_non_null(strstr(err.msg, "does not parse"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta_round_trip),
		cmocka_unit_test(test_meta_refused),
		cmocka_unit_test(test_domain),
		cmocka_unit_test(test_migrate_rewrite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
