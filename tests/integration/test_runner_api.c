/* SPDX-License-Identifier: Apache-2.0 */
/* The neonvm-runner CPU API end to end (doc/runner-api.md): the real
 * vmactd (build[/san]/vmactd, with its defaults: the reactive CPU policy,
 * the embedded arbiter) manages one real TCG guest whose metadata says
 * <vmact:runner listen='127.0.0.1:PORT'/>, bounds 1..3 CPUs. The client is
 * curl, which vmact did not write:
 *
 *   - GET /cpu_current answers the VM's size, {"VCPUs":1};
 *   - the guest busy on two threads: vmact's own policy leaves it at 1 CPU
 *     (no "resizing" line, libvirt still 1 vCPU, the quota still 1 CPU)
 *     while the guest reports ten times;
 *   - POST /cpu_change {"VCPUs":"1500m"}: 200, then the guest sees 2 CPUs,
 *     libvirt has 2 vCPUs, the cgroup's quota is 1.5 CPU, and
 *     GET /cpu_current answers {"VCPUs":"1500m"};
 *   - the guest idle: the size stays 1500m (nothing shrinks it);
 *   - refusals with the runner's codes: malformed JSON, a body without
 *     VCPUs and one over 1 KiB 400, a wrong method 400, above max and below min 500, an unknown
 *     path 404; the size is untouched by them;
 *   - POST {"VCPUs":1}: the quota back at 1 CPU (the vCPUs stay plugged,
 *     policy.cpu_shrink "quota"), GET answers {"VCPUs":1};
 *   - SIGTERM: exit status 0.
 *
 * Conditions are awaited with generous safety limits; nothing is timed. */
#include <errno.h>
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

#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX        "vmact-rapi"
#define LIMIT_BOOT_S  180.0
#define LIMIT_SCALE_S 120.0

struct fixture {
	struct tg_guest g;
	unsigned port;
	char base[64];
	char resp[128];
	struct th_vmactd d;
};

static struct fixture fx;

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	return th_vmactd_wait(&fx.d, pred, arg, limit_s);
}

/* One request with curl: its HTTP status (0: curl failed), the body in
 * body (NUL-terminated, cut at cap). */
static unsigned curl(const char *method, const char *path, const char *data, char *body, size_t cap)
{
	char url[128];
	const char *argv[16];
	size_t n = 0;
	struct th_proc p = { 0 };
	const struct th_spawn_opts o = { .out = TH_OUT_PIPE, .err = TH_OUT_INHERIT };
	char out[64] = "";
	char *text;
	unsigned status = 0;

	snprintf(url, sizeof(url), "%s%s", fx.base, path);
	unlink(fx.resp);
	argv[n++] = "curl";
	argv[n++] = "-sS";
	argv[n++] = "--max-time";
	argv[n++] = "20";
	argv[n++] = "-o";
	argv[n++] = fx.resp;
	argv[n++] = "-w";
	argv[n++] = "%{http_code}";
	argv[n++] = "-X";
	argv[n++] = method;
	if (data) {
		argv[n++] = "-H";
		argv[n++] = "Content-Type: application/json";
		argv[n++] = "--data-binary";
		argv[n++] = data;
	}
	argv[n++] = url;
	argv[n] = NULL;
	assert_int_equal(th_spawn(&p, argv, &o), 0);
	th_read_fd_all(p.out_fd, out, sizeof(out));
	if (th_proc_wait(&p) == 0)
		sscanf(out, "%u", &status);
	text = th_read_file(fx.resp);
	snprintf(body, cap, "%s", text ? text : "");
	free(text);
	return status;
}

static int live_vcpus(void)
{
	return tg_live_vcpus(fx.g.name);
}

/* The VM group's CFS quota in milli-CPUs (-1 unlimited). */
static long quota_milli(void)
{
	return TH_VMACTD_QUOTA_OR_FAIL(&fx.d);
}

/* The guest has reported `n` more times since *seq (its own pace, one
 * line a second): vmact's loop has had that long to act. */
struct reports {
	unsigned long from;
	unsigned n;
};

static bool reported_n_more(void *arg)
{
	const struct reports *c = arg;
	struct tg_report r;

	return tg_report(&fx.g, &r) && r.seq >= c->from + c->n;
}

static void let_guest_report(unsigned n)
{
	struct tg_report r;
	struct reports c = { .n = n };

	assert_true(tg_report(&fx.g, &r));
	c.from = r.seq;
	if (!wait_until(reported_n_more, &c, LIMIT_SCALE_S))
		fail_msg("the guest stopped reporting");
}

/* Nothing resized the VM: the size is still `milli` / `vcpus`. */
static void assert_untouched(long milli, int vcpus, unsigned resizes)
{
	assert_int_equal(th_count_in_file(fx.d.log, "resizing from"), resizes);
	assert_int_equal(live_vcpus(), vcpus);
	assert_int_equal(quota_milli(), milli);
}

static bool at_1500m(void *unused)
{
	struct tg_report r;

	return tg_report(&fx.g, &r) && r.cpus == 2 && quota_milli() == 1500;
}

static bool quota_at_1000m(void *unused)
{
	return quota_milli() == 1000;
}

static void expect(const char *method, const char *path, const char *data, unsigned status,
		   const char *body)
{
	char got[512];
	unsigned s = curl(method, path, data, got, sizeof(got));

	if (s != status || (body && strcmp(got, body)))
		fail_msg("%s %s %s: %u '%s', want %u '%s'", method, path, data ? data : "", s, got,
			 status, body ? body : "(any)");
}

