/* SPDX-License-Identifier: Apache-2.0 */
/* A node-groups host for vmact-cloudprovider's integration test and bench:
 * qemu:///system with a storage pool holding the test guest's base image,
 * a standalone vmact-arbiter with a lease key, vmact-groupd with the
 * groups given, and vmact-cloudprovider on it; groupd and the provider run
 * as vmact-cluster (tests/host/setup-host.sh creates it). Root. */
#pragma once

#include <libvirt/libvirt.h>
#include <stddef.h>

#include "tests/lib/cloudprov.h"
#include "tests/lib/proc.h"

#define TH_CPENV_USER   "vmact-cluster"
#define TH_CPENV_PREFIX "cpi-" /* groupd's libvirt.name_prefix */

struct th_cpenv {
	char dir[64], pool[64], api[128], key_arbiter[128], key_groupd[128], config[128];
	char guest[256]; /* VMACT_GUEST_DIR */
	unsigned arbiter_port;
	char arbiter_cpu[16], arbiter_memory[16]; /* its --cpu, --memory */
	char top_extra[1024]; /* more top-level keys of groupd's configuration */
	char *template_json;  /* @TEMPLATE@ when not the test guest's (malloc'd) */
	char base_image[256]; /* the pool's base: an overlay of it; "" the test guest's copy */
	char prefix[16];      /* groupd's libvirt.name_prefix */
	char groupd_log[160]; /* the running vmact-groupd's (groupd.log, groupd-N.log) */
	unsigned groupd_starts;
	struct th_proc arbiter, groupd;
	struct th_cp cp;
	virConnectPtr vc;
	unsigned uid, gid;
};

/* The "groups" array of groupd's configuration (JSON text, host "h1");
 * each "@TEMPLATE@" stands for the test guest's template object (TCG, 1
 * vCPU up to 2, 256Mi up to 512Mi, its kernel, initrd and base image). 0,
 * or -1 with msg. */
int th_cpenv_start(struct th_cpenv *e, const char *groups, char *msg, size_t msglen);
/* th_cpenv_start with the arbiter's capacity (NULL: 16 CPUs, 32Gi) and
 * more top-level keys of groupd's configuration (JSON text without its
 * braces, e.g. "\"scheduler\": {...}"; NULL: none). */
struct th_cpenv_opts {
	const char *arbiter_cpu, *arbiter_memory, *top_extra;
	const char *prefix; /* NULL: TH_CPENV_PREFIX */
	/* What @TEMPLATE@ stands for (a JSON object; its base_volume
	 * "node-base.qcow2"), and the image that volume is an overlay of
	 * (readable by libvirt-qemu): another node image than the test
	 * guest's (make check-k8s). NULL: the test guest's. */
	const char *template_json, *base_image;
};
int th_cpenv_start_opts(struct th_cpenv *e, const char *groups, const struct th_cpenv_opts *o,
			char *msg, size_t msglen);
/* Start vmact-groupd (its log appended to) or the arbiter (on the same
 * port, its ledger empty) again after a kill; 0 or -1 with msg. */
int th_cpenv_restart_groupd(struct th_cpenv *e, char *msg, size_t msglen);
int th_cpenv_restart_arbiter(struct th_cpenv *e, char *msg, size_t msglen);
/* Restarts vmact-cloudprovider (after a kill); 0 or -1. */
int th_cpenv_restart_cp(struct th_cpenv *e);
/* Drains the groups through the provider, stops everything, destroys
 * what groupd left (standby VMs stay recorded for its next start), removes
 * the pool and the directory. The number of domains that were left. */
int th_cpenv_stop(struct th_cpenv *e, const char *const *groups);

/* The names of the domains groupd made (its prefix), malloc'd, NULL-ended. */
int th_cpenv_domains(struct th_cpenv *e, char ***names);
void th_cpenv_free_names(char **names);
/* The domain of libvirt://HOST/UUID, NULL when there is none. */
virDomainPtr th_cpenv_domain(struct th_cpenv *e, const char *provider_id);
/* Volumes in the pool now. */
int th_cpenv_volumes(struct th_cpenv *e);
