/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's API codec (shared/group-api.c): every type encoded and
 * decoded again to the same values, the documents byte for byte as
 * vmact-groupd has always written them (doc/cluster-api.md), and broken
 * answers (wrong types, missing fields, huge strings, not an object)
 * refused with the field named. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "shared/group-api.h"

/* The document written compactly; it is gone. */
static char *dump(json_t *doc)
{
	char *text;

	assert_non_null(doc);
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	assert_non_null(text);
	return text;
}

/* The document encoded, written and read back, as a peer gets it. */
static json_t *wire(json_t *doc)
{
	char *text = dump(doc);
	json_t *back = json_loads(text, 0, NULL);

	free(text);
	assert_non_null(back);
	return back;
}

static json_t *parse(const char *text)
{
	json_t *doc = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	assert_non_null(doc);
	return doc;
}

/* ---- round trips ---- */

static const char *hosts[] = { "h1", "h2" };
static struct vmact_gapi_label labels[] = { { "zone", "b" }, { "node.kubernetes.io/x", "tcg" } };
static struct vmact_gapi_taint taints[] = { { "dedicated", "vmact", "NoSchedule" },
					    { "k", "", "NoExecute" } };

static struct vmact_gapi_group sample_group(void)
{
	return (struct vmact_gapi_group){
		.id = "workers",
		.min = 1,
		.max = 10,
		.target = 2,
		.in_service = 1,
		.hosts = hosts,
		.nhosts = 2,
		.labels = labels,
		.nlabels = 2,
		.taints = taints,
		.ntaints = 2,
		.tmpl = { .vcpus = 1,
			  .max_vcpus = 4,
			  .memory_bytes = 536870912,
			  .max_memory_bytes = 2147483648,
			  .ephemeral_bytes = 10737418240,
			  .pods = 110,
			  .arch = "amd64",
			  .os = "linux" },
		.opts = { .set = VMACT_GAPI_OPT_UNNEEDED | VMACT_GAPI_OPT_PROVISION |
				 VMACT_GAPI_OPT_UTIL | VMACT_GAPI_OPT_ZERO_OR_MAX,
			  .unneeded_s = 600,
			  .provision_s = 420.5,
			  .util = 0.5,
			  .zero_or_max = true },
		.pool = { { 1, 1, 0 }, { 1, 0, 1 }, { 0, 0, 0 } },
		.scheduler_name = "default",
	};
}

static void assert_group_equal(const struct vmact_gapi_group *a, const struct vmact_gapi_group *b)
{
	assert_string_equal(a->id, b->id);
	assert_int_equal(a->min, b->min);
	assert_int_equal(a->max, b->max);
	assert_int_equal(a->target, b->target);
	assert_int_equal(a->in_service, b->in_service);
	assert_int_equal(a->nhosts, b->nhosts);
	for (size_t i = 0; i < a->nhosts; i++)
		assert_string_equal(a->hosts[i], b->hosts[i]);
	assert_int_equal(a->nlabels, b->nlabels);
	for (size_t i = 0; i < a->nlabels; i++) {
		assert_string_equal(a->labels[i].key, b->labels[i].key);
		assert_string_equal(a->labels[i].value, b->labels[i].value);
	}
	assert_int_equal(a->ntaints, b->ntaints);
	for (size_t i = 0; i < a->ntaints; i++) {
		assert_string_equal(a->taints[i].key, b->taints[i].key);
		assert_string_equal(a->taints[i].value, b->taints[i].value);
		assert_string_equal(a->taints[i].effect, b->taints[i].effect);
	}
	assert_int_equal(a->tmpl.vcpus, b->tmpl.vcpus);
	assert_int_equal(a->tmpl.max_vcpus, b->tmpl.max_vcpus);
	assert_true(a->tmpl.memory_bytes == b->tmpl.memory_bytes);
	assert_true(a->tmpl.max_memory_bytes == b->tmpl.max_memory_bytes);
	assert_true(a->tmpl.ephemeral_bytes == b->tmpl.ephemeral_bytes);
	assert_int_equal(a->tmpl.pods, b->tmpl.pods);
	assert_string_equal(a->tmpl.arch, b->tmpl.arch);
	assert_string_equal(a->tmpl.os, b->tmpl.os);
	assert_true(a->tmpl.capacity_milli_cpu == b->tmpl.capacity_milli_cpu);
	assert_true(a->tmpl.capacity_memory_bytes == b->tmpl.capacity_memory_bytes);
	assert_true(a->tmpl.capacity_pods == b->tmpl.capacity_pods);
	assert_true(a->tmpl.alloc_milli_cpu == b->tmpl.alloc_milli_cpu);
	assert_true(a->tmpl.alloc_memory_bytes == b->tmpl.alloc_memory_bytes);
	assert_true(a->tmpl.alloc_ephemeral_bytes == b->tmpl.alloc_ephemeral_bytes);
	assert_true(a->tmpl.alloc_pods == b->tmpl.alloc_pods);
	if (a->tmpl.reported_by || b->tmpl.reported_by) {
		assert_non_null(a->tmpl.reported_by);
		assert_non_null(b->tmpl.reported_by);
		assert_string_equal(a->tmpl.reported_by, b->tmpl.reported_by);
	}
	assert_int_equal(a->opts.set, b->opts.set);
	assert_true(a->opts.util == b->opts.util);
	assert_true(a->opts.gpu_util == b->opts.gpu_util);
	assert_true(a->opts.unneeded_s == b->opts.unneeded_s);
	assert_true(a->opts.unready_s == b->opts.unready_s);
	assert_true(a->opts.provision_s == b->opts.provision_s);
	assert_true(a->opts.startup_s == b->opts.startup_s);
	assert_int_equal(a->opts.zero_or_max, b->opts.zero_or_max);
	assert_int_equal(a->opts.ignore_ds, b->opts.ignore_ds);
	assert_int_equal(a->opts.non_atomic, b->opts.non_atomic);
	assert_memory_equal(a->pool, b->pool, sizeof(a->pool));
	assert_string_equal(a->scheduler_name, b->scheduler_name);
}

