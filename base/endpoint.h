/* SPDX-License-Identifier: Apache-2.0 */
/* The one parser of the addresses vmact is given:
 *
 *   endpoints (what vmact connects to: <vmact:monitor>, <vmact:informant>,
 *   the informant agent's URL)
 *       ws://HOST[:PORT][/PATH]    http://HOST[:PORT][/PATH]    unix:PATH
 *   listen addresses (what vmact serves on: arbiter.listen,
 *   informant.listen, the HTTP server)
 *       ADDR:PORT    [V6]:PORT    unix:PATH      (ADDR numeric)
 *
 * HOST is a name, an IPv4 address or a bracketed IPv6 address; nothing
 * else (no user@, no unbracketed ':', no '?', '#' or blanks). TLS (wss://,
 * https://) is not supported. Errors name the text given, in quotes, and
 * nothing else: the caller prefixes what it was parsing. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/error.h"

enum vmact_ep_kind {
	VMACT_EP_WS = 1u << 0,   /* ws:// */
	VMACT_EP_HTTP = 1u << 1, /* http:// */
	VMACT_EP_UNIX = 1u << 2, /* unix: */
};

/* vmact_endpoint_parse flags, or-ed with the kinds accepted. */
#define VMACT_EP_NEED_PORT (1u << 8) /* ws/http: the port must be given */
#define VMACT_EP_NO_PATH   (1u << 9) /* ws/http: nothing after HOST[:PORT] */

#define VMACT_EP_HOST_MAX 256
#define VMACT_EP_PATH_MAX 256

struct vmact_endpoint {
	enum vmact_ep_kind kind;
	char host[VMACT_EP_HOST_MAX]; /* ws/http: without IPv6 brackets */
	bool host_v6;                 /* it was given in brackets */
	uint16_t port;                /* ws/http: 0 = not given */
	/* ws/http: the path from its '/', "" when not given; unix: the
	 * socket path */
	char path[VMACT_EP_PATH_MAX];
};

/* Parses `spec`, accepting the kinds in `flags` (with the NEED_PORT and
 * NO_PATH rules). -EINVAL with the reason. */
int vmact_endpoint_parse(const char *spec, unsigned flags, struct vmact_endpoint *out,
			 struct vmact_err *err);

struct vmact_listen {
	int family;                   /* AF_INET, AF_INET6 or AF_UNIX */
	struct sockaddr_storage addr; /* ready for bind() */
	socklen_t addr_len;
	char host[64]; /* numeric, without brackets; "" for unix */
	uint16_t port; /* 0: any free port */
	bool wildcard; /* 0.0.0.0 or :: */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* unix */
};

/* Parses a listen address; unix:PATH only when allow_unix. -EINVAL with
 * the reason. */
int vmact_listen_parse(const char *spec, bool allow_unix, struct vmact_listen *out,
		       struct vmact_err *err);
