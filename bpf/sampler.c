/* SPDX-License-Identifier: Apache-2.0 */
/* The sampler's public API (sampler.h): picks a backend (backend.h: BPF in
 * sampler-bpf.c, else taskstats in sampler-taskstats.c), keeps the VM
 * slots (slots.h) and turns each backend reading into a VM's
 * readout (readout.h). */
#include "bpf/sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include <systemd/sd-event.h>

#include "base/cpustat.h"
#include "base/macro.h"
#include "bpf/backend.h"
#include "bpf/readout.h"
#include "bpf/slots.h"
#include "bpf/watch.h"

#define SMP_DEFAULT_PIN_ROOT    "/sys/fs/bpf/vmact"
#define SMP_DEFAULT_MAX_VMS     1024
#define SMP_DEFAULT_MAX_THREADS 32768
#define SMP_DEFAULT_POLL_MS     1000

struct smp_sampler {
	struct smp_be *be;
	const struct smp_backend_ops *ops;
	char *reason; /* why taskstats, when it is not BPF */
	unsigned poll_ms;
	struct smp_slots reg;

	sd_event_source *timer;
	uint64_t polls;
	uint64_t watch_gens;        /* the last registration's watch_gen */
	sd_event_source *watch_src; /* the watch's ring buffer, on the loop */
	smp_window_fn *watch_cb;
	void *watch_data;
	struct vmact_err poll_err;
};

