/* SPDX-License-Identifier: Apache-2.0 */
/* The control API's server (actuator/control/control.c) on a real unix socket, in
 * a child process with its own sd-event loop, behind a small backend of
 * two VMs (the real registry is test_vmactl's business): routes, errors,
 * the peer-credential check (an unprivileged peer refused with 403 even on
 * a socket whose mode lets it in), malformed requests, and the long poll
 * (woken by an event, ended by its wait, answered 503 at shutdown).
 * Clients: vmactl's own (cli/vmactl/client.c, libcurl) and raw sockets. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "actuator/control/control.h"
#include "cli/vmactl/client.h"
#include "tests/lib/wait.h"

static char sock_path[108];
static pid_t server;
/* >= 0: the next server reads with control.read_group of this gid. */
static long read_gid = -1;

/* ---- the server child ---- */

static bool paused;

static void fake_view_a(struct act_vm_view *v)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "vm-a");
	snprintf(v->uuid, sizeof(v->uuid), "00000000-0000-4000-8000-00000000000a");
	v->state = paused ? ACT_VM_PAUSED : ACT_VM_MANAGED;
	v->vcpus = 1;
	v->quota_milli = 1000;
	v->min = (struct vmact_resources){ 250, 1ull << 30 };
	v->max = (struct vmact_resources){ 2000, 2ull << 30 };
	v->policy_cpu = "reactive";
	v->policy_shrink = "quota";
	v->scheduler = "arbiter";
	v->monitor_kind = "none";
}

