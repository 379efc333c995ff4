/* SPDX-License-Identifier: Apache-2.0 */
/* What the sampler reads about a VM's threads from /proc: both backends
 * name threads and check processes the same way. */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* N from QEMU's vCPU thread name "CPU N/KVM" (or /TCG, /HVF...), else -1
 * (also for an N above INT_MAX). */
int smp_thread_vcpu(const char *comm);
/* State letter and (comm may be NULL) name from the text of a
 * /proc/.../stat file (NUL-terminated); -EPROTO when it is not one. */
int smp_stat_parse(const char *line, char *state, char comm[16]);
/* State letter and (comm may be NULL) name of one thread, from
 * /proc/<tgid>/task/<tid>/stat; 0 or a negative errno. */
int smp_thread_stat(pid_t tgid, pid_t tid, char *state, char comm[16]);
/* The thread group of a task id (/proc/<id>/status "Tgid:"): /proc/<tid>
 * answers for threads too, so existence alone does not make a process.
 * -ESRCH when there is no such task. */
int smp_proc_tgid(pid_t id);
/* How many threads of tgid are in state R now (0 when it is gone). */
int64_t smp_proc_runnable(pid_t tgid);
