/* SPDX-License-Identifier: Apache-2.0 */
/* The host's resources full, in the real vmactd with real BPF and two
 * real TCG guests (README, "Reliability and security").
 *
 * The sampler's BPF maps full. The default sizes
 * (1024 VMs, 32768 threads of all VMs together) cannot be filled by test
 * guests, so the test sets them with the documented keys sampler.max_vms
 * and sampler.max_threads:
 *
 *   - max_vms 1: one VM gets the slot and keeps being sampled (busy, it
 *     grows to 2 vCPUs); the other is managed, says "all 1 slots in use
 *     (max_vms)" and that it is not scaled on its load, and stays at
 *     1 CPU while just as busy (the arbiter's capacity is declared with
 *     arbiter.overcommit_cpu, as the demo does: two guests at 1 CPU fill
 *     90 % of this 2-CPU host);
 *   - max_threads 2 (a new vmactd on the same guests): the QEMU threads do
 *     not all fit, and vmactd says once per VM that the thread table is
 *     full and the load reads low; it keeps running and every size stays
 *     within the bounds.
 *
 * The directory of the control socket and of control.state_dir on a full
 * tmpfs (no inode, no block left), then remounted read-only: vmactd says
 * that vmactl cannot reach it and why, manages both VMs and scales the busy one all the
 * same (it keeps no file of its own there: a VM's state is libvirt's and
 * QEMU's); once the tmpfs is writable and has room again, its retry
 * creates the socket and the control API answers.
 *
 * Time limits are safety nets, not assertions about speed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/quantity.h"
#include "hotplug/hotplug.h"
#include "tests/lib/file.h"
#include "tests/lib/flood.h"
#include "tests/lib/guest.h"
#include "tests/lib/proc.h"
#include "tests/lib/wait.h"

#define PREFIX "vmact-hfull"
#define LIMIT_BOOT_S 180.0
#define LIMIT_S 120.0

static char vmactd_path[PATH_MAX + 16];

static struct {
	struct tg_guest g[2];
	struct th_proc daemon;
	char dir[64], cfg[96], log[96], ctl[96], pins[96];
	bool mounted;
} fx;

static bool wait_until(bool (*pred)(void *), void *arg, double limit_s)
{
	if (th_wait_daemon(&fx.daemon, pred, arg, limit_s))
		return true;
	th_print_log_tail(fx.log, "vmactd log", 6000);
	return false;
}

static bool log_has(void *needle)
{
	return th_count_in_file(fx.log, needle) > 0;
}

static void start_vmactd(const char *ctl, const char *state_dir, const char *sampler_keys)
{
	const char *argv[] = { vmactd_path, "--config", fx.cfg, "--verbose", NULL };
	const struct th_spawn_opts o = { .out = TH_OUT_FILE, .err = TH_OUT_FILE,
					 .out_path = fx.log };
	char text[1024];

	snprintf(text, sizeof(text),
		 "{\"libvirt\":{\"name_prefix\":\"%s-%d-\"},"
		 /* Two guests at 1 CPU fill the arbiter's 90 % of a 2-CPU
		  * host: declare room for growth, as the demo does. */
		 "\"arbiter\":{\"overcommit_cpu\":4},"
		 "\"control\":{\"socket\":\"%s\",\"state_dir\":\"%s\"},"
		 "\"sampler\":{\"pin_root\":\"%s\"%s%s}}",
		 PREFIX, (int)getpid(), ctl, state_dir, fx.pins, sampler_keys[0] ? "," : "",
		 sampler_keys);
	assert_int_equal(th_write_file(fx.cfg, text), 0);
	assert_int_equal(th_spawn(&fx.daemon, argv, &o), 0);
	if (!wait_until(log_has, "ready: managing 2 VMs", LIMIT_S))
		fail_msg("vmactd did not manage both guests");
}

/* Every "NAME: resized to" of the log within 1..2 CPUs (the bounds). */
static void check_bounds(void)
{
	char *buf = th_read_file(fx.log), *p;

	assert_non_null(buf);
	for (p = buf; (p = strstr(p, "resized to ")); p++) {
		char cpu[32];
		uint64_t milli = 0;

		if (sscanf(p, "resized to %31s CPU", cpu) != 1 ||
		    vmact_quantity_parse_milli(cpu, &milli, NULL) < 0)
			fail_msg("unparsable line: %.60s", p);
		if (milli < 1000 || milli > 2000)
			fail_msg("vmactd resized outside the bounds: %.60s", p);
	}
	free(buf);
}

