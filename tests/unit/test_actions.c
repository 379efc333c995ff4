/* SPDX-License-Identifier: Apache-2.0 */
/* The next-actions state machine driven through the scenarios of the Go
 * agent's state tests (doc/protocols.md, "Agent test cases") with an injected clock: each
 * step either feeds an event or asserts the exact action set (targets,
 * lastPermit, metrics, Wait, warnings). Then property tests: random event
 * sequences never produce a hotplug beyond max/permit, below min, or down
 * without the monitor's approval. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/policy/actions.h"
#include "base/macro.h"

#define GiB (1024ULL * 1024 * 1024)
static const struct vmact_resources CU = { 250, GiB };

static struct vmact_resources cu(unsigned n)
{
	return vmact_res_mul(CU, n);
}

#define W_MISSING ACT_WARN_MISSING_METRICS
#define W_PLUGIN_DENIED \
	"Wanted to make a request to the scheduler plugin, but previous request for more resources was denied too recently"
#define W_PLUGIN_FAILED \
	"Wanted to make a request to the scheduler plugin, but previous request failed too recently"
#define W_HOTPLUG_FAILED "Wanted to hotplug resources, but the previous hotplug failed too recently"

enum op {
	END,
	TICK,    /* advance the clock by ms */
	NEXT,    /* assert act_next_actions */
	DESIRED, /* assert the desired CU only */
	METRICS, /* load1 = x, everything else as given */
	CONNECT, /* monitor connected */
	UPREQ,   /* monitor UpscaleRequest{memory} */
	BOUNDS,  /* VM update: min n CU, max n2 CU */
	P_START,
	P_OK,
	P_FAIL,
	H_START,
	H_DONE,
	H_FAIL,
	MU_START,
	MU_OK,
	MD_START,
	MD_OK,
	MD_DENIED,
	ROOM, /* the scheduler freed room (plugin.room_at = now) */
};

struct step {
	enum op op;
	int64_t ms;     /* TICK */
	unsigned n, n2; /* CU count for starts, permits, DESIRED, BOUNDS */
	double load1, mem_usage;
	/* NEXT expectations; CU counts, 0 = no such action */
	bool has_wait;
	int64_t wait_ms;
	unsigned p_last, p_target; /* p_last 0: lastPermit null */
	bool plugin;
	double p_load; /* < 0: metrics null */
	unsigned h_from, h_to, mu_from, mu_to, md_from, md_to;
	const char *warn[4];
	int line;
};

#define S(...)                                \
	{                                     \
		__VA_ARGS__, .line = __LINE__ \
	}
#define WAIT(x) .has_wait = true, .wait_ms = (x)
#define PLUGIN(last, target, load) \
	.plugin = true, .p_last = (last), .p_target = (target), .p_load = (load)
#define HOTPLUG(a, b) .h_from = (a), .h_to = (b)
#define MUP(a, b)     .mu_from = (a), .mu_to = (b)
#define MDOWN(a, b)   .md_from = (a), .md_to = (b)
#define WARN(...)     .warn = { __VA_ARGS__ }

/* doInitialPluginRequest of the Go tests: no metrics yet, 100 ms request. */
#define INITIAL_REQUEST(k)                                                          \
	S(.op = NEXT, PLUGIN(0, k, -1), WARN(W_MISSING)), S(.op = P_START, .n = k), \
		S(.op = TICK, .ms = 100), S(.op = P_OK, .n = k)

struct scenario {
	const char *name;
	unsigned min_cu, max_cu, start_cu;
	void (*tweak)(struct act_timing *t);
	const struct step *steps;
};

static void default_timing(struct act_timing *t)
{
	/* DefaultInitialStateConfig of the Go tests. */
	*t = (struct act_timing){
		.plugin_request_tick = ACT_SEC(5),
		.plugin_retry_wait = ACT_SEC(3),
		.plugin_denied_retry_wait = ACT_SEC(2),
		.hotplug_retry_wait = ACT_SEC(5),
		.monitor_denied_downscale_cooldown = ACT_SEC(5),
		.monitor_requested_upscale_valid = ACT_SEC(10),
		.monitor_retry_wait = ACT_SEC(3),
	};
}

static void default_config(struct ag_scaling_config *c)
{
	ag_scaling_config_defaults(c);
	c->load_average_fraction_target = 0.5;
	c->memory_usage_fraction_target = 0.5;
	c->memory_total_fraction_target = 0.9;
	c->lfc_to_memory_ratio = 0.75;
	c->lfc_window_size_minutes = 5;
	c->lfc_min_wait_before_downscale_minutes = 15;
}

static void fail_at(const struct scenario *sc, const struct step *st, const char *what)
{
	print_error("%s: step at line %d: %s\n", sc->name, st->line, what);
	fail();
}

static void check_change(const struct scenario *sc, const struct step *st, const char *name,
			 bool has, const struct act_res_change *c, unsigned from, unsigned to)
{
	char buf[160];

	if (!from) {
		if (has) {
			snprintf(buf, sizeof(buf), "unexpected %s action %u->%u m", name,
				 c->current.milli_cpu, c->target.milli_cpu);
			fail_at(sc, st, buf);
		}
		return;
	}
	if (!has) {
		snprintf(buf, sizeof(buf), "missing %s action", name);
		fail_at(sc, st, buf);
	}
	if (!vmact_res_eq(c->current, cu(from)) || !vmact_res_eq(c->target, cu(to))) {
		snprintf(buf, sizeof(buf),
			 "%s action %u m/%llu B -> %u m/%llu B, want %u CU -> %u CU", name,
			 c->current.milli_cpu, (unsigned long long)c->current.mem_bytes,
			 c->target.milli_cpu, (unsigned long long)c->target.mem_bytes, from, to);
		fail_at(sc, st, buf);
	}
}

static void check_next(const struct scenario *sc, const struct step *st,
		       const struct act_actions *a, const struct act_state *s)
{
	char buf[600];
	unsigned nwarn = 0;

	if (a->has_wait != st->has_wait || (st->has_wait && a->wait != ACT_MS(st->wait_ms))) {
		snprintf(buf, sizeof(buf), "wait %s %lld ns, want %s %lld ms",
			 a->has_wait ? "" : "(none)", (long long)a->wait,
			 st->has_wait ? "" : "(none)", (long long)st->wait_ms);
		fail_at(sc, st, buf);
	}
	if (a->has_plugin != st->plugin)
		fail_at(sc, st,
			st->plugin ? "missing plugin request" : "unexpected plugin request");
	if (st->plugin) {
		if (a->plugin.has_last_permit != (st->p_last != 0) ||
		    (st->p_last && !vmact_res_eq(a->plugin.last_permit, cu(st->p_last))))
			fail_at(sc, st, "plugin lastPermit");
		if (!vmact_res_eq(a->plugin.target, cu(st->p_target))) {
			snprintf(buf, sizeof(buf), "plugin target %u m, want %u CU",
				 a->plugin.target.milli_cpu, st->p_target);
			fail_at(sc, st, buf);
		}
		if (a->plugin.has_metrics != (st->p_load >= 0) ||
		    (st->p_load >= 0 && a->plugin.load_avg_1m != st->p_load))
			fail_at(sc, st, "plugin metrics");
	}
	check_change(sc, st, "hotplug", a->has_hotplug, &a->hotplug, st->h_from, st->h_to);
	check_change(sc, st, "monitor upscale", a->has_monitor_upscale, &a->monitor_upscale,
		     st->mu_from, st->mu_to);
	check_change(sc, st, "monitor downscale", a->has_monitor_downscale, &a->monitor_downscale,
		     st->md_from, st->md_to);
	while (nwarn < ARRAY_SIZE(st->warn) && st->warn[nwarn])
		nwarn++;
	if (a->warnings.n != nwarn) {
		snprintf(buf, sizeof(buf), "%u warnings (first: %s), want %u", a->warnings.n,
			 a->warnings.n ? a->warnings.msg[0] : "-", nwarn);
		fail_at(sc, st, buf);
	}
	for (unsigned i = 0; i < nwarn; i++)
		if (strcmp(a->warnings.msg[i], st->warn[i]) != 0) {
			snprintf(buf, sizeof(buf), "warning %u: \"%s\", want \"%s\"", i,
				 a->warnings.msg[i], st->warn[i]);
			fail_at(sc, st, buf);
		}
	(void)s;
}

