/* SPDX-License-Identifier: Apache-2.0 */
#include "actuator/policy/goalcu.h"

#include <errno.h>
#include <math.h>

#define LFC_PAGE_BYTES 8192.0
/* Both hard-coded in the Go agent. */
#define WSS_MAX_INCREASE_FACTOR 3.0
#define WSS_PROJECT_LEN         0.5

void act_warn(struct act_warnings *w, const char *msg)
{
	if (w && w->n < ACT_WARN_MAX)
		w->msg[w->n++] = msg;
}

double act_round_half_away(double x)
{
	/* C's round() is exactly Go's math.Round. */
	return round(x);
}

/* A part the arithmetic turned into NaN (0/0 with a zero target) carries no
 * information; Go would let it poison the max and end up at an arbitrary
 * uint32. */
static double sane(double x)
{
	return isnan(x) ? 0.0 : x;
}

static double blending_factor(double value, double t1, double t2)
{
	if (value <= t1)
		return 0.0;
	if (value >= t2)
		return 1.0;
	return (value - t1) / (t2 - t1 + 1e-6);
}

double act_goal_cpu_part(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
			 const struct act_system_metrics *sys)
{
	double stable = cfg->cpu_stable_zone_ratio * sys->load5;
	double mixed = stable + cfg->cpu_mixed_zone_ratio * sys->load5;
	double diff = fabs(sys->load1 - sys->load5);
	double w = blending_factor(diff, stable, mixed);
	double load = w * sys->load1 + (1 - w) * sys->load5;

	return load / cfg->load_average_fraction_target / ((double)cu->milli_cpu / 1000.0);
}

static double mem_part(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
		       const struct act_system_metrics *sys)
{
	double goal_bytes = act_round_half_away(sys->memory_usage_bytes /
						cfg->memory_usage_fraction_target);

	return goal_bytes / (double)cu->mem_bytes;
}

static double mem_total_part(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
			     const struct act_system_metrics *sys, uint64_t wss)
{
	double cached = fmin((double)wss, sys->memory_cached_bytes);

	return (cached + sys->memory_usage_bytes) / cfg->memory_total_fraction_target /
	       (double)cu->mem_bytes;
}

int act_wss_estimate(const double *series, size_t n, double factor, size_t initial_offset,
		     size_t window, double *out, struct vmact_err *err)
{
	size_t w;

	if (window < 2)
		return vmact_err_set(err, EINVAL, "wss estimate: window must be >= 2 (got %zu)",
				     window);
	if (initial_offset < window - 1)
		return vmact_err_set(
			err, EINVAL,
			"wss estimate: initial offset must be >= window - 1 (got %zu < %zu - 1)",
			initial_offset, window);
	if (n == 0)
		return vmact_err_set(err, EINVAL, "wss estimate: empty series");
	w = window - 1;
	for (size_t t = initial_offset; t + w < n; t++) {
		/* Windows are not sampled at the same instant, so a longer one may
		 * read lower; a decrease counts as no growth. */
		double d0 = fmax(0.0, series[t] - series[t - w]);
		double d1 = fmax(0.0, series[t + w] - series[t]);

		if (d1 > d0 * factor) {
			*out = series[t];
			return 0;
		}
	}
	*out = series[n - 1];
	return 0;
}

int act_project_next_highest(const double *series, size_t n, double project_len, double *out,
			     struct vmact_err *err)
{
	double highest;

	if (n < 2)
		return vmact_err_set(err, EINVAL,
				     "project next highest: series of length %zu (must be >= 2)",
				     n);
	highest = series[0];
	for (size_t i = 1; i < n; i++) {
		double x0 = series[i - 1];
		double x1 = fmax(x0, series[i]);
		double predicted = x1 + (x1 - x0) * project_len;

		highest = fmax(highest, predicted);
	}
	*out = highest;
	return 0;
}