/* What vmact-groupd wrote before the codec existed (cluster/daemon/api.c's
 * json_pack formats), for these values. */
static const char group_text[] =
	"{\"id\":\"workers\",\"min\":1,\"max\":10,\"target\":2,\"in_service\":1,"
	"\"hosts\":[\"h1\",\"h2\"],\"labels\":{\"zone\":\"b\",\"node.kubernetes.io/x\":\"tcg\"},"
	"\"taints\":[{\"key\":\"dedicated\",\"value\":\"vmact\",\"effect\":\"NoSchedule\"},"
	"{\"key\":\"k\",\"value\":\"\",\"effect\":\"NoExecute\"}],"
	"\"template\":{\"vcpus\":1,\"max_vcpus\":4,\"memory_bytes\":536870912,"
	"\"max_memory_bytes\":2147483648,\"ephemeral_storage_bytes\":10737418240,\"pods\":110,"
	"\"arch\":\"amd64\",\"os\":\"linux\"},"
	"\"options\":{\"scale_down_utilization_threshold\":0.5,\"scale_down_unneeded_time_s\":600,"
	"\"max_node_provision_time_s\":420.5,\"zero_or_max_node_scaling\":true},"
	"\"pool\":{\"running\":{\"size\":1,\"ready\":1,\"starting\":0},"
	"\"paused\":{\"size\":1,\"ready\":0,\"starting\":1},"
	"\"saved\":{\"size\":0,\"ready\":0,\"starting\":0}},\"scheduler_name\":\"default\"}";

static void test_group(void **state)
{
	struct vmact_gapi_group g = sample_group(), back;
	struct vmact_gapi_groups s;
	struct vmact_gapi_group two[2];
	struct vmact_err err = { 0 };
	char *text = dump(vmact_gapi_group_encode(&g));
	json_t *doc;

	(void)state;
	assert_string_equal(text, group_text);
	free(text);
	doc = wire(vmact_gapi_group_encode(&g));
	assert_int_equal(vmact_gapi_group_decode(doc, &back, &err), 0);
	assert_group_equal(&g, &back);
	vmact_gapi_group_clear(&back);
	json_decref(doc);

	/* a list of them, and a group with no options, no pool, but what a
	 * registered Node's kubelet reported (written only when said) */
	two[0] = g;
	two[1] = (struct vmact_gapi_group){
		.id = "b",
		.tmpl = { .vcpus = 2,
			  .max_vcpus = 2,
			  .memory_bytes = 1073741824,
			  .max_memory_bytes = 1073741824,
			  .pods = 1,
			  .arch = "arm64",
			  .os = "linux",
			  .capacity_milli_cpu = 2000,
			  .capacity_memory_bytes = 1019244544,
			  .capacity_pods = 1,
			  .alloc_milli_cpu = 1900,
			  .alloc_memory_bytes = 914386944,
			  .alloc_ephemeral_bytes = 7,
			  .alloc_pods = 1,
			  .reported_by = "b-0" },
		.scheduler_name = "",
	};
	text = dump(vmact_gapi_group_encode(&two[1]));
	assert_non_null(strstr(text, "\"capacity_memory_bytes\":1019244544,"
				     "\"capacity_pods\":1,\"allocatable_milli_cpu\":1900,"));
	assert_non_null(strstr(text, "\"reported_by\":\"b-0\"}"));
	free(text);
	doc = wire(vmact_gapi_groups_encode(two, 2));
	assert_int_equal(vmact_gapi_groups_decode(doc, &s, &err), 0);
	json_decref(doc); /* the list keeps its own reference */
	assert_int_equal(s.n, 2);
	assert_group_equal(&two[0], &s.g[0]);
	assert_group_equal(&two[1], &s.g[1]);
	vmact_gapi_groups_clear(&s);

	/* none */
	doc = wire(vmact_gapi_groups_encode(NULL, 0));
	assert_int_equal(vmact_gapi_groups_decode(doc, &s, &err), 0);
	assert_int_equal(s.n, 0);
	vmact_gapi_groups_clear(&s);
	json_decref(doc);
}

/* What a group says only partly (fake-groupd.js, an older vmact-groupd)
 * takes the defaults. */
static void test_group_defaults(void **state)
{
	struct vmact_gapi_group g;
	struct vmact_err err = { 0 };
	json_t *doc = parse("{\"id\":\"x\",\"min\":0,\"max\":2,\"target\":0,"
			    "\"template\":{\"vcpus\":2,\"memory_bytes\":4096},"
			    "\"pool\":{\"running\":{\"size\":3}}}");

	(void)state;
	assert_int_equal(vmact_gapi_group_decode(doc, &g, &err), 0);
	assert_int_equal(g.tmpl.max_vcpus, 2);
	assert_true(g.tmpl.max_memory_bytes == 4096);
	assert_int_equal(g.tmpl.pods, 110);
	assert_string_equal(g.tmpl.arch, "amd64");
	assert_string_equal(g.tmpl.os, "linux");
	/* no kubelet's report: the boot shape */
	assert_true(g.tmpl.capacity_memory_bytes == 0 && g.tmpl.alloc_memory_bytes == 0 &&
		    g.tmpl.alloc_ephemeral_bytes == 0 && g.tmpl.capacity_milli_cpu == 0);
	assert_null(g.tmpl.reported_by);
	assert_int_equal(g.opts.set, 0);
	assert_int_equal(g.pool[VMACT_GAPI_TIER_RUNNING].size, 3);
	assert_int_equal(g.nhosts, 0);
	assert_string_equal(g.scheduler_name, "");
	vmact_gapi_group_clear(&g);
	json_decref(doc);
}