static void run_scenario(const struct scenario *sc)
{
	struct ag_scaling_config cfg;
	struct act_timing timing;
	struct vmact_err err = { 0 };
	struct act_state *s = calloc(1, sizeof(*s));
	struct vmact_resources start = cu(sc->start_cu), min = cu(sc->min_cu), max = cu(sc->max_cu);
	act_time_t now = ACT_SEC(1000); /* any monotonic origin */

	assert_non_null(s);
	default_timing(&timing);
	if (sc->tweak)
		sc->tweak(&timing);
	default_config(&cfg);
	assert_int_equal(act_state_init(s, &timing, &CU, &cfg, &start, &min, &max, &err), 0);

	for (const struct step *st = sc->steps; st->op != END; st++) {
		struct act_actions a;
		struct vmact_resources r = cu(st->n);
		int ret = 0;

		vmact_err_reset(&err);
		switch (st->op) {
		case END:
			break;
		case TICK:
			now += ACT_MS(st->ms);
			break;
		case NEXT:
			assert_int_equal(act_next_actions(s, now, &a, &err), 0);
			check_next(sc, st, &a, s);
			break;
		case DESIRED:
			assert_int_equal(act_next_actions(s, now, &a, &err), 0);
			if (!vmact_res_eq(a.desired, cu(st->n)))
				fail_at(sc, st, "desired resources");
			break;
		case METRICS: {
			struct act_system_metrics m = { .load1 = st->load1,
							.memory_usage_bytes = st->mem_usage };

			ret = act_state_update_system_metrics(s, &m, &err);
			break;
		}
		case CONNECT:
			act_monitor_connected(s);
			break;
		case UPREQ:
			ret = act_monitor_upscale_requested(s, now, false, true, &err);
			break;
		case BOUNDS: {
			struct vmact_resources lo = cu(st->n), hi = cu(st->n2);

			ret = act_state_update_vm(s, &lo, &hi, &cfg, &err);
			break;
		}
		case P_START:
			ret = act_plugin_starting(s, now, &r, &err);
			break;
		case P_OK:
			ret = act_plugin_response(s, now, &r, &err);
			break;
		case P_FAIL:
			act_plugin_failed(s, now);
			break;
		case ROOM:
			s->plugin.room_at = now;
			break;
		case H_START:
			ret = act_hotplug_starting(s, now, &r, &err);
			break;
		case H_DONE: {
			/* The whole target reached, as the runner reports it. */
			struct vmact_resources got = s->hotplug.ongoing_target;

			ret = act_hotplug_finished(s, now, &got, false, &err);
			break;
		}
		case H_FAIL:
			act_hotplug_failed(s, now);
			break;
		case MU_START:
			ret = act_monitor_upscale_starting(s, now, &r, &err);
			break;
		case MU_OK:
			ret = act_monitor_upscale_ok(s, now, &err);
			break;
		case MD_START:
			ret = act_monitor_downscale_starting(s, now, &r, &err);
			break;
		case MD_OK:
			ret = act_monitor_downscale_ok(s, now, &err);
			break;
		case MD_DENIED:
			ret = act_monitor_downscale_denied(s, now, &err);
			break;
		}
		if (ret != 0)
			fail_at(sc, st, err.msg);
	}
	free(s);
}

/* ---- TestBasicScaleUpAndDownFlow ----------------------------------- */

static const struct step basic_flow[] = {
	S(.op = CONNECT),
	INITIAL_REQUEST(1),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.3),
	S(.op = DESIRED, .n = 2),
	/* ask the plugin first */
	S(.op = NEXT, PLUGIN(1, 2, 0.3)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT),
	S(.op = P_OK, .n = 2),
	/* then plug */
	S(.op = NEXT, WAIT(4900), HOTPLUG(1, 2)),
	S(.op = H_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(4800)),
	S(.op = H_DONE),
	/* then tell the monitor */
	S(.op = NEXT, WAIT(4800), MUP(1, 2)),
	S(.op = MU_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(4700)),
	S(.op = MU_OK),
	S(.op = NEXT, WAIT(4700)),
	/* load gone: monitor first, then unplug, then the plugin */
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.0),
	S(.op = DESIRED, .n = 1),
	S(.op = NEXT, WAIT(4600), MDOWN(2, 1)),
	S(.op = MD_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(4500)),
	S(.op = MD_OK),
	S(.op = NEXT, WAIT(4500), HOTPLUG(2, 1)),
	S(.op = H_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(4400)),
	S(.op = H_DONE),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, PLUGIN(2, 1, 0.0)),
	S(.op = P_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT),
	S(.op = P_OK, .n = 1),
	S(.op = NEXT, WAIT(4900)),
	{ .op = END },
};

static void test_basic_scale_up_and_down_flow(void **state)
{
	struct scenario sc = { "TestBasicScaleUpAndDownFlow", 1, 4, 1, NULL, basic_flow };

	run_scenario(&sc);
}

/* ---- load gone while a plug is in flight ----------------------------- */

/* The periodic plugin request during the plug asks for no less than the
 * plug's target: a permit below it would leave the VM above its permit
 * once the plug completes (found by make soak: a virtio-mem plug to
 * 1280Mi completed under a permit of 768Mi). */
static const struct step gone_mid_plug[] = {
	S(.op = CONNECT),
	INITIAL_REQUEST(1),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.3),
	S(.op = DESIRED, .n = 2),
	S(.op = NEXT, PLUGIN(1, 2, 0.3)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 2),
	S(.op = NEXT, WAIT(4900), HOTPLUG(1, 2)),
	S(.op = H_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.0),
	S(.op = DESIRED, .n = 1),
	S(.op = TICK, .ms = 4800),
	S(.op = NEXT, PLUGIN(2, 2, 0.0)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 2),
	S(.op = H_DONE),
	{ .op = END },
};

