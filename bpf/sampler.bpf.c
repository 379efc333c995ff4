// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* vmact load sampler, kernel side. Tracks, per registered QEMU process
 * (tgid), how many of its threads are runnable (running or queued) and how
 * many are on a CPU, as exact time integrals (see sampler-types.h), plus
 * wakeup and context-switch counts. Keyed by tgid so cgroup v1 and v2 hosts
 * behave the same.
 *
 * Two sets of scheduler hooks with the same logic: tp_btf (typed task
 * pointers, direct loads) and raw_tp for kernels without tp_btf; the loader
 * enables one set with bpf_program__set_autoload(). Two iter/task programs:
 * one seeds threads that were already runnable when a VM was registered,
 * the other reports at each readout the run time of threads whose switch-in
 * was never reported (see recover()). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/sampler-types.h"
#include "bpf/vcpu-comm.bpf.h"

#define TASK_RUNNING 0
#define TASK_DEAD 0x80

/* Knobs set by the loader between open and load. */
const volatile bool per_thread = true;
/* The tgid table's index mask: SMP_TGID_TABLE - 1, or fewer entries for
 * the tests of shared entries (smp_config.tgid_table_mask). */
const volatile __u32 tgid_mask = SMP_TGID_TABLE - 1;

/* A direct-mapped table in front of vmact_vms, indexed by tgid &
 * tgid_mask: 0 where no registered VM's tgid maps, (slot + 1) << 32 |
 * tgid where exactly one does, SMP_TGID_SHARED << 32 where several do
 * (then vmact_vms answers). The loader keeps it through the mmapped .bss,
 * setting an entry once the VM is in vmact_vms and clearing it before the
 * VM leaves. Nearly every scheduler event is of another process, the idle
 * task included, and a registered VM's threads need their slot at each
 * event: one load instead of a hash lookup for both. Off (0) until the
 * loader has the .bss mapped; then every event asks vmact_vms, as before. */
__u32 vmact_tgid_table_on;
__u64 vmact_tgid_table[SMP_TGID_TABLE];

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct smp_vm);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vmact_vms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32); /* slot */
	__type(value, struct smp_cpu_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vmact_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32); /* tid */
	__type(value, struct smp_task);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vmact_tasks SEC(".maps");

/* The vCPU threads' gauges per VM, for the watch (sampler-types.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32); /* slot */
	__type(value, struct smp_vgauge);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vmact_vgauge SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32); /* slot */
	__type(value, struct smp_readout);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} vmact_readout SEC(".maps");

/* task_struct::state before 5.14 (kernel commit 2f064a59a1). */
struct task_struct___o {
	volatile long state;
} __attribute__((preserve_access_index));

/* Looks up (or creates, zeroed) the state of a thread of a registered VM.
 * Returns NULL for threads of other processes, which is the common case and
 * costs one load (vmact_tgid_table). */
static __always_inline struct smp_task *vm_task(__u32 tid, __u32 tgid,
						struct smp_cpu_stats **stats, bool *fresh)
{
	struct smp_task *t, zero = {};
	struct smp_cpu_stats *s;
	struct smp_vm *vm;
	__u64 e = (__u64)SMP_TGID_SHARED << 32;
	__u32 slot, s1;

	if (vmact_tgid_table_on)
		e = vmact_tgid_table[tgid & tgid_mask & (SMP_TGID_TABLE - 1)];
	s1 = e >> 32;
	if (s1 == SMP_TGID_SHARED) {
		vm = bpf_map_lookup_elem(&vmact_vms, &tgid);
		if (!vm)
			return NULL;
		slot = vm->slot;
	} else if (s1 && (__u32)e == tgid) {
		slot = s1 - 1;
	} else {
		return NULL;
	}
	s = bpf_map_lookup_elem(&vmact_stats, &slot);
	if (!s)
		return NULL;
	*stats = s;
	*fresh = false;
	t = bpf_map_lookup_elem(&vmact_tasks, &tid);
	/* A leftover from an earlier registration of this tid: start over. */
	if (t && (t->slot != slot || t->tgid != tgid)) {
		bpf_map_delete_elem(&vmact_tasks, &tid);
		t = NULL;
	}
	if (!t) {
		zero.tgid = tgid;
		zero.slot = slot;
		/* NOEXIST: the seeding iterator may have won the race, and
		 * then its entry is the right one. */
		*fresh = !bpf_map_update_elem(&vmact_tasks, &tid, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&vmact_tasks, &tid);
		if (!t)
			s->untracked++;
	}
	return t;
}

