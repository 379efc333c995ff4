/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/embedded.h"
#include "bpf/watch.skel.h"

struct smp_watch {
	struct watch *skel;
	struct ring_buffer *rb;
	int (*cb)(const struct smp_watch_win *win, void *data);
	void *data;
};

/* A syscall program run once with ctx in and out. */
static int run(struct bpf_program *p, void *ctx, size_t len, int *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = (__u32)len);

	if (bpf_prog_test_run_opts(bpf_program__fd(p), &o) < 0)
		return -errno;
	if (retval)
		*retval = (int)o.retval;
	return 0;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct smp_watch *w = ctx;
	struct smp_watch_rec rec;
	int r = 0;

	if (len < sizeof(rec) || !w->cb)
		return 0;
	memcpy(&rec, data, sizeof(rec));
	for (unsigned i = 0; i < rec.n && i < 2 && r >= 0; i++)
		r = w->cb(&rec.w[i], w->data);
	return r;
}

int smp_watch_load(int vgauge_fd, unsigned max_vms, uint64_t tick_ns, struct smp_watch **out,
		   struct vmact_err *err)
{
	struct smp_watch_start st = { .tick_ns = tick_ns, .nr_slots = max_vms };
	struct smp_watch *w;
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return vmact_err_set(err, ENOMEM, "out of memory");
	w->skel = watch__open();
	if (!w->skel) {
		r = vmact_err_set(err, EOPNOTSUPP, "cannot open the watch: %s", strerror(errno));
		goto fail;
	}
	if (bpf_map__set_max_entries(w->skel->maps.vmact_watch, max_vms) ||
	    bpf_map__set_max_entries(w->skel->maps.vmact_vgauge, max_vms) ||
	    bpf_map__reuse_fd(w->skel->maps.vmact_vgauge, vgauge_fd)) {
		r = vmact_err_set(err, EOPNOTSUPP, "cannot set the watch's maps up: %s",
				  strerror(errno));
		goto fail;
	}
	r = watch__load(w->skel);
	smp_embedded_drop(watch__elf_bytes);
	if (r) {
		r = vmact_err_set(err, EOPNOTSUPP,
				  "the kernel refused the watch (BPF timers, bpf_loop, ring "
				  "buffer, syscall programs: Linux 5.17 or later): %s",
				  strerror(-r));
		goto fail;
	}
	w->rb = ring_buffer__new(bpf_map__fd(w->skel->maps.vmact_watch_rb), on_record, w, NULL);
	if (!w->rb) {
		r = vmact_err_set(err, errno, "watch: ring buffer: %s", strerror(errno));
		goto fail;
	}
	r = run(w->skel->progs.vmact_watch_start, &st, sizeof(st), NULL);
	if (r == 0 && st.rc < 0)
		r = st.rc;
	if (r < 0) {
		r = vmact_err_set(err, EOPNOTSUPP, "watch: cannot start its timer: %s",
				  strerror(-r));
		goto fail;
	}
	*out = w;
	return 0;
fail:
	smp_watch_free(w);
	return r;
}

void smp_watch_free(struct smp_watch *w)
{
	if (!w)
		return;
	ring_buffer__free(w->rb);
	/* The timers go with the maps' last reference. */
	watch__destroy(w->skel);
	free(w);
}

int smp_watch_set_slot(struct smp_watch *w, const struct smp_watch_cfg *cfg, struct vmact_err *err)
{
	struct smp_watch_cfg c = *cfg;
	int r, ret = 0;

	r = run(w->skel->progs.vmact_watch_set, &c, sizeof(c), &ret);
	if (r == 0)
		r = ret;
	if (r < 0)
		return vmact_err_set(err, -r, "watch: slot %u: %s", cfg->slot, strerror(-r));
	return 0;
}

int smp_watch_close_slot(struct smp_watch *w, unsigned slot, uint64_t gen,
			 struct smp_watch_win *out, bool *hot, struct vmact_err *err)
{
	struct smp_watch_close c = { .slot = slot, .gen = gen };
	int r;

	r = run(w->skel->progs.vmact_watch_close, &c, sizeof(c), NULL);
	if (r == 0)
		r = c.rc;
	if (r < 0)
		return vmact_err_set(err, -r, "watch: slot %u: %s", slot, strerror(-r));
	*hot = c.hot;
	*out = c.win;
	return 0;
}

int smp_watch_ring_fd(const struct smp_watch *w)
{
	return ring_buffer__epoll_fd(w->rb);
}

int smp_watch_consume(struct smp_watch *w, int (*cb)(const struct smp_watch_win *win, void *data),
		      void *data)
{
	int n;

	w->cb = cb;
	w->data = data;
	n = ring_buffer__consume(w->rb);
	w->cb = NULL;
	w->data = NULL;
	return n;
}

void smp_watch_kernel_cost(const struct smp_watch *w, uint64_t *ns, uint64_t *runs,
			   uint64_t *deferred)
{
	*ns = __atomic_load_n(&w->skel->bss->watch_ns, __ATOMIC_RELAXED);
	*runs = __atomic_load_n(&w->skel->bss->watch_runs, __ATOMIC_RELAXED);
	*deferred = __atomic_load_n(&w->skel->bss->watch_deferred, __ATOMIC_RELAXED);
}
