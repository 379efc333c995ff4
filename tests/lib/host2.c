/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/host2.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/macro.h"
#include "shared/keyfile.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"

int th_host2_up(char *pid, size_t len)
{
	const char *argv[] = { "bash", "tests/host/host2.sh", "up", NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_PIPE, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };
	char out[64] = "";

	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	th_read_fd_all(p.out_fd, out, sizeof(out));
	if (th_proc_wait(&p) != 0)
		return -1;
	out[strcspn(out, " \n")] = 0;
	if (!out[0] || strlen(out) >= len)
		return -1;
	snprintf(pid, len, "%s", out);
	return 0;
}

void th_host2_down(void)
{
	const char *argv[] = { "bash", "tests/host/host2.sh", "down", NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_INHERIT, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };

	if (getenv("VMACT_TEST_HOST2_KEEP"))
		return;
	if (th_spawn(&p, argv, &o) == 0)
		th_proc_wait(&p);
}

static size_t collect(char *ptr, size_t size, size_t n, void *ud)
{
	char **buf = ud;
	size_t have = *buf ? strlen(*buf) : 0, add = size * n;
	char *b = realloc(*buf, have + add + 1);

	if (!b)
		return 0;
	memcpy(b + have, ptr, add);
	b[have + add] = 0;
	*buf = b;
	return add;
}

long th_host2_arbiter_pod(const char *key_file, unsigned port, const char *ns, const char *name,
			  struct vmact_lease_pod *pod)
{
	_cleanup_free_ uint8_t *key = NULL;
	_cleanup_free_ char *body = NULL;
	size_t key_len = 0;
	struct vmact_err err = { 0 };
	char path[256], url[512], sig[VMACT_LEASE_SIG_HEX + 1];
	long long ts = (long long)time(NULL);
	long status = 0;
	CURL *c;

	if (vmact_keyfile_load(key_file, &key, &key_len, &err) < 0) {
		fprintf(stderr, "lease key: %s\n", err.msg);
		return 0;
	}
	snprintf(path, sizeof(path), "/v1/leases/%s/%s", ns, name);
	vmact_lease_sign(key, key_len, "GET", path, ts, "", 0, sig);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s?ts=%lld&sig=%s", port, path, ts, sig);
	c = curl_easy_init();
	if (!c)
		return 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	if (status == 200 && pod) {
		json_t *doc = body ? json_loads(body, 0, NULL) : NULL;

		if (!doc || vmact_lease_pod_decode(doc, pod, &err) < 0) {
			fprintf(stderr, "arbiter entry: %s (%s)\n", body ? body : "(no body)",
				err.msg);
			status = 0;
		}
		json_decref(doc);
	}
	return status;
}

int th_host2_vmactd(struct th_vmactd *d, const char *prefix, const char *key_file,
		    const char *b_pid, double overcommit, unsigned *arbiter_port)
{
	static const char *const args[] = { "--verbose", NULL };
	const char *const in_b[] = { "nsenter", "-t", b_pid, "-m", "-C", NULL };
	char text[768];
	unsigned port = th_dead_port();

	if (!port)
		return -1;
	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"127.0.0.1:0\",\"lease_key\":\"%s\","
		 "\"overcommit_cpu\":%g},"
		 "\"control\":{\"state_dir\":\"%s\"},\"metrics\":{\"listen\":\"127.0.0.1:%u\"}}",
		 key_file, overcommit, d->dir, port);
	if (th_vmactd_config(d, prefix, text) < 0 ||
	    th_vmactd_spawn_under(d, b_pid ? in_b : NULL, args) < 0)
		return -1;
	if (!th_vmactd_wait_log(d, "leases for the cluster layer", 180))
		return -1;
	*arbiter_port = th_log_port(d->log, "(port");
	return *arbiter_port ? 0 : -1;
}

int th_host2_groupd_cfg(const char *path, const char *api_socket, const char *key_file,
			unsigned port_a, unsigned port_b, unsigned b_bandwidth, const char *extra)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "{\"api\":{\"socket\":\"%s\"},\"metrics\":{\"listen\":\"127.0.0.1:0\"},"
		 "\"hosts\":["
		 "{\"name\":\"a\",\"uri\":\"qemu:///system\","
		 "\"arbiter\":{\"url\":\"http://127.0.0.1:%u\",\"secret_file\":\"%s\"},"
		 "\"migration\":{\"address\":\"127.0.0.1\"}},"
		 "{\"name\":\"b\",\"uri\":\"" TH_HOST2_URI "\","
		 "\"arbiter\":{\"url\":\"http://127.0.0.1:%u\",\"secret_file\":\"%s\"},"
		 "\"migration\":{\"address\":\"127.0.0.1\",\"bandwidth_mib_s\":%u}}]%s}",
		 api_socket, port_a, key_file, port_b, key_file, b_bandwidth, extra ? extra : "");
	return th_write_file(path, text);
}
