/* SPDX-License-Identifier: Apache-2.0 */
/* make torture-cluster (doc/cluster.md, "Tests and benchmark"): the
 * cluster layer under kill -9 at random points. One host (qemu:///system
 * with a storage pool, a standalone vmact-arbiter with room for a handful
 * of the test guests), vmact-groupd and vmact-cloudprovider as the
 * cluster user (tests/lib/cpenv.h), two groups: "web" (at most 3 members,
 * a running-tier standby VM) and "gated" (at most 1, held by
 * ManualApproval).
 *
 * Each round runs one operation — an increase through the provider's
 * gRPC, an increase and decrease-target, a delete of a node in service,
 * a pool refill (the standby VM taken), a Permit wait allowed, one
 * rejected, an arbiter restart — and SIGKILLs one of vmact-groupd,
 * vmact-cloudprovider, the arbiter, libvirtd or the QEMU of a node VM not
 * in service a random time after the operation began. The dead process is
 * started again; once everything is settled the invariants are checked and
 * every breach counted:
 *
 *   - every domain with the cluster metadata is a member or a standby VM
 *     of a configured group, and vmact-groupd knows it once, as that;
 *   - no overlay without its domain, no UUID or name twice, no standby
 *     VM whose guest was told a claim;
 *   - the arbiter's ledger holds one lease per running or paused VM of
 *     ours, at the group's size, and (sampled all along) never more than
 *     its watermark;
 *   - each group's target equals its member domains;
 *   - every node in service before the round is still one, unless its
 *     delete was asked.
 *
 * It prints a line per round and a summary like make torture's: rounds by
 * operation, kills by point, violations (the goal is 0), recovery time
 * (kill -> settled, invariants checked) p50 and max.
 * VMACT_CLUSTER_TORTURE_ROUNDS (default 4: make check's short run) and
 * VMACT_CLUSTER_TORTURE_SEED (replays a run's choices and delays),
 * VMACT_CLUSTER_TORTURE_MAX_S (no new round after that long). Root,
 * under the shared lock (it kills libvirtd). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "base/time.h"
#include "cluster/host/host.h"
#include "tests/lib/cloudprov.h"
#include "tests/lib/cluster.h"
#include "tests/lib/cpenv.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define NS_CLUSTER  "https://vmact.dev/xmlns/cluster/1"
#define SETTLE_S    240.0
#define KILL_MAX_MS 4000
#define SIZE_MCPU   250
#define SIZE_MEM    (256ULL * 1024 * 1024)
#define LEASE_S     15

static const char groups[] =
	"{\"id\": \"web\", \"min\": 0, \"max\": 3, \"hosts\": [\"h1\"], \"template\": @TEMPLATE@,"
	" \"claim\": {\"ack\": \"VMACT claimed\"}, \"pool\": {\"running\": 1}},"
	"{\"id\": \"gated\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"], \"template\": @TEMPLATE@,"
	" \"claim\": {\"ack\": \"VMACT claimed\"}}";

/* Short timeouts, so that a VM whose QEMU died is noticed within a round;
 * leases of 15 s, renewed every 5 s. */
static const char top_extra[] =
	"\"lifecycle\": {\"boot_timeout_s\": 60, \"healthy_timeout_s\": 15,"
	" \"health_interval_s\": 2, \"lease_s\": 15, \"retry_backoff_s\": 5,"
	" \"refill_interval_s\": 2},"
	" \"scheduler\": {\"profiles\": [{\"schedulerName\": \"default\", \"plugins\":"
	" {\"permit\": {\"enabled\": [{\"name\": \"ManualApproval\"}]}}, \"pluginConfig\":"
	" [{\"name\": \"ManualApproval\", \"args\": {\"groups\": [\"gated\"],"
	" \"timeoutSeconds\": 120}}]}]}";

enum op {
	OP_INCREASE_GRPC,
	OP_INCREASE_DECREASE,
	OP_DELETE,
	OP_REFILL,
	OP_PERMIT_ALLOW,
	OP_PERMIT_REJECT,
	OP_ARBITER_RESTART,
	N_OPS
};
static const char *const op_names[N_OPS] = { "increase",       "decrease", "delete",
					     "pool-refill",    "allow",    "reject",
					     "arbiter-restart" };

enum point { K_GROUPD, K_PROVIDER, K_ARBITER, K_LIBVIRTD, K_QEMU, N_POINTS };
static const char *const point_names[N_POINTS] = { "vmact-groupd", "vmact-cloudprovider",
						   "vmact-arbiter", "libvirtd", "qemu" };

static struct th_cpenv E;
static struct cl_host *host;