static void test_load_gone_mid_plug(void **state)
{
	struct scenario sc = { "load gone mid-plug", 1, 4, 1, NULL, gone_mid_plug };

	run_scenario(&sc);
}

/* ---- TestPartialUpscaleThenFull ------------------------------------ */

/* 4 CUs wanted, 3 granted (the denial's backoff begins), 3 plugged. */
#define PARTIAL_GRANT                                                                            \
	S(.op = CONNECT), INITIAL_REQUEST(1), S(.op = TICK, .ms = 100),                          \
		S(.op = METRICS, .load1 = 1.0, .mem_usage = 12345678), S(.op = DESIRED, .n = 4), \
		S(.op = NEXT, PLUGIN(1, 4, 1.0)), S(.op = P_START, .n = 4),                      \
		S(.op = TICK, .ms = 100), S(.op = NEXT),                                         \
		S(.op = P_OK, .n = 3), /* only 3 of 4 granted */                                 \
		S(.op = NEXT, WAIT(1900), HOTPLUG(1, 3), WARN(W_PLUGIN_DENIED)),                 \
		S(.op = H_START, .n = 3), S(.op = TICK, .ms = 100), S(.op = H_DONE)

static const struct step partial_upscale[] = {
	PARTIAL_GRANT,
	S(.op = TICK, .ms = 100),
	S(.op = TICK, .ms = 2000),
	/* monitor notification and the renewed plugin request together */
	S(.op = NEXT, MUP(1, 3), PLUGIN(3, 4, 1.0)),
	S(.op = MU_START, .n = 3),
	S(.op = P_START, .n = 4),
	S(.op = TICK, .ms = 100),
	S(.op = MU_OK),
	S(.op = P_OK, .n = 4),
	S(.op = NEXT, WAIT(4900), HOTPLUG(3, 4)),
	S(.op = H_START, .n = 4),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(4700), MUP(3, 4)),
	{ .op = END },
};

static void test_partial_upscale_then_full(void **state)
{
	struct scenario sc = { "TestPartialUpscaleThenFull", 1, 4, 1, NULL, partial_upscale };

	run_scenario(&sc);
}

/* vmact's own: the same partial grant, then the scheduler frees room
 * 500 ms later (a VM moved away): the growth is asked again at once, not
 * after the denial's 2 s. */
static const struct step room_freed[] = {
	PARTIAL_GRANT,
	S(.op = TICK, .ms = 400),
	/* still within the backoff */
	S(.op = NEXT, WAIT(1400), MUP(1, 3), WARN(W_PLUGIN_DENIED)),
	S(.op = MU_START, .n = 3),
	S(.op = TICK, .ms = 100),
	S(.op = MU_OK),
	S(.op = ROOM),
	S(.op = NEXT, PLUGIN(3, 4, 1.0)),
	S(.op = P_START, .n = 4),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 4),
	S(.op = NEXT, WAIT(4900), HOTPLUG(3, 4)),
	{ .op = END },
};

static void test_room_freed_ends_backoff(void **state)
{
	struct scenario sc = { "room freed", 1, 4, 1, NULL, room_freed };

	run_scenario(&sc);
}

/* ---- TestDeniedDownscalingIncreaseAndRetry ------------------------- */

static void denied_timing(struct act_timing *t)
{
	t->plugin_request_tick = ACT_SEC(7);
	t->monitor_denied_downscale_cooldown = ACT_SEC(4);
}

#define DOWN_STEP(from, to, hp_from, hp_to, wait_ms, result)                                       \
	S(.op = NEXT, WAIT(wait_ms), MDOWN(from, to), HOTPLUG(hp_from, hp_to)),                    \
		S(.op = MD_START, .n = to), S(.op = NEXT, WAIT(wait_ms), HOTPLUG(hp_from, hp_to)), \
		S(.op = TICK, .ms = 100), S(.op = result)

static const struct step denied_downscale[] = {
	S(.op = CONNECT),
	INITIAL_REQUEST(6),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.0),
	S(.op = DESIRED, .n = 1),
	/* first pass: denied */
	S(.op = NEXT, WAIT(6800), MDOWN(6, 5)),
	S(.op = MD_START, .n = 5),
	S(.op = TICK, .ms = 100),
	S(.op = MD_DENIED),
	S(.op = NEXT, WAIT(4000)), /* the denial cooldown */
	S(.op = TICK, .ms = 4000),
	/* second pass: one CU per request, down to 3, then 2 is denied; the
	 * hotplug follows each approval */
	DOWN_STEP(6, 5, 0, 0, 2700, MD_OK),
	DOWN_STEP(5, 4, 6, 5, 2600, MD_OK),
	DOWN_STEP(4, 3, 6, 4, 2500, MD_OK),
	DOWN_STEP(3, 2, 6, 3, 2400, MD_DENIED),
	S(.op = NEXT, WAIT(2300), HOTPLUG(6, 3)),
	S(.op = H_START, .n = 3),
	S(.op = NEXT, WAIT(2300)),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, WAIT(3900), PLUGIN(6, 3, 0.0)),
	S(.op = P_START, .n = 3),
	S(.op = NEXT, WAIT(3900)),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 3),
	S(.op = NEXT, WAIT(3800)),
	S(.op = TICK, .ms = 3800),
	/* third pass: denied again */
	S(.op = NEXT, WAIT(3100), MDOWN(3, 2)),
	S(.op = MD_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = MD_DENIED),
	S(.op = NEXT, WAIT(3000)),
	S(.op = TICK, .ms = 3000),
	S(.op = NEXT, WAIT(1000), PLUGIN(3, 3, 0.0)), /* the periodic request */
	S(.op = P_START, .n = 3),
	S(.op = NEXT, WAIT(1000)),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 3),
	S(.op = NEXT, WAIT(900)),
	S(.op = TICK, .ms = 900),
	/* fourth pass: approved down to 1, one CU at a time */
	DOWN_STEP(3, 2, 0, 0, 6000, MD_OK),
	DOWN_STEP(2, 1, 3, 2, 5900, MD_OK),
	S(.op = NEXT, WAIT(5800), HOTPLUG(3, 1)),
	S(.op = H_START, .n = 1),
	S(.op = NEXT, WAIT(5800)),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, PLUGIN(3, 1, 0.0)),
	S(.op = P_START, .n = 1),
	S(.op = NEXT),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 1),
	S(.op = NEXT, WAIT(6900)),
	{ .op = END },
};

static void test_denied_downscaling_increase_and_retry(void **state)
{
	struct scenario sc = {
		"TestDeniedDownscalingIncreaseAndRetry", 1, 8, 6, denied_timing, denied_downscale
	};

	run_scenario(&sc);
}

/* ---- TestRequestedUpscale ------------------------------------------ */

static void requested_timing(struct act_timing *t)
{
	t->monitor_requested_upscale_valid = ACT_SEC(6);
}

