/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupctl: the operator's command for vmact-groupd (doc/cluster.md,
 * doc/cluster-api.md): the node groups, their standby pools, the hosts
 * and the VMs waiting for Permit, as tables or --json; and the changes
 * cluster-autoscaler would make, for an operator's hand. Exit status 0
 * done, 1 error, 2 usage. Like vmactl it links shared/ and base/ only: it
 * speaks the API through its codec (shared/group-api.h) over the unix
 * socket (libcurl, jansson). */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/error.h"
#include "base/macro.h"
#include "base/quantity.h"
#include "shared/group-api.h"

#ifndef VMACT_VERSION
#define VMACT_VERSION "dev"
#endif

#define DEFAULT_SOCKET "/run/vmact-groupd/api.sock"
/* A change waits for its recording (doc/cluster-api.md): seconds. */
#define TIMEOUT_S 90L

static const char usage[] =
	"Usage: vmact-groupctl [--socket PATH] [--json] COMMAND [ARGS]\n"
	"The node groups of vmact-groupd (doc/cluster.md).\n"
	"\n"
	"  groups                      each group: size, target, members in service, pools\n"
	"  nodes GROUP                 a group's members (nodes) and their state\n"
	"  pools [GROUP]               the standby VMs (of one group)\n"
	"  vms                         every VM vmact-groupd knows\n"
	"  hosts                       each host: reachable, its arbiter's ledger, our VMs\n"
	"  waiting                     VMs waiting for Permit\n"
	"  allow UID [--plugin NAME]   let a waiting VM go on (for one plugin, or all)\n"
	"  reject UID [--message TEXT] turn a waiting VM away\n"
	"  increase GROUP N            N more nodes\n"
	"  decrease GROUP N            give up N nodes not yet in service\n"
	"  delete GROUP PROVIDER_ID... delete these nodes\n"
	"  migrate VM [--to HOST] [--force] [--wait]\n"
	"                              move a running VM live to HOST (or the host placement\n"
	"                              chooses); --force: one that has not opted in;\n"
	"                              --wait: until it ran there, or failed\n"
	"  migrations                  the moves in flight and the last ones ended\n"
	"  drain HOST                  take HOST out of placement and move its opted-in VMs\n"
	"                              away (prints what stays, and why)\n"
	"  undrain HOST                put HOST back into placement\n"
	"\n"
	"  -s, --socket PATH   vmact-groupd's API (default " DEFAULT_SOCKET ")\n"
	"  -j, --json          the API's JSON instead of a table\n"
	"  -h, --help          this text\n"
	"      --version       print the version\n";

struct opts {
	const char *socket, *plugin, *message, *to;
	bool json, force, wait;
};

/* ---- the API (shared/group-api.h) ---- */

/* One request; *out its JSON on 2xx. */
static int call(const struct opts *o, const char *method, const char *path, const json_t *body,
		json_t **out, struct vmact_err *err)
{
	return vmact_gapi_call(o->socket, method, path, body, TIMEOUT_S * 1000000ULL, out, err);
}

static void print_json(const json_t *doc)
{
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (text)
		printf("%s\n", text);
	free(text);
}

static void res(const struct vmact_gapi_res *r, char *buf, size_t len)
{
	char c[32] = "-", m[32] = "-";

	if (r) {
		vmact_quantity_format_milli((uint64_t)r->milli_cpu, c, sizeof(c));
		vmact_quantity_format_bytes((uint64_t)r->memory_bytes, m, sizeof(m));
	}
	snprintf(buf, len, "%s/%s", c, m);
}

/* ---- tables ---- */

static int groups_table(json_t *doc, bool show, struct vmact_err *err)
{
	struct vmact_gapi_groups s;
	int r = vmact_gapi_groups_decode(doc, &s, err);

	if (r < 0)
		return r;
	if (show)
		printf("%-20s %4s %4s %6s %8s  %-26s %s\n", "GROUP", "MIN", "MAX", "TARGET",
		       "SERVING", "POOL running/paused/saved", "HOSTS");
	for (size_t i = 0; show && i < s.n; i++) {
		const struct vmact_gapi_group *g = &s.g[i];
		const struct vmact_gapi_pool_tier *p = g->pool;
		char pool[64], hosts[256] = "";

		snprintf(pool, sizeof(pool), "%u/%u %u/%u %u/%u", p[VMACT_GAPI_TIER_RUNNING].ready,
			 p[VMACT_GAPI_TIER_RUNNING].size, p[VMACT_GAPI_TIER_PAUSED].ready,
			 p[VMACT_GAPI_TIER_PAUSED].size, p[VMACT_GAPI_TIER_SAVED].ready,
			 p[VMACT_GAPI_TIER_SAVED].size);
		for (size_t k = 0; k < g->nhosts; k++)
			snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%s%s",
				 k ? "," : "", g->hosts[k]);
		printf("%-20s %4d %4d %6d %8d  %-26s %s\n", g->id, g->min, g->max, g->target,
		       g->in_service, pool, hosts);
	}
	vmact_gapi_groups_clear(&s);
	return 0;
}

