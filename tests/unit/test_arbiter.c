/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter's protocol and node model, through ag_arbiter_handle (no
 * sockets): every status and text, every version, compute-unit granular
 * grants, the watermark and migration report, restart recovery, expiry,
 * and the answers to a pod a moving lease marked (shared/lease.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

/* cmocka.h needs these headers before it */
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/arbiter/arbiter.h"
#include "shared/lease.h"

#define GiB (1024ULL * 1024 * 1024)

struct reply {
	unsigned status;
	char ctype[32];
	char body[1100];
};

static struct reply call(struct ag_arbiter *a, const char *method, const char *body)
{
	struct net_http_server_reply r = { 0 };
	struct reply out = { 0 };

	ag_arbiter_handle(a, method, body, strlen(body), 1000, &r);
	out.status = r.status;
	snprintf(out.ctype, sizeof(out.ctype), "%s", r.content_type ? r.content_type : "");
	snprintf(out.body, sizeof(out.body), "%.*s", (int)r.body_len, r.body ? r.body : "");
	free(r.body);
	return out;
}

static void expect(struct ag_arbiter *a, const char *body, unsigned status, const char *want)
{
	struct reply r = call(a, "POST", body);

	if (r.status != status || strcmp(r.body, want) != 0)
		fail_msg("request %s\n  got %u %s\n want %u %s", body, r.status, r.body, status,
			 want);
	assert_string_equal(r.ctype, status == 200 ? "application/json" : "text/plain");
}

static struct ag_arbiter *make(uint32_t cpu, uint64_t mem, double wm, uint64_t slot)
{
	struct ag_arbiter_config cfg = {
		.capacity = { cpu, mem },
		.watermark = wm,
		.slot_bytes = slot,
	};
	struct ag_arbiter *a = NULL;
	struct vmact_err err = { 0 };

	if (ag_arbiter_new(&cfg, &a, &err) < 0)
		fail_msg("%s", err.msg);
	return a;
}

/* A v5.0 request for pod NAME with CU {1 CPU, 4Gi}. */
static char *req5(char *buf, size_t len, const char *name, const char *res, const char *last)
{
	snprintf(buf, len,
		 "{\"protoVersion\":7,\"pod\":{\"namespace\":\"ns\",\"name\":\"%s\"},"
		 "\"computeUnit\":{\"vCPUs\":1,\"mem\":\"4Gi\"},\"resources\":%s,\"lastPermit\":%s,"
		 "\"metrics\":{\"loadAvg1M\":0.5}}",
		 name, res, last);
	return buf;
}

static void test_error_statuses(void **state)
{
	struct ag_arbiter *a = make(8000, 32 * GiB, 1, GiB);
	struct reply r;
	char big[2048];

	r = call(a, "GET", "");
	assert_int_equal(r.status, 400);
	assert_string_equal(r.body, "must be POST");
	r = call(a, "PUT", "{}");
	assert_string_equal(r.body, "must be POST");
	expect(a, "", 400, "bad JSON");
	expect(a, "{\"protoVersion\":7,", 400, "bad JSON");
	/* JSON the decoder refuses: its message, naming the key, not the
	 * plugin's "bad JSON" (which says nothing of why). */
	expect(a, "[7]", 400, "request: expected a JSON object");
	expect(a, "{\"protoVersion\":\"7\"}", 400, "protoVersion: expected an integer");
	expect(a, "{}", 400, "invalid protocol version <invalid: zero>");
	expect(a, "{\"protoVersion\":0,\"pod\":{}}", 400,
	       "invalid protocol version <invalid: zero>");
	expect(a, "{\"protoVersion\":8}", 400,
	       "protocol version mismatch: need v1.0 to v5.0 but got <unknown = v5.0 + 1>");
	expect(a, "{\"protoVersion\":7}", 400, "pod: missing");
	expect(a,
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"resources\":{\"vCPUs\":1,\"mem\":\"1Gi\"}}",
	       400, "computeUnit fields must be non-zero: vCPUs must be non-zero");
	expect(a,
	       "{\"protoVersion\":6,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"computeUnit\":{\"vCPUs\":1,\"mem\":0},\"resources\":{\"vCPUs\":1,\"mem\":\"1Gi\"},"
	       "\"metrics\":null}",
	       400, "computeUnit fields must be non-zero: mem must be non-zero");
	expect(a,
	       "{\"protoVersion\":2,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"resources\":{\"vCPUs\":\"1500m\",\"mem\":1},\"metrics\":null}",
	       400,
	       "agent requested fractional CPU with protocol version that does not support it");
	expect(a,
	       "{\"protoVersion\":1,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"resources\":{\"vCPUs\":1,\"mem\":1},\"metrics\":null}",
	       400, "nil metrics not supported for protocol version v1.0");
	expect(a,
	       "{\"protoVersion\":7,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"},"
	       "\"computeUnit\":{\"vCPUs\":1,\"mem\":\"1Gi\"},\"resources\":{\"vCPUs\":\"x\",\"mem\":1}}",
	       400, "resources: vCPUs: malformed quantity \"x\"");
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	/* Through the core a big body is merely JSON; the 1 KiB limit is the
	 * HTTP layer's (tested over sockets). Nothing was registered. */
	expect(a, big, 400, "invalid protocol version <invalid: zero>");
	{
		struct ag_arbiter_totals t;

		ag_arbiter_totals(a, &t);
		assert_int_equal(t.pods, 0);
		assert_int_equal(t.refused, t.requests);
	}
	ag_arbiter_free(a);
}

