/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/host2.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/virterror.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/macro.h"
#include "shared/group-api.h"
#include "shared/keyfile.h"
#include "tests/lib/cluster.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

static int host2_sh(const char *verb, char *pid, size_t len)
{
	const char *argv[] = { "bash", "tests/host/host2.sh", verb, NULL };
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

int th_host2_up(char *pid, size_t len)
{
	return host2_sh("up", pid, len);
}

int th_host2_restart(char *pid, size_t len)
{
	return host2_sh("restart", pid, len);
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

/* One signed request to the arbiter on port: its status, its body in
 * *body (malloc'd, NULL without one). */
static long signed_call(const char *key_file, unsigned port, const char *method, const char *path,
			const char *req, char **body)
{
	_cleanup_free_ uint8_t *key = NULL;
	size_t key_len = 0;
	struct vmact_err err = { 0 };
	char url[512], sig[VMACT_LEASE_SIG_HEX + 1];
	long long ts = (long long)time(NULL);
	long status = 0;
	CURL *c;

	*body = NULL;
	if (vmact_keyfile_load(key_file, &key, &key_len, &err) < 0) {
		fprintf(stderr, "lease key: %s\n", err.msg);
		return 0;
	}
	vmact_lease_sign(key, key_len, method, path, ts, req ? req : "", req ? strlen(req) : 0,
			 sig);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s?ts=%lld&sig=%s", port, path, ts, sig);
	c = curl_easy_init();
	if (!c)
		return 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (req)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	return status;
}

long th_host2_arbiter_lease(const char *key_file, unsigned port, const char *ns, const char *name,
			    uint32_t milli_cpu, uint32_t ttl_s)
{
	_cleanup_free_ char *body = NULL, *req = NULL;
	char path[256];
	struct vmact_lease_request lr = { .size = { milli_cpu, 1 }, .ttl_s = ttl_s };

	if (!milli_cpu) {
		snprintf(path, sizeof(path), "/v1/leases/%s/%s", ns, name);
		return signed_call(key_file, port, "DELETE", path, NULL, &body);
	}
	snprintf(lr.ns, sizeof(lr.ns), "%s", ns);
	snprintf(lr.name, sizeof(lr.name), "%s", name);
	req = vmact_lease_request_encode(&lr);
	return req ? signed_call(key_file, port, "POST", "/v1/leases", req, &body) : 0;
}

long th_host2_arbiter_pod(const char *key_file, unsigned port, const char *ns, const char *name,
			  struct vmact_lease_pod *pod)
{
	_cleanup_free_ char *body = NULL;
	struct vmact_err err = { 0 };
	char path[256];
	long status;

	snprintf(path, sizeof(path), "/v1/leases/%s/%s", ns, name);
	status = signed_call(key_file, port, "GET", path, NULL, &body);
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

long th_host2_arbiter_ledger(const char *key_file, unsigned port, struct vmact_lease_ledger *l)
{
	_cleanup_free_ char *body = NULL;
	struct vmact_err err = { 0 };
	long status = signed_call(key_file, port, "GET", "/v1/leases", NULL, &body);

	if (status == 200) {
		json_t *doc = body ? json_loads(body, 0, NULL) : NULL;

		if (!doc || vmact_lease_ledger_decode(doc, l, &err) < 0)
			status = 0;
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
	unsigned port = th_dead_port(), arb = th_dead_port();

	/* Both ports fixed: a respawned vmactd (th_host2_vmactd_respawn)
	 * serves where vmact-groupd's configuration says. */
	if (!port || !arb || port == arb)
		return -1;
	snprintf(text, sizeof(text),
		 "{\"arbiter\":{\"listen\":\"127.0.0.1:%u\",\"lease_key\":\"%s\","
		 "\"overcommit_cpu\":%g},"
		 "\"control\":{\"state_dir\":\"%s\"},\"metrics\":{\"listen\":\"127.0.0.1:%u\"}}",
		 arb, key_file, overcommit, d->dir, port);
	if (th_vmactd_config(d, prefix, text) < 0 ||
	    th_vmactd_spawn_under(d, b_pid ? in_b : NULL, args) < 0)
		return -1;
	if (!th_vmactd_wait_log(d, "leases for the cluster layer", 180))
		return -1;
	*arbiter_port = arb;
	return 0;
}

int th_host2_vmactd_respawn(struct th_vmactd *d, const char *b_pid)
{
	static const char *const args[] = { "--verbose", NULL };
	const char *const in_b[] = { "nsenter", "-t", b_pid, "-m", "-C", NULL };

	th_proc_stop(&d->proc, SIGKILL, 0);
	d->spawns++;
	snprintf(d->log, sizeof(d->log), "%s/vmactd.%u.log", d->dir, d->spawns);
	if (th_vmactd_spawn_under(d, b_pid ? in_b : NULL, args) < 0)
		return -1;
	return th_vmactd_wait_log(d, "leases for the cluster layer", 180) ? 0 : -1;
}

int th_host2_fixture(char *pid, size_t len, virConnectPtr *vca, virConnectPtr *vcb,
		     struct th_cluster_stack *s, const char *prefix, struct th_vmactd *a,
		     struct th_vmactd *b)
{
	char name[64];

	tg_quiet_libvirt();
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (th_host2_up(pid, len) < 0) {
		fprintf(stderr, "the second libvirtd (tests/host/host2.sh up) did not start\n");
		return -1;
	}
	*vca = virConnectOpen("qemu:///system");
	*vcb = virConnectOpen(TH_HOST2_URI);
	if (!*vca || !*vcb || th_cluster_stack_init(s, prefix) < 0) {
		fprintf(stderr, "set-up: libvirt or the cluster user\n");
		return -1;
	}
	snprintf(name, sizeof(name), "%sa", prefix);
	if (th_vmactd_init(a, name, NULL) < 0)
		return -1;
	snprintf(name, sizeof(name), "%sb", prefix);
	if (th_vmactd_init(b, name, NULL) < 0)
		return -1;
	return 0;
}

int th_host2_groupd_cfg(const char *path, const char *api_socket, const char *key_file,
			unsigned port_a, unsigned port_b, unsigned b_bandwidth, const char *extra)
{
	return th_host2_groupd_cfg_uri(path, api_socket, key_file, "qemu:///system", TH_HOST2_URI,
				       port_a, port_b, b_bandwidth, extra);
}

int th_host2_groupd_cfg_uri(const char *path, const char *api_socket, const char *key_file,
			    const char *a_uri, const char *b_uri, unsigned port_a, unsigned port_b,
			    unsigned b_bandwidth, const char *extra)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "{\"api\":{\"socket\":\"%s\"},\"metrics\":{\"listen\":\"127.0.0.1:0\"},"
		 "\"hosts\":["
		 "{\"name\":\"a\",\"uri\":\"%s\","
		 "\"arbiter\":{\"url\":\"http://127.0.0.1:%u\",\"secret_file\":\"%s\"},"
		 "\"migration\":{\"address\":\"127.0.0.1\"}},"
		 "{\"name\":\"b\",\"uri\":\"%s\","
		 "\"arbiter\":{\"url\":\"http://127.0.0.1:%u\",\"secret_file\":\"%s\"},"
		 "\"migration\":{\"address\":\"127.0.0.1\",\"bandwidth_mib_s\":%u}}]%s}",
		 api_socket, a_uri, port_a, key_file, b_uri, port_b, key_file, b_bandwidth,
		 extra ? extra : "");
	return th_write_file(path, text);
}

/* QEMU processes of the guest called name ("-name guest=NAME,..."). */
static unsigned qemus_of(const char *name)
{
	char want[160];
	unsigned n = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return 0;
	snprintf(want, sizeof(want), "guest=%s,", name);
	while ((e = readdir(d))) {
		char path[300], buf[4096];
		ssize_t len;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (ssize_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = 0;
		n += strstr(buf, want) != NULL;
	}
	closedir(d);
	return n;
}

static bool one_qemu(void *name)
{
	return qemus_of(name) == 1;
}

int th_host2_rebind_ctl(const char *uri, struct tg_guest *g)
{
	static unsigned seq;
	char cmd[1024], out[1024] = "", dir[] = TG_RUNDIR "/qemu-ctl", path[sizeof(g->ctl)];
	const char *argv[] = {
		"virsh", "-q", "-c", uri, "qemu-monitor-command", g->name, cmd, NULL
	};
	const struct th_spawn_opts o = { .out = TH_OUT_PIPE, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };
	struct passwd *pw = getpwnam("libvirt-qemu");

	/* Once the source's QEMU is gone: it unlinks the path as it exits. */
	if (!th_wait_until(NULL, one_qemu, (void *)g->name, 120 * 1000000ULL)) {
		fprintf(stderr, "%s: the source's QEMU did not exit after the move\n", g->name);
		return -1;
	}
	/* QEMU binds it itself now (libvirt bound the first for it, as
	 * root): in a directory its user may write, at a new path each time. */
	if (!pw || (mkdir(dir, 0755) < 0 && errno != EEXIST) ||
	    chown(dir, pw->pw_uid, pw->pw_gid) < 0) {
		fprintf(stderr, "%s: cannot make it QEMU's user's\n", dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%.80s-%u.ctl", dir, g->name, ++seq);
	snprintf(cmd, sizeof(cmd),
		 "{\"execute\":\"chardev-change\",\"arguments\":{\"id\":\"charserial1\","
		 "\"backend\":{\"type\":\"socket\",\"data\":{\"addr\":{\"type\":\"unix\","
		 "\"data\":{\"path\":\"%s\"}},\"server\":true,\"wait\":false}}}}",
		 path);
	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	th_read_fd_all(p.out_fd, out, sizeof(out));
	if (th_proc_wait(&p) != 0 || strstr(out, "\"error\"")) {
		fprintf(stderr, "%s: chardev-change: %s\n", g->name, out);
		return -1;
	}
	snprintf(g->ctl, sizeof(g->ctl), "%s", path);
	return 0;
}

bool th_host2_runs_on(virConnectPtr c, const char *name)
{
	virDomainPtr d = virDomainLookupByName(c, name);
	int state = 0, reason = 0;
	bool yes;

	if (!d) {
		virResetLastError();
		return false;
	}
	yes = virDomainGetState(d, &state, &reason, 0) == 0 && state == VIR_DOMAIN_RUNNING;
	virDomainFree(d);
	return yes;
}

bool th_host2_defined_on(virConnectPtr c, const char *name)
{
	virDomainPtr d = virDomainLookupByName(c, name);

	if (!d) {
		virResetLastError();
		return false;
	}
	virDomainFree(d);
	return true;
}

bool th_host2_leaving(virConnectPtr c, const char *name)
{
	virDomainPtr d = virDomainLookupByName(c, name);
	virTypedParameterPtr p = NULL;
	int n = 0, type = VIR_DOMAIN_JOB_NONE, op = 0;
	bool yes = false;

	if (!d) {
		virResetLastError();
		return false;
	}
	if (virDomainGetJobStats(d, &type, &p, &n, 0) == 0) {
		yes = type != VIR_DOMAIN_JOB_NONE &&
		      virTypedParamsGetInt(p, n, VIR_DOMAIN_JOB_OPERATION, &op) == 1 &&
		      op == VIR_DOMAIN_JOB_OPERATION_MIGRATION_OUT;
		virTypedParamsFree(p, n);
	}
	virResetLastError();
	virDomainFree(d);
	return yes;
}

static char move_socket[108];

void th_host2_move_socket(const char *api_socket)
{
	snprintf(move_socket, sizeof(move_socket), "%s", api_socket);
}

bool th_host2_move_ended(void *arg)
{
	struct th_host2_move *e = arg;
	struct vmact_gapi_migrations l;
	struct vmact_err err = { 0 };
	long status = 0;
	json_t *doc = th_cluster_api(move_socket, "GET", VMACT_GAPI_PATH_MIGRATIONS, NULL, &status);
	bool done = false;

	if (!doc || status != 200 || vmact_gapi_migrations_decode(doc, &l, &err) < 0) {
		json_decref(doc);
		return false;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct vmact_gapi_migration *m = &l.v[i];

		if (strcmp(m->vm, e->vm) || m->id <= e->after_id || !m->result[0] ||
		    (e->reason && strcmp(m->reason, e->reason)))
			continue;
		e->id = m->id;
		snprintf(e->result, sizeof(e->result), "%s", m->result);
		snprintf(e->error, sizeof(e->error), "%s", m->error);
		snprintf(e->from, sizeof(e->from), "%s", m->from);
		snprintf(e->to, sizeof(e->to), "%s", m->to);
		snprintf(e->why, sizeof(e->why), "%s", m->why);
		e->started = m->started;
		e->duration_s = m->duration_s;
		e->downtime_ms = m->downtime_ms;
		done = true;
	}
	vmact_gapi_migrations_clear(&l);
	json_decref(doc);
	return done;
}

int th_host2_guest(virConnectPtr c, const char *prefix, const char *metadata, const char *dir,
		   bool persistent, struct tg_guest *g, char *msg, size_t len)
{
	char tpl[PATH_MAX];
	virDomainPtr d;
	char *xml;

	snprintf(tpl, sizeof(tpl), "%s/domain-append.xml", dir);
	if (tg_template_edit("<source path='@RUN@/@NAME@.log'/>",
			     "<source path='@RUN@/@NAME@.log' append='on'/>", tpl) < 0) {
		snprintf(msg, len, "the guest's template");
		return -1;
	}
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	if (tg_start_template(c, prefix, metadata, tpl, NULL, g, msg, len) < 0)
		return -1;
	if (!persistent)
		return 0;
	xml = virDomainGetXMLDesc(g->dom, VIR_DOMAIN_XML_INACTIVE);
	d = xml ? virDomainDefineXML(c, xml) : NULL;
	free(xml);
	if (!d) {
		snprintf(msg, len, "cannot make %s persistent", g->name);
		return -1;
	}
	virDomainFree(d);
	return 0;
}

void th_host2_guest_remove(virConnectPtr *c, size_t n, struct tg_guest *g)
{
	for (size_t i = 0; i < n; i++) {
		virDomainPtr d = c[i] && g->name[0] ? virDomainLookupByName(c[i], g->name) : NULL;

		if (d) {
			virDomainDestroy(d);
			virDomainUndefine(d);
			virDomainFree(d);
		}
		virResetLastError();
	}
	tg_destroy(g);
}

int th_host2_move_under_way(const char *vm, const char *phase, uint64_t *id)
{
	struct vmact_gapi_migrations l;
	struct vmact_err err = { 0 };
	long status = 0;
	json_t *doc = th_cluster_api(move_socket, "GET", VMACT_GAPI_PATH_MIGRATIONS, NULL, &status);
	int r = 0;

	if (!doc || status != 200 || vmact_gapi_migrations_decode(doc, &l, &err) < 0) {
		json_decref(doc);
		return -1;
	}
	for (size_t i = 0; i < l.n; i++)
		if (!l.v[i].result[0] && (!vm || !strcmp(l.v[i].vm, vm)) &&
		    (!phase || !strcmp(l.v[i].phase, phase))) {
			if (id)
				*id = l.v[i].id;
			r = 1;
		}
	vmact_gapi_migrations_clear(&l);
	json_decref(doc);
	return r;
}
