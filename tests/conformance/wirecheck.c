/* SPDX-License-Identifier: Apache-2.0 */
/* wirecheck FILE...: runs every case of every vector file through the real
 * codecs and policy functions; one line per failing case, then
 * "N passed, M failed". Exit status 1 when any case failed, 2 when a file
 * could not be read. */
#include "tests/conformance/wirecheck.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agent-glue/codec/quantity.h"
#include "base/macro.h"

/* Until a handler is linked in, its kind fails loudly rather than passing. */
#define WEAK_HANDLER(name)                                                          \
	__attribute__((weak)) json_t *name(const json_t *in, struct vmact_err *err) \
	{                                                                           \
		(void)in;                                                           \
		vmact_err_set(err, ENOSYS, "no handler linked for this kind");      \
		return NULL;                                                        \
	}
WEAK_HANDLER(wc_milli_cpu_encode)
WEAK_HANDLER(wc_milli_cpu_decode)
WEAK_HANDLER(wc_bytes_encode)
WEAK_HANDLER(wc_bytes_decode)
WEAK_HANDLER(wc_agent_request_encode)
WEAK_HANDLER(wc_agent_request_keys)
WEAK_HANDLER(wc_agent_request_decode)
WEAK_HANDLER(wc_plugin_response_decode)
WEAK_HANDLER(wc_monitor_encode)
WEAK_HANDLER(wc_monitor_decode)
WEAK_HANDLER(wc_monitor_version_response)
WEAK_HANDLER(wc_informant_desc_decode)
WEAK_HANDLER(wc_goal_cpu_cu)
WEAK_HANDLER(wc_wss_estimate)
WEAK_HANDLER(wc_project_next_highest)
WEAK_HANDLER(wc_desired_resources)

static const struct {
	const char *kind;
	wc_handler_fn *fn;
	double tolerance; /* absolute, for real numbers; 0 = compare by value */
} kinds[] = {
	{ "milli_cpu_encode", wc_milli_cpu_encode, 0 },
	{ "milli_cpu_decode", wc_milli_cpu_decode, 0 },
	{ "bytes_encode", wc_bytes_encode, 0 },
	{ "bytes_decode", wc_bytes_decode, 0 },
	{ "agent_request_encode", wc_agent_request_encode, 0 },
	{ "agent_request_keys", wc_agent_request_keys, 0 },
	{ "agent_request_decode", wc_agent_request_decode, 0 },
	{ "plugin_response_decode", wc_plugin_response_decode, 0 },
	{ "monitor_encode", wc_monitor_encode, 0 },
	{ "monitor_decode", wc_monitor_decode, 0 },
	{ "monitor_version_response", wc_monitor_version_response, 0 },
	{ "informant_desc_decode", wc_informant_desc_decode, 0 },
	{ "goal_cpu_cu", wc_goal_cpu_cu, 1e-6 },
	{ "wss_estimate", wc_wss_estimate, 1e-9 },
	{ "project_next_highest", wc_project_next_highest, 1e-9 },
	{ "desired_resources", wc_desired_resources, 0 },
};

int wc_get_u64(const json_t *obj, const char *key, uint64_t *out, struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return vmact_err_set(err, EINVAL,
				     "vector field %s: expected a non-negative integer", key);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int wc_get_double(const json_t *obj, const char *key, double *out, struct vmact_err *err)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_number(v))
		return vmact_err_set(err, EINVAL, "vector field %s: expected a number", key);
	*out = json_number_value(v);
	return 0;
}

int wc_get_resources(const json_t *obj, const char *key, struct vmact_resources *out,
		     struct vmact_err *err)
{
	const json_t *r = json_object_get(obj, key);
	uint64_t cpu, mem;
	int ret;

	if (!json_is_object(r))
		return vmact_err_set(err, EINVAL, "vector field %s: expected an object", key);
	ret = wc_get_u64(r, "milli_cpu", &cpu, err);
	if (ret < 0)
		return ret;
	ret = wc_get_u64(r, "mem_bytes", &mem, err);
	if (ret < 0)
		return ret;
	if (cpu > UINT32_MAX)
		return vmact_err_set(err, ERANGE, "vector field %s.milli_cpu: out of range", key);
	out->milli_cpu = (uint32_t)cpu;
	out->mem_bytes = mem;
	return 0;
}

