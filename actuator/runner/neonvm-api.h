/* SPDX-License-Identifier: Apache-2.0 */
/* The neonvm-runner CPU API for a VM sized elsewhere (<vmact:runner>,
 * doc/runner-api.md): what a POST /cpu_change may ask, checked before
 * anything is touched. Pure, unit-tested (tests/unit/test_runner_api.c). */
#pragma once

#include <stdint.h>

#include "base/error.h"
#include "base/resources.h"

/* -ERANGE naming the bound when `milli` lies outside the VM's CPU bounds
 * [min, max] or needs more vCPUs than `vcpus_max` (the domain's maximum,
 * or the vCPUs it has when libvirt refuses vCPU changes on it). */
int act_runner_neonvm_api_check(uint32_t milli, const struct vmact_resources *min,
				const struct vmact_resources *max, unsigned vcpus_max,
				struct vmact_err *err);
