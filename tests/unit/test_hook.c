/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-hook's logic without sockets: the notice codec (shared/hook-msg),
 * strict on what it accepts, and the hook's reading of the domain XML and
 * its prepare-time decision (hook/domain.c), refuse-invalid included. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/macro.h"
#include "hook/hook.h"
#include "hotplug/hotplug.h"
#include "shared/hook-msg.h"

#define UUID "0b6d3b5e-4c1e-4a55-9c6e-1b2c3d4e5f60"

static void codec_roundtrip(void **state)
{
	struct vmact_hook_msg m = { .op = VMACT_HOOK_STARTED,
				    .subop = VMACT_HOOK_BEGIN,
				    .uuid = UUID,
				    .name = "db 1 (ü)" },
			      back;
	struct vmact_err err = { 0 };
	char buf[VMACT_HOOK_MSG_MAX];
	int n;

	(void)state;
	n = vmact_hook_msg_encode(&m, buf, sizeof(buf), &err);
	assert_true(n > 0);
	assert_memory_equal(buf, "vmact-hook/1 started begin " UUID " db 1 (ü)", (size_t)n);
	assert_int_equal(vmact_hook_msg_decode(buf, (size_t)n, &back, &err), 0);
	assert_int_equal(back.op, VMACT_HOOK_STARTED);
	assert_int_equal(back.subop, VMACT_HOOK_BEGIN);
	assert_string_equal(back.uuid, UUID);
	assert_string_equal(back.name, "db 1 (ü)");

	/* Every operation and sub-operation the hook sends. */
	for (int op = 0; op < VMACT_HOOK_OP_COUNT; op++)
		for (int s = VMACT_HOOK_BEGIN; s <= VMACT_HOOK_NONE; s++) {
			m.op = op;
			m.subop = s;
			n = vmact_hook_msg_encode(&m, buf, sizeof(buf), &err);
			assert_true(n > 0);
			assert_int_equal(vmact_hook_msg_decode(buf, (size_t)n, &back, &err), 0);
			assert_int_equal(back.op, op);
			assert_int_equal(back.subop, s);
		}

	/* The longest name fits the bound. */
	memset(m.name, 'n', VMACT_HOOK_NAME_MAX);
	m.name[VMACT_HOOK_NAME_MAX] = 0;
	m.op = VMACT_HOOK_RECONNECT;
	n = vmact_hook_msg_encode(&m, buf, sizeof(buf), &err);
	assert_true(n > 0 && n <= VMACT_HOOK_MSG_MAX);
	assert_int_equal(vmact_hook_msg_decode(buf, (size_t)n, &back, &err), 0);
}

static void codec_encode_refuses(void **state)
{
	struct vmact_hook_msg m = {
		.op = VMACT_HOOK_STOPPED, .subop = VMACT_HOOK_END, .uuid = "not-a-uuid", .name = "a"
	};
	struct vmact_err err = { 0 };
	char buf[VMACT_HOOK_MSG_MAX];

	(void)state;
	assert_int_equal(vmact_hook_msg_encode(&m, buf, sizeof(buf), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "uuid"));
	strcpy(m.uuid, UUID);
	strcpy(m.name, "a\nb");
	vmact_err_reset(&err);
	assert_int_equal(vmact_hook_msg_encode(&m, buf, sizeof(buf), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "control byte"));
	m.name[0] = 0;
	vmact_err_reset(&err);
	assert_int_equal(vmact_hook_msg_encode(&m, buf, sizeof(buf), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "empty"));
}

struct bad_case {
	const char *text;
	size_t len; /* 0: strlen */
	const char *msg;
};

static void codec_decode_strict(void **state)
{
	static char big[VMACT_HOOK_MSG_MAX + 2];
	static const struct bad_case cases[] = {
		{ "", 0, "magic: missing" },
		{ "vmact-hook/1", 0, "magic: missing" },
		{ "vmact-hook/2 started begin " UUID " a", 0, "magic" },
		{ "VMACT-HOOK/1 started begin " UUID " a", 0, "magic" },
		{ "vmact-hook/1 start begin " UUID " a", 0, "operation: unknown 'start'" },
		{ "vmact-hook/1 attach begin " UUID " a", 0, "operation: unknown" },
		{ "vmact-hook/1 started  begin " UUID " a", 0, "sub-operation: empty" },
		{ "vmact-hook/1 started middle " UUID " a", 0, "sub-operation: unknown" },
		{ "vmact-hook/1 started begin " UUID, 0, "uuid: missing" },
		{ "vmact-hook/1 started begin " UUID " ", 0, "name: empty" },
		{ "vmact-hook/1 started begin 0b6d3b5e-4c1e-4a55-9c6e-1b2c3d4e5f6 a", 0, "uuid" },
		{ "vmact-hook/1 started begin 0b6d3b5e-4c1e-4a55-9c6e-1b2c3d4e5f6x a", 0, "uuid" },
		{ "vmact-hook/1 started begin 0b6d3b5e-4c1e-4a55-9c6e-1b2c3d4e5f600 a", 0, "uuid" },
		{ "vmact-hook/1 started begin " UUID " a\n", 0, "control byte" },
		{ "vmact-hook/1 started begin " UUID " a\x1b[2J", 0, "control byte" },
		{ "vmact-hook/1 started begin " UUID " a\0b",
		  sizeof("vmact-hook/1 started begin " UUID " a\0b") - 1, "NUL" },
		{ big, sizeof(big) - 1, "at most" },
	};
	struct vmact_hook_msg m;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vmact_err err = { 0 };
		const struct bad_case *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->text);

		if (vmact_hook_msg_decode(c->text, len, &m, &err) == 0)
			fail_msg("case %zu accepted: %.60s", i, c->text);
		if (!strstr(err.msg, c->msg))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err.msg, c->msg);
	}
}