static int nodes_table(json_t *doc, bool show, struct vmact_err *err)
{
	struct vmact_gapi_nodes s;
	int r = vmact_gapi_nodes_decode(doc, &s, err);

	if (r < 0)
		return r;
	if (show)
		printf("%-28s %-6s %-9s %-9s %-8s %s\n", "NAME", "HOST", "STATE", "VM", "FROM",
		       "ERROR");
	for (size_t i = 0; show && i < s.n; i++) {
		const struct vmact_gapi_node *n = &s.v[i];
		bool e = n->has_error;

		printf("%-28s %-6s %-9s %-9s %-8s %s%s%s\n", n->name, n->host,
		       vmact_gapi_node_state_name(n->state), n->vm_state, n->tier,
		       e ? n->error.code : "", e ? ": " : "", e ? n->error.message : "");
	}
	vmact_gapi_nodes_clear(&s);
	return 0;
}

static int vms_table(json_t *doc, const char *group, bool standby_only, bool show,
		     struct vmact_err *err)
{
	struct vmact_gapi_vms s;
	int r = vmact_gapi_vms_decode(doc, &s, err);

	if (r < 0)
		return r;
	if (show)
		printf("%-28s %-16s %-6s %-7s %-8s %-9s %s\n", "NAME", "GROUP", "HOST", "ROLE",
		       "TIER", "STATE", "LEASED");
	for (size_t i = 0; show && i < s.n; i++) {
		const struct vmact_gapi_vm *v = &s.v[i];

		if (group && strcmp(group, v->group))
			continue;
		if (standby_only && strcmp(v->role, "pool"))
			continue;
		printf("%-28s %-16s %-6s %-7s %-8s %-9s %s\n", v->name, v->group, v->host, v->role,
		       v->tier, v->state, v->leased ? "yes" : "no");
	}
	vmact_gapi_vms_clear(&s);
	return 0;
}

static int hosts_table(json_t *doc, bool show, struct vmact_err *err)
{
	struct vmact_gapi_hosts s;
	int r = vmact_gapi_hosts_decode(doc, &s, err);

	if (r < 0)
		return r;
	if (show)
		printf("%-8s %-9s %-18s %-18s %-18s %6s %4s  %s\n", "HOST", "REACHABLE", "RESERVED",
		       "WATERMARK", "STANDBY", "LEASES", "VMS", "URI");
	for (size_t i = 0; show && i < s.n; i++) {
		const struct vmact_gapi_host *h = &s.v[i];
		char rs[40], w[40], sb[40];

		res(h->has_ledger ? &h->reserved : NULL, rs, sizeof(rs));
		res(h->has_ledger ? &h->watermark : NULL, w, sizeof(w));
		res(&h->standby, sb, sizeof(sb));
		printf("%-8s %-9s %-18s %-18s %-18s %6d %4d  %s\n", h->name,
		       h->reachable ? "yes" : "no", rs, w, sb, h->leases, h->vms, h->uri);
		if (!h->libvirt_ok)
			printf("         libvirt: %s\n", h->libvirt_error);
		if (!h->arbiter_ok)
			printf("         arbiter: %s\n", h->arbiter_error);
		if (h->draining)
			printf("         drained\n");
		if (h->relief && h->relief[0])
			printf("         %s\n", h->relief);
	}
	vmact_gapi_hosts_clear(&s);
	return 0;
}

