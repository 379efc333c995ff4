/* SPDX-License-Identifier: Apache-2.0 */
/* Soak: many agents (plugin clients, one request in flight per pod) drive
 * the arbiter over loopback HTTP, protocol versions mixed. After every
 * answer it checks, from the responses and from the arbiter's state, that
 * no grant was wrong: every permit within what was asked and not below
 * what the pod held, equal to the arbiter's reservation, and the sum of
 * reservations never above the watermark (so never above capacity).
 *
 * VMACT_SOAK_REQUESTS (default 1000) and VMACT_SOAK_CLIENTS (default 50)
 * size it; `make soak-arbiter` runs 100 000 requests from 200 concurrent
 * clients under ASan. It prints the requests, clients, the time taken, the
 * largest sum of permits seen against capacity, and this process's
 * resident memory at the start and the end (the arbiter and its server run
 * here). Leaks are LeakSanitizer's to find. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent-glue/arbiter/arbiter.h"
#include "agent-glue/client/plugin-client.h"
#include "base/time.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define GiB    (1024ULL * 1024 * 1024)
#define CU_CPU 250u
#define CU_MEM GiB

struct pod;

struct soak {
	sd_event *ev;
	struct net_http_client *http;
	struct ag_arbiter *arb;
	struct ag_plugin_client *clients[3];
	struct pod *pods;
	unsigned npods;
	unsigned long target, started, answered, partial;
	unsigned registered;
	unsigned seed;
	/* The largest sums of the pods' permits seen after any answer. */
	uint64_t max_cpu, max_mem;
	bool done;
	char failure[512];
};

struct pod {
	struct soak *s;
	unsigned idx;
	char name[32];
	bool has_permit;
	struct vmact_resources permit, asked;
};

