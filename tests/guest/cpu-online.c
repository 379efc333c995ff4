/* SPDX-License-Identifier: Apache-2.0 */
/* vmact test guest: onlines a hot-plugged vCPU the moment the kernel
 * announces it, as udev's rule does on a full distribution (the guest's
 * kernel has no uevent helper, and polling sysfs from the status loop
 * both delayed the vCPU by up to a report interval and cost the guest
 * CPU under TCG). Listens to the kernel's uevents and writes 1 to
 * /sys/devices/system/cpu/cpuN/online on "add" of a cpu device.
 *
 * It is also the guest's clock for reaction benchmarks (doc/testing.md,
 * "bench-reaction"): the instants that matter are taken here, on the
 * guest's own clocks, and written to the console (ttyS0) as
 *   VMACT onset mono_ns=<n> real_ns=<n>
 *       when init says "onset" on the fifo /run/onset (just before it
 *       starts the busy loops of a "busy" command),
 *   VMACT online cpu=<N> mono_ns=<n> real_ns=<n> uevent_mono_ns=<n>
 *       when the write to cpuN/online returned (the vCPU runs), with the
 *       instant its "add" uevent arrived,
 * so that onset -> online is measured entirely in the guest, whatever the
 * host's report loop or serial log add; the realtime figures map the
 * instants onto the host's clock as far as the guest's clock agrees.
 *
 * It runs SCHED_FIFO: the guest that needs a vCPU is the guest whose
 * runnable threads keep its CPUs busy, and the onlining is a chain of
 * short steps (this helper's wake-up, then the kernel bringing the CPU
 * up in this helper's write) each of which queued behind that very load
 * under CFS. Measured with `busy 2` on the 1-vCPU test guest under TCG:
 * uevent -> online 0.53-0.69 s at normal priority, 0.26-0.28 s at
 * SCHED_FIFO (0.22-0.28 s with the guest idle). Every contender of the
 * reaction benchmark gets the same guest (doc/testing.md,
 * "bench-reaction"). The kernel's RT throttling still leaves the load
 * 5 % of each CPU, and the helper sleeps in poll() between uevents.
 *
 * Built static by build-guest.sh; runs as a child of the guest's init. */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef ONSET_FIFO /* a test build may point them elsewhere */
#define ONSET_FIFO "/run/onset"
#endif
#ifndef CONSOLE
#define CONSOLE "/dev/ttyS0"
#endif

static int console = -1;

static long long ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One write per line: the tty keeps it whole beside init's reports. */
static void say(const char *line, int len)
{
	if (console >= 0 && len > 0 && write(console, line, (size_t)len) < 0) {
	}
}

static void online(const char *devpath, long long uevent_mono)
{
	char path[256], line[200];
	long long mono, real;
	const char *cpu = devpath + 23; /* "/devices/system/cpu/cpu" */
	int fd;

	if (snprintf(path, sizeof(path), "/sys%s/online", devpath) >= (int)sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* EINVAL/EBUSY (already online, or cpu0): nothing to do. */
	if (write(fd, "1", 1) < 0) {
		close(fd);
		return;
	}
	mono = ns(CLOCK_MONOTONIC);
	real = ns(CLOCK_REALTIME);
	close(fd);
	say(line, snprintf(line, sizeof(line),
			   "VMACT online cpu=%s mono_ns=%lld real_ns=%lld uevent_mono_ns=%lld\n",
			   cpu, mono, real, uevent_mono));
}

/* The onset fifo: every line is one onset, stamped as it is read. */
static void onsets(int fd)
{
	char buf[256], line[120];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		long long mono = ns(CLOCK_MONOTONIC), real = ns(CLOCK_REALTIME);

		for (ssize_t i = 0; i < n; i++)
			if (buf[i] == '\n')
				say(line, snprintf(line, sizeof(line),
						   "VMACT onset mono_ns=%lld real_ns=%lld\n", mono,
						   real));
	}
}

int main(void)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	char buf[4096];
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
	/* Read-write: never at its end while init keeps it open, or not. */
	int fifo = open(ONSET_FIFO, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	const struct sched_param rt = { .sched_priority = 50 };

	/* Not fatal: the vCPUs are still onlined, only later under load. */
	if (sched_setscheduler(0, SCHED_FIFO, &rt) < 0)
		perror("cpu-online: SCHED_FIFO");
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("cpu-online: uevent socket");
		return 1;
	}
	console = open(CONSOLE, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	/* Onsets said while this was not running (cpu-online off) are old. */
	if (fifo >= 0)
		while (read(fifo, buf, sizeof(buf)) > 0) {
		}
	for (;;) {
		struct pollfd p[2] = { { .fd = s, .events = POLLIN },
				       { .fd = fifo, .events = POLLIN } };
		const char *devpath = NULL;
		int add = 0, cpu = 0;
		long long at;
		ssize_t n;

		if (poll(p, fifo >= 0 ? 2 : 1, -1) < 0)
			continue;
		if (fifo >= 0 && (p[1].revents & POLLIN))
			onsets(fifo);
		if (!(p[0].revents & POLLIN))
			continue;
		n = recv(s, buf, sizeof(buf) - 1, MSG_DONTWAIT);
		at = ns(CLOCK_MONOTONIC);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "ACTION@DEVPATH\0KEY=VALUE\0..." */
		for (char *q = buf; q < buf + n; q += strlen(q) + 1) {
			if (strcmp(q, "ACTION=add") == 0)
				add = 1;
			else if (strcmp(q, "SUBSYSTEM=cpu") == 0)
				cpu = 1;
			else if (strncmp(q, "DEVPATH=", 8) == 0)
				devpath = q + 8;
		}
		if (add && cpu && devpath && strncmp(devpath, "/devices/system/cpu/cpu", 23) == 0)
			online(devpath, at);
	}
}
