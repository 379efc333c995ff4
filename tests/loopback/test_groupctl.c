/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupctl (cli/groupctl/) against tests/peers/fake-groupd.js on a
 * unix socket: its tables and --json read through the API's codec
 * (shared/group-api.c), its changes and their answers, vmact-groupd's
 * errors passed on, and answers that are not the API's (not JSON, JSON
 * of another shape) refused with the field named, exit status 1, never a
 * crash. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "shared/http-call.h"
#include "tests/lib/file.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"

struct fixture {
	char dir[64];
	char sock[128];
	char out[128];
	struct th_peer groupd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *args[2];
	char msg[256], log[160];

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vmact-groupctl-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof(f->sock), "%s/groupd.sock", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
	snprintf(log, sizeof(log), "%s/groupd.log", f->dir);
	args[0] = f->sock;
	args[1] = NULL;
	if (th_peer_start(&f->groupd, "fake-groupd.js", args, log, msg, sizeof(msg)) < 0)
		fail_msg("%s", msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	th_peer_stop(&f->groupd);
	th_rm_rf(f->dir);
	free(f);
	return 0;
}

/* vmact-groupctl --socket SOCK args...: its exit status; *text what it
 * wrote on stdout and stderr (malloc'd). */
static int groupctl(struct fixture *f, char **text, const char *sock, ...)
{
	const char *argv[16];
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = f->out };
	struct th_proc p = { 0 };
	char prog[512];
	size_t n = 0;
	va_list ap;
	int status;

	assert_int_equal(th_build_prog("vmact-groupctl", prog, sizeof(prog)), 0);
	argv[n++] = prog;
	argv[n++] = "--socket";
	argv[n++] = sock ? sock : f->sock;
	va_start(ap, sock);
	for (const char *a; n < 15 && (a = va_arg(ap, const char *));)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	status = th_proc_wait(&p);
	*text = th_read_file(f->out);
	assert_non_null(*text);
	return status;
}

/* A control command to the fake, answered once applied. */
static void control(struct fixture *f, const char *cmd)
{
	struct vmact_http_answer a = { 0 };
	struct vmact_err err = { 0 };
	struct vmact_http_req q = { .unix_socket = f->sock,
				    .url = "/control",
				    .method = "POST",
				    .body = cmd,
				    .timeout_usec = 10000000,
				    .answer_max = 4096 };

	if (vmact_http_call(&q, &a, &err) < 0 || a.status != 200)
		fail_msg("control %s: %s (HTTP %ld)", cmd, err.msg, a.status);
	vmact_http_answer_free(&a);
}

static void expect(const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("wanted \"%s\" in:\n%s", needle, text);
}

/* The groups as a table and as the API's JSON. */
static void test_groups(void **state)
{
	struct fixture *f = *state;
	json_t *doc, *g;
	char *out;
	size_t i;
	bool web = false;

	assert_int_equal(groupctl(f, &out, NULL, "groups", NULL), 0);
	expect(out, "GROUP");
	expect(out, "web");
	expect(out, "batch");
	expect(out, "fakehost");
	free(out);
	assert_int_equal(groupctl(f, &out, NULL, "--json", "groups", NULL), 0);
	doc = json_loads(out, 0, NULL);
	if (!json_is_array(json_object_get(doc, "groups")))
		fail_msg("--json groups is not the API's listing:\n%s", out);
	json_array_foreach(json_object_get(doc, "groups"), i, g)
		web |= json_is_string(json_object_get(g, "id")) &&
		       !strcmp(json_string_value(json_object_get(g, "id")), "web");
	assert_true(web);
	json_decref(doc);
	free(out);
}

/* A change and its answer, the nodes it made, and the target back. */
static void test_changes(void **state)
{
	struct fixture *f = *state;
	char *out, pid[160] = "", *at;
	json_t *doc;

	assert_int_equal(groupctl(f, &out, NULL, "increase", "web", "2", NULL), 0);
	expect(out, "target 2");
	free(out);
	assert_int_equal(groupctl(f, &out, NULL, "nodes", "web", NULL), 0);
	expect(out, "NAME");
	expect(out, "web-");
	free(out);
	assert_int_equal(groupctl(f, &out, NULL, "--json", "nodes", "web", NULL), 0);
	doc = json_loads(out, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 2);
	snprintf(pid, sizeof(pid), "%s",
		 json_string_value(json_object_get(json_array_get(json_object_get(doc, "nodes"), 0),
						   "provider_id")));
	json_decref(doc);
	free(out);
	assert_non_null(strstr(pid, "libvirt://"));
	assert_int_equal(groupctl(f, &out, NULL, "delete", "web", pid, NULL), 0);
	expect(out, "target 1");
	free(out);
	/* the answer of --json is the API's own */
	assert_int_equal(groupctl(f, &out, NULL, "--json", "increase", "web", "1", NULL), 0);
	at = strstr(out, "\"target\"");
	assert_non_null(at);
	free(out);
}

