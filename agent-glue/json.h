/* SPDX-License-Identifier: Apache-2.0 */
/* JSON access rules shared by every codec: the Go peers decode object keys
 * case-insensitively (an exact match wins), so vmact does the same. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "actuator/error.h"

/* Member lookup as Go's encoding/json does it: an exact key first, then the
 * first key equal under ASCII case folding. NULL when absent. */
json_t *ag_json_get(const json_t *obj, const char *key);

/* Typed, required members; errors name the key. */
int ag_json_get_bool(const json_t *obj, const char *key, bool *out, struct vmact_err *err);
int ag_json_get_string(const json_t *obj, const char *key, const char **out,
		       struct vmact_err *err);
/* A JSON integer in [0, max]. Reals are refused even when whole ("1.0"),
 * as Go refuses them for integer fields. */
int ag_json_get_uint(const json_t *obj, const char *key, uint64_t max, uint64_t *out,
		     struct vmact_err *err);
int ag_json_get_double(const json_t *obj, const char *key, double *out, struct vmact_err *err);
/* Object-valued member, required. */
int ag_json_get_object(const json_t *obj, const char *key, json_t **out, struct vmact_err *err);
