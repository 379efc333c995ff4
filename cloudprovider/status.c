/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/status.h"

#include <errno.h>

grpc_status_code cp_status_from_errno(int negative_errno)
{
	switch (-negative_errno) {
	case 0:
		return GRPC_STATUS_OK;
	case ENOENT:
		return GRPC_STATUS_NOT_FOUND;
	case EINVAL:
		return GRPC_STATUS_INVALID_ARGUMENT;
	/* groupd's out-of-range (past max, below min) and precondition (a
	 * running node in the way): the request is well-formed, the group's
	 * state refuses it; cluster-autoscaler reads both as "failed" and
	 * tells only Unimplemented apart. */
	case ERANGE:
	case EBUSY:
		return GRPC_STATUS_FAILED_PRECONDITION;
	case EAGAIN:
	case ECONNREFUSED:
	case EHOSTUNREACH:
	case ESHUTDOWN:
		return GRPC_STATUS_UNAVAILABLE;
	/* groupd may have done it: the caller must look again, not assume. */
	case ETIMEDOUT:
		return GRPC_STATUS_DEADLINE_EXCEEDED;
	case ENOSYS:
		return GRPC_STATUS_UNIMPLEMENTED;
	case E2BIG:
	case ENOMEM:
		return GRPC_STATUS_RESOURCE_EXHAUSTED;
	default:
		return GRPC_STATUS_INTERNAL;
	}
}

const char *cp_status_name(grpc_status_code code)
{
	static const char *const names[] = {
		"OK",
		"CANCELLED",
		"UNKNOWN",
		"INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED",
		"NOT_FOUND",
		"ALREADY_EXISTS",
		"PERMISSION_DENIED",
		"RESOURCE_EXHAUSTED",
		"FAILED_PRECONDITION",
		"ABORTED",
		"OUT_OF_RANGE",
		"UNIMPLEMENTED",
		"INTERNAL",
		"UNAVAILABLE",
		"DATA_LOSS",
		"UNAUTHENTICATED",
	};

	return code >= 0 && (unsigned)code < sizeof(names) / sizeof(names[0]) ? names[code]
									      : "UNKNOWN";
}
