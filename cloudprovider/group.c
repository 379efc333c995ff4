/* SPDX-License-Identifier: Apache-2.0 */
#include "cloudprovider/group.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct vmact_gapi_label *)a)->key,
		      ((const struct vmact_gapi_label *)b)->key);
}

char *cp_group_debug(const struct vmact_gapi_group *g, struct cp_arena *a)
{
	char line[1024];
	size_t len;
	int n;

	n = snprintf(line, sizeof(line),
		     "vmact group %s: min %d max %d target %d, %u vCPU %llu MiB", g->id, g->min,
		     g->max, g->target, g->tmpl.vcpus,
		     (unsigned long long)(g->tmpl.memory_bytes >> 20));
	len = n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	for (size_t i = 0; i < g->nhosts && len < sizeof(line) - 1; i++) {
		n = snprintf(line + len, sizeof(line) - len, "%s%s", i ? "," : ", hosts ",
			     g->hosts[i]);
		len = n < 0                            ? len
		      : len + (size_t)n < sizeof(line) ? len + (size_t)n
						       : sizeof(line) - 1;
	}
	return cp_arena_strdup(a, line);
}

struct cp_groups *cp_groups_ref(struct cp_groups *s)
{
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void cp_groups_unref(struct cp_groups *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	vmact_gapi_groups_clear(&s->api);
	free(s);
}

int cp_groups_from_json(json_t *root, struct cp_groups **out, struct vmact_err *err)
{
	struct cp_groups *s;
	int r;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return vmact_err_set(err, ENOMEM, "out of memory");
	r = vmact_gapi_groups_decode(root, &s->api, err);
	if (r < 0) {
		free(s);
		return r;
	}
	s->refs = 1;
	s->n = s->api.n;
	s->g = s->api.g;
	for (size_t i = 0; i < s->n; i++)
		if (s->g[i].nlabels > 1)
			qsort(s->g[i].labels, s->g[i].nlabels, sizeof(*s->g[i].labels), label_cmp);
	*out = s;
	return 0;
}

const struct vmact_gapi_group *cp_groups_find(const struct cp_groups *s, const char *id)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->g[i].id && !strcmp(s->g[i].id, id))
			return &s->g[i];
	return NULL;
}

const char *cp_group_goarch(const char *arch)
{
	static const char *const map[][2] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" },   { "i686", "386" },
		{ "i386", "386" },     { "armv7l", "arm" },      { "ppc64le", "ppc64le" },
		{ "s390x", "s390x" },  { "riscv64", "riscv64" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (!strcmp(arch, map[i][0]))
			return map[i][1];
	return arch;
}
