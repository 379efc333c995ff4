/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-node, the program, on a serial line as a node image's would be
 * (a pty here: the host's end is the test's): it answers a claim only
 * once it checked it, writes the kubelet's files under --root, starts the
 * kubelet through --systemctl (a script of the test's that records its
 * arguments), acknowledges the same claim again, refuses another one, a
 * hostile line and an overlong one, keeps going after each, and applies
 * its kept claim again after a restart (a reboot). A real kubelet and API
 * server with the program in a node VM: make check-k8s (issue 35). */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
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
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/time.h"
#include "node/claim.h"
#include "tests/lib/file.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define UUID "4f0c1a2b-9d3e-4c5f-8a6b-7c8d9e0f1a2b"
#define CLAIM                                                                    \
	"claim {\"group\":\"workers\",\"name\":\"vmact-workers-4f0c1a2b\","      \
	"\"provider_id\":\"libvirt://h1/" UUID "\",\"labels\":{\"pool\":\"a\"}," \
	"\"taints\":[{\"key\":\"dedicated\",\"value\":\"db\",\"effect\":\"NoSchedule\"}]}\n"
#define OTHER                                                         \
	"claim {\"group\":\"workers\",\"name\":\"vmact-workers-99\"," \
	"\"provider_id\":\"libvirt://h1/" UUID "\"}\n"

struct fixture {
	char dir[256], root[300], systemctl[300], calls[300], out[300], notify[300];
	char console[300], state[300], kubeadm[300], kubeadm_calls[300], join_copy[300];
	char join_release[300];
	int master, notify_fd;
	char slave[64];
	struct th_proc p;
	/* what the host's end read so far */
	char got[16384];
	size_t have;
};

static struct fixture fx;

static void write_systemctl(int status)
{
	char text[1200];

	/* is-active answers what the test put in its state file. */
	snprintf(text, sizeof(text),
		 "#!/bin/sh\necho \"$*\" >> %s\n"
		 "if [ \"$1\" = is-active ]; then cat %s; exit 0; fi\nexit %d\n",
		 fx.calls, fx.state, status);
	assert_int_equal(th_write_file(fx.systemctl, text), 0);
	assert_int_equal(chmod(fx.systemctl, 0755), 0);
}

static bool ready(void *unused)
{
	char buf[256];
	ssize_t n = recv(fx.notify_fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	(void)unused;
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, "READY=1") != NULL;
}

/* vmact-node on the pty's line, writing under the scratch root; back
 * once it said it is ready. */
static void start(void)
{
	char prog[512], env_notify[320];
	const char *env[] = { env_notify, NULL };
	const char *argv[] = { prog,       "--port",      fx.slave,     "--root",
			       fx.root,    "--systemctl", fx.systemctl, "--console",
			       fx.console, "--kubeadm",   fx.kubeadm,   NULL };
	struct th_spawn_opts o = {
		.out = TH_OUT_FILE, .err = TH_OUT_FILE, .out_path = fx.out, .env = env
	};

	assert_int_equal(th_build_prog("vmact-node", prog, sizeof(prog)), 0);
	snprintf(env_notify, sizeof(env_notify), "NOTIFY_SOCKET=%s", fx.notify);
	fx.p = (struct th_proc){ 0 };
	assert_int_equal(th_spawn(&fx.p, argv, &o), 0);
	if (!th_wait_daemon(&fx.p, ready, NULL, 30))
		fail_msg("vmact-node never said READY=1");
}

/* Waits for an answer line from vmact-node that starts with want; the
 * line, from the host's buffer (consumed). */
static bool line_in(void *want)
{
	ssize_t n;

	while ((n = read(fx.master, fx.got + fx.have, sizeof(fx.got) - 1 - fx.have)) > 0)
		fx.have += (size_t)n;
	fx.got[fx.have] = '\0';
	return strstr(fx.got, want) && strchr(strstr(fx.got, want), '\n');
}

static char *answer(const char *want)
{
	char *at, *nl, *line;

	if (!th_wait_daemon(&fx.p, line_in, (void *)want, 30))
		fail_msg("no answer '%s' (got: %s)", want, fx.got);
	at = strstr(fx.got, want);
	nl = strchr(at, '\n');
	line = strndup(at, (size_t)(nl - at));
	memmove(fx.got, nl + 1, fx.have - (size_t)(nl + 1 - fx.got) + 1);
	fx.have = strlen(fx.got);
	return line;
}

static void tell(const char *text, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fx.master, text + done, len - done);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			usleep(1000);
			continue;
		}
		assert_true(n > 0);
		done += (size_t)n;
	}
}

static bool exists(const char *path)
{
	char p[600];

	snprintf(p, sizeof(p), "%s%s", fx.root, path);
	return access(p, F_OK) == 0;
}

