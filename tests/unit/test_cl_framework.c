/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduling framework (cluster/framework/framework.h) with fake plugins that
 * record what the framework calls and answer what each case needs: the
 * profile (defaults, enabled, disabled, weights, args, every error naming
 * its key), the order and rules of every extension point, the status
 * codes, the cycle state, Permit waits (list, allow, reject, expire);
 * and the shipped plugins that only read the host snapshot
 * (cluster/plugins/plugin-fit.c) against hand-made hosts. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/framework/framework.h"
#include "cluster/plugins/plugins.h"

#define GiB (1024ULL * 1024 * 1024)

/* ---- fakes ---- */

/* What the fakes were called for, in order: "P:pre A:filter(h1) ..." */
static char trace[4096];
/* What each fake answers, by plugin and point (set per case). */
struct answer {
	const char *plugin, *point, *host;
	enum cl_fw_code code;
	int64_t score;
	uint64_t wait_usec;
};
static struct answer answers[32];
static size_t n_answers;

static void reset(void)
{
	trace[0] = 0;
	n_answers = 0;
}

static void answer(const char *plugin, const char *point, const char *host, enum cl_fw_code code,
		   int64_t score)
{
	answers[n_answers++] = (struct answer){ plugin, point, host, code, score, 0 };
}

static void note(const char *plugin, const char *point, const char *host)
{
	size_t n = strlen(trace);

	snprintf(trace + n, sizeof(trace) - n, "%s%s:%s%s%s%s", n ? " " : "", plugin, point,
		 host ? "(" : "", host ? host : "", host ? ")" : "");
}

static const struct answer *find(const char *plugin, const char *point, const char *host)
{
	for (size_t i = 0; i < n_answers; i++)
		if (!strcmp(answers[i].plugin, plugin) && !strcmp(answers[i].point, point) &&
		    (!answers[i].host || !host || !strcmp(answers[i].host, host)))
			return &answers[i];
	return NULL;
}

struct fake {
	const char *name;
};

static int fake_init(const struct cl_fw_handle *h, const json_t *args, void **state,
		     struct vmact_err *err)
{
	if (args && json_object_get(args, "bad"))
		return vmact_err_set(err, EINVAL, "bad: not an arg of mine");
	return 0;
}