/* A vCPU thread's change of the VM's vCPU gauges: d (+1/-1) at now, on the
 * runnable gauge or the on-CPU one. Atomic: the gauges are shared by every
 * CPU (sampler-types.h, smp_vgauge). */
/* The VM's vCPU gauges, for a thread that is one of its vCPUs; else NULL. */
static __always_inline struct smp_vgauge *vgauge_of(const struct smp_task *t)
{
	__u32 slot = t->slot;

	return t->vcpu ? bpf_map_lookup_elem(&vmact_vgauge, &slot) : NULL;
}

static __always_inline void vgauge_add(struct smp_task *t, bool on, __s64 d, __u64 now)
{
	struct smp_vgauge *g = vgauge_of(t);

	if (!g)
		return;
	if (on) {
		__sync_fetch_and_add(&g->nr_on, d);
		__sync_fetch_and_add(&g->on_tsum, d * now);
	} else {
		__sync_fetch_and_add(&g->nr_run, d);
		__sync_fetch_and_add(&g->run_tsum, d * now);
	}
}

/* Time that happened without its events (recover()): moved into the vCPU
 * gauges' integrals as the per-CPU ones get it, by lowering the time sums
 * as if the thread had been counted `lost` ns earlier. */
static __always_inline void vgauge_lost(struct smp_task *t, bool runnable_too, __u64 lost)
{
	struct smp_vgauge *g = vgauge_of(t);

	if (!g)
		return;
	__sync_fetch_and_add(&g->on_tsum, -lost);
	if (runnable_too)
		__sync_fetch_and_add(&g->run_tsum, -lost);
}

static __always_inline void set_runnable(struct smp_task *t, struct smp_cpu_stats *s,
					 __u64 now)
{
	t->runnable = 1;
	s->nr_runnable++;
	s->runnable_tsum += now;
	if (per_thread)
		t->runnable_since = now;
	vgauge_add(t, false, 1, now);
}

static __always_inline void clear_runnable(struct smp_task *t, struct smp_cpu_stats *s,
					   __u64 now)
{
	t->runnable = 0;
	s->nr_runnable--;
	s->runnable_tsum -= now;
	if (per_thread)
		t->runnable_ns += now - t->runnable_since;
	vgauge_add(t, false, -1, now);
}

static __always_inline void set_oncpu(struct smp_task *t, struct smp_cpu_stats *s, __u64 now)
{
	t->oncpu = 1;
	s->nr_oncpu++;
	s->oncpu_tsum += now;
	t->oncpu_since = now;
	vgauge_add(t, true, 1, now);
}


/* A thread QEMU has named a vCPU since we last looked: from now on it is
 * in the vCPU gauges, with the state it has. The first switch-outs only:
 * QEMU names a thread as it starts, and an I/O thread is not looked at
 * for ever. */
#define VCPU_NAME_CHECKS 8

static __always_inline void check_vcpu(struct smp_task *t, const char *comm, __u64 now)
{
	if (t->vcpu || t->name_checks >= VCPU_NAME_CHECKS)
		return;
	t->name_checks++;
	if (!vcpu_comm(comm))
		return;
	t->vcpu = 1;
	if (t->runnable)
		vgauge_add(t, false, 1, now);
	if (t->oncpu)
		vgauge_add(t, true, 1, now);
}

#define RECOVER_MIN_NS SMP_RECOVER_MIN_NS