static int waiting_table(json_t *doc, bool show, struct vmact_err *err)
{
	struct vmact_gapi_waitings s;
	int r = vmact_gapi_waitings_decode(doc, &s, err);

	if (r < 0)
		return r;
	if (show)
		printf("%-38s %-28s %-14s %-6s %8s %8s  %s\n", "UID", "NAME", "GROUP", "HOST",
		       "WAITED", "LEFT", "PLUGINS");
	for (size_t i = 0; show && i < s.n; i++) {
		const struct vmact_gapi_waiting *w = &s.v[i];
		char plugins[256] = "";

		for (size_t k = 0; k < w->npending; k++)
			snprintf(plugins + strlen(plugins), sizeof(plugins) - strlen(plugins),
				 "%s%s", k ? "," : "", w->pending[k]);
		printf("%-38s %-28s %-14s %-6s %7.0fs %7.0fs  %s\n", w->uid, w->name, w->group,
		       w->host, w->waited_s, w->timeout_s, plugins);
	}
	vmact_gapi_waitings_clear(&s);
	return 0;
}

static void migration_line(const struct vmact_gapi_migration *m)
{
	char down[32] = "-";

	if (m->downtime_ms >= 0)
		snprintf(down, sizeof(down), "%lldms", (long long)m->downtime_ms);
	printf("%-5llu %-24s %-8s %-8s %-9s %-9s %-8s %7.1fs %8s  %s\n", (unsigned long long)m->id,
	       m->vm, m->from, m->to, m->reason, m->phase, m->result[0] ? m->result : "-",
	       m->duration_s, down, m->error);
}

static void migration_header(void)
{
	printf("%-5s %-24s %-8s %-8s %-9s %-9s %-8s %8s %8s  %s\n", "ID", "VM", "FROM", "TO",
	       "REASON", "PHASE", "RESULT", "TIME", "DOWNTIME", "ERROR");
}

static int migrations_table(json_t *doc, bool show, struct vmact_err *err)
{
	struct vmact_gapi_migrations s;
	int r = vmact_gapi_migrations_decode(doc, &s, err);

	if (r < 0)
		return r;
	if (show)
		migration_header();
	for (size_t i = 0; show && i < s.n; i++)
		migration_line(&s.v[i]);
	vmact_gapi_migrations_clear(&s);
	return 0;
}

/* ---- commands ---- */

static int bad_usage(const char *what, const char *arg)
{
	fprintf(stderr, "vmact-groupctl: %s%s%s\nTry 'vmact-groupctl --help'.\n", arg ? arg : "",
		arg ? ": " : "", what);
	return 2;
}

/* GET path and show its answer: as the table, or its JSON once the
 * table's decoder took it (an answer that is not the API's is an error,
 * not output). */
static int get(const struct opts *o, const char *path,
	       int (*table)(json_t *doc, bool show, struct vmact_err *err))
{
	struct vmact_err err = { 0 };
	json_t *doc = NULL;
	int r = call(o, "GET", path, NULL, &doc, &err);

	if (r >= 0)
		r = table(doc, !o->json, &err);
	if (r >= 0 && o->json)
		print_json(doc);
	json_decref(doc);
	if (r < 0) {
		fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
		return 1;
	}
	return 0;
}

static int post(const struct opts *o, const char *path, json_t *body, bool verdict)
{
	struct vmact_err err = { 0 };
	enum vmact_gapi_verdict v;
	const char *uid;
	json_t *doc = NULL;
	int32_t target = 0;
	int r;

	if (!body) {
		fprintf(stderr, "vmact-groupctl: out of memory\n");
		return 1;
	}
	r = call(o, "POST", path, body, &doc, &err);
	json_decref(body);
	if (r >= 0)
		r = verdict ? vmact_gapi_verdict_done_decode(doc, &uid, &v, &err)
			    : vmact_gapi_target_decode(doc, &target, &err);
	if (r < 0) {
		fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
		json_decref(doc);
		return 1;
	}
	if (o->json)
		print_json(doc);
	else if (!verdict)
		printf("target %d\n", target);
	json_decref(doc);
	return 0;
}

/* The move with that id, as GET /v1/migrations has it now: 1 found
 * (ended or not), 0 not listed, -errno. */
static int migration_now(const struct opts *o, uint64_t id, json_t **one, bool *ended,
			 struct vmact_err *err)
{
	struct vmact_gapi_migrations s;
	json_t *doc = NULL;
	int r = call(o, "GET", VMACT_GAPI_PATH_MIGRATIONS, NULL, &doc, err);

	if (r >= 0)
		r = vmact_gapi_migrations_decode(doc, &s, err);
	if (r < 0) {
		json_decref(doc);
		return r;
	}
	r = 0;
	for (size_t i = 0; i < s.n; i++)
		if (s.v[i].id == id) {
			*ended = s.v[i].result[0] != 0;
			*one = vmact_gapi_migration_encode(&s.v[i]);
			r = 1;
		}
	vmact_gapi_migrations_clear(&s);
	json_decref(doc);
	return r;
}

