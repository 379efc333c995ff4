/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes resource quantities as text ("250m", "1536Mi", "1.5"), exactly
 * as the Neon Go peers parse and print them (doc/protocols.md,
 * "Quantities"). The JSON mapping lives in agent-glue/codec/quantity.h. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* ceil(q × 10^scale10), refused above max: scale10 3 is MilliValue, 0 is
 * Value. Negative, empty, garbage and values above max are -EINVAL /
 * -ERANGE with a message naming the text. */
int vmact_quantity_parse_scaled(const char *s, int scale10, uint64_t max, uint64_t *out,
				struct vmact_err *err);
int vmact_quantity_parse_milli(const char *s, uint64_t *milli, struct vmact_err *err);
int vmact_quantity_parse_value(const char *s, uint64_t *value, struct vmact_err *err);

/* Canonical text (DecimalSI for milli-CPUs, BinarySI for bytes); -ENOSPC if
 * buf is too small. */
int vmact_quantity_format_milli(uint64_t milli, char *buf, size_t len);
int vmact_quantity_format_bytes(uint64_t bytes, char *buf, size_t len);
