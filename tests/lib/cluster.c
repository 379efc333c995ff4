/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/cluster.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/file.h"
#include "tests/lib/guest.h"

int th_cluster_user(struct th_cluster_user *u)
{
	struct passwd *pw = getpwnam(TH_CLUSTER_USER);

	if (!pw)
		return -ENOENT;
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	snprintf(u->home, sizeof(u->home), "%s", pw->pw_dir);
	return 0;
}

/* setpriv ... env -u XDG_RUNTIME_DIR HOME=... args */
static size_t as_user(const struct th_cluster_user *u, const char **argv, char *home, size_t hlen)
{
	static const char *const head[] = { "setpriv",
					    "--reuid=" TH_CLUSTER_USER,
					    "--regid=" TH_CLUSTER_USER,
					    "--init-groups",
					    "env",
					    "-u",
					    "XDG_RUNTIME_DIR" };
	size_t n = 0;

	for (; n < sizeof(head) / sizeof(head[0]); n++)
		argv[n] = head[n];
	snprintf(home, hlen, "HOME=%s", u->home);
	argv[n++] = home;
	return n;
}

int th_cluster_spawn(struct th_proc *p, const struct th_cluster_user *u, const char *const args[],
		     const char *log)
{
	const char *argv[32];
	char home[300];
	const struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };
	size_t n = as_user(u, argv, home, sizeof(home));

	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return th_spawn(p, argv, &o);
}

int th_cluster_session_virsh(const struct th_cluster_user *u, const char *const args[])
{
	const char *argv[32];
	char home[300];
	const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };
	size_t n = as_user(u, argv, home, sizeof(home));

	argv[n++] = "virsh";
	argv[n++] = "-q";
	argv[n++] = "-c";
	argv[n++] = "qemu:///session";
	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	return th_proc_wait(&p);
}

void th_cluster_session_uri(const struct th_cluster_user *u, char *buf, size_t len)
{
	snprintf(buf, len, "qemu+unix:///session?socket=%s/.cache/libvirt/libvirt-sock", u->home);
}

int th_cluster_key(const struct th_cluster_user *u, const char *path)
{
	uint8_t raw[32];
	char hex[65];
	int r;

	if (getrandom(raw, sizeof(raw), 0) != sizeof(raw))
		return -EIO;
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	if ((r = th_write_file(path, hex)) < 0)
		return r;
	if (chown(path, 0, u->gid) < 0 || chmod(path, 0640) < 0)
		return -errno;
	return 0;
}

static int copy_base(const char *dir)
{
	char from[PATH_MAX + 32], to[PATH_MAX + 32];
	const char *argv[] = { "cp", from, to, NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_INHERIT, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };

	snprintf(from, sizeof(from), "%s/node-base.qcow2", tg_guest_dir());
	snprintf(to, sizeof(to), "%s/node-base.qcow2", dir);
	if (th_spawn(&p, argv, &o) < 0 || th_proc_wait(&p) != 0)
		return -EIO;
	return 0;
}

int th_cluster_pool(virConnectPtr c, const struct th_cluster_user *session_user, const char *name,
		    const char *dir)
{
	char base[PATH_MAX + 32];

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (copy_base(dir) < 0)
		return -EIO;
	snprintf(base, sizeof(base), "%s/node-base.qcow2", dir);
	if (session_user) {
		const char *def[] = { "pool-define-as", name, "dir", "--target", dir, NULL };
		const char *start[] = { "pool-start", name, NULL };

		if (chown(dir, session_user->uid, session_user->gid) < 0 ||
		    chown(base, session_user->uid, session_user->gid) < 0)
			return -errno;
		if (th_cluster_session_virsh(session_user, def) != 0 ||
		    th_cluster_session_virsh(session_user, start) != 0)
			return -EIO;
		return 0;
	}
	{
		char xml[PATH_MAX + 256];
		virStoragePoolPtr p;

		snprintf(xml, sizeof(xml),
			 "<pool type='dir'><name>%s</name><target><path>%s</path></target></pool>",
			 name, dir);
		p = virStoragePoolDefineXML(c, xml, 0);
		if (!p)
			return -EIO;
		if (virStoragePoolCreate(p, 0) < 0) {
			virStoragePoolUndefine(p);
			virStoragePoolFree(p);
			return -EIO;
		}
		virStoragePoolFree(p);
	}
	return 0;
}

