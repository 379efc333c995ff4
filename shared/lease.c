/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/lease.h"

#include <errno.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "shared/json-desc.h"

static void digest(const uint8_t *key, size_t key_len, const char *method, const char *path,
		   long long ts, const char *body, size_t body_len, uint8_t out[SHA256_DIGEST_SIZE])
{
	struct hmac_sha256_ctx ctx;
	char head[64];
	int n;

	hmac_sha256_set_key(&ctx, key_len, key);
	hmac_sha256_update(&ctx, strlen(method), (const uint8_t *)method);
	hmac_sha256_update(&ctx, 1, (const uint8_t *)"\n");
	hmac_sha256_update(&ctx, strlen(path), (const uint8_t *)path);
	n = snprintf(head, sizeof(head), "\n%lld\n", ts);
	hmac_sha256_update(&ctx, (size_t)n, (const uint8_t *)head);
	if (body_len)
		hmac_sha256_update(&ctx, body_len, (const uint8_t *)body);
	hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

void vmact_lease_sign(const uint8_t *key, size_t key_len, const char *method, const char *path,
		      long long ts, const char *body, size_t body_len, char *out)
{
	uint8_t d[SHA256_DIGEST_SIZE];

	digest(key, key_len, method, path, ts, body, body_len, d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vmact_lease_verify(const uint8_t *key, size_t key_len, const char *method, const char *path,
		       const char *ts, const char *sig, const char *body, size_t body_len,
		       long long now, struct vmact_err *err)
{
	uint8_t want[SHA256_DIGEST_SIZE], got[SHA256_DIGEST_SIZE];
	long long t;
	char *end;

	if (!ts || !sig)
		return vmact_err_set(err, EACCES, "unsigned request (ts and sig required)");
	errno = 0;
	t = strtoll(ts, &end, 10);
	if (errno || end == ts || *end)
		return vmact_err_set(err, EACCES, "ts is not a time");
	if (t > now + VMACT_LEASE_WINDOW_S || t < now - VMACT_LEASE_WINDOW_S)
		return vmact_err_set(err, EACCES,
				     "ts %lld is more than %d s from the arbiter's clock", t,
				     VMACT_LEASE_WINDOW_S);
	if (strlen(sig) != VMACT_LEASE_SIG_HEX)
		return vmact_err_set(err, EACCES, "bad signature");
	for (size_t i = 0; i < sizeof(got); i++) {
		int hi = unhex(sig[2 * i]), lo = unhex(sig[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return vmact_err_set(err, EACCES, "bad signature");
		got[i] = (uint8_t)(hi << 4 | lo);
	}
	digest(key, key_len, method, path, t, body, body_len, want);
	if (!memeql_sec(want, got, sizeof(want)))
		return vmact_err_set(err, EACCES, "bad signature");
	return 0;
}

bool vmact_lease_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > VMACT_LEASE_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == '.'))
			return false;
	return true;
}

char *vmact_lease_request_encode(const struct vmact_lease_request *r)
{
	json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:b}", "namespace", r->ns, "name", r->name,
			      "milli_cpu", (json_int_t)r->size.milli_cpu, "memory_bytes",
			      (json_int_t)r->size.mem_bytes, "ttl_s", (json_int_t)r->ttl_s,
			      "existing", r->existing);
	char *s;

	/* Only when set: an arbiter that predates the mark refuses an
	 * unknown field, and a lease that does not move must still pass. */
	if (j && r->moving && json_object_set_new(j, "moving", json_true()) < 0) {
		json_decref(j);
		return NULL;
	}
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return s;
}

static int get_int(const json_t *o, const char *key, long long max, long long *out,
		   struct vmact_err *err)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return vmact_err_set(err, EINVAL, "%s: an integer from 0 to %lld", key, max);
	*out = json_integer_value(v);
	return 0;
}

