/* SPDX-License-Identifier: Apache-2.0 */
/* bench-provision-k8s: what a pending pod waits for when cluster-autoscaler
 * scales a vmact node group up, on a real control plane (issue 35;
 * tests/lib/k8senv.h). For each tier, NodeGroupIncreaseSize(+1) through
 * vmact-cloudprovider (tests/peers/ca-client.js), then the API server's
 * Nodes polled every 100 ms until one with a new spec.providerID is there
 * (registered) and its Ready condition is True, and the node's console
 * read for vmact-node's "kubelet started" (the claim carried out: what
 * follows is the kubelet's own start); the instance is then
 * deleted as the autoscaler deletes one, and for the running tier the next
 * run waits for the pool to be ready again. Groups: "k8s-cold" (no pool:
 * a boot per increase) and "k8s-run" (one standby VM of the node image in
 * the running tier). Prints each run, the p50 per tier, and ends with
 * `ratio: X`, the running tier's p50 to registered over the cold boot's,
 * measured in this run. Usage: provision-k8s [RUNS] (default 3). Root,
 * libvirtd, TCG, the node image (VMACT_K8S_NODE) and the binaries.
 * SIGINT or SIGTERM ends the run where it is and tears everything down (the
 * groups' VMs, vmact-groupd, the API server and etcd) before it exits 130:
 * the daemons would die with it, but the VMs outlive their group's daemon
 * by design. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/macro.h"
#include "base/time.h"
#include "tests/lib/k8senv.h"
#include "tests/lib/wait.h"

DEFINE_PTR_CLEANUP(bench_jsonp, json_t, json_decref)

#define GROUP(id, pool)                                                                            \
	"{\"id\": \"" id "\", \"min\": 0, \"max\": 1, \"hosts\": [\"h1\"],"                        \
	" \"labels\": {\"vmact.dev/pool\": \"" id "\"}, \"template\": @TEMPLATE@,"                 \
	" \"health\": {\"kind\": \"serial\", \"pattern\": \"VMACT-NODE \"},"                       \
	" \"claim\": {\"channel\": \"virtio:org.vmact.claim.0\", \"ack\": \"VMACT-NODE claimed\"," \
	" \"secret\": {\"kind\": \"kubeconfig\", \"file\": \"@SECRET@\"}},"                        \
	" \"lifecycle\": {\"boot_timeout_s\": 900}" pool "}"

static const char groups[] = GROUP("k8s-cold", "") ", " GROUP("k8s-run",
							      ", \"pool\": {\"running\": 1}");

/* Bounds against a hung run, not figures. */
#define LIMIT_US (900ULL * VMACT_USEC_PER_SEC)

static struct th_k8senv K;
/* Set by SIGINT/SIGTERM: every wait ends, and main tears down. */
static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double p50(const double *v, size_t n)
{
	double s[64];

	if (n == 0)
		return NAN;
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp);
	return s[(n + 1) / 2 - 1];
}

static bool unseen(const char *provider_id, void *seen)
{
	return !json_object_get(seen, provider_id);
}

static bool standby_ready(void *group)
{
	return stopping || th_k8senv_running_ready(&K, group) >= 1;
}

/* One increase: seconds to the console's "kubelet started" (vmact-node's
 * line, the claim carried out: the rest is the kubelet's own start), to
 * registered and to Ready; -1 when it failed. */