#define FAKE(N)                                                                                    \
	static void N##_pre(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,            \
			    struct cl_fw_status *st)                                               \
	{                                                                                          \
		const struct answer *a = find(#N, "pre", NULL);                                    \
		note(#N, "pre", NULL);                                                             \
		cl_fw_cycle_write(cs, #N, strdup(#N "-was-here"), free);                           \
		if (a)                                                                             \
			cl_fw_status_set(st, a->code, "%s says no", #N);                           \
	}                                                                                          \
	static void N##_filter(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,         \
			       const struct cl_fw_host *h, struct cl_fw_status *st)                \
	{                                                                                          \
		const struct answer *a = find(#N, "filter", h->name);                              \
		note(#N, "filter", h->name);                                                       \
		if (a)                                                                             \
			cl_fw_status_set(st, a->code, "%s excludes %s", #N, h->name);              \
	}                                                                                          \
	static void N##_post(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,           \
			     const struct cl_fw_host *hosts, size_t n,                             \
			     const struct cl_fw_status *sts, char nominated[CL_FW_NAME_MAX],       \
			     struct cl_fw_status *st)                                              \
	{                                                                                          \
		const struct answer *a = find(#N, "post", NULL);                                   \
		note(#N, "post", NULL);                                                            \
		if (a && a->code == CL_FW_SUCCESS)                                                 \
			snprintf(nominated, CL_FW_NAME_MAX, "%s",                                  \
				 a->host ? a->host : hosts[0].name);                               \
		else                                                                               \
			cl_fw_status_set(st, a ? a->code : CL_FW_UNSCHEDULABLE, "nothing");        \
	}                                                                                          \
	static void N##_score(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,          \
			      const struct cl_fw_host *h, int64_t *score, struct cl_fw_status *st) \
	{                                                                                          \
		const struct answer *a = find(#N, "score", h->name);                               \
		note(#N, "score", h->name);                                                        \
		/* Unless told: h1 a point ahead (equal scores are a draw). */                     \
		*score = a ? a->score : strcmp(h->name, "h1") == 0;                                \
		if (a && a->code != CL_FW_SUCCESS)                                                 \
			cl_fw_status_set(st, a->code, "cannot score");                             \
	}                                                                                          \
	static void N##_reserve(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,        \
				const struct cl_fw_host *h, struct cl_fw_status *st)               \
	{                                                                                          \
		const struct answer *a = find(#N, "reserve", NULL);                                \
		note(#N, "reserve", h->name);                                                      \
		if (a)                                                                             \
			cl_fw_status_set(st, a->code, "no reservation");                           \
	}                                                                                          \
	static void N##_unreserve(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,      \
				  const char *host)                                                \
	{                                                                                          \
		note(#N, "unreserve", host);                                                       \
	}                                                                                          \
	static void N##_permit(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,         \
			       const char *host, uint64_t *timeout, struct cl_fw_status *st)       \
	{                                                                                          \
		const struct answer *a = find(#N, "permit", NULL);                                 \
		note(#N, "permit", host);                                                          \
		if (a) {                                                                           \
			*timeout = (uint64_t)a->score;                                             \
			cl_fw_status_set(st, a->code, "%s permit", #N);                            \
		}                                                                                  \
	}                                                                                          \
	static void N##_bind(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,           \
			     const char *host, struct cl_fw_status *st)                            \
	{                                                                                          \
		const struct answer *a = find(#N, "bind", NULL);                                   \
		note(#N, "bind", host);                                                            \
		if (a)                                                                             \
			cl_fw_status_set(st, a->code, "bind");                                     \
	}                                                                                          \
	static void N##_pre_bind(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,       \
				 const char *host, struct cl_fw_status *st)                        \
	{                                                                                          \
		const struct answer *a = find(#N, "prebind", NULL);                                \
		note(#N, "prebind", host);                                                         \
		if (a)                                                                             \
			cl_fw_status_set(st, a->code, "%s prebind", #N);                           \
	}                                                                                          \
	static void N##_post_bind(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,      \
				  const char *host)                                                \
	{                                                                                          \
		note(#N, "postbind", host);                                                        \
	}                                                                                          \
	static const struct cl_fw_plugin_ops N = {                                                 \
		.name = #N,                                                                        \
		.init = fake_init,                                                                 \
		.pre_filter = N##_pre,                                                             \
		.filter = N##_filter,                                                              \
		.post_filter = N##_post,                                                           \
		.score = N##_score,                                                                \
		.reserve = N##_reserve,                                                            \
		.unreserve = N##_unreserve,                                                        \
		.permit = N##_permit,                                                              \
		.bind = N##_bind,                                                                  \
		.pre_bind = N##_pre_bind,                                                          \
		.post_bind = N##_post_bind,                                                        \
	}

FAKE(A);
FAKE(B);
FAKE(C);

/* A score plugin with NormalizeScore, and a filter-only one. */
static void norm_score(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
		       const struct cl_fw_host *h, int64_t *score, struct cl_fw_status *st)
{
	/* Raw scores far outside [0, 100]: its NormalizeScore fixes them. */
	*score = strcmp(h->name, "h1") == 0 ? 1000 : strcmp(h->name, "h2") == 0 ? 4000 : 2000;
}

static void norm_normalize(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			   int64_t *scores, size_t n, struct cl_fw_status *st)
{
	for (size_t i = 0; i < n; i++)
		scores[i] /= 40;
	note("N", "normalize", NULL);
}

static const struct cl_fw_plugin_ops N = { .name = "N",
					   .score = norm_score,
					   .normalize = norm_normalize };
static void filter_only(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const struct cl_fw_host *h, struct cl_fw_status *st)
{
	/* Reads what A's PreFilter left in the cycle state. */
	if (!cl_fw_cycle_read(cs, "A"))
		cl_fw_status_set(st, CL_FW_ERROR, "no cycle state from A");
}
static const struct cl_fw_plugin_ops F = { .name = "F", .filter = filter_only };

/* Gang: a coscheduling Permit plugin written against the handle, as a
 * plugin of the Kubernetes framework would be: the members of a group wait
 * until `size` of them reached Permit, then the last one allows the
 * others (through the framework's waiting VMs) and passes at once. */
struct gang {
	const struct cl_fw_handle *h;
	size_t size;
};

static int gang_init(const struct cl_fw_handle *h, const json_t *args, void **state,
		     struct vmact_err *err)
{
	struct gang *g;

	if (!json_is_integer(json_object_get(args, "size")))
		return vmact_err_set(err, EINVAL, "size: an integer");
	if (!h)
		return 0;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->h = h;
	g->size = (size_t)json_integer_value(json_object_get(args, "size"));
	*state = g;
	return 0;
}

struct gang_scan {
	const char *group;
	char uids[8][40];
	size_t n;
};

static void gang_collect(void *ud, const struct cl_fw_waiting *w)
{
	struct gang_scan *sc = ud;

	for (size_t k = 0; k < w->n_pending; k++)
		if (!strcmp(w->group, sc->group) && !strcmp(w->pending[k], "Gang") && sc->n < 8)
			snprintf(sc->uids[sc->n++], 40, "%s", w->uid);
}

static void gang_permit(void *p, struct cl_fw_cycle *cs, const struct cl_fw_vm *vm,
			const char *host, uint64_t *timeout, struct cl_fw_status *st)
{
	struct gang *g = p;
	struct gang_scan sc = { .group = vm->group };

	cl_fw_waiting_each(g->h->fw, gang_collect, &sc);
	if (sc.n + 1 < g->size) {
		*timeout = 60000000;
		cl_fw_status_set(st, CL_FW_WAIT, "%zu of %zu", sc.n + 1, g->size);
		return;
	}
	/* Collected first, allowed after: no allow under the waiting lock. */
	for (size_t i = 0; i < sc.n; i++) {
		struct cl_fw_waiting w;

		assert_int_equal(cl_fw_waiting_get(g->h->fw, sc.uids[i], &w), 0);
		assert_string_equal(w.group, vm->group);
		assert_int_equal(cl_fw_allow(g->h->fw, sc.uids[i], "Gang"), 1);
	}
}

static const struct cl_fw_plugin_ops GANG = {
	.name = "Gang", .init = gang_init, .fini = free, .permit = gang_permit
};

/* Q: a QueueSort by name, descending (anything but arrival order). */
static bool q_less(void *p, const struct cl_fw_queued *a, const struct cl_fw_queued *b)
{
	return strcmp(a->vm->name, b->vm->name) > 0;
}
static const struct cl_fw_plugin_ops Q = { .name = "Q", .less = q_less };

static const struct cl_fw_plugin_ops *const fakes[] = {
	&A, &B, &C, &N, &F, &GANG, &Q, &cl_plugin_queue_priority_sort, NULL
};
static const struct cl_fw_plugin_table table = { .plugins = fakes };
static const char *const def_pre[] = { "A", NULL };
static const char *const def_filter[] = { "A", "B", NULL };
static const char *const def_score[] = { "A", NULL };
static const char *const def_reserve[] = { "A", "B", NULL };
static const char *const def_bind[] = { "A", NULL };
static const struct cl_fw_defaults defs = { .points = {
						    [CL_FW_PRE_FILTER] = def_pre,
						    [CL_FW_FILTER] = def_filter,
						    [CL_FW_SCORE] = def_score,
						    [CL_FW_RESERVE] = def_reserve,
						    [CL_FW_BIND] = def_bind,
					    } };

static struct cl_fw *fw_of(const char *profile)
{
	json_t *p = profile ? json_loads(profile, 0, NULL) : NULL;
	struct cl_fw_handle h = { 0 };
	struct vmact_err err = { 0 };
	struct cl_fw *fw = NULL;

	if (profile && !p)
		fail_msg("profile is not JSON: %s", profile);
	if (cl_fw_new(&table, &defs, p, "p", &h, &fw, &err) < 0)
		fail_msg("%s", err.msg);
	json_decref(p);
	return fw;
}

static void refused(const char *profile, const char *want)
{
	json_t *p = json_loads(profile, 0, NULL);
	struct vmact_err err = { 0 };
	struct cl_fw *fw = NULL;

	assert_non_null(p);
	assert_int_equal(cl_fw_new(&table, &defs, p, "scheduler.profiles[0]", NULL, &fw, &err),
			 -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("%s\n  said: %s\n  want: %s", profile, err.msg, want);
	json_decref(p);
}

static struct cl_fw_host hosts[3];
static struct cl_fw_vm vm;

static void setup_world(void)
{
	static const char *const gh[] = { "h1", "h2", "h3" };

	memset(hosts, 0, sizeof(hosts));
	for (int i = 0; i < 3; i++) {
		snprintf(hosts[i].name, sizeof(hosts[i].name), "h%d", i + 1);
		hosts[i].reachable = hosts[i].ledger = true;
		hosts[i].watermark = (struct vmact_resources){ 4000, 8 * GiB };
	}
	memset(&vm, 0, sizeof(vm));
	snprintf(vm.uid, sizeof(vm.uid), "uid-1");
	snprintf(vm.name, sizeof(vm.name), "vm-1");
	snprintf(vm.group, sizeof(vm.group), "g");
	vm.size = (struct vmact_resources){ 1000, GiB };
	vm.group_hosts = gh;
	vm.n_group_hosts = 3;
}

static void schedule(struct cl_fw *fw, struct cl_fw_result *res)
{
	struct cl_fw_cycle *cs = NULL;

	assert_int_equal(cl_fw_cycle_new(&cs), 0);
	cl_fw_schedule(fw, cs, &vm, hosts, 3, res);
	cl_fw_cycle_free(cs);
}

/* ---- cases ---- */

static void test_profile(void **state)
{
	struct cl_fw *fw;
	const char *names[CL_FW_MAX_PLUGINS];

	/* No profile: the defaults. */
	fw = fw_of(NULL);
	assert_string_equal(cl_fw_scheduler_name(fw), "default");
	assert_int_equal(cl_fw_plugins(fw, CL_FW_FILTER, names, 16), 2);
	assert_string_equal(names[0], "A");
	assert_string_equal(names[1], "B");
	assert_int_equal(cl_fw_plugins(fw, CL_FW_PERMIT, names, 16), 0);
	cl_fw_free(fw);
	/* Disabled defaults go; enabled ones are added after those left; an
	 * enabled default moves to its place among them. */
	fw = fw_of("{\"schedulerName\":\"mine\",\"plugins\":{"
		   "\"filter\":{\"enabled\":[{\"name\":\"C\"},{\"name\":\"A\"}],"
		   "\"disabled\":[{\"name\":\"B\"}]},"
		   "\"reserve\":{\"disabled\":[{\"name\":\"*\"}],\"enabled\":[{\"name\":\"C\"}]},"
		   "\"score\":{\"enabled\":[{\"name\":\"N\",\"weight\":3}]},"
		   "\"permit\":{\"enabled\":[{\"name\":\"B\"}]}},"
		   "\"pluginConfig\":[{\"name\":\"C\",\"args\":{\"x\":1}}]}");
	assert_string_equal(cl_fw_scheduler_name(fw), "mine");
	assert_int_equal(cl_fw_plugins(fw, CL_FW_FILTER, names, 16), 2);
	assert_string_equal(names[0], "C");
	assert_string_equal(names[1], "A");
	assert_int_equal(cl_fw_plugins(fw, CL_FW_RESERVE, names, 16), 1);
	assert_string_equal(names[0], "C");
	assert_int_equal(cl_fw_plugins(fw, CL_FW_SCORE, names, 16), 2);
	assert_int_equal(cl_fw_plugins(fw, CL_FW_PERMIT, names, 16), 1);
	cl_fw_free(fw);

	refused("{\"plugins\":{\"filters\":{}}}",
		"scheduler.profiles[0].plugins.filters: unknown extension point");
	refused("{\"plugins\":{\"filter\":{\"enabled\":[{\"name\":\"Z\"}]}}}",
		"scheduler.profiles[0].plugins.filter.enabled[0].name: unknown plugin 'Z'");
	refused("{\"plugins\":{\"filter\":{\"enabled\":[{\"name\":\"N\"}]}}}",
		"plugins.filter.enabled[0].name: plugin 'N' has no filter extension point");
	refused("{\"plugins\":{\"filter\":{\"enabled\":[{\"name\":\"C\",\"weight\":2}]}}}",
		"plugins.filter.enabled[0].weight: only score plugins have one");
	refused("{\"plugins\":{\"score\":{\"enabled\":[{\"name\":\"N\",\"weight\":0}]}}}",
		"plugins.score.enabled[0].weight: an integer from 1 to 100");
	refused("{\"plugins\":{\"filter\":{\"enabled\":[{\"name\":\"C\"},{\"name\":\"C\"}]}}}",
		"plugins.filter: plugin 'C' enabled twice");
	refused("{\"plugins\":{\"filter\":{\"enabled\":[{\"nam\":\"C\"}]}}}",
		"plugins.filter.enabled[0].nam: unknown key");
	refused("{\"pluginConfig\":[{\"name\":\"C\",\"args\":{}}]}",
		"pluginConfig[0].name: plugin 'C' is not enabled at any extension point");
	refused("{\"plugins\":{\"bind\":{\"enabled\":[{\"name\":\"C\"}]}},"
		"\"pluginConfig\":[{\"name\":\"C\",\"args\":{\"bad\":1}}]}",
		"pluginConfig[C].args: bad: not an arg of mine");
	refused("{\"schedulerName\":\"\"}", "schedulerName: a name of 1 to");
	refused("{\"profile\":1}", "scheduler.profiles[0].profile: unknown key");
}

static void test_cycle_order_and_choice(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"filter\":{\"enabled\":[{\"name\":\"F\"}]},"
				 "\"score\":{\"enabled\":[{\"name\":\"B\",\"weight\":2}]},"
				 "\"permit\":{\"enabled\":[{\"name\":\"C\"}]}}}");
	struct cl_fw_result res;
	struct cl_fw_status st;
	struct cl_fw_cycle *cs = NULL;

	setup_world();
	reset();
	/* h2 filtered out by B; A scores h1 50, h3 80; B (weight 2) 40, 10. */
	answer("B", "filter", "h2", CL_FW_UNSCHEDULABLE, 0);
	answer("A", "score", "h1", CL_FW_SUCCESS, 50);
	answer("A", "score", "h3", CL_FW_SUCCESS, 80);
	answer("B", "score", "h1", CL_FW_SUCCESS, 40);
	answer("B", "score", "h3", CL_FW_SUCCESS, 10);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_SUCCESS);
	/* h1: 50 + 2*40 = 130 beats h3: 80 + 2*10 = 100. */
	assert_string_equal(res.host, "h1");
	assert_int_equal(res.feasible, 2);
	assert_int_equal(res.hosts[0].score, 130);
	assert_int_equal(res.hosts[2].score, 100);
	assert_int_equal(res.hosts[1].filter.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.hosts[1].filter.plugin, "B");
	/* F (silent) passed h1 and h3: it found A's PreFilter state. */
	assert_string_equal(trace,
			    "A:pre A:filter(h1) B:filter(h1) A:filter(h2) "
			    "B:filter(h2) A:filter(h3) B:filter(h3) A:score(h1) "
			    "A:score(h3) B:score(h1) B:score(h3) A:reserve(h1) B:reserve(h1) "
			    "C:permit(h1)");
	/* The binding cycle: the first plugin not skipping decides. */
	reset();
	assert_int_equal(cl_fw_cycle_new(&cs), 0);
	cl_fw_bind(fw, cs, &vm, "h1", &st);
	assert_int_equal(st.code, CL_FW_SUCCESS);
	assert_string_equal(trace, "A:bind(h1)");
	cl_fw_cycle_free(cs);
	cl_fw_free(fw);
}

/* Equal best scores: one of those hosts at random, never a lesser one;
 * the same seed, the same choices. */
static void test_random_tie(void **state)
{
	struct cl_fw *fw = fw_of(NULL), *again = fw_of(NULL);
	struct cl_fw_result res, res2;
	unsigned h1 = 0, h2 = 0;

	setup_world();
	reset();
	answer("A", "score", "h1", CL_FW_SUCCESS, 50);
	answer("A", "score", "h2", CL_FW_SUCCESS, 50);
	answer("A", "score", "h3", CL_FW_SUCCESS, 49);
	cl_fw_seed(fw, 42);
	cl_fw_seed(again, 42);
	for (int i = 0; i < 200; i++) {
		trace[0] = 0;
		schedule(fw, &res);
		trace[0] = 0;
		schedule(again, &res2);
		assert_int_equal(res.status.code, CL_FW_SUCCESS);
		assert_string_equal(res.host, res2.host);
		assert_string_not_equal(res.host, "h3");
		h1 += !strcmp(res.host, "h1");
		h2 += !strcmp(res.host, "h2");
	}
	/* Fair enough to spread (each about half). */
	assert_true(h1 > 60 && h2 > 60);
	cl_fw_free(fw);
	cl_fw_free(again);
}

/* QueueSort: one plugin orders the queue (stable); none keeps arrival
 * order; two are refused. PrioritySort: members, then the oldest. */
static void test_queue_sort(void **state)
{
	struct cl_fw_vm v[4];
	struct cl_fw_queued q[4];
	static const char *const names[] = { "b", "a", "d", "c" };
	struct cl_fw *fw;

	memset(v, 0, sizeof(v));
	for (int i = 0; i < 4; i++) {
		snprintf(v[i].name, sizeof(v[i].name), "%s", names[i]);
		q[i] = (struct cl_fw_queued){ .vm = &v[i], .queued_usec = 100 - (uint64_t)i };
	}
	fw = fw_of(NULL);
	cl_fw_queue_sort(fw, q, 4);
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(q[i].vm, &v[i]);
	cl_fw_free(fw);
	fw = fw_of("{\"plugins\":{\"queueSort\":{\"enabled\":[{\"name\":\"Q\"}]}}}");
	cl_fw_queue_sort(fw, q, 4);
	assert_string_equal(q[0].vm->name, "d");
	assert_string_equal(q[3].vm->name, "a");
	cl_fw_free(fw);
	refused("{\"plugins\":{\"queueSort\":{\"enabled\":[{\"name\":\"Q\"},"
		"{\"name\":\"PrioritySort\"}]}}}",
		"scheduler.profiles[0].plugins.queueSort: only one plugin may be enabled");
	refused("{\"plugins\":{\"queueSort\":{\"enabled\":[{\"name\":\"A\"}]}}}",
		"plugin 'A' has no queueSort extension point");
	/* PrioritySort: b and d are standby VMs; a member first, the oldest
	 * (largest queued_usec is the newest) first. */
	v[0].standby = v[2].standby = true;
	for (int i = 0; i < 4; i++)
		q[i] = (struct cl_fw_queued){ .vm = &v[i], .queued_usec = 100 - (uint64_t)i };
	fw = fw_of("{\"plugins\":{\"queueSort\":{\"enabled\":[{\"name\":\"PrioritySort\"}]}}}");
	cl_fw_queue_sort(fw, q, 4);
	assert_string_equal(q[0].vm->name, "c"); /* member, queued at 97 */
	assert_string_equal(q[1].vm->name, "a"); /* member, 99 */
	assert_string_equal(q[2].vm->name, "d"); /* standby, 98 */
	assert_string_equal(q[3].vm->name, "b"); /* standby, 100 */
	cl_fw_free(fw);
}

struct resolved {
	char uids[8][40];
	bool allowed[8];
	char msg[8][64];
	size_t n;
};

static void on_resolved(void *ud, const struct cl_fw_waiting *w, bool allowed, const char *msg)
{
	struct resolved *r = ud;

	snprintf(r->uids[r->n], 40, "%s", w->uid);
	snprintf(r->msg[r->n], 64, "%s", msg);
	r->allowed[r->n++] = allowed;
}

/* The handle's waiting VMs, used by a gang-style Permit plugin: three
 * members of a group are placed together. The first two wait (each
 * registered before the next cycle, as the engine does), the third's
 * Permit allows them and passes: all three resolved, allowed. */
static void test_gang(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"permit\":{\"enabled\":[{\"name\":\"Gang\"}]}},"
				 "\"pluginConfig\":[{\"name\":\"Gang\",\"args\":{\"size\":3}}]}");
	struct cl_fw_result res;
	struct resolved r = { 0 };
	struct cl_fw_waiting w;

	setup_world();
	for (int i = 1; i <= 3; i++) {
		reset();
		snprintf(vm.uid, sizeof(vm.uid), "uid-%d", i);
		snprintf(vm.name, sizeof(vm.name), "vm-%d", i);
		schedule(fw, &res);
		if (i < 3) {
			assert_int_equal(res.status.code, CL_FW_WAIT);
			assert_string_equal(res.waiting[0], "Gang");
			assert_int_equal(cl_fw_wait(fw, &vm, &res, 1000), 0);
			assert_int_equal(cl_fw_waiting_count(fw), (size_t)i);
		} else {
			assert_int_equal(res.status.code, CL_FW_SUCCESS);
		}
	}
	assert_int_equal(cl_fw_waiting_count(fw), 0);
	assert_int_equal(cl_fw_waiting_get(fw, "uid-1", &w), -ENOENT);
	assert_int_equal(cl_fw_take_resolved(fw, on_resolved, &r), 2);
	assert_string_equal(r.uids[0], "uid-1");
	assert_string_equal(r.uids[1], "uid-2");
	assert_true(r.allowed[0] && r.allowed[1]);
	assert_int_equal(cl_fw_take_resolved(fw, on_resolved, &r), 0);
	/* A gang that does not complete: its waiting member is rejected
	 * through the handle's reject, with its message. */
	reset();
	snprintf(vm.uid, sizeof(vm.uid), "uid-4");
	schedule(fw, &res);
	assert_int_equal(cl_fw_wait(fw, &vm, &res, 1000), 0);
	assert_int_equal(cl_fw_waiting_get(fw, "uid-4", &w), 0);
	assert_string_equal(w.host, res.host);
	assert_int_equal(cl_fw_reject(fw, "uid-4", "gang broken"), 0);
	r.n = 0;
	assert_int_equal(cl_fw_take_resolved(fw, on_resolved, &r), 1);
	assert_false(r.allowed[0]);
	assert_string_equal(r.msg[0], "gang broken");
	cl_fw_free(fw);
}

static void test_normalize_and_bad_scores(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"score\":{\"disabled\":[{\"name\":\"*\"}],"
				 "\"enabled\":[{\"name\":\"N\"}]}}}");
	struct cl_fw_result res;

	setup_world();
	reset();
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_SUCCESS);
	/* 1000/40 = 25, 4000/40 = 100. */
	assert_string_equal(res.host, "h2");
	assert_int_equal(res.hosts[1].score, 100);
	cl_fw_free(fw);
	/* A score plugin without NormalizeScore must stay in [0, 100]. */
	fw = fw_of(NULL);
	reset();
	answer("A", "score", "h1", CL_FW_SUCCESS, 101);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_ERROR);
	assert_non_null(strstr(res.status.msg, "outside [0, 100]"));
	/* Score must succeed. */
	reset();
	answer("A", "score", "h2", CL_FW_UNSCHEDULABLE, 0);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_ERROR);
	cl_fw_free(fw);
}

static void test_prefilter_and_nothing_fits(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"postFilter\":{\"enabled\":[{\"name\":\"B\"},"
				 "{\"name\":\"C\"}]}}}");
	struct cl_fw_result res;

	setup_world();
	/* PreFilter's no ends the cycle before any Filter. */
	reset();
	answer("A", "pre", NULL, CL_FW_UNRESOLVABLE, 0);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNRESOLVABLE);
	assert_string_equal(res.status.plugin, "A");
	assert_string_equal(trace, "A:pre");
	/* Nothing fits, only unresolvably: no PostFilter. */
	reset();
	answer("A", "filter", NULL, CL_FW_UNRESOLVABLE, 0);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNRESOLVABLE);
	assert_null(strstr(trace, "post"));
	assert_non_null(strstr(res.status.msg, "0/3 hosts fit"));
	/* One host is merely unschedulable: PostFilter runs, B declines, C
	 * nominates; the cycle still ends Unschedulable, nothing reserved. */
	reset();
	answer("A", "filter", "h1", CL_FW_UNRESOLVABLE, 0);
	answer("A", "filter", "h2", CL_FW_UNSCHEDULABLE, 0);
	answer("A", "filter", "h3", CL_FW_UNRESOLVABLE, 0);
	answer("B", "post", NULL, CL_FW_UNSCHEDULABLE, 0);
	answers[n_answers++] = (struct answer){ "C", "post", "h2", CL_FW_SUCCESS, 0, 0 };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.nominated, "h2");
	assert_null(strstr(trace, "reserve"));
	assert_non_null(strstr(trace, "B:post C:post"));
	/* A filter's Error ends the cycle at once. */
	reset();
	answer("B", "filter", "h1", CL_FW_ERROR, 0);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_ERROR);
	assert_null(strstr(trace, "h2"));
	cl_fw_free(fw);
}

static void test_reserve_and_permit(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"reserve\":{\"enabled\":[{\"name\":\"C\"}]},"
				 "\"permit\":{\"enabled\":[{\"name\":\"A\"},{\"name\":\"B\"}]}}}");
	struct cl_fw_result res;

	setup_world();
	/* B's Reserve fails: C's Reserve never runs, but the Unreserve of
	 * every Reserve plugin does (the Kubernetes framework's RunUnreservePlugins: the
	 * set of configured unreserve plugins), in reverse, C's too. */
	reset();
	answer("B", "reserve", NULL, CL_FW_ERROR, 0);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_ERROR);
	assert_string_equal(trace, "A:pre A:filter(h1) B:filter(h1) A:filter(h2) B:filter(h2) "
				   "A:filter(h3) B:filter(h3) A:score(h1) A:score(h2) A:score(h3) "
				   "A:reserve(h1) B:reserve(h1) C:unreserve(h1) B:unreserve(h1) "
				   "A:unreserve(h1)");
	assert_null(strstr(trace, "C:reserve"));
	assert_null(strstr(trace, "permit"));
	/* Permit denies: everything unreserved. */
	reset();
	answer("B", "permit", NULL, CL_FW_UNSCHEDULABLE, 0);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.status.plugin, "B");
	assert_non_null(strstr(trace, "C:unreserve(h1) B:unreserve(h1) A:unreserve(h1)"));
	/* Both wait: the shorter timeout, both plugins pending. */
	reset();
	answer("A", "permit", NULL, CL_FW_WAIT, 9000000);
	answer("B", "permit", NULL, CL_FW_WAIT, 3000000);
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_WAIT);
	assert_int_equal(res.wait_usec, 3000000);
	assert_int_equal(res.n_waiting, 2);
	assert_null(strstr(trace, "unreserve"));
	cl_fw_free(fw);
}