/* The thread is switching out or in and has run exec ns in total. Anything
 * the kernel counts since the last sync point beyond what the hooks counted
 * was spent on a CPU we were never told about: add it to the integrals now,
 * and to the runnable ones too if we did not know the thread was runnable
 * either. At a switch-out that is a lost switch-in; at a wake-up or a
 * switch-in, a lost pair (the thread ran and left unseen). */
static __always_inline void recover(struct smp_task *t, struct smp_cpu_stats *s, __u64 now,
				    __u64 exec)
{
	__u64 kernel_ns, seen_ns, lost;

	if (!t->exec_ok)
		return;
	kernel_ns = exec - t->exec_sync;
	seen_ns = t->oncpu ? now - t->oncpu_since : 0;
	if ((__s64)kernel_ns <= 0 || kernel_ns <= seen_ns + RECOVER_MIN_NS)
		return;
	lost = kernel_ns - seen_ns;
	s->oncpu_tsum -= lost;
	s->recovered_ns += lost;
	s->recoveries++;
	vgauge_lost(t, !t->runnable, lost);
	if (per_thread)
		t->oncpu_ns += lost;
	if (!t->runnable) {
		s->runnable_tsum -= lost;
		if (per_thread)
			t->runnable_ns += lost;
	}
}

static __always_inline void sync_exec(struct smp_task *t, __u64 exec)
{
	t->exec_sync = exec;
	t->exec_ok = 1;
}

/* Task fields, read only once a task is known to be a VM thread (most
 * scheduler events are not). raw: the raw_tp programs, whose task pointers
 * are untyped and need probe reads; tp_btf loads them directly. The flag is
 * a constant at every call site, so the other branch is compiled out. */
static __always_inline unsigned int task_state(struct task_struct *t, bool raw)
{
	if (bpf_core_field_exists(t->__state))
		return raw ? BPF_CORE_READ(t, __state) : t->__state;
	return raw ? BPF_CORE_READ((struct task_struct___o *)t, state)
		   : ((struct task_struct___o *)t)->state;
}

static __always_inline __u64 task_exec(struct task_struct *t, bool raw)
{
	return raw ? BPF_CORE_READ(t, se.sum_exec_runtime) : t->se.sum_exec_runtime;
}

static __always_inline bool task_on_cpu(struct task_struct *t, bool raw)
{
	return raw ? BPF_CORE_READ(t, on_cpu) : t->on_cpu;
}

/* The task's name, for check_vcpu: a direct pointer where the task is
 * typed, else read into buf. */
static __always_inline const char *comm_of(struct task_struct *t, bool raw, char *buf)
{
	if (!raw)
		return t->comm;
	bpf_probe_read_kernel(buf, 16, t->comm);
	return buf;
}

/* on_cpu: the woken task's task_struct::on_cpu. A thread can be woken while
 * it is still on its CPU: it set a sleeping state and a waker got in before
 * it called schedule() (ttwu_runnable), and then it keeps running with no
 * sched_switch at all. A tracked thread's on-CPU flag is already right;
 * only a thread first seen here needs the kernel's word, or a busy thread
 * alone on its CPU would count as waiting until its next preemption. */
static __always_inline void on_wakeup(struct task_struct *p, __u32 tid, __u32 tgid, bool is_new,
				      bool raw)
{
	struct smp_cpu_stats *s;
	struct smp_task *t;
	bool fresh, on_cpu;
	__u64 now, exec;
	char comm[16];

	t = vm_task(tid, tgid, &s, &fresh);
	if (!t || t->runnable)
		return;
	now = bpf_ktime_get_ns();
	if (!fresh) {
		/* Whatever it ran since we last saw it was never seen, nor
		 * counted as runnable: settle that before it becomes
		 * runnable, or the runnable part would be lost. */
		exec = task_exec(p, raw);
		recover(t, s, now, exec);
		sync_exec(t, exec);
	}
	if (fresh)
		check_vcpu(t, comm_of(p, raw, comm), now);
	set_runnable(t, s, now);
	if (fresh) {
		/* A new task has never run. */
		on_cpu = !is_new && task_on_cpu(p, raw);
		if (on_cpu && !t->oncpu)
			set_oncpu(t, s, now);
		/* Off a CPU its run time stands still: a good base. On one,
		 * the kernel's figure lags by up to a tick; wait for a switch. */
		if (!on_cpu)
			sync_exec(t, task_exec(p, raw));
	}
	s->wakeups++;
}

