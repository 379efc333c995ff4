/* SPDX-License-Identifier: Apache-2.0 */
/* The one cpu.stat reader (base/cpustat.c): v1 and v2 texts, what it
 * refuses, reading a file, and the per-window delta. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/cpustat.h"
#include "base/macro.h"

/* Field by field: padding after version need not match. */
static bool same(const struct vmact_cpustat *a, const struct vmact_cpustat *b)
{
	return a->version == b->version && a->nr_periods == b->nr_periods &&
	       a->nr_throttled == b->nr_throttled && a->throttled_ns == b->throttled_ns &&
	       a->nr_bursts == b->nr_bursts && a->burst_ns == b->burst_ns &&
	       a->has_usage == b->has_usage && a->usage_ns == b->usage_ns;
}

struct parse_case {
	const char *text;
	int code;           /* 0, or the errno expected */
	const char *needle; /* the error names this */
	struct vmact_cpustat want;
};

#define V1_OK   "nr_periods 101\nnr_throttled 89\nthrottled_time 5256826009\n"
#define V2_HEAD "usage_usec 10\nuser_usec 5\nsystem_usec 5\n"

static const struct parse_case parse_cases[] = {
	{ V1_OK "nr_bursts 2\nburst_time 4000\n",
	  0,
	  NULL,
	  { .version = 1,
	    .nr_periods = 101,
	    .nr_throttled = 89,
	    .throttled_ns = 5256826009ULL,
	    .nr_bursts = 2,
	    .burst_ns = 4000 } },
	{ V1_OK,
	  0,
	  NULL,
	  { .version = 1, .nr_periods = 101, .nr_throttled = 89, .throttled_ns = 5256826009ULL } },
	/* v2 in µs, no final newline, newer keys in between */
	{ V2_HEAD "core_sched.force_idle_usec 0\nnr_periods 7\nnr_throttled 3\n"
		  "throttled_usec 1500\nnr_bursts 1\nburst_usec 20",
	  0,
	  NULL,
	  { .version = 2,
	    .nr_periods = 7,
	    .nr_throttled = 3,
	    .throttled_ns = 1500000,
	    .nr_bursts = 1,
	    .burst_ns = 20000,
	    .has_usage = true,
	    .usage_ns = 10000 } },
	/* empty lines and unknown keys of any shape are skipped */
	{ "\nodd\n" V1_OK "\n",
	  0,
	  NULL,
	  { .version = 1, .nr_periods = 101, .nr_throttled = 89, .throttled_ns = 5256826009ULL } },
	{ "", EPROTO, "nr_periods: missing", { 0 } },
	{ "nr_periods 1\nthrottled_time 2\n", EPROTO, "nr_throttled: missing", { 0 } },
	{ "nr_periods 1\nnr_throttled 2\n", EPROTO, "throttled_time/throttled_usec", { 0 } },
	/* v2 group without the cpu controller: usage only */
	{ V2_HEAD, EPROTO, "nr_periods: missing", { 0 } },
	{ "nr_periods 1\nnr_throttled 2\nthrottled_usec 3\n", EPROTO, "usage_usec: missing", { 0 } },
	{ V1_OK "throttled_usec 3\n", EPROTO, "both", { 0 } },
	{ V1_OK "usage_usec 3\n", EPROTO, "usage_usec", { 0 } },
	{ V2_HEAD "nr_periods 1\nnr_throttled 2\nthrottled_usec 3\nburst_time 4\n",
	  EPROTO,
	  "burst_time",
	  { 0 } },
	{ V1_OK "nr_periods 5\n", EPROTO, "nr_periods: appears twice", { 0 } },
	{ "nr_periods -1\nnr_throttled 2\nthrottled_time 3\n", EPROTO, "nr_periods", { 0 } },
	{ "nr_periods 1\nnr_throttled 2x\nthrottled_time 3\n", EPROTO, "nr_throttled", { 0 } },
	{ "nr_periods 1\nnr_throttled\nthrottled_time 3\n", EPROTO, "nr_throttled", { 0 } },
	{ "nr_periods 1\nnr_throttled 2\nthrottled_time \n", EPROTO, "throttled_time", { 0 } },
	{ "nr_periods 1\nnr_throttled 2\nthrottled_time  3\n", EPROTO, "throttled_time", { 0 } },
	{ "nr_periods 1\r\nnr_throttled 2\nthrottled_time 3\n", EPROTO, "nr_periods", { 0 } },
	{ "nr_periods 99999999999999999999\nnr_throttled 2\nthrottled_time 3\n",
	  ERANGE,
	  "nr_periods",
	  { 0 } },
	/* µs that overflow when scaled to ns */
	{ V2_HEAD "nr_periods 1\nnr_throttled 2\nthrottled_usec 18446744073709552\n",
	  ERANGE,
	  "throttled_usec",
	  { 0 } },
	{ "nr_periods 18446744073709551615\nnr_throttled 0\nthrottled_time 0\n",
	  0,
	  NULL,
	  { .version = 1, .nr_periods = UINT64_MAX } },
};

