/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/cpenv.h"

#include <libvirt/virterror.h>

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/file.h"
#include "tests/lib/net.h"
#include "tests/lib/wait.h"

static void path_in(const struct th_cpenv *e, char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", e->dir, name);
}

static int sh(const char *script)
{
	const char *argv[] = { "sh", "-c", script, NULL };
	static const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_INHERIT };
	struct th_proc p = { 0 };

	return th_spawn(&p, argv, &o) < 0 ? -1 : th_proc_wait(&p);
}

/* groups with every @TEMPLATE@ replaced by tpl; malloc'd. */
static char *expand(const char *groups, const char *tpl)
{
	static const char mark[] = "@TEMPLATE@";
	size_t n = 0, len;
	const char *p;
	char *out, *o;

	for (p = groups; (p = strstr(p, mark)); p += sizeof(mark) - 1)
		n++;
	len = strlen(groups) + n * strlen(tpl) + 1;
	out = o = malloc(len);
	if (!out)
		return NULL;
	for (p = groups; *p;) {
		if (!strncmp(p, mark, sizeof(mark) - 1)) {
			o = stpcpy(o, tpl);
			p += sizeof(mark) - 1;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

static int write_config(struct th_cpenv *e, const char *groups)
{
	_cleanup_free_ char *gs = NULL, *cfg = NULL;
	char tpl[2048];
	FILE *f;
	int n;

	n = snprintf(
		tpl, sizeof(tpl),
		"{\"domain_type\": \"qemu\", \"vcpus\": 1, \"max_vcpus\": 2, \"memory\": \"256Mi\","
		" \"max_memory\": \"512Mi\", \"ephemeral_storage\": \"1Gi\","
		" \"kernel\": \"%s/vmlinuz\", \"initrd\": \"%s/initrd.img\","
		" \"cmdline\": \"console=ttyS0 loglevel=1 panic=-1 memhp_default_state=online_movable"
		" lpj=8000000 tsc=reliable\", \"base_volume\": \"node-base.qcow2\","
		" \"serial_log_dir\": \"%s/logs\","
		" \"reserve\": {\"cpu\": \"250m\", \"memory\": \"256Mi\"}}",
		e->guest, e->guest, e->dir);
	if (n < 0 || (size_t)n >= sizeof(tpl) ||
	    !(gs = expand(groups, e->template_json ? e->template_json : tpl)))
		return -1;
	if (asprintf(&cfg,
		     "{\"api\": {\"socket\": \"%s\"}, \"metrics\": {\"listen\": \"\"},"
		     " \"libvirt\": {\"name_prefix\": \"%s\"},"
		     " \"hosts\": [{\"name\": \"h1\", \"uri\": \"qemu:///system\","
		     " \"storage_pool\": \"%s\", \"arbiter\": {\"url\": \"http://127.0.0.1:%u\","
		     " \"secret_file\": \"%s\"}}], \"groups\": [%s]%s%s}",
		     e->api, e->prefix, e->pool, e->arbiter_port, e->key_groupd, gs,
		     e->top_extra[0] ? ", " : "", e->top_extra) < 0) {
		cfg = NULL;
		return -1;
	}
	f = fopen(e->config, "we");
	if (!f)
		return -1;
	fputs(cfg, f);
	return fclose(f) == 0 && chmod(e->config, 0644) == 0 ? 0 : -1;
}

static int start_groupd(struct th_cpenv *e, char *msg, size_t msglen)
{
	char prog[PATH_MAX], reuid[32], regid[32], *log = e->groupd_log;
	char state[96], state_env[128];
	const char *argv[] = {
		"setpriv", reuid, regid, "--init-groups", prog, "-c", e->config, NULL
	};
	const char *env[] = { state_env, NULL };
	struct th_spawn_opts o = {
		.out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log, .env = env
	};

	/* Its state directory, as systemd's StateDirectory= gives it (the
	 * node shapes it learns: doc/cluster.md, "The template node"). */
	path_in(e, state, sizeof(state), "state");
	if ((mkdir(state, 0700) < 0 && errno != EEXIST) || chown(state, e->uid, e->gid) < 0) {
		snprintf(msg, msglen, "%s: %s", state, strerror(errno));
		return -1;
	}
	snprintf(state_env, sizeof(state_env), "STATE_DIRECTORY=%s", state);

	/* A log per start: a restart's "ready:" is its own. */
	if (e->groupd_starts++) {
		char name[32];

		snprintf(name, sizeof(name), "groupd-%u.log", e->groupd_starts);
		path_in(e, log, sizeof(e->groupd_log), name);
	} else {
		path_in(e, log, sizeof(e->groupd_log), "groupd.log");
	}
	snprintf(reuid, sizeof(reuid), "--reuid=%u", e->uid);
	snprintf(regid, sizeof(regid), "--regid=%u", e->gid);
	if (th_cp_prog("vmact-groupd", prog, sizeof(prog)) < 0 ||
	    th_spawn(&e->groupd, argv, &o) < 0) {
		snprintf(msg, msglen, "cannot start vmact-groupd");
		return -1;
	}
	if (!TH_WAIT(NULL, th_count_in_file(log, "ready:") > 0 || th_proc_exited(&e->groupd),
		     TH_SAFETY_USEC) ||
	    th_proc_exited(&e->groupd)) {
		th_print_log_tail(log, "vmact-groupd", 40);
		snprintf(msg, msglen, "vmact-groupd did not become ready");
		return -1;
	}
	return 0;
}

int th_cpenv_restart_cp(struct th_cpenv *e)
{
	const char *args[] = { "--groupd-socket", e->api, NULL };
	char msg[256];

	if (th_cp_start(&e->cp, e->dir, TH_CPENV_USER, args, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s\n", msg);
		return -1;
	}
	return 0;
}

static int start_arbiter(struct th_cpenv *e, char *msg, size_t msglen)
{
	char prog[PATH_MAX], listen[64], log[160];
	const char *argv[] = {
		prog,    "--listen",     listen,     "--lease-key",     e->key_arbiter,
		"--cpu", e->arbiter_cpu, "--memory", e->arbiter_memory, NULL
	};
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log };

	/* A restart keeps its port: groupd's configuration names it. */
	if (!e->arbiter_port)
		e->arbiter_port = th_dead_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", e->arbiter_port);
	path_in(e, log, sizeof(log), "arbiter.log");
	if (th_cp_prog("vmact-arbiter", prog, sizeof(prog)) < 0 ||
	    th_spawn(&e->arbiter, argv, &o) < 0 ||
	    !TH_WAIT(NULL, th_count_in_file(log, "listening") > 0 || th_proc_exited(&e->arbiter),
		     TH_SAFETY_USEC) ||
	    th_proc_exited(&e->arbiter)) {
		th_print_log_tail(log, "vmact-arbiter", 20);
		snprintf(msg, msglen, "vmact-arbiter did not start");
		return -1;
	}
	return 0;
}

int th_cpenv_restart_groupd(struct th_cpenv *e, char *msg, size_t msglen)
{
	return start_groupd(e, msg, msglen);
}

int th_cpenv_restart_arbiter(struct th_cpenv *e, char *msg, size_t msglen)
{
	return start_arbiter(e, msg, msglen);
}

int th_cpenv_start(struct th_cpenv *e, const char *groups, char *msg, size_t msglen)
{
	return th_cpenv_start_opts(e, groups, NULL, msg, msglen);
}

int th_cpenv_start_opts(struct th_cpenv *e, const char *groups, const struct th_cpenv_opts *opts,
			char *msg, size_t msglen)
{
	const char *guest = getenv("VMACT_GUEST_DIR");
	struct passwd *pw = getpwnam(TH_CPENV_USER);
	char cmd[2048], base_cmd[600];
	int r;

	memset(e, 0, sizeof(*e));
	snprintf(e->arbiter_cpu, sizeof(e->arbiter_cpu), "%s",
		 opts && opts->arbiter_cpu ? opts->arbiter_cpu : "16");
	snprintf(e->prefix, sizeof(e->prefix), "%s",
		 opts && opts->prefix ? opts->prefix : TH_CPENV_PREFIX);
	snprintf(e->arbiter_memory, sizeof(e->arbiter_memory), "%s",
		 opts && opts->arbiter_memory ? opts->arbiter_memory : "32Gi");
	if (opts && opts->top_extra &&
	    snprintf(e->top_extra, sizeof(e->top_extra), "%s", opts->top_extra) >=
		    (int)sizeof(e->top_extra)) {
		snprintf(msg, msglen, "top_extra too long");
		return -1;
	}
	if (opts && opts->template_json && !(e->template_json = strdup(opts->template_json))) {
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	if (opts && opts->base_image)
		snprintf(e->base_image, sizeof(e->base_image), "%s", opts->base_image);
	if (!pw || !guest) {
		snprintf(msg, msglen,
			 "needs user " TH_CPENV_USER
			 " (tests/host/setup-host.sh) and VMACT_GUEST_DIR (make guest)");
		return -1;
	}
	e->uid = pw->pw_uid;
	e->gid = pw->pw_gid;
	snprintf(e->guest, sizeof(e->guest), "%s", guest);
	r = th_scratch_dir("vmact-cpi", e->dir, sizeof(e->dir));
	if (r < 0) {
		snprintf(msg, msglen, "cannot make a directory under /tmp: %s", strerror(-r));
		return -1;
	}
	snprintf(e->pool, sizeof(e->pool), "vmact-cpi-%d", (int)getpid());
	/* Another image is not copied (a node image is large): the pool's
	 * base is an overlay of it. */
	if (e->base_image[0])
		snprintf(base_cmd, sizeof(base_cmd),
			 "qemu-img create -q -f qcow2 -F qcow2 -b %s pool/node-base.qcow2",
			 e->base_image);
	else
		snprintf(base_cmd, sizeof(base_cmd), "cp %s/node-base.qcow2 pool/", e->guest);
	path_in(e, e->api, sizeof(e->api), "api/groupd.sock");
	path_in(e, e->key_arbiter, sizeof(e->key_arbiter), "arbiter.key");
	path_in(e, e->key_groupd, sizeof(e->key_groupd), "groupd.key");
	path_in(e, e->config, sizeof(e->config), "groupd.json");
	/* the overlays' pool with the base image, groupd's socket directory,
	 * the serial logs, one lease key each (0600: groupd and the arbiter
	 * refuse a key others may read) */
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir pool logs api; chmod 0755 pool; chmod 0777 logs;"
		 " chown " TH_CPENV_USER ": api; %s;"
		 " head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > arbiter.key;"
		 " chmod 0600 arbiter.key; cp arbiter.key groupd.key;"
		 " chown " TH_CPENV_USER ": groupd.key;"
		 " virsh -q -c qemu:///system pool-create-as %s dir --target %s/pool >/dev/null",
		 e->dir, base_cmd, e->pool, e->dir);
	if (sh(cmd) != 0) {
		snprintf(msg, msglen, "cannot prepare %s and the storage pool %s", e->dir, e->pool);
		return -1;
	}
	if (start_arbiter(e, msg, msglen) < 0)
		return -1;
	if (write_config(e, groups) < 0) {
		snprintf(msg, msglen, "cannot write %s", e->config);
		return -1;
	}
	if (start_groupd(e, msg, msglen) < 0)
		return -1;
	if (th_cpenv_restart_cp(e) < 0) {
		snprintf(msg, msglen, "vmact-cloudprovider did not start");
		return -1;
	}
	e->vc = virConnectOpen("qemu:///system");
	if (!e->vc) {
		snprintf(msg, msglen, "cannot connect to qemu:///system");
		return -1;
	}
	return 0;
}

int th_cpenv_domains(struct th_cpenv *e, char ***names)
{
	virDomainPtr *doms = NULL;
	int n = virConnectListAllDomains(e->vc, &doms, 0), k = 0;

	*names = calloc(n > 0 ? (size_t)n + 1 : 1, sizeof(char *));
	for (int i = 0; i < n; i++) {
		const char *name = virDomainGetName(doms[i]);

		if (*names && name && !strncmp(name, e->prefix, strlen(e->prefix)))
			(*names)[k++] = strdup(name);
		virDomainFree(doms[i]);
	}
	free(doms);
	return k;
}

void th_cpenv_free_names(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

virDomainPtr th_cpenv_domain(struct th_cpenv *e, const char *provider_id)
{
	const char *uuid = strrchr(provider_id, '/');

	return uuid ? virDomainLookupByUUIDString(e->vc, uuid + 1) : NULL;
}

int th_cpenv_volumes(struct th_cpenv *e)
{
	virStoragePoolPtr p = virStoragePoolLookupByName(e->vc, e->pool);
	int n;

	if (!p)
		return -1;
	virStoragePoolRefresh(p, 0);
	n = virStoragePoolNumOfVolumes(p);
	virStoragePoolFree(p);
	return n;
}

/* standby VMs may be shut off already: destroying them fails, expectedly */
static void quiet(void *ud, virErrorPtr err)
{
}

int th_cpenv_stop(struct th_cpenv *e, const char *const *groups)
{
	char cmd[512], log[160];
	char **names = NULL;
	int left = 0;

	for (; e->cp.proc.spawned && groups && *groups; groups++) {
		const char *args[] = { "--group", *groups, "--wait-s", "120", NULL };

		path_in(e, log, sizeof(log), "client-drain.log");
		th_cp_client(e->cp.port, "drain", args, log);
	}
	if (e->cp.proc.spawned && th_cp_stop(&e->cp) != 0)
		th_cp_print_log(&e->cp);
	th_proc_stop(&e->groupd, SIGTERM, 20 * VMACT_USEC_PER_SEC);
	th_proc_stop(&e->arbiter, SIGTERM, 5 * VMACT_USEC_PER_SEC);
	if (e->vc) {
		virSetErrorFunc(NULL, quiet);
		left = th_cpenv_domains(e, &names);
		for (int i = 0; i < left; i++) {
			virDomainPtr d = virDomainLookupByName(e->vc, names[i]);

			if (!d)
				continue;
			virDomainDestroy(d);
			virDomainUndefineFlags(d, VIR_DOMAIN_UNDEFINE_MANAGED_SAVE |
							  VIR_DOMAIN_UNDEFINE_NVRAM);
			virDomainFree(d);
		}
		th_cpenv_free_names(names);
		virConnectClose(e->vc);
		e->vc = NULL;
	}
	if (e->pool[0]) {
		snprintf(cmd, sizeof(cmd),
			 "virsh -q -c qemu:///system pool-destroy %s >/dev/null 2>&1", e->pool);
		sh(cmd);
	}
	if (e->dir[0])
		th_rm_rf(e->dir);
	free(e->template_json);
	e->template_json = NULL;
	return left;
}