static int fake_views(void *ud, bool all, struct act_vm_view **out, size_t *n)
{
	*out = calloc(2, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	fake_view_a(&(*out)[0]);
	snprintf((*out)[1].name, sizeof((*out)[1].name), "vm-b");
	(*out)[1].state = ACT_VM_UNMANAGED;
	snprintf((*out)[1].reason, sizeof((*out)[1].reason), "vmact metadata: broken");
	*n = 2;
	return 0;
}

static int fake_view(void *ud, const char *name, struct act_vm_view *out)
{
	if (strcmp(name, "vm-a") != 0)
		return -ENOENT;
	fake_view_a(out);
	return 0;
}

static int fake_change(void *ud, const char *name, const struct hp_meta_change *ch,
		       struct vmact_err *err)
{
	struct act_events *ev = ud;

	if (strcmp(name, "vm-a") != 0)
		return vmact_err_set(err, ENOENT, "no VM named '%s' is managed by vmactd", name);
	if (ch->set_min_cpu && ch->set_max_cpu && ch->min_milli_cpu > ch->max_milli_cpu)
		return vmact_err_set(err, ERANGE, "<vmact:cpu>: min above max");
	if (ch->set_paused)
		paused = ch->paused;
	/* What a runner would say next: the decision stream goes on. */
	act_event(ev, name, ACT_EV_DECISION, NULL, "grow to 2 vCPUs (2.000 CPU): test");
	return 0;
}

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *ud)
{
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void run_server(void)
{
	sd_event *ev = NULL;
	struct act_events *events = NULL;
	struct act_control *c = NULL;
	struct vmact_err err = { 0 };
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if (sd_event_new(&ev) < 0 || sd_event_add_signal(ev, NULL, SIGTERM, on_term, NULL) < 0 ||
	    act_events_new(0, &events) < 0)
		_exit(3);
	{
		struct act_control_opts o = {
			.event = ev,
			.socket = sock_path,
			.events = events,
			.backend = { .views = fake_views,
				     .view = fake_view,
				     .change = fake_change,
				     .ud = events },
			.allowed_uid = getuid(),
			.read_group = read_gid >= 0 ? "readers" : NULL,
			.read_gid = read_gid >= 0 ? (unsigned)read_gid : 0,
		};

		if (act_control_new(&o, &c, &err) < 0) {
			fprintf(stderr, "server: %s\n", err.msg);
			_exit(4);
		}
	}
	sd_event_loop(ev);
	act_control_free(c);
	act_events_free(events);
	sd_event_unref(ev);
	_exit(0);
}

/* Someone accepts connections on the socket (a stale file does not). */
static bool serving(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	strcpy(sa.sun_path, sock_path);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static void start_server(void)
{
	int status;

	server = fork();
	assert_true(server >= 0);
	if (server == 0)
		run_server();
	if (!TH_WAIT(NULL, serving() || waitpid(server, &status, WNOHANG) == server,
		     TH_SAFETY_USEC) ||
	    !serving())
		fail_msg("the control socket %s is not served", sock_path);
}

static int stop_server(void)
{
	int status;

	kill(server, SIGTERM);
	assert_int_equal(waitpid(server, &status, 0), server);
	server = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int setup(void **state)
{
	snprintf(sock_path, sizeof(sock_path), "/tmp/vmact-ctl-%d/sub/vmactd.sock", (int)getpid());
	curl_global_init(CURL_GLOBAL_DEFAULT);
	start_server();
	return 0;
}

static int teardown(void **state)
{
	char dir[128];

	if (server)
		assert_int_equal(stop_server(), 0);
	/* The server removed its socket. */
	assert_int_equal(access(sock_path, F_OK), -1);
	snprintf(dir, sizeof(dir), "/tmp/vmact-ctl-%d/sub", (int)getpid());
	rmdir(dir);
	snprintf(dir, sizeof(dir), "/tmp/vmact-ctl-%d", (int)getpid());
	rmdir(dir);
	curl_global_cleanup();
	return 0;
}

/* ---- clients ---- */

static json_t *call_ok(const char *method, const char *path, const char *body, long timeout)
{
	struct vmact_err err = { 0 };
	json_t *doc = NULL;
	long status;

	if (ctl_call(sock_path, method, path, body, timeout, &status, &doc, &err) < 0)
		fail_msg("%s %s: %s (status %ld)", method, path, err.msg, status);
	return doc;
}

/* The API's refusal: status and message. */
static void call_refused(const char *method, const char *path, const char *body, long want,
			 const char *msg)
{
	struct vmact_err err = { 0 };
	json_t *doc = NULL;
	long status;

	assert_int_equal(ctl_call(sock_path, method, path, body, 10, &status, &doc, &err), -EPROTO);
	if (status != want || !strstr(err.msg, msg))
		fail_msg("%s %s: got %ld '%s', want %ld '%s'", method, path, status, err.msg, want,
			 msg);
	assert_null(doc);
}

/* Sends raw bytes, reads the answer until the server closes (or a
 * generous bound). */
static size_t raw(const char *req, size_t len, char *out, size_t cap)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t got = 0;

	assert_true(fd >= 0);
	strcpy(sa.sun_path, sock_path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (len)
		assert_int_equal(write(fd, req, len), (ssize_t)len);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 30000) != 1)
			break;
		n = read(fd, out + got, cap - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == cap - 1)
			break;
	}
	out[got] = 0;
	close(fd);
	return got;
}

