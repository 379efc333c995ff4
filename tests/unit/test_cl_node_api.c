/* SPDX-License-Identifier: Apache-2.0 */
/* What vmact-groupd makes of a Node's resources (cluster/engine/node-api.c)
 * and what it says a group's nodes look like to Kubernetes
 * (cluster/engine/nodes.c, doc/cluster.md "The template node"): estimated
 * from the template until a kubelet reported them, then the report, kept
 * in the state directory for the template it was seen for. The report's
 * way from a real API server is test_k8s's. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The test reads the key a report is kept under. */
#define CL_ENGINE_PRIV_ALLOW
#include "cluster/engine/engine-priv.h"
#include "cluster/engine/node-api.h"

static json_t *parse(const char *text)
{
	json_t *v = json_loads(text, 0, NULL);

	assert_non_null(v);
	return v;
}

/* What a kubelet (v1.36, TCG guest of 1 GiB, a 3 GiB ext4 root) put in its
 * Node's status. */
static void test_resources(void **state)
{
	struct cl_node_resources r;
	struct vmact_err err = { 0 };
	json_t *m = parse("{\"cpu\":\"1\",\"ephemeral-storage\":\"2784713933\","
			  "\"hugepages-2Mi\":\"0\",\"memory\":\"892956Ki\",\"pods\":\"110\"}");

	(void)state;
	assert_int_equal(cl_node_api_resources(m, "allocatable", &r, &err), 1);
	assert_true(r.milli_cpu == 1000);
	assert_true(r.memory == 892956ULL * 1024);
	assert_true(r.ephemeral == 2784713933ULL);
	assert_true(r.pods == 110);
	json_decref(m);

	/* not reported yet (a Node created before its kubelet's status) */
	assert_int_equal(cl_node_api_resources(NULL, "capacity", &r, &err), 0);
	m = parse("{\"cpu\":\"1\",\"memory\":\"1Gi\"}");
	assert_int_equal(cl_node_api_resources(m, "capacity", &r, &err), 0);
	json_decref(m);
	/* no ephemeral storage reported: 0, still a report */
	m = parse("{\"cpu\":\"1500m\",\"memory\":\"1Gi\",\"pods\":\"8\"}");
	assert_int_equal(cl_node_api_resources(m, "capacity", &r, &err), 1);
	assert_true(r.milli_cpu == 1500 && r.ephemeral == 0);
	json_decref(m);

	/* what is no quantity: refused, the field named */
	err = (struct vmact_err){ 0 };
	m = parse("{\"cpu\":1,\"memory\":\"1Gi\",\"pods\":\"8\"}");
	assert_int_equal(cl_node_api_resources(m, "capacity", &r, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "capacity.cpu"));
	json_decref(m);
	err = (struct vmact_err){ 0 };
	m = parse("{\"cpu\":\"1\",\"memory\":\"lots\",\"pods\":\"8\"}");
	assert_int_equal(cl_node_api_resources(m, "allocatable", &r, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "allocatable.memory"));
	json_decref(m);
	err = (struct vmact_err){ 0 };
	m = parse("[]");
	assert_int_equal(cl_node_api_resources(m, "capacity", &r, &err), -EPROTO);
	json_decref(m);
}

/* One host (never reached: the group is asked nothing), one group of the
 * template %s. */
static const char config_fmt[] =
	"{\"api\":{\"socket\":\"/run/x/api.sock\"},"
	"\"hosts\":[{\"name\":\"h1\",\"uri\":\"test:///default\",\"storage_pool\":\"p\","
	"\"arbiter\":{\"url\":\"http://127.0.0.1:9\",\"secret_file\":\"%s/lease.key\"}}],"
	"\"groups\":[{\"id\":\"w\",\"min\":0,\"max\":2,\"hosts\":[\"h1\"],"
	"\"template\":{%s}}]}";

struct fixture {
	struct cl_config cfg;
	sd_event *ev;
	struct cl_engine *e;
	char dir[64];
};

