/* SPDX-License-Identifier: Apache-2.0 */
/* vmact-arbiter: the node-local stand-in for the Neon scheduler plugin.
 * Agents (vmactd, or a Neon autoscaler-agent) POST their resource requests
 * here exactly as they would to the plugin's port 10299. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent-glue/arbiter/arbiter.h"
#include "shared/keyfile.h"
#include "shared/startup.h"

static const char usage[] =
	"Usage: vmact-arbiter [OPTIONS]\n"
	"Node-local scheduler-plugin arbiter: grants VM resource increases on this host\n"
	"to agents speaking the Neon agent<->plugin protocol (versions 1.0-5.0).\n"
	"\n"
	"  --listen ADDR:PORT     where to listen (default 127.0.0.1:10299; [::1]:P for IPv6,\n"
	"                         unix:PATH for a unix socket)\n"
	"  --cpu N                CPUs to arbitrate, k8s quantity (8, 7500m; default: online CPUs)\n"
	"  --memory SIZE          memory to arbitrate (64Gi, 68719476736; default: MemTotal)\n"
	"  --reserve-cpu N        kept back for the host (default 0)\n"
	"  --reserve-memory SIZE  kept back for the host (default 0)\n"
	"  --overcommit-cpu F     multiply the CPU capacity (default 1)\n"
	"  --overcommit-memory F  multiply the memory capacity (default 1)\n"
	"  --watermark F          fraction of capacity growth may reach, (0,1] (default 0.9)\n"
	"  --slot-size SIZE       memory slot size for protocol versions < 4.0 (default 1Gi,\n"
	"                         NeonVM's default memorySlotSize)\n"
	"  --compute-unit CPU,MEM compute unit for versions < 4.0 (default 250m,<slot size>)\n"
	"  --min-version V        lowest protocol version accepted (default 1.0)\n"
	"  --max-version V        highest protocol version accepted (default 5.0)\n"
	"  --pod-ttl SECONDS      forget pods silent this long (default 60)\n"
	"  --request-timeout SECONDS  cut connections whose request takes longer (default 10)\n"
	"  --lease-key FILE       serve /v1/leases, the cluster layer's reservations, to\n"
	"                         requests signed with this key (doc/cluster.md; mode 0640\n"
	"                         or tighter; default: no lease interface)\n"
	"  -v, --verbose          log every decision to stderr\n"
	"  -h, --help             this text\n"
	"  --version              print the version\n";

enum {
	OPT_LISTEN = 256,
	OPT_CPU,
	OPT_MEMORY,
	OPT_RCPU,
	OPT_RMEM,
	OPT_OCPU,
	OPT_OMEM,
	OPT_WM,
	OPT_SLOT,
	OPT_CU,
	OPT_MINV,
	OPT_MAXV,
	OPT_TTL,
	OPT_RTO,
	OPT_LEASE_KEY,
};

static const struct option options[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "reserve-cpu", required_argument, NULL, OPT_RCPU },
	{ "reserve-memory", required_argument, NULL, OPT_RMEM },
	{ "overcommit-cpu", required_argument, NULL, OPT_OCPU },
	{ "overcommit-memory", required_argument, NULL, OPT_OMEM },
	{ "watermark", required_argument, NULL, OPT_WM },
	{ "slot-size", required_argument, NULL, OPT_SLOT },
	{ "compute-unit", required_argument, NULL, OPT_CU },
	{ "min-version", required_argument, NULL, OPT_MINV },
	{ "max-version", required_argument, NULL, OPT_MAXV },
	{ "pod-ttl", required_argument, NULL, OPT_TTL },
	{ "request-timeout", required_argument, NULL, OPT_RTO },
	{ "lease-key", required_argument, NULL, OPT_LEASE_KEY },
	{ "verbose", no_argument, NULL, 'v' },
	VMACT_STARTUP_OPTIONS_END,
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "vmact-arbiter: --%s %s: %s\n", opt, val, why);
	return 2;
}

static int parse_cpu(const char *opt, const char *s, uint32_t *out)
{
	struct vmact_err err = { 0 };
	uint64_t m;

	if (vmact_quantity_parse_milli(s, &m, &err) < 0)
		return bad(opt, s, err.msg);
	if (m > UINT32_MAX)
		return bad(opt, s, "too large");
	*out = (uint32_t)m;
	return 0;
}

static int parse_mem(const char *opt, const char *s, uint64_t *out)
{
	struct vmact_err err = { 0 };

	if (vmact_quantity_parse_value(s, out, &err) < 0)
		return bad(opt, s, err.msg);
	return 0;
}

static int parse_factor(const char *opt, const char *s, double lo, double hi, bool lo_open,
			double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(d) || d > hi || d < lo || (lo_open && d == lo))
		return bad(opt, s, "not a number in the allowed range");
	*out = d;
	return 0;
}

static void log_event(void *ud, const struct ag_arbiter_event *ev)
{
	char r1[32], r2[32], p1[32], p2[32];

	if (ev->lease) {
		if (ev->pod_name || ev->status != 200)
			fprintf(stderr, "vmact-arbiter: lease %s%s%s: %u%s%s%s\n",
				ev->pod_namespace ? ev->pod_namespace : "", ev->pod_name ? "/" : "",
				ev->pod_name ? ev->pod_name : "", ev->status, ev->text ? " " : "",
				ev->text ? ev->text : "",
				!ev->moving_changed ? ""
				: ev->moving        ? " (marked moving: no growth, told to migrate)"
						    : " (no longer moving)");
		return;
	}
	if (ev->status != 200) {
		fprintf(stderr, "vmact-arbiter: %u %s%s%s%s\n", ev->status, ev->text,
			ev->pod_name ? " (pod " : "", ev->pod_name ? ev->pod_name : "",
			ev->pod_name ? ")" : "");
		return;
	}
	vmact_quantity_format_milli(ev->requested.milli_cpu, r1, sizeof(r1));
	vmact_quantity_format_bytes(ev->requested.mem_bytes, r2, sizeof(r2));
	vmact_quantity_format_milli(ev->permit.milli_cpu, p1, sizeof(p1));
	vmact_quantity_format_bytes(ev->permit.mem_bytes, p2, sizeof(p2));
	fprintf(stderr, "vmact-arbiter: %s/%s v%s%s requested %s/%s permit %s/%s%s%s%s\n",
		ev->pod_namespace, ev->pod_name, ag_plugin_version_format((int)ev->version),
		ev->new_pod ? " (new)" : "", r1, r2, p1, p2,
		ev->pressure.milli_cpu || ev->pressure.mem_bytes ? " (partial)" : "",
		ev->candidate ? " (candidate)" : "",
		ev->migrate  ? " (moving: told to migrate)"
		: ev->moving ? " (moving: pinned, below 2.0 not told)"
			     : "");
}

/* The command line's values, as on_option reads them. */
struct args {
	struct ag_arbiter_config cfg;
	const char *listen;
	bool have_cpu, have_mem, verbose;
	uint8_t *lease_key;
};