/* Go converts with uint64(x), which truncates; out-of-range values saturate
 * here instead of wrapping. */
static uint64_t bytes_from_double(double x)
{
	if (!(x > 0))
		return 0;
	if (x >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)x;
}

static int lfc_part(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
		    const struct act_lfc_metrics *lfc, struct act_goal *g, struct act_warnings *w,
		    struct vmact_err *err)
{
	/* Windows start at 1 minute, hence the -1. */
	size_t off = (size_t)cfg->lfc_min_wait_before_downscale_minutes - 1;
	size_t win = (size_t)cfg->lfc_window_size_minutes;
	const double *s = lfc->wss_pages;
	size_t end;
	double est, pred, required;
	int r;

	g->has_lfc = true;
	if (lfc->n < off + win) {
		act_warn(w, ACT_WARN_NOT_ENOUGH_WSS);
		g->lfc = 0.0;
		return 0;
	}
	if (cfg->lfc_use_largest_window) {
		est = s[lfc->n - 1];
	} else {
		r = act_wss_estimate(s, lfc->n, WSS_MAX_INCREASE_FACTOR, off, win, &est, err);
		if (r < 0)
			return r;
	}
	/* Starting at off keeps a non-monotonic series from cutting the slice
	 * before the minimum wait. */
	for (end = off; end < lfc->n && s[end] <= est; end++)
		;
	if (end < 2) {
		/* Go panics here (window 2, min wait 2, second value above the
		 * estimate); a one-point slice projects to that point. */
		pred = s[0];
	} else {
		r = act_project_next_highest(s, end, WSS_PROJECT_LEN, &pred, err);
		if (r < 0)
			return r;
	}
	g->has_wss = true;
	g->wss_bytes = bytes_from_double(pred * LFC_PAGE_BYTES);
	required = pred * LFC_PAGE_BYTES / cfg->lfc_to_memory_ratio;
	g->lfc = sane(required / (double)cu->mem_bytes);
	return 0;
}

uint32_t act_goal_from_parts(const struct act_goal *g, bool with_cpu)
{
	double m = 0.0;

	if (g->has_cpu && with_cpu)
		m = fmax(m, act_round_half_away(g->cpu));
	if (g->has_mem)
		m = fmax(m, g->mem);
	if (g->has_lfc)
		m = fmax(m, g->lfc);
	m = ceil(m);
	if (!(m > 0))
		return 0;
	if (m >= (double)UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)m;
}

int act_goal_cu(const struct ag_scaling_config *cfg, const struct vmact_resources *cu,
		const struct act_system_metrics *sys, const struct act_lfc_metrics *lfc,
		struct act_goal *out, struct act_warnings *w, struct vmact_err *err)
{
	struct act_goal g = { 0 };
	int r;

	r = ag_scaling_config_validate(cfg, err);
	if (r < 0)
		return vmact_err_prefix(err, "scaling config");
	if (cu->milli_cpu == 0 || cu->mem_bytes == 0)
		return vmact_err_set(err, EINVAL, "compute unit: cpu and mem must be non-zero");

	g.has_all_metrics = sys && !sys->memory_absent && (!cfg->enable_lfc_metrics || lfc);
	if (!g.has_all_metrics)
		act_warn(w, ACT_WARN_MISSING_METRICS);

	if (lfc) {
		r = lfc_part(cfg, cu, lfc, &g, w, err);
		if (r < 0)
			return r;
	}
	if (sys) {
		g.has_cpu = true;
		g.cpu = sane(act_goal_cpu_part(cfg, cu, sys));
		if (!sys->memory_absent) {
			g.has_mem = true;
			g.mem = sane(mem_part(cfg, cu, sys));
			if (g.has_wss)
				g.mem = fmax(g.mem,
					     sane(mem_total_part(cfg, cu, sys, g.wss_bytes)));
		}
	}
	g.goal_cu = act_goal_from_parts(&g, true);
	*out = g;
	return 0;
}
