/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug/layout.c: a domain's layout against vmact's needs (vmactl check,
 * vmactl enable). The layouts read are the test guest's own domain
 * (tests/guest/domain.xml.in, the one make check's guests boot with) and
 * the annotated example of doc/domain.md, so that neither can drift from
 * what the checker accepts; the same checker runs against real libvirt in
 * tests/integration/test_vmactl.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/macro.h"
#include "hotplug/hotplug.h"
#include "hotplug/layout.h"
#include "tests/lib/file.h"

#define MI (1ULL << 20)
#define GI (1ULL << 30)

/* tests/guest/domain.xml.in with its placeholders filled as tests/lib/guest.c does. */
static char *guest_xml(void)
{
	_cleanup_free_ char *in = th_read_file("tests/guest/domain.xml.in");
	static const char *const kv[][2] = {
		{ "@NAME@", "layout-test" }, { "@METADATA@", "" }, { "@GUEST@", "/g" },
		{ "@RUN@", "/r" },           { "@CMDLINE@", "" },
	};
	char *s;

	assert_non_null(in);
	s = strdup(in);
	for (size_t i = 0; i < ARRAY_SIZE(kv); i++) {
		char *p;

		while ((p = strstr(s, kv[i][0]))) {
			char *n = NULL;

			assert_true(asprintf(&n, "%.*s%s%s", (int)(p - s), s, kv[i][1],
					     p + strlen(kv[i][0])) > 0);
			free(s);
			s = n;
		}
	}
	return s;
}

/* The first ```xml block of doc/domain.md. */
static char *doc_xml(void)
{
	_cleanup_free_ char *md = th_read_file("doc/domain.md");
	char *b, *e;

	assert_non_null(md);
	b = strstr(md, "```xml\n");
	assert_non_null(b);
	b += strlen("```xml\n");
	e = strstr(b, "```");
	assert_non_null(e);
	return strndup(b, (size_t)(e - b));
}

static const struct hp_layout_item *item(const struct hp_layout *l, const char *part,
					 enum hp_layout_level level)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->items[i].part, part) == 0 && l->items[i].level == level)
			return &l->items[i];
	return NULL;
}

static void guest_ready(void **state)
{
	_cleanup_free_ char *xml = guest_xml();
	struct vmact_resources min = { 1000, 512 * MI }, max = { 4000, 1536 * MI }, dmin, dmax;
	struct vmact_err err = { 0 };
	struct hp_layout l;

	(void)state;
	assert_int_equal(hp_layout_check(xml, &min, &max, NULL, 0, false, &l, &err), 0);
	assert_true(l.ready);
	assert_int_equal(l.vcpus_now, 1);
	assert_int_equal(l.vcpus_max, 4);
	assert_int_equal(l.mem_base_bytes, 512 * MI);
	assert_int_equal(l.mem_max_bytes, 1536 * MI);
	assert_true(l.mem_hotplug);
	assert_int_equal(l.method, HP_METHOD_VIRTIO_MEM);
	assert_non_null(item(&l, "vcpus", HP_LAYOUT_OK));
	assert_non_null(item(&l, "numa", HP_LAYOUT_OK));
	assert_non_null(item(&l, "maxMemory", HP_LAYOUT_OK));
	assert_non_null(item(&l, "virtio-mem", HP_LAYOUT_OK));
	assert_non_null(item(&l, "guest-kernel", HP_LAYOUT_OK));
	for (size_t i = 0; i < l.n; i++)
		assert_int_not_equal(l.items[i].level, HP_LAYOUT_BLOCKER);
	hp_layout_default_bounds(&l, &dmin, &dmax);
	assert_int_equal(dmin.milli_cpu, 1000);
	assert_int_equal(dmax.milli_cpu, 4000);
	assert_int_equal(dmin.mem_bytes, 512 * MI);
	assert_int_equal(dmax.mem_bytes, 1536 * MI);
}

/* Bounds the layout cannot reach: each a blocker that names the cold
 * restart it takes. */
