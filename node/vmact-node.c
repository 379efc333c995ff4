/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-node: the guest's side of vmact-groupd's claim, for node images
 * (vmact-node(8); doc/cluster.md, "The claim"). It waits on the claim's
 * port, checks the claim, writes the kubelet's configuration from it
 * (node/kubelet.h), starts the kubelet and acknowledges; a claim it
 * refuses is answered with the reason and starts nothing. A node that
 * was claimed before a reboot applies its kept claim again. Exit status:
 * 0 on SIGTERM, 1 on an error it cannot go on from, 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-daemon.h>

#include "base/macro.h"
#include "node/claim.h"
#include "node/kubelet.h"

#define ACK    "VMACT-NODE claimed"
#define REFUSE "VMACT-NODE refused:"

/* The host side of a virtio port that is not connected: the port reads
 * as hung up until it is. */
#define HUP_WAIT_MS 50

struct opts {
	const char *port, *channel, *root, *systemctl, *console, *kubeadm;
	bool hostname;
};

/* The heartbeat on the console, for the group's serial health check
 * ({"kind":"serial","pattern":"VMACT-NODE "}): a standby says it can be
 * claimed every second; a claimed node says how its kubelet is every
 * 5 s, and goes quiet once the kubelet failed, so that vmact-groupd
 * reports it unhealthy (vmact-node(8), "Health"). */
#define STANDBY_EVERY_MS 1000
#define CLAIMED_EVERY_MS 5000

struct beat {
	int fd; /* the console, or -1 */
	uint64_t next_ms;
};

/* A kubeadm join under way: its output read as it comes, beside the port
 * and the heartbeat (a join waits minutes for the kubelet's TLS
 * bootstrap; the heartbeat must go on meanwhile). */
struct join {
	pid_t pid; /* 0: none */
	int fd;
	char path[PATH_MAX]; /* its JoinConfiguration, removed at its end */
	char *token;         /* kept out of the logged line */
	char last[512];      /* its last whole line that says something */
	char part[512];      /* the line being read */
	size_t have;
};

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(FILE *f)
{
	fputs("Usage: vmact-node [--channel NAME | --port PATH] [--root DIR]\n"
	      "                  [--systemctl PATH] [--console PATH] [--kubeadm PATH]\n"
	      "                  [--help] [--version]\n"
	      "Waits for vmact-groupd's claim on the guest's port, writes the kubelet's\n"
	      "configuration from it (provider ID, node name, labels, taints), starts\n"
	      "kubelet.service and answers \"" ACK " NAME\". A claim it refuses is\n"
	      "answered \"" REFUSE " REASON\" and nothing starts.\n"
	      "--channel NAME: the virtio-serial port of that name (default\n"
	      "org.vmact.claim.0). --port PATH: this port (a virtio port or a serial\n"
	      "line) instead. --root DIR: write under DIR and leave the hostname (tests).\n"
	      "--systemctl PATH: the program that starts the kubelet (default\n"
	      "/usr/bin/systemctl). --console PATH: where the heartbeat goes for the\n"
	      "group's health check, \"VMACT-NODE standby\" every second until the claim,\n"
	      "then \"VMACT-NODE claimed kubelet=STATE\" every 5 s while the kubelet has\n"
	      "not failed (default /dev/ttyS0; \"none\": no heartbeat). --kubeadm PATH:\n"
	      "what a claim with a JoinConfiguration runs as PATH join (default\n"
	      "/usr/bin/kubeadm).\n",
	      f);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "channel", required_argument, NULL, 'c' },
		{ "root", required_argument, NULL, 'r' },
		{ "systemctl", required_argument, NULL, 's' },
		{ "console", required_argument, NULL, 'C' },
		{ "kubeadm", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c;

	*o = (struct opts){ .channel = "org.vmact.claim.0",
			    .root = "",
			    .systemctl = "/usr/bin/systemctl",
			    .console = "/dev/ttyS0",
			    .kubeadm = "/usr/bin/kubeadm",
			    .hostname = true };
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->port = optarg;
			break;
		case 'c':
			o->channel = optarg;
			break;
		case 'r':
			o->root = optarg;
			o->hostname = false;
			break;
		case 's':
			o->systemctl = optarg;
			break;
		case 'C':
			o->console = optarg;
			break;
		case 'K':
			o->kubeadm = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			puts("vmact-node " VMACT_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vmact-node: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* The virtio port named o->channel: /dev/<port> whose
 * /sys/class/virtio-ports/<port>/name is it. */
static int find_port(const struct opts *o, char *out, size_t len)
{
	glob_t g;
	int r = -ENOENT;

	if (o->port) {
		snprintf(out, len, "%s", o->port);
		return 0;
	}
	if (glob("/sys/class/virtio-ports/*/name", 0, NULL, &g) != 0)
		return -ENOENT;
	for (size_t i = 0; i < g.gl_pathc && r < 0; i++) {
		char name[256] = "";
		FILE *f = fopen(g.gl_pathv[i], "re");
		const char *dir;
		size_t n;

		if (!f)
			continue;
		n = fread(name, 1, sizeof(name) - 1, f);
		fclose(f);
		name[n] = '\0';
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, o->channel))
			continue;
		/* /sys/class/virtio-ports/vport2p1/name -> /dev/vport2p1 */
		*strrchr(g.gl_pathv[i], '/') = '\0';
		dir = strrchr(g.gl_pathv[i], '/') + 1;
		snprintf(out, len, "/dev/%s", dir);
		r = 0;
	}
	globfree(&g);
	return r;
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line to the port (the host reads it), best effort: a host that
 * hung up gets the next claim's answer instead. */
static void say(int fd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(fd, line, (size_t)n) < 0)
		fprintf(stderr, "vmact-node: cannot answer on the port: %s\n", strerror(errno));
}

