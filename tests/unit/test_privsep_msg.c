/* SPDX-License-Identifier: Apache-2.0 */
/* The guest worker's message format (guestd/privsep.c,
 * doc/privsep.md): every record vmactd may get from a worker is checked
 * field by field; anything malformed, oversized or out of range is
 * refused with a message naming what is wrong. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "guestd/approver.h"
#include "guestd/privsep.h"

static int from_worker(const struct act_privsep_msg *m, struct vmact_err *err)
{
	struct act_privsep_msg out;

	memset(err, 0, sizeof(*err));
	return act_privsep_decode_from_worker(m, sizeof(*m), &out, err);
}

/* m refused with -code and a message containing `needle`. */
static void refused(const struct act_privsep_msg *m, int code, const char *needle)
{
	struct vmact_err err;

	assert_int_equal(from_worker(m, &err), -code);
	if (!strstr(err.msg, needle))
		fail_msg("'%s' does not say '%s'", err.msg, needle);
}

static void valid_worker_messages(void **state)
{
	const struct act_privsep_msg ok[] = {
		{ .type = ACT_PRIVSEP_PONG, .seq = 7 },
		{ .type = ACT_PRIVSEP_DONE, .seq = 3, .code = ACT_APPROVAL_OK },
		{ .type = ACT_PRIVSEP_DONE, .seq = 3, .code = ACT_APPROVAL_DENIED },
		{ .type = ACT_PRIVSEP_DONE, .seq = 3, .code = ACT_APPROVAL_FAILED },
		{ .type = ACT_PRIVSEP_CONNECTED },
		{ .type = ACT_PRIVSEP_LOST },
		{ .type = ACT_PRIVSEP_LOST, .flags = ACT_PRIVSEP_F_DROPPED },
		{ .type = ACT_PRIVSEP_CHANGED,
		  .flags = ACT_PRIVSEP_F_MAY_RESIZE | ACT_PRIVSEP_F_APPROVES },
		{ .type = ACT_PRIVSEP_UPSCALE, .flags = ACT_PRIVSEP_F_MEMORY },
		{ .type = ACT_PRIVSEP_UPSCALE, .flags = ACT_PRIVSEP_F_CPU | ACT_PRIVSEP_F_MEMORY },
		{ .type = ACT_PRIVSEP_DIAL },
		{ .type = ACT_PRIVSEP_LISTEN },
		{ .type = ACT_PRIVSEP_DIAL, .flags = ACT_PRIVSEP_F_LFC },
		/* the system figures: load 3.25 and 1.5, 1 GiB used, 512 MiB cached */
		{ .type = ACT_PRIVSEP_METRICS,
		  .seq = 4,
		  .mem_bytes = 1ULL << 30,
		  .spare = { 3250, 1500, 512ULL << 20, 0 } },
		{ .type = ACT_PRIVSEP_METRICS,
		  .seq = 4,
		  .spare = { ACT_PRIVSEP_MAX_LOAD_MILLI, 0, ACT_PRIVSEP_MAX_MEM_BYTES, 0 },
		  .mem_bytes = ACT_PRIVSEP_MAX_MEM_BYTES },
		/* the end of the LFC windows */
		{ .type = ACT_PRIVSEP_METRICS,
		  .seq = 5,
		  .flags = ACT_PRIVSEP_F_LFC,
		  .spare = { 3 } },
		{ .type = ACT_PRIVSEP_METRICS,
		  .seq = 5,
		  .flags = ACT_PRIVSEP_F_LFC,
		  .spare = { ACT_PRIVSEP_MAX_WINDOWS } },
		/* an error, with and without an HTTP status */
		{ .type = ACT_PRIVSEP_METRICS,
		  .seq = 6,
		  .code = -EBADMSG,
		  .spare = { 200 },
		  .text = "line 1: expected a metric name" },
		{ .type = ACT_PRIVSEP_METRICS,
		  .seq = 6,
		  .flags = ACT_PRIVSEP_F_LFC,
		  .code = -ECONNREFUSED,
		  .text = "connect to 10.0.0.2:9499: Connection refused" },
		{ .type = ACT_PRIVSEP_WINDOWS, .seq = 5, .spare = { 1000000, 2000000, 0, 7 } },
		{ .type = ACT_PRIVSEP_WINDOWS,
		  .seq = 5,
		  .spare = { ACT_PRIVSEP_MAX_PAGE_MILLI, 0, 0, ACT_PRIVSEP_MAX_PAGE_MILLI } },
	};
	struct vmact_err err;
	struct act_privsep_msg out;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(act_privsep_decode_from_worker(&ok[i], sizeof(ok[i]), &out, &err),
				 0);
		assert_memory_equal(&out, &ok[i], sizeof(out));
		assert_non_null(act_privsep_type_name(out.type));
		/* Never accepted as the other direction's. */
		assert_int_equal(act_privsep_decode_from_daemon(&ok[i], sizeof(ok[i]), &out, &err),
				 -EBADMSG);
	}
}

