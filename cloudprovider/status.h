/* SPDX-License-Identifier: Apache-2.0 */
/* vmact's errors as gRPC status codes (doc/cloudprovider.md, "Status
 * codes"): functions here return negative errnos like the rest of vmact;
 * the server turns one into the code a call ends with. */
#pragma once

#include <grpc/status.h>

grpc_status_code cp_status_from_errno(int negative_errno);
/* "NOT_FOUND" for logs. */
const char *cp_status_name(grpc_status_code code);