static struct {
	uint64_t rng;
	unsigned violations;
	/* names of nodes whose delete was asked (this run) */
	json_t *asked;
	char last_violation[512];
} T;

/* ---- small helpers ---- */

static uint64_t rnd(void)
{
	/* xorshift64*: the seed replays a run */
	T.rng ^= T.rng >> 12;
	T.rng ^= T.rng << 25;
	T.rng ^= T.rng >> 27;
	return T.rng * 2685821657736338717ULL;
}

static unsigned rnd_below(unsigned n)
{
	return n ? (unsigned)(rnd() % n) : 0;
}

static void violation(unsigned round, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void violation(unsigned round, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(T.last_violation, sizeof(T.last_violation), fmt, ap);
	va_end(ap);
	T.violations++;
	printf("round %u: VIOLATION %s\n", round, T.last_violation);
	fflush(stdout);
}

static json_t *api(const char *method, const char *path, const char *body, long *status)
{
	return th_cluster_api(E.api, method, path, body, status);
}

static json_t *api_field(const char *path, const char *field)
{
	json_t *j = api("GET", path, NULL, NULL), *v = json_incref(json_object_get(j, field));

	json_decref(j);
	return v;
}

static json_t *all_vms(bool *ready)
{
	json_t *j = api("GET", "/v1/vms", NULL, NULL), *v = json_incref(json_object_get(j, "vms"));

	if (ready)
		*ready = json_is_true(json_object_get(j, "ready"));
	json_decref(j);
	return v;
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static int group_target(const char *group)
{
	char path[128];
	json_t *g;
	int t;

	snprintf(path, sizeof(path), "/v1/groups/%s", group);
	g = api("GET", path, NULL, NULL);
	t = json_is_integer(json_object_get(g, "target"))
		    ? (int)json_integer_value(json_object_get(g, "target"))
		    : -1;
	json_decref(g);
	return t;
}

/* provider IDs of the group's members in service (array, owned) */
static json_t *in_service(const char *group)
{
	char path[128];
	json_t *n, *it, *out = json_array();
	size_t i;

	snprintf(path, sizeof(path), "/v1/groups/%s/nodes", group);
	n = api_field(path, "nodes");
	json_array_foreach(n, i, it)
		if (!strcmp(str(it, "vm_state"), "claimed"))
			json_array_append(out, json_object_get(it, "provider_id"));
	json_decref(n);
	return out;
}

static void post(const char *path, const char *body)
{
	json_decref(api("POST", path, body, NULL));
}

/* ---- libvirt as root sees it ---- */

struct dom {
	char name[96], uuid[VIR_UUID_STRING_BUFLEN], group[48], role[16], state[16];
	bool active, meta;
};

/* Our domains (cpi-*) with their metadata; n, or -1. */
static int our_domains_once(struct dom **out)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(E.vc, &doms, 0), k = 0;

	*out = calloc(n > 0 ? (size_t)n : 1, sizeof(**out));
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);
		struct dom *d = &(*out)[k];
		char *meta;

		if (!*out || strncmp(name, E.prefix, strlen(E.prefix))) {
			virDomainFree(doms[i]);
			continue;
		}
		snprintf(d->name, sizeof(d->name), "%s", name);
		virDomainGetUUIDString(doms[i], d->uuid);
		d->active = virDomainIsActive(doms[i]) == 1;
		meta = virDomainGetMetadata(doms[i], VIR_DOMAIN_METADATA_ELEMENT, NS_CLUSTER,
					    VIR_DOMAIN_AFFECT_CONFIG);
		if (meta) {
			static const char *const keys[] = { "group", "role", "state" };
			char *fields[] = { d->group, d->role, d->state };
			size_t lens[] = { sizeof(d->group), sizeof(d->role), sizeof(d->state) };

			d->meta = true;
			for (int f = 0; f < 3; f++) {
				char needle[32], *p, *q;

				snprintf(needle, sizeof(needle), " %s=\"", keys[f]);
				if ((p = strstr(meta, needle)) &&
				    (q = strchr(p + strlen(needle), '"')))
					snprintf(fields[f], lens[f], "%.*s",
						 (int)(q - p - strlen(needle)), p + strlen(needle));
			}
			free(meta);
		}
		k++;
		virDomainFree(doms[i]);
	}
	free(doms);
	return n < 0 ? -1 : k;
}

static bool has_volume_domain(const struct dom *d, int n, const char *vol)
{
	for (int i = 0; i < n; i++) {
		char want[128];

		snprintf(want, sizeof(want), "%s.qcow2", d[i].name);
		if (!strcmp(want, vol))
			return true;
	}
	return false;
}

static void reconnect(bool dead);

