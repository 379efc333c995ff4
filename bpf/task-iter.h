/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the sampler's BPF task iterators (sampler.bpf.c):
 *  - vmact_pending writes a struct smp_pending for each VM thread whose
 *    kernel run time moved while the hooks believe it off a CPU (a
 *    switch-in no event reported); readouts add that time until the
 *    thread's next seen switch recovers it (readout.h);
 *  - vmact_threads writes a struct smp_thread_rec for each tracked thread
 *    of a VM (the per-thread split and the vCPU totals);
 *  - vmact_seed counts the threads already runnable when a VM registers.
 * Per VM the pending iterator is attached with a pid filter (one link per
 * slot, made on first use); kernels before 6.1 take no filter, and then
 * one link over all tasks serves every VM. Programs and links are file
 * descriptors: the sampler keeps no libbpf object once it is loaded
 * (bpf/sampler-bpf.c). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/list.h"
#include "bpf/sampler-types.h"

/* One record of vmact_pending, in a list. */
struct smp_pending_item {
	struct smp_pending rec;
	VMACT_LIST_FIELDS(struct smp_pending_item, items);
};
void smp_pending_list_free(struct smp_pending_item **head);

struct smp_task_iter {
	/* vmact_pending's (or vmact_threads') fd, owned; -1: not loaded,
	 * nothing pending */
	int prog_fd;
	unsigned max_vms;
	int *vm; /* link fds per slot, with the VM's pid filter; -1: none;
		  * NULL before smp_task_iter_init() and after _done() */
	int all; /* the link over all tasks, -1: none */
	bool no_pid_filter;
};

/* Takes prog_fd (-1: none). */
int smp_task_iter_init(struct smp_task_iter *it, int prog_fd, unsigned max_vms,
		       struct vmact_err *err);
void smp_task_iter_done(struct smp_task_iter *it);
/* Drops the slot's link (its VM is gone). */
void smp_task_iter_drop(struct smp_task_iter *it, unsigned slot);

/* The records of one VM's threads (slot, process tgid) into *out (to be
 * freed with smp_pending_list_free, also after an error). */
int smp_task_iter_vm(struct smp_task_iter *it, unsigned slot, pid_t tgid,
		     struct smp_pending_item **out, struct vmact_err *err);
/* Every record of every VM, to cb. */
int smp_task_iter_all(struct smp_task_iter *it, void (*cb)(const struct smp_pending *p, void *data),
		      void *data, struct vmact_err *err);

/* The records of one VM's threads (it over vmact_threads), to cb; without
 * a pid filter every VM's threads come by (cb checks task.slot).
 * -EOPNOTSUPP when the iterator is not loaded. */
int smp_task_iter_vm_threads(struct smp_task_iter *it, unsigned slot, pid_t tgid,
			     void (*cb)(const struct smp_thread_rec *t, void *data), void *data,
			     struct vmact_err *err);

/* Runs vmact_seed (prog_fd) once, through the link *link_fd, made on first
 * use (-1 before). */
int smp_task_iter_seed(int prog_fd, int *link_fd, struct vmact_err *err);