/* vmact-groupd's refusals, and its absence, said as it said them. */
static void test_errors(void **state)
{
	struct fixture *f = *state;
	char *out, gone[160];

	assert_int_equal(groupctl(f, &out, NULL, "increase", "web", "9", NULL), 1);
	expect(out, "vmact-groupctl: vmact-groupd: target 9 would pass max 3");
	free(out);
	assert_int_equal(groupctl(f, &out, NULL, "nodes", "nope", NULL), 1);
	expect(out, "vmact-groupd: no node group nope");
	free(out);
	snprintf(gone, sizeof(gone), "%s/none.sock", f->dir);
	assert_int_equal(groupctl(f, &out, gone, "groups", NULL), 1);
	expect(out, "cannot reach vmact-groupd at");
	free(out);
	assert_int_equal(groupctl(f, &out, NULL, "frobnicate", NULL), 2);
	free(out);
}

/* Answers that are not the API's: refused, for the tables and --json
 * alike, the field named. */
static void test_hostile(void **state)
{
	struct fixture *f = *state;
	char *out;

	control(f, "{\"cmd\":\"garbage\",\"count\":1}");
	assert_int_equal(groupctl(f, &out, NULL, "groups", NULL), 1);
	expect(out, "something other than JSON");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"groups\":[{\"id\":\"g\",\"min\":\"0\"}]}}");
	assert_int_equal(groupctl(f, &out, NULL, "--json", "groups", NULL), 1);
	expect(out, "vmact-groupctl: groups[0]: min: not an integer");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":[1,2]}");
	assert_int_equal(groupctl(f, &out, NULL, "nodes", "web", NULL), 1);
	expect(out, "vmact-groupctl: not an object");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"nodes\":[{\"provider_id\":\"p\","
		   "\"state\":\"exploded\"}]}}");
	assert_int_equal(groupctl(f, &out, NULL, "nodes", "web", NULL), 1);
	expect(out, "nodes[0]: state: not creating, running or deleting");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"target\":\"many\"}}");
	assert_int_equal(groupctl(f, &out, NULL, "increase", "web", "1", NULL), 1);
	expect(out, "target: missing or not in [0, 2^31)");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"hosts\":[{\"name\":7}]}}");
	assert_int_equal(groupctl(f, &out, NULL, "hosts", NULL), 1);
	expect(out, "hosts[0]: name: not a string");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"waiting\":{}}}");
	assert_int_equal(groupctl(f, &out, NULL, "waiting", NULL), 1);
	expect(out, "waiting: not an array");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"vms\":[{\"provider_id\":\"p\"}]}}");
	assert_int_equal(groupctl(f, &out, NULL, "pools", NULL), 1);
	expect(out, "vms[0]: name: missing");
	free(out);
	/* and it serves on: the next call is answered */
	assert_int_equal(groupctl(f, &out, NULL, "groups", NULL), 0);
	free(out);
}

/* The operator's tables of what only the real vmact-groupd serves, from
 * documents in doc/cluster-api.md's form. */
static void test_operator_tables(void **state)
{
	struct fixture *f = *state;
	char *out;

	control(f,
		"{\"cmd\":\"answer\",\"body\":{\"hosts\":[{\"name\":\"h1\",\"uri\":"
		"\"qemu:///system\",\"reachable\":false,\"scanned\":true,\"libvirt\":{\"ok\":"
		"true,\"error\":\"\"},\"arbiter\":{\"ok\":false,\"error\":\"refused\"},\"vms\":3,"
		"\"leases\":2,\"standby\":{\"milli_cpu\":1000,\"memory_bytes\":536870912}}]}}");
	assert_int_equal(groupctl(f, &out, NULL, "hosts", NULL), 0);
	expect(out, "h1");
	expect(out, "qemu:///system");
	expect(out, "arbiter: refused");
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"waiting\":[{\"uid\":\"u-1\",\"name\":\"vm1\","
		   "\"group\":\"g\",\"host\":\"h1\",\"pending\":[\"ManualApproval\"],"
		   "\"waited_s\":3.5,\"timeout_s\":10}]}}");
	assert_int_equal(groupctl(f, &out, NULL, "waiting", NULL), 0);
	expect(out, "u-1");
	expect(out, "ManualApproval");
	free(out);
	control(f,
		"{\"cmd\":\"answer\",\"body\":{\"vms\":[{\"provider_id\":\"libvirt://h1/1\","
		"\"name\":\"vm-a\",\"host\":\"h1\",\"group\":\"g\",\"role\":\"pool\",\"tier\":"
		"\"paused\",\"state\":\"ready\",\"leased\":true},{\"provider_id\":\"libvirt://h1/2\","
		"\"name\":\"vm-b\",\"host\":\"h1\",\"group\":\"g\",\"role\":\"member\",\"tier\":"
		"\"cold\",\"state\":\"claimed\"}],\"ready\":true}}");
	assert_int_equal(groupctl(f, &out, NULL, "pools", "g", NULL), 0);
	expect(out, "vm-a");
	if (strstr(out, "vm-b"))
		fail_msg("pools listed a member:\n%s", out);
	free(out);
	control(f, "{\"cmd\":\"answer\",\"body\":{\"uid\":\"u-1\",\"done\":\"allow\"}}");
	assert_int_equal(groupctl(f, &out, NULL, "allow", "u-1", "--plugin", "ManualApproval",
				  NULL),
			 0);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_groups, setup, teardown),
		cmocka_unit_test_setup_teardown(test_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_operator_tables, setup, teardown),
	};
	int r;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return r;
}