/* Our domains, from a libvirtd that answers: a connection to a libvirtd
 * killed since reads as alive until a call fails on it (the test runs no
 * libvirt event loop), and a failed listing is no listing, never "none". */
static int our_domains(struct dom **out)
{
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;
	int n;

	for (;;) {
		reconnect(false);
		if ((n = our_domains_once(out)) >= 0 || vmact_now_usec() > end)
			return n;
		free(*out);
		*out = NULL;
		reconnect(true);
	}
}

/* Our overlays (cpi-*.qcow2) as a JSON array of names, owned; NULL when
 * libvirtd does not answer. */
static json_t *our_volumes_once(void)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(E.vc, E.pool);
	virStorageVolPtr *vols = NULL;
	json_t *out;
	int n;

	if (!p)
		return NULL;
	if (virStoragePoolRefresh(p, 0) < 0 ||
	    (n = virStoragePoolListAllVolumes(p, &vols, 0)) < 0) {
		virStoragePoolFree(p);
		return NULL;
	}
	out = json_array();
	for (int i = 0; i < n; i++) {
		const char *name = virStorageVolGetName(vols[i]);

		if (!strncmp(name, E.prefix, strlen(E.prefix)))
			json_array_append_new(out, json_string(name));
		virStorageVolFree(vols[i]);
	}
	free(vols);
	virStoragePoolFree(p);
	return out;
}

static json_t *our_volumes(void)
{
	uint64_t end = vmact_now_usec() + TH_SAFETY_USEC;
	json_t *out;

	for (;;) {
		reconnect(false);
		if ((out = our_volumes_once()) || vmact_now_usec() > end)
			return out ? out : json_array();
		reconnect(true);
	}
}

/* The connection again after libvirtd was killed (dead: a call on it
 * failed, whatever virConnectIsAlive says). */
static void reconnect(bool dead)
{
	if (E.vc && !dead && virConnectIsAlive(E.vc) == 1)
		return;
	if (E.vc)
		virConnectClose(E.vc);
	E.vc = NULL;
	TH_WAIT(NULL, (E.vc = virConnectOpen("qemu:///system")) != NULL, TH_SAFETY_USEC);
}

/* ---- the ledger, sampled all along ---- */

static struct {
	pthread_t t;
	volatile bool stop;
	pthread_mutex_t lock;
	unsigned samples, over;
	char over_what[160];
} S = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *sampler(void *arg)
{
	(void)arg;
	while (!S.stop) {
		struct vmact_lease_ledger l;
		struct vmact_err err = { 0 };

		if (cl_host_ledger(host, &l, &err) == 0) {
			pthread_mutex_lock(&S.lock);
			S.samples++;
			if (l.reserved.milli_cpu > l.watermark.milli_cpu ||
			    l.reserved.mem_bytes > l.watermark.mem_bytes) {
				S.over++;
				snprintf(S.over_what, sizeof(S.over_what),
					 "%" PRIu32 "m / %" PRIu64
					 " B reserved over a watermark of "
					 "%" PRIu32 "m / %" PRIu64 " B",
					 l.reserved.milli_cpu, l.reserved.mem_bytes,
					 l.watermark.milli_cpu, l.watermark.mem_bytes);
			}
			pthread_mutex_unlock(&S.lock);
		}
		usleep(100 * 1000);
	}
	return NULL;
}

/* ---- settled ---- */

struct settle {
	char why[256];
	enum op op; /* the round's: a VM found waiting is allowed for OP_PERMIT_ALLOW */
};

static void delete_ids(const char *group, json_t *ids);

/* What the operator does with a VM that waits for ManualApproval (one the
 * round's Permit wait left, or one placed again after a restart): allowed
 * when the round allows, else rejected and its member deleted, as the
 * autoscaler deletes a failed instance. */
static void tend_waiting(json_t *w, enum op op)
{
	json_t *it;
	size_t i;

	json_array_foreach(w, i, it) {
		char path[160], id[160];
		json_t *ids;

		snprintf(path, sizeof(path), "/v1/waiting/%s/%s", str(it, "uid"),
			 op == OP_PERMIT_ALLOW ? "allow" : "reject");
		post(path, op == OP_PERMIT_ALLOW ? NULL : "{\"message\":\"torture\"}");
		if (op == OP_PERMIT_ALLOW)
			continue;
		snprintf(id, sizeof(id), "libvirt://%s/%s", str(it, "host"), str(it, "uid"));
		ids = json_pack("[s]", id);
		delete_ids(str(it, "group"), ids);
		json_decref(ids);
	}
}

