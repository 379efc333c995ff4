// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* vmact load sampler: one VM's readout in one syscall. The policy reads
 * every VM 4 times a second (doc/policy.md, "What the faster readout
 * costs"); through the task iterators that is a map lookup, two iterator
 * files (create, read, close) and a scan of the sampler's slots per VM and tick. This
 * syscall program, run with BPF_PROG_TEST_RUN, does the same work in the
 * kernel in one call: sums the VM's per-CPU accumulators, then walks the
 * VM's threads (open-coded task iterator) for what vmact_pending reports
 * and for the vCPU threads' totals that vmact_threads feeds.
 *
 * A separate object from sampler.bpf.c: it needs kfuncs in syscall
 * programs (bpf_task_from_pid, the open-coded task iterator), which older
 * kernels lack, and then only this object fails to load and the loader
 * keeps reading through the iterators. Its maps are sampler.bpf.c's, handed
 * over by the loader (bpf_map__reuse_fd); the definitions here only give
 * the verifier their layout. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "bpf/sampler-types.h"
#include "bpf/vcpu-comm.bpf.h"

/* Set by the loader between open and load. */
const volatile __u32 nr_cpus = 1;
const volatile bool per_thread = true;

/* More CPUs than this: the loader does not use this program. */
#define MAX_CPUS 4096

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct smp_cpu_stats);
} vmact_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct smp_task);
} vmact_tasks SEC(".maps");

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;

static __always_inline __u64 delta(__u64 now, __u64 then)
{
	return (__s64)(now - then) > 0 ? now - then : 0;
}


SEC("syscall")
int vmact_read_vm(struct smp_vm_read *ctx)
{
	struct smp_cpu_stats sum = {};
	struct task_struct *proc, *task;
	struct bpf_iter_task it;
	__u32 slot = ctx->slot, tgid = ctx->tgid, c;
	__u64 now, p_on = 0, p_run = 0, v_run = 0, v_on = 0, v_delay = 0;
	__u32 p_nr = 0, threads = 0, vcpus = 0, v_now = 0;

	for (c = 0; c < nr_cpus && c < MAX_CPUS; c++) {
		struct smp_cpu_stats *v = bpf_map_lookup_percpu_elem(&vmact_stats, &slot, c);

		if (!v)
			return -1;
		sum.nr_runnable += v->nr_runnable;
		sum.runnable_tsum += v->runnable_tsum;
		sum.nr_oncpu += v->nr_oncpu;
		sum.oncpu_tsum += v->oncpu_tsum;
		sum.wakeups += v->wakeups;
		sum.switches += v->switches;
		sum.preemptions += v->preemptions;
		sum.untracked += v->untracked;
		sum.recovered_ns += v->recovered_ns;
		sum.recoveries += v->recoveries;
	}
	now = bpf_ktime_get_ns();
	ctx->sum = sum;
	ctx->now = now;

	proc = bpf_task_from_pid((s32)tgid);
	if (!proc) {
		ctx->gone = 1;
		return 0;
	}
	bpf_rcu_read_lock();
	bpf_iter_task_new(&it, proc, BPF_TASK_ITER_PROC_THREADS);
	while ((task = bpf_iter_task_next(&it))) {
		__u32 tid = task->pid;
		struct smp_task *t = bpf_map_lookup_elem(&vmact_tasks, &tid);
		__u64 pend = 0, run, on;
		char comm[16];

		/* As vmact_threads: only the VM's own entries. */
		if (!t || t->slot != slot || t->tgid != tgid)
			continue;
		threads++;
		/* As vmact_pending: run time the hooks did not see start. */
		if (!t->oncpu && t->exec_ok) {
			__u64 ns = task->se.sum_exec_runtime - t->exec_sync;

			if ((__s64)ns > SMP_RECOVER_MIN_NS) {
				pend = ns;
				p_on += ns;
				if (!t->runnable)
					p_run += ns;
				if (task->on_cpu)
					p_nr++;
			}
		}
		if (!per_thread)
			continue;
		__builtin_memcpy(comm, task->comm, sizeof(comm));
		if (!vcpu_comm(comm))
			continue;
		/* As smp_thread_from_task, smp_thread_add_pending and
		 * smp_thread_finish in readout.c. */
		run = t->runnable_ns + (t->runnable ? delta(now, t->runnable_since) : 0);
		on = t->oncpu_ns + (t->oncpu ? delta(now, t->oncpu_since) : 0);
		on += pend;
		if (!t->runnable)
			run += pend;
		if (on > run)
			on = run;
		vcpus++;
		if (t->runnable)
			v_now++;
		v_run += run;
		v_on += on;
		v_delay += run - on;
	}
	bpf_iter_task_destroy(&it);
	bpf_rcu_read_unlock();
	bpf_task_release(proc);

	ctx->pend_oncpu_ns = p_on;
	ctx->pend_runnable_ns = p_run;
	ctx->pend_nr_oncpu = p_nr;
	ctx->threads = threads;
	ctx->vcpus = vcpus;
	ctx->vcpu_runnable_ns = v_run;
	ctx->vcpu_oncpu_ns = v_on;
	ctx->vcpu_delay_ns = v_delay;
	ctx->vcpus_runnable = v_now;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