static const struct step requested_upscale[] = {
	S(.op = CONNECT),
	INITIAL_REQUEST(1),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.0),
	S(.op = NEXT, WAIT(4800)),
	S(.op = UPREQ),
	/* the request stands for 6 s */
	S(.op = NEXT, WAIT(6000), PLUGIN(1, 2, 0.0)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(5900)),
	S(.op = P_OK, .n = 2),
	S(.op = NEXT, WAIT(4900), HOTPLUG(1, 2)),
	S(.op = H_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, WAIT(4800), MUP(1, 2)),
	S(.op = MU_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = MU_OK),
	S(.op = NEXT, WAIT(4700)),
	S(.op = TICK, .ms = 4700),
	S(.op = NEXT, WAIT(1000), PLUGIN(2, 2, 0.0)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(900)),
	S(.op = P_OK, .n = 2),
	S(.op = NEXT, WAIT(900)),
	S(.op = TICK, .ms = 900),
	/* expired: back down */
	S(.op = NEXT, WAIT(4000), MDOWN(2, 1)),
	{ .op = END },
};

static void test_requested_upscale(void **state)
{
	struct scenario sc = {
		"TestRequestedUpscale", 1, 4, 1, requested_timing, requested_upscale
	};

	run_scenario(&sc);
}

/* ---- TestFailedRequestRetry ---------------------------------------- */

static void failed_timing(struct act_timing *t)
{
	t->plugin_retry_wait = ACT_SEC(2);
	t->hotplug_retry_wait = ACT_SEC(3);
}

static const struct step failed_retry[] = {
	S(.op = CONNECT),
	INITIAL_REQUEST(1),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.3),
	S(.op = NEXT, PLUGIN(1, 2, 0.3)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = P_FAIL),
	S(.op = NEXT, WAIT(2000), WARN(W_PLUGIN_FAILED)),
	S(.op = TICK, .ms = 2000),
	S(.op = NEXT, PLUGIN(1, 2, 0.3)),
	S(.op = P_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 2),
	S(.op = NEXT, WAIT(4900), HOTPLUG(1, 2)),
	S(.op = H_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = H_FAIL),
	S(.op = NEXT, WAIT(3000), WARN(W_HOTPLUG_FAILED)),
	S(.op = TICK, .ms = 3000),
	S(.op = NEXT, WAIT(1800), HOTPLUG(1, 2)),
	S(.op = H_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, WAIT(1700), MUP(1, 2)),
	{ .op = END },
};

static void test_failed_request_retry(void **state)
{
	struct scenario sc = { "TestFailedRequestRetry", 1, 2, 1, failed_timing, failed_retry };

	run_scenario(&sc);
}

/* ---- TestBoundsChangeRequiresDownsale / ...Upscale ----------------- */

/* At 2 CU with load for 2 CU, then the bounds change. */
#define BOUNDS_PREFIX                                                     \
	S(.op = CONNECT), INITIAL_REQUEST(2), S(.op = TICK, .ms = 100),   \
		S(.op = METRICS, .load1 = 0.3), S(.op = DESIRED, .n = 2), \
		S(.op = NEXT, WAIT(4800)), S(.op = TICK, .ms = 100)

static const struct step bounds_down[] = {
	BOUNDS_PREFIX,
	S(.op = BOUNDS, .n = 1, .n2 = 1),
	S(.op = NEXT, WAIT(4700), MDOWN(2, 1)),
	S(.op = MD_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = MD_OK),
	S(.op = NEXT, WAIT(4600), HOTPLUG(2, 1)),
	S(.op = H_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, PLUGIN(2, 1, 0.3)),
	S(.op = P_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = NEXT, WAIT(4800)),
	{ .op = END },
};

static void test_bounds_change_requires_downscale(void **state)
{
	struct scenario sc = { "TestBoundsChangeRequiresDownsale", 1, 3, 2, NULL, bounds_down };

	run_scenario(&sc);
}

static const struct step bounds_up[] = {
	BOUNDS_PREFIX,
	S(.op = BOUNDS, .n = 3, .n2 = 3),
	S(.op = NEXT, PLUGIN(2, 3, 0.3)),
	S(.op = P_START, .n = 3),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 3),
	S(.op = NEXT, WAIT(4900), HOTPLUG(2, 3)),
	S(.op = H_START, .n = 3),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, WAIT(4800), MUP(2, 3)),
	S(.op = MU_START, .n = 3),
	S(.op = TICK, .ms = 100),
	S(.op = MU_OK),
	S(.op = NEXT, WAIT(4700)),
	{ .op = END },
};

static void test_bounds_change_requires_upscale(void **state)
{
	struct scenario sc = { "TestBoundsChangeRequiresUpscale", 1, 3, 2, NULL, bounds_up };

	run_scenario(&sc);
}

/* ---- TestDownscalePivotBack ---------------------------------------- */

/* Load returns in the middle of each stage of a downscale (monitor request,
 * unplug, usage update, plugin notification); the stages already done are
 * undone in reverse, the rest never happen. */
#define PUSH(...) (steps[k++] = (struct step)S(__VA_ARGS__))

static void test_downscale_pivot_back(void **state)
{
	for (int i = 0; i < 4; i++) {
		struct step steps[64];
		size_t k = 0;
		int64_t pw = 4800;
		char name[64];

		PUSH(.op = CONNECT);
		PUSH(.op = NEXT, PLUGIN(0, 2, -1), WARN(W_MISSING));
		PUSH(.op = P_START, .n = 2);
		PUSH(.op = TICK, .ms = 100);
		PUSH(.op = P_OK, .n = 2);
		PUSH(.op = TICK, .ms = 100);
		PUSH(.op = METRICS, .load1 = 0.0);
		PUSH(.op = DESIRED, .n = 1);
		for (int j = 0; j <= i; j++) {
			bool mid = j == i;

			switch (j) {
			case 0:
				PUSH(.op = NEXT, WAIT(pw), MDOWN(2, 1));
				PUSH(.op = MD_START, .n = 1);
				break;
			case 1:
				PUSH(.op = NEXT, WAIT(pw), HOTPLUG(2, 1));
				PUSH(.op = H_START, .n = 1);
				break;
			case 3:
				PUSH(.op = NEXT, PLUGIN(2, 1, 0.0));
				PUSH(.op = P_START, .n = 1);
				break;
			}
			if (j != 2)
				PUSH(.op = TICK, .ms = 50);
			if (mid) {
				PUSH(.op = METRICS, .load1 = 0.3);
				PUSH(.op = DESIRED, .n = 2);
			}
			if (j != 2)
				PUSH(.op = TICK, .ms = 50);
			switch (j) {
			case 0:
				pw -= 100;
				PUSH(.op = MD_OK);
				break;
			case 1:
				pw -= 100;
				PUSH(.op = H_DONE);
				break;
			case 3:
				pw = 4900;
				PUSH(.op = P_OK, .n = 1);
				break;
			}
		}
		for (int j = i; j >= 0; j--) {
			switch (j) {
			case 3:
				PUSH(.op = NEXT, PLUGIN(1, 2, 0.3));
				PUSH(.op = P_START, .n = 2);
				PUSH(.op = TICK, .ms = 100);
				pw = 4900;
				PUSH(.op = P_OK, .n = 2);
				break;
			case 1:
				PUSH(.op = NEXT, WAIT(pw), HOTPLUG(1, 2));
				PUSH(.op = H_START, .n = 2);
				PUSH(.op = TICK, .ms = 100);
				pw -= 100;
				PUSH(.op = H_DONE);
				break;
			case 0:
				PUSH(.op = NEXT, WAIT(pw), MUP(1, 2));
				PUSH(.op = MU_START, .n = 2);
				PUSH(.op = TICK, .ms = 100);
				pw -= 100;
				PUSH(.op = MU_OK);
				break;
			}
		}
		PUSH(.op = NEXT, WAIT(pw));
		steps[k].op = END;
		assert_true(k < ARRAY_SIZE(steps));
		snprintf(name, sizeof(name), "TestDownscalePivotBack iter %d", i);
		run_scenario(&(struct scenario){ name, 1, 3, 2, NULL, steps });
	}
}

