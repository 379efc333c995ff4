/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's state as its control API reports it (doc/control-api.md), for
 * tests that wait for a state of the daemon rather than for lines of its
 * log: GET /v1/vms/NAME on the control socket, read with libcurl. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The VM document of `vm` (json_decref it), or NULL with why in msg: the
 * daemon is not answering yet, the VM is unknown, the answer is not JSON. */
json_t *th_ctl_vm(const char *sock, const char *vm, char *msg, size_t len);

/* A number of a document by a dotted path ("using.milli_cpu"); false when
 * a part is missing or null, or the value is not a number. */
bool th_ctl_number(const json_t *doc, const char *path, double *out);

/* POST body to path ("/v1/vms/NAME/bounds") on the control socket: the
 * HTTP status, or 0 with why in msg when there was no answer. */
long th_ctl_post(const char *sock, const char *path, const char *body, char *msg, size_t len);
