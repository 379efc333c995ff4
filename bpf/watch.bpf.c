// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* vmact watch: the reactive policy's readouts closed in the kernel, so that
 * vmactd sleeps while its VMs are idle (sampler-types.h, "The watch"; the
 * policy: doc/policy.md).
 *
 * One BPF timer ticks every tick_ns for all VMs and closes each watched
 * VM's window over the vCPU gauges the scheduler hooks keep (vmact_vgauge,
 * sampler.bpf.c). A window whose vCPUs were busy (runnable time at least
 * target x allowance) makes the VM hot: the windows go to vmactd through
 * the ring buffer, the stretch since vmactd last heard of the VM first
 * (SMP_WATCH_BEFORE: the policy's lead, and its slow average), until the
 * VM has been below the mark for cool_ns (SMP_WATCH_COOL). While a VM's
 * busy run is short of the up window by less than a tick, the VM gets a
 * deadline at the instant it would be full, and a second timer, set to the
 * earliest deadline of all, closes its window then, so that the policy
 * decides at that instant, not up to a tick later. (One timer for all the
 * deadlines, not one per VM: a BPF timer's memory is taken without locks
 * when it is first set, and a thousand of them at once ran out.) A cool VM
 * sends nothing: vmactd reads its windows on its slow clock
 * (vmact_watch_close).
 *
 * A separate object from sampler.bpf.c: BPF timers (5.15), bpf_loop
 * (5.17), the ring buffer (5.8), syscall programs (5.14) and atomic
 * compare-and-exchange (5.12, the BPF ISA's v3: built with -mcpu=v3) are
 * newer than the hooks need, and where this object does not load vmactd
 * polls as before. Its vmact_vgauge is sampler.bpf.c's, handed over by the loader
 * (bpf_map__reuse_fd). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "bpf/sampler-types.h"

#define EBUSY  16
#define ENOENT 2
#define EINVAL 22

/* A cool VM's tick window shorter than this (vmactd closed it just
 * before the tick) is not judged: it runs on to the next tick. */
#define MIN_JUDGE_SHARE 4 /* a quarter of a tick */

/* The watch's lock is a trylock of its own (watch_trylock), not a
 * bpf_spin_lock: the syscall programs are sleepable, and before Linux 6.6
 * the kernel refuses a sleepable program that uses a map with a
 * bpf_spin_lock in it (Debian 12's 6.1: "sleepable progs cannot use
 * bpf_spin_lock yet"). Nothing spins: a timer that finds a VM's watch
 * taken leaves that VM to its next pass (its window stays open, as when
 * the ring buffer is full), and a syscall program that finds it taken
 * answers -EBUSY, which vmactd retries (bpf/watch.c). Whoever holds it
 * calls no helper and never waits, as under a bpf_spin_lock. */
struct watch {
	__u32 lock; /* 0: free, 1: taken */
	struct smp_watch_cfg cfg;
	/* the tick's window: start, and the gauges' integrals then */
	__u64 win_start, win_run0, win_on0;
	/* the stretch vmactd has not had yet, from its end on */
	__u64 slow_start, slow_run0, slow_on0;
	__u64 seq;
	__u64 run_ns;   /* busy windows in a row, hot */
	__u64 lead_ns;  /* the busy part of the stretch before them */
	__u64 below_ns; /* below the mark in a row, hot */
	__u32 hot;
	__u32 armed;     /* the deadline timer closes the window at deadline */
	__u64 deadline; /* bpf_ktime_get_ns() */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32); /* slot */
	__type(value, struct watch);
} vmact_watch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct smp_vgauge);
} vmact_vgauge SEC(".maps");

/* Entry TICK: the tick, every tick_ns; entry EXACT: the deadline timer (a
 * map value holds one timer). Both take tick_ns and nr_slots from TICK. */
struct tick {
	struct bpf_timer timer;
	__u64 tick_ns;
	__u32 nr_slots;
	__u32 running;
};

#define TICK  0
#define EXACT 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct tick);
} vmact_watch_tick SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} vmact_watch_rb SEC(".maps");

/* What the timers cost: their run time in ns and runs, for the bench. */
__u64 watch_ns;
__u64 watch_runs;
/* Windows left open for a later pass, going out longer then: the ring
 * buffer had no room for them, or vmactd held the VM's watch. */
__u64 watch_deferred;

/* Atomic compare-and-exchange and exchange are full barriers: what was
 * written under the lock is seen by its next holder. */
static __always_inline bool watch_trylock(struct watch *w)
{
	return __sync_val_compare_and_swap(&w->lock, 0, 1) == 0;
}

static __always_inline void watch_unlock(struct watch *w)
{
	__sync_lock_test_and_set(&w->lock, 0);
}

