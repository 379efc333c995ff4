/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-guestd: one VM's guest worker (doc/privsep.md). vmactd starts it
 * with a SOCK_SEQPACKET socket on fd 3; it drops to its user and into its
 * sandbox, then speaks to the VM's vm-monitor with approver-monitor.c
 * (--monitor), to its legacy informant with approver-informant.c's agent
 * (--informant), or scrapes the VM's metrics exporters with
 * scrape.c (--metrics), and answers vmactd in fixed records
 * (privsep.h). Its connections are opened by vmactd (DIAL), the
 * informant agent's listening sockets too (LISTEN). It exits when vmactd
 * closes the socket, or, an informant worker, after unregistering when
 * vmactd says STOP. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-id128.h>

#include "base/log.h"
#include "base/macro.h"
#include "guestd/approver.h"
#include "guestd/privsep.h"
#include "guestd/sandbox.h"
#include "guestd/scrape.h"

#define FD 3
/* How long a DIAL may wait for vmactd's answer. */
#define DIAL_TIMEOUT_MS 5000
/* Messages of vmactd's read while waiting for a DIAL's answer: at most a
 * ping and a request are outstanding at a time. */
#define QUEUE_MAX 8

struct gd {
	sd_event *event;
	const char *name;
	struct act_approver *ap;
	struct act_scrape *metrics; /* --metrics: instead of ap */
	sd_event_source *io, *defer;
	uint32_t req_seq;
	bool req_out;
	struct act_privsep_msg queue[QUEUE_MAX];
	unsigned nq;
	bool informant; /* --informant: the legacy informant's agent */
	bool stopping;
};

static void die(const char *msg)
{
	log_error("%s", msg);
	exit(1);
}

static void send_msg(struct gd *g, struct act_privsep_msg *m)
{
	ssize_t n = send(FD, m, sizeof(*m), MSG_NOSIGNAL);

	/* vmactd gone or not reading: nothing to do without it. */
	if (n != (ssize_t)sizeof(*m)) {
		log_error("%s: guest worker: cannot write to vmactd: %s", g->name,
			  n < 0 ? strerror(errno) : "short write");
		exit(1);
	}
}

/* Reads one record from vmactd; its descriptor, if any, in *fd. 0: EOF. */
static ssize_t recv_msg(struct act_privsep_msg *m, int *fd, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	unsigned char buf[sizeof(*m) + 1];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct vmact_err err = { 0 };
	ssize_t n;

	*fd = -1;
	n = recvmsg(FD, &mh, flags | MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (act_privsep_decode_from_daemon(buf,
					   (mh.msg_flags & MSG_TRUNC) ? sizeof(buf) : (size_t)n, m,
					   &err) < 0) {
		log_error("guest worker: bad message from vmactd: %s", err.msg);
		exit(1);
	}
	if (*fd >= 0 && m->type != ACT_PRIVSEP_DIAL_REPLY && m->type != ACT_PRIVSEP_LISTEN_REPLY) {
		close(*fd);
		*fd = -1;
	}
	return n;
}

static void request_done(void *ud, enum act_approval outcome)
{
	struct gd *g = ud;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_DONE,
				     .seq = g->req_seq,
				     .code = (int32_t)outcome };

	if (!g->req_out)
		return;
	g->req_out = false;
	send_msg(g, &m);
}

/* STOP: the informant's agent has unregistered (or given up). */
static void stopped(void *ud)
{
	_exit(0);
}

static void handle(struct gd *g, const struct act_privsep_msg *in)
{
	struct act_privsep_msg out = { 0 };
	struct vmact_err err = { 0 };
	struct vmact_resources target;

	switch (in->type) {
	case ACT_PRIVSEP_PING:
		out.type = ACT_PRIVSEP_PONG;
		out.seq = in->seq;
		send_msg(g, &out);
		return;
	case ACT_PRIVSEP_REQUEST:
		if (g->req_out) {
			/* vmactd dropped the last one (LOST): it is forgotten. */
			g->req_out = false;
		}
		target.milli_cpu = (uint32_t)in->milli_cpu;
		target.mem_bytes = in->mem_bytes;
		g->req_seq = in->seq;
		g->req_out = true;
		if ((in->flags & ACT_PRIVSEP_F_UP
			     ? act_approver_request_upscale(g->ap, &target, request_done, g, &err)
			     : act_approver_request_downscale(g->ap, &target, request_done, g,
							      &err)) < 0)
			request_done(g, ACT_APPROVAL_FAILED);
		return;
	case ACT_PRIVSEP_STOP:
		if (!g->informant || g->stopping)
			return;
		g->stopping = true;
		if (act_approver_informant_stop(g->ap, stopped, g) < 0)
			_exit(0);
		return;
	case ACT_PRIVSEP_SCRAPE:
		if (g->metrics)
			act_scrape_run(g->metrics, in);
		return;
	default:
		/* A DIAL_REPLY outside a dial: vmactd answered late. */
		return;
	}
}

