/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/macro.h"
#include "tests/lib/file.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

static int decode(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the child: only async-signal-safe calls until exec. */
static void child(const char *const argv[], const struct th_spawn_opts *o, int in_r, int out_w,
		  int file_fd, int null_fd, pid_t parent)
{
	int fd;

	/* Dies with the test; and if the test died before this line, now. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(126);
	signal(SIGPIPE, SIG_DFL);
	if (o->stdin_pipe)
		dup2(in_r, STDIN_FILENO);
	fd = o->out == TH_OUT_PIPE ? out_w : o->out == TH_OUT_FILE ? file_fd : null_fd;
	if (o->out != TH_OUT_INHERIT)
		dup2(fd, STDOUT_FILENO);
	fd = o->err == TH_OUT_PIPE ? out_w : o->err == TH_OUT_FILE ? file_fd : null_fd;
	if (o->err != TH_OUT_INHERIT)
		dup2(fd, STDERR_FILENO);
	/* Only the standard streams go along: a descriptor of the test that
	 * lives on in a child (a daemon it starts, such as libvirtd -d) keeps
	 * what it refers to open, e.g. the integration lock taken with flock(1)
	 * held after the test ended. */
	closefrom(STDERR_FILENO + 1);
	for (const char *const *e = o->env; e && *e; e++)
		putenv((char *)*e);
	execvp(argv[0], (char *const *)argv);
	fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int th_spawn(struct th_proc *p, const char *const argv[], const struct th_spawn_opts *o)
{
	static const struct th_spawn_opts none = { 0 };
	_cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1, file_fd = -1,
			    null_fd = -1;
	pid_t parent = getpid();
	int fds[2];

	if (!o)
		o = &none;
	*p = (struct th_proc){ .in_fd = -1, .out_fd = -1 };
	if (o->stdin_pipe) {
		if (pipe2(fds, O_CLOEXEC) < 0)
			return -errno;
		in_r = fds[0];
		in_w = fds[1];
	}
	if (o->out == TH_OUT_PIPE || o->err == TH_OUT_PIPE) {
		if (pipe2(fds, O_CLOEXEC) < 0)
			return -errno;
		out_r = fds[0];
		out_w = fds[1];
	}
	if (o->out == TH_OUT_FILE || o->err == TH_OUT_FILE) {
		if (!o->out_path)
			return -EINVAL;
		file_fd = open(o->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (file_fd < 0)
			return -errno;
	}
	if (o->out == TH_OUT_NULL || o->err == TH_OUT_NULL) {
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null_fd < 0)
			return -errno;
	}
	p->pid = fork();
	if (p->pid < 0) {
		p->pid = 0;
		return -errno;
	}
	if (p->pid == 0)
		child(argv, o, in_r, out_w, file_fd, null_fd, parent);
	p->in_fd = TAKE_FD(in_w);
	p->out_fd = TAKE_FD(out_r);
	p->spawned = true;
	return 0;
}

bool th_proc_exited(struct th_proc *p)
{
	int status;

	if (p->pid <= 0)
		return true;
	if (waitpid(p->pid, &status, WNOHANG) != p->pid)
		return false;
	p->status = decode(status);
	p->pid = 0;
	return true;
}

int th_proc_wait(struct th_proc *p)
{
	int status;

	if (!p->spawned)
		return p->status;
	p->spawned = false;
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	if (p->pid > 0) {
		while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
			;
		p->status = decode(status);
		p->pid = 0;
	}
	return p->status;
}

int th_proc_stop(struct th_proc *p, int sig, uint64_t grace_usec)
{
	if (!p->spawned)
		return p->status;
	close_fd(&p->in_fd);
	if (p->pid > 0) {
		if (sig)
			kill(p->pid, sig);
		if (!TH_WAIT(NULL, th_proc_exited(p), grace_usec))
			kill(p->pid, SIGKILL);
	}
	return th_proc_wait(p);
}

bool th_wait_daemon(struct th_proc *p, bool (*pred)(void *), void *arg, double limit_s)
{
	bool died = false;

	if (TH_WAIT(NULL, pred(arg) || (died = p->pid > 0 && th_proc_exited(p)),
		    (uint64_t)(limit_s * VMACT_USEC_PER_SEC)) &&
	    !died)
		return true;
	if (died)
		fprintf(stderr, "the daemon exited early (status %d)\n", p->status);
	return false;
}

long th_proc_fds(pid_t pid)
{
	char path[64];
	long n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(path)))
		return -1;
	for (struct dirent *de; (de = readdir(d));)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

bool th_proc_status(pid_t pid, const char *key, char *out, size_t len)
{
	char path[64], *buf, *p;
	size_t kl = strlen(key);
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	buf = th_read_file(path);
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ':') {
			const char *v = p + kl + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
			found = true;
			break;
		}
	}
	free(buf);
	return found;
}

long th_proc_rss_kib(pid_t pid)
{
	char path[64], *buf, *p;
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	buf = th_read_file(path);
	if (buf && (p = strstr(buf, "VmRSS:")))
		kib = strtol(p + 6, NULL, 10);
	free(buf);
	return kib;
}

pid_t th_proc_find(const char *needle, const char *also)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	while (dir && !found && (e = readdir(dir))) {
		char path[300], cmd[4096];
		ssize_t n;
		int fd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = 0;
		if (strstr(cmd, needle) && (!also || strstr(cmd, also)))
			found = (pid_t)atoi(e->d_name);
	}
	if (dir)
		closedir(dir);
	return found;
}

/* prog beside this program's build directory, `up` components above it. */
static int build_prog(int up, const char *prog, char *out, size_t len)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int w;

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	for (int i = 0; i < up; i++) {
		if (!(slash = strrchr(self, '/')))
			return -ENOENT;
		*slash = '\0';
	}
	w = snprintf(out, len, "%s/%s", self, prog);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

bool th_root_test(const char *test, const char *why)
{
	if (geteuid() != 0) {
		printf("%s: needs root (%s)\n", test, why);
		return false;
	}
	signal(SIGPIPE, SIG_IGN);
	return true;
}

int th_build_prog(const char *prog, char *out, size_t len)
{
	return build_prog(3, prog, out, len);
}

int th_bench_prog(const char *prog, char *out, size_t len)
{
	return build_prog(2, prog, out, len);
}

int th_prog(const char *prog, char *out, size_t len)
{
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return -errno;
	self[n] = '\0';
	/* A bench sits in build[/san]/bench/, a test one level deeper. */
	slash = strrchr(self, '/');
	if (slash && slash - self >= 6 && !strncmp(slash - 6, "/bench", 6))
		return th_bench_prog(prog, out, len);
	return th_build_prog(prog, out, len);
}
