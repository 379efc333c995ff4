/* SPDX-License-Identifier: Apache-2.0 */
/* The BPF objects embedded in vmactd (prefix smp_embedded_): a
 * skeleton's ELF bytes sit in the binary's read-only data and are read
 * once, when the object is opened and loaded (libbpf copies what it keeps:
 * the programs' instructions, the BTF, the maps' initial data). Their
 * pages would stay resident, and private to vmactd, for its whole life:
 * about 200 KiB for the three objects (doc/actuation.md, "vmactd's own
 * footprint"). */
#pragma once

#include <stddef.h>

/* Hands back to the kernel the pages wholly inside the bytes a skeleton's
 * NAME__elf_bytes gives (MADV_PAGEOUT, Linux 5.4): the mapping stays and
 * the binary still holds the bytes, so a later read would only fault them
 * in again. Best effort: an older kernel, or a filter that denies madvise,
 * keeps them resident, which changes nothing else. */
void smp_embedded_drop(const void *(*elf_bytes)(size_t *len));