/* Why the cluster is not settled yet ("" when it is). */
static void unsettled(char *why, size_t len, enum op op)
{
	bool ready = false;
	json_t *vms = all_vms(&ready), *w, *it;
	size_t i;
	struct dom *d = NULL;
	int n, active = 0;
	struct vmact_lease_ledger l;
	struct vmact_err err = { 0 };

	why[0] = 0;
	if (!vms || !ready) {
		snprintf(why, len, "vmact-groupd not ready");
		goto out;
	}
	w = api_field("/v1/waiting", "waiting");
	if (json_array_size(w)) {
		tend_waiting(w, op);
		json_decref(w);
		snprintf(why, len, "a VM waits for Permit");
		goto out;
	}
	json_decref(w);
	json_array_foreach(vms, i, it) {
		const char *st = str(it, "state"), *role = str(it, "role");
		bool member = !strcmp(role, "member");

		if (json_is_true(json_object_get(it, "busy")) ||
		    !(member ? !strcmp(st, "claimed") ||
				       (!strcmp(st, "pending") && json_object_get(it, "error"))
			     : !strcmp(st, "ready"))) {
			snprintf(why, len, "%s is %s%s", str(it, "name"), st,
				 json_is_true(json_object_get(it, "busy")) ? " (busy)" : "");
			goto out;
		}
	}
	/* web's running tier full (unless a member waits for room) */
	{
		json_t *g = api("GET", "/v1/groups/web", NULL, NULL);
		json_t *t = json_object_get(json_object_get(g, "pool"), "running");
		bool full = json_integer_value(json_object_get(t, "ready")) ==
			    json_integer_value(json_object_get(t, "size"));
		bool errs = false;

		json_array_foreach(vms, i, it)
			errs |= json_object_get(it, "error") != NULL;
		json_decref(g);
		if (!full && !errs) {
			snprintf(why, len, "web's running tier not refilled");
			goto out;
		}
	}
	/* the ledger caught up with the VMs (renewals every lease_s / 3) */
	n = our_domains(&d);
	for (int k = 0; k < n; k++)
		active += d[k].active;
	free(d);
	if (n < 0) {
		snprintf(why, len, "libvirtd does not list the domains");
		goto out;
	}
	if (cl_host_ledger(host, &l, &err) < 0) {
		snprintf(why, len, "the arbiter: %.200s", err.msg);
		goto out;
	}
	if ((int)l.leases != active)
		snprintf(why, len, "%u lease(s) for %d running VM(s)", l.leases, active);
out:
	json_decref(vms);
}

static bool is_settled(void *arg)
{
	struct settle *s = arg;

	unsettled(s->why, sizeof(s->why), s->op);
	return !s->why[0];
}

/* ---- the invariants ---- */

