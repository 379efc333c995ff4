/* SPDX-License-Identifier: Apache-2.0 */
/* Loader, VM registry and readout of the load sampler (see sampler.h and,
 * for the kernel side and the integral scheme, sampler.bpf.c and
 * sampler-types.h). */
#include "bpf/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <systemd/sd-event.h>

#include "base/cpustat.h"
#include "base/macro.h"
#include "bpf/loadavg.h"
#include "bpf/sampler-types.h"
#include "bpf/taskstats.h"
#include "bpf/sampler.skel.h"
#include "base/time.h"

#define SMP_DEFAULT_PIN_ROOT "/sys/fs/bpf/vmact"
#define SMP_DEFAULT_MAX_VMS 1024
#define SMP_DEFAULT_MAX_THREADS 32768
#define SMP_DEFAULT_POLL_MS 1000

/* Cumulative totals of one VM since its registration. */
struct smp_totals {
	uint64_t runnable_ns, oncpu_ns;
	uint64_t wakeups, switches, preemptions, untracked, recovered_ns, recoveries;
	int64_t nr_runnable, nr_oncpu;
};

struct smp_slot {
	bool used;
	char *name;
	pid_t tgid;
	char *cgroup;
	bool have_cs;             /* last_cs holds an earlier cpu.stat */
	struct vmact_cpustat last_cs;
	uint64_t last_t; /* CLOCK_MONOTONIC ns of the last readout */
	struct smp_totals last;
	struct smp_loadavg la;
	struct smp_ts_vm *ts;
	struct bpf_link *pending; /* vmact_pending over this VM's threads */
	struct smp_totals pend;   /* read_all: what vmact_pending found */
};

struct smp_sampler {
	enum smp_backend backend;
	char *reason;
	char *pin_root;
	bool keep_pins;
	bool per_thread;
	unsigned max_vms, poll_ms;
	struct smp_slot *slots;
	/* Free slots, oldest-freed first: a slot is reused as late as
	 * possible, so a scheduler hook still finishing an update for the VM
	 * that held it (a window of microseconds) cannot leak into the next. */
	unsigned *free_q, free_head, free_len;
	unsigned count;

	struct sampler *skel;
	int ncpus;
	struct smp_cpu_stats *cpubuf;   /* one slot, all CPUs */
	struct smp_cpu_stats *batchbuf; /* all slots, all CPUs */
	bool pins_touched;              /* pin_root was created or cleaned by us */
	struct smp_readout *readout;    /* mmap of vmact_readout */
	size_t readout_len;
	bool no_batch;
	/* vmact_pending over all tasks: for read_all, and for every readout
	 * on kernels whose task iterators take no pid filter (before 6.1). */
	struct bpf_link *pending_all;
	bool no_pid_iter;

	struct smp_ts *ts;
	sd_event_source *timer;
	uint64_t polls;
	struct vmact_err poll_err;
};

static const char *const smp_map_names[] = { "vmact_vms", "vmact_stats", "vmact_tasks",
					      "vmact_readout" };

/* libbpf reports load failures through its print callback. Library code must
 * not print, so keep the last warning for the error message instead. */
static __thread char smp_libbpf_msg[256];

static int smp_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[sizeof(smp_libbpf_msg)];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == ' '))
		line[--n] = '\0';
	/* The first warning names the cause; later ones only say that the
	 * object failed to load. */
	if (n > 0 && !smp_libbpf_msg[0])
		memcpy(smp_libbpf_msg, line, n + 1);
	return 0;
}

/* tp_btf needs BTF for the tracepoint and BPF_PROG_TYPE_TRACING with
 * BTF-typed attach points; libbpf's generic type probe cannot tell (it loads
 * without an attach target), so load a trivial tp_btf program like
 * libbpf-tools' probe_tp_btf does. */
