/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd's side of a guest worker (worker/worker.h, doc/privsep.md). */
#include "actuator/worker/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent-glue/client/informant-client.h"
#include "agent-glue/codec/monitor.h"
#include "base/endpoint.h"
#include "base/log.h"
#include "base/macro.h"

#define BACKOFF_MIN_USEC (1ULL * 1000000ULL)
#define BACKOFF_MAX_USEC (30ULL * 1000000ULL)
/* A worker that ran this long starts the backoff over. */
#define STABLE_USEC (30ULL * 1000000ULL)
/* Messages read per wakeup: a flooding worker cannot hold the loop. */
#define READ_BATCH 16
/* At most this many dials per second: the worker reconnects on its own
 * schedule, a compromised one must not make vmactd hammer the guest. */
#define DIAL_MIN_GAP_USEC (100ULL * 1000ULL)
/* An informant worker gets at most one listening socket a second, and
 * only one is alive at a time: a new one shuts the last down. */
#define LISTEN_MIN_GAP_USEC (1000ULL * 1000ULL)

struct act_worker {
	sd_event *event;
	char *program, *name, *monitor, *user;
	char *informant, *listen, *advertise_host; /* the informant worker's */
	char *metrics, *metrics_lfc;               /* a metrics worker's endpoints */
	uint64_t ping_usec, deadline_usec;
	const struct act_worker_ops *ops;
	void *ud;

	pid_t pid; /* 0: none */
	int fd;    /* our end of the socketpair, -1: none */
	int pidfd;
	sd_event_source *io, *exit_src, *ping_timer, *restart_timer;
	uint64_t started_usec;
	uint64_t backoff_usec;
	uint32_t ping_seq;
	bool ping_out;
	uint64_t ping_sent_usec;
	uint64_t last_dial_usec[2]; /* per endpoint: [1] the LFC exporter */
	uint64_t last_listen_usec;
	int listen_fd; /* our copy of the last listening socket, -1: none */
	bool stopping; /* act_worker_stop: no restart, no ops callbacks */
	sd_event_source *stop_timer;
	void (*stop_done)(void *ud);
	void *stop_ud;
	bool killed_hung; /* the exit that follows is ours */
	char kill_reason[VMACT_ERR_MSG_MAX];
	char last_spawn_error[VMACT_ERR_MSG_MAX];
};

static uint64_t now_usec(struct act_worker *gw)
{
	uint64_t t = 0;

	sd_event_now(gw->event, CLOCK_MONOTONIC, &t);
	return t;
}

int act_worker_program_near(const char *exe_dir, char *buf, size_t len, struct vmact_err *err)
{
	char installed[PATH_MAX + 32], real[PATH_MAX];

	snprintf(installed, sizeof(installed), "%s/../libexec/vmact/vmact-guestd", exe_dir);
	if (realpath(installed, real) && access(real, X_OK) == 0) {
		if ((size_t)snprintf(buf, len, "%s", real) >= len)
			return vmact_err_set(err, ENAMETOOLONG, "%s: path too long", real);
		return 0;
	}
	if ((size_t)snprintf(buf, len, "%s/vmact-guestd", exe_dir) >= len)
		return vmact_err_set(err, ENAMETOOLONG, "%s: path too long", exe_dir);
	return 0;
}

int act_worker_default_program(char *buf, size_t len, struct vmact_err *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n < 0)
		return vmact_err_set(err, errno, "/proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	slash = strrchr(self, '/');
	if (!slash)
		return vmact_err_set(err, EINVAL, "/proc/self/exe: %s: no directory", self);
	*slash = 0;
	return act_worker_program_near(self, buf, len, err);
}

/* The worker's uid and gid: the configured user, else nobody (said once
 * per vmactd). Not root: vmactd cannot change users, the worker runs as
 * vmactd does. */
