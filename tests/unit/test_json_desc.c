/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON codec by table (shared/json-desc.c) on a description of its
 * own, with each thing a table can say that vmact-groupd's API
 * (test_group_api) does not pin alone: a member's presence kept in a bool
 * or a bit, an object kept flat in its parent's struct, a dotted object,
 * a bound and default taken from another member, a refusal in the
 * table's own words, and a refusal deep in an array leaving nothing
 * allocated after its clear (ASan's leak check). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "shared/json-desc.h"

#define TEXT_MAX 8

struct part {
	const char *name;
	int kind; /* an ENUM */
};

struct thing {
	const char *id;
	uint32_t lo, hi;
	int64_t big;
	bool on, on_said;
	unsigned said;
	double ratio, at;
	const char *tag;  /* default "t" */
	bool shown;       /* default true, written only when false */
	const char *note; /* no default, written only when there is one */
	struct part *parts;
	size_t nparts;
	const char **words;
	size_t nwords;
	struct vmact_json_desc_pair *attrs;
	size_t nattrs;
	/* {"status": {"ok": b, "why": s}}, flat here */
	bool ok;
	const char *why;
	/* {"slots": {"a": {"n": i}, "b": {...}}} */
	struct part slots[2];
	int checked;
};

static const char *const kinds[] = { "small", "large", "huge" };

static int part_check(void *p, struct vmact_err *err)
{
	const struct part *x = p;

	if (x->kind == 2 && strcmp(x->name, "h"))
		return vmact_err_set(err, EPROTO, "kind: huge is for h alone");
	return 0;
}

static const struct vmact_json_desc_field part_fields[] = {
	{ .key = "name",
	  .kind = VMACT_JSON_DESC_TEXT,
	  .off = offsetof(struct part, name),
	  .flags = VMACT_JSON_DESC_REQUIRED | VMACT_JSON_DESC_NONEMPTY,
	  .text_max = TEXT_MAX },
	{ .key = "kind",
	  .kind = VMACT_JSON_DESC_ENUM,
	  .off = offsetof(struct part, kind),
	  .names = kinds,
	  .nnames = 3,
	  .text_max = TEXT_MAX },
};
static const struct vmact_json_desc part_desc = VMACT_JSON_DESC(struct part, part_fields,
								.check = part_check);

static const struct vmact_json_desc_field status_fields[] = {
	{ .key = "ok",
	  .kind = VMACT_JSON_DESC_BOOL,
	  .off = offsetof(struct thing, ok),
	  .flags = VMACT_JSON_DESC_REQUIRED },
	{ .key = "why",
	  .kind = VMACT_JSON_DESC_TEXT,
	  .off = offsetof(struct thing, why),
	  .text_dflt = "",
	  .text_max = TEXT_MAX },
};
static const struct vmact_json_desc status_desc = VMACT_JSON_DESC(struct thing, status_fields);

static const struct vmact_json_desc_field slot_fields[] = {
	{ .key = "a", .kind = VMACT_JSON_DESC_OBJECT, .off = 0, .desc = &part_desc },
	{ .key = "b",
	  .kind = VMACT_JSON_DESC_OBJECT,
	  .off = sizeof(struct part),
	  .desc = &part_desc },
};
static const struct vmact_json_desc slot_desc = VMACT_JSON_DESC(struct part[2], slot_fields,
								.dotted = true);

static const struct vmact_json_desc_range ratio = { 0, 1, "a fraction" };

#define T struct thing
static const struct vmact_json_desc_field thing_fields[] = {
	{ .key = "id",
	  .kind = VMACT_JSON_DESC_TEXT,
	  .off = offsetof(T, id),
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .text_max = TEXT_MAX },
	{ .key = "lo",
	  .kind = VMACT_JSON_DESC_U32,
	  .off = offsetof(T, lo),
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .lo = 1,
	  .hi = 100 },
	{ .key = "hi",
	  .kind = VMACT_JSON_DESC_U32,
	  .off = offsetof(T, hi),
	  .floor = "lo",
	  .hi = 100 },
	{ .key = "big",
	  .kind = VMACT_JSON_DESC_I64,
	  .off = offsetof(T, big),
	  .lo = INT64_MIN,
	  .hi = INT64_MAX,
	  .bad = "a whole number, please" },
	{ .key = "on",
	  .kind = VMACT_JSON_DESC_BOOL,
	  .off = offsetof(T, on),
	  .flags = VMACT_JSON_DESC_GATED | VMACT_JSON_DESC_MARKS,
	  .has_off = offsetof(T, on_said) },
	{ .key = "ratio",
	  .kind = VMACT_JSON_DESC_NUMBER,
	  .off = offsetof(T, ratio),
	  .flags = VMACT_JSON_DESC_GATED | VMACT_JSON_DESC_MARKS,
	  .has_off = offsetof(T, said),
	  .has_bit = 1u << 3,
	  .range = &ratio },
	{ .key = "at", .kind = VMACT_JSON_DESC_REAL, .off = offsetof(T, at), .range = &ratio },
	{ .key = "tag",
	  .kind = VMACT_JSON_DESC_TEXT,
	  .off = offsetof(T, tag),
	  .text_dflt = "t",
	  .text_max = TEXT_MAX },
	{ .key = "shown",
	  .kind = VMACT_JSON_DESC_BOOL,
	  .off = offsetof(T, shown),
	  .flags = VMACT_JSON_DESC_OMIT_DEFAULT,
	  .dflt = 1 },
	{ .key = "note",
	  .kind = VMACT_JSON_DESC_TEXT,
	  .off = offsetof(T, note),
	  .flags = VMACT_JSON_DESC_OMIT_DEFAULT,
	  .text_max = TEXT_MAX },
	{ .key = "parts",
	  .kind = VMACT_JSON_DESC_ARRAY,
	  .off = offsetof(T, parts),
	  .count_off = offsetof(T, nparts),
	  .max = 3,
	  .desc = &part_desc },
	{ .key = "words",
	  .kind = VMACT_JSON_DESC_ARRAY,
	  .off = offsetof(T, words),
	  .count_off = offsetof(T, nwords),
	  .max = 2,
	  .text_max = TEXT_MAX },
	{ .key = "attrs",
	  .kind = VMACT_JSON_DESC_MAP,
	  .off = offsetof(T, attrs),
	  .count_off = offsetof(T, nattrs),
	  .max = 2,
	  .text_max = TEXT_MAX },
	{ .key = "status",
	  .kind = VMACT_JSON_DESC_OBJECT,
	  .flags = VMACT_JSON_DESC_REQUIRED,
	  .desc = &status_desc },
	{ .key = "slots",
	  .kind = VMACT_JSON_DESC_OBJECT,
	  .off = offsetof(T, slots),
	  .desc = &slot_desc },
};
#undef T

static int thing_check(void *p, struct vmact_err *err)
{
	struct thing *t = p;

	(void)err;
	t->checked++;
	return 0;
}

static const struct vmact_json_desc thing_desc = VMACT_JSON_DESC(struct thing, thing_fields,
								 .check = thing_check);

static const char full[] =
	"{\"id\":\"x\",\"lo\":2,\"hi\":5,\"big\":-9000000000,\"on\":false,\"ratio\":1,"
	"\"at\":0.0,\"tag\":\"q\",\"shown\":false,\"note\":\"n\","
	"\"parts\":[{\"name\":\"a\",\"kind\":\"large\"},{\"name\":\"h\",\"kind\":\"huge\"}],"
	"\"words\":[\"w\"],\"attrs\":{\"k\":\"v\",\"l\":\"\"},\"status\":{\"ok\":true,\"why\":\"\"},"
	"\"slots\":{\"a\":{\"name\":\"s\",\"kind\":\"small\"},\"b\":{\"name\":\"t\",\"kind\":\"small\"}}}";

/* What the walker writes for t, compactly (malloc'd). */
static char *encoded(const struct thing *t)
{
	json_t *doc = vmact_json_desc_encode(&thing_desc, t);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	assert_non_null(text);
	return text;
}

/* Decoded and encoded again, the same bytes; every member where it
 * belongs. */
static void test_round_trip(void **state)
{
	json_t *doc = json_loads(full, 0, NULL);
	struct vmact_err err = { 0 };
	struct thing t;
	char *text;

	(void)state;
	assert_int_equal(vmact_json_desc_decode(&thing_desc, doc, &t, &err), 0);
	assert_int_equal(t.checked, 1);
	assert_true(t.big == -9000000000LL);
	assert_true(t.on_said && !t.on);
	assert_int_equal(t.said, 1u << 3);
	assert_true(t.ratio == 1);
	assert_false(t.shown);
	assert_string_equal(t.note, "n");
	assert_int_equal(t.nparts, 2);
	assert_int_equal(t.parts[1].kind, 2);
	assert_string_equal(t.words[0], "w");
	assert_int_equal(t.nattrs, 2);
	assert_string_equal(t.attrs[1].key, "l");
	assert_true(t.ok);
	assert_string_equal(t.slots[1].name, "t");
	text = encoded(&t);
	assert_string_equal(text, full);
	free(text);
	vmact_json_desc_clear(&thing_desc, &t);
	assert_null(t.parts);
	assert_int_equal(t.nparts, 0);
	json_decref(doc);
}

/* What is absent takes its default (a floor's is the floor), is written
 * as its kind says: a presence unset is not written, a default that is
 * omitted when equal is not either. */
static void test_defaults(void **state)
{
	json_t *doc = json_loads("{\"id\":\"x\",\"lo\":7,\"status\":{\"ok\":false}}", 0, NULL);
	struct vmact_err err = { 0 };
	struct thing t;
	char *text;

	(void)state;
	assert_int_equal(vmact_json_desc_decode(&thing_desc, doc, &t, &err), 0);
	assert_int_equal(t.hi, 7);
	assert_false(t.on_said);
	assert_int_equal(t.said, 0);
	assert_string_equal(t.tag, "t");
	assert_true(t.shown);
	assert_null(t.note);
	assert_string_equal(t.why, "");
	assert_null(t.parts);
	t.tag = NULL; /* a NULL string with a default is written as the default */
	t.slots[0].name = t.slots[1].name = "s";
	text = encoded(&t);
	assert_string_equal(text,
			    "{\"id\":\"x\",\"lo\":7,\"hi\":7,\"big\":0,\"at\":0.0,\"tag\":\"t\","
			    "\"parts\":[],\"words\":[],\"attrs\":{},"
			    "\"status\":{\"ok\":false,\"why\":\"\"},"
			    "\"slots\":{\"a\":{\"name\":\"s\",\"kind\":\"small\"},"
			    "\"b\":{\"name\":\"s\",\"kind\":\"small\"}}}");
	free(text);
	vmact_json_desc_clear(&thing_desc, &t);
	json_decref(doc);
}

/* A NULL string without a default: no document (the caller's bug, not a
 * wrong one on the wire). */
static void test_encode_refuses(void **state)
{
	struct thing t = { .lo = 1, .hi = 1, .tag = "t", .shown = true };

	(void)state;
	assert_null(vmact_json_desc_encode(&thing_desc, &t));
}

#define BASE "\"id\":\"x\",\"lo\":2,\"status\":{\"ok\":true}"

/* A refusal names its member down from the top, in the kind's words or
 * the table's, and a clear afterwards frees what was allocated. */
static void refused(const char *text, const char *want)
{
	json_t *doc = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	struct vmact_err err = { 0 };
	struct thing t;
	int r;

	assert_non_null(doc);
	r = vmact_json_desc_decode(&thing_desc, doc, &t, &err);
	vmact_json_desc_clear(&thing_desc, &t);
	if (r != -EPROTO || strcmp(err.msg, want))
		fail_msg("%s: got %d \"%s\", wanted -EPROTO \"%s\"", text, r, err.msg, want);
	json_decref(doc);
}

static void test_refusals(void **state)
{
	(void)state;
	refused("[]", "not an object");
	refused("{\"lo\":1,\"status\":{\"ok\":true}}", "id: missing");
	refused("{\"id\":null,\"lo\":1,\"status\":{\"ok\":true}}", "id: missing");
	refused("{\"id\":\"123456789\",\"lo\":1}", "id: longer than 8 bytes or holds a NUL");
	refused("{\"id\":\"a\\u0000b\",\"lo\":1}", "id: longer than 8 bytes or holds a NUL");
	refused("{\"id\":\"x\",\"lo\":0}", "lo: 0 is outside [1, 100]");
	refused("{\"id\":\"x\",\"lo\":1.0}", "lo: not an integer");
	refused("{" BASE ",\"hi\":1}", "hi: 1 is outside [2, 100]");
	refused("{" BASE ",\"big\":\"1\"}", "big: a whole number, please");
	refused("{" BASE ",\"on\":0}", "on: not a boolean");
	refused("{" BASE ",\"ratio\":1.5}", "ratio: not a fraction");
	refused("{" BASE ",\"at\":\"now\"}", "at: not a fraction");
	refused("{\"id\":\"x\",\"lo\":2}", "status: missing or not an object");
	refused("{\"id\":\"x\",\"lo\":2,\"status\":{}}", "status: ok: missing");
	refused("{" BASE ",\"parts\":{}}", "parts: not an array");
	refused("{" BASE ",\"parts\":[{},{},{},{}]}", "parts: more than 3");
	refused("{" BASE ",\"parts\":[{\"name\":\"a\"},7]}", "parts[1]: not an object");
	refused("{" BASE ",\"parts\":[{\"name\":\"a\"},{\"name\":\"\"}]}", "parts[1]: name: empty");
	refused("{" BASE ",\"parts\":[{\"name\":\"a\",\"kind\":\"tiny\"}]}",
		"parts[0]: kind: not small, large or huge");
	refused("{" BASE ",\"parts\":[{\"name\":\"a\",\"kind\":\"huge\"}]}",
		"parts[0]: kind: huge is for h alone");
	refused("{" BASE ",\"words\":[\"a\",1]}", "words[1]: not a string");
	refused("{" BASE ",\"words\":[\"a\",\"b\",\"c\"]}", "words: more than 2");
	refused("{" BASE ",\"attrs\":[]}", "attrs: not an object");
	refused("{" BASE ",\"attrs\":{\"k\":1}}", "attrs.k: not a string of at most 8 bytes");
	refused("{" BASE ",\"attrs\":{\"a\":\"\",\"b\":\"\",\"c\":\"\"}}", "attrs: more than 2");
	refused("{" BASE ",\"slots\":{\"b\":3}}", "slots.b: not an object");
	refused("{" BASE ",\"slots\":{\"a\":{\"name\":\"s\"},\"b\":{\"name\":5}}}",
		"slots.b: name: not a string");
	refused("{" BASE ",\"slots\":[]}", "slots: not an object");
}

/* Unknown keys are the peer's business; a null is absent. */
static void test_tolerant(void **state)
{
	json_t *doc = json_loads("{" BASE ",\"newer\":{\"x\":1},\"tag\":null,\"parts\":null}", 0,
				 NULL);
	struct vmact_err err = { 0 };
	struct thing t;

	(void)state;
	assert_int_equal(vmact_json_desc_decode(&thing_desc, doc, &t, &err), 0);
	assert_string_equal(t.tag, "t");
	assert_null(t.parts);
	vmact_json_desc_clear(&thing_desc, &t);
	json_decref(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_encode_refuses), cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_tolerant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
