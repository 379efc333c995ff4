/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-cloudprovider: cluster-autoscaler's externalgrpc cloud provider
 * over vmact-groupd's node groups (doc/cloudprovider.md). Unprivileged,
 * stateless but for the cache between Refresh calls: every answer comes
 * from vmact-groupd's API. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <grpc/grpc.h>
#include <grpc/support/log.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "base/endpoint.h"
#include "base/log.h"
#include "base/macro.h"
#include "base/time.h"
#include "cloudprovider/cache.h"
#include "cloudprovider/gate.h"
#include "cloudprovider/groupd.h"
#include "cloudprovider/rpc.h"
#include "cloudprovider/server.h"
#include "cloudprovider/status.h"
#include "cloudprovider/tls.h"
#include "shared/startup.h"

static const char usage[] =
	"Usage: vmact-cloudprovider [OPTIONS]\n"
	"cluster-autoscaler's externalgrpc cloud provider (--cloud-provider=externalgrpc)\n"
	"for the node groups of vmact-groupd.\n"
	"\n"
	"  --listen ADDR:PORT        where to serve gRPC (default 127.0.0.1:8086; [::1]:P,\n"
	"                            unix:PATH); plaintext only on loopback or a unix socket\n"
	"  --key FILE                this server's TLS key          } mTLS: all three, as\n"
	"  --cert FILE               this server's TLS certificate  } the autoscaler's\n"
	"  --cacert FILE             CA of the clients' certificates} cloud-config names them\n"
	"  --groupd-socket PATH      vmact-groupd's API (default /run/vmact-groupd/api.sock)\n"
	"  --max-connections N       connections at once (default 64)\n"
	"  --max-connections-per-client N  per source address (default max-connections/4)\n"
	"  --max-message-size BYTES  largest request (default 1048576)\n"
	"  --request-timeout SECONDS a request (handshake, message) must arrive within (10)\n"
	"  --idle-timeout SECONDS    close connections idle this long (default 300)\n"
	"  --call-timeout SECONDS    most a call may take when its client sets no shorter\n"
	"                            deadline (default 10)\n"
	"  --workers N               calls handled at once (default 4)\n"
	"  --runtime-dir DIR         private directory for gRPC's socket (default\n"
	"                            $RUNTIME_DIRECTORY, else a new one under /tmp)\n"
	"  -v, --verbose             log every call, not only those that change a group\n"
	"  -h, --help                this text\n"
	"  --version                 print the version\n";

enum {
	OPT_LISTEN = 256,
	OPT_KEY,
	OPT_CERT,
	OPT_CACERT,
	OPT_GROUPD,
	OPT_MAXCONN,
	OPT_PERCLIENT,
	OPT_MAXMSG,
	OPT_RTO,
	OPT_IDLE,
	OPT_CALLTO,
	OPT_WORKERS,
	OPT_RUNDIR,
};

static const struct option options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "cert", required_argument, NULL, OPT_CERT },
	{ "cacert", required_argument, NULL, OPT_CACERT },
	{ "groupd-socket", required_argument, NULL, OPT_GROUPD },
	{ "max-connections", required_argument, NULL, OPT_MAXCONN },
	{ "max-connections-per-client", required_argument, NULL, OPT_PERCLIENT },
	{ "max-message-size", required_argument, NULL, OPT_MAXMSG },
	{ "request-timeout", required_argument, NULL, OPT_RTO },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE },
	{ "call-timeout", required_argument, NULL, OPT_CALLTO },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "runtime-dir", required_argument, NULL, OPT_RUNDIR },
	{ "verbose", no_argument, NULL, 'v' },
	VMACT_STARTUP_OPTIONS_END,
};

struct opts {
	const char *listen, *key, *cert, *cacert, *groupd, *rundir;
	unsigned long max_conn, per_client, max_msg, workers;
	double rto, idle, callto;
	bool verbose;
};

struct app {
	struct opts o;
	struct cp_gate *gate;
	struct cp_server *server;
	struct cp_cache *cache;
	struct cp_tls *tls;
	char rundir[PATH_MAX];
	bool own_rundir;
	char backend[PATH_MAX];
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "vmact-cloudprovider: --%s %s: %s\n", opt, val, why);
	return 2;
}

static int parse_ulong(const char *opt, const char *s, unsigned long lo, unsigned long hi,
		       unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || *out < lo || *out > hi) {
		char why[64];

		snprintf(why, sizeof(why), "not a whole number in [%lu, %lu]", lo, hi);
		return bad(opt, s, why);
	}
	return 0;
}

static int parse_seconds(const char *opt, const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !(*out >= 0.01 && *out <= 86400))
		return bad(opt, s, "not a number of seconds in [0.01, 86400]");
	return 0;
}

