/* SPDX-License-Identifier: Apache-2.0 */
/* vmactl: the operator's command for vmactd (doc/control-api.md). Every
 * command is one or a few requests to the control API; exit status 0
 * done, 1 error, 2 usage. */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "cli/vmactl/args.h"
#include "cli/vmactl/client.h"
#include "cli/vmactl/render.h"
#include "cli/vmactl/top.h"

/* The long poll of `events --follow`: below the API's 30 s bound. */
#define FOLLOW_WAIT_S   25
#define FOLLOW_WAIT_STR "25"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int fail(const struct vmact_err *err)
{
	fprintf(stderr, "vmactl: %s\n", err->msg);
	return 1;
}

static void print_json(const json_t *doc)
{
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

	if (text)
		printf("%s\n", text);
	free(text);
}

static int vm_path(char *buf, size_t len, const char *vm, const char *suffix)
{
	_cleanup_free_ char *e = ctl_escape(vm);

	if (!e)
		return -ENOMEM;
	snprintf(buf, len, "/v1/vms/%s%s", e, suffix);
	return 0;
}

static int cmd_status(const struct ctl_args *a)
{
	struct vmact_err err = { 0 };
	json_t *doc;
	long status;

	if (ctl_call(a->socket, "GET", a->all ? "/v1/vms?all=true" : "/v1/vms", NULL, 10, &status,
		     &doc, &err) < 0)
		return fail(&err);
	if (a->json)
		print_json(doc);
	else {
		ctl_render_status(stdout, json_object_get(doc, "vms"), 0);
		ctl_render_hook(stdout, json_object_get(doc, "hook"));
		ctl_render_detection(stdout, json_object_get(doc, "detection"));
	}
	json_decref(doc);
	return 0;
}

static int cmd_show(const struct ctl_args *a)
{
	struct vmact_err err = { 0 };
	char path[1024];
	json_t *doc;
	long status;

	if (vm_path(path, sizeof(path), a->vm, "") < 0)
		return 1;
	if (ctl_call(a->socket, "GET", path, NULL, 10, &status, &doc, &err) < 0)
		return fail(&err);
	if (a->json)
		print_json(doc);
	else
		ctl_render_show(stdout, doc);
	json_decref(doc);
	return 0;
}

/* The bounds options as the API's body ({} when none). */
static char *bounds_body(const struct ctl_args *a)
{
	json_t *req = json_object();
	char *body;

	if (a->min_cpu)
		json_object_set_new(req, "min_cpu", json_string(a->min_cpu));
	if (a->max_cpu)
		json_object_set_new(req, "max_cpu", json_string(a->max_cpu));
	if (a->min_mem)
		json_object_set_new(req, "min_memory", json_string(a->min_mem));
	if (a->max_mem)
		json_object_set_new(req, "max_memory", json_string(a->max_mem));
	if (a->mode)
		json_object_set_new(req, "mode", json_string(a->mode));
	if (a->recommend)
		json_object_set_new(req, "mode", json_string("recommend"));
	if (a->set_migration)
		json_object_set_new(req, "migration", json_boolean(a->migration));
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return body;
}

static int cmd_change(const struct ctl_args *a)
{
	struct vmact_err err = { 0 };
	char path[1024], *body = NULL;
	json_t *doc;
	long status;
	int r;

	if (vm_path(path, sizeof(path), a->vm,
		    a->cmd == CTL_SET     ? "/bounds"
		    : a->cmd == CTL_PAUSE ? "/pause"
					  : "/resume") < 0)
		return 1;
	if (a->cmd == CTL_SET)
		body = bounds_body(a);
	r = ctl_call(a->socket, "POST", path, body ? body : "", 30, &status, &doc, &err);
	free(body);
	if (r < 0)
		return fail(&err);
	if (a->json)
		print_json(doc);
	else if (a->cmd == CTL_SET && (a->mode || a->set_migration))
		printf("%s: %s%s%s%s (recorded in its metadata)\n", a->vm,
		       !a->mode ? ""
		       : a->mode[0] == 'r'
			       ? "mode recommend: decisions are reported, nothing changes"
			       : "mode active: decisions are applied",
		       a->mode && a->set_migration ? "; " : "",
		       !a->set_migration ? ""
		       : a->migration    ? "migration on: vmact may move it to another host"
					 : "migration off: it stays on this host",
		       a->min_cpu || a->max_cpu || a->min_mem || a->max_mem ? "; bounds set" : "");
	else if (a->cmd == CTL_SET)
		printf("%s: bounds set (recorded in its metadata)\n", a->vm);
	else
		printf("%s: autoscaling %s\n", a->vm, a->cmd == CTL_PAUSE ? "paused" : "resumed");
	json_decref(doc);
	return 0;
}

static int domain_call(const struct ctl_args *a, const char *what, const char *body, json_t **doc,
		       struct vmact_err *err)
{
	_cleanup_free_ char *e = ctl_escape(a->vm);
	char path[1024];
	long status;

	if (!e)
		return vmact_err_set(err, ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "/v1/domains/%s/%s", e, what);
	return ctl_call(a->socket, "POST", path, body, 30, &status, doc, err);
}

