/* SPDX-License-Identifier: Apache-2.0 */
/* Quantities and resources in JSON, as the Neon Go peers marshal them: the
 * text itself is base/quantity.c; here is how a JSON number or string maps
 * to it. */
#include "agent-glue/codec/quantity.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "base/quantity.h"
#include "net/json.h"

/* Go hands a bare JSON number to the quantity parser as its literal text.
 * jansson keeps only the double, so recover the shortest text that reads
 * back as the same double: that is the text any JSON encoder wrote. */
static int number_text(const json_t *v, char *buf, size_t len, struct vmact_err *err)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0)
			return vmact_err_set(err, EINVAL, "negative quantity %lld", (long long)i);
		snprintf(buf, len, "%lld", (long long)i);
		return 0;
	}
	double d = json_real_value(v);

	if (!isfinite(d))
		return vmact_err_set(err, EINVAL, "quantity is not a finite number");
	if (d < 0)
		return vmact_err_set(err, EINVAL, "negative quantity %g", d);
	net_json_shortest_g(d, false, buf, len);
	return 0;
}

static int decode_scaled(const json_t *v, int scale10, uint64_t max, uint64_t *out,
			 struct vmact_err *err)
{
	char buf[64];
	const char *s;
	int r;

	if (json_is_string(v)) {
		s = json_string_value(v);
	} else if (json_is_number(v)) {
		r = number_text(v, buf, sizeof(buf), err);
		if (r < 0)
			return r;
		s = buf;
	} else {
		return vmact_err_set(err, EINVAL, "expected a quantity (number or string)");
	}
	return vmact_quantity_parse_scaled(s, scale10, max, out, err);
}

int ag_milli_cpu_decode(const json_t *v, uint32_t *out, struct vmact_err *err)
{
	uint64_t m;
	int r = decode_scaled(v, 3, UINT32_MAX, &m, err);

	if (r < 0)
		return r;
	*out = (uint32_t)m;
	return 0;
}

int ag_bytes_decode(const json_t *v, uint64_t *out, struct vmact_err *err)
{
	return decode_scaled(v, 0, UINT64_MAX, out, err);
}

json_t *ag_milli_cpu_encode(uint32_t milli)
{
	char buf[32];

	if (milli % 1000 == 0)
		return json_integer(milli / 1000);
	if (vmact_quantity_format_milli(milli, buf, sizeof(buf)) < 0)
		return NULL;
	return json_string(buf);
}

json_t *ag_bytes_encode(uint64_t bytes)
{
	char buf[32];

	if (bytes < 1024)
		return json_integer((json_int_t)bytes);
	if (vmact_quantity_format_bytes(bytes, buf, sizeof(buf)) < 0)
		return NULL;
	return json_string(buf);
}

json_t *ag_resources_encode(const struct vmact_resources *r)
{
	json_t *cpu = ag_milli_cpu_encode(r->milli_cpu), *mem = ag_bytes_encode(r->mem_bytes);

	if (!cpu || !mem) {
		json_decref(cpu);
		json_decref(mem);
		return NULL;
	}
	return json_pack("{s:o,s:o}", "vCPUs", cpu, "mem", mem);
}

int ag_resources_decode(const json_t *v, struct vmact_resources *out, struct vmact_err *err)
{
	const json_t *cpu, *mem;
	struct vmact_resources r;
	int ret;

	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "expected an object {\"vCPUs\", \"mem\"}");
	cpu = net_json_get(v, "vCPUs");
	if (!cpu)
		return vmact_err_set(err, EINVAL, "vCPUs: missing");
	mem = net_json_get(v, "mem");
	if (!mem)
		return vmact_err_set(err, EINVAL, "mem: missing");
	ret = ag_milli_cpu_decode(cpu, &r.milli_cpu, err);
	if (ret < 0)
		return vmact_err_prefix(err, "vCPUs");
	ret = ag_bytes_decode(mem, &r.mem_bytes, err);
	if (ret < 0)
		return vmact_err_prefix(err, "mem");
	*out = r;
	return 0;
}
