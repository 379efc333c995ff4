/* SPDX-License-Identifier: Apache-2.0 */
/* The control API's pure parts: the JSON views' field names and nulls
 * (doc/control-api.md), the event ring's numbering and bounds, the
 * decision reasons operators read, and the metadata edits behind
 * `vmactl set/pause/resume` (validated as the reader validates). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "actuator/control/control-json.h"
#include "actuator/control/events.h"
#include "actuator/policy/cpu-demand.h"
#include "base/macro.h"
#include "hotplug/hotplug.h"

static void fill_managed(struct act_vm_view *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "db-1");
	snprintf(v->uuid, sizeof(v->uuid), "0b5a3c1e-0000-4000-8000-000000000001");
	v->state = ACT_VM_MANAGED;
	v->vcpus = 2;
	v->quota_milli = 1250;
	v->mem_bytes = 1ull << 30;
	v->using_ = (struct vmact_resources){ 1250, 1ull << 30 };
	v->min = (struct vmact_resources){ 250, 512ull << 20 };
	v->max = (struct vmact_resources){ 4000, 2ull << 30 };
	v->cu = (struct vmact_resources){ 250, 1ull << 30 };
	v->has_demand = true;
	v->demand_class = "saturated";
	v->busy = 0.98;
	v->demand_cpus = 1.96;
	v->has_goal = true;
	v->goal_milli = 1500;
	v->policy_cpu = "reactive";
	v->policy_shrink = "quota";
	snprintf(v->policy_source, sizeof(v->policy_source), "host");
	v->load_target = 0.9;
	v->mem_usage_target = 0.75;
	v->scheduler = "arbiter";
	v->monitor_kind = "vm-monitor";
	snprintf(v->monitor_endpoint, sizeof(v->monitor_endpoint), "ws://10.0.0.2:10301/monitor");
	v->monitor_connected = true;
}

static void views(void **state)
{
	struct act_vm_view v;
	json_t *o, *d;

	(void)state;
	fill_managed(&v);
	o = act_json_vm(&v, false);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "name")), "db-1");
	assert_string_equal(json_string_value(json_object_get(o, "state")), "managed");
	assert_int_equal(json_integer_value(json_object_get(o, "vcpus")), 2);
	assert_int_equal(json_integer_value(json_object_get(o, "quota_milli_cpu")), 1250);
	assert_int_equal(json_integer_value(json_object_get(o, "mem_bytes")), 1ll << 30);
	/* Unknown figures are null, never a 0 that reads as a measurement. */
	assert_true(json_is_null(json_object_get(o, "load1")));
	assert_true(json_is_null(json_object_get(o, "permit")));
	assert_true(json_is_null(json_object_get(o, "desired")));
	assert_true(json_is_null(json_object_get(o, "last_change")));
	assert_string_equal(json_string_value(json_object_get(o, "mode")), "active");
	assert_true(json_is_null(json_object_get(o, "recommended")));
	d = json_object_get(o, "demand");
	assert_string_equal(json_string_value(json_object_get(d, "class")), "saturated");
	assert_int_equal(json_integer_value(json_object_get(d, "goal_milli_cpu")), 1500);
	/* The list leaves the detail out. */
	assert_null(json_object_get(o, "bounds"));
	assert_null(json_object_get(o, "policy"));
	json_decref(o);
	/* Recommend mode: desired is the recommendation. */
	v.recommend = true;
	v.has_desired = true;
	v.desired = (struct vmact_resources){ 2000, 1ull << 30 };
	o = act_json_vm(&v, false);
	assert_string_equal(json_string_value(json_object_get(o, "mode")), "recommend");
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(o, "recommended"), "milli_cpu")),
			 2000);
	json_decref(o);
	v.recommend = false;
	v.has_desired = false;

	v.has_permit = true;
	v.permit = (struct vmact_resources){ 2000, 2ull << 30 };
	v.last_change_usec = 1700000000123456ull;
	snprintf(v.last_change, sizeof(v.last_change), "to 2 CPU / 1Gi: grow to 2 vCPUs");
	v.state = ACT_VM_PAUSED;
	o = act_json_vm(&v, true);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "paused");
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(o, "permit"), "milli_cpu")),
			 2000);
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(o, "last_change"), "reason")),
			    "to 2 CPU / 1Gi: grow to 2 vCPUs");
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(o, "bounds"), "max"),
				 "milli_cpu")),
			 4000);
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "policy"), "cpu")),
			    "reactive");
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(o, "scheduler"), "kind")),
			    "arbiter");
	assert_true(json_is_null(json_object_get(json_object_get(o, "scheduler"), "url")));
	assert_true(json_is_true(json_object_get(json_object_get(o, "monitor"), "connected")));
	assert_true(json_is_false(json_object_get(o, "resizing")));
	/* The evidence of a monitor VM whose balloon reports nothing. */
	{
		const json_t *e = json_object_get(o, "evidence"), *m = json_object_get(e, "memory");

		assert_true(json_is_object(e));
		assert_string_equal(json_string_value(json_object_get(m, "source")), "none");
		assert_true(json_is_null(json_object_get(m, "balloon")));
		assert_true(json_is_null(json_object_get(m, "decision")));
		assert_true(json_is_null(json_object_get(m, "kept_by_guest_s")));
	}
	json_decref(o);

	/* A VM without an agent: the host approves; its balloon, the
	 * memory policy's last decision, a guest that kept its memory. */
	v.approval = "host";
	v.cpu_source = "BPF";
	v.mem_policy = "host";
	v.mem_source = "balloon stats";
	v.has_balloon = true;
	v.balloon.total = 404ull << 20;
	v.balloon.available = 380ull << 20;
	v.balloon.has_faults = true;
	v.balloon.major_faults = 12;
	v.balloon.last_update = 1795642494;
	v.has_mem_dec = true;
	v.mem_class = "filling";
	v.mem_goal = 1ull << 30;
	v.mem_used = 228ull << 20;
	v.mem_headroom = 137ull << 20;
	v.mem_growth = 64.0 * 1048576;
	v.mem_kept_s = 42;
	o = act_json_vm(&v, true);
	{
		const json_t *e = json_object_get(o, "evidence"), *m = json_object_get(e, "memory"),
			     *b = json_object_get(m, "balloon"),
			     *md = json_object_get(m, "decision");

		assert_string_equal(json_string_value(json_object_get(e, "approval")), "host");
		assert_string_equal(json_string_value(
					    json_object_get(json_object_get(e, "cpu"), "source")),
				    "BPF");
		assert_string_equal(json_string_value(json_object_get(m, "policy")), "host");
		assert_string_equal(json_string_value(json_object_get(m, "source")),
				    "balloon stats");
		assert_true(json_is_null(json_object_get(m, "reason")));
		assert_int_equal(json_integer_value(json_object_get(b, "total_bytes")),
				 404ll << 20);
		assert_int_equal(json_integer_value(json_object_get(b, "major_faults")), 12);
		/* figures the guest did not send are null, not 0 */
		assert_true(json_is_null(json_object_get(b, "swap_in_bytes")));
		assert_true(json_is_null(json_object_get(b, "disk_caches_bytes")));
		assert_string_equal(json_string_value(json_object_get(md, "class")), "filling");
		assert_int_equal(json_integer_value(json_object_get(md, "goal_bytes")), 1ll << 30);
		assert_int_equal(json_integer_value(json_object_get(m, "kept_by_guest_s")), 42);
	}
	json_decref(o);

	memset(&v, 0, sizeof(v));
	snprintf(v.name, sizeof(v.name), "broken");
	v.state = ACT_VM_UNMANAGED;
	snprintf(v.reason, sizeof(v.reason),
		 "vmact metadata: <vmact:autoscaling>: missing element <vmact:cpu>");
	o = act_json_vm(&v, true);
	assert_string_equal(json_string_value(json_object_get(o, "state")), "not-managed");
	assert_non_null(strstr(json_string_value(json_object_get(o, "reason")), "<vmact:cpu>"));
	/* Nothing else is claimed about a VM vmactd does not manage. */
	assert_null(json_object_get(o, "vcpus"));
	json_decref(o);
}

