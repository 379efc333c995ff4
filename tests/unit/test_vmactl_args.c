/* SPDX-License-Identifier: Apache-2.0 */
/* vmactl's command line (cli/vmactl/args.c), table-driven: what parses, what is a
 * usage error (exit status 2) and with which message; and the text views
 * (cli/vmactl/render.c) of the API's documents. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli/vmactl/args.h"
#include "cli/vmactl/render.h"

struct args_case {
	const char *argv[10];
	const char *env;
	int rc;
	const char *msg; /* substring of the usage error */
	enum ctl_command cmd;
	const char *vm, *socket;
};

static const struct args_case cases[] = {
	{ { "status" }, NULL, 0, NULL, CTL_STATUS, NULL, CTL_SOCKET_DEFAULT },
	{ { "status", "--json" }, "/run/x.sock", 0, NULL, CTL_STATUS, NULL, "/run/x.sock" },
	{ { "--socket", "/s", "status" }, "/run/x.sock", 0, NULL, CTL_STATUS, NULL, "/s" },
	{ { "--socket=/t", "show", "vm-1" }, NULL, 0, NULL, CTL_SHOW, "vm-1", "/t" },
	{ { "set", "vm-1", "--min-cpu", "500m", "--max-cpu=2" },
	  NULL,
	  0,
	  NULL,
	  CTL_SET,
	  "vm-1",
	  NULL },
	{ { "set", "vm-1", "--max-mem", "2Gi" }, NULL, 0, NULL, CTL_SET, "vm-1", NULL },
	{ { "set", "vm-1", "--min-memory", "512Mi" }, NULL, 0, NULL, CTL_SET, "vm-1", NULL },
	{ { "pause", "vm-1" }, NULL, 0, NULL, CTL_PAUSE, "vm-1", NULL },
	{ { "resume", "--", "-odd-name" }, NULL, 0, NULL, CTL_RESUME, "-odd-name", NULL },
	{ { "events", "--follow", "--since", "42" }, NULL, 0, NULL, CTL_EVENTS, NULL, NULL },
	{ { "events", "--vm", "a" }, NULL, 0, NULL, CTL_EVENTS, "a", NULL },
	{ { "top", "--iterations", "3" }, NULL, 0, NULL, CTL_TOP, NULL, NULL },
	{ { "show", "--help" }, NULL, 0, NULL, CTL_SHOW, NULL, NULL },
	{ { "--help" }, NULL, 0, NULL, CTL_NONE, NULL, NULL },
	{ { NULL }, NULL, -EINVAL, "no command given", CTL_NONE, NULL, NULL },
	{ { "frobnicate" }, NULL, -EINVAL, "unknown command 'frobnicate'", CTL_NONE, NULL, NULL },
	{ { "status", "--bogus" },
	  NULL,
	  -EINVAL,
	  "unknown option '--bogus'",
	  CTL_STATUS,
	  NULL,
	  NULL },
	{ { "show" }, NULL, -EINVAL, "show: which VM?", CTL_SHOW, NULL, NULL },
	{ { "pause", "a", "b" }, NULL, -EINVAL, "pause: one VM only", CTL_PAUSE, NULL, NULL },
	{ { "status", "extra" },
	  NULL,
	  -EINVAL,
	  "unexpected argument 'extra'",
	  CTL_STATUS,
	  NULL,
	  NULL },
	{ { "set", "vm-1" }, NULL, -EINVAL, "nothing to set", CTL_SET, NULL, NULL },
	{ { "set", "vm-1", "--min-cpu", "2x" }, NULL, -EINVAL, "--min-cpu", CTL_SET, NULL, NULL },
	{ { "set", "vm-1", "--max-mem", "0" }, NULL, -EINVAL, "--max-mem", CTL_SET, NULL, NULL },
	{ { "set", "vm-1", "--min-cpu" },
	  NULL,
	  -EINVAL,
	  "--min-cpu needs a value",
	  CTL_SET,
	  NULL,
	  NULL },
	{ { "status", "--min-cpu", "1" }, NULL, -EINVAL, "options of `set`", CTL_STATUS, NULL, NULL },
	{ { "status", "--follow" }, NULL, -EINVAL, "options of `events`", CTL_STATUS, NULL, NULL },
	{ { "events", "--since", "-1" }, NULL, -EINVAL, "--since", CTL_EVENTS, NULL, NULL },
	{ { "status", "--iterations", "2" },
	  NULL,
	  -EINVAL,
	  "option of `top`",
	  CTL_STATUS,
	  NULL,
	  NULL },
	{ { "status", "--socket=" }, NULL, -EINVAL, "--socket: empty value", CTL_STATUS, NULL, NULL },
	{ { "check", "vm-1", "--fix" }, NULL, 0, NULL, CTL_CHECK, "vm-1", NULL },
	{ { "enable", "vm-1", "--fix" },
	  NULL,
	  -EINVAL,
	  "--fix is an option of `check`",
	  CTL_ENABLE,
	  NULL,
	  NULL },
	/* Recommend mode: set --mode, enable --recommend. */
	{ { "set", "vm-1", "--mode", "recommend" }, NULL, 0, NULL, CTL_SET, "vm-1", NULL },
	{ { "set", "vm-1", "--mode=active", "--max-cpu", "2" },
	  NULL,
	  0,
	  NULL,
	  CTL_SET,
	  "vm-1",
	  NULL },
	{ { "enable", "vm-1", "--recommend" }, NULL, 0, NULL, CTL_ENABLE, "vm-1", NULL },
	{ { "set", "vm-1", "--mode", "off" },
	  NULL,
	  -EINVAL,
	  "--mode: 'off' is not recommend or active",
	  CTL_SET,
	  NULL,
	  NULL },
	{ { "enable", "vm-1", "--mode", "recommend" },
	  NULL,
	  -EINVAL,
	  "--mode is an option of `set`",
	  CTL_ENABLE,
	  NULL,
	  NULL },
	{ { "set", "vm-1", "--recommend" },
	  NULL,
	  -EINVAL,
	  "--recommend is an option of `enable`",
	  CTL_SET,
	  NULL,
	  NULL },
	/* Migration: set and enable take --migration and --no-migration. */
	{ { "set", "vm-1", "--migration" }, NULL, 0, NULL, CTL_SET, "vm-1", NULL },
	{ { "set", "vm-1", "--no-migration", "--max-cpu", "2" },
	  NULL,
	  0,
	  NULL,
	  CTL_SET,
	  "vm-1",
	  NULL },
	{ { "enable", "vm-1", "--migration" }, NULL, 0, NULL, CTL_ENABLE, "vm-1", NULL },
	{ { "set", "vm-1", "--migration", "--no-migration" },
	  NULL,
	  -EINVAL,
	  "--migration and --no-migration together",
	  CTL_SET,
	  NULL,
	  NULL },
	{ { "show", "vm-1", "--migration" },
	  NULL,
	  -EINVAL,
	  "--migration and --no-migration are options of `set` and `enable`",
	  CTL_SHOW,
	  NULL,
	  NULL },
	{ { "check", "vm-1", "--no-migration" },
	  NULL,
	  -EINVAL,
	  "are options of `set` and `enable`",
	  CTL_CHECK,
	  NULL,
	  NULL },
};