static bool probe_tp_btf(void)
{
	static const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP);
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int id, fd;

	if (!vmlinux)
		return false;
	id = btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	btf__free(vmlinux);
	if (id <= 0)
		return false;
	opts.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, ARRAY_SIZE(insns), &opts);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static int ensure_bpffs(const char *root, struct vmact_err *err)
{
	_cleanup_free_ char *copy = strdup(root);
	struct statfs st;
	const char *parent;

	if (!copy)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	parent = dirname(copy);
	if (statfs(parent, &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (strcmp(parent, "/sys/fs/bpf") != 0)
		return vmact_err_set(err, ENOTDIR, "sampler: pin_root: %s is not on a bpffs", root);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return vmact_err_set(err, errno, "sampler: mkdir %s: %s", parent, strerror(errno));
	if (mount("bpf", parent, "bpf", 0, "mode=0700") < 0)
		return vmact_err_set(err, errno, "sampler: cannot mount bpffs on %s: %s", parent,
				     strerror(errno));
	return 0;
}

static void unpin_all(struct smp_sampler *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(smp_map_names); i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", s->pin_root, smp_map_names[i]);
		unlink(path);
	}
	rmdir(s->pin_root);
}

static int bpf_start(struct smp_sampler *s, const struct smp_config *cfg, struct vmact_err *err)
{
	struct bpf_object_open_opts oo = { .sz = sizeof(oo), .pin_root_path = s->pin_root };
	bool tp_btf;
	int r;

	r = ensure_bpffs(s->pin_root, err);
	if (r < 0)
		return r;
	if (mkdir(s->pin_root, 0700) < 0 && errno != EEXIST)
		return vmact_err_set(err, errno, "sampler: mkdir %s: %s", s->pin_root,
				     strerror(errno));
	s->pins_touched = true;
	/* Pins left by an earlier run describe threads nobody tracked while
	 * no program was attached: start from fresh maps. */
	for (size_t i = 0; i < ARRAY_SIZE(smp_map_names); i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", s->pin_root, smp_map_names[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			return vmact_err_set(err, errno, "sampler: cannot remove stale pin %s: %s",
					     path, strerror(errno));
	}

	smp_libbpf_msg[0] = '\0';
	s->skel = sampler__open_opts(&oo);
	if (!s->skel)
		return vmact_err_set(err, errno, "BPF open failed: %s",
				     smp_libbpf_msg[0] ? smp_libbpf_msg : strerror(errno));
	s->skel->rodata->per_thread = s->per_thread;
	if (bpf_map__set_max_entries(s->skel->maps.vmact_vms, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_stats, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_readout, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_tasks,
				     cfg->max_threads ? cfg->max_threads : SMP_DEFAULT_MAX_THREADS))
		return vmact_err_set(err, EINVAL, "BPF: cannot size maps");

	tp_btf = !cfg->force_raw_tp && probe_tp_btf();
	bpf_program__set_autoload(s->skel->progs.vmact_wakeup, tp_btf);
	bpf_program__set_autoload(s->skel->progs.vmact_wake_new, tp_btf);
	bpf_program__set_autoload(s->skel->progs.vmact_switch, tp_btf);
	bpf_program__set_autoload(s->skel->progs.vmact_rwake, !tp_btf);
	bpf_program__set_autoload(s->skel->progs.vmact_rwake_new, !tp_btf);
	bpf_program__set_autoload(s->skel->progs.vmact_rswitch, !tp_btf);
	/* Task iterators need the same BTF support as tp_btf; without them
	 * threads already runnable at registration are counted from their
	 * next scheduler event on. */
	bpf_program__set_autoload(s->skel->progs.vmact_seed, tp_btf);
	bpf_program__set_autoload(s->skel->progs.vmact_pending, tp_btf);
	/* Mmapable arrays came with tp_btf (5.5): on older kernels skip the
	 * bpftool view rather than the sampler. */
	bpf_map__set_autocreate(s->skel->maps.vmact_readout, tp_btf);

	r = sampler__load(s->skel);
	if (r)
		return vmact_err_set(err, -r, "BPF load failed: %s%s%s%s", strerror(-r),
				     smp_libbpf_msg[0] ? " (" : "", smp_libbpf_msg,
				     smp_libbpf_msg[0] ? ")" : "");
	r = sampler__attach(s->skel);
	if (r)
		return vmact_err_set(err, -r, "BPF attach failed: %s",
				     smp_libbpf_msg[0] ? smp_libbpf_msg : strerror(-r));
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0)
		return vmact_err_set(err, EIO, "BPF: cannot count possible CPUs");
	s->cpubuf = calloc((size_t)s->ncpus, sizeof(*s->cpubuf));
	s->batchbuf = calloc((size_t)s->ncpus * s->max_vms, sizeof(*s->batchbuf));
	if (!s->cpubuf || !s->batchbuf)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	if (bpf_map__fd(s->skel->maps.vmact_readout) < 0)
		return 0;
	s->readout_len = sizeof(*s->readout) * s->max_vms;
	s->readout = mmap(NULL, s->readout_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			  bpf_map__fd(s->skel->maps.vmact_readout), 0);
	if (s->readout == MAP_FAILED) {
		s->readout = NULL;
		return vmact_err_set(err, errno, "BPF: mmap of vmact_readout: %s", strerror(errno));
	}
	return 0;
}

static void bpf_stop(struct smp_sampler *s)
{
	if (s->readout)
		munmap(s->readout, s->readout_len);
	s->readout = NULL;
	for (unsigned i = 0; s->slots && i < s->max_vms; i++) {
		bpf_link__destroy(s->slots[i].pending);
		s->slots[i].pending = NULL;
	}
	bpf_link__destroy(s->pending_all);
	s->pending_all = NULL;
	if (s->skel) {
		sampler__destroy(s->skel);
		s->skel = NULL;
	}
	/* Also after a failed load: no empty pin directory left behind. */
	if (s->pins_touched && !s->keep_pins)
		unpin_all(s);
	s->pins_touched = false;
	free(s->cpubuf);
	free(s->batchbuf);
	s->cpubuf = s->batchbuf = NULL;
}

