/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd's configuration (cluster/config/) and the check of
 * its scheduler profiles against the plugins (cluster/plugins/plugins.c),
 * as vmact-groupd loads it: a full document, the defaults of
 * doc/cluster.md, "Pool lifecycle", and bad
 * documents each refused with the key named. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/config/config.h"
#include "cluster/plugins/plugins.h"

/* Two hosts and a group; %s is spliced into the group. */
#define HOSTS                                                                                         \
	"\"hosts\":[{\"name\":\"h1\",\"uri\":\"qemu:///system\",\"storage_pool\":\"p\","              \
	"\"arbiter\":{\"url\":\"http://127.0.0.1:10299\",\"secret_file\":\"/etc/vmact/lease.key\"}}," \
	"{\"name\":\"h2\",\"uri\":\"qemu+ssh://root@b/system\",\"channel_dir\":\"/run/vc\","          \
	"\"arbiter\":{\"url\":\"unix:/run/a.sock\",\"secret_file\":\"/k\"},"                          \
	"\"migration\":{\"address\":\"10.0.0.2\",\"bandwidth_mib_s\":100}}]"
#define TEMPLATE "\"template\":{\"memory\":\"512Mi\",\"base_volume\":\"base.qcow2\"}"

static const char *good =
	"{\"api\":{\"socket\":\"/run/x/api.sock\"},\"metrics\":{\"listen\":\"127.0.0.1:0\"},"
	"\"libvirt\":{\"name_prefix\":\"n-\"},\"lifecycle\":{\"lease_s\":20}," HOSTS ","
	"\"kubernetes\":{\"server\":\"https://10.0.0.1:6443\",\"ca_file\":\"/etc/vmact/k8s-ca.crt\","
	"\"token_file\":\"/etc/vmact/groupd.token\"},"
	"\"groups\":[{\"id\":\"workers\",\"min\":1,\"max\":5,\"hosts\":[\"h1\",\"h2\"],"
	"\"labels\":{\"a\":\"b\"},\"taints\":[{\"key\":\"k\",\"value\":\"v\",\"effect\":\"NoSchedule\"}],"
	"\"template\":{\"domain_type\":\"qemu\",\"vcpus\":1,\"max_vcpus\":4,\"memory\":\"512Mi\","
	"\"max_memory\":\"2Gi\",\"ephemeral_storage\":\"20Gi\",\"network\":\"default\",\"kernel\":\"/k\",\"initrd\":\"/i\",\"cmdline\":\"console=ttyS0\","
	"\"base_volume\":\"base.qcow2\",\"metadata_xml\":\"<vmact:autoscaling "
	"xmlns:vmact='https://vmact.dev/xmlns/vmact/1' enabled='true'/>\"},"
	"\"health\":{\"kind\":\"serial\",\"pattern\":\"READY\",\"on_unhealthy\":\"replace\"},"
	"\"claim\":{\"ack\":\"OK\",\"ack_timeout_s\":5,\"refuse\":\"NO\",\"secret\":{\"kind\":\"kubeconfig\","
	"\"file\":\"/etc/vmact/workers.kubeconfig\"}},"
	"\"pool\":{\"running\":1,\"paused\":2,\"saved\":3},"
	"\"options\":{\"scale_down_unneeded_time_s\":600,\"zero_or_max_node_scaling\":false,"
	"\"max_node_startup_time_s\":300,\"allow_non_atomic_scale_up_to_max\":true},"
	"\"lifecycle\":{\"boot_timeout_s\":20},\"migration\":{\"enabled\":true}}],"
	"\"scheduler\":{\"profiles\":[{\"schedulerName\":\"default\",\"plugins\":{\"permit\":"
	"{\"enabled\":[{\"name\":\"ManualApproval\"}]}},\"pluginConfig\":[{\"name\":"
	"\"ManualApproval\",\"args\":{\"timeoutSeconds\":60}}]}]}}";