void th_cluster_pool_remove(virConnectPtr c, const char *name)
{
	virStoragePoolPtr p = c ? virStoragePoolLookupByName(c, name) : NULL;
	virStorageVolPtr *vols = NULL;
	int n;

	if (!p)
		return;
	virStoragePoolRefresh(p, 0);
	n = virStoragePoolListAllVolumes(p, &vols, 0);
	for (int i = 0; i < n; i++) {
		virStorageVolDelete(vols[i], 0);
		virStorageVolFree(vols[i]);
	}
	free(vols);
	virStoragePoolDestroy(p);
	virStoragePoolUndefine(p);
	virStoragePoolFree(p);
}

void th_cluster_remove_domains(virConnectPtr c, const char *prefix)
{
	virDomainPtr *doms = NULL;
	int n = c ? virConnectListAllDomains(c, &doms, 0) : 0;

	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);

		if (strncmp(name, prefix, strlen(prefix)) == 0) {
			if (virDomainIsActive(doms[i]) == 1)
				virDomainDestroy(doms[i]);
			if (virDomainIsPersistent(doms[i]) == 1)
				virDomainUndefineFlags(doms[i], VIR_DOMAIN_UNDEFINE_MANAGED_SAVE);
		}
		virDomainFree(doms[i]);
	}
	free(doms);
}

struct body {
	char *s;
	size_t n;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	char *ns = realloc(b->s, b->n + size * n + 1);

	if (!ns)
		return 0;
	b->s = ns;
	memcpy(b->s + b->n, p, size * n);
	b->n += size * n;
	b->s[b->n] = 0;
	return size * n;
}