int smp_open(const struct smp_config *cfg, struct smp_sampler **out, struct vmact_err *err)
{
	static const struct smp_config defaults = { 0 };
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

	s = calloc(1, sizeof(*s));
	if (!s)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	s->keep_pins = cfg->keep_pins;
	s->per_thread = !cfg->no_per_thread;
	s->max_vms = cfg->max_vms ? cfg->max_vms : SMP_DEFAULT_MAX_VMS;
	s->poll_ms = cfg->poll_ms ? cfg->poll_ms : SMP_DEFAULT_POLL_MS;
	s->pin_root = strdup(cfg->pin_root ? cfg->pin_root : SMP_DEFAULT_PIN_ROOT);
	s->slots = calloc(s->max_vms, sizeof(*s->slots));
	s->free_q = calloc(s->max_vms, sizeof(*s->free_q));
	if (!s->pin_root || !s->slots || !s->free_q) {
		smp_close(s);
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	for (unsigned i = 0; i < s->max_vms; i++)
		s->free_q[i] = i;
	s->free_len = s->max_vms;
	libbpf_set_print(smp_libbpf_print);

	if (cfg->backend != SMP_BACKEND_TASKSTATS) {
		struct vmact_err berr = { 0 };

		r = bpf_start(s, cfg, &berr);
		if (r == 0) {
			s->backend = SMP_BACKEND_BPF;
			*out = s;
			return 0;
		}
		bpf_stop(s);
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
	s->backend = SMP_BACKEND_TASKSTATS;
	r = smp_ts_open(&s->ts, err);
	if (r < 0) {
		if (cfg->backend != SMP_BACKEND_TASKSTATS)
			vmact_err_prefix(err, "BPF unavailable (%s), and fallback failed", s->reason);
		smp_close(s);
		return r;
	}
	*out = s;
	return 0;
}

void smp_close(struct smp_sampler *s)
{
	if (!s)
		return;
	sd_event_source_disable_unref(s->timer);
	bpf_stop(s);
	smp_ts_close(s->ts);
	for (unsigned i = 0; s->slots && i < s->max_vms; i++) {
		free(s->slots[i].name);
		free(s->slots[i].cgroup);
		smp_ts_vm_free(s->slots[i].ts);
	}
	free(s->slots);
	free(s->free_q);
	free(s->pin_root);
	free(s->reason);
	free(s);
}

enum smp_backend smp_backend_used(const struct smp_sampler *s)
{
	return s->backend;
}

const char *smp_fallback_reason(const struct smp_sampler *s)
{
	return s->backend == SMP_BACKEND_BPF ? NULL : s->reason;
}

const char *smp_pin_root(const struct smp_sampler *s)
{
	return s->backend == SMP_BACKEND_BPF ? s->pin_root : NULL;
}

int smp_prog_ids(const struct smp_sampler *s, uint32_t *ids, size_t max)
{
	struct bpf_program *p;
	size_t n = 0;

	if (s->backend != SMP_BACKEND_BPF)
		return 0;
	bpf_object__for_each_program(p, s->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0 || n >= max || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		ids[n++] = info.id;
	}
	return (int)n;
}

unsigned smp_poll_ms(const struct smp_sampler *s)
{
	return s->poll_ms;
}

unsigned smp_count(const struct smp_sampler *s)
{
	return s->count;
}

int smp_find(const struct smp_sampler *s, const char *name)
{
	for (unsigned i = 0; i < s->max_vms; i++)
		if (s->slots[i].used && !strcmp(s->slots[i].name, name))
			return (int)i;
	return -ENOENT;
}

/* Runs vmact_pending through link and hands each record to cb. */
static int pending_run(struct bpf_link *link,
		       void (*cb)(const struct smp_pending *p, void *data), void *data,
		       struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	union {
		struct smp_pending rec[64];
		char b[64 * sizeof(struct smp_pending)];
	} buf;
	size_t have = 0;
	ssize_t n;

	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	/* seq_file may split a record across reads. */
	while ((n = read(fd, buf.b + have, sizeof(buf.b) - have)) > 0) {
		size_t whole;

		have += (size_t)n;
		whole = have / sizeof(struct smp_pending);
		for (size_t i = 0; i < whole; i++)
			cb(&buf.rec[i], data);
		have -= whole * sizeof(struct smp_pending);
		memmove(buf.b, buf.b + whole * sizeof(struct smp_pending), have);
	}
	if (n < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	return 0;
}

static void pending_add(struct smp_totals *t, const struct smp_pending *p)
{
	/* As recover() will: on a CPU, and runnable too if we missed that. */
	t->oncpu_ns += p->ns;
	if (!p->runnable)
		t->runnable_ns += p->ns;
	if (p->on_cpu)
		t->nr_oncpu++;
}

static int pending_link_all(struct smp_sampler *s, struct vmact_err *err)
{
	if (s->pending_all)
		return 0;
	s->pending_all = bpf_program__attach_iter(s->skel->progs.vmact_pending, NULL);
	if (!s->pending_all)
		return vmact_err_set(err, errno, "BPF: attaching task iterator: %s",
				     strerror(errno));
	return 0;
}

/* The per-VM iterator link, made on first use. NULL without an error: no
 * per-VM link (no pid filter here, or the process is gone). */
static int pending_link(struct smp_sampler *s, struct smp_slot *sl, struct bpf_link **out,
			struct vmact_err *err)
{
	union bpf_iter_link_info li = { .task.pid = (__u32)sl->tgid };
	LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &li, .link_info_len = sizeof(li));

	*out = NULL;
	if (!sl->pending && !s->no_pid_iter) {
		sl->pending = bpf_program__attach_iter(s->skel->progs.vmact_pending, &o);
		if (!sl->pending) {
			if (errno == ESRCH || errno == ENOENT)
				return 0;
			if (errno != EINVAL)
				return vmact_err_set(err, errno, "BPF: attaching task iterator: %s",
						     strerror(errno));
			s->no_pid_iter = true;
		}
	}
	if (sl->pending) {
		*out = sl->pending;
		return 0;
	}
	if (!s->no_pid_iter)
		return 0;
	int r = pending_link_all(s, err);
	if (r < 0)
		return r;
	*out = s->pending_all;
	return 0;
}

/* pending_every's per-slot sums: only these three fields are set. */
static void pending_fold(struct smp_totals *t, const struct smp_totals *pend)
{
	t->runnable_ns += pend->runnable_ns;
	t->oncpu_ns += pend->oncpu_ns;
	t->nr_oncpu += pend->nr_oncpu;
}

struct pending_list {
	unsigned slot;
	struct smp_pending *rec;
	size_t n, cap;
	bool oom;
};

static void pending_list_done(struct pending_list *l)
{
	free(l->rec);
}

static void pending_list_cb(const struct smp_pending *p, void *data)
{
	struct pending_list *l = data;

	if (p->slot != l->slot || l->oom)
		return;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		struct smp_pending *q = reallocarray(l->rec, ncap, sizeof(*q));

		if (!q) {
			l->oom = true;
			return;
		}
		l->rec = q;
		l->cap = ncap;
	}
	l->rec[l->n++] = *p;
}

/* What vmact_pending finds for each thread of one VM. */
static int pending_threads(struct smp_sampler *s, unsigned slot, struct pending_list *l,
			   struct vmact_err *err)
{
	struct bpf_link *link;
	int r;

	l->slot = slot;
	if (!bpf_program__autoload(s->skel->progs.vmact_pending))
		return 0;
	r = pending_link(s, &s->slots[slot], &link, err);
	if (r < 0 || !link)
		return r;
	r = pending_run(link, pending_list_cb, l, err);
	if (r < 0)
		return r;
	if (l->oom)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	return 0;
}

/* Adds to out what the hooks have not seen yet of one VM. */
static int pending_slot(struct smp_sampler *s, unsigned slot, struct smp_totals *out,
			struct vmact_err *err)
{
	_cleanup_(pending_list_done) struct pending_list l = { 0 };
	int r = pending_threads(s, slot, &l, err);

	for (size_t i = 0; r == 0 && i < l.n; i++)
		pending_add(out, &l.rec[i]);
	return r;
}

static void pending_all_cb(const struct smp_pending *p, void *data)
{
	struct smp_sampler *s = data;

	if (p->slot < s->max_vms && s->slots[p->slot].used)
		pending_add(&s->slots[p->slot].pend, p);
}

/* The same for every VM at once, into each slot's pend. */
static int pending_every(struct smp_sampler *s, struct vmact_err *err)
{
	int r;

	for (unsigned i = 0; i < s->max_vms; i++)
		s->slots[i].pend = (struct smp_totals){ 0 };
	if (!bpf_program__autoload(s->skel->progs.vmact_pending))
		return 0;
	r = pending_link_all(s, err);
	if (r < 0)
		return r;
	return pending_run(s->pending_all, pending_all_cb, s, err);
}

/* Sums one slot's per-CPU values; t is taken after the lookup so that every
 * event folded into the sums happened before it. */
static void fold_cpus(const struct smp_cpu_stats *v, int ncpus, uint64_t t,
		      struct smp_totals *out)
{
	uint64_t nr = 0, tsum = 0, on = 0, onsum = 0;

	*out = (struct smp_totals){ 0 };
	for (int c = 0; c < ncpus; c++) {
		/* Unsigned: per-CPU parts wrap, the totals do not. */
		nr += (uint64_t)v[c].nr_runnable;
		tsum += v[c].runnable_tsum;
		on += (uint64_t)v[c].nr_oncpu;
		onsum += v[c].oncpu_tsum;
		out->wakeups += v[c].wakeups;
		out->switches += v[c].switches;
		out->preemptions += v[c].preemptions;
		out->untracked += v[c].untracked;
		out->recovered_ns += v[c].recovered_ns;
		out->recoveries += v[c].recoveries;
	}
	out->nr_runnable = (int64_t)nr;
	out->nr_oncpu = (int64_t)on;
	out->runnable_ns = t * nr - tsum;
	out->oncpu_ns = t * on - onsum;
}

static int ts_totals(struct smp_sampler *s, struct smp_slot *sl, struct smp_totals *out,
		     uint64_t *t, struct vmact_err *err)
{
	struct smp_ts_totals tt;
	int r;

	r = smp_ts_vm_poll(s->ts, sl->ts, err);
	if (r < 0)
		return r;
	*t = vmact_now_nsec();
	smp_ts_vm_totals(sl->ts, &tt);
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

static int totals(struct smp_sampler *s, unsigned slot, struct smp_totals *out, uint64_t *t,
		  struct vmact_err *err)
{
	if (s->backend == SMP_BACKEND_TASKSTATS)
		return ts_totals(s, &s->slots[slot], out, t, err);
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.vmact_stats), &slot, s->cpubuf))
		return vmact_err_set(err, errno, "BPF: reading vmact_stats[%u]: %s", slot,
				     strerror(errno));
	*t = vmact_now_nsec();
	fold_cpus(s->cpubuf, s->ncpus, *t, out);
	return pending_slot(s, slot, out, err);
}