/* ---- TestMetricsConcurrentUpdatedDuringDownscale ------------------- */

/* A VM assigned above its max (pooled VMs), no monitor at first, metrics
 * arriving in the middle of the monitor request. */
static const struct step concurrent_metrics[] = {
	S(.op = NEXT, PLUGIN(0, 3, -1),
	  WARN(W_MISSING,
	       "Wanted to send vm-monitor downscale request, but there's no active connection")),
	S(.op = P_START, .n = 3),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 3),
	S(.op = TICK, .ms = 100),
	S(.op = CONNECT),
	/* without metrics only down to what the bounds require */
	S(.op = NEXT, WAIT(4800), MDOWN(3, 2), WARN(W_MISSING)),
	S(.op = MD_START, .n = 2),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.0, .mem_usage = 150589570),
	S(.op = NEXT, WAIT(4700)),
	S(.op = TICK, .ms = 100),
	S(.op = MD_OK),
	S(.op = NEXT, WAIT(4600), HOTPLUG(3, 2), MDOWN(2, 1)),
	S(.op = H_START, .n = 2),
	S(.op = MD_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = MD_OK),
	S(.op = NEXT, WAIT(4500),
	  WARN("Wanted to hotplug resources, but there's already hotplug (for different resources) ongoing")),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	/* the plugin hears of 2 CU (what is plugged), not of 1 CU */
	S(.op = NEXT, PLUGIN(3, 2, 0.0), HOTPLUG(2, 1)),
	S(.op = P_START, .n = 2),
	S(.op = H_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 2),
	S(.op = NEXT, WAIT(4900)),
	S(.op = TICK, .ms = 100),
	S(.op = H_DONE),
	S(.op = NEXT, PLUGIN(2, 1, 0.0)),
	S(.op = P_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 1),
	S(.op = NEXT, WAIT(4900)),
	{ .op = END },
};

static void test_metrics_concurrent_updated_during_downscale(void **state)
{
	struct scenario sc = {
		"TestMetricsConcurrentUpdatedDuringDownscale", 1, 2, 3, NULL, concurrent_metrics
	};

	run_scenario(&sc);
}

/* ---- TestPeriodicPluginRequest ------------------------------------- */

/* In a stable state the plugin hears from us exactly every tick. */
static void test_periodic_plugin_request(void **state)
{
	struct act_state *s = calloc(1, sizeof(*s));
	struct ag_scaling_config cfg;
	struct act_timing t;
	struct vmact_resources one = cu(1), four = cu(4);
	struct act_system_metrics m = { 0 };
	struct act_actions a;
	const act_time_t base = ACT_SEC(50);
	act_time_t now = base;
	unsigned requests = 0;

	assert_non_null(s);
	default_timing(&t);
	default_config(&cfg);
	assert_int_equal(act_state_init(s, &t, &CU, &cfg, &one, &one, &four, NULL), 0);
	act_monitor_connected(s);
	assert_int_equal(act_state_update_system_metrics(s, &m, NULL), 0);

	assert_int_equal(act_next_actions(s, now, &a, NULL), 0);
	assert_true(a.has_plugin && !a.plugin.has_last_permit && a.plugin.has_metrics);
	assert_int_equal(a.warnings.n, 0);
	assert_int_equal(act_plugin_starting(s, now, &one, NULL), 0);
	now += ACT_MS(100);
	assert_int_equal(act_plugin_response(s, now, &one, NULL), 0);

	while (now - base < ACT_SEC(20)) {
		int64_t since = (now - base) % t.plugin_request_tick;

		assert_int_equal(act_next_actions(s, now, &a, NULL), 0);
		assert_false(a.has_hotplug || a.has_monitor_upscale || a.has_monitor_downscale);
		assert_int_equal(a.warnings.n, 0);
		if (since != 0) {
			assert_false(a.has_plugin);
			assert_true(a.has_wait);
			assert_int_equal(a.wait, t.plugin_request_tick - since);
			now += ACT_MS(100);
			continue;
		}
		assert_true(a.has_plugin);
		assert_false(a.has_wait);
		assert_true(a.plugin.has_last_permit && vmact_res_eq(a.plugin.last_permit, one));
		assert_true(vmact_res_eq(a.plugin.target, one));
		assert_int_equal(act_plugin_starting(s, now, &one, NULL), 0);
		assert_int_equal(act_next_actions(s, now, &a, NULL), 0);
		assert_false(a.has_plugin || a.has_wait);
		now += ACT_MS(50);
		assert_int_equal(act_next_actions(s, now, &a, NULL), 0);
		assert_false(a.has_plugin || a.has_wait);
		assert_int_equal(act_plugin_response(s, now, &one, NULL), 0);
		now += ACT_MS(50);
		requests++;
	}
	assert_int_equal(requests, 3); /* at 5 s, 10 s, 15 s */
	free(s);
}

/* ---- smaller behaviours -------------------------------------------- */

static void jitter_timing(struct act_timing *t)
{
	t->plugin_tick_jitter = act_plugin_jitter(1234); /* 34 ms */
}

/* The periodic request comes jitter earlier than the tick. */
static const struct step jitter_steps[] = {
	S(.op = METRICS, .load1 = 0.0),
	S(.op = NEXT, PLUGIN(0, 1, 0.0)),
	S(.op = P_START, .n = 1),
	S(.op = TICK, .ms = 100),
	S(.op = P_OK, .n = 1),
	S(.op = NEXT, WAIT(4866)),
	S(.op = TICK, .ms = 4866),
	S(.op = NEXT, PLUGIN(1, 1, 0.0)),
	{ .op = END },
};

static void test_plugin_jitter(void **state)
{
	struct scenario sc = { "plugin jitter", 1, 4, 1, jitter_timing, jitter_steps };

	assert_int_equal(act_plugin_jitter(99), ACT_MS(99));
	assert_int_equal(act_plugin_jitter(100), 0);
	run_scenario(&sc);
}

/* No monitor: the agent never scales down, and says why. */
static const struct step no_monitor_steps[] = {
	INITIAL_REQUEST(3),
	S(.op = TICK, .ms = 100),
	S(.op = METRICS, .load1 = 0.0),
	S(.op = DESIRED, .n = 1),
	S(.op = NEXT, WAIT(4800),
	  WARN("Wanted to send vm-monitor downscale request, but there's no active connection")),
	{ .op = END },
};

