/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes resource quantities as the Neon Go peers marshal them
 * (neon-protocols.md §0.1), and the Resources pair every protocol carries.
 *
 * Contract shared by every protocol codec; implemented in quantity.c. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "actuator/error.h"

/* Internal units everywhere in vmact: CPU in milli-CPUs, memory in bytes. */
struct ag_resources {
	uint32_t milli_cpu;
	uint64_t mem_bytes;
};

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

/* String level, for protocols that carry quantities as strings only
 * (informant RawResources, metadata). */
int ag_quantity_parse_milli(const char *s, uint64_t *milli, struct vmact_err *err);
int ag_quantity_parse_value(const char *s, uint64_t *value, struct vmact_err *err);
/* Canonical text; return -ENOSPC if buf is too small. */
int ag_quantity_format_milli(uint64_t milli, char *buf, size_t len);
int ag_quantity_format_bytes(uint64_t bytes, char *buf, size_t len);

/* {"vCPUs": <MilliCPU>, "mem": <Bytes>} as used by protocol >= 4.0. Older
 * plugin versions need the version-aware codec in plugin.h. */
json_t *ag_resources_encode(const struct ag_resources *r);
int ag_resources_decode(const json_t *v, struct ag_resources *out, struct vmact_err *err);
