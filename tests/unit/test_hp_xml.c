/* SPDX-License-Identifier: Apache-2.0 */
/* hotplug/: metadata and live-XML parsing on hand-written XML. The same
 * code runs against real libvirt in tests/integration/test_hotplug.c. */
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
#include "hotplug/refusal.h"

#define NS "xmlns:vmact='" HP_NS_URI "'"

static const char full[] =
	"<vmact:autoscaling " NS " enabled='true'>\n"
	"  <vmact:cpu min='250m' max='4'/>\n"
	"  <vmact:memory min='512Mi' max='1536Mi' method='virtio-mem' alias='virtiomem0'/>\n"
	"  <vmact:compute-unit cpu='250m' memory='256Mi'/>\n"
	"  <vmact:scaling loadAverageFractionTarget='0.9' memoryUsageFractionTarget='0.75'"
	"    enableLFCMetrics='true'/>\n"
	"  <!-- operators may comment -->\n"
	"  <vmact:monitor endpoint='ws://127.0.0.1:10301/monitor'/>\n"
	"  <vmact:pod namespace='default' name='db-1' uid='0b5e'/>\n"
	"</vmact:autoscaling>\n";

static void meta_full(void **state)
{
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	assert_int_equal(hp_meta_parse(full, &m, &err), 0);
	assert_true(m.enabled);
	assert_int_equal(m.min.milli_cpu, 250);
	assert_int_equal(m.max.milli_cpu, 4000);
	assert_int_equal(m.min.mem_bytes, 512ULL << 20);
	assert_int_equal(m.max.mem_bytes, 1536ULL << 20);
	assert_int_equal(m.method, HP_METHOD_VIRTIO_MEM);
	assert_string_equal(m.mem_alias, "virtiomem0");
	assert_true(m.has_compute_unit);
	assert_int_equal(m.compute_unit.milli_cpu, 250);
	assert_int_equal(m.compute_unit.mem_bytes, 256ULL << 20);
	assert_true(m.scaling.has_load_avg_target);
	assert_true(m.scaling.load_avg_target > 0.89 && m.scaling.load_avg_target < 0.91);
	assert_true(m.scaling.has_mem_usage_target);
	assert_false(m.scaling.has_mem_total_target);
	assert_true(m.scaling.has_enable_lfc && m.scaling.enable_lfc);
	assert_string_equal(m.monitor, "ws://127.0.0.1:10301/monitor");
	assert_string_equal(m.pod_namespace, "default");
	assert_string_equal(m.pod_name, "db-1");
	assert_string_equal(m.pod_uid, "0b5e");
	/* No <vmact:migration>: vmact does not move it. */
	assert_false(m.migration);
}

/* The texts are the meta's own: a copy keeps its texts when the original
 * is given back (ASan sees a use after free otherwise), a meta parsed
 * again gives back what it held, and a given-back meta reads "". */
static void meta_texts_owned(void **state)
{
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 }, c = { 0 };
	struct vmact_err err = { 0 };

	(void)state;
	assert_int_equal(hp_meta_parse(full, &m, &err), 0);
	assert_non_null(m.text);
	assert_int_equal(hp_meta_copy(&c, &m, &err), 0);
	assert_ptr_not_equal(c.text, m.text);
	assert_int_equal(hp_meta_parse(full, &m, &err), 0); /* the first one's texts given back */
	hp_meta_done(&m);
	assert_null(m.text);
	assert_string_equal(m.monitor, "");
	assert_string_equal(m.pod_name, "");
	assert_string_equal(c.monitor, "ws://127.0.0.1:10301/monitor");
	assert_string_equal(c.mem_alias, "virtiomem0");
	assert_string_equal(c.pod_uid, "0b5e");
	assert_string_equal(c.informant, "");
	assert_int_equal(c.max.milli_cpu, 4000);
	/* A copy over a meta that held texts gives them back. */
	assert_int_equal(hp_meta_parse(full, &m, &err), 0);
	assert_int_equal(hp_meta_copy(&c, &m, &err), 0);
	assert_string_equal(c.pod_namespace, "default");
	/* A failed parse leaves "" and nothing held. */
	assert_true(hp_meta_parse("<autoscaling/>", &m, &err) < 0);
	assert_null(m.text);
	assert_string_equal(m.metrics, "");
}

