/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd in tests and benches (prefix th_cluster_): its user, its
 * lease key, storage pools with the test guest's base image, programs run
 * as its user, its API, and cleaning up the domains and pools. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>
#include <libvirt/libvirt.h>

#include "tests/lib/proc.h"

#define TH_CLUSTER_USER "vmact-cluster"

struct th_cluster_user {
	uid_t uid;
	gid_t gid;
	char home[256];
};

/* The cluster user (tests/host/setup-host.sh makes it); -ENOENT. */
int th_cluster_user(struct th_cluster_user *u);

/* Spawns args[0] with args as the cluster user (setpriv execs: the pid is
 * the program's), its HOME set and XDG_RUNTIME_DIR unset (its
 * qemu:///session is then $HOME/.cache/libvirt), output to log. */
int th_cluster_spawn(struct th_proc *p, const struct th_cluster_user *u, const char *const args[],
		     const char *log);
/* virsh -c qemu:///session ARGS... as the cluster user; its status. */
int th_cluster_session_virsh(const struct th_cluster_user *u, const char *const args[]);
/* The URI by which root reaches the cluster user's qemu:///session. */
void th_cluster_session_uri(const struct th_cluster_user *u, char *buf, size_t len);

/* A fresh lease key at path: root's, the cluster user's group may read. */
int th_cluster_key(const struct th_cluster_user *u, const char *path);

/* A dir storage pool `name` in dir (made, owned by owner) holding a copy
 * of the test guest's node-base.qcow2, defined and started on c (for the
 * session, through virsh as the user, c only looked at). 0 or -errno. */
int th_cluster_pool(virConnectPtr c, const struct th_cluster_user *session_user, const char *name,
		    const char *dir);
/* Deletes the pool's volumes, stops and undefines it. */
void th_cluster_pool_remove(virConnectPtr c, const char *name);
/* Destroys and undefines every domain whose name starts with prefix. */
void th_cluster_remove_domains(virConnectPtr c, const char *prefix);

/* GET of an http:// URL (a metrics page): its body (malloc'd), NULL when
 * it did not answer 200. */
char *th_cluster_http_get(const char *url);

/* method path [body] on vmact-groupd's API socket: the answer's JSON (NULL
 * without one), *status (0 without an answer). */
json_t *th_cluster_api(const char *socket, const char *method, const char *path, const char *body,
		       long *status);
