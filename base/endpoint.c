/* SPDX-License-Identifier: Apache-2.0 */
#include "base/endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static const struct {
	enum vmact_ep_kind kind;
	const char *prefix;
} schemes[] = {
	{ VMACT_EP_WS, "ws://" },
	{ VMACT_EP_HTTP, "http://" },
	{ VMACT_EP_UNIX, "unix:" },
};

/* "ws://, http:// or unix:" for the kinds in flags. */
static void list_kinds(unsigned flags, char *buf, size_t len)
{
	size_t n = 0, total = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		total += !!(flags & schemes[i].kind);
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t used = strlen(buf);

		if (!(flags & schemes[i].kind))
			continue;
		snprintf(buf + used, len - used, "%s%s",
			 n == 0           ? ""
			 : n + 1 == total ? " or "
					  : ", ",
			 schemes[i].prefix);
		n++;
	}
}

/* The form a URL of `scheme` must have, e.g. "http://HOST:PORT" or
 * "ws://HOST[:PORT][/PATH]". */
static void url_form(const char *scheme, unsigned flags, char *buf, size_t len)
{
	snprintf(buf, len, "%sHOST%s%s", scheme, flags & VMACT_EP_NEED_PORT ? ":PORT" : "[:PORT]",
		 flags & VMACT_EP_NO_PATH ? "" : "[/PATH]");
}

static int not_a(const char *spec, unsigned flags, struct vmact_err *err)
{
	unsigned kinds = flags & (VMACT_EP_WS | VMACT_EP_HTTP | VMACT_EP_UNIX);
	char what[96];

	if (kinds == VMACT_EP_HTTP || kinds == VMACT_EP_WS) {
		url_form(kinds == VMACT_EP_HTTP ? "http://" : "ws://", flags, what, sizeof(what));
		return vmact_err_set(err, EINVAL, "'%s' is not %s %s address", spec,
				     kinds == VMACT_EP_HTTP ? "an" : "a", what);
	}
	list_kinds(kinds, what, sizeof(what));
	return vmact_err_set(err, EINVAL, "'%s' is not a %s address", spec, what);
}

/* Characters that never belong in a host: they would make the URL mean
 * something else (user@host, a query, a fragment) or are blanks. */
static bool bad_host_char(char c)
{
	return c == '/' || c == '@' || c == '?' || c == '#' || (unsigned char)c <= ' ' || c == 0x7f;
}

static int parse_url(const char *spec, const char *scheme, unsigned flags,
		     struct vmact_endpoint *out, struct vmact_err *err)
{
	const char *host = spec + strlen(scheme), *end, *colon = NULL, *p;
	char form[64];
	size_t hlen;

