/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/task-iter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/macro.h"
#include "bpf/fds.h"

void smp_pending_list_free(struct smp_pending_item **head)
{
	struct smp_pending_item *i, *n;

	VMACT_LIST_FOREACH_SAFE(items, i, n, *head)
		free(i);
	*head = NULL;
}

int smp_task_iter_init(struct smp_task_iter *it, int prog_fd, unsigned max_vms,
		       struct vmact_err *err)
{
	*it = (struct smp_task_iter){ .prog_fd = prog_fd, .max_vms = max_vms, .all = -1 };
	it->vm = malloc(max_vms * sizeof(*it->vm));
	if (!it->vm) {
		smp_fd_close(&it->prog_fd);
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	}
	for (unsigned i = 0; i < max_vms; i++)
		it->vm[i] = -1;
	return 0;
}

void smp_task_iter_done(struct smp_task_iter *it)
{
	if (!it->vm) /* never set up */
		return;
	for (unsigned i = 0; i < it->max_vms; i++)
		smp_fd_close(&it->vm[i]);
	free(it->vm);
	smp_fd_close(&it->all);
	smp_fd_close(&it->prog_fd);
	*it = (struct smp_task_iter){ .prog_fd = -1, .all = -1 };
}

void smp_task_iter_drop(struct smp_task_iter *it, unsigned slot)
{
	smp_fd_close(&it->vm[slot]);
}

/* Runs the iterator through link and hands each record of size bytes to
 * cb. */
static int run(int link_fd, size_t size, void (*cb)(const void *rec, void *data), void *data,
	       struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	union {
		struct smp_thread_rec align;
		char b[64 * sizeof(struct smp_thread_rec)];
	} buf;
	size_t have = 0;
	ssize_t n;

	fd = bpf_iter_create(link_fd);
	if (fd < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	/* seq_file may split a record across reads. */
	while ((n = read(fd, buf.b + have, sizeof(buf.b) - have)) > 0) {
		size_t whole;

		have += (size_t)n;
		whole = have / size;
		for (size_t i = 0; i < whole; i++)
			cb(buf.b + i * size, data);
		have -= whole * size;
		memmove(buf.b, buf.b + whole * size, have);
	}
	if (n < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	return 0;
}

/* An iterator link of prog_fd (what bpf_program__attach_iter() makes);
 * the fd or -errno. */
static int iter_link(int prog_fd, const union bpf_iter_link_info *li)
{
	LIBBPF_OPTS(bpf_link_create_opts, o);
	int fd;

	if (li) {
		o.iter_info = (union bpf_iter_link_info *)li;
		o.iter_info_len = sizeof(*li);
	}
	fd = bpf_link_create(prog_fd, 0, BPF_TRACE_ITER, &o);
	return fd < 0 ? -errno : fd;
}

static int link_all(struct smp_task_iter *it, struct vmact_err *err)
{
	if (it->all >= 0)
		return 0;
	it->all = iter_link(it->prog_fd, NULL);
	if (it->all < 0) {
		int r = it->all;

		it->all = -1;
		return vmact_err_set(err, -r, "BPF: attaching task iterator: %s", strerror(-r));
	}
	return 0;
}

/* The per-VM link, made on first use. -1 without an error: no per-VM link
 * (no pid filter here, or the process is gone). */
static int link_vm(struct smp_task_iter *it, unsigned slot, pid_t tgid, int *out,
		   struct vmact_err *err)
{
	union bpf_iter_link_info li = { .task.pid = (__u32)tgid };
	int r;

	*out = -1;
	if (it->vm[slot] < 0 && !it->no_pid_filter) {
		r = iter_link(it->prog_fd, &li);
		if (r < 0) {
			if (r == -ESRCH || r == -ENOENT)
				return 0;
			if (r != -EINVAL)
				return vmact_err_set(err, -r, "BPF: attaching task iterator: %s",
						     strerror(-r));
			it->no_pid_filter = true;
		} else {
			it->vm[slot] = r;
		}
	}
	if (it->vm[slot] >= 0) {
		*out = it->vm[slot];
		return 0;
	}
	if (!it->no_pid_filter)
		return 0;
	r = link_all(it, err);
	if (r < 0)
		return r;
	*out = it->all;
	return 0;
}

struct vm_records {
	unsigned slot;
	struct smp_pending_item *head;
	bool oom;
};

static void vm_record(const void *rec, void *data)
{
	const struct smp_pending *p = rec;
	struct vm_records *l = data;
	struct smp_pending_item *i;

	/* Without a pid filter every VM's threads come by. */
	if (p->slot != l->slot || l->oom)
		return;
	i = malloc(sizeof(*i));
	if (!i) {
		l->oom = true;
		return;
	}
	i->rec = *p;
	VMACT_LIST_PREPEND(items, l->head, i);
}

int smp_task_iter_vm(struct smp_task_iter *it, unsigned slot, pid_t tgid,
		     struct smp_pending_item **out, struct vmact_err *err)
{
	struct vm_records l = { .slot = slot };
	int link, r;

	*out = NULL;
	if (it->prog_fd < 0)
		return 0;
	r = link_vm(it, slot, tgid, &link, err);
	if (r < 0 || link < 0)
		return r;
	r = run(link, sizeof(struct smp_pending), vm_record, &l, err);
	*out = l.head;
	if (r < 0)
		return r;
	if (l.oom)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	return 0;
}

int smp_task_iter_all(struct smp_task_iter *it, void (*cb)(const struct smp_pending *p, void *data),
		      void *data, struct vmact_err *err)
{
	int r;

	if (it->prog_fd < 0)
		return 0;
	r = link_all(it, err);
	if (r < 0)
		return r;
	return run(it->all, sizeof(struct smp_pending), (void (*)(const void *, void *))cb, data,
		   err);
}

int smp_task_iter_vm_threads(struct smp_task_iter *it, unsigned slot, pid_t tgid,
			     void (*cb)(const struct smp_thread_rec *t, void *data), void *data,
			     struct vmact_err *err)
{
	int link, r;

	if (it->prog_fd < 0)
		return vmact_err_set(err, EOPNOTSUPP, "BPF: no thread iterator on this kernel");
	r = link_vm(it, slot, tgid, &link, err);
	if (r < 0 || link < 0)
		return r;
	return run(link, sizeof(struct smp_thread_rec), (void (*)(const void *, void *))cb, data,
		   err);
}

int smp_task_iter_seed(int prog_fd, int *link_fd, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	char buf[64];
	ssize_t n;

	if (*link_fd < 0) {
		int r = iter_link(prog_fd, NULL);

		if (r < 0)
			return vmact_err_set(err, -r, "BPF: attaching task iterator: %s",
					     strerror(-r));
		*link_fd = r;
	}
	fd = bpf_iter_create(*link_fd);
	if (fd < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	return 0;
}
