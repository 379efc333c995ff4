/* SPDX-License-Identifier: Apache-2.0 */
/* The soak (doc/reliability.md): one vmactd (build[/san]/
 * vmactd, beside this binary's directory, with its defaults but for the
 * arbiter's declared CPU capacity) scaling several real TCG guests for a
 * long time, while:
 *
 *   - each guest runs random load phases (busy 1..3 or idle, random
 *     lengths) sent over its command channel, some with memory pressure
 *     reported by its vm-monitor;
 *   - each guest's vm-monitor (tests/peers/vm-monitor.js) approves or
 *     denies downscales at random (--random-deny, seeded);
 *   - libvirtd is restarted at evenly spread moments.
 *
 * One seed (VMACT_SOAK_SEED, printed; default from the clock) drives every
 * random choice of the test and the monitors' seeds. Checks, over the run:
 *
 *   - bounds, sampled every 0.5 s per VM from the kernel and libvirt: the
 *     CFS quota and the memory within the VM's min/max, the quota never
 *     above what its vCPUs can use, the vCPUs within max, and the size
 *     never above the scheduler's last permit (the largest permit vmactd
 *     held at any time during the sample, from its event stream);
 *   - every resize vmactd reports ("resized to", vmactl events) is seen
 *     by the guest (online CPUs and MemTotal on its status channel) within
 *     LIMIT_SEEN_S (one not seen yet when the run ends within that time
 *     counts as too late to tell), and the guest never sees more vCPUs or
 *     memory than vmactd's resizes gave it (started or finished);
 *   - vmactd's RSS and open descriptors after the warm-up: printed, and
 *     the end may exceed the start by at most RSS_MARGIN / FD_MARGIN (RSS
 *     only in the plain build of a run of at least 3 minutes: the
 *     sanitizers keep freed memory in quarantine);
 *   - vmactd stops on SIGTERM with status 0 and its log has no sanitizer
 *     report (the sanitized build: make soak SOAK_SANITIZE=1, make check).
 *
 * VMACT_SOAK_MINUTES (e.g. 30, 5): the length of the load; unset, the fast
 * version make check runs (25 s, 2 guests, one libvirtd restart).
 * VMACT_SOAK_GUESTS overrides the number of guests (default 4; fast 2).
 * Waits have generous safety limits; nothing is timed. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "hotplug/hotplug.h"
#include "tests/lib/cg-limit.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/libvirtd.h"
#include "tests/lib/peer.h"
#include "tests/lib/proc.h"
#include "tests/lib/vmactd.h"
#include "tests/lib/wait.h"

#define PREFIX       "vmact-soak"
#define MAX_GUESTS   8
#define MiB          (1024ULL * 1024ULL)
#define MIN_MILLI    1000
#define MAX_MILLI    4000
#define MAX_VCPUS    4
#define MIN_MEM      (512 * MiB)
#define MAX_MEM      (1536 * MiB)
#define SAMPLE_S     0.5
#define LIMIT_BOOT_S 300.0
/* A resize must reach the guest within this (a safety limit: the guest
 * reports every second, TCG onlining a vCPU takes about a second here). */
#define LIMIT_SEEN_S 60.0
/* A guest report may be this old when the test reads it. */
#define REPORT_LAG_S 5.0
/* Allowed growth of vmactd after the warm-up, end against start. */
#define RSS_MARGIN_KB  (8 * 1024L)
#define RSS_MARGIN_PCT 10
#define FD_MARGIN      4
#define MONITOR_DENY   "0.4"

struct sample {             /* one look at a VM */
	double t0, t1;      /* CLOCK_REALTIME before and after it */
	long quota;         /* milli-CPU, TH_CG_* */
	bool lv;            /* libvirt answered */
	unsigned vcpus;     /* libvirt's live count */
	uint64_t mem_bytes; /* base + plugged */
};

struct greport { /* a new status line from the guest */
	double t;
	unsigned cpus;
	unsigned long memtotal_kb;
};

struct soak_vm {
	struct tg_guest g;
	struct th_peer mon;
	char sock[108], mon_log[128];
	char group[256];
	double phase_end;
	unsigned phases;
	unsigned long last_seq, base_memtotal_kb;
	struct sample *s;
	size_t ns, cap_s;
	struct greport *r;
	size_t nr, cap_r;
};

