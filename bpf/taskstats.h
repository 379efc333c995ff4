/* SPDX-License-Identifier: Apache-2.0 */
/* taskstats fallback of the sampler: per-thread TASKSTATS_CMD_GET over
 * generic netlink (libnl-genl). cpu_run_virtual_total is the thread's CPU
 * time in ns (se.sum_exec_runtime; cpu_run_real_total is utime+stime, which
 * are tick samples and overcharge busy threads under contention by ~10%) and
 * cpu_delay_total its time runnable-but-waiting (sched_info.run_delay), so
 * their sum is the thread's runnable time. Coarser than BPF: waiting is
 * only accounted when the thread next gets a CPU, CPU time only at the
 * scheduler's accounting points (ticks), and the instantaneous runnable
 * count is a sample of the R states in /proc at poll time. Threads that
 * exit keep their last polled totals; what they did after that poll is
 * lost. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "bpf/sampler.h"

struct smp_ts;
struct smp_ts_vm;
struct nlmsghdr;
struct taskstats;

struct smp_ts_totals {
	uint64_t run_ns, delay_ns; /* sums over live and exited threads */
	uint64_t nvcsw, nivcsw;
	int64_t nr_runnable; /* threads in state R at the last poll */
};

int smp_ts_open(struct smp_ts **out, struct vmact_err *err);
/* The stats of a TASKSTATS_CMD_NEW answer (h->nlmsg_len bytes, checked
 * by the caller against what was received); -EPROTO when it has none. */
int smp_ts_parse(const struct nlmsghdr *h, struct taskstats *st);
void smp_ts_close(struct smp_ts *ts);

int smp_ts_vm_new(pid_t tgid, struct smp_ts_vm **out, struct vmact_err *err);
void smp_ts_vm_free(struct smp_ts_vm *vm);
/* Queries every live thread of the VM; threads gone since the last poll
 * are folded into the totals. */
int smp_ts_vm_poll(struct smp_ts *ts, struct smp_ts_vm *vm, struct vmact_err *err);
void smp_ts_vm_totals(const struct smp_ts_vm *vm, struct smp_ts_totals *out);
size_t smp_ts_vm_threads(const struct smp_ts_vm *vm, struct smp_thread *out, size_t max);