/* Fills the tmpfs at dir: files until no inode is left, then one file
 * until no block is. */
static void fill(const char *dir)
{
	char path[160], block[4096] = { 0 };
	int fd = -1, last = -1;

	for (unsigned i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "%s/fill-%u", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			break;
		if (last >= 0)
			close(last);
		last = fd;
	}
	assert_true(fd < 0 && errno == ENOSPC && last >= 0);
	while (write(last, block, sizeof(block)) > 0)
		;
	assert_int_equal(errno, ENOSPC);
	close(last);
}

static void unfill(const char *dir)
{
	char path[160];

	for (unsigned i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "%s/fill-%u", dir, i);
		unlink(path);
	}
}

struct seen {
	struct tg_guest *g;
	unsigned long seq;
};

/* The guest has reported up to seen->seq. */
static bool reported_until(void *arg)
{
	struct seen *seen = arg;
	struct tg_report r;

	return tg_report(seen->g, &r) && r.seq >= seen->seq;
}

/* busy: the guest left busy (and not yet grown) by the first part. */
static void dir_full(struct tg_guest *busy)
{
	static const char get[] = "GET /v1/vms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	char mnt[80], sock[100], state[100], needle[192], buf[4096];
	struct th_flood f = { 0 };

	snprintf(mnt, sizeof(mnt), "%s/full", fx.dir);
	snprintf(sock, sizeof(sock), "%s/ctl.sock", mnt);
	snprintf(state, sizeof(state), "%s/state", mnt);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("vmact-test-full", mnt, "tmpfs", 0, "size=64k,nr_inodes=8,mode=0700") < 0)
		fail_msg("mount tmpfs on %s: %s", mnt, strerror(errno));
	fx.mounted = true;
	fill(mnt);
	start_vmactd(sock, state, "");
	snprintf(needle, sizeof(needle), "%s", "vmactl cannot reach this vmactd (retried every");
	assert_int_equal(th_count_in_file(fx.log, needle), 1);
	assert_true(th_count_in_file(fx.log, "No space left on device") >= 1);
	/* The busy VM, sampled now, is scaled all the same. */
	if (!wait_until(tg_two_cpus, busy, LIMIT_S))
		fail_msg("the busy VM did not grow while the directory was full");
	/* Read-only: the retry says why, nothing else changes. */
	if (mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, "size=64k,nr_inodes=8,mode=0700") < 0)
		fail_msg("remount read-only: %s", strerror(errno));
	if (!wait_until(log_has, "Read-only file system", LIMIT_S))
		fail_msg("vmactd's retry never met the read-only directory");
	/* Room again: the socket is created, and answers. */
	if (mount(NULL, mnt, NULL, MS_REMOUNT, "size=64k,nr_inodes=8,mode=0700") < 0)
		fail_msg("remount read-write: %s", strerror(errno));
	unfill(mnt);
	snprintf(needle, sizeof(needle), "control: serving vmactl on %s", sock);
	if (!wait_until(log_has, needle, LIMIT_S))
		fail_msg("vmactd never created its control socket once there was room");
	snprintf(f.unix_path, sizeof(f.unix_path), "%s", sock);
	assert_int_equal(th_flood_request(&f, NULL, get, strlen(get), buf, sizeof(buf)), 0);
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0)
		fail_msg("control API: \"%.80s\"", buf);
	check_bounds();
	assert_int_equal(th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);
}

