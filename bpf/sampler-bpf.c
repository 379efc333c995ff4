/* SPDX-License-Identifier: Apache-2.0 */
/* BPF backend of the sampler: loads and attaches sampler.bpf.c (the
 * skeleton), pins its maps, adds and removes VMs in vmact_vms, and reads
 * vmact_stats, vmact_tasks and the task iterators (task-iter.h). The
 * kernel side and the integral scheme are described in sampler.bpf.c and
 * sampler-types.h. */
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
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>

#include "base/macro.h"
#include "base/time.h"
#include "bpf/backend.h"
#include "bpf/embedded.h"
#include "bpf/fds.h"
#include "bpf/libbpf-log.h"
#include "bpf/proc.h"
#include "bpf/readout.h"
#include "bpf/readvm.skel.h"
#include "bpf/sampler-types.h"
#include "bpf/sampler.skel.h"
#include "bpf/task-iter.h"
#include "bpf/watch.h"

#define SMP_HOOK_LINKS 8
#define SMP_PROG_IDS   16

struct smp_bpf {
	struct smp_be be;
	char *pin_root;
	bool keep_pins;
	bool per_thread;
	unsigned max_vms;
	/* The skeleton only while it loads: then the sampler is its maps' and
	 * programs' fds, its hooks' links and its .bss mapped, and libbpf's
	 * object (its BTF, line info, instructions) is freed (keep_loaded(),
	 * doc/actuation.md "vmactd's own footprint"). */
	struct sampler *skel;
	int vms_fd, stats_fd, tasks_fd, vgauge_fd;
	int seed_fd;   /* vmact_seed, -1 without task iterators */
	int seed_link; /* its iterator link, made on first use */
	int hook_links[SMP_HOOK_LINKS];
	struct sampler__bss *bss; /* mapped; NULL where .bss is not mmapable */
	size_t bss_len;
	uint32_t prog_ids[SMP_PROG_IDS];
	unsigned nprog_ids;
	int ncpus;
	struct smp_cpu_stats *cpubuf;   /* one slot, all CPUs */
	struct smp_cpu_stats *batchbuf; /* all slots, all CPUs */
	struct smp_totals *pend;        /* read_all: what vmact_pending found, per slot */
	bool pins_touched;              /* pin_root was created or cleaned by us */
	/* mmap of vmact_readout's first readout_len bytes (readout_map()) */
	struct smp_readout *readout;
	size_t readout_len;
	int readout_fd; /* -1: the map was not created */
	bool no_batch;
	struct smp_task_iter iter;
	struct smp_task_iter threads; /* over vmact_threads */
	/* The one-call readout's program (readvm.bpf.c), or -1: only its fd is
	 * kept, the object it was loaded from is freed (load_read_prog()). */
	int rv_fd;
	struct smp_watch *watch; /* the watch (watch.h), or NULL */
	char *watch_reason;      /* why there is none */
	/* Registered VMs per entry of the tgid table (sampler.bpf.c), when
	 * the table is on (the .bss is mmapped); else NULL. */
	uint32_t *tgid_refs;
	unsigned tgid_mask; /* the programs' tgid_mask */
};

static struct smp_bpf *to_bpf(struct smp_be *b)
{
	return (struct smp_bpf *)b;
}

static const struct smp_bpf *to_bpf_const(const struct smp_be *b)
{
	return (const struct smp_bpf *)b;
}

static const char *const smp_map_names[] = { "vmact_vms", "vmact_stats", "vmact_tasks",
					     "vmact_readout", "vmact_vgauge" };

/* libbpf reports load failures through its print callback. Library code must
 * not print, so keep the last warning for the error message instead. */
static __thread char smp_libbpf_msg[256];

static int smp_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	_cleanup_free_ char *text = NULL;
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	/* Whole: a verifier log is longer than the message kept. */
	if (vasprintf(&text, fmt, ap) < 0)
		return 0;
	/* The verifier's reason says more than the first warning. */
	if (smp_libbpf_log_reason(text, smp_libbpf_msg, sizeof(smp_libbpf_msg)))
		return 0;
	n = strlen(text);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	/* The first warning names the cause; later ones only say that the
	 * object failed to load. */
	if (n > 0 && !smp_libbpf_msg[0])
		snprintf(smp_libbpf_msg, sizeof(smp_libbpf_msg), "%s", text);
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

