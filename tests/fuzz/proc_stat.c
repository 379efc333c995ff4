/* SPDX-License-Identifier: Apache-2.0 */
/* What the sampler reads about a VM's threads (bpf/proc.c, bpf/
 * taskstats.c): a thread's name is QEMU's to set (prctl), so a QEMU the
 * guest took over controls it. Byte 0 picks the input:
 *   even: the rest is a /proc/.../stat text: a success gives a state
 *         letter and a terminated name of at most 15 bytes, which goes
 *         through the vCPU-name parser too (so does the text itself: an
 *         index comes only from "CPU <digits>/X", never negative);
 *   1, 5, 9...: the rest is a taskstats netlink answer (as libnl hands
 *         it to the callback: nlmsg_len within what was received);
 *   3, 7, 11...: the rest is QEMU's pid file (QEMU writes it): a pid read
 *         from it is positive and the file is its digits and at most a
 *         newline. */
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/pidfile.h"
#include "bpf/proc.h"
#include "bpf/taskstats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 8192)
		return 0;
	if (!(data[0] & 1)) {
		char *s = malloc(size), comm[16], state = 0;

		if (!s)
			return 0;
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		/* A vCPU index only from "CPU <digits>/...". */
		if (smp_thread_vcpu(s) < -1 ||
		    (smp_thread_vcpu(s) >= 0 &&
		     (strncmp(s, "CPU ", 4) || s[4] < '0' || s[4] > '9')))
			abort();
		memset(comm, 0x5a, sizeof(comm));
		if (smp_stat_parse(s, &state, comm) == 0) {
			if (!state || !memchr(comm, 0, sizeof(comm)))
				abort();
			if (smp_thread_vcpu(comm) < -1)
				abort();
		}
		free(s);
	} else if (data[0] & 2) {
		static char path[64];
		struct vmact_err err = { 0 };
		pid_t pid = 0;
		FILE *f;

		if (!path[0])
			snprintf(path, sizeof(path), "/tmp/vmact-fuzz-pid-%d", (int)getpid());
		f = fopen(path, "we");
		if (!f)
			abort();
		if (fwrite(data + 1, 1, size - 1, f) != size - 1 || fclose(f) != 0)
			abort();
		if (vmact_pidfile_read(path, &pid, &err) == 0) {
			size_t n = size - 1;

			if (pid <= 0 || n == 0)
				abort();
			if (data[n] == '\n')
				n--;
			for (size_t i = 1; i <= n; i++)
				if (data[i] < '0' || data[i] > '9')
					abort();
		} else if (err.code == 0 || !err.msg[0]) {
			abort();
		}
		unlink(path);
	} else {
		struct taskstats st;
		struct nlmsghdr *h;
		size_t n = size - 1;
		void *buf = aligned_alloc(8, (n + 7) & ~(size_t)7);

		if (!buf)
			return 0;
		memcpy(buf, data + 1, n);
		h = buf;
		if (n >= sizeof(*h) && h->nlmsg_len >= sizeof(*h) && h->nlmsg_len <= n)
			(void)smp_ts_parse(h, &st);
		free(buf);
	}
	return 0;
}