/* <vmact:migration enabled=...>, both ways, in both spellings. */
static void meta_migration(void **state)
{
	static const char on[] = "<vmact:autoscaling " NS " enabled='true'>"
				 "<vmact:cpu min='1' max='2'/>"
				 "<vmact:memory min='1Gi' max='2Gi' method='dimm'/>"
				 "<vmact:migration enabled='true'/></vmact:autoscaling>";
	static const char off[] = "<autoscaling enabled='true'><cpu min='1' max='2'/>"
				  "<memory min='1Gi' max='2Gi' method='dimm'/>"
				  "<migration enabled='false'/></autoscaling>";
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	(void)state;
	assert_int_equal(hp_meta_parse(on, &m, &err), 0);
	assert_true(m.migration);
	assert_int_equal(hp_meta_parse(off, &m, &err), 0);
	assert_false(m.migration);
}

static void meta_minimal_other_prefix(void **state)
{
	/* The prefix is the document's choice; the namespace is what counts. */
	static const char xml[] =
		"<x:autoscaling xmlns:x='" HP_NS_URI "' enabled='false'>"
		"<x:cpu min='1' max='1'/><x:memory min='1Gi' max='1Gi' method='dimm'/>"
		"</x:autoscaling>";
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	assert_int_equal(hp_meta_parse(xml, &m, &err), 0);
	assert_false(m.enabled);
	assert_int_equal(m.method, HP_METHOD_DIMM);
	assert_false(m.has_compute_unit);
	assert_string_equal(m.monitor, "");
}

static void meta_informant(void **state)
{
	static const char *const good[][2] = {
		{ "http://127.0.0.1:10301", "http://127.0.0.1:10301" },
		{ "http://vm-1.example:1", "http://vm-1.example:1" },
		{ "http://[::1]:65535", "http://[::1]:65535" },
	};
	char xml[512];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
		struct vmact_err err = { 0 };

		snprintf(xml, sizeof(xml),
			 "<vmact:autoscaling " NS " enabled='true'>"
			 "<vmact:cpu min='1' max='2'/>"
			 "<vmact:memory min='1Gi' max='2Gi' method='virtio-mem'/>"
			 "<vmact:informant endpoint='%s'/></vmact:autoscaling>",
			 good[i][0]);
		if (hp_meta_parse(xml, &m, &err) < 0)
			fail_msg("%s: %s", good[i][0], err.msg);
		assert_string_equal(m.informant, good[i][1]);
		assert_string_equal(m.monitor, "");
	}
	/* Without the element: none. */
	{
		_cleanup_(hp_meta_done) struct hp_meta m = { 0 };

		assert_int_equal(hp_meta_parse(full, &m, NULL), 0);
		assert_string_equal(m.informant, "");
	}
}

static void meta_as_libvirt_returns_it(void **state)
{
	/* virDomainGetMetadata strips the namespace from the element. */
	static const char xml[] = "<autoscaling enabled=\"true\">\n"
				  "  <cpu min=\"1\" max=\"2\"/>\n"
				  "  <memory min=\"1Gi\" max=\"2Gi\" method=\"virtio-mem\"/>\n"
				  "</autoscaling>\n";
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	assert_int_equal(hp_meta_parse(xml, &m, &err), 0);
	assert_true(m.enabled);
	assert_int_equal(m.max.milli_cpu, 2000);
	assert_int_equal(m.max.mem_bytes, 2ULL << 30);
}