static int setup(void **state)
{
	char msg[512], meta[1024];
	virConnectPtr vc;

	(void)state;
	if (th_vmactd_init(&fx.d, PREFIX, &fx.g) < 0)
		return -1;
	snprintf(fx.resp, sizeof(fx.resp), "%s/resp", fx.d.dir);
	/* A port nothing listens on; the API gets it as a fixed port, as a
	 * NeonVM controller expects (25183 may be taken on a test host). */
	fx.port = th_dead_port();
	if (!fx.port)
		return -1;
	snprintf(fx.base, sizeof(fx.base), "http://127.0.0.1:%u", fx.port);
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	snprintf(meta, sizeof(meta),
		 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		 "<vmact:cpu min='1' max='3'/>"
		 "<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>"
		 "<vmact:runner listen='127.0.0.1:%u'/>"
		 "</vmact:autoscaling>",
		 fx.port);
	vc = virConnectOpen("qemu:///system");
	if (!vc)
		return -1;
	if (tg_start(vc, PREFIX, meta, &fx.g, msg, sizeof(msg)) < 0) {
		print_error("guest: %s\n", msg);
		virConnectClose(vc);
		return -1;
	}
	virConnectClose(vc);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	th_vmactd_teardown(&fx.d);
	return 0;
}

static void runner_api(void **state)
{
	static const char *const args[] = { "--verbose", NULL };
	char text[1024], prefix[64], needle[160];
	unsigned resizes;

	(void)state;
	if (!wait_until(tg_booted, &fx.g, LIMIT_BOOT_S))
		fail_msg("the guest did not boot");
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text), "{\"control\":{\"state_dir\":\"%s\"}}", fx.d.dir);
	assert_int_equal(th_vmactd_config(&fx.d, prefix, text), 0);
	assert_int_equal(th_vmactd_spawn(&fx.d, args), 0);
	snprintf(needle, sizeof(needle), "runner API on 127.0.0.1:%u port %u", fx.port, fx.port);
	if (!th_vmactd_wait_log(&fx.d, needle, 120))
		fail_msg("vmactd did not start the runner API");

	/* What the VM has. */
	expect("GET", "/cpu_current", NULL, 200, "{\"VCPUs\":1}");
	expect("GET", "/ready", NULL, 200, NULL);

	/* Busy: vmact's own policy would grow it within a second or two;
	 * here nothing happens while the guest reports ten times. */
	assert_int_equal(tg_cmd(&fx.g, "busy 2"), 0);
	let_guest_report(10);
	assert_untouched(1000, 1, 0);

	/* The caller's change: two vCPUs, 1.5 CPU of quota. */
	expect("POST", "/cpu_change", "{\"VCPUs\":\"1500m\"}", 200, "");
	if (!wait_until(at_1500m, NULL, LIMIT_SCALE_S))
		fail_msg("the guest never had 2 CPUs with a 1500m quota");
	assert_int_equal(live_vcpus(), 2);
	expect("GET", "/cpu_current", NULL, 200, "{\"VCPUs\":\"1500m\"}");
	resizes = th_count_in_file(fx.d.log, "resizing from");
	assert_int_equal(resizes, 1);

	/* Idle: nothing shrinks it. */
	assert_int_equal(tg_cmd(&fx.g, "idle"), 0);
	let_guest_report(10);
	assert_untouched(1500, 2, resizes);

	/* Refusals, with the runner's codes; none touches the VM. */
	expect("POST", "/cpu_change", "{\"VCPUs\":", 400, NULL);
	expect("POST", "/cpu_change", "{\"cpus\":2}", 400, NULL);
	expect("POST", "/cpu_change", "", 400, NULL);
	expect("GET", "/cpu_change", NULL, 400, NULL);
	expect("PUT", "/cpu_current", "{}", 400, NULL);
	expect("POST", "/cpu_change", "{\"VCPUs\":4}", 500, NULL);
	expect("POST", "/cpu_change", "{\"VCPUs\":\"500m\"}", 500, NULL);
	expect("GET", "/nothing", NULL, 404, "404 page not found\n");
	{
		/* A body past the 1 KiB limit: the runner could not have read it. */
		char big[2100];

		snprintf(big, sizeof(big), "{\"VCPUs\":2,\"pad\":\"%02000d\"}", 0);
		expect("POST", "/cpu_change", big, 400, NULL);
	}
	expect("GET", "/cpu_current", NULL, 200, "{\"VCPUs\":\"1500m\"}");
	assert_untouched(1500, 2, resizes);
	assert_true(th_count_in_file(fx.d.log, "outside the VM's bounds [1, 3]") >= 2);

	/* Back to 1 CPU: the quota (the vCPUs stay plugged, the default
	 * policy.cpu_shrink "quota"). */
	expect("POST", "/cpu_change", "{\"VCPUs\":1}", 200, "");
	if (!wait_until(quota_at_1000m, NULL, LIMIT_SCALE_S))
		fail_msg("the quota never went back to 1 CPU");
	expect("GET", "/cpu_current", NULL, 200, "{\"VCPUs\":1}");
	assert_int_equal(live_vcpus(), 2);

	/* vmact's policy never started a resize of its own. */
	assert_int_equal(th_count_in_file(fx.d.log, "resizing from"), resizes + 1);
	assert_int_equal(th_count_in_file(fx.d.log, "runner API: CPU change to"), 2);
	assert_int_equal(th_vmactd_stop(&fx.d), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runner_api),
	};

	if (!th_root_test("test_runner_api", "libvirt qemu:///system, BPF, cgroups"))
		return 1;
	return cmocka_run_group_tests_name("runner API", tests, setup, teardown);
}