static void guest_out_of_reach(void **state)
{
	_cleanup_free_ char *xml = guest_xml();
	struct vmact_resources min = { 1000, 256 * MI }, max = { 5000, 2 * GI };
	struct vmact_err err = { 0 };
	const struct hp_layout_item *it;
	struct hp_layout l;

	(void)state;
	assert_int_equal(hp_layout_check(xml, &min, &max, NULL, 0, false, &l, &err), 0);
	assert_false(l.ready);
	it = item(&l, "cpu-bound", HP_LAYOUT_BLOCKER);
	assert_non_null(it);
	assert_true(it->cold);
	assert_non_null(strstr(it->text, "above the 4 vCPUs"));
	it = item(&l, "memory-bound", HP_LAYOUT_BLOCKER);
	assert_non_null(it);
	assert_non_null(strstr(it->text, "min memory 256Mi is below the boot memory 512Mi"));
	assert_int_equal(l.n, 9);
	assert_non_null(strstr(l.items[7].text, "max memory 2Gi is above the 1536Mi"));
	/* The test guest has no balloon (tests/guest/domain.xml.in). */
	assert_string_equal(l.items[8].part, "memory-stats");
}

/* DIMMs in the test guest's 4 slots: its 4 GiB <maxMemory> leaves 3.5 GiB. */
static void guest_dimm(void **state)
{
	_cleanup_free_ char *xml = guest_xml();
	enum hp_mem_method m = HP_METHOD_DIMM;
	struct vmact_resources min = { 1000, 512 * MI }, max = { 4000, 1536 * MI };
	struct vmact_err err = { 0 };
	struct hp_layout l;

	(void)state;
	assert_int_equal(hp_layout_check(xml, &min, &max, &m, 256 * MI, false, &l, &err), 0);
	assert_true(l.ready);
	assert_int_equal(l.mem_max_bytes, 512 * MI + 4 * 256 * MI);
	assert_non_null(item(&l, "dimm", HP_LAYOUT_OK));
}

/* A domain as virt-install writes it without asking for hotplug: no NUMA,
 * no <maxMemory>, all vCPUs at boot. vmact can still size its CPU by the
 * quota; everything else is a cold restart away. */
static const char bare[] =
	"<domain type='kvm'><name>bare</name><uuid>0f4a2c1e-7d7b-4c55-9d3b-3c1e0f4a2c1e</uuid>"
	"<memory unit='KiB'>2097152</memory><currentMemory unit='KiB'>2097152</currentMemory>"
	"<vcpu placement='static'>2</vcpu><os><type arch='x86_64' machine='q35'>hvm</type></os>"
	"<devices/></domain>";

static void bare_domain(void **state)
{
	struct vmact_resources min = { 500, 2 * GI }, max = { 2000, 4 * GI }, dmin, dmax;
	struct vmact_err err = { 0 };
	const struct hp_layout_item *it;
	struct hp_layout l;

	(void)state;
	assert_int_equal(hp_layout_check(bare, NULL, NULL, NULL, 0, false, &l, &err), 0);
	assert_true(l.ready); /* nothing asked for: nothing blocks */
	it = item(&l, "vcpus", HP_LAYOUT_NOTE);
	assert_non_null(it);
	assert_true(it->cold);
	assert_non_null(item(&l, "numa", HP_LAYOUT_NOTE));
	assert_non_null(item(&l, "maxMemory", HP_LAYOUT_NOTE));
	assert_false(l.mem_hotplug);
	hp_layout_default_bounds(&l, &dmin, &dmax);
	assert_int_equal(dmin.milli_cpu, 2000);
	assert_int_equal(dmax.milli_cpu, 2000);
	assert_int_equal(dmin.mem_bytes, 2 * GI);
	assert_int_equal(dmax.mem_bytes, 2 * GI);

	/* Memory growth asked for: each missing part blocks, cold. */
	assert_int_equal(hp_layout_check(bare, &min, &max, NULL, 0, false, &l, &err), 0);
	assert_false(l.ready);
	assert_true(item(&l, "numa", HP_LAYOUT_BLOCKER)->cold);
	assert_true(item(&l, "maxMemory", HP_LAYOUT_BLOCKER)->cold);
	assert_true(item(&l, "virtio-mem", HP_LAYOUT_BLOCKER)->cold);
	assert_non_null(item(&l, "memory-bound", HP_LAYOUT_BLOCKER));
	/* The CPU bounds are fine: quota within the 2 vCPUs. */
	assert_null(item(&l, "cpu-bound", HP_LAYOUT_BLOCKER));
}

/* vmactl check --fix: each blocker's command (virt-xml, virsh), in the
 * order they apply (the vCPUs before the NUMA cell that names them, the
 * <maxMemory> before the device), each cold or live; the memory
 * statistics a note with its own. test_operator applies them to a real
 * domain. */