static int delete_task_entries(struct smp_sampler *s, pid_t tgid, struct vmact_err *err)
{
	int fd = bpf_map__fd(s->skel->maps.vmact_tasks);
	_cleanup_free_ __u32 *victims = NULL;
	size_t n = 0, cap = 0;
	__u32 key, *prev = NULL;
	struct smp_task v;

	/* Collect first: deleting under get_next_key restarts the walk. */
	while (bpf_map_get_next_key(fd, prev, &key) == 0) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || v.tgid != (__u32)tgid)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			__u32 *p = reallocarray(victims, ncap, sizeof(*p));

			if (!p)
				return vmact_err_set(err, ENOMEM, "sampler: out of memory");
			victims = p;
			cap = ncap;
		}
		victims[n++] = key;
	}
	if (errno != ENOENT)
		return vmact_err_set(err, errno, "BPF: walking vmact_tasks: %s", strerror(errno));
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &victims[i]);
	return 0;
}

static int seed(struct smp_sampler *s, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	char buf[64];
	ssize_t n;

	if (!bpf_program__autoload(s->skel->progs.vmact_seed))
		return 0;
	if (!s->skel->links.vmact_seed) {
		s->skel->links.vmact_seed = bpf_program__attach_iter(s->skel->progs.vmact_seed, NULL);
		if (!s->skel->links.vmact_seed)
			return vmact_err_set(err, errno, "BPF: attaching task iterator: %s",
					     strerror(errno));
	}
	fd = bpf_iter_create(bpf_link__fd(s->skel->links.vmact_seed));
	if (fd < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	return 0;
}

/* The thread group of a task id (/proc/<id>/status "Tgid:"): /proc/<tid>
 * answers for threads too, so existence alone does not make a process. */
static int proc_tgid(pid_t id)
{
	char path[64], line[128];
	FILE *fp;
	int tgid = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)id);
	fp = fopen(path, "re");
	if (!fp)
		return -ESRCH;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(fp);
	return tgid;
}

