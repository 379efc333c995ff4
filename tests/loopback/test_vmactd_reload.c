/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's SIGHUP (the unit's ExecReload): the real daemon, on a domain
 * prefix nobody uses and its own pin root, its embedded arbiter listening
 * on 127.0.0.1:0. A good file: the live keys are applied (policy.cpu,
 * scaling), the others are reported as needing a restart and keep their
 * running value (the arbiter still answers on its first port although
 * arbiter.listen changed). A bad file: refused with the key named, and the
 * running configuration kept whole (reloading the good file again changes
 * nothing). The daemon lives through all of it and stops cleanly. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "base/time.h"
#include "tests/lib/file.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

static char vmactd_path[PATH_MAX];
static char cfg[64], log_path[64];

static unsigned count(const char *needle)
{
	return th_count_in_file(log_path, needle);
}

static void wait_count(struct th_proc *p, const char *needle, unsigned n)
{
	if (!TH_WAIT(NULL, count(needle) >= n || th_proc_exited(p), TH_SAFETY_USEC) ||
	    count(needle) < n) {
		char *log = th_read_file(log_path);

		print_error("---- vmactd log ----\n%s\n", log ? log : "");
		free(log);
		fail_msg("vmactd did not log '%s' %u time(s)", needle, n);
	}
}

static void write_cfg(const char *extra)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"%s\"},"
		 "\"libvirt\":{\"name_prefix\":\"vmactd-reload-%d-none-\"},"
		 "\"sampler\":{\"pin_root\":\"/sys/fs/bpf/vmactd-reload-%d\"}%s}",
		 strstr(extra, "LISTEN2") ? "127.0.0.1:1" : "127.0.0.1:0", (int)getpid(),
		 (int)getpid(), strstr(extra, "LISTEN2") ? extra + strlen("LISTEN2") : extra);
	assert_int_equal(th_write_file(cfg, text), 0);
}

static size_t sink(char *d, size_t s, size_t n, void *ud)
{
	return s * n;
}

/* The arbiter answers a plugin request on port (any HTTP status). */
static long arbiter_status(unsigned port)
{
	char url[64];
	long status = 0;
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{}");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	return status;
}

static void reload_good_and_bad(void **state)
{
	const char *argv[] = { vmactd_path, "--config", cfg, NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE,
					 .err = TH_OUT_FILE,
					 .out_path = log_path };
	struct th_proc p;
	unsigned port = 0;
	char *log, *at;

	(void)state;
	write_cfg("");
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	wait_count(&p, "(port ", 1);
	wait_count(&p, "ready: managing", 1);
	log = th_read_file(log_path);
	at = strstr(log, "(port ");
	assert_int_equal(sscanf(at, "(port %u)", &port), 1);
	free(log);
	assert_true(arbiter_status(port) >= 400); /* answers: {} is not a request */

	/* Good: two live keys, one that needs a restart. */
	write_cfg("LISTEN2,\"policy\":{\"cpu\":\"neon\"},"
		  "\"scaling\":{\"loadAverageFractionTarget\":0.5}");
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	wait_count(&p, "reload: ", 1);
	wait_count(&p, "changes applied", 1);
	assert_int_equal(count("reload: policy.cpu changed: applied"), 1);
	assert_int_equal(count("reload: scaling changed: applied"), 1);
	assert_int_equal(count("reload: arbiter.listen changed: needs a restart"), 1);
	assert_int_equal(count(": 2 changes applied"), 1);
	/* Still on its first port. */
	assert_true(arbiter_status(port) >= 400);

	/* Bad: refused, the key named, nothing of it applied. */
	write_cfg(",\"policy\":{\"cpu\":\"reactive\",\"tick_ms\":5}");
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	wait_count(&p, "the running configuration is kept", 1);
	assert_int_equal(count("policy.tick_ms: 5 out of range"), 1);
	assert_int_equal(count("reload: policy.cpu changed"), 1);
	write_cfg(",\"policy\":{\"cpu\":\"neon\"},\"plugin\":{\"timeout_ms\":\"x\"}");
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	wait_count(&p, "the running configuration is kept", 2);
	assert_int_equal(count("plugin.timeout_ms: expected an integer"), 1);
	write_cfg(",\"policy\":{");
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	wait_count(&p, "the running configuration is kept", 3);

	/* The same good file as before: the running configuration is
	 * exactly what it applied then. */
	write_cfg("LISTEN2,\"policy\":{\"cpu\":\"neon\"},"
		  "\"scaling\":{\"loadAverageFractionTarget\":0.5}");
	assert_int_equal(kill(p.pid, SIGHUP), 0);
	wait_count(&p, ": 0 changes applied", 1);
	assert_int_equal(count("reload: policy.cpu changed"), 1);
	assert_int_equal(count("arbiter.listen changed: needs a restart"), 2);
	assert_true(arbiter_status(port) >= 400);

	assert_false(th_proc_exited(&p));
	assert_int_equal(th_proc_stop(&p, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reload_good_and_bad),
	};
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return 1;
	self[n] = '\0';
	snprintf(vmactd_path, sizeof(vmactd_path), "%s/../../vmactd", dirname(self));
	snprintf(cfg, sizeof(cfg), "/tmp/vmactd-reload-%d.json", (int)getpid());
	snprintf(log_path, sizeof(log_path), "/tmp/vmactd-reload-%d.log", (int)getpid());
	curl_global_init(CURL_GLOBAL_DEFAULT);
	n = cmocka_run_group_tests_name("vmactd reload", tests, NULL, NULL);
	curl_global_cleanup();
	unlink(cfg);
	if (!getenv("VMACT_TEST_KEEP_LOG"))
		unlink(log_path);
	return (int)n;
}
