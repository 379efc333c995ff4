/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"

int smp_thread_vcpu(const char *comm)
{
	/* QEMU names vCPU threads "CPU <n>/KVM" (or /TCG, /HVF...). The rule
	 * is the BPF program's (bpf/readvm.bpf.c vcpu_name): "CPU ", 1 to 10
	 * digits, '/', one more character that is not a space. sscanf's %u
	 * would also take spaces, a sign and a wrapped "-1", and a name is
	 * QEMU's to choose. */
	long long n = 0;
	int i;

	if (strncmp(comm, "CPU ", 4) != 0)
		return -1;
	for (i = 4; i < 14 && comm[i] >= '0' && comm[i] <= '9'; i++)
		n = n * 10 + (comm[i] - '0');
	if (i == 4 || comm[i] != '/' || comm[i + 1] == '\0' || comm[i + 1] == ' ' || n > INT_MAX)
		return -1;
	return (int)n;
}

int smp_stat_parse(const char *line, char *state, char comm[16])
{
	const char *lp, *rp;

	/* comm may hold spaces and parentheses: it ends at the last ')'. */
	lp = strchr(line, '(');
	rp = strrchr(line, ')');
	if (!lp || !rp || rp < lp || rp[1] != ' ' || !rp[2])
		return -EPROTO;
	if (comm) {
		size_t len = (size_t)(rp - lp - 1);

		if (len > 15)
			len = 15;
		memcpy(comm, lp + 1, len);
		comm[len] = '\0';
	}
	*state = rp[2];
	return 0;
}

int smp_thread_stat(pid_t tgid, pid_t tid, char *state, char comm[16])
{
	char path[64], buf[512];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", tgid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	return smp_stat_parse(buf, state, comm);
}

int smp_proc_tgid(pid_t id)
{
	char path[64], line[128];
	_cleanup_fclose_ FILE *fp = NULL;
	int tgid = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)id);
	fp = fopen(path, "re");
	if (!fp)
		return -ESRCH;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	return tgid;
}

int64_t smp_proc_runnable(pid_t tgid)
{
	char path[64];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int64_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char state;

		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' &&
		    smp_thread_stat(tgid, (pid_t)atoi(de->d_name), &state, NULL) == 0 &&
		    state == 'R')
			n++;
	}
	return n;
}
