/* SPDX-License-Identifier: Apache-2.0 */
/* The guest metrics through their guest worker (worker/scrape-proxy.h,
 * doc/privsep.md). */
#include "actuator/worker/scrape-proxy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuator/worker/worker.h"
#include "base/macro.h"
#include "guestd/privsep.h"

_Static_assert(ACT_PRIVSEP_MAX_WINDOWS == AG_LFC_MAX_WINDOWS, "LFC window limits differ");

/* An answer is due within the worker's own timeout of the scrape (the
 * agent's: 2 s system, 5 s LFC) and this margin; later, the scrape has
 * failed and the answer, if it comes, is stale. */
#define ANSWER_MARGIN_USEC (3ULL * 1000000ULL)
#define WINDOW_RECORDS_MAX \
	((ACT_PRIVSEP_MAX_WINDOWS + ACT_PRIVSEP_WINDOWS_PER_MSG - 1) / ACT_PRIVSEP_WINDOWS_PER_MSG)

struct exporter {
	struct act_scrape_proxy *p;
	enum ag_exporter_kind kind;
	char *url;
	/* Each kind numbers its scrapes: seq is the last sent. */
	uint32_t seq;
	bool out;      /* seq awaits its answer */
	bool answered; /* seq was answered (a second answer is a lie) */
	sd_event_source *deadline;
	ag_exporter_scrape_fn *cb;
	void *ud;
	size_t records; /* WINDOWS records of seq so far */
};

struct act_scrape_proxy {
	struct act_worker *gw;
	struct exporter ex[2]; /* [AG_EXPORTER_LFC] */
	/* The windows of the LFC scrape in flight, as the worker sent them
	 * (thousandths of a page), then as the result gives them. */
	uint64_t raw[WINDOW_RECORDS_MAX * ACT_PRIVSEP_WINDOWS_PER_MSG];
	struct ag_lfc_metrics lfc;
};

static const char *kind_name(enum ag_exporter_kind kind)
{
	return kind == AG_EXPORTER_LFC ? "lfc metrics" : "system metrics";
}

/* Hands the result over; the exporter is free for the next scrape. */
static void deliver(struct exporter *x, struct ag_exporter_result *res)
{
	ag_exporter_scrape_fn *cb = x->cb;

	x->out = false;
	x->cb = NULL;
	sd_event_source_set_enabled(x->deadline, SD_EVENT_OFF);
	res->kind = x->kind;
	if (cb)
		cb(x->ud, res);
}

static void fail(struct exporter *x, int code, long status, const char *why)
{
	struct ag_exporter_result res = { .error = code, .status = status };
	char msg[VMACT_ERR_MSG_MAX + 700];

	/* As the worker's scraper says it: the kind, the URL, the cause. */
	snprintf(msg, sizeof(msg), "%s: %s: %s", kind_name(x->kind), x->url ? x->url : "-", why);
	res.message = msg;
	deliver(x, &res);
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *ud)
{
	struct exporter *x = ud;

	if (x->out)
		fail(x, -ETIMEDOUT, 0, "no answer from the guest worker in time");
	return 0;
}

static uint64_t timeout_usec(enum ag_exporter_kind kind)
{
	return (kind == AG_EXPORTER_LFC ? AG_EXPORTER_LFC_TIMEOUT_USEC
					: AG_EXPORTER_SYSTEM_TIMEOUT_USEC) +
	       ANSWER_MARGIN_USEC;
}

