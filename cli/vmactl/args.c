/* SPDX-License-Identifier: Apache-2.0 */
#include "cli/vmactl/args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/macro.h"
#include "base/quantity.h"

static const char *const names[] = {
	[CTL_NONE] = "",         [CTL_STATUS] = "status",   [CTL_SHOW] = "show",
	[CTL_SET] = "set",       [CTL_PAUSE] = "pause",     [CTL_RESUME] = "resume",
	[CTL_EVENTS] = "events", [CTL_TOP] = "top",         [CTL_CHECK] = "check",
	[CTL_ENABLE] = "enable", [CTL_DISABLE] = "disable",
};

const char *ctl_command_name(enum ctl_command c)
{
	return (unsigned)c < ARRAY_SIZE(names) ? names[c] : "";
}

void ctl_usage(FILE *f, enum ctl_command c)
{
	switch (c) {
	case CTL_STATUS:
		fputs("Usage: vmactl status [--all] [--json]\n"
		      "Every VM vmactd knows: state (managed, paused, frozen, not-managed and why),\n"
		      "vCPUs, CPU quota, memory, load, demand, permit, desired size, last change.\n"
		      "--all: also every running domain it ignores (no vmact metadata,\n"
		      "enabled=\"false\", outside libvirt.name_prefix), with the reason.\n",
		      f);
		break;
	case CTL_SHOW:
		fputs("Usage: vmactl show VM [--json]\n"
		      "One VM in detail: bounds, policy and its inputs, scheduler and vm-monitor\n"
		      "connections, and its last decisions with their reasons.\n",
		      f);
		break;
	case CTL_SET:
		fputs("Usage: vmactl set VM [--min-cpu CPUS] [--max-cpu CPUS]\n"
		      "                     [--min-memory SIZE] [--max-memory SIZE]\n"
		      "                     [--mode recommend|active] [--[no-]migration] [--json]\n"
		      "Changes the VM's bounds, mode or migration, live, in its vmact metadata (and\n"
		      "in its persistent definition): they survive a vmactd restart. CPUS: \"2\",\n"
		      "\"500m\", \"1.5\"; SIZE: \"512Mi\", \"2Gi\" (Kubernetes quantities, as in the\n"
		      "metadata).\n"
		      "--min-mem and --max-mem are short for --min-memory and --max-memory.\n"
		      "--mode recommend: vmactd decides as usual and reports each decision as a\n"
		      "recommendation (events, show, metrics) but changes nothing; --mode active\n"
		      "applies the current recommendation (permits and bounds as always).\n"
		      "--migration: vmact may live-migrate the VM to another host of its cluster\n"
		      "(<vmact:migration enabled=\"true\"/>); --no-migration (the default) keeps\n"
		      "it where it runs. Turn it on only for a VM whose network and disks work on\n"
		      "every host it could go to.\n",
		      f);
		break;
	case CTL_PAUSE:
		fputs("Usage: vmactl pause VM [--json]\n"
		      "Pauses autoscaling of the VM: it keeps its size until `vmactl resume`.\n"
		      "Recorded in its metadata: it survives a vmactd restart.\n",
		      f);
		break;
	case CTL_RESUME:
		fputs("Usage: vmactl resume VM [--json]\n"
		      "Resumes autoscaling of a paused VM.\n",
		      f);
		break;
	case CTL_EVENTS:
		fputs("Usage: vmactl events [--follow] [--since SEQ] [--vm VM] [--json]\n"
		      "vmactd's recent events: decisions and their reasons, resizes, permits,\n"
		      "vm-monitor answers, errors, operators' changes. --follow waits for more\n"
		      "(Ctrl-C ends it); --json prints one JSON object per line.\n",
		      f);
		break;
	case CTL_CHECK:
		fputs("Usage: vmactl check DOMAIN [--min-cpu CPUS] [--max-cpu CPUS]\n"
		      "                           [--min-memory SIZE] [--max-memory SIZE]\n"
		      "                           [--fix] [--json]\n"
		      "Is the domain's layout ready for vmact (doc/domain.md)? Part by part: vCPUs\n"
		      "to plug, NUMA cell, <maxMemory> slots, virtio-mem device, the guest kernel's\n"
		      "memhp_default_state; as it runs and as it is defined (the next cold start),\n"
		      "and which changes need a cold restart. Against the bounds given, else its\n"
		      "metadata's, else the defaults vmactl enable would write. Exit status 1 when\n"
		      "the layout cannot do them. DOMAIN: a name or UUID, running or not.\n"
		      "Also whether vmactd gets the guest's memory figures (balloon statistics):\n"
		      "without them its memory stays at its size.\n"
		      "--fix: print the commands that fix each part instead (virt-xml from\n"
		      "virtinst, virsh, vmactl), each marked live or cold restart.\n",
		      f);
		break;
	case CTL_ENABLE:
		fputs("Usage: vmactl enable DOMAIN [--min-cpu CPUS] [--max-cpu CPUS]\n"
		      "                            [--min-memory SIZE] [--max-memory SIZE]\n"
		      "                            [--recommend] [--migration] [--json]\n"
		      "Puts the domain under vmact: writes its vmact metadata (live and into its\n"
		      "definition) with enabled=\"true\" and the bounds given; a bound not given\n"
		      "keeps the metadata's, else takes the default: from the vCPUs and memory it\n"
		      "boots with to the most its layout can reach. Refused, with vmactl check's\n"
		      "report, when the layout cannot do the bounds. --recommend: in recommend\n"
		      "mode (mode=\"recommend\"): decisions reported, nothing changed, until\n"
		      "vmactl set makes it active (see vmactl set --help). --migration: vmact may\n"
		      "live-migrate it to another host (see vmactl set --help).\n",
		      f);
		break;
	case CTL_DISABLE:
		fputs("Usage: vmactl disable DOMAIN [--json]\n"
		      "Takes the domain out from under vmact: enabled=\"false\" in its metadata\n"
		      "(the rest kept for a later enable). vmactd lets it go and removes the CPU\n"
		      "quota it set; the domain keeps the size it has.\n",
		      f);
		break;
	case CTL_TOP:
		fputs("Usage: vmactl top [--iterations N] [--json]\n"
		      "A live full-screen view of every VM, refreshed every second; q quits.\n"
		      "--iterations N: stop after N refreshes; --json: one snapshot per line.\n",
		      f);
		break;
	case CTL_NONE:
	default:
		fputs("Usage: vmactl [--socket PATH] [--json] COMMAND [ARGS]\n"
		      "Watch and steer vmactd through its control API.\n\n"
		      "Commands:\n"
		      "  status [--all]     every VM and its size, load and last change\n"
		      "  show VM            one VM in detail, with its last decisions\n"
		      "  set VM OPTIONS     change its bounds (--min-cpu, --max-cpu,\n"
		      "                     --min-memory, --max-memory) or --mode\n"
		      "  pause VM           stop autoscaling it (it keeps its size)\n"
		      "  resume VM          autoscale it again\n"
		      "  events [--follow]  decisions, resizes, permits, monitor answers, errors\n"
		      "  top                live full-screen view (q quits)\n"
		      "  check DOMAIN       is its layout ready, what needs a cold restart\n"
		      "  enable DOMAIN      put it under vmact (bounds as for set)\n"
		      "  disable DOMAIN     take it out from under vmact\n"
		      "VM and DOMAIN: a domain name or UUID, as virsh takes them.\n\n"
		      "Options:\n"
		      "  --socket PATH      vmactd's control socket (default $VMACT_SOCKET, else\n"
		      "                     " CTL_SOCKET_DEFAULT ")\n"
		      "  --json             machine-readable output (doc/control-api.md)\n"
		      "  -h, --help         help (vmactl COMMAND --help: the command's)\n"
		      "      --version      show the version\n\n"
		      "Exit status: 0 done, 1 error (vmactd unreachable or refused), 2 usage.\n",
		      f);
		break;
	}
}

