/* SPDX-License-Identifier: Apache-2.0 */
/* bench-provision through gRPC: what cluster-autoscaler would see of a
 * node group's provisioning. For each tier, NodeGroupIncreaseSize(+1) on
 * vmact-cloudprovider, then NodeGroupNodes polled every 20 ms until the
 * new instance is instanceRunning (tests/peers/ca-client.js "provision",
 * @grpc/grpc-js), ITERATIONS times; the instance is deleted after each run
 * and, for a pool tier, the next run waits for the pool to be ready again.
 * Groups: "cold" (no pool: a boot per increase), "running", "paused",
 * "saved" (one standby VM in that tier), on the real vmact-groupd with
 * the test guest (tests/lib/cpenv.c). Prints p50 and p90 per tier and
 * ends with `ratio: X`, running-tier p50 / cold p50, measured in this run.
 * Usage: provision-grpc [ITERATIONS]. Root, libvirtd, TCG, the test guest
 * (VMACT_GUEST_DIR). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "tests/lib/cloudprov.h"
#include "tests/lib/cpenv.h"
#include "tests/lib/file.h"

#define GROUP(id, pool)                                                        \
	"{\"id\": \"" id "\", \"min\": 0, \"max\": 2, \"hosts\": [\"h1\"],"    \
	" \"template\": @TEMPLATE@, \"health\": {\"kind\": \"serial\","        \
	" \"pattern\": \"VMACT seq=\"}, \"claim\": {\"channel\": \"serial1\"," \
	" \"ack\": \"VMACT claimed\"}" pool "}"

static const char groups[] =
	GROUP("cold", "") "," GROUP("running", ", \"pool\": {\"running\": 1}") "," GROUP(
		"paused", ", \"pool\": {\"paused\": 1}") "," GROUP("saved",
								   ", \"pool\": {\"saved\": 1}");

static const char *const tiers[] = { "cold", "running", "paused", "saved" };

/* p50 and p90 of a tier's runs, from the client's last "provision" line. */
static int run_tier(struct th_cpenv *e, const char *tier, const char *runs, double *p50,
		    double *p90)
{
	const char *args[] = { "--group",  tier,   "--tier",   tier,  "--runs", runs,
			       "--groupd", e->api, "--wait-s", "900", NULL };
	_cleanup_free_ char *text = NULL;
	char log[160];
	const char *line;
	json_t *j;
	int r;

	snprintf(log, sizeof(log), "%s/provision-%s.log", e->dir, tier);
	r = th_cp_client(e->cp.port, "provision", args, log);
	text = th_read_file(log);
	line = text ? strstr(text, "{\"event\":\"provision\"") : NULL;
	if (r != 0 || !line)
		return -1;
	j = json_loadb(line, strcspn(line, "\n"), 0, NULL);
	*p50 = json_number_value(json_object_get(j, "p50_ms"));
	*p90 = json_number_value(json_object_get(j, "p90_ms"));
	json_decref(j);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "cold", "running", "paused", "saved", NULL };
	const char *runs = argc > 1 ? argv[1] : "10";
	double p50[4] = { NAN, NAN, NAN, NAN }, p90[4] = { NAN, NAN, NAN, NAN };
	struct th_cpenv e;
	char msg[256];
	int failed = 0;

	if (atoi(runs) <= 0) {
		fprintf(stderr, "provision-grpc: ITERATIONS must be a positive number\n");
		return 2;
	}
	if (th_cpenv_start(&e, groups, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "provision-grpc: %s\n", msg);
		th_cpenv_stop(&e, NULL);
		return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(tiers); i++) {
		if (run_tier(&e, tiers[i], runs, &p50[i], &p90[i]) < 0) {
			fprintf(stderr, "provision-grpc: the %s tier's runs failed\n", tiers[i]);
			failed = 1;
		}
		printf("%-8s p50 %8.0f ms  p90 %8.0f ms  (%s runs, increase -> Running through gRPC)\n",
		       tiers[i], p50[i], p90[i], runs);
		fflush(stdout);
	}
	th_cpenv_stop(&e, names);
	for (size_t i = 1; i < ARRAY_SIZE(tiers); i++)
		printf("%s/cold p50: %.3f\n", tiers[i], p50[i] / p50[0]);
	printf("ratio: %.3f\n", p50[1] / p50[0]);
	return failed;
}
