/* SPDX-License-Identifier: Apache-2.0 */
/* The typed readers of groupd.json's values: each checks one member's type
 * and bounds, and every error names its key by its path from the top
 * (config-priv.h). */
#define CL_CONFIG_PRIV_ALLOW
#include "cluster/config/config-priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/quantity.h"

int cl_read_bad(struct cl_read_ctx *c, const char *key, const char *fmt, ...)
{
	char msg[VMACT_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return vmact_err_set(c->err, EINVAL, "%s%s%s: %s", c->path, c->path[0] && key ? "." : "",
			     key ? key : "", msg);
}

/* Refuses members not in `known` (NULL-terminated). */
int cl_read_keys(struct cl_read_ctx *c, const json_t *obj, const char *const *known)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return cl_read_bad(c, NULL, "must be an object");
	json_object_foreach((json_t *)obj, key, v) {
		bool ok = false;

		for (size_t i = 0; known[i]; i++)
			ok |= strcmp(key, known[i]) == 0;
		if (!ok)
			return cl_read_bad(c, key, "unknown key");
	}
	return 0;
}

int cl_read_str(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		bool empty_ok, char *buf, size_t size)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? cl_read_bad(c, key, "required") : 0;
	if (!json_is_string(v))
		return cl_read_bad(c, key, "must be a string");
	if (!empty_ok && !json_string_length(v))
		return cl_read_bad(c, key, "must not be empty");
	if (json_string_length(v) >= size)
		return cl_read_bad(c, key, "longer than %zu characters", size - 1);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return cl_read_bad(c, key, "contains a NUL character");
	memcpy(buf, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

int cl_read_uint(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		 unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!v)
		return required ? cl_read_bad(c, key, "required") : 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) < lo ||
	    (unsigned long long)json_integer_value(v) > hi)
		return cl_read_bad(c, key, "an integer from %llu to %llu", lo, hi);
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

int cl_read_unsigned(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		     unsigned lo, unsigned hi, unsigned *out)
{
	unsigned long long v = *out;
	int r = cl_read_uint(c, obj, key, required, lo, hi, &v);

	*out = (unsigned)v;
	return r;
}

int cl_read_seconds(struct cl_read_ctx *c, const json_t *obj, const char *key, double lo, double hi,
		    uint64_t *usec)
{
	const json_t *v = json_object_get(obj, key);
	double d;

	if (!v)
		return 0;
	if (!json_is_number(v))
		return cl_read_bad(c, key, "a number of seconds from %g to %g", lo, hi);
	d = json_number_value(v);
	if (!(d >= lo && d <= hi))
		return cl_read_bad(c, key, "a number of seconds from %g to %g", lo, hi);
	*usec = (uint64_t)(d * 1e6);
	return 0;
}

/* A Kubernetes quantity as a string ("512Mi"), or a plain integer. */
int cl_read_bytes(struct cl_read_ctx *c, const json_t *obj, const char *key, bool required,
		  uint64_t *out)
{
	const json_t *v = json_object_get(obj, key);
	struct vmact_err e = { 0 };

	if (!v)
		return required ? cl_read_bad(c, key, "required") : 0;
	if (json_is_integer(v) && json_integer_value(v) > 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || vmact_quantity_parse_value(json_string_value(v), out, &e) < 0)
		return cl_read_bad(c, key, "a size (\"512Mi\", \"2Gi\" or bytes)%s%s",
				   e.msg[0] ? ": " : "", e.msg);
	if (!*out)
		return cl_read_bad(c, key, "must be positive");
	return 0;
}

int cl_read_milli(struct cl_read_ctx *c, const json_t *obj, const char *key, uint32_t *out)
{
	const json_t *v = json_object_get(obj, key);
	struct vmact_err e = { 0 };
	uint64_t m;

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= 1000000) {
		*out = (uint32_t)json_integer_value(v) * 1000;
		return 0;
	}
	if (!json_is_string(v) || vmact_quantity_parse_milli(json_string_value(v), &m, &e) < 0 ||
	    !m || m > UINT32_MAX)
		return cl_read_bad(c, key, "a CPU quantity (\"1\", \"500m\")%s%s",
				   e.msg[0] ? ": " : "", e.msg);
	*out = (uint32_t)m;
	return 0;
}

void cl_read_push(struct cl_read_ctx *c, const char *fmt, ...)
{
	size_t n = strlen(c->path);
	va_list ap;

	if (n && n + 1 < sizeof(c->path))
		c->path[n++] = '.';
	va_start(ap, fmt);
	vsnprintf(c->path + n, sizeof(c->path) - n, fmt, ap);
	va_end(ap);
}

/* Back to the path before the last push (a '.' or a '['). */
void cl_read_pop(struct cl_read_ctx *c, size_t len)
{
	c->path[len] = 0;
}

bool cl_read_name_ok(const char *s)
{
	/* Names end up in domain names, URLs and metric labels. */
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}