static int64_t proc_runnable(pid_t tgid)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	int64_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char state;

		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
		    smp_thread_stat(tgid, (pid_t)atoi(de->d_name), &state, NULL) == 0 &&
		    state == 'R')
			n++;
	}
	closedir(d);
	return n;
}

static bool valid_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return true;
}

int smp_register(struct smp_sampler *s, const char *name, pid_t tgid, const char *cpu_cgroup,
		 struct vmact_err *err)
{
	struct smp_slot *sl;
	unsigned slot;
	int r;

	if (!valid_name(name))
		return vmact_err_set(err, EINVAL,
				     "sampler: name: must be 1-255 printable bytes");
	if (tgid <= 0)
		return vmact_err_set(err, EINVAL, "sampler: %s: tgid: %d is not a process id",
				     name, (int)tgid);
	r = proc_tgid(tgid);
	if (r < 0)
		return vmact_err_set(err, -r, "sampler: %s: tgid: no process %d", name, (int)tgid);
	if (r != tgid)
		return vmact_err_set(err, EINVAL,
				     "sampler: %s: tgid: %d is a thread of process %d, not a process",
				     name, (int)tgid, r);
	if (smp_find(s, name) >= 0)
		return vmact_err_set(err, EEXIST, "sampler: %s: already registered", name);
	for (unsigned i = 0; i < s->max_vms; i++)
		if (s->slots[i].used && s->slots[i].tgid == tgid)
			return vmact_err_set(err, EEXIST,
					     "sampler: %s: tgid %d already registered as %s", name,
					     (int)tgid, s->slots[i].name);
	if (s->free_len == 0)
		return vmact_err_set(err, ENOSPC, "sampler: %s: all %u slots in use (max_vms)",
				     name, s->max_vms);
	slot = s->free_q[s->free_head];
	sl = &s->slots[slot];
	*sl = (struct smp_slot){ .tgid = tgid };
	sl->name = strdup(name);
	if (!sl->name || (cpu_cgroup && !(sl->cgroup = strdup(cpu_cgroup)))) {
		r = vmact_err_set(err, ENOMEM, "sampler: out of memory");
		goto fail;
	}