static void args_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct args_case *c = &cases[i];
		char *argv[12] = { (char *)"vmactl" };
		struct vmact_err err = { 0 };
		struct ctl_args a;
		int argc = 1, r;

		for (; c->argv[argc - 1]; argc++)
			argv[argc] = (char *)c->argv[argc - 1];
		r = ctl_args_parse(argc, argv, c->env, &a, &err);
		if (r != c->rc)
			fail_msg("case %zu (%s): rc %d, want %d (%s)", i, c->argv[0], r, c->rc,
				 err.msg);
		if (r < 0) {
			if (!strstr(err.msg, c->msg))
				fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, c->msg);
			continue;
		}
		assert_int_equal(a.cmd, c->cmd);
		if (c->vm)
			assert_string_equal(a.vm, c->vm);
		if (c->socket)
			assert_string_equal(a.socket, c->socket);
	}
	{
		char *argv[] = { "vmactl", "set", "db", "--mode", "recommend" };
		char *en[] = { "vmactl", "enable", "db", "--recommend" };
		struct vmact_err err = { 0 };
		struct ctl_args a;

		assert_int_equal(ctl_args_parse(5, argv, NULL, &a, &err), 0);
		assert_string_equal(a.mode, "recommend");
		assert_false(a.recommend);
		assert_int_equal(ctl_args_parse(4, en, NULL, &a, &err), 0);
		assert_true(a.recommend);
		assert_null(a.mode);
		assert_false(a.set_migration);
	}
	{
		char *on[] = { "vmactl", "enable", "db", "--migration" };
		char *off[] = { "vmactl", "set", "db", "--no-migration", "--no-migration" };
		struct vmact_err err = { 0 };
		struct ctl_args a;

		assert_int_equal(ctl_args_parse(4, on, NULL, &a, &err), 0);
		assert_true(a.set_migration && a.migration);
		/* Said twice the same way: once. */
		assert_int_equal(ctl_args_parse(5, off, NULL, &a, &err), 0);
		assert_true(a.set_migration && !a.migration);
	}
}