static int resolve_user(const char *user, char *argu, char *argg, size_t len, struct vmact_err *err)
{
	static bool fallback_logged;
	struct passwd pw, *res = NULL;
	char buf[4096];

	argu[0] = argg[0] = 0;
	if (geteuid() != 0)
		return 0;
	if (getpwnam_r(user, &pw, buf, sizeof(buf), &res) != 0 || !res) {
		if (getpwnam_r("nobody", &pw, buf, sizeof(buf), &res) != 0 || !res)
			return vmact_err_set(err, ENOENT,
					     "guest_worker.user: neither '%s' nor "
					     "'nobody' exists",
					     user);
		if (!fallback_logged)
			log_warning("guest workers run as 'nobody': guest_worker.user '%s' does "
				    "not exist (create it: useradd --system %s)",
				    user, user);
		fallback_logged = true;
	}
	if (res->pw_uid == 0 || res->pw_gid == 0)
		return vmact_err_set(err, EPERM, "guest_worker.user '%s' is root", res->pw_name);
	snprintf(argu, len, "%u", (unsigned)res->pw_uid);
	snprintf(argg, len, "%u", (unsigned)res->pw_gid);
	return 0;
}

static void schedule_restart(struct act_worker *gw);

/* Forgets the worker: its sources, its socket; kills it if it still
 * runs and reaps it. Returns its wait status, -1 if unknown. */
static int reap(struct act_worker *gw)
{
	siginfo_t si = { 0 };
	int status = -1;

	gw->io = sd_event_source_disable_unref(gw->io);
	gw->exit_src = sd_event_source_disable_unref(gw->exit_src);
	gw->ping_timer = sd_event_source_disable_unref(gw->ping_timer);
	/* closep() leaves the number: -1, so that no send reaches a
	 * descriptor of vmactd's that reuses it. */
	closep(&gw->fd);
	gw->fd = -1;
	closep(&gw->listen_fd);
	gw->listen_fd = -1;
	if (gw->pid > 0) {
		/* A no-op when it already exited; the wait is then immediate,
		 * else as long as the kernel takes to kill it. */
		syscall(SYS_pidfd_send_signal, gw->pidfd, SIGKILL, NULL, 0);
		if (waitid(P_PIDFD, (id_t)gw->pidfd, &si, WEXITED) == 0)
			status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
							  : si.si_status & 0x7f;
	}
	closep(&gw->pidfd);
	gw->pidfd = -1;
	gw->pid = 0;
	gw->ping_out = false;
	return status;
}