static int on_option(void *ud, int c, char *arg)
{
	struct opts *o = ud;

	switch (c) {
	case OPT_LISTEN:
		o->listen = arg;
		return 0;
	case OPT_KEY:
		o->key = arg;
		return 0;
	case OPT_CERT:
		o->cert = arg;
		return 0;
	case OPT_CACERT:
		o->cacert = arg;
		return 0;
	case OPT_GROUPD:
		o->groupd = arg;
		return 0;
	case OPT_RUNDIR:
		o->rundir = arg;
		return 0;
	case OPT_MAXCONN:
		return parse_ulong("max-connections", arg, 1, 4096, &o->max_conn);
	case OPT_PERCLIENT:
		return parse_ulong("max-connections-per-client", arg, 1, 4096, &o->per_client);
	case OPT_MAXMSG:
		return parse_ulong("max-message-size", arg, 1024, 64u << 20, &o->max_msg);
	case OPT_WORKERS:
		return parse_ulong("workers", arg, 1, 64, &o->workers);
	case OPT_RTO:
		return parse_seconds("request-timeout", arg, &o->rto);
	case OPT_IDLE:
		return parse_seconds("idle-timeout", arg, &o->idle);
	case OPT_CALLTO:
		return parse_seconds("call-timeout", arg, &o->callto);
	case 'v':
		o->verbose = true;
		return 0;
	}
	return 2;
}

/* VMACT_STARTUP_RUN to go on, else the status main() exits with. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	int r;

	*o = (struct opts){
		.listen = "127.0.0.1:8086",
		.groupd = "/run/vmact-groupd/api.sock",
		.max_conn = 64,
		.max_msg = 1u << 20,
		.workers = 4,
		.rto = 10,
		.idle = 300,
		.callto = 10,
	};
	r = vmact_startup_parse(argc, argv, "vmact-cloudprovider", usage, "vh", options, on_option,
				o);
	if (r != VMACT_STARTUP_RUN)
		return r;
	if ((o->key || o->cert || o->cacert) && !(o->key && o->cert && o->cacert)) {
		fprintf(stderr,
			"vmact-cloudprovider: mTLS needs --key, --cert and --cacert, all three\n");
		return 2;
	}
	return VMACT_STARTUP_RUN;
}

/* Plaintext is for a cluster-autoscaler on this host (and tests): nobody
 * else can reach a loopback address or a unix socket. */
static bool loopback(const struct vmact_listen *l)
{
	if (l->family == AF_UNIX)
		return true;
	if (l->family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)&l->addr)->sin_addr.s_addr) >> 24) ==
		       127;
	if (l->family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)&l->addr)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

static void grpc_log(gpr_log_func_args *a)
{
	log_warning("gRPC: %s (%s:%d)", a->message, a->file, a->line);
}

static void on_served(void *ud, const char *peer)
{
	struct app *app = ud;

	cp_gate_mark_served(app->gate, peer);
}

static void on_call(void *ud, const struct cp_server_call *c)
{
	struct app *app = ud;
	char client[128];
	int prio;

	if (c->code == GRPC_STATUS_OK)
		prio = c->changes ? LOG_INFO : LOG_DEBUG;
	else if (c->code == GRPC_STATUS_INTERNAL || c->code == GRPC_STATUS_UNAVAILABLE ||
		 c->code == GRPC_STATUS_DEADLINE_EXCEEDED)
		prio = LOG_WARNING;
	else
		prio = c->changes ? LOG_NOTICE : LOG_INFO;
	if (prio == LOG_DEBUG && app->o.verbose)
		prio = LOG_INFO;
	cp_gate_client(app->gate, c->peer, client, sizeof(client));
	vmact_log(prio, "%s from %s: %s%s%s (%.1f ms)", c->method, client, cp_status_name(c->code),
		  c->code ? ": " : "", c->code ? c->message : "", (double)c->usec / 1000.0);
}

static int make_rundir(struct app *app, struct vmact_err *err)
{
	const char *dir = app->o.rundir ? app->o.rundir : getenv("RUNTIME_DIRECTORY");

	if (dir) {
		/* systemd may list several, separated by ':' */
		snprintf(app->rundir, sizeof(app->rundir), "%.*s", (int)strcspn(dir, ":"), dir);
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(app->rundir, sizeof(app->rundir), "%s/vmact-cloudprovider.XXXXXX",
			 tmp && tmp[0] ? tmp : "/tmp");
		/* mkdtemp: a directory only this user can enter */
		if (!mkdtemp(app->rundir))
			return vmact_err_set(err, errno, "cannot create a directory under %s: %m",
					     tmp && tmp[0] ? tmp : "/tmp");
		app->own_rundir = true;
	}
	if (snprintf(app->backend, sizeof(app->backend), "%s/grpc.sock", app->rundir) >= 100)
		return vmact_err_set(err, ENAMETOOLONG, "runtime directory %s: path too long",
				     app->rundir);
	unlink(app->backend);
	return 0;
}