static __always_inline void on_switch(bool preempt, struct task_struct *prev, __u32 prev_tid,
				      __u32 prev_tgid, struct task_struct *next, __u32 next_tid,
				      __u32 next_tgid, bool raw)
{
	struct smp_cpu_stats *s;
	struct smp_task *t;
	unsigned int prev_state;
	__u64 now = 0, exec;
	bool still, fresh;
	char comm[16];

	t = vm_task(prev_tid, prev_tgid, &s, &fresh);
	if (t) {
		now = bpf_ktime_get_ns();
		prev_state = task_state(prev, raw);
		exec = task_exec(prev, raw);
		s->switches++;
		recover(t, s, now, exec);
		sync_exec(t, exec);
		check_vcpu(t, comm_of(prev, raw, comm), now);
		if (t->oncpu) {
			t->oncpu = 0;
			s->nr_oncpu--;
			s->oncpu_tsum -= now;
			if (per_thread)
				t->oncpu_ns += now - t->oncpu_since;
			vgauge_add(t, true, -1, now);
		}
		/* Preempted, yielded, or a sleep aborted by a signal: the
		 * thread stays on the runqueue. */
		still = preempt || prev_state == TASK_RUNNING;
		if (still) {
			s->preemptions++;
			if (!t->runnable) /* first sight since registration */
				set_runnable(t, s, now);
		} else if (t->runnable) {
			clear_runnable(t, s, now);
		}
		if (prev_state & TASK_DEAD)
			bpf_map_delete_elem(&vmact_tasks, &prev_tid);
	}

	t = vm_task(next_tid, next_tgid, &s, &fresh);
	if (t) {
		if (!now)
			now = bpf_ktime_get_ns();
		exec = task_exec(next, raw);
		recover(t, s, now, exec);
		if (fresh)
			check_vcpu(t, comm_of(next, raw, comm), now);
		if (!t->runnable)
			set_runnable(t, s, now);
		if (!t->oncpu)
			set_oncpu(t, s, now);
		sync_exec(t, exec);
	}
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(vmact_wakeup, struct task_struct *p)
{
	on_wakeup(p, p->pid, p->tgid, false, false);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(vmact_wake_new, struct task_struct *p)
{
	on_wakeup(p, p->pid, p->tgid, true, false);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(vmact_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch(preempt, prev, prev->pid, prev->tgid, next, next->pid, next->tgid, false);
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(vmact_rwake, struct task_struct *p)
{
	on_wakeup(p, BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid), false, true);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(vmact_rwake_new, struct task_struct *p)
{
	on_wakeup(p, BPF_CORE_READ(p, pid), BPF_CORE_READ(p, tgid), true, true);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(vmact_rswitch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch(preempt, prev, BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid), next,
		  BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid), true);
	return 0;
}

/* Run by the loader after registering a VM: threads that are runnable right
 * now would otherwise only be counted at their next scheduler event, which
 * for a busy thread alone on a CPU may be seconds away. Counters are added
 * atomically because a scheduler hook may preempt this program on the same
 * CPU; the hooks themselves run with interrupts off and cannot nest. */
SEC("iter/task")
int vmact_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct smp_cpu_stats *s;
	struct smp_task t = {};
	struct smp_vm *vm;
	__u32 tgid, tid, slot;
	__u64 now;

	if (!task)
		return 0;
	tgid = task->tgid;
	vm = bpf_map_lookup_elem(&vmact_vms, &tgid);
	if (!vm)
		return 0;
	slot = vm->slot;
	s = bpf_map_lookup_elem(&vmact_stats, &slot);
	if (!s)
		return 0;
	tid = task->pid;
	if (bpf_map_lookup_elem(&vmact_tasks, &tid))
		return 0;
	if (task->__state != TASK_RUNNING)
		return 0;
	now = bpf_ktime_get_ns();
	t.tgid = tgid;
	t.slot = slot;
	t.runnable = 1;
	t.oncpu = task->on_cpu ? 1 : 0;
	t.runnable_since = now;
	t.oncpu_since = now;
	/* As at a wake-up: a running thread's run time lags. */
	t.exec_sync = task->se.sum_exec_runtime;
	t.exec_ok = !t.oncpu;
	t.vcpu = vcpu_comm(task->comm);
	if (bpf_map_update_elem(&vmact_tasks, &tid, &t, BPF_NOEXIST))
		return 0; /* a hook saw the thread first; its state wins */
	vgauge_add(&t, false, 1, now);
	if (t.oncpu)
		vgauge_add(&t, true, 1, now);
	__sync_fetch_and_add(&s->nr_runnable, 1);
	__sync_fetch_and_add(&s->runnable_tsum, now);
	if (t.oncpu) {
		__sync_fetch_and_add(&s->nr_oncpu, 1);
		__sync_fetch_and_add(&s->oncpu_tsum, now);
	}
	return 0;
}

/* Run by the loader at each readout, over one VM's threads (or all tasks on
 * kernels without the pid filter). A thread that switched in without an
 * event reaching us stays "waiting" until its next switch-out, which for a
 * busy thread alone on its CPU may be seconds later; recover() then puts its
 * run time right, but a readout taken before would miss it. While the hooks
 * believe a thread off its CPU its run time must stand still, so any growth
 * since the last sync point is time the hooks did not see. Read-only: the
 * loader adds it to the readout and forgets it, and the switch-out recovery
 * later adds the same time to the integrals themselves. The kernel's figure
 * for a running thread lags by up to a tick; that much is reported late. */
SEC("iter/task")
int vmact_pending(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct smp_pending rec = {};
	struct smp_task *t;
	struct smp_vm *vm;
	__u32 tgid, tid;
	__u64 ns;

	if (!task)
		return 0;
	tgid = task->tgid;
	vm = bpf_map_lookup_elem(&vmact_vms, &tgid);
	if (!vm)
		return 0;
	tid = task->pid;
	t = bpf_map_lookup_elem(&vmact_tasks, &tid);
	if (!t || t->slot != vm->slot || t->tgid != tgid || t->oncpu || !t->exec_ok)
		return 0;
	ns = task->se.sum_exec_runtime - t->exec_sync;
	if ((__s64)ns <= RECOVER_MIN_NS)
		return 0;
	rec.tid = tid;
	rec.slot = vm->slot;
	rec.ns = ns;
	rec.runnable = t->runnable;
	rec.on_cpu = task->on_cpu ? 1 : 0;
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

/* Run by the loader for the per-thread split and the vCPU totals of one VM
 * (pid filter): every thread that vmact_tasks tracks for it, with its name
 * and what vmact_pending would report for it. Read-only, like
 * vmact_pending. */
SEC("iter/task")
int vmact_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct smp_thread_rec rec = {};
	struct smp_task *t;
	struct smp_vm *vm;
	__u32 tgid, tid;
	__u64 ns;

	if (!task)
		return 0;
	tgid = task->tgid;
	vm = bpf_map_lookup_elem(&vmact_vms, &tgid);
	if (!vm)
		return 0;
	tid = task->pid;
	t = bpf_map_lookup_elem(&vmact_tasks, &tid);
	if (!t || t->slot != vm->slot || t->tgid != tgid)
		return 0;
	rec.tid = tid;
	rec.task = *t;
	bpf_probe_read_kernel_str(rec.comm, sizeof(rec.comm), task->comm);
	if (!t->oncpu && t->exec_ok) {
		ns = task->se.sum_exec_runtime - t->exec_sync;
		if ((__s64)ns > RECOVER_MIN_NS) {
			rec.pend.tid = tid;
			rec.pend.slot = vm->slot;
			rec.pend.ns = ns;
			rec.pend.runnable = t->runnable;
			rec.pend.on_cpu = task->on_cpu ? 1 : 0;
		}
	}
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
