/* SPDX-License-Identifier: Apache-2.0 */
/* The interface between the sampler (sampler.c: public API, the VMs' slots,
 * readout) and what counts a VM's threads: the BPF programs
 * (sampler-bpf.c) or taskstats polling (sampler-taskstats.c). A backend
 * reports cumulative totals per VM slot; the readout arithmetic
 * (readout.h) is the same for both. Optional operations are NULL where a
 * backend has nothing to do. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "bpf/readout.h"
#include "bpf/sampler.h"
#include "bpf/slots.h"

struct smp_watch;

struct smp_be;

struct smp_backend_ops {
	enum smp_backend kind;
	/* cfg has every default filled in (pin_root, max_vms, max_threads,
	 * poll_ms). On failure nothing is left behind. */
	int (*open)(const struct smp_config *cfg, struct smp_be **out, struct vmact_err *err);
	void (*close)(struct smp_be *b);
	/* Starts counting process tgid in slot; on failure nothing is left. */
	int (*add_vm)(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err);
	/* Stops it (also after a failed first read; err may be NULL). */
	int (*remove_vm)(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err);
	/* The VM's totals since add_vm, and the CLOCK_MONOTONIC ns they are
	 * taken at. */
	int (*read)(struct smp_be *b, unsigned slot, pid_t tgid, struct smp_totals *out,
		    uint64_t *t, struct vmact_err *err);
	/* Optional: the totals of every used slot of reg at one instant, to
	 * cb; -EOPNOTSUPP when not possible here (read one by one). */
	int (*read_all)(struct smp_be *b, const struct smp_slots *reg,
			void (*cb)(unsigned slot, const struct smp_totals *now, uint64_t t,
				   void *data),
			void *data, struct vmact_err *err);
	/* Optional: the runnable count to start the load averages at, when
	 * the first totals do not know it; NULL: first->nr_runnable. */
	int64_t (*runnable_at_start)(struct smp_be *b, pid_t tgid, const struct smp_totals *first);
	/* Per-thread split; name is for error messages. */
	int (*read_threads)(struct smp_be *b, unsigned slot, pid_t tgid, const char *name,
			    struct smp_thread *out, size_t max, struct vmact_err *err);
	/* Optional: the vCPU threads' totals in one pass; NULL or
	 * -EOPNOTSUPP: summed from read_threads. */
	int (*read_vcpus)(struct smp_be *b, unsigned slot, pid_t tgid, const char *name,
			  struct smp_vcpus *out, struct vmact_err *err);
	/* Optional: read() and read_vcpus() at one instant, in one go;
	 * -EOPNOTSUPP: not here (call them one after the other). */
	int (*read_both)(struct smp_be *b, unsigned slot, pid_t tgid, struct smp_totals *out,
			 uint64_t *t, struct smp_vcpus *vcpus, struct vmact_err *err);
	/* Optional: whether readouts take one syscall per VM (readvm.bpf.c). */
	bool (*read_prog_loaded)(const struct smp_be *b);
	/* Optional: a backend that must poll (the daemon's timer calls it). */
	int (*poll)(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err);
	/* Optional: shows a readout to bpftool. */
	void (*publish)(struct smp_be *b, unsigned slot, const struct smp_readout *o);
	/* Optional: IDs of loaded BPF programs, and where maps are pinned. */
	int (*prog_ids)(const struct smp_be *b, uint32_t *ids, size_t max);
	const char *(*pin_root)(const struct smp_be *b);
	/* Optional: the watch (watch.h), or NULL with the reason in *why. */
	struct smp_watch *(*watch)(struct smp_be *b, const char **why);
};

/* First member of each backend's state. */
struct smp_be {
	const struct smp_backend_ops *ops;
};

extern const struct smp_backend_ops smp_bpf_ops;
extern const struct smp_backend_ops smp_taskstats_ops;