/* Neon's TestPodReconciling (doc/protocols.md, "Plugin test cases"),
 * factor 1 CPU / 4 GiB, node of 10 factors (with the watermark at 1.0 the
 * arbiter caps growth at the node's total). */
static void test_reconciling_like_head(void **state)
{
	struct ag_arbiter *a = make(10000, 40 * GiB, 1.0, 0);
	char b[512];
	struct vmact_resources res, pr;

	/* Seven other factors are taken by "filler". */
	expect(a, req5(b, sizeof(b), "filler", "{\"vCPUs\":7,\"mem\":\"28Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":7,\"mem\":\"28Gi\"}}");
	/* pod at 3 (lastPermit restores it) wants 5: node 7+3=10 -> nothing. */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":5,\"mem\":\"20Gi\"}",
		    "{\"vCPUs\":3,\"mem\":\"12Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":3,\"mem\":\"12Gi\"}}");
	assert_int_equal(ag_arbiter_pod(a, "ns", "p", &res, &pr), 0);
	assert_int_equal(pr.milli_cpu, 2000);
	assert_int_equal(pr.mem_bytes, 8 * GiB);
	/* filler shrinks by 1 factor -> p gets exactly one more (partial). */
	expect(a,
	       req5(b, sizeof(b), "filler", "{\"vCPUs\":6,\"mem\":\"24Gi\"}",
		    "{\"vCPUs\":7,\"mem\":\"28Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":6,\"mem\":\"24Gi\"}}");
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":5,\"mem\":\"20Gi\"}",
		    "{\"vCPUs\":3,\"mem\":\"12Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":4,\"mem\":\"16Gi\"}}");
	/* filler shrinks to 1 -> p's remaining factor fits (done). */
	expect(a,
	       req5(b, sizeof(b), "filler", "{\"vCPUs\":1,\"mem\":\"4Gi\"}",
		    "{\"vCPUs\":6,\"mem\":\"24Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":1,\"mem\":\"4Gi\"}}");
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":5,\"mem\":\"20Gi\"}",
		    "{\"vCPUs\":4,\"mem\":\"16Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":5,\"mem\":\"20Gi\"}}");
	/* A request that is not a whole number of units gets the exact rest
	 * when it fits. */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":\"5500m\",\"mem\":\"21Gi\"}",
		    "{\"vCPUs\":5,\"mem\":\"20Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":\"5500m\",\"mem\":\"21Gi\"}}");
	/* Node: 1 + 5.5 = 6.5 of 10. Ask for 10 more: 3 whole units fit
	 * (3.5 remain), CPU and memory independently. */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":\"15500m\",\"mem\":\"31Gi\"}",
		    "{\"vCPUs\":\"5500m\",\"mem\":\"21Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":\"8500m\",\"mem\":\"31Gi\"}}");
	/* Decreases are immediate. */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":2,\"mem\":\"8Gi\"}",
		    "{\"vCPUs\":\"8500m\",\"mem\":\"31Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	{
		struct ag_arbiter_totals t;

		ag_arbiter_totals(a, &t);
		assert_int_equal(t.reserved.milli_cpu, 3000);
		assert_int_equal(t.reserved.mem_bytes, 12 * GiB);
		assert_int_equal(t.pods, 2);
		assert_int_equal(t.candidates, 0);
	}
	ag_arbiter_free(a);
}

