/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/json.h"

#include <errno.h>
#include <strings.h>

json_t *ag_json_get(const json_t *obj, const char *key)
{
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		return NULL;
	v = json_object_get(obj, key);
	if (v)
		return v;
	json_object_foreach((json_t *)obj, k, v) {
		if (strcasecmp(k, key) == 0)
			return v;
	}
	return NULL;
}

int ag_json_get_bool(const json_t *obj, const char *key, bool *out, struct vmact_err *err)
{
	json_t *v = ag_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_boolean(v))
		return vmact_err_set(err, EINVAL, "%s: expected a boolean", key);
	*out = json_is_true(v);
	return 0;
}

int ag_json_get_string(const json_t *obj, const char *key, const char **out,
		       struct vmact_err *err)
{
	json_t *v = ag_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_string(v))
		return vmact_err_set(err, EINVAL, "%s: expected a string", key);
	*out = json_string_value(v);
	return 0;
}

int ag_json_get_uint(const json_t *obj, const char *key, uint64_t max, uint64_t *out,
		     struct vmact_err *err)
{
	json_t *v = ag_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0 || (uint64_t)i > max)
			return vmact_err_set(err, ERANGE, "%s: %lld out of range [0, %llu]", key,
					     (long long)i, (unsigned long long)max);
		*out = (uint64_t)i;
		return 0;
	}
	return vmact_err_set(err, EINVAL, "%s: expected an integer", key);
}

int ag_json_get_double(const json_t *obj, const char *key, double *out, struct vmact_err *err)
{
	json_t *v = ag_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_number(v))
		return vmact_err_set(err, EINVAL, "%s: expected a number", key);
	*out = json_number_value(v);
	return 0;
}

int ag_json_get_object(const json_t *obj, const char *key, json_t **out, struct vmact_err *err)
{
	json_t *v = ag_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "%s: expected an object", key);
	*out = v;
	return 0;
}
