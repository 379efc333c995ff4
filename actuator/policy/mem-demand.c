/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/policy/mem-demand.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)

const char *act_mem_class_name(enum act_mem_class c)
{
	switch (c) {
	case ACT_MEM_OK:
		return "ok";
	case ACT_MEM_FILLING:
		return "filling";
	case ACT_MEM_SHORT:
		return "short";
	}
	return "?";
}

const char *act_mem_source_name(enum act_mem_source s)
{
	return s == ACT_MEM_SRC_GUEST ? "guest metrics" : "balloon stats";
}

void act_mem_policy_defaults(struct act_mem_policy *p)
{
	*p = (struct act_mem_policy){
		.headroom_min = 128ULL << 20,
		.headroom_share = 0.25,
		.lead = 4 * 1000000000LL,
		.trend_window = 4 * 1000000000LL,
		.down_tau = 20 * 1000000000LL,
		.down_hold = 15 * 1000000000LL,
		.fault_rate = 100,
		.swap_in_rate = 1 * MiB,
		.overhead = 100ULL << 20,
		.unit = 256ULL << 20,
	};
}

void act_mem_demand_init(struct act_mem_demand *d)
{
	memset(d, 0, sizeof(*d));
}

void act_mem_demand_resized(struct act_mem_demand *d)
{
	d->below = false;
}

static const struct act_mem_sample *nth_newest(const struct act_mem_demand *d, unsigned i)
{
	return &d->ring[(d->head + ACT_MEM_RING - 1 - i) % ACT_MEM_RING];
}

void act_mem_demand_feed(struct act_mem_demand *d, const struct act_mem_policy *p,
			 const struct act_mem_sample *s)
{
	if (d->n && s->at <= nth_newest(d, 0)->at)
		return;
	d->ring[d->head] = *s;
	d->head = (d->head + 1) % ACT_MEM_RING;
	if (d->n < ACT_MEM_RING)
		d->n++;
	if (!d->has_slow) {
		d->slow = (double)s->used;
		d->has_slow = true;
	} else if (s->at > d->slow_at) {
		/* Weighed by time, whatever the sampling rate. */
		double a = 1.0 - exp(-(double)(s->at - d->slow_at) / (double)p->down_tau);

		d->slow += a * ((double)s->used - d->slow);
	}
	d->slow_at = s->at;
}

static uint64_t headroom(const struct act_mem_policy *p, double used)
{
	double h = used * p->headroom_share;

	return h > (double)p->headroom_min ? (uint64_t)h : p->headroom_min;
}

/* Whole units at or above x. */
static uint64_t ceil_unit(double x, uint64_t unit)
{
	double units;

	if (!unit)
		return x > 0 ? (uint64_t)ceil(x) : 0;
	units = ceil(x / (double)unit - 1e-9);
	if (units < 1)
		units = 1;
	if (units >= 18446744073709551615.0 / (double)unit)
		return UINT64_MAX / unit * unit;
	return (uint64_t)units * unit;
}

/* A counter's rate between two samples; 0 when it went down (the guest
 * rebooted) or the span is empty. */
static double rate(uint64_t from, uint64_t to, double seconds)
{
	return to >= from && seconds > 0 ? (double)(to - from) / seconds : 0;
}

bool act_mem_demand_decide(struct act_mem_demand *d, const struct act_mem_policy *p,
			   struct act_mem_decision *out)
{
	const struct act_mem_sample *last, *first;
	double seconds, need, base;
	uint64_t overhead, grow_to;

	memset(out, 0, sizeof(*out));
	if (!d->n)
		return false;
	last = nth_newest(d, 0);
	/* The oldest sample within the trend window, the newest excepted. */
	first = last;
	for (unsigned i = 1; i < d->n; i++) {
		const struct act_mem_sample *s = nth_newest(d, i);

		if (last->at - s->at > p->trend_window)
			break;
		first = s;
	}
	out->source = last->source;
	out->plugged = last->plugged;
	out->total = last->total;
	out->used = last->used;
	out->slow = d->slow;
	out->span = last->at - first->at;
	seconds = (double)out->span / 1e9;
	if (first != last) {
		out->growth = last->used > first->used
				      ? (double)(last->used - first->used) / seconds
				      : 0;
		if (first->has_paging && last->has_paging) {
			out->fault_rate = rate(first->major_faults, last->major_faults, seconds);
			out->swap_in_rate = rate(first->swap_in_bytes, last->swap_in_bytes,
						 seconds);
		}
	}
	overhead = last->total ? (last->plugged > last->total ? last->plugged - last->total : 0)
			       : p->overhead;