static void unpin_all(struct smp_bpf *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(smp_map_names); i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", s->pin_root, smp_map_names[i]);
		unlink(path);
	}
	rmdir(s->pin_root);
}

/* The one-call readout (readvm.bpf.c) over this skeleton's maps. Kernels
 * without kfuncs in syscall programs refuse it: then s->rv_fd stays -1 and
 * readouts go through the task iterators, as before. */
static void load_read_prog(struct smp_bpf *s)
{
	struct readvm *rv;
	bool failed;

	if (s->ncpus > 4096) /* MAX_CPUS in readvm.bpf.c */
		return;
	rv = readvm__open();
	if (!rv)
		return;
	rv->rodata->nr_cpus = (__u32)s->ncpus;
	rv->rodata->per_thread = s->per_thread;
	/* Before keep_loaded(): the skeleton's maps. */
	failed = bpf_map__reuse_fd(rv->maps.vmact_stats, bpf_map__fd(s->skel->maps.vmact_stats)) ||
		 bpf_map__reuse_fd(rv->maps.vmact_tasks, bpf_map__fd(s->skel->maps.vmact_tasks)) ||
		 readvm__load(rv);
	smp_embedded_drop(readvm__elf_bytes);
	if (failed) {
		readvm__destroy(rv);
		/* Its load failure is no error of the sampler's. */
		smp_libbpf_msg[0] = '\0';
		return;
	}
	/* The program stays loaded with its fd (it holds its own maps); the
	 * object's BTF, line info and instructions, which libbpf keeps for
	 * the object's life, go (about 75 KiB of heap: doc/actuation.md,
	 * "vmactd's own footprint"). */
	s->rv_fd = smp_fd_dup(bpf_program__fd(rv->progs.vmact_read_vm));
	if (s->rv_fd < 0)
		s->rv_fd = -1;
	readvm__destroy(rv);
}

/* The watch (watch.h) over this skeleton's vCPU gauges, where the
 * configuration asks for it and the kernel runs it; else the reason, for
 * smp_watch_reason(). */
static void load_watch(struct smp_bpf *s, const struct smp_config *cfg, bool tp_btf)
{
	struct vmact_err err = { 0 };
	char refused[sizeof(err.msg) + sizeof(smp_libbpf_msg) + 4];
	const char *why = NULL;

	smp_libbpf_msg[0] = '\0';
	if (!cfg->watch_tick_ms) {
		why = "not asked for";
	} else if (!tp_btf) {
		why = "the scheduler hooks are raw tracepoints here (no tp_btf: Linux 5.5)";
	} else if (smp_watch_load(bpf_map__fd(s->skel->maps.vmact_vgauge), s->max_vms,
				  (uint64_t)cfg->watch_tick_ms * 1000000ULL, &s->watch, &err) < 0) {
		/* With what libbpf said: which program the kernel refused and
		 * the verifier's reason, for the operator's report. */
		snprintf(refused, sizeof(refused), "%s%s%s%s", err.msg,
			 smp_libbpf_msg[0] ? " (" : "", smp_libbpf_msg,
			 smp_libbpf_msg[0] ? ")" : "");
		why = refused;
	}
	/* Its load failure is no error of the sampler's. */
	smp_libbpf_msg[0] = '\0';
	if (why)
		s->watch_reason = strdup(why);
}

/* vmact_readout mapped up to slot's record: the kernel maps every page of
 * an array map's mapping at once, so the mapping covers only the slots in
 * use so far (one page for the first 32), grown by a new mapping when a
 * later slot is published, and a host with a few VMs does not hold
 * max_vms records (128 KiB with 1024) in private memory (doc/actuation.md,
 * "vmactd's own footprint"). 0 or -errno; the old mapping stays on error. */
static int readout_map(struct smp_bpf *s, unsigned slot)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t want = ((size_t)(slot + 1) * sizeof(*s->readout) + page - 1) / page * page;
	size_t all = sizeof(*s->readout) * s->max_vms;
	void *m;

	if (want > all)
		want = all;
	if (s->readout && want <= s->readout_len)
		return 0;
	m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, s->readout_fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	if (s->readout)
		munmap(s->readout, s->readout_len);
	s->readout = m;
	s->readout_len = want;
	return 0;
}