/* The integrals of the VM's vCPU gauges at now (sampler-types.h,
 * smp_cpu_stats: T * N - sum, modulo 2^64). */
static __always_inline void integrals(const struct smp_vgauge *g, __u64 now, __u64 *run,
				      __u64 *on, __u32 *nr_now)
{
	__s64 nr = g->nr_run;

	*run = now * (__u64)nr - g->run_tsum;
	*on = now * (__u64)g->nr_on - g->on_tsum;
	*nr_now = nr > 0 ? (__u32)nr : 0;
}

static __always_inline void fill(struct watch *w, struct smp_watch_win *out, __u32 kind,
				 __u64 start, __u64 now, __u64 run, __u64 on, __u32 nr_now)
{
	out->slot = w->cfg.slot;
	out->kind = kind;
	out->gen = w->cfg.gen;
	out->seq = ++w->seq;
	out->at = now;
	out->len = now - start;
	if (on > run)
		on = run;
	out->runnable_ns = run;
	out->delay_ns = run - on;
	out->runnable_now = nr_now;
}

/* Whether a window's vCPUs were busy: runnable at least target x the
 * allowance, on average. */
static __always_inline bool busy(const struct watch *w, __u64 run, __u64 len)
{
	__u64 mark = (__u64)w->cfg.target_permille * w->cfg.allowance_milli / 1000;

	return len && run * 1000 / len >= mark;
}

/* The busy part of a window, as the policy counts its lead: the window's
 * busy share of the allowance, times its length, at most the length. */
static __always_inline __u64 lead_of(const struct watch *w, __u64 run, __u64 len)
{
	__u64 l;

	if (!w->cfg.allowance_milli)
		return 0;
	l = run * 1000 / w->cfg.allowance_milli;
	return l < len ? l : len;
}

struct out2 {
	struct smp_watch_win a, b;
	__u32 n;
};

/* Closes the VM's tick window at now and says what goes out. Called with
 * the lock held; no helper calls in here. */
static __always_inline void judge(struct watch *w, const struct smp_vgauge *g, __u64 now,
				  __u64 tick_ns, struct out2 *o, bool room)
{
	__u64 run_i, on_i, run, len;
	__u32 nr_now;
	bool b;

	integrals(g, now, &run_i, &on_i, &nr_now);
	len = now - w->win_start;
	run = run_i - w->win_run0;
	/* No room in the ring buffer for what this would send: the window
	 * stays open, and goes out longer at the next tick. */
	if (w->hot && !room)
		return;
	if (!w->hot) {
		if (len * MIN_JUDGE_SHARE < tick_ns)
			return;
		b = busy(w, run, len);
		if (!b) {
			w->win_start = now;
			w->win_run0 = run_i;
			w->win_on0 = on_i;
			return;
		}
		if (!room)
			return;
		/* Hot: the stretch vmactd has not had, up to this window,
		 * then this window. */
		if (w->win_start > w->slow_start) {
			fill(w, &o->a, SMP_WATCH_BEFORE, w->slow_start, w->win_start,
			     w->win_run0 - w->slow_run0, w->win_on0 - w->slow_on0, 0);
			w->lead_ns = lead_of(w, o->a.runnable_ns, o->a.len);
			o->n = 1;
		} else {
			w->lead_ns = 0;
		}
		fill(w, o->n ? &o->b : &o->a, SMP_WATCH_HOT, w->win_start, now, run,
		     on_i - w->win_on0, nr_now);
		o->n++;
		w->hot = 1;
		w->run_ns = len;
		w->below_ns = 0;
	} else {
		b = busy(w, run, len);
		if (b) {
			w->run_ns += len;
			w->below_ns = 0;
		} else {
			w->run_ns = 0;
			w->lead_ns = lead_of(w, run, len);
			w->below_ns += len;
		}
		fill(w, &o->a, SMP_WATCH_WINDOW, w->win_start, now, run, on_i - w->win_on0,
		     nr_now);
		o->n = 1;
		if (!b && w->below_ns >= w->cfg.cool_ns) {
			o->a.kind = SMP_WATCH_COOL;
			w->hot = 0;
		}
	}
	w->win_start = now;
	w->win_run0 = run_i;
	w->win_on0 = on_i;
	/* Everything up to now has gone out. */
	w->slow_start = now;
	w->slow_run0 = run_i;
	w->slow_on0 = on_i;
	if (w->hot && b && w->run_ns + w->lead_ns < w->cfg.up_window_ns) {
		__u64 need = w->cfg.up_window_ns - w->run_ns - w->lead_ns;

		if (need < tick_ns) {
			w->deadline = now + need;
			w->armed = 1;
		}
	}
}