static void count_waiting(void *ud, const struct cl_fw_waiting *w)
{
	(*(int *)ud)++;
}

static void on_expired(void *ud, const struct cl_fw_waiting *w)
{
	snprintf(ud, 64, "%s", w->uid);
}

static void test_waiting(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"permit\":{\"enabled\":[{\"name\":\"A\"},"
				 "{\"name\":\"B\"}]}}}");
	struct cl_fw_result res;
	char expired[64] = "";
	int n = 0;

	setup_world();
	reset();
	answer("A", "permit", NULL, CL_FW_WAIT, 10);
	answer("B", "permit", NULL, CL_FW_WAIT, 20);
	schedule(fw, &res);
	assert_int_equal(cl_fw_wait(fw, &vm, &res, 100), 0);
	assert_int_equal(cl_fw_wait(fw, &vm, &res, 100), -EEXIST);
	cl_fw_waiting_each(fw, count_waiting, &n);
	assert_int_equal(n, 1);
	assert_int_equal(cl_fw_next_deadline(fw), 110);
	/* Allowed by A: B still holds it; by a plugin it does not wait on. */
	assert_int_equal(cl_fw_allow(fw, "uid-1", "A"), 0);
	assert_int_equal(cl_fw_allow(fw, "uid-1", "A"), -ESRCH);
	assert_int_equal(cl_fw_allow(fw, "nobody", NULL), -ENOENT);
	assert_int_equal(cl_fw_allow(fw, "uid-1", "B"), 1);
	assert_int_equal(cl_fw_waiting_count(fw), 0);
	/* Rejected. */
	assert_int_equal(cl_fw_wait(fw, &vm, &res, 100), 0);
	assert_int_equal(cl_fw_reject(fw, "uid-1", "no"), 0);
	assert_int_equal(cl_fw_reject(fw, "uid-1", "no"), -ENOENT);
	/* Timed out. */
	assert_int_equal(cl_fw_wait(fw, &vm, &res, 100), 0);
	assert_int_equal(cl_fw_expire(fw, 109, on_expired, expired), 0);
	assert_int_equal(cl_fw_expire(fw, 110, on_expired, expired), 1);
	assert_string_equal(expired, "uid-1");
	assert_int_equal(cl_fw_waiting_count(fw), 0);
	cl_fw_free(fw);
}