/* The worker is gone: says why, tells the owner, restarts it later. */
static void worker_gone(struct act_worker *gw, const char *why)
{
	pid_t pid = gw->pid;
	bool hung = gw->killed_hung;
	char reason[VMACT_ERR_MSG_MAX];
	int st;

	snprintf(reason, sizeof(reason), "%s", gw->kill_reason);
	st = reap(gw);
	if (hung)
		log_warning("%s: guest worker %d killed: %s", gw->name, (int)pid, reason);
	else if (gw->stopping && st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		log_info("%s: guest worker %d finished", gw->name, (int)pid);
	else if (st >= 0 && WIFEXITED(st))
		log_warning("%s: guest worker %d exited with status %d (%s)", gw->name, (int)pid,
			    WEXITSTATUS(st), why);
	else if (st >= 0 && WIFSIGNALED(st))
		log_warning("%s: guest worker %d died: %s (%s)", gw->name, (int)pid,
			    strsignal(WTERMSIG(st)), why);
	else
		log_warning("%s: guest worker %d gone (%s)", gw->name, (int)pid, why);
	gw->killed_hung = false;
	gw->kill_reason[0] = 0;
	if (gw->stopping) {
		/* Finished: the stop timer says so from the loop (done may
		 * free gw, which the caller still uses). */
		sd_event_source_set_time_relative(gw->stop_timer, 0);
		sd_event_source_set_enabled(gw->stop_timer, SD_EVENT_ONESHOT);
		return;
	}
	if (now_usec(gw) - gw->started_usec >= STABLE_USEC)
		gw->backoff_usec = BACKOFF_MIN_USEC;
	gw->ops->down(gw->ud);
	schedule_restart(gw);
}

/* The worker broke the rules or stopped answering: killed, then gone. */
static void kill_worker(struct act_worker *gw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void kill_worker(struct act_worker *gw, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gw->kill_reason, sizeof(gw->kill_reason), fmt, ap);
	va_end(ap);
	gw->killed_hung = true;
	worker_gone(gw, gw->kill_reason);
}

static int send_msg(struct act_worker *gw, const struct act_privsep_msg *m, int pass_fd,
		    struct vmact_err *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (gw->fd < 0)
		return vmact_err_set(err, ENOTCONN, "the guest worker is not running");
	if (pass_fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	/* Non-blocking: a worker that does not read fills its queue, and is
	 * then caught by the heartbeat. */
	n = sendmsg(gw->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(*m))
		return vmact_err_set(err, n < 0 ? errno : EIO, "send to the guest worker: %s",
				     n < 0 ? strerror(errno) : "short write");
	return 0;
}

int act_worker_send(struct act_worker *gw, const struct act_privsep_msg *m, struct vmact_err *err)
{
	return send_msg(gw, m, -1, err);
}

/* Opens a connection to the VM's monitor endpoint (a metrics worker's:
 * one of its exporters) for the worker, which may not open sockets
 * itself. Only these endpoints: a compromised worker cannot make vmactd
 * dial anything else. */
static int dial(struct act_worker *gw, const char *spec, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	struct vmact_endpoint ep;

	/* The informant's URL names a host and port (curl's requests); the
	 * others may also be unix sockets. */
	if (vmact_endpoint_parse(spec,
				 spec == gw->informant
					 ? VMACT_EP_HTTP | VMACT_EP_NEED_PORT
					 : VMACT_EP_WS | VMACT_EP_HTTP | VMACT_EP_UNIX,
				 &ep, err) < 0)
		return -EINVAL;
	if (ep.kind == VMACT_EP_UNIX) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (strlen(ep.path) >= sizeof(sa.sun_path))
			return vmact_err_set(err, ENAMETOOLONG, "unix socket path too long");
		strcpy(sa.sun_path, ep.path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return vmact_err_set(err, errno, "socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS &&
		    errno != EAGAIN)
			return vmact_err_set(err, errno, "connect to %s: %s", ep.path,
					     strerror(errno));
		return TAKE_FD(fd);
	}
	{
		/* Numeric hosts only: vmactd's loop must not wait on DNS. */
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV },
				*ai = NULL;
		char port[8];
		int r;

		snprintf(port, sizeof(port), "%u", ep.port ? ep.port : AG_MON_DEFAULT_PORT);
		r = getaddrinfo(ep.host, port, &hints, &ai);
		if (r != 0)
			return vmact_err_set(err, EHOSTUNREACH, "%s: %s (give an address)", ep.host,
					     gai_strerror(r));
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = errno;
			freeaddrinfo(ai);
			return vmact_err_set(err, r, "socket: %s", strerror(r));
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			r = errno;
			freeaddrinfo(ai);
			return vmact_err_set(err, r, "connect to %s:%s: %s", ep.host, port,
					     strerror(r));
		}
		freeaddrinfo(ai);
	}
	return TAKE_FD(fd);
}

/* A listening socket for an informant worker's registration, bound where
 * informant_listen says: the worker may not bind one itself. */
static int open_listener(struct act_worker *gw, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	struct vmact_listen l;
	int one = 1;

	if (vmact_listen_parse(gw->listen, false, &l, err) < 0)
		return vmact_err_prefix(err, "informant_listen");
	fd = socket(l.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return vmact_err_set(err, errno, "socket: %s", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&l.addr, l.addr_len) < 0)
		return vmact_err_set(err, errno, "bind %s: %s", gw->listen, strerror(errno));
	if (listen(fd, 128) < 0)
		return vmact_err_set(err, errno, "listen %s: %s", gw->listen, strerror(errno));
	return TAKE_FD(fd);
}