static int on_defer(sd_event_source *s, void *ud)
{
	struct gd *g = ud;

	for (unsigned i = 0; i < g->nq; i++)
		handle(g, &g->queue[i]);
	g->nq = 0;
	sd_event_source_set_enabled(s, SD_EVENT_OFF);
	return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct gd *g = ud;
	struct act_privsep_msg m;
	int passed;
	ssize_t n = recv_msg(&m, &passed, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		/* vmactd closed its end: done. */
		sd_event_exit(g->event, 0);
		return 0;
	}
	if (passed >= 0)
		close(passed);
	handle(g, &m);
	return 0;
}

/* Asks vmactd for a descriptor (DIAL with flags, LISTEN) and waits for
 * the answer (reply_type); what vmactd sends meanwhile is handled after. */
static int ask_fd(struct gd *g, uint16_t type, uint16_t flags, uint16_t reply_type,
		  struct vmact_err *err)
{
	struct act_privsep_msg m = { .type = type, .flags = flags };
	struct timespec t0, t;

	send_msg(g, &m);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = FD, .events = POLLIN };
		long waited;
		int fd, r;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		waited = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (waited >= DIAL_TIMEOUT_MS)
			return vmact_err_set(err, ETIMEDOUT, "vmactd did not open the connection");
		r = poll(&p, 1, (int)(DIAL_TIMEOUT_MS - waited));
		if (r < 0 && errno != EINTR)
			return vmact_err_set(err, errno, "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		n = recv_msg(&m, &fd, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			exit(0);
		if (m.type == reply_type) {
			if (m.code < 0) {
				if (fd >= 0)
					close(fd);
				return vmact_err_set(err, -m.code, "%s", m.text);
			}
			if (fd < 0)
				return vmact_err_set(err, EPROTO, "vmactd sent no descriptor");
			return fd;
		}
		if (fd >= 0)
			close(fd);
		if (g->nq == QUEUE_MAX) {
			log_error("%s: guest worker: too many messages from vmactd", g->name);
			exit(1);
		}
		g->queue[g->nq++] = m;
		sd_event_source_set_enabled(g->defer, SD_EVENT_ON);
	}
}

/* The vm-monitor's or the informant's connections, opened by vmactd: the
 * worker has no socket() or connect(). */
static int dial(void *ud, struct vmact_err *err)
{
	return ask_fd(ud, ACT_PRIVSEP_DIAL, 0, ACT_PRIVSEP_DIAL_REPLY, err);
}

/* The same for libcurl (the informant agent's client), which names the
 * URL: vmactd dials the one endpoint of the VM's metadata anyway. */
static int dial_url(void *ud, const char *url, struct vmact_err *err)
{
	(void)url;
	return dial(ud, err);
}

/* The exporters' connections (flag LFC: the LFC exporter's). */
static int dial_exporter(void *ud, bool lfc, struct vmact_err *err)
{
	return ask_fd(ud, ACT_PRIVSEP_DIAL, lfc ? ACT_PRIVSEP_F_LFC : 0, ACT_PRIVSEP_DIAL_REPLY,
		      err);
}

/* A listening socket for an informant registration's server, bound by
 * vmactd at informant_listen: the worker has no bind() or listen(). */
static int listen_socket(void *ud, struct vmact_err *err)
{
	return ask_fd(ud, ACT_PRIVSEP_LISTEN, 0, ACT_PRIVSEP_LISTEN_REPLY, err);
}

static void send_record(void *ud, struct act_privsep_msg *m)
{
	send_msg(ud, m);
}

static void ev_changed(void *ud)
{
	struct gd *g = ud;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_CHANGED };

	if (!g->ap)
		return;
	if (act_approver_may_resize(g->ap))
		m.flags |= ACT_PRIVSEP_F_MAY_RESIZE;
	if (act_approver_approves(g->ap))
		m.flags |= ACT_PRIVSEP_F_APPROVES;
	send_msg(g, &m);
}

static void ev_connected(void *ud)
{
	struct gd *g = ud;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_CONNECTED };

	/* The informant's gates (act_inf_gate_for) changed with its mode:
	 * vmactd's proxy learns them first. */
	if (g->informant)
		ev_changed(g);
	send_msg(g, &m);
}

static void ev_lost(void *ud, bool dropped)
{
	struct gd *g = ud;
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_LOST,
				     .flags = dropped ? ACT_PRIVSEP_F_DROPPED : 0 };

	if (dropped)
		g->req_out = false;
	if (g->informant)
		ev_changed(g);
	send_msg(g, &m);
}

static void ev_upscale(void *ud, bool cpu, bool memory)
{
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_UPSCALE,
				     .flags = (cpu ? ACT_PRIVSEP_F_CPU : 0) |
					      (memory ? ACT_PRIVSEP_F_MEMORY : 0) };

	if (m.flags)
		send_msg(ud, &m);
}