static void ring(void **state)
{
	struct act_events *e;
	const struct act_event *ev;
	json_t *o;
	uint64_t seq;
	unsigned n = 0;

	(void)state;
	assert_int_equal(act_events_new(4, &e), 0);
	assert_null(act_events_after(e, 0));
	assert_int_equal(act_events_last_seq(e), 0);
	for (int i = 1; i <= 6; i++)
		act_event(e, i % 2 ? "a" : "b", ACT_EV_RESIZE, json_pack("{s:i}", "i", i),
			  "event %d", i);
	/* A non-object is dropped, the event kept. */
	act_event(e, "a", ACT_EV_ERROR, json_string("x"), "event 7");
	assert_int_equal(act_events_last_seq(e), 7);
	/* Capacity 4: 4..7 are held; asking from 0 starts at the oldest. */
	ev = act_events_after(e, 0);
	assert_non_null(ev);
	assert_int_equal(ev->seq, 4);
	for (seq = 0; (ev = act_events_after(e, seq)); seq = ev->seq)
		n++;
	assert_int_equal(n, 4);
	ev = act_events_after(e, 6);
	assert_string_equal(ev->text, "event 7");
	assert_true(json_is_object(ev->fields));
	assert_null(act_events_after(e, 7));
	assert_null(act_events_after(e, 100));
	o = act_json_event(act_events_after(e, 5));
	assert_int_equal(json_integer_value(json_object_get(o, "seq")), 6);
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "resize");
	assert_string_equal(json_string_value(json_object_get(o, "vm")), "b");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "fields"), "i")), 6);
	assert_true(json_number_value(json_object_get(o, "time")) > 1.6e9);
	json_decref(o);
	/* The default ring grows as events come (it starts small) and keeps
	 * every event in place across each growth, up to 1024, then wraps. */
	{
		struct act_events *big;

		assert_int_equal(act_events_new(0, &big), 0);
		for (int i = 1; i <= 1500; i++) {
			act_event(big, "vm", ACT_EV_DECISION, json_pack("{s:i}", "i", i),
				  "event %d", i);
			if (i == 33 || i == 64 || i == 65 || i == 1024 || i == 1025 || i == 1500) {
				uint64_t want = i > 1024 ? (uint64_t)i - 1023 : 1;

				n = 0;
				for (seq = 0; (ev = act_events_after(big, seq)); seq = ev->seq) {
					char text[32];

					assert_int_equal(ev->seq, want + n);
					snprintf(text, sizeof(text), "event %llu",
						 (unsigned long long)ev->seq);
					assert_string_equal(ev->text, text);
					n++;
				}
				assert_int_equal(n, i > 1024 ? 1024 : i);
			}
		}
		act_events_free(big);
	}
	/* Texts past their limits are cut there, each kept whole up to it
	 * (and the old event's texts freed: ASan's leak check). */
	{
		char vm[400], text[500];

		memset(vm, 'v', sizeof(vm) - 1);
		vm[sizeof(vm) - 1] = '\0';
		memset(text, 't', sizeof(text) - 1);
		text[sizeof(text) - 1] = '\0';
		act_event(e, vm, ACT_EV_HOLD, NULL, "%s", text);
		ev = act_events_after(e, 7);
		assert_int_equal(strlen(ev->vm), ACT_EVENT_VM_MAX - 1);
		assert_int_equal(strlen(ev->text), ACT_EVENT_TEXT_MAX - 1);
		assert_memory_equal(ev->vm, vm, ACT_EVENT_VM_MAX - 1);
		assert_memory_equal(ev->text, text, ACT_EVENT_TEXT_MAX - 1);
	}
	act_event(e, NULL, ACT_EV_CONTROL, NULL, "daemon");
	ev = act_events_after(e, 8);
	assert_string_equal(ev->vm, "");
	assert_string_equal(ev->text, "daemon");
	act_events_free(e);
	/* No ring: nothing recorded, the fields freed (ASan's leak check). */
	act_event(NULL, "a", ACT_EV_DECISION, json_object(), "nowhere");
}

