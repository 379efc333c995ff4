/* SPDX-License-Identifier: Apache-2.0 */
/* The arbiter's lease interface (shared/lease.h) through
 * ag_arbiter_lease_handle, and its one ledger with the plugin protocol
 * (ag_arbiter_handle): signatures, room under the watermark, existing
 * VMs recorded, renewal, expiry, release, and leases and growth never
 * promising the same room twice; the moving mark and its "frozen" as
 * GET /v1/leases/NS/NAME shows them, with and without an owner that
 * freezes; an agent forgotten with and without a lease. */
/* What cmocka.h needs first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/arbiter/arbiter.h"
#include "base/quantity.h"
#include "shared/lease.h"

#define GiB      (1024ULL * 1024 * 1024)
#define SEC      1000000ULL
#define NOW_REAL 1700000000LL

static const uint8_t key[] = "0123456789abcdef0123456789abcdef";
#define KEYLEN (sizeof(key) - 1)

struct reply {
	unsigned status;
	char body[1200];
};

static struct ag_arbiter *make_owned(uint32_t cpu, uint64_t mem, bool leases, bool owner)
{
	struct ag_arbiter_config cfg = {
		.capacity = { cpu, mem },
		.watermark = 1.0,
		.pod_ttl_usec = 60 * SEC,
		.owner_freezes = owner,
	};
	struct ag_arbiter *a = NULL;
	struct vmact_err err = { 0 };

	if (leases) {
		cfg.lease_key = key;
		cfg.lease_key_len = KEYLEN;
	}
	if (ag_arbiter_new(&cfg, &a, &err) < 0)
		fail_msg("%s", err.msg);
	return a;
}

static struct ag_arbiter *make(uint32_t cpu, uint64_t mem, bool leases)
{
	return make_owned(cpu, mem, leases, false);
}

/* A request signed with k at ts. */
static struct reply signed_call(struct ag_arbiter *a, const uint8_t *k, size_t klen, long long ts,
				const char *method, const char *url, const char *body, uint64_t now)
{
	struct net_http_server_reply r = { 0 };
	struct reply out = { 0 };
	char sig[VMACT_LEASE_SIG_HEX + 1], tss[32];

	vmact_lease_sign(k, klen, method, url, ts, body, strlen(body), sig);
	snprintf(tss, sizeof(tss), "%lld", ts);
	ag_arbiter_lease_handle(a, method, url, tss, sig, body, strlen(body), now, NOW_REAL, &r);
	out.status = r.status;
	snprintf(out.body, sizeof(out.body), "%.*s", (int)r.body_len, r.body ? r.body : "");
	free(r.body);
	return out;
}

static struct reply lcall(struct ag_arbiter *a, const char *method, const char *url,
			  const char *body, uint64_t now)
{
	return signed_call(a, key, KEYLEN, NOW_REAL, method, url, body, now);
}

static struct reply lease(struct ag_arbiter *a, const char *name, uint32_t mcpu, uint64_t mem,
			  unsigned ttl, bool existing, uint64_t now)
{
	struct vmact_lease_request r = { .size = { mcpu, mem },
					 .ttl_s = ttl,
					 .existing = existing };
	char *body;
	struct reply out;

	snprintf(r.ns, sizeof(r.ns), "default");
	snprintf(r.name, sizeof(r.name), "%s", name);
	body = vmact_lease_request_encode(&r);
	assert_non_null(body);
	out = lcall(a, "POST", "/v1/leases", body, now);
	free(body);
	return out;
}

static void totals(struct ag_arbiter *a, uint32_t *cpu, uint64_t *mem, unsigned *leases)
{
	struct ag_arbiter_totals t;

	ag_arbiter_totals(a, &t);
	*cpu = t.reserved.milli_cpu;
	*mem = t.reserved.mem_bytes;
	*leases = t.leases;
}

/* A plugin protocol v5.0 request of pod default/name for mcpu; the
 * permit's CPU in *permit_cpu. */
