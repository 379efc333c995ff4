/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes resource quantities as the Neon Go peers marshal them
 * (doc/protocols.md, "Quantities"), and the Resources pair every protocol carries.
 *
 * Contract shared by every protocol codec; implemented in quantity.c. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "base/quantity.h"
#include "base/resources.h"

/* MilliCPU: a bare integer of whole CPUs when milli % 1000 == 0, else the
 * canonical quantity string ("250m"). Returns a new reference, or NULL on
 * allocation failure. */
json_t *ag_milli_cpu_encode(uint32_t milli);
/* Accepts a JSON number (possibly fractional) or a quantity string with any
 * suffix; ceil(q × 1000). Negative, empty, garbage and values that do not fit
 * uint32 are -EINVAL / -ERANGE with a message. */
int ag_milli_cpu_decode(const json_t *v, uint32_t *out, struct vmact_err *err);

/* Bytes: a bare integer below 1024, else the BinarySI canonical quantity
 * string ("1Gi", "1536Mi", "1500"). */
json_t *ag_bytes_encode(uint64_t bytes);
/* Accepts a number or a quantity string with any suffix; ceil to bytes. */
int ag_bytes_decode(const json_t *v, uint64_t *out, struct vmact_err *err);

/* {"vCPUs": <MilliCPU>, "mem": <Bytes>} as used by protocol >= 4.0. Older
 * plugin versions need the version-aware codec in plugin.h. */
json_t *ag_resources_encode(const struct vmact_resources *r);
int ag_resources_decode(const json_t *v, struct vmact_resources *out, struct vmact_err *err);