static void lengths(void **state)
{
	unsigned char buf[4096] = { 0 };
	struct act_privsep_msg *m = (struct act_privsep_msg *)buf;
	const size_t lens[] = { 0,          1, 12, sizeof(*m) - 1, sizeof(*m) + 1, 2 * sizeof(*m),
				sizeof(buf) };
	struct act_privsep_msg out;
	struct vmact_err err;

	(void)state;
	m->type = ACT_PRIVSEP_CONNECTED;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(act_privsep_decode_from_worker(buf, lens[i], &out, &err),
				 -EMSGSIZE);
		assert_non_null(strstr(err.msg, "bytes, not 192"));
	}
}

static void types(void **state)
{
	const unsigned unknown[] = { 0, 7, 15, 26, 29, 30, 100, 0xffff };
	const unsigned daemon[] = { ACT_PRIVSEP_PING,         ACT_PRIVSEP_REQUEST,
				    ACT_PRIVSEP_DIAL_REPLY,   ACT_PRIVSEP_SCRAPE,
				    ACT_PRIVSEP_LISTEN_REPLY, ACT_PRIVSEP_STOP };

	(void)state;
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		refused(&(struct act_privsep_msg){ .type = (uint16_t)unknown[i] }, EBADMSG,
			"unknown message type");
	for (size_t i = 0; i < sizeof(daemon) / sizeof(daemon[0]); i++)
		refused(&(struct act_privsep_msg){ .type = (uint16_t)daemon[i], .seq = 1 }, EBADMSG,
			"wrong direction");
}

static void fields(void **state)
{
	struct act_privsep_msg m;

	(void)state;
	/* Flags a type does not have. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_PONG, .flags = 1 }, EBADMSG,
		"unknown flags");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LOST, .flags = 2 }, EBADMSG,
		"unknown flags");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_CHANGED, .flags = 4 }, EBADMSG,
		"unknown flags");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_UPSCALE, .flags = 0x8000 }, EBADMSG,
		"unknown flags");
	/* Fields a type does not carry. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_CONNECTED, .seq = 1 }, EBADMSG,
		"seq set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_PONG, .code = 1 }, EBADMSG,
		"code set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_DIAL, .reserved = 1 }, EBADMSG,
		"reserved field set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_DIAL, .spare = { 0, 0, 0, 1 } },
		EBADMSG, "reserved field set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_DONE, .milli_cpu = 1 }, EBADMSG,
		"resources set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LOST, .mem_bytes = 1 }, EBADMSG,
		"resources set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_CONNECTED, .text = "hi" }, EBADMSG,
		"text set");
	/* LISTEN asks, and carries nothing. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LISTEN, .flags = 1 }, EBADMSG,
		"unknown flags");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LISTEN, .seq = 9 }, EBADMSG,
		"seq set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LISTEN, .code = -1 }, EBADMSG,
		"code set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LISTEN, .milli_cpu = 80 }, EBADMSG,
		"resources set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_LISTEN, .text = "0.0.0.0:22" },
		EBADMSG, "text set");
	/* Out of range. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_DONE, .code = 3 }, EBADMSG,
		"outcome 3");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_DONE, .code = -1 }, EBADMSG,
		"outcome -1");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_UPSCALE }, EBADMSG,
		"neither CPU nor memory");
	/* A text with no terminator. */
	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_CONNECTED };
	memset(m.text, 'a', sizeof(m.text));
	refused(&m, EBADMSG, "not terminated");
}

