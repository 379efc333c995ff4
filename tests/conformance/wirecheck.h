/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance runner: one handler per vector kind (see
 * ../shared/vectors/README.md). A handler feeds the case's "in" through the
 * real codec or policy function and returns the result as a new JSON
 * reference shaped like the vector's "out". It returns NULL and fills err
 * when the code under test rejected the input (the runner then expects
 * {"error": true}). */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"

typedef json_t *wc_handler_fn(const json_t *in, struct vmact_err *err);

wc_handler_fn wc_milli_cpu_encode, wc_milli_cpu_decode, wc_bytes_encode, wc_bytes_decode;
wc_handler_fn wc_agent_request_encode, wc_agent_request_keys, wc_agent_request_decode;
wc_handler_fn wc_plugin_response_decode;
wc_handler_fn wc_monitor_encode, wc_monitor_decode, wc_monitor_version_response;
wc_handler_fn wc_informant_desc_decode;
wc_handler_fn wc_goal_cpu_cu, wc_wss_estimate, wc_project_next_highest, wc_desired_resources;

/* Helpers for handlers: strict field access on the vector's own JSON. */
int wc_get_u64(const json_t *obj, const char *key, uint64_t *out, struct vmact_err *err);
int wc_get_double(const json_t *obj, const char *key, double *out, struct vmact_err *err);
struct vmact_resources;
/* {"milli_cpu": N, "mem_bytes": N} of the vectors' internal units. */
int wc_get_resources(const json_t *obj, const char *key, struct vmact_resources *out,
		     struct vmact_err *err);
json_t *wc_resources_json(const struct vmact_resources *r);
