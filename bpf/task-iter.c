/* SPDX-License-Identifier: Apache-2.0 */
#include "bpf/task-iter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/macro.h"

void smp_pending_list_free(struct smp_pending_item **head)
{
	struct smp_pending_item *i, *n;

	VMACT_LIST_FOREACH_SAFE(items, i, n, *head)
		free(i);
	*head = NULL;
}

int smp_task_iter_init(struct smp_task_iter *it, struct bpf_program *prog, unsigned max_vms,
		       struct vmact_err *err)
{
	*it = (struct smp_task_iter){ .prog = prog, .max_vms = max_vms };
	it->vm = calloc(max_vms, sizeof(*it->vm));
	if (!it->vm)
		return vmact_err_set(err, ENOMEM, "sampler: out of memory");
	return 0;
}

void smp_task_iter_done(struct smp_task_iter *it)
{
	for (unsigned i = 0; it->vm && i < it->max_vms; i++)
		bpf_link__destroy(it->vm[i]);
	free(it->vm);
	bpf_link__destroy(it->all);
	*it = (struct smp_task_iter){ 0 };
}

void smp_task_iter_drop(struct smp_task_iter *it, unsigned slot)
{
	bpf_link__destroy(it->vm[slot]);
	it->vm[slot] = NULL;
}

/* Runs the iterator through link and hands each record of size bytes to
 * cb. */
static int run(struct bpf_link *link, size_t size, void (*cb)(const void *rec, void *data),
	       void *data, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	union {
		struct smp_thread_rec align;
		char b[64 * sizeof(struct smp_thread_rec)];
	} buf;
	size_t have = 0;
	ssize_t n;

	fd = bpf_iter_create(bpf_link__fd(link));
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

static int link_all(struct smp_task_iter *it, struct vmact_err *err)
{
	if (it->all)
		return 0;
	it->all = bpf_program__attach_iter(it->prog, NULL);
	if (!it->all)
		return vmact_err_set(err, errno, "BPF: attaching task iterator: %s",
				     strerror(errno));
	return 0;
}

/* The per-VM link, made on first use. NULL without an error: no per-VM
 * link (no pid filter here, or the process is gone). */
static int link_vm(struct smp_task_iter *it, unsigned slot, pid_t tgid, struct bpf_link **out,
		   struct vmact_err *err)
{
	union bpf_iter_link_info li = { .task.pid = (__u32)tgid };
	LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &li, .link_info_len = sizeof(li));
	int r;

	*out = NULL;
	if (!it->vm[slot] && !it->no_pid_filter) {
		it->vm[slot] = bpf_program__attach_iter(it->prog, &o);
		if (!it->vm[slot]) {
			if (errno == ESRCH || errno == ENOENT)
				return 0;
			if (errno != EINVAL)
				return vmact_err_set(err, errno, "BPF: attaching task iterator: %s",
						     strerror(errno));
			it->no_pid_filter = true;
		}
	}
	if (it->vm[slot]) {
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
	struct bpf_link *link;
	int r;

	*out = NULL;
	if (!it->prog)
		return 0;
	r = link_vm(it, slot, tgid, &link, err);
	if (r < 0 || !link)
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

	if (!it->prog)
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
	struct bpf_link *link;
	int r;

	if (!it->prog)
		return vmact_err_set(err, EOPNOTSUPP, "BPF: no thread iterator on this kernel");
	r = link_vm(it, slot, tgid, &link, err);
	if (r < 0 || !link)
		return r;
	return run(link, sizeof(struct smp_thread_rec), (void (*)(const void *, void *))cb, data,
		   err);
}

int smp_task_iter_seed(struct bpf_program *prog, struct bpf_link **link, struct vmact_err *err)
{
	_cleanup_close_ int fd = -1;
	char buf[64];
	ssize_t n;

	if (!*link) {
		*link = bpf_program__attach_iter(prog, NULL);
		if (!*link)
			return vmact_err_set(err, errno, "BPF: attaching task iterator: %s",
					     strerror(errno));
	}
	fd = bpf_iter_create(bpf_link__fd(*link));
	if (fd < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		return vmact_err_set(err, errno, "BPF: task iterator: %s", strerror(errno));
	return 0;
}
