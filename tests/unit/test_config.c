/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "actuator/config/config.h"

static void test_defaults(void **state)
{
	struct act_config cfg;

	(void)state;
	act_config_defaults(&cfg);
	assert_string_equal(cfg.libvirt_uri, "qemu:///system");
	assert_int_equal(cfg.plugin_mode, ACT_PLUGIN_ARBITER);
	assert_string_equal(cfg.plugin_version, "5.0");
	/* the listener for other agents is opt-in */
	assert_string_equal(cfg.arbiter_listen, "");
	assert_true(cfg.arbiter_watermark == 0.9);
	assert_true(cfg.cpu_quota_overcommit == 1.0);
	assert_int_equal(cfg.sampler_mode, ACT_SAMPLER_AUTO);
	assert_true(cfg.scaling.load_average_fraction_target == 0.9);
	assert_int_equal(cfg.compute_unit.milli_cpu, 250);
	assert_string_equal(cfg.libvirt_name_prefix, "");
	assert_string_equal(cfg.sampler_pin_root, "/sys/fs/bpf/vmact");
	assert_int_equal(cfg.sampler_interval_ms, 5000);
	assert_string_equal(cfg.informant_listen, "127.0.0.1:0");
	assert_null(cfg.informant_advertise_host);
	/* the Prometheus endpoint, on loopback (doc/metrics.md) */
	assert_string_equal(cfg.metrics_listen, "127.0.0.1:9848");
	act_config_free(&cfg);
}

/* The keys vmactd's registry and runners read. */
static void test_daemon_keys(void **state)
{
	struct vmact_err err = { 0 };
	struct act_config cfg;

	(void)state;
	act_config_defaults(&cfg);
	assert_int_equal(
		act_config_load_string(
			"{\"libvirt\":{\"name_prefix\":\"db-\"},"
			"\"plugin\":{\"version\":\"4.0\"},"
			"\"sampler\":{\"pin_root\":\"/sys/fs/bpf/x\",\"interval_ms\":1000}}",
			&cfg, &err),
		0);
	assert_string_equal(cfg.libvirt_name_prefix, "db-");
	assert_string_equal(cfg.plugin_version, "4.0");
	assert_string_equal(cfg.sampler_pin_root, "/sys/fs/bpf/x");
	assert_int_equal(cfg.sampler_interval_ms, 1000);
	act_config_free(&cfg);

	/* A wildcard listener with the address the guests reach. */
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load_string("{\"informant\":{\"listen\":\"0.0.0.0:10302\","
						"\"advertise_host\":\"192.168.122.1\"}}",
						&cfg, &err),
			 0);
	assert_string_equal(cfg.informant_listen, "0.0.0.0:10302");
	assert_string_equal(cfg.informant_advertise_host, "192.168.122.1");
	act_config_free(&cfg);
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load_string("{\"informant\":{\"listen\":\"[::1]:0\"}}", &cfg,
						&err),
			 0);
	act_config_free(&cfg);

	/* metrics.listen: an address, a unix socket, or "" for none. */
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load_string("{\"metrics\":{\"listen\":\"[::1]:9848\"}}", &cfg,
						&err),
			 0);
	assert_string_equal(cfg.metrics_listen, "[::1]:9848");
	assert_int_equal(act_config_load_string("{\"metrics\":{\"listen\":\"unix:/run/m.sock\"}}",
						&cfg, &err),
			 0);
	assert_int_equal(act_config_load_string("{\"metrics\":{\"listen\":\"\"}}", &cfg, &err), 0);
	assert_string_equal(cfg.metrics_listen, "");
	act_config_free(&cfg);

	/* control.read_group: none by default (root only), a group name. */
	act_config_defaults(&cfg);
	assert_string_equal(cfg.control_read_group, "");
	assert_int_equal(act_config_load_string("{\"control\":{\"read_group\":\"vmact-read\"}}",
						&cfg, &err),
			 0);
	assert_string_equal(cfg.control_read_group, "vmact-read");
	assert_true(act_config_load_string("{\"control\":{\"read_group\":7}}", &cfg, &err) < 0);
	assert_non_null(strstr(err.msg, "read_group"));
	act_config_free(&cfg);
}

/* guest_worker.enabled stays readable for files written for earlier
 * versions (the example had it), but vmactd has no mode without guest
 * workers: false is refused, the key named. */
static void test_guest_worker_enabled(void **state)
{
	struct vmact_err err = { 0 };
	struct act_config cfg;

	(void)state;
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load_string("{\"guest_worker\":{\"enabled\":true,"
						"\"user\":\"w\"}}",
						&cfg, &err),
			 0);
	assert_string_equal(cfg.guest_worker_user, "w");
	act_config_free(&cfg);
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load_string("{\"guest_worker\":{\"enabled\":false}}", &cfg,
						&err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "guest_worker.enabled: only true"));
	act_config_free(&cfg);
	vmact_err_reset(&err);
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load_string("{\"guest_worker\":{\"enabled\":1}}", &cfg, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "guest_worker.enabled"));
	act_config_free(&cfg);
}