/* <vmact:metrics> and <vmact:policy>: given, and left to the host. */
static void meta_metrics_policy(void **state)
{
	static const char xml[] =
		"<autoscaling enabled='true'><cpu min='1' max='2'/>"
		"<memory min='1Gi' max='2Gi' method='virtio-mem'/>"
		"<metrics endpoint='http://10.0.3.9:9100' lfc='http://10.0.3.9:9499/lfc'/>"
		"<policy cpu='neon' shrink='unplug'/></autoscaling>";
	static const char only_endpoint[] =
		"<autoscaling enabled='true'><cpu min='1' max='2'/>"
		"<memory min='1Gi' max='2Gi' method='virtio-mem'/>"
		"<metrics endpoint='http://[::1]:9100/metrics'/><policy cpu='reactive'/></autoscaling>";
	static const char none[] = "<autoscaling enabled='true'><cpu min='1' max='2'/>"
				   "<memory min='1Gi' max='2Gi' method='virtio-mem'/>"
				   "<policy shrink='quota'/></autoscaling>";
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	(void)state;
	if (hp_meta_parse(xml, &m, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(m.metrics, "http://10.0.3.9:9100");
	assert_string_equal(m.metrics_lfc, "http://10.0.3.9:9499/lfc");
	assert_int_equal(m.policy_cpu, HP_POLICY_CPU_NEON);
	assert_int_equal(m.policy_shrink, HP_POLICY_SHRINK_UNPLUG);
	if (hp_meta_parse(only_endpoint, &m, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(m.metrics, "http://[::1]:9100/metrics");
	assert_string_equal(m.metrics_lfc, "");
	assert_int_equal(m.policy_cpu, HP_POLICY_CPU_REACTIVE);
	assert_int_equal(m.policy_shrink, HP_POLICY_SHRINK_HOST);
	if (hp_meta_parse(none, &m, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(m.metrics, "");
	assert_int_equal(m.policy_cpu, HP_POLICY_CPU_HOST);
	assert_int_equal(m.policy_shrink, HP_POLICY_SHRINK_QUOTA);
}

/* <vmact:runner>: the listen address kept as given; a shrink policy may
 * stay (it is the hardware side's), and so may the pod. */
static void meta_runner(void **state)
{
	static const char v4[] = "<autoscaling enabled='true'><cpu min='1' max='4'/>"
				 "<memory min='1Gi' max='2Gi' method='virtio-mem'/>"
				 "<runner listen='10.0.3.1:25183'/><policy shrink='unplug'/>"
				 "<pod namespace='default' name='db-1'/></autoscaling>";
	static const char v6[] = "<autoscaling enabled='true'><cpu min='1' max='4'/>"
				 "<memory min='1Gi' max='2Gi' method='virtio-mem'/>"
				 "<runner listen='[::1]:25183'/></autoscaling>";
	static const char none[] =
		"<autoscaling enabled='true'><cpu min='1' max='4'/>"
		"<memory min='1Gi' max='2Gi' method='virtio-mem'/></autoscaling>";
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	struct vmact_err err = { 0 };

	(void)state;
	if (hp_meta_parse(v4, &m, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(m.runner_listen, "10.0.3.1:25183");
	assert_int_equal(m.policy_shrink, HP_POLICY_SHRINK_UNPLUG);
	if (hp_meta_parse(v6, &m, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(m.runner_listen, "[::1]:25183");
	if (hp_meta_parse(none, &m, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(m.runner_listen, "");
}

struct bad_case {
	const char *xml;
	const char *want; /* substring of the message */
};

#define WRAP(body) "<vmact:autoscaling " NS " enabled='true'>" body "</vmact:autoscaling>"
#define CPU        "<vmact:cpu min='1' max='2'/>"
#define MEM        "<vmact:memory min='1Gi' max='2Gi' method='virtio-mem'/>"

static const struct bad_case bad[] = {
	{ "<vmact:autoscaling " NS " enabled='true'>", "not well-formed" },
	{ "<autoscaling xmlns='urn:other' enabled='true'/>", "namespace " HP_NS_URI },
	{ "<vmact:autoscaling " NS ">" CPU MEM "</vmact:autoscaling>",
	  "<vmact:autoscaling>: missing attribute 'enabled'" },
	{ "<vmact:autoscaling " NS " enabled='yes'>" CPU MEM "</vmact:autoscaling>",
	  "attribute 'enabled': 'yes' is not true or false" },
	{ WRAP(MEM), "<vmact:autoscaling>: missing element <vmact:cpu>" },
	{ WRAP(CPU), "missing element <vmact:memory>" },
	{ WRAP(CPU MEM "<vmact:cpus/>"), "unknown element <vmact:cpus>" },
	{ WRAP(CPU CPU MEM), "<vmact:cpu>: duplicate element" },
	{ WRAP(CPU MEM "<vmact:migration/>"), "<vmact:migration>: missing attribute 'enabled'" },
	{ WRAP(CPU MEM "<vmact:migration enabled='on'/>"),
	  "<vmact:migration>: attribute 'enabled': 'on' is not true or false" },
	{ WRAP(CPU MEM "<vmact:migration enabled='true' live='true'/>"),
	  "<vmact:migration>: unknown attribute 'live'" },
	{ WRAP(CPU MEM "<vmact:migration enabled='true'/><vmact:migration enabled='false'/>"),
	  "<vmact:migration>: duplicate element" },
	{ WRAP("<vmact:cpu min='1' max='2' mx='3'/>" MEM), "<vmact:cpu>: unknown attribute 'mx'" },
	{ WRAP("<vmact:cpu min='3' max='2'/>" MEM), "<vmact:cpu>: min 3000 m above max 2000 m" },
	{ WRAP("<vmact:cpu min='1'/>" MEM), "<vmact:cpu>: missing attribute 'max'" },
	{ WRAP("<vmact:cpu min='lots' max='2'/>" MEM), "<vmact:cpu> attribute 'min'" },
	{ WRAP(CPU "<vmact:memory min='1Gi' max='-2Gi' method='dimm'/>"),
	  "<vmact:memory> attribute 'max'" },
	{ WRAP(CPU "<vmact:memory min='0' max='2Gi' method='dimm'/>"),
	  "<vmact:memory>: attribute 'min' must be non-zero" },
	{ WRAP(CPU "<vmact:memory min='1Gi' max='2Gi' method='balloon'/>"),
	  "<vmact:memory>: attribute 'method': 'balloon' is not virtio-mem or dimm" },
	{ WRAP(CPU "<vmact:memory min='1Gi' max='2Gi'/>"),
	  "<vmact:memory>: missing attribute 'method'" },
	{ WRAP(CPU MEM "<vmact:compute-unit cpu='250m'/>"),
	  "<vmact:compute-unit>: missing attribute 'memory'" },
	{ WRAP(CPU MEM "<vmact:scaling loadAverageFractionTarget='2.5'/>"),
	  "<vmact:scaling>: attribute 'loadAverageFractionTarget': 2.5 not in [0, 2)" },
	{ WRAP(CPU MEM "<vmact:scaling memoryUsageFractionTarget='abc'/>"),
	  "'memoryUsageFractionTarget': 'abc' is not a number" },
	{ WRAP(CPU MEM "<vmact:scaling enableLFCMetrics='1'/>"),
	  "<vmact:scaling>: attribute 'enableLFCMetrics': '1' is not true or false" },
	{ WRAP(CPU MEM "<vmact:monitor endpoint='10.0.0.1:80'/>"),
	  "<vmact:monitor>: attribute 'endpoint'" },
	/* TLS is refused here, not only later by the runner. */
	{ WRAP(CPU MEM "<vmact:monitor endpoint='wss://10.0.0.1:443/monitor'/>"),
	  "<vmact:monitor>: attribute 'endpoint': 'wss://10.0.0.1:443/monitor': TLS (wss://) is not "
	  "supported; use ws://, http:// or unix:" },
	{ WRAP(CPU MEM "<vmact:monitor endpoint='ws://10.0.0.1:0/monitor'/>"),
	  "<vmact:monitor>: attribute 'endpoint': 'ws://10.0.0.1:0/monitor': the port must be "
	  "1-65535" },
	{ WRAP(CPU MEM "<vmact:monitor endpoint=''/>"),
	  "<vmact:monitor>: attribute 'endpoint' is empty" },
	{ WRAP(CPU MEM "<vmact:monitor endpoint='unix:/run/m.sock'/>"
		       "<vmact:informant endpoint='http://127.0.0.1:10301'/>"),
	  "<vmact:autoscaling>: <vmact:monitor> and <vmact:informant> are mutually exclusive" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://127.0.0.1:10301'/>"
		       "<vmact:monitor endpoint='ws://127.0.0.1:10301/monitor'/>"),
	  "<vmact:monitor> and <vmact:informant> are mutually exclusive" },
	{ WRAP(CPU MEM "<vmact:informant/>"), "<vmact:informant>: missing attribute 'endpoint'" },
	{ WRAP(CPU MEM "<vmact:metrics lfc='http://127.0.0.1:9499'/>"),
	  "<vmact:metrics>: missing attribute 'endpoint'" },
	{ WRAP(CPU MEM "<vmact:metrics endpoint='http://127.0.0.1'/>"),
	  "<vmact:metrics>: attribute 'endpoint': 'http://127.0.0.1'" },
	{ WRAP(CPU MEM "<vmact:metrics endpoint='ws://127.0.0.1:9100'/>"),
	  "<vmact:metrics>: attribute 'endpoint': 'ws://127.0.0.1:9100'" },
	{ WRAP(CPU MEM "<vmact:metrics endpoint='http://127.0.0.1:9100' lfc='9499'/>"),
	  "<vmact:metrics>: attribute 'lfc': '9499'" },
	{ WRAP(CPU MEM "<vmact:metrics endpoint='http://h:9100' port='1'/>"),
	  "<vmact:metrics>: unknown attribute 'port'" },
	{ WRAP(CPU MEM
	       "<vmact:metrics endpoint='http://h:9100'/><vmact:metrics endpoint='http://h:9100'/>"),
	  "<vmact:metrics>: duplicate element" },
	{ WRAP(CPU MEM "<vmact:policy cpu='fast'/>"),
	  "<vmact:policy>: attribute 'cpu': 'fast' is not reactive or neon" },
	{ WRAP(CPU MEM "<vmact:policy shrink='unplugged'/>"),
	  "<vmact:policy>: attribute 'shrink': 'unplugged' is not quota or unplug" },
	{ WRAP(CPU MEM "<vmact:policy cpu=''/>"), "<vmact:policy>: attribute 'cpu' is empty" },
	{ WRAP(CPU MEM "<vmact:policy memory='neon'/>"),
	  "<vmact:policy>: unknown attribute 'memory'" },
	{ WRAP(CPU MEM "<vmact:informant endpoint=''/>"),
	  "<vmact:informant>: attribute 'endpoint' is empty" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:1' port='2'/>"),
	  "<vmact:informant>: unknown attribute 'port'" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='ws://127.0.0.1:10301'/>"),
	  "<vmact:informant>: attribute 'endpoint': 'ws://127.0.0.1:10301' is not an "
	  "http://HOST:PORT address" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='https://127.0.0.1:10301'/>"),
	  "is not an http://HOST:PORT address" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://127.0.0.1'/>"),
	  "<vmact:informant>: attribute 'endpoint': 'http://127.0.0.1': expected http://HOST:PORT" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://:10301'/>"),
	  "expected http://HOST:PORT" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://::1:10301'/>"),
	  "expected http://HOST:PORT" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://user@h:10301'/>"),
	  "expected http://HOST:PORT" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h/x:10301'/>"),
	  "expected http://HOST:PORT" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:10301/'/>"),
	  "<vmact:informant>: attribute 'endpoint': 'http://h:10301/': the port must be 1-65535 "
	  "with nothing after it" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:0'/>"), "the port must be 1-65535" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:65536'/>"),
	  "the port must be 1-65535" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:99999999999999999999'/>"),
	  "the port must be 1-65535" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:-1'/>"), "the port must be 1-65535" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://[]:80'/>"), "expected http://HOST:PORT" },
	{ WRAP(CPU MEM
	       "<vmact:informant endpoint='http://h:1'/><vmact:informant endpoint='http://h:2'/>"),
	  "<vmact:informant>: duplicate element" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://h:1'>x</vmact:informant>"),
	  "<vmact:informant>: must be empty" },
	{ WRAP(CPU MEM "<vmact:pod name='x'/>"), "<vmact:pod>: missing attribute 'namespace'" },
	{ WRAP(CPU MEM "<vmact:runner/>"), "<vmact:runner>: missing attribute 'listen'" },
	{ WRAP(CPU MEM "<vmact:runner listen=''/>"),
	  "<vmact:runner>: attribute 'listen' is empty" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:25183' port='1'/>"),
	  "<vmact:runner>: unknown attribute 'port'" },
	{ WRAP(CPU MEM "<vmact:runner listen='localhost:25183'/>"),
	  "<vmact:runner>: attribute 'listen': 'localhost:25183'" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1'/>"),
	  "<vmact:runner>: attribute 'listen': '127.0.0.1'" },
	{ WRAP(CPU MEM "<vmact:runner listen='unix:/run/r.sock'/>"),
	  "<vmact:runner>: attribute 'listen': 'unix:/run/r.sock'" },
	{ WRAP(CPU MEM "<vmact:runner listen='http://127.0.0.1:25183'/>"),
	  "<vmact:runner>: attribute 'listen'" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:0'/>"),
	  "<vmact:runner>: attribute 'listen': '127.0.0.1:0' needs a port other than 0" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:65536'/>"),
	  "<vmact:runner>: attribute 'listen': '127.0.0.1:65536'" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:1'/><vmact:runner listen='127.0.0.1:2'/>"),
	  "<vmact:runner>: duplicate element" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:25183'/>"
		       "<vmact:monitor endpoint='ws://127.0.0.1:10301/monitor'/>"),
	  "<vmact:autoscaling>: <vmact:runner> and <vmact:monitor> are mutually exclusive" },
	{ WRAP(CPU MEM "<vmact:informant endpoint='http://127.0.0.1:10301'/>"
		       "<vmact:runner listen='127.0.0.1:25183'/>"),
	  "<vmact:runner> and <vmact:informant> are mutually exclusive" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:25183'/>"
		       "<vmact:metrics endpoint='http://h:9100'/>"),
	  "<vmact:runner> and <vmact:metrics> are mutually exclusive" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:25183'/>"
		       "<vmact:scaling loadAverageFractionTarget='0.5'/>"),
	  "<vmact:runner> and <vmact:scaling> are mutually exclusive" },
	{ WRAP(CPU MEM "<vmact:runner listen='127.0.0.1:25183'/><vmact:policy cpu='neon'/>"),
	  "<vmact:runner> and <vmact:policy> attribute 'cpu' are mutually exclusive" },
	{ WRAP(CPU MEM "<other xmlns='urn:x'/>"), "child <other> is not in namespace" },
	{ WRAP(CPU MEM "text"), "<vmact:autoscaling>: unexpected text" },
	{ WRAP("<vmact:cpu min='1' max='2'>4</vmact:cpu>" MEM), "<vmact:cpu>: must be empty" },
};

static void meta_errors_name_the_element(void **state)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
		struct vmact_err err = { 0 };
		int r = hp_meta_parse(bad[i].xml, &m, &err);

		if (r >= 0 || !strstr(err.msg, bad[i].want))
			fail_msg("case %zu: r=%d msg '%s', want '%s'", i, r, err.msg, bad[i].want);
		assert_true(r == -EINVAL || r == -ERANGE || r == -ENAMETOOLONG);
	}
}

static const char live[] =
	"<domain type='qemu' id='7'>"
	"<name>vm1</name><uuid>0b5e4f7c-5a36-4b59-8f0e-27d7c2b0b1a1</uuid>"
	"<maxMemory slots='4' unit='KiB'>4194304</maxMemory>"
	"<memory unit='KiB'>1835008</memory>"
	"<vcpu placement='static' current='2'>4</vcpu>"
	"<vcpus><vcpu id='0' enabled='yes' hotpluggable='no' order='1'/>"
	"<vcpu id='1' enabled='yes' hotpluggable='yes' order='2'/>"
	"<vcpu id='2' enabled='no' hotpluggable='yes'/>"
	"<vcpu id='3' enabled='no' hotpluggable='yes'/></vcpus>"
	"<cpu mode='custom'><model>qemu64</model><numa>"
	"<cell id='0' cpus='0-3' memory='524288' unit='KiB'/></numa></cpu>"
	"<devices>"
	"<memory model='virtio-mem'><target><size unit='KiB'>1048576</size><node>0</node>"
	"<block unit='KiB'>2048</block><requested unit='KiB'>262144</requested>"
	"<current unit='KiB'>131072</current></target><alias name='virtiomem0'/></memory>"
	"<memory model='dimm'><target><size unit='MiB'>256</size><node>0</node></target>"
	"<alias name='dimm0'/><address type='dimm' slot='0' base='0x140000000'/></memory>"
	"<memory model='nvdimm'><target><size unit='KiB'>1024</size></target></memory>"
	"</devices></domain>";

static void state_live_xml(void **state)
{
	struct hp_state st;
	struct vmact_err err = { 0 };
	const struct hp_memdev *vm, *dimm;

	assert_int_equal(hp_state_parse(live, &st, &err), 0);
	assert_string_equal(st.name, "vm1");
	assert_int_equal(st.id, 7);
	assert_int_equal(st.vcpus_max, 4);
	assert_int_equal(st.vcpus_current, 2);
	assert_int_equal(st.vcpus_hotpluggable, 3);
	assert_int_equal(st.vcpus_enabled_mask, 0x3);
	assert_int_equal(st.qemu_vcpus, -1);
	assert_int_equal(hp_state_vcpus(&st), 2);
	assert_false(st.vcpus_refused); /* a parse only: the reads decide */
	assert_int_equal(st.base_kib, 524288);
	assert_int_equal(st.max_memory_kib, 4194304);
	assert_int_equal(st.slots, 4);
	assert_int_equal(st.n_memdevs, 2); /* nvdimm is not ours */
	vm = hp_state_memdev(&st, NULL, HP_MEM_VIRTIO_MEM);
	assert_non_null(vm);
	assert_string_equal(vm->alias, "virtiomem0");
	assert_int_equal(vm->block_kib, 2048);
	assert_int_equal(vm->requested_kib, 262144);
	assert_int_equal(vm->current_kib, 131072);
	dimm = hp_state_memdev(&st, "dimm0", HP_MEM_DIMM);
	assert_non_null(dimm);
	assert_int_equal(dimm->size_kib, 262144);
	assert_int_equal(dimm->slot, 0);
	assert_int_equal(hp_state_dimms(&st), 1);
	assert_int_equal(hp_state_mem_kib(&st), 524288 + 262144 + 131072);
	st.qemu_vcpus = 1;
	assert_int_equal(hp_state_vcpus(&st), 1);
}

/* The one rule for refusing vCPU changes (hotplug.h), as every read
 * applies it to the state it read. */
static void vcpus_refusal_rule(void **state)
{
	struct hp_state st;
	struct vmact_err err = { 0 };

	assert_int_equal(hp_state_parse(live, &st, &err), 0);
	snprintf(st.uuid, sizeof(st.uuid), "%s", "7e3c7f3e-0000-4000-8000-000000000001");

	/* QEMU unknown, or agreeing with libvirt: allowed. */
	hp_vcpus_refusal_apply(&st);
	assert_false(st.vcpus_refused);
	assert_int_equal(st.vcpus_refusal, HP_VCPUS_ALLOWED);
	st.qemu_vcpus = 2;
	hp_vcpus_refusal_apply(&st);
	assert_false(st.vcpus_refused);

	/* They disagree: refused... */
	st.qemu_vcpus = 1;
	hp_vcpus_refusal_apply(&st);
	assert_true(st.vcpus_refused);
	assert_int_equal(st.vcpus_refusal, HP_VCPUS_DESYNC);

	/* ...and still once libvirt's count is right again (a libvirtd
	 * restart), for that domain instance only. */
	st.vcpus_current = 1;
	hp_vcpus_refusal_apply(&st);
	assert_true(st.vcpus_refused);
	assert_int_equal(st.vcpus_refusal, HP_VCPUS_LOST_UNPLUG);
	st.id = 8; /* the VM restarted: a new libvirt id */
	hp_vcpus_refusal_apply(&st);
	assert_false(st.vcpus_refused);

	/* An unplug recorded lost by an operation, counts agreeing. */
	snprintf(st.uuid, sizeof(st.uuid), "%s", "7e3c7f3e-0000-4000-8000-000000000002");
	hp_vcpus_refusal_apply(&st);
	assert_false(st.vcpus_refused);
	hp_vcpus_refuse(st.uuid, st.id);
	hp_vcpus_refusal_apply(&st);
	assert_true(st.vcpus_refused);
	assert_int_equal(st.vcpus_refusal, HP_VCPUS_LOST_UNPLUG);
}

static void state_bad_xml(void **state)
{
	static const struct bad_case cases[] = {
		{ "<domain>", "not well-formed" },
		{ "<network/>", "root is not <domain>" },
		{ "<domain><name>x</name></domain>", "missing <vcpu>" },
		{ "<domain><vcpu current='x'>4</vcpu></domain>", "<vcpu>: bad number 'x'" },
		{ "<domain><vcpu>4</vcpu><memory unit='parsecs'>1</memory></domain>",
		  "<memory>: unknown unit 'parsecs'" },
		{ "<domain><vcpu>4</vcpu><devices><memory model='dimm'><target/></memory>"
		  "</devices></domain>",
		  "<memory model='dimm'>: missing <target><size>" },
		{ "<domain><vcpu>4</vcpu><devices><memory model='virtio-mem'><target>"
		  "<size>1024</size><requested>1x</requested></target></memory></devices>"
		  "</domain>",
		  "<memory/target/requested>: not a number: '1x'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hp_state st;
		struct vmact_err err = { 0 };
		int r = hp_state_parse(cases[i].xml, &st, &err);

		if (r >= 0 || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu: r=%d msg '%s', want '%s'", i, r, err.msg,
				 cases[i].want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(meta_full),
		cmocka_unit_test(meta_texts_owned),
		cmocka_unit_test(meta_migration),
		cmocka_unit_test(meta_minimal_other_prefix),
		cmocka_unit_test(meta_as_libvirt_returns_it),
		cmocka_unit_test(meta_informant),
		cmocka_unit_test(meta_metrics_policy),
		cmocka_unit_test(meta_runner),
		cmocka_unit_test(meta_errors_name_the_element),
		cmocka_unit_test(state_live_xml),
		cmocka_unit_test(state_bad_xml),
		cmocka_unit_test(vcpus_refusal_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