void act_scrape_proxy_scrape(struct act_scrape_proxy *p, enum ag_exporter_kind kind,
			     ag_exporter_scrape_fn *cb, void *userdata)
{
	struct exporter *x = &p->ex[kind == AG_EXPORTER_LFC];
	struct act_privsep_msg m = { .type = ACT_PRIVSEP_SCRAPE };
	struct vmact_err err = { 0 };

	x->cb = cb;
	x->ud = userdata;
	x->out = true;
	x->answered = false;
	x->records = 0;
	m.seq = ++x->seq;
	m.flags = kind == AG_EXPORTER_LFC ? ACT_PRIVSEP_F_LFC : 0;
	if (!x->url) {
		fail(x, -ENOENT, 0, "the VM names no such exporter");
		return;
	}
	if (act_worker_send(p->gw, &m, &err) < 0) {
		fail(x, -err.code, 0, err.msg);
		return;
	}
	if (sd_event_source_set_time_relative(x->deadline, timeout_usec(kind)) < 0 ||
	    sd_event_source_set_enabled(x->deadline, SD_EVENT_ONESHOT) < 0)
		fail(x, -ENOMEM, 0, "cannot arm the scrape's deadline");
}

bool act_scrape_proxy_pending(const struct act_scrape_proxy *p, enum ag_exporter_kind kind)
{
	return p->ex[kind == AG_EXPORTER_LFC].out;
}

pid_t act_scrape_proxy_worker_pid(const struct act_scrape_proxy *p)
{
	return p ? act_worker_pid(p->gw) : 0;
}

/* Where an answer stands in the conversation: 1 for the scrape in flight,
 * 0 stale (a scrape given up), <0 a lie. */
static int current(struct exporter *x, const struct act_privsep_msg *m, struct vmact_err *err)
{
	const char *what = act_privsep_type_name(m->type);

	if (m->seq > x->seq || m->seq == 0)
		return vmact_err_set(err, EPROTO, "%s %" PRIu32 " to no %s scrape", what, m->seq,
				     kind_name(x->kind));
	if (m->seq == x->seq && x->out)
		return 1;
	if (m->seq == x->seq && x->answered)
		return vmact_err_set(err, EPROTO, "%s %" PRIu32 " after the answer", what, m->seq);
	return 0;
}

static int on_windows(struct act_scrape_proxy *p, const struct act_privsep_msg *m,
		      struct vmact_err *err)
{
	struct exporter *x = &p->ex[AG_EXPORTER_LFC];
	int r = current(x, m, err);

	if (r <= 0)
		return r;
	if (x->records == WINDOW_RECORDS_MAX)
		return vmact_err_set(err, EPROTO, "more than %u LFC windows",
				     ACT_PRIVSEP_MAX_WINDOWS);
	memcpy(&p->raw[x->records * ACT_PRIVSEP_WINDOWS_PER_MSG], m->spare,
	       ACT_PRIVSEP_WINDOWS_PER_MSG * sizeof(uint64_t));
	x->records++;
	return 0;
}

static int on_metrics(struct act_scrape_proxy *p, const struct act_privsep_msg *m,
		      struct vmact_err *err)
{
	struct exporter *x =
		&p->ex[(m->flags & ACT_PRIVSEP_F_LFC) ? AG_EXPORTER_LFC : AG_EXPORTER_SYSTEM];
	struct ag_exporter_result res = { 0 };
	struct ag_system_metrics sys;
	int r = current(x, m, err);
	size_t n;

	if (r <= 0)
		return r;
	if (m->code < 0) {
		x->answered = true;
		fail(x, m->code, (long)m->spare[0], m->text);
		return 0;
	}
	if (x->kind == AG_EXPORTER_SYSTEM) {
		if (x->records)
			return vmact_err_set(err, EPROTO, "LFC windows in a system scrape");
		sys = (struct ag_system_metrics){
			.load1 = (double)m->spare[0] / (double)ACT_PRIVSEP_MILLI,
			.load5 = (double)m->spare[1] / (double)ACT_PRIVSEP_MILLI,
			.memory_usage_bytes = (double)m->mem_bytes,
			.memory_cached_bytes = (double)m->spare[2],
		};
		res.status = 200;
		res.system = &sys;
		x->answered = true;
		deliver(x, &res);
		return 0;
	}
	/* Every window announced came, four a record, none after the last. */
	n = (size_t)m->spare[0];
	if (n > x->records * ACT_PRIVSEP_WINDOWS_PER_MSG ||
	    n <= (x->records ? x->records - 1 : 0) * ACT_PRIVSEP_WINDOWS_PER_MSG || !x->records)
		return vmact_err_set(err, EPROTO, "%zu LFC windows announced, %zu records sent", n,
				     x->records);
	for (size_t i = n; i < x->records * ACT_PRIVSEP_WINDOWS_PER_MSG; i++)
		if (p->raw[i])
			return vmact_err_set(err, EPROTO, "a window beyond the %zu announced", n);
	p->lfc.n_windows = n;
	for (size_t i = 0; i < n; i++)
		p->lfc.wss_pages[i] = (double)p->raw[i] / (double)ACT_PRIVSEP_MILLI;
	res.status = 200;
	res.lfc = &p->lfc;
	x->answered = true;
	deliver(x, &res);
	return 0;
}