/* POST .../migrate; with --wait, polls the move until it ended: 0 when
 * it succeeded, 1 otherwise. */
static int migrate(const struct opts *o, const char *vm)
{
	struct vmact_gapi_migrate req = { .to = o->to, .force = o->force };
	_cleanup_free_ char *path = vmact_gapi_migrate_path(vm);
	struct vmact_gapi_migration m;
	struct vmact_err err = { 0 };
	json_t *body = vmact_gapi_migrate_encode(&req), *doc = NULL;
	bool ended = false;
	int r;

	if (!path || !body) {
		json_decref(body);
		fprintf(stderr, "vmact-groupctl: out of memory\n");
		return 1;
	}
	r = call(o, "POST", path, body, &doc, &err);
	json_decref(body);
	if (r >= 0)
		r = vmact_gapi_migration_decode(doc, &m, &err);
	if (r < 0) {
		json_decref(doc);
		fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
		return 1;
	}
	if (!o->wait) {
		if (o->json)
			print_json(doc);
		else
			printf("migration %llu: %s from %s to %s\n", (unsigned long long)m.id, m.vm,
			       m.from, m.to);
		json_decref(doc);
		return 0;
	}
	{
		uint64_t id = m.id;
		json_t *one = NULL;

		json_decref(doc);
		while (!ended) {
			json_decref(one);
			one = NULL;
			r = migration_now(o, id, &one, &ended, &err);
			if (r <= 0) {
				fprintf(stderr, "vmact-groupctl: %s\n",
					r < 0 ? err.msg : "the move is no longer listed");
				return 1;
			}
			if (!ended)
				usleep(200 * 1000);
		}
		r = vmact_gapi_migration_decode(one, &m, &err);
		if (r >= 0 && o->json) {
			print_json(one);
		} else if (r >= 0) {
			migration_header();
			migration_line(&m);
		}
		r = r < 0 ? 1 : strcmp(m.result, "success") != 0;
		json_decref(one);
		return r;
	}
}

static bool name_ok(const char *s)
{
	/* One path segment: group ids and UUIDs are [a-z0-9-]. */
	return *s && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(s);
}

static int count_arg(const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno || end == s || *end || *out <= 0 ? -1 : 0;
}