/* The loaded, attached skeleton's fds into s, its .bss mapped, the ids of
 * its programs noted; then the skeleton goes. The hooks stay attached by
 * their links' fds, the maps and programs live by theirs and by the pins.
 * 0 or -errno (the skeleton is kept then, for bpf_stop()). */
static int keep_loaded(struct smp_bpf *s)
{
	struct sampler *k = s->skel;
	struct bpf_link *const hooks[] = { k->links.vmact_wakeup,    k->links.vmact_wake_new,
					   k->links.vmact_switch,    k->links.vmact_rwake,
					   k->links.vmact_rwake_new, k->links.vmact_rswitch };
	struct bpf_program *p;
	unsigned n = 0;
	int r;

	_Static_assert(ARRAY_SIZE(hooks) <= SMP_HOOK_LINKS, "SMP_HOOK_LINKS");
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++) {
		if (!hooks[i])
			continue;
		if ((r = smp_fd_dup(bpf_link__fd(hooks[i]))) < 0)
			return r;
		s->hook_links[n++] = r;
	}
	if ((s->vms_fd = smp_fd_dup(bpf_map__fd(k->maps.vmact_vms))) < 0)
		return s->vms_fd;
	if ((s->stats_fd = smp_fd_dup(bpf_map__fd(k->maps.vmact_stats))) < 0)
		return s->stats_fd;
	if ((s->tasks_fd = smp_fd_dup(bpf_map__fd(k->maps.vmact_tasks))) < 0)
		return s->tasks_fd;
	if ((s->vgauge_fd = smp_fd_dup(bpf_map__fd(k->maps.vmact_vgauge))) < 0)
		return s->vgauge_fd;
	/* Not created on kernels without mmapable arrays (bpf_start()). */
	if (bpf_map__fd(k->maps.vmact_readout) >= 0 &&
	    (s->readout_fd = smp_fd_dup(bpf_map__fd(k->maps.vmact_readout))) < 0)
		return s->readout_fd;
	if (bpf_program__autoload(k->progs.vmact_seed)) {
		if ((s->seed_fd = smp_fd_dup(bpf_program__fd(k->progs.vmact_seed))) < 0)
			return s->seed_fd;
		/* The link the skeleton's attach made: the first run's. */
		if (k->links.vmact_seed &&
		    (s->seed_link = smp_fd_dup(bpf_link__fd(k->links.vmact_seed))) < 0)
			return s->seed_link;
	}
	if (k->bss) {
		int fd = bpf_map__fd(k->maps.bss);
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		void *m;

		s->bss_len = (bpf_map__value_size(k->maps.bss) + page - 1) / page * page;
		m = mmap(NULL, s->bss_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			return -errno;
		s->bss = m;
	}
	bpf_object__for_each_program(p, k->obj)
	{
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd < 0 || s->nprog_ids == SMP_PROG_IDS ||
		    bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		s->prog_ids[s->nprog_ids++] = info.id;
	}
	sampler__destroy(k);
	s->skel = NULL;
	return 0;
}