int smp_open(const struct smp_config *cfg, struct smp_sampler **out, struct vmact_err *err)
{
	static const struct smp_config defaults = { 0 };
	struct smp_config rc;
	struct smp_sampler *s;
	int r;

	if (!cfg)
		cfg = &defaults;
	if (cfg->backend > SMP_BACKEND_TASKSTATS)
		return vmact_err_set(err, EINVAL, "sampler: backend: unknown value %d",
				     (int)cfg->backend);
	if (cfg->pin_root && cfg->pin_root[0] != '/')
		return vmact_err_set(err, EINVAL, "sampler: pin_root: not an absolute path: %s",
				     cfg->pin_root);
	if (cfg->pin_root && strlen(cfg->pin_root) > 200)
		return vmact_err_set(err, ENAMETOOLONG, "sampler: pin_root: longer than 200 bytes");
	if (cfg->max_vms > 65536)
		return vmact_err_set(err, EINVAL, "sampler: max_vms: %u is above 65536",
				     cfg->max_vms);
	if (cfg->max_threads > (1u << 22))
		return vmact_err_set(err, EINVAL, "sampler: max_threads: %u is above %u",
				     cfg->max_threads, 1u << 22);
	if (cfg->poll_ms && cfg->poll_ms < 10)
		return vmact_err_set(err, EINVAL, "sampler: poll_ms: %u is below 10", cfg->poll_ms);

	rc = *cfg;
	if (!rc.pin_root)
		rc.pin_root = SMP_DEFAULT_PIN_ROOT;
	if (!rc.max_vms)
		rc.max_vms = SMP_DEFAULT_MAX_VMS;
	if (!rc.max_threads)
		rc.max_threads = SMP_DEFAULT_MAX_THREADS;
	if (!rc.poll_ms)
		rc.poll_ms = SMP_DEFAULT_POLL_MS;

	s = calloc(1, sizeof(*s));
	if (!s)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	s->poll_ms = rc.poll_ms;
	r = smp_slots_init(&s->reg, rc.max_vms, err);
	if (r < 0) {
		smp_close(s);
		return r;
	}

	if (cfg->backend != SMP_BACKEND_TASKSTATS) {
		struct vmact_err berr = { 0 };

		r = smp_bpf_ops.open(&rc, &s->be, &berr);
		if (r == 0) {
			s->ops = &smp_bpf_ops;
			*out = s;
			return 0;
		}
		if (cfg->backend == SMP_BACKEND_BPF) {
			smp_close(s);
			return vmact_err_set(err, -r, "%s", berr.msg);
		}
		s->reason = strdup(berr.msg);
	} else {
		s->reason = strdup("taskstats forced by configuration");
	}
	if (!s->reason) {
		smp_close(s);
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	r = smp_taskstats_ops.open(&rc, &s->be, err);
	if (r < 0) {
		if (cfg->backend != SMP_BACKEND_TASKSTATS)
			vmact_err_prefix(err, "BPF unavailable (%s), and fallback failed",
					 s->reason);
		smp_close(s);
		return r;
	}
	s->ops = &smp_taskstats_ops;
	*out = s;
	return 0;
}

void smp_close(struct smp_sampler *s)
{
	if (!s)
		return;
	sd_event_source_disable_unref(s->timer);
	sd_event_source_disable_unref(s->watch_src);
	if (s->ops)
		s->ops->close(s->be);
	smp_slots_done(&s->reg);
	free(s->reason);
	free(s);
}

enum smp_backend smp_backend_used(const struct smp_sampler *s)
{
	return s->ops->kind;
}

const char *smp_fallback_reason(const struct smp_sampler *s)
{
	return s->reason;
}

const char *smp_pin_root(const struct smp_sampler *s)
{
	return s->ops->pin_root ? s->ops->pin_root(s->be) : NULL;
}

int smp_prog_ids(const struct smp_sampler *s, uint32_t *ids, size_t max)
{
	return s->ops->prog_ids ? s->ops->prog_ids(s->be, ids, max) : 0;
}

unsigned smp_poll_ms(const struct smp_sampler *s)
{
	return s->poll_ms;
}

unsigned smp_count(const struct smp_sampler *s)
{
	return s->reg.count;
}

int smp_find(const struct smp_sampler *s, const char *name)
{
	return smp_slots_find(&s->reg, name);
}

int smp_register(struct smp_sampler *s, const char *name, pid_t tgid, const char *cpu_cgroup,
		 struct vmact_err *err)
{
	struct smp_entry *e;
	struct smp_totals first;
	uint64_t t;
	int64_t seed_n;
	int r, slot;

	r = smp_slots_check(&s->reg, name, tgid, err);
	if (r < 0)
		return r;
	slot = smp_slots_reserve(&s->reg, name, tgid, cpu_cgroup, err);
	if (slot < 0)
		return vmact_err_prefix(err, "sampler: registering %s", name);
	e = &s->reg.e[slot];
	r = s->ops->add_vm(s->be, (unsigned)slot, tgid, err);
	if (r < 0)
		goto fail;
	r = s->ops->read(s->be, (unsigned)slot, tgid, &first, &t, err);
	if (r < 0) {
		s->ops->remove_vm(s->be, (unsigned)slot, tgid, NULL);
		goto fail;
	}
	seed_n = s->ops->runnable_at_start ? s->ops->runnable_at_start(s->be, tgid, &first)
					   : first.nr_runnable;
	smp_readout_start(&e->rs, &first, t, seed_n);
	/* Baseline for the first interval's throttling deltas; a cgroup that
	 * cannot be read yet is reported by the readouts, not here. */
	if (e->cgroup)
		e->rs.have_cs = vmact_cpustat_read_cached(e->cgroup, &e->cs_fd, &e->rs.last_cs,
							  NULL) == 0;
	e->watch_gen = ++s->watch_gens;
	e->watched = false;
	smp_slots_commit(&s->reg, (unsigned)slot);
	return slot;

fail:
	smp_slots_abort(&s->reg, (unsigned)slot);
	vmact_err_prefix(err, "sampler: registering %s", name);
	return r;
}

int smp_unregister(struct smp_sampler *s, const char *name, struct vmact_err *err)
{
	int slot = smp_find(s, name);
	int r;

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	if (s->reg.e[slot].watched) {
		struct smp_watch_cfg off = { .slot = (unsigned)slot, .on = 0 };
		const char *why;

		smp_watch_set_slot(s->ops->watch(s->be, &why), &off, NULL);
	}
	r = s->ops->remove_vm(s->be, (unsigned)slot, s->reg.e[slot].tgid, err);
	smp_slots_release(&s->reg, (unsigned)slot);
	return r;
}

/* The reading of one VM from its totals now (taken at t). */
static int finish_reading(struct smp_sampler *s, unsigned slot, const struct smp_totals *now,
			  uint64_t t, struct smp_reading *r, struct vmact_err *err)
{
	struct smp_entry *e = &s->reg.e[slot];

	smp_readout_step(&e->rs, now, t, r);
	if (e->cgroup) {
		struct vmact_cpustat cs;
		int rc = vmact_cpustat_read_cached(e->cgroup, &e->cs_fd, &cs, err);

		if (rc < 0)
			return rc;
		smp_readout_cpustat(&e->rs, &cs, r);
	}
	if (s->ops->publish) {
		struct smp_readout o;

		smp_readout_record(r, e->name, e->tgid, t, &o);
		s->ops->publish(s->be, slot, &o);
	}
	return 0;
}

int smp_read_slot(struct smp_sampler *s, int slot, struct smp_reading *out, struct vmact_err *err)
{
	struct smp_totals now;
	uint64_t t;
	int r;

	if (slot < 0 || (unsigned)slot >= s->reg.max || !s->reg.e[slot].used)
		return vmact_err_set(err, ENOENT, "sampler: slot %d: not registered", slot);
	r = s->ops->read(s->be, (unsigned)slot, s->reg.e[slot].tgid, &now, &t, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", s->reg.e[slot].name);
	r = finish_reading(s, (unsigned)slot, &now, t, out, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", s->reg.e[slot].name);
	return 0;
}

int smp_read(struct smp_sampler *s, const char *name, struct smp_reading *out,
	     struct vmact_err *err)
{
	int slot = smp_find(s, name);

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	return smp_read_slot(s, slot, out, err);
}

struct read_all {
	struct smp_sampler *s;
	void (*cb)(const char *name, const struct smp_reading *r, void *data);
	void *data;
	struct vmact_err *err;
	int first;
};

/* One VM's failure (its cgroup went away) must not hide the others:
 * report the first error after reading them all. */
static void read_all_one(unsigned slot, const struct smp_totals *now, uint64_t t, void *data)
{
	struct read_all *a = data;
	struct smp_reading rd;
	int r = finish_reading(a->s, slot, now, t, &rd, a->err);

	if (r < 0) {
		r = vmact_err_prefix(a->err, "sampler: %s", a->s->reg.e[slot].name);
		if (!a->first)
			a->first = r;
		return;
	}
	a->cb(a->s->reg.e[slot].name, &rd, a->data);
}

int smp_read_all(struct smp_sampler *s,
		 void (*cb)(const char *name, const struct smp_reading *r, void *data), void *data,
		 struct vmact_err *err)
{
	struct read_all a = { s, cb, data, err, 0 };
	int r;

	/* All VMs at one instant where the backend can, and where it pays:
	 * for one VM the single read is as cheap. */
	if (s->ops->read_all && s->reg.count > 1) {
		r = s->ops->read_all(s->be, &s->reg, read_all_one, &a, err);
		if (r == 0)
			return a.first;
		if (r != -EOPNOTSUPP)
			return r;
	}
	for (unsigned i = 0; i < s->reg.max; i++) {
		struct smp_reading rd;

		if (!s->reg.e[i].used)
			continue;
		r = smp_read_slot(s, (int)i, &rd, err);
		if (r < 0) {
			if (!a.first)
				a.first = r;
			continue;
		}
		cb(s->reg.e[i].name, &rd, data);
	}
	return a.first;
}

int smp_read_threads(struct smp_sampler *s, const char *name, struct smp_thread *out, size_t max,
		     struct vmact_err *err)
{
	int slot = smp_find(s, name);

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	return s->ops->read_threads(s->be, (unsigned)slot, s->reg.e[slot].tgid, name, out, max,
				    err);
}

/* QEMU's threads of one VM: its vCPUs (at most 255 on x86 without x2APIC
 * tricks) and a handful of others. */
#define SMP_MAX_VM_THREADS 512

static int read_vcpus_slot(struct smp_sampler *s, int slot, const char *name, struct smp_vcpus *out,
			   struct vmact_err *err)
{
	_cleanup_free_ struct smp_thread *th = NULL;
	int n;

	*out = (struct smp_vcpus){ 0 };
	if (s->ops->read_vcpus) {
		int r = s->ops->read_vcpus(s->be, (unsigned)slot, s->reg.e[slot].tgid, name, out,
					   err);

		if (r != -EOPNOTSUPP)
			return r;
		vmact_err_reset(err);
	}
	th = calloc(SMP_MAX_VM_THREADS, sizeof(*th));
	if (!th)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	n = s->ops->read_threads(s->be, (unsigned)slot, s->reg.e[slot].tgid, name, th,
				 SMP_MAX_VM_THREADS, err);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		smp_vcpus_add(out, &th[i]);
	return 0;
}

int smp_read_vcpus(struct smp_sampler *s, const char *name, struct smp_vcpus *out,
		   struct vmact_err *err)
{
	int slot = smp_find(s, name);

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	return read_vcpus_slot(s, slot, name, out, err);
}

int smp_read_with_vcpus(struct smp_sampler *s, const char *name, struct smp_reading *out,
			struct smp_vcpus *vcpus, int *vcpus_rc, struct vmact_err *vcpus_err,
			struct vmact_err *err)
{
	int slot = smp_find(s, name), r;

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	if (s->ops->read_both) {
		struct smp_totals now;
		uint64_t t;

		r = s->ops->read_both(s->be, (unsigned)slot, s->reg.e[slot].tgid, &now, &t, vcpus,
				      err);
		if (r == 0) {
			*vcpus_rc = 0;
			r = finish_reading(s, (unsigned)slot, &now, t, out, err);
			return r < 0 ? vmact_err_prefix(err, "sampler: %s", name) : 0;
		}
		if (r != -EOPNOTSUPP)
			return vmact_err_prefix(err, "sampler: %s", name);
		vmact_err_reset(err);
	}
	r = smp_read_slot(s, slot, out, err);
	if (r < 0)
		return r;
	*vcpus_rc = read_vcpus_slot(s, slot, name, vcpus, vcpus_err);
	return 0;
}

bool smp_read_prog(const struct smp_sampler *s)
{
	return s->ops->read_prog_loaded && s->ops->read_prog_loaded(s->be);
}

int smp_poll(struct smp_sampler *s, struct vmact_err *err)
{
	int first = 0;

	if (!s->ops->poll)
		return 0;
	s->polls++;
	for (unsigned i = 0; i < s->reg.max; i++) {
		int r;

		if (!s->reg.e[i].used)
			continue;
		r = s->ops->poll(s->be, i, s->reg.e[i].tgid, err);
		if (r < 0 && !first)
			first = vmact_err_prefix(err, "sampler: %s", s->reg.e[i].name);
	}
	return first;
}

static int on_poll_timer(sd_event_source *src, uint64_t usec, void *data)
{
	struct smp_sampler *s = data;
	struct vmact_err err = { 0 };
	int r;

	if (smp_poll(s, &err) < 0)
		s->poll_err = err;
	else
		vmact_err_reset(&s->poll_err);
	r = sd_event_source_set_time_relative(src, (uint64_t)s->poll_ms * 1000);
	if (r >= 0)
		r = sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	return r;
}

static int on_watch_io(sd_event_source *src, int fd, uint32_t revents, void *data)
{
	struct smp_sampler *s = data;

	if (s->watch_cb)
		smp_watch_dispatch(s, s->watch_cb, s->watch_data);
	else
		smp_watch_dispatch(s, NULL, NULL);
	return 0;
}

bool smp_watch_pending(const struct smp_sampler *s)
{
	return s->watch_src && sd_event_source_get_pending(s->watch_src) > 0;
}

void smp_watch_handler(struct smp_sampler *s, smp_window_fn *cb, void *data)
{
	s->watch_cb = cb;
	s->watch_data = data;
}

int smp_attach_event(struct smp_sampler *s, sd_event *e, struct vmact_err *err)
{
	int r, fd = smp_watch_fd(s);

	if (fd >= 0 && !s->watch_src) {
		r = sd_event_add_io(e, &s->watch_src, fd, EPOLLIN, on_watch_io, s);
		/* Before any timer due at the same time: a hot VM's window
		 * is a decision to take now, and the slow clock's readings of
		 * a thousand idle VMs (each a timer) must not hold it back. */
		if (r >= 0)
			r = sd_event_source_set_priority(s->watch_src, SD_EVENT_PRIORITY_IMPORTANT);
		if (r < 0)
			return vmact_err_set(err, -r, "sampler: watching its ring buffer: %s",
					     strerror(-r));
	}
	if (!s->ops->poll)
		return 0;
	if (s->timer)
		return vmact_err_set(err, EBUSY, "sampler: already attached to an event loop");
	/* 10% slack lets the loop batch wakeups; polls need no precision. */
	r = sd_event_add_time_relative(e, &s->timer, CLOCK_MONOTONIC, (uint64_t)s->poll_ms * 1000,
				       (uint64_t)s->poll_ms * 100, on_poll_timer, s);
	if (r < 0)
		return vmact_err_set(err, -r, "sampler: adding poll timer: %s", strerror(-r));
	return 0;
}

const char *smp_poll_error(const struct smp_sampler *s)
{
	return s->poll_err.code ? s->poll_err.msg : NULL;
}

uint64_t smp_polls(const struct smp_sampler *s)
{
	return s->polls;
}

/* ---- the watch ---- */

static struct smp_watch *watch_of(const struct smp_sampler *s, const char **why)
{
	*why = "the taskstats backend has no watch";
	return s->ops->watch ? s->ops->watch(s->be, why) : NULL;
}

const char *smp_watch_reason(const struct smp_sampler *s)
{
	const char *why;

	return watch_of(s, &why) ? NULL : why;
}

int smp_watch_vm(struct smp_sampler *s, const char *name, const struct smp_watch_params *p,
		 void *owner, struct vmact_err *err)
{
	const char *why;
	struct smp_watch *w = watch_of(s, &why);
	int slot = smp_find(s, name);
	struct smp_watch_cfg cfg;
	int r;

	if (!w)
		return vmact_err_set(err, EOPNOTSUPP, "sampler: no watch: %s", why);
	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	cfg = (struct smp_watch_cfg){
		.slot = (unsigned)slot,
		.on = 1,
		.gen = s->reg.e[slot].watch_gen,
		.allowance_milli = p->allowance_milli,
		.target_permille = p->target_permille,
		.up_window_ns = p->up_window_ns,
		.cool_ns = p->cool_ns,
	};
	r = smp_watch_set_slot(w, &cfg, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", name);
	s->reg.e[slot].watched = true;
	s->reg.e[slot].watch_owner = owner;
	return 0;
}

static void window_from(struct smp_window *out, const struct smp_watch_win *w)
{
	*out = (struct smp_window){
		.kind = (enum smp_window_kind)w->kind,
		.seq = w->seq,
		.at = w->at,
		.len = w->len,
		.runnable_ns = w->runnable_ns,
		.delay_ns = w->delay_ns,
		.runnable_now = w->runnable_now,
		.exact = w->exact != 0,
	};
}

int smp_watch_read(struct smp_sampler *s, const char *name, struct smp_window *out, bool *hot,
		   struct vmact_err *err)
{
	const char *why;
	struct smp_watch *w = watch_of(s, &why);
	int slot = smp_find(s, name);
	struct smp_watch_win win;
	int r;

	if (!w)
		return vmact_err_set(err, EOPNOTSUPP, "sampler: no watch: %s", why);
	if (slot < 0 || !s->reg.e[slot].watched)
		return vmact_err_set(err, ENOENT, "sampler: %s: not watched", name);
	r = smp_watch_close_slot(w, (unsigned)slot, s->reg.e[slot].watch_gen, &win, hot, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", name);
	if (!*hot)
		window_from(out, &win);
	return 0;
}

int smp_watch_fd(const struct smp_sampler *s)
{
	const char *why;
	struct smp_watch *w = watch_of(s, &why);

	return w ? smp_watch_ring_fd(w) : -1;
}

struct dispatch {
	struct smp_sampler *s;
	smp_window_fn *cb;
	void *data;
	int n;
};

static int dispatch_one(const struct smp_watch_win *win, void *data)
{
	struct dispatch *d = data;
	const struct smp_entry *e;
	struct smp_window out;

	if (win->slot >= d->s->reg.max)
		return 0;
	e = &d->s->reg.e[win->slot];
	/* A window of the VM that held the slot before. */
	if (!e->used || !e->watched || e->watch_gen != win->gen)
		return 0;
	window_from(&out, win);
	if (d->cb)
		d->cb(e->watch_owner, e->name, &out, d->data);
	d->n++;
	return 0;
}

int smp_watch_dispatch(struct smp_sampler *s, smp_window_fn *cb, void *data)
{
	const char *why;
	struct smp_watch *w = watch_of(s, &why);
	struct dispatch d = { .s = s, .cb = cb, .data = data };
	int r;

	if (!w)
		return 0;
	r = smp_watch_consume(w, dispatch_one, &d);
	return r < 0 ? r : d.n;
}

int smp_watch_cost(const struct smp_sampler *s, uint64_t *ns, uint64_t *runs, uint64_t *deferred)
{
	const char *why;
	struct smp_watch *w = watch_of(s, &why);

	if (!w)
		return -EOPNOTSUPP;
	smp_watch_kernel_cost(w, ns, runs, deferred);
	return 0;
}

int smp_read_throttled(struct smp_sampler *s, const char *name, uint64_t *throttled_ns,
		       struct vmact_err *err)
{
	int slot = smp_find(s, name);
	struct smp_entry *e;
	struct vmact_cpustat cs;
	int r;

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	e = &s->reg.e[slot];
	if (!e->cgroup)
		return vmact_err_set(err, ENOENT, "sampler: %s: no cgroup", name);
	r = vmact_cpustat_read_cached(e->cgroup, &e->cs_fd, &cs, err);
	if (r < 0)
		return r;
	*throttled_ns = cs.throttled_ns;
	return 0;
}
