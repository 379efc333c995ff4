/* SPDX-License-Identifier: Apache-2.0 */
#include <linux/sockios.h>
#include <pthread.h>
#include <sys/ioctl.h>

#include "tests/lib/file.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

/* Replaces every @KEY@ of the template. */
char *tg_subst(const char *tpl, const char *const *kv)
{
	size_t cap = strlen(tpl) + 1;
	char *out, *o;

	for (size_t i = 0; kv[i]; i += 2)
		cap += strlen(kv[i + 1]) * 8;
	out = o = malloc(cap);
	if (!out)
		return NULL;
	while (*tpl) {
		bool done = false;

		if (*tpl == '@') {
			for (size_t i = 0; kv[i]; i += 2) {
				size_t kl = strlen(kv[i]);

				if (!strncmp(tpl + 1, kv[i], kl) && tpl[1 + kl] == '@') {
					o = stpcpy(o, kv[i + 1]);
					tpl += kl + 2;
					done = true;
					break;
				}
			}
		}
		if (!done)
			*o++ = *tpl++;
	}
	*o = 0;
	return out;
}

const char *tg_guest_dir(void)
{
	const char *d = getenv("VMACT_GUEST_DIR");

	return d && d[0] ? d : "build/guest";
}

/* Starts a transient guest named "<prefix>-<pid>-<n>". metadata: XML for
 * <metadata> (without the wrapper) or NULL. Returns 0 or -errno with a
 * message in msg. */
int tg_template_edit(const char *from, const char *to, const char *out_path)
{
	char *t = th_read_file("tests/guest/domain.xml.in"), *at, *mod;
	int r = -EINVAL;

	if (!t)
		return -ENOENT;
	at = strstr(t, from);
	if (at && (mod = malloc(strlen(t) + strlen(to) + 1))) {
		memcpy(mod, t, (size_t)(at - t));
		strcpy(mod + (at - t), to);
		strcat(mod, at + strlen(from));
		r = th_write_file(out_path, mod);
		free(mod);
	}
	free(t);
	return r;
}

int tg_balloon_template(const char *out_path)
{
	return tg_template_edit("<memballoon model='none'/>",
				"<memballoon model='virtio'><stats period='1'/></memballoon>",
				out_path);
}

int tg_start(virConnectPtr vc, const char *prefix, const char *metadata, struct tg_guest *g,
	     char *msg, size_t msglen)
{
	return tg_start_cmdline(vc, prefix, metadata, getenv("VMACT_GUEST_CMDLINE"), g, msg,
				msglen);
}

int tg_start_cmdline(virConnectPtr vc, const char *prefix, const char *metadata, const char *extra,
		     struct tg_guest *g, char *msg, size_t msglen)
{
	return tg_start_template(vc, prefix, metadata, getenv("VMACT_GUEST_TEMPLATE"), extra, g,
				 msg, msglen);
}