static void test_good(void **state)
{
	struct cl_config cfg;
	struct vmact_err err = { 0 };
	const struct cl_group_cfg *g;

	if (cl_config_load_string(good, &cfg, &err) < 0 ||
	    cl_plugins_check_profiles(cfg.profiles, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(cfg.api_socket, "/run/x/api.sock");
	assert_string_equal(cfg.name_prefix, "n-");
	assert_int_equal(cfg.n_hosts, 2);
	assert_string_equal(cfg.hosts[1].storage_pool, "default");
	assert_string_equal(cfg.hosts[0].channel_dir, "");
	assert_string_equal(cfg.hosts[1].channel_dir, "/run/vc");
	/* Relief on, a moved VM resting 300 s, by default. */
	assert_true(cfg.relief);
	assert_true(cfg.min_residence_usec == 300000000ULL);
	/* Only h2 takes moved VMs. */
	assert_string_equal(cfg.hosts[0].migration_address, "");
	assert_string_equal(cfg.hosts[1].migration_address, "10.0.0.2");
	assert_int_equal(cfg.hosts[1].migration_bandwidth_mib_s, 100);
	g = cl_config_group(&cfg, "workers");
	assert_non_null(g);
	assert_int_equal(g->min, 1);
	assert_int_equal(g->n_hosts, 2);
	assert_true(g->migration);
	assert_int_equal(g->n_taints, 1);
	assert_false(g->tpl.kvm);
	assert_int_equal(g->tpl.max_vcpus, 4);
	assert_int_equal(g->tpl.max_memory, 2ULL << 30);
	assert_int_equal(g->tpl.ephemeral_storage, 20ULL << 30);
	assert_int_equal(json_integer_value(json_object_get(g->options, "max_node_startup_time_s")),
			 300);
	/* A VM reserves what it boots with. */
	assert_int_equal(g->tpl.reserve.milli_cpu, 1000);
	assert_int_equal(g->tpl.reserve.mem_bytes, 512ULL << 20);
	assert_int_equal(g->pool[2], 3);
	assert_string_equal(g->health.pattern, "READY");
	assert_true(g->health.replace_unhealthy);
	assert_string_equal(g->claim.channel, "virtio:org.vmact.claim.0");
	assert_string_equal(g->claim.refuse, "NO");
	assert_string_equal(g->claim.secret_kind, "kubeconfig");
	assert_string_equal(cfg.kube.server, "https://10.0.0.1:6443");
	assert_string_equal(cfg.kube.ca_file, "/etc/vmact/k8s-ca.crt");
	assert_string_equal(cfg.kube.token_file, "/etc/vmact/groupd.token");
	/* doc/cluster.md's example names a libvirt network. */
	assert_string_equal(g->tpl.network, "default");
	assert_false(g->tpl.user_nic);
	assert_string_equal(g->claim.secret_file, "/etc/vmact/workers.kubeconfig");
	assert_int_equal(g->claim.ack_timeout_usec, 5 * 1000000ULL);
	/* The group's lifecycle overrides one value, the rest is global. */
	assert_int_equal(g->life.boot_timeout_usec, 20 * 1000000ULL);
	assert_int_equal(g->life.lease_usec, 20 * 1000000ULL);
	assert_non_null(cfg.profiles);
	assert_null(cl_config_group(&cfg, "nope"));
	cl_config_free(&cfg);
}

static void test_defaults(void **state)
{
	struct cl_config cfg;
	struct vmact_err err = { 0 };
	const struct cl_group_cfg *g;

	if (cl_config_load_string("{" HOSTS
				  ",\"groups\":[{\"id\":\"g\",\"max\":3,\"hosts\":[\"h1\"]," TEMPLATE
				  "}]}",
				  &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	g = &cfg.groups[0];
	/* The pool's default timings (doc/cluster.md, "Pool lifecycle"). */
	assert_int_equal(g->life.boot_timeout_usec, 300 * 1000000ULL);
	assert_int_equal(g->life.healthy_timeout_usec, 90 * 1000000ULL);
	assert_int_equal(g->life.health_interval_usec, 5 * 1000000ULL);
	assert_int_equal(g->life.max_boots_per_iteration, 10);
	assert_int_equal(g->min, 0);
	assert_true(g->tpl.kvm);
	/* Its VMs stay where they are unless the group says otherwise. */
	assert_false(g->migration);
	assert_int_equal(g->health.kind, CL_HEALTH_SERIAL);
	/* A member in service that turns unhealthy is reported, not
	 * deleted: the autoscaler decides. */
	assert_false(g->health.replace_unhealthy);
	/* No acknowledgement; vmact-node's refusal line when one is set. */
	assert_string_equal(g->claim.ack, "");
	assert_string_equal(g->claim.refuse, "VMACT-NODE refused");
	assert_string_equal(g->claim.secret_kind, "");
	assert_string_equal(cfg.kube.server, "");
	assert_false(g->tpl.user_nic);
	assert_string_equal(g->tpl.network, "");
	/* A claim's answer may take longer than a probe's. */
	assert_int_equal(g->claim.ack_timeout_usec, 30 * 1000000ULL);
	assert_int_equal(g->health.probe_timeout_usec, 3 * 1000000ULL);
	cl_config_free(&cfg);
	if (cl_config_load_string("{" HOSTS
				  ",\"groups\":[{\"id\":\"g\",\"max\":3,\"hosts\":[\"h1\"],"
				  "\"template\":{\"memory\":\"1Gi\",\"base_volume\":\"b\","
				  "\"nic\":\"user\"}}]}",
				  &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	g = &cfg.groups[0];
	assert_true(g->tpl.user_nic);
	assert_string_equal(cfg.api_socket, "/run/vmact-groupd/api.sock");
	assert_string_equal(cfg.metrics_listen, "127.0.0.1:9849");
	assert_null(cfg.profiles);
	cl_config_free(&cfg);
}

struct bad {
	const char *doc, *want;
};

#define GROUP(x)  "{" HOSTS ",\"groups\":[{\"id\":\"g\",\"max\":3,\"hosts\":[\"h1\"]," x "}]}"
#define GROUPT(x) GROUP(TEMPLATE "," x)
#define TPL(x)    GROUP("\"template\":{\"memory\":\"512Mi\",\"base_volume\":\"b\"," x "}")

static const struct bad bads[] = {
	{ "[]", "must be an object" },
	{ "{\"hosts\":", "line 1" },
	{ "{}", "hosts: a list of 1 to" },
	{ "{\"hostz\":[]}", "hostz: unknown key" },
	{ "{\"hosts\":[{\"name\":\"h1\",\"uri\":\"x\"}]}", "hosts[0].arbiter: required" },
	{ "{\"hosts\":[{\"name\":\"H1\",\"uri\":\"x\",\"arbiter\":{}}]}", "hosts[0].name: 'H1'" },
	{ "{\"hosts\":[{\"name\":\"h1\",\"uri\":\"x\",\"arbiter\":{\"url\":\"ftp://a\","
	  "\"secret_file\":\"/k\"}}]}",
	  "hosts[0].arbiter.url" },
	{ "{\"hosts\":[{\"name\":\"h1\",\"uri\":\"x\",\"arbiter\":{\"url\":\"unix:/a\","
	  "\"secret_file\":\"k\"}}]}",
	  "hosts[0].arbiter.secret_file: must be an absolute path" },
	{ "{" HOSTS ",\"hosts2\":1}", "hosts2: unknown key" },
	{ "{\"api\":{\"socket\":\"rel\"}," HOSTS "}", "api.socket: must be an absolute path" },
	{ "{\"metrics\":{\"listen\":\"nowhere\"}," HOSTS "}", "metrics.listen" },
	{ "{\"lifecycle\":{\"boot_timeout_s\":0}," HOSTS "}",
	  "lifecycle.boot_timeout_s: a number" },
	{ "{\"lifecycle\":{\"healthy_timeout_s\":3,\"health_interval_s\":5}," HOSTS "}",
	  "lifecycle.health_interval_s: longer than healthy_timeout_s" },
	{ GROUPT("\"min\":4"), "groups[0].min: above max" },
	{ GROUPT("\"migration\":{\"enabled\":1}"), "groups[0].migration.enabled: true or false" },
	{ GROUPT("\"migration\":{\"to\":\"h2\"}"), "groups[0].migration.to: unknown key" },
	{ GROUPT("\"hosts\":[\"h3\"]"), "duplicate object key near '\"hosts\"'" },
	{ "{" HOSTS ",\"groups\":[{\"id\":\"g\",\"max\":3,\"hosts\":[\"h3\"]," TEMPLATE "}]}",
	  "groups[0].hosts[0]: no host called 'h3'" },
	{ "{" HOSTS ",\"groups\":[{\"id\":\"G\",\"max\":3,\"hosts\":[\"h1\"]," TEMPLATE "}]}",
	  "groups[0].id: 'G'" },
	{ "{" HOSTS ",\"groups\":[{\"id\":\"g\",\"hosts\":[\"h1\"]," TEMPLATE "}]}",
	  "groups[0].max: required" },
	{ GROUP("\"x\":1"), "groups[0].x: unknown key" },
	{ GROUP("\"labels\":{}"), "groups[0].template: required" },
	{ GROUP("\"template\":{\"memory\":\"lots\",\"base_volume\":\"b\"}"),
	  "groups[0].template.memory: a size" },
	{ TPL("\"max_vcpus\":0"), "groups[0].template.max_vcpus: an integer from 1" },
	{ TPL("\"vcpus\":2,\"max_vcpus\":1"), "groups[0].template.max_vcpus: below vcpus" },
	{ TPL("\"max_memory\":\"513Mi\""), "groups[0].template.max_memory" },
	{ TPL("\"domain_type\":\"xen\""), "groups[0].template.domain_type: 'xen'" },
	{ GROUP("\"template\":{\"memory\":\"1Gi\",\"base_volume\":\"/var/b.qcow2\"}"),
	  "groups[0].template.base_volume: a volume name" },
	{ TPL("\"initrd\":\"/i\""), "groups[0].template.initrd: needs kernel" },
	{ TPL("\"metadata_xml\":\"<a>\""), "groups[0].template.metadata_xml: not well-formed" },
	{ TPL("\"reserve\":{\"cpu\":\"lots\"}"), "groups[0].template.reserve.cpu: a CPU quantity" },
	{ TPL("\"arch\":\"s390x\""), "groups[0].template.arch: 's390x'" },
	{ GROUPT("\"health\":{\"kind\":\"ping\"}"), "groups[0].health.kind: 'ping'" },
	{ GROUPT("\"health\":{\"kind\":\"tcp\"}"), "groups[0].health.address: required" },
	{ GROUPT("\"health\":{\"kind\":\"agent\",\"pattern\":\"x\"}"),
	  "groups[0].health.pattern: not for" },
	{ GROUPT("\"health\":{\"on_unhealthy\":\"delete\"}"),
	  "groups[0].health.on_unhealthy: 'delete': report or replace" },
	{ GROUPT("\"claim\":{\"channel\":\"serial0\"}"), "groups[0].claim.channel: 'serial0'" },
	{ GROUPT("\"claim\":{\"refuse\":7}"), "groups[0].claim.refuse" },
	{ "{" HOSTS ",\"kubernetes\":{\"server\":\"http://a:1\",\"ca_file\":\"/c\","
	  "\"token_file\":\"/t\"}}",
	  "kubernetes.server: 'http://a:1': https://HOST:PORT" },
	{ "{" HOSTS ",\"kubernetes\":{\"server\":\"https://a:1\",\"ca_file\":\"/c\"}}",
	  "kubernetes.token_file" },
	{ "{" HOSTS ",\"kubernetes\":{\"server\":\"https://a:1\",\"ca_file\":\"c\","
	  "\"token_file\":\"/t\"}}",
	  "kubernetes.ca_file: must be an absolute path" },
	{ GROUP("\"template\":{\"memory\":\"1Gi\",\"base_volume\":\"b\",\"nic\":\"tap\"}"),
	  "groups[0].template.nic: 'tap': network (with template.network) or user" },
	{ GROUP("\"template\":{\"memory\":\"1Gi\",\"base_volume\":\"b\",\"nic\":\"network\"}"),
	  "groups[0].template.nic: network: needs template.network" },
	{ GROUP("\"template\":{\"memory\":\"1Gi\",\"base_volume\":\"b\",\"nic\":\"user\","
		"\"network\":\"default\"}"),
	  "groups[0].template.nic: user: not with template.network" },
	{ GROUPT("\"claim\":{\"secret\":{\"kind\":\"token\",\"file\":\"/k\"}}"),
	  "groups[0].claim.secret.kind: 'token': kubeconfig, bootstrap_kubeconfig or kubeadm" },
	{ GROUPT("\"claim\":{\"secret\":{\"kind\":\"kubeconfig\",\"file\":\"k\"}}"),
	  "groups[0].claim.secret.file: 'k': an absolute path" },
	{ GROUPT("\"claim\":{\"secret\":{\"kind\":\"kubeconfig\"}}"),
	  "groups[0].claim.secret.file" },
	{ GROUPT("\"claim\":{\"secret\":{\"kind\":\"kubeconfig\",\"file\":\"/k\",\"x\":1}}"),
	  "groups[0].claim.secret" },
	/* A pty can be logged: no secret over a serial port. */
	{ GROUPT("\"claim\":{\"channel\":\"serial1\",\"secret\":{\"kind\":\"kubeconfig\","
		 "\"file\":\"/k\"}}"),
	  "groups[0].claim.secret: only over a virtio channel" },
	{ GROUPT("\"claim\":{\"refused\":\"x\"}"), "refused" },
	{ GROUPT("\"claim\":{\"ack_timeout_s\":0}"), "groups[0].claim.ack_timeout_s" },
	{ GROUPT("\"claim\":{\"channel\":\"virtio:A B\"}"),
	  "groups[0].claim.channel: 'virtio:A B'" },
	{ GROUPT("\"pool\":{\"warm\":1}"), "groups[0].pool.warm: unknown key" },
	{ GROUPT("\"pool\":{\"running\":-1}"), "groups[0].pool.running: an integer" },
	{ GROUPT("\"taints\":[{\"key\":\"k\",\"effect\":\"Never\"}]"),
	  "groups[0].taints[0].effect: 'Never'" },
	{ GROUPT("\"options\":{\"scale_down_unneeded_time\":1}"),
	  "groups[0].options.scale_down_unneeded_time: unknown key" },
	{ GROUPT("\"options\":{\"scale_down_utilization_threshold\":2}"),
	  "groups[0].options.scale_down_utilization_threshold: a fraction" },
	{ GROUPT("\"options\":{\"max_node_provision_time_s\":2e9}"),
	  "groups[0].options.max_node_provision_time_s: a number of seconds from 0 to 1e9" },
	{ GROUPT("\"options\":{\"allow_non_atomic_scale_up_to_max\":1}"),
	  "groups[0].options.allow_non_atomic_scale_up_to_max: must be true or false" },
	{ TPL("\"ephemeral_storage\":\"lots\""), "groups[0].template.ephemeral_storage" },
	{ GROUPT("\"lifecycle\":{\"lease_s\":1}"),
	  "groups[0].lifecycle.lease_s: a number of seconds from 2" },
	{ GROUPT("\"scheduler_name\":\"other\""),
	  "groups[0].scheduler_name: no scheduler profile called 'other'" },
	{ "{" HOSTS ",\"groups\":[{\"id\":\"g\",\"max\":3,\"hosts\":[\"h1\"]," TEMPLATE "},"
	  "{\"id\":\"g\",\"max\":3,\"hosts\":[\"h1\"]," TEMPLATE "}]}",
	  "groups[1].id: 'g' is also groups[0]'s" },
	{ "{" HOSTS ",\"scheduler\":{\"profiles\":[{\"plugins\":{\"filter\":{\"enabled\":"
	  "[{\"name\":\"Nope\"}]}}}]}}",
	  "scheduler.profiles[0].plugins.filter.enabled[0].name: unknown plugin 'Nope'" },
	{ "{" HOSTS ",\"scheduler\":{\"profiles\":[{\"plugins\":{\"permit\":{\"enabled\":"
	  "[{\"name\":\"ManualApproval\"}]}},\"pluginConfig\":[{\"name\":\"ManualApproval\","
	  "\"args\":{\"timeoutSeconds\":9999}}]}]}}",
	  "scheduler.profiles[0].pluginConfig[ManualApproval].args: timeoutSeconds" },
	{ "{\"hosts\":[{\"name\":\"h\",\"uri\":\"qemu:///session\",\"channel_dir\":\"run/x\","
	  "\"arbiter\":{\"url\":\"unix:/a\",\"secret_file\":\"/k\"}}]}",
	  "hosts[0].channel_dir: an absolute directory of at most 64 bytes" },
	{ "{\"hosts\":[{\"name\":\"h\",\"uri\":\"qemu:///session\",\"channel_dir\":"
	  "\"/a-directory-whose-name-is-too-long-for-a-socket-path-under-it-0123\","
	  "\"arbiter\":{\"url\":\"unix:/a\",\"secret_file\":\"/k\"}}]}",
	  "hosts[0].channel_dir: an absolute directory" },
	{ "{\"hosts\":[{\"name\":\"h\",\"uri\":\"qemu:///session\",\"migration\":{},"
	  "\"arbiter\":{\"url\":\"unix:/a\",\"secret_file\":\"/k\"}}]}",
	  "hosts[0].migration.address: required" },
	{ "{\"hosts\":[{\"name\":\"h\",\"uri\":\"qemu:///session\",\"migration\":"
	  "{\"address\":\"a b/c\"},\"arbiter\":{\"url\":\"unix:/a\",\"secret_file\":\"/k\"}}]}",
	  "hosts[0].migration.address: 'a b/c': a host name or an IP address" },
	{ "{\"hosts\":[{\"name\":\"h\",\"uri\":\"qemu:///session\",\"migration\":"
	  "{\"address\":\"h\",\"port\":1},\"arbiter\":{\"url\":\"unix:/a\",\"secret_file\":\"/k\"}}]}",
	  "hosts[0].migration.port: unknown" },
	{ "{" HOSTS ",\"migration\":{\"relief\":1}}", "migration.relief: true or false" },
	{ "{" HOSTS ",\"migration\":{\"min_residence_s\":-1}}",
	  "migration.min_residence_s: a number of seconds from 0" },
	{ "{" HOSTS ",\"scheduler\":{\"profiles\":[{},{}]}}",
	  "scheduler.profiles[1].schedulerName: 'default' is also profiles[0]'s" },
	{ "{" HOSTS ",\"scheduler\":{\"profiles\":[{\"schedulerName\":7}]}}",
	  "scheduler.profiles[0].schedulerName: a name of 1 to 63 characters" },
	{ "{" HOSTS ",\"scheduler\":{\"profiles\":[{\"plugins\":{\"nowhere\":{}}}]}}",
	  "scheduler.profiles[0].plugins.nowhere: unknown extension point" },
};

/* As vmact-groupd loads its file: the document, then its profiles against
 * the plugins. */
static int load(const char *doc, struct vmact_err *err)
{
	struct cl_config cfg;
	int r = cl_config_load_string(doc, &cfg, err);

	if (r < 0)
		return r;
	r = cl_plugins_check_profiles(cfg.profiles, err);
	cl_config_free(&cfg);
	return r;
}

static void test_bad(void **state)
{
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct vmact_err err = { 0 };

		if (load(bads[i].doc, &err) != -EINVAL)
			fail_msg("accepted (or not EINVAL): %s", bads[i].doc);
		if (!strstr(err.msg, bads[i].want))
			fail_msg("%s\n  said: %s\n  want: %s", bads[i].doc, err.msg, bads[i].want);
	}
}

/* The configuration's layer knows no plugin: a profile naming an unknown
 * one is well-formed to it, and refused by the plugins' check. */
static void test_profiles_split(void **state)
{
	static const char *doc = "{" HOSTS ",\"scheduler\":{\"profiles\":[{\"plugins\":{\"bind\":"
				 "{\"enabled\":[{\"name\":\"Nope\"}]}}}]}}";
	struct cl_config cfg;
	struct vmact_err err = { 0 };

	if (cl_config_load_string(doc, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(json_array_size(cfg.profiles), 1);
	assert_int_equal(cl_plugins_check_profiles(cfg.profiles, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "scheduler.profiles[0].plugins.bind.enabled[0].name"));
	cl_config_free(&cfg);
	/* No profiles: the default one, which the plugins take. */
	vmact_err_reset(&err);
	assert_int_equal(cl_plugins_check_profiles(NULL, &err), 0);
}

static void test_file(void **state)
{
	char path[] = "/tmp/test_cl_config_XXXXXX";
	struct cl_config cfg;
	struct vmact_err err = { 0 };
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	assert_non_null(f);
	fputs(GROUPT("\"min\":4"), f);
	fclose(f);
	assert_int_equal(cl_config_load(path, &cfg, &err), -EINVAL);
	/* The file's name, then the key. */
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "groups[0].min"));
	unlink(path);
	vmact_err_reset(&err);
	assert_int_equal(cl_config_load(path, &cfg, &err), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good), cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad),  cmocka_unit_test(test_profiles_split),
		cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
