/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/taskstats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/taskstats.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "base/list.h"
#include "base/macro.h"
#include "bpf/proc.h"

struct smp_ts {
	struct nl_sock *sk;
	int family;
};

struct ts_thread {
	VMACT_LIST_FIELDS(struct ts_thread, threads);
	pid_t tid;
	unsigned gen;
	char state;
	char comm[16];
	uint64_t run_ns, delay_ns, nvcsw, nivcsw;
};

struct smp_ts_vm {
	pid_t tgid;
	unsigned gen;
	struct ts_thread *threads; /* live at the last poll */
	/* Last totals of threads that have exited. */
	uint64_t dead_run, dead_delay, dead_nvcsw, dead_nivcsw;
	int64_t nr_runnable;
};

DEFINE_PTR_CLEANUP(nl_msg_freep, struct nl_msg, nlmsg_free)

int smp_ts_open(struct smp_ts **out, struct vmact_err *err)
{
	_cleanup_free_ struct smp_ts *ts = calloc(1, sizeof(*ts));
	int r;

	if (!ts)
		return vmact_err_set(err, ENOMEM, "taskstats: out of memory");
	ts->sk = nl_socket_alloc();
	if (!ts->sk)
		return vmact_err_set(err, ENOMEM, "taskstats: cannot allocate netlink socket");
	r = genl_connect(ts->sk);
	if (r < 0) {
		nl_socket_free(ts->sk);
		return vmact_err_set(err, EIO, "taskstats: generic netlink connect: %s",
				     nl_geterror(r));
	}
	ts->family = genl_ctrl_resolve(ts->sk, TASKSTATS_GENL_NAME);
	if (ts->family < 0) {
		r = ts->family;
		nl_socket_free(ts->sk);
		return vmact_err_set(err, EOPNOTSUPP,
				     "taskstats: generic netlink family %s not available "
				     "(kernel without CONFIG_TASKSTATS?): %s",
				     TASKSTATS_GENL_NAME, nl_geterror(r));
	}
	/* One request, one answer (or one error): no ACKs to wait for. */
	nl_socket_disable_auto_ack(ts->sk);
	*out = TAKE_PTR(ts);
	return 0;
}

void smp_ts_close(struct smp_ts *ts)
{
	if (!ts)
		return;
	nl_socket_free(ts->sk);
	free(ts);
}

struct ts_answer {
	bool got;
	struct taskstats st;
};

int smp_ts_parse(const struct nlmsghdr *h, struct taskstats *st)
{
	struct nlattr *tb[TASKSTATS_TYPE_MAX + 1], *nested[TASKSTATS_TYPE_MAX + 1];
	struct nlattr *aggr;
	size_t len;

	if (genlmsg_parse((struct nlmsghdr *)h, 0, tb, TASKSTATS_TYPE_MAX, NULL) < 0)
		return -EPROTO;
	aggr = tb[TASKSTATS_TYPE_AGGR_PID];
	if (!aggr || nla_parse_nested(nested, TASKSTATS_TYPE_MAX, aggr, NULL) < 0 ||
	    !nested[TASKSTATS_TYPE_STATS])
		return -EPROTO;
	/* The kernel's struct may be newer (longer) or older than ours. */
	len = (size_t)nla_len(nested[TASKSTATS_TYPE_STATS]);
	memset(st, 0, sizeof(*st));
	memcpy(st, nla_data(nested[TASKSTATS_TYPE_STATS]), len < sizeof(*st) ? len : sizeof(*st));
	return 0;
}

static int ts_valid(struct nl_msg *msg, void *arg)
{
	struct ts_answer *a = arg;

	if (smp_ts_parse(nlmsg_hdr(msg), &a->st) < 0)
		return NL_SKIP;
	a->got = true;
	return NL_OK;
}

/* 0, -ESRCH when the thread is gone, other negative errno. */
static int ts_query(struct smp_ts *ts, pid_t tid, struct taskstats *st, struct vmact_err *err)
{
	_cleanup_(nl_msg_freep) struct nl_msg *msg = nlmsg_alloc();
	struct ts_answer a = { 0 };
	int r;

	if (!msg)
		return vmact_err_set(err, ENOMEM, "taskstats: out of memory");
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, ts->family, 0, 0, TASKSTATS_CMD_GET,
			 TASKSTATS_VERSION) ||
	    nla_put_u32(msg, TASKSTATS_CMD_ATTR_PID, (uint32_t)tid) < 0)
		return vmact_err_set(err, ENOMEM, "taskstats: cannot build request");
	r = nl_send_auto(ts->sk, msg);
	if (r < 0)
		return vmact_err_set(err, EIO, "taskstats: send for tid %d: %s", tid,
				     nl_geterror(r));
	r = nl_socket_modify_cb(ts->sk, NL_CB_VALID, NL_CB_CUSTOM, ts_valid, &a);
	if (r < 0)
		return vmact_err_set(err, EIO, "taskstats: %s", nl_geterror(r));
	r = nl_recvmsgs_default(ts->sk);
	if (r == -NLE_OBJ_NOTFOUND)
		return -ESRCH; /* exited between listing and query */
	if (r < 0)
		return vmact_err_set(err, EIO, "taskstats: receive for tid %d: %s", tid,
				     nl_geterror(r));
	if (!a.got)
		return vmact_err_set(err, EPROTO, "taskstats: answer for tid %d has no stats", tid);
	*st = a.st;
	return 0;
}

