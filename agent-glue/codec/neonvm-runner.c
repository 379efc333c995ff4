/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-glue/codec/neonvm-runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/codec/quantity.h"
#include "net/json.h"

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
	q = net_json_get(v, "VCPUs");
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

enum ag_runner_route ag_neonvm_runner_route(const char *method, const char *path)
{
	if (strcmp(path, "/cpu_change") == 0)
		return strcmp(method, "POST") == 0 ? AG_RUNNER_CPU_CHANGE : AG_RUNNER_BAD_METHOD;
	if (strcmp(path, "/cpu_current") == 0)
		return strcmp(method, "GET") == 0 ? AG_RUNNER_CPU_CURRENT : AG_RUNNER_BAD_METHOD;
	if (strcmp(path, "/ready") == 0)
		return AG_RUNNER_READY;
	return AG_RUNNER_NOT_FOUND;
}

int ag_neonvm_runner_change_parse(const char *body, size_t len, uint32_t *milli_cpu,
				  struct vmact_err *err)
{
	json_error_t jerr;
	json_t *v = json_loadb(body, len, JSON_DECODE_ANY, &jerr);
	int ret;

	if (!v)
		return vmact_err_set(err, EINVAL, "bad JSON: %s", jerr.text);
	ret = ag_neonvm_runner_vcpu_change_decode(v, milli_cpu, err);
	json_decref(v);
	return ret;
}

char *ag_neonvm_runner_cgroup_dump(uint32_t milli_cpu, size_t *len)
{
	json_t *v = ag_neonvm_runner_vcpu_cgroup_encode(milli_cpu);
	char *s;

	if (!v)
		return NULL;
	s = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (s)
		*len = strlen(s);
	return s;
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
		return vmact_err_set(err, EINVAL, "runner-version: \"%s\" is not a decimal number",
				     label);
	if (errno == ERANGE || v > UINT32_MAX)
		return vmact_err_set(err, ERANGE, "runner-version: %s is out of range", label);
	if (v == 0)
		return vmact_err_set(err, EINVAL, "runner-version: 0 is not a valid version");
	*out = (uint32_t)v;
	return 0;
}
