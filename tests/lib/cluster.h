/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-groupd in tests and benches (prefix th_cluster_): its user, its
 * lease key, storage pools with the test guest's base image, programs run
 * as its user, its API, and cleaning up the domains and pools. */
#pragma once

#include <limits.h>
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

/* The cluster stack of an integration test (th_cluster_stack_): the
 * user, a scratch directory (root's, 0755, the user's group) with a lease
 * key, the API socket's directory (the user's), a logs directory anyone
 * may write, vmact-groupd and vmact-arbiter of this build, and
 * vmact-groupd itself, run as the user with a log of its own per start
 * (groupd-N.log). The test starts the arbiters and libvirt hosts it needs;
 * th_cluster_stack_teardown stops vmact-groupd and removes the directory. */
struct th_cluster_stack {
	struct th_cluster_user u;
	char dir[64];
	char key[128], sock[108], logs[128];
	char cfg[128];  /* DIR/groupd.json, for the test to write */
	char alog[128]; /* DIR/arbiter.log, for the test's vmact-arbiter */
	char glog[160]; /* the running vmact-groupd's */
	char groupd[PATH_MAX], arbiter[PATH_MAX];
	unsigned starts;       /* of vmact-groupd */
	unsigned metrics_port; /* vmact-groupd's, 0 without metrics */
	struct th_proc gd;
};

/* All of the above but vmact-groupd, the directory /tmp/PREFIX-XXXXXX.
 * 0, -ENOENT (no cluster user, a program not built) or -errno. */
int th_cluster_stack_init(struct th_cluster_stack *s, const char *prefix);

/* chown path to root (user: the cluster user) and the user's group,
 * chmod mode; 0 or -errno. */
int th_cluster_stack_own(const struct th_cluster_stack *s, const char *path, bool user,
			 unsigned mode);

/* The directory DIR/name made, the cluster user's with mode 0700 (for
 * the sockets of its daemons); its path in out. 0 or -errno. */
int th_cluster_stack_user_dir(const struct th_cluster_stack *s, const char *name, char *out,
			      size_t len);

/* Starts vmact-groupd -c cfg -v as the user, its log DIR/groupd-N.log,
 * and waits up to limit_s until its API says it found its VMs (ready).
 * 0; -ETIMEDOUT (its log's tail printed) or -errno. */
int th_cluster_stack_start_groupd(struct th_cluster_stack *s, const char *cfg, double limit_s);

/* th_cluster_api on its socket. */
json_t *th_cluster_stack_api(const struct th_cluster_stack *s, const char *method, const char *path,
			     const char *body, long *status);

/* GET /v1/groups/GROUP/nodes: the group's nodes (an array the caller
 * owns), never NULL. */
json_t *th_cluster_stack_nodes(const struct th_cluster_stack *s, const char *group);

/* A node error awaited: th_cluster_stack_node_error's argument. */
struct th_cluster_node_error {
	const struct th_cluster_stack *s;
	const char *group, *code;
};

/* A predicate for th_wait_daemon: true when some node of the group has
 * an error with that code (struct th_cluster_node_error *want). */
bool th_cluster_stack_node_error(void *want);

/* Fails the cmocka test with the message, after printing the tails of
 * vmact-groupd's log and of the arbiter's (alog, when there is one). */
void th_cluster_stack_fail(const struct th_cluster_stack *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* POST /v1/groups/GROUP/WHAT with body, a change that must succeed: the
 * group's new target; th_cluster_stack_fail when the answer was not 200
 * with a target. */
int th_cluster_stack_change(const struct th_cluster_stack *s, const char *group, const char *what,
			    const char *body);

/* Asks vmact-groupd to delete every node of the group not deleting
 * already (nothing when there is none), through th_cluster_stack_change.
 * The caller waits for the group to empty, its own way. */
void th_cluster_stack_delete_all(const struct th_cluster_stack *s, const char *group);

/* Stops vmact-groupd (SIGTERM, 30 s, then SIGKILL); with VMACT_TEST_VERBOSE
 * prints every one of its logs. */
void th_cluster_stack_stop(struct th_cluster_stack *s);

/* th_cluster_stack_stop, then the directory removed. Safe on a fixture in
 * any state, zeroed included. */
void th_cluster_stack_teardown(struct th_cluster_stack *s);
