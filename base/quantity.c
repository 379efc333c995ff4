/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes resource.Quantity text, the subset of its semantics the Neon
 * peers rely on: parse any suffix with ceil rounding (MilliValue / Value),
 * emit the canonical DecimalSI / BinarySI text (doc/protocols.md, "Quantities").
 *
 * Parsing is exact: the number is kept as an integer of significant digits
 * times a power of ten and a power of two, so "0.1" × 1000 is exactly 100 and
 * ceil never rounds a binary floating-point artefact up. */
#include "base/quantity.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Significant digits must fit in 64 bits (any uint64 written out in full
 * does); more precision than that is no quantity a peer emits, and rejecting
 * it keeps the arithmetic exact in 128 bits. */

typedef unsigned __int128 u128;

struct parsed_quantity {
	uint64_t digits; /* significant digits, trailing zeros folded into exp10 */
	int exp10;
	int exp2;
};

static int parse_suffix(const char *s, int *exp10, int *exp2)
{
	static const struct {
		const char *name;
		int exp10, exp2;
	} suffixes[] = {
		{ "", 0, 0 },    { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },
		{ "k", 3, 0 },   { "M", 6, 0 },   { "G", 9, 0 },   { "T", 12, 0 },
		{ "P", 15, 0 },  { "E", 18, 0 },  { "Ki", 0, 10 }, { "Mi", 0, 20 },
		{ "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
	};
	const char *p;
	long e;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (strcmp(s, suffixes[i].name) == 0) {
			*exp10 = suffixes[i].exp10;
			*exp2 = suffixes[i].exp2;
			return 0;
		}
	}
	/* Scientific notation: e/E followed by a signed integer. */
	if (s[0] != 'e' && s[0] != 'E')
		return -EINVAL;
	p = s + 1;
	if (*p == '+' || *p == '-')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -EINVAL;
	errno = 0;
	e = strtol(s + 1, NULL, 10);
	if (errno || e > 1000 || e < -1000)
		return -ERANGE;
	*exp10 = (int)e;
	*exp2 = 0;
	return 0;
}

static int parse_quantity(const char *s, struct parsed_quantity *q, struct vmact_err *err)
{
	const char *p = s;
	bool seen_digit = false, seen_point = false;
	int frac_digits = 0, pending_zeros = 0;
	uint64_t digits = 0;
	int exp10, exp2, r;

	if (*p == '\0')
		return vmact_err_set(err, EINVAL, "empty quantity");
	if (*p == '-')
		return vmact_err_set(err, EINVAL, "negative quantity \"%s\"", s);
	if (*p == '+')
		p++;
	for (; *p; p++) {
		if (*p == '.') {
			if (seen_point)
				return vmact_err_set(err, EINVAL, "malformed quantity \"%s\"", s);
			seen_point = true;
			continue;
		}
		if (*p < '0' || *p > '9')
			break;
		seen_digit = true;
		if (seen_point)
			frac_digits++;
		if (*p == '0') {
			/* Zeros count only once a non-zero digit follows them. */
			if (digits > 0)
				pending_zeros++;
			continue;
		}
		for (; pending_zeros >= 0; pending_zeros--) {
			if (digits > UINT64_MAX / 10)
				return vmact_err_set(
					err, ERANGE,
					"quantity \"%s\" has too many significant digits", s);
			digits *= 10;
		}
		pending_zeros = 0;
		if (digits > UINT64_MAX - (uint64_t)(*p - '0'))
			return vmact_err_set(err, ERANGE,
					     "quantity \"%s\" has too many significant digits", s);
		digits += (uint64_t)(*p - '0');
	}
	if (!seen_digit)
		return vmact_err_set(err, EINVAL, "malformed quantity \"%s\"", s);
	r = parse_suffix(p, &exp10, &exp2);
	if (r < 0)
		return vmact_err_set(err, -r, "unknown suffix in quantity \"%s\"", s);
	q->digits = digits;
	/* Folded trailing zeros raise the exponent; fractional digits lower it. */
	q->exp10 = exp10 + pending_zeros - frac_digits;
	q->exp2 = exp2;
	if (digits == 0) {
		q->exp10 = 0;
		q->exp2 = 0;
	}
	return 0;
}

/* ceil(q × 10^scale10) as an integer no larger than max. */
static int quantity_ceil(const struct parsed_quantity *q, int scale10, uint64_t max, uint64_t *out,
			 const char *s, struct vmact_err *err)
{
	u128 n = (u128)q->digits << q->exp2; /* < 2^64 × 2^60 */
	int e = q->exp10 + scale10;

	if (q->digits == 0) {
		*out = 0;
		return 0;
	}
	if (e >= 0) {
		for (; e > 0; e--) {
			if (n > max)
				break;
			n *= 10;
		}
		if (e > 0 || n > max)
			return vmact_err_set(err, ERANGE, "quantity \"%s\" is too large", s);
	} else if (e < -38) {
		/* n < 2^124 < 10^38: a positive value below one unit. */
		n = 1;
	} else {
		u128 p = 1;

		for (int i = 0; i < -e; i++)
			p *= 10;
		n = n / p + (n % p != 0);
		if (n > max)
			return vmact_err_set(err, ERANGE, "quantity \"%s\" is too large", s);
	}
	*out = (uint64_t)n;
	return 0;
}

int vmact_quantity_parse_scaled(const char *s, int scale10, uint64_t max, uint64_t *out,
				struct vmact_err *err)
{
	struct parsed_quantity q = { 0 };
	int r = parse_quantity(s, &q, err);

	if (r < 0)
		return r;
	return quantity_ceil(&q, scale10, max, out, s, err);
}

int vmact_quantity_parse_milli(const char *s, uint64_t *milli, struct vmact_err *err)
{
	return vmact_quantity_parse_scaled(s, 3, UINT64_MAX, milli, err);
}

int vmact_quantity_parse_value(const char *s, uint64_t *value, struct vmact_err *err)
{
	return vmact_quantity_parse_scaled(s, 0, UINT64_MAX, value, err);
}

/* DecimalSI canonical form of value × 10^exp10 (exp10 is 0 or -3 here):
 * the mantissa stays an integer and the exponent a multiple of three. */
static int format_decimal(uint64_t value, int exp10, char *buf, size_t len)
{
	static const char *const pos[] = { "", "k", "M", "G", "T", "P", "E" };
	int n;

	if (value == 0) {
		exp10 = 0;
	} else {
		while (value % 1000 == 0 && exp10 < 18) {
			value /= 1000;
			exp10 += 3;
		}
	}
	if (exp10 < 0)
		n = snprintf(buf, len, "%" PRIu64 "m", value); /* exp10 == -3 */
	else
		n = snprintf(buf, len, "%" PRIu64 "%s", value, pos[exp10 / 3]);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

int vmact_quantity_format_milli(uint64_t milli, char *buf, size_t len)
{
	return format_decimal(milli, -3, buf, len);
}

int vmact_quantity_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const bin[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
	unsigned i = 0;
	int n;

	/* k8s prints BinarySI values below 1024 in DecimalSI. */
	if (bytes < 1024)
		return format_decimal(bytes, 0, buf, len);
	while (bytes % 1024 == 0 && i < 6) {
		bytes /= 1024;
		i++;
	}
	n = snprintf(buf, len, "%" PRIu64 "%s", bytes, bin[i]);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}