static void fail_soak(struct soak *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_soak(struct soak *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failure[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
	va_end(ap);
	s->done = true;
}

static void send_next(struct pod *p);

static void check_sums(struct soak *s)
{
	struct ag_arbiter_totals t;
	uint64_t cpu = 0, mem = 0;

	ag_arbiter_totals(s->arb, &t);
	if (t.reserved.milli_cpu > t.watermark.milli_cpu ||
	    t.reserved.mem_bytes > t.watermark.mem_bytes)
		fail_soak(s, "arbiter reserved %um/%llu above watermark %um/%llu",
			  t.reserved.milli_cpu, (unsigned long long)t.reserved.mem_bytes,
			  t.watermark.milli_cpu, (unsigned long long)t.watermark.mem_bytes);
	for (unsigned i = 0; i < s->npods; i++) {
		if (!s->pods[i].has_permit)
			continue;
		cpu += s->pods[i].permit.milli_cpu;
		mem += s->pods[i].permit.mem_bytes;
	}
	/* Pods with a request in flight may already hold a newer grant on
	 * the arbiter side; the permits they last saw can only be larger
	 * for decreases in flight, never for increases, so compare against
	 * capacity (what no grant may ever exceed). */
	if (cpu > s->max_cpu)
		s->max_cpu = cpu;
	if (mem > s->max_mem)
		s->max_mem = mem;
	if (cpu > t.total.milli_cpu || mem > t.total.mem_bytes)
		fail_soak(s, "sum of permits %llum/%llu above capacity %um/%llu",
			  (unsigned long long)cpu, (unsigned long long)mem, t.total.milli_cpu,
			  (unsigned long long)t.total.mem_bytes);
}

static void on_answer(void *ud, const struct ag_plugin_result *res)
{
	struct pod *p = ud;
	struct soak *s = p->s;
	struct vmact_resources held, current;
	struct vmact_err err = { 0 };

	s->answered++;
	if (res->error) {
		fail_soak(s, "pod %s: request failed: %s", p->name, res->message);
		return;
	}
	/* The pod "runs" at its previous permit; it never asks below that
	 * without it being a decrease, so usage is the smaller of the two. */
	current = p->has_permit ? p->permit : p->asked;
	if (p->asked.milli_cpu < current.milli_cpu)
		current.milli_cpu = p->asked.milli_cpu;
	if (p->asked.mem_bytes < current.mem_bytes)
		current.mem_bytes = p->asked.mem_bytes;
	if (ag_plugin_permit_validate(&res->response.permit, &p->asked, &current, &err) < 0) {
		fail_soak(s, "pod %s: wrong grant: %s", p->name, err.msg);
		return;
	}
	if (ag_arbiter_pod(s->arb, "soak", p->name, &held, NULL) < 0 ||
	    held.milli_cpu != res->response.permit.milli_cpu ||
	    held.mem_bytes != res->response.permit.mem_bytes) {
		fail_soak(s, "pod %s: permit differs from the arbiter's reservation", p->name);
		return;
	}
	if (res->response.permit.milli_cpu < p->asked.milli_cpu ||
	    res->response.permit.mem_bytes < p->asked.mem_bytes)
		s->partial++;
	p->permit = res->response.permit;
	check_sums(s);
	if (s->answered >= s->target) {
		s->done = true;
		return;
	}
	/* Every pod registers (at the size it runs) before any grows: a
	 * VM that appears on a full node is reality the arbiter tolerates
	 * beyond the watermark, which is not what this test is about. */
	if (!p->has_permit) {
		p->has_permit = true;
		if (++s->registered == s->npods)
			for (unsigned i = 0; i < s->npods && s->started < s->target; i++)
				send_next(&s->pods[i]);
		return;
	}
	if (s->started < s->target)
		send_next(p);
}

static void send_next(struct pod *p)
{
	struct soak *s = p->s;
	struct ag_agent_request r;
	struct vmact_err err = { 0 };
	struct ag_plugin_client *pc = s->clients[p->idx % 3];
	struct vmact_resources usage;

	memset(&r, 0, sizeof(r));
	strcpy(r.pod_namespace, "soak");
	strcpy(r.pod_name, p->name);
	r.has_compute_unit = true;
	r.compute_unit = (struct vmact_resources){ CU_CPU, CU_MEM };
	if (!p->has_permit) {
		/* First contact: the size the VM runs at now (1 CU). */
		r.resources = (struct vmact_resources){ CU_CPU, CU_MEM };
	} else {
		r.resources.milli_cpu = CU_CPU * (1 + (unsigned)rand_r(&s->seed) % 16);
		r.resources.mem_bytes = CU_MEM * (1 + (unsigned)rand_r(&s->seed) % 16);
		r.has_last_permit = true;
		r.last_permit = p->permit;
	}
	r.has_metrics = (rand_r(&s->seed) & 1) != 0;
	r.metrics = (struct ag_plugin_metrics){ 0.37f, 0.25f, 1e8f };
	p->asked = r.resources;
	/* Like the agent, a decrease is only asked for after the VM shrank:
	 * usage is the smaller of the last permit and the request. */
	usage = p->has_permit ? p->permit : r.resources;
	if (r.resources.milli_cpu < usage.milli_cpu)
		usage.milli_cpu = r.resources.milli_cpu;
	if (r.resources.mem_bytes < usage.mem_bytes)
		usage.mem_bytes = r.resources.mem_bytes;
	s->started++;
	if (ag_plugin_client_request(pc, &r, &usage, on_answer, p, &err) < 0)
		fail_soak(s, "pod %s: cannot send: %s", p->name, err.msg);
}

static unsigned long env_num(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return dflt;
	n = strtoul(v, &end, 10);
	return *end || !n ? dflt : n;
}

static void test_soak(void **state)
{
	struct soak s = { .seed = 12345 };
	struct ag_arbiter_config cfg = {
		/* Set below: 320m and 1.28 GiB a pod (16 CPUs and 64 GiB for
		 * 50), so that every pod fits at 1 CU and growth contends. */
		.capacity = { 0, 0 },
		.watermark = 0.9,
		.slot_bytes = GiB,
		.legacy_compute_unit = { CU_CPU, CU_MEM },
	};
	static const enum ag_plugin_version versions[3] = { AG_PLUGIN_V5_0, AG_PLUGIN_V4_0,
							    AG_PLUGIN_V2_1 };
	struct vmact_err err = { 0 };
	struct ag_arbiter_totals t;
	char url[64];
	uint64_t t0;
	long rss0;

	(void)state;
	s.target = env_num("VMACT_SOAK_REQUESTS", 1000);
	s.npods = (unsigned)env_num("VMACT_SOAK_CLIENTS", 50);
	cfg.capacity.milli_cpu = 320u * s.npods;
	cfg.capacity.mem_bytes = 64 * GiB * s.npods / 50;
	assert_int_equal(sd_event_new(&s.ev), 0);
	assert_int_equal(net_http_client_new(s.ev, &s.http, NULL), 0);
	if (ag_arbiter_new(&cfg, &s.arb, &err) < 0 ||
	    ag_arbiter_listen(s.arb, s.ev, "127.0.0.1:0", &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(ag_plugin_url("127.0.0.1", ag_arbiter_port(s.arb), url, sizeof(url)), 0);
	for (int i = 0; i < 3; i++) {
		struct ag_plugin_client_config pcfg = { .url = url,
							.version = versions[i],
							.slot_bytes = GiB };

		if (ag_plugin_client_new(s.http, &pcfg, &s.clients[i], &err) < 0)
			fail_msg("%s", err.msg);
	}
	s.pods = calloc(s.npods, sizeof(*s.pods));
	assert_non_null(s.pods);
	for (unsigned i = 0; i < s.npods; i++) {
		s.pods[i].s = &s;
		s.pods[i].idx = i;
		snprintf(s.pods[i].name, sizeof(s.pods[i].name), "vm-%03u", i);
	}
	rss0 = th_proc_rss_kib(getpid());
	t0 = vmact_now_usec();
	for (unsigned i = 0; i < s.npods && s.started < s.target; i++)
		send_next(&s.pods[i]);
	while (!s.done)
		if (sd_event_run(s.ev, (uint64_t)-1) < 0)
			break;

	ag_arbiter_totals(s.arb, &t);
	printf("soak: %lu requests from %u concurrent clients answered in %.1f s, %lu partial "
	       "grants\n"
	       "soak: largest sum of permits %llum CPU / %llu MiB, capacity %um / %llu MiB "
	       "(watermark %um / %llu MiB)\n"
	       "soak: arbiter at the end: %u pods, reserved %um / %llu MiB; RSS %ld KiB at the "
	       "start, %ld KiB at the end\n",
	       s.answered, s.npods, (double)(vmact_now_usec() - t0) / 1e6, s.partial,
	       (unsigned long long)s.max_cpu, (unsigned long long)(s.max_mem >> 20),
	       t.total.milli_cpu, (unsigned long long)(t.total.mem_bytes >> 20),
	       t.watermark.milli_cpu, (unsigned long long)(t.watermark.mem_bytes >> 20), t.pods,
	       t.reserved.milli_cpu, (unsigned long long)(t.reserved.mem_bytes >> 20), rss0,
	       th_proc_rss_kib(getpid()));
	for (int i = 0; i < 3; i++)
		ag_plugin_client_free(s.clients[i]);
	net_http_client_free(s.http);
	ag_arbiter_free(s.arb);
	sd_event_unref(s.ev);
	free(s.pods);
	if (s.failure[0])
		fail_msg("%s", s.failure);
	assert_true(s.answered >= s.target);
	/* The node was contended: some grants had to be partial. */
	assert_true(s.partial > 0);
	assert_int_equal(t.refused, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};

	return cmocka_run_group_tests_name("test_arbiter_soak", tests, NULL, NULL);
}