	url_form(scheme, flags, form, sizeof(form));
	/* The authority ends at the path. */
	end = host + strcspn(host, "/");
	if (host[0] == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));

		if (!close || close == host + 1 || (close[1] != ':' && close + 1 != end))
			return vmact_err_set(err, EINVAL, "'%s': expected %s", spec, form);
		out->host_v6 = true;
		hlen = (size_t)(close - host - 1);
		colon = close[1] == ':' ? close + 1 : NULL;
		for (p = host + 1; p < close; p++)
			if (!(*p == ':' || *p == '.' || (*p >= '0' && *p <= '9') ||
			      (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
				return vmact_err_set(err, EINVAL, "'%s': expected %s", spec, form);
		host++;
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
		hlen = (size_t)((colon ? colon : end) - host);
		/* An unbracketed IPv6 address is ambiguous. */
		if (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))
			return vmact_err_set(err, EINVAL, "'%s': expected %s", spec, form);
		for (p = host; p < host + hlen; p++)
			if (bad_host_char(*p))
				return vmact_err_set(err, EINVAL, "'%s': expected %s", spec, form);
	}
	if (hlen == 0 || (!colon && (flags & VMACT_EP_NEED_PORT)))
		return vmact_err_set(err, EINVAL, "'%s': expected %s", spec, form);
	if (hlen >= sizeof(out->host))
		return vmact_err_set(err, EINVAL, "'%s': host name too long", spec);
	memcpy(out->host, host, hlen);
	out->host[hlen] = '\0';
	if (colon) {
		unsigned long port = 0;

		for (p = colon + 1; *p >= '0' && *p <= '9' && port <= 65535; p++)
			port = port * 10 + (unsigned long)(*p - '0');
		if (p == colon + 1 || port == 0 || port > 65535 || p != end ||
		    (*end && (flags & VMACT_EP_NO_PATH)))
			return vmact_err_set(err, EINVAL, "'%s': the port must be 1-65535%s", spec,
					     flags & VMACT_EP_NO_PATH ? " with nothing after it"
								      : "");
		out->port = (uint16_t)port;
	}
	if (*end && (flags & VMACT_EP_NO_PATH))
		return vmact_err_set(err, EINVAL, "'%s': expected %s", spec, form);
	if (strlen(end) >= sizeof(out->path))
		return vmact_err_set(err, EINVAL, "'%s': path too long", spec);
	for (p = end; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return vmact_err_set(err, EINVAL, "'%s': blank in the path", spec);
	strcpy(out->path, end);
	return 0;
}

int vmact_endpoint_parse(const char *spec, unsigned flags, struct vmact_endpoint *out,
			 struct vmact_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!spec)
		spec = "";
	if (strncmp(spec, "wss://", 6) == 0 && (flags & VMACT_EP_WS)) {
		char use[64];

		list_kinds(flags, use, sizeof(use));
		return vmact_err_set(err, EINVAL, "'%s': TLS (wss://) is not supported; use %s",
				     spec, use);
	}
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t n = strlen(schemes[i].prefix);

		if (!(flags & schemes[i].kind) || strncmp(spec, schemes[i].prefix, n) != 0)
			continue;
		out->kind = schemes[i].kind;
		if (schemes[i].kind != VMACT_EP_UNIX)
			return parse_url(spec, schemes[i].prefix, flags, out, err);
		if (!spec[n])
			return vmact_err_set(err, EINVAL, "'%s': expected unix:PATH", spec);
		if (strlen(spec + n) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return vmact_err_set(err, EINVAL, "'%s': socket path too long", spec);
		strcpy(out->path, spec + n);
		return 0;
	}
	return not_a(spec, flags, err);
}

int vmact_listen_parse(const char *spec, bool allow_unix, struct vmact_listen *out,
		       struct vmact_err *err)
{
	const char *colon, *h;
	size_t hlen;
	unsigned long port = 0;
	const char *p;

	memset(out, 0, sizeof(*out));
	if (!spec)
		spec = "";
	if (allow_unix && strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&out->addr;

		if (!spec[5] || strlen(spec + 5) >= sizeof(un->sun_path))
			return vmact_err_set(err, EINVAL, "'%s': bad socket path", spec);
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, spec + 5);
		strcpy(out->path, spec + 5);
		out->family = AF_UNIX;
		out->addr_len = sizeof(*un);
		return 0;
	}
	colon = strrchr(spec, ':');
	if (!colon || colon == spec)
		return vmact_err_set(err, EINVAL, "'%s' is not ADDR:PORT", spec);
	for (p = colon + 1; *p >= '0' && *p <= '9' && port <= 65535; p++)
		port = port * 10 + (unsigned long)(*p - '0');
	if (p == colon + 1 || *p || port > 65535)
		return vmact_err_set(err, EINVAL, "'%s': bad port", spec);
	h = spec;
	hlen = (size_t)(colon - spec);
	if (spec[0] == '[') {
		if (hlen < 3 || spec[hlen - 1] != ']')
			return vmact_err_set(err, EINVAL, "'%s': bad [IPv6] address", spec);
		h++;
		hlen -= 2;
	}
	if (hlen >= sizeof(out->host))
		return vmact_err_set(err, EINVAL, "'%s': bad host part", spec);
	memcpy(out->host, h, hlen);
	out->host[hlen] = '\0';
	out->port = (uint16_t)port;
	if (spec[0] != '[') {
		struct sockaddr_in *in = (struct sockaddr_in *)&out->addr;

		if (inet_pton(AF_INET, out->host, &in->sin_addr) != 1)
			return vmact_err_set(err, EINVAL, "'%s': %s is not a numeric IPv4 address",
					     spec, out->host);
		in->sin_family = AF_INET;
		in->sin_port = htons(out->port);
		out->family = AF_INET;
		out->addr_len = sizeof(*in);
		out->wildcard = in->sin_addr.s_addr == htonl(INADDR_ANY);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->addr;

		if (inet_pton(AF_INET6, out->host, &in6->sin6_addr) != 1)
			return vmact_err_set(err, EINVAL, "'%s': %s is not a numeric IPv6 address",
					     spec, out->host);
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(out->port);
		out->family = AF_INET6;
		out->addr_len = sizeof(*in6);
		out->wildcard = IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);
	}
	return 0;
}
