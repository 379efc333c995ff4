/* SPDX-License-Identifier: Apache-2.0 */
/* A shared secret in a file (prefix vmact_keyfile_): the arbiter's lease
 * key (shared/lease.h), read by the arbiter and by the cluster
 * layer. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define VMACT_KEYFILE_MIN 16
#define VMACT_KEYFILE_MAX 4096

/* Reads the key: at least VMACT_KEYFILE_MIN bytes (trailing newlines are
 * not part of it); refused when others may read it or anyone but its
 * owner may change it (whoever reads it may reserve every host's
 * capacity). *key is malloc'd. */
int vmact_keyfile_load(const char *path, uint8_t **key, size_t *len, struct vmact_err *err);

/* Another secret in a file, by the same rules, of up to max bytes (a
 * node's kubeconfig, sent with its claim: doc/cluster.md, "The claim");
 * *key is malloc'd and NUL-terminated, and the caller wipes it
 * (explicit_bzero) before it frees it. */
int vmact_keyfile_load_max(const char *path, size_t max, uint8_t **key, size_t *len,
			   struct vmact_err *err);