static unsigned starts(void)
{
	return th_count_in_file(fx.calls, "start --no-block kubelet.service");
}

static bool console_has(void *text)
{
	return th_count_in_file(fx.console, text) > 0;
}

static bool asked_since(void *n)
{
	return th_count_in_file(fx.calls, "is-active kubelet.service") >= *(unsigned *)n;
}

static int setup(void **state)
{
	struct termios t;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int slave;

	(void)state;
	memset(&fx, 0, sizeof(fx));
	if (th_scratch_dir("test_vmact_node", fx.dir, sizeof(fx.dir)) < 0)
		return -1;
	snprintf(fx.root, sizeof(fx.root), "%s/root", fx.dir);
	snprintf(fx.systemctl, sizeof(fx.systemctl), "%s/systemctl", fx.dir);
	snprintf(fx.calls, sizeof(fx.calls), "%s/calls", fx.dir);
	snprintf(fx.out, sizeof(fx.out), "%s/vmact-node.log", fx.dir);
	snprintf(fx.notify, sizeof(fx.notify), "%s/notify", fx.dir);
	snprintf(fx.console, sizeof(fx.console), "%s/ttyS0", fx.dir);
	snprintf(fx.state, sizeof(fx.state), "%s/kubelet-state", fx.dir);
	snprintf(fx.kubeadm, sizeof(fx.kubeadm), "%s/kubeadm", fx.dir);
	snprintf(fx.kubeadm_calls, sizeof(fx.kubeadm_calls), "%s/kubeadm-calls", fx.dir);
	snprintf(fx.join_copy, sizeof(fx.join_copy), "%s/join-copy.json", fx.dir);
	snprintf(fx.join_release, sizeof(fx.join_release), "%s/join-release", fx.dir);
	{
		/* Records its arguments, the file's mode and text, waits
		 * until the test releases it (a join waits minutes for the
		 * kubelet's TLS bootstrap), and ends with a line that names
		 * the token, as a verbose kubeadm may. */
		char text[1600];

		snprintf(text, sizeof(text),
			 "#!/bin/sh\necho \"$*\" >> %s\nstat -c %%a \"$3\" >> %s\ncp \"$3\" %s\n"
			 "echo 'discovery: ok'\nwhile [ ! -e %s ]; do sleep 0.1; done\n"
			 "echo 'joined with token abcdef.s3cr3t0123456789'\n",
			 fx.kubeadm_calls, fx.kubeadm_calls, fx.join_copy, fx.join_release);
		if (th_write_file(fx.kubeadm, text) < 0 || chmod(fx.kubeadm, 0755) < 0)
			return -1;
	}
	if (th_write_file(fx.console, "") < 0 || th_write_file(fx.state, "active\n") < 0)
		return -1;
	if (mkdir(fx.root, 0755) < 0)
		return -1;
	/* The host's end: raw, as QEMU keeps a chardev. */
	if (openpty(&fx.master, &slave, fx.slave, NULL, NULL) < 0)
		return -1;
	if (tcgetattr(fx.master, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(fx.master, TCSANOW, &t);
	}
	/* Kept open so that the line never hangs up between two programs. */
	(void)slave;
	fcntl(fx.master, F_SETFL, fcntl(fx.master, F_GETFL) | O_NONBLOCK);
	fx.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (strlen(fx.notify) >= sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, fx.notify, strlen(fx.notify) + 1);
	if (fx.notify_fd < 0 || bind(fx.notify_fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	write_systemctl(0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (fx.p.pid)
		th_proc_stop(&fx.p, SIGKILL, 0);
	close(fx.master);
	close(fx.notify_fd);
	th_rm_rf(fx.dir);
	return 0;
}

static void claim_cycle(void **state)
{
	char *line, *big;
	int status;

	(void)state;
	start();
	/* A standby says so on its console (the group's serial health). */
	if (!th_wait_daemon(&fx.p, console_has, "VMACT-NODE standby\n", 30))
		fail_msg("no standby heartbeat");
	/* Hostile first: refused, nothing written or started. */
	tell("claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID
	     "\",\"labels\":{\"node-role.kubernetes.io/worker\":\"\"}}\n",
	     strlen("claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID
		    "\",\"labels\":{\"node-role.kubernetes.io/worker\":\"\"}}\n"));
	line = answer("VMACT-NODE refused:");
	assert_non_null(strstr(line, "node-role.kubernetes.io/worker cannot be set by a kubelet"));
	free(line);
	{
		static const char junk[] = "\x01\x02\xff garbage\n";

		tell(junk, sizeof(junk) - 1);
	}
	line = answer("VMACT-NODE refused:");
	assert_non_null(strstr(line, "not a claim"));
	free(line);
	big = malloc(ND_CLAIM_LINE_MAX + 100);
	memset(big, 'x', ND_CLAIM_LINE_MAX + 100);
	tell(big, ND_CLAIM_LINE_MAX + 100);
	tell("\n", 1);
	free(big);
	line = answer("VMACT-NODE refused:");
	assert_non_null(strstr(line, "longer than"));
	free(line);
	assert_false(exists("/run/vmact-node/kubelet.env"));
	assert_int_equal(starts(), 0);

	/* The claim: files, the kubelet, the acknowledgement. */
	tell(CLAIM, strlen(CLAIM));
	line = answer("VMACT-NODE claimed");
	assert_string_equal(line, "VMACT-NODE claimed vmact-workers-4f0c1a2b");
	free(line);
	assert_true(exists("/run/vmact-node/kubelet.env"));
	assert_true(exists("/run/vmact-node/kubelet.conf.d/50-claim.conf"));
	assert_true(exists("/var/lib/vmact-node/claim.json"));
	assert_int_equal(starts(), 1);
	/* Claimed: how its kubelet is, instead. */
	if (!th_wait_daemon(&fx.p, console_has, "VMACT-NODE claimed kubelet=active\n", 30))
		fail_msg("no claimed heartbeat");
	/* Told again: the same answer, the kubelet not started twice. */
	tell(CLAIM, strlen(CLAIM));
	line = answer("VMACT-NODE claimed");
	free(line);
	assert_int_equal(starts(), 1);
	/* Another node's claim: refused. */
	tell(OTHER, strlen(OTHER));
	line = answer("VMACT-NODE refused:");
	assert_non_null(strstr(line, "this node is already vmact-workers-4f0c1a2b"));
	free(line);
	/* A kubelet that failed: the heartbeat goes quiet (two answers of
	 * "failed" read, no line for either), so the group sees it unhealthy. */
	{
		unsigned before, want;

		assert_int_equal(th_write_file(fx.state, "failed\n"), 0);
		want = th_count_in_file(fx.calls, "is-active kubelet.service") + 1;
		if (!th_wait_daemon(&fx.p, asked_since, &want, 30))
			fail_msg("the kubelet's state was not asked again");
		before = th_count_in_file(fx.console, "VMACT-NODE claimed");
		want += 2;
		if (!th_wait_daemon(&fx.p, asked_since, &want, 30))
			fail_msg("the kubelet's state was not asked again");
		assert_int_equal(th_count_in_file(fx.console, "VMACT-NODE claimed"), before);
		assert_int_equal(th_count_in_file(fx.console, "kubelet=failed"), 0);
		assert_int_equal(th_write_file(fx.state, "active\n"), 0);
	}
	status = th_proc_stop(&fx.p, SIGTERM, 10 * VMACT_USEC_PER_SEC);
	assert_int_equal(status, 0);

	/* A reboot: /run is empty again, the kept claim is applied at once
	 * and the same claim is acknowledged. */
	{
		char p[600];

		snprintf(p, sizeof(p), "%s/run", fx.root);
		assert_int_equal(th_rm_rf(p), 0);
	}
	start();
	assert_true(exists("/run/vmact-node/kubelet.env"));
	assert_int_equal(starts(), 2);
	tell(CLAIM, strlen(CLAIM));
	line = answer("VMACT-NODE claimed");
	free(line);
	assert_int_equal(starts(), 2);
	assert_int_equal(th_proc_stop(&fx.p, SIGTERM, 10 * VMACT_USEC_PER_SEC), 0);
}

/* A kubelet that cannot be started: the claim is refused with why, and
 * nothing of it is kept (the VM stays a standby). */
static void kubelet_fails(void **state)
{
	char *line;

	(void)state;
	write_systemctl(5);
	start();
	tell(CLAIM, strlen(CLAIM));
	line = answer("VMACT-NODE refused:");
	assert_non_null(strstr(line, "start kubelet.service failed (status 5)"));
	free(line);
	assert_false(exists("/run/vmact-node/kubelet.env"));
	assert_false(exists("/var/lib/vmact-node/claim.json"));
	/* Once it can: the same claim goes through. */
	write_systemctl(0);
	tell(CLAIM, strlen(CLAIM));
	line = answer("VMACT-NODE claimed");
	free(line);
	assert_true(exists("/var/lib/vmact-node/claim.json"));
	assert_int_equal(th_proc_stop(&fx.p, SIGTERM, 10 * VMACT_USEC_PER_SEC), 0);
}

/* A claim with the node's kubeconfig: written for the kubelet (0600),
 * named in its arguments, in no answer, log or kept claim; a broken line
 * around a secret is refused without quoting it. */
static void secret_claim(void **state)
{
	static const char broken[] = "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":"
				     "\"libvirt://h/" UUID "\",\"secret\":{\"kubeconfig\":"
				     "\"token: s3cr3t-t0ken\\q\"}}\n";
	static const char good[] = "claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":"
				   "\"libvirt://h/" UUID "\",\"secret\":{\"kubeconfig\":"
				   "\"users:\\n- user:\\n    token: s3cr3t-t0ken\\n\"}}\n";
	char *line, *text, p[600];
	struct stat st;

	(void)state;
	start();
	tell(broken, sizeof(broken) - 1);
	line = answer("VMACT-NODE refused:");
	assert_null(strstr(line, "s3cr3t"));
	free(line);
	tell(good, sizeof(good) - 1);
	line = answer("VMACT-NODE claimed");
	assert_string_equal(line, "VMACT-NODE claimed n1");
	free(line);
	snprintf(p, sizeof(p), "%s/var/lib/vmact-node/kubeconfig", fx.root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	text = th_read_file(p);
	assert_non_null(strstr(text, "token: s3cr3t-t0ken\n"));
	free(text);
	snprintf(p, sizeof(p), "%s/run/vmact-node/kubelet.env", fx.root);
	text = th_read_file(p);
	assert_non_null(strstr(text, " --kubeconfig=/var/lib/vmact-node/kubeconfig"));
	free(text);
	assert_int_equal(th_proc_stop(&fx.p, SIGTERM, 10 * VMACT_USEC_PER_SEC), 0);
	assert_int_equal(th_count_in_file(fx.out, "s3cr3t"), 0);
	snprintf(p, sizeof(p), "%s/var/lib/vmact-node/claim.json", fx.root);
	assert_int_equal(th_count_in_file(p, "s3cr3t"), 0);
	assert_int_equal(th_count_in_file(fx.console, "s3cr3t"), 0);
}

/* A kubeadm claim: acknowledged, then kubeadm join run on the claim's
 * JoinConfiguration (0600, the claim's name and provider ID in it), the
 * heartbeat and the port served while it runs, the file removed
 * afterwards; the kubelet not started by vmact-node (kubeadm does); the
 * token in no log line. */
static bool joined(void *unused)
{
	(void)unused;
	return th_count_in_file(fx.out, "kubeadm join done") > 0;
}

static void kubeadm_claim(void **state)
{
	static const char claim[] =
		"claim {\"group\":\"g\",\"name\":\"n1\",\"provider_id\":\"libvirt://h/" UUID "\","
		"\"secret\":{\"kubeadm\":\"{\\\"apiVersion\\\":\\\"kubeadm.k8s.io/v1beta4\\\","
		"\\\"kind\\\":\\\"JoinConfiguration\\\",\\\"discovery\\\":{\\\"bootstrapToken\\\":"
		"{\\\"token\\\":\\\"abcdef.s3cr3t0123456789\\\"}}}\"}}\n";
	char *line, *text, p[600];

	(void)state;
	start();
	tell(claim, sizeof(claim) - 1);
	line = answer("VMACT-NODE claimed");
	assert_string_equal(line, "VMACT-NODE claimed n1");
	free(line);
	/* While kubeadm runs, vmact-node goes on: its heartbeat (the
	 * group's health check) and its answers on the port. */
	if (!th_wait_daemon(&fx.p, console_has, "VMACT-NODE claimed kubelet=", 30))
		fail_msg("no heartbeat while kubeadm join runs");
	tell(claim, sizeof(claim) - 1);
	line = answer("VMACT-NODE claimed");
	assert_string_equal(line, "VMACT-NODE claimed n1");
	free(line);
	assert_int_equal(th_count_in_file(fx.out, "kubeadm join"), 0);
	if (th_write_file(fx.join_release, "") < 0)
		fail_msg("cannot release the fake kubeadm");
	if (!th_wait_daemon(&fx.p, joined, NULL, 30))
		fail_msg("kubeadm join never ran");
	assert_int_equal(th_count_in_file(fx.kubeadm_calls, "join --config"), 1);
	text = th_read_file(fx.kubeadm_calls);
	assert_non_null(strstr(text, "join --config "));
	assert_non_null(strstr(text, "\n600\n"));
	free(text);
	text = th_read_file(fx.join_copy);
	assert_non_null(strstr(text, "\"name\":\"n1\""));
	assert_non_null(strstr(text, "libvirt://h/" UUID));
	free(text);
	snprintf(p, sizeof(p), "%s/run/vmact-node/join.json", fx.root);
	assert_int_not_equal(access(p, F_OK), 0);
	assert_int_equal(starts(), 0);
	assert_int_equal(th_proc_stop(&fx.p, SIGTERM, 10 * VMACT_USEC_PER_SEC), 0);
	assert_int_equal(th_count_in_file(fx.out, "s3cr3t"), 0);
	assert_int_equal(th_count_in_file(fx.out, "names the token: not shown"), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(claim_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(kubelet_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(secret_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(kubeadm_claim, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