static int bpf_start(struct smp_bpf *s, const struct smp_config *cfg, struct vmact_err *err)
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
	if (cfg->tgid_table_entries > SMP_TGID_TABLE ||
	    (cfg->tgid_table_entries & (cfg->tgid_table_entries - 1)))
		return vmact_err_set(err, EINVAL,
				     "sampler: the tgid table's entries (%u) must be a power of two "
				     "up to %u",
				     cfg->tgid_table_entries, SMP_TGID_TABLE);
	s->tgid_mask = cfg->tgid_table_entries ? cfg->tgid_table_entries - 1 : SMP_TGID_TABLE - 1;
	s->skel->rodata->tgid_mask = s->tgid_mask;
	if (bpf_map__set_max_entries(s->skel->maps.vmact_vms, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_stats, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_readout, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_vgauge, s->max_vms) ||
	    bpf_map__set_max_entries(s->skel->maps.vmact_tasks, cfg->max_threads))
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
	bpf_program__set_autoload(s->skel->progs.vmact_threads, tp_btf);
	/* Mmapable arrays came with tp_btf (5.5): on older kernels skip the
	 * bpftool view rather than the sampler. */
	bpf_map__set_autocreate(s->skel->maps.vmact_readout, tp_btf);

	r = sampler__load(s->skel);
	smp_embedded_drop(sampler__elf_bytes);
	if (r)
		return vmact_err_set(err, -r, "BPF load failed: %s%s%s%s", strerror(-r),
				     smp_libbpf_msg[0] ? " (" : "", smp_libbpf_msg,
				     smp_libbpf_msg[0] ? ")" : "");
	r = sampler__attach(s->skel);
	if (r)
		return vmact_err_set(err, -r, "BPF attach failed: %s",
				     smp_libbpf_msg[0] ? smp_libbpf_msg : strerror(-r));
	r = smp_task_iter_init(&s->iter,
			       bpf_program__autoload(s->skel->progs.vmact_pending)
				       ? smp_fd_dup(bpf_program__fd(s->skel->progs.vmact_pending))
				       : -1,
			       s->max_vms, err);
	if (r < 0)
		return r;
	r = smp_task_iter_init(&s->threads,
			       bpf_program__autoload(s->skel->progs.vmact_threads)
				       ? smp_fd_dup(bpf_program__fd(s->skel->progs.vmact_threads))
				       : -1,
			       s->max_vms, err);
	if (r < 0)
		return r;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0)
		return vmact_err_set(err, EIO, "BPF: cannot count possible CPUs");
	if (tp_btf && !cfg->no_read_prog)
		load_read_prog(s);
	load_watch(s, cfg, tp_btf);
	r = keep_loaded(s);
	if (r < 0)
		return vmact_err_set(err, -r, "BPF: keeping the sampler's programs and maps: %s",
				     strerror(-r));
	/* The tgid table needs the .bss shared with the programs (mmapable
	 * arrays); without it every event asks vmact_vms, as before. */
	if (s->bss) {
		s->tgid_refs = calloc(SMP_TGID_TABLE, sizeof(*s->tgid_refs));
		if (!s->tgid_refs)
			return vmact_err_set(err, ENOMEM, "sampler: out of memory");
		__atomic_store_n(&s->bss->vmact_tgid_table_on, 1, __ATOMIC_SEQ_CST);
	}
	s->cpubuf = calloc((size_t)s->ncpus, sizeof(*s->cpubuf));
	s->batchbuf = calloc((size_t)s->ncpus * s->max_vms, sizeof(*s->batchbuf));
	if (!s->cpubuf || !s->batchbuf)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	if (s->readout_fd < 0)
		return 0;
	r = readout_map(s, 0);
	if (r < 0)
		return vmact_err_set(err, -r, "BPF: mmap of vmact_readout: %s", strerror(-r));
	return 0;
}

static void bpf_stop(struct smp_bpf *s)
{
	if (s->readout)
		munmap(s->readout, s->readout_len);
	s->readout = NULL;
	smp_task_iter_done(&s->iter);
	smp_task_iter_done(&s->threads);
	smp_watch_free(s->watch);
	s->watch = NULL;
	free(s->watch_reason);
	s->watch_reason = NULL;
	smp_fd_close(&s->rv_fd);
	for (size_t i = 0; i < SMP_HOOK_LINKS; i++)
		smp_fd_close(&s->hook_links[i]);
	smp_fd_close(&s->seed_link);
	smp_fd_close(&s->seed_fd);
	smp_fd_close(&s->vms_fd);
	smp_fd_close(&s->stats_fd);
	smp_fd_close(&s->tasks_fd);
	smp_fd_close(&s->vgauge_fd);
	smp_fd_close(&s->readout_fd);
	if (s->bss)
		munmap(s->bss, s->bss_len);
	s->bss = NULL;
	/* A start that failed before keep_loaded(). */
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
	free(s->pend);
	free(s->tgid_refs);
	s->tgid_refs = NULL;
	s->cpubuf = s->batchbuf = NULL;
	s->pend = NULL;
}

static void bpf_close(struct smp_be *b)
{
	struct smp_bpf *s = to_bpf(b);

	if (!s)
		return;
	bpf_stop(s);
	free(s->pin_root);
	free(s);
}

