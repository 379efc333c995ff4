/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/embedded.h"
#include "bpf/fds.h"
#include "bpf/watch.skel.h"

/* Once loaded, the watch is its programs' and maps' file descriptors and
 * its .bss mapped: the object libbpf loaded it from (its BTF, line info and
 * instructions, which libbpf keeps for the object's life) is freed at once
 * (doc/actuation.md, "vmactd's own footprint"). Every map's fd is kept: a
 * map's BPF timers are cancelled when the last user reference to it goes,
 * whatever programs still use it. */
#define WATCH_MAX_MAPS 16

struct smp_watch {
	int start_fd, set_fd, close_fd; /* the syscall programs */
	int map_fds[WATCH_MAX_MAPS];
	unsigned nmaps;
	int rb_fd;                    /* vmact_watch_rb's, one of map_fds */
	const struct watch__bss *bss; /* mapped read-only */
	size_t bss_len;
	struct ring_buffer *rb;
	int (*cb)(const struct smp_watch_win *win, void *data);
	void *data;
};

/* A syscall program run once with ctx in and out. */
static int run(int prog_fd, void *ctx, size_t len, int *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = (__u32)len);

	if (bpf_prog_test_run_opts(prog_fd, &o) < 0)
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

/* The loaded object's programs, maps and .bss, taken into w; 0 or -errno. */
static int keep_fds(struct smp_watch *w, const struct watch *skel)
{
	struct bpf_map *m;
	void *bss;

	if ((w->start_fd = smp_fd_dup(bpf_program__fd(skel->progs.vmact_watch_start))) < 0)
		return w->start_fd;
	if ((w->set_fd = smp_fd_dup(bpf_program__fd(skel->progs.vmact_watch_set))) < 0)
		return w->set_fd;
	if ((w->close_fd = smp_fd_dup(bpf_program__fd(skel->progs.vmact_watch_close))) < 0)
		return w->close_fd;
	bpf_object__for_each_map(m, skel->obj)
	{
		int fd;

		if (w->nmaps == WATCH_MAX_MAPS)
			return -E2BIG;
		fd = smp_fd_dup(bpf_map__fd(m));
		if (fd < 0)
			return fd;
		w->map_fds[w->nmaps++] = fd;
		if (m == skel->maps.vmact_watch_rb)
			w->rb_fd = fd;
		if (m == skel->maps.bss) {
			w->bss_len = bpf_map__value_size(m);
			bss = mmap(NULL, w->bss_len, PROT_READ, MAP_SHARED, fd, 0);
			if (bss == MAP_FAILED)
				return -errno;
			w->bss = bss;
		}
	}
	return w->bss && w->rb_fd >= 0 ? 0 : -ENOENT;
}

int smp_watch_load(int vgauge_fd, unsigned max_vms, uint64_t tick_ns, struct smp_watch **out,
		   struct vmact_err *err)
{
	struct smp_watch_start st = { .tick_ns = tick_ns, .nr_slots = max_vms };
	struct watch *skel = NULL;
	struct smp_watch *w;
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return vmact_err_set(err, ENOMEM, "out of memory");
	w->start_fd = w->set_fd = w->close_fd = w->rb_fd = -1;
	skel = watch__open();
	if (!skel) {
		r = vmact_err_set(err, EOPNOTSUPP, "cannot open the watch: %s", strerror(errno));
		goto fail;
	}
	if (bpf_map__set_max_entries(skel->maps.vmact_watch, max_vms) ||
	    bpf_map__set_max_entries(skel->maps.vmact_vgauge, max_vms) ||
	    bpf_map__reuse_fd(skel->maps.vmact_vgauge, vgauge_fd)) {
		r = vmact_err_set(err, EOPNOTSUPP, "cannot set the watch's maps up: %s",
				  strerror(errno));
		goto fail;
	}
	r = watch__load(skel);
	smp_embedded_drop(watch__elf_bytes);
	if (r) {
		r = vmact_err_set(err, EOPNOTSUPP,
				  "the kernel refused the watch (BPF timers, bpf_loop, ring "
				  "buffer, syscall programs: Linux 5.17 or later): %s",
				  strerror(-r));
		goto fail;
	}
	r = keep_fds(w, skel);
	watch__destroy(skel);
	skel = NULL;
	if (r < 0) {
		r = vmact_err_set(err, -r, "watch: keeping its programs and maps: %s",
				  strerror(-r));
		goto fail;
	}
	w->rb = ring_buffer__new(w->rb_fd, on_record, w, NULL);
	if (!w->rb) {
		r = vmact_err_set(err, errno, "watch: ring buffer: %s", strerror(errno));
		goto fail;
	}
	r = run(w->start_fd, &st, sizeof(st), NULL);
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
	watch__destroy(skel);
	smp_watch_free(w);
	return r;
}

void smp_watch_free(struct smp_watch *w)
{
	if (!w)
		return;
	ring_buffer__free(w->rb);
	if (w->bss)
		munmap((void *)w->bss, w->bss_len);
	/* The timers go with the maps' last reference. */
	for (unsigned i = 0; i < w->nmaps; i++)
		smp_fd_close(&w->map_fds[i]);
	smp_fd_close(&w->start_fd);
	smp_fd_close(&w->set_fd);
	smp_fd_close(&w->close_fd);
	free(w);
}

/* A VM's watch is held by a timer's pass for a few microseconds at most
 * (watch.bpf.c, "trylock"): -EBUSY is tried again at once, this many times
 * before it is an error. */
#define BUSY_TRIES 1000

int smp_watch_set_slot(struct smp_watch *w, const struct smp_watch_cfg *cfg, struct vmact_err *err)
{
	int r, ret = 0;

	for (unsigned i = 0; i < BUSY_TRIES; i++) {
		struct smp_watch_cfg c = *cfg;

		r = run(w->set_fd, &c, sizeof(c), &ret);
		if (r == 0)
			r = ret;
		if (r != -EBUSY)
			break;
	}
	if (r < 0)
		return vmact_err_set(err, -r, "watch: slot %u: %s", cfg->slot, strerror(-r));
	return 0;
}

int smp_watch_close_slot(struct smp_watch *w, unsigned slot, uint64_t gen,
			 struct smp_watch_win *out, bool *hot, struct vmact_err *err)
{
	struct smp_watch_close c;
	int r;

	for (unsigned i = 0; i < BUSY_TRIES; i++) {
		c = (struct smp_watch_close){ .slot = slot, .gen = gen };
		r = run(w->close_fd, &c, sizeof(c), NULL);
		if (r == 0)
			r = c.rc;
		if (r != -EBUSY)
			break;
	}
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
	*ns = __atomic_load_n(&w->bss->watch_ns, __ATOMIC_RELAXED);
	*runs = __atomic_load_n(&w->bss->watch_runs, __ATOMIC_RELAXED);
	*deferred = __atomic_load_n(&w->bss->watch_deferred, __ATOMIC_RELAXED);
}