static unsigned grow(struct ag_arbiter *a, const char *name, uint32_t mcpu, uint64_t mem,
		     uint64_t now, uint32_t *permit_cpu)
{
	struct net_http_server_reply r = { 0 };
	struct vmact_err err = { 0 };
	char body[512];
	unsigned status;

	snprintf(body, sizeof(body),
		 "{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"%s\"},"
		 "\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"256Mi\"},"
		 "\"resources\":{\"vCPUs\":\"%um\",\"mem\":\"%llu\"},\"lastPermit\":null,"
		 "\"metrics\":{\"loadAvg1M\":0.5}}",
		 name, mcpu, (unsigned long long)mem);
	ag_arbiter_handle(a, "POST", body, strlen(body), now, &r);
	status = r.status;
	if (status == 200 && permit_cpu) {
		json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
		json_t *v = json_object_get(json_object_get(j, "permit"), "vCPUs");
		uint64_t m = 0;

		if (json_is_integer(v))
			m = (uint64_t)json_integer_value(v) * 1000;
		else if (!json_is_string(v) ||
			 vmact_quantity_parse_milli(json_string_value(v), &m, &err) < 0)
			fail_msg("permit in %.*s", (int)r.body_len, r.body);
		*permit_cpu = (uint32_t)m;
		json_decref(j);
	} else if (status != 200) {
		fail_msg("%u %.*s for %s", status, (int)r.body_len, r.body, body);
	}
	free(r.body);
	return status;
}

static void test_signatures(void **state)
{
	struct ag_arbiter *a = make(4000, 8 * GiB, true), *none = make(4000, 8 * GiB, false);
	static const uint8_t other[] = "another key of 32 bytes, not it!";
	struct net_http_server_reply r = { 0 };
	struct reply out;

	/* No key configured: no interface. */
	out = lcall(none, "GET", "/v1/leases", "", 0);
	assert_int_equal(out.status, 404);
	assert_non_null(strstr(out.body, "no lease key"));
	/* Unsigned, wrongly signed, stale, from the future. */
	ag_arbiter_lease_handle(a, "GET", "/v1/leases", NULL, NULL, "", 0, 0, NOW_REAL, &r);
	assert_int_equal(r.status, 401);
	free(r.body);
	out = signed_call(a, other, sizeof(other) - 1, NOW_REAL, "GET", "/v1/leases", "", 0);
	assert_int_equal(out.status, 401);
	assert_non_null(strstr(out.body, "bad signature"));
	out = signed_call(a, key, KEYLEN, NOW_REAL - VMACT_LEASE_WINDOW_S - 1, "GET", "/v1/leases",
			  "", 0);
	assert_int_equal(out.status, 401);
	out = signed_call(a, key, KEYLEN, NOW_REAL + VMACT_LEASE_WINDOW_S + 1, "GET", "/v1/leases",
			  "", 0);
	assert_int_equal(out.status, 401);
	/* The signature covers the body: a changed body is refused. */
	{
		char sig[VMACT_LEASE_SIG_HEX + 1], tss[32];
		const char *body = "{\"namespace\":\"default\",\"name\":\"x\",\"milli_cpu\":1000,"
				   "\"memory_bytes\":1,\"ttl_s\":5}";

		vmact_lease_sign(key, KEYLEN, "POST", "/v1/leases", NOW_REAL, body, strlen(body),
				 sig);
		snprintf(tss, sizeof(tss), "%lld", (long long)NOW_REAL);
		ag_arbiter_lease_handle(
			a, "POST", "/v1/leases", tss, sig,
			"{\"namespace\":\"default\",\"name\":\"x\",\"milli_cpu\":4000,"
			"\"memory_bytes\":1,\"ttl_s\":5}",
			strlen(body), 0, NOW_REAL, &r);
		assert_int_equal(r.status, 401);
		free(r.body);
	}
	out = lcall(a, "GET", "/v1/leases", "", 0);
	assert_int_equal(out.status, 200);
	assert_non_null(strstr(out.body, "\"watermark\":{\"milli_cpu\":4000"));
	ag_arbiter_free(a);
	ag_arbiter_free(none);
}

