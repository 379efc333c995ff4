/* SPDX-License-Identifier: Apache-2.0 */
#include "shared/vcpu-name.h"

#include <limits.h>
#include <string.h>

int vmact_vcpu_thread_index(const char *comm)
{
	/* Not sscanf("CPU %u/"): %u also takes spaces, a sign and a wrapped
	 * "-4294967295". */
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