static void test_no_monitor_no_downscale(void **state)
{
	struct scenario sc = { "no monitor", 1, 4, 3, NULL, no_monitor_steps };

	run_scenario(&sc);
}

static void new_state(struct act_state *s, unsigned min, unsigned max, unsigned start)
{
	struct ag_scaling_config cfg;
	struct act_timing t;
	struct vmact_resources a = cu(min), b = cu(max), u = cu(start);

	default_timing(&t);
	default_config(&cfg);
	assert_int_equal(act_state_init(s, &t, &CU, &cfg, &u, &a, &b, NULL), 0);
}

/* A VM without a monitor (doc/policy.md, "Without an agent"): where the
 * host approves, its own CPU and memory goals shrink the VM by a hotplug,
 * down to min and no further; what it does not approve stays as Neon's
 * (no downscale without a connection); a monitor that connects takes the
 * approval back. */
static void test_host_approves_shrink(void **state)
{
	struct act_state *s = calloc(1, sizeof(*s));
	struct act_system_metrics m = { .load1 = 0.0, .memory_usage_bytes = 0.2 * GiB };
	struct vmact_resources t;
	struct vmact_err err = { 0 };
	struct act_actions a;

	assert_non_null(s);
	new_state(s, 1, 4, 3);
	assert_int_equal(act_state_update_system_metrics(s, &m, NULL), 0);
	act_state_update_cpu_goal(s, true, 250);
	act_state_update_mem_goal(s, true, GiB);
	s->plugin.has_permit = true;
	s->plugin.permit = cu(3);

	/* nobody approves: Neon's behaviour */
	assert_int_equal(act_next_actions(s, 0, &a, NULL), 0);
	assert_false(a.has_hotplug);
	assert_int_equal(a.warnings.n, 1);
	assert_string_equal(a.warnings.msg[0],
			    "Wanted to send vm-monitor downscale request, but there's no active "
			    "connection");
	t = cu(1);
	assert_int_equal(act_hotplug_starting(s, 0, &t, &err), -ERANGE);

	/* the CPU only (a VM whose memory is DIMMs) */
	act_state_set_host_approval(s, true, false);
	assert_int_equal(act_next_actions(s, 0, &a, NULL), 0);
	assert_true(a.has_hotplug);
	assert_int_equal(a.hotplug.target.milli_cpu, 250);
	assert_int_equal(a.hotplug.target.mem_bytes, 3 * GiB);
	assert_int_equal(a.warnings.n, 1);

	/* both: straight to the goals, no monitor request, no warning */
	act_state_set_host_approval(s, true, true);
	assert_int_equal(act_next_actions(s, 0, &a, NULL), 0);
	assert_true(a.has_hotplug);
	assert_true(vmact_res_eq(a.hotplug.target, cu(1)));
	assert_false(a.has_monitor_downscale);
	assert_int_equal(a.warnings.n, 0);
	/* never below min, whatever the caller asks */
	t = (struct vmact_resources){ 250, GiB / 2 };
	assert_int_equal(act_hotplug_starting(s, 0, &t, &err), -ERANGE);
	act_state_update_mem_goal(s, true, GiB / 2);
	assert_int_equal(act_next_actions(s, 0, &a, NULL), 0);
	assert_true(vmact_res_eq(a.hotplug.target, cu(1)));
	t = cu(1);
	assert_int_equal(act_hotplug_starting(s, 0, &t, NULL), 0);
	assert_int_equal(act_hotplug_finished(s, ACT_MS(10), &t, false, NULL), 0);

	/* growth: the memory goal above what the permit allows waits for it */
	assert_int_equal(act_plugin_starting(s, ACT_MS(10), &t, NULL), 0);
	assert_int_equal(act_plugin_response(s, ACT_MS(10), &t, NULL), 0);
	act_state_update_mem_goal(s, true, 2 * GiB);
	assert_int_equal(act_next_actions(s, ACT_MS(20), &a, NULL), 0);
	assert_true(a.has_plugin);
	assert_int_equal(a.plugin.target.mem_bytes, 2 * GiB);
	assert_false(a.has_hotplug);

	/* a monitor connects: its approval again (approved = using) */
	act_state_update_mem_goal(s, true, GiB);
	s->using_ = cu(3);
	act_monitor_connected(s);
	assert_int_equal(act_next_actions(s, ACT_MS(30), &a, NULL), 0);
	assert_false(a.has_hotplug);
	assert_true(a.has_monitor_downscale);
	free(s);
}

/* The agent's permit checks: zero fields, more than asked, less than used;
 * each counts as a failure with backoff. */
static void test_permit_validation(void **state)
{
	struct act_state *s = calloc(1, sizeof(*s));
	struct vmact_err err = { 0 };
	struct vmact_resources req = cu(3), bad;
	struct act_actions a;

	assert_non_null(s);
	new_state(s, 1, 4, 2);
	const struct vmact_resources cases[] = {
		{ 0, 2 * GiB },
		{ 500, 0 },
		{ 1000, 3 * GiB }, /* cpu above request */
		{ 250, 2 * GiB },  /* cpu below usage */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		vmact_err_reset(&err);
		assert_int_equal(act_plugin_starting(s, ACT_SEC(i * 10), &req, &err), 0);
		bad = cases[i];
		assert_int_equal(act_plugin_response(s, ACT_SEC(i * 10), &bad, &err), -EPROTO);
		assert_true(err.msg[0] != '\0');
		assert_false(s->plugin.has_permit);
		assert_int_equal(act_next_actions(s, ACT_SEC(i * 10) + ACT_MS(500), &a, NULL), 0);
		assert_false(a.has_plugin);
		assert_true(a.has_wait);
		assert_int_equal(a.wait, ACT_MS(2500));
	}
	/* a response without a request is a caller bug, not a crash */
	vmact_err_reset(&err);
	assert_int_equal(act_plugin_response(s, 0, &req, &err), -EINVAL);
	free(s);
}

/* The caller cannot start a hotplug the state machine would not allow. */
static void test_hotplug_start_enforces_limits(void **state)
{
	struct act_state *s = calloc(1, sizeof(*s));
	struct vmact_err err = { 0 };
	struct vmact_resources t;

	assert_non_null(s);
	new_state(s, 1, 4, 2);
	t = cu(3);
	assert_int_equal(act_hotplug_starting(s, 0, &t, &err), -ERANGE); /* no permit */
	t = cu(1);
	assert_int_equal(act_hotplug_starting(s, 0, &t, &err), -ERANGE); /* no monitor */
	act_monitor_connected(s);
	assert_int_equal(act_hotplug_starting(s, 0, &t, &err), -ERANGE); /* not approved */
	s->plugin.has_permit = true;
	s->plugin.permit = cu(8);
	t = cu(5);
	assert_int_equal(act_hotplug_starting(s, 0, &t, &err), -ERANGE); /* above max */
	t = cu(4);
	assert_int_equal(act_hotplug_starting(s, 0, &t, NULL), 0);
	assert_int_equal(act_hotplug_starting(s, 0, &t, NULL), -EBUSY);
	free(s);
}

