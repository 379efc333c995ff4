/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/libvirtd.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/lib/proc.h"

int th_restart_libvirtd(void)
{
	static const char script[] =
		"set -e; if [ -d /run/systemd/system ]; then systemctl restart libvirtd; else "
		"pid=$(pgrep -x -u root libvirtd || true); "
		"if [ -n \"$pid\" ]; then kill $pid; "
		"for i in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done; fi; "
		"libvirtd -d; fi; for i in $(seq 100); do "
		"virsh -c qemu:///system version >/dev/null 2>&1 && exit 0; sleep 0.1; done; "
		"exit 1";
	const char *const argv[] = { "sh", "-c", script, NULL };
	struct th_proc p = { 0 };

	if (th_spawn(&p, argv, NULL) < 0 || th_proc_wait(&p) != 0)
		return -EIO;
	return 0;
}
