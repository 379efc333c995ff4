/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupctl: the operator's command for vmact-groupd (doc/cluster.md,
 * doc/cluster-api.md): the node groups, their standby pools, the hosts
 * and the VMs waiting for Permit, as tables or --json; and the changes
 * cluster-autoscaler would make, for an operator's hand. Exit status 0
 * done, 1 error, 2 usage. Like vmactl it links base/ only: it speaks JSON
 * over the API's unix socket (libcurl, jansson). */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/error.h"
#include "base/macro.h"
#include "base/quantity.h"
#include "cli/client.h"

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
	"\n"
	"  -s, --socket PATH   vmact-groupd's API (default " DEFAULT_SOCKET ")\n"
	"  -j, --json          the API's JSON instead of a table\n"
	"  -h, --help          this text\n"
	"      --version       print the version\n";

struct opts {
	const char *socket, *plugin, *message;
	bool json;
};

/* ---- the API ---- */

/* One request; *out its JSON on 2xx, else -EPROTO with the API's error. */
static int call(const struct opts *o, const char *method, const char *path, const char *body,
		json_t **out, struct vmact_err *err)
{
	long status;

	return ctl_call(o->socket, method, path, body, TIMEOUT_S, &status, out, err);
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static long long num(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

static void print_json(const json_t *doc)
{
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (text)
		printf("%s\n", text);
	free(text);
}

static void res(const json_t *r, char *buf, size_t len)
{
	char c[32] = "-", m[32] = "-";

	if (r) {
		vmact_quantity_format_milli((uint64_t)num(r, "milli_cpu"), c, sizeof(c));
		vmact_quantity_format_bytes((uint64_t)num(r, "memory_bytes"), m, sizeof(m));
	}
	snprintf(buf, len, "%s/%s", c, m);
}

/* ---- tables ---- */

static void groups_table(const json_t *doc)
{
	size_t i;
	json_t *g;

	printf("%-20s %4s %4s %6s %8s  %-26s %s\n", "GROUP", "MIN", "MAX", "TARGET", "SERVING",
	       "POOL running/paused/saved", "HOSTS");
	json_array_foreach(json_object_get(doc, "groups"), i, g) {
		const json_t *p = json_object_get(g, "pool");
		char pool[64], hosts[256] = "";
		size_t k;
		json_t *h;

		snprintf(pool, sizeof(pool), "%lld/%lld %lld/%lld %lld/%lld",
			 num(json_object_get(p, "running"), "ready"),
			 num(json_object_get(p, "running"), "size"),
			 num(json_object_get(p, "paused"), "ready"),
			 num(json_object_get(p, "paused"), "size"),
			 num(json_object_get(p, "saved"), "ready"),
			 num(json_object_get(p, "saved"), "size"));
		json_array_foreach(json_object_get(g, "hosts"), k, h)
			snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%s%s",
				 k ? "," : "", json_string_value(h));
		printf("%-20s %4lld %4lld %6lld %8lld  %-26s %s\n", str(g, "id"), num(g, "min"),
		       num(g, "max"), num(g, "target"), num(g, "in_service"), pool, hosts);
	}
}

static void nodes_table(const json_t *doc)
{
	size_t i;
	json_t *n;

	printf("%-28s %-6s %-9s %-9s %-8s %s\n", "NAME", "HOST", "STATE", "VM", "FROM", "ERROR");
	json_array_foreach(json_object_get(doc, "nodes"), i, n) {
		const json_t *e = json_object_get(n, "error");

		printf("%-28s %-6s %-9s %-9s %-8s %s%s%s\n", str(n, "name"), str(n, "host"),
		       str(n, "state"), str(n, "vm_state"), str(n, "tier"), e ? str(e, "code") : "",
		       e ? ": " : "", e ? str(e, "message") : "");
	}
}

static void vms_table(const json_t *doc, const char *group, bool standby_only)
{
	size_t i;
	json_t *v;

	printf("%-28s %-16s %-6s %-7s %-8s %-9s %s\n", "NAME", "GROUP", "HOST", "ROLE", "TIER",
	       "STATE", "LEASED");
	json_array_foreach(json_object_get(doc, "vms"), i, v) {
		if (group && strcmp(group, str(v, "group")))
			continue;
		if (standby_only && strcmp(str(v, "role"), "pool"))
			continue;
		printf("%-28s %-16s %-6s %-7s %-8s %-9s %s\n", str(v, "name"), str(v, "group"),
		       str(v, "host"), str(v, "role"), str(v, "tier"), str(v, "state"),
		       json_is_true(json_object_get(v, "leased")) ? "yes" : "no");
	}
}

static void hosts_table(const json_t *doc)
{
	size_t i;
	json_t *h;

	printf("%-8s %-9s %-18s %-18s %-18s %6s %4s  %s\n", "HOST", "REACHABLE", "RESERVED",
	       "WATERMARK", "STANDBY", "LEASES", "VMS", "URI");
	json_array_foreach(json_object_get(doc, "hosts"), i, h) {
		char r[40], w[40], s[40];

		res(json_object_get(h, "reserved"), r, sizeof(r));
		res(json_object_get(h, "watermark"), w, sizeof(w));
		res(json_object_get(h, "standby"), s, sizeof(s));
		printf("%-8s %-9s %-18s %-18s %-18s %6lld %4lld  %s\n", str(h, "name"),
		       json_is_true(json_object_get(h, "reachable")) ? "yes" : "no", r, w, s,
		       num(h, "leases"), num(h, "vms"), str(h, "uri"));
		if (!json_is_true(json_object_get(json_object_get(h, "libvirt"), "ok")))
			printf("         libvirt: %s\n",
			       str(json_object_get(h, "libvirt"), "error"));
		if (!json_is_true(json_object_get(json_object_get(h, "arbiter"), "ok")))
			printf("         arbiter: %s\n",
			       str(json_object_get(h, "arbiter"), "error"));
	}
}

static void waiting_table(const json_t *doc)
{
	size_t i;
	json_t *w;

	printf("%-38s %-28s %-14s %-6s %8s %8s  %s\n", "UID", "NAME", "GROUP", "HOST", "WAITED",
	       "LEFT", "PLUGINS");
	json_array_foreach(json_object_get(doc, "waiting"), i, w) {
		char plugins[256] = "";
		size_t k;
		json_t *p;

		json_array_foreach(json_object_get(w, "pending"), k, p)
			snprintf(plugins + strlen(plugins), sizeof(plugins) - strlen(plugins),
				 "%s%s", k ? "," : "", json_string_value(p));
		printf("%-38s %-28s %-14s %-6s %7.0fs %7.0fs  %s\n", str(w, "uid"), str(w, "name"),
		       str(w, "group"), str(w, "host"),
		       json_real_value(json_object_get(w, "waited_s")),
		       json_real_value(json_object_get(w, "timeout_s")), plugins);
	}
}

/* ---- commands ---- */

static int bad_usage(const char *what, const char *arg)
{
	fprintf(stderr, "vmact-groupctl: %s%s%s\nTry 'vmact-groupctl --help'.\n", arg ? arg : "",
		arg ? ": " : "", what);
	return 2;
}

static int get(const struct opts *o, const char *path, void (*table)(const json_t *))
{
	struct vmact_err err = { 0 };
	json_t *doc;

	if (call(o, "GET", path, NULL, &doc, &err) < 0) {
		fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
		return 1;
	}
	if (o->json)
		print_json(doc);
	else
		table(doc);
	json_decref(doc);
	return 0;
}

static int post(const struct opts *o, const char *path, json_t *body)
{
	_cleanup_free_ char *text = json_dumps(body, JSON_COMPACT);
	struct vmact_err err = { 0 };
	json_t *doc;

	json_decref(body);
	if (call(o, "POST", path, text, &doc, &err) < 0) {
		fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
		return 1;
	}
	if (o->json)
		print_json(doc);
	else if (json_object_get(doc, "target"))
		printf("target %lld\n", num(doc, "target"));
	json_decref(doc);
	return 0;
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
	char path[256];
	long long n;

	if (strcmp(cmd, "groups") == 0 && argc == 1)
		return get(o, "/v1/groups", groups_table);
	if (strcmp(cmd, "hosts") == 0 && argc == 1)
		return get(o, "/v1/hosts", hosts_table);
	if (strcmp(cmd, "waiting") == 0 && argc == 1)
		return get(o, "/v1/waiting", waiting_table);
	if ((strcmp(cmd, "vms") == 0 && argc == 1) || (strcmp(cmd, "pools") == 0 && argc <= 2)) {
		struct vmact_err err = { 0 };
		const char *group = argc == 2 ? argv[1] : NULL;
		json_t *doc;

		if (group && !name_ok(group))
			return bad_usage("not a group id", group);
		if (call(o, "GET", "/v1/vms", NULL, &doc, &err) < 0) {
			fprintf(stderr, "vmact-groupctl: %s\n", err.msg);
			return 1;
		}
		if (o->json)
			print_json(doc);
		else
			vms_table(doc, group, cmd[0] == 'p');
		json_decref(doc);
		return 0;
	}
	if (strcmp(cmd, "nodes") == 0 && argc == 2) {
		if (!name_ok(argv[1]))
			return bad_usage("not a group id", argv[1]);
		snprintf(path, sizeof(path), "/v1/groups/%s/nodes", argv[1]);
		return get(o, path, nodes_table);
	}
	if ((strcmp(cmd, "allow") == 0 || strcmp(cmd, "reject") == 0) && argc == 2) {
		json_t *body = json_object();

		if (!name_ok(argv[1]))
			return bad_usage("not a VM's uid", argv[1]);
		if (cmd[0] == 'a' && o->plugin)
			json_object_set_new(body, "plugin", json_string(o->plugin));
		if (cmd[0] == 'r' && o->message)
			json_object_set_new(body, "message", json_string(o->message));
		snprintf(path, sizeof(path), "/v1/waiting/%s/%s", argv[1], cmd);
		return post(o, path, body);
	}
	if ((strcmp(cmd, "increase") == 0 || strcmp(cmd, "decrease") == 0) && argc == 3) {
		if (!name_ok(argv[1]))
			return bad_usage("not a group id", argv[1]);
		if (count_arg(argv[2], &n) < 0)
			return bad_usage("not a positive number of nodes", argv[2]);
		snprintf(path, sizeof(path), "/v1/groups/%s/%s", argv[1],
			 cmd[0] == 'i' ? "increase" : "decrease-target");
		return post(o, path, json_pack("{s:I}", "delta", cmd[0] == 'i' ? n : -n));
	}
	if (strcmp(cmd, "delete") == 0 && argc >= 3) {
		json_t *ids = json_array();

		if (!name_ok(argv[1])) {
			json_decref(ids);
			return bad_usage("not a group id", argv[1]);
		}
		for (int i = 2; i < argc; i++)
			json_array_append_new(ids, json_string(argv[i]));
		snprintf(path, sizeof(path), "/v1/groups/%s/delete-nodes", argv[1]);
		return post(o, path, json_pack("{s:o}", "provider_ids", ids));
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
			else
				args[k++] = rest[i];
		}
		args[k] = NULL;
		curl_global_init(CURL_GLOBAL_DEFAULT);
		ctl_set_peer("vmact-groupd", " (is it running? are you root or its user?)");
		r = run(&o, k, args);
		curl_global_cleanup();
	}
	return r;
}