static void check(unsigned round, json_t *service_before)
{
	struct dom *d = NULL;
	int n = our_domains(&d);
	json_t *vms = all_vms(NULL), *vols = our_volumes(), *it;
	size_t i;
	struct vmact_lease_ledger l;
	struct vmact_err err = { 0 };
	unsigned active = 0;

	if (n < 0)
		violation(round, "libvirtd does not list the domains");
	/* every domain with our metadata: a member or standby VM of a
	 * configured group, known to vmact-groupd once, as that */
	for (int k = 0; k < n; k++) {
		unsigned seen = 0;

		active += d[k].active;
		if (!d[k].meta) {
			violation(round, "domain %s has no cluster metadata", d[k].name);
			continue;
		}
		if ((strcmp(d[k].role, "member") && strcmp(d[k].role, "pool")) ||
		    (strcmp(d[k].group, "web") && strcmp(d[k].group, "gated")))
			violation(round, "domain %s: role '%s' of group '%s'", d[k].name, d[k].role,
				  d[k].group);
		json_array_foreach(vms, i, it) {
			if (strcmp(str(it, "name"), d[k].name))
				continue;
			seen++;
			if (strcmp(str(it, "role"), d[k].role) ||
			    strcmp(str(it, "group"), d[k].group))
				violation(round,
					  "domain %s is a %s of %s, vmact-groupd says %s of %s",
					  d[k].name, d[k].role, d[k].group, str(it, "role"),
					  str(it, "group"));
		}
		if (seen != 1)
			violation(round, "domain %s is known %u times", d[k].name, seen);
		for (int m = 0; m < k; m++)
			if (!strcmp(d[m].uuid, d[k].uuid) || !strcmp(d[m].name, d[k].name))
				violation(round, "domains %s and %s share a UUID or name",
					  d[m].name, d[k].name);
		/* a standby VM told a claim was reused: claimed twice */
		if (!strcmp(d[k].role, "pool")) {
			char log[PATH_MAX];

			snprintf(log, sizeof(log), "%s/logs/%s.log", E.dir, d[k].name);
			if (th_count_in_file(log, "VMACT claimed") > 0)
				violation(round, "standby VM %s was told a claim", d[k].name);
		}
	}
	json_array_foreach(vms, i, it) {
		bool found = false;

		for (int k = 0; k < n; k++)
			found |= !strcmp(str(it, "name"), d[k].name);
		if (!found)
			violation(round, "vmact-groupd's %s has no domain", str(it, "name"));
	}
	/* no volume without its VM */
	json_array_foreach(vols, i, it)
		if (!has_volume_domain(d, n, json_string_value(it)))
			violation(round, "overlay %s has no domain", json_string_value(it));
	/* the ledger: one lease per running VM, at its size */
	if (cl_host_ledger(host, &l, &err) < 0) {
		violation(round, "the arbiter does not answer: %s", err.msg);
	} else {
		if (l.leases != active)
			violation(round, "%u lease(s) for %u running VM(s)", l.leases, active);
		if (l.reserved.milli_cpu != l.leases * SIZE_MCPU ||
		    l.reserved.mem_bytes != l.leases * SIZE_MEM)
			violation(round, "%u lease(s) reserve %" PRIu32 "m / %" PRIu64 " B",
				  l.leases, l.reserved.milli_cpu, l.reserved.mem_bytes);
		if (l.reserved.milli_cpu > l.watermark.milli_cpu ||
		    l.reserved.mem_bytes > l.watermark.mem_bytes)
			violation(round, "the ledger is over its watermark");
	}
	/* each group's target: its member domains */
	for (int g = 0; g < 2; g++) {
		const char *id = g ? "gated" : "web";
		int members = 0, target = group_target(id);

		for (int k = 0; k < n; k++)
			members += !strcmp(d[k].group, id) && !strcmp(d[k].role, "member") &&
				   strcmp(d[k].state, "deleting");
		if (target != members)
			violation(round, "group %s: target %d, %d member domain(s)", id, target,
				  members);
	}
	/* nothing in service deleted unless asked */
	json_array_foreach(service_before, i, it) {
		const char *id = json_string_value(it), *uuid = strrchr(id, '/');
		bool there = false, asked = false;
		json_t *a;
		size_t k;

		for (int m = 0; uuid && m < n; m++)
			there |= !strcmp(d[m].uuid, uuid + 1) && !strcmp(d[m].role, "member");
		json_array_foreach(T.asked, k, a)
			asked |= json_equal(a, it);
		if (!there && !asked)
			violation(round, "%s was in service and is gone unasked", id);
	}
	pthread_mutex_lock(&S.lock);
	if (S.over) {
		violation(round, "ledger over its watermark in %u sample(s): %s", S.over,
			  S.over_what);
		S.over = 0;
	}
	pthread_mutex_unlock(&S.lock);
	free(d);
	json_decref(vms);
	json_decref(vols);
}

/* ---- the operations (run in a thread: the kill may land inside) ---- */

struct op_run {
	pthread_t t;
	enum op op;
	unsigned pick;
	volatile bool done;
	uint64_t end_usec;
};

static bool one_waits(void *arg)
{
	json_t *w = api_field("/v1/waiting", "waiting");
	bool ok = json_array_size(w) > 0;

	(void)arg;
	if (ok)
		snprintf(arg, 64, "%s", str(json_array_get(w, 0), "uid"));
	json_decref(w);
	return ok;
}

static void delete_ids(const char *group, json_t *ids)
{
	char path[128], *body;
	json_t *doc;
	size_t i;
	json_t *it;

	/* asked before it is sent: a kill may cut the answer, not the ask */
	json_array_foreach(ids, i, it)
		json_array_append(T.asked, it);
	doc = json_pack("{s:O}", "provider_ids", ids);
	body = json_dumps(doc, 0);
	snprintf(path, sizeof(path), "/v1/groups/%s/delete-nodes", group);
	post(path, body);
	free(body);
	json_decref(doc);
}

