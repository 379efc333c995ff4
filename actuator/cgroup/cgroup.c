/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/cgroup/cgroup.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"

DEFINE_PTR_CLEANUP(endmntentp_, FILE, endmntent)

const char *act_cg_layout_name(enum act_cg_layout l)
{
	switch (l) {
	case ACT_CG_LEGACY:
		return "legacy";
	case ACT_CG_HYBRID:
		return "hybrid";
	case ACT_CG_UNIFIED:
		return "unified";
	}
	return "unknown";
}

static bool word_in(const char *list, const char *word, const char *seps)
{
	size_t wl = strlen(word);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps);
		if (n == wl && memcmp(p, word, wl) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

int act_cg_classify(const struct act_cg_mount *m, size_t n, enum act_cg_layout *layout,
		    const struct act_cg_mount **cpu, struct vmact_err *err)
{
	size_t v1 = 0, v2 = 0;
	const struct act_cg_mount *cpu_v1 = NULL, *cpu_v2 = NULL;

	for (size_t i = 0; i < n; i++) {
		if (m[i].v2) {
			v2++;
			if (m[i].has_cpu && !cpu_v2)
				cpu_v2 = &m[i];
		} else {
			v1++;
			if (m[i].has_cpu && !cpu_v1)
				cpu_v1 = &m[i];
		}
	}
	if (v1 == 0 && v2 == 0)
		return vmact_err_set(err, ENODEV, "no cgroup or cgroup2 filesystem mounted");
	*layout = v1 == 0 ? ACT_CG_UNIFIED : v2 == 0 ? ACT_CG_LEGACY : ACT_CG_HYBRID;
	/* A controller bound to a v1 hierarchy is absent from cgroup2 (the
	 * kernel lists it in neither cgroup.controllers), so at most one side
	 * can claim it; v1 wins if both are reported anyway. */
	*cpu = cpu_v1 ? cpu_v1 : cpu_v2;
	if (!*cpu)
		return vmact_err_set(
			err, ENODEV,
			"cpu controller: not on any v1 hierarchy nor in cgroup.controllers "
			"of the cgroup2 mount (%s layout)",
			act_cg_layout_name(*layout));
	return 0;
}

/* cgroup.controllers of a cgroup2 mount: space-separated names. */
static int v2_controllers(const char *dir, char *buf, size_t len, struct vmact_err *err)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/cgroup.controllers", dir) >= sizeof(path))
		return vmact_err_set(err, ENAMETOOLONG, "%s: path too long", dir);
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

#define MAX_MOUNTS 32

int act_cg_open(struct act_cg *cg, const struct act_cg_opts *opts, struct vmact_err *err)
{
	const char *mounts = opts && opts->mounts ? opts->mounts : "/proc/self/mounts";
	const char *proc = opts && opts->proc ? opts->proc : "/proc";
	struct act_cg_mount m[MAX_MOUNTS];
	char dirs[MAX_MOUNTS][PATH_MAX];
	size_t n = 0;
	int r;

	memset(cg, 0, sizeof(*cg));
	if ((size_t)snprintf(cg->proc, sizeof(cg->proc), "%s", proc) >= sizeof(cg->proc))
		return vmact_err_set(err, ENAMETOOLONG, "proc root: too long");

	/* The mount table rather than statfs() magic: it lets a test describe
	 * a fake tree that cannot carry a cgroup2 magic. */
	_cleanup_(endmntentp_) FILE *f = setmntent(mounts, "re");
	if (!f)
		return vmact_err_set(err, errno, "%s: %s", mounts, strerror(errno));
	struct mntent ent, *e;
	char buf[4 * PATH_MAX];
	while ((e = getmntent_r(f, &ent, buf, sizeof(buf)))) {
		bool v2 = strcmp(e->mnt_type, "cgroup2") == 0;
		if (!v2 && strcmp(e->mnt_type, "cgroup") != 0)
			continue;
		if (n == MAX_MOUNTS)
			return vmact_err_set(err, E2BIG, "%s: more than %d cgroup mounts", mounts,
					     MAX_MOUNTS);
		if ((size_t)snprintf(dirs[n], PATH_MAX, "%s", e->mnt_dir) >= PATH_MAX)
			return vmact_err_set(err, ENAMETOOLONG, "%s: mount point too long", mounts);
		m[n] = (struct act_cg_mount){ .v2 = v2, .dir = dirs[n] };
		if (v2) {
			char ctl[1024];
			r = v2_controllers(e->mnt_dir, ctl, sizeof(ctl), err);
			if (r < 0)
				return r;
			m[n].has_cpu = word_in(ctl, "cpu", " ");
		} else {
			m[n].has_cpu = word_in(e->mnt_opts, "cpu", ",");
			m[n].has_cpuacct = word_in(e->mnt_opts, "cpuacct", ",");
		}
		n++;
	}

	const struct act_cg_mount *cpu;
	r = act_cg_classify(m, n, &cg->layout, &cpu, err);
	if (r < 0)
		return r;
	cg->cpu_version = cpu->v2 ? 2 : 1;
	snprintf(cg->cpu_mount, sizeof(cg->cpu_mount), "%s", cpu->dir);
	for (size_t i = 0; i < n; i++)
		if (!m[i].v2 && m[i].has_cpuacct && !cg->cpuacct_mount[0])
			snprintf(cg->cpuacct_mount, sizeof(cg->cpuacct_mount), "%s", m[i].dir);

	return 0;
}

/* Not libcgroup's cgroup_get_current_controller_path(): in 2.0.2 it
 * matches only "id:controllers:path" lines with a non-empty controller list
 * (so never the v2 "0::/path" line), reads the path with %s (stops at a
 * space) and its /proc path cannot be pointed at a test tree. */
int act_cg_pid_group(const struct act_cg *cg, pid_t pid, char **out, struct vmact_err *err)
{
	char path[PATH_MAX];
	if (pid <= 0)
		return vmact_err_set(err, EINVAL, "pid: %d is not a process id", (int)pid);
	if ((size_t)snprintf(path, sizeof(path), "%s/%d/cgroup", cg->proc, (int)pid) >=
	    sizeof(path))
		return vmact_err_set(err, ENAMETOOLONG, "proc root: path too long");
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));

	_cleanup_free_ char *line = NULL, *found = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		/* "hierarchy-id:controller-list:path"; the path may hold ':' */
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			return vmact_err_set(err, EPROTO, "%s: malformed line \"%s\"", path, line);
		*c1 = *c2 = '\0';
		const char *id = line, *ctls = c1 + 1, *p = c2 + 1;
		bool match = cg->cpu_version == 1 ? word_in(ctls, "cpu", ",")
						  : strcmp(id, "0") == 0 && ctls[0] == '\0';
		if (!match)
			continue;
		if (found)
			return vmact_err_set(err, EPROTO, "%s: two entries for the cpu hierarchy",
					     path);
		if (p[0] != '/')
			return vmact_err_set(err, EPROTO, "%s: cgroup path \"%s\" is not absolute",
					     path, p);
		found = strdup(p);
		if (!found)
			return vmact_err_set(err, ENOMEM, "out of memory");
	}
	if (!found)
		return vmact_err_set(err, ENOENT, "%s: no entry for the cgroup v%d cpu hierarchy",
				     path, cg->cpu_version);
	*out = TAKE_PTR(found);
	return 0;
}