int smp_ts_vm_new(pid_t tgid, struct smp_ts_vm **out, struct vmact_err *err)
{
	struct smp_ts_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		return vmact_err_set(err, ENOMEM, "taskstats: out of memory");
	vm->tgid = tgid;
	*out = vm;
	return 0;
}

void smp_ts_vm_free(struct smp_ts_vm *vm)
{
	if (!vm)
		return;
	struct ts_thread *t, *n;

	VMACT_LIST_FOREACH_SAFE(threads, t, n, vm->threads)
		free(t);
	free(vm);
}

static struct ts_thread *ts_thread_get(struct smp_ts_vm *vm, pid_t tid)
{
	struct ts_thread *t;

	VMACT_LIST_FOREACH(threads, t, vm->threads)
		if (t->tid == tid)
			return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	VMACT_LIST_APPEND(threads, vm->threads, t);
	return t;
}

int smp_ts_vm_poll(struct smp_ts *ts, struct smp_ts_vm *vm, struct vmact_err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	char path[64];
	struct dirent *de;
	int64_t runnable = 0;

	vm->gen++;
	snprintf(path, sizeof(path), "/proc/%d/task", vm->tgid);
	d = opendir(path);
	/* A VM whose process is gone has no live threads: every total stays. */
	if (!d && errno != ENOENT)
		return vmact_err_set(err, errno, "%s: %s", path, strerror(errno));
	while (d && (de = readdir(d))) {
		struct taskstats st = { 0 };
		struct ts_thread *t;
		char state, comm[16];
		pid_t tid;
		int r;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		tid = (pid_t)atoi(de->d_name);
		if (smp_thread_stat(vm->tgid, tid, &state, comm) < 0)
			continue; /* exited meanwhile */
		r = ts_query(ts, tid, &st, err);
		if (r == -ESRCH)
			continue;
		if (r < 0)
			return r;
		t = ts_thread_get(vm, tid);
		if (!t)
			return vmact_err_set(err, ENOMEM, "taskstats: out of memory");
		t->gen = vm->gen;
		t->state = state;
		memcpy(t->comm, comm, sizeof(t->comm));
		/* Counters of a live thread only grow; guard against a tid
		 * reused by a new thread between two polls. */
		if (st.cpu_run_virtual_total < t->run_ns || st.cpu_delay_total < t->delay_ns) {
			vm->dead_run += t->run_ns;
			vm->dead_delay += t->delay_ns;
			vm->dead_nvcsw += t->nvcsw;
			vm->dead_nivcsw += t->nivcsw;
		}
		t->run_ns = st.cpu_run_virtual_total;
		t->delay_ns = st.cpu_delay_total;
		t->nvcsw = st.nvcsw;
		t->nivcsw = st.nivcsw;
		if (state == 'R')
			runnable++;
	}
	/* Fold threads that were not seen this time. */
	struct ts_thread *t, *n;
	VMACT_LIST_FOREACH_SAFE(threads, t, n, vm->threads) {
		if (t->gen == vm->gen)
			continue;
		vm->dead_run += t->run_ns;
		vm->dead_delay += t->delay_ns;
		vm->dead_nvcsw += t->nvcsw;
		vm->dead_nivcsw += t->nivcsw;
		VMACT_LIST_REMOVE(threads, vm->threads, t);
		free(t);
	}
	vm->nr_runnable = runnable;
	return 0;
}

void smp_ts_vm_totals(const struct smp_ts_vm *vm, struct smp_ts_totals *out)
{
	*out = (struct smp_ts_totals){
		.run_ns = vm->dead_run,
		.delay_ns = vm->dead_delay,
		.nvcsw = vm->dead_nvcsw,
		.nivcsw = vm->dead_nivcsw,
		.nr_runnable = vm->nr_runnable,
	};
	const struct ts_thread *t;

	VMACT_LIST_FOREACH(threads, t, vm->threads) {
		out->run_ns += t->run_ns;
		out->delay_ns += t->delay_ns;
		out->nvcsw += t->nvcsw;
		out->nivcsw += t->nivcsw;
	}
}

size_t smp_ts_vm_threads(const struct smp_ts_vm *vm, struct smp_thread *out, size_t max)
{
	const struct ts_thread *t;
	size_t n = 0;

	for (t = vm->threads; t && n < max; t = t->threads_next, n++) {
		out[n] = (struct smp_thread){
			.tid = t->tid,
			.runnable = t->state == 'R',
			.runnable_ns = t->run_ns + t->delay_ns,
			.oncpu_ns = t->run_ns,
			.delay_ns = t->delay_ns,
		};
		memcpy(out[n].comm, t->comm, sizeof(out[n].comm));
		out[n].vcpu = smp_thread_vcpu(t->comm);
	}
	return n;
}
