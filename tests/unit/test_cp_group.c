/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-cloudprovider's pure parts: vmact-groupd's group listing decoded
 * (errors name the key), the template node's bytes, errno to gRPC codes,
 * and the cache's node answers tied to one view. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cloudprovider/arena.h"
#include "cloudprovider/cache.h"
#include "cloudprovider/group.h"
#include "cloudprovider/k8s-node.pb-c.h"
#include "cloudprovider/status.h"
#include "cloudprovider/template.h"

static const char listing[] =
	"{\"groups\": [{\"id\": \"web\", \"min\": 0, \"max\": 3, \"target\": 1,"
	" \"hosts\": [\"h1\", \"h2\"], \"labels\": {\"b\": \"2\", \"a\": \"1\"},"
	" \"taints\": [{\"key\": \"k\", \"value\": \"v\", \"effect\": \"NoSchedule\"}],"
	" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1073741824, \"arch\": \"amd64\","
	" \"os\": \"linux\", \"ephemeral_storage_bytes\": 10737418240},"
	" \"options\": {\"max_node_provision_time_s\": 420.5, \"zero_or_max_node_scaling\": true,"
	" \"max_node_startup_time_s\": 300, \"allow_non_atomic_scale_up_to_max\": true}},"
	" {\"id\": \"b\", \"min\": 1, \"max\": 1, \"target\": 1,"
	" \"template\": {\"vcpus\": 2, \"memory_bytes\": 536870912}}]}";

static int decode(const char *text, struct cp_groups **s, struct vmact_err *err)
{
	json_t *doc = json_loads(text, 0, NULL);
	int r;

	assert_non_null(doc);
	r = cp_groups_from_json(doc, s, err);
	json_decref(doc);
	return r;
}

static void test_listing(void **state)
{
	struct vmact_err err = { 0 };
	struct cp_groups *s;
	const struct vmact_gapi_group *g;

	(void)state;
	assert_int_equal(decode(listing, &s, &err), 0);
	assert_int_equal(s->n, 2);
	g = cp_groups_find(s, "web");
	assert_non_null(g);
	assert_int_equal(g->max, 3);
	/* sorted, as Kubernetes writes a map */
	assert_string_equal(g->labels[0].key, "a");
	assert_string_equal(g->labels[1].key, "b");
	assert_int_equal(g->tmpl.pods, 110);
	assert_int_equal(g->tmpl.max_vcpus, 1);
	assert_true(g->opts.set == (VMACT_GAPI_OPT_PROVISION | VMACT_GAPI_OPT_ZERO_OR_MAX |
				    VMACT_GAPI_OPT_STARTUP | VMACT_GAPI_OPT_NON_ATOMIC));
	assert_true(g->opts.provision_s == 420.5);
	assert_true(g->opts.startup_s == 300);
	assert_true(g->opts.non_atomic);
	assert_true(g->tmpl.ephemeral_bytes == 10ull << 30);
	{
		struct cp_arena a;

		cp_arena_init(&a, 1u << 16);
		assert_non_null(strstr(cp_group_debug(g, &a), "hosts h1,h2"));
		cp_arena_free(&a);
	}
	g = cp_groups_find(s, "b");
	assert_string_equal(g->tmpl.arch, "amd64");
	assert_int_equal(g->opts.set, 0);
	/* not said: no ephemeral-storage in its node */
	assert_true(g->tmpl.ephemeral_bytes == 0);
	assert_null(cp_groups_find(s, "nope"));
	cp_groups_unref(s);
}

static void refused(const char *text, const char *key)
{
	struct vmact_err err = { 0 };
	struct cp_groups *s = NULL;

	assert_int_equal(decode(text, &s, &err), -EPROTO);
	assert_null(s);
	if (!strstr(err.msg, key))
		fail_msg("\"%s\" does not name %s", err.msg, key);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("{}", "groups");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 2, \"max\": 1, \"target\": 0}]}",
		"groups[0]: max");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"template\": {\"vcpus\": 0, \"memory_bytes\": 1}}]}",
		"groups[0]: template: vcpus");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"taints\": [{\"key\": \"k\", \"effect\": \"Sometimes\"}],"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1}}]}",
		"groups[0]: taints[0]: effect");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1},"
		" \"options\": {\"scale_down_utilization_threshold\": 2}}]}",
		"groups[0]: options: scale_down_utilization_threshold");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1},"
		" \"options\": {\"allow_non_atomic_scale_up_to_max\": 1}}]}",
		"groups[0]: options: allow_non_atomic_scale_up_to_max");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1,"
		" \"ephemeral_storage_bytes\": -1}}]}",
		"groups[0]: template: ephemeral_storage_bytes");
	refused("{\"groups\": [{\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1}},"
		" {\"id\": \"a\", \"min\": 0, \"max\": 1, \"target\": 0,"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1}}]}",
		"groups[1]: id");
}

