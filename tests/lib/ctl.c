/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/ctl.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct body {
	char *p;
	size_t n;
};

static size_t collect(char *data, size_t size, size_t nmemb, void *ud)
{
	struct body *b = ud;
	size_t add = size * nmemb;
	char *np;

	/* The control API bounds its answers; a test has no use for more. */
	if (b->n + add > 4u << 20)
		return 0;
	np = realloc(b->p, b->n + add + 1);
	if (!np)
		return 0;
	memcpy(np + b->n, data, add);
	b->p = np;
	b->n += add;
	b->p[b->n] = 0;
	return add;
}

/* One request on the control socket: GET, or POST of post_body. The
 * answer's body in *b (free it), the HTTP status, or 0 with why in msg
 * when there was no answer. */
static long request(const char *sock, const char *url, const char *post_body, struct body *b,
		    char *msg, size_t len)
{
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode rc;

	if (!c) {
		snprintf(msg, len, "curl_easy_init failed");
		return 0;
	}
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (post_body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post_body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	/* A change writes the domain's metadata through libvirt. */
	curl_easy_setopt(c, CURLOPT_TIMEOUT, post_body ? 30L : 10L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		snprintf(msg, len, "%s: %s", sock, curl_easy_strerror(rc));
	curl_easy_cleanup(c);
	return status;
}

json_t *th_ctl_vm(const char *sock, const char *vm, char *msg, size_t len)
{
	struct body b = { 0 };
	char url[512], *esc = curl_easy_escape(NULL, vm, 0);
	json_error_t je;
	json_t *doc = NULL;
	long status;

	snprintf(url, sizeof(url), "http://localhost/v1/vms/%s", esc ? esc : vm);
	curl_free(esc);
	status = request(sock, url, NULL, &b, msg, len);
	if (status && status != 200)
		snprintf(msg, len, "GET %s: status %ld: %.200s", url, status, b.p ? b.p : "");
	else if (status && !(doc = json_loads(b.p ? b.p : "", 0, &je)))
		snprintf(msg, len, "GET %s: not JSON (%s)", url, je.text);
	free(b.p);
	return doc;
}

bool th_ctl_number(const json_t *doc, const char *path, double *out)
{
	char key[128];
	const char *p = path;

	while (doc && *p) {
		size_t n = strcspn(p, ".");

		if (n >= sizeof(key))
			return false;
		memcpy(key, p, n);
		key[n] = 0;
		doc = json_object_get(doc, key);
		p += n + (p[n] == '.');
	}
	if (!json_is_number(doc))
		return false;
	*out = json_number_value(doc);
	return true;
}

long th_ctl_post(const char *sock, const char *path, const char *body, char *msg, size_t len)
{
	struct body b = { 0 };
	char url[512];
	long status;

	snprintf(url, sizeof(url), "http://localhost%s", path);
	status = request(sock, url, body, &b, msg, len);
	if (status)
		snprintf(msg, len, "POST %s: status %ld: %.200s", url, status, b.p ? b.p : "");
	free(b.p);
	return status;
}
