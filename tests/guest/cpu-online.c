/* SPDX-License-Identifier: Apache-2.0 */
/* vmact test guest: onlines a hot-plugged vCPU the moment the kernel
 * announces it, as udev's rule does on a full distribution (the guest's
 * kernel has no uevent helper, and polling sysfs from the status loop
 * both delayed the vCPU by up to a report interval and cost the guest
 * CPU under TCG). Listens to the kernel's uevents and writes 1 to
 * /sys/devices/system/cpu/cpuN/online on "add" of a cpu device.
 * Built static by build-guest.sh; runs as a child of the guest's init. */
#include <fcntl.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void online(const char *devpath)
{
	char path[256];
	int fd;

	if (snprintf(path, sizeof(path), "/sys%s/online", devpath) >= (int)sizeof(path))
		return;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* EINVAL/EBUSY (already online, or cpu0): nothing to do. */
	if (write(fd, "1", 1) < 0) {
	}
	close(fd);
}

int main(void)
{
	struct sockaddr_nl a = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	char buf[4096];
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("cpu-online: uevent socket");
		return 1;
	}
	for (;;) {
		ssize_t n = recv(s, buf, sizeof(buf) - 1, 0);
		const char *devpath = NULL;
		int add = 0, cpu = 0;

		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "ACTION@DEVPATH\0KEY=VALUE\0..." */
		for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
			if (strcmp(p, "ACTION=add") == 0)
				add = 1;
			else if (strcmp(p, "SUBSYSTEM=cpu") == 0)
				cpu = 1;
			else if (strncmp(p, "DEVPATH=", 8) == 0)
				devpath = p + 8;
		}
		if (add && cpu && devpath && strncmp(devpath, "/devices/system/cpu/cpu", 23) == 0)
			online(devpath);
	}
}