static int bpf_open(const struct smp_config *cfg, struct smp_be **out, struct vmact_err *err)
{
	struct smp_bpf *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	s->be.ops = &smp_bpf_ops;
	s->rv_fd = s->readout_fd = -1;
	s->vms_fd = s->stats_fd = s->tasks_fd = s->vgauge_fd = -1;
	s->seed_fd = s->seed_link = -1;
	for (size_t i = 0; i < SMP_HOOK_LINKS; i++)
		s->hook_links[i] = -1;
	s->iter = s->threads = (struct smp_task_iter){ .prog_fd = -1, .all = -1 };
	s->keep_pins = cfg->keep_pins;
	s->per_thread = !cfg->no_per_thread;
	s->max_vms = cfg->max_vms;
	s->pin_root = strdup(cfg->pin_root);
	if (!s->pin_root) {
		free(s);
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	libbpf_set_print(smp_libbpf_print);
	r = bpf_start(s, cfg, err);
	if (r < 0) {
		bpf_close(&s->be);
		return r;
	}
	*out = &s->be;
	return 0;
}

static int delete_task_entries(struct smp_bpf *s, pid_t tgid, struct vmact_err *err)
{
	int fd = s->tasks_fd;
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

/* One more (on: the VM is in vmact_vms) or one fewer (off: it is about to
 * leave) registered VM at tgid's entry of the tgid table. An entry shared
 * by several VMs stays "ask vmact_vms" until none is left: right, only
 * slower. */
static void tgid_table(struct smp_bpf *s, pid_t tgid, unsigned slot, bool on)
{
	unsigned i = (unsigned)tgid & s->tgid_mask;
	__u64 *e;

	if (!s->tgid_refs)
		return;
	e = &s->bss->vmact_tgid_table[i];
	if (on)
		__atomic_store_n(e,
				 s->tgid_refs[i]++ == 0 ? (__u64)(slot + 1) << 32 | (__u32)tgid
							: (__u64)SMP_TGID_SHARED << 32,
				 __ATOMIC_SEQ_CST);
	else if (s->tgid_refs[i] && --s->tgid_refs[i] == 0)
		__atomic_store_n(e, 0, __ATOMIC_SEQ_CST);
}

static int bpf_add_vm(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);
	struct smp_vm vm = { .slot = slot };
	__u32 key = (__u32)tgid;
	int r;

	memset(s->cpubuf, 0, (size_t)s->ncpus * sizeof(*s->cpubuf));
	if (bpf_map_update_elem(s->stats_fd, &slot, s->cpubuf, BPF_ANY))
		return vmact_err_set(err, errno, "BPF: clearing vmact_stats[%u]: %s", slot,
				     strerror(errno));
	{
		struct smp_vgauge g = { 0 };

		if (bpf_map_update_elem(s->vgauge_fd, &slot, &g, BPF_ANY))
			return vmact_err_set(err, errno, "BPF: clearing vmact_vgauge[%u]: %s", slot,
					     strerror(errno));
	}
	r = delete_task_entries(s, tgid, err);
	if (r < 0)
		return r;
	if (bpf_map_update_elem(s->vms_fd, &key, &vm, BPF_NOEXIST))
		return vmact_err_set(err, errno, "BPF: adding %d to vmact_vms: %s", (int)tgid,
				     strerror(errno));
	tgid_table(s, tgid, slot, true);
	if (s->seed_fd >= 0) {
		r = smp_task_iter_seed(s->seed_fd, &s->seed_link, err);
		if (r < 0) {
			tgid_table(s, tgid, slot, false);
			bpf_map_delete_elem(s->vms_fd, &key);
			return r;
		}
	}
	return 0;
}

static int bpf_remove_vm(struct smp_be *b, unsigned slot, pid_t tgid, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);
	__u32 key = (__u32)tgid;
	int r;

	tgid_table(s, tgid, slot, false);
	if (bpf_map_delete_elem(s->vms_fd, &key) && errno != ENOENT)
		r = vmact_err_set(err, errno, "BPF: removing %d from vmact_vms: %s", (int)tgid,
				  strerror(errno));
	else
		r = delete_task_entries(s, tgid, err);
	if (s->readout && (size_t)(slot + 1) * sizeof(*s->readout) <= s->readout_len)
		memset(&s->readout[slot], 0, sizeof(s->readout[slot]));
	smp_task_iter_drop(&s->iter, slot);
	smp_task_iter_drop(&s->threads, slot);
	return r;
}