static int on_option(void *ud, int opt, char *arg)
{
	struct args *o = ud;
	struct ag_arbiter_config *cfg = &o->cfg;
	struct vmact_err err = { 0 };
	double d;

	switch (opt) {
	case OPT_LISTEN:
		o->listen = arg;
		return 0;
	case OPT_CPU:
		o->have_cpu = true;
		return parse_cpu("cpu", arg, &cfg->capacity.milli_cpu);
	case OPT_MEMORY:
		o->have_mem = true;
		return parse_mem("memory", arg, &cfg->capacity.mem_bytes);
	case OPT_RCPU:
		return parse_cpu("reserve-cpu", arg, &cfg->reserve.milli_cpu);
	case OPT_RMEM:
		return parse_mem("reserve-memory", arg, &cfg->reserve.mem_bytes);
	case OPT_OCPU:
	case OPT_OMEM:
		if (parse_factor(opt == OPT_OCPU ? "overcommit-cpu" : "overcommit-memory", arg, 0,
				 100, true, &d))
			return 2;
		*(opt == OPT_OCPU ? &cfg->overcommit_cpu_milli
				  : &cfg->overcommit_mem_milli) = (uint32_t)llround(d * 1000);
		return 0;
	case OPT_WM:
		return parse_factor("watermark", arg, 0, 1, true, &cfg->watermark);
	case OPT_SLOT:
		if (parse_mem("slot-size", arg, &cfg->slot_bytes))
			return 2;
		return cfg->slot_bytes ? 0 : bad("slot-size", arg, "must be positive");
	case OPT_CU: {
		char *comma = strchr(arg, ',');

		if (!comma)
			return bad("compute-unit", arg, "expected CPU,MEM (e.g. 250m,1Gi)");
		*comma = '\0';
		if (parse_cpu("compute-unit", arg, &cfg->legacy_compute_unit.milli_cpu) ||
		    parse_mem("compute-unit", comma + 1, &cfg->legacy_compute_unit.mem_bytes))
			return 2;
		if (!cfg->legacy_compute_unit.milli_cpu || !cfg->legacy_compute_unit.mem_bytes)
			return bad("compute-unit", comma + 1, "both parts must be non-zero");
		return 0;
	}
	case OPT_MINV:
	case OPT_MAXV:
		if (ag_plugin_version_parse(arg,
					    opt == OPT_MINV ? &cfg->min_version : &cfg->max_version,
					    &err) < 0)
			return bad(opt == OPT_MINV ? "min-version" : "max-version", arg, err.msg);
		return 0;
	case OPT_TTL:
	case OPT_RTO:
		if (parse_factor(opt == OPT_TTL ? "pod-ttl" : "request-timeout", arg, 0,
				 opt == OPT_TTL ? 86400 : 3600, true, &d))
			return 2;
		*(opt == OPT_TTL ? &cfg->pod_ttl_usec
				 : &cfg->request_timeout_usec) = (uint64_t)(d * 1e6);
		return 0;
	case OPT_LEASE_KEY:
		free(o->lease_key);
		o->lease_key = NULL;
		if (vmact_keyfile_load(arg, &o->lease_key, &cfg->lease_key_len, &err) < 0) {
			fprintf(stderr, "vmact-arbiter: --lease-key: %s\n", err.msg);
			return 2;
		}
		cfg->lease_key = o->lease_key;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return 2;
}

int main(int argc, char **argv)
{
	struct args o = { .listen = "127.0.0.1:10299" };
	struct ag_arbiter_config *cfg = &o.cfg;
	struct vmact_resources host;
	struct vmact_err err = { 0 };
	struct ag_arbiter *a = NULL;
	struct ag_arbiter_totals t;
	sd_event *ev = NULL;
	char c1[32], c2[32], w1[32], w2[32];
	int r;

	r = vmact_startup_parse(argc, argv, "vmact-arbiter", usage, "vh", options, on_option, &o);
	if (r != VMACT_STARTUP_RUN)
		return r;
	if (!o.have_cpu || !o.have_mem) {
		if (ag_host_capacity(&host, &err) < 0) {
			fprintf(stderr, "vmact-arbiter: %s (give --cpu and --memory)\n", err.msg);
			return 1;
		}
		if (!o.have_cpu)
			cfg->capacity.milli_cpu = host.milli_cpu;
		if (!o.have_mem)
			cfg->capacity.mem_bytes = host.mem_bytes;
	}
	r = ag_arbiter_new(cfg, &a, &err);
	/* The arbiter keeps a copy. */
	free(o.lease_key);
	if (r < 0) {
		fprintf(stderr, "vmact-arbiter: %s\n", err.msg);
		return 2;
	}
	if (o.verbose)
		ag_arbiter_on_event(a, log_event, NULL);

	if (vmact_startup_loop(&ev, NULL, NULL, NULL, NULL, &err) < 0 ||
	    ag_arbiter_listen(a, ev, o.listen, &err) < 0) {
		fprintf(stderr, "vmact-arbiter: %s\n", err.msg);
		ag_arbiter_free(a);
		sd_event_unref(ev);
		return 1;
	}
	ag_arbiter_totals(a, &t);
	vmact_quantity_format_milli(t.total.milli_cpu, c1, sizeof(c1));
	vmact_quantity_format_bytes(t.total.mem_bytes, c2, sizeof(c2));
	vmact_quantity_format_milli(t.watermark.milli_cpu, w1, sizeof(w1));
	vmact_quantity_format_bytes(t.watermark.mem_bytes, w2, sizeof(w2));
	fprintf(stderr,
		"vmact-arbiter: listening on %s (port %u): capacity %s CPU / %s, growth up to %s / %s\n",
		o.listen, ag_arbiter_port(a), c1, c2, w1, w2);
	r = sd_event_loop(ev);
	ag_arbiter_free(a);
	sd_event_unref(ev);
	if (r < 0) {
		fprintf(stderr, "vmact-arbiter: event loop failed: %s\n", strerror(-r));
		return 1;
	}
	fprintf(stderr, "vmact-arbiter: stopped\n");
	return 0;
}