static void fixes(void **state)
{
	static const char balloon[] =
		"<domain type='kvm' id='7'><name>db 1</name>"
		"<memory unit='KiB'>2097152</memory><currentMemory unit='KiB'>2097152</currentMemory>"
		"<vcpu placement='static'>2</vcpu><os><type arch='x86_64' machine='q35'>hvm</type>"
		"<cmdline>console=ttyS0</cmdline></os>"
		"<devices><memballoon model='virtio'/></devices></domain>";
	struct vmact_resources min = { 1000, 2 * GI }, max = { 4000, 3 * GI };
	struct vmact_err err = { 0 };
	const struct hp_layout_item *it;
	struct hp_layout l;

	(void)state;
	assert_int_equal(hp_layout_check(bare, &min, &max, NULL, 0, false, &l, &err), 0);
	it = item(&l, "cpu-bound", HP_LAYOUT_BLOCKER);
	assert_string_equal(it->fix, "virt-xml bare --edit --vcpus vcpus=2,maxvcpus=4");
	assert_true(it->fix_cold);
	it = item(&l, "numa", HP_LAYOUT_BLOCKER);
	assert_string_equal(it->fix,
			    "virt-xml bare --edit --cpu numa.cell0.id=0,numa.cell0.cpus=0-3,"
			    "numa.cell0.memory=2097152,numa.cell0.unit=KiB");
	it = item(&l, "maxMemory", HP_LAYOUT_BLOCKER);
	assert_string_equal(it->fix,
			    "virt-xml bare --edit --memory maxMemory=3072,maxMemory.slots=1");
	it = item(&l, "virtio-mem", HP_LAYOUT_BLOCKER);
	assert_string_equal(it->fix, "virt-xml bare --add-device --memdev virtio-mem,"
				     "target.size=1024,target.node=0,target.block=2048,"
				     "target.requested=0");
	assert_true(it->fix_cold);
	/* The max is reached once the device is there: no second command. */
	assert_string_equal(item(&l, "memory-bound", HP_LAYOUT_BLOCKER)->fix, "");
	/* No balloon: the memory stays at its size; a cold fix. */
	it = item(&l, "memory-stats", HP_LAYOUT_NOTE);
	assert_non_null(it);
	assert_non_null(strstr(it->text, "memory: stays at its size"));
	assert_string_equal(it->fix, "virt-xml bare --edit --memballoon virtio,stats.period=1");
	assert_true(it->fix_cold);
	/* The guest's exporter sizes the memory instead. */
	assert_int_equal(hp_layout_check(bare, &min, &max, NULL, 0, true, &l, &err), 0);
	assert_non_null(item(&l, "memory-stats", HP_LAYOUT_OK));

	/* A running domain's balloon without statistics: live, by virsh; the
	 * command line gains online_movable; a name with a space, quoted. */
	assert_int_equal(hp_layout_check(balloon, &min, &max, NULL, 0, false, &l, &err), 0);
	it = item(&l, "memory-stats", HP_LAYOUT_NOTE);
	assert_string_equal(it->fix, "virsh dommemstat 'db 1' --period 1 --live");
	assert_false(it->fix_cold);
	it = item(&l, "guest-kernel", HP_LAYOUT_NOTE);
	assert_string_equal(it->fix, "virt-xml 'db 1' --edit --boot "
				     "cmdline='console=ttyS0 memhp_default_state=online_movable'");
	/* Statistics on: nothing to say. */
	{
		_cleanup_free_ char *xml = guest_xml();
		char *at = strstr(xml, "<memballoon model='none'/>");
		_cleanup_free_ char *with = NULL;

		assert_non_null(at);
		assert_true(asprintf(&with,
				     "%.*s<memballoon model='virtio'><stats period='1'/>"
				     "</memballoon>%s",
				     (int)(at - xml), xml,
				     at + strlen("<memballoon model='none'/>")) > 0);
		assert_int_equal(hp_layout_check(with, NULL, NULL, NULL, 0, false, &l, &err), 0);
		assert_non_null(item(&l, "memory-stats", HP_LAYOUT_OK));
		for (size_t i = 0; i < l.n; i++)
			assert_string_equal(l.items[i].fix, "");
	}
}