static void test_overrides(void **state)
{
	struct vmact_err err = { 0 };
	struct act_config cfg;

	(void)state;
	act_config_defaults(&cfg);
	assert_int_equal(
		act_config_load_string(
			"{\"libvirt\":{\"uri\":\"qemu+unix:///system\"},"
			"\"plugin\":{\"mode\":\"remote\",\"url\":\"http://10.0.0.1:10299/\"},"
			"\"arbiter\":{\"reserve_cpu\":\"500m\",\"reserve_memory\":\"2Gi\"},"
			"\"sampler\":{\"mode\":\"taskstats\",\"keep_pins\":true},"
			"\"scaling\":{\"loadAverageFractionTarget\":0.7}}",
			&cfg, &err),
		0);
	assert_string_equal(cfg.libvirt_uri, "qemu+unix:///system");
	assert_int_equal(cfg.plugin_mode, ACT_PLUGIN_REMOTE);
	assert_int_equal(cfg.arbiter_reserve_milli_cpu, 500);
	assert_int_equal(cfg.arbiter_reserve_mem_bytes, 2ULL << 30);
	assert_int_equal(cfg.sampler_mode, ACT_SAMPLER_TASKSTATS);
	assert_true(cfg.sampler_keep_pins);
	assert_true(cfg.scaling.load_average_fraction_target == 0.7);
	assert_true(cfg.scaling.memory_usage_fraction_target == 0.75);
	act_config_free(&cfg);
}

/* Every bad input is rejected with a message naming the key. */
static void test_errors(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "[]", "top level: expected an object" },
		{ "{\"libvirt\":{\"url\":\"x\"}}", "libvirt.url: unknown key" },
		{ "{\"bogus\":{}}", "bogus: unknown key" },
		{ "{\"libvirt\":3}", "libvirt: expected an object" },
		{ "{\"libvirt\":{\"uri\":\"\"}}", "libvirt.uri: expected a non-empty string" },
		{ "{\"plugin\":{\"mode\":\"x\"}}", "plugin.mode: expected one of" },
		{ "{\"plugin\":{\"timeout_ms\":0}}", "plugin.timeout_ms: 0 out of range" },
		{ "{\"plugin\":{\"mode\":\"remote\",\"url\":\"https://x\"}}",
		  "plugin.url: 'https://x' is not an http://HOST[:PORT][/PATH] address" },
		{ "{\"plugin\":{\"mode\":\"remote\",\"url\":\"http://u@x/\"}}",
		  "plugin.url: 'http://u@x/': expected http://HOST[:PORT][/PATH]" },
		{ "{\"arbiter\":{\"reserve_memory\":\"-1Gi\"}}",
		  "arbiter.reserve_memory: negative" },
		{ "{\"arbiter\":{\"watermark\":\"0.9\"}}", "arbiter.watermark: expected a number" },
		{ "{\"sampler\":{\"keep_pins\":1}}", "sampler.keep_pins: expected true or false" },
		{ "{\"scaling\":[]}", "scaling: expected an object" },
		{ "{\"scaling\":{\"lfcWindowSizeMinutes\":1}}",
		  "scaling config: lfcWindowSizeMinutes" },
		{ "{\"scaling\":{\"loadAverageFractionTarget\":2.5}}",
		  "scaling config: loadAverageFractionTarget" },
		{ "{\"scaling\":{\"bogus\":1}}", "scaling config: unknown field \"bogus\"" },
		{ "{\"compute_unit\":{\"vCPUs\":0,\"mem\":\"1Gi\"}}", "compute_unit: both" },
		{ "{\"compute_unit\":{\"vCPUs\":\"x\",\"mem\":\"1Gi\"}}", "compute_unit: vCPUs" },
		{ "{\"libvirt\":", "line 1:" },
		{ "{\"libvirt\":{\"name_prefix\":7}}",
		  "libvirt.name_prefix: expected a non-empty" },
		{ "{\"sampler\":{\"interval_ms\":10}}", "sampler.interval_ms: 10 out of range" },
		{ "{\"sampler\":{\"pin_root\":\"rel/dir\"}}",
		  "sampler.pin_root: must be an absolute" },
		{ "{\"plugin\":{\"version\":\"6.0\"}}", "plugin.version: " },
		{ "{\"arbiter\":{\"listen\":\"localhost:10299\"}}", "arbiter.listen: " },
		{ "{\"informant\":{\"listen\":\"0.0.0.0:0\"}}",
		  "informant.advertise_host: needed when informant.listen is a wildcard" },
		{ "{\"informant\":{\"listen\":\"[::]:0\"}}", "informant.advertise_host: needed" },
		{ "{\"informant\":{\"listen\":\":0\"}}",
		  "informant.listen: ':0' is not ADDR:PORT" },
		{ "{\"informant\":{\"listen\":\"127.0.0.1\"}}",
		  "informant.listen: '127.0.0.1' is not" },
		{ "{\"informant\":{\"listen\":\"127.0.0.1:http\"}}",
		  "informant.listen: '127.0.0.1:http': bad port" },
		{ "{\"informant\":{\"listen\":\"127.0.0.1:65536\"}}",
		  "informant.listen: '127.0.0.1:65536': bad port" },
		{ "{\"informant\":{\"advertise_host\":\"\"}}",
		  "informant.advertise_host: expected a non-empty" },
		{ "{\"informant\":{\"port\":1}}", "informant.port" },
		{ "{\"metrics\":{\"listen\":\"localhost:9848\"}}", "metrics.listen: " },
		{ "{\"metrics\":{\"listen\":9848}}", "metrics.listen: expected a string" },
		{ "{\"metrics\":{\"path\":\"/m\"}}", "metrics.path: unknown key" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vmact_err err = { 0 };
		struct act_config cfg;

		act_config_defaults(&cfg);
		assert_true(act_config_load_string(cases[i].text, &cfg, &err) < 0);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)) != 0)
			fail_msg("case %zu: got \"%s\", want prefix \"%s\"", i, err.msg,
				 cases[i].msg);
		act_config_free(&cfg);
	}
}