static void test_bind_skip(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"bind\":{\"enabled\":[{\"name\":\"B\"},"
				 "{\"name\":\"C\"}]}}}");
	struct cl_fw_cycle *cs = NULL;
	struct cl_fw_status st;

	setup_world();
	assert_int_equal(cl_fw_cycle_new(&cs), 0);
	reset();
	answer("A", "bind", NULL, CL_FW_SKIP, 0);
	answer("B", "bind", NULL, CL_FW_ERROR, 0);
	cl_fw_bind(fw, cs, &vm, "h1", &st);
	assert_int_equal(st.code, CL_FW_ERROR);
	assert_string_equal(st.plugin, "B");
	assert_string_equal(trace, "A:bind(h1) B:bind(h1)");
	reset();
	answer("A", "bind", NULL, CL_FW_SKIP, 0);
	answer("B", "bind", NULL, CL_FW_SKIP, 0);
	answer("C", "bind", NULL, CL_FW_SKIP, 0);
	cl_fw_bind(fw, cs, &vm, "h1", &st);
	assert_int_equal(st.code, CL_FW_ERROR);
	assert_non_null(strstr(st.msg, "no bind plugin handled"));
	cl_fw_cycle_free(cs);
	cl_fw_free(fw);
}

/* PreBind before Bind, the first failure stops the binding cycle (the
 * caller unreserves); PostBind only after a successful Bind, every plugin. */
