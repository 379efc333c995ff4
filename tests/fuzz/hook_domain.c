/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as the domain XML libvirtd gives vmact-hook on its stdin
 * (hook/domain.c, doc/hook.md). A failure must say why; a success must
 * give a terminated name and uuid within a hook notice's sizes, and the
 * extracted metadata must go through hk_domain_check (hp_meta_parse)
 * with 0 or a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hook/hook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmact_err err = { 0 };
	struct hk_domain d;

	if (size > 1 << 16)
		return 0;
	memset(&d, 0, sizeof(d));
	if (hk_domain_parse((const char *)data, size, &d, &err) == 0) {
		if (!d.name[0] || !memchr(d.name, 0, sizeof(d.name)) || !d.uuid[0] ||
		    strlen(d.uuid) > VMACT_HOOK_UUID_LEN)
			abort();
		memset(&err, 0, sizeof(err));
		if (hk_domain_check(&d, &err) != 0 && (err.code == 0 || !err.msg[0]))
			abort();
		if (!d.meta && hk_domain_check(&d, &err) != 0)
			abort();
	} else if (err.code == 0 || !err.msg[0]) {
		abort();
	}
	hk_domain_free(&d);
	return 0;
}