/* The guest's figures (METRICS, WINDOWS): every bound, every field a
 * kind or outcome does not carry. */
static void metrics_records(void **state)
{
	(void)state;
	/* Out of range: loads, memory, window counts, windows. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .spare = { ACT_PRIVSEP_MAX_LOAD_MILLI + 1 } },
		EBADMSG, "load");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .spare = { 0, UINT64_MAX } },
		EBADMSG, "load");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .mem_bytes = ACT_PRIVSEP_MAX_MEM_BYTES + 1 },
		EBADMSG, "mem_bytes");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .spare = { 0, 0, ACT_PRIVSEP_MAX_MEM_BYTES + 1 } },
		EBADMSG, "cached memory");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .spare = { 0, 0, 0, 1 } },
		EBADMSG, "reserved");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS, .seq = 1, .milli_cpu = 1 },
		EBADMSG, "milli_cpu");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .flags = ACT_PRIVSEP_F_LFC },
		EBADMSG, "0 LFC windows");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .flags = ACT_PRIVSEP_F_LFC,
					   .spare = { ACT_PRIVSEP_MAX_WINDOWS + 1 } },
		EBADMSG, "1441 LFC windows");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .flags = ACT_PRIVSEP_F_LFC,
					   .spare = { 3, 1000 } },
		EBADMSG, "system figures in an LFC answer");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .flags = ACT_PRIVSEP_F_LFC,
					   .spare = { 3 },
					   .mem_bytes = 1 },
		EBADMSG, "system figures in an LFC answer");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS, .seq = 1, .flags = 2 },
		EBADMSG, "unknown flags");
	/* Outcomes: -errno only, an error with its text and nothing else. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS, .seq = 1, .code = 1 },
		EBADMSG, "code 1 out of range");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .code = -5000,
					   .text = "x" },
		EBADMSG, "code -5000 out of range");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS, .seq = 1, .code = -EIO },
		EBADMSG, "without a text");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .code = -EIO,
					   .text = "x",
					   .spare = { 1000 } },
		EBADMSG, "HTTP status 1000");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .code = -EIO,
					   .text = "x",
					   .spare = { 99 } },
		EBADMSG, "HTTP status 99");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .code = -EIO,
					   .text = "x",
					   .spare = { 200, 3000 } },
		EBADMSG, "figures with an error");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS,
					   .seq = 1,
					   .code = -EIO,
					   .text = "x",
					   .mem_bytes = 1 },
		EBADMSG, "figures with an error");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_METRICS, .seq = 1, .text = "fine" },
		EBADMSG, "text set without an error");
	/* WINDOWS: seq and four windows only, each in range. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_WINDOWS,
					   .seq = 1,
					   .spare = { 0, 0, ACT_PRIVSEP_MAX_PAGE_MILLI + 1 } },
		EBADMSG, "out of range");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_WINDOWS, .seq = 1, .code = -1 },
		EBADMSG, "code set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_WINDOWS,
					   .seq = 1,
					   .flags = ACT_PRIVSEP_F_LFC },
		EBADMSG, "unknown flags");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_WINDOWS, .seq = 1, .mem_bytes = 1 },
		EBADMSG, "resources set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_WINDOWS, .seq = 1, .text = "w" },
		EBADMSG, "text set");
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_WINDOWS, .seq = 1, .reserved = 1 },
		EBADMSG, "reserved field set");
	/* DIAL: the LFC flag, no other. */
	refused(&(struct act_privsep_msg){ .type = ACT_PRIVSEP_DIAL, .flags = 2 }, EBADMSG,
		"unknown flags");
}