static void test_pre_post_bind(void **state)
{
	struct cl_fw *fw = fw_of("{\"plugins\":{\"preBind\":{\"enabled\":[{\"name\":\"B\"},"
				 "{\"name\":\"C\"}]},\"postBind\":{\"enabled\":[{\"name\":\"A\"},"
				 "{\"name\":\"C\"}]}}}");
	struct cl_fw_cycle *cs = NULL;
	struct cl_fw_status st;
	const char *names[4];

	setup_world();
	assert_int_equal(cl_fw_plugins(fw, CL_FW_PRE_BIND, names, 4), 2);
	assert_string_equal(names[0], "B");
	assert_int_equal(cl_fw_plugins(fw, CL_FW_POST_BIND, names, 4), 2);
	assert_int_equal(cl_fw_cycle_new(&cs), 0);
	reset();
	cl_fw_bind(fw, cs, &vm, "h2", &st);
	assert_int_equal(st.code, CL_FW_SUCCESS);
	assert_string_equal(trace, "B:prebind(h2) C:prebind(h2) A:bind(h2) A:postbind(h2) "
				   "C:postbind(h2)");
	/* B's PreBind refuses: no Bind, no PostBind; its status is the
	 * binding cycle's. */
	reset();
	answer("B", "prebind", NULL, CL_FW_UNSCHEDULABLE, 0);
	cl_fw_bind(fw, cs, &vm, "h2", &st);
	assert_int_equal(st.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(st.plugin, "B");
	assert_string_equal(trace, "B:prebind(h2)");
	/* A Skip or Wait from PreBind is a failure, not a pass. */
	reset();
	answer("C", "prebind", NULL, CL_FW_SKIP, 0);
	cl_fw_bind(fw, cs, &vm, "h2", &st);
	assert_int_equal(st.code, CL_FW_ERROR);
	assert_string_equal(st.plugin, "C");
	/* Bind fails: no PostBind. */
	reset();
	answer("A", "bind", NULL, CL_FW_ERROR, 0);
	cl_fw_bind(fw, cs, &vm, "h2", &st);
	assert_int_equal(st.code, CL_FW_ERROR);
	assert_null(strstr(trace, "postbind"));
	cl_fw_cycle_free(cs);
	cl_fw_free(fw);
	/* The shipped ArbiterLease is enabled at PreBind by default. */
	{
		struct cl_fw *d = NULL;
		struct vmact_err err = { 0 };
		struct cl_fw_handle h = { 0 };

		assert_int_equal(cl_fw_new(cl_plugins_table(), cl_plugins_defaults(), NULL, "p", &h,
					   &d, &err),
				 0);
		assert_int_equal(cl_fw_plugins(d, CL_FW_PRE_BIND, names, 4), 1);
		assert_string_equal(names[0], "ArbiterLease");
		cl_fw_free(d);
	}
}

static void test_cycle_state(void **state)
{
	struct cl_fw_cycle *cs = NULL;

	assert_int_equal(cl_fw_cycle_new(&cs), 0);
	assert_null(cl_fw_cycle_read(cs, "k"));
	assert_int_equal(cl_fw_cycle_write(cs, "k", strdup("one"), free), 0);
	assert_string_equal(cl_fw_cycle_read(cs, "k"), "one");
	assert_int_equal(cl_fw_cycle_write(cs, "k", strdup("two"), free), 0);
	assert_string_equal(cl_fw_cycle_read(cs, "k"), "two");
	cl_fw_cycle_delete(cs, "k");
	assert_null(cl_fw_cycle_read(cs, "k"));
	for (int i = 0; i < 20; i++) {
		char k[8];

		snprintf(k, sizeof(k), "k%d", i);
		assert_int_equal(cl_fw_cycle_write(cs, k, strdup(k), free), 0);
	}
	assert_string_equal(cl_fw_cycle_read(cs, "k17"), "k17");
	cl_fw_cycle_free(cs);
	assert_string_equal(cl_fw_code_name(CL_FW_UNRESOLVABLE), "UnschedulableAndUnresolvable");
	assert_string_equal(cl_fw_code_name(CL_FW_SKIP), "Skip");
}

/* ---- the shipped snapshot plugins ---- */

static struct cl_fw *real_fw(void)
{
	static const struct cl_fw_plugin_ops *const fit[] = {
		&cl_plugin_fit_group_hosts,
		&cl_plugin_fit_host_reachable,
		&cl_plugin_fit_capacity,
		&cl_plugin_fit_pool_give_back,
		&cl_plugin_fit_free_capacity,
		&cl_plugin_fit_group_spread,
		NULL,
	};
	static const struct cl_fw_plugin_table r = { .plugins = fit };
	static const char *const pre[] = { "GroupHosts", NULL };
	static const char *const filter[] = { "GroupHosts", "HostReachable", "Capacity", NULL };
	static const char *const post[] = { "PoolGiveBack", NULL };
	static const char *const score[] = { "FreeCapacity", "GroupSpread", NULL };
	static const struct cl_fw_defaults d = { .points = { [CL_FW_PRE_FILTER] = pre,
							     [CL_FW_FILTER] = filter,
							     [CL_FW_POST_FILTER] = post,
							     [CL_FW_SCORE] = score } };
	struct cl_fw_handle h = { 0 };
	struct vmact_err err = { 0 };
	struct cl_fw *fw = NULL;

	if (cl_fw_new(&r, &d, NULL, "p", &h, &fw, &err) < 0)
		fail_msg("%s", err.msg);
	return fw;
}

static void test_fit_plugins(void **state)
{
	static const char *const only_h1_h2[] = { "h1", "h2" };
	struct cl_fw *fw = real_fw();
	struct cl_fw_result res;

	setup_world();
	/* h3 is not the group's; h1 is full; h2 fits. */
	vm.group_hosts = only_h1_h2;
	vm.n_group_hosts = 2;
	hosts[0].reserved = (struct vmact_resources){ 3500, GiB };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_SUCCESS);
	assert_string_equal(res.host, "h2");
	assert_int_equal(res.hosts[0].filter.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.hosts[0].filter.plugin, "Capacity");
	assert_int_equal(res.hosts[2].filter.code, CL_FW_UNRESOLVABLE);
	assert_string_equal(res.hosts[2].filter.plugin, "GroupHosts");
	/* h2 unreachable too: nothing fits; h1 would with its standby VMs
	 * given back (PoolGiveBack nominates it). */
	hosts[1].reachable = false;
	snprintf(hosts[1].why, sizeof(hosts[1].why), "connection refused");
	hosts[0].standby_vms = 1;
	hosts[0].standby = (struct vmact_resources){ 1000, GiB };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.nominated, "h1");
	assert_non_null(strstr(res.status.msg, "h2: unreachable: connection refused"));
	/* A standby VM takes no one's place. */
	vm.standby = true;
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.nominated, "");
	/* A standby VM keeps one VM's room, and waits while VMs in service
	 * want to grow. */
	hosts[1].reachable = true;
	hosts[1].reserved = (struct vmact_resources){ 2000, GiB };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_SUCCESS);
	assert_string_equal(res.host, "h2");
	hosts[1].reserved = (struct vmact_resources){ 2500, GiB };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_non_null(strstr(res.hosts[1].filter.msg, "room for another"));
	hosts[1].reserved = (struct vmact_resources){ 1000, GiB };
	hosts[1].pressure = (struct vmact_resources){ 250, 0 };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_non_null(strstr(res.hosts[1].filter.msg, "want 250m CPU"));
	cl_fw_free(fw);

	/* Scores: more room wins; with equal room, fewer of the group. */
	fw = real_fw();
	setup_world();
	vm.standby = false;
	hosts[0].reserved = (struct vmact_resources){ 2000, GiB };
	hosts[2].reserved = (struct vmact_resources){ 500, 0 };
	schedule(fw, &res);
	assert_string_equal(res.host, "h2");
	hosts[0].reserved = (struct vmact_resources){ 0, 0 };
	hosts[2].reserved = (struct vmact_resources){ 0, 0 };
	hosts[0].group_vms = 3;
	hosts[1].group_vms = 1;
	hosts[2].group_vms = 2;
	schedule(fw, &res);
	assert_string_equal(res.host, "h2");
	cl_fw_free(fw);
}