/* LISTEN: a new listening socket for the informant worker. At most one is
 * alive per worker: vmactd keeps a copy of the last and shuts it down (it
 * stops listening, its port is free) before it opens the next, so a
 * compromised worker cannot hold more ports than one. */
static void answer_listen(struct act_worker *gw)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_LISTEN_REPLY };
	struct vmact_err err = { 0 }, serr = { 0 };
	uint64_t now = now_usec(gw);
	_cleanup_close_ int fd = -1;

	if (gw->last_listen_usec && now - gw->last_listen_usec < LISTEN_MIN_GAP_USEC) {
		m.code = -EAGAIN;
		act_privsep_set_text(&m, "listening sockets asked for too often");
	} else {
		gw->last_listen_usec = now;
		if (gw->listen_fd >= 0) {
			shutdown(gw->listen_fd, SHUT_RDWR);
			closep(&gw->listen_fd);
		}
		fd = open_listener(gw, &err);
		if (fd < 0) {
			m.code = fd;
			act_privsep_set_text(&m, err.msg);
		} else {
			gw->listen_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
			if (gw->listen_fd < 0) {
				m.code = -errno;
				act_privsep_set_text(&m, "fcntl: out of descriptors");
				closep(&fd);
			}
		}
	}
	if (send_msg(gw, &m, fd, &serr) < 0)
		log_debug("%s: %s", gw->name, serr.msg);
}

/* false: the worker asked for an endpoint it does not have (a lie). */
static bool answer_dial(struct act_worker *gw, uint16_t flags)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_DIAL_REPLY };
	struct vmact_err err = { 0 }, serr = { 0 };
	uint64_t now = now_usec(gw);
	_cleanup_close_ int fd = -1;
	bool lfc = flags & ACT_PRIVSEP_F_LFC;
	const char *spec = gw->monitor     ? gw->monitor
			   : gw->informant ? gw->informant
			   : lfc           ? gw->metrics_lfc
					   : gw->metrics;

	if (!spec || ((gw->monitor || gw->informant) && lfc))
		return false;
	if (gw->last_dial_usec[lfc] && now - gw->last_dial_usec[lfc] < DIAL_MIN_GAP_USEC) {
		m.code = -EAGAIN;
		act_privsep_set_text(&m, "dialling too often");
	} else {
		gw->last_dial_usec[lfc] = now;
		fd = dial(gw, spec, &err);
		if (fd < 0) {
			m.code = fd;
			act_privsep_set_text(&m, err.msg);
		}
	}
	if (send_msg(gw, &m, fd, &serr) < 0)
		log_debug("%s: %s", gw->name, serr.msg);
	return true;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct act_worker *gw = ud;

	for (int i = 0; i < READ_BATCH; i++) {
		unsigned char buf[sizeof(struct act_privsep_msg) + 1];
		struct act_privsep_msg m;
		struct vmact_err err = { 0 };
		ssize_t n;

		/* recv(): any descriptor the worker attaches is discarded by
		 * the kernel (no control buffer); MSG_TRUNC: the true length. */
		n = recv(gw->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0) {
			worker_gone(gw, n < 0 ? strerror(errno) : "closed its socket");
			return 0;
		}
		if (act_privsep_decode_from_worker(buf,
						   (size_t)n > sizeof(buf) ? sizeof(buf) + 1
									   : (size_t)n,
						   &m, &err) < 0) {
			kill_worker(gw, "invalid message: %s", err.msg);
			return 0;
		}
		switch (m.type) {
		case ACT_PRIVSEP_PONG:
			if (gw->ping_out && m.seq == gw->ping_seq) {
				gw->ping_out = false;
			} else if (m.seq > gw->ping_seq) {
				kill_worker(gw, "invalid message: pong %" PRIu32 " to no ping",
					    m.seq);
				return 0;
			}
			break;
		case ACT_PRIVSEP_DIAL:
			if (!answer_dial(gw, m.flags)) {
				kill_worker(gw,
					    "invalid message: dial of an endpoint it does not have");
				return 0;
			}
			break;
		case ACT_PRIVSEP_LISTEN:
			if (!gw->informant) {
				kill_worker(gw, "invalid message: listen from a worker that serves "
						"nothing");
				return 0;
			}
			answer_listen(gw);
			if (gw->fd < 0)
				return 0;
			break;
		default:
			if (gw->stopping)
				break;
			if (gw->ops->message(gw->ud, &m, &err) < 0) {
				kill_worker(gw, "invalid message: %s", err.msg);
				return 0;
			}
			/* The owner may have freed nothing, but the worker
			 * may be gone if it answered with a send error. */
			if (gw->fd < 0)
				return 0;
		}
	}
	return 0;
}

