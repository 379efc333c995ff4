/* SPDX-License-Identifier: Apache-2.0 */
/* mTLS for the gRPC server (doc/cloudprovider.md, "Transport"): the
 * server's key and certificate, and the CA certificate that every client's
 * certificate must chain to; a client without one is refused in the
 * handshake. The files are read again at the next handshake after one of
 * them changed (a rotation by cert-manager, say), so a renewed certificate
 * needs no restart; a change that does not load keeps the previous set. */
#pragma once

#include <grpc/grpc_security.h>

#include "base/error.h"

struct cp_tls;

/* Reads and checks the three files once (readable, PEM, at most 1 MiB). */
int cp_tls_new(const char *key, const char *cert, const char *cacert, struct cp_tls **out,
	       struct vmact_err *err);
void cp_tls_free(struct cp_tls *t);

/* Server credentials that require and verify a client certificate; the
 * caller releases them (grpc_server_credentials_release), t must outlive
 * the server. */
grpc_server_credentials *cp_tls_credentials(struct cp_tls *t);

/* Reloads that failed since the start (for the edge to report). */
unsigned cp_tls_reload_failures(struct cp_tls *t);