static void *op_thread(void *arg)
{
	struct op_run *r = arg;

	switch (r->op) {
	case OP_INCREASE_GRPC: {
		const char *args[] = { "--group", "web", "--delta", "1", NULL };
		char log[PATH_MAX];

		snprintf(log, sizeof(log), "%s/client-increase.log", E.dir);
		/* any outcome: the provider may be killed under it */
		th_cp_client(E.cp.port, "increase", args, log);
		break;
	}
	case OP_INCREASE_DECREASE:
		post("/v1/groups/web/increase", "{\"delta\":1}");
		post("/v1/groups/web/decrease-target", "{\"delta\":-1}");
		break;
	case OP_DELETE: {
		json_t *s = in_service("web"), *ids = json_array();

		if (json_array_size(s))
			json_array_append(ids, json_array_get(s, r->pick % json_array_size(s)));
		delete_ids("web", ids);
		json_decref(ids);
		json_decref(s);
		break;
	}
	case OP_REFILL:
		/* the standby VM taken: a claim, and the refill's boot */
		post("/v1/groups/web/increase", "{\"delta\":1}");
		break;
	case OP_PERMIT_ALLOW:
	case OP_PERMIT_REJECT: {
		char uid[64] = "", path[160];

		post("/v1/groups/gated/increase", "{\"delta\":1}");
		if (!TH_WAIT(NULL, one_waits(uid), 30 * VMACT_USEC_PER_SEC))
			break;
		snprintf(path, sizeof(path), "/v1/waiting/%s/%s", uid,
			 r->op == OP_PERMIT_ALLOW ? "allow" : "reject");
		post(path, r->op == OP_PERMIT_ALLOW ? NULL : "{\"message\":\"torture\"}");
		if (r->op == OP_PERMIT_REJECT) {
			/* the rejected member given up, as the autoscaler would */
			char id[160];
			json_t *ids;

			snprintf(id, sizeof(id), "libvirt://h1/%s", uid);
			ids = json_pack("[s]", id);
			delete_ids("gated", ids);
			json_decref(ids);
		}
		break;
	}
	case OP_ARBITER_RESTART:
		/* stopped here, started again by the main thread once this one
		 * is joined: a child's parent-death signal follows the thread
		 * that spawned it (tests/lib/proc.c) */
		th_proc_stop(&E.arbiter, SIGTERM, 10 * VMACT_USEC_PER_SEC);
		break;
	default:
		break;
	}
	r->end_usec = vmact_now_usec();
	r->done = true;
	return NULL;
}

/* ---- the kills ---- */

static pid_t pid_file(const char *path)
{
	char *text = th_read_file(path);
	pid_t p = text ? (pid_t)atoi(text) : 0;

	free(text);
	return p;
}

/* The QEMU of a VM of ours not in service (booting, being claimed, a
 * standby VM): 0 when there is none. */
static pid_t qemu_victim(unsigned pick, char *name, size_t len)
{
	json_t *vms = all_vms(NULL), *it, *cand = json_array();
	size_t i;
	pid_t p = 0;

	json_array_foreach(vms, i, it)
		if (strcmp(str(it, "state"), "claimed") && strcmp(str(it, "state"), "pending") &&
		    strcmp(str(it, "state"), "deleting"))
			json_array_append(cand, it);
	if (json_array_size(cand)) {
		json_t *v = json_array_get(cand, pick % json_array_size(cand));
		char path[PATH_MAX];

		snprintf(name, len, "%s", str(v, "name"));
		snprintf(path, sizeof(path), "/run/libvirt/qemu/%s.pid", name);
		p = pid_file(path);
	}
	json_decref(cand);
	json_decref(vms);
	return p;
}

/* The domain whose QEMU the round killed. */
static char qemu_victim_name[96];

/* Kills point's process; what was killed, in what. 0, or -ESRCH when
 * there was nothing to kill at that point. */
static int kill_point(enum point k, unsigned pick, char *what, size_t len)
{
	pid_t p = 0;

	switch (k) {
	case K_GROUPD:
		p = E.groupd.pid;
		break;
	case K_PROVIDER:
		p = E.cp.proc.pid;
		break;
	case K_ARBITER:
		p = E.arbiter.pid;
		break;
	case K_LIBVIRTD:
		p = pid_file("/run/libvirtd.pid");
		break;
	case K_QEMU: {
		char name[96] = "";

		p = qemu_victim(pick, name, sizeof(name));
		snprintf(what, len, "qemu of %s", name);
		snprintf(qemu_victim_name, sizeof(qemu_victim_name), "%s", name);
		break;
	}
	default:
		break;
	}
	if (k != K_QEMU)
		snprintf(what, len, "%s", point_names[k]);
	if (p <= 0 || kill(p, SIGKILL) < 0)
		return -ESRCH;
	return 0;
}

/* libvirt has seen the killed QEMU go: its domain no longer active (or
 * gone). Until then a settle would count a dead VM as running. */
static bool victim_down(void *arg)
{
	virDomainPtr d;
	bool down;

	(void)arg;
	reconnect(false);
	d = virDomainLookupByName(E.vc, qemu_victim_name);
	if (!d)
		return virGetLastErrorCode() == VIR_ERR_NO_DOMAIN;
	down = virDomainIsActive(d) == 0;
	virDomainFree(d);
	return down;
}