static int run_once(const char *group, bool pool, double *started, double *reg, double *ready)
{
	_cleanup_(bench_jsonp) json_t *seen = json_object(), *doc = th_k8senv_nodes(&K);
	_cleanup_(bench_jsonp) json_t *node = NULL;
	const char *inc[] = { "--delta", "1", NULL };
	char log[256], id[256], name[128];
	unsigned consoles;
	uint64_t end;
	double t0;
	json_t *n;
	size_t i;

	if (pool &&
	    (!th_wait_daemon(&K.env.groupd, standby_ready, (void *)group, 900) || stopping)) {
		fprintf(stderr, "provision-k8s: %s: no standby ready\n", group);
		return -1;
	}
	json_array_foreach(json_object_get(doc, "items"), i, n)
		json_object_set_new(seen,
				    json_string_value(json_object_get(json_object_get(n, "spec"),
								      "providerID"))
					    ?: "",
				    json_true());
	consoles = th_k8senv_consoles_with(&K, "kubelet started");
	t0 = th_now_s();
	if (th_k8senv_client(&K, group, "increase", inc, log, sizeof(log)) != 0)
		return -1;
	*started = *reg = *ready = -1;
	for (end = vmact_now_usec() + LIMIT_US; !stopping && vmact_now_usec() < end;
	     usleep(100 * 1000)) {
		json_decref(node);
		if (*started < 0 && th_k8senv_consoles_with(&K, "kubelet started") > consoles)
			*started = th_now_s() - t0;
		node = th_k8senv_node_where(&K, unseen, seen);
		if (node && *reg < 0)
			*reg = th_now_s() - t0;
		if (node && th_k8senv_node_ready(node)) {
			*ready = th_now_s() - t0;
			break;
		}
	}
	if (!node || *ready < 0) {
		fprintf(stderr, "provision-k8s: %s: no Node %s\n", group,
			node ? "Ready" : "registered");
		return -1;
	}
	snprintf(id, sizeof(id), "%s",
		 json_string_value(json_object_get(json_object_get(node, "spec"), "providerID")));
	snprintf(name, sizeof(name), "%s",
		 json_string_value(json_object_get(json_object_get(node, "metadata"), "name")));
	{
		const char *del[] = { "--provider-id", id, "--name", name, NULL };

		if (th_k8senv_client(&K, group, "delete-one", del, log, sizeof(log)) != 0 ||
		    th_k8senv_client(&K, group, "settle", NULL, log, sizeof(log)) != 0)
			return -1;
	}
	/* Its Node gone too (vmact-groupd deletes it), before the next. */
	n = NULL;
	for (end = vmact_now_usec() + 60 * VMACT_USEC_PER_SEC;
	     !stopping && (n = th_k8senv_node_of(&K, id)) && vmact_now_usec() < end;
	     usleep(200 * 1000))
		json_decref(n);
	json_decref(n);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "k8s-cold", "k8s-run", NULL };
	static const struct {
		const char *group, *tier;
		bool pool;
	} tiers[] = { { "k8s-cold", "cold boot", false }, { "k8s-run", "running tier", true } };
	int runs = argc > 1 ? atoi(argv[1]) : 3, failed = 0;
	double started[2][64], reg[2][64], ready[2][64], p_started[2], p_reg[2], p_ready[2];
	size_t got[2] = { 0, 0 };
	char msg[256];

	struct sigaction sa = { .sa_handler = on_signal };

	if (runs <= 0 || runs > 64) {
		fprintf(stderr, "provision-k8s: RUNS must be 1 to 64\n");
		return 2;
	}
	/* No SA_RESTART: a wait in a system call ends too. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (th_k8senv_start(&K, groups, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "provision-k8s: %s\n", msg);
		th_k8senv_stop(&K, names);
		return 1;
	}
	for (size_t t = 0; t < ARRAY_SIZE(tiers); t++)
		for (int i = 0; i < runs; i++) {
			double k, r, d;

			if (stopping || run_once(tiers[t].group, tiers[t].pool, &k, &r, &d) < 0) {
				failed = 1;
				break;
			}
			started[t][got[t]] = k;
			reg[t][got[t]] = r;
			ready[t][got[t]++] = d;
			printf("%-12s run %d: kubelet started %6.1f s, registered %6.1f s, Ready "
			       "%6.1f s after the increase\n",
			       tiers[t].tier, i, k, r, d);
			fflush(stdout);
		}
	th_k8senv_stop(&K, names);
	if (stopping) {
		fprintf(stderr, "provision-k8s: stopped by a signal; torn down\n");
		return 130;
	}
	for (size_t t = 0; t < ARRAY_SIZE(tiers); t++) {
		p_started[t] = p50(started[t], got[t]);
		p_reg[t] = p50(reg[t], got[t]);
		p_ready[t] = p50(ready[t], got[t]);
		printf("%-12s p50 kubelet started %6.1f s, registered %6.1f s, Ready %6.1f s (%zu "
		       "runs)\n",
		       tiers[t].tier, p_started[t], p_reg[t], p_ready[t], got[t]);
	}
	printf("running/cold p50 Ready: %.3f\n", p_ready[1] / p_ready[0]);
	printf("ratio: %.3f\n", p_reg[1] / p_reg[0]);
	return failed;
}
