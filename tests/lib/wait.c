/* SPDX-License-Identifier: Apache-2.0 */
#include <unistd.h>

#include "tests/lib/wait.h"

double th_now_s(void)
{
	return (double)vmact_now_usec() / (double)VMACT_USEC_PER_SEC;
}

bool th_wait_step(sd_event *ev, uint64_t end_usec)
{
	if (vmact_now_usec() > end_usec)
		return false;
	if (!ev) {
		usleep(50000);
		return true;
	}
	return sd_event_run(ev, 50000) >= 0;
}

bool th_wait_until(sd_event *ev, bool (*pred)(void *arg), void *arg, uint64_t limit_usec)
{
	return TH_WAIT(ev, pred(arg), limit_usec);
}

void th_run_for(sd_event *ev, uint64_t usec)
{
	uint64_t end = vmact_now_usec() + usec;

	while (vmact_now_usec() < end)
		sd_event_run(ev, 20000);
}