int tg_start_template(virConnectPtr vc, const char *prefix, const char *metadata,
		      const char *tplpath, const char *extra, struct tg_guest *g, char *msg,
		      size_t msglen)
{
	/* Atomic: guests may be started side by side (tg_start_each). */
	static _Atomic unsigned counter;
	char guestdir[PATH_MAX], meta[8192];
	char *tpl, *xml;

	memset(g, 0, sizeof(*g));
	if (!realpath(tg_guest_dir(), guestdir)) {
		snprintf(msg, msglen, "guest dir %s: %s (run make guest)", tg_guest_dir(),
			 strerror(errno));
		return -ENOENT;
	}
	tpl = th_read_file(tplpath && tplpath[0] ? tplpath : "tests/guest/domain.xml.in");
	if (!tpl) {
		snprintf(msg, msglen, "cannot read the domain template");
		return -ENOENT;
	}
	mkdir(TG_RUNDIR, 0755);
	snprintf(g->name, sizeof(g->name), "%s-%d-%u", prefix, (int)getpid(), ++counter);
	snprintf(g->log, sizeof(g->log), TG_RUNDIR "/%s.log", g->name);
	snprintf(g->ctl, sizeof(g->ctl), TG_RUNDIR "/%s.ctl", g->name);
	unlink(g->log);
	unlink(g->ctl);
	snprintf(meta, sizeof(meta), "%s%s%s", metadata ? "<metadata>" : "",
		 metadata ? metadata : "", metadata ? "</metadata>" : "");
	{
		const char *kv[] = { "NAME",    g->name,    "GUEST", guestdir,  "RUN",
				     TG_RUNDIR, "METADATA", meta,    "CMDLINE", extra ? extra : "",
				     NULL };

		xml = tg_subst(tpl, kv);
	}
	free(tpl);
	if (!xml)
		return -ENOMEM;
	g->dom = virDomainCreateXML(vc, xml, 0);
	free(xml);
	if (!g->dom) {
		virErrorPtr e = virGetLastError();

		snprintf(msg, msglen, "virDomainCreateXML: %s", e && e->message ? e->message : "?");
		return -EIO;
	}
	virDomainGetUUIDString(g->dom, g->uuid);
	return 0;
}

int tg_start_standalone(const char *prefix, const char *metadata, const char *tplpath,
			const char *extra, struct tg_guest *g)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	char msg[512];
	int r;

	if (!vc) {
		fprintf(stderr, "guest: cannot connect to qemu:///system\n");
		return -ECONNREFUSED;
	}
	r = tg_start_template(vc, prefix, metadata,
			      tplpath ? tplpath : getenv("VMACT_GUEST_TEMPLATE"),
			      extra ? extra : getenv("VMACT_GUEST_CMDLINE"), g, msg, sizeof(msg));
	virConnectClose(vc);
	if (r < 0)
		fprintf(stderr, "guest: %s\n", msg);
	return r;
}

int tg_boot_first(virConnectPtr *vc, const char *prefix, const char *metadata, const char *tplpath,
		  const char *extra, struct tg_guest *g, struct tg_report *r, char *msg,
		  size_t msglen)
{
	for (int attempt = 0;; attempt++) {
		if (!*vc || virConnectIsAlive(*vc) != 1) {
			if (*vc)
				virConnectClose(*vc);
			*vc = virConnectOpen("qemu:///system");
		}
		if (*vc &&
		    tg_start_template(*vc, prefix, metadata, tplpath, extra, g, msg, msglen) == 0)
			break;
		if (attempt == 5) {
			if (!*vc)
				snprintf(msg, msglen, "cannot connect to libvirtd");
			return -EIO;
		}
		sleep(1);
	}
	if (!tg_wait(g, 0, NULL, NULL, 180, r)) {
		snprintf(msg, msglen, "guest %s did not boot", g->name);
		return -ETIMEDOUT;
	}
	return 0;
}

int tg_boot(virConnectPtr *vc, const char *prefix, const char *metadata, const char *tplpath,
	    const char *extra, struct tg_guest *g, char *msg, size_t msglen)
{
	struct tg_report r;
	int ret = tg_boot_first(vc, prefix, metadata, tplpath, extra, g, &r, msg, msglen);

	if (ret < 0)
		return ret;
	/* The boot's tail (modules, the first reports) is not the load. */
	sleep(2);
	return 0;
}