static void test_nodes(void **state)
{
	struct vmact_gapi_node v[] = {
		{ .provider_id = "libvirt://h1/4f0c",
		  .name = "vmact-workers-4f0c",
		  .host = "h1",
		  .state = VMACT_GAPI_NODE_CREATING,
		  .vm_state = "pending",
		  .tier = "cold",
		  .has_error = true,
		  .error = { "out-of-resources", "HOST_CAPACITY", "0/2 hosts fit", 1732570000.5 } },
		{ .provider_id = "libvirt://h2/77",
		  .name = "n2",
		  .host = "h2",
		  .state = VMACT_GAPI_NODE_DELETING,
		  .vm_state = "deleting",
		  .tier = "paused" },
	};
	struct vmact_gapi_nodes s;
	struct vmact_err err = { 0 };
	char *text = dump(vmact_gapi_nodes_encode(v, 2));
	json_t *doc;

	(void)state;
	assert_string_equal(text, "{\"nodes\":[{\"provider_id\":\"libvirt://h1/4f0c\","
				  "\"name\":\"vmact-workers-4f0c\",\"host\":\"h1\","
				  "\"state\":\"creating\",\"vm_state\":\"pending\","
				  "\"tier\":\"cold\",\"error\":{\"class\":\"out-of-resources\","
				  "\"code\":\"HOST_CAPACITY\",\"message\":\"0/2 hosts fit\","
				  "\"at\":1732570000.5}},{\"provider_id\":\"libvirt://h2/77\","
				  "\"name\":\"n2\",\"host\":\"h2\",\"state\":\"deleting\","
				  "\"vm_state\":\"deleting\",\"tier\":\"paused\"}]}");
	free(text);
	doc = wire(vmact_gapi_nodes_encode(v, 2));
	assert_int_equal(vmact_gapi_nodes_decode(doc, &s, &err), 0);
	json_decref(doc);
	assert_int_equal(s.n, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(s.v[i].provider_id, v[i].provider_id);
		assert_string_equal(s.v[i].name, v[i].name);
		assert_string_equal(s.v[i].host, v[i].host);
		assert_int_equal(s.v[i].state, v[i].state);
		assert_string_equal(s.v[i].vm_state, v[i].vm_state);
		assert_string_equal(s.v[i].tier, v[i].tier);
		assert_int_equal(s.v[i].has_error, v[i].has_error);
	}
	assert_string_equal(s.v[0].error.cls, "out-of-resources");
	assert_string_equal(s.v[0].error.code, "HOST_CAPACITY");
	assert_string_equal(s.v[0].error.message, "0/2 hosts fit");
	assert_true(s.v[0].error.at == 1732570000.5);
	vmact_gapi_nodes_clear(&s);
}

static void test_vms(void **state)
{
	struct vmact_gapi_vm v[] = {
		{ .provider_id = "libvirt://h2/1",
		  .name = "a",
		  .host = "h2",
		  .group = "workers",
		  .role = "pool",
		  .tier = "paused",
		  .state = "ready",
		  .leased = true,
		  .attempts = 1,
		  .created = 1732570000.25,
		  .booted = 1732570001,
		  .configured = true },
		{ .provider_id = "libvirt://h1/2",
		  .name = "b",
		  .host = "h1",
		  .group = "gone",
		  .role = "member",
		  .tier = "cold",
		  .state = "booting",
		  .busy = true,
		  .attempts = 3,
		  .has_error = true,
		  .error = { "other", "BOOT_TIMEOUT", "not healthy", 5 },
		  .configured = false },
	};
	struct vmact_gapi_vms s;
	struct vmact_err err = { 0 };
	bool ready = true;
	char *text = dump(vmact_gapi_vms_encode(v, 2, &ready));
	json_t *doc;

	(void)state;
	assert_string_equal(
		text,
		"{\"vms\":[{\"provider_id\":\"libvirt://h2/1\",\"name\":\"a\",\"host\":\"h2\","
		"\"group\":\"workers\",\"role\":\"pool\",\"tier\":\"paused\",\"state\":\"ready\","
		"\"leased\":true,\"busy\":false,\"attempts\":1,\"created\":1732570000.25,"
		"\"booted\":1732570001.0,\"requested\":0.0,\"in_service\":0.0},"
		"{\"provider_id\":\"libvirt://h1/2\",\"name\":\"b\",\"host\":\"h1\","
		"\"group\":\"gone\",\"role\":\"member\",\"tier\":\"cold\",\"state\":\"booting\","
		"\"leased\":false,\"busy\":true,\"attempts\":3,\"created\":0.0,\"booted\":0.0,"
		"\"requested\":0.0,\"in_service\":0.0,\"error\":{\"class\":\"other\","
		"\"code\":\"BOOT_TIMEOUT\",\"message\":\"not healthy\",\"at\":5.0},"
		"\"configured\":false}],\"ready\":true}");
	free(text);
	doc = wire(vmact_gapi_vms_encode(v, 2, &ready));
	assert_int_equal(vmact_gapi_vms_decode(doc, &s, &err), 0);
	json_decref(doc);
	assert_int_equal(s.n, 2);
	assert_true(s.has_ready && s.ready);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(s.v[i].provider_id, v[i].provider_id);
		assert_string_equal(s.v[i].name, v[i].name);
		assert_string_equal(s.v[i].host, v[i].host);
		assert_string_equal(s.v[i].group, v[i].group);
		assert_string_equal(s.v[i].role, v[i].role);
		assert_string_equal(s.v[i].tier, v[i].tier);
		assert_string_equal(s.v[i].state, v[i].state);
		assert_int_equal(s.v[i].leased, v[i].leased);
		assert_int_equal(s.v[i].busy, v[i].busy);
		assert_int_equal(s.v[i].attempts, v[i].attempts);
		assert_true(s.v[i].created == v[i].created);
		assert_true(s.v[i].booted == v[i].booted);
		assert_int_equal(s.v[i].has_error, v[i].has_error);
		assert_int_equal(s.v[i].configured, v[i].configured);
	}
	assert_string_equal(s.v[1].error.code, "BOOT_TIMEOUT");
	vmact_gapi_vms_clear(&s);

	/* a group's standby list has no "ready" */
	doc = wire(vmact_gapi_vms_encode(v, 1, NULL));
	assert_null(json_object_get(doc, "ready"));
	assert_int_equal(vmact_gapi_vms_decode(doc, &s, &err), 0);
	assert_false(s.has_ready);
	vmact_gapi_vms_clear(&s);
	json_decref(doc);
}