	if (s->backend == SMP_BACKEND_BPF) {
		struct smp_vm vm = { .slot = slot };
		__u32 key = (__u32)tgid;

		memset(s->cpubuf, 0, (size_t)s->ncpus * sizeof(*s->cpubuf));
		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.vmact_stats), &slot,
					s->cpubuf, BPF_ANY)) {
			r = vmact_err_set(err, errno, "BPF: clearing vmact_stats[%u]: %s", slot,
					  strerror(errno));
			goto fail;
		}
		r = delete_task_entries(s, tgid, err);
		if (r < 0)
			goto fail;
		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.vmact_vms), &key, &vm,
					BPF_NOEXIST)) {
			r = vmact_err_set(err, errno, "BPF: adding %d to vmact_vms: %s",
					  (int)tgid, strerror(errno));
			goto fail;
		}
		r = seed(s, err);
		if (r < 0) {
			bpf_map_delete_elem(bpf_map__fd(s->skel->maps.vmact_vms), &key);
			goto fail;
		}
	} else {
		r = smp_ts_vm_new(tgid, &sl->ts, err);
		if (r < 0)
			goto fail;
	}
	r = totals(s, slot, &sl->last, &sl->last_t, err);
	if (r < 0) {
		if (s->backend == SMP_BACKEND_BPF) {
			__u32 key = (__u32)tgid;

			bpf_map_delete_elem(bpf_map__fd(s->skel->maps.vmact_vms), &key);
		}
		goto fail;
	}
	/* Start the averages at the runnable count of this instant rather
	 * than at the kernel's boot-time 0. Without the seeding iterator the
	 * BPF gauge only learns of already-runnable threads at their next
	 * scheduler event, so ask /proc instead. */
	int64_t seed_n = sl->last.nr_runnable;
	if (s->backend == SMP_BACKEND_BPF && !bpf_program__autoload(s->skel->progs.vmact_seed))
		seed_n = proc_runnable(tgid);
	for (int i = 0; i < 3; i++)
		sl->la.avg[i] = (double)(seed_n > 0 ? seed_n : 0);
	sl->la.seeded = true;
	/* Baseline for the first interval's throttling deltas; a cgroup that
	 * cannot be read yet is reported by the readouts, not here. */
	if (sl->cgroup)
		sl->have_cs = vmact_cpustat_read(sl->cgroup, &sl->last_cs, NULL) == 0;
	sl->used = true;
	s->free_head = (s->free_head + 1) % s->max_vms;
	s->free_len--;
	s->count++;
	return (int)slot;

fail:
	bpf_link__destroy(sl->pending);
	free(sl->name);
	free(sl->cgroup);
	smp_ts_vm_free(sl->ts);
	*sl = (struct smp_slot){ 0 };
	vmact_err_prefix(err, "sampler: registering %s", name);
	return r;
}

int smp_unregister(struct smp_sampler *s, const char *name, struct vmact_err *err)
{
	int slot = smp_find(s, name);
	struct smp_slot *sl;
	int r = 0;

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	sl = &s->slots[slot];
	if (s->backend == SMP_BACKEND_BPF) {
		__u32 key = (__u32)sl->tgid;

		if (bpf_map_delete_elem(bpf_map__fd(s->skel->maps.vmact_vms), &key) &&
		    errno != ENOENT)
			r = vmact_err_set(err, errno, "BPF: removing %d from vmact_vms: %s",
					  (int)sl->tgid, strerror(errno));
		else
			r = delete_task_entries(s, sl->tgid, err);
	}
	if (s->readout)
		memset(&s->readout[slot], 0, sizeof(s->readout[slot]));
	bpf_link__destroy(sl->pending);
	free(sl->name);
	free(sl->cgroup);
	smp_ts_vm_free(sl->ts);
	*sl = (struct smp_slot){ 0 };
	s->free_q[(s->free_head + s->free_len) % s->max_vms] = (unsigned)slot;
	s->free_len++;
	s->count--;
	return r;
}

static uint64_t delta(uint64_t now, uint64_t then)
{
	/* A read racing an event can be off by a few ns either way. */
	return (int64_t)(now - then) > 0 ? now - then : 0;
}