static void collect(void *ud, const char *ns, const char *name, const struct vmact_resources *r)
{
	char *out = ud;

	strcat(out, name);
	strcat(out, " ");
}

static void test_watermark_and_migration(void **state)
{
	/* 10 CPUs, watermark 0.8 -> growth up to 8. */
	struct ag_arbiter *a = make(10000, 40 * GiB, 0.8, 0);
	char b[512], who[256] = "";
	struct ag_arbiter_totals t;

	expect(a, req5(b, sizeof(b), "old", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	expect(a, req5(b, sizeof(b), "mid", "{\"vCPUs\":3,\"mem\":\"12Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":3,\"mem\":\"12Gi\"}}");
	/* Growth stops at the watermark: 5 of 8 used, mid asks +5, gets +3. */
	expect(a,
	       req5(b, sizeof(b), "mid", "{\"vCPUs\":8,\"mem\":\"32Gi\"}",
		    "{\"vCPUs\":3,\"mem\":\"12Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":6,\"mem\":\"24Gi\"}}");
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.reserved.milli_cpu, 8000);
	assert_int_equal(t.watermark.milli_cpu, 8000);
	assert_int_equal(t.candidates, 0);
	/* A VM already running at 2 CPUs registers: reality beyond the
	 * watermark is tolerated, growth refused, migrations reported oldest
	 * first (old alone covers the 2 CPUs over). */
	expect(a, req5(b, sizeof(b), "new", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.candidates, 1); /* old's 2 CPU / 8Gi cover the excess */
	assert_int_equal(t.migrating, 0);  /* reported, not moved */
	ag_arbiter_migration_candidates(a, collect, who);
	assert_string_equal(who, "old ");
	/* Growth is refused to everyone while over the watermark. */
	expect(a,
	       req5(b, sizeof(b), "new", "{\"vCPUs\":3,\"mem\":\"12Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	/* old is the candidate, yet its answer carries no "migrate": nothing
	 * moves it, and an agent told so stops scaling its VM (doc/protocols.md,
	 * "What each era's agents sent"). It stays reported. */
	expect(a,
	       req5(b, sizeof(b), "old", "{\"vCPUs\":3,\"mem\":\"12Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	who[0] = '\0';
	ag_arbiter_migration_candidates(a, collect, who);
	assert_string_equal(who, "old ");
	/* old shrinks to 1 CU: still over (9 > 8 CPUs), old stays selected. */
	expect(a,
	       req5(b, sizeof(b), "old", "{\"vCPUs\":1,\"mem\":\"4Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":1,\"mem\":\"4Gi\"}}");
	/* mid shrinks: under the watermark again, nothing to migrate. */
	expect(a,
	       req5(b, sizeof(b), "mid", "{\"vCPUs\":4,\"mem\":\"16Gi\"}",
		    "{\"vCPUs\":6,\"mem\":\"24Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":4,\"mem\":\"16Gi\"}}");
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.candidates, 0);
	assert_true(t.reserved.milli_cpu <= t.watermark.milli_cpu);
	ag_arbiter_free(a);
}

/* A 1.x agent (v0.1.8 .. v0.5.1) panics on "migrate": a candidate of a
 * node over its watermark gets its permit without it. */
static void test_no_migrate_to_v1(void **state)
{
	struct ag_arbiter *a = make(2000, 8 * GiB, 1, GiB);
	char who[64] = "";
	static const char *const bodies[] = {
		"{\"protoVersion\":2,\"pod\":{\"name\":\"a\",\"namespace\":\"default\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":4},\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":0.5}}",
		"{\"protoVersion\":1,\"pod\":{\"name\":\"b\",\"namespace\":\"default\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":4},\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":0.5}}",
		"{\"protoVersion\":2,\"pod\":{\"name\":\"a\",\"namespace\":\"default\"},"
		"\"resources\":{\"vCPUs\":2,\"mem\":4},\"metrics\":null}",
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		struct reply r = call(a, "POST", bodies[i]);

		assert_int_equal(r.status, 200);
		if (strstr(r.body, "migrate"))
			fail_msg("%s\n  got %s", bodies[i], r.body);
	}
	/* Over the watermark (4 CPUs of 2): a, the oldest, is the candidate. */
	ag_arbiter_migration_candidates(a, collect, who);
	assert_string_equal(who, "a ");
	ag_arbiter_free(a);
}

/* After a restart the arbiter knows nothing; agents' lastPermit restores
 * the reservations, so a full node stays full. */
static void test_restart_restores(void **state)
{
	struct ag_arbiter *a = make(4000, 16 * GiB, 1.0, 0);
	char b[512];

	expect(a,
	       req5(b, sizeof(b), "a", "{\"vCPUs\":3,\"mem\":\"12Gi\"}",
		    "{\"vCPUs\":3,\"mem\":\"12Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":3,\"mem\":\"12Gi\"}}");
	expect(a,
	       req5(b, sizeof(b), "b", "{\"vCPUs\":3,\"mem\":\"12Gi\"}",
		    "{\"vCPUs\":1,\"mem\":\"4Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":1,\"mem\":\"4Gi\"}}");
	ag_arbiter_free(a);
}

static void test_expiry(void **state)
{
	struct ag_arbiter_config cfg = { .capacity = { 4000, 16 * GiB }, .pod_ttl_usec = 500 };
	struct ag_arbiter *a = NULL;
	struct ag_arbiter_totals t;
	char b[512];

	assert_int_equal(ag_arbiter_new(&cfg, &a, NULL), 0);
	expect(a, req5(b, sizeof(b), "gone", "{\"vCPUs\":1,\"mem\":\"4Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":1,\"mem\":\"4Gi\"}}");
	assert_int_equal(ag_arbiter_expire(a, 1000 + 400), 0);
	/* Asked about a time before the pod was last seen (a late timer on a
	 * busy loop): the pod is fresh, not expired. */
	assert_int_equal(ag_arbiter_expire(a, 1000 - 1), 0);
	assert_int_equal(ag_arbiter_expire(a, 1000 + 600), 1);
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.pods, 0);
	assert_int_equal(t.reserved.milli_cpu, 0);
	assert_int_equal(t.reserved.mem_bytes, 0);
	ag_arbiter_free(a);
}

/* Every legacy version: slots, whole CPUs, resourceUnit < 3.0. */
static void test_legacy_versions(void **state)
{
	struct ag_arbiter *a = make(4000, 16 * GiB, 1.0, GiB);

	/* 1.0 / 1.1: unit {250m,1Gi} scaled to whole CPUs {1, 4 slots}. */
	expect(a,
	       "{\"protoVersion\":1,\"pod\":{\"namespace\":\"n\",\"name\":\"v10\"},"
	       "\"resources\":{\"vCPUs\":1,\"mem\":2},"
	       "\"metrics\":{\"loadAvg1M\":1,\"loadAvg5M\":1,\"memoryUsageBytes\":1}}",
	       200,
	       "{\"permit\":{\"vCPUs\":1,\"mem\":2},\"resourceUnit\":{\"vCPUs\":1,\"mem\":4}}");
	expect(a,
	       "{\"protoVersion\":2,\"pod\":{\"namespace\":\"n\",\"name\":\"v11\"},"
	       "\"resources\":{\"vCPUs\":1,\"mem\":1},\"metrics\":null}",
	       200,
	       "{\"permit\":{\"vCPUs\":1,\"mem\":1},\"resourceUnit\":{\"vCPUs\":1,\"mem\":4}}");
	/* 2.0: fractional CPU, slots, resourceUnit {250m, 1}. */
	expect(a,
	       "{\"protoVersion\":3,\"pod\":{\"namespace\":\"n\",\"name\":\"v20\"},"
	       "\"resources\":{\"vCPUs\":\"500m\",\"mem\":2},"
	       "\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":0.25,\"memoryUsageBytes\":100000000}}",
	       200,
	       "{\"permit\":{\"vCPUs\":\"500m\",\"mem\":2},\"resourceUnit\":{\"vCPUs\":\"250m\",\"mem\":1}}");
	/* 2.1: lastPermit restores; increase in units (node: 1+1+0.5 = 2.5
	 * of 4 CPUs; memory 5 of 16 slots). */
	expect(a,
	       "{\"protoVersion\":4,\"pod\":{\"namespace\":\"n\",\"name\":\"v21\"},"
	       "\"resources\":{\"vCPUs\":\"2500m\",\"mem\":3},\"lastPermit\":{\"vCPUs\":\"500m\",\"mem\":1},"
	       "\"metrics\":null}",
	       200,
	       "{\"permit\":{\"vCPUs\":\"1500m\",\"mem\":3},\"resourceUnit\":{\"vCPUs\":\"250m\",\"mem\":1}}");
	/* 3.0: no resourceUnit any more. */
	expect(a,
	       "{\"protoVersion\":5,\"pod\":{\"namespace\":\"n\",\"name\":\"v30\"},"
	       "\"resources\":{\"vCPUs\":\"250m\",\"mem\":1},\"lastPermit\":null,\"metrics\":null}",
	       200, "{\"permit\":{\"vCPUs\":\"250m\",\"mem\":1}}");
	/* 4.0: bytes, the agent's compute unit. */
	expect(a,
	       "{\"protoVersion\":6,\"pod\":{\"namespace\":\"n\",\"name\":\"v40\"},"
	       "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},"
	       "\"resources\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},\"lastPermit\":null,"
	       "\"metrics\":{\"loadAvg1M\":0.5,\"loadAvg5M\":0.25,\"memoryUsageBytes\":1}}",
	       200, "{\"permit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"}}");
	ag_arbiter_free(a);
}

static void test_version_range_and_config(void **state)
{
	struct ag_arbiter_config cfg = { .capacity = { 4000, 16 * GiB } };
	struct ag_arbiter *a = NULL;
	struct vmact_err err = { 0 };
	struct ag_arbiter_totals t;

	/* No slot size given: NeonVM's default 1 GiB, and 2.0 (slots) is
	 * in range; what the request lacks is what it is refused for. */
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), 0);
	expect(a, "{\"protoVersion\":3,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"}}", 400,
	       "resources: missing");
	ag_arbiter_free(a);
	/* Versions below 4.0 refused by range, where the operator says so. */
	cfg.min_version = AG_PLUGIN_V4_0;
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), 0);
	expect(a, "{\"protoVersion\":3,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"}}", 400,
	       "protocol version mismatch: need v4.0 to v5.0 but got v2.0");
	ag_arbiter_free(a);
	cfg.min_version = 0;
	/* HEAD's range: 5.0 only. */
	cfg.min_version = cfg.max_version = AG_PLUGIN_V5_0;
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), 0);
	expect(a, "{\"protoVersion\":6,\"pod\":{\"namespace\":\"n\",\"name\":\"p\"}}", 400,
	       "protocol version mismatch: need v5.0 but got v4.0");
	ag_arbiter_free(a);

	/* Reserve and overcommit. */
	cfg = (struct ag_arbiter_config){
		.capacity = { 8000, 32 * GiB },
		.reserve = { 1000, 4 * GiB },
		.overcommit_cpu_milli = 2000,
		.watermark = 0.5,
	};
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), 0);
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.total.milli_cpu, 14000);
	assert_int_equal(t.total.mem_bytes, 28 * GiB);
	assert_int_equal(t.watermark.milli_cpu, 7000);
	assert_int_equal(t.watermark.mem_bytes, 14 * GiB);
	ag_arbiter_free(a);

	cfg = (struct ag_arbiter_config){ .capacity = { 1000, GiB }, .reserve = { 1000, 0 } };
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no CPU left"));
	vmact_err_reset(&err);
	cfg = (struct ag_arbiter_config){ .capacity = { 1000, GiB }, .watermark = 1.5 };
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "watermark"));
	vmact_err_reset(&err);
	cfg = (struct ag_arbiter_config){ .capacity = { 1000, GiB },
					  .min_version = AG_PLUGIN_V4_0,
					  .max_version = AG_PLUGIN_V3_0 };
	assert_int_equal(ag_arbiter_new(&cfg, &a, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "empty protocol version range"));
}