static void reasons(void **state)
{
	struct act_cpu_decision d = {
		.cls = ACT_CPU_SATURATED,
		.busy = 0.98,
		.span = 400000000,
		.goal_milli = 2000,
	};
	char buf[256];

	(void)state;
	assert_int_equal(act_cpu_decision_reason(&d, 1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "grow to 2 vCPUs (2.000 CPU): vCPUs 98 % busy for 0.4 s");
	d.cls = ACT_CPU_OK;
	d.goal_milli = 750;
	d.slow = 0.41;
	d.busy = 0.2;
	assert_int_equal(act_cpu_decision_reason(&d, 2000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "shrink to 1 vCPU (0.750 CPU): 0.41 CPUs used on average (slow), "
				 "vCPUs 20 % busy");
	d.goal_milli = 1000;
	assert_int_equal(act_cpu_decision_reason(&d, 1000, buf, sizeof(buf)), 0);
	if (strncmp(buf, "stay at 1 vCPU (1.000 CPU): ", 28) != 0)
		fail_msg("%s", buf);
	d.cls = ACT_CPU_THROTTLED;
	d.goal_milli = 1500;
	d.throttled = 0.3;
	assert_int_equal(act_cpu_decision_reason(&d, 1000, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "grow to 2 vCPUs (1.500 CPU): throttled by its quota 30 %"));
	assert_int_equal(act_cpu_decision_reason(&d, 1000, buf, 10), -1);
}

#define META                                                        \
	"<autoscaling enabled=\"true\"><cpu min=\"1\" max=\"4\"/>"  \
	"<memory min=\"512Mi\" max=\"2Gi\" method=\"virtio-mem\"/>" \
	"<!-- the operator's --><monitor endpoint=\"ws://127.0.0.1:1/m\"/></autoscaling>"

static void meta_edit(void **state)
{
	struct hp_meta_change ch = { 0 };
	struct vmact_err err = { 0 };
	_cleanup_(hp_meta_done) struct hp_meta m = { 0 };
	char *out = NULL;

	(void)state;
	ch.set_max_cpu = true;
	ch.max_milli_cpu = 2500;
	ch.set_min_mem = true;
	ch.min_mem_bytes = 1ull << 30;
	assert_int_equal(hp_meta_edit(META, &ch, &out, &m, &err), 0);
	assert_int_equal(m.max.milli_cpu, 2500);
	assert_int_equal(m.min.milli_cpu, 1000);
	assert_int_equal(m.min.mem_bytes, 1ull << 30);
	assert_string_equal(m.monitor, "ws://127.0.0.1:1/m");
	assert_false(m.paused);
	/* Everything else stays as the operator wrote it. */
	assert_non_null(strstr(out, "<!-- the operator's -->"));
	assert_non_null(strstr(out, "max=\"2500m\""));
	free(out);

	/* Pause and resume: the root's paused attribute. */
	memset(&ch, 0, sizeof(ch));
	ch.set_paused = true;
	ch.paused = true;
	assert_int_equal(hp_meta_edit(META, &ch, &out, &m, &err), 0);
	assert_true(m.paused);
	ch.paused = false;
	{
		char *again = NULL;

		assert_int_equal(hp_meta_edit(out, &ch, &again, &m, &err), 0);
		assert_false(m.paused);
		assert_null(strstr(again, "paused"));
		free(again);
	}
	free(out);

	/* Recommend mode and back: the root's mode attribute, active being
	 * the default (no attribute). */
	memset(&ch, 0, sizeof(ch));
	ch.set_mode = true;
	ch.recommend = true;
	assert_int_equal(hp_meta_edit(META, &ch, &out, &m, &err), 0);
	assert_true(m.recommend);
	assert_non_null(strstr(out, "mode=\"recommend\""));
	assert_string_equal(m.monitor, "ws://127.0.0.1:1/m");
	ch.recommend = false;
	{
		char *again = NULL;

		assert_int_equal(hp_meta_edit(out, &ch, &again, &m, &err), 0);
		assert_false(m.recommend);
		assert_null(strstr(again, "mode="));
		free(again);
	}
	free(out);
	/* Migration on and off: the <vmact:migration> child, off being the
	 * default (no element). */
	memset(&ch, 0, sizeof(ch));
	ch.set_migration = true;
	ch.migration = true;
	assert_int_equal(hp_meta_edit(META, &ch, &out, &m, &err), 0);
	assert_true(m.migration);
	assert_non_null(strstr(out, "<migration enabled=\"true\"/>"));
	assert_non_null(strstr(out, "<!-- the operator's -->"));
	{
		char *again = NULL, *off = NULL;

		/* On again: still one element. */
		assert_int_equal(hp_meta_edit(out, &ch, &again, &m, &err), 0);
		assert_true(m.migration);
		assert_null(strstr(strstr(again, "<migration") + 1, "<migration"));
		ch.migration = false;
		assert_int_equal(hp_meta_edit(again, &ch, &off, &m, &err), 0);
		assert_false(m.migration);
		assert_null(strstr(off, "migration"));
		assert_string_equal(m.monitor, "ws://127.0.0.1:1/m");
		free(again);
		free(off);
	}
	free(out);
	/* The prefixed form of a domain definition keeps its prefix. */
	memset(&ch, 0, sizeof(ch));
	ch.set_migration = ch.migration = true;
	assert_int_equal(hp_meta_edit("<vmact:autoscaling xmlns:vmact=\"" HP_NS_URI
				      "\" enabled=\"true\">"
				      "<vmact:cpu min=\"1\" max=\"4\"/>"
				      "<vmact:memory min=\"512Mi\" max=\"2Gi\" method=\"dimm\"/>"
				      "</vmact:autoscaling>",
				      &ch, &out, &m, &err),
			 0);
	assert_true(m.migration);
	assert_non_null(strstr(out, "<vmact:migration enabled=\"true\"/>"));
	free(out);
#define BODY                         \
	"<cpu min=\"1\" max=\"4\"/>" \
	"<memory min=\"512Mi\" max=\"2Gi\" method=\"virtio-mem\"/>"
	assert_int_equal(hp_meta_parse("<autoscaling enabled=\"true\" mode=\"active\">" BODY
				       "</autoscaling>",
				       &m, &err),
			 0);
	assert_false(m.recommend);
	assert_true(hp_meta_parse("<autoscaling enabled=\"true\" mode=\"off\">" BODY
				  "</autoscaling>",
				  &m, &err) < 0);
	assert_non_null(strstr(err.msg, "'mode': 'off' is not active or recommend"));
	vmact_err_reset(&err);
	/* A runner VM is sized by the API's caller: nothing to recommend. */
	assert_true(hp_meta_parse("<autoscaling enabled=\"true\" mode=\"recommend\">" BODY
				  "<runner listen=\"127.0.0.1:25183\"/></autoscaling>",
				  &m, &err) < 0);
	if (!strstr(err.msg, "mode='recommend'"))
		fail_msg("message: %s", err.msg);
	vmact_err_reset(&err);
#undef BODY

	/* Refused exactly as the reader refuses: min above max. */
	memset(&ch, 0, sizeof(ch));
	ch.set_min_cpu = true;
	ch.min_milli_cpu = 5000;
	assert_int_equal(hp_meta_edit(META, &ch, &out, NULL, &err), -ERANGE);
	assert_null(out);
	assert_non_null(strstr(err.msg, "min 5000 m above max 4000 m"));
	vmact_err_reset(&err);
	memset(&ch, 0, sizeof(ch));
	ch.set_max_mem = true;
	ch.max_mem_bytes = 256ull << 20;
	assert_true(hp_meta_edit(META, &ch, &out, NULL, &err) < 0);
	if (!strstr(err.msg, "<vmact:memory>: min above max"))
		fail_msg("message: %s", err.msg);
	/* Broken metadata is not edited. */
	vmact_err_reset(&err);
	assert_true(hp_meta_edit("<autoscaling enabled=\"true\"/>", &ch, &out, NULL, &err) < 0);
	assert_non_null(strstr(err.msg, "missing element"));
	assert_true(hp_meta_edit(META "x", &ch, &out, NULL, &err) < 0);
	/* The reader: paused must be true or false. */
	vmact_err_reset(&err);
	assert_true(
		hp_meta_parse(
			"<autoscaling enabled=\"true\" paused=\"yes\"><cpu min=\"1\" max=\"2\"/>"
			"<memory min=\"1Gi\" max=\"2Gi\" method=\"dimm\"/></autoscaling>",
			&m, &err) < 0);
	assert_non_null(strstr(err.msg, "'paused'"));
}

/* POST /v1/vms/NAME/bounds bodies: quantity strings, known fields only,
 * at least one, nothing zero, no duplicate keys. */
static void bounds_body(void **state)
{
	struct hp_meta_change ch;
	struct vmact_err err = { 0 };
	static const char *const bad[] = {
		"",
		"[]",
		"{}",
		"{\"min_cpu\":0.5}",
		"{\"min_cpu\":\"0\"}",
		"{\"paused\":true}",
		"{\"max_cpu\":\"5000000\"}",
		"{\"min_cpu\":\"1\",\"min_cpu\":\"2\"}",
		"{\"min_memory\":\"-1Gi\"}",
		"{\"max_cpu\":null}",
		"{\"mode\":\"off\"}",
		"{\"mode\":true}",
		"{\"migration\":\"on\"}",
		"{\"migration\":1}",
	};

	(void)state;
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(
		act_control_bounds_decode("{\"min_cpu\":\"250m\",\"max_memory\":\"8Gi\"}",
					  strlen("{\"min_cpu\":\"250m\",\"max_memory\":\"8Gi\"}"),
					  &ch, &err),
		0);
	assert_true(ch.set_min_cpu && ch.set_max_mem && !ch.set_max_cpu && !ch.set_min_mem);
	assert_int_equal(ch.min_milli_cpu, 250);
	assert_int_equal(ch.max_mem_bytes, 8ULL << 30);
	assert_false(ch.set_mode);
	/* The mode alone is a change (vmactl set --mode, enable --recommend). */
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(act_control_bounds_decode("{\"mode\":\"recommend\"}",
						   strlen("{\"mode\":\"recommend\"}"), &ch, &err),
			 0);
	assert_true(ch.set_mode && ch.recommend && !ch.set_min_cpu);
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(act_control_bounds_decode("{\"mode\":\"active\"}",
						   strlen("{\"mode\":\"active\"}"), &ch, &err),
			 0);
	assert_true(ch.set_mode && !ch.recommend);
	assert_false(ch.set_migration);
	/* Migration alone is a change (vmactl set --[no-]migration). */
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(act_control_bounds_decode("{\"migration\":true}",
						   strlen("{\"migration\":true}"), &ch, &err),
			 0);
	assert_true(ch.set_migration && ch.migration && !ch.set_mode);
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(act_control_bounds_decode("{\"migration\":false,\"max_cpu\":\"2\"}",
						   strlen("{\"migration\":false,\"max_cpu\":\"2\"}"),
						   &ch, &err),
			 0);
	assert_true(ch.set_migration && !ch.migration && ch.set_max_cpu);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&ch, 0, sizeof(ch));
		memset(&err, 0, sizeof(err));
		assert_true(act_control_bounds_decode(bad[i], strlen(bad[i]), &ch, &err) < 0);
		assert_true(err.msg[0] != '\0');
	}
}