/* The node of group "b" (2 vCPUs, 512Mi, no labels, no taints), byte for
 * byte in Kubernetes' layout of these fields: metadata (1) with the name
 * (1) and the three kubelet labels (11) in key order; spec (2), empty;
 * status (3): capacity (1) and allocatable (2) entries cpu, memory, pods,
 * the Ready condition (4), nodeInfo (7) with os (9) and arch (10).
 * (Kubernetes' own Marshal also writes the fields it leaves empty, which a
 * decoder reads as unset either way.) */
#define QTY_ENTRIES(tag)                                                                          \
	tag, 0x0a, 0x0a, 0x03, 'c', 'p', 'u', 0x12, 0x03, 0x0a, 0x01, '2', tag, 0x11, 0x0a, 0x06, \
		'm', 'e', 'm', 'o', 'r', 'y', 0x12, 0x07, 0x0a, 0x05, '5', '1', '2', 'M', 'i',    \
		tag, 0x0d, 0x0a, 0x04, 'p', 'o', 'd', 's', 0x12, 0x05, 0x0a, 0x03, '1', '1', '0'
static const uint8_t node_b[] = {
	/* metadata */
	0x0a,
	0x6a,
	0x0a,
	0x0a,
	'b',
	'-',
	't',
	'e',
	'm',
	'p',
	'l',
	'a',
	't',
	'e',
	0x5a,
	0x1b,
	0x0a,
	0x12,
	'k',
	'u',
	'b',
	'e',
	'r',
	'n',
	'e',
	't',
	'e',
	's',
	'.',
	'i',
	'o',
	'/',
	'a',
	'r',
	'c',
	'h',
	0x12,
	0x05,
	'a',
	'm',
	'd',
	'6',
	'4',
	0x5a,
	0x24,
	0x0a,
	0x16,
	'k',
	'u',
	'b',
	'e',
	'r',
	'n',
	'e',
	't',
	'e',
	's',
	'.',
	'i',
	'o',
	'/',
	'h',
	'o',
	's',
	't',
	'n',
	'a',
	'm',
	'e',
	0x12,
	0x0a,
	'b',
	'-',
	't',
	'e',
	'm',
	'p',
	'l',
	'a',
	't',
	'e',
	0x5a,
	0x19,
	0x0a,
	0x10,
	'k',
	'u',
	'b',
	'e',
	'r',
	'n',
	'e',
	't',
	'e',
	's',
	'.',
	'i',
	'o',
	'/',
	'o',
	's',
	0x12,
	0x05,
	'l',
	'i',
	'n',
	'u',
	'x',
	/* spec */
	0x12,
	0x00,
	/* status */
	0x1a,
	0x89,
	0x01,
	QTY_ENTRIES(0x0a),
	QTY_ENTRIES(0x12),
	0x22,
	0x1b,
	0x0a,
	0x05,
	'R',
	'e',
	'a',
	'd',
	'y',
	0x12,
	0x04,
	'T',
	'r',
	'u',
	'e',
	0x2a,
	0x0c,
	'K',
	'u',
	'b',
	'e',
	'l',
	'e',
	't',
	'R',
	'e',
	'a',
	'd',
	'y',
	0x3a,
	0x0e,
	0x4a,
	0x05,
	'l',
	'i',
	'n',
	'u',
	'x',
	0x52,
	0x05,
	'a',
	'm',
	'd',
	'6',
	'4',
};

static void test_template_node(void **state)
{
	struct vmact_err err = { 0 };
	struct cp_groups *s;
	struct cp_arena a;
	ProtobufCBinaryData out;

	(void)state;
	assert_int_equal(decode(listing, &s, &err), 0);
	cp_arena_init(&a, 1 << 20);
	assert_int_equal(cp_template_node(cp_groups_find(s, "b"), &a, &out, &err), 0);
	assert_int_equal(out.len, sizeof(node_b));
	assert_memory_equal(out.data, node_b, sizeof(node_b));
	/* a budget too small: refused, not truncated */
	cp_arena_free(&a);
	cp_arena_init(&a, 64);
	assert_int_equal(cp_template_node(cp_groups_find(s, "b"), &a, &out, &err), -ENOMEM);
	cp_arena_free(&a);
	cp_groups_unref(s);
}

/* The template node in out has the four resources keys in key order, with
 * the values cap in capacity and alloc in allocatable. */
static void check_resources(const ProtobufCBinaryData *out, const char *const *keys,
			    const char *const *cap, const char *const *alloc)
{
	Vmact__K8s__Node *node = vmact__k8s__node__unpack(NULL, out->len, out->data);

	assert_non_null(node);
	assert_non_null(node->status);
	assert_int_equal(node->status->n_capacity, 4);
	assert_int_equal(node->status->n_allocatable, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(node->status->capacity[i]->key, keys[i]);
		assert_string_equal(node->status->capacity[i]->value->string, cap[i]);
		assert_string_equal(node->status->allocatable[i]->key, keys[i]);
		assert_string_equal(node->status->allocatable[i]->value->string, alloc[i]);
	}
	vmact__k8s__node__free_unpacked(node, NULL);
}