static void test_hosts(void **state)
{
	struct vmact_gapi_host v[] = {
		{ .name = "h1",
		  .uri = "qemu:///system",
		  .reachable = true,
		  .scanned = true,
		  .libvirt_ok = true,
		  .libvirt_error = "",
		  .arbiter_ok = true,
		  .arbiter_error = "",
		  .vms = 3,
		  .leases = 2,
		  .has_ledger = true,
		  .capacity = { 2000, 25000000000 },
		  .watermark = { 1500, 20000000000 },
		  .reserved = { 1000, 1 << 30 },
		  .pressure = { 0, 0 },
		  .arbiter_pods = 3,
		  .arbiter_leases = 2,
		  .standby = { 1000, 536870912 } },
		{ .name = "h2",
		  .uri = "qemu+ssh://h2/system",
		  .libvirt_error = "connection refused",
		  .arbiter_ok = true,
		  .arbiter_error = "",
		  .standby = { 0, 0 } },
	};
	struct vmact_gapi_hosts s;
	struct vmact_err err = { 0 };
	char *text = dump(vmact_gapi_hosts_encode(v, 2));
	json_t *doc;

	(void)state;
	assert_string_equal(
		text,
		"{\"hosts\":[{\"name\":\"h1\",\"uri\":\"qemu:///system\",\"reachable\":true,"
		"\"scanned\":true,\"libvirt\":{\"ok\":true,\"error\":\"\"},\"arbiter\":{\"ok\":true,"
		"\"error\":\"\"},\"vms\":3,\"leases\":2,\"capacity\":{\"milli_cpu\":2000,"
		"\"memory_bytes\":25000000000},\"watermark\":{\"milli_cpu\":1500,\"memory_bytes\":"
		"20000000000},\"reserved\":{\"milli_cpu\":1000,\"memory_bytes\":1073741824},"
		"\"pressure\":{\"milli_cpu\":0,\"memory_bytes\":0},\"arbiter_pods\":3,"
		"\"arbiter_leases\":2,\"standby\":{\"milli_cpu\":1000,\"memory_bytes\":536870912}},"
		"{\"name\":\"h2\",\"uri\":\"qemu+ssh://h2/system\",\"reachable\":false,"
		"\"scanned\":false,\"libvirt\":{\"ok\":false,\"error\":\"connection refused\"},"
		"\"arbiter\":{\"ok\":true,\"error\":\"\"},\"vms\":0,\"leases\":0,"
		"\"standby\":{\"milli_cpu\":0,\"memory_bytes\":0}}]}");
	free(text);
	doc = wire(vmact_gapi_hosts_encode(v, 2));
	assert_int_equal(vmact_gapi_hosts_decode(doc, &s, &err), 0);
	json_decref(doc);
	assert_int_equal(s.n, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(s.v[i].name, v[i].name);
		assert_string_equal(s.v[i].uri, v[i].uri);
		assert_int_equal(s.v[i].reachable, v[i].reachable);
		assert_int_equal(s.v[i].scanned, v[i].scanned);
		assert_int_equal(s.v[i].libvirt_ok, v[i].libvirt_ok);
		assert_string_equal(s.v[i].libvirt_error, v[i].libvirt_error);
		assert_int_equal(s.v[i].arbiter_ok, v[i].arbiter_ok);
		assert_int_equal(s.v[i].vms, v[i].vms);
		assert_int_equal(s.v[i].leases, v[i].leases);
		assert_int_equal(s.v[i].has_ledger, v[i].has_ledger);
		assert_memory_equal(&s.v[i].capacity, &v[i].capacity, sizeof(v[i].capacity));
		assert_memory_equal(&s.v[i].watermark, &v[i].watermark, sizeof(v[i].watermark));
		assert_memory_equal(&s.v[i].reserved, &v[i].reserved, sizeof(v[i].reserved));
		assert_memory_equal(&s.v[i].pressure, &v[i].pressure, sizeof(v[i].pressure));
		assert_memory_equal(&s.v[i].standby, &v[i].standby, sizeof(v[i].standby));
		assert_true(s.v[i].arbiter_pods == v[i].arbiter_pods);
		assert_true(s.v[i].arbiter_leases == v[i].arbiter_leases);
	}
	vmact_gapi_hosts_clear(&s);
}

