/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin client's in-process transport against the real arbiter core:
 * the way vmactd's own runners reach the embedded arbiter, no socket
 * involved. A permit comes back decoded and validated, through the loop
 * (never inside the request call); version negotiation works as over
 * HTTP; freeing the client cancels what is queued. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include "agent-glue/arbiter/arbiter.h"
#include "agent-glue/client/plugin-client.h"

#define GiB (1024ULL * 1024ULL * 1024ULL)

struct outcome {
	bool done;
	int error;
	enum ag_plugin_version version;
	struct vmact_resources permit;
};

static void on_result(void *ud, const struct ag_plugin_result *res)
{
	struct outcome *o = ud;

	o->done = true;
	o->error = res->error;
	o->version = res->version;
	if (!res->error)
		o->permit = res->response.permit;
}

static struct ag_agent_request request(const char *name, struct vmact_resources want)
{
	struct ag_agent_request r = { .has_compute_unit = true,
				      .compute_unit = { 250, 1 * GiB },
				      .resources = want };

	strcpy(r.pod_namespace, "default");
	strcpy(r.pod_name, name);
	return r;
}

static struct ag_arbiter *arbiter(sd_event *ev, enum ag_plugin_version max)
{
	struct ag_arbiter_config c = { .capacity = { 4000, 16 * GiB }, .max_version = max };
	struct ag_arbiter *a = NULL;
	struct vmact_err err = { 0 };

	assert_int_equal(ag_arbiter_new(&c, &a, &err), 0);
	assert_int_equal(ag_arbiter_attach(a, ev, &err), 0);
	return a;
}

static void run_until_done(sd_event *ev, const struct outcome *o)
{
	for (int i = 0; i < 100 && !o->done; i++)
		assert_true(sd_event_run(ev, 0) >= 0);
	assert_true(o->done);
}

struct fixture {
	sd_event *ev;
	struct ag_arbiter *a;
	struct ag_plugin_client *pc;
};

/* A loop, an arbiter speaking up to max and a client calling it. */
static void start(struct fixture *f, enum ag_plugin_version max)
{
	struct ag_plugin_client_config cfg = { 0 };
	struct vmact_err err = { 0 };

	memset(f, 0, sizeof(*f));
	assert_int_equal(sd_event_new(&f->ev), 0);
	f->a = arbiter(f->ev, max);
	assert_int_equal(ag_plugin_client_new_local(f->ev, ag_arbiter_local, f->a, &cfg, &f->pc,
						    &err),
			 0);
}

static void stop(struct fixture *f)
{
	ag_plugin_client_free(f->pc);
	ag_arbiter_free(f->a);
	sd_event_unref(f->ev);
}

static void ask(struct fixture *f, const char *name, struct vmact_resources want, struct outcome *o)
{
	struct ag_agent_request r = request(name, want);
	struct vmact_err err = { 0 };

	assert_int_equal(ag_plugin_client_request(f->pc, &r, NULL, on_result, o, &err), 0);
}

static void test_permit(void **state)
{
	struct fixture f;
	struct outcome o = { 0 };

	(void)state;
	start(&f, 0);
	ask(&f, "vm1", (struct vmact_resources){ 1000, 1 * GiB }, &o);
	/* the answer comes from the loop, not from inside the call */
	assert_false(o.done);
	run_until_done(f.ev, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.permit.milli_cpu, 1000);
	assert_int_equal(o.permit.mem_bytes, 1 * GiB);
	stop(&f);
}

/* An arbiter that speaks only up to 4.0: the client hears the mismatch
 * and resends in 4.0, as over HTTP. */
static void test_version_negotiation(void **state)
{
	struct fixture f;
	struct outcome o = { 0 };

	(void)state;
	start(&f, AG_PLUGIN_V4_0);
	ask(&f, "vm2", (struct vmact_resources){ 500, 1 * GiB }, &o);
	run_until_done(f.ev, &o);
	assert_int_equal(o.error, 0);
	assert_int_equal(o.version, AG_PLUGIN_V4_0);
	assert_true(ag_plugin_client_version_switched(f.pc));
	stop(&f);
}

static void test_free_cancels(void **state)
{
	struct fixture f;
	struct outcome o = { 0 };

	(void)state;
	start(&f, 0);
	ask(&f, "vm3", (struct vmact_resources){ 500, 1 * GiB }, &o);
	ag_plugin_client_free(f.pc);
	f.pc = NULL;
	for (int i = 0; i < 10; i++)
		assert_true(sd_event_run(f.ev, 0) >= 0);
	assert_false(o.done);
	stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_permit),
		cmocka_unit_test(test_version_negotiation),
		cmocka_unit_test(test_free_cancels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
