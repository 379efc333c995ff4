/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/lib/cloudprov.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "tests/lib/file.h"
#include "tests/lib/peer.h"
#include "tests/lib/wait.h"

/* ASan's start and gRPC's are a second or two; this bounds a broken build. */
#define START_USEC (60ULL * VMACT_USEC_PER_SEC)
#define STOP_USEC  (20ULL * VMACT_USEC_PER_SEC)

int th_cp_user(const char *as, unsigned *uid, unsigned *gid)
{
	struct passwd *pw = getpwnam(as ? as : "nobody");

	if (!pw)
		return -ENOENT;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

int th_cp_prog(const char *prog, char *out, size_t len)
{
	const char *dir = getenv("VMACT_CP_BUILD");
	int w;

	if (!dir || !dir[0])
		return th_build_prog(prog, out, len);
	w = snprintf(out, len, "%s/%s", dir, prog);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* The "serving ... on 127.0.0.1:PORT" line. */
static bool serving(struct th_cp *cp)
{
	_cleanup_free_ char *log = th_read_file(cp->log);
	const char *s = log ? strstr(log, "serving ") : NULL;
	const char *on = s ? strstr(s, " on ") : NULL;
	const char *eol = on ? strchr(on + 4, '\n') : NULL;

	if (!eol)
		return false;
	/* the first ':' before a digit is the port's */
	for (const char *p = on; p < eol && !cp->port; p++)
		if (*p == ':' && p[1] >= '0' && p[1] <= '9')
			cp->port = (unsigned)atoi(p + 1);
	return true;
}

int th_cp_start(struct th_cp *cp, const char *dir, const char *as, const char *const *args,
		char *msg, size_t msglen)
{
	return th_cp_start_wrapped(cp, dir, as, NULL, args, msg, msglen);
}

int th_cp_start_wrapped(struct th_cp *cp, const char *dir, const char *as, const char *const *wrap,
			const char *const *args, char *msg, size_t msglen)
{
	char prog[PATH_MAX], reuid[32], regid[32];
	const char *argv[48];
	struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE };
	bool listen = false;
	unsigned uid, gid;
	size_t n = 0;
	int r;

	memset(cp, 0, sizeof(*cp));
	snprintf(cp->log, sizeof(cp->log), "%s/cloudprovider.log", dir);
	o.out_path = cp->log;
	r = th_cp_prog("vmact-cloudprovider", prog, sizeof(prog));
	if (r < 0) {
		snprintf(msg, msglen, "no vmact-cloudprovider next to this test");
		return r;
	}
	if (geteuid() == 0 || as) {
		if (th_cp_user(as, &uid, &gid) < 0) {
			snprintf(msg, msglen, "no user %s", as ? as : "nobody");
			return -ENOENT;
		}
		snprintf(reuid, sizeof(reuid), "--reuid=%u", uid);
		snprintf(regid, sizeof(regid), "--regid=%u", gid);
		argv[n++] = "setpriv";
		argv[n++] = reuid;
		argv[n++] = regid;
		argv[n++] = "--clear-groups";
	}
	for (; wrap && *wrap && n < ARRAY_SIZE(argv) - 8; wrap++)
		argv[n++] = *wrap;
	argv[n++] = prog;
	for (; args && *args && n < ARRAY_SIZE(argv) - 3; args++) {
		listen |= !strcmp(*args, "--listen");
		argv[n++] = *args;
	}
	if (!listen) {
		argv[n++] = "--listen";
		argv[n++] = "127.0.0.1:0";
	}
	argv[n] = NULL;
	r = th_spawn(&cp->proc, argv, &o);
	if (r < 0) {
		snprintf(msg, msglen, "cannot start %s: %s", prog, strerror(-r));
		return r;
	}
	if (!TH_WAIT(NULL, serving(cp) || th_proc_exited(&cp->proc), START_USEC) || !cp->proc.pid) {
		snprintf(msg, msglen, "vmact-cloudprovider did not start serving");
		th_cp_print_log(cp);
		th_proc_stop(&cp->proc, SIGKILL, 0);
		return -EIO;
	}
	return 0;
}

int th_cp_stop(struct th_cp *cp)
{
	return th_proc_stop(&cp->proc, SIGTERM, STOP_USEC);
}

void th_cp_print_log(const struct th_cp *cp)
{
	th_print_log_tail(cp->log, "vmact-cloudprovider", 40);
}

static int client_spawn(struct th_proc *p, unsigned port, const char *scenario,
			const char *const *args, const char *log_path, bool pipe_in)
{
	char address[32];
	const char *argv[40] = { "--address", address };
	struct th_spawn_opts o = {
		.stdin_pipe = pipe_in, .out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = log_path
	};
	size_t n = 2;

	snprintf(address, sizeof(address), "127.0.0.1:%u", port);
	for (; args && *args && n < ARRAY_SIZE(argv) - 2; args++)
		argv[n++] = *args;
	argv[n++] = scenario;
	argv[n] = NULL;
	return th_peer_spawn(p, "ca-client.js", argv, &o);
}

int th_cp_client(unsigned port, const char *scenario, const char *const *args, const char *log_path)
{
	struct th_proc p = { 0 };
	int r = client_spawn(&p, port, scenario, args, log_path, false);

	if (r < 0)
		return r;
	r = th_proc_wait(&p);
	if (r != 0)
		th_print_log_tail(log_path, scenario, 80);
	return r;
}

int th_cp_client_start(struct th_proc *p, unsigned port, const char *scenario,
		       const char *const *args, const char *log_path)
{
	return client_spawn(p, port, scenario, args, log_path, true);
}

/* A CA, the server's certificate (for 127.0.0.1 and localhost), a client's
 * signed by the CA, and a client's signed by another CA. */
static const char make_certs[] =
	"ec='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes';"
	"openssl req -x509 $ec -keyout ca.key -out ca.crt -days 2 -subj /CN=vmact-test-ca;"
	"openssl req -x509 $ec -keyout other-ca.key -out other-ca.crt -days 2 -subj /CN=other-ca;"
	"printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > server.ext;"
	"printf 'extendedKeyUsage=clientAuth\\n' > client.ext;"
	"openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost;"
	"openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2"
	" -extfile server.ext -out server.crt;"
	"openssl req $ec -keyout client.key -out client.csr -subj /CN=cluster-autoscaler;"
	"openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2"
	" -extfile client.ext -out client.crt;"
	"openssl req $ec -keyout rogue.key -out rogue.csr -subj /CN=cluster-autoscaler;"
	"openssl x509 -req -in rogue.csr -CA other-ca.crt -CAkey other-ca.key -CAcreateserial"
	" -days 2 -extfile client.ext -out rogue.crt;"
	"chmod 0644 *.key";

int th_cp_make_certs(const char *dir)
{
	char cmd[4096];
	const char *argv[] = { "sh", "-c", cmd, NULL };
	static const struct th_spawn_opts o = { .out = TH_OUT_NULL, .err = TH_OUT_NULL };
	struct th_proc p = { 0 };

	snprintf(cmd, sizeof(cmd), "set -e; cd '%s'; %s", dir, make_certs);
	if (th_spawn(&p, argv, &o) < 0)
		return -1;
	return th_proc_wait(&p) == 0 ? 0 : -1;
}

json_t *th_cp_event(const char *log_path, const char *event)
{
	_cleanup_free_ char *text = th_read_file(log_path);
	char needle[64];
	const char *line = NULL;

	snprintf(needle, sizeof(needle), "{\"event\":\"%s\"", event);
	for (char *p = text; p && (p = strstr(p, needle)); p++)
		line = p;
	return line ? json_loadb(line, strcspn(line, "\n"), 0, NULL) : NULL;
}