/* Bounds lowered under a running VM: the excess goes through the monitor
 * like any downscale; nothing is unplugged without its approval. */
static void test_bounds_lowered(void **state)
{
	struct act_state *s = calloc(1, sizeof(*s));
	struct ag_scaling_config cfg;
	struct vmact_resources min = cu(1), max = cu(2);
	struct act_system_metrics m = { .load1 = 1.0 };
	struct act_actions a;

	assert_non_null(s);
	new_state(s, 1, 4, 4);
	default_config(&cfg);
	act_monitor_connected(s);
	assert_int_equal(act_state_update_system_metrics(s, &m, NULL), 0);
	assert_int_equal(act_state_update_vm(s, &min, &max, &cfg, NULL), 0);
	assert_int_equal(act_next_actions(s, 0, &a, NULL), 0);
	assert_true(vmact_res_eq(a.desired, cu(2)));
	assert_false(a.has_hotplug);
	assert_true(a.has_monitor_downscale);
	assert_true(vmact_res_eq(a.monitor_downscale.target, cu(3)));
	free(s);
}

/* ---- properties ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the seed printed on failure */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static unsigned rndn(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* Resources in whole and partial CUs, so fields move independently. */
static struct vmact_resources rnd_res(unsigned max_cu)
{
	return (struct vmact_resources){
		.milli_cpu = 50 + rndn(max_cu * 250),
		.mem_bytes = (uint64_t)(1 + rndn(max_cu)) * GiB / (rndn(4) ? 1 : 2),
	};
}

static void check_field(uint64_t cur, uint64_t t, uint64_t min, uint64_t max, bool has_permit,
			uint64_t permit, bool active, uint64_t approved, bool host, uint64_t seed,
			int step, const char *f)
{
	/* Without a monitor, where the host approves: down to min. */
	if (!active && host) {
		active = true;
		approved = min;
	}
	if (t > cur && (!has_permit || t > permit || t > max)) {
		print_error(
			"seed %llu step %d: %s raised %llu -> %llu beyond max %llu / permit %llu\n",
			(unsigned long long)seed, step, f, (unsigned long long)cur,
			(unsigned long long)t, (unsigned long long)max, (unsigned long long)permit);
		fail();
	}
	if (t < cur && (!active || t < approved || t < min)) {
		print_error(
			"seed %llu step %d: %s lowered %llu -> %llu below min %llu / approved %llu\n",
			(unsigned long long)seed, step, f, (unsigned long long)cur,
			(unsigned long long)t, (unsigned long long)min,
			(unsigned long long)approved);
		fail();
	}
}

static void check_hotplug(const struct act_state *s, const struct vmact_resources *t, uint64_t seed,
			  int step)
{
	check_field(s->using_.milli_cpu, t->milli_cpu, s->min.milli_cpu, s->max.milli_cpu,
		    s->plugin.has_permit, s->plugin.permit.milli_cpu, s->monitor.active,
		    s->monitor.approved.milli_cpu, s->host_approves.cpu, seed, step, "cpu");
	check_field(s->using_.mem_bytes, t->mem_bytes, s->min.mem_bytes, s->max.mem_bytes,
		    s->plugin.has_permit, s->plugin.permit.mem_bytes, s->monitor.active,
		    s->monitor.approved.mem_bytes, s->host_approves.mem, seed, step, "mem");
}

static void random_run(uint64_t seed, struct act_state *s, unsigned *hotplugs, unsigned *downs)
{
	struct ag_scaling_config cfg;
	struct act_timing t;
	act_time_t now = 0;
	unsigned max_cu = 2 + rndn(8);
	struct vmact_resources min = cu(1 + rndn(2)), max = cu(max_cu),
			       start = vmact_res_min(vmact_res_max(rnd_res(max_cu), min), max);

	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	default_timing(&t);
	default_config(&cfg);
	t.plugin_tick_jitter = act_plugin_jitter((uint32_t)rnd());
	if (vmact_res_any_gt(min, max))
		min = max;
	assert_int_equal(act_state_init(s, &t, &CU, &cfg, &start, &min, &max, NULL), 0);
	/* Every other run a VM without a monitor: the host approves some of
	 * its shrinks (and a monitor may still connect later). */
	if (seed % 2 == 0)
		act_state_set_host_approval(s, rndn(2), rndn(2));

	for (int step = 0; step < 400; step++) {
		struct act_actions a;
		struct vmact_resources r;

		assert_int_equal(act_next_actions(s, now, &a, NULL), 0);
		if (a.has_hotplug)
			check_hotplug(s, &a.hotplug.target, seed, step);
		if (a.has_monitor_downscale) {
			/* one CU at a time, and a lowered field never below min */
			const struct vmact_resources *ap = &s->monitor.approved,
						     *tg = &a.monitor_downscale.target;

			assert_true(tg->milli_cpu >= ap->milli_cpu ||
				    (tg->milli_cpu >= s->min.milli_cpu &&
				     tg->milli_cpu + CU.milli_cpu >= ap->milli_cpu));
			assert_true(tg->mem_bytes >= ap->mem_bytes ||
				    (tg->mem_bytes >= s->min.mem_bytes &&
				     tg->mem_bytes + CU.mem_bytes >= ap->mem_bytes));
			assert_false(vmact_res_any_gt(*tg, *ap));
		}
		if (a.has_plugin)
			assert_false(vmact_res_any_lt(a.plugin.target, s->using_));

		switch (rndn(16)) {
		case 0: {
			struct act_system_metrics m = {
				.load1 = rndn(400) / 100.0,
				.load5 = rndn(400) / 100.0,
				.memory_usage_bytes = (double)rndn(max_cu + 2) * GiB / 2,
			};

			assert_int_equal(act_state_update_system_metrics(s, &m, NULL), 0);
			break;
		}
		case 1: /* new bounds, possibly below current usage */
			max_cu = 1 + rndn(9);
			min = cu(1 + rndn(max_cu));
			max = cu(max_cu);
			assert_int_equal(act_state_update_vm(s, &min, &max, &cfg, NULL), 0);
			break;
		case 2:
			if (rndn(4) == 0)
				act_monitor_reset(s);
			else if (!s->monitor.active)
				act_monitor_connected(s);
			else
				act_monitor_upscale_requested(s, now, rndn(2), true, NULL);
			break;
		case 4: /* the policies' own goals come and go */
			act_state_update_cpu_goal(s, rndn(3), 50 + rndn(max_cu * 250));
			act_state_update_mem_goal(s, rndn(3), rnd_res(max_cu).mem_bytes);
			break;
		case 3: /* a caller ignoring the actions: limits still hold */
			r = rnd_res(10);
			if (act_hotplug_starting(s, now, &r, NULL) == 0) {
				check_hotplug(s, &r, seed, step);
				(*hotplugs)++;
			}
			break;
		default:
			now += ACT_MS(rndn(3000));
			if (a.has_plugin &&
			    act_plugin_starting(s, now, &a.plugin.target, NULL) == 0) {
				if (rndn(5) == 0) {
					act_plugin_failed(s, now);
				} else {
					/* a permit between usage and the request, per field */
					r = a.plugin.target;
					if (rndn(2))
						r.milli_cpu = s->using_.milli_cpu +
							      rndn(r.milli_cpu -
								   s->using_.milli_cpu + 1);
					if (rndn(2))
						r.mem_bytes = s->using_.mem_bytes;
					act_plugin_response(s, now, &r, NULL);
				}
			}
			if (a.has_hotplug &&
			    act_hotplug_starting(s, now, &a.hotplug.target, NULL) == 0) {
				(*hotplugs)++;
				if (vmact_res_any_lt(a.hotplug.target, s->using_))
					(*downs)++;
				if (rndn(4) == 0)
					act_hotplug_failed(s, now);
				else
					assert_int_equal(act_hotplug_finished(s, now,
									      &a.hotplug.target,
									      false, NULL),
							 0);
			}
			if (a.has_monitor_upscale &&
			    act_monitor_upscale_starting(s, now, &a.monitor_upscale.target, NULL) ==
				    0) {
				if (rndn(4) == 0)
					act_monitor_upscale_failed(s, now);
				else
					assert_int_equal(act_monitor_upscale_ok(s, now, NULL), 0);
			}
			if (a.has_monitor_downscale &&
			    act_monitor_downscale_starting(s, now, &a.monitor_downscale.target,
							   NULL) == 0) {
				switch (rndn(3)) {
				case 0:
					act_monitor_downscale_failed(s, now);
					break;
				case 1:
					assert_int_equal(act_monitor_downscale_denied(s, now, NULL),
							 0);
					break;
				default:
					assert_int_equal(act_monitor_downscale_ok(s, now, NULL), 0);
				}
			}
			break;
		}
	}
}

/* The LFC windows: none in the state until the VM's first LFC reading (a
 * VM without an LFC endpoint never carries them: doc/actuation.md,
 * "vmactd's own footprint"); stored, they drive the decision; a shorter
 * series reuses them, too long a series leaves them as they were, and
 * disabling LFC metrics releases them. */
static void test_lfc_windows_on_first_use(void **state)
{
	struct ag_scaling_config cfg;
	struct act_timing t;
	struct act_state s;
	struct act_actions a;
	struct vmact_err err = { 0 };
	struct vmact_resources one = cu(1), eight = cu(8);
	struct act_system_metrics m = { .memory_usage_bytes = 0.25 * GiB };
	/* 3.5 GiB of working set at lfc_to_memory_ratio 0.75, 8 KiB pages:
	 * 4 CUs. */
	const double wss = 3.5 * GiB * 0.75 / 8192.0;
	double pages[30], *big;
	act_time_t now = ACT_SEC(1000);

	(void)state;
	default_timing(&t);
	default_config(&cfg);
	cfg.enable_lfc_metrics = true;
	assert_int_equal(act_state_init(&s, &t, &CU, &cfg, &one, &one, &eight, NULL), 0);
	assert_null(s.lfc_pages);
	assert_int_equal(act_state_update_system_metrics(&s, &m, NULL), 0);
	assert_int_equal(act_next_actions(&s, now, &a, NULL), 0);
	assert_true(vmact_res_eq(a.desired, cu(1)));

	for (size_t i = 0; i < ARRAY_SIZE(pages); i++)
		pages[i] = wss;
	assert_int_equal(act_state_update_lfc_metrics(&s, pages, ARRAY_SIZE(pages), &err), 0);
	assert_non_null(s.lfc_pages);
	assert_int_equal(s.lfc_cap, ARRAY_SIZE(pages));
	assert_int_equal(act_next_actions(&s, now, &a, NULL), 0);
	assert_true(vmact_res_eq(a.desired, cu(4)));

	/* Fewer windows than the minimum wait and window: not enough to
	 * decide on, kept in the same array. */
	{
		const double *was = s.lfc_pages;

		assert_int_equal(act_state_update_lfc_metrics(&s, pages, 10, &err), 0);
		assert_ptr_equal(s.lfc_pages, was);
		assert_int_equal(s.lfc_n, 10);
		assert_int_equal(act_next_actions(&s, now, &a, NULL), 0);
		assert_true(vmact_res_eq(a.desired, cu(1)));
	}

	big = calloc(ACT_LFC_MAX_WINDOWS + 1, sizeof(*big));
	assert_non_null(big);
	assert_int_equal(act_state_update_lfc_metrics(&s, big, ACT_LFC_MAX_WINDOWS + 1, &err),
			 -E2BIG);
	free(big);
	assert_int_equal(s.lfc_n, 10);
	assert_int_equal(s.lfc_cap, ARRAY_SIZE(pages));

	cfg.enable_lfc_metrics = false;
	assert_int_equal(act_state_update_vm(&s, &one, &eight, &cfg, NULL), 0);
	assert_false(s.has_lfc);
	assert_null(s.lfc_pages);
	assert_int_equal(act_next_actions(&s, now, &a, NULL), 0);
	assert_true(vmact_res_eq(a.desired, cu(1)));

	/* Enabled again, then freed with the VM. */
	cfg.enable_lfc_metrics = true;
	assert_int_equal(act_state_update_vm(&s, &one, &eight, &cfg, NULL), 0);
	assert_int_equal(act_state_update_lfc_metrics(&s, pages, ARRAY_SIZE(pages), &err), 0);
	assert_int_equal(act_next_actions(&s, now, &a, NULL), 0);
	assert_true(vmact_res_eq(a.desired, cu(4)));
	act_state_free(&s);
	assert_null(s.lfc_pages);
	assert_false(s.has_lfc);
}

static void test_property_never_beyond_limits(void **state)
{
	struct act_state *s = calloc(1, sizeof(*s));
	unsigned hotplugs = 0, downs = 0;

	assert_non_null(s);
	for (uint64_t seed = 1; seed <= 300; seed++)
		random_run(seed, s, &hotplugs, &downs);
	/* the walk must actually exercise both directions */
	assert_true(hotplugs > 300);
	assert_true(downs > 30);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic_scale_up_and_down_flow),
		cmocka_unit_test(test_partial_upscale_then_full),
		cmocka_unit_test(test_room_freed_ends_backoff),
		cmocka_unit_test(test_load_gone_mid_plug),
		cmocka_unit_test(test_denied_downscaling_increase_and_retry),
		cmocka_unit_test(test_requested_upscale),
		cmocka_unit_test(test_failed_request_retry),
		cmocka_unit_test(test_bounds_change_requires_downscale),
		cmocka_unit_test(test_bounds_change_requires_upscale),
		cmocka_unit_test(test_downscale_pivot_back),
		cmocka_unit_test(test_metrics_concurrent_updated_during_downscale),
		cmocka_unit_test(test_periodic_plugin_request),
		cmocka_unit_test(test_plugin_jitter),
		cmocka_unit_test(test_no_monitor_no_downscale),
		cmocka_unit_test(test_host_approves_shrink),
		cmocka_unit_test(test_permit_validation),
		cmocka_unit_test(test_hotplug_start_enforces_limits),
		cmocka_unit_test(test_bounds_lowered),
		cmocka_unit_test(test_lfc_windows_on_first_use),
		cmocka_unit_test(test_property_never_beyond_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