static int on_worker_exit(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	worker_gone(ud, "exited");
	return 0;
}

static int on_ping(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_worker *gw = ud;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_PING };
	struct vmact_err err = { 0 };

	if (gw->ping_out) {
		if (usec - gw->ping_sent_usec >= gw->deadline_usec) {
			kill_worker(gw, "hung: no answer to a ping for %" PRIu64 " ms",
				    (usec - gw->ping_sent_usec) / 1000);
			return 0;
		}
	} else {
		m.seq = ++gw->ping_seq;
		if (send_msg(gw, &m, -1, &err) == 0) {
			gw->ping_out = true;
			gw->ping_sent_usec = usec;
		} else if (err.code != EAGAIN) {
			kill_worker(gw, "%s", err.msg);
			return 0;
		} else {
			/* Its queue is full: it does not read. Counted from the
			 * first ping it has not taken. */
			if (!gw->ping_sent_usec || usec - gw->ping_sent_usec >= gw->deadline_usec) {
				kill_worker(gw, "hung: it does not read its messages");
				return 0;
			}
		}
	}
	sd_event_source_set_time(s, usec + gw->ping_usec);
	return 0;
}

static int spawn(struct act_worker *gw, struct vmact_err *err)
{
	_cleanup_close_ int mine = -1, theirs = -1;
	int sv[2], r;
	char uid[16], gid[16], journal[256];
	const char *argv[24];
	const char *envp[2] = { NULL, NULL };
	size_t a = 0;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid;

	r = resolve_user(gw->user, uid, gid, sizeof(uid), err);
	if (r < 0)
		return r;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return vmact_err_set(err, errno, "socketpair: %s", strerror(errno));
	mine = sv[0];
	/* Above 3: the child's dup2 onto 3 then always clears close-on-exec. */
	theirs = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
	close(sv[1]);
	if (theirs < 0)
		return vmact_err_set(err, errno, "fcntl: %s", strerror(errno));
	argv[a++] = gw->program;
	argv[a++] = "--name";
	argv[a++] = gw->name;
	if (gw->monitor) {
		argv[a++] = "--monitor";
		argv[a++] = gw->monitor;
	} else if (gw->informant) {
		argv[a++] = "--informant";
		argv[a++] = gw->informant;
		argv[a++] = "--listen";
		argv[a++] = gw->listen;
		if (gw->advertise_host) {
			argv[a++] = "--advertise";
			argv[a++] = gw->advertise_host;
		}
	} else {
		argv[a++] = "--metrics";
		argv[a++] = gw->metrics;
		if (gw->metrics_lfc) {
			argv[a++] = "--lfc";
			argv[a++] = gw->metrics_lfc;
		}
	}
	if (uid[0]) {
		argv[a++] = "--uid";
		argv[a++] = uid;
		argv[a++] = "--gid";
		argv[a++] = gid;
	}
	argv[a] = NULL;
	/* The environment is empty but for the log format (base/log.h). */
	if (getenv("JOURNAL_STREAM")) {
		snprintf(journal, sizeof(journal), "JOURNAL_STREAM=%s", getenv("JOURNAL_STREAM"));
		envp[0] = journal;
	}
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, theirs, 3);
	/* Nothing else of vmactd's: stderr (the log) and the socket only. */
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
						POSIX_SPAWN_SETSID);
	r = posix_spawn(&pid, gw->program, &fa, &attr, (char *const *)argv, (char *const *)envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0)
		return vmact_err_set(err, r, "cannot start %s: %s", gw->program, strerror(r));
	gw->pid = pid;
	gw->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (gw->pidfd < 0) {
		r = errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		gw->pid = 0;
		return vmact_err_set(err, r, "pidfd_open: %s", strerror(r));
	}
	gw->fd = TAKE_FD(mine);
	r = sd_event_add_io(gw->event, &gw->io, gw->fd, EPOLLIN, on_io, gw);
	if (r >= 0)
		r = sd_event_add_io(gw->event, &gw->exit_src, gw->pidfd, EPOLLIN, on_worker_exit,
				    gw);
	if (r >= 0)
		r = sd_event_add_time_relative(gw->event, &gw->ping_timer, CLOCK_MONOTONIC,
					       gw->ping_usec, 1000, on_ping, gw);
	if (r >= 0)
		r = sd_event_source_set_enabled(gw->ping_timer, SD_EVENT_ON);
	if (r < 0) {
		reap(gw);
		return vmact_err_set(err, -r, "event source: %s", strerror(-r));
	}
	gw->started_usec = now_usec(gw);
	gw->ping_sent_usec = 0;
	return 0;
}