static void test_bad_requests(void **state)
{
	struct ag_arbiter *a = make(4000, 8 * GiB, true);
	struct reply out;

	out = lcall(a, "POST", "/v1/leases", "not json", 0);
	assert_int_equal(out.status, 400);
	out = lcall(
		a, "POST", "/v1/leases",
		"{\"namespace\":\"default\",\"name\":\"Bad/Name\",\"milli_cpu\":1,\"memory_bytes\":1,"
		"\"ttl_s\":5}",
		0);
	assert_int_equal(out.status, 400);
	assert_non_null(strstr(out.body, "name"));
	out = lcall(a, "POST", "/v1/leases",
		    "{\"namespace\":\"default\",\"name\":\"a\",\"milli_cpu\":1,\"memory_bytes\":1,"
		    "\"ttl_s\":0}",
		    0);
	assert_int_equal(out.status, 400);
	assert_non_null(strstr(out.body, "ttl_s"));
	out = lcall(a, "POST", "/v1/leases",
		    "{\"namespace\":\"default\",\"name\":\"a\",\"milli_cpu\":1,\"memory_bytes\":1,"
		    "\"ttl_s\":5,\"extra\":1}",
		    0);
	assert_int_equal(out.status, 400);
	out = lcall(a, "PUT", "/v1/leases", "", 0);
	assert_int_equal(out.status, 405);
	out = lcall(a, "DELETE", "/v1/leases/default", "", 0);
	assert_int_equal(out.status, 404);
	out = lcall(a, "DELETE", "/v1/leases/default/nobody", "", 0);
	assert_int_equal(out.status, 200);
	assert_non_null(strstr(out.body, "\"released\":false"));
	ag_arbiter_free(a);
}

static void test_room_renew_expire_release(void **state)
{
	struct ag_arbiter *a = make(4000, 8 * GiB, true);
	uint32_t cpu;
	uint64_t mem;
	unsigned n;

	assert_int_equal(lease(a, "vm-a", 1500, 2 * GiB, 10, false, 0).status, 200);
	assert_int_equal(lease(a, "vm-b", 1500, 2 * GiB, 10, false, 0).status, 200);
	/* 3 of 4 CPUs leased: 1.5 more does not fit. */
	{
		struct reply out = lease(a, "vm-c", 1500, 2 * GiB, 10, false, 0);

		assert_int_equal(out.status, 409);
		assert_non_null(strstr(out.body, "\"free\":{\"milli_cpu\":1000"));
	}
	/* A VM that runs already is recorded anyway (a restart). */
	assert_int_equal(lease(a, "vm-c", 1500, 2 * GiB, 10, true, 0).status, 200);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 4500);
	assert_int_equal(n, 3);
	/* Renewal of the same lease is no new room. */
	assert_int_equal(lease(a, "vm-a", 1500, 2 * GiB, 10, false, 5 * SEC).status, 200);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 4500);
	/* vm-b and vm-c expire at 10 s, vm-a (renewed at 5 s) at 15 s. */
	assert_int_equal(ag_arbiter_expire(a, 11 * SEC), 2);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 1500);
	assert_int_equal(n, 1);
	/* Released: the room is back at once. */
	{
		struct reply out = lcall(a, "DELETE", "/v1/leases/default/vm-a", "", 12 * SEC);

		assert_int_equal(out.status, 200);
		assert_non_null(strstr(out.body, "\"released\":true"));
	}
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 0);
	assert_int_equal(n, 0);
	ag_arbiter_free(a);
}

/* The one ledger: a lease and a growing VM never share room. */
static void test_one_ledger(void **state)
{
	struct ag_arbiter *a = make(4000, 64 * GiB, true);
	uint32_t permit = 0, cpu;
	uint64_t mem;
	unsigned n;

	/* A VM registers at 1 CPU and grows as far as it can: 4 CPUs. */
	assert_int_equal(grow(a, "grower", 1000, GiB, 0, &permit), 200);
	assert_int_equal(grow(a, "grower", 4000, GiB, SEC, &permit), 200);
	assert_int_equal(permit, 4000);
	/* No room left for a lease. */
	assert_int_equal(lease(a, "new-vm", 1000, GiB, 30, false, 2 * SEC).status, 409);
	/* It shrinks to 2; a lease of 1 takes part of the room... */
	assert_int_equal(grow(a, "grower", 2000, GiB, 3 * SEC, &permit), 200);
	assert_int_equal(lease(a, "new-vm", 1000, GiB, 30, false, 3 * SEC).status, 200);
	/* ...and growth gets only the rest. */
	assert_int_equal(grow(a, "grower", 4000, GiB, 4 * SEC, &permit), 200);
	assert_int_equal(permit, 3000);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 4000);
	ag_arbiter_free(a);
}