static void app_stop(struct app *app)
{
	struct cp_gate_stats st;

	if (app->gate) {
		cp_gate_stats(app->gate, &st);
		log_info("stopping: %lu connections evicted and %lu refused at the limits since "
			 "the start",
			 st.evicted, st.refused);
	}
	/* the gate's sockets first: no new bytes reach gRPC while it shuts
	 * down; the gate itself last, as calls still finishing on the
	 * server's workers report through it (on_call, on_served) */
	cp_gate_close(app->gate);
	cp_server_stop(app->server);
	cp_gate_free(app->gate);
	cp_cache_free(app->cache);
	cp_tls_free(app->tls);
	if (app->backend[0])
		unlink(app->backend);
	if (app->own_rundir)
		rmdir(app->rundir);
}

static int app_start(struct app *app, sd_event *ev, struct vmact_err *err)
{
	struct vmact_listen l;
	char addr[PATH_MAX + 8];
	int r;

	r = vmact_listen_parse(app->o.listen, true, &l, err);
	if (r < 0)
		return vmact_err_prefix(err, "--listen");
	if (!app->o.key && !loopback(&l))
		return vmact_err_set(err, EPERM,
				     "--listen %s: plaintext only on a loopback address or a unix "
				     "socket; elsewhere give --key, --cert and --cacert (mTLS)",
				     app->o.listen);
	if (app->o.key) {
		r = cp_tls_new(app->o.key, app->o.cert, app->o.cacert, &app->tls, err);
		if (r < 0)
			return r;
	}
	r = cp_groupd_global_init(err);
	if (r >= 0)
		r = cp_cache_new(app->o.groupd, &app->cache, err);
	if (r >= 0)
		r = make_rundir(app, err);
	if (r < 0)
		return r;
	snprintf(addr, sizeof(addr), "unix:%s", app->backend);
	r = cp_server_start(
		&(struct cp_server_config){
			.address = addr,
			.tls = app->tls,
			.cache = app->cache,
			.groupd = app->o.groupd,
			.max_message = app->o.max_msg,
			.max_calls = (unsigned)app->o.max_conn * 8,
			.workers = (unsigned)app->o.workers,
			.request_timeout_usec = (uint64_t)(app->o.rto * VMACT_USEC_PER_SEC),
			.idle_timeout_usec = (uint64_t)(app->o.idle * VMACT_USEC_PER_SEC),
			.call_timeout_usec = (uint64_t)(app->o.callto * VMACT_USEC_PER_SEC),
			.on_served = on_served,
			.on_call = on_call,
			.ud = app,
		},
		&app->server, err);
	if (r < 0)
		return r;
	return cp_gate_new(ev,
			   &(struct cp_gate_config){
				   .listen = app->o.listen,
				   .backend = app->backend,
				   .conn_limit = (unsigned)app->o.max_conn,
				   .per_client_limit = (unsigned)app->o.per_client,
			   },
			   &app->gate, err);
}

/* Three descriptors a connection (the client's, the gate's to gRPC and
 * gRPC's own end), with room for gRPC's internals. */
static void raise_nofile(unsigned long conns)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)(3 * conns + 256);

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
		rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct vmact_err err = { 0 };
	struct app app = { 0 };
	struct vmact_listen l;
	sd_event *ev = NULL;
	int r;

	r = parse_args(argc, argv, &app.o);
	if (r != VMACT_STARTUP_RUN)
		return r;
	vmact_log_init("vmact-cloudprovider", app.o.verbose ? LOG_DEBUG : LOG_INFO);
	/* It creates and deletes VMs for whoever holds a client certificate:
	 * never with root's rights (doc/cloudprovider.md, "Running it"). */
	if (vmact_startup_refuse_root("run it as vmact-groupd's user "
				      "(vmact-cloudprovider.service does)",
				      &err) < 0) {
		log_error("%s", err.msg);
		return 1;
	}
	/* before gRPC starts its threads, so that only the loop's signalfd
	 * ever sees the signals */
	r = vmact_startup_loop(&ev, NULL, NULL, NULL, NULL, &err);
	if (r < 0) {
		log_error("%s", err.msg);
		sd_event_unref(ev);
		return 1;
	}
	raise_nofile(app.o.max_conn);
	gpr_set_log_function(grpc_log);
	gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
	grpc_init();
	r = app_start(&app, ev, &err);
	if (r < 0) {
		log_error("%s", err.msg);
		goto out;
	}
	vmact_listen_parse(app.o.listen, true, &l, NULL);
	if (l.family == AF_UNIX)
		log_notice("serving %s on unix:%s for vmact-groupd at %s",
			   app.tls ? "mTLS" : "plaintext", l.path, app.o.groupd);
	else
		log_notice("serving %s on %s%s%s:%u for vmact-groupd at %s",
			   app.tls ? "mTLS" : "plaintext", l.family == AF_INET6 ? "[" : "", l.host,
			   l.family == AF_INET6 ? "]" : "", cp_gate_port(app.gate), app.o.groupd);
	sd_notify(0, "READY=1");
	r = sd_event_loop(ev);
out:
	app_stop(&app);
	sd_event_unref(ev);
	grpc_shutdown();
	return r < 0 ? 1 : 0;
}