static unsigned long number(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || !*s || *end || v > 0x7fffffff)
		die("vmact-guestd: bad --uid/--gid");
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "monitor", required_argument, NULL, 'm' },
		{ "informant", required_argument, NULL, 'i' },
		{ "listen", required_argument, NULL, 'l' },
		{ "advertise", required_argument, NULL, 'a' },
		{ "metrics", required_argument, NULL, 's' },
		{ "lfc", required_argument, NULL, 'c' },
		{ "uid", required_argument, NULL, 'u' },
		{ "gid", required_argument, NULL, 'g' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static const struct act_approver_events events = {
		.connected = ev_connected,
		.lost = ev_lost,
		.changed = ev_changed,
		.upscale_requested = ev_upscale,
	};
	static const struct act_scrape_ops metrics_ops = {
		.dial = dial_exporter,
		.send = send_record,
	};
	struct gd g = { .name = "?" };
	const char *monitor = NULL, *informant = NULL, *listen = NULL, *advertise = NULL;
	const char *metrics = NULL, *lfc = NULL;
	struct vmact_err err = { 0 };
	bool change = false;
	uid_t uid = 0;
	gid_t gid = 0;
	int c, r;

	vmact_log_init("vmact-guestd", LOG_INFO);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			g.name = optarg;
			break;
		case 'm':
			monitor = optarg;
			break;
		case 'i':
			informant = optarg;
			break;
		case 'l':
			listen = optarg;
			break;
		case 'a':
			advertise = optarg;
			break;
		case 's':
			metrics = optarg;
			break;
		case 'c':
			lfc = optarg;
			break;
		case 'u':
			uid = (uid_t)number(optarg);
			change = true;
			break;
		case 'g':
			gid = (gid_t)number(optarg);
			break;
		case 'V':
			printf("vmact-guestd %s\n", VMACT_VERSION);
			return 0;
		default:
			die("usage: vmact-guestd --name VM {--monitor ENDPOINT | --informant URL "
			    "--listen ADDR:PORT [--advertise HOST] | --metrics URL [--lfc URL]} "
			    "[--uid U --gid G] (started by vmactd, doc/privsep.md)");
		}
	}
	if ((monitor != NULL) + (informant != NULL) + (metrics != NULL) != 1 ||
	    (informant && !listen) || (lfc && !metrics) || (change && !gid))
		die("vmact-guestd: one of --monitor, --informant (with --listen) or --metrics, "
		    "and --uid with --gid, are needed");
	g.informant = informant != NULL;
	if (fcntl(FD, F_GETFD) < 0)
		die("vmact-guestd: no socket on fd 3 (started by vmactd only)");
	if (act_sandbox_drop_privileges(change, uid, gid, &err) < 0) {
		log_error("%s: guest worker: cannot drop privileges: %s", g.name, err.msg);
		return 1;
	}
	/* Read before the filter (no open() after): the time zone, and
	 * jansson's hash seed (/dev/urandom, on the first JSON object). */
	tzset();
	json_object_seed(0);
	r = sd_event_new(&g.event);
	if (r >= 0)
		r = sd_event_add_io(g.event, &g.io, FD, EPOLLIN, on_io, &g);
	if (r >= 0)
		r = sd_event_add_defer(g.event, &g.defer, on_defer, &g);
	if (r >= 0)
		r = sd_event_source_set_enabled(g.defer, SD_EVENT_OFF);
	/* sd-event's timers read the boot id once (libsystemd keeps it):
	 * read now, before open() is forbidden. */
	if (r >= 0) {
		sd_id128_t boot;

		r = sd_id128_get_boot(&boot);
	}
	if (r < 0) {
		log_error("%s: guest worker: event loop: %s", g.name, strerror(-r));
		return 1;
	}
	if (informant) {
		/* Before the filter: libcurl's set-up (its multi handle makes
		 * a socketpair) and libmicrohttpd's first server; no byte of
		 * the informant's is read before the loop runs. */
		const struct act_inf_sockets sock = {
			.listen_socket = listen_socket,
			.dial = dial_url,
			.hook_ud = &g,
		};

		if (act_approver_informant_new(g.event, g.name, informant, listen, advertise, &sock,
					       &events, &g, &g.ap, &err) < 0) {
			log_error("%s: guest worker: %s", g.name, err.msg);
			return 1;
		}
	}
	/* libcurl's initialisation opens files and a socket pair: before the
	 * filter. */
	if (metrics &&
	    act_scrape_new(g.event, metrics, lfc, &metrics_ops, &g, &g.metrics, &err) < 0) {
		log_error("%s: guest worker: %s", g.name, err.msg);
		return 1;
	}
	if (act_sandbox_seccomp(&err) < 0) {
		log_error("%s: guest worker: %s", g.name, err.msg);
		return 1;
	}
	if (monitor && act_approver_monitor_new_dial(g.event, g.name, monitor, dial, &g, &events,
						     &g, &g.ap, &err) < 0) {
		log_error("%s: guest worker: %s", g.name, err.msg);
		return 1;
	}
	r = sd_event_loop(g.event);
	/* vmactd is gone: no goodbye to the monitor is owed. */
	_exit(r < 0 ? 1 : 0);
}