static void routes(void **state)
{
	json_t *doc, *vms;

	(void)state;
	doc = call_ok("GET", "/v1/vms", NULL, 10);
	vms = json_object_get(doc, "vms");
	assert_int_equal(json_array_size(vms), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(vms, 0), "state")),
			    "managed");
	assert_string_equal(json_string_value(json_object_get(json_array_get(vms, 1), "reason")),
			    "vmact metadata: broken");
	json_decref(doc);
	doc = call_ok("GET", "/v1/vms/vm-a", NULL, 10);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(doc, "bounds"), "max"),
				 "milli_cpu")),
			 2000);
	assert_true(json_is_array(json_object_get(doc, "decisions")));
	json_decref(doc);

	call_refused("GET", "/v1/vms/nope", NULL, 404, "no VM named 'nope'");
	call_refused("GET", "/v2/vms", NULL, 404, "no such resource");
	call_refused("DELETE", "/v1/vms", NULL, 405, "use GET");
	call_refused("GET", "/v1/vms/vm-a/pause", NULL, 405, "use POST");
	call_refused("POST", "/v1/vms/vm-a/explode", "", 404, "unknown action 'explode'");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{bad", 400, "body is not JSON");
	call_refused("POST", "/v1/vms/vm-a/bounds", "[]", 400, "must be a JSON object");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{}", 400, "nothing to set");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{\"min_cpus\":\"1\"}", 400,
		     "unknown field 'min_cpus'");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{\"min_cpu\":1}", 400, "quantity string");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{\"min_cpu\":\"1x\"}", 400, "min_cpu");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{\"max_memory\":\"0\"}", 400, "out of range");
	call_refused("POST", "/v1/vms/vm-a/bounds", "{\"min_cpu\":\"3\",\"max_cpu\":\"1\"}", 400,
		     "min above max");
	call_refused("POST", "/v1/vms/ghost/pause", "", 404, "no VM named 'ghost'");
	call_refused("POST", "/v1/vms/vm-a/pause", "{\"x\":1}", 400, "takes no body");
	call_refused("GET", "/v1/events?since=abc", NULL, 400, "since");
	call_refused("GET", "/v1/events?since=-1", NULL, 400, "since");
	call_refused("GET", "/v1/events?wait=31", NULL, 400, "wait");

	doc = call_ok("POST", "/v1/vms/vm-a/pause", "", 10);
	assert_string_equal(json_string_value(json_object_get(doc, "done")), "pause");
	json_decref(doc);
	doc = call_ok("GET", "/v1/vms/vm-a", NULL, 10);
	assert_string_equal(json_string_value(json_object_get(doc, "state")), "paused");
	/* The decision the backend emitted is in the VM's last decisions. */
	assert_true(json_array_size(json_object_get(doc, "decisions")) >= 1);
	json_decref(doc);
	json_decref(call_ok("POST", "/v1/vms/vm-a/resume", "{}", 10));
	json_decref(call_ok("POST", "/v1/vms/vm-a/bounds", "{\"max_cpu\":\"1500m\"}", 10));
}

static void malformed(void **state)
{
	char buf[8192], big[6000];
	json_t *doc;

	(void)state;
	raw("NOT HTTP AT ALL\r\n\r\n", 19, buf, sizeof(buf));
	assert_non_null(strstr(buf, "400"));
	/* A body above the API's 4 KiB: refused, the server goes on. */
	memset(big, 'x', sizeof(big));
	snprintf(buf, sizeof(buf),
		 "POST /v1/vms/vm-a/bounds HTTP/1.1\r\nHost: x\r\n"
		 "Content-Length: %zu\r\n\r\n",
		 sizeof(big));
	raw(buf, strlen(buf), buf, sizeof(buf));
	assert_non_null(strstr(buf, " 413 "));
	/* Half a request, then the peer goes away. */
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		strcpy(sa.sun_path, sock_path);
		assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(write(fd, "GET /v1/vm", 10), 10);
		close(fd);
	}
	/* Binary garbage. */
	{
		char junk[512];

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)(i * 37 + 11);
		raw(junk, sizeof(junk), buf, sizeof(buf));
	}
	doc = call_ok("GET", "/v1/vms", NULL, 10);
	assert_int_equal(json_array_size(json_object_get(doc, "vms")), 2);
	json_decref(doc);
}

/* As a user other than the server's: refused by the mode, and by the
 * peer credentials once the mode lets it in. */