/* A lease whose VM's own agent then speaks for it is one entry. */
static void test_lease_becomes_pod(void **state)
{
	struct ag_arbiter *a = make(4000, 64 * GiB, true);
	uint32_t permit = 0, cpu;
	uint64_t mem;
	unsigned n;

	assert_int_equal(lease(a, "vm-a", 2000, 2 * GiB, 10, false, 0).status, 200);
	/* Its agent registers at 1 CPU: the entry is the same. */
	assert_int_equal(grow(a, "vm-a", 1000, 2 * GiB, SEC, &permit), 200);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 1000);
	/* Renewing the lease keeps the agent's size. */
	assert_int_equal(lease(a, "vm-a", 2000, 2 * GiB, 10, true, 2 * SEC).status, 200);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 1000);
	assert_int_equal(n, 1);
	/* Released, the agent still holds it; silent past pod_ttl, it goes. */
	assert_int_equal(lcall(a, "DELETE", "/v1/leases/default/vm-a", "", 3 * SEC).status, 200);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 1000);
	assert_int_equal(n, 0);
	assert_int_equal(ag_arbiter_expire(a, 62 * SEC), 1);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 0);
	ag_arbiter_free(a);
}

/* A lease, marked moving or not, for a VM that runs. */
static struct reply lease_moving(struct ag_arbiter *a, const char *name, bool moving, uint64_t now)
{
	struct vmact_lease_request r = {
		.size = { 1000, GiB }, .ttl_s = 100, .existing = true, .moving = moving
	};
	char *body;
	struct reply out;

	snprintf(r.ns, sizeof(r.ns), "default");
	snprintf(r.name, sizeof(r.name), "%s", name);
	body = vmact_lease_request_encode(&r);
	out = lcall(a, "POST", "/v1/leases", body, now);
	free(body);
	assert_int_equal(out.status, 200);
	return out;
}

/* GET /v1/leases/default/NAME, decoded as the cluster layer does: 0, or
 * the 404. */
static unsigned entry(struct ag_arbiter *a, const char *name, uint64_t now,
		      struct vmact_lease_pod *p)
{
	struct vmact_err err = { 0 };
	char url[128];
	struct reply out;
	json_t *j;

	snprintf(url, sizeof(url), "/v1/leases/default/%s", name);
	out = lcall(a, "GET", url, "", now);
	if (out.status != 200) {
		assert_int_equal(out.status, 404);
		assert_string_equal(out.body, "{\"error\":\"no such pod\"}");
		return out.status;
	}
	j = json_loads(out.body, 0, NULL);
	if (vmact_lease_pod_decode(j, p, &err) < 0)
		fail_msg("%s: %s", out.body, err.msg);
	json_decref(j);
	return 0;
}

struct seen {
	unsigned changes;
	bool moving;
	char name[64];
};

static void on_event(void *ud, const struct ag_arbiter_event *ev)
{
	struct seen *s = ud;

	if (!ev->lease || !ev->moving_changed)
		return;
	s->changes++;
	s->moving = ev->moving;
	snprintf(s->name, sizeof(s->name), "%s", ev->pod_name);
}

static void test_entry(void **state)
{
	struct ag_arbiter *a = make(4000, 8 * GiB, true);
	struct vmact_lease_pod p;
	uint32_t permit;

	assert_int_equal(entry(a, "nobody", 0, &p), 404);
	assert_int_equal(lcall(a, "PUT", "/v1/leases/default/vm-a", "", 0).status, 405);
	assert_non_null(strstr(lcall(a, "POST", "/v1/leases/default/vm-a", "", 0).body,
			       "use GET or DELETE"));
	assert_int_equal(lease(a, "vm-a", 1500, 2 * GiB, 10, false, 0).status, 200);
	assert_int_equal(entry(a, "vm-a", 0, &p), 0);
	assert_string_equal(p.ns, "default");
	assert_string_equal(p.name, "vm-a");
	assert_int_equal(p.size.milli_cpu, 1500);
	assert_int_equal(p.size.mem_bytes, 2 * GiB);
	assert_true(p.leased);
	assert_false(p.agent || p.moving || p.frozen);
	/* Its agent speaks and is refused growth: agent, pressure. */
	assert_int_equal(grow(a, "vm-a", 6000, 2 * GiB, SEC, &permit), 200);
	assert_int_equal(entry(a, "vm-a", SEC, &p), 0);
	assert_true(p.agent);
	assert_int_equal(p.size.milli_cpu, 4000);
	assert_int_equal(p.pressure.milli_cpu, 2000);
	/* Silent past pod_ttl: no agent any more (the lease was renewed). */
	lease_moving(a, "vm-a", false, 60 * SEC);
	assert_int_equal(entry(a, "vm-a", 62 * SEC, &p), 0);
	assert_false(p.agent);
	ag_arbiter_free(a);
}

