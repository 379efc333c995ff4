/* SPDX-License-Identifier: Apache-2.0 */
#include "hotplug/virt-error.h"

#include <errno.h>

#include <libvirt/virterror.h>

int hp_virt_err(struct vmact_err *err, const char *what)
{
	virErrorPtr e = virGetLastError();
	int code = EIO;

	if (!e)
		return vmact_err_set(err, EIO, "%s failed", what);
	switch (e->code) {
	case VIR_ERR_NO_DOMAIN:
		code = ENODEV;
		break;
	case VIR_ERR_OPERATION_TIMEOUT:
		code = ETIMEDOUT;
		break;
	case VIR_ERR_SYSTEM_ERROR:
	case VIR_ERR_RPC:
	case VIR_ERR_NO_CONNECT:
	case VIR_ERR_INVALID_CONN:
	case VIR_ERR_AUTH_FAILED:
		code = ECONNRESET;
		break;
	case VIR_ERR_NO_SUPPORT:
	case VIR_ERR_OPERATION_UNSUPPORTED:
		code = EOPNOTSUPP;
		break;
	case VIR_ERR_INVALID_ARG:
	case VIR_ERR_XML_ERROR:
	case VIR_ERR_CONFIG_UNSUPPORTED:
	case VIR_ERR_XML_DETAIL:
		code = EINVAL;
		break;
	case VIR_ERR_NO_DOMAIN_METADATA:
		code = ENOENT;
		break;
	default:
		break;
	}
	return vmact_err_set(err, code, "%s: %s", what, e->message ? e->message : "libvirt error");
}