static void host_full(void **state)
{
	char needle[160], *buf, *at;
	struct tg_report r;
	struct seen seen;
	int out = -1;

	(void)state;
	if (!wait_until(tg_booted, &fx.g[0], LIMIT_BOOT_S) ||
	    !wait_until(tg_booted, &fx.g[1], LIMIT_BOOT_S))
		fail_msg("the guests did not boot");

	/* One slot for two VMs. */
	start_vmactd(fx.ctl, fx.dir, "\"max_vms\":1");
	assert_int_equal(th_count_in_file(fx.log, "all 1 slots in use (max_vms)"), 1);
	assert_int_equal(th_count_in_file(fx.log, "the VM is not scaled on its load"), 1);
	buf = th_read_file(fx.log);
	assert_non_null(buf);
	at = strstr(buf, "all 1 slots in use (max_vms)");
	for (int i = 0; i < 2; i++) {
		snprintf(needle, sizeof(needle), "%s: load sampling unavailable", fx.g[i].name);
		if (strstr(buf, needle))
			out = i;
	}
	free(buf);
	assert_non_null(at);
	if (out < 0)
		fail_msg("no VM named as the one without a slot");
	print_message("%s has the slot, %s is not sampled\n", fx.g[!out].name, fx.g[out].name);

	/* One busy thread (2 vCPUs at 1250m when scaled, README), one guest
	 * at a time: on a 2-CPU host a second busy guest would make the
	 * first wait for the host, which holds growth (contended). */
	assert_int_equal(tg_cmd(&fx.g[!out], "busy 1"), 0);
	if (!wait_until(tg_two_cpus, &fx.g[!out], LIMIT_S))
		fail_msg("the sampled VM did not grow");
	/* The other, as busy, is held: 1 CPU and no resize of it while
	 * it reports ten times (one line a second). */
	assert_int_equal(tg_cmd(&fx.g[out], "busy 1"), 0);
	assert_true(tg_report(&fx.g[out], &r));
	seen.g = &fx.g[out];
	seen.seq = r.seq + 10;
	if (!wait_until(reported_until, &seen, LIMIT_S))
		fail_msg("the unsampled guest stopped reporting");
	assert_true(tg_report(&fx.g[out], &r));
	assert_int_equal(r.cpus, 1);
	snprintf(needle, sizeof(needle), "%s: resizing", fx.g[out].name);
	assert_int_equal(th_count_in_file(fx.log, needle), 0);
	check_bounds();
	assert_int_equal(th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);

	/* Two thread entries for every thread of both QEMUs. */
	start_vmactd(fx.ctl, fx.dir, "\"max_threads\":2");
	if (!wait_until(log_has, "the BPF thread table is full (sampler.max_threads)", LIMIT_S))
		fail_msg("vmactd never said the thread table was full");
	check_bounds();
	assert_true(th_count_in_file(fx.log, "the BPF thread table is full") <= 2);
	assert_int_equal(th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC), 0);

	/* The first guest idle: the other is the busy one now. */
	assert_int_equal(tg_cmd(&fx.g[!out], "idle"), 0);
	dir_full(&fx.g[out]);
}

static int setup(void **state)
{
	const char *meta =
		"<vmact:autoscaling xmlns:vmact='" HP_NS_URI "' enabled='true'>"
		"<vmact:cpu min='1' max='2'/>"
		"<vmact:memory min='512Mi' max='1Gi' method='virtio-mem'/>"
		"<vmact:compute-unit cpu='250m' memory='256Mi'/>"
		"</vmact:autoscaling>";
	char msg[512];
	virConnectPtr vc;

	(void)state;
	snprintf(fx.dir, sizeof(fx.dir), "/tmp/vmact-hfull-XXXXXX");
	if (!mkdtemp(fx.dir))
		return -1;
	snprintf(fx.cfg, sizeof(fx.cfg), "%s/vmactd.json", fx.dir);
	snprintf(fx.log, sizeof(fx.log), "%s/vmactd.log", fx.dir);
	snprintf(fx.ctl, sizeof(fx.ctl), "%s/ctl.sock", fx.dir);
	snprintf(fx.pins, sizeof(fx.pins), "/sys/fs/bpf/vmact-hfull-%d", (int)getpid());
	setenv("VMACT_GUEST_CMDLINE", "vmact.report=1", 0);
	vc = virConnectOpen("qemu:///system");
	if (!vc)
		return -1;
	for (int i = 0; i < 2; i++)
		if (tg_start(vc, PREFIX, meta, &fx.g[i], msg, sizeof(msg)) < 0) {
			print_error("guest: %s\n", msg);
			virConnectClose(vc);
			return -1;
		}
	virConnectClose(vc);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	th_proc_stop(&fx.daemon, SIGTERM, 30 * VMACT_USEC_PER_SEC);
	tg_destroy_by_name(&fx.g[0]);
	tg_destroy_by_name(&fx.g[1]);
	th_remove_pins(fx.pins);
	if (fx.mounted) {
		char mnt[96];

		snprintf(mnt, sizeof(mnt), "%s/full", fx.dir);
		umount2(mnt, MNT_DETACH);
		rmdir(mnt);
	}
	if (!getenv("VMACT_TEST_KEEP_LOG")) {
		unlink(fx.cfg);
		unlink(fx.log);
		unlink(fx.ctl);
		rmdir(fx.dir);
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_full),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_host_full: needs root (libvirt guests, cgroups, BPF)\n");
		return 1;
	}
	if (th_build_prog("vmactd", vmactd_path, sizeof(vmactd_path)) < 0)
		return 1;
	return cmocka_run_group_tests_name("test_host_full", tests, setup, teardown);
}
