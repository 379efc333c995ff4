/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/macro.h"
#include "tests/lib/file.h"
#include "tests/lib/peer.h"
#include "tests/lib/wait.h"

/* A peer starts in well under a second; this bounds a broken install. */
#define PEER_START_USEC (60ULL * VMACT_USEC_PER_SEC)
#define PEER_STOP_USEC  (5ULL * VMACT_USEC_PER_SEC)

int th_peer_spawn(struct th_proc *p, const char *script, const char *const *args,
		  const struct th_spawn_opts *o)
{
	const char *top = getenv("VMACT_TOP"), *np = getenv("VMACT_NODE_PATH");
	char path[PATH_MAX], node_path[PATH_MAX + 32], cwd[PATH_MAX / 2];
	const char *argv[40] = { "node", path };
	const char *env[] = { node_path, NULL };
	struct th_spawn_opts opts = o ? *o : (struct th_spawn_opts){ 0 };
	size_t n = 2;

	snprintf(path, sizeof(path), "%s/tests/peers/%s", top && top[0] ? top : ".", script);
	if (access(path, R_OK) != 0)
		return -ENOENT;
	if (np && np[0])
		snprintf(node_path, sizeof(node_path), "NODE_PATH=%s", np);
	else
		snprintf(node_path, sizeof(node_path), "NODE_PATH=%s/build/npm/node_modules",
			 getcwd(cwd, sizeof(cwd)) ? cwd : ".");
	for (; args && *args && n < ARRAY_SIZE(argv) - 1; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	opts.env = env;
	return th_spawn(p, argv, &opts);
}

/* Takes the address from a {"event":"listening",...} line; false for any
 * other line. */
static bool parse_listening(struct th_peer *p, const char *line)
{
	json_t *j = json_loads(line, 0, NULL);
	const char *ev = json_string_value(json_object_get(j, "event"));
	bool ok = ev && !strcmp(ev, "listening");

	if (ok) {
		p->port = (unsigned)json_integer_value(json_object_get(j, "port"));
		snprintf(p->path, sizeof(p->path), "%s",
			 json_string_value(json_object_get(j, "path")) ?: "");
		ok = p->port > 0 || p->path[0];
	}
	json_decref(j);
	return ok;
}

/* Reads stdout a byte at a time up to the listening line, so the events
 * after it stay in the pipe for the test. */
static bool listening_from_pipe(struct th_peer *p)
{
	uint64_t end = vmact_now_usec() + PEER_START_USEC;
	char line[512];
	size_t len = 0;

	while (vmact_now_usec() < end) {
		struct pollfd pfd = { .fd = p->proc.out_fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = read(p->proc.out_fd, line + len, 1);
		if (r <= 0)
			return false;
		if (line[len] != '\n' && len + 1 < sizeof(line)) {
			len++;
			continue;
		}
		line[len] = '\0';
		if (parse_listening(p, line))
			return true;
		len = 0;
	}
	return false;
}

static bool listening_in_file(struct th_peer *p, const char *log_path)
{
	_cleanup_free_ char *buf = th_read_file(log_path);

	for (char *l = buf, *nl; l && *l; l = nl + 1) {
		nl = strchr(l, '\n');
		if (!nl)
			break; /* half written */
		*nl = '\0';
		if (parse_listening(p, l))
			return true;
	}
	return false;
}

int th_peer_start(struct th_peer *p, const char *script, const char *const *args,
		  const char *log_path, char *msg, size_t msglen)
{
	struct th_spawn_opts o = { .stdin_pipe = true, .out = TH_OUT_PIPE };
	bool up;
	int r;

	memset(p, 0, sizeof(*p));
	if (log_path)
		o = (struct th_spawn_opts){ .stdin_pipe = true,
					    .out = TH_OUT_FILE,
					    .err = TH_OUT_FILE,
					    .out_path = log_path };
	r = th_peer_spawn(&p->proc, script, args, &o);
	if (r < 0) {
		snprintf(msg, msglen, "cannot start tests/peers/%s: %s", script, strerror(-r));
		return r;
	}
	if (log_path)
		up = TH_WAIT(NULL, listening_in_file(p, log_path) || th_proc_exited(&p->proc),
			     PEER_START_USEC) &&
		     (p->port || p->path[0]);
	else
		up = listening_from_pipe(p);
	if (!up) {
		snprintf(msg, msglen,
			 "tests/peers/%s did not start listening (is node installed, and "
			 "build/npm/node_modules/ws? run tests/host/setup-host.sh)",
			 script);
		th_peer_stop(p);
		return -EIO;
	}
	if (p->proc.out_fd >= 0)
		fcntl(p->proc.out_fd, F_SETFL, fcntl(p->proc.out_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

int th_peer_stop(struct th_peer *p)
{
	/* Every peer ends at stdin EOF; SIGTERM only if it does not. */
	if (!p->proc.spawned)
		return p->proc.status;
	if (p->proc.in_fd >= 0) {
		close(p->proc.in_fd);
		p->proc.in_fd = -1;
	}
	TH_WAIT(NULL, th_proc_exited(&p->proc), PEER_STOP_USEC);
	return th_proc_stop(&p->proc, SIGTERM, PEER_STOP_USEC);
}
