#!/usr/bin/env bash
# check-worker-link.sh: vmact-guestd, the unprivileged process that parses
# guest bytes (doc/privsep.md), holds only what the worker may run. Every
# global symbol it defines must come from the archives Kbuild's
# vmact-guestd-libs names (and its own objects): none of vmactd's
# sub-layers, hotplug/ (libvirt), bpf/ or the arbiter is in it, and it
# imports none of the daemon's process, user or libvirt calls. As a control,
# the same test must find daemon symbols in vmactd.
# VMACT_BUILD: the build directory (make check passes build/san).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${VMACT_BUILD:-build}

# Archives whose code the worker must not contain: every component's but
# those vmact-guestd links.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "print-$1"; }
allowed=$(mk vmact-guestd-libs)
forbidden=()
for c in $(mk COMPONENTS); do
	case " $allowed " in *" $c "*) continue ;; esac
	a=$build/lib${c//\//-}.a
	[ -f "$a" ] || { echo "check-worker-link: $a missing (build first)"; exit 1; }
	forbidden+=("$a")
done
[ ${#forbidden[@]} -gt 0 ] || { echo "check-worker-link: no archives in $build"; exit 1; }

defined() { nm --defined-only -g "$1" 2>/dev/null | awk 'NF == 3 && $2 ~ /[TDBR]/ { print $3 }' | sort -u; }
daemon_syms=$(for a in "${forbidden[@]}"; do defined "$a"; done | sort -u)

check() { # PROGRAM: the daemon symbols it defines
	comm -12 <(defined "$1") <(printf '%s\n' "$daemon_syms")
}

bad=$(check "$build/vmact-guestd")
if [ -n "$bad" ]; then
	echo "check-worker-link: vmact-guestd contains daemon code:"
	printf '  %s\n' $bad | head -20
	exit 1
fi
imports=$(nm -D --undefined-only "$build/vmact-guestd" | awk '{ print $2 }' |
	grep -E '^(posix_spawn|socketpair|getpwnam_r|vir[A-Z]|bpf_|cgroup_)' || true)
if [ -n "$imports" ]; then
	echo "check-worker-link: vmact-guestd imports daemon-only calls:"
	printf '  %s\n' $imports
	exit 1
fi
# The control: the check does see daemon code where there is some.
n=$(check "$build/vmactd" | wc -l)
if [ "$n" -lt 100 ]; then
	echo "check-worker-link: only $n daemon symbols found in vmactd: the check is blind"
	exit 1
fi
echo "check-worker-link: vmact-guestd links $(echo $allowed | tr ' ' ','): no daemon symbol in it ($n in vmactd), no daemon-only import"