static void test_file(void **state)
{
	struct vmact_err err = { 0 };
	char path[] = "/tmp/vmact-config-XXXXXX";
	struct act_config cfg;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"cgroup\":{\"cpu_quota_overcommit\":4}}", 37), 37);
	close(fd);
	act_config_defaults(&cfg);
	assert_int_equal(act_config_load(path, true, &cfg, &err), 0);
	assert_true(cfg.cpu_quota_overcommit == 4.0);
	unlink(path);
	/* A missing default file is fine (1: the defaults apply, which
	 * vmactd --check-config reports); a missing explicit one is not. */
	assert_int_equal(act_config_load(path, false, &cfg, &err), 1);
	assert_int_equal(act_config_load(path, true, &cfg, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));
	act_config_free(&cfg);
}

/* The shipped example must stay valid (tests run from the top directory),
 * and everything that decides how VMs scale must be the defaults, which
 * test_daemon shows scaling a busy VM up, an idle one down and up again:
 * only host memory is reserved. */
static void test_example(void **state)
{
	struct vmact_err err = { 0 };
	struct act_config cfg, def;

	(void)state;
	act_config_defaults(&cfg);
	act_config_defaults(&def);
	if (act_config_load("actuator/daemon/vmactd.json.example", true, &cfg, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(cfg.cpu_policy, def.cpu_policy);
	assert_int_equal(cfg.cpu_shrink, def.cpu_shrink);
	assert_int_equal(cfg.policy_tick_ms, def.policy_tick_ms);
	assert_int_equal(cfg.sampler_interval_ms, def.sampler_interval_ms);
	assert_int_equal(cfg.sampler_max_vms, def.sampler_max_vms);
	assert_int_equal(cfg.sampler_max_threads, def.sampler_max_threads);
	assert_int_equal(cfg.plugin_mode, def.plugin_mode);
	assert_true(cfg.arbiter_watermark == def.arbiter_watermark);
	assert_int_equal(cfg.arbiter_reserve_milli_cpu, 0);
	assert_true(cfg.arbiter_overcommit_cpu == def.arbiter_overcommit_cpu);
	assert_true(cfg.cpu_quota_overcommit == def.cpu_quota_overcommit);
	assert_int_equal(cfg.compute_unit.milli_cpu, def.compute_unit.milli_cpu);
	assert_int_equal(cfg.compute_unit.mem_bytes, def.compute_unit.mem_bytes);
	assert_true(cfg.scaling.load_average_fraction_target ==
		    def.scaling.load_average_fraction_target);
	assert_true(cfg.scaling.memory_usage_fraction_target ==
		    def.scaling.memory_usage_fraction_target);
	assert_int_equal(cfg.scaling.enable_lfc_metrics, def.scaling.enable_lfc_metrics);
	assert_int_equal(cfg.arbiter_reserve_mem_bytes, 1ULL << 30);
	/* The arbiter's listener for other agents is opt-in (vmactd.json(5)):
	 * the example an operator copies must not open it. */
	assert_string_equal(cfg.arbiter_listen, "");
	act_config_free(&cfg);
	act_config_free(&def);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_daemon_keys),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_guest_worker_enabled),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
