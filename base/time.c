/* SPDX-License-Identifier: Apache-2.0 */
#include "base/time.h"

#include <time.h>

uint64_t vmact_now_nsec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * VMACT_USEC_PER_SEC * VMACT_NSEC_PER_USEC +
	       (uint64_t)ts.tv_nsec;
}

uint64_t vmact_now_usec(void)
{
	return vmact_now_nsec() / VMACT_NSEC_PER_USEC;
}

uint64_t vmact_loop_now_usec(sd_event *ev)
{
	uint64_t t;

	if (ev && sd_event_now(ev, CLOCK_MONOTONIC, &t) >= 0)
		return t;
	return vmact_now_usec();
}