/* Whether judge() would send something now: read without the lock, to
 * take room in the ring buffer before taking it (no helper may be called
 * under it). A guess: judge() decides, and gives the room back unused. */
static __always_inline bool may_send(const struct watch *w, const struct smp_vgauge *g,
				     __u64 now, __u64 tick_ns)
{
	__u64 run_i, on_i, len = now - w->win_start;
	__u32 nr_now;

	if (w->hot)
		return true;
	if (len * MIN_JUDGE_SHARE < tick_ns)
		return false;
	integrals(g, now, &run_i, &on_i, &nr_now);
	return busy(w, run_i - w->win_run0, len);
}

/* A deadline this close is met now: the timer that fires for the earliest
 * one takes the others due within it too. */
#define DEADLINE_SLACK_NS 100000

struct pass {
	__u64 tick_ns;
	__u64 next; /* the earliest deadline still ahead, 0: none */
	bool exact; /* the deadline timer's pass */
};

/* One VM at a tick, or at the deadline timer (exact: only VMs whose
 * deadline has come). */
/* The VM's part of a pass under its lock: judged if its time has come;
 * room: a record is reserved for what goes out. Returns its deadline
 * still ahead (0: none). */
static __always_inline __u64 tick_locked(struct watch *w, const struct smp_vgauge *g,
					 const struct pass *p, __u64 now, struct out2 *o, bool room)
{
	__u64 next = 0;
	bool due;

	/* Taken by vmactd's set or close: this VM waits for the next pass
	 * (a tick, or the tick after its deadline). */
	if (!watch_trylock(w)) {
		__sync_fetch_and_add(&watch_deferred, 1);
		return 0;
	}
	due = w->cfg.on && (p->exact ? w->armed && w->deadline <= now + DEADLINE_SLACK_NS
				      : !w->armed || w->deadline + p->tick_ns <= now);
	if (due) {
		w->armed = 0;
		judge(w, g, now, p->tick_ns, o, room);
	}
	if (w->armed)
		next = w->deadline;
	watch_unlock(w);
	return next;
}

static long tick_one(__u64 i, void *ctx)
{
	struct pass *p = ctx;
	__u32 slot = (__u32)i;
	struct smp_vgauge *g = bpf_map_lookup_elem(&vmact_vgauge, &slot);
	struct watch *w = bpf_map_lookup_elem(&vmact_watch, &slot);
	struct smp_watch_rec *rec;
	struct out2 o = {};
	__u64 now, next;
	bool want;

	if (!w || !g || !w->cfg.on || (p->exact && !w->armed))
		return 0;
	now = bpf_ktime_get_ns();
	/* An armed VM is the deadline timer's, unless its deadline is a tick
	 * past (the timer could not be set): then the tick takes it. */
	if (!p->exact && w->armed && w->deadline + p->tick_ns > now)
		return 0;
	/* The record is reserved before the lock (no helper under it), and
	 * tested for NULL once: to an older verifier (Linux 6.1's) a second
	 * test of a pointer known not to be NULL is a path that ends with the
	 * record still held, and it refuses the program for it. */
	want = may_send(w, g, now, p->tick_ns);
	rec = want ? bpf_ringbuf_reserve(&vmact_watch_rb, sizeof(*rec), 0) : NULL;
	if (!rec) {
		if (want)
			__sync_fetch_and_add(&watch_deferred, 1);
		next = tick_locked(w, g, p, now, &o, false);
	} else {
		next = tick_locked(w, g, p, now, &o, true);
		/* Given back with the usual wake-up: a record vmactd has
		 * not passed yet holds back the wake-ups of those after it,
		 * so one given back without would leave them unread until
		 * something else woke it. */
		if (!o.n) {
			bpf_ringbuf_discard(rec, 0);
		} else {
			(o.n > 1 ? &o.b : &o.a)->exact = p->exact;
			rec->n = o.n;
			rec->w[0] = o.a;
			rec->w[1] = o.b;
			/* Woken only when vmactd has read all before: it
			 * takes them all at once. */
			bpf_ringbuf_submit(rec, 0);
		}
	}
	if (next && (!p->next || next < p->next))
		p->next = next;
	return 0;
}

/* Both timers: a pass over the slots, then the deadline timer set to the
 * earliest deadline left. */
static void pass(bool exact)
{
	__u32 k0 = TICK, k1 = EXACT;
	struct tick *t = bpf_map_lookup_elem(&vmact_watch_tick, &k0);
	struct tick *x = bpf_map_lookup_elem(&vmact_watch_tick, &k1);
	struct pass p = { .exact = exact };
	__u64 t0 = bpf_ktime_get_ns(), now;

	if (!t || !x)
		return;
	p.tick_ns = t->tick_ns;
	bpf_loop(t->nr_slots, tick_one, &p, 0);
	if (p.next) {
		now = bpf_ktime_get_ns();
		bpf_timer_start(&x->timer, p.next > now ? p.next - now : 1, 0);
	}
	__sync_fetch_and_add(&watch_ns, bpf_ktime_get_ns() - t0);
	__sync_fetch_and_add(&watch_runs, 1);
}

