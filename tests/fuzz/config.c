/* SPDX-License-Identifier: Apache-2.0 */
/* Any text as vmactd's configuration file (actuator/config/config.c, README
 * "Configuration"). A failure must say why; a success must leave every
 * path and address set, the pin root absolute, and a ScalingConfig that
 * validates; loading the same text again over fresh defaults must give the
 * same configuration (the loader keeps no state). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int streq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 }, err2 = { 0 };
	struct act_config c, c2;
	char *s;

	if (size > 1 << 16)
		return 0;
	/* The loader takes a C string: what it sees ends at the first NUL. */
	s = strndup((const char *)data, size);
	if (!s)
		return 0;
	act_config_defaults(&c);
	if (act_config_load_string(s, &c, &err) == 0) {
		if (!c.libvirt_uri || !c.libvirt_name_prefix || !c.control_socket || !c.state_dir ||
		    !c.sampler_pin_root || c.sampler_pin_root[0] != '/' || !c.metrics_listen)
			abort();
		if (ag_scaling_config_validate(&c.scaling, &err2) != 0)
			abort();
		act_config_defaults(&c2);
		if (act_config_load_string(s, &c2, &err2) != 0 ||
		    !streq(c.libvirt_uri, c2.libvirt_uri) ||
		    !streq(c.arbiter_listen, c2.arbiter_listen) ||
		    !streq(c.plugin_url, c2.plugin_url) || c.plugin_mode != c2.plugin_mode ||
		    c.cpu_policy != c2.cpu_policy || c.sampler_mode != c2.sampler_mode ||
		    !vmact_res_eq(c.compute_unit, c2.compute_unit))
			abort();
		act_config_free(&c2);
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	act_config_free(&c);
	free(s);
	return 0;
}