static void fixture_up(struct fixture *f, const char *tpl)
{
	struct vmact_err err = { 0 };
	char path[128], config[1024];
	FILE *fp;

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/vmact-shape-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(path, sizeof(path), "%s/lease.key", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("0123456789abcdef0123456789abcdef\n", fp);
	fclose(fp);
	assert_int_equal(chmod(path, 0600), 0);
	snprintf(config, sizeof(config), config_fmt, f->dir, tpl);
	if (cl_config_load_string(config, &f->cfg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(sd_event_new(&f->ev), 0);
	if (cl_engine_new(f->ev, &f->cfg, &f->e, &err) < 0)
		fail_msg("%s", err.msg);
}

static void fixture_down(struct fixture *f)
{
	char path[128];

	cl_engine_free(f->e);
	sd_event_unref(f->ev);
	cl_config_free(&f->cfg);
	snprintf(path, sizeof(path), "%s/node-shapes.json", f->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lease.key", f->dir);
	unlink(path);
	rmdir(f->dir);
}

static void write_file(const struct fixture *f, const char *text)
{
	char path[128];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/node-shapes.json", f->dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

/* What a kubelet with its defaults would report: the boot shape, the hard
 * eviction thresholds (memory 100Mi, nodefs 10 %) off allocatable. */
static void test_estimate(void **state)
{
	struct fixture f;
	struct cl_engine_group_view v;
	struct vmact_err err = { 0 };

	(void)state;
	fixture_up(&f, ("\"vcpus\":2,\"memory\":\"1Gi\",\"ephemeral_storage\":\"10Gi\","
			"\"base_volume\":\"b.qcow2\""));
	assert_int_equal(cl_engine_load_shapes(f.e, f.dir, &err), 0);
	assert_int_equal(cl_engine_group(f.e, "w", &v), 0);
	assert_null(v.node_reported_by);
	assert_true(v.node.capacity.milli_cpu == 2000 && v.node.allocatable.milli_cpu == 2000);
	assert_true(v.node.capacity.memory == 1ULL << 30);
	assert_true(v.node.allocatable.memory == (1ULL << 30) - (100ULL << 20));
	assert_true(v.node.capacity.ephemeral == 10ULL << 30);
	assert_true(v.node.allocatable.ephemeral == (10ULL << 30) - (1ULL << 30));
	assert_true(v.node.capacity.pods == 110 && v.node.allocatable.pods == 110);
	fixture_down(&f);
}

static const char report_fmt[] =
	"{\"version\":1,\"groups\":{\"w\":{\"template\":\"%s\",\"disk_bytes\":3221225472,"
	"\"reported\":{\"node\":\"w-abc\",\"at\":1.5,"
	"\"capacity\":{\"milli_cpu\":1000,\"memory\":1019244544,\"ephemeral\":3094126592,"
	"\"pods\":110},"
	"\"allocatable\":{\"milli_cpu\":1000,\"memory\":914386944,\"ephemeral\":2784713933,"
	"\"pods\":110}}}}}";

/* A report kept for this template is what the group says after a restart;
 * one kept for another template (the group's image changed) is not, and the
 * disk's size read for it neither. */
static void test_kept(void **state)
{
	struct fixture f;
	struct cl_engine_group_view v;
	struct vmact_err err = { 0 };
	char key[CL_SHAPE_KEY_MAX], text[1024];

	(void)state;
	fixture_up(&f, ("\"vcpus\":1,\"memory\":\"1Gi\",\"base_volume\":\"node.qcow2\""));
	cl_shape_key(&f.cfg.groups[0].tpl, key, sizeof(key));
	snprintf(text, sizeof(text), report_fmt, key);
	write_file(&f, text);
	assert_int_equal(cl_engine_load_shapes(f.e, f.dir, &err), 0);
	assert_int_equal(cl_engine_group(f.e, "w", &v), 0);
	assert_non_null(v.node_reported_by);
	assert_string_equal(v.node_reported_by, "w-abc");
	assert_true(v.node.capacity.memory == 1019244544);
	assert_true(v.node.allocatable.memory == 914386944);
	assert_true(v.node.capacity.ephemeral == 3094126592);
	assert_true(v.node.allocatable.ephemeral == 2784713933);
	fixture_down(&f);

	/* the same file, a group whose image is another */
	fixture_up(&f, ("\"vcpus\":1,\"memory\":\"1Gi\",\"base_volume\":\"node2.qcow2\""));
	write_file(&f, text);
	assert_int_equal(cl_engine_load_shapes(f.e, f.dir, &err), 0);
	assert_int_equal(cl_engine_group(f.e, "w", &v), 0);
	assert_null(v.node_reported_by);
	assert_true(v.node.capacity.memory == 1ULL << 30);
	/* no ephemeral storage said, the disk not read yet: none */
	assert_true(v.node.capacity.ephemeral == 0);
	fixture_down(&f);
}

/* A file that is not one: refused with its name, the estimate stands. */
static void test_bad_file(void **state)
{
	static const char *const bad[] = {
		"{",
		"{\"version\":2,\"groups\":{}}",
		"{\"version\":1}",
	};
	struct fixture f;
	struct cl_engine_group_view v;
	struct vmact_err err = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fixture_up(&f, ("\"vcpus\":1,\"memory\":\"1Gi\",\"base_volume\":\"n\""));
		write_file(&f, bad[i]);
		err = (struct vmact_err){ 0 };
		assert_int_equal(cl_engine_load_shapes(f.e, f.dir, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "node-shapes.json"));
		assert_int_equal(cl_engine_group(f.e, "w", &v), 0);
		assert_null(v.node_reported_by);
		fixture_down(&f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_kept),
		cmocka_unit_test(test_bad_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