int vmact_lease_request_decode(const char *body, size_t len, struct vmact_lease_request *r,
			       struct vmact_err *err)
{
	json_t *j = len == (size_t)-1 ? json_loads(body, JSON_REJECT_DUPLICATES, NULL)
				      : json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	const char *ns, *name, *key;
	json_t *v;
	long long cpu, mem, ttl;
	int rc = -EINVAL;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(j)) {
		json_decref(j);
		return vmact_err_set(err, EINVAL, "body: not a JSON object");
	}
	json_object_foreach(j, key, v) {
		if (strcmp(key, "namespace") && strcmp(key, "name") && strcmp(key, "milli_cpu") &&
		    strcmp(key, "memory_bytes") && strcmp(key, "ttl_s") &&
		    strcmp(key, "existing") && strcmp(key, "moving")) {
			vmact_err_set(err, EINVAL, "%s: unknown field", key);
			goto out;
		}
	}
	ns = json_string_value(json_object_get(j, "namespace"));
	name = json_string_value(json_object_get(j, "name"));
	if (!ns || !vmact_lease_name_valid(ns)) {
		vmact_err_set(err, EINVAL, "namespace: a name of 1 to %d of [a-z0-9.-]",
			      VMACT_LEASE_NAME_MAX);
		goto out;
	}
	if (!name || !vmact_lease_name_valid(name)) {
		vmact_err_set(err, EINVAL, "name: a name of 1 to %d of [a-z0-9.-]",
			      VMACT_LEASE_NAME_MAX);
		goto out;
	}
	if (get_int(j, "milli_cpu", UINT32_MAX, &cpu, err) < 0 ||
	    get_int(j, "memory_bytes", (long long)1 << 50, &mem, err) < 0 ||
	    get_int(j, "ttl_s", VMACT_LEASE_TTL_MAX_S, &ttl, err) < 0)
		goto out;
	if (!ttl) {
		vmact_err_set(err, EINVAL, "ttl_s: must be positive");
		goto out;
	}
	v = json_object_get(j, "existing");
	if (v && !json_is_boolean(v)) {
		vmact_err_set(err, EINVAL, "existing: must be true or false");
		goto out;
	}
	if (json_object_get(j, "moving") && !json_is_boolean(json_object_get(j, "moving"))) {
		vmact_err_set(err, EINVAL, "moving: must be true or false");
		goto out;
	}
	r->moving = json_is_true(json_object_get(j, "moving"));
	snprintf(r->ns, sizeof(r->ns), "%s", ns);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->size.milli_cpu = (uint32_t)cpu;
	r->size.mem_bytes = (uint64_t)mem;
	r->ttl_s = (uint32_t)ttl;
	r->existing = json_is_true(v);
	rc = 0;
out:
	json_decref(j);
	return rc;
}

/* ---- the ledger, described once (shared/json-desc.h) ---- */

static const struct vmact_json_desc_field res_fields[] = {
	{ .key = "milli_cpu",
	  .kind = VMACT_JSON_DESC_U32,
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .off = offsetof(struct vmact_resources, milli_cpu),
	  .hi = UINT32_MAX },
	{ .key = "memory_bytes",
	  .kind = VMACT_JSON_DESC_U64,
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .off = offsetof(struct vmact_resources, mem_bytes),
	  .hi = INT64_MAX },
};
static const struct vmact_json_desc res_desc = VMACT_JSON_DESC(struct vmact_resources, res_fields);

#define RES(m)                                                                                \
	{                                                                                     \
		.key = #m, .kind = VMACT_JSON_DESC_OBJECT, .flags = VMACT_JSON_DESC_REQUIRED, \
		.off = offsetof(struct vmact_lease_ledger, m), .desc = &res_desc              \
	}
#define COUNT(m)                                                                           \
	{                                                                                  \
		.key = #m, .kind = VMACT_JSON_DESC_U32, .flags = VMACT_JSON_DESC_REQUIRED, \
		.off = offsetof(struct vmact_lease_ledger, m), .hi = UINT32_MAX            \
	}
_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "a ledger's count is a U32");
static const struct vmact_json_desc_field ledger_fields[] = {
	RES(total), RES(watermark), RES(reserved), RES(pressure), COUNT(pods), COUNT(leases),
};
static const struct vmact_json_desc ledger_desc = VMACT_JSON_DESC(struct vmact_lease_ledger,
								  ledger_fields);

