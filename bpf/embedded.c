/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/embedded.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

void smp_embedded_drop(const void *(*elf_bytes)(size_t *len))
{
	size_t len = 0;
	const void *bytes = elf_bytes(&len);
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)bytes + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)bytes + len) & ~(page - 1);

	/* Only whole pages: the ones at the edges hold other data too. */
	if (!bytes || end <= start)
		return;
	(void)madvise((void *)start, end - start, MADV_PAGEOUT);
}