static void test_parse(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct vmact_cpustat st;
		struct vmact_err err = { 0 };
		int r = vmact_cpustat_parse(c->text, &st, &err);

		if (r != -c->code)
			fail_msg("case %zu: returned %d, want %d (%s)", i, r, -c->code, err.msg);
		if (c->code) {
			if (!strstr(err.msg, c->needle))
				fail_msg("case %zu: error \"%s\" does not name \"%s\"", i, err.msg,
					 c->needle);
			continue;
		}
		if (!same(&st, &c->want))
			fail_msg("case %zu: fields differ (periods %llu throttled %llu ns %llu)", i,
				 (unsigned long long)st.nr_periods,
				 (unsigned long long)st.nr_throttled,
				 (unsigned long long)st.throttled_ns);
	}
}

static char tmpdir[64];

static void put_stat(const char *text, size_t len)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/cpu.stat", tmpdir);
	FILE *f = fopen(p, "we");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_read(void **state)
{
	struct vmact_cpustat st;
	struct vmact_err err = { 0 };
	char p[128];

	assert_int_equal(vmact_cpustat_read("/nonexistent-vmact", &st, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent-vmact/cpu.stat"));

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/vmact-cpustat-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	put_stat(V1_OK, strlen(V1_OK));
	assert_int_equal(vmact_cpustat_read(tmpdir, &st, NULL), 0);
	assert_int_equal(st.throttled_ns, 5256826009ULL);

	/* errors name the file */
	vmact_err_reset(&err);
	put_stat("nr_periods x\n", 13);
	assert_int_equal(vmact_cpustat_read(tmpdir, &st, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "/cpu.stat: cpu.stat: nr_periods"));

	/* a NUL would hide what follows it */
	vmact_err_reset(&err);
	put_stat(V1_OK "\0x", sizeof(V1_OK) + 1);
	assert_int_equal(vmact_cpustat_read(tmpdir, &st, &err), -EPROTO);

	/* size-bounded: a file that fills the buffer is refused, not cut */
	_cleanup_free_ char *big = malloc(VMACT_CPUSTAT_MAX + 16);
	assert_non_null(big);
	memset(big, '\n', VMACT_CPUSTAT_MAX + 16);
	memcpy(big, V1_OK, strlen(V1_OK));
	vmact_err_reset(&err);
	put_stat(big, VMACT_CPUSTAT_MAX);
	assert_int_equal(vmact_cpustat_read(tmpdir, &st, &err), -EFBIG);
	put_stat(big, VMACT_CPUSTAT_MAX - 1);
	assert_int_equal(vmact_cpustat_read(tmpdir, &st, NULL), 0);

	snprintf(p, sizeof(p), "%s/cpu.stat", tmpdir);
	unlink(p);
	rmdir(tmpdir);
}

/* The sampler's reader: the file stays open and is re-read from its start
 * each time (a change shows through the same descriptor); a descriptor
 * that no longer reads is replaced by a fresh open; a file that cannot be
 * opened leaves none. */
static void test_read_cached(void **state)
{
	struct vmact_cpustat st;
	struct vmact_err err = { 0 };
	char p[128];
	struct stat sb;
	int fd = -1, was;

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/vmact-cpustat-XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	put_stat(V1_OK, strlen(V1_OK));
	assert_int_equal(vmact_cpustat_read_cached(tmpdir, &fd, &st, NULL), 0);
	assert_true(fd >= 0);
	assert_int_equal(st.nr_periods, 101);
	assert_int_equal(st.throttled_ns, 5256826009ULL);
	was = fd;

	/* rewritten in place (a cgroup's counters move): the same
	 * descriptor reads the new text, from its start */
	put_stat("nr_periods 102\nnr_throttled 90\nthrottled_time 6\n", 48);
	assert_int_equal(vmact_cpustat_read_cached(tmpdir, &fd, &st, NULL), 0);
	assert_int_equal(fd, was);
	assert_int_equal(st.nr_periods, 102);
	assert_int_equal(st.nr_throttled, 90);
	assert_int_equal(st.throttled_ns, 6);
	assert_int_equal(vmact_cpustat_read_cached(tmpdir, &fd, &st, NULL), 0);
	assert_int_equal(st.nr_periods, 102);

	/* a descriptor that fails to read (as a removed group's file does)
	 * is dropped and the file opened again */
	close(fd);
	fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(vmact_cpustat_read_cached(tmpdir, &fd, &st, NULL), 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_true(S_ISREG(sb.st_mode)); /* the file, not the directory */
	assert_int_equal(st.nr_periods, 102);

	/* Past VMACT_CPUSTAT_KEEP_FD_MAX descriptors the file is read and
	 * closed: a host with many VMs keeps room for vmactd's sockets. */
	{
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, VMACT_CPUSTAT_KEEP_FD_MAX);
		int low[VMACT_CPUSTAT_KEEP_FD_MAX], n = 0, kept = -1;

		/* (a soft limit of 512 descriptors or fewer: nothing to see) */
		if (hi < 0)
			goto past;
		close(hi);
		/* every number below the bound taken, so the next open gets hi */
		while (n < VMACT_CPUSTAT_KEEP_FD_MAX) {
			int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);

			if (d < 0 || d >= VMACT_CPUSTAT_KEEP_FD_MAX) {
				if (d >= 0)
					close(d);
				break;
			}
			low[n++] = d;
		}
		assert_int_equal(vmact_cpustat_read_cached(tmpdir, &kept, &st, NULL), 0);
		assert_int_equal(kept, -1);
		assert_int_equal(st.nr_periods, 102);
		assert_int_equal(fcntl(hi, F_GETFD), -1); /* opened and closed */
		for (int i = 0; i < n; i++)
			close(low[i]);
	}
past:
	assert_true(fcntl(fd, F_GETFD) >= 0);

	/* a bad text: the error names the file, no descriptor kept */
	put_stat("nr_periods x\n", 13);
	assert_int_equal(vmact_cpustat_read_cached(tmpdir, &fd, &st, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "/cpu.stat: cpu.stat: nr_periods"));
	assert_int_equal(fd, -1);

	/* gone: the open's error, nothing kept */
	snprintf(p, sizeof(p), "%s/cpu.stat", tmpdir);
	unlink(p);
	vmact_err_reset(&err);
	assert_int_equal(vmact_cpustat_read_cached(tmpdir, &fd, &st, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/cpu.stat"));
	assert_int_equal(fd, -1);
	rmdir(tmpdir);
}

struct delta_case {
	struct vmact_cpustat prev, cur;
	int restarted;
	struct vmact_cpustat want;
};

static const struct delta_case delta_cases[] = {
	{ { 2, 10, 4, 1000, 0, 0, true, 5000 },
	  { 2, 60, 30, 9000, 1, 20, true, 30000 },
	  0,
	  { 2, 50, 26, 8000, 1, 20, true, 25000 } },
	/* usage only when both samples have it */
	{ { 2, 10, 4, 1000, 0, 0, true, 5000 },
	  { 2, 60, 30, 9000, 1, 20, false, 0 },
	  0,
	  { 2, 50, 26, 8000, 1, 20, false, 0 } },
	{ { 1, 10, 4, 1000, 0, 0, false, 0 },
	  { 1, 10, 4, 1000, 0, 0, true, 7 },
	  0,
	  { 1, 0, 0, 0, 0, 0, false, 0 } },
	/* group recreated: counters restart and the delta counts from there */
	{ { 2, 60, 30, 9000, 1, 20, true, 30000 },
	  { 2, 3, 1, 100, 0, 0, true, 200 },
	  1,
	  { 2, 3, 1, 100, 0, 0, true, 200 } },
	{ { 2, 60, 30, 9000, 1, 20, true, 30000 },
	  { 2, 100, 31, 9000, 1, 20, true, 200 },
	  1,
	  { 2, 100, 31, 9000, 1, 20, true, 200 } },
	{ { 1, 60, 30, 9000, 0, 0, false, 0 },
	  { 1, 61, 30, 8999, 0, 0, false, 0 },
	  1,
	  { 1, 61, 30, 8999, 0, 0, false, 0 } },
	{ { 1, 60, 30, 9000, 5, 0, false, 0 },
	  { 1, 61, 30, 9000, 4, 0, false, 0 },
	  1,
	  { 1, 61, 30, 9000, 4, 0, false, 0 } },
};

static void test_delta(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(delta_cases); i++) {
		const struct delta_case *c = &delta_cases[i];
		struct vmact_cpustat d;

		if (vmact_cpustat_delta(&c->prev, &c->cur, &d) != c->restarted)
			fail_msg("case %zu: restart not %d", i, c->restarted);
		if (!same(&d, &c->want))
			fail_msg("case %zu: periods %llu throttled %llu ns %llu usage %llu", i,
				 (unsigned long long)d.nr_periods,
				 (unsigned long long)d.nr_throttled,
				 (unsigned long long)d.throttled_ns,
				 (unsigned long long)d.usage_ns);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_read_cached),
		cmocka_unit_test(test_delta),
	};

	return cmocka_run_group_tests_name("cpustat", tests, NULL, NULL);
}