static uint32_t milli(double v)
{
	v = v * 1000.0 + 0.5;
	return v <= 0 ? 0 : v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The readout as bpftool shows it (vmact_readout). */
static void publish(struct smp_sampler *s, unsigned slot, const struct smp_reading *r,
		    uint64_t t)
{
	struct smp_readout *o;

	if (!s->readout)
		return;
	o = &s->readout[slot];
	snprintf(o->name, sizeof(o->name), "%s", s->slots[slot].name);
	o->tgid = (__u32)s->slots[slot].tgid;
	o->nr_runnable = r->nr_runnable > 0 ? (__u32)r->nr_runnable : 0;
	o->at_ns = t;
	o->interval_ns = (__u64)(r->interval_s * 1e9);
	o->load_milli = milli(r->load);
	o->loadavg1_milli = milli(r->loadavg[0]);
	o->loadavg5_milli = milli(r->loadavg[1]);
	o->loadavg15_milli = milli(r->loadavg[2]);
	o->cpu_milli = milli(r->cpu_util);
	o->delay_permille = milli(r->delay_frac);
	o->nr_throttled = r->nr_throttled;
	o->throttled_ns = r->throttled_ns;
}

static int finish_reading(struct smp_sampler *s, unsigned slot, const struct smp_totals *now,
			  uint64_t t, struct smp_reading *r, struct vmact_err *err)
{
	struct smp_slot *sl = &s->slots[slot];
	uint64_t dt = delta(t, sl->last_t);

	*r = (struct smp_reading){ 0 };
	r->interval_s = (double)dt / 1e9;
	r->runnable_ns = delta(now->runnable_ns, sl->last.runnable_ns);
	r->oncpu_ns = delta(now->oncpu_ns, sl->last.oncpu_ns);
	/* A recovery adds on-CPU time when the thread switches out, which
	 * may be after this interval began; its runnable time was counted
	 * as it passed. */
	if (r->oncpu_ns > r->runnable_ns)
		r->oncpu_ns = r->runnable_ns;
	r->delay_ns = delta(r->runnable_ns, r->oncpu_ns);
	r->wakeups = now->wakeups - sl->last.wakeups;
	r->switches = now->switches - sl->last.switches;
	r->preemptions = now->preemptions - sl->last.preemptions;
	r->untracked = now->untracked - sl->last.untracked;
	r->recovered_ns = now->recovered_ns - sl->last.recovered_ns;
	r->recoveries = now->recoveries - sl->last.recoveries;
	r->nr_runnable = now->nr_runnable;
	r->nr_oncpu = now->nr_oncpu;
	if (dt > 0) {
		r->load = (double)r->runnable_ns / (double)dt;
		r->cpu_util = (double)r->oncpu_ns / (double)dt;
	} else {
		r->load = (double)now->nr_runnable;
	}
	r->delay_frac = r->runnable_ns ? (double)r->delay_ns / (double)r->runnable_ns : 0;
	smp_loadavg_update(&sl->la, r->load, r->interval_s);
	memcpy(r->loadavg, sl->la.avg, sizeof(r->loadavg));
	sl->last = *now;
	sl->last_t = t;
	if (sl->cgroup) {
		struct vmact_cpustat cs, d;
		int rc = vmact_cpustat_read(sl->cgroup, &cs, err);

		if (rc < 0)
			return rc;
		r->has_cpu_stat = true;
		r->nr_periods = cs.nr_periods;
		r->nr_throttled = cs.nr_throttled;
		r->throttled_ns = cs.throttled_ns;
		/* Counters that went back mean a new cgroup (VM restarted):
		 * count from its start. */
		if (sl->have_cs)
			vmact_cpustat_delta(&sl->last_cs, &cs, &d);
		else
			d = cs;
		r->periods_delta = d.nr_periods;
		r->throttled_delta = d.nr_throttled;
		r->throttled_ns_delta = d.throttled_ns;
		sl->last_cs = cs;
		sl->have_cs = true;
	}
	publish(s, slot, r, t);
	return 0;
}

int smp_read_slot(struct smp_sampler *s, int slot, struct smp_reading *out,
		  struct vmact_err *err)
{
	struct smp_totals now;
	uint64_t t;
	int r;

	if (slot < 0 || (unsigned)slot >= s->max_vms || !s->slots[slot].used)
		return vmact_err_set(err, ENOENT, "sampler: slot %d: not registered", slot);
	r = totals(s, (unsigned)slot, &now, &t, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", s->slots[slot].name);
	r = finish_reading(s, (unsigned)slot, &now, t, out, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", s->slots[slot].name);
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

/* All slots' per-CPU values in one syscall; falls back to one lookup per
 * slot where batch operations are missing (kernels before 5.6). */
static int read_batch(struct smp_sampler *s, uint64_t *t, struct vmact_err *err)
{
	int fd = bpf_map__fd(s->skel->maps.vmact_stats);
	__u32 out_batch, count = 0, want;
	_cleanup_free_ __u32 *keys = NULL;
	LIBBPF_OPTS(bpf_map_batch_opts, bo);

	if (s->no_batch)
		return -EOPNOTSUPP;
	/* Only up to the highest slot in use: copying out every CPU's value
	 * of unused slots costs more than the lookups it saves. */
	for (unsigned i = 0; i < s->max_vms; i++)
		if (s->slots[i].used)
			count = i + 1;
	want = count;
	keys = calloc(s->max_vms, sizeof(*keys));
	if (!keys)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	if (bpf_map_lookup_batch(fd, NULL, &out_batch, keys, s->batchbuf, &count, &bo) &&
	    errno != ENOENT) {
		if (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP) {
			s->no_batch = true;
			return -EOPNOTSUPP;
		}
		return vmact_err_set(err, errno, "BPF: batch read of vmact_stats: %s",
				     strerror(errno));
	}
	*t = vmact_now_nsec();
	/* Arrays return keys 0..count-1 in order. */
	if (count != want) {
		s->no_batch = true;
		return -EOPNOTSUPP;
	}
	return 0;
}

int smp_read_all(struct smp_sampler *s,
		 void (*cb)(const char *name, const struct smp_reading *r, void *data),
		 void *data, struct vmact_err *err)
{
	bool batched = false;
	uint64_t t = 0;
	int r, first = 0;

	if (s->backend == SMP_BACKEND_BPF && s->count > 1) {
		r = read_batch(s, &t, err);
		if (r < 0 && r != -EOPNOTSUPP)
			return r;
		batched = r == 0;
		if (batched) {
			r = pending_every(s, err);
			if (r < 0)
				return r;
		}
	}
	for (unsigned i = 0; i < s->max_vms; i++) {
		struct smp_reading rd;

		if (!s->slots[i].used)
			continue;
		if (batched) {
			struct smp_totals now;

			fold_cpus(s->batchbuf + (size_t)i * (size_t)s->ncpus, s->ncpus, t, &now);
			pending_fold(&now, &s->slots[i].pend);
			r = finish_reading(s, i, &now, t, &rd, err);
			if (r < 0)
				r = vmact_err_prefix(err, "sampler: %s", s->slots[i].name);
		} else {
			r = smp_read_slot(s, (int)i, &rd, err);
		}
		/* One VM's failure (its cgroup went away) must not hide the
		 * others: report the first error after reading them all. */
		if (r < 0) {
			if (!first)
				first = r;
			continue;
		}
		cb(s->slots[i].name, &rd, data);
	}
	return first;
}

int smp_read_threads(struct smp_sampler *s, const char *name, struct smp_thread *out,
		     size_t max, struct vmact_err *err)
{
	int slot = smp_find(s, name);
	struct smp_slot *sl;
	__u32 key, *prev = NULL;
	_cleanup_(pending_list_done) struct pending_list pend = { 0 };
	struct smp_task v;
	size_t n = 0;
	uint64_t t;
	int fd, r;

	if (slot < 0)
		return vmact_err_set(err, ENOENT, "sampler: %s: not registered", name);
	sl = &s->slots[slot];
	if (s->backend == SMP_BACKEND_TASKSTATS) {
		r = smp_ts_vm_poll(s->ts, sl->ts, err);

		if (r < 0)
			return r;
		return (int)smp_ts_vm_threads(sl->ts, out, max);
	}
	if (!s->per_thread)
		return vmact_err_set(err, EOPNOTSUPP,
				     "sampler: per-thread split disabled by configuration");
	r = pending_threads(s, (unsigned)slot, &pend, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", name);
	fd = bpf_map__fd(s->skel->maps.vmact_tasks);
	while (n < max && bpf_map_get_next_key(fd, prev, &key) == 0) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || v.tgid != (__u32)sl->tgid ||
		    v.slot != (__u32)slot)
			continue;
		t = vmact_now_nsec();
		out[n] = (struct smp_thread){
			.tid = (pid_t)key,
			.runnable = v.runnable,
			.runnable_ns = v.runnable_ns + (v.runnable ? delta(t, v.runnable_since) : 0),
			.oncpu_ns = v.oncpu_ns + (v.oncpu ? delta(t, v.oncpu_since) : 0),
		};
		for (size_t i = 0; i < pend.n; i++) {
			if (pend.rec[i].tid != key)
				continue;
			out[n].oncpu_ns += pend.rec[i].ns;
			if (!pend.rec[i].runnable)
				out[n].runnable_ns += pend.rec[i].ns;
		}
		if (out[n].oncpu_ns > out[n].runnable_ns) /* see smp_reading */
			out[n].oncpu_ns = out[n].runnable_ns;
		out[n].delay_ns = delta(out[n].runnable_ns, out[n].oncpu_ns);
		char state;
		if (smp_thread_stat(sl->tgid, (pid_t)key, &state, out[n].comm) < 0)
			out[n].comm[0] = '\0';
		out[n].vcpu = smp_thread_vcpu(out[n].comm);
		n++;
	}
	return (int)n;
}

int smp_poll(struct smp_sampler *s, struct vmact_err *err)
{
	int first = 0;

	if (s->backend != SMP_BACKEND_TASKSTATS)
		return 0;
	s->polls++;
	for (unsigned i = 0; i < s->max_vms; i++) {
		int r;

		if (!s->slots[i].used)
			continue;
		r = smp_ts_vm_poll(s->ts, s->slots[i].ts, err);
		if (r < 0 && !first)
			first = vmact_err_prefix(err, "sampler: %s", s->slots[i].name);
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

int smp_attach_event(struct smp_sampler *s, sd_event *e, struct vmact_err *err)
{
	int r;

	if (s->backend != SMP_BACKEND_TASKSTATS)
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