#define DOMAIN(meta)                                                        \
	"<domain type='qemu' id='3'><name>vm-1</name><uuid>" UUID "</uuid>" \
	"<memory unit='KiB'>524288</memory><metadata>" meta "</metadata></domain>"
#define NS "xmlns:vmact='" HP_NS_URI "'"
#define GOOD_BODY \
	"<vmact:cpu min='1' max='4'/><vmact:memory min='512Mi' max='2Gi' method='virtio-mem'/>"

static void parse(const char *xml, struct hk_domain *d)
{
	struct vmact_err err = { 0 };

	if (hk_domain_parse(xml, strlen(xml), d, &err) < 0)
		fail_msg("%s", err.msg);
}

static void domain_metadata(void **state)
{
	struct vmact_err err = { 0 };
	_cleanup_(hp_meta_done) struct hp_meta meta = { 0 };
	struct hk_domain d;

	(void)state;
	/* Valid, refuse-invalid set: start allowed. The element is read as
	 * the daemon reads it, prefixed and in its namespace. */
	parse(DOMAIN("<other:x xmlns:other='urn:x'/><vmact:autoscaling " NS
		     " enabled='true' refuse-invalid='true'>" GOOD_BODY "</vmact:autoscaling>"),
	      &d);
	assert_string_equal(d.name, "vm-1");
	assert_string_equal(d.uuid, UUID);
	assert_non_null(d.meta);
	assert_true(d.refuse_invalid);
	assert_int_equal(hk_domain_check(&d, &err), 0);
	assert_int_equal(hp_meta_parse(d.meta, &meta, &err), 0);
	assert_true(meta.refuse_invalid);
	assert_int_equal(meta.max.mem_bytes, 2ULL << 30);
	hk_domain_free(&d);

	/* Invalid and asking for refusal: the check names the element. */
	parse(DOMAIN("<vmact:autoscaling " NS " enabled='true' refuse-invalid='true'>"
		     "<vmact:cpu min='4' max='1'/></vmact:autoscaling>"),
	      &d);
	assert_true(d.refuse_invalid);
	assert_int_equal(hk_domain_check(&d, &err), -ERANGE);
	assert_non_null(strstr(err.msg, "<vmact:cpu>"));
	hk_domain_free(&d);

	/* Invalid without it (the default): reported, not refused. */
	vmact_err_reset(&err);
	parse(DOMAIN("<vmact:autoscaling " NS " enabled='true'><vmact:cpu min='1' max='4'/>"
		     "<vmact:bogus/></vmact:autoscaling>"),
	      &d);
	assert_false(d.refuse_invalid);
	assert_int_equal(hk_domain_check(&d, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown element <vmact:bogus>"));
	hk_domain_free(&d);

	/* refuse-invalid must say exactly true; anything else does not ask
	 * for a refusal, and is itself invalid metadata. */
	vmact_err_reset(&err);
	parse(DOMAIN("<vmact:autoscaling " NS " enabled='true' refuse-invalid='yes'>" GOOD_BODY
		     "</vmact:autoscaling>"),
	      &d);
	assert_false(d.refuse_invalid);
	assert_int_equal(hk_domain_check(&d, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "refuse-invalid"));
	hk_domain_free(&d);

	/* The namespace declared on <metadata> rather than on the element. */
	vmact_err_reset(&err);
	parse("<domain><name>n</name><uuid>" UUID "</uuid><metadata " NS ">"
	      "<vmact:autoscaling enabled='false'>" GOOD_BODY "</vmact:autoscaling>"
	      "</metadata></domain>",
	      &d);
	assert_non_null(d.meta);
	assert_int_equal(hk_domain_check(&d, &err), 0);
	hk_domain_free(&d);

	/* No vmact metadata: nothing to check, nothing to tell. */
	parse(DOMAIN("<other:x xmlns:other='urn:x'/>"), &d);
	assert_null(d.meta);
	assert_int_equal(hk_domain_check(&d, &err), 0);
	hk_domain_free(&d);
}

static void domain_not_a_domain(void **state)
{
	static const char *const bad[] = {
		"",
		"<domain>",
		"<network><name>a</name></network>",
		"<domain><uuid>" UUID "</uuid></domain>",
		"<domain><name>a</name></domain>",
		"<!DOCTYPE d [<!ENTITY x SYSTEM 'file:///etc/shadow'>]><domain><name>&x;</name>"
		"<uuid>" UUID "</uuid></domain>",
	};
	struct hk_domain d;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vmact_err err = { 0 };

		if (hk_domain_parse(bad[i], strlen(bad[i]), &d, &err) == 0) {
			/* An external entity is never loaded. */
			assert_null(strstr(d.name, "root:"));
			hk_domain_free(&d);
			continue;
		}
		assert_non_null(strstr(err.msg, "domain XML"));
		hk_domain_free(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(codec_roundtrip),     cmocka_unit_test(codec_encode_refuses),
		cmocka_unit_test(codec_decode_strict), cmocka_unit_test(domain_metadata),
		cmocka_unit_test(domain_not_a_domain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