/* Every worker of the process runs on the daemon's one loop: no lock. */
static uint64_t restarts_total;

uint64_t act_worker_restarts_total(void)
{
	return restarts_total;
}

static int on_restart(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_worker *gw = ud;
	struct vmact_err err = { 0 };

	if (spawn(gw, &err) < 0) {
		if (strcmp(err.msg, gw->last_spawn_error))
			log_error("%s: guest worker: %s; trying again in %" PRIu64 " s", gw->name,
				  err.msg, gw->backoff_usec / 1000000);
		snprintf(gw->last_spawn_error, sizeof(gw->last_spawn_error), "%s", err.msg);
		schedule_restart(gw);
		return 0;
	}
	gw->last_spawn_error[0] = 0;
	restarts_total++;
	log_info("%s: guest worker %d restarted", gw->name, (int)gw->pid);
	gw->ops->up(gw->ud);
	return 0;
}

static void schedule_restart(struct act_worker *gw)
{
	uint64_t wait = gw->backoff_usec;
	int r;

	gw->backoff_usec = wait * 2 > BACKOFF_MAX_USEC ? BACKOFF_MAX_USEC : wait * 2;
	if (!gw->restart_timer)
		r = sd_event_add_time_relative(gw->event, &gw->restart_timer, CLOCK_MONOTONIC, wait,
					       1000, on_restart, gw);
	else
		r = sd_event_source_set_time_relative(gw->restart_timer, wait);
	if (r >= 0)
		r = sd_event_source_set_enabled(gw->restart_timer, SD_EVENT_ONESHOT);
	if (r < 0)
		log_error("%s: cannot schedule the guest worker's restart: %s", gw->name,
			  strerror(-r));
	else
		log_info("%s: restarting the guest worker in %" PRIu64 " ms", gw->name,
			 wait / 1000);
}

int act_worker_new(sd_event *event, const struct act_worker_config *cfg,
		   const struct act_worker_ops *ops, void *ud, struct act_worker **out,
		   struct vmact_err *err)
{
	struct act_worker *gw = calloc(1, sizeof(*gw));
	int r;