/* ---- a pod being moved away (a moving lease) ---- */

static const uint8_t lkey[] = "0123456789abcdef0123456789abcdef";

static struct ag_arbiter *make_leasing(uint32_t cpu, uint64_t mem, double wm)
{
	struct ag_arbiter_config cfg = {
		.capacity = { cpu, mem },
		.watermark = wm,
		.slot_bytes = GiB,
		.lease_key = lkey,
		.lease_key_len = sizeof(lkey) - 1,
	};
	struct ag_arbiter *a = NULL;
	struct vmact_err err = { 0 };

	if (ag_arbiter_new(&cfg, &a, &err) < 0)
		fail_msg("%s", err.msg);
	return a;
}

/* The cluster layer's lease on ns/name, moving or not, for a VM that runs
 * (existing). */
static void mark(struct ag_arbiter *a, const char *name, bool moving)
{
	struct vmact_lease_request lr = {
		.size = { 1000, GiB }, .ttl_s = 60, .existing = true, .moving = moving
	};
	struct net_http_server_reply r = { 0 };
	char sig[VMACT_LEASE_SIG_HEX + 1], *body;

	snprintf(lr.ns, sizeof(lr.ns), "ns");
	snprintf(lr.name, sizeof(lr.name), "%s", name);
	body = vmact_lease_request_encode(&lr);
	vmact_lease_sign(lkey, sizeof(lkey) - 1, "POST", "/v1/leases", 1700000000, body,
			 strlen(body), sig);
	ag_arbiter_lease_handle(a, "POST", "/v1/leases", "1700000000", sig, body, strlen(body),
				1000, 1700000000, &r);
	if (r.status != 200)
		fail_msg("lease: %u %.*s", r.status, (int)r.body_len, r.body);
	free(r.body);
	free(body);
}

