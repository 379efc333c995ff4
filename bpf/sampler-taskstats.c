/* SPDX-License-Identifier: Apache-2.0 */
/* taskstats backend of the sampler: each VM's threads polled over generic
 * netlink (taskstats.h), on the daemon's timer and at each readout. */
#include <errno.h>
#include <stdlib.h>

#include "base/time.h"
#include "bpf/backend.h"
#include "bpf/taskstats.h"

struct smp_tsb {
	struct smp_be be;
	struct smp_ts *ts;
	unsigned max_vms;
	struct smp_ts_vm **vm; /* per slot */
};

static struct smp_tsb *to_tsb(struct smp_be *b)
{
	return (struct smp_tsb *)b;
}

static void tsb_close(struct smp_be *b)
{
	struct smp_tsb *s = to_tsb(b);

	if (!s)
		return;
	smp_ts_close(s->ts);
	for (unsigned i = 0; s->vm && i < s->max_vms; i++)
		smp_ts_vm_free(s->vm[i]);
	free(s->vm);
	free(s);
}

static int tsb_open(const struct smp_config *cfg, struct smp_be **out, struct vmact_err *err)
{
	struct smp_tsb *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	s->be.ops = &smp_taskstats_ops;
	s->max_vms = cfg->max_vms;
	s->vm = calloc(s->max_vms, sizeof(*s->vm));
	if (!s->vm) {
		tsb_close(&s->be);
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	r = smp_ts_open(&s->ts, err);
	if (r < 0) {
		tsb_close(&s->be);
		return r;
	}
	*out = &s->be;
	return 0;
}

static int tsb_add_vm(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err)
{
	return smp_ts_vm_new(tgid, &to_tsb(b)->vm[slot], err);
}

static int tsb_remove_vm(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err)
{
	struct smp_tsb *s = to_tsb(b);

	smp_ts_vm_free(s->vm[slot]);
	s->vm[slot] = NULL;
	return 0;
}

static int tsb_poll(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err)
{
	struct smp_tsb *s = to_tsb(b);

	return smp_ts_vm_poll(s->ts, s->vm[slot], err);
}

static int tsb_read(struct smp_be *b, unsigned slot, pid_t tgid, struct smp_totals *out,
		    uint64_t *t, struct vmact_err *err)
{
	struct smp_tsb *s = to_tsb(b);
	struct smp_ts_totals tt;
	int r;

	r = smp_ts_vm_poll(s->ts, s->vm[slot], err);
	if (r < 0)
		return r;
	*t = vmact_now_nsec();
	smp_ts_vm_totals(s->vm[slot], &tt);
	/* taskstats has no count of threads on a CPU: -1. */
	*out = (struct smp_totals){
		.runnable_ns = tt.run_ns + tt.delay_ns,
		.oncpu_ns = tt.run_ns,
		.wakeups = tt.nvcsw,
		.switches = tt.nvcsw + tt.nivcsw,
		.preemptions = tt.nivcsw,
		.nr_runnable = tt.nr_runnable,
		.nr_oncpu = -1,
	};
	return 0;
}

static int tsb_read_threads(struct smp_be *b, unsigned slot, pid_t tgid, const char *name,
			    struct smp_thread *out, size_t max, struct vmact_err *err)
{
	struct smp_tsb *s = to_tsb(b);
	int r = smp_ts_vm_poll(s->ts, s->vm[slot], err);

	if (r < 0)
		return r;
	return (int)smp_ts_vm_threads(s->vm[slot], out, max);
}

const struct smp_backend_ops smp_taskstats_ops = {
	.kind = SMP_BACKEND_TASKSTATS,
	.open = tsb_open,
	.close = tsb_close,
	.add_vm = tsb_add_vm,
	.remove_vm = tsb_remove_vm,
	.read = tsb_read,
	.read_threads = tsb_read_threads,
	.poll = tsb_poll,
};
