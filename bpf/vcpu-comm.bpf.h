/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* For the BPF programs (included after vmlinux.h): whether a thread's name
 * is a QEMU vCPU thread's. QEMU names them "CPU <n>/KVM" (or /TCG...):
 * "CPU ", digits, '/', one more character; the names shared/vcpu-name.c
 * accepts in user space. */
#pragma once

static __always_inline bool vcpu_comm(const char *comm)
{
	int i;

	if (comm[0] != 'C' || comm[1] != 'P' || comm[2] != 'U' || comm[3] != ' ')
		return false;
	for (i = 4; i < 14; i++)
		if (comm[i] < '0' || comm[i] > '9')
			break;
	if (i == 4 || i >= 14 || comm[i] != '/')
		return false;
	return comm[i + 1] != '\0' && comm[i + 1] != ' ';
}
