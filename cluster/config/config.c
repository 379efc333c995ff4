/* SPDX-License-Identifier: Apache-2.0 */
/* A loaded configuration: its lookups and its end. It calls nothing of
 * the reading (load.c, group.c use it: config-priv.h). */
#include "cluster/config/config.h"

#include <stdlib.h>
#include <string.h>

void cl_config_free(struct cl_config *cfg)
{
	for (size_t i = 0; i < cfg->n_groups; i++) {
		json_decref(cfg->groups[i].labels);
		json_decref(cfg->groups[i].options);
		free(cfg->groups[i].taints);
		free(cfg->groups[i].tpl.metadata_xml);
	}
	free(cfg->groups);
	free(cfg->hosts);
	json_decref(cfg->profiles);
	memset(cfg, 0, sizeof(*cfg));
}

const struct cl_group_cfg *cl_config_group(const struct cl_config *cfg, const char *id)
{
	for (size_t i = 0; i < cfg->n_groups; i++)
		if (strcmp(cfg->groups[i].id, id) == 0)
			return &cfg->groups[i];
	return NULL;
}

const struct cl_host_cfg *cl_config_host(const struct cl_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_hosts; i++)
		if (strcmp(cfg->hosts[i].name, name) == 0)
			return &cfg->hosts[i];
	return NULL;
}