/* A running VM being moved goes through the shipped profile's cycle like a
 * new one (filters, scores, Reserve) but ManualApproval does not hold it. */
static void test_moving_vm(void **state)
{
	static const char *const takes_moves[] = { "h3" };
	json_t *profile = json_loads("{\"plugins\":{\"permit\":{\"enabled\":"
				     "[{\"name\":\"ManualApproval\"}]},"
				     "\"reserve\":{\"disabled\":[{\"name\":\"*\"}]}}}",
				     0, NULL);
	struct cl_fw_handle h = { 0 };
	struct vmact_err err = { 0 };
	struct cl_fw *fw = NULL;
	struct cl_fw_result res;

	(void)state;
	assert_non_null(profile);
	if (cl_fw_new(cl_plugins_table(), cl_plugins_defaults(), profile, "p", &h, &fw, &err) < 0)
		fail_msg("%s", err.msg);
	json_decref(profile);
	setup_world();
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_WAIT);
	assert_string_equal(res.waiting[0], "ManualApproval");
	/* Moved: not a group's member; only the hosts that take moves; the
	 * one it fits is chosen and it does not wait. */
	vm.moving = true;
	vm.group[0] = 0;
	vm.group_hosts = takes_moves;
	vm.n_group_hosts = 1;
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_SUCCESS);
	assert_string_equal(res.host, "h3");
	/* Full there: refused by Capacity. */
	hosts[2].reserved = (struct vmact_resources){ 3500, 0 };
	schedule(fw, &res);
	assert_int_equal(res.status.code, CL_FW_UNSCHEDULABLE);
	assert_string_equal(res.hosts[2].filter.plugin, "Capacity");
	cl_fw_free(fw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moving_vm),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_cycle_order_and_choice),
		cmocka_unit_test(test_normalize_and_bad_scores),
		cmocka_unit_test(test_prefilter_and_nothing_fits),
		cmocka_unit_test(test_reserve_and_permit),
		cmocka_unit_test(test_waiting),
		cmocka_unit_test(test_bind_skip),
		cmocka_unit_test(test_pre_post_bind),
		cmocka_unit_test(test_random_tie),
		cmocka_unit_test(test_queue_sort),
		cmocka_unit_test(test_gang),
		cmocka_unit_test(test_cycle_state),
		cmocka_unit_test(test_fit_plugins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