/* One VM through vmact_read_vm: its totals at *t and, when vcpus is not
 * NULL, its vCPU threads' totals, in one syscall. */
static int read_prog(struct smp_bpf *s, unsigned slot, pid_t tgid, struct smp_totals *out,
		     uint64_t *t, struct smp_vcpus *vcpus, struct vmact_err *err)
{
	struct smp_vm_read rd = { .slot = slot, .tgid = (__u32)tgid };
	/* A syscall program's context is copied back into ctx_in. */
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &rd, .ctx_size_in = sizeof(rd));

	if (bpf_prog_test_run_opts(s->rv_fd, &o) < 0)
		return vmact_err_set(err, errno, "BPF: reading slot %u: %s", slot, strerror(errno));
	if (o.retval != 0)
		return vmact_err_set(err, EIO, "BPF: reading slot %u: vmact_stats lookup failed",
				     slot);
	*t = rd.now;
	/* The per-CPU sums are modular: summed once, they read as one CPU. */
	smp_totals_from_cpus(&rd.sum, 1, *t, out);
	out->oncpu_ns += rd.pend_oncpu_ns;
	out->runnable_ns += rd.pend_runnable_ns;
	out->nr_oncpu += rd.pend_nr_oncpu;
	if (vcpus)
		*vcpus = (struct smp_vcpus){
			.vcpus = rd.vcpus,
			.runnable_ns = rd.vcpu_runnable_ns,
			.oncpu_ns = rd.vcpu_oncpu_ns,
			.delay_ns = rd.vcpu_delay_ns,
			.runnable_now = rd.vcpus_runnable,
		};
	return 0;
}

static int bpf_read(struct smp_be *b, unsigned slot, pid_t tgid, struct smp_totals *out,
		    uint64_t *t, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);
	_cleanup_(smp_pending_list_free) struct smp_pending_item *pend = NULL;
	struct smp_pending_item *i;
	int r;

	if (s->rv_fd >= 0)
		return read_prog(s, slot, tgid, out, t, NULL, err);

	if (bpf_map_lookup_elem(s->stats_fd, &slot, s->cpubuf))
		return vmact_err_set(err, errno, "BPF: reading vmact_stats[%u]: %s", slot,
				     strerror(errno));
	*t = vmact_now_nsec();
	smp_totals_from_cpus(s->cpubuf, s->ncpus, *t, out);
	/* What the hooks have not seen yet. */
	r = smp_task_iter_vm(&s->iter, slot, tgid, &pend, err);
	if (r < 0)
		return r;
	VMACT_LIST_FOREACH(items, i, pend)
		smp_totals_add_pending(out, &i->rec);
	return 0;
}

/* All slots' per-CPU values in one syscall; falls back to one lookup per
 * slot where batch operations are missing (kernels before 5.6). */
static int read_batch(struct smp_bpf *s, const struct smp_slots *reg, uint64_t *t,
		      struct vmact_err *err)
{
	int fd = s->stats_fd;
	__u32 out_batch, count = 0, want;
	_cleanup_free_ __u32 *keys = NULL;
	LIBBPF_OPTS(bpf_map_batch_opts, bo);

	if (s->no_batch)
		return -EOPNOTSUPP;
	/* Only up to the highest slot in use: copying out every CPU's value
	 * of unused slots costs more than the lookups it saves. */
	for (unsigned i = 0; i < s->max_vms; i++)
		if (reg->e[i].used)
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

struct pending_all {
	struct smp_bpf *s;
	const struct smp_slots *reg;
};

static void pending_all_cb(const struct smp_pending *p, void *data)
{
	struct pending_all *a = data;

	if (p->slot < a->s->max_vms && a->reg->e[p->slot].used)
		smp_totals_add_pending(&a->s->pend[p->slot], p);
}

static int bpf_read_all(struct smp_be *b, const struct smp_slots *reg,
			void (*cb)(unsigned slot, const struct smp_totals *now, uint64_t t,
				   void *data),
			void *data, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);
	struct pending_all a = { s, reg };
	uint64_t t = 0;
	int r;