/* Disabled vCPUs marked hotpluggable='no' cannot be plugged. */
static void fixed_vcpus(void **state)
{
	static const char xml[] =
		"<domain type='kvm'><name>f</name><memory unit='KiB'>1048576</memory>"
		"<vcpu placement='static' current='1'>2</vcpu><vcpus>"
		"<vcpu id='0' enabled='yes' hotpluggable='no' order='1'/>"
		"<vcpu id='1' enabled='no' hotpluggable='no'/></vcpus><devices/></domain>";
	struct vmact_resources min = { 1000, GI }, max = { 2000, GI };
	struct vmact_err err = { 0 };
	struct hp_layout l;

	(void)state;
	assert_int_equal(hp_layout_check(xml, &min, &max, NULL, 0, false, &l, &err), 0);
	assert_false(l.ready);
	assert_true(item(&l, "vcpus", HP_LAYOUT_BLOCKER)->cold);
	assert_int_equal(l.vcpus_max, 1);
	assert_non_null(item(&l, "cpu-bound", HP_LAYOUT_BLOCKER));
}

/* doc/domain.md's annotated domain: ready, with the defaults it states. */
static void doc_example(void **state)
{
	_cleanup_free_ char *xml = doc_xml();
	struct vmact_resources dmin, dmax;
	struct vmact_err err = { 0 };
	struct hp_layout l;

	(void)state;
	if (hp_layout_check(xml, NULL, NULL, NULL, 0, false, &l, &err) < 0)
		fail_msg("doc/domain.md: %s", err.msg);
	assert_true(l.ready);
	assert_true(l.mem_hotplug);
	for (size_t i = 0; i < l.n; i++)
		if (strcmp(l.items[i].part, "guest-kernel") != 0)
			assert_int_equal(l.items[i].level, HP_LAYOUT_OK);
	hp_layout_default_bounds(&l, &dmin, &dmax);
	assert_int_equal(dmin.milli_cpu, 2000);
	assert_int_equal(dmax.milli_cpu, 8000);
	assert_int_equal(dmin.mem_bytes, 4 * GI);
	assert_int_equal(dmax.mem_bytes, 16 * GI);
}

static void meta_build(void **state)
{
	struct vmact_resources min = { 1000, 512 * MI }, max = { 4000, 1536 * MI };
	struct hp_meta_change opts = { 0 };
	struct vmact_err err = { 0 };
	_cleanup_free_ char *xml = NULL, *xml2 = NULL;
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };

	(void)state;
	assert_int_equal(hp_layout_meta_build(&min, &max, HP_METHOD_VIRTIO_MEM, NULL, &xml, &err),
			 0);
	assert_int_equal(hp_meta_parse(xml, &m, &err), 0);
	/* libvirt 9.0 refuses an element that declares its namespace. */
	assert_null(strstr(xml, "xmlns"));
	assert_true(m.enabled);
	assert_int_equal(m.min.milli_cpu, 1000);
	assert_int_equal(m.max.mem_bytes, 1536 * MI);
	assert_int_equal(m.method, HP_METHOD_VIRTIO_MEM);
	assert_false(m.recommend);
	assert_false(m.migration);
	/* vmactl enable --recommend */
	opts.set_mode = opts.recommend = true;
	assert_int_equal(hp_layout_meta_build(&min, &max, HP_METHOD_DIMM, &opts, &xml2, &err), 0);
	assert_int_equal(hp_meta_parse(xml2, &m, &err), 0);
	assert_int_equal(m.method, HP_METHOD_DIMM);
	assert_true(m.recommend);
	assert_false(m.migration);
	/* vmactl enable --migration */
	free(xml2);
	xml2 = NULL;
	opts = (struct hp_meta_change){ .set_migration = true, .migration = true };
	assert_int_equal(hp_layout_meta_build(&min, &max, HP_METHOD_DIMM, &opts, &xml2, &err), 0);
	assert_int_equal(hp_meta_parse(xml2, &m, &err), 0);
	assert_true(m.migration);
	assert_false(m.recommend);
	/* min above max: refused by the reader's own rule. */
	free(xml2);
	xml2 = NULL;
	assert_true(hp_layout_meta_build(&max, &min, HP_METHOD_DIMM, NULL, &xml2, &err) < 0);
	assert_null(xml2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(guest_ready), cmocka_unit_test(guest_out_of_reach),
		cmocka_unit_test(fixes),       cmocka_unit_test(guest_dimm),
		cmocka_unit_test(bare_domain), cmocka_unit_test(fixed_vcpus),
		cmocka_unit_test(doc_example), cmocka_unit_test(meta_build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