/* vmact-arbiter (no owner that freezes): frozen once the agent was told,
 * at once without a live agent, and when the agent falls silent. */
static void test_moving_standalone(void **state)
{
	struct ag_arbiter *a = make(16000, 64 * GiB, true);
	struct vmact_lease_pod p;
	struct seen seen = { 0 };
	uint32_t permit;

	ag_arbiter_on_event(a, on_event, &seen);
	assert_int_equal(grow(a, "vm-a", 2000, GiB, 0, &permit), 200);
	lease_moving(a, "vm-a", true, SEC);
	assert_int_equal(seen.changes, 1);
	assert_true(seen.moving);
	assert_string_equal(seen.name, "vm-a");
	assert_int_equal(entry(a, "vm-a", SEC, &p), 0);
	assert_true(p.moving && p.agent && p.leased);
	assert_false(p.frozen); /* its agent was not told yet */
	/* A renewal with the mark changes nothing. */
	lease_moving(a, "vm-a", true, SEC);
	assert_int_equal(seen.changes, 1);
	assert_int_equal(grow(a, "vm-a", 2000, GiB, 2 * SEC, &permit), 200);
	assert_int_equal(entry(a, "vm-a", 2 * SEC, &p), 0);
	assert_true(p.frozen);
	/* Renewed without the mark: moving and frozen go. */
	lease_moving(a, "vm-a", false, 3 * SEC);
	assert_int_equal(seen.changes, 2);
	assert_false(seen.moving);
	assert_int_equal(entry(a, "vm-a", 3 * SEC, &p), 0);
	assert_false(p.moving || p.frozen);
	/* Marked again, the agent (last heard at 2 s) silent: frozen once
	 * it is no longer live, past pod_ttl. */
	lease_moving(a, "vm-a", true, 4 * SEC);
	assert_int_equal(entry(a, "vm-a", 4 * SEC, &p), 0);
	assert_false(p.frozen);
	assert_int_equal(entry(a, "vm-a", 63 * SEC, &p), 0);
	assert_true(p.moving && p.frozen && p.leased);
	assert_false(p.agent);
	/* Nobody speaks for a leased VM: frozen at once. */
	lease_moving(a, "vm-b", true, 63 * SEC);
	assert_int_equal(entry(a, "vm-b", 63 * SEC, &p), 0);
	assert_true(p.moving && p.frozen);
	/* Released: the mark goes with the lease (and the entries). */
	assert_int_equal(lcall(a, "DELETE", "/v1/leases/default/vm-a", "", 64 * SEC).status, 200);
	assert_false(seen.moving);
	assert_string_equal(seen.name, "vm-a");
	assert_int_equal(lcall(a, "DELETE", "/v1/leases/default/vm-b", "", 64 * SEC).status, 200);
	assert_int_equal(entry(a, "vm-b", 64 * SEC, &p), 404);
	assert_int_equal(entry(a, "vm-a", 64 * SEC, &p), 404);
	ag_arbiter_free(a);
}

