/* SPDX-License-Identifier: Apache-2.0 */
/* wirecheck handlers for the quantity kinds. */
#include <errno.h>

#include "agent-glue/codec/quantity.h"
#include "tests/conformance/wirecheck.h"

json_t *wc_milli_cpu_encode(const json_t *in, struct vmact_err *err)
{
	if (!json_is_integer(in) || json_integer_value(in) < 0 ||
	    json_integer_value(in) > UINT32_MAX) {
		vmact_err_set(err, EINVAL, "vector: in must be a uint32");
		return NULL;
	}
	return ag_milli_cpu_encode((uint32_t)json_integer_value(in));
}

json_t *wc_milli_cpu_decode(const json_t *in, struct vmact_err *err)
{
	uint32_t m;

	if (ag_milli_cpu_decode(in, &m, err) < 0)
		return NULL;
	return json_integer(m);
}

json_t *wc_bytes_encode(const json_t *in, struct vmact_err *err)
{
	if (!json_is_integer(in) || json_integer_value(in) < 0) {
		vmact_err_set(err, EINVAL, "vector: in must be a non-negative integer");
		return NULL;
	}
	return ag_bytes_encode((uint64_t)json_integer_value(in));
}

json_t *wc_bytes_decode(const json_t *in, struct vmact_err *err)
{
	uint64_t b;

	if (ag_bytes_decode(in, &b, err) < 0)
		return NULL;
	if (b > INT64_MAX) {
		vmact_err_set(err, ERANGE, "vector: result does not fit a JSON integer");
		return NULL;
	}
	return json_integer((json_int_t)b);
}