/* GET /v1/vms's "hook": a restart of libvirtd is asked for only when the
 * hook is installed, a start came without its notice, and none since. */
static void hook_status(void **state)
{
	struct act_hook_status h = { 0 };
	json_t *o;

	(void)state;
	o = act_json_hook(&h);
	assert_true(json_is_null(json_object_get(o, "unannounced_start")));
	assert_false(json_is_true(json_object_get(o, "restart_libvirtd")));
	json_decref(o);
	h.installed = true;
	h.notices = 2;
	h.last_notice_usec = 1000000;
	h.unhooked_usec = 2000000;
	snprintf(h.unhooked, sizeof(h.unhooked), "db-1");
	o = act_json_hook(&h);
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(o, "unannounced_start"), "vm")),
			    "db-1");
	assert_true(json_is_true(json_object_get(o, "restart_libvirtd")));
	json_decref(o);
	/* A notice since: the hook runs now. */
	h.last_notice_usec = 3000000;
	o = act_json_hook(&h);
	assert_false(json_is_true(json_object_get(o, "restart_libvirtd")));
	assert_true(json_is_null(json_object_get(o, "unannounced_start")));
	json_decref(o);
	/* Not installed: nothing to restart for. */
	h.installed = false;
	h.last_notice_usec = 0;
	o = act_json_hook(&h);
	assert_false(json_is_true(json_object_get(o, "restart_libvirtd")));
	assert_non_null(json_object_get(o, "unannounced_start"));
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(views),       cmocka_unit_test(ring),
		cmocka_unit_test(reasons),     cmocka_unit_test(meta_edit),
		cmocka_unit_test(bounds_body), cmocka_unit_test(hook_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