/* vmactd's embedded arbiter (owner_freezes): only the owner says frozen. */
static void test_moving_owner(void **state)
{
	struct ag_arbiter *a = make_owned(16000, 64 * GiB, true, true);
	struct vmact_lease_pod p;
	struct seen seen = { 0 };
	uint32_t permit;

	ag_arbiter_on_event(a, on_event, &seen);
	assert_int_equal(ag_arbiter_pod_frozen(a, "default", "vm-a", true), -ENOENT);
	assert_int_equal(grow(a, "vm-a", 2000, GiB, 0, &permit), 200);
	/* Not moving: a frozen report means nothing. */
	assert_int_equal(ag_arbiter_pod_frozen(a, "default", "vm-a", true), 0);
	assert_int_equal(entry(a, "vm-a", 0, &p), 0);
	assert_false(p.frozen);
	lease_moving(a, "vm-a", true, SEC);
	assert_true(seen.moving);
	/* Told to migrate, but its owner has not frozen it yet. */
	assert_int_equal(grow(a, "vm-a", 2000, GiB, 2 * SEC, &permit), 200);
	assert_int_equal(entry(a, "vm-a", 2 * SEC, &p), 0);
	assert_true(p.moving);
	assert_false(p.frozen);
	/* Nor does a silent agent freeze it. */
	lease_moving(a, "vm-a", true, 62 * SEC);
	assert_int_equal(entry(a, "vm-a", 62 * SEC, &p), 0);
	assert_false(p.frozen);
	assert_int_equal(ag_arbiter_pod_frozen(a, "default", "vm-a", true), 0);
	assert_int_equal(entry(a, "vm-a", 62 * SEC, &p), 0);
	assert_true(p.moving && p.frozen);
	/* The lease lapses: the mark with it, said by an event. */
	assert_int_equal(ag_arbiter_expire(a, 163 * SEC), 1);
	assert_int_equal(seen.changes, 2);
	assert_false(seen.moving);
	ag_arbiter_free(a);
}

/* The agent gone (its VM stopped or left): the entry goes, unless a lease
 * holds it; then only the lease's reservation stays, until its release. */
static void test_forget(void **state)
{
	struct ag_arbiter *a = make(16000, 64 * GiB, true);
	struct vmact_lease_pod p;
	uint32_t permit, cpu;
	uint64_t mem;
	unsigned n;

	assert_int_equal(grow(a, "alone", 2000, GiB, 0, &permit), 200);
	assert_int_equal(grow(a, "held", 3000, GiB, 0, &permit), 200);
	assert_int_equal(grow(a, "held", 20000, GiB, 0, &permit), 200); /* pressure */
	lease_moving(a, "held", true, SEC);
	ag_arbiter_forget(a, "default", "alone");
	ag_arbiter_forget(a, "default", "unknown");
	assert_int_equal(entry(a, "alone", SEC, &p), 404);
	ag_arbiter_forget(a, "default", "held");
	assert_int_equal(entry(a, "held", SEC, &p), 0);
	assert_false(p.agent);
	assert_true(p.leased && p.moving && p.frozen);
	assert_int_equal(p.size.milli_cpu, 14000);
	assert_int_equal(p.pressure.milli_cpu, 0);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 14000);
	assert_int_equal(lcall(a, "DELETE", "/v1/leases/default/held", "", 2 * SEC).status, 200);
	assert_int_equal(entry(a, "held", 2 * SEC, &p), 404);
	totals(a, &cpu, &mem, &n);
	assert_int_equal(cpu, 0);
	ag_arbiter_free(a);
}

