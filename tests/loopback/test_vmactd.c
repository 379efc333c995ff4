/* SPDX-License-Identifier: Apache-2.0 */
/* vmactd as a process: configuration errors, the embedded arbiter serving
 * the plugin protocol on the daemon's loop, clean shutdown on SIGTERM. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "tests/lib/proc.h"

static char vmactd_path[PATH_MAX];

struct proc {
	struct th_proc proc;
	FILE *err; /* the daemon's stderr */
};

static int write_config(char *path, const char *text)
{
	int fd = mkstemp(path);
	ssize_t len = (ssize_t)strlen(text);

	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)len) != len) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static void spawn(struct proc *p, const char *argv[])
{
	static const struct th_spawn_opts o = { .err = TH_OUT_PIPE };

	argv[0] = vmactd_path;
	assert_int_equal(th_spawn(&p->proc, argv, &o), 0);
	p->err = fdopen(p->proc.out_fd, "r");
	assert_non_null(p->err);
	p->proc.out_fd = -1; /* p->err owns it now */
}

static int finish(struct proc *p)
{
	int status = th_proc_wait(&p->proc);

	fclose(p->err);
	return status;
}

static void test_bad_config(void **state)
{
	char path[] = "/tmp/vmactd-test-XXXXXX", line[512] = "";
	const char *argv[] = { "vmactd", "--config", path, NULL };
	struct proc p;

	(void)state;
	assert_int_equal(write_config(path, "{\"arbiter\":{\"watermark\":7}}"), 0);
	spawn(&p, argv);
	assert_non_null(fgets(line, sizeof(line), p.err));
	assert_int_equal(finish(&p), 1);
	assert_non_null(strstr(line, "arbiter.watermark"));
	unlink(path);
}

static size_t collect(char *data, size_t size, size_t n, void *ud)
{
	json_t **out = ud;
	json_error_t jerr;

	*out = json_loadb(data, size * n, 0, &jerr);
	return size * n;
}

static void test_embedded_arbiter(void **state)
{
	char path[] = "/tmp/vmactd-test-XXXXXX", line[512], url[64];
	const char *argv[] = { "vmactd", "--config", path, NULL };
	const char *body =
		"{\"protoVersion\":7,\"pod\":{\"namespace\":\"default\",\"name\":\"vm1\"},"
		"\"computeUnit\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},"
		"\"resources\":{\"vCPUs\":\"250m\",\"mem\":\"1Gi\"},"
		"\"lastPermit\":null,\"metrics\":null}";
	struct curl_slist *hdrs = NULL;
	unsigned port = 0;
	json_t *reply = NULL;
	long status = 0;
	struct proc p;
	CURL *c;

	(void)state;
	char text[512];

	/* Its own pin root and a domain prefix nobody uses: the daemon must
	 * not touch other VMs or pins on the test host. */
	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"127.0.0.1:0\"},"
		 "\"libvirt\":{\"name_prefix\":\"vmactd-unit-%d-none-\"},"
		 "\"sampler\":{\"pin_root\":\"/sys/fs/bpf/vmactd-unit-%d\"}}",
		 (int)getpid(), (int)getpid());
	assert_int_equal(write_config(path, text), 0);
	spawn(&p, argv);
	while (fgets(line, sizeof(line), p.err)) {
		char *at = strstr(line, "(port ");

		if (at && sscanf(at, "(port %u)", &port) == 1)
			break;
	}
	assert_true(port > 0);

	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", port);
	c = curl_easy_init();
	hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);

	assert_int_equal(status, 200);
	assert_non_null(reply);
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(reply, "permit"), "vCPUs")),
			    "250m");
	json_decref(reply);

	kill(p.proc.pid, SIGTERM);
	assert_int_equal(finish(&p), 0);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_embedded_arbiter),
	};
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return 1;
	self[n] = '\0';
	/* build[/san]/tests/loopback/test_vmactd -> build[/san]/vmactd */
	snprintf(vmactd_path, sizeof(vmactd_path), "%s/../../vmactd", dirname(self));
	curl_global_init(CURL_GLOBAL_DEFAULT);
	n = cmocka_run_group_tests_name("vmactd", tests, NULL, NULL);
	curl_global_cleanup();
	return (int)n;
}