/* A moving pod is the legacy plugins' migrating pod: no increase (its
 * shortfall is pressure), a decrease granted, "migrate" in the answer;
 * once told, a change is refused and the same size answered again. */
static void test_moving_pod(void **state)
{
	struct ag_arbiter *a = make_leasing(16000, 64 * GiB, 1);
	struct vmact_resources held, pressure;
	char b[512];

	expect(a, req5(b, sizeof(b), "p", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	expect(a, req5(b, sizeof(b), "q", "{\"vCPUs\":3,\"mem\":\"12Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":3,\"mem\":\"12Gi\"}}");
	mark(a, "p", true);
	mark(a, "q", true);
	/* p asks for more: kept at 2, the rest is pressure, told to migrate. */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":4,\"mem\":\"8Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"},\"migrate\":{}}");
	assert_int_equal(ag_arbiter_pod(a, "ns", "p", &held, &pressure), 0);
	assert_int_equal(held.milli_cpu, 2000);
	assert_int_equal(pressure.milli_cpu, 2000);
	/* Told: any change is refused in the legacy plugins' words... */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":4,\"mem\":\"8Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       400,
	       "cannot change resources: agent has already been informed that pod is migrating");
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":1,\"mem\":\"8Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       400,
	       "cannot change resources: agent has already been informed that pod is migrating");
	/* ...the same size is answered, still with "migrate". */
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":2,\"mem\":\"8Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"},\"migrate\":{}}");
	/* q, not told yet, shrinks: granted (and told). */
	expect(a,
	       req5(b, sizeof(b), "q", "{\"vCPUs\":1,\"mem\":\"12Gi\"}",
		    "{\"vCPUs\":3,\"mem\":\"12Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":1,\"mem\":\"12Gi\"},\"migrate\":{}}");
	assert_int_equal(ag_arbiter_pod(a, "ns", "q", &held, NULL), 0);
	assert_int_equal(held.milli_cpu, 1000);
	/* The mark cleared (the move given up): p grows again, untold. */
	mark(a, "p", false);
	expect(a,
	       req5(b, sizeof(b), "p", "{\"vCPUs\":4,\"mem\":\"8Gi\"}",
		    "{\"vCPUs\":2,\"mem\":\"8Gi\"}"),
	       200, "{\"permit\":{\"vCPUs\":4,\"mem\":\"8Gi\"}}");
	ag_arbiter_free(a);
}