int act_cg_vm_group(const struct act_cg *cg, pid_t qemu_pid, char **out, struct vmact_err *err)
{
	_cleanup_free_ char *g = NULL;
	int r = act_cg_pid_group(cg, qemu_pid, &g, err);
	if (r < 0)
		return r;
	static const char suffix[] = "/emulator";
	size_t n = strlen(g), sl = sizeof(suffix) - 1;
	if (n <= sl || strcmp(g + n - sl, suffix) != 0)
		return vmact_err_set(
			err, ENOENT,
			"pid %d: cgroup %s is not a libvirt emulator group (…/emulator)",
			(int)qemu_pid, g);
	/* The VM's group is never the root ("//emulator" would make it so). */
	if (g[n - sl - 1] == '/')
		return vmact_err_set(err, EPROTO, "pid %d: cgroup %s has an empty component",
				     (int)qemu_pid, g);
	g[n - sl] = '\0';
	*out = TAKE_PTR(g);
	return 0;
}

/* Opens mount + group + "/" + file (group starts with '/'): the
 * descriptor, or a negative errno with err set. */
static int open_file(const char *mount, const char *group, const char *file, int flags,
		     struct vmact_err *err)
{
	char path[2 * PATH_MAX + 64];
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s%s/%s", mount, group, file) >= sizeof(path))
		return vmact_err_set(err, ENAMETOOLONG, "%s/%s: path too long", group, file);
	fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return vmact_err_set(err, errno, "%s/%s: %s", group, file, strerror(errno));
	return fd;
}