/* A group that says its nodes' ephemeral storage: the template node has
 * it in capacity and allocatable, in key order between cpu and memory, so
 * that a pending pod requesting any finds room on it. */
static void test_template_ephemeral(void **state)
{
	static const char *const keys[] = { "cpu", "ephemeral-storage", "memory", "pods" };
	static const char *const values[] = { "1", "10Gi", "1Gi", "110" };
	struct vmact_err err = { 0 };
	struct cp_groups *s;
	struct cp_arena a;
	ProtobufCBinaryData out;

	(void)state;
	assert_int_equal(decode(listing, &s, &err), 0);
	cp_arena_init(&a, 1 << 20);
	assert_int_equal(cp_template_node(cp_groups_find(s, "web"), &a, &out, &err), 0);
	check_resources(&out, keys, values, values);
	cp_arena_free(&a);
	cp_groups_unref(s);
}

/* What the node's kubelet reports, as vmact-groupd says it (a Node of the
 * group registered): capacity from it where it is not the boot shape, and
 * allocatable apart from capacity. */
static void test_template_reported(void **state)
{
	static const char doc[] =
		"{\"groups\": [{\"id\": \"r\", \"min\": 0, \"max\": 2, \"target\": 1,"
		" \"template\": {\"vcpus\": 1, \"memory_bytes\": 1073741824,"
		" \"ephemeral_storage_bytes\": 3094126592, \"capacity_memory_bytes\": 1019244544,"
		" \"capacity_milli_cpu\": 1000, \"capacity_pods\": 110,"
		" \"allocatable_milli_cpu\": 900, \"allocatable_memory_bytes\": 914386944,"
		" \"allocatable_ephemeral_storage_bytes\": 2784713933, \"allocatable_pods\": 100,"
		" \"reported_by\": \"r-0\"}}]}";
	static const char *const keys[] = { "cpu", "ephemeral-storage", "memory", "pods" };
	static const char *const cap[] = { "1", "3021608Ki", "995356Ki", "110" };
	static const char *const alloc[] = { "900m", "2784713933", "892956Ki", "100" };
	struct vmact_err err = { 0 };
	struct cp_groups *s;
	struct cp_arena a;
	ProtobufCBinaryData out;

	(void)state;
	assert_int_equal(decode(doc, &s, &err), 0);
	assert_string_equal(cp_groups_find(s, "r")->tmpl.reported_by, "r-0");
	cp_arena_init(&a, 1 << 20);
	assert_int_equal(cp_template_node(cp_groups_find(s, "r"), &a, &out, &err), 0);
	check_resources(&out, keys, cap, alloc);
	cp_arena_free(&a);
	cp_groups_unref(s);
}

static void test_status(void **state)
{
	(void)state;
	assert_int_equal(cp_status_from_errno(-ENOENT), GRPC_STATUS_NOT_FOUND);
	assert_int_equal(cp_status_from_errno(-EINVAL), GRPC_STATUS_INVALID_ARGUMENT);
	assert_int_equal(cp_status_from_errno(-ERANGE), GRPC_STATUS_FAILED_PRECONDITION);
	assert_int_equal(cp_status_from_errno(-EBUSY), GRPC_STATUS_FAILED_PRECONDITION);
	assert_int_equal(cp_status_from_errno(-EAGAIN), GRPC_STATUS_UNAVAILABLE);
	assert_int_equal(cp_status_from_errno(-ETIMEDOUT), GRPC_STATUS_DEADLINE_EXCEEDED);
	assert_int_equal(cp_status_from_errno(-ENOSYS), GRPC_STATUS_UNIMPLEMENTED);
	assert_int_equal(cp_status_from_errno(-EPROTO), GRPC_STATUS_INTERNAL);
	assert_string_equal(cp_status_name(GRPC_STATUS_UNIMPLEMENTED), "UNIMPLEMENTED");
}

/* A node's answer belongs to the view it was given in. */
static void test_cache_view(void **state)
{
	struct vmact_err err = { 0 };
	struct cp_groups *s1, *s2;
	struct cp_cache *c;

	(void)state;
	assert_int_equal(decode(listing, &s1, &err), 0);
	assert_int_equal(decode(listing, &s2, &err), 0);
	assert_int_equal(cp_cache_new("/nonexistent", &c, &err), 0);
	/* no view yet: nothing is remembered */
	cp_cache_node_put(c, s1, "n1libvirt://h/1", "web");
	assert_null(cp_cache_node_get(c, s1, "n1libvirt://h/1"));
	/* and groupd unreachable: the view stays empty, UNAVAILABLE */
	assert_int_equal(cp_cache_refresh(c, 100000, &err), -EAGAIN);
	cp_cache_free(c);
	cp_groups_unref(s1);
	cp_groups_unref(s2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listing),           cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_template_node),     cmocka_unit_test(test_template_ephemeral),
		cmocka_unit_test(test_template_reported), cmocka_unit_test(test_status),
		cmocka_unit_test(test_cache_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