static void test_waiting(void **state)
{
	const char *pending[] = { "ManualApproval", "Other" };
	struct vmact_gapi_waiting v[] = {
		{ .uid = "0b6f",
		  .name = "vm1",
		  .group = "g",
		  .host = "h1",
		  .pending = pending,
		  .npending = 2,
		  .waited_s = 1.5,
		  .timeout_s = 0 },
	};
	struct vmact_gapi_waitings s;
	struct vmact_err err = { 0 };
	char *text = dump(vmact_gapi_waitings_encode(v, 1));
	json_t *doc;

	(void)state;
	assert_string_equal(text,
			    "{\"waiting\":[{\"uid\":\"0b6f\",\"name\":\"vm1\",\"group\":\"g\","
			    "\"host\":\"h1\",\"pending\":[\"ManualApproval\",\"Other\"],"
			    "\"waited_s\":1.5,\"timeout_s\":0.0}]}");
	free(text);
	doc = wire(vmact_gapi_waitings_encode(v, 1));
	assert_int_equal(vmact_gapi_waitings_decode(doc, &s, &err), 0);
	json_decref(doc);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.v[0].uid, "0b6f");
	assert_string_equal(s.v[0].name, "vm1");
	assert_string_equal(s.v[0].group, "g");
	assert_string_equal(s.v[0].host, "h1");
	assert_int_equal(s.v[0].npending, 2);
	assert_string_equal(s.v[0].pending[1], "Other");
	assert_true(s.v[0].waited_s == 1.5);
	vmact_gapi_waitings_clear(&s);
}

/* A move and the list of them; the request; its path. */
static void test_migrations(void **state)
{
	struct vmact_gapi_migration v[] = {
		{ .id = 7,
		  .vm = "db-1",
		  .uuid = "0b6f",
		  .from = "a",
		  .to = "b",
		  .reason = "command",
		  .phase = "done",
		  .result = "success",
		  .error = "",
		  .started = 1.5e9,
		  .duration_s = 4.25,
		  .downtime_ms = 106 },
		{ .id = 8,
		  .vm = "db-2",
		  .uuid = "0b70",
		  .from = "a",
		  .to = "b",
		  .reason = "command",
		  .phase = "freezing",
		  .result = "",
		  .error = "",
		  .downtime_ms = -1 },
	};
	struct vmact_gapi_migrations s;
	struct vmact_gapi_migration one;
	struct vmact_gapi_migrate req;
	struct vmact_err err = { 0 };
	json_t *doc;
	char *text;

	(void)state;
	doc = wire(vmact_gapi_migrations_encode(v, 2));
	if (vmact_gapi_migrations_decode(doc, &s, &err) < 0)
		fail_msg("%s", err.msg);
	json_decref(doc);
	assert_int_equal(s.n, 2);
	assert_true(s.v[0].id == 7);
	assert_string_equal(s.v[0].vm, "db-1");
	assert_string_equal(s.v[0].result, "success");
	assert_true(s.v[0].downtime_ms == 106);
	assert_true(s.v[0].duration_s == 4.25);
	assert_string_equal(s.v[1].phase, "freezing");
	assert_true(s.v[1].downtime_ms == -1);
	vmact_gapi_migrations_clear(&s);
	/* Strict: a member missing is named. */
	doc = json_loads("{\"id\":1,\"vm\":\"x\"}", 0, NULL);
	assert_int_equal(vmact_gapi_migration_decode(doc, &one, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "uuid"));
	json_decref(doc);

	/* The request: both members optional, only what is set on the wire. */
	text = dump(vmact_gapi_migrate_encode(&(struct vmact_gapi_migrate){ .to = "b" }));
	assert_string_equal(text, "{\"to\":\"b\"}");
	free(text);
	doc = json_loads("{\"force\":true}", 0, NULL);
	assert_int_equal(vmact_gapi_migrate_decode(doc, &req, &err), 0);
	assert_null(req.to);
	assert_true(req.force);
	json_decref(doc);
	doc = json_loads("{\"to\":3}", 0, NULL);
	err = (struct vmact_err){ 0 };
	assert_true(vmact_gapi_migrate_decode(doc, &req, &err) < 0);
	assert_string_equal(err.msg, "to: not a string");
	json_decref(doc);
	text = vmact_gapi_migrate_path("db 1");
	assert_string_equal(text, "/v1/vms/db%201/migrate");
	free(text);
}

