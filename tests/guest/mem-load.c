/* SPDX-License-Identifier: Apache-2.0 */
/* vmact test guest: memory load. `mem-load N [RATE]` allocates N MiB,
 * RATE MiB a second (0 or none: as fast as it can), writing to every page
 * so that the guest really holds it, then keeps it until it is killed (the
 * init's "free"). After each MiB it writes how many it holds to
 * /run/alloc.<pid>, which the init's status loop adds up. The memory is
 * anonymous and private, filled with a pattern (not zeroes), so it is
 * never shared, merged or given back behind the test's back.
 * Built static by build-guest.sh; runs as a child of the guest's init. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Fixed width, so that a shorter number never leaves digits of a longer
 * one behind. */
static void report(int fd, unsigned long held)
{
	char line[16];
	int n = snprintf(line, sizeof(line), "%10lu\n", held);

	if (pwrite(fd, line, (size_t)n, 0) != n) {
		/* /run is the initramfs: nothing else to do */
	}
}

int main(int argc, char **argv)
{
	unsigned long want, held = 0;
	double rate = 0, start;
	char path[64];
	int fd;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: mem-load MIB [MIB_PER_SECOND]\n");
		return 2;
	}
	want = strtoul(argv[1], NULL, 10);
	if (argc == 3)
		rate = strtod(argv[2], NULL);
	snprintf(path, sizeof(path), "/run/alloc.%d", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	report(fd, 0);
	start = now_s();
	while (held < want) {
		unsigned char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			/* Overcommit refused it: try again shortly, as an
			 * application retrying would. */
			usleep(10000);
			continue;
		}
		memset(p, 0x5a ^ (int)(held & 0xff), MIB);
		held++;
		report(fd, held);
		if (rate > 0) {
			double due = start + (double)held / rate, t = now_s();

			if (due > t)
				usleep((useconds_t)((due - t) * 1e6));
		}
	}
	for (;;)
		pause();
}