/* argv[0] run with argv, never through a shell; with out, its stdout (and,
 * with both, its stderr) into the pipe *out it returns to read. The pid, or
 * -errno. */
static pid_t spawn(char *const argv[], int *out, bool both)
{
	int p[2] = { -1, -1 };
	pid_t pid;

	if (out && pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		if (out) {
			dup2(p[1], STDOUT_FILENO);
			if (both)
				dup2(p[1], STDERR_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (out) {
		close(p[1]);
		if (pid < 0)
			close(p[0]);
		else
			*out = p[0];
	}
	return pid < 0 ? -errno : pid;
}

/* Its wait status; -1 when it cannot be had. */
static int reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* systemctl start --no-block kubelet.service. */
static int start_kubelet(const struct opts *o, struct vmact_err *err)
{
	char *const argv[] = { (char *)o->systemctl, "start", "--no-block", "kubelet.service",
			       NULL };
	pid_t pid = spawn(argv, NULL, false);
	int status;

	if (pid < 0)
		return vmact_err_set(err, (int)-pid, "fork: %s", strerror((int)-pid));
	if ((status = reap(pid)) < 0)
		return vmact_err_set(err, errno, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return vmact_err_set(err, EIO, "%s start kubelet.service failed (%s %d)",
				     o->systemctl, WIFEXITED(status) ? "status" : "signal",
				     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	return 0;
}

/* kubeadm join --config FILE started, its output to be read by
 * join_read. The file goes when it ends. */
static void join_start(const struct opts *o, char *token, struct join *j)
{
	char *const argv[] = { (char *)o->kubeadm, "join", "--config", j->path, NULL };
	pid_t pid;

	*j = (struct join){ .fd = -1, .token = token };
	snprintf(j->path, sizeof(j->path), "%s" ND_KUBEADM_JOIN, o->root);
	pid = spawn(argv, &j->fd, true);
	if (pid < 0) {
		fprintf(stderr, "vmact-node: kubeadm join: %s\n", strerror((int)-pid));
		unlink(j->path);
		j->fd = -1;
		return;
	}
	j->pid = pid;
}

/* The join's end: reaped, its file removed, its last line logged unless it
 * names the token. */
static void join_end(struct join *j)
{
	int status;

	close(j->fd);
	status = reap(j->pid);
	unlink(j->path);
	if (j->token && *j->token && strstr(j->last, j->token))
		snprintf(j->last, sizeof(j->last), "(its last line names the token: not shown)");
	fprintf(stderr, "vmact-node: kubeadm join %s: %s\n",
		status >= 0 && WIFEXITED(status) && !WEXITSTATUS(status) ? "done" : "failed",
		j->last);
	explicit_bzero(j->last, sizeof(j->last));
	explicit_bzero(j->part, sizeof(j->part));
	if (j->token) {
		explicit_bzero(j->token, strlen(j->token));
		free(j->token);
	}
	*j = (struct join){ .fd = -1 };
}

/* What the join wrote since; its end when it closed its output. */
static void join_read(struct join *j)
{
	char buf[4096];
	ssize_t n = read(j->fd, buf, sizeof(buf));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		join_end(j);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			/* An overlong line keeps its start. */
			if (j->have < sizeof(j->part) - 1)
				j->part[j->have++] = buf[i];
			continue;
		}
		/* kubeadm ends a failure with a hint about --v: the line
		 * before it says what failed. */
		if (j->have && strncmp(j->part, "To see the stack trace", 22)) {
			j->part[j->have] = '\0';
			memcpy(j->last, j->part, j->have + 1);
		}
		j->have = 0;
	}
	explicit_bzero(buf, sizeof(buf));
}

/* The bootstrap token of a JoinConfiguration, to keep it out of a log
 * line (malloc'd; "" when it has none). */
static char *join_token(const char *kubeadm)
{
	json_t *j = json_loads(kubeadm, 0, NULL);
	const char *t = json_string_value(
		json_object_get(json_object_get(json_object_get(j, "discovery"), "bootstrapToken"),
				"token"));
	char *s = strdup(t ? t : "");

	json_decref(j);
	return s;
}

/* Carries out a checked claim: the files, the hostname, the kubelet (or,
 * for a kubeadm claim, its JoinConfiguration for kubeadm_join, run once
 * the claim is acknowledged). On failure nothing is left of it. */
static int apply(const struct opts *o, const struct nd_claim *c, struct vmact_err *err)
{
	int r = nd_kubelet_write(o->root, c, err);

	if (r < 0)
		return r;
	if (o->hostname && sethostname(c->name, strlen(c->name)) < 0)
		r = vmact_err_set(err, errno, "sethostname %s: %s", c->name, strerror(errno));
	if (r >= 0 && c->kubeadm) {
		char *join = NULL;

		r = nd_kubeadm_config(c, &join, err);
		if (r >= 0)
			r = nd_kubelet_write_join(o->root, join, err);
		if (join) {
			explicit_bzero(join, strlen(join));
			free(join);
		}
	} else if (r >= 0) {
		r = start_kubelet(o, err);
	}
	if (r < 0)
		nd_kubelet_remove(o->root);
	return r;
}

/* One line from the port. */
static void on_line(const struct opts *o, int fd, const char *line, size_t len,
		    struct nd_claim *applied, struct join *join)
{
	struct nd_claim c;
	struct vmact_err err = { 0 };

	if (nd_claim_parse(line, len, &c, &err) < 0) {
		fprintf(stderr, "vmact-node: claim refused: %s\n", err.msg);
		say(fd, REFUSE " %s", err.msg);
		return;
	}
	if (applied->doc) {
		nd_claim_forget_secret(&c);
		/* Told again (vmact-groupd resumed a claim after a restart):
		 * the same answer; another node's claim: refused. */
		if (nd_claim_same(&c, applied)) {
			say(fd, ACK " %s", c.name);
		} else {
			fprintf(stderr, "vmact-node: claim for %s refused: this node is %s\n",
				c.name, applied->name);
			say(fd, REFUSE " this node is already %s", applied->name);
		}
		nd_claim_clear(&c);
		return;
	}
	if (apply(o, &c, &err) < 0) {
		fprintf(stderr, "vmact-node: claim for %s not carried out: %s\n", c.name, err.msg);
		say(fd, REFUSE " %s", err.msg);
		nd_claim_clear(&c);
		return;
	}
	fprintf(stderr, "vmact-node: claimed as %s (%s), %s\n", c.name, c.provider_id,
		c.kubeadm ? "joining with kubeadm" : "kubelet started");
	say(fd, ACK " %s", c.name);
	/* Acknowledged first: the claim is done, the join takes its time
	 * (the heartbeat then says how the kubelet is). */
	if (c.kubeadm)
		join_start(o, join_token(c.kubeadm), join);
	nd_claim_forget_secret(&c);
	*applied = c;
}

static int open_port(const char *path)
{
	struct termios t;
	int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	/* A serial line: bytes as sent, no echo, no line discipline. */
	if (isatty(fd) && tcgetattr(fd, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fd, TCSANOW, &t);
	}
	return fd;
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* systemctl is-active kubelet.service: its one word ("active",
 * "activating", "failed", ...), "unknown" when it says nothing. */
static void kubelet_state(const struct opts *o, char *out, size_t len)
{
	char *const argv[] = { (char *)o->systemctl, "is-active", "kubelet.service", NULL };
	int fd = -1;
	ssize_t n = 0;
	pid_t pid = spawn(argv, &fd, false);

	if (pid > 0) {
		n = read(fd, out, len - 1);
		close(fd);
		reap(pid);
	}
	if (n <= 0) {
		snprintf(out, len, "unknown");
		return;
	}
	out[n] = '\0';
	out[strcspn(out, " \t\r\n")] = '\0';
	for (char *c = out; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || *c == '-'))
			*c = '?';
}

/* One heartbeat when it is due. */
static void heartbeat(const struct opts *o, struct beat *b, const struct nd_claim *applied)
{
	char state[32], line[128];
	uint64_t now = now_ms();
	int n;

	if (b->fd < 0 || now < b->next_ms)
		return;
	if (!applied->doc) {
		n = snprintf(line, sizeof(line), "VMACT-NODE standby\n");
		b->next_ms = now + STANDBY_EVERY_MS;
	} else {
		kubelet_state(o, state, sizeof(state));
		b->next_ms = now + CLAIMED_EVERY_MS;
		if (!strcmp(state, "failed"))
			return;
		n = snprintf(line, sizeof(line), "VMACT-NODE claimed kubelet=%s\n", state);
	}
	if (write(b->fd, line, (size_t)n) < 0) {
		/* A console that went away: the heartbeat stops, the claims
		 * go on. */
		close(b->fd);
		b->fd = -1;
	}
}

/* Reads lines until SIGTERM. An overlong line is refused once its end
 * came, and read no further. */
static int serve(const struct opts *o, int fd, struct beat *b, struct nd_claim *applied,
		 struct join *join)
{
	static char buf[ND_CLAIM_LINE_MAX];
	size_t have = 0;
	bool overlong = false;

	while (!stopping) {
		struct pollfd fds[2] = { { .fd = fd, .events = POLLIN },
					 { .fd = join->fd, .events = POLLIN } };
		struct pollfd p;
		ssize_t n;
		char *nl;
		int k;
		uint64_t t;
		int wait = 1000;

		heartbeat(o, b, applied);
		t = now_ms();
		if (b->fd >= 0)
			wait = b->next_ms > t ? (int)(b->next_ms - t) : 0;
		k = poll(fds, join->fd >= 0 ? 2 : 1, wait);

		if (k < 0 && errno != EINTR)
			return -errno;
		if (k <= 0)
			continue;
		if (join->fd >= 0 && fds[1].revents)
			join_read(join);
		p = fds[0];
		if (!p.revents)
			continue;
		/* The host hung up (a virtio port's other end closed; a serial
		 * line's EIO): what it sent of an unfinished line goes, the
		 * next connection starts a line of its own. */
		if (!(p.revents & POLLIN)) {
			have = 0;
			overlong = false;
			nap_ms(HUP_WAIT_MS);
			continue;
		}
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0 && errno != EIO)
			return -errno;
		if (n <= 0) {
			have = 0;
			overlong = false;
			nap_ms(HUP_WAIT_MS);
			continue;
		}
		have += (size_t)n;
		while ((nl = memchr(buf, '\n', have))) {
			size_t len = (size_t)(nl - buf) + 1;

			if (overlong) {
				struct vmact_err err = { 0 };

				vmact_err_set(&err, EPROTO, "the line is longer than %d bytes",
					      ND_CLAIM_LINE_MAX - 1);
				fprintf(stderr, "vmact-node: claim refused: %s\n", err.msg);
				say(fd, REFUSE " %s", err.msg);
				overlong = false;
			} else if (len > 1) {
				on_line(o, fd, buf, len, applied, join);
			}
			memmove(buf, buf + len, have - len);
			have -= len;
		}
		if (have == sizeof(buf)) {
			overlong = true;
			have = 0;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	struct nd_claim applied = { 0 };
	struct vmact_err err = { 0 };
	struct beat beat = { .fd = -1 };
	struct join join = { .fd = -1 };
	struct opts o;
	char port[PATH_MAX];
	int fd, r;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* Claimed before a reboot: the same node again, at once. */
	r = nd_kubelet_kept(o.root, &applied, &err);
	if (r == 0) {
		if (apply(&o, &applied, &err) < 0) {
			fprintf(stderr, "vmact-node: the kept claim for %s: %s\n", applied.name,
				err.msg);
			nd_claim_clear(&applied);
		} else {
			fprintf(stderr,
				"vmact-node: claimed as %s before this boot, kubelet started\n",
				applied.name);
		}
	} else if (r != -ENOENT) {
		fprintf(stderr, "vmact-node: %s; waiting for a new claim\n", err.msg);
	}
	/* The port appears once the virtio driver bound it. */
	while (find_port(&o, port, sizeof(port)) < 0 && !stopping)
		nap_ms(200);
	while ((fd = open_port(port)) < 0 && !stopping) {
		if (fd != -ENOENT && fd != -ENXIO) {
			fprintf(stderr, "vmact-node: %s: %s\n", port, strerror(-fd));
			nd_claim_clear(&applied);
			return 1;
		}
		nap_ms(200);
	}
	if (stopping) {
		nd_claim_clear(&applied);
		return 0;
	}
	sd_notifyf(0, "READY=1\nSTATUS=waiting for the claim on %s", port);
	/* The console exists or there is none: never created here. */
	if (strcmp(o.console, "none"))
		beat.fd = open(o.console, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_APPEND);
	if (beat.fd < 0 && strcmp(o.console, "none"))
		fprintf(stderr, "vmact-node: %s: %s; no heartbeat\n", o.console, strerror(errno));
	r = serve(&o, fd, &beat, &applied, &join);
	/* Stopped during a join: kubeadm is stopped too (as the unit's
	 * cgroup would be). */
	if (join.pid > 0) {
		kill(join.pid, SIGTERM);
		join_end(&join);
	}
	if (beat.fd >= 0)
		close(beat.fd);
	close(fd);
	nd_claim_clear(&applied);
	if (r < 0) {
		fprintf(stderr, "vmact-node: %s: %s\n", port, strerror(-r));
		return 1;
	}
	return 0;
}