static void args_values(void **state)
{
	char *argv[] = { "vmactl",    "set", "db",           "--min-cpu", "500m",  "--max-cpu=2",
			 "--min-mem", "1Gi", "--max-memory", "4Gi",       "--json" };
	char *ev[] = { "vmactl", "events", "-f", "--since=7" };
	struct vmact_err err = { 0 };
	struct ctl_args a;

	(void)state;
	assert_int_equal(ctl_args_parse(11, argv, NULL, &a, &err), 0);
	assert_string_equal(a.min_cpu, "500m");
	assert_string_equal(a.max_cpu, "2");
	assert_string_equal(a.min_mem, "1Gi");
	assert_string_equal(a.max_mem, "4Gi");
	assert_true(a.json);
	assert_int_equal(ctl_args_parse(4, ev, NULL, &a, &err), 0);
	assert_true(a.follow);
	assert_true(a.has_since);
	assert_int_equal(a.since, 7);
}

static char *render(void (*fn)(FILE *, const json_t *), const char *json_text)
{
	json_t *doc = json_loads(json_text, 0, NULL);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	assert_non_null(doc);
	fn(m, doc);
	fclose(m);
	json_decref(doc);
	return text;
}

static void ctl_render_fixes_f(FILE *f, const json_t *c)
{
	ctl_render_fixes(f, c);
}

static void status_wide(FILE *f, const json_t *vms)
{
	ctl_render_status(f, vms, 0);
}

static void status_narrow(FILE *f, const json_t *vms)
{
	ctl_render_status(f, vms, 40);
}

#define VM_JSON                                                                               \
	"{\"name\":\"db-1\",\"state\":\"managed\",\"vcpus\":2,\"quota_milli_cpu\":1250,"      \
	"\"mem_bytes\":1073741824,\"load1\":1.5,\"demand\":{\"class\":\"saturated\","         \
	"\"busy\":0.98,\"cpus\":1.9,\"goal_milli_cpu\":2000},\"permit\":{\"milli_cpu\":2000," \
	"\"mem_bytes\":2147483648},\"desired\":null,\"last_change\":null}"