/* The killed process back (a QEMU: seen gone by libvirt). */
static void revive(enum point k)
{
	char msg[256];

	switch (k) {
	case K_QEMU:
		if (!TH_WAIT(NULL, victim_down(NULL), TH_SAFETY_USEC))
			fail_msg("libvirt never saw the QEMU of %s go", qemu_victim_name);
		break;
	case K_GROUPD:
		th_proc_wait(&E.groupd);
		if (th_cpenv_restart_groupd(&E, msg, sizeof(msg)) < 0)
			fail_msg("vmact-groupd: %s", msg);
		break;
	case K_PROVIDER:
		th_proc_wait(&E.cp.proc);
		if (th_cpenv_restart_cp(&E) < 0)
			fail_msg("vmact-cloudprovider did not start again");
		break;
	case K_ARBITER:
		th_proc_wait(&E.arbiter);
		if (th_cpenv_restart_arbiter(&E, msg, sizeof(msg)) < 0)
			fail_msg("vmact-arbiter: %s", msg);
		break;
	case K_LIBVIRTD:
		if (th_restart_libvirtd() < 0)
			fail_msg("libvirtd did not start again");
		reconnect(false);
		break;
	default:
		break;
	}
}

/* ---- rounds ---- */

struct stats {
	unsigned rounds, per_op[N_OPS], per_point[N_POINTS], inside, no_target;
	double rec[1024];
	unsigned n_rec;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Makes room for the operation (not part of the round's window): gated
 * emptied for a Permit wait, web below its max for an increase, a node in
 * service for a delete. */
static enum op prepare(enum op op, unsigned round)
{
	struct settle st = { .op = OP_PERMIT_REJECT };

	if ((op == OP_PERMIT_ALLOW || op == OP_PERMIT_REJECT) && group_target("gated") > 0) {
		json_t *s = in_service("gated");

		delete_ids("gated", s);
		json_decref(s);
	}
	if (op == OP_INCREASE_GRPC || op == OP_INCREASE_DECREASE || op == OP_REFILL) {
		if (group_target("web") >= 3)
			op = OP_DELETE;
	} else if (op == OP_DELETE) {
		json_t *s = in_service("web");

		if (!json_array_size(s))
			op = OP_INCREASE_GRPC;
		json_decref(s);
	}
	if (!th_wait_daemon(&E.groupd, is_settled, &st, SETTLE_S))
		printf("round %u: not settled before the operation: %s\n", round, st.why);
	return op;
}

static void round_run(unsigned round, struct stats *s)
{
	struct op_run r = { .op = (enum op)rnd_below(N_OPS), .pick = (unsigned)rnd() };
	enum point k = (enum point)rnd_below(N_POINTS);
	unsigned delay_ms = rnd_below(KILL_MAX_MS);

	/* (the operation restarts the arbiter itself) */
	if (r.op == OP_ARBITER_RESTART && k == K_ARBITER)
		k = K_GROUPD;
	json_t *service = json_array(), *w;
	char what[128] = "";
	struct settle st;
	uint64_t t0, t_kill;
	bool inside;
	double rec;

	r.op = prepare(r.op, round);
	w = in_service("web");
	json_array_extend(service, w);
	json_decref(w);
	w = in_service("gated");
	json_array_extend(service, w);
	json_decref(w);

	t0 = vmact_now_usec();
	assert_int_equal(pthread_create(&r.t, NULL, op_thread, &r), 0);
	while (vmact_now_usec() < t0 + delay_ms * 1000ULL)
		usleep(10 * 1000);
	t_kill = vmact_now_usec();
	inside = !r.done;
	if (kill_point(k, r.pick, what, sizeof(what)) < 0) {
		s->no_target++;
		printf("round %u: %-15s nothing to kill at %s %u ms after the start\n", round,
		       op_names[r.op], point_names[k], delay_ms);
		k = N_POINTS;
	} else {
		s->per_point[k]++;
		s->inside += inside;
		revive(k);
	}
	pthread_join(r.t, NULL);
	if (r.op == OP_ARBITER_RESTART) {
		char msg[256];

		if (th_cpenv_restart_arbiter(&E, msg, sizeof(msg)) < 0)
			fail_msg("vmact-arbiter: %s", msg);
	}
	s->rounds++;
	s->per_op[r.op]++;
	st.op = r.op;
	if (!th_wait_daemon(&E.groupd, is_settled, &st, SETTLE_S)) {
		violation(round, "not settled %.0f s after the kill: %s", SETTLE_S, st.why);
		th_print_log_tail(E.groupd_log, "vmact-groupd", 1500);
	}
	rec = (vmact_now_usec() - t_kill) / 1e6;
	check(round, service);
	if (k != N_POINTS) {
		if (s->n_rec < sizeof(s->rec) / sizeof(s->rec[0]))
			s->rec[s->n_rec++] = rec;
		printf("round %u: %-15s killed %s %u ms after the start (%s), recovered in "
		       "%.2f s\n",
		       round, op_names[r.op], what, delay_ms,
		       inside ? "inside the operation" : "after the operation", rec);
	}
	fflush(stdout);
	json_decref(service);
}

static void cluster_torture(void **state)
{
	const char *env_rounds = getenv("VMACT_CLUSTER_TORTURE_ROUNDS");
	const char *env_seed = getenv("VMACT_CLUSTER_TORTURE_SEED");
	const char *env_max = getenv("VMACT_CLUSTER_TORTURE_MAX_S");
	double max_s = env_max ? atof(env_max) : 0;
	unsigned rounds = env_rounds ? (unsigned)atoi(env_rounds) : 4;
	uint64_t seed = 0;
	double t_start = th_now_s();
	static struct stats s;

	(void)state;
	if (env_seed)
		seed = strtoull(env_seed, NULL, 10);
	else if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	seed &= (1ULL << 53) - 1;
	/* splitmix64 of the seed: small seeds start the sequence well */
	T.rng = seed + 0x9e3779b97f4a7c15ULL;
	T.rng = (T.rng ^ (T.rng >> 30)) * 0xbf58476d1ce4e5b9ULL;
	T.rng = (T.rng ^ (T.rng >> 27)) * 0x94d049bb133111ebULL;
	T.rng ^= T.rng >> 31;
	if (!T.rng)
		T.rng = 1;
	printf("cluster torture: %u rounds, VMACT_CLUSTER_TORTURE_SEED=%" PRIu64 "\n", rounds,
	       seed);
	fflush(stdout);
	assert_int_equal(pthread_create(&S.t, NULL, sampler, NULL), 0);
	for (unsigned i = 1; i <= rounds; i++) {
		/* a run split into holds of the shared lock stops in time */
		if (max_s > 0 && th_now_s() - t_start > max_s) {
			printf("cluster torture: stopping after %u rounds, %.0f s "
			       "(VMACT_CLUSTER_TORTURE_MAX_S)\n",
			       i - 1, th_now_s() - t_start);
			break;
		}
		round_run(i, &s);
	}
	S.stop = true;
	pthread_join(S.t, NULL);
	qsort(s.rec, s.n_rec, sizeof(s.rec[0]), cmp_double);
	printf("cluster torture: rounds %u (", s.rounds);
	for (int i = 0; i < N_OPS; i++)
		printf("%s%s %u", i ? ", " : "", op_names[i], s.per_op[i]);
	printf("), kills by point (");
	for (int i = 0; i < N_POINTS; i++)
		printf("%s%s %u", i ? ", " : "", point_names[i], s.per_point[i]);
	printf("), inside the operation %u, nothing to kill %u, violations %u, ledger samples %u",
	       s.inside, s.no_target, T.violations, S.samples);
	if (s.n_rec)
		printf(", recovery p50 %.1f s, max %.1f s", s.rec[s.n_rec / 2], s.rec[s.n_rec - 1]);
	printf(", %.0f s in all, seed %" PRIu64 "\n", th_now_s() - t_start, seed);
	fflush(stdout);
	if (T.violations)
		fail_msg("%u violation(s), the last: %s", T.violations, T.last_violation);
}

/* ---- set-up ---- */

static int setup(void **state)
{
	struct th_cpenv_opts o = { .arbiter_cpu = "2",
				   .arbiter_memory = "2Gi",
				   .top_extra = top_extra,
				   .prefix = "cpt-" };
	struct cl_host_cfg hc = { .name = "h1" };
	struct vmact_err err = { 0 };
	char msg[256];

	(void)state;
	tg_quiet_libvirt();
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	T.asked = json_array();
	if (th_cpenv_start_opts(&E, groups, &o, msg, sizeof(msg)) < 0) {
		print_error("%s\n", msg);
		return -1;
	}
	snprintf(hc.arbiter_url, sizeof(hc.arbiter_url), "http://127.0.0.1:%u", E.arbiter_port);
	snprintf(hc.arbiter_secret, sizeof(hc.arbiter_secret), "%s", E.key_arbiter);
	if (cl_host_new(&hc, &host, &err) < 0) {
		print_error("%s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "web", "gated", NULL };
	int left;

	(void)state;
	reconnect(false);
	left = th_cpenv_stop(&E, names);
	if (left)
		printf("cluster torture: %d domain(s) left after the drain, destroyed\n", left);
	cl_host_free(host);
	json_decref(T.asked);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(cluster_torture) };

	if (geteuid() != 0) {
		printf("test_cluster_torture: needs root (libvirt qemu:///system, libvirtd)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
