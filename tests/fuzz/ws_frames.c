/* SPDX-License-Identifier: Apache-2.0 */
/* Any bytes as the frames a websocket server (the vm-monitor in a guest)
 * sends after a good upgrade, through the real client (agent-glue/
 * ws-client.c on wslay, over a unix socket, on sd-event). Byte 0 picks
 * whether the frames arrive in the same write as the 101 response (the
 * early-bytes path) or behind it. Every connection must end (the peer's
 * EOF or the close handshake, bounded by the close timeout) with exactly
 * one on_close, and no message longer than max_message may be delivered. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net/ws-client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MESSAGE 1024

static sd_event *ev;
static struct net_ws_client *ws;
static int lfd = -1;
static unsigned closes, opens;

static void on_open(struct net_ws_client *c, void *ud)
{
	(void)c, (void)ud;
	opens++;
}

static void on_msg(struct net_ws_client *c, const uint8_t *buf, size_t len, void *ud)
{
	(void)ud;
	if (len > MAX_MESSAGE || (len && !buf))
		abort();
	/* Echo some back, as monitor-client answers requests. */
	if (len && buf[0] == 'e')
		net_ws_client_send_text(c, (const char *)buf, len);
	if (len && buf[0] == 'c')
		net_ws_client_close(c, 1000, "fuzz");
}

static void on_close(struct net_ws_client *c, const char *reason, void *ud)
{
	(void)c, (void)ud;
	if (!reason || !reason[0])
		abort();
	closes++;
}

static char sock_path[108];

static void remove_socket(void)
{
	unlink(sock_path);
}

static void setup(void)
{
	static const struct net_ws_client_callbacks cb = {
		.on_open = on_open,
		.on_text = on_msg,
		.on_binary = on_msg,
		.on_close = on_close,
	};
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct net_ws_client_config cfg = {
		.unix_path = sa.sun_path,
		.path = "/monitor",
		.peer = "fuzz peer",
		.close_timeout_usec = 20000,
		.max_message = MAX_MESSAGE,
	};
	struct vmact_err err = { 0 };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/vmact-fuzz-ws-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	snprintf(sock_path, sizeof(sock_path), "%s", sa.sun_path);
	atexit(remove_socket);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0 ||
	    sd_event_new(&ev) < 0 || net_ws_client_new(ev, &cfg, &cb, NULL, &ws, &err) < 0)
		abort();
}

static void drain(int fd)
{
	char buf[4096];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char req[2048], key[64], accept[NET_WS_ACCEPT_LEN + 1], head[256], *k, *e;
	size_t got = 0;
	int sfd, n;

	if (size < 1 || size > 65536)
		return 0;
	if (!ev)
		setup();
	closes = opens = 0;
	if (net_ws_client_connect(ws) < 0)
		abort();
	sfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (sfd < 0)
		abort();
	/* The client's upgrade request, read as the loop sends it. */
	for (int i = 0; i < 1000 && !memmem(req, got, "\r\n\r\n", 4); i++) {
		ssize_t r;

		if (sd_event_run(ev, 10000) < 0)
			abort();
		r = recv(sfd, req + got, sizeof(req) - 1 - got, MSG_DONTWAIT);
		if (r > 0)
			got += (size_t)r;
	}
	req[got] = '\0';
	k = strstr(req, "Sec-WebSocket-Key: ");
	e = k ? strstr(k, "\r\n") : NULL;
	if (!e || (size_t)(e - k - 19) >= sizeof(key))
		abort();
	memcpy(key, k + 19, (size_t)(e - k - 19));
	key[e - k - 19] = '\0';
	net_ws_accept(key, accept);
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
		     "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		     accept);
	if (data[0] & 1) {
		char *all = malloc((size_t)n + size - 1);

		if (!all)
			abort();
		memcpy(all, head, (size_t)n);
		memcpy(all + n, data + 1, size - 1);
		if (send(sfd, all, (size_t)n + size - 1, MSG_NOSIGNAL) != (ssize_t)(n + size - 1))
			abort();
		free(all);
	} else {
		if (send(sfd, head, (size_t)n, MSG_NOSIGNAL) != n)
			abort();
		for (int i = 0; i < 3 && !opens; i++)
			sd_event_run(ev, 10000);
		if (size > 1 && send(sfd, data + 1, size - 1, MSG_NOSIGNAL) != (ssize_t)(size - 1))
			abort();
	}
	shutdown(sfd, SHUT_WR);
	/* The peer has said all it will: the client must get to CLOSED. A
	 * connection still up after this many turns is a hang. */
	for (int i = 0; i < 10000 && net_ws_client_state(ws) != NET_WS_CLOSED; i++) {
		if (sd_event_run(ev, 10000) < 0)
			abort();
		drain(sfd);
	}
	if (net_ws_client_state(ws) != NET_WS_CLOSED || closes != 1 || opens > 1)
		abort();
	close(sfd);
	return 0;
}