static int daemon_decode(const struct act_privsep_msg *m, struct act_privsep_msg *out,
			 struct vmact_err *err)
{
	memset(err, 0, sizeof(*err));
	return act_privsep_decode_from_daemon(m, sizeof(*m), out, err);
}

static void daemon_side(void **state)
{
	struct act_privsep_msg m, out;
	struct vmact_err err = { 0 };

	(void)state;
	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_REQUEST,
				      .seq = 1,
				      .flags = ACT_PRIVSEP_F_UP,
				      .milli_cpu = 2000,
				      .mem_bytes = 4ULL << 30 };
	assert_int_equal(daemon_decode(&m, &out, &err), 0);
	m.milli_cpu = ACT_PRIVSEP_MAX_MILLI_CPU + 1;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "milli_cpu"));
	m.milli_cpu = 1;
	m.mem_bytes = ACT_PRIVSEP_MAX_MEM_BYTES + 1;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "mem_bytes"));

	/* SCRAPE: seq and the LFC flag only. */
	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_SCRAPE,
				      .seq = 9,
				      .flags = ACT_PRIVSEP_F_LFC };
	assert_int_equal(daemon_decode(&m, &out, &err), 0);
	m.flags = 2;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	m.flags = 0;
	m.code = -1;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	m.code = 0;
	m.spare[0] = 1;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	assert_int_equal(act_privsep_decode_from_worker(
				 &(struct act_privsep_msg){ .type = ACT_PRIVSEP_SCRAPE, .seq = 1 },
				 sizeof(m), &out, &err),
			 -EBADMSG);

	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_DIAL_REPLY, .code = -ECONNREFUSED };
	act_privsep_set_text(&m, "connect to /x: refused");
	assert_int_equal(daemon_decode(&m, &out, &err), 0);
	assert_string_equal(out.text, "connect to /x: refused");
	m.code = 1;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	m.code = -5000;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	/* LISTEN_REPLY as DIAL_REPLY; STOP carries nothing. */
	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_LISTEN_REPLY, .code = -EADDRINUSE };
	act_privsep_set_text(&m, "bind 127.0.0.1:0: in use");
	assert_int_equal(daemon_decode(&m, &out, &err), 0);
	m.code = 7;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "listen-reply: code 7"));
	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_STOP };
	assert_int_equal(daemon_decode(&m, &out, &err), 0);
	m.seq = 1;
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_STOP, .flags = 1 };
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);

	m = (struct act_privsep_msg){ .type = ACT_PRIVSEP_DIAL_REPLY, .code = -ECONNREFUSED };
	act_privsep_set_text(&m, "connect to /x: refused");
	/* Bytes after the terminator, a control character. */
	m.code = 0;
	m.text[sizeof(m.text) - 2] = 'x';
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "after the text"));
	act_privsep_set_text(&m, "a\nb");
	assert_string_equal(m.text, "a?b");
	m.text[1] = '\x1b';
	assert_int_equal(daemon_decode(&m, &out, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "control character"));
}

static void set_text_bounds(void **state)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_DIAL_REPLY }, out;
	struct vmact_err err = { 0 };
	char longer[400];

	(void)state;
	memset(longer, 'z', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	act_privsep_set_text(&m, longer);
	assert_int_equal(strlen(m.text), ACT_PRIVSEP_TEXT_MAX - 1);
	assert_int_equal(act_privsep_decode_from_daemon(&m, sizeof(m), &out, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_worker_messages),
		cmocka_unit_test(lengths),
		cmocka_unit_test(types),
		cmocka_unit_test(fields),
		cmocka_unit_test(metrics_records),
		cmocka_unit_test(daemon_side),
		cmocka_unit_test(set_text_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