/* The small documents: errors, the changes and their answers. */
static void test_small(void **state)
{
	const char *ids[] = { "libvirt://h/1", "libvirt://h/2" }, **got, *s;
	struct vmact_gapi_error e;
	struct vmact_err err = { 0 };
	enum vmact_gapi_verdict v;
	long long delta;
	int32_t target;
	size_t n;
	char *text;
	json_t *doc;

	(void)state;
	text = dump(vmact_gapi_error_encode("no node group 'x'", VMACT_GAPI_NOT_FOUND));
	assert_string_equal(text, "{\"error\":\"no node group 'x'\",\"reason\":\"not-found\"}");
	free(text);
	doc = parse(VMACT_GAPI_OOM_ERROR);
	assert_int_equal(vmact_gapi_error_decode(doc, &e, &err), 0);
	assert_string_equal(e.message, "out of memory");
	assert_int_equal(vmact_gapi_reason_errno(e.reason, 500), -EIO);
	json_decref(doc);
	assert_int_equal(vmact_gapi_reason_errno("out-of-range", 409), -ERANGE);
	assert_int_equal(vmact_gapi_reason_errno("precondition", 409), -EBUSY);
	assert_int_equal(vmact_gapi_reason_errno("unavailable", 503), -EAGAIN);
	assert_int_equal(vmact_gapi_reason_errno("invalid", 400), -EINVAL);
	assert_int_equal(vmact_gapi_reason_errno(NULL, 404), -ENOENT);
	assert_int_equal(vmact_gapi_reason_errno("newer", 503), -EAGAIN);

	doc = wire(vmact_gapi_delta_encode(-3));
	assert_int_equal(vmact_gapi_delta_decode(doc, &delta, &err), 0);
	assert_int_equal(delta, -3);
	json_decref(doc);

	text = dump(vmact_gapi_delete_nodes_encode(ids, 2));
	assert_string_equal(text, "{\"provider_ids\":[\"libvirt://h/1\",\"libvirt://h/2\"]}");
	free(text);
	doc = wire(vmact_gapi_delete_nodes_encode(ids, 2));
	assert_int_equal(vmact_gapi_delete_nodes_decode(doc, &got, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(got[1], "libvirt://h/2");
	free(got);
	json_decref(doc);

	text = dump(vmact_gapi_target_encode(7));
	assert_string_equal(text, "{\"target\":7}");
	free(text);
	doc = wire(vmact_gapi_target_encode(7));
	assert_int_equal(vmact_gapi_target_decode(doc, &target, &err), 0);
	assert_int_equal(target, 7);
	json_decref(doc);

	doc = wire(vmact_gapi_verdict_encode(VMACT_GAPI_ALLOW, "ManualApproval"));
	assert_int_equal(vmact_gapi_verdict_decode(doc, VMACT_GAPI_ALLOW, &s, &err), 0);
	assert_string_equal(s, "ManualApproval");
	json_decref(doc);
	doc = wire(vmact_gapi_verdict_encode(VMACT_GAPI_REJECT, NULL));
	assert_int_equal(vmact_gapi_verdict_decode(doc, VMACT_GAPI_REJECT, &s, &err), 0);
	assert_null(s);
	json_decref(doc);
	assert_int_equal(vmact_gapi_verdict_decode(NULL, VMACT_GAPI_REJECT, &s, &err), 0);

	text = dump(vmact_gapi_verdict_done_encode("u1", VMACT_GAPI_REJECT));
	assert_string_equal(text, "{\"uid\":\"u1\",\"done\":\"reject\"}");
	free(text);
	doc = wire(vmact_gapi_verdict_done_encode("u1", VMACT_GAPI_REJECT));
	assert_int_equal(vmact_gapi_verdict_done_decode(doc, &s, &v, &err), 0);
	assert_string_equal(s, "u1");
	assert_int_equal(v, VMACT_GAPI_REJECT);
	json_decref(doc);

	doc = wire(vmact_gapi_node_group_encode(""));
	assert_int_equal(vmact_gapi_node_group_decode(doc, &s, &err), 0);
	assert_string_equal(s, "");
	json_decref(doc);
}

static void test_paths(void **state)
{
	static const struct {
		enum vmact_gapi_group_res r;
		const char *path;
	} cases[] = {
		{ VMACT_GAPI_GROUP, "/v1/groups/g-1" },
		{ VMACT_GAPI_NODES, "/v1/groups/g-1/nodes" },
		{ VMACT_GAPI_STANDBY, "/v1/groups/g-1/standby" },
		{ VMACT_GAPI_INCREASE, "/v1/groups/g-1/increase" },
		{ VMACT_GAPI_DELETE_NODES, "/v1/groups/g-1/delete-nodes" },
		{ VMACT_GAPI_DECREASE_TARGET, "/v1/groups/g-1/decrease-target" },
	};
	enum vmact_gapi_group_res r;
	enum vmact_gapi_verdict v;
	char *p;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = vmact_gapi_group_path("g-1", cases[i].r);
		assert_string_equal(p, cases[i].path);
		free(p);
		if (cases[i].r != VMACT_GAPI_GROUP) {
			assert_int_equal(vmact_gapi_group_res_parse(
						 cases[i].path + strlen("/v1/groups/g-1/"), &r),
					 0);
			assert_int_equal(r, cases[i].r);
		}
	}
	assert_int_equal(vmact_gapi_group_res_parse("", &r), -ENOENT);
	assert_int_equal(vmact_gapi_group_res_parse("nodesx", &r), -ENOENT);
	/* a segment and a query escaped */
	p = vmact_gapi_group_path("a/b c", VMACT_GAPI_GROUP);
	assert_string_equal(p, "/v1/groups/a%2Fb%20c");
	free(p);
	p = vmact_gapi_node_group_path("libvirt://h1/4f");
	assert_string_equal(p, "/v1/node-group?provider_id=libvirt%3A%2F%2Fh1%2F4f");
	free(p);
	p = vmact_gapi_waiting_path("u-1", VMACT_GAPI_ALLOW);
	assert_string_equal(p, "/v1/waiting/u-1/allow");
	free(p);
	assert_int_equal(vmact_gapi_verdict_parse("reject", &v), 0);
	assert_int_equal(v, VMACT_GAPI_REJECT);
	assert_int_equal(vmact_gapi_verdict_parse("maybe", &v), -ENOENT);
}

/* ---- broken answers ---- */

enum kind { GROUPS, NODES, VMS, HOSTS, WAITING };

/* text refused, -EPROTO, with a message containing each of what. */
static void refused(enum kind k, const char *text, const char *what)
{
	struct vmact_err err = { 0 };
	json_t *doc = parse(text);
	int r;

	switch (k) {
	case GROUPS: {
		struct vmact_gapi_groups s;

		r = vmact_gapi_groups_decode(doc, &s, &err);
		assert_null(s.g);
		break;
	}
	case NODES: {
		struct vmact_gapi_nodes s;

		r = vmact_gapi_nodes_decode(doc, &s, &err);
		assert_null(s.v);
		break;
	}
	case VMS: {
		struct vmact_gapi_vms s;

		r = vmact_gapi_vms_decode(doc, &s, &err);
		assert_null(s.v);
		break;
	}
	case HOSTS: {
		struct vmact_gapi_hosts s;

		r = vmact_gapi_hosts_decode(doc, &s, &err);
		assert_null(s.v);
		break;
	}
	default: {
		struct vmact_gapi_waitings s;

		r = vmact_gapi_waitings_decode(doc, &s, &err);
		assert_null(s.v);
		break;
	}
	}
	if (r != -EPROTO || !strstr(err.msg, what))
		fail_msg("%s: got %d \"%s\", wanted -EPROTO naming \"%s\"", text, r, err.msg, what);
	/* the document is the caller's still, whole */
	assert_int_equal(doc->refcount, 1);
	json_decref(doc);
}

#define G(x) "{\"groups\":[{\"id\":\"g\",\"min\":0,\"max\":1,\"target\":0," x "}]}"
#define T    "\"template\":{\"vcpus\":1,\"memory_bytes\":1}"

static void test_refusals(void **state)
{
	char *huge = malloc(VMACT_GAPI_TEXT_MAX + 64), *text;

	(void)state;
	/* not an object, no list, a list of something else */
	refused(GROUPS, "[]", "not an object");
	refused(GROUPS, "\"groups\"", "not an object");
	refused(GROUPS, "{}", "groups: missing");
	refused(GROUPS, "{\"groups\":{}}", "groups: not an array");
	refused(GROUPS, "{\"groups\":[1]}", "groups[0]: not an object");
	refused(NODES, "{\"nodes\":[[]]}", "nodes[0]: not an object");
	refused(VMS, "{\"vms\":null}", "vms: missing");
	refused(HOSTS, "7", "not an object");
	refused(WAITING, "{\"waiting\":\"x\"}", "waiting: not an array");
	/* a group's fields missing or of the wrong type */
	refused(GROUPS, "{\"groups\":[{\"min\":0,\"max\":1,\"target\":0," T "}]}",
		"groups[0]: id: missing");
	refused(GROUPS, "{\"groups\":[{\"id\":5,\"min\":0,\"max\":1,\"target\":0," T "}]}",
		"groups[0]: id: not a string");
	refused(GROUPS, G("\"x\":1"), "groups[0]: template: missing");
	refused(GROUPS, G("\"template\":{\"memory_bytes\":1}"), "template: vcpus: missing");
	refused(GROUPS, G("\"template\":{\"vcpus\":\"1\",\"memory_bytes\":1}"),
		"template: vcpus: not an integer");
	refused(GROUPS, G("\"template\":{\"vcpus\":1,\"memory_bytes\":1,\"max_vcpus\":0}"),
		"template: max_vcpus: 0 is outside");
	refused(GROUPS, G(T ",\"labels\":[]"), "labels: not an object");
	refused(GROUPS, G(T ",\"labels\":{\"a\":1}"), "labels.a: not a string");
	refused(GROUPS, G(T ",\"taints\":[{\"key\":\"k\",\"effect\":\"Never\"}]"),
		"taints[0]: effect");
	refused(GROUPS, G(T ",\"hosts\":[\"h\",2]"), "hosts[1]: not a string");
	refused(GROUPS, G(T ",\"in_service\":-1"), "in_service: -1 is outside");
	refused(GROUPS, G(T ",\"options\":{\"zero_or_max_node_scaling\":1}"),
		"options: zero_or_max_node_scaling: not a boolean");
	refused(GROUPS, G(T ",\"pool\":{\"paused\":{\"ready\":true}}"),
		"pool.paused: ready: not an integer");
	refused(GROUPS, G(T ",\"scheduler_name\":[]"), "scheduler_name: not a string");
	refused(GROUPS,
		"{\"groups\":[{\"id\":\"g\",\"min\":0,\"max\":1,\"target\":0," T "},"
		"{\"id\":\"g\",\"min\":0,\"max\":1,\"target\":0," T "}]}",
		"groups[1]: id: \"g\" given twice");
	/* a node's */
	refused(NODES, "{\"nodes\":[{\"state\":\"running\"}]}", "nodes[0]: provider_id: missing");
	refused(NODES, "{\"nodes\":[{\"provider_id\":\"p\",\"state\":\"gone\"}]}",
		"nodes[0]: state: not creating");
	refused(NODES, "{\"nodes\":[{\"provider_id\":\"p\",\"state\":\"running\",\"error\":{}}]}",
		"nodes[0]: error: code: missing");
	refused(NODES,
		"{\"nodes\":[{\"provider_id\":\"p\",\"state\":\"running\","
		"\"error\":{\"code\":\"C\",\"at\":\"now\"}}]}",
		"nodes[0]: error: at: not a number");
	/* a VM's, a host's, a waiting VM's */
	refused(VMS, "{\"vms\":[{\"provider_id\":\"p\"}]}", "vms[0]: name: missing");
	refused(VMS,
		"{\"vms\":[{\"provider_id\":\"p\",\"name\":\"n\",\"host\":\"h\",\"group\":\"g\","
		"\"role\":\"pool\",\"tier\":\"cold\",\"state\":\"ready\",\"leased\":\"yes\"}]}",
		"vms[0]: leased: not a boolean");
	refused(VMS, "{\"vms\":[],\"ready\":1}", "ready: not a boolean");
	refused(HOSTS, "{\"hosts\":[{\"name\":\"h\",\"uri\":\"u\",\"reachable\":true}]}",
		"hosts[0]: libvirt: missing");
	refused(HOSTS,
		"{\"hosts\":[{\"name\":\"h\",\"uri\":\"u\",\"reachable\":true,"
		"\"libvirt\":{\"ok\":true},\"arbiter\":{\"ok\":true},"
		"\"capacity\":{\"milli_cpu\":-1,\"memory_bytes\":0}}]}",
		"hosts[0]: capacity: milli_cpu: -1 is outside");
	refused(WAITING,
		"{\"waiting\":[{\"uid\":\"u\",\"name\":\"n\",\"group\":\"g\",\"host\":\"h\"}]}",
		"waiting[0]: pending: missing");
	refused(WAITING,
		"{\"waiting\":[{\"uid\":\"u\",\"name\":\"n\",\"group\":\"g\",\"host\":\"h\","
		"\"pending\":[null]}]}",
		"waiting[0]: pending[0]: not a string");

	/* a string past the bound, and one holding a NUL */
	memset(huge, 'x', VMACT_GAPI_TEXT_MAX + 1);
	huge[VMACT_GAPI_TEXT_MAX + 1] = '\0';
	assert_true(asprintf(&text, "{\"nodes\":[{\"provider_id\":\"%s\",\"state\":\"running\"}]}",
			     huge) > 0);
	refused(NODES, text, "nodes[0]: provider_id: longer than 1024 bytes");
	free(text);
	assert_true(asprintf(&text, G(T ",\"labels\":{\"k\":\"%s\"}"), huge) > 0);
	refused(GROUPS, text, "labels.k: not a string of at most 1024 bytes");
	free(text);
	refused(GROUPS, G("\"template\":{\"vcpus\":1,\"memory_bytes\":1,\"os\":\"a\\u0000b\"}"),
		"template: os: longer than 1024 bytes or holds a NUL");
	free(huge);
}

/* The small documents' refusals. */
static void test_small_refusals(void **state)
{
	struct vmact_err err = { 0 };
	const char **ids, *s;
	enum vmact_gapi_verdict v;
	struct vmact_gapi_error e;
	long long delta;
	int32_t target;
	size_t n;
	json_t *doc;

	(void)state;
	doc = parse("{\"delta\":\"1\"}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_delta_decode(doc, &delta, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "delta: an integer is required"));
	json_decref(doc);
	doc = parse("{\"provider_ids\":[]}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_delete_nodes_decode(doc, &ids, &n, &err), -EPROTO);
	if (!strstr(err.msg, "provider_ids: a list of 1 to 1000 ids"))
		fail_msg("%s", err.msg);
	assert_null(ids);
	json_decref(doc);
	doc = parse("{\"provider_ids\":[\"a\",3]}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_delete_nodes_decode(doc, &ids, &n, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "provider_ids[1]: a string"));
	assert_null(ids);
	json_decref(doc);
	doc = parse("{\"target\":-1}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_target_decode(doc, &target, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "target"));
	json_decref(doc);
	doc = parse("[]");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_target_decode(doc, &target, &err), -EPROTO);
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_node_group_decode(doc, &s, &err), -EPROTO);
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_error_decode(doc, &e, &err), -EPROTO);
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_verdict_done_decode(doc, &s, &v, &err), -EPROTO);
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_verdict_decode(doc, VMACT_GAPI_ALLOW, &s, &err), -EPROTO);
	json_decref(doc);
	doc = parse("{\"id\":null}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_node_group_decode(doc, &s, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "id: missing"));
	json_decref(doc);
	doc = parse("{\"plugin\":7}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_verdict_decode(doc, VMACT_GAPI_ALLOW, &s, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "plugin: not a string"));
	json_decref(doc);
	doc = parse("{\"uid\":\"u\",\"done\":\"maybe\"}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_verdict_done_decode(doc, &s, &v, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "done"));
	json_decref(doc);
	doc = parse("{\"error\":{},\"reason\":\"x\"}");
	err = (struct vmact_err){ 0 };
	assert_int_equal(vmact_gapi_error_decode(doc, &e, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "error: not a string"));
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group),      cmocka_unit_test(test_group_defaults),
		cmocka_unit_test(test_nodes),      cmocka_unit_test(test_vms),
		cmocka_unit_test(test_hosts),      cmocka_unit_test(test_waiting),
		cmocka_unit_test(test_small),      cmocka_unit_test(test_paths),
		cmocka_unit_test(test_refusals),   cmocka_unit_test(test_small_refusals),
		cmocka_unit_test(test_migrations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