/* "migrate" from 2.0 on only: a 1.x agent panics on it, so it is pinned
 * at its reservation without being told (and never refused: it was not
 * told). */
static void test_moving_by_version(void **state)
{
	struct ag_arbiter *a = make_leasing(16000, 64 * GiB, 1);
	static const char v11[] =
		"{\"protoVersion\":2,\"pod\":{\"namespace\":\"ns\",\"name\":\"old\"},"
		"\"resources\":{\"vCPUs\":%d,\"mem\":4},\"metrics\":null}";
	static const char v20[] =
		"{\"protoVersion\":3,\"pod\":{\"namespace\":\"ns\",\"name\":\"two\"},"
		"\"resources\":{\"vCPUs\":\"%dm\",\"mem\":4},\"metrics\":null}";
	char b[512];
	struct reply r;

	snprintf(b, sizeof(b), v11, 2);
	assert_int_equal(call(a, "POST", b).status, 200);
	snprintf(b, sizeof(b), v20, 2000);
	assert_int_equal(call(a, "POST", b).status, 200);
	mark(a, "old", true);
	mark(a, "two", true);
	for (int i = 0; i < 2; i++) {
		snprintf(b, sizeof(b), v11, 3);
		r = call(a, "POST", b);
		assert_int_equal(r.status, 200);
		assert_null(strstr(r.body, "migrate"));
		assert_non_null(strstr(r.body, "\"permit\":{\"vCPUs\":2,\"mem\":4}"));
	}
	snprintf(b, sizeof(b), v20, 2000);
	r = call(a, "POST", b);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"migrate\":{}"));
	ag_arbiter_free(a);
}