static int tick_cb(void *map, __u32 *key, struct tick *t)
{
	bpf_timer_start(&t->timer, t->tick_ns, 0);
	pass(false);
	return 0;
}

static int exact_cb(void *map, __u32 *key, struct tick *t)
{
	pass(true);
	return 0;
}

/* Starts the tick (once; a second call changes its period and slots). */
SEC("syscall")
int vmact_watch_start(struct smp_watch_start *ctx)
{
	__u32 k0 = TICK, k1 = EXACT;
	struct tick *t = bpf_map_lookup_elem(&vmact_watch_tick, &k0);
	struct tick *x = bpf_map_lookup_elem(&vmact_watch_tick, &k1);
	long r;

	if (!t || !x || !ctx->tick_ns || ctx->nr_slots > 65536) {
		ctx->rc = -EINVAL;
		return 0;
	}
	t->tick_ns = ctx->tick_ns;
	t->nr_slots = ctx->nr_slots;
	if (!t->running) {
		r = bpf_timer_init(&t->timer, &vmact_watch_tick, 1 /* CLOCK_MONOTONIC */);
		if (!r || r == -EBUSY)
			r = bpf_timer_init(&x->timer, &vmact_watch_tick, 1);
		if (r && r != -EBUSY) {
			ctx->rc = (__s32)r;
			return 0;
		}
		bpf_timer_set_callback(&t->timer, tick_cb);
		bpf_timer_set_callback(&x->timer, exact_cb);
		r = bpf_timer_start(&t->timer, ctx->tick_ns, 0);
		if (r) {
			ctx->rc = (__s32)r;
			return 0;
		}
		t->running = 1;
	}
	ctx->rc = 0;
	return 0;
}

/* Watches a VM (on), changes what it is judged by, or stops (on 0). A new
 * gen, or on after off, starts its windows afresh from now. */
SEC("syscall")
int vmact_watch_set(struct smp_watch_cfg *ctx)
{
	__u32 slot = ctx->slot;
	struct smp_vgauge *g = bpf_map_lookup_elem(&vmact_vgauge, &slot);
	struct watch *w = bpf_map_lookup_elem(&vmact_watch, &slot);
	__u64 now, run_i, on_i;
	__u32 nr_now;

	if (!w || !g)
		return -ENOENT;
	if (!watch_trylock(w))
		return -EBUSY;
	now = bpf_ktime_get_ns();
	integrals(g, now, &run_i, &on_i, &nr_now);
	if (ctx->on && (!w->cfg.on || w->cfg.gen != ctx->gen)) {
		w->win_start = w->slow_start = now;
		w->win_run0 = w->slow_run0 = run_i;
		w->win_on0 = w->slow_on0 = on_i;
		w->hot = 0;
		w->armed = 0;
		w->run_ns = w->lead_ns = w->below_ns = 0;
		w->seq = 0;
	}
	w->cfg = *ctx;
	watch_unlock(w);
	return 0;
}

/* vmactd's slow clock: the window since the VM last went out, for a cool
 * VM (a hot one's come through the ring buffer). */
SEC("syscall")
int vmact_watch_close(struct smp_watch_close *ctx)
{
	__u32 slot = ctx->slot;
	struct smp_vgauge *g = bpf_map_lookup_elem(&vmact_vgauge, &slot);
	struct watch *w = bpf_map_lookup_elem(&vmact_watch, &slot);
	struct smp_watch_win win = {};
	__u64 now, run_i, on_i;
	__u32 nr_now;

	if (!w || !g) {
		ctx->rc = -ENOENT;
		return 0;
	}
	ctx->hot = 0;
	if (!watch_trylock(w)) {
		ctx->rc = -EBUSY;
		return 0;
	}
	ctx->rc = 0;
	now = bpf_ktime_get_ns();
	integrals(g, now, &run_i, &on_i, &nr_now);
	if (!w->cfg.on || w->cfg.gen != ctx->gen) {
		ctx->rc = -ENOENT;
	} else if (w->hot) {
		ctx->hot = 1;
	} else {
		fill(w, &win, SMP_WATCH_SLOW, w->slow_start, now, run_i - w->slow_run0,
		     on_i - w->slow_on0, nr_now);
		w->slow_start = w->win_start = now;
		w->slow_run0 = w->win_run0 = run_i;
		w->slow_on0 = w->win_on0 = on_i;
	}
	watch_unlock(w);
	ctx->win = win;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