struct ev { /* a vmactd event for one of our VMs */
	double t;
	int vm;
	enum { EV_PERMIT, EV_RESIZING, EV_RESIZED, EV_FAILED, EV_APPROVED, EV_DENIED } kind;
	uint64_t milli, mem;
	unsigned vcpus;
};

static struct {
	/* vmactd, its scratch directory (the monitors' sockets and logs, the
	 * event stream) and the guests */
	struct th_vmactd d;
	virConnectPtr vc;
	struct soak_vm vm[MAX_GUESTS];
	unsigned n;
	char tpl[128], evlog[128];
	struct th_proc events;
	uint64_t rng;
	double minutes;
	bool fast;
} fx;

static uint64_t seed_of_run;
static double t_setup;

/* splitmix64: small, seedable, the same sequence for the same seed. */
static uint64_t rnd(void)
{
	uint64_t z = (fx.rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rnd_unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static double now_real(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	void *p;

	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 256;
	p = realloc(arr, *cap * size);
	if (!p)
		fail_msg("out of memory");
	return p;
}

static void dump_log(void)
{
	th_print_log_tail(fx.d.log, "vmactd log", 8000);
}

/* A live connection to libvirtd (the test restarts it): NULL while it is
 * down. */
static virConnectPtr conn(void)
{
	if (fx.vc && virConnectIsAlive(fx.vc) == 1)
		return fx.vc;
	if (fx.vc)
		virConnectClose(fx.vc);
	fx.vc = virConnectOpen("qemu:///system");
	return fx.vc;
}

static double env_double(const char *name, double def)
{
	const char *v = getenv(name);

	return v && *v ? atof(v) : def;
}

static int setup(void **state)
{
	char msg[512], dir[sizeof(fx.d.dir)];
	int pid = (int)getpid();
	const char *seed_env = getenv("VMACT_SOAK_SEED");

	(void)state;
	t_setup = th_now_s();
	fx.minutes = env_double("VMACT_SOAK_MINUTES", 0);
	fx.fast = fx.minutes <= 0;
	fx.n = (unsigned)env_double("VMACT_SOAK_GUESTS", fx.fast ? 2 : 4);
	if (fx.n < 1 || fx.n > MAX_GUESTS) {
		print_error("VMACT_SOAK_GUESTS: 1..%d\n", MAX_GUESTS);
		return -1;
	}
	seed_of_run = seed_env && *seed_env ? strtoull(seed_env, NULL, 0)
					    : (uint64_t)time(NULL) ^ ((uint64_t)pid << 20);
	fx.rng = seed_of_run;
	printf("# soak: seed %llu (VMACT_SOAK_SEED=%llu repeats the test's choices)\n",
	       (unsigned long long)seed_of_run, (unsigned long long)seed_of_run);

	if (th_vmactd_init(&fx.d, PREFIX, NULL) < 0)
		return -1;
	/* A copy: the paths are written into the same fx. */
	memcpy(dir, fx.d.dir, sizeof(dir));
	snprintf(fx.tpl, sizeof(fx.tpl), "%s/domain.xml", dir);
	snprintf(fx.evlog, sizeof(fx.evlog), "%s/events", dir);

	if (tg_balloon_template(fx.tpl) < 0)
		return -1;
	setenv("VMACT_GUEST_TEMPLATE", fx.tpl, 1);
	/* One status line a second (as test_daemon: the 200 ms reporter alone
	 * loads a TCG vCPU noticeably). */
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	if (!conn())
		return -1;

	for (unsigned i = 0; i < fx.n; i++) {
		struct soak_vm *v = &fx.vm[i];
		char seed[32], meta[2048];
		const char *args[] = { "--unix",      v->sock,
				       "--no-cgroup", "--threshold-mib",
				       "350",         "--random-deny",
				       MONITOR_DENY,  "--seed",
				       seed,          NULL };

		snprintf(v->sock, sizeof(v->sock), "%s/monitor-%u.sock", dir, i);
		snprintf(v->mon_log, sizeof(v->mon_log), "%s/monitor-%u.log", dir, i);
		snprintf(seed, sizeof(seed), "%u", (unsigned)(rnd() & 0x7fffffff));
		if (th_peer_start(&v->mon, "vm-monitor.js", args, v->mon_log, msg, sizeof(msg)) <
		    0) {
			print_error("vm-monitor: %s\n", msg);
			return -1;
		}
		snprintf(meta, sizeof(meta),
			 "<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
			 "<vmact:cpu min='1' max='4'/>"
			 "<vmact:memory min='512Mi' max='1536Mi' method='virtio-mem'/>"
			 "<vmact:compute-unit cpu='250m' memory='256Mi'/>"
			 "<vmact:monitor endpoint='unix:%s'/>"
			 "</vmact:autoscaling>",
			 v->sock);
		if (th_vmactd_add_guest(&fx.d, &v->g) < 0 ||
		    tg_start(conn(), PREFIX, meta, &v->g, msg, sizeof(msg)) < 0) {
			print_error("guest: %s\n", msg);
			return -1;
		}
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	th_proc_stop(&fx.events, SIGTERM, 5 * VMACT_USEC_PER_SEC);
	th_proc_stop(&fx.d.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	for (unsigned i = 0; i < fx.n; i++) {
		th_peer_stop(&fx.vm[i].mon);
		free(fx.vm[i].s);
		free(fx.vm[i].r);
	}
	if (fx.vc)
		virConnectClose(fx.vc);
	/* The guests by their names: libvirtd restarted meanwhile. */
	th_vmactd_teardown(&fx.d);
	return 0;
}

/* ---- sampling ---------------------------------------------------------- */

/* The VM's cgroup from vmactd's "NAME: managing (..., cgroup G, ..." line,
 * read once (the log grows long). */
static void find_group(struct soak_vm *v)
{
	if (!v->group[0] &&
	    th_log_named_vm_cgroup(fx.d.log, v->g.name, v->group, sizeof(v->group)) < 0)
		v->group[0] = 0;
}

static void sample_vm(struct soak_vm *v)
{
	struct sample s = { .t0 = now_real(), .quota = TH_CG_UNKNOWN };
	virConnectPtr vc;
	virDomainPtr d;
	struct tg_report r;

	find_group(v);
	if (v->group[0])
		s.quota = th_cg_limit_milli(v->group);
	if ((vc = conn()) && (d = virDomainLookupByName(vc, v->g.name))) {
		char *xml = virDomainGetXMLDesc(d, 0);
		struct hp_state st;
		struct vmact_err err = { 0 };

		if (xml && hp_state_parse(xml, &st, &err) == 0) {
			s.lv = true;
			s.vcpus = st.vcpus_current;
			s.mem_bytes = hp_state_mem_kib(&st) * 1024u;
		}
		free(xml);
		virDomainFree(d);
	}
	s.t1 = now_real();
	v->s = grow(v->s, &v->cap_s, v->ns, sizeof(*v->s));
	v->s[v->ns++] = s;

	if (tg_report(&v->g, &r) && r.seq != v->last_seq) {
		if (!v->base_memtotal_kb)
			v->base_memtotal_kb = r.memtotal_kb;
		v->last_seq = r.seq;
		v->r = grow(v->r, &v->cap_r, v->nr, sizeof(*v->r));
		v->r[v->nr++] = (struct greport){ .t = now_real(),
						  .cpus = r.cpus,
						  .memtotal_kb = r.memtotal_kb };
	}
}

/* vmactd's RSS (kB) and open descriptors, from /proc. */
static bool daemon_usage(long *rss_kb, long *fds)
{
	*rss_kb = th_proc_rss_kib(fx.d.proc.pid);
	*fds = th_proc_fds(fx.d.proc.pid);
	return *rss_kb >= 0 && *fds >= 0;
}

/* ---- load phases --------------------------------------------------------- */

static void monitor_cmd(struct soak_vm *v, const char *line)
{
	size_t n = strlen(line);

	if (write(v->mon.proc.in_fd, line, n) != (ssize_t)n)
		fail_msg("cannot write to the vm-monitor of %s", v->g.name);
}

static unsigned phase_counts[4], pressure_phases;

/* A new random phase for v: idle or busy 1..3 for a random time, with
 * memory pressure (the monitor's simulated usage above its threshold) in
 * some. */
static void next_phase(struct soak_vm *v, double now, double lo, double hi)
{
	unsigned busy = rnd_unit() < 0.35 ? 0 : 1 + (unsigned)(rnd() % 3);
	bool pressure = rnd_unit() < 0.3;
	double len = lo + rnd_unit() * (hi - lo);
	char cmd[32];

	if (busy)
		snprintf(cmd, sizeof(cmd), "busy %u", busy);
	else
		snprintf(cmd, sizeof(cmd), "idle");
	if (tg_cmd(&v->g, cmd) < 0)
		fail_msg("%s: cannot send \"%s\" to the guest", v->g.name, cmd);
	monitor_cmd(v, pressure ? "usage 480\n" : "usage 200\n");
	phase_counts[busy]++;
	pressure_phases += pressure;
	v->phases++;
	v->phase_end = now + len;
}

/* ---- vmactd's events ------------------------------------------------------ */

static int vm_index(const char *name)
{
	for (unsigned i = 0; i < fx.n; i++)
		if (!strcmp(fx.vm[i].g.name, name))
			return (int)i;
	return -1;
}

static uint64_t field_u(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
							       : 0;
}

/* Parses vmactl's JSON Lines; checks the sequence has no gap. */
static struct ev *read_events(size_t *n_out, unsigned *gaps)
{
	char *buf = th_read_file(fx.evlog), *line, *save = NULL;
	struct ev *evs = NULL;
	size_t n = 0, cap = 0;
	json_int_t last_seq = 0;

	*gaps = 0;
	assert_non_null(buf);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *e = json_loads(line, 0, NULL), *fields;
		const char *kind, *text, *vm;
		struct ev x = { 0 };
		json_int_t seq;

		if (!e)
			fail_msg("vmactl events: not JSON: %.200s", line);
		seq = json_integer_value(json_object_get(e, "seq"));
		if (last_seq && seq != last_seq + 1)
			(*gaps)++;
		last_seq = seq;
		kind = json_string_value(json_object_get(e, "kind"));
		text = json_string_value(json_object_get(e, "text"));
		vm = json_string_value(json_object_get(e, "vm"));
		fields = json_object_get(e, "fields");
		x.t = json_number_value(json_object_get(e, "time"));
		x.vm = vm ? vm_index(vm) : -1;
		if (!kind || !text || x.vm < 0) {
			json_decref(e);
			continue;
		}
		x.milli = field_u(fields, "milli_cpu");
		x.mem = field_u(fields, "mem_bytes");
		x.vcpus = (unsigned)field_u(fields, "vcpus");
		if (!strcmp(kind, "permit"))
			x.kind = EV_PERMIT;
		else if (!strcmp(kind, "resize") && !strncmp(text, "resizing from", 13))
			x.kind = EV_RESIZING;
		else if (!strcmp(kind, "resize") && !strncmp(text, "resized to", 10))
			x.kind = EV_RESIZED;
		else if (!strcmp(kind, "error") && strstr(text, "resize to "))
			x.kind = EV_FAILED;
		else if (!strcmp(kind, "monitor") && !strcmp(text, "downscale request: ok"))
			x.kind = EV_APPROVED;
		else if (!strcmp(kind, "monitor") && !strcmp(text, "downscale request: denied"))
			x.kind = EV_DENIED;
		else {
			json_decref(e);
			continue;
		}
		json_decref(e);
		evs = grow(evs, &cap, n, sizeof(*evs));
		evs[n++] = x;
	}
	free(buf);
	*n_out = n;
	return evs;
}

/* ---- checks ------------------------------------------------------------- */

struct tally {
	unsigned violations, unmatched, oversee, resized, failed, approved, denied;
	unsigned matched, too_late; /* seen by the guest; unseen with the run over */
	unsigned cpu_up, cpu_down, vcpu_plug, vcpu_unplug, mem_up, mem_down;
	unsigned samples, reports;
	double slowest_seen;
};

static void violation(struct tally *t, const struct soak_vm *v, const struct sample *s,
		      const char *fmt, ...)
{
	va_list ap;

	if (t->violations++ < 20) {
		printf("# VIOLATION %s at %.3f: ", v->g.name, s->t0);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
}

/* Bounds of every sample, and the permit: the largest permit vmactd held
 * at any moment of the sample (the one in force at its start, or one
 * that came during it). Before vmactd's first permit, the bounds only. */
static void check_bounds(struct tally *t, int vi, const struct ev *evs, size_t ne)
{
	const struct soak_vm *v = &fx.vm[vi];

	for (size_t i = 0; i < v->ns; i++) {
		const struct sample *s = &v->s[i];
		uint64_t pm = 0, pb = 0;
		bool permit = false;

		t->samples++;
		for (size_t j = 0; j < ne && evs[j].t <= s->t1; j++) {
			if (evs[j].vm != vi || evs[j].kind != EV_PERMIT)
				continue;
			if (evs[j].t <= s->t0) { /* in force at the start */
				pm = evs[j].milli;
				pb = evs[j].mem;
			} else {
				pm = pm > evs[j].milli ? pm : evs[j].milli;
				pb = pb > evs[j].mem ? pb : evs[j].mem;
			}
			permit = true;
		}
		if (s->quota >= 0) {
			if (s->quota < MIN_MILLI || s->quota > MAX_MILLI)
				violation(t, v, s, "quota %ldm outside 1..4 CPU", s->quota);
			if (permit && (uint64_t)s->quota > pm)
				violation(t, v, s, "quota %ldm above the permit %llum", s->quota,
					  (unsigned long long)pm);
			if (s->lv && s->quota > 1000L * (long)s->vcpus)
				violation(t, v, s, "quota %ldm above what %u vCPUs can use",
					  s->quota, s->vcpus);
		} else if (s->quota == TH_CG_UNLIMITED && v->group[0]) {
			violation(t, v, s, "no CPU limit on a managed VM");
		}
		if (!s->lv)
			continue;
		if (s->vcpus < 1 || s->vcpus > MAX_VCPUS)
			violation(t, v, s, "%u vCPUs outside 1..4", s->vcpus);
		if (s->mem_bytes < MIN_MEM || s->mem_bytes > MAX_MEM)
			violation(t, v, s, "memory %llu MiB outside 512..1536",
				  (unsigned long long)(s->mem_bytes / MiB));
		if (permit && s->mem_bytes > pb)
			violation(t, v, s, "memory %llu MiB above the permit %llu MiB",
				  (unsigned long long)(s->mem_bytes / MiB),
				  (unsigned long long)(pb / MiB));
	}
}

/* What the guest sees of a size: its online CPUs, and MemTotal's growth
 * over what it had at boot (512 MiB) against the plugged memory. Memory
 * matches within one 2 MiB virtio-mem block either way. */
static bool guest_shows(const struct soak_vm *v, const struct greport *r, unsigned vcpus,
			uint64_t mem)
{
	int64_t want_kb = (int64_t)((mem - MIN_MEM) / 1024);
	int64_t got_kb = (int64_t)r->memtotal_kb - (int64_t)v->base_memtotal_kb;

	return r->cpus == vcpus && llabs(got_kb - want_kb) <= 2048;
}

/* Every "resized to" of the VM: the guest shows that size, or that of a
 * resize after it, between the start of the resize and LIMIT_SEEN_S after
 * its end. The guest never shows more than the most any resize of the
 * last REPORT_LAG_S gave (finished, or started: a plugged vCPU comes
 * online before vmactd finishes the rest of its plan). */
static void check_seen(struct tally *t, int vi, const struct ev *evs, size_t ne, double end)
{
	const struct soak_vm *v = &fx.vm[vi];
	double started = 0;
	unsigned prev_vcpus = 1;
	uint64_t prev_milli = MIN_MILLI, prev_mem = MIN_MEM;

	for (size_t i = 0; i < ne; i++) {
		const struct ev *e = &evs[i];
		bool seen = false;
		double first = -1;

		if (e->vm != vi)
			continue;
		if (e->kind == EV_RESIZING)
			started = e->t;
		if (e->kind == EV_FAILED)
			t->failed++;
		if (e->kind == EV_APPROVED)
			t->approved++;
		if (e->kind == EV_DENIED)
			t->denied++;
		if (e->kind != EV_RESIZED)
			continue;
		t->resized++;
		t->cpu_up += e->milli > prev_milli;
		t->cpu_down += e->milli < prev_milli;
		t->vcpu_plug += e->vcpus > prev_vcpus;
		t->vcpu_unplug += e->vcpus && e->vcpus < prev_vcpus;
		t->mem_up += e->mem > prev_mem;
		t->mem_down += e->mem < prev_mem;
		prev_milli = e->milli;
		prev_mem = e->mem ? e->mem : prev_mem;
		prev_vcpus = e->vcpus ? e->vcpus : prev_vcpus;
		if (!e->vcpus || !e->mem)
			continue; /* no size known */
		for (size_t k = 0; k < v->nr && !seen; k++) {
			const struct greport *r = &v->r[k];

			if (r->t < (started ? started : e->t) || r->t > e->t + LIMIT_SEEN_S)
				continue;
			if (guest_shows(v, r, e->vcpus, e->mem)) {
				seen = true;
				first = r->t;
				break;
			}
			/* or a later resize of the VM, finished by then */
			for (size_t j = i + 1; j < ne && evs[j].t <= r->t; j++)
				if (evs[j].vm == vi && evs[j].kind == EV_RESIZED && evs[j].vcpus &&
				    evs[j].mem && guest_shows(v, r, evs[j].vcpus, evs[j].mem)) {
					seen = true;
					first = r->t;
					break;
				}
		}
		if (!seen && e->t + LIMIT_SEEN_S > end) {
			t->too_late++; /* the run ended before its window did */
		} else if (!seen) {
			if (t->unmatched++ < 20)
				printf("# UNMATCHED %s: resized to %u vCPUs / %llu MiB at %.3f, "
				       "never seen by the guest\n",
				       v->g.name, e->vcpus, (unsigned long long)(e->mem / MiB),
				       e->t);
		} else {
			t->matched++;
			if (first - e->t > t->slowest_seen) /* often < 0: seen first */
				t->slowest_seen = first - e->t;
		}
	}

	/* Never more than given. */
	for (size_t k = 0; k < v->nr; k++) {
		const struct greport *r = &v->r[k];
		unsigned max_vcpus = 1;
		uint64_t max_mem = MIN_MEM;

		t->reports++;
		for (size_t i = 0; i < ne && evs[i].t <= r->t; i++) {
			const struct ev *e = &evs[i];
			bool recent = e->t >= r->t - REPORT_LAG_S;

			if (e->vm != vi)
				continue;
			if (e->kind == EV_RESIZED || e->kind == EV_FAILED) {
				/* the size it ended at; older ones only while recent */
				if (!recent) {
					max_vcpus = e->vcpus ? e->vcpus : max_vcpus;
					max_mem = e->mem ? e->mem : max_mem;
				} else {
					max_vcpus = e->vcpus > max_vcpus ? e->vcpus : max_vcpus;
					max_mem = e->mem > max_mem ? e->mem : max_mem;
				}
			} else if (e->kind == EV_RESIZING) {
				unsigned tv = (unsigned)((e->milli + 999) / 1000);

				/* vCPUs stay plugged when the quota shrinks */
				max_vcpus = tv > max_vcpus ? tv : max_vcpus;
				max_mem = e->mem > max_mem ? e->mem : max_mem;
			}
		}
		if (r->cpus > max_vcpus || (int64_t)r->memtotal_kb - (int64_t)v->base_memtotal_kb >
						   (int64_t)((max_mem - MIN_MEM) / 1024) + 2048) {
			if (t->oversee++ < 20)
				printf("# GUEST SAW MORE %s at %.3f: %u CPUs, MemTotal %lu kB "
				       "(given %u vCPUs / %llu MiB)\n",
				       v->g.name, r->t, r->cpus, r->memtotal_kb, max_vcpus,
				       (unsigned long long)(max_mem / MiB));
		}
	}
}

static unsigned sanitizer_reports(void)
{
	return th_count_in_file(fx.d.log, "ERROR: AddressSanitizer") +
	       th_count_in_file(fx.d.log, "ERROR: LeakSanitizer") +
	       th_count_in_file(fx.d.log, "runtime error:") +
	       th_count_in_file(fx.d.log, "SUMMARY: UndefinedBehaviorSanitizer");
}

static bool is_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

static bool all_report(void *unused)
{
	struct tg_report r;

	(void)unused;
	for (unsigned i = 0; i < fx.n; i++)
		if (!tg_report(&fx.vm[i].g, &r))
			return false;
	return true;
}

static void soak(void **state)
{
	char text[512], prefix[64];
	const char *args[] = { "--verbose", NULL };
	const char *eargv[] = { fx.d.vmactl, "--socket", fx.d.sock, "--json",
				"events",    "--follow", NULL };
	const struct th_spawn_opts eo = { .out = TH_OUT_FILE,
					  .err = TH_OUT_FILE,
					  .out_path = fx.evlog };
	double duration = fx.fast ? 25.0 : fx.minutes * 60.0;
	unsigned restarts_planned = fx.fast ? 1 : 2, restarts = 0;
	double lo = fmax(4.0, fmin(20.0, duration / 20)),
	       hi = fmax(10.0, fmin(120.0, duration / 5));
	double warmup = fmin(120.0, duration / 5), t_start, t_end, next_usage = 0, now;
	long rss0 = -1, fd0 = -1, rss_end = -1, fd_end = -1, rss_max = 0, fd_max = 0, rss, fds;
	long rss_first = -1, fd_first = -1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct tally t = { 0 };
	struct ev *evs;
	size_t ne;
	unsigned gaps, san;
	int status;
	bool sanitized = is_sanitized();

	(void)state;
	if (!th_wait_daemon(&fx.d.proc, all_report, NULL, LIMIT_BOOT_S))
		fail_msg("the guests did not boot");
	printf("# soak: guests up after %.1f s\n", th_now_s() - t_setup);
	for (unsigned i = 0; i < fx.n; i++) {
		struct tg_report r;

		if (tg_report(&fx.vm[i].g, &r))
			fx.vm[i].base_memtotal_kb = r.memtotal_kb;
	}

	/* The arbiter's declared capacity: 1.75 CPUs a guest (the demo's
	 * reasoning, doc/testing.md, "The demo"), below the sum of their maxima, so
	 * that permits limit growth at times. */
	snprintf(prefix, sizeof(prefix), "%s-%d-", PREFIX, (int)getpid());
	snprintf(text, sizeof(text), "{\"arbiter\":{\"overcommit_cpu\":%.3f}}",
		 1.75 * fx.n / (0.9 * (double)(cpus > 0 ? cpus : 1)));
	assert_int_equal(th_vmactd_config(&fx.d, prefix, text), 0);
	if (th_vmactd_start(&fx.d, args, fx.n, LIMIT_BOOT_S, 120) < 0)
		fail_msg("vmactd did not become ready managing the %u guests", fx.n);
	assert_int_equal(th_spawn(&fx.events, eargv, &eo), 0);

	printf("# soak: %u guests, %.0f s of load, phases %.0f-%.0f s, %u libvirtd restart(s), "
	       "monitors deny %s of downscales, vmactd %s%s\n",
	       fx.n, duration, lo, hi, restarts_planned, MONITOR_DENY, fx.d.prog,
	       sanitized ? " (sanitized)" : "");
	fflush(stdout);

	t_start = th_now_s();
	printf("# soak: vmactd ready after %.1f s\n", t_start - t_setup);
	t_end = t_start + duration;
	for (unsigned i = 0; i < fx.n; i++)
		next_phase(&fx.vm[i], t_start, lo, hi);
	while ((now = th_now_s()) < t_end) {
		if (th_proc_exited(&fx.d.proc)) {
			dump_log();
			fail_msg("vmactd exited during the soak (status %d)", fx.d.proc.status);
		}
		if (th_proc_exited(&fx.events))
			fail_msg("vmactl events --follow ended during the soak (status %d)",
				 fx.events.status);
		for (unsigned i = 0; i < fx.n; i++) {
			if (now >= fx.vm[i].phase_end)
				next_phase(&fx.vm[i], now, lo, hi);
			sample_vm(&fx.vm[i]);
		}
		if (restarts < restarts_planned &&
		    now - t_start >= duration * (restarts + 1) / (restarts_planned + 1)) {
			printf("# soak: restarting libvirtd (%u of %u) at %.0f s\n", restarts + 1,
			       restarts_planned, now - t_start);
			fflush(stdout);
			if (th_restart_libvirtd() < 0)
				fail_msg("libvirtd did not restart");
			restarts++;
		}
		if (now >= next_usage && daemon_usage(&rss, &fds)) {
			next_usage = now + 5;
			if (rss_first < 0) {
				rss_first = rss;
				fd_first = fds;
			}
			if (now - t_start >= warmup) {
				if (rss0 < 0) {
					rss0 = rss;
					fd0 = fds;
				}
				rss_end = rss;
				fd_end = fds;
				rss_max = rss > rss_max ? rss : rss_max;
				fd_max = fds > fd_max ? fds : fd_max;
			}
		}
		usleep((useconds_t)(SAMPLE_S * 1e6));
	}
	/* Idle to the end; the figures once the last phase is done. */
	for (unsigned i = 0; i < fx.n; i++)
		tg_cmd(&fx.vm[i].g, "idle");
	if (daemon_usage(&rss, &fds)) {
		rss_end = rss;
		fd_end = fds;
		rss_max = rss > rss_max ? rss : rss_max;
		fd_max = fds > fd_max ? fds : fd_max;
	}

	/* The event stream, then vmactd's clean exit. */
	sleep(2);
	th_proc_stop(&fx.events, SIGTERM, 5 * VMACT_USEC_PER_SEC);
	status = th_proc_stop(&fx.d.proc, SIGTERM, 60 * VMACT_USEC_PER_SEC);
	san = sanitizer_reports();

	evs = read_events(&ne, &gaps);
	for (unsigned i = 0; i < fx.n; i++) {
		check_bounds(&t, (int)i, evs, ne);
		check_seen(&t, (int)i, evs, ne, now_real());
	}
	free(evs);

	printf("# ---- soak summary (seed %llu) ----\n", (unsigned long long)seed_of_run);
	printf("# duration:            %.0f s of load, %u guests, %u phases (idle %u, busy1 %u, "
	       "busy2 %u, busy3 %u; memory pressure in %u)\n",
	       th_now_s() - t_start, fx.n,
	       phase_counts[0] + phase_counts[1] + phase_counts[2] + phase_counts[3],
	       phase_counts[0], phase_counts[1], phase_counts[2], phase_counts[3], pressure_phases);
	printf("# resizes:             %u done (CPU up %u, CPU down %u, vCPU plugs %u, "
	       "vCPU unplugs %u, memory up %u, memory down %u), %u failed\n",
	       t.resized, t.cpu_up, t.cpu_down, t.vcpu_plug, t.vcpu_unplug, t.mem_up, t.mem_down,
	       t.failed);
	printf("# downscale requests:  %u approved, %u denied by the vm-monitors\n", t.approved,
	       t.denied);
	printf("# libvirtd restarts:   %u\n", restarts);
	printf("# bound violations:    %u (in %u samples)\n", t.violations, t.samples);
	printf("# unmatched resizes:   %u (%u seen by the guest, the slowest %.1f s after "
	       "vmactd's report; %u too late in the run to tell); guest saw more than given: %u "
	       "(in %u reports)\n",
	       t.unmatched, t.matched, t.slowest_seen, t.too_late, t.oversee, t.reports);
	printf("# vmactd RSS:          first %ld kB; after %.0f s warm-up start %ld kB, end %ld kB, "
	       "max %ld kB%s\n",
	       rss_first, warmup, rss0, rss_end, rss_max,
	       sanitized ? " (sanitized: not checked)" : "");
	printf("# vmactd descriptors:  first %ld; start %ld, end %ld, max %ld\n", fd_first, fd0,
	       fd_end, fd_max);
	printf("# whole test so far:   %.0f s\n", th_now_s() - t_setup);
	printf("# event stream gaps:   %u; vmactd exit status %d; sanitizer reports %u\n", gaps,
	       status, san);
	fflush(stdout);

	if (status != 0 || san) {
		dump_log();
		fail_msg("vmactd exited with status %d, %u sanitizer report(s)", status, san);
	}
	assert_int_equal(restarts, restarts_planned);
	assert_int_equal(gaps, 0);
	assert_int_equal(t.violations, 0);
	assert_int_equal(t.unmatched, 0);
	assert_int_equal(t.oversee, 0);
	/* Something happened: the soak resized the VMs, and the guests saw it
	 * (a short run too: a resize counts as unseen only once its whole
	 * window has passed, so that the fast version checks them as well). */
	assert_true(t.resized > 0);
	assert_true(t.matched > 0);
	assert_true(fd0 > 0 && fd_end > 0);
	if (fd_end > fd0 + FD_MARGIN)
		fail_msg("vmactd's descriptors grew from %ld to %ld", fd0, fd_end);
	if (!sanitized && duration >= 180 &&
	    rss_end > rss0 + (rss0 * RSS_MARGIN_PCT / 100 > RSS_MARGIN_KB
				      ? rss0 * RSS_MARGIN_PCT / 100
				      : RSS_MARGIN_KB))
		fail_msg("vmactd's RSS grew from %ld kB to %ld kB", rss0, rss_end);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(soak),
	};

	if (!th_root_test("test_soak", "libvirt qemu:///system, BPF, cgroups, libvirtd"))
		return 1;
	/* libvirtd restarts are the test's doing: its lost connections are
	 * expected, each call's result is checked where it matters. */
	tg_quiet_libvirt();
	return cmocka_run_group_tests_name("soak", tests, setup, teardown);
}