static void render_views(void **state)
{
	char *t, *line2;

	(void)state;
	t = render(status_wide, "[" VM_JSON ",{\"name\":\"bad\",\"state\":\"not-managed\","
				"\"reason\":\"vmact metadata: broken\"}]");
	assert_non_null(strstr(t, "VM "));
	assert_non_null(strstr(t, "LAST CHANGE"));
	line2 = strchr(t, '\n') + 1;
	assert_true(strncmp(line2, "db-1 ", 5) == 0);
	assert_non_null(strstr(line2, " managed "));
	assert_non_null(strstr(line2, "1250m"));
	assert_non_null(strstr(line2, "1Gi"));
	assert_non_null(strstr(line2, "1.50"));
	assert_non_null(strstr(line2, "saturated 98%"));
	assert_non_null(strstr(line2, "2/2Gi"));
	assert_non_null(strstr(t, "bad                  not-managed vmact metadata: broken"));
	free(t);
	/* Cut to the terminal's width (top). */
	t = render(status_narrow, "[" VM_JSON "]");
	for (char *l = t; *l; l = strchr(l, '\n') + 1)
		assert_true(strchr(l, '\n') - l <= 40);
	free(t);
	t = render(
		ctl_render_show,
		"{\"name\":\"db-1\",\"uuid\":\"u\",\"state\":\"paused\",\"vcpus\":2,"
		"\"bounds\":{\"min\":{\"milli_cpu\":250,\"mem_bytes\":536870912},"
		"\"max\":{\"milli_cpu\":4000,\"mem_bytes\":2147483648}},"
		"\"policy\":{\"cpu\":\"reactive\",\"shrink\":\"quota\",\"source\":\"host\","
		"\"load_target\":0.9,\"mem_usage_target\":0.75,\"load1\":null,\"load5\":null},"
		"\"scheduler\":{\"kind\":\"arbiter\",\"url\":null,\"request_pending\":false},"
		"\"monitor\":{\"kind\":\"none\",\"endpoint\":null,\"connected\":false},"
		"\"decisions\":[{\"seq\":3,\"time\":1700000000.5,\"vm\":\"db-1\",\"kind\":\"decision\","
		"\"text\":\"grow to 2 vCPUs (2.000 CPU): vCPUs 98 % busy for 0.4 s\",\"fields\":{}}]}");
	assert_non_null(strstr(t, "State:       paused"));
	assert_non_null(strstr(t, "Bounds:      min 250m/512Mi, max 4/2Gi"));
	assert_non_null(strstr(t, "Scheduler:   arbiter"));
	assert_non_null(strstr(t, "Monitor:     none"));
	assert_non_null(
		strstr(t, "#3 db-1 decision: grow to 2 vCPUs (2.000 CPU): vCPUs 98 % busy"));
	free(t);
	/* check --fix: one command per part (the same one once over both
	 * layouts), under a comment marking it live or cold. */
	t = render(
		ctl_render_fixes_f,
		"{\"name\":\"db-3\",\"active\":true,\"live\":{\"items\":["
		"{\"part\":\"numa\",\"text\":\"no NUMA cell\",\"fix\":{\"command\":"
		"\"virt-xml db-3 --edit --cpu numa.cell0.id=0\",\"cold_restart\":true}},"
		"{\"part\":\"memory-stats\",\"text\":\"memory: stays at its size\",\"fix\":"
		"{\"command\":\"virsh dommemstat db-3 --period 1 --live\",\"cold_restart\":false}},"
		"{\"part\":\"vcpus\",\"text\":\"ok\",\"fix\":null}]},"
		"\"definition\":{\"items\":[{\"part\":\"numa\",\"text\":\"no NUMA cell\","
		"\"fix\":{\"command\":\"virt-xml db-3 --edit --cpu numa.cell0.id=0\","
		"\"cold_restart\":true}}]}}");
	assert_non_null(strstr(t, "# [cold restart] numa: no NUMA cell\n"
				  "virt-xml db-3 --edit --cpu numa.cell0.id=0\n"));
	assert_non_null(strstr(t, "# [live] memory-stats: memory: stays at its size\n"
				  "virsh dommemstat db-3 --period 1 --live\n"));
	assert_null(strstr(strstr(t, "numa.cell0.id=0\n") + 1, "numa.cell0.id=0\n"));
	assert_non_null(strstr(t, "# then a cold restart: virsh shutdown db-3"));
	free(t);
	/* The hook: restart libvirtd, said below the table. */
	t = render(ctl_render_hook, "{\"installed\":true,\"restart_libvirtd\":true,"
				    "\"unannounced_start\":{\"vm\":\"db-4\",\"time\":1.5}}");
	assert_non_null(strstr(t, "libvirtd started db-4 without running vmact's hook"));
	assert_non_null(strstr(t, "systemctl restart libvirtd"));
	free(t);
	t = render(ctl_render_hook, "{\"installed\":true,\"restart_libvirtd\":false,"
				    "\"unannounced_start\":null}");
	assert_string_equal(t, "");
	free(t);
	/* Recommend mode: the MODE column, and show's recommendation. */
	t = render(status_wide,
		   "[{\"name\":\"db-2\",\"state\":\"managed\",\"mode\":\"recommend\","
		   "\"vcpus\":1,\"desired\":{\"milli_cpu\":2000,\"mem_bytes\":1073741824}}]");
	assert_non_null(strstr(t, " MODE "));
	line2 = strchr(t, '\n') + 1;
	assert_non_null(strstr(line2, " managed     recommend "));
	assert_non_null(strstr(line2, "2/1Gi"));
	free(t);
	t = render(ctl_render_show,
		   "{\"name\":\"db-2\",\"uuid\":\"u\",\"state\":\"managed\",\"mode\":\"recommend\","
		   "\"vcpus\":1,\"using\":{\"milli_cpu\":1000,\"mem_bytes\":1073741824},"
		   "\"recommended\":{\"milli_cpu\":2000,\"mem_bytes\":1073741824}}");
	assert_non_null(strstr(t, "Mode:        recommend (decisions are reported"));
	assert_non_null(strstr(t, "Recommended: 2/1Gi (runs with 1/1Gi; not applied)"));
	assert_null(strstr(t, "Migration:"));
	free(t);
	/* The migration setting, in show and in check. */
	t = render(ctl_render_show,
		   "{\"name\":\"db-5\",\"uuid\":\"u\",\"state\":\"managed\",\"vcpus\":1,"
		   "\"migration\":{\"enabled\":true}}");
	assert_non_null(strstr(t, "Migration:   on (vmact may move it to another host)"));
	free(t);
	t = render(ctl_render_check,
		   "{\"name\":\"db-5\",\"uuid\":\"u\",\"active\":true,\"persistent\":true,"
		   "\"metadata\":\"valid\",\"bounds_from\":\"metadata\",\"method\":\"virtio-mem\","
		   "\"ready\":true,\"live\":null,\"definition\":null,"
		   "\"migration\":{\"enabled\":false}}");
	assert_non_null(strstr(t, "Migration:   off (it stays on this host)"));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(args_table),
		cmocka_unit_test(args_values),
		cmocka_unit_test(render_views),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
