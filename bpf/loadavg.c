/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/loadavg.h"

#include <math.h>

static const unsigned long smp_exp[3] = { SMP_EXP_1, SMP_EXP_5, SMP_EXP_15 };

void smp_loadavg_update(struct smp_loadavg *la, double mean, double dt_s)
{
	if (!(dt_s > 0))
		return;
	if (!la->seeded) {
		for (int i = 0; i < 3; i++)
			la->avg[i] = mean;
		la->seeded = true;
		return;
	}
	for (int i = 0; i < 3; i++) {
		double e = pow((double)smp_exp[i] / SMP_FIXED_1, dt_s / SMP_LOAD_FREQ_S);
		la->avg[i] = la->avg[i] * e + mean * (1.0 - e);
	}
}

unsigned long smp_loadavg_kernel_step(unsigned long load, unsigned long exp, unsigned long active)
{
	unsigned long newload = load * exp + active * (SMP_FIXED_1 - exp);

	/* The kernel rounds up while the load is rising. */
	if (active >= load)
		newload += SMP_FIXED_1 - 1;
	return newload / SMP_FIXED_1;
}
