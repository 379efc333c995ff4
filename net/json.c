/* SPDX-License-Identifier: Apache-2.0 */
#include "net/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool net_json_key_matches(const char *key, const char *name)
{
	const unsigned char *k = (const unsigned char *)key;
	const unsigned char *n = (const unsigned char *)name;

	for (; *n; n++) {
		unsigned char want = *n;
		bool letter = (want | 0x20) >= 'a' && (want | 0x20) <= 'z';

		if (*k == want || (letter && (*k | 0x20) == (want | 0x20))) {
			k++;
		} else if ((want | 0x20) == 's' && k[0] == 0xc5 && k[1] == 0xbf) {
			k += 2;
		} else if ((want | 0x20) == 'k' && k[0] == 0xe2 && k[1] == 0x84 && k[2] == 0xaa) {
			k += 3;
		} else {
			return false;
		}
	}
	return *k == '\0';
}

json_t *net_json_get(const json_t *obj, const char *name)
{
	const char *k;
	json_t *v, *found = NULL;

	if (!json_is_object(obj))
		return NULL;
	json_object_foreach((json_t *)obj, k, v) {
		if (net_json_key_matches(k, name))
			found = v;
	}
	return found;
}

int net_json_get_bool(const json_t *obj, const char *key, bool *out, struct vmact_err *err)
{
	json_t *v = net_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_boolean(v))
		return vmact_err_set(err, EINVAL, "%s: expected a boolean", key);
	*out = json_is_true(v);
	return 0;
}

int net_json_get_string(const json_t *obj, const char *key, const char **out, struct vmact_err *err)
{
	json_t *v = net_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_string(v))
		return vmact_err_set(err, EINVAL, "%s: expected a string", key);
	*out = json_string_value(v);
	return 0;
}

int net_json_get_uint(const json_t *obj, const char *key, uint64_t max, uint64_t *out,
		      struct vmact_err *err)
{
	json_t *v = net_json_get(obj, key);

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

int net_json_get_double(const json_t *obj, const char *key, double *out, struct vmact_err *err)
{
	json_t *v = net_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_number(v))
		return vmact_err_set(err, EINVAL, "%s: expected a number", key);
	*out = json_number_value(v);
	return 0;
}

int net_json_get_object(const json_t *obj, const char *key, json_t **out, struct vmact_err *err)
{
	json_t *v = net_json_get(obj, key);

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "%s: expected an object", key);
	*out = v;
	return 0;
}

int net_json_string_copy(const json_t *v, const char *key, char *buf, size_t size,
			 struct vmact_err *err)
{
	size_t n;

	if (!v)
		return vmact_err_set(err, EINVAL, "%s: missing", key);
	if (!json_is_string(v))
		return vmact_err_set(err, EINVAL, "%s: expected a string", key);
	n = json_string_length(v);
	if (n >= size)
		return vmact_err_set(err, EINVAL, "%s: longer than %zu bytes", key, size - 1);
	if (memchr(json_string_value(v), '\0', n))
		return vmact_err_set(err, EINVAL, "%s: contains a NUL byte", key);
	memcpy(buf, json_string_value(v), n + 1);
	return 0;
}

/* ---- floats as encoding/json prints them -------------------------------- */

int net_json_shortest_g(double d, bool as_float32, char *buf, size_t len)
{
	int max = as_float32 ? 9 : 17;

	for (int p = 1; p < max; p++) {
		snprintf(buf, len, "%.*g", p, d);
		if (as_float32 ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d)
			return p;
	}
	snprintf(buf, len, "%.*g", max, d);
	return max;
}

int net_json_real_text(double d, bool as_float32, char *buf, size_t len)
{
	char e[40], digits[20];
	const char *p;
	size_t nd = 0, o = 0;
	int prec, exp10;
	double a;

	if (as_float32)
		d = (float)d;
	if (!isfinite(d))
		return -EDOM;
	if (d == 0)
		return snprintf(buf, len, "%s", signbit(d) ? "-0" : "0") < (int)len ? 0 : -ENOSPC;
	/* Digits and exponent of the shortest round-trip text. */
	prec = net_json_shortest_g(d, as_float32, e, sizeof(e));
	snprintf(e, sizeof(e), "%.*e", prec - 1, fabs(d));
	for (p = e; *p != 'e'; p++)
		if (*p != '.')
			digits[nd++] = *p;
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	exp10 = atoi(p + 1);

	char out[400];
	/* Go picks the format from the value, in the field's own width. */
	a = fabs(d);
	if (d < 0)
		out[o++] = '-';
	if (as_float32 ? ((float)a < 1e-6f || (float)a >= 1e21f) : (a < 1e-6 || a >= 1e21)) {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, nd - 1);
			o += nd - 1;
		}
		/* strconv writes two exponent digits at least; encoding/json
		 * then shortens "e-07" to "e-7" (not "e+07": never reached). */
		o += (size_t)snprintf(out + o, sizeof(out) - o, "e%c%0*d", exp10 < 0 ? '-' : '+',
				      exp10 < 0 && exp10 > -10 ? 1 : 2, abs(exp10));
	} else if (exp10 < 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = -1; i > exp10; i--)
			out[o++] = '0';
		memcpy(out + o, digits, nd);
		o += nd;
	} else {
		for (int i = 0; i <= exp10 || (size_t)i < nd; i++) {
			if (i == exp10 + 1)
				out[o++] = '.';
			out[o++] = (size_t)i < nd ? digits[i] : '0';
		}
	}
	out[o] = '\0';
	if (o >= len)
		return -ENOSPC;
	memcpy(buf, out, o + 1);
	return 0;
}

json_t *net_json_real(double d, bool as_float32)
{
	char text[400];

	if (net_json_real_text(d, as_float32, text, sizeof(text)) < 0)
		return NULL;
	if (!strpbrk(text, ".e")) {
		char *end;

		errno = 0;
		long long i = strtoll(text, &end, 10);

		if (errno == 0 && *end == '\0')
			return json_integer((json_int_t)i);
	}
	return json_real(strtod(text, NULL));
}

static int max_real_precision(const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	int m = 0, p;
	char buf[40];

	switch (json_typeof(v)) {
	case JSON_REAL:
		if (!isfinite(json_real_value(v)))
			return 0;
		return net_json_shortest_g(json_real_value(v), false, buf, sizeof(buf));
	case JSON_OBJECT:
		json_object_foreach((json_t *)v, k, x) {
			p = max_real_precision(x);
			m = p > m ? p : m;
		}
		return m;
	case JSON_ARRAY:
		json_array_foreach(v, i, x) {
			p = max_real_precision(x);
			m = p > m ? p : m;
		}
		return m;
	default:
		return 0;
	}
}

char *net_json_dumps(const json_t *v, size_t flags)
{
	int p = max_real_precision(v);

	/* Precision 0 means jansson's default (%.17g): only when no reals. */
	if (p > 0)
		flags = (flags & ~(size_t)JSON_REAL_PRECISION(31)) | JSON_REAL_PRECISION(p);
	return json_dumps(v, flags);
}
