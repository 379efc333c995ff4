/* SPDX-License-Identifier: Apache-2.0 */
/* libvirt's last error as vmact's error convention, for all of hotplug/. */
#pragma once

#include "base/error.h"

/* Maps the calling thread's last libvirt error to -errno + message
 * ("what: libvirt's message"): no domain -ENODEV, operation timeout
 * -ETIMEDOUT, a lost connection -ECONNRESET, unsupported -EOPNOTSUPP, bad
 * XML or argument -EINVAL, no metadata -ENOENT, anything else -EIO. */
int hp_virt_err(struct vmact_err *err, const char *what);