	/* Made on first use: vmactd reads its VMs one by one and never
	 * pays for it (80 KiB with 1024 slots, written whole below). */
	if (!s->pend && !(s->pend = calloc(s->max_vms, sizeof(*s->pend))))
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	r = read_batch(s, reg, &t, err);
	if (r < 0)
		return r;
	/* The same pending time for every VM at once. */
	for (unsigned i = 0; i < s->max_vms; i++)
		s->pend[i] = (struct smp_totals){ 0 };
	r = smp_task_iter_all(&s->iter, pending_all_cb, &a, err);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < s->max_vms; i++) {
		struct smp_totals now;

		if (!reg->e[i].used)
			continue;
		smp_totals_from_cpus(s->batchbuf + (size_t)i * (size_t)s->ncpus, s->ncpus, t, &now);
		smp_totals_add(&now, &s->pend[i]);
		cb(i, &now, t, data);
	}
	return 0;
}

/* Without the seeding iterator the gauge only learns of already-runnable
 * threads at their next scheduler event, so ask /proc instead. */
static int64_t bpf_runnable_at_start(struct smp_be *b, pid_t tgid, const struct smp_totals *first)
{
	struct smp_bpf *s = to_bpf(b);

	if (s->seed_fd < 0)
		return smp_proc_runnable(tgid);
	return first->nr_runnable;
}

struct thread_recs {
	unsigned slot;
	pid_t tgid;
	uint64_t now;
	struct smp_thread *out; /* NULL: vCPU totals only */
	size_t max, n;
	struct smp_vcpus *vcpus;
};

/* One record of vmact_threads: the thread as the split shows it. */
static void thread_rec(const struct smp_thread_rec *rec, void *data)
{
	struct thread_recs *a = data;
	struct smp_thread th;

	/* Without a pid filter every VM's threads come by. */
	if (rec->task.slot != a->slot || rec->task.tgid != (__u32)a->tgid)
		return;
	smp_thread_from_task((pid_t)rec->tid, &rec->task, a->now, &th);
	if (rec->pend.ns)
		smp_thread_add_pending(&th, &rec->pend);
	smp_thread_finish(&th);
	memcpy(th.comm, rec->comm, sizeof(th.comm));
	th.comm[sizeof(th.comm) - 1] = '\0';
	th.vcpu = smp_thread_vcpu(th.comm);
	if (a->vcpus)
		smp_vcpus_add(a->vcpus, &th);
	if (a->out && a->n < a->max)
		a->out[a->n++] = th;
}

/* One pass of vmact_threads over the VM's threads. The open intervals are
 * closed at one time taken just before the pass: a hook running during it
 * moves a figure by microseconds either way, as with any read racing the
 * hooks. */
static int read_thread_recs(struct smp_bpf *s, struct thread_recs *a, const char *name,
			    struct vmact_err *err)
{
	int r;

	a->now = vmact_now_nsec();
	r = smp_task_iter_vm_threads(&s->threads, a->slot, a->tgid, thread_rec, a, err);
	if (r < 0)
		return r == -EOPNOTSUPP ? r : vmact_err_prefix(err, "sampler: %s", name);
	return 0;
}