json_t *vmact_lease_ledger_encode(const struct vmact_lease_ledger *l)
{
	return vmact_json_desc_encode(&ledger_desc, l);
}

int vmact_lease_ledger_decode(const json_t *j, struct vmact_lease_ledger *l, struct vmact_err *err)
{
	return vmact_json_desc_decode(&ledger_desc, j, l, err);
}

/* ---- one entry of the ledger ---- */

/* The wire's shape of struct vmact_lease_pod, flat as a lease's answer
 * is: the walker's texts point into the document, the struct keeps
 * copies of its own. */
struct pod_wire {
	const char *ns, *name;
	uint32_t milli_cpu;
	uint64_t memory_bytes;
	struct vmact_resources pressure;
	bool agent, leased, moving, frozen;
};

#define POD_TEXT(k, m)                                                                \
	{                                                                             \
		.key = k, .kind = VMACT_JSON_DESC_TEXT,                               \
		.flags = VMACT_JSON_DESC_REQUIRED | VMACT_JSON_DESC_NONEMPTY,         \
		.off = offsetof(struct pod_wire, m), .text_max = VMACT_LEASE_NAME_MAX \
	}
#define POD_BOOL(m)                                                                         \
	{                                                                                   \
		.key = #m, .kind = VMACT_JSON_DESC_BOOL, .flags = VMACT_JSON_DESC_REQUIRED, \
		.off = offsetof(struct pod_wire, m)                                         \
	}
static const struct vmact_json_desc_field pod_fields[] = {
	POD_TEXT("namespace", ns),
	POD_TEXT("name", name),
	{ .key = "milli_cpu",
	  .kind = VMACT_JSON_DESC_U32,
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .off = offsetof(struct pod_wire, milli_cpu),
	  .hi = UINT32_MAX },
	{ .key = "memory_bytes",
	  .kind = VMACT_JSON_DESC_U64,
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .off = offsetof(struct pod_wire, memory_bytes),
	  .hi = INT64_MAX },
	{ .key = "pressure",
	  .kind = VMACT_JSON_DESC_OBJECT,
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .off = offsetof(struct pod_wire, pressure),
	  .desc = &res_desc },
	POD_BOOL(agent),
	POD_BOOL(leased),
	POD_BOOL(moving),
	POD_BOOL(frozen),
};
static const struct vmact_json_desc pod_desc = VMACT_JSON_DESC(struct pod_wire, pod_fields);

json_t *vmact_lease_pod_encode(const struct vmact_lease_pod *p)
{
	const struct pod_wire w = {
		.ns = p->ns,
		.name = p->name,
		.milli_cpu = p->size.milli_cpu,
		.memory_bytes = p->size.mem_bytes,
		.pressure = p->pressure,
		.agent = p->agent,
		.leased = p->leased,
		.moving = p->moving,
		.frozen = p->frozen,
	};

	return vmact_json_desc_encode(&pod_desc, &w);
}

int vmact_lease_pod_decode(const json_t *j, struct vmact_lease_pod *p, struct vmact_err *err)
{
	struct pod_wire w;
	int r;

	memset(p, 0, sizeof(*p));
	r = vmact_json_desc_decode(&pod_desc, j, &w, err);
	if (r < 0)
		return r;
	if (!vmact_lease_name_valid(w.ns))
		return vmact_err_set(err, EPROTO, "namespace: not a name of [a-z0-9.-]");
	if (!vmact_lease_name_valid(w.name))
		return vmact_err_set(err, EPROTO, "name: not a name of [a-z0-9.-]");
	snprintf(p->ns, sizeof(p->ns), "%s", w.ns);
	snprintf(p->name, sizeof(p->name), "%s", w.name);
	p->size.milli_cpu = w.milli_cpu;
	p->size.mem_bytes = w.memory_bytes;
	p->pressure = w.pressure;
	p->agent = w.agent;
	p->leased = w.leased;
	p->moving = w.moving;
	p->frozen = w.frozen;
	return 0;
}
