/* SPDX-License-Identifier: Apache-2.0 */
/* QEMU's name for a vCPU thread, "CPU <n>/KVM" (or /TCG, /HVF...), as
 * /proc/<pid>/task/<tid>/comm and stat show it: read by hotplug/ (which
 * vCPUs QEMU runs) and bpf/ (which threads are vCPUs). A thread's name is
 * QEMU's to choose, so the rule is strict and one: the BPF program's
 * (bpf/readvm.bpf.c vcpu_name). */
#pragma once

/* N from "CPU ", 1 to 10 digits, '/', one more character that is not a
 * space or the end; else (also for an N above INT_MAX) -1. */
int vmact_vcpu_thread_index(const char *comm);
