/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/engine/jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/macro.h"

struct job {
	struct job *next;
	cl_job_run_fn *run;
	cl_job_done_fn *done;
	void *data;
};

struct cl_jobs {
	sd_event *ev;
	sd_event_source *src;
	int efd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *todo, **todo_tail;    /* queued */
	struct job *finished, **fin_tail; /* run, waiting for their done */
	pthread_t *threads;
	unsigned nthreads;
	atomic_uint pending;
	bool stopping;
};

static void *job_thread(void *arg)
{
	struct cl_jobs *j = arg;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		struct job *jb;
		uint64_t one = 1;

		while (!j->todo && !j->stopping)
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->stopping)
			break;
		jb = j->todo;
		j->todo = jb->next;
		if (!j->todo)
			j->todo_tail = &j->todo;
		pthread_mutex_unlock(&j->lock);

		jb->run(jb->data);

		pthread_mutex_lock(&j->lock);
		jb->next = NULL;
		*j->fin_tail = jb;
		j->fin_tail = &jb->next;
		/* The loop reads the counter and then the list under the lock:
		 * a lost wakeup cannot happen, a spurious one costs a pass. */
		if (write(j->efd, &one, sizeof(one)) < 0) {
			/* The counter is at its maximum: the loop wakes anyway. */
		}
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static void run_done(struct cl_jobs *j, struct job *list)
{
	while (list) {
		struct job *next = list->next;

		atomic_fetch_sub(&j->pending, 1);
		if (list->done)
			list->done(list->data);
		free(list);
		list = next;
	}
}

static int on_finished(sd_event_source *s, int fd, uint32_t revents, void *ud)
{
	struct cl_jobs *j = ud;
	struct job *list;
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return 0;
	pthread_mutex_lock(&j->lock);
	list = j->finished;
	j->finished = NULL;
	j->fin_tail = &j->finished;
	pthread_mutex_unlock(&j->lock);
	run_done(j, list);
	return 0;
}

int cl_jobs_new(sd_event *ev, unsigned threads, const char *name, struct cl_jobs **out,
		struct vmact_err *err)
{
	struct cl_jobs *j;
	int r;

	if (!threads)
		return vmact_err_set(err, EINVAL, "%s: a pool needs a thread", name);
	j = calloc(1, sizeof(*j));
	if (!j)
		return vmact_err_set(err, ENOMEM, "out of memory");
	j->efd = -1;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	j->todo_tail = &j->todo;
	j->fin_tail = &j->finished;
	j->ev = sd_event_ref(ev);
	j->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (j->efd < 0) {
		r = vmact_err_set(err, errno, "%s: eventfd: %m", name);
		cl_jobs_free(j);
		return r;
	}
	r = sd_event_add_io(ev, &j->src, j->efd, EPOLLIN, on_finished, j);
	if (r < 0) {
		cl_jobs_free(j);
		return vmact_err_set(err, -r, "%s: %s", name, strerror(-r));
	}
	j->threads = calloc(threads, sizeof(*j->threads));
	if (!j->threads) {
		cl_jobs_free(j);
		return vmact_err_set(err, ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < threads; i++) {
		r = pthread_create(&j->threads[i], NULL, job_thread, j);
		if (r) {
			cl_jobs_free(j);
			return vmact_err_set(err, r, "%s: thread: %s", name, strerror(r));
		}
		j->nthreads++;
	}
	*out = j;
	return 0;
}

void cl_jobs_free(struct cl_jobs *j)
{
	struct job *todo, *fin;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stopping = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	for (unsigned i = 0; i < j->nthreads; i++)
		pthread_join(j->threads[i], NULL);
	todo = j->todo;
	fin = j->finished;
	j->todo = j->finished = NULL;
	/* Finished jobs first: their results are real. */
	run_done(j, fin);
	run_done(j, todo);
	sd_event_source_disable_unref(j->src);
	sd_event_unref(j->ev);
	if (j->efd >= 0)
		close(j->efd);
	free(j->threads);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

int cl_jobs_submit(struct cl_jobs *j, cl_job_run_fn *run, cl_job_done_fn *done, void *data)
{
	struct job *jb;

	if (j->stopping)
		return -ESHUTDOWN;
	jb = calloc(1, sizeof(*jb));
	if (!jb)
		return -ENOMEM;
	jb->run = run;
	jb->done = done;
	jb->data = data;
	atomic_fetch_add(&j->pending, 1);
	pthread_mutex_lock(&j->lock);
	*j->todo_tail = jb;
	j->todo_tail = &jb->next;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

unsigned cl_jobs_pending(const struct cl_jobs *j)
{
	return atomic_load(&((struct cl_jobs *)j)->pending);
}

bool cl_jobs_stopping(const struct cl_jobs *j)
{
	return j->stopping;
}

int cl_jobs_drain(struct cl_jobs *j)
{
	while (cl_jobs_pending(j)) {
		int r = sd_event_run(j->ev, 100000);

		if (r < 0)
			return r;
	}
	return 0;
}