/* check, enable (after the same check, printed), disable. */
static int cmd_domain(const struct ctl_args *a)
{
	struct vmact_err err = { 0 };
	_cleanup_free_ char *body = a->cmd == CTL_DISABLE ? NULL : bounds_body(a);
	json_t *doc = NULL;
	bool ready;

	if (a->cmd == CTL_DISABLE) {
		if (domain_call(a, "disable", "", &doc, &err) < 0)
			return fail(&err);
		if (a->json)
			print_json(doc);
		else
			printf("%s: autoscaling disabled (enabled=\"false\" in its metadata)\n",
			       json_string_value(json_object_get(doc, "name")));
		json_decref(doc);
		return 0;
	}
	if (domain_call(a, "check", body, &doc, &err) < 0)
		return fail(&err);
	ready = json_is_true(json_object_get(doc, "ready"));
	if (a->cmd == CTL_CHECK || !ready) {
		if (a->json)
			print_json(doc);
		else if (a->fix)
			ctl_render_fixes(stdout, doc);
		else
			ctl_render_check(stdout, doc);
	}
	json_decref(doc);
	doc = NULL;
	if (a->cmd == CTL_CHECK)
		return ready ? 0 : 1;
	if (domain_call(a, "enable", body, &doc, &err) < 0)
		return fail(&err);
	if (a->json) {
		print_json(doc);
	} else {
		char min[64], max[64];

		ctl_fmt_res(json_object_get(doc, "min"), min, sizeof(min));
		ctl_fmt_res(json_object_get(doc, "max"), max, sizeof(max));
		printf("%s: enabled%s, bounds %s to %s (%s), memory by %s%s; vmactd takes it "
		       "over\n",
		       json_string_value(json_object_get(doc, "name")),
		       a->recommend ? " in recommend mode (nothing is changed)" : "", min, max,
		       json_string_value(json_object_get(doc, "bounds_from")),
		       json_string_value(json_object_get(doc, "method")),
		       json_is_true(json_object_get(json_object_get(doc, "migration"), "enabled"))
			       ? ", migration on"
			       : "");
	}
	json_decref(doc);
	return 0;
}

static int cmd_events(const struct ctl_args *a)
{
	struct sigaction sa = { .sa_handler = on_sigint };
	_cleanup_free_ char *vm = a->vm ? ctl_escape(a->vm) : NULL;
	uint64_t since = a->since;
	double start = 0;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ctl_set_cancel(&interrupted);
	do {
		struct vmact_err err = { 0 };
		char path[1024];
		json_t *doc, *ev;
		long status;
		size_t i;
		double ds;

		snprintf(path, sizeof(path), "/v1/events?since=%llu%s%s%s",
			 (unsigned long long)since, a->follow ? "&wait=" : "",
			 a->follow ? FOLLOW_WAIT_STR : "", vm ? "&vm=" : "");
		if (vm)
			strncat(path, vm, sizeof(path) - strlen(path) - 1);
		if (ctl_call(a->socket, "GET", path, NULL, a->follow ? FOLLOW_WAIT_S + 15 : 10,
			     &status, &doc, &err) < 0) {
			if (interrupted)
				break;
			return fail(&err);
		}
		ds = json_number_value(json_object_get(doc, "daemon_start"));
		if (start && ds != start && since) {
			/* A new vmactd numbers from 1 again. */
			since = 0;
			start = ds;
			json_decref(doc);
			continue;
		}
		start = ds;
		json_array_foreach(json_object_get(doc, "events"), i, ev) {
			if (a->json) {
				char *line = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);

				if (line)
					printf("%s\n", line);
				free(line);
			} else {
				ctl_render_event(stdout, ev, 0);
			}
		}
		fflush(stdout);
		since = (uint64_t)json_integer_value(json_object_get(doc, "last_seq"));
		json_decref(doc);
	} while (a->follow && !interrupted);
	return 0;
}

int main(int argc, char **argv)
{
	struct vmact_err err = { 0 };
	struct ctl_args a;
	int r;

	if (ctl_args_parse(argc, argv, getenv("VMACT_SOCKET"), &a, &err) < 0) {
		fprintf(stderr, "vmactl: %s\n", err.msg);
		fprintf(stderr, "Try 'vmactl%s%s --help'.\n", a.cmd ? " " : "",
			ctl_command_name(a.cmd));
		return 2;
	}
	if (a.help) {
		ctl_usage(stdout, a.cmd);
		return 0;
	}
	if (a.version) {
		puts("vmactl " VMACT_VERSION);
		return 0;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	switch (a.cmd) {
	case CTL_STATUS:
		r = cmd_status(&a);
		break;
	case CTL_SHOW:
		r = cmd_show(&a);
		break;
	case CTL_SET:
	case CTL_PAUSE:
	case CTL_RESUME:
		r = cmd_change(&a);
		break;
	case CTL_EVENTS:
		r = cmd_events(&a);
		break;
	case CTL_CHECK:
	case CTL_ENABLE:
	case CTL_DISABLE:
		r = cmd_domain(&a);
		break;
	case CTL_TOP:
		r = ctl_top(a.socket, a.iterations, a.json, &err) < 0 ? fail(&err) : 0;
		break;
	default:
		r = 2;
	}
	curl_global_cleanup();
	return r;
}