static int run(const struct opts *o, int argc, char **argv)
{
	const char *cmd = argv[0];
	_cleanup_free_ char *path = NULL;
	long long n;

	if (strcmp(cmd, "groups") == 0 && argc == 1)
		return get(o, VMACT_GAPI_PATH_GROUPS, groups_table);
	if (strcmp(cmd, "hosts") == 0 && argc == 1)
		return get(o, VMACT_GAPI_PATH_HOSTS, hosts_table);
	if (strcmp(cmd, "waiting") == 0 && argc == 1)
		return get(o, VMACT_GAPI_PATH_WAITING, waiting_table);
	if (strcmp(cmd, "migrations") == 0 && argc == 1)
		return get(o, VMACT_GAPI_PATH_MIGRATIONS, migrations_table);
	if ((strcmp(cmd, "drain") == 0 || strcmp(cmd, "undrain") == 0) && argc == 2) {
		struct vmact_gapi_hosts hs;
		struct vmact_err err = { 0 };
		json_t *doc = NULL;

		if (!name_ok(argv[1]))
			return bad_usage("not a host name", argv[1]);
		path = vmact_gapi_drain_path(argv[1], cmd[0] == 'd');
		if (!path)
			return 1;
		if (call(o, "POST", path, NULL, &doc, &err) < 0 ||
		    vmact_gapi_hosts_decode(doc, &hs, &err) < 0) {
			json_decref(doc);
			fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
			return 1;
		}
		if (o->json)
			print_json(doc);
		else if (hs.n)
			printf("%s: %s%s%s\n", hs.v[0].name,
			       hs.v[0].draining ? "drained" : "back in placement",
			       hs.v[0].unmovable[0] ? "; stays: " : "", hs.v[0].unmovable);
		vmact_gapi_hosts_clear(&hs);
		json_decref(doc);
		return 0;
	}
	if (strcmp(cmd, "migrate") == 0 && argc == 2) {
		if (!argv[1][0] || strchr(argv[1], '/'))
			return bad_usage("not a domain name", argv[1]);
		if (o->to && !name_ok(o->to))
			return bad_usage("not a host name", o->to);
		return migrate(o, argv[1]);
	}
	if ((strcmp(cmd, "vms") == 0 && argc == 1) || (strcmp(cmd, "pools") == 0 && argc <= 2)) {
		struct vmact_err err = { 0 };
		const char *group = argc == 2 ? argv[1] : NULL;
		json_t *doc;
		int r;

		if (group && !name_ok(group))
			return bad_usage("not a group id", group);
		if (call(o, "GET", VMACT_GAPI_PATH_VMS, NULL, &doc, &err) < 0) {
			fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
			return 1;
		}
		r = vms_table(doc, group, cmd[0] == 'p', !o->json, &err);
		if (r >= 0 && o->json)
			print_json(doc);
		json_decref(doc);
		if (r < 0) {
			fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
			return 1;
		}
		return 0;
	}
	if (strcmp(cmd, "nodes") == 0 && argc == 2) {
		if (!name_ok(argv[1]))
			return bad_usage("not a group id", argv[1]);
		path = vmact_gapi_group_path(argv[1], VMACT_GAPI_NODES);
		return path ? get(o, path, nodes_table) : 1;
	}
	if ((strcmp(cmd, "allow") == 0 || strcmp(cmd, "reject") == 0) && argc == 2) {
		enum vmact_gapi_verdict v = cmd[0] == 'a' ? VMACT_GAPI_ALLOW : VMACT_GAPI_REJECT;

		if (!name_ok(argv[1]))
			return bad_usage("not a VM's uid", argv[1]);
		path = vmact_gapi_waiting_path(argv[1], v);
		return path ? post(o, path,
				   vmact_gapi_verdict_encode(v, v == VMACT_GAPI_ALLOW ? o->plugin
										      : o->message),
				   true)
			    : 1;
	}
	if ((strcmp(cmd, "increase") == 0 || strcmp(cmd, "decrease") == 0) && argc == 3) {
		if (!name_ok(argv[1]))
			return bad_usage("not a group id", argv[1]);
		if (count_arg(argv[2], &n) < 0)
			return bad_usage("not a positive number of nodes", argv[2]);
		path = vmact_gapi_group_path(argv[1], cmd[0] == 'i' ? VMACT_GAPI_INCREASE
								    : VMACT_GAPI_DECREASE_TARGET);
		return path ? post(o, path, vmact_gapi_delta_encode(cmd[0] == 'i' ? n : -n), false)
			    : 1;
	}
	if (strcmp(cmd, "delete") == 0 && argc >= 3) {
		if (!name_ok(argv[1]))
			return bad_usage("not a group id", argv[1]);
		path = vmact_gapi_group_path(argv[1], VMACT_GAPI_DELETE_NODES);
		return path ? post(o, path,
				   vmact_gapi_delete_nodes_encode((const char *const *)argv + 2,
								  (size_t)argc - 2),
				   false)
			    : 1;
	}
	return bad_usage("unknown command, or wrong arguments for it", cmd);
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "plugin", required_argument, NULL, 'p' },
		{ "message", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .socket = DEFAULT_SOCKET };
	int opt, r;

	while ((opt = getopt_long(argc, argv, "+s:jh", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.socket = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'p':
			o.plugin = optarg;
			break;
		case 'm':
			o.message = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("vmact-groupctl %s\n", VMACT_VERSION);
			return 0;
		default:
			fputs("Try 'vmact-groupctl --help'.\n", stderr);
			return 2;
		}
	}
	/* Options may follow the command too (allow UID --plugin X). */
	if (optind >= argc)
		return bad_usage("a command is required", NULL);
	{
		char **rest = argv + optind;
		int n = argc - optind, k = 0;
		char *args[64];

		for (int i = 0; i < n && k < 63; i++) {
			if (!strcmp(rest[i], "--json") || !strcmp(rest[i], "-j"))
				o.json = true;
			else if (!strcmp(rest[i], "--plugin") && i + 1 < n)
				o.plugin = rest[++i];
			else if (!strcmp(rest[i], "--message") && i + 1 < n)
				o.message = rest[++i];
			else if (!strcmp(rest[i], "--to") && i + 1 < n)
				o.to = rest[++i];
			else if (!strcmp(rest[i], "--force"))
				o.force = true;
			else if (!strcmp(rest[i], "--wait"))
				o.wait = true;
			else
				args[k++] = rest[i];
		}
		args[k] = NULL;
		curl_global_init(CURL_GLOBAL_DEFAULT);
		r = run(&o, k, args);
		curl_global_cleanup();
	}
	return r;
}