/* One line of a cgroup file, newline stripped. The files are read and
 * written directly, not through libcgroup: its cgroup_init() fills a
 * mount table of 100 entries of two FILENAME_MAX paths in its .bss, 0.8 MiB
 * of private memory for a daemon that finds the mount itself (above) and
 * needs three files (doc/actuation.md, "Cgroups without libcgroup"). */
static int read_value(const char *mount, const char *group, const char *file, char *buf, size_t len,
		      struct vmact_err *err)
{
	_cleanup_close_ int fd = open_file(mount, group, file, O_RDONLY, err);
	ssize_t n;

	if (fd < 0)
		return fd;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return vmact_err_set(err, errno, "%s/%s: %s", group, file, strerror(errno));
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Strict unsigned decimal; the whole string must be the number. */
static int parse_u64(const char *s, uint64_t *v)
{
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

/* One value per write: the kernel takes a cgroup file's value in one
 * write() and answers it there (EINVAL for a ratio v1 refuses), so the
 * error names the file the kernel refused. */
static int write_value(const char *mount, const char *group, const char *file, const char *value,
		       struct vmact_err *err)
{
	_cleanup_close_ int fd = open_file(mount, group, file, O_WRONLY, err);
	size_t len = strlen(value);
	ssize_t n;

	if (fd < 0)
		return fd;
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return vmact_err_set(err, errno, "%s/%s: writing \"%s\": %s", group, file, value,
				     strerror(errno));
	if ((size_t)n != len)
		return vmact_err_set(err, EIO, "%s/%s: writing \"%s\": %zd of %zu bytes taken",
				     group, file, value, n, len);
	return 0;
}

int act_cg_cpu_get(const struct act_cg *cg, const char *group, struct act_cpu_bw *out,
		   struct vmact_err *err)
{
	char buf[128];
	int r;
	if (cg->cpu_version == 2) {
		r = read_value(cg->cpu_mount, group, "cpu.max", buf, sizeof(buf), err);
		if (r < 0)
			return r;
		char *sp = strchr(buf, ' ');
		if (!sp)
			return vmact_err_set(err, EPROTO,
					     "%s/cpu.max: \"%s\" is not \"$MAX $PERIOD\"", group,
					     buf);
		*sp = '\0';
		struct act_cpu_bw bw;
		if (strcmp(buf, "max") == 0)
			bw.quota_us = ACT_CPU_QUOTA_UNLIMITED;
		else if (parse_u64(buf, &bw.quota_us) < 0)
			return vmact_err_set(err, EPROTO,
					     "%s/cpu.max: quota \"%s\" is not a number", group,
					     buf);
		if (parse_u64(sp + 1, &bw.period_us) < 0)
			return vmact_err_set(err, EPROTO,
					     "%s/cpu.max: period \"%s\" is not a number", group,
					     sp + 1);
		*out = bw;
		return 0;
	}
	struct act_cpu_bw bw;
	r = read_value(cg->cpu_mount, group, "cpu.cfs_quota_us", buf, sizeof(buf), err);
	if (r < 0)
		return r;
	if (strcmp(buf, "-1") == 0)
		bw.quota_us = ACT_CPU_QUOTA_UNLIMITED;
	else if (parse_u64(buf, &bw.quota_us) < 0)
		return vmact_err_set(err, EPROTO, "%s/cpu.cfs_quota_us: \"%s\" is not a number",
				     group, buf);
	r = read_value(cg->cpu_mount, group, "cpu.cfs_period_us", buf, sizeof(buf), err);
	if (r < 0)
		return r;
	if (parse_u64(buf, &bw.period_us) < 0)
		return vmact_err_set(err, EPROTO, "%s/cpu.cfs_period_us: \"%s\" is not a number",
				     group, buf);
	*out = bw;
	return 0;
}

static int v1_write_step(const struct act_cg *cg, const char *group,
			 const struct act_cpu_v1_step *s, struct vmact_err *err)
{
	char v[32];
	if (s->kind == ACT_CPU_V1_QUOTA && s->value == ACT_CPU_QUOTA_UNLIMITED)
		snprintf(v, sizeof(v), "-1");
	else
		snprintf(v, sizeof(v), "%" PRIu64, s->value);
	return write_value(cg->cpu_mount, group,
			   s->kind == ACT_CPU_V1_QUOTA ? "cpu.cfs_quota_us" : "cpu.cfs_period_us",
			   v, err);
}

static int v1_set(const struct act_cg *cg, const char *group, const struct act_cpu_bw *old,
		  const struct act_cpu_bw *bw, struct vmact_err *err)
{
	struct act_cpu_v1_step steps[ACT_CPU_V1_PLAN_MAX];
	int n = act_cpu_v1_plan(old, bw, steps);
	struct act_cpu_bw cur = *old;

	for (int i = 0; i < n; i++) {
		int r = v1_write_step(cg, group, &steps[i], err);
		if (r < 0) {
			if (r == -EINVAL)
				vmact_err_prefix(err,
						 "quota %" PRIu64 "/%" PRIu64
						 " us (v1 refuses a ratio above the nearest limited "
						 "ancestor's or below a child's)",
						 bw->quota_us, bw->period_us);
			/* Put the old limit back so a half-written pair does not
			 * outlive the error; what failed is already in err. */
			struct act_cpu_v1_step back[ACT_CPU_V1_PLAN_MAX];
			int m = act_cpu_v1_plan(&cur, old, back);
			for (int j = 0; j < m; j++)
				(void)v1_write_step(cg, group, &back[j], NULL);
			return r;
		}
		if (steps[i].kind == ACT_CPU_V1_QUOTA)
			cur.quota_us = steps[i].value;
		else
			cur.period_us = steps[i].value;
	}
	return 0;
}

int act_cg_cpu_set(const struct act_cg *cg, const char *group, const struct act_cpu_bw *bw,
		   struct vmact_err *err)
{
	int r = act_cpu_bw_check(bw, err);
	if (r < 0)
		return r;
	if (cg->cpu_version == 2) {
		/* One write sets both; v2 never rejects a ratio against the
		 * hierarchy (it caps silently), so there is no order to get right. */
		char v[64];
		if (bw->quota_us == ACT_CPU_QUOTA_UNLIMITED)
			snprintf(v, sizeof(v), "max %" PRIu64, bw->period_us);
		else
			snprintf(v, sizeof(v), "%" PRIu64 " %" PRIu64, bw->quota_us, bw->period_us);
		return write_value(cg->cpu_mount, group, "cpu.max", v, err);
	}
	struct act_cpu_bw old;
	r = act_cg_cpu_get(cg, group, &old, err);
	if (r < 0)
		return r;
	return v1_set(cg, group, &old, bw, err);
}

int act_cg_cpu_ensure(const struct act_cg *cg, const char *group, const struct act_cpu_bw *want,
		      bool *drifted, struct act_cpu_bw *found, struct vmact_err *err)
{
	struct act_cpu_bw cur;
	int r = act_cg_cpu_get(cg, group, &cur, err);
	if (r < 0)
		return r;
	if (found)
		*found = cur;
	*drifted = cur.quota_us != want->quota_us || cur.period_us != want->period_us;
	if (!*drifted)
		return 0;
	if (cg->cpu_version == 2)
		return act_cg_cpu_set(cg, group, want, err);
	r = act_cpu_bw_check(want, err);
	if (r < 0)
		return r;
	return v1_set(cg, group, &cur, want, err);
}

int act_cg_cpu_stat(const struct act_cg *cg, const char *group, struct vmact_cpustat *out,
		    struct vmact_err *err)
{
	char dir[2 * PATH_MAX];
	struct vmact_cpustat st;
	int r;

	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", cg->cpu_mount, group) >= sizeof(dir))
		return vmact_err_set(err, ENAMETOOLONG, "%s: path too long", group);
	r = vmact_cpustat_read(dir, &st, err);
	if (r < 0)
		return r;
	if (st.version != cg->cpu_version)
		return vmact_err_set(err, EPROTO, "%s/cpu.stat: no %s field", group,
				     cg->cpu_version == 1 ? "throttled_time" : "throttled_usec");

	if (cg->cpu_version == 1 && cg->cpuacct_mount[0]) {
		char buf[64];
		uint64_t ns;
		/* Absent when the group exists only in the cpu hierarchy. */
		if (read_value(cg->cpuacct_mount, group, "cpuacct.usage", buf, sizeof(buf), NULL) ==
			    0 &&
		    parse_u64(buf, &ns) == 0) {
			st.usage_ns = ns;
			st.has_usage = true;
		}
	}
	*out = st;
	return 0;
}