json_t *wc_resources_json(const struct vmact_resources *r)
{
	return json_pack("{s:I,s:I}", "milli_cpu", (json_int_t)r->milli_cpu, "mem_bytes",
			 (json_int_t)r->mem_bytes);
}

/* JSON equality as the vectors define it: key order is irrelevant, types
 * matter except that integers and reals compare by value. */
static int json_matches(const json_t *want, const json_t *got, double tol)
{
	if (json_is_number(want) && json_is_number(got)) {
		if (json_is_integer(want) && json_is_integer(got))
			return json_integer_value(want) == json_integer_value(got);
		return fabs(json_number_value(want) - json_number_value(got)) <= tol;
	}
	if (json_typeof(want) != json_typeof(got))
		return 0;
	if (json_is_object(want)) {
		const char *k;
		const json_t *v;

		if (json_object_size(want) != json_object_size(got))
			return 0;
		json_object_foreach((json_t *)want, k, v) {
			if (!json_matches(v, json_object_get(got, k), tol))
				return 0;
		}
		return 1;
	}
	if (json_is_array(want)) {
		if (json_array_size(want) != json_array_size(got))
			return 0;
		for (size_t i = 0; i < json_array_size(want); i++)
			if (!json_matches(json_array_get(want, i), json_array_get(got, i), tol))
				return 0;
		return 1;
	}
	return json_equal(want, got);
}

static int expects_error(const json_t *out)
{
	return json_is_object(out) && json_object_size(out) == 1 &&
	       json_is_true(json_object_get(out, "error"));
}

static void report(const char *file, size_t idx, const json_t *c, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report(const char *file, size_t idx, const json_t *c, const char *fmt, ...)
{
	const char *kind = json_string_value(json_object_get(c, "kind"));
	const char *note = json_string_value(json_object_get(c, "note"));
	va_list ap;

	printf("FAIL %s case %zu kind=%s%s%s%s: ", file, idx, kind ? kind : "?", note ? " (" : "",
	       note ? note : "", note ? ")" : "");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static int run_case(const char *file, size_t idx, const json_t *c)
{
	const char *kind = json_string_value(json_object_get(c, "kind"));
	const json_t *in = json_object_get(c, "in"), *out = json_object_get(c, "out");
	struct vmact_err err = { 0 };

	if (!kind || !in || !out) {
		report(file, idx, c, "malformed case: needs kind, in and out");
		return 0;
	}
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		_cleanup_(json_decrefp) json_t *got = NULL;
		_cleanup_free_ char *got_s = NULL, *want_s = NULL;

		if (strcmp(kinds[k].kind, kind) != 0)
			continue;
		got = kinds[k].fn(in, &err);
		if (expects_error(out)) {
			if (got) {
				got_s = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
				report(file, idx, c, "expected an error, got %s",
				       got_s ? got_s : "?");
				return 0;
			}
			if (err.code == ENOSYS) {
				report(file, idx, c, "%s", err.msg);
				return 0;
			}
			return 1;
		}
		if (!got) {
			report(file, idx, c, "error: %s", err.code ? err.msg : "(no message)");
			return 0;
		}
		if (json_matches(out, got, kinds[k].tolerance))
			return 1;
		got_s = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
		want_s = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
		report(file, idx, c, "got %s, want %s", got_s ? got_s : "?", want_s ? want_s : "?");
		return 0;
	}
	report(file, idx, c, "unknown kind");
	return 0;
}

int main(int argc, char **argv)
{
	unsigned passed = 0, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		_cleanup_(json_decrefp) json_t *doc = NULL;
		json_error_t jerr;
		const json_t *cases;

		doc = json_load_file(argv[i], JSON_DECODE_ANY, &jerr);
		if (!doc) {
			fprintf(stderr, "%s:%d: %s\n", argv[i], jerr.line, jerr.text);
			return 2;
		}
		if (json_integer_value(json_object_get(doc, "format")) != 1) {
			fprintf(stderr, "%s: unsupported vector format (want \"format\": 1)\n",
				argv[i]);
			return 2;
		}
		cases = json_object_get(doc, "cases");
		if (!json_is_array(cases)) {
			fprintf(stderr, "%s: \"cases\" must be an array\n", argv[i]);
			return 2;
		}
		for (size_t c = 0; c < json_array_size(cases); c++) {
			if (run_case(argv[i], c, json_array_get(cases, c)))
				passed++;
			else
				failed++;
		}
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed ? 1 : 0;
}