/* --opt VALUE or --opt=VALUE; *i is advanced past a separate value. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **out,
		     struct vmact_err *err)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (a[n] == '=') {
		*out = a + n + 1;
	} else if (*i + 1 < argc) {
		*out = argv[++*i];
	} else {
		return vmact_err_set(err, EINVAL, "%s needs a value", name);
	}
	if (!**out)
		return vmact_err_set(err, EINVAL, "%s: empty value", name);
	return 0;
}

static bool is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);

	return strncmp(a, name, n) == 0 && (a[n] == 0 || a[n] == '=');
}

static int check_quantity(const char *opt, const char *v, bool milli, struct vmact_err *err)
{
	uint64_t q;
	int r = milli ? vmact_quantity_parse_milli(v, &q, err)
		      : vmact_quantity_parse_value(v, &q, err);

	if (r < 0)
		return vmact_err_prefix(err, "%s", opt);
	if (q == 0)
		return vmact_err_set(err, EINVAL, "%s: must be above zero", opt);
	return 0;
}

static int parse_uint(const char *opt, const char *v, uint64_t max, uint64_t *out,
		      struct vmact_err *err)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || *end || v[0] == '-' || v[0] == '+' || *out > max)
		return vmact_err_set(err, EINVAL, "%s: '%s' is not a whole number", opt, v);
	return 0;
}

int ctl_args_parse(int argc, char **argv, const char *env_socket, struct ctl_args *out,
		   struct vmact_err *err)
{
	const char *positional[2] = { NULL, NULL };
	unsigned npos = 0;
	bool dashdash = false;
	int r;

	memset(out, 0, sizeof(*out));
	out->socket = env_socket && *env_socket ? env_socket : CTL_SOCKET_DEFAULT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;

		if (dashdash || a[0] != '-' || !a[1]) {
			if (out->cmd == CTL_NONE) {
				size_t k;

				for (k = 1; k < ARRAY_SIZE(names); k++)
					if (strcmp(a, names[k]) == 0)
						break;
				if (k == ARRAY_SIZE(names))
					return vmact_err_set(err, EINVAL, "unknown command '%s'",
							     a);
				out->cmd = (enum ctl_command)k;
				continue;
			}
			if (npos == ARRAY_SIZE(positional))
				return vmact_err_set(err, EINVAL, "unexpected argument '%s'", a);
			positional[npos++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			dashdash = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			out->help = true;
		} else if (strcmp(a, "--version") == 0) {
			out->version = true;
		} else if (strcmp(a, "--json") == 0) {
			out->json = true;
		} else if (strcmp(a, "--all") == 0) {
			out->all = true;
		} else if (strcmp(a, "--recommend") == 0) {
			out->recommend = true;
		} else if (strcmp(a, "--fix") == 0) {
			out->fix = true;
		} else if (strcmp(a, "--migration") == 0 || strcmp(a, "--no-migration") == 0) {
			if (out->set_migration && out->migration != (a[2] == 'm'))
				return vmact_err_set(err, EINVAL,
						     "--migration and --no-migration together");
			out->set_migration = true;
			out->migration = a[2] == 'm';
		} else if (is_opt(a, "--mode")) {
			if ((r = opt_value(argc, argv, &i, "--mode", &out->mode, err)) < 0)
				return r;
			if (strcmp(out->mode, "recommend") && strcmp(out->mode, "active"))
				return vmact_err_set(err, EINVAL,
						     "--mode: '%s' is not recommend or active",
						     out->mode);
		} else if (strcmp(a, "-f") == 0 || strcmp(a, "--follow") == 0) {
			out->follow = true;
		} else if (is_opt(a, "--socket")) {
			if ((r = opt_value(argc, argv, &i, "--socket", &out->socket, err)) < 0)
				return r;
		} else if (is_opt(a, "--min-cpu")) {
			if ((r = opt_value(argc, argv, &i, "--min-cpu", &out->min_cpu, err)) < 0)
				return r;
		} else if (is_opt(a, "--max-cpu")) {
			if ((r = opt_value(argc, argv, &i, "--max-cpu", &out->max_cpu, err)) < 0)
				return r;
		} else if (is_opt(a, "--min-memory") || is_opt(a, "--min-mem")) {
			if ((r = opt_value(argc, argv, &i,
					   is_opt(a, "--min-memory") ? "--min-memory" : "--min-mem",
					   &out->min_mem, err)) < 0)
				return r;
		} else if (is_opt(a, "--max-memory") || is_opt(a, "--max-mem")) {
			if ((r = opt_value(argc, argv, &i,
					   is_opt(a, "--max-memory") ? "--max-memory" : "--max-mem",
					   &out->max_mem, err)) < 0)
				return r;
		} else if (is_opt(a, "--since")) {
			if ((r = opt_value(argc, argv, &i, "--since", &v, err)) < 0 ||
			    (r = parse_uint("--since", v, UINT64_MAX, &out->since, err)) < 0)
				return r;
			out->has_since = true;
		} else if (is_opt(a, "--vm")) {
			if ((r = opt_value(argc, argv, &i, "--vm", &out->vm, err)) < 0)
				return r;
		} else if (is_opt(a, "--iterations")) {
			uint64_t n;

			if ((r = opt_value(argc, argv, &i, "--iterations", &v, err)) < 0 ||
			    (r = parse_uint("--iterations", v, 1000000, &n, err)) < 0)
				return r;
			out->iterations = (unsigned)n;
		} else {
			return vmact_err_set(err, EINVAL, "unknown option '%s'", a);
		}
	}
	if (out->help || out->version)
		return 0;
	switch (out->cmd) {
	case CTL_NONE:
		return vmact_err_set(err, EINVAL, "no command given");
	case CTL_SHOW:
	case CTL_SET:
	case CTL_PAUSE:
	case CTL_RESUME:
	case CTL_CHECK:
	case CTL_ENABLE:
	case CTL_DISABLE:
		if (npos != 1)
			return vmact_err_set(err, EINVAL, "%s: %s", names[out->cmd],
					     npos ? "one VM only" : "which VM?");
		out->vm = positional[0];
		break;
	default:
		if (npos)
			return vmact_err_set(err, EINVAL, "%s: unexpected argument '%s'",
					     names[out->cmd], positional[0]);
	}
	if (out->cmd != CTL_SET && out->cmd != CTL_CHECK && out->cmd != CTL_ENABLE &&
	    (out->min_cpu || out->max_cpu || out->min_mem || out->max_mem))
		return vmact_err_set(err, EINVAL,
				     "%s: bounds are options of `set`, `check` and "
				     "`enable`",
				     names[out->cmd]);
	if (out->cmd != CTL_CHECK && out->fix)
		return vmact_err_set(err, EINVAL, "%s: --fix is an option of `check`",
				     names[out->cmd]);
	if (out->cmd != CTL_SET && out->mode)
		return vmact_err_set(err, EINVAL, "%s: --mode is an option of `set`",
				     names[out->cmd]);
	if (out->cmd != CTL_SET && out->cmd != CTL_ENABLE && out->set_migration)
		return vmact_err_set(err, EINVAL,
				     "%s: --migration and --no-migration are options of `set` and "
				     "`enable`",
				     names[out->cmd]);
	if (out->cmd != CTL_ENABLE && out->recommend)
		return vmact_err_set(err, EINVAL,
				     "%s: --recommend is an option of `enable` (vmactl set VM "
				     "--mode recommend for a managed VM)",
				     names[out->cmd]);
	if (out->cmd != CTL_STATUS && out->all)
		return vmact_err_set(err, EINVAL, "%s: --all is an option of `status`",
				     names[out->cmd]);
	if (out->cmd != CTL_EVENTS && (out->follow || out->has_since))
		return vmact_err_set(err, EINVAL,
				     "%s: --follow and --since are options of `events`",
				     names[out->cmd]);
	if (out->cmd != CTL_EVENTS && out->vm && out->cmd != CTL_SHOW && out->cmd != CTL_SET &&
	    out->cmd != CTL_PAUSE && out->cmd != CTL_RESUME && out->cmd != CTL_CHECK &&
	    out->cmd != CTL_ENABLE && out->cmd != CTL_DISABLE)
		return vmact_err_set(err, EINVAL, "%s: --vm is an option of `events`",
				     names[out->cmd]);
	if (out->cmd != CTL_TOP && out->iterations)
		return vmact_err_set(err, EINVAL, "%s: --iterations is an option of `top`",
				     names[out->cmd]);
	if (out->cmd == CTL_SET || out->cmd == CTL_CHECK || out->cmd == CTL_ENABLE) {
		if (out->cmd == CTL_SET && !out->min_cpu && !out->max_cpu && !out->min_mem &&
		    !out->max_mem && !out->mode && !out->set_migration)
			return vmact_err_set(
				err, EINVAL,
				"set: nothing to set (--min-cpu, --max-cpu, "
				"--min-memory, --max-memory, --mode, --[no-]migration)");
		if ((out->min_cpu &&
		     (r = check_quantity("--min-cpu", out->min_cpu, true, err)) < 0) ||
		    (out->max_cpu &&
		     (r = check_quantity("--max-cpu", out->max_cpu, true, err)) < 0) ||
		    (out->min_mem &&
		     (r = check_quantity("--min-memory", out->min_mem, false, err)) < 0) ||
		    (out->max_mem &&
		     (r = check_quantity("--max-memory", out->max_mem, false, err)) < 0))
			return r;
	}
	return 0;
}
