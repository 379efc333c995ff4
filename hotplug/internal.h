/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between hotplug/conn.c and hotplug/op.c. */
#pragma once

#include <pthread.h>

#include <libvirt/libvirt.h>

#include "hotplug/hotplug.h"

struct hp_op;

/* One queued item for the sd-event thread: a libvirt event, or a finished
 * operation (op != NULL). */
struct hp_qitem {
	struct hp_qitem *next;
	struct hp_event ev;
	bool disconnected;   /* close callback fired for connection gen */
	unsigned gen;
	struct hp_op *op;
};

struct hp_conn {
	sd_event *event;
	sd_event_source *efd_src;
	sd_event_source *retry_src;
	int efd;
	hp_event_fn fn;
	void *userdata;
	char *uri;
	char *qemu_rundir;
	int ka_interval;
	unsigned ka_count;
	uint64_t backoff_min_us, backoff_max_us, backoff_us;
	unsigned reconnects;

	/* Guarded by lock: the connection is shared with worker threads. */
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* connection changed, or an op was kicked */
	virConnectPtr vc;
	unsigned gen;             /* bumped on every (re)connect and loss */
	int cb_ids[8];
	size_t n_cb;
	struct hp_qitem *q_head, *q_tail;
	struct hp_op *ops;        /* in flight */
	bool closing;
	/* Domains (uuid + libvirt id, so a restarted VM starts clean) whose
	 * vCPU unplug outlived libvirt's wait. A libvirtd restart makes
	 * libvirt's count right again, but re-plugging still crashed QEMU 7.2
	 * here, so vmact keeps refusing vCPU changes for them. */
	struct hp_poisoned {
		char uuid[HP_UUID_LEN];
		int id;
	} poisoned[64];
	size_t n_poisoned, poison_next;
};

struct hp_op {
	struct hp_op *next;
	struct hp_conn *conn;
	char uuid[HP_UUID_LEN];
	struct hp_op_req req;
	hp_op_fn fn;
	void *userdata;
	pthread_t thread;
	/* Guarded by conn->lock; set by event callbacks for this domain. */
	unsigned kicks;
	bool stopped;                     /* lifecycle STOPPED seen */
	char removed_alias[HP_ALIAS_MAX];
	char removal_failed_alias[HP_ALIAS_MAX];
	struct hp_op_result res;
};

void hp_queue_push(struct hp_conn *c, struct hp_qitem *it);
/* Worker side: returns a referenced connection (virConnectClose it), or
 * NULL when disconnected; *gen receives the generation. */
virConnectPtr hp_conn_get(struct hp_conn *c, unsigned *gen);
void *hp_op_thread(void *arg);
void hp_op_complete(struct hp_conn *c, struct hp_op *op);
int hp_state_read_vc(struct hp_conn *c, virConnectPtr vc, const char *uuid, struct hp_state *st,
		     struct vmact_err *err);
/* Maps the last libvirt error to -errno + message. */
int hp_virt_err(struct vmact_err *err, const char *what);