static void unprivileged(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	if (getuid() != 0)
		skip(); /* setresuid needs root; make check runs as root */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int fd;

		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		strcpy(sa.sun_path, sock_path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		/* 0600: the kernel refuses the connection. */
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != EACCES)
			_exit(11);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* The mode loosened (a group, a careless chmod): the peer check holds. */
	assert_int_equal(chmod(sock_path, 0666), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[4096];
		const char *req = "GET /v1/vms HTTP/1.0\r\n\r\n";

		if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		raw(req, strlen(req), buf, sizeof(buf));
		if (!strstr(buf, " 403 "))
			_exit(12);
		if (!strstr(buf,
			    "\"error\":\"permission denied: the vmactd control API is for uid 0"
			    " only, this peer is uid 65534\""))
			_exit(13);
		if (strstr(buf, "vm-a"))
			_exit(14);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("unprivileged child: exit %d", WEXITSTATUS(status));
	assert_int_equal(chmod(sock_path, 0600), 0);
}

/* A child as uid 65534 with primary group gid and supplementary groups
 * sup (n of them) sends req; exit 0 when the answer has status want and
 * the text msg. */
static void as_user(gid_t gid, const gid_t *sup, size_t n, const char *req, const char *want,
		    const char *msg)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[4096];

		if (setgroups(n, sup) < 0 || setresgid(gid, gid, gid) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(10);
		raw(req, strlen(req), buf, sizeof(buf));
		if (!strstr(buf, want))
			_exit(11);
		if (msg && !strstr(buf, msg))
			_exit(12);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("%s as gid %u: exit %d (want%s, %s)", req, (unsigned)gid,
			 WEXITSTATUS(status), want, msg ? msg : "");
}

/* control.read_group: its members (by primary or supplementary group)
 * read and check, and are refused every change with the reason; anyone
 * else is refused as before. The socket is 0660, group-owned by it. */
static void read_only(void **state)
{
	static const char get[] = "GET /v1/vms HTTP/1.0\r\n\r\n";
	static const char ev[] = "GET /v1/events HTTP/1.0\r\n\r\n";
	static const char pause[] = "POST /v1/vms/vm-a/pause HTTP/1.0\r\n\r\n";
	static const char check[] = "POST /v1/domains/vm-a/check HTTP/1.0\r\n\r\n";
	static const char enable[] = "POST /v1/domains/vm-a/enable HTTP/1.0\r\n\r\n";
	const gid_t readers = 65533, other = 65532;
	struct stat st;

	(void)state;
	if (getuid() != 0)
		skip(); /* setresuid needs root; make check runs as root */
	assert_int_equal(stop_server(), 0);
	read_gid = readers;
	start_server();
	assert_int_equal(stat(sock_path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0660);
	assert_int_equal(st.st_gid, readers);
	/* Root as ever. */
	json_decref(call_ok("GET", "/v1/vms", NULL, 10));
	/* A member by its primary group, and by a supplementary one. */
	as_user(readers, NULL, 0, get, " 200 ", "vm-a");
	as_user(other, &readers, 1, get, " 200 ", "vm-a");
	as_user(readers, NULL, 0, ev, " 200 ", "last_seq");
	/* check changes nothing: past the permission (this backend has
	 * none: 501). */
	as_user(readers, NULL, 0, check, " 501 ", "not available");
	as_user(readers, NULL, 0, pause, " 403 ",
		"permission denied: read-only access (group 'readers', control.read_group): "
		"POST /v1/vms/vm-a/pause changes what vmactd does");
	as_user(other, &readers, 1, enable, " 403 ", "read-only access");
	assert_false(paused);
	/* Not a member: the socket's mode refuses it (the kernel), and the
	 * credentials would. */
	{
		pid_t pid = fork();
		int status;

		assert_true(pid >= 0);
		if (pid == 0) {
			struct sockaddr_un sa = { .sun_family = AF_UNIX };
			int fd;

			if (setgroups(0, NULL) < 0 || setresgid(other, other, other) < 0 ||
			    setresuid(65534, 65534, 65534) < 0)
				_exit(10);
			strcpy(sa.sun_path, sock_path);
			fd = socket(AF_UNIX, SOCK_STREAM, 0);
			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno != EACCES)
				_exit(11);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(chmod(sock_path, 0666), 0);
	as_user(other, NULL, 0, get, " 403 ",
		"and, read-only, the members of group 'readers' (control.read_group) only, "
		"this peer is uid 65534");
	assert_int_equal(stop_server(), 0);
	read_gid = -1;
	start_server();
}

static uint64_t last_seq(void)
{
	json_t *doc = call_ok("GET", "/v1/events", NULL, 10);
	uint64_t s = (uint64_t)json_integer_value(json_object_get(doc, "last_seq"));

	json_decref(doc);
	return s;
}

static void long_poll(void **state)
{
	char path[128];
	json_t *doc, *evs;
	uint64_t seq;
	pid_t pid;
	int status, pfd[2];

	(void)state;
	seq = last_seq();
	/* Nothing new: the wait ends, empty, at the same place. */
	snprintf(path, sizeof(path), "/v1/events?since=%llu&wait=1", (unsigned long long)seq);
	doc = call_ok("GET", path, NULL, 10);
	assert_int_equal(json_array_size(json_object_get(doc, "events")), 0);
	assert_int_equal(json_integer_value(json_object_get(doc, "last_seq")), (json_int_t)seq);
	json_decref(doc);

	/* A poll waiting 30 s is woken by the next event: its client gives up
	 * after 25 s, so an answer proves the wake-up. */
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char *text;

		close(pfd[0]);
		snprintf(path, sizeof(path), "/v1/events?since=%llu&wait=30&vm=vm-a",
			 (unsigned long long)seq);
		doc = call_ok("GET", path, NULL, 25);
		text = json_dumps(doc, JSON_COMPACT);
		if (write(pfd[1], text, strlen(text)) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	/* Let the poll arrive first: it is pending once the server has read
	 * it; an answer that came before the event would be empty (checked
	 * below). */
	usleep(300000);
	json_decref(call_ok("POST", "/v1/vms/vm-a/pause", "", 10));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	{
		char buf[8192];
		ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);

		assert_true(n > 0);
		buf[n] = 0;
		doc = json_loads(buf, 0, NULL);
	}
	close(pfd[0]);
	evs = json_object_get(doc, "events");
	assert_true(json_array_size(evs) >= 1);
	for (size_t i = 0; i < json_array_size(evs); i++)
		assert_string_equal(json_string_value(
					    json_object_get(json_array_get(evs, i), "vm")),
				    "vm-a");
	assert_true(json_integer_value(json_object_get(json_array_get(evs, 0), "seq")) >
		    (json_int_t)seq);
	json_decref(doc);
	json_decref(call_ok("POST", "/v1/vms/vm-a/resume", "", 10));

	/* Several pending polls, then the daemon stops: each is answered
	 * (503), none hangs, the server exits cleanly. */
	seq = last_seq();
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vmact_err err = { 0 };
		long st = 0;

		snprintf(path, sizeof(path), "/v1/events?since=%llu&wait=30",
			 (unsigned long long)seq);
		close(pfd[0]);
		if (write(pfd[1], "x", 1) < 0)
			_exit(1);
		if (ctl_call(sock_path, "GET", path, NULL, 25, &st, &doc, &err) != -EPROTO)
			_exit(2);
		_exit(st == 503 && strstr(err.msg, "shutting down") ? 0 : 3);
	}
	close(pfd[1]);
	{
		char c;

		assert_int_equal(read(pfd[0], &c, 1), 1);
	}
	close(pfd[0]);
	usleep(300000);
	assert_int_equal(stop_server(), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("pending poll at shutdown: status %d", status);
	/* A stale socket left by a killed daemon is replaced... */
	start_server();
	kill(server, SIGKILL);
	waitpid(server, &status, 0);
	assert_int_equal(access(sock_path, F_OK), 0);
	start_server();
	json_decref(call_ok("GET", "/v1/vms", NULL, 10));
	/* ...but a live one is not taken over. */
	{
		pid_t second = fork();

		assert_true(second >= 0);
		if (second == 0)
			run_server();
		assert_int_equal(waitpid(second, &status, 0), second);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 4);
	}
	json_decref(call_ok("GET", "/v1/vms", NULL, 10));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(routes),       cmocka_unit_test(malformed),
		cmocka_unit_test(unprivileged), cmocka_unit_test(read_only),
		cmocka_unit_test(long_poll),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