bool tg_report(const struct tg_guest *g, struct tg_report *r)
{
	char buf[4097], *p, *last = NULL;
	FILE *f = fopen(g->log, "re");
	size_t n;
	long end;
	bool ok = false;

	if (!f)
		return false;
	if (fseek(f, 0, SEEK_END) == 0 && (end = ftell(f)) > (long)sizeof(buf) - 1)
		fseek(f, end - (long)(sizeof(buf) - 1), SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	/* Only complete lines: the last one may still be half written. */
	while (n > 0 && buf[n - 1] != '\n')
		n--;
	buf[n] = 0;
	/* A kernel message may contain NULs: scan bytes, not a C string. */
	for (p = buf; p < buf + n; p++)
		if (!strncmp(p, "VMACT seq=", 10))
			last = p;
	if (last) {
		int tail = 0;

		memset(r, 0, sizeof(*r));
		ok = sscanf(last, "VMACT seq=%lu cpus=%u memtotal_kb=%lu busy=%u%n", &r->seq,
			    &r->cpus, &r->memtotal_kb, &r->busy, &tail) == 4;
		r->has_mem = ok && tail > 0 &&
			     sscanf(last + tail, " avail_kb=%lu alloc_mb=%lu oom=%lu majflt=%lu",
				    &r->avail_kb, &r->alloc_mb, &r->oom, &r->majflt) == 4;
	}
	return ok;
}

/* A report fresher than after that satisfies pred; the latest report in
 * *r either way. */
static bool fresh_report(const struct tg_guest *g, unsigned long after,
			 bool (*pred)(const struct tg_report *, const void *), const void *arg,
			 struct tg_report *r)
{
	struct tg_report cur;

	if (!tg_report(g, &cur))
		return false;
	*r = cur;
	return cur.seq > after && (!pred || pred(&cur, arg));
}

bool tg_wait(const struct tg_guest *g, unsigned long after,
	     bool (*pred)(const struct tg_report *, const void *), const void *arg,
	     double timeout_s, struct tg_report *r)
{
	memset(r, 0, sizeof(*r));
	return TH_WAIT(NULL, fresh_report(g, after, pred, arg, r),
		       (uint64_t)(timeout_s * VMACT_USEC_PER_SEC));
}

bool tg_cpus_eq(const struct tg_report *r, const void *arg)
{
	return r->cpus == *(const unsigned *)arg;
}

bool tg_mem_eq(const struct tg_report *r, const void *arg)
{
	return r->memtotal_kb == *(const unsigned long *)arg;
}

bool tg_busy_eq(const struct tg_report *r, const void *arg)
{
	return r->busy == *(const unsigned *)arg;
}

/* Sends one command line to the guest's control port. */
static void quiet(void *ud, virErrorPtr e)
{
	(void)ud;
	(void)e;
}

void tg_quiet_libvirt(void)
{
	virSetErrorFunc(NULL, quiet);
}

/* The bytes written to fd that its peer has not read yet, or -errno. */
static int unread(int fd)
{
	int q;

	return ioctl(fd, SIOCOUTQ, &q) < 0 ? -errno : q;
}

int tg_cmd(const struct tg_guest *g, const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = strlen(line);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (strlen(g->ctl) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, g->ctl, strlen(g->ctl) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, line, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		r = -errno;
	/* QEMU's chardev keeps one client and reads only as much as the
	 * guest's port can take: a client that hangs up before QEMU read its
	 * bytes loses them. A fixed 50 ms here lost a command on a loaded
	 * host (test_agentless: the guest never allocated). So: until the
	 * socket's send queue is empty (SIOCOUTQ, the bytes the peer has not
	 * read yet), within a safety limit. */
	if (r == 0) {
		int q;

		TH_WAIT(NULL, (q = unread(fd)) <= 0, 120 * VMACT_USEC_PER_SEC);
		r = q < 0 ? q : q > 0 ? -ETIMEDOUT : 0;
	}
	close(fd);
	return r;
}

pid_t tg_qemu_pid(const char *name)
{
	char path[256], *text;
	long pid;

	snprintf(path, sizeof(path), "/run/libvirt/qemu/%s.pid", name);
	text = th_read_file(path);
	if (!text)
		return errno ? -errno : -ENOENT;
	pid = atol(text);
	free(text);
	return pid > 1 ? (pid_t)pid : -EINVAL;
}

int tg_live_vcpus(const char *name)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");
	virDomainPtr d = vc ? virDomainLookupByName(vc, name) : NULL;
	int n = d ? virDomainGetVcpusFlags(d, VIR_DOMAIN_AFFECT_LIVE) : -1;

	if (d)
		virDomainFree(d);
	if (vc)
		virConnectClose(vc);
	return n;
}

void tg_guest_named(struct tg_guest *g, const char *name)
{
	*g = (struct tg_guest){ 0 };
	snprintf(g->name, sizeof(g->name), "%s", name);
	snprintf(g->log, sizeof(g->log), TG_RUNDIR "/%s.log", name);
	snprintf(g->ctl, sizeof(g->ctl), TG_RUNDIR "/%s.ctl", name);
}

void tg_destroy(struct tg_guest *g)
{
	if (g->dom) {
		virDomainDestroy(g->dom);
		virDomainFree(g->dom);
		g->dom = NULL;
	}
	unlink(g->log);
	unlink(g->ctl);
}

/* tg_destroy_by_name, and with undefine the persistent domain undefined. */
static void destroy_by_name(struct tg_guest *g, bool undefine)
{
	virConnectPtr vc = virConnectOpen("qemu:///system");

	if (g->dom) {
		virDomainFree(g->dom);
		g->dom = NULL;
	}
	if (vc && g->name[0]) {
		virDomainPtr d = virDomainLookupByName(vc, g->name);

		if (d) {
			/* Running, or not known to be stopped. */
			if (virDomainIsActive(d) != 0)
				virDomainDestroy(d);
			if (undefine)
				virDomainUndefine(d);
			virDomainFree(d);
		}
	}
	if (vc)
		virConnectClose(vc);
	tg_destroy(g);
}

void tg_destroy_by_name(struct tg_guest *g)
{
	destroy_by_name(g, false);
}

struct each_job {
	int (*fn)(unsigned i, void *ud);
	void *ud;
	unsigned i;
	int r;
	pthread_t thread;
	bool started;
};

static void *each_job_run(void *arg)
{
	struct each_job *j = arg;

	j->r = j->fn(j->i, j->ud);
	return NULL;
}

/* fn(0, ud) .. fn(n - 1, ud) each in a thread of its own (in this one
 * when no thread can be had); returns when all are done: 0, or the first
 * negative result. */
static int each_in_thread(unsigned n, int (*fn)(unsigned i, void *ud), void *ud)
{
	struct each_job *jobs = calloc(n, sizeof(*jobs));
	int r = 0;

	for (unsigned i = 0; i < n; i++) {
		struct each_job one = { .fn = fn, .ud = ud, .i = i };

		if (!jobs) {
			each_job_run(&one);
			if (one.r < 0 && r == 0)
				r = one.r;
			continue;
		}
		jobs[i] = one;
		jobs[i].started = pthread_create(&jobs[i].thread, NULL, each_job_run, &jobs[i]) ==
				  0;
		if (!jobs[i].started)
			each_job_run(&jobs[i]);
	}
	for (unsigned i = 0; jobs && i < n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
		if (jobs[i].r < 0 && r == 0)
			r = jobs[i].r;
	}
	free(jobs);
	return r;
}

static int start_one(unsigned i, void *ud)
{
	int (*start)(unsigned i) = *(int (**)(unsigned))ud;

	return start(i);
}

int tg_start_each(unsigned n, int (*start)(unsigned i))
{
	return each_in_thread(n, start_one, &start);
}

struct destroy_all {
	struct tg_guest *const *g;
	bool undefine;
};

static int destroy_one(unsigned i, void *ud)
{
	const struct destroy_all *a = ud;

	destroy_by_name(a->g[i], a->undefine);
	return 0;
}

void tg_destroy_all(struct tg_guest *const g[], size_t n, bool undefine)
{
	struct destroy_all a = { .g = g, .undefine = undefine };

	each_in_thread((unsigned)n, destroy_one, &a);
}

bool tg_booted(void *g)
{
	struct tg_report r;

	return tg_report(g, &r);
}

bool tg_two_cpus(void *g)
{
	struct tg_report r;

	return tg_report(g, &r) && r.cpus >= 2;
}