/* Candidates (reported above the watermark, never told) and pods marked
 * moving are counted apart; what moves no longer counts towards the
 * excess. */
static void test_candidates_and_moving(void **state)
{
	/* 10 CPUs, watermark 0.8 -> growth up to 8. */
	struct ag_arbiter *a = make_leasing(10000, 40 * GiB, 0.8);
	struct ag_arbiter_totals t;
	char b[512], who[256] = "";
	struct reply r;

	expect(a, req5(b, sizeof(b), "old", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	expect(a, req5(b, sizeof(b), "mid", "{\"vCPUs\":6,\"mem\":\"24Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":6,\"mem\":\"24Gi\"}}");
	expect(a, req5(b, sizeof(b), "new", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"), 200,
	       "{\"permit\":{\"vCPUs\":2,\"mem\":\"8Gi\"}}");
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.candidates, 1);
	assert_int_equal(t.migrating, 0);
	/* The candidate is not told. */
	r = call(a, "POST", req5(b, sizeof(b), "old", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"));
	assert_null(strstr(r.body, "migrate"));
	/* mid is being moved: 10 - 6 = 4 CPUs stay, under the watermark. */
	mark(a, "mid", true);
	ag_arbiter_totals(a, &t);
	assert_int_equal(t.candidates, 0);
	assert_int_equal(t.migrating, 1);
	ag_arbiter_migration_candidates(a, collect, who);
	assert_string_equal(who, "");
	r = call(a, "POST", req5(b, sizeof(b), "mid", "{\"vCPUs\":6,\"mem\":\"24Gi\"}", "null"));
	assert_non_null(strstr(r.body, "\"migrate\":{}"));
	r = call(a, "POST", req5(b, sizeof(b), "old", "{\"vCPUs\":2,\"mem\":\"8Gi\"}", "null"));
	assert_null(strstr(r.body, "migrate"));
	ag_arbiter_free(a);
}

static void test_host_capacity(void **state)
{
	struct vmact_resources r;
	struct vmact_err err = { 0 };

	assert_int_equal(ag_host_capacity(&r, &err), 0);
	assert_true(r.milli_cpu >= 1000);
	assert_int_equal(r.milli_cpu % 1000, 0);
	assert_true(r.mem_bytes > 64ULL * 1024 * 1024);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_statuses),
		cmocka_unit_test(test_reconciling_like_head),
		cmocka_unit_test(test_watermark_and_migration),
		cmocka_unit_test(test_no_migrate_to_v1),
		cmocka_unit_test(test_restart_restores),
		cmocka_unit_test(test_expiry),
		cmocka_unit_test(test_legacy_versions),
		cmocka_unit_test(test_version_range_and_config),
		cmocka_unit_test(test_moving_pod),
		cmocka_unit_test(test_moving_by_version),
		cmocka_unit_test(test_candidates_and_moving),
		cmocka_unit_test(test_host_capacity),
	};

	return cmocka_run_group_tests_name("test_arbiter", tests, NULL, NULL);
}
