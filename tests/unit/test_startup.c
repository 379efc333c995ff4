/* SPDX-License-Identifier: Apache-2.0 */
/* The start-up the server programs share (shared/startup.c): the command
 * line's --help, --version and usage errors around a program's own
 * options, and the loop whose stop and reload signals reach it. The
 * programs' own command lines are tested through them (test_arbiter_http's
 * test_cli, check-cli-docs.sh). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/macro.h"
#include "shared/startup.h"
#include "tests/lib/file.h"

enum { OPT_SIZE = 256 };

static const struct option options[] = {
	{ "name", required_argument, NULL, 'n' },
	{ "size", required_argument, NULL, OPT_SIZE },
	VMACT_STARTUP_OPTIONS_END,
};

static const char usage[] = "Usage: prog [OPTIONS]\n  -n, --name NAME\n";

/* What the fake program's options saw. */
struct seen {
	char calls[256];
};

static int on_option(void *ud, int opt, char *arg)
{
	struct seen *s = ud;
	size_t n = strlen(s->calls);

	if (opt == OPT_SIZE && strcmp(arg, "huge") == 0) {
		fprintf(stderr, "prog: --size %s: too large\n", arg);
		return 2;
	}
	snprintf(s->calls + n, sizeof(s->calls) - n, "%s%c=%s", n ? " " : "",
		 opt == OPT_SIZE ? 's' : opt, arg);
	return 0;
}

struct run {
	int status;
	struct seen seen;
	char *out, *err;
};

/* vmact_startup_parse on argv (NULL-terminated, without argv[0]), its
 * stdout and stderr caught in files. */
static void parse(struct run *r, ...)
{
	char *argv[16] = { "prog" };
	char out[] = "/tmp/test_startup.out.XXXXXX", err[] = "/tmp/test_startup.err.XXXXXX";
	int argc = 1, fo = mkstemp(out), fe = mkstemp(err), so = dup(1), se = dup(2);
	va_list ap;

	assert_true(fo >= 0 && fe >= 0 && so >= 0 && se >= 0);
	va_start(ap, r);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	memset(r, 0, sizeof(*r));
	fflush(stdout);
	fflush(stderr);
	dup2(fo, 1);
	dup2(fe, 2);
	/* getopt's full reset: every case reads its own command line */
	optind = 0;
	r->status = vmact_startup_parse(argc, argv, "prog", usage, "n:h", options, on_option,
					&r->seen);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	close(fo);
	close(fe);
	r->out = th_read_file(out);
	r->err = th_read_file(err);
	assert_non_null(r->out);
	assert_non_null(r->err);
	unlink(out);
	unlink(err);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static void test_options_reach_the_program(void **state)
{
	struct run r;

	parse(&r, "-n", "a", "--size", "3", "--name=b", NULL);
	assert_int_equal(r.status, VMACT_STARTUP_RUN);
	assert_string_equal(r.seen.calls, "n=a s=3 n=b");
	assert_string_equal(r.out, "");
	assert_string_equal(r.err, "");
	run_free(&r);
}

static void test_help_and_version(void **state)
{
	struct run r;

	parse(&r, "-n", "a", "--help", "--size", "3", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, usage);
	/* the reading ends at --help */
	assert_string_equal(r.seen.calls, "n=a");
	run_free(&r);

	parse(&r, "-h", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, usage);
	run_free(&r);

	parse(&r, "--version", NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(strncmp(r.out, "prog ", 5), 0);
	assert_non_null(strchr(r.out + 5, '\n'));
	assert_string_equal(r.err, "");
	run_free(&r);
}

static void test_usage_errors(void **state)
{
	struct run r;

	parse(&r, "--bogus", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.out, "");
	/* getopt's complaint, then the hint */
	assert_non_null(strstr(r.err, "--bogus"));
	assert_non_null(strstr(r.err, "\nTry 'prog --help'.\n"));
	run_free(&r);

	parse(&r, "--name", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "Try 'prog --help'.\n"));
	run_free(&r);

	parse(&r, "-n", "a", "extra", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "prog: unexpected argument extra\nTry 'prog --help'.\n");
	run_free(&r);
}

static void test_option_status_ends_reading(void **state)
{
	struct run r;

	parse(&r, "--size", "huge", "-n", "a", NULL);
	assert_int_equal(r.status, 2);
	assert_string_equal(r.err, "prog: --size huge: too large\n");
	assert_string_equal(r.seen.calls, "");
	run_free(&r);
}

static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	*(int *)ud = (int)si->ssi_signo;
	return sd_event_exit(sd_event_source_get_event(s), 5);
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	++*(int *)ud;
	return sd_event_exit(sd_event_source_get_event(s), 7);
}

/* The default stop leaves the loop with 0; SIGPIPE is ignored. */
static void test_loop_default_stop(void **state)
{
	struct vmact_err err = { 0 };
	struct sigaction sa;
	sd_event *ev = NULL;

	assert_int_equal(vmact_startup_loop(&ev, NULL, NULL, NULL, NULL, &err), 0);
	assert_int_equal(sigaction(SIGPIPE, NULL, &sa), 0);
	assert_true(sa.sa_handler == SIG_IGN);
	/* blocked: pending until the loop's signalfd reads it */
	assert_int_equal(raise(SIGTERM), 0);
	assert_int_equal(sd_event_loop(ev), 0);
	sd_event_unref(ev);
}

static void test_loop_stop_and_reload(void **state)
{
	struct vmact_err err = { 0 };
	int stopped = 0, reloads = 0;
	sd_event *ev = NULL;

	assert_int_equal(vmact_startup_loop(&ev, on_stop, &stopped, on_reload, &reloads, &err), 0);
	assert_int_equal(raise(SIGHUP), 0);
	assert_int_equal(sd_event_loop(ev), 7);
	assert_int_equal(reloads, 1);
	assert_int_equal(stopped, 0);
	sd_event_unref(ev);

	assert_int_equal(vmact_startup_loop(&ev, on_stop, &stopped, NULL, NULL, &err), 0);
	assert_int_equal(raise(SIGINT), 0);
	assert_int_equal(sd_event_loop(ev), 5);
	assert_int_equal(stopped, SIGINT);
	sd_event_unref(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_reach_the_program),
		cmocka_unit_test(test_help_and_version),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_option_status_ends_reading),
		cmocka_unit_test(test_loop_default_stop),
		cmocka_unit_test(test_loop_stop_and_reload),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