static void test_codec(void **state)
{
	struct vmact_lease_request r;
	struct vmact_err err = { 0 };
	struct vmact_lease_ledger l = { .total = { 4000, 8 * GiB }, .pods = 2, .leases = 1 }, back;
	json_t *j;
	char sig[VMACT_LEASE_SIG_HEX + 1];

	assert_int_equal(
		vmact_lease_request_decode("{\"namespace\":\"default\",\"name\":\"a.b-c\","
					   "\"milli_cpu\":1500,\"memory_bytes\":1024,\"ttl_s\":60,"
					   "\"existing\":true}",
					   -1, &r, &err),
		0);
	assert_string_equal(r.name, "a.b-c");
	assert_int_equal(r.size.milli_cpu, 1500);
	assert_true(r.existing);
	assert_int_equal(
		vmact_lease_request_decode("{\"namespace\":\"default\",\"name\":\"a\","
					   "\"milli_cpu\":-1,\"memory_bytes\":1,\"ttl_s\":60}",
					   -1, &r, &err),
		-EINVAL);
	assert_non_null(strstr(err.msg, "milli_cpu"));
	j = vmact_lease_ledger_encode(&l);
	assert_int_equal(vmact_lease_ledger_decode(j, &back, &err), 0);
	assert_int_equal(back.total.mem_bytes, 8 * GiB);
	assert_int_equal(back.leases, 1);
	json_decref(j);
	vmact_err_reset(&err);
	vmact_lease_sign(key, KEYLEN, "GET", "/v1/leases", 5, "", 0, sig);
	assert_int_equal(strlen(sig), VMACT_LEASE_SIG_HEX);
	assert_int_equal(vmact_lease_verify(key, KEYLEN, "GET", "/v1/leases", "5", sig, "", 0, 5,
					    &err),
			 0);
	/* Another path, method or time: another signature. */
	assert_int_equal(vmact_lease_verify(key, KEYLEN, "GET", "/v1/leasez", "5", sig, "", 0, 5,
					    &err),
			 -EACCES);
	assert_int_equal(vmact_lease_verify(key, KEYLEN, "POST", "/v1/leases", "5", sig, "", 0, 5,
					    &err),
			 -EACCES);
	assert_int_equal(vmact_lease_verify(key, KEYLEN, "GET", "/v1/leases", "6", sig, "", 0, 5,
					    &err),
			 -EACCES);
	/* "moving": written only when true, optional, a boolean. */
	vmact_err_reset(&err);
	{
		struct vmact_lease_request m = { .ns = "default", .name = "a", .ttl_s = 5 };
		char *body = vmact_lease_request_encode(&m);

		assert_null(strstr(body, "moving"));
		free(body);
		m.moving = true;
		body = vmact_lease_request_encode(&m);
		assert_non_null(strstr(body, "\"moving\":true"));
		assert_int_equal(vmact_lease_request_decode(body, -1, &r, &err), 0);
		assert_true(r.moving);
		free(body);
	}
	assert_int_equal(
		vmact_lease_request_decode("{\"namespace\":\"default\",\"name\":\"a\","
					   "\"milli_cpu\":1,\"memory_bytes\":1,\"ttl_s\":60}",
					   -1, &r, &err),
		0);
	assert_false(r.moving);
	assert_int_equal(
		vmact_lease_request_decode("{\"namespace\":\"default\",\"name\":\"a\","
					   "\"milli_cpu\":1,\"memory_bytes\":1,\"ttl_s\":60,"
					   "\"moving\":1}",
					   -1, &r, &err),
		-EINVAL);
	assert_non_null(strstr(err.msg, "moving"));
	vmact_err_reset(&err);
	/* An entry both ways, and strict. */
	{
		struct vmact_lease_pod e = { .ns = "default",
					     .name = "vm-a",
					     .size = { 1500, 2 * GiB },
					     .pressure = { 500, 0 },
					     .agent = true,
					     .moving = true,
					     .frozen = true },
				       got;
		json_t *pj = vmact_lease_pod_encode(&e);

		assert_int_equal(vmact_lease_pod_decode(pj, &got, &err), 0);
		assert_string_equal(got.name, "vm-a");
		assert_int_equal(got.size.mem_bytes, 2 * GiB);
		assert_int_equal(got.pressure.milli_cpu, 500);
		assert_true(got.agent && got.moving && got.frozen);
		assert_false(got.leased);
		json_object_del(pj, "frozen");
		vmact_err_reset(&err);
		assert_int_equal(vmact_lease_pod_decode(pj, &got, &err), -EPROTO);
		assert_non_null(strstr(err.msg, "frozen: missing"));
		json_object_set_new(pj, "frozen", json_false());
		json_object_del(json_object_get(pj, "pressure"), "memory_bytes");
		vmact_err_reset(&err);
		assert_int_equal(vmact_lease_pod_decode(pj, &got, &err), -EPROTO);
		assert_non_null(strstr(err.msg, "pressure"));
		json_decref(pj);
	}
	assert_false(vmact_lease_name_valid(""));
	assert_false(vmact_lease_name_valid("a/b"));
	assert_true(vmact_lease_name_valid("vmact-g1-0a1b2c3d"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signatures),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_room_renew_expire_release),
		cmocka_unit_test(test_one_ledger),
		cmocka_unit_test(test_lease_becomes_pod),
		cmocka_unit_test(test_entry),
		cmocka_unit_test(test_moving_standalone),
		cmocka_unit_test(test_moving_owner),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_codec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