json_t *th_cluster_api(const char *socket, const char *method, const char *path, const char *body,
		       long *status)
{
	CURL *c = curl_easy_init();
	struct body b = { 0 };
	char url[512];
	json_t *j = NULL;
	long st = 0;

	snprintf(url, sizeof(url), "http://groupd%s", path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 90L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(c);
	if (b.s)
		j = json_loads(b.s, 0, NULL);
	free(b.s);
	if (status)
		*status = st;
	return j;
}

char *th_cluster_http_get(const char *url)
{
	CURL *c = curl_easy_init();
	struct body b = { 0 };
	long st = 0;

	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
	curl_easy_cleanup(c);
	if (st != 200) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* vmact-groupd's log is long with -v: the tail is the failure's story. */
#define TH_CLUSTER_LOG_TAIL     6000
#define TH_CLUSTER_ARBITER_TAIL 3000
#define TH_CLUSTER_VERBOSE_TAIL 200000
/* vmact-groupd ends its jobs (a libvirt call each) before it exits. */
#define TH_CLUSTER_STOP_USEC (30 * VMACT_USEC_PER_SEC)

int th_cluster_stack_init(struct th_cluster_stack *s, const char *prefix)
{
	char api[128];
	int r;

	if ((r = th_cluster_user(&s->u)) < 0 ||
	    (r = th_prog("vmact-groupd", s->groupd, sizeof(s->groupd))) < 0 ||
	    (r = th_prog("vmact-arbiter", s->arbiter, sizeof(s->arbiter))) < 0)
		return r;
	if ((r = th_scratch_dir(prefix, s->dir, sizeof(s->dir))) < 0 ||
	    (r = th_cluster_stack_own(s, s->dir, false, 0755)) < 0)
		return r;
	snprintf(s->cfg, sizeof(s->cfg), "%s/groupd.json", s->dir);
	snprintf(s->alog, sizeof(s->alog), "%s/arbiter.log", s->dir);
	snprintf(s->key, sizeof(s->key), "%s/lease.key", s->dir);
	snprintf(s->logs, sizeof(s->logs), "%s/logs", s->dir);
	snprintf(s->sock, sizeof(s->sock), "%s/api/api.sock", s->dir);
	/* The lease key: root's and the cluster user's to read. */
	if ((r = th_cluster_key(&s->u, s->key)) < 0)
		return r;
	if (mkdir(s->logs, 0777) < 0 || (r = th_cluster_stack_own(s, s->logs, false, 0777)) < 0)
		return r < 0 ? r : -errno;
	return th_cluster_stack_user_dir(s, "api", api, sizeof(api));
}

int th_cluster_stack_own(const struct th_cluster_stack *s, const char *path, bool user,
			 unsigned mode)
{
	if (chown(path, user ? s->u.uid : 0, s->u.gid) < 0 || chmod(path, (mode_t)mode) < 0)
		return -errno;
	return 0;
}

int th_cluster_stack_user_dir(const struct th_cluster_stack *s, const char *name, char *out,
			      size_t len)
{
	if ((size_t)snprintf(out, len, "%s/%s", s->dir, name) >= len)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return -errno;
	return th_cluster_stack_own(s, out, true, 0700);
}

static bool stack_ready(void *arg)
{
	const struct th_cluster_stack *s = arg;
	json_t *j = th_cluster_stack_api(s, "GET", "/v1/vms", NULL, NULL);
	bool ok = json_is_true(json_object_get(j, "ready"));

	json_decref(j);
	return ok;
}

int th_cluster_stack_start_groupd(struct th_cluster_stack *s, const char *cfg, double limit_s)
{
	const char *args[] = { s->groupd, "-c", cfg, "-v", NULL };
	int r;

	snprintf(s->glog, sizeof(s->glog), "%s/groupd-%u.log", s->dir, ++s->starts);
	if ((r = th_cluster_spawn(&s->gd, &s->u, args, s->glog)) < 0)
		return r;
	if (!th_wait_daemon(&s->gd, stack_ready, s, limit_s)) {
		th_print_log_tail(s->glog, "vmact-groupd", TH_CLUSTER_LOG_TAIL);
		return -ETIMEDOUT;
	}
	/* Logged before its loop runs, so before it answered. */
	s->metrics_port = th_log_port(s->glog, "metrics on");
	return 0;
}

json_t *th_cluster_stack_api(const struct th_cluster_stack *s, const char *method, const char *path,
			     const char *body, long *status)
{
	return th_cluster_api(s->sock, method, path, body, status);
}

json_t *th_cluster_stack_nodes(const struct th_cluster_stack *s, const char *group)
{
	char path[256];
	json_t *j, *n;

	snprintf(path, sizeof(path), "/v1/groups/%s/nodes", group);
	j = th_cluster_stack_api(s, "GET", path, NULL, NULL);
	n = json_incref(json_object_get(j, "nodes"));
	json_decref(j);
	return n ? n : json_array();
}

bool th_cluster_stack_node_error(void *want)
{
	const struct th_cluster_node_error *w = want;
	json_t *n = th_cluster_stack_nodes(w->s, w->group), *it;
	size_t i;
	bool ok = false;

	json_array_foreach(n, i, it) {
		const char *code = json_string_value(
			json_object_get(json_object_get(it, "error"), "code"));

		ok |= code && strcmp(code, w->code) == 0;
	}
	json_decref(n);
	return ok;
}

void th_cluster_stack_fail(const struct th_cluster_stack *s, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	th_print_log_tail(s->glog, "vmact-groupd", TH_CLUSTER_LOG_TAIL);
	th_print_log_tail(s->alog, "vmact-arbiter", TH_CLUSTER_ARBITER_TAIL);
	fail_msg("%s", msg);
	abort(); /* fail_msg does not return; the compiler is told so */
}

int th_cluster_stack_change(const struct th_cluster_stack *s, const char *group, const char *what,
			    const char *body)
{
	char path[256];
	long st;
	json_t *j;
	int t;

	snprintf(path, sizeof(path), "/v1/groups/%s/%s", group, what);
	j = th_cluster_stack_api(s, "POST", path, body, &st);
	if (st != 200 || !json_is_integer(json_object_get(j, "target"))) {
		char *text = j ? json_dumps(j, 0) : NULL;

		th_cluster_stack_fail(s, "%s %s: %ld %s", path, body ? body : "", st,
				      text ? text : "(no body)");
	}
	t = (int)json_integer_value(json_object_get(j, "target"));
	json_decref(j);
	return t;
}

void th_cluster_stack_delete_all(const struct th_cluster_stack *s, const char *group)
{
	json_t *n = th_cluster_stack_nodes(s, group), *it, *ids = json_array();
	size_t i;

	json_array_foreach(n, i, it)
		if (strcmp(json_string_value(json_object_get(it, "state")) ?: "", "deleting"))
			json_array_append(ids, json_object_get(it, "provider_id"));
	json_decref(n);
	if (json_array_size(ids)) {
		json_t *doc = json_pack("{s:O}", "provider_ids", ids);
		_cleanup_free_ char *body = doc ? json_dumps(doc, 0) : NULL;

		json_decref(doc);
		if (!body)
			th_cluster_stack_fail(s, "%s: out of memory", group);
		th_cluster_stack_change(s, group, "delete-nodes", body);
	}
	json_decref(ids);
}

void th_cluster_stack_stop(struct th_cluster_stack *s)
{
	th_proc_stop(&s->gd, SIGTERM, TH_CLUSTER_STOP_USEC);
	for (unsigned i = 1; getenv("VMACT_TEST_VERBOSE") && i <= s->starts; i++) {
		char log[160];

		snprintf(log, sizeof(log), "%s/groupd-%u.log", s->dir, i);
		th_print_log_tail(log, "vmact-groupd", TH_CLUSTER_VERBOSE_TAIL);
	}
}

void th_cluster_stack_teardown(struct th_cluster_stack *s)
{
	th_cluster_stack_stop(s);
	if (s->dir[0])
		th_rm_rf(s->dir);
}
