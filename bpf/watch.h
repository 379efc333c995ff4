/* SPDX-License-Identifier: Apache-2.0 */
/* The watch's loader (prefix smp_watch_): watch.bpf.c over the sampler's
 * vCPU gauges, its tick, its per-VM settings, vmactd's slow-clock close
 * and the ring buffer the windows of hot VMs come through
 * (sampler-types.h, "The watch"). The sampler (sampler.c) is its only
 * user: slots here are the sampler's. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "bpf/sampler-types.h"

struct smp_watch;

/* Loads the watch over the sampler's vmact_vgauge (its fd) for max_vms
 * slots and starts its tick. -EOPNOTSUPP with the reason in err where the
 * kernel lacks what it needs (sampler.h, smp_watch_reason). */
int smp_watch_load(int vgauge_fd, unsigned max_vms, uint64_t tick_ns, struct smp_watch **out,
		   struct vmact_err *err);
void smp_watch_free(struct smp_watch *w);

int smp_watch_set_slot(struct smp_watch *w, const struct smp_watch_cfg *cfg, struct vmact_err *err);
/* vmact_watch_close for slot under gen: the window since the VM last went
 * out into *out (hot: none, *hot true). */
int smp_watch_close_slot(struct smp_watch *w, unsigned slot, uint64_t gen,
			 struct smp_watch_win *out, bool *hot, struct vmact_err *err);

/* The ring buffer's epoll fd, and its windows to cb (in the order they
 * were sent); the number consumed or -errno. */
int smp_watch_ring_fd(const struct smp_watch *w);
int smp_watch_consume(struct smp_watch *w, int (*cb)(const struct smp_watch_win *win, void *data),
		      void *data);

/* What the kernel side has cost so far: the timers' run time (ns) and
 * runs, and the windows a full ring buffer deferred to a later tick. */
void smp_watch_kernel_cost(const struct smp_watch *w, uint64_t *ns, uint64_t *runs,
			   uint64_t *deferred);