	if (!gw)
		return vmact_err_set(err, ENOMEM, "out of memory");
	gw->fd = gw->pidfd = gw->listen_fd = -1;
	gw->event = sd_event_ref(event);
	gw->ops = ops;
	gw->ud = ud;
	gw->ping_usec = cfg->ping_usec ? cfg->ping_usec : ACT_WORKER_PING_USEC;
	gw->deadline_usec = cfg->deadline_usec ? cfg->deadline_usec : ACT_WORKER_DEADLINE_USEC;
	gw->backoff_usec = BACKOFF_MIN_USEC;
	gw->program = strdup(cfg->program);
	gw->name = strdup(cfg->name);
	gw->monitor = cfg->monitor ? strdup(cfg->monitor) : NULL;
	gw->informant = cfg->informant ? strdup(cfg->informant) : NULL;
	gw->listen = strdup(cfg->listen ? cfg->listen : "");
	gw->advertise_host = cfg->advertise_host ? strdup(cfg->advertise_host) : NULL;
	gw->metrics = cfg->metrics ? strdup(cfg->metrics) : NULL;
	gw->metrics_lfc = cfg->metrics_lfc ? strdup(cfg->metrics_lfc) : NULL;
	gw->user = strdup(cfg->user);
	if (!gw->program || !gw->name || !(gw->monitor || gw->informant || gw->metrics) ||
	    !gw->user || !gw->listen || (cfg->monitor && !gw->monitor) ||
	    (cfg->advertise_host && !gw->advertise_host) ||
	    (cfg->metrics_lfc && !gw->metrics_lfc)) {
		act_worker_free(gw);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	/* A worker that cannot start now is tried again: the VM is scaled
	 * meanwhile as one without a vm-monitor (up only). */
	r = spawn(gw, err);
	if (r < 0) {
		log_error("%s: guest worker: %s", gw->name, err->msg);
		snprintf(gw->last_spawn_error, sizeof(gw->last_spawn_error), "%s", err->msg);
		vmact_err_reset(err);
		schedule_restart(gw);
	} else {
		log_info("%s: guest worker %d started (%s)", gw->name, (int)gw->pid, gw->program);
	}
	*out = gw;
	return 0;
}

static int on_stop_timer(sd_event_source *s, uint64_t usec, void *ud)
{
	struct act_worker *gw = ud;

	if (gw->pid > 0) {
		log_warning("%s: guest worker %d did not finish in time: killed", gw->name,
			    (int)gw->pid);
		reap(gw);
	}
	if (gw->stop_done) {
		void (*done)(void *) = gw->stop_done;

		gw->stop_done = NULL;
		done(gw->stop_ud);
	}
	return 0;
}

int act_worker_stop(struct act_worker *gw, const struct act_privsep_msg *m, uint64_t timeout_usec,
		    void (*done)(void *ud), void *done_ud)
{
	struct vmact_err err = { 0 };
	int r;

	gw->stopping = true;
	/* Its goodbye (DELETE /unregister) may need a connection at once:
	 * one dial more than the rate allows. */
	memset(gw->last_dial_usec, 0, sizeof(gw->last_dial_usec));
	gw->stop_done = done;
	gw->stop_ud = done_ud;
	if (gw->restart_timer)
		sd_event_source_set_enabled(gw->restart_timer, SD_EVENT_OFF);
	/* No worker, or it cannot take the message: finished now. */
	if (gw->fd < 0 || act_worker_send(gw, m, &err) < 0)
		timeout_usec = 0;
	r = sd_event_add_time_relative(gw->event, &gw->stop_timer, CLOCK_MONOTONIC, timeout_usec,
				       1000, on_stop_timer, gw);
	if (r < 0) {
		gw->stop_done = NULL;
		return r;
	}
	return 0;
}

bool act_worker_running(const struct act_worker *gw)
{
	return gw->fd >= 0;
}

pid_t act_worker_pid(const struct act_worker *gw)
{
	return gw->pid;
}

void act_worker_free(struct act_worker *gw)
{
	if (!gw)
		return;
	reap(gw);
	gw->restart_timer = sd_event_source_disable_unref(gw->restart_timer);
	gw->stop_timer = sd_event_source_disable_unref(gw->stop_timer);
	sd_event_unref(gw->event);
	free(gw->program);
	free(gw->name);
	free(gw->monitor);
	free(gw->informant);
	free(gw->listen);
	free(gw->advertise_host);
	free(gw->metrics);
	free(gw->metrics_lfc);
	free(gw->user);
	free(gw);
}