static int bpf_read_threads(struct smp_be *b, unsigned slot, pid_t tgid, const char *name,
			    struct smp_thread *out, size_t max, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);
	_cleanup_(smp_pending_list_free) struct smp_pending_item *pend = NULL;
	struct smp_pending_item *i;
	__u32 key, *prev = NULL;
	struct smp_task v;
	size_t n = 0;
	int fd, r;

	if (!s->per_thread)
		return vmact_err_set(err, EOPNOTSUPP,
				     "sampler: per-thread split disabled by configuration");
	if (s->threads.prog_fd >= 0) {
		struct thread_recs a = { .slot = slot, .tgid = tgid, .out = out, .max = max };

		r = read_thread_recs(s, &a, name, err);
		return r < 0 ? r : (int)a.n;
	}
	/* No task iterators (kernels without tp_btf): walk every VM's
	 * threads in vmact_tasks and name them from /proc. */
	r = smp_task_iter_vm(&s->iter, slot, tgid, &pend, err);
	if (r < 0)
		return vmact_err_prefix(err, "sampler: %s", name);
	fd = s->tasks_fd;
	while (n < max && bpf_map_get_next_key(fd, prev, &key) == 0) {
		char state;

		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v) || v.tgid != (__u32)tgid ||
		    v.slot != (__u32)slot)
			continue;
		smp_thread_from_task((pid_t)key, &v, vmact_now_nsec(), &out[n]);
		VMACT_LIST_FOREACH(items, i, pend)
			if (i->rec.tid == key)
				smp_thread_add_pending(&out[n], &i->rec);
		smp_thread_finish(&out[n]);
		if (smp_thread_stat(tgid, (pid_t)key, &state, out[n].comm) < 0)
			out[n].comm[0] = '\0';
		out[n].vcpu = smp_thread_vcpu(out[n].comm);
		n++;
	}
	return (int)n;
}

/* The vCPU totals in one iterator pass, no copy of the split. */
static int bpf_read_vcpus(struct smp_be *b, unsigned slot, pid_t tgid, const char *name,
			  struct smp_vcpus *out, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);
	struct thread_recs a = { .slot = slot, .tgid = tgid, .vcpus = out };

	if (!s->per_thread)
		return vmact_err_set(err, EOPNOTSUPP,
				     "sampler: per-thread split disabled by configuration");
	if (s->rv_fd >= 0) {
		struct smp_totals tot;
		uint64_t t;
		int r = read_prog(s, slot, tgid, &tot, &t, out, err);

		return r < 0 ? vmact_err_prefix(err, "sampler: %s", name) : 0;
	}
	if (s->threads.prog_fd < 0)
		return -EOPNOTSUPP;
	return read_thread_recs(s, &a, name, err);
}

/* The reading and the vCPU totals in one syscall; -EOPNOTSUPP where the
 * readout program is not loaded or the split is off. */
static int bpf_read_both(struct smp_be *b, unsigned slot, pid_t tgid, struct smp_totals *out,
			 uint64_t *t, struct smp_vcpus *vcpus, struct vmact_err *err)
{
	struct smp_bpf *s = to_bpf(b);

	if (s->rv_fd < 0 || !s->per_thread)
		return -EOPNOTSUPP;
	return read_prog(s, slot, tgid, out, t, vcpus, err);
}

static bool bpf_read_prog_loaded(const struct smp_be *b)
{
	return to_bpf_const(b)->rv_fd >= 0;
}

/* The readout as bpftool shows it (vmact_readout). */
static void bpf_publish(struct smp_be *b, unsigned slot, const struct smp_readout *o)
{
	struct smp_bpf *s = to_bpf(b);

	if (s->readout && readout_map(s, slot) == 0)
		s->readout[slot] = *o;
}

static int bpf_prog_ids(const struct smp_be *b, uint32_t *ids, size_t max)
{
	const struct smp_bpf *s = to_bpf_const(b);
	size_t n = 0;

	for (; n < s->nprog_ids && n < max; n++)
		ids[n] = s->prog_ids[n];
	return (int)n;
}

static const char *bpf_pin_root(const struct smp_be *b)
{
	return to_bpf_const(b)->pin_root;
}

static struct smp_watch *bpf_watch(struct smp_be *b, const char **why)
{
	struct smp_bpf *s = to_bpf(b);

	*why = s->watch_reason;
	return s->watch;
}

const struct smp_backend_ops smp_bpf_ops = {
	.kind = SMP_BACKEND_BPF,
	.open = bpf_open,
	.close = bpf_close,
	.add_vm = bpf_add_vm,
	.remove_vm = bpf_remove_vm,
	.read = bpf_read,
	.read_all = bpf_read_all,
	.runnable_at_start = bpf_runnable_at_start,
	.read_threads = bpf_read_threads,
	.read_vcpus = bpf_read_vcpus,
	.read_both = bpf_read_both,
	.read_prog_loaded = bpf_read_prog_loaded,
	.publish = bpf_publish,
	.prog_ids = bpf_prog_ids,
	.pin_root = bpf_pin_root,
	.watch = bpf_watch,
};
