/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/neonvm-runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/json.h"
#include "agent-glue/quantity.h"

static json_t *vcpus_encode(uint32_t milli_cpu)
{
	json_t *q = ag_milli_cpu_encode(milli_cpu);

	if (!q)
		return NULL;
	return json_pack("{s:o}", "VCPUs", q);
}

static int vcpus_decode(const json_t *v, const char *type, uint32_t *milli_cpu,
			struct vmact_err *err)
{
	const json_t *q;
	uint32_t m;
	int ret;

	if (!json_is_object(v))
		return vmact_err_set(err, EINVAL, "%s: expected a JSON object", type);
	q = ag_json_get(v, "VCPUs");
	if (!q)
		return vmact_err_set(err, EINVAL, "VCPUs: missing");
	ret = ag_milli_cpu_decode(q, &m, err);
	if (ret < 0) {
		vmact_err_prefix(err, "VCPUs");
		return ret;
	}
	*milli_cpu = m;
	return 0;
}

json_t *ag_neonvm_runner_vcpu_change_encode(uint32_t milli_cpu)
{
	return vcpus_encode(milli_cpu);
}

int ag_neonvm_runner_vcpu_change_decode(const json_t *v, uint32_t *milli_cpu, struct vmact_err *err)
{
	return vcpus_decode(v, "VCPUChange", milli_cpu, err);
}

json_t *ag_neonvm_runner_vcpu_cgroup_encode(uint32_t milli_cpu)
{
	return vcpus_encode(milli_cpu);
}

int ag_neonvm_runner_vcpu_cgroup_decode(const json_t *v, uint32_t *milli_cpu, struct vmact_err *err)
{
	return vcpus_decode(v, "VCPUCgroup", milli_cpu, err);
}

int ag_neonvm_runner_version_parse(const char *label, uint32_t *out, struct vmact_err *err)
{
	unsigned long long v;
	char *end;

	if (!label || !*label || *label < '0' || *label > '9')
		return vmact_err_set(err, EINVAL, "runner-version: \"%s\" is not a decimal number",
				     label ? label : "");
	errno = 0;
	v = strtoull(label, &end, 10);
	if (*end)
		return vmact_err_set(err, EINVAL, "runner-version: \"%s\" is not a decimal number", label);
	if (errno == ERANGE || v > UINT32_MAX)
		return vmact_err_set(err, ERANGE, "runner-version: %s is out of range", label);
	if (v == 0)
		return vmact_err_set(err, EINVAL, "runner-version: 0 is not a valid version");
	*out = (uint32_t)v;
	return 0;
}
