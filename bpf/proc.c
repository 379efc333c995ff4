/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "shared/vcpu-name.h"

int smp_thread_vcpu(const char *comm)
{
	return vmact_vcpu_thread_index(comm);
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