static int on_message(void *ud, const struct act_privsep_msg *m, struct vmact_err *err)
{
	struct act_scrape_proxy *p = ud;

	switch (m->type) {
	case ACT_PRIVSEP_METRICS:
		return on_metrics(p, m, err);
	case ACT_PRIVSEP_WINDOWS:
		return on_windows(p, m, err);
	default:
		return vmact_err_set(err, EPROTO, "unexpected %s message",
				     act_privsep_type_name(m->type));
	}
}

static void on_up(void *ud)
{
}

/* The worker is gone: what it had in flight failed; scrapes fail until
 * the new one runs (the runner uses the host-side figures meanwhile). */
static void on_down(void *ud)
{
	struct act_scrape_proxy *p = ud;

	for (size_t i = 0; i < ARRAY_SIZE(p->ex); i++)
		if (p->ex[i].out)
			fail(&p->ex[i], -ECONNRESET, 0, "the guest worker stopped");
}

int act_scrape_proxy_new(sd_event *event, const char *name, const char *system_url,
			 const char *lfc_url, const char *program, const char *user,
			 struct act_scrape_proxy **out, struct vmact_err *err)
{
	static const struct act_worker_ops ops = {
		.up = on_up,
		.down = on_down,
		.message = on_message,
	};
	/* The default heartbeat (worker/worker.h). */
	struct act_worker_config gc = {
		.program = program, .user = user, .metrics = system_url, .metrics_lfc = lfc_url
	};
	const char *urls[2] = { system_url, lfc_url };
	struct act_scrape_proxy *p = calloc(1, sizeof(*p));
	char wname[300];
	int r = 0;

	if (!p)
		return vmact_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < ARRAY_SIZE(p->ex) && r >= 0; i++) {
		p->ex[i].p = p;
		p->ex[i].kind = i ? AG_EXPORTER_LFC : AG_EXPORTER_SYSTEM;
		if (urls[i] && !(p->ex[i].url = strdup(urls[i])))
			r = vmact_err_set(err, ENOMEM, "out of memory");
		if (r >= 0)
			r = sd_event_add_time_relative(event, &p->ex[i].deadline, CLOCK_MONOTONIC,
						       timeout_usec(p->ex[i].kind), 1000,
						       on_deadline, &p->ex[i]);
		if (r >= 0)
			r = sd_event_source_set_enabled(p->ex[i].deadline, SD_EVENT_OFF);
		if (r < 0 && !err->code)
			vmact_err_set(err, -r, "guest metrics: event source: %s", strerror(-r));
	}
	/* Its log lines say "VM/metrics: guest worker ...": the VM's
	 * vm-monitor worker is another. */
	snprintf(wname, sizeof(wname), "%s/metrics", name);
	gc.name = wname;
	if (r >= 0)
		r = act_worker_new(event, &gc, &ops, p, &p->gw, err);
	if (r < 0) {
		act_scrape_proxy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

void act_scrape_proxy_free(struct act_scrape_proxy *p)
{
	if (!p)
		return;
	act_worker_free(p->gw);
	for (size_t i = 0; i < ARRAY_SIZE(p->ex); i++) {
		p->ex[i].deadline = sd_event_source_disable_unref(p->ex[i].deadline);
		free(p->ex[i].url);
	}
	free(p);
}
