/* SPDX-License-Identifier: Apache-2.0 */
/* Restarting the host's libvirtd from a test (prefix th_): as
 * tests/host/setup-host.sh starts it, through systemd when systemd runs the
 * machine, by hand otherwise. */
#pragma once

/* Stops libvirtd, starts it again (left running) and waits until it
 * answers (virsh version, up to 10 s). Run through th_spawn, so that
 * libvirtd keeps none of the test's descriptors (a lock the test's caller
 * holds included). 0, or -EIO when it did not come back. */
int th_restart_libvirtd(void);