	/* Up: what it will use by the time more memory can be there again
	 * (this plug, the fresh sample after it and the next plug: `lead`)
	 * at the present growth, with its headroom; never projected further
	 * than the growth was seen, so a burst that filled one interval is
	 * not taken for a steady rate. */
	need = (double)last->used +
	       out->growth * ((double)(p->lead < out->span ? p->lead : out->span) / 1e9);
	out->projected = (uint64_t)need;
	out->headroom = headroom(p, need);
	need += (double)out->headroom + (double)overhead;
	grow_to = ceil_unit(need, p->unit);

	if (out->fault_rate >= p->fault_rate || out->swap_in_rate >= p->swap_in_rate) {
		/* Already short: at least a unit more than it has, whatever
		 * MemAvailable says (its cache is what it is short of). */
		uint64_t more = ceil_unit((double)last->plugged + (double)p->unit, p->unit);

		out->cls = ACT_MEM_SHORT;
		out->goal = grow_to > more ? grow_to : more;
		d->below = false;
		return true;
	}
	if (need > (double)last->plugged) {
		out->cls = ACT_MEM_FILLING;
		out->goal = grow_to;
		d->below = false;
		return true;
	}

	/* Down: on the slow average of use (or use now, if higher), so a
	 * guest that just freed memory is not shrunk into its next peak. */
	out->cls = ACT_MEM_OK;
	out->goal = last->plugged;
	base = d->slow > (double)last->used ? d->slow : (double)last->used;
	out->headroom = headroom(p, base);
	{
		uint64_t g = ceil_unit(base + (double)out->headroom + (double)overhead, p->unit);

		if (g >= last->plugged) {
			d->below = false;
			return true;
		}
		if (!d->below) {
			d->below = true;
			d->below_since = last->at;
		}
		if (last->at - d->below_since >= p->down_hold)
			out->goal = g;
	}
	return true;
}

/* Appends to buf at n; the new length, or -1 once it no longer fits. */
static int put(char *buf, unsigned len, int n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int put(char *buf, unsigned len, int n, const char *fmt, ...)
{
	va_list ap;
	int m;

	if (n < 0 || (unsigned)n >= len)
		return -1;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (unsigned)n, fmt, ap);
	va_end(ap);
	return m < 0 || (unsigned)(n + m) >= len ? -1 : n + m;
}

/* The figures behind a decision: use, size, what moves, the source. */
static int figures(const struct act_mem_decision *dec, char *buf, unsigned len, int n)
{
	if (dec->total)
		n = put(buf, len, n, "uses %.0f MiB of %.0f MiB", (double)dec->used / MiB,
			(double)dec->total / MiB);
	else
		n = put(buf, len, n, "uses %.0f MiB (of %.0f MiB plugged)", (double)dec->used / MiB,
			(double)dec->plugged / MiB);
	if (dec->cls == ACT_MEM_SHORT)
		n = put(buf, len, n, ", %.0f major faults/s, swap-in %.1f MiB/s", dec->fault_rate,
			dec->swap_in_rate / MiB);
	else if (dec->growth > 0)
		n = put(buf, len, n, ", growing %.0f MiB/s over %.1f s", dec->growth / MiB,
			(double)dec->span / 1e9);
	else if (dec->cls == ACT_MEM_OK)
		n = put(buf, len, n, ", %.0f MiB on average (slow)", dec->slow / MiB);
	return put(buf, len, n, " (%s)", act_mem_source_name(dec->source));
}

int act_mem_decision_format(const struct act_mem_decision *dec, char *buf, unsigned len)
{
	int n = put(buf, len, 0, "%s: ", act_mem_class_name(dec->cls));

	n = figures(dec, buf, len, n);
	n = put(buf, len, n, ", headroom %.0f MiB, goal %.0f MiB", (double)dec->headroom / MiB,
		(double)dec->goal / MiB);
	return n < 0 ? -1 : 0;
}

int act_mem_decision_reason(const struct act_mem_decision *dec, uint64_t from_bytes, char *buf,
			    unsigned len)
{
	const char *verb = dec->goal > from_bytes   ? "grow memory to"
			   : dec->goal < from_bytes ? "shrink memory to"
						    : "memory stays at";
	int n = put(buf, len, 0, "%s %.0f MiB: ", verb, (double)dec->goal / MiB);

	return figures(dec, buf, len, n) < 0 ? -1 : 0;
}
